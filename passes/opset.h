/* Raising a model's default-domain opset (internal, for fuse_layernorm).
 *
 * ONNX ops keep their meaning across opset versions except where a version changed their form or
 * semantics (Squeeze's axes became an input in 13, Softmax stopped flattening in 13, ...). The upgrade
 * rewrites the nodes whose form changed, and refuses when any node has no rewrite that keeps its
 * meaning, so a caller can leave the model as it is.
 */
#ifndef HG_PASSES_OPSET_H
#define HG_PASSES_OPSET_H

#include "halfguard/ir.h"
#include "shapes.h"

G_BEGIN_DECLS

/* Whether every default-domain node of m's graphs (subgraphs included) keeps its meaning when the
 * default-domain opset goes from its current version to target (at most 17), by a rewrite where its
 * form changed. s is shape inference over the main graph (ranks and element types the rewrites need).
 * On FALSE, *why (g_free) says which node blocks and why. */
gboolean hg_opset_can_upgrade(HgModel *m, const HgShapes *s, gint64 target, char **why);

/* Rewrite the nodes whose form changed, set the default-domain opset to target and raise ir_version
 * to what that opset needs (8 for 17). Call only after hg_opset_can_upgrade() said yes. *n_rewritten
 * receives how many nodes were rewritten. */
void hg_opset_upgrade(HgModel *m, const HgShapes *s, gint64 target, guint *n_rewritten);

G_END_DECLS

#endif
