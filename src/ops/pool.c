/* The pool family: AveragePool, MaxPool, GlobalAveragePool and GlobalMaxPool, with their interval
 * rules. Windows come from linalg.h; the typed kernels are pool.inc. */
#include "ops/linalg.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The typed kernels: kernel.h's templates, one instance per kind. */
#define HG_TEMPLATE "ops/pool.inc"
#include "ops/instances_float.inc"


/* ================================================================ pools */

/* Pools compute in FP32, FP64 for double and the wide integers (exact there). */
static HgKind
pool_kind(int dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16:
    case HG_DTYPE_INT8:
    case HG_DTYPE_UINT8:
    case HG_DTYPE_INT16:
    case HG_DTYPE_UINT16:
        return HG_KIND_F32;
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_INT32:
    case HG_DTYPE_UINT32:
    case HG_DTYPE_INT64:
    case HG_DTYPE_UINT64:
        return HG_KIND_F64;
    default:
        return HG_KIND_COUNT;
    }
}

static gboolean
pool_input(HgEvalCtx *ctx, gboolean ints_ok, guint min_rank, HgKind *kind, guint *nsp)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    *kind = pool_kind(x->dtype);
    if (*kind == HG_KIND_COUNT || (!ints_ok && !hg_dtype_is_float(x->dtype))) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                    hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?");
        return FALSE;
    }
    if (x->rank < min_rank) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %u, expected %u or more",
                    x->rank, min_rank);
        return FALSE;
    }
    *nsp = x->rank - 2;
    return TRUE;
}

/* Window geometry of a pool; ydims gets the output shape. */
static gboolean
pool_plan(HgEvalCtx *ctx, const HgArray *x, guint nsp, HgWin *w, gint64 *ydims)
{
    if (nsp > HG_WIN_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u spatial axes (at most %d)", nsp,
                    HG_WIN_RANK);
        return FALSE;
    }
    HgWinAttrs a;
    if (!hg_win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error))
        return FALSE;
    if (!a.has_kernel) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "kernel_shape is required");
        return FALSE;
    }
    gboolean ceil_mode =
        hg_opset_at_least(ctx->opset, 10) && hg_node_attr_int(ctx->node, "ceil_mode", 0) != 0;
    ydims[0] = x->dims[0];
    ydims[1] = x->dims[1];
    hg_win_init(w);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!hg_win_out_dim(&a, i, x->dims[2 + i], a.kernel[i], ceil_mode, &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the kernel does not fit in the padded input on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        hg_win_fill_axis(w, nsp, i, x->dims[2 + i], o, a.kernel[i], &a, pb, pe);
    }
    return TRUE;
}

