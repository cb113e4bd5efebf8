/* The analysis behind a check result, for the passes that act on hazards (internal). Valid while the
 * graph is unchanged and the statistics the check borrowed are alive. */
#ifndef HG_HAZARDS_H
#define HG_HAZARDS_H

#include "halfguard/check.h"
#include "ranges.h"

G_BEGIN_DECLS

const HgShapes *hg_check_shapes(const HgCheckResult *r);
const HgRanges *hg_check_ranges(const HgCheckResult *r);
/* v cannot be stored in FP16: a value whose deciding magnitude (static, or calibration with margin)
 * passes the threshold, a constant beyond FP16's range, or shape math that must stay FP32. A value
 * unbounded only for lack of an input range is not unsafe (as check does not report it). */
gboolean hg_check_value_unsafe(const HgCheckResult *r, const HgValue *v);
/* v is computed, and every value of it lies below FP16's normal range (2^-14) by calibration, some not
 * 0, and v is not only added to values of normal size: FP16 would keep
 * fewer than 11 bits of it, or flush it to 0. */
gboolean hg_check_value_tiny(const HgCheckResult *r, const HgValue *v);
/* The deciding magnitude of v, as the check decides it: calibration's absmax times the margin,
 * capped by the static bound (unbounded where calibration saw it overflow), else the static bound;
 * INFINITY where nothing bounds it. *calibrated (may be NULL) says whether calibration made it
 * smaller than the static bound. */
double hg_check_value_bound(const HgCheckResult *r, const HgValue *v, gboolean *calibrated);
/* Does v pass the threshold only where every path from it saturates (a mask into a Softmax or a
 * maximum: an overflow check calls benign, so FP16 readers may read it)? Unbounded or unknown values
 * are not. */
gboolean hg_check_value_saturates(const HgCheckResult *r, const HgValue *v);
/* What the decision on v rests on: HG_SOURCE_STATIC (its static bound), HG_SOURCE_CALIBRATION or
 * HG_SOURCE_SYNTHETIC (observed magnitudes times the margin, tighter than the static bound, from the
 * caller's data or from synthetic inputs), HG_SOURCE_ASSUMED (unbounded for lack of an input range or
 * of an op's rule, and never observed: nothing bounds it). */
HgBoundSource hg_check_value_source(const HgCheckResult *r, const HgValue *v);
/* The nodes besides h->at that must stay FP32 with hazard h (appended to nodes, HgNode*): the chain
 * from a flushing epsilon to the division it feeds; the prefix sums from a CumSum to the Sub that
 * cancels them. */
void hg_check_hazard_span(const HgCheckResult *r, const HgHazard *h, GPtrArray *nodes);

/* n only moves values (Reshape, Unsqueeze, Squeeze, Expand, Cast, Identity, Slice, Transpose,
 * Concat, Flatten, Tile). */
gboolean hg_node_passes_through(const HgNode *n);
/* Does every reader of v lead, through reshaping, Cast, Slice, Concat, a Where's branches, a Gather's
 * data or an Add (an additive mask), only to a maximum or a softmax (Softmax, LogSoftmax, ReduceMax,
 * Max, ArgMax, MaxPool) or a saturating Sigmoid or Tanh? There a value overflowing to -inf weighs
 * what -65504 does: nothing. */
gboolean hg_value_ends_in_max(const HgValue *v);
/* The same for either side: sign < 0 is hg_value_ends_in_max; sign > 0 asks whether every path
 * from v ends where a large positive value weighs what 65504 does (a minimum, Sigmoid, Tanh). */
gboolean hg_value_ends_in_saturation(const HgValue *v, int sign);
/* Does n read a value past FP16's range on the side of sign as it reads +-65504 there (Softmax, Max,
 * Exp... for large negatives; Min... for large positives; Sigmoid and Tanh both ways; a shape)? */
gboolean hg_node_saturates(const HgNode *n, int sign);

G_END_DECLS

#endif
