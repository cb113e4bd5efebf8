/* Interval analysis (internal): a sound [lo, hi] (with the smallest nonzero magnitude and whether NaN
 * can appear) for every value of the main graph, from the ranges of the graph inputs, the exact
 * values of initializers and constants, and each op's interval rule (hg_range_<Op>). Ops without a
 * row give unbounded outputs. Results are a side table keyed by HgValue, stamped with the graph's
 * generation like HgShapes.
 */
#ifndef HG_RANGES_H
#define HG_RANGES_H

#include "shapes.h"

G_BEGIN_DECLS

typedef struct {
    HgGraph *graph;
    guint64 generation;
    GHashTable *ranges; /* HgValue* -> HgRange* (owned) */
    GHashTable *scans;  /* HgValue* -> HgScan* (owned): what the pass over each initializer found */
} HgRanges;

/* A range for graph input `name` ("*" for every input not named otherwise). */
typedef struct {
    const char *name;
    HgRange range;
} HgInputRange;

/* Infer ranges over g's main graph, using shapes (computed by hg_shapes_infer for g). Inputs without a
 * range are unbounded. Never fails: unknown is unbounded. */
HgRanges *hg_ranges_infer(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs);
void hg_ranges_free(HgRanges *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgRanges, hg_ranges_free)

/* The range of v (unbounded when nothing is known). */
const HgRange *hg_ranges_get(const HgRanges *r, const HgValue *v);
/* The scan of initializer v's values (its exact range and FP16 counts), or NULL. */
const HgScan *hg_ranges_scan(const HgRanges *r, const HgValue *v);

G_END_DECLS

#endif