static gboolean
eval_pool(HgEvalCtx *ctx, gboolean is_max)
{
    HgKind kind;
    guint nsp;
    if (!pool_input(ctx, is_max, 3, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    HgWin w;
    gint64 ydims[HG_MAX_RANK];
    if (!pool_plan(ctx, x, nsp, &w, ydims))
        return FALSE;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    g_autoptr(HgArray) ind = NULL;
    if (!y)
        return FALSE;
    if (is_max && hg_eval_wants(ctx, 1)) {
        ind = hg_eval_new_output(ctx, HG_DTYPE_INT64, x->rank, ydims);
        if (!ind)
            return FALSE;
    }
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    if (y->numel) {
        HgTaps *taps[HG_WIN_RANK];
        for (int j = 0; j < HG_WIN_RANK; j++)
            taps[j] = hg_win_taps(&w, j);
        gint64 planes = x->dims[0] * x->dims[1];
        if (is_max) {
            gboolean col_major = hg_node_attr_int(ctx->node, "storage_order", 0) != 0;
            HG_KIND_CALL_FLOAT(kind, maxpool, xb.p, yb.p, ind ? ind->data : NULL, planes, &w,
                        (const HgTaps *const *)taps, col_major);
        } else {
            gboolean incl = hg_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
            HG_KIND_CALL_FLOAT(kind, avgpool, xb.p, yb.p, planes, &w, (const HgTaps *const *)taps, incl);
        }
        for (int j = 0; j < HG_WIN_RANK; j++)
            g_free(taps[j]);
    }
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    if (ind)
        ctx->outputs[1] = g_steal_pointer(&ind);
    return TRUE;
}

gboolean
hg_infer_AveragePool(HgShapeCtx *ctx)
{
    return hg_infer_window(ctx, TRUE, hg_opset_at_least(ctx->opset, 10), hg_eval_AveragePool);
}

gboolean
hg_infer_MaxPool(HgShapeCtx *ctx)
{
    return hg_infer_window(ctx, TRUE, hg_opset_at_least(ctx->opset, 10), hg_eval_MaxPool);
}

gboolean
hg_eval_AveragePool(HgEvalCtx *ctx)
{
    return eval_pool(ctx, FALSE);
}

gboolean
hg_eval_MaxPool(HgEvalCtx *ctx)
{
    return eval_pool(ctx, TRUE);
}

static gint64
pool_cost(const HgShapeCtx *ctx)
{
    guint len;
    const gint64 *k = hg_attr_ints(ctx->node, "kernel_shape", &len);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!k || n < 0)
        return -1;
    for (guint i = 0; i < len; i++)
        n *= MAX(k[i], 0);
    return n;
}

gint64
hg_cost_AveragePool(const HgShapeCtx *ctx)
{
    return pool_cost(ctx);
}

gint64
hg_cost_MaxPool(const HgShapeCtx *ctx)
{
    return pool_cost(ctx);
}

/* Global pools: [N, C, 1, ...] (an input of rank 2 has no spatial axes and passes through). */
static gboolean
infer_global_pool(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_output(ctx, 0);
    if (y)
        y->dtype = x ? x->dtype : HG_DTYPE_UNDEFINED;
    if (!x || x->rank < 0)
        return TRUE;
    if (x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %d, expected 2 or more",
                    x->rank);
        return FALSE;
    }
    HgSymDim dims[HG_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        dims[i] = hg_dim_known(1);
    hg_vshape_set(y, x->dtype, x->rank, dims);
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

static gboolean
eval_global_pool(HgEvalCtx *ctx, gboolean is_max)
{
    HgKind kind;
    guint nsp;
    if (!pool_input(ctx, FALSE, 2, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    gint64 ydims[HG_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (guint i = 0; i < nsp; i++)
        ydims[2 + i] = 1;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    gint64 size = y->numel ? x->numel / y->numel : 0;
    HG_KIND_CALL_FLOAT(kind, global_pool, xb.p, yb.p, y->numel, size, is_max);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gboolean
hg_infer_GlobalAveragePool(HgShapeCtx *ctx)
{
    return infer_global_pool(ctx, hg_eval_GlobalAveragePool);
}

gboolean
hg_infer_GlobalMaxPool(HgShapeCtx *ctx)
{
    return infer_global_pool(ctx, hg_eval_GlobalMaxPool);
}

gboolean
hg_eval_GlobalAveragePool(HgEvalCtx *ctx)
{
    return eval_global_pool(ctx, FALSE);
}

gboolean
hg_eval_GlobalMaxPool(HgEvalCtx *ctx)
{
    return eval_global_pool(ctx, TRUE);
}

gint64
hg_cost_GlobalAveragePool(const HgShapeCtx *ctx)
{
    return hg_vshape_numel(hg_shape_input(ctx, 0));
}

gint64
hg_cost_GlobalMaxPool(const HgShapeCtx *ctx)
{
    return hg_vshape_numel(hg_shape_input(ctx, 0));
}

/* ---------------------------------------------------------------- interval rules */

static void
range_copy_input(HgRangeCtx *ctx, double lo, double hi, gboolean nan)
{
    if (!ctx->n_outputs || !ctx->outputs[0])
        return;
    *ctx->outputs[0] = hg_range_exact(lo, hi);
    ctx->outputs[0]->nan = nan;
}

gint64
hg_pool_window_extent(const HgNode *node)
{
    guint nk = 0, nd = 0;
    const gint64 *ks = hg_attr_ints(node, "kernel_shape", &nk);
    const gint64 *ds = hg_attr_ints(node, "dilations", &nd);
    gint64 m = G_MAXINT64;
    for (guint i = 0; ks && i < nk; i++)
        m = MIN(m, (ks[i] - 1) * (ds && i < nd ? MAX(ds[i], 1) : 1) + 1);
    return ks ? m : 0;
}

/* Whether every element of v is >= 0 by construction: Relu's output, or a Concat, MaxPool or
 * reshaping of such values (a few levels deep). */
static gboolean
nonneg_by_construction(const HgValue *v, int depth)
{
    const HgNode *n = v ? v->producer : NULL;
    if (!n || depth > 4 || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return FALSE;
    if (!strcmp(n->op_type, "Relu"))
        return TRUE;
    gboolean all = !strcmp(n->op_type, "Concat");
    if (!all && strcmp(n->op_type, "MaxPool") && strcmp(n->op_type, "Reshape") && strcmp(n->op_type, "Flatten"))
        return FALSE;
    for (guint i = 0; i < (all ? n->n_inputs : MIN(n->n_inputs, 1)); i++)
        if (!nonneg_by_construction(n->inputs[i], depth + 1))
            return FALSE;
    return n->n_inputs > 0;
}

/* Legacy converters put a Pad of -FLT_MAX in front of a MaxPool without pads of its own, so the
 * padded tensor's range reaches -FLT_MAX although no window is pad only. Whether that is the case
 * for the Pad that makes x (shape xs): pads only on spatial axes, each smaller than the window
 * (contiguous windows, no ceil_mode), so every window holds an element of the Pad's input; and that
 * input is nonnegative by construction. Then the output is >= 0. */
static gboolean
pad_windows_nonneg(const HgRangeCtx *ctx, const HgValueShape *xs)
{
    const HgNode *pn = ctx->node->n_inputs && ctx->node->inputs[0] ? ctx->node->inputs[0]->producer : NULL;
    if (!pn || strcmp(pn->op_type, "Pad") || (pn->domain && *pn->domain && strcmp(pn->domain, "ai.onnx")) ||
        pn->n_inputs != 1 || !xs || xs->rank < 3 || !nonneg_by_construction(pn->inputs[0], 0))
        return FALSE;
    gint64 max_pad;
    guint np = 0, nk = 0, nd = 0;
    const gint64 *pads = hg_attr_ints(pn, "pads", &np); /* before opset 11; later ones are inputs */
    const gint64 *ks = hg_attr_ints(ctx->node, "kernel_shape", &nk);
    const gint64 *ds = hg_attr_ints(ctx->node, "dilations", &nd);
    if (!pads || np != 2 * (guint)xs->rank || !ks || nk != (guint)xs->rank - 2 ||
        hg_win_pads(ctx->node, &max_pad) || hg_node_attr_int(ctx->node, "ceil_mode", 0))
        return FALSE;
    for (guint i = 0; i < nd; i++)
        if (ds[i] != 1)
            return FALSE;
    /* Only the padded axes' dims matter, and only to rule out an empty input, whose padding alone
     * could fill a window: a symbolic one does when the two pads together are shorter than the window
     * (no window fits in the padding of an empty axis). */
    for (int a = 0; a < xs->rank; a++) {
        gint64 pb = pads[a], pe = pads[a + xs->rank], k = a >= 2 ? ks[a - 2] : 1;
        if (pb < 0 || pe < 0 || pb >= k || pe >= k || (a < 2 && (pb || pe)))
            return FALSE;
        if ((pb || pe) && (xs->dims[a].v >= 0 ? xs->dims[a].v <= pb + pe : pb + pe >= k))
            return FALSE;
    }
    return TRUE;
}

void
hg_range_MaxPool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (!x)
        return;
    gint64 max_pad;
    gboolean pads = hg_win_pads(ctx->node, &max_pad);
    /* a window wholly in the padding (pads at least the window) yields the -inf the padding holds */
    double lo = pads && max_pad >= hg_pool_window_extent(ctx->node) ? -INFINITY : x->lo;
    if (ctx->node && lo < 0 && pad_windows_nonneg(ctx, ctx->shapes[0]))
        lo = 0;
    range_copy_input(ctx, lo, x->hi, x->nan);
    if (ctx->n_outputs > 1 && ctx->outputs[1] && ctx->shapes[0]) {
        gint64 n = hg_vshape_numel(ctx->shapes[0]);
        if (n > 0)
            *ctx->outputs[1] = hg_range_exact(0, (double)(n - 1));
    }
}

void
hg_range_GlobalMaxPool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (x)
        range_copy_input(ctx, x->lo, x->hi, x->nan);
}

/* Averages of n values in [lo, hi]: in [lo, hi] up to the FP32 sum's rounding. */
static void
range_average(HgRangeCtx *ctx, double lo, double hi, gboolean nan, gint64 n)
{
    if (!isfinite(lo) || !isfinite(hi))
        nan = TRUE; /* inf - inf */
    hg_range_set_linear(ctx, lo, hi, hg_mag(lo, hi), n + 1, nan);
    if (ctx->outputs[0] && nan)
        ctx->outputs[0]->nan = TRUE;
    if (ctx->outputs[0] && !isfinite(lo))
        ctx->outputs[0]->lo = -INFINITY;
    if (ctx->outputs[0] && !isfinite(hi))
        ctx->outputs[0]->hi = INFINITY;
}

void
hg_range_AveragePool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (!x)
        return;
    gint64 max_pad;
    gboolean pads = hg_win_pads(ctx->node, &max_pad);
    gboolean ceil_mode = hg_opset_at_least(ctx->opset, 10) && hg_node_attr_int(ctx->node, "ceil_mode", 0);
    gboolean incl = hg_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
    double lo = x->lo, hi = x->hi;
    gboolean nan = x->nan;
    gint64 ext = hg_pool_window_extent(ctx->node);
    if ((pads || ceil_mode) && (incl || max_pad >= ext)) {
        lo = MIN(lo, 0);
        hi = MAX(hi, 0);
    }
    if (max_pad >= ext && ext > 0)
        nan = TRUE; /* a window of padding only: 0/0 when the pads are not counted */
    guint nk = 0;
    const gint64 *ks = hg_attr_ints(ctx->node, "kernel_shape", &nk);
    gint64 n = 1;
    for (guint i = 0; ks && i < nk; i++)
        n *= MAX(ks[i], 1);
    if (!ks)
        return;
    range_average(ctx, lo, hi, nan, n);
}

void
hg_range_GlobalAveragePool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgValueShape *s = x ? ctx->shapes[0] : NULL;
    /* An average needs no dim but for its rounding slack: an unknown rank or symbolic spatial dims
     * still bound it. */
    if (!x || (s && s->rank >= 0 && s->rank < 2))
        return;
    gint64 n = s && s->rank >= 2 ? 1 : -1;
    for (int i = 2; s && i < s->rank; i++)
        n = n < 0 || s->dims[i].v < 0 ? -1 : n * s->dims[i].v;
    /* Symbolic spatial dims need only the rounding slack's length (their --dim-max, else
     * HG_ASSUMED_LEN, noted), and an empty window gives 0 / 0. */
    range_average(ctx, x->lo, x->hi, x->nan || n < 0, n < 0 ? hg_range_len_bound(ctx, s, 2, s ? s->rank : 0) : n);
}
