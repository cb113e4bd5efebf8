/* The order family: ArgMax, ArgMin and TopK, with their interval rules. uint64 values compare as
 * int64 with their sign bits flipped (hg_kbuf_load_ordered). */
#include "ops/reduce.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- ArgMax, ArgMin */

/* DEFINE_ARG(SUF, T, ISNAN) defines arg_SUF: the index of the largest (smallest) element along the
 * axis of an [outer, n, inner] tensor; ties go to the first index, or to the last with
 * select_last_index. A NaN beats every number (as numpy's argmax). */
#define DEFINE_ARG(SUF, T, ISNAN)                                                                  \
    static void arg_##SUF(const T *x, gint64 outer, gint64 n, gint64 inner, gboolean is_max,        \
                          gboolean last, gint64 *out)                                              \
    {                                                                                              \
        for (gint64 o = 0; o < outer; o++)                                                         \
            for (gint64 i = 0; i < inner; i++) {                                                   \
                const T *p = x + o * n * inner + i;                                                \
                gint64 best = 0;                                                                   \
                T bv = p[0];                                                                       \
                for (gint64 a = 1; a < n; a++) {                                                   \
                    T v = p[a * inner];                                                            \
                    gboolean better, tie;                                                          \
                    if (ISNAN(bv)) {                                                               \
                        better = FALSE;                                                            \
                        tie = ISNAN(v);                                                            \
                    } else if (ISNAN(v)) {                                                         \
                        better = TRUE;                                                             \
                        tie = FALSE;                                                               \
                    } else {                                                                       \
                        better = is_max ? v > bv : v < bv;                                         \
                        tie = v == bv;                                                             \
                    }                                                                              \
                    if (better || (last && tie)) {                                                 \
                        best = a;                                                                  \
                        bv = v;                                                                    \
                    }                                                                              \
                }                                                                                  \
                out[o * inner + i] = best;                                                         \
            }                                                                                      \
    }

#define NOT_NAN(v) FALSE
DEFINE_ARG(f32, float, isnan)
DEFINE_ARG(f64, double, isnan)
DEFINE_ARG(i64, gint64, NOT_NAN)

static gboolean
arg_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!x || !y)
        return TRUE;
    y->dtype = HG_DTYPE_INT64;
    if (x->rank < 0)
        return TRUE;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", 0), (guint)x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    gboolean mask[HG_MAX_RANK] = {FALSE};
    mask[axis] = TRUE;
    hg_infer_reduced(ctx, x, y, mask, keep, eval);
    return TRUE;
}

static gboolean
arg_eval(HgEvalCtx *ctx, gboolean is_max)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "data");
    if (!x || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", 0), x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    gboolean last = hg_node_attr_int(ctx->node, "select_last_index", 0) != 0;
    gint64 outer = hg_dims_prod(x->dims, 0, (guint)axis), n = x->dims[axis], inner = hg_dims_prod(x->dims, (guint)axis + 1, x->rank);
    if (n == 0 && outer * inner > 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "cannot take the %s of an empty axis",
                    is_max ? "argmax" : "argmin");
        return FALSE;
    }
    gint64 dims[HG_MAX_RANK];
    gboolean mask[HG_MAX_RANK] = {FALSE};
    mask[axis] = TRUE;
    guint r = hg_reduced_dims(x->rank, x->dims, mask, keep, dims);
    g_autoptr(HgArray) y = hg_array_new(HG_DTYPE_INT64, r, dims, ctx->error);
    if (!y)
        return FALSE;
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_U64)
        k = HG_KIND_I64;
    g_auto(HgKBuf) xb = hg_kbuf_load_ordered(x);
    HG_KIND_CALL(k, arg, xb.p, outer, n, inner, is_max, last, y->data);
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gboolean
hg_infer_ArgMax(HgShapeCtx *ctx)
{
    return arg_infer(ctx, hg_eval_ArgMax);
}

gboolean
hg_infer_ArgMin(HgShapeCtx *ctx)
{
    return arg_infer(ctx, hg_eval_ArgMin);
}

gboolean
hg_eval_ArgMax(HgEvalCtx *ctx)
{
    return arg_eval(ctx, TRUE);
}

