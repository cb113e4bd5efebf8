/* Interval analysis: walks the main graph in topological order and asks each op's interval rule for
 * its outputs. Exact ranges come from initializers and from every value shape inference computed
 * (folded shape math); graph inputs take the ranges the caller gives. */
#include "ranges.h"
#include "halfguard/check.h"
#include "ops/kernel.h"
#include "ops/linalg.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

static HgRange *
range_new(HgRange r)
{
    return g_memdup2(&r, sizeof r);
}

/* FP32 kernels round: a rule's exact-arithmetic bound can be crossed by a few ulps of accumulated
 * rounding. Widen every finite bound outward by a relative 2^-20 (about 8 FP32 ulps). */
static void
widen(HgRange *r)
{
    const double rel = 1.0 / 1048576.0;
    if (isfinite(r->lo))
        r->lo -= fabs(r->lo) * rel;
    if (isfinite(r->hi))
        r->hi += fabs(r->hi) * rel;
    r->tiny *= 1.0 - rel;
}

/* The same widening for a per-channel interval. */
static void
widen_bounds(double *lo, double *hi)
{
    const double rel = 1.0 / 1048576.0;
    *lo -= fabs(*lo) * rel;
    *hi += fabs(*hi) * rel;
}

const HgChan *
hg_ranges_chan(const HgRanges *r, const HgValue *v)
{
    return v ? g_hash_table_lookup(r->chans, v) : NULL;
}

static const HgInputRange *
find_input(const HgInputRange *in, guint n, const char *name)
{
    const HgInputRange *best = NULL;
    int rank = 0;
    for (guint i = 0; i < n; i++) {
        int r = hg_input_range_rank(in[i].name, name);
        if (r > rank)
            best = &in[i], rank = r;
    }
    return best;
}

const HgRange *
hg_ranges_get(const HgRanges *r, const HgValue *v)
{
    static const HgRange any = {-INFINITY, INFINITY, 0, TRUE};
    const HgRange *x = v ? g_hash_table_lookup(r->ranges, v) : NULL;
    return x ? x : &any;
}

static const HgRange *
range_lookup(gconstpointer data, const HgValue *v)
{
    return hg_ranges_get(data, v);
}

static const HgValueShape *
shape_lookup(gconstpointer data, const HgValue *v)
{
    return hg_shapes_get(data, v);
}

/* Constants seen through ops that only rearrange them (issue 12): an initializer behind a Reshape,
 * Flatten, Squeeze, Unsqueeze or Identity is a view of the same bytes with the output's dims, at any
 * size, so the rules downstream (a MatMul's column norms, say) see the weights themselves. A Transpose
 * moves the elements, so it is a copy, made only up to TRANSPOSE_COPY_MAX elements. Shape inference
 * folds only small values (HG_FOLD_MAX_OUTPUT); these are the large ones. */
#define TRANSPOSE_COPY_MAX ((gint64)1 << 22)

