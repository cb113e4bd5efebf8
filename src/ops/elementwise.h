/* What the elementwise family's kernels (elementwise.c) and interval rules (elementwise_range.c)
 * share (internal). */
#ifndef HG_OPS_ELEMENTWISE_H
#define HG_OPS_ELEMENTWISE_H

#include "ops/kernel.h"

G_BEGIN_DECLS

/* Clamp v to [0, 1], keeping NaN (fmax/fmin would drop it): HardSigmoid and HardSwish. */
#define CLAMP01(v) ((v) < 0 ? 0 : (v) > 1 ? 1 : (v))

/* Gelu's approximate attribute: "none" (the default) or "tanh" (*tanh_form); FALSE with an error
 * otherwise. */
gboolean hg_gelu_form(const HgNode *n, gboolean *tanh_form, GError **error);

G_END_DECLS

#endif