gboolean
hg_eval_ArgMin(HgEvalCtx *ctx)
{
    return arg_eval(ctx, FALSE);
}

gint64
hg_cost_ArgMax(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 1);
}

gint64
hg_cost_ArgMin(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 1);
}

/* ---------------------------------------------------------------- NonZero */

/* The indices of X's nonzero elements (NaN counts as nonzero), one column per element in row-major
 * order: [rank(X), count], the count known only at run time. A scalar is read as one element of
 * rank 0: [0, 0 or 1], as numpy's nonzero of a 0-d array at least 1-d would not be; ONNX Runtime
 * gives the same. */
gboolean
hg_infer_NonZero(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!y)
        return TRUE;
    y->dtype = HG_DTYPE_INT64;
    if (!x || x->rank < 0)
        return TRUE;
    y->rank = 2;
    y->dims[0] = hg_dim_known(x->rank);
    y->dims[1] = hg_dim_unknown();
    return TRUE;
}

gboolean
hg_eval_NonZero(HgEvalCtx *ctx)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "X");
    if (!x || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    if (x->strings)
        return hg_eval_unsupported(ctx, x->dtype);
    gint64 count = 0;
    for (gint64 i = 0; i < x->numel; i++)
        count += hg_array_get_f64(x, i) != 0;
    gint64 dims[2] = {x->rank, count};
    g_autoptr(HgArray) y = hg_array_new(HG_DTYPE_INT64, 2, dims, ctx->error);
    if (!y)
        return FALSE;
    gint64 *out = y->data, col = 0;
    for (gint64 i = 0; i < x->numel; i++) {
        if (hg_array_get_f64(x, i) == 0)
            continue;
        gint64 rest = i;
        for (int d = (int)x->rank - 1; d >= 0; d--) {
            gint64 n = x->dims[d];
            out[d * count + col] = n > 0 ? rest % n : 0;
            rest = n > 0 ? rest / n : 0;
        }
        col++;
    }
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_NonZero(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 1);
}

/* ---------------------------------------------------------------- TopK */

/* Sort keys: the value (double holds every float type exactly; int64 the integers) and its index.
 * Larger first for largest=1, smaller first otherwise; equal values keep index order; NaN counts as
 * larger than every number. */
typedef struct {
    double v;
    gint64 i;
} KeyF;

typedef struct {
    gint64 v;
    gint64 i;
} KeyI;

static int
cmp_index(gint64 a, gint64 b)
{
    return (a > b) - (a < b);
}

static int
cmp_f(double a, double b)
{
    gboolean na = isnan(a), nb = isnan(b);
    if (na || nb)
        return na - nb;
    return (a > b) - (a < b);
}

static int
key_f_desc(const void *pa, const void *pb)
{
    const KeyF *a = pa, *b = pb;
    int c = cmp_f(b->v, a->v);
    return c ? c : cmp_index(a->i, b->i);
}

static int
key_f_asc(const void *pa, const void *pb)
{
    const KeyF *a = pa, *b = pb;
    int c = cmp_f(a->v, b->v);
    return c ? c : cmp_index(a->i, b->i);
}

static int
key_i_desc(const void *pa, const void *pb)
{
    const KeyI *a = pa, *b = pb;
    int c = (b->v > a->v) - (b->v < a->v);
    return c ? c : cmp_index(a->i, b->i);
}

static int
key_i_asc(const void *pa, const void *pb)
{
    const KeyI *a = pa, *b = pb;
    int c = (a->v > b->v) - (a->v < b->v);
    return c ? c : cmp_index(a->i, b->i);
}

/* TopK's k: the attribute before opset 10, then the second input (a one-element int64 tensor).
 * *known is FALSE when that input's value is not known. */
