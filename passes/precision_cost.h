/* assign_precision's cost model as an oracle (internal, for the passes that rewrite a hazard away).
 *
 * A rewrite pass asks what the model costs with a hazard's nodes left to an FP32 island and what it
 * costs once the rewrite has cured them, and adds what the rewrite's new nodes cost in FP16: the
 * rewrite is worth making when that sum is the smaller. Every figure is in assign_precision's units,
 * bytes of memory traffic (passes/assign_precision.c says how a node, a Cast and a MAC are priced).
 */
#ifndef HG_PASSES_PRECISION_COST_H
#define HG_PASSES_PRECISION_COST_H

#include "halfguard/pass.h"
#include "shapes.h"

G_BEGIN_DECLS

/* The value of assign_precision's minimum cut on g as the pass would build it now (ctx's overrides,
 * keep_io_types, keep_fp32, the hazards and unsafe tensors of res, which must be the analysis of g as
 * it is): the cost, in its units, by which the best FP16/FP32 assignment exceeds running every node in
 * FP16. Nodes in `cured` (a set of HgNode*, may be NULL) are treated as a rewrite would leave them:
 * - a hazard found at one of them (HgHazard.at) forces nothing, neither its node nor its span
 *   (hg_check_hazard_span);
 * - a tensor FP16 cannot hold that one of them produces forces nothing on its producer nor on any
 *   reader (the rewrite scales it);
 * - a tensor FP16 cannot hold that one of them reads but a node outside the set produces (or no node:
 *   a graph input, an initializer) forces nothing on that reader; its producer and other readers are
 *   forced as before.
 * With cured NULL or empty this is the cut hg_pass_assign_precision makes. FALSE with an HG_ERROR
 * when a node-name pattern is bad (HG_ERROR_USAGE) or the cut fails; *cost is then unchanged. */
gboolean hg_precision_cut_cost(HgGraph *g, const HgPassEnv *env, const HgCheckResult *res,
                               GHashTable *cured, double *cost, GError **error);

/* What a node a rewrite adds costs to run in FP16, in the same units: a kernel launch (the same fixed
 * cost as a Cast's launch) plus the elements it reads and writes at 2 bytes each. */
double hg_precision_fp16_node_cost(double elems_read, double elems_written);

/* Is a rewrite that costs `rewrite` worth making against the FP32 island it avoids, which costs
 * `island` (both as above: the rewrite's added nodes, and the cut without the rewrite less the cut
 * with it)? Yes where it is the cheaper, where it adds nothing on balance (rewrite <= 0), and where
 * the island costs something and the rewrite costs less than that plus one kernel launch: the model
 * cannot tell such figures apart (a runtime fuses a Mul by a constant into the kernel beside it, or
 * not, and the launch is the whole difference), and between equals the FP16 form wins. */
gboolean hg_precision_rewrite_pays(double rewrite, double island);

/* The element count of v as the cost model counts it: its static count, or a fixed guess
 * (65536) where shape inference does not know it. */
gint64 hg_precision_numel(const HgShapes *shapes, const HgValue *v);

/* Does n keep exactly the element types the model gives it (lower neither retypes its outputs nor
 * asks its inputs for FP16 or FP32, only for the types they had)? An op halfguard has no row for, in
 * any domain (its type constraints are unknown), an op whose output type an attribute names (other
 * than Cast, which lower retargets), and control flow (If, Loop, Scan), whose bodies lower leaves as
 * they are. Such a node is always an FP32 island in the plan. */
gboolean hg_precision_keeps_types(const HgNode *n);

G_END_DECLS

#endif
