/* Ranges of graph inputs that follow from the model itself (internal; src/derive.c). */
#ifndef HG_DERIVE_H
#define HG_DERIVE_H

#include "halfguard/check.h"
#include "shapes.h"

G_BEGIN_DECLS

/* What is known of each graph input to feed of m (hg_run_feeds order): the range the caller gives
 * (given: n_given specs, "*" for every input not named), else what the model implies (derived, or no
 * range needed), else none. shapes is hg_shapes_infer's of m's main graph. Returns a new array of
 * HgInputInfo* (with its free function). Never fails: what cannot be derived is NONE. */
GPtrArray *hg_derive_inputs(HgModel *m, const HgShapes *shapes, const HgInputRangeSpec *given, guint n_given);

G_END_DECLS

#endif