static gboolean
topk_k(const HgNode *node, gint64 opset, const HgArray *kin, gboolean has_kin, gint64 *k, gboolean *known,
       GError **error)
{
    *known = TRUE;
    if (opset < 10 && !has_kin) {
        HgAttr *a = hg_node_attr(node, "k");
        if (!a) {
            hg_op_error(error, HG_ERROR_INVALID, node, "attribute k is missing");
            return FALSE;
        }
        *k = a->i;
    } else {
        if (!kin) {
            *known = FALSE;
            if (!has_kin) {
                hg_op_error(error, HG_ERROR_INVALID, node, "input K is missing");
                return FALSE;
            }
            return TRUE;
        }
        if (hg_dtype_compute(kin->dtype) != HG_COMPUTE_I64 || kin->numel != 1 || kin->rank > 1 || !kin->data) {
            hg_op_error(error, HG_ERROR_INVALID, node, "K must be a one-element integer tensor");
            return FALSE;
        }
        *k = hg_array_get_i64(kin, 0);
    }
    if (*k < 0) {
        hg_op_error(error, HG_ERROR_INVALID, node, "k is negative (%" G_GINT64_FORMAT ")", *k);
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_TopK(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *ks = hg_shape_input(ctx, 1);
    HgValueShape *vals = hg_shape_wanted(ctx, 0), *idx = hg_shape_wanted(ctx, 1);
    if (!x)
        return TRUE;
    if (vals)
        vals->dtype = x->dtype;
    if (idx)
        idx->dtype = HG_DTYPE_INT64;
    if (x->rank < 0)
        return TRUE;
    gint64 axis, k;
    gboolean known;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)x->rank, &axis, ctx->node, ctx->error) ||
        !topk_k(ctx->node, ctx->opset, ks ? ks->value : NULL, ks != NULL, &k, &known, ctx->error))
        return FALSE;
    if (known && x->dims[axis].v >= 0 && k > x->dims[axis].v) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "k (%" G_GINT64_FORMAT ") is larger than the axis (%" G_GINT64_FORMAT ")", k, x->dims[axis].v);
        return FALSE;
    }
    HgValueShape *outs[2] = {vals, idx};
    for (int j = 0; j < 2; j++) {
        if (!outs[j])
            continue;
        hg_vshape_like(outs[j], x, outs[j]->dtype);
        outs[j]->dims[axis].v = known ? k : -1;
        outs[j]->dims[axis].sym = NULL;
    }
    hg_fold(ctx, hg_eval_TopK, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_eval_TopK(HgEvalCtx *ctx)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "X");
    if (!x || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    gint64 axis, k;
    gboolean known;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), x->rank, &axis, ctx->node, ctx->error) ||
        !topk_k(ctx->node, ctx->opset, hg_eval_input(ctx, 1), hg_eval_input(ctx, 1) != NULL, &k, &known, ctx->error))
        return FALSE;
    gint64 n = x->dims[axis];
    if (k > n) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "k (%" G_GINT64_FORMAT ") is larger than the axis (%" G_GINT64_FORMAT ")", k, n);
        return FALSE;
    }
    gboolean largest = hg_node_attr_int(ctx->node, "largest", 1) != 0;
    gint64 outer = hg_dims_prod(x->dims, 0, (guint)axis), inner = hg_dims_prod(x->dims, (guint)axis + 1, x->rank);
    gint64 dims[HG_MAX_RANK];
    memcpy(dims, x->dims, sizeof(gint64) * x->rank);
    dims[axis] = k;
    g_autoptr(HgArray) vals = hg_array_new(x->dtype, x->rank, dims, ctx->error);
    g_autoptr(HgArray) idx = vals ? hg_array_new(HG_DTYPE_INT64, x->rank, dims, ctx->error) : NULL;
    if (!idx)
        return FALSE;
    /* Rank each line by sorting (value, index) keys, then copy the first k elements raw. The output
     * is sorted whatever `sorted` says (sorted=0 leaves the order to the implementation). */
    gsize esize = hg_dtype_size(x->dtype);
    gboolean is_int = hg_dtype_compute(x->dtype) == HG_COMPUTE_I64;
    gint64 *iv = NULL;
    double *fv = NULL;
    gboolean own = FALSE;
    if (!is_int) {
        fv = hg_array_load_f64(x, &own); /* exact for every float type */
    } else {
        iv = hg_array_load_i64(x, &own);
        if (x->dtype == HG_DTYPE_UINT64) {
            if (!own) {
                iv = g_memdup2(iv, sizeof(gint64) * (gsize)(x->numel + 1));
                own = TRUE;
            }
            hg_flip_sign(iv, x->numel);
        }
    }
    KeyF *kf = is_int ? NULL : g_new(KeyF, n + 1);
    KeyI *ki = is_int ? g_new(KeyI, n + 1) : NULL;
    gint64 *out_idx = idx->data;
    for (gint64 o = 0; o < outer; o++)
        for (gint64 i = 0; i < inner; i++) {
            gint64 base = o * n * inner + i;
            for (gint64 a = 0; a < n; a++) {
                if (is_int) {
                    ki[a].v = iv[base + a * inner];
                    ki[a].i = a;
                } else {
                    kf[a].v = fv[base + a * inner];
                    kf[a].i = a;
                }
            }
            if (is_int)
                qsort(ki, (size_t)n, sizeof(KeyI), largest ? key_i_desc : key_i_asc);
            else
                qsort(kf, (size_t)n, sizeof(KeyF), largest ? key_f_desc : key_f_asc);
            for (gint64 j = 0; j < k; j++) {
                gint64 a = is_int ? ki[j].i : kf[j].i;
                gint64 dst = (o * k + j) * inner + i;
                out_idx[dst] = a;
                memcpy((char *)vals->data + dst * esize, (const char *)x->data + (base + a * inner) * esize, esize);
            }
        }
    g_free(kf);
    g_free(ki);
    if (own) {
        g_free(iv);
        g_free(fv);
    }
    hg_eval_set_output(ctx, 0, g_steal_pointer(&vals));
    if (hg_eval_wants(ctx, 1))
        hg_eval_set_output(ctx, 1, g_steal_pointer(&idx));
    return TRUE;
}