static HgArray *
const_through(const HgNode *n, gint64 opset, GHashTable *consts, const HgValueShape *os)
{
    if (!n->n_inputs || !n->inputs[0] || n->n_outputs < 1 || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return NULL;
    HgArray *a = g_hash_table_lookup(consts, n->inputs[0]);
    if (!a || a->strings || !os || os->rank < 0 || os->rank > HG_MAX_RANK)
        return NULL;
    gint64 dims[HG_MAX_RANK];
    for (int i = 0; i < os->rank; i++)
        if ((dims[i] = os->dims[i].v) < 0)
            return NULL;
    if (!strcmp(n->op_type, "Reshape") || !strcmp(n->op_type, "Flatten") || !strcmp(n->op_type, "Squeeze") ||
        !strcmp(n->op_type, "Unsqueeze") || !strcmp(n->op_type, "Identity"))
        return os->dtype == a->dtype ? hg_array_reshape_view(a, (guint)os->rank, dims, NULL) : NULL;
    if (strcmp(n->op_type, "Transpose") || a->numel > TRANSPOSE_COPY_MAX)
        return NULL;
    const HgOpDef *op = hg_op_for_node(n);
    HgArray *out = NULL;
    if (!op || !op->eval || !hg_eval_constants(n, opset, op->eval, 1, &a, 1, &out, NULL))
        return NULL;
    if (out && (out->numel != a->numel || out->rank != (guint)os->rank))
        g_clear_pointer(&out, hg_array_unref);
    return out;
}

const HgScan *
hg_ranges_scan(const HgRanges *r, const HgValue *v)
{
    return v ? g_hash_table_lookup(r->scans, v) : NULL;
}

void
hg_ranges_free(HgRanges *r)
{
    if (!r)
        return;
    g_hash_table_unref(r->scans);
    g_hash_table_unref(r->chans);
    g_ptr_array_unref(r->assumed);
    g_hash_table_unref(r->ranges);
    g_free(r);
}

static void
note_assumed(GPtrArray *assumed, const char *msg)
{
    if (!assumed)
        return;
    for (guint i = 0; i < assumed->len; i++)
        if (!strcmp(assumed->pdata[i], msg))
            return;
    g_ptr_array_add(assumed, g_strdup(msg));
}

gint64
hg_range_len_bound(const HgRangeCtx *ctx, const HgValueShape *s, int from, int to)
{
    if (!s || s->rank < 0 || to > s->rank) {
        note_assumed(ctx->assumed, "a dim of unknown rank: at most 2^20 elements (rounding slack)");
        return HG_ASSUMED_LEN;
    }
    gint64 n = 1;
    gboolean unbounded = FALSE;
    for (int i = MAX(from, 0); i < to; i++) {
        const HgSymDim *d = &s->dims[i];
        gint64 v = d->v >= 0 ? d->v : hg_dim_max_lookup(ctx->dim_max, d->sym, -1);
        g_autofree char *what = d->sym ? g_strdup_printf("symbolic dim '%s'", d->sym)
                                       : g_strdup("an unnamed symbolic dim");
        if (d->v < 0 && v > 0) {
            g_autofree char *m = g_strdup_printf("%s at most %" G_GINT64_FORMAT " (--dim-max)", what, v);
            note_assumed(ctx->assumed, m);
        }
        if (v < 0) {
            g_autofree char *m = g_strdup_printf("%s: at most 2^20 elements where a rounding slack needs a "
                                                 "length (--dim-max %s%s sets it)", what, d->sym ? d->sym : "N", d->sym ? "=N" : "");
            note_assumed(ctx->assumed, m);
            unbounded = TRUE;
        } else {
            n = v > 0 && n > G_MAXINT64 / v ? G_MAXINT64 : n * v;
        }
    }
    return unbounded ? MAX(n, HG_ASSUMED_LEN) : n;
}

HgRanges *
hg_ranges_infer(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs)
{
    return hg_ranges_infer_dims(g, shapes, inputs, n_inputs, NULL);
}

/* ---------------------------------------------------------------- reading the weights once */

typedef struct {
    HgArray *w;
    gboolean by_rows;
    gint64 rows, cols;
} Prescan;

static void
prescan_task(gpointer data, gint64 i, int worker)
{
    Prescan *j = &g_array_index((GArray *)data, Prescan, i);
    hg_weight_prescan(j->w, j->by_rows, j->rows, j->cols);
}

/* The large FP32 weights of MatMul, Gemm and Conv nodes, each read once, with everything the rules
 * below will ask of its bytes (scan, row or column sums, squares: hg_weight_prescan), in two threads
 * when there are hundreds of megabytes to read. The facts stay with the mapped file, so the next
 * analysis of the same model (convert runs several) reads nothing again. What is computed is what
 * the rules would compute themselves, to the bit; a weight used in another layout is read again by
 * its rule. */
#define PRESCAN_THREADS_MIN_BYTES ((guint64)256 << 20)

/* PRESCAN_THREADS_MIN_BYTES, or HALFGUARD_TEST_PRESCAN_THREADS_MIN (bytes): the test suite runs the
 * two threads on a small model under helgrind. */
static guint64
prescan_threads_min(void)
{
    const char *env = g_getenv("HALFGUARD_TEST_PRESCAN_THREADS_MIN");
    guint64 v;
    if (env && g_ascii_string_to_unsigned(env, 10, 1, PRESCAN_THREADS_MIN_BYTES, &v, NULL))
        return v;
    return PRESCAN_THREADS_MIN_BYTES;
}

static void
prescan_weights(HgGraph *g)
{
    g_autoptr(GArray) jobs = g_array_new(FALSE, FALSE, sizeof(Prescan));
    guint64 total = 0;
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t || t->dtype != HG_DTYPE_FLOAT || t->nbytes < HG_FACT_MIN_BYTES ||
            hg_blob_fd(t->blob) < 0 || t->rank < 2 || !v->uses || !v->uses->len)
            continue;
        const HgUse *u = &g_array_index(v->uses, HgUse, 0);
        const HgNode *n = u->node;
        Prescan j = {NULL, FALSE, t->dims[0], 0};
        if (u->index != 1 || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
            continue;
        if (!strcmp(n->op_type, "MatMul") && t->rank == 2)
            j.cols = t->dims[1];
        else if (!strcmp(n->op_type, "Gemm") && t->rank == 2)
            j.by_rows = hg_node_attr_int(n, "transB", 0) != 0, j.cols = t->dims[1];
        else if (!strcmp(n->op_type, "Conv") && t->dims[0] > 0)
            j.by_rows = TRUE, j.cols = hg_tensor_numel(t) / t->dims[0];
        else
            continue;
        j.w = hg_array_view_tensor(t, NULL);
        if (!j.w)
            continue;
        total += t->nbytes;
        g_array_append_val(jobs, j);
    }
    hg_par_for(total >= prescan_threads_min() && g_get_num_processors() > 1 ? 2 : 1, jobs->len, prescan_task, jobs);
    for (guint i = 0; i < jobs->len; i++)
        hg_array_unref(g_array_index(jobs, Prescan, i).w);
}

