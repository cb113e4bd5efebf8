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
    GHashTable *chans;  /* HgValue* -> HgChan* (owned): intervals per channel, where known */
    GPtrArray *assumed; /* char*: the lengths rules assumed for symbolic dims (hg_range_len_bound) */
} HgRanges;

/* A value's intervals per index of its axis 1 (src/ranges_chan.c): every element whose axis-1 index
 * is j lies in [lo[j], hi[j]] (NaN aside: the value's HgRange says whether it may appear). */
typedef struct {
    gint64 c;
    double *lo, *hi;
} HgChan;

/* What a per-channel rule sees of a node (as HgRangeCtx, plus the table of the values before it). */
typedef struct {
    const HgNode *node;
    guint n_inputs;
    const HgRange *const *inputs;
    const HgValueShape *const *shapes;
    const HgArray *const *values;
    const HgValueShape *out_shape;
    GHashTable *chans;
} HgChanCtx;

/* The per-channel intervals of the node's first output, or NULL where its op mixes channels in a way
 * the rules do not follow (or nothing per channel is known of its inputs). */
HgChan *hg_chan_rule(const HgChanCtx *cx);
void hg_chan_free(HgChan *c);
/* The per-channel intervals of v, or NULL. */
const HgChan *hg_ranges_chan(const HgRanges *r, const HgValue *v);

/* A range for graph input `name` ("*" for every input not named otherwise). */
typedef struct {
    const char *name;
    HgRange range;
} HgInputRange;

/* Infer ranges over g's main graph, using shapes (computed by hg_shapes_infer for g). Inputs without a
 * range are unbounded. Never fails: unknown is unbounded. */
HgRanges *hg_ranges_infer(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs);
/* The same with --dim-max specs (NULL-terminated, may be NULL): the sizes rules may assume for
 * symbolic dims where a bound needs only an upper bound on a length. */
HgRanges *hg_ranges_infer_dims(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs,
                               const char *const *dim_max);
void hg_ranges_free(HgRanges *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgRanges, hg_ranges_free)

/* The range of v (unbounded when nothing is known). */
const HgRange *hg_ranges_get(const HgRanges *r, const HgValue *v);
/* The scan of initializer v's values (its exact range and FP16 counts), or NULL. */
const HgScan *hg_ranges_scan(const HgRanges *r, const HgValue *v);

G_END_DECLS

#endif