gint64
hg_cost_TopK(const HgShapeCtx *ctx)
{
    /* a sort per line: about log2(n) comparisons per element */
    const HgValueShape *x = hg_shape_input(ctx, 0);
    gint64 n = hg_shape_input_numel(ctx, 0);
    if (n < 0)
        return -1;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)x->rank, &axis, NULL, NULL))
        return -1;
    gint64 len = x->dims[axis].v, lg = 1;
    while (len > 1) {
        len >>= 1;
        lg++;
    }
    return n * lg;
}

/* ---------------------------------------------------------------- interval rules */

/* The index output k of an op over axis (attribute name, default) of input 0: [0, dim - 1]. */
static void
index_range(HgRangeCtx *ctx, guint k, gint64 dflt_axis)
{
    HgRange *y = hg_range_output(ctx, k);
    if (!y)
        return;
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    gint64 dim = -1, axis;
    if (xs && xs->rank >= 0 &&
        hg_norm_axis(hg_node_attr_int(ctx->node, "axis", dflt_axis), (guint)xs->rank, &axis, NULL, NULL))
        dim = hg_shape_dim(xs, axis);
    *y = hg_range_make(0, dim > 0 ? (double)(dim - 1) : INFINITY, 1, FALSE);
}

void
hg_range_ArgMax(HgRangeCtx *ctx)
{
    index_range(ctx, 0, 0);
}

void
hg_range_ArgMin(HgRangeCtx *ctx)
{
    index_range(ctx, 0, 0);
}

/* Row d holds indices along X's axis d: [0, the largest dim - 1] (unbounded above where a dim is
 * not known). */
void
hg_range_NonZero(HgRangeCtx *ctx)
{
    HgRange *y = hg_range_output(ctx, 0);
    if (!y)
        return;
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    double hi = 0;
    gboolean known = xs && xs->rank >= 0;
    for (int d = 0; known && d < xs->rank; d++) {
        gint64 n = hg_shape_dim(xs, d);
        known = n >= 0;
        hi = MAX(hi, (double)(n - 1));
    }
    *y = hg_range_make(0, known ? hi : INFINITY, 1, FALSE);
}

/* Values are elements of the input; indices lie along the axis. */
void
hg_range_TopK(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *vals = hg_range_output(ctx, 0);
    if (vals && hg_range_nonempty(x))
        *vals = *x;
    index_range(ctx, 1, -1);
}