HgRanges *
hg_ranges_infer_dims(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs,
                     const char *const *dim_max)
{
    g_return_val_if_fail(g != NULL && shapes != NULL, NULL);
    HgRanges *r = g_new0(HgRanges, 1);
    r->assumed = g_ptr_array_new_with_free_func(g_free);
    r->graph = g;
    r->generation = g->generation;
    r->ranges = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    r->scans = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    r->chans = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_chan_free);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, NULL);
    if (!order)
        return r;
    for (guint i = 0; i < g->inputs->len; i++) {
        HgValueDecl *d = g->inputs->pdata[i];
        const HgInputRange *ir = find_input(inputs, n_inputs, d->value->name);
        if (ir && !d->value->init)
            g_hash_table_insert(r->ranges, d->value, range_new(ir->range));
    }
    prescan_weights(g);
    /* Constant inputs of nodes: initializers (any size: views of the file, read once here) and values
     * shape inference folded. */
    g_autoptr(GHashTable) consts = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_array_unref);
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t)
            continue;
        HgArray *a = hg_array_view_tensor(t, NULL);
        if (!a)
            continue;
        HgScan *scan = g_new(HgScan, 1);
        *scan = hg_scan_array(a);
        hg_array_release(a);
        g_hash_table_insert(r->scans, v, scan);
        g_hash_table_insert(r->ranges, v, range_new(scan->range));
        g_hash_table_insert(consts, v, a);
    }
    gint64 opset = g->model ? hg_model_opset(g->model, "") : 0;
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        g_autofree const HgRange **ins = g_new0(const HgRange *, n->n_inputs + 1);
        g_autofree const HgValueShape **ishapes = g_new0(const HgValueShape *, n->n_inputs + 1);
        g_autofree const HgArray **vals = g_new0(const HgArray *, n->n_inputs + 1);
        g_autofree const HgValueShape **oshapes = g_new0(const HgValueShape *, n->n_outputs + 1);
        g_autofree HgRange **outs = g_new0(HgRange *, n->n_outputs + 1);
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (!v)
                continue;
            ins[k] = hg_ranges_get(r, v);
            ishapes[k] = hg_shapes_get(shapes, v);
            vals[k] = g_hash_table_lookup(consts, v);
            if (!vals[k])
                vals[k] = ishapes[k]->value;
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            oshapes[k] = hg_shapes_get(shapes, n->outputs[k]);
            outs[k] = range_new(hg_range_any());
        }
        const HgOpDef *op = hg_op_for_node(n);
        if (op && op->range) {
            HgRangeCtx ctx = {n, opset, n->n_inputs, ins, ishapes, vals, n->n_outputs, oshapes, outs,
                              range_lookup, r, shape_lookup, shapes, dim_max, r->assumed};
            op->range(&ctx);
        }
        /* Per-channel intervals: kept beside the first output's, and its interval met with their hull
         * (both sound, so the meet is). */
        HgChanCtx cx = {n, n->n_inputs, ins, ishapes, vals, n->n_outputs ? oshapes[0] : NULL, r->chans};
        HgChan *ch = n->n_outputs ? hg_chan_rule(&cx) : NULL;
        if (ch) {
            double lo = INFINITY, hi = -INFINITY;
            for (gint64 j = 0; j < ch->c; j++) {
                widen_bounds(&ch->lo[j], &ch->hi[j]);
                lo = MIN(lo, ch->lo[j]);
                hi = MAX(hi, ch->hi[j]);
            }
            if (MAX(outs[0]->lo, lo) <= MIN(outs[0]->hi, hi)) {
                outs[0]->lo = MAX(outs[0]->lo, lo);
                outs[0]->hi = MIN(outs[0]->hi, hi);
                g_hash_table_replace(r->chans, n->outputs[0], ch);
            } else {
                hg_chan_free(ch); /* an empty value: nothing to gain */
            }
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            /* A value shape inference computed is known exactly, whatever the rule said. */
            if (oshapes[k]->value) {
                *outs[k] = hg_range_of_array(oshapes[k]->value);
            } else {
                widen(outs[k]);
                /* stored in the output's float type: past its range inf, under its subnormals 0 */
                if (hg_dtype_is_float(oshapes[k]->dtype))
                    *outs[k] = hg_range_fit(*outs[k], oshapes[k]->dtype);
            }
            if (n->outputs[k] && k == 0 && !oshapes[0]->value) {
                HgArray *view = const_through(n, opset, consts, oshapes[0]);
                if (view)
                    g_hash_table_insert(consts, n->outputs[0], view);
            }
            if (n->outputs[k])
                g_hash_table_replace(r->ranges, n->outputs[k], outs[k]);
            else
                g_free(outs[k]);
        }
    }
    return r;
}
