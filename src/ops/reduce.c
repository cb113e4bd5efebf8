/* The reduce family: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceLogSumExp, ReduceSumSquare and CumSum, with their interval rules; and what the reduce,
 * order, softmax and norm families share (reduce.h).
 *
 * Reductions sum in FP32 with the stored result rounded once, except CumSum of FP16 and BF16, which
 * rounds every partial sum to its own width as the targets do (ops.def's accumulation notes). */
#include "ops/reduce.h"
#include "halfguard/check.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- small helpers */

/* Output k's shape record, or NULL when the node omits that output. */
HgValueShape *
hg_shape_wanted(HgShapeCtx *ctx, guint k)
{
    if (k >= ctx->n_outputs || !ctx->outputs[k])
        return NULL;
    if (ctx->node && (k >= ctx->node->n_outputs || !ctx->node->outputs[k]))
        return NULL;
    return ctx->outputs[k];
}

void
hg_vshape_like(HgValueShape *dst, const HgValueShape *src, int dtype)
{
    dst->dtype = dtype;
    dst->rank = src->rank;
    for (int i = 0; i < src->rank && i < HG_MAX_RANK; i++)
        dst->dims[i] = src->dims[i];
}

/* Store a (owned) as output k. */
void
hg_eval_set_output(HgEvalCtx *ctx, guint k, HgArray *a)
{
    if (ctx->outputs[k])
        hg_array_unref(ctx->outputs[k]);
    ctx->outputs[k] = a;
}

/* Input i, which must be present and hold numbers of a type the kernels compute in. */
HgArray *
hg_eval_need_input(HgEvalCtx *ctx, guint i, const char *what)
{
    HgArray *a = hg_eval_input(ctx, i);
    if (!a) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input %u (%s) is missing", i, what);
        return NULL;
    }
    if (hg_dtype_compute(a->dtype) == HG_COMPUTE_NONE || (!a->data && a->numel)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "input %u (%s) of type %s is not supported",
                    i, what, hg_dtype_name(a->dtype) ? hg_dtype_name(a->dtype) : "?");
        return NULL;
    }
    return a;
}

gboolean
hg_eval_need_outputs(HgEvalCtx *ctx, guint n)
{
    if (ctx->n_outputs >= n)
        return TRUE;
    hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "needs %u output slots, has %u", n, ctx->n_outputs);
    return FALSE;
}

/* Product of dims [from, to); 1 when the range is empty. */
gint64
hg_dims_prod(const gint64 *dims, guint from, guint to)
{
    return to > from ? hg_numel(to - from, dims + from) : 1;
}

/* The input of a cost function, as a known element count or -1. */
gint64
hg_shape_input_numel(const HgShapeCtx *ctx, guint i)
{
    const HgValueShape *s = hg_shape_input(ctx, i);
    return s ? hg_vshape_numel(s) : -1;
}

gint64
hg_cost_per_element(const HgShapeCtx *ctx, gint64 per_element)
{
    gint64 n = hg_shape_input_numel(ctx, 0);
    return n < 0 ? -1 : n * per_element;
}

/* Smallest and largest value of an integer dtype, as int64 (UINT64 compares through hg_flip_sign and
 * takes int64's range). */
static void
int_range(int dtype, gint64 *lo, gint64 *hi)
{
    switch (dtype) {
    case HG_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    case HG_DTYPE_INT8: *lo = G_MININT8; *hi = G_MAXINT8; break;
    case HG_DTYPE_UINT8: *lo = 0; *hi = G_MAXUINT8; break;
    case HG_DTYPE_INT16: *lo = G_MININT16; *hi = G_MAXINT16; break;
    case HG_DTYPE_UINT16: *lo = 0; *hi = G_MAXUINT16; break;
    case HG_DTYPE_INT32: *lo = G_MININT32; *hi = G_MAXINT32; break;
    case HG_DTYPE_UINT32: *lo = 0; *hi = G_MAXUINT32; break;
    default: *lo = G_MININT64; *hi = G_MAXINT64; break;
    }
}

/* UINT64 values compare like int64 once the sign bit is flipped; flipping again restores them. The
 * order-based kernels (ReduceMax/Min, ArgMax/Min, TopK) run on flipped copies. */
void
hg_flip_sign(gint64 *v, gint64 n)
{
    for (gint64 i = 0; i < n; i++)
        v[i] = (gint64)((guint64)v[i] ^ ((guint64)1 << 63));
}

/* x in its kind for an order-based kernel (uint64 as int64): a uint64 array as a copy with the sign
 * bits flipped (flip the results back where they are values). */
HgKBuf
hg_kbuf_load_ordered(const HgArray *x)
{
    HgKind k = hg_kind_of(x->dtype);
    HgKBuf b = hg_kbuf_load(x, k == HG_KIND_U64 ? HG_KIND_I64 : k);
    if (x->dtype == HG_DTYPE_UINT64) {
        if (!b.owned)
            b = (HgKBuf){g_memdup2(b.p, sizeof(gint64) * (gsize)(x->numel + 1)), TRUE};
        hg_flip_sign(b.p, x->numel);
    }
    return b;
}

/* int64 arithmetic that wraps like the narrower C types it stands for (signed overflow is UB). */
static inline gint64
wrap_add(gint64 a, gint64 b)
{
    return (gint64)((guint64)a + (guint64)b);
}

static inline gint64
wrap_mul(gint64 a, gint64 b)
{
    return (gint64)((guint64)a * (guint64)b);
}

static inline gint64
wrap_abs(gint64 a)
{
    return a < 0 ? (gint64)(0 - (guint64)a) : a;
}

static inline float
round_bf16(float f)
{
    return hg_bf16_to_float(hg_float_to_bf16(f));
}

/* ---------------------------------------------------------------- Reduce* */

typedef enum {
    RED_SUM,
    RED_MEAN,
    RED_PROD,
    RED_MAX,
    RED_MIN,
    RED_L1,
    RED_L2,
    RED_SUMSQ,
    RED_LSE,
} RedKind;

/* A reduction laid out for the walk: the input's dims without the 1s, neighbours merged when both
 * are reduced or both kept. A reduction over trailing axes becomes [rows, run] with contiguous runs,
 * one over leading axes [run, cols] with contiguous output rows. */
typedef struct {
    int n;
    gint64 dims[HG_MAX_RANK];
    gboolean red[HG_MAX_RANK];
    gint64 out_stride[HG_MAX_RANK]; /* 0 along reduced dims */
    gint64 in_numel, out_numel, count; /* count: input elements per output element */
} RedLayout;

static void
red_layout(guint rank, const gint64 *dims, const gboolean *mask, RedLayout *lay)
{
    memset(lay, 0, sizeof(*lay));
    lay->in_numel = lay->out_numel = lay->count = 1;
    for (guint i = 0; i < rank; i++) {
        lay->in_numel *= dims[i];
        if (mask[i])
            lay->count *= dims[i];
        else
            lay->out_numel *= dims[i];
        if (dims[i] == 1)
            continue;
        if (lay->n > 0 && lay->red[lay->n - 1] == mask[i]) {
            lay->dims[lay->n - 1] *= dims[i];
        } else {
            lay->dims[lay->n] = dims[i];
            lay->red[lay->n] = mask[i];
            lay->n++;
        }
    }
    if (lay->n == 0) {
        lay->dims[0] = 1;
        lay->n = 1;
    }
    gint64 s = 1;
    for (int i = lay->n - 1; i >= 0; i--) {
        lay->out_stride[i] = lay->red[i] ? 0 : s;
        if (!lay->red[i])
            s *= lay->dims[i];
    }
}

/* DEFINE_WALK(name, T, MAP, COMBINE) defines name(lay, x, acc, shift): for every output element o,
 * acc[o] = COMBINE(acc[o], MAP(x, o)) over the inputs reduced into o. It walks the input in memory
 * order: an odometer over the outer merged dims, then one contiguous run that is either reduced into
 * one acc element or combined elementwise into a row of acc, both in blocks of eight lanes so gcc
 * vectorizes them. shift is the per-output offset of ReduceLogSumExp's MAP. */
#define DEFINE_WALK(name, T, MAP, COMBINE)                                                         \
    static void name(const RedLayout *lay, const T *restrict x, T *restrict acc, const T *shift)   \
    {                                                                                              \
        const int n = lay->n;                                                                      \
        const gint64 len = lay->dims[n - 1];                                                       \
        (void)shift;                                                                               \
        if (len == 0 || lay->in_numel == 0)                                                        \
            return;                                                                                \
        const gint64 runs = lay->in_numel / len;                                                   \
        gint64 idx[HG_MAX_RANK] = {0}, o = 0;                                                      \
        for (gint64 r = 0; r < runs; r++) {                                                        \
            const T *xr = x + r * len;                                                             \
            if (lay->red[n - 1]) {                                                                 \
                T a = acc[o];                                                                      \
                gint64 j = 0;                                                                      \
                if (len >= 16) {                                                                   \
                    T lane[8];                                                                     \
                    for (int k = 0; k < 8; k++)                                                    \
                        lane[k] = MAP(xr[k], o);                                                   \
                    for (j = 8; j + 8 <= len; j += 8)                                              \
                        for (int k = 0; k < 8; k++)                                                \
                            lane[k] = COMBINE(lane[k], MAP(xr[j + k], o));                         \
                    for (int k = 0; k < 8; k++)                                                    \
                        a = COMBINE(a, lane[k]);                                                   \
                }                                                                                  \
                for (; j < len; j++)                                                               \
                    a = COMBINE(a, MAP(xr[j], o));                                                 \
                acc[o] = a;                                                                        \
            } else {                                                                               \
                T *ar = acc + o;                                                                   \
                gint64 j = 0;                                                                      \
                for (; j + 8 <= len; j += 8)                                                       \
                    for (int k = 0; k < 8; k++)                                                    \
                        ar[j + k] = COMBINE(ar[j + k], MAP(xr[j + k], o + j + k));                 \
                for (; j < len; j++)                                                               \
                    ar[j] = COMBINE(ar[j], MAP(xr[j], o + j));                                     \
            }                                                                                      \
            for (int d = n - 2; d >= 0; d--) {                                                     \
                o += lay->out_stride[d];                                                           \
                if (++idx[d] < lay->dims[d])                                                       \
                    break;                                                                         \
                o -= lay->out_stride[d] * lay->dims[d];                                            \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }

#define MAP_ID(v, o) (v)
#define MAP_ABS(v, o) fabsf(v)
#define MAP_ABS64(v, o) fabs(v)
#define MAP_SQ(v, o) ((v) * (v))
#define MAP_EXPF(v, o) expf((v) - shift[o])
#define MAP_EXP(v, o) exp((v) - shift[o])
#define MAP_IABS(v, o) wrap_abs(v)
#define MAP_ISQ(v, o) wrap_mul((v), (v))
#define CMB_ADD(a, b) ((a) + (b))
#define CMB_MUL(a, b) ((a) * (b))
#define CMB_FMAX(a, b) ((b) > (a) || isnan(b) ? (b) : (a))
#define CMB_FMIN(a, b) ((b) < (a) || isnan(b) ? (b) : (a))
#define CMB_IADD(a, b) wrap_add((a), (b))
#define CMB_IMUL(a, b) wrap_mul((a), (b))
#define CMB_IMAX(a, b) ((b) > (a) ? (b) : (a))
#define CMB_IMIN(a, b) ((b) < (a) ? (b) : (a))

DEFINE_WALK(walk_sum_f32, float, MAP_ID, CMB_ADD)
DEFINE_WALK(walk_l1_f32, float, MAP_ABS, CMB_ADD)
DEFINE_WALK(walk_sq_f32, float, MAP_SQ, CMB_ADD)
DEFINE_WALK(walk_prod_f32, float, MAP_ID, CMB_MUL)
DEFINE_WALK(walk_max_f32, float, MAP_ID, CMB_FMAX)
DEFINE_WALK(walk_min_f32, float, MAP_ID, CMB_FMIN)
DEFINE_WALK(walk_exp_f32, float, MAP_EXPF, CMB_ADD)
DEFINE_WALK(walk_sum_f64, double, MAP_ID, CMB_ADD)
DEFINE_WALK(walk_l1_f64, double, MAP_ABS64, CMB_ADD)
DEFINE_WALK(walk_sq_f64, double, MAP_SQ, CMB_ADD)
DEFINE_WALK(walk_prod_f64, double, MAP_ID, CMB_MUL)
DEFINE_WALK(walk_max_f64, double, MAP_ID, CMB_FMAX)
DEFINE_WALK(walk_min_f64, double, MAP_ID, CMB_FMIN)
DEFINE_WALK(walk_exp_f64, double, MAP_EXP, CMB_ADD)
DEFINE_WALK(walk_sum_i64, gint64, MAP_ID, CMB_IADD)
DEFINE_WALK(walk_l1_i64, gint64, MAP_IABS, CMB_IADD)
DEFINE_WALK(walk_sq_i64, gint64, MAP_ISQ, CMB_IADD)
DEFINE_WALK(walk_prod_i64, gint64, MAP_ID, CMB_IMUL)
DEFINE_WALK(walk_max_i64, gint64, MAP_ID, CMB_IMAX)
DEFINE_WALK(walk_min_i64, gint64, MAP_ID, CMB_IMIN)

/* DEFINE_REDUCE_FLOAT(SUF, T, ...) defines reduce_SUF(kind, lay, x, acc): acc (out_numel elements)
 * receives the reduction of x. Empty reductions give the identity: 0 for the sums, 1 for the product,
 * -inf/+inf for max/min and ReduceLogSumExp, NaN (0/0) for the mean. ReduceLogSumExp subtracts the
 * max first so that exp cannot overflow where the result is finite. */
#define DEFINE_REDUCE_FLOAT(SUF, T, SQRT, LOG)                                                     \
    static void reduce_##SUF(RedKind kind, const RedLayout *lay, const T *x, T *acc)              \
    {                                                                                              \
        const gint64 no = lay->out_numel;                                                          \
        /* sums start from -0, the additive identity that keeps the sign of -0 (0 when empty) */     \
        T init = kind == RED_PROD ? 1 : kind == RED_MAX ? -INFINITY : kind == RED_MIN ? INFINITY : 0; \
        if (kind == RED_LSE)                                                                       \
            init = -INFINITY;                                                                      \
        else if (init == 0 && lay->count > 0)                                                      \
            init = -(T)0;                                                                          \
        for (gint64 o = 0; o < no; o++)                                                            \
            acc[o] = init;                                                                         \
        switch (kind) {                                                                            \
        case RED_SUM:                                                                              \
        case RED_MEAN: walk_sum_##SUF(lay, x, acc, NULL); break;                                   \
        case RED_PROD: walk_prod_##SUF(lay, x, acc, NULL); break;                                  \
        case RED_MAX: walk_max_##SUF(lay, x, acc, NULL); break;                                    \
        case RED_MIN: walk_min_##SUF(lay, x, acc, NULL); break;                                    \
        case RED_L1: walk_l1_##SUF(lay, x, acc, NULL); break;                                      \
        case RED_L2:                                                                               \
        case RED_SUMSQ: walk_sq_##SUF(lay, x, acc, NULL); break;                                   \
        case RED_LSE: {                                                                            \
            walk_max_##SUF(lay, x, acc, NULL);                                                     \
            T *shift = g_new(T, no + 1);                                                           \
            for (gint64 o = 0; o < no; o++) {                                                      \
                shift[o] = isfinite(acc[o]) ? acc[o] : 0;                                          \
                acc[o] = 0;                                                                        \
            }                                                                                      \
            walk_exp_##SUF(lay, x, acc, shift);                                                    \
            for (gint64 o = 0; o < no; o++)                                                        \
                acc[o] = LOG(acc[o]) + shift[o];                                                   \
            g_free(shift);                                                                         \
            break;                                                                                 \
        }                                                                                          \
        }                                                                                          \
        if (kind == RED_MEAN)                                                                      \
            for (gint64 o = 0; o < no; o++)                                                        \
                acc[o] = acc[o] / (T)lay->count;                                                   \
        else if (kind == RED_L2)                                                                   \
            for (gint64 o = 0; o < no; o++)                                                        \
                acc[o] = SQRT(acc[o]);                                                             \
    }

DEFINE_REDUCE_FLOAT(f32, float, sqrtf, logf)
DEFINE_REDUCE_FLOAT(f64, double, sqrt, log)

/* Integer reductions wrap like the C type (the low bits of the int64 result are those of a narrower
 * accumulator). ReduceL2 and ReduceLogSumExp of integers go through double instead. */
static void
reduce_i64(RedKind kind, const RedLayout *lay, const gint64 *x, gint64 *acc, gint64 lo, gint64 hi)
{
    const gint64 no = lay->out_numel;
    gint64 init = kind == RED_PROD ? 1 : kind == RED_MAX ? lo : kind == RED_MIN ? hi : 0;
    for (gint64 o = 0; o < no; o++)
        acc[o] = init;
    switch (kind) {
    case RED_SUM:
    case RED_MEAN: walk_sum_i64(lay, x, acc, NULL); break;
    case RED_PROD: walk_prod_i64(lay, x, acc, NULL); break;
    case RED_MAX: walk_max_i64(lay, x, acc, NULL); break;
    case RED_MIN: walk_min_i64(lay, x, acc, NULL); break;
    case RED_L1: walk_l1_i64(lay, x, acc, NULL); break;
    case RED_SUMSQ: walk_sq_i64(lay, x, acc, NULL); break;
    case RED_L2:
    case RED_LSE: g_assert_not_reached();
    }
    if (kind == RED_MEAN && lay->count > 0)
        for (gint64 o = 0; o < no; o++)
            acc[o] /= lay->count;
}

/* Whether a Reduce* node takes its axes from the second input: ReduceSum from opset 13, the others
 * from 18. */
static gboolean
axes_from_input(RedKind kind, gint64 opset)
{
    return opset >= (kind == RED_SUM ? 13 : 18);
}

/* The axes a Reduce* node reduces, as mask[0..rank). They come from the second input when the node
 * has one, else from the `axes` attribute (whichever form the node uses is accepted at any opset).
 * No axes means every axis, except that noop_with_empty_axes=1 in the input form (opset 13/18) means
 * none. axes is the second input's value; *known turns FALSE when the node has that input and its
 * value is NULL (shape inference of a computed axes tensor). FALSE with HG_ERROR_INVALID for an
 * axis out of range or repeated. */
static gboolean
reduce_mask(const HgNode *node, RedKind kind, gint64 opset, gboolean has_axes_input,
            const HgArray *axes, guint rank, gboolean *mask, gboolean *known, GError **error)
{
    *known = TRUE;
    memset(mask, 0, sizeof(gboolean) * HG_MAX_RANK);
    const gint64 *attr = NULL;
    guint n_attr = 0;
    gint64 n;
    if (has_axes_input) {
        if (!axes) {
            *known = FALSE;
            return TRUE;
        }
        if (hg_dtype_compute(axes->dtype) != HG_COMPUTE_I64 || axes->rank > 1 || (!axes->data && axes->numel)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "axes must be a 1-D integer tensor");
            return FALSE;
        }
        n = axes->numel;
    } else {
        attr = hg_attr_ints(node, "axes", &n_attr);
        n = n_attr;
    }
    if (n == 0) {
        gboolean input_form = has_axes_input || axes_from_input(kind, opset);
        gboolean noop = input_form && hg_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
        for (guint i = 0; i < rank; i++)
            mask[i] = !noop;
        return TRUE;
    }
    for (gint64 k = 0; k < n; k++) {
        gint64 a = attr ? attr[k] : hg_array_get_i64(axes, k), norm;
        if (!hg_norm_axis(a, rank, &norm, node, error))
            return FALSE;
        if (mask[norm]) {
            hg_op_error(error, HG_ERROR_INVALID, node, "axis %" G_GINT64_FORMAT " is repeated", a);
            return FALSE;
        }
        mask[norm] = TRUE;
    }
    return TRUE;
}

guint
hg_reduced_dims(guint rank, const gint64 *dims, const gboolean *mask, gboolean keep, gint64 *out)
{
    guint r = 0;
    for (guint i = 0; i < rank; i++)
        if (!mask[i])
            out[r++] = dims[i];
        else if (keep)
            out[r++] = 1;
    return r;
}

void
hg_infer_reduced(HgShapeCtx *ctx, const HgValueShape *x, HgValueShape *y, const gboolean *mask, gboolean keep,
                 HgEvalFunc eval)
{
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!mask[i]) {
            y->dims[r++] = x->dims[i];
        } else if (keep) {
            y->dims[r].v = 1;
            y->dims[r++].sym = NULL;
        }
    }
    y->rank = r;
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
}

static gboolean
reduce_infer(HgShapeCtx *ctx, RedKind kind, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!x || !y)
        return TRUE;
    y->dtype = x->dtype;
    if (x->rank < 0)
        return TRUE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    const HgValueShape *ax = hg_shape_input(ctx, 1);
    g_autoptr(HgArray) empty = NULL;
    const HgArray *axes = ax ? ax->value : NULL;
    if (ax && !axes && ax->rank == 1 && ax->dims[0].v == 0) {
        /* a computed but empty axes list is as good as a known one */
        gint64 zero = 0;
        empty = hg_array_new(HG_DTYPE_INT64, 1, &zero, NULL);
        axes = empty;
    }
    gboolean mask[HG_MAX_RANK], known;
    if (!reduce_mask(ctx->node, kind, ctx->opset, ax != NULL, axes, (guint)x->rank, mask, &known, ctx->error))
        return FALSE;
    if (!known) {
        /* which axes go is unknown: keepdims keeps the rank, and 1s stay 1 */
        if (keep) {
            y->rank = x->rank;
            for (int i = 0; i < x->rank; i++) {
                y->dims[i].v = x->dims[i].v == 1 ? 1 : -1;
                y->dims[i].sym = NULL;
            }
        }
        return TRUE;
    }
    hg_infer_reduced(ctx, x, y, mask, keep, eval);
    return TRUE;
}

static gboolean
reduce_eval(HgEvalCtx *ctx, RedKind kind)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "data");
    if (!x || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    HgArray *axes = hg_eval_input(ctx, 1);
    gboolean mask[HG_MAX_RANK], known;
    if (!reduce_mask(ctx->node, kind, ctx->opset, axes != NULL, axes, x->rank, mask, &known, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    gint64 dims[HG_MAX_RANK];
    guint r = hg_reduced_dims(x->rank, x->dims, mask, keep, dims);
    g_autoptr(HgArray) y = hg_array_new(x->dtype, r, dims, ctx->error);
    if (!y)
        return FALSE;
    RedLayout lay;
    red_layout(x->rank, x->dims, mask, &lay);

    /* both integer kinds sum and multiply alike in int64; uint64 max and min compare flipped */
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_U64)
        k = HG_KIND_I64;
    if (k == HG_KIND_I64 && (kind == RED_L2 || kind == RED_LSE))
        k = HG_KIND_F64;
    gboolean flip = x->dtype == HG_DTYPE_UINT64 && k == HG_KIND_I64 && (kind == RED_MAX || kind == RED_MIN);
    g_auto(HgKBuf) xb = flip ? hg_kbuf_load_ordered(x) : hg_kbuf_load(x, k);
    HgKBuf acc = hg_kbuf_out(y, k);
    if (!acc.p)
        return hg_eval_oom(ctx);
    if (k == HG_KIND_I64) {
        gint64 lo, hi;
        int_range(x->dtype, &lo, &hi);
        if (flip) {
            lo = G_MININT64;
            hi = G_MAXINT64;
        }
        if (x->dtype == HG_DTYPE_UINT64 && kind == RED_L1)
            kind = RED_SUM;
        reduce_i64(kind, &lay, xb.p, acc.p, lo, hi);
        if (flip)
            hg_flip_sign(acc.p, y->numel);
    } else {
        HG_KIND_CALL_FLOAT(k, reduce, kind, &lay, xb.p, acc.p);
    }
    hg_kbuf_store(y, &acc, k);
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

#define REDUCE_OP(Name, KIND)                                                                      \
    gboolean hg_infer_##Name(HgShapeCtx *ctx)                                                      \
    {                                                                                              \
        return reduce_infer(ctx, KIND, hg_eval_##Name);                                            \
    }                                                                                              \
    gboolean hg_eval_##Name(HgEvalCtx *ctx)                                                        \
    {                                                                                              \
        return reduce_eval(ctx, KIND);                                                             \
    }                                                                                              \
    gint64 hg_cost_##Name(const HgShapeCtx *ctx)                                                   \
    {                                                                                              \
        return hg_cost_per_element(ctx, KIND == RED_LSE ? 2 : 1);                                          \
    }

REDUCE_OP(ReduceL1, RED_L1)
REDUCE_OP(ReduceL2, RED_L2)
REDUCE_OP(ReduceLogSumExp, RED_LSE)
REDUCE_OP(ReduceMax, RED_MAX)
REDUCE_OP(ReduceMean, RED_MEAN)
REDUCE_OP(ReduceMin, RED_MIN)
REDUCE_OP(ReduceProd, RED_PROD)
REDUCE_OP(ReduceSum, RED_SUM)
REDUCE_OP(ReduceSumSquare, RED_SUMSQ)

/* Shape inference for ops whose one output has the input's shape and type, checking the axis
 * attribute where check_axis says so. */
gboolean
hg_infer_same_shape(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!x || !y)
        return TRUE;
    hg_vshape_like(y, x, x->dtype);
    if (x->rank >= 0)
        hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* ---------------------------------------------------------------- CumSum */

/* DEFINE_CUMSUM(SUF, T, ADD) defines cumsum_SUF over [outer, n, inner]: running sums along the axis,
 * exclusive (each output leaves its own element out) and/or reversed. ADD is where the precision
 * policy lives: FP16 and BF16 round every partial sum to their own width. y may be x. */
#define DEFINE_CUMSUM(SUF, T, ADD)                                                                 \
    static void cumsum_##SUF(const T *x, T *y, gint64 outer, gint64 n, gint64 inner, gboolean excl, \
                             gboolean rev)                                                         \
    {                                                                                              \
        T *s = g_new(T, inner + 1);                                                                \
        for (gint64 o = 0; o < outer; o++) {                                                       \
            for (gint64 i = 0; i < inner; i++)                                                     \
                s[i] = 0;                                                                          \
            for (gint64 t = 0; t < n; t++) {                                                       \
                gint64 off = (o * n + (rev ? n - 1 - t : t)) * inner;                              \
                const T *xa = x + off;                                                             \
                T *ya = y + off;                                                                   \
                if (excl)                                                                          \
                    for (gint64 i = 0; i < inner; i++) {                                           \
                        T v = xa[i];                                                               \
                        ya[i] = s[i];                                                              \
                        s[i] = ADD(s[i], v);                                                       \
                    }                                                                              \
                else                                                                               \
                    for (gint64 i = 0; i < inner; i++)                                             \
                        ya[i] = s[i] = ADD(s[i], xa[i]);                                           \
            }                                                                                      \
        }                                                                                          \
        g_free(s);                                                                                 \
    }

#define ADD_F16(a, b) hg_round_half((a) + (b))
#define ADD_BF16(a, b) round_bf16((a) + (b))

DEFINE_CUMSUM(f32, float, CMB_ADD)
DEFINE_CUMSUM(f16, float, ADD_F16)
DEFINE_CUMSUM(bf16, float, ADD_BF16)
DEFINE_CUMSUM(f64, double, CMB_ADD)
DEFINE_CUMSUM(i64, gint64, wrap_add)

/* CumSum's axis: a scalar (or one-element) integer tensor. */
static gboolean
cumsum_axis(const HgNode *node, const HgArray *a, guint rank, gint64 *axis, GError **error)
{
    if (hg_dtype_compute(a->dtype) != HG_COMPUTE_I64 || a->numel != 1 || a->rank > 1 || !a->data) {
        hg_op_error(error, HG_ERROR_INVALID, node, "axis must be an integer scalar");
        return FALSE;
    }
    return hg_norm_axis(hg_array_get_i64(a, 0), rank, axis, node, error);
}

gboolean
hg_infer_CumSum(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *a = hg_shape_input(ctx, 1);
    gint64 axis;
    if (x && x->rank >= 0 && a && a->value &&
        !cumsum_axis(ctx->node, a->value, (guint)x->rank, &axis, ctx->error))
        return FALSE;
    return hg_infer_same_shape(ctx, hg_eval_CumSum);
}

gboolean
hg_eval_CumSum(HgEvalCtx *ctx)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "x"), *a = x ? hg_eval_need_input(ctx, 1, "axis") : NULL;
    gint64 axis;
    if (!a || !hg_eval_need_outputs(ctx, 1) || !cumsum_axis(ctx->node, a, x->rank, &axis, ctx->error))
        return FALSE;
    gboolean excl = hg_node_attr_int(ctx->node, "exclusive", 0) != 0;
    gboolean rev = hg_node_attr_int(ctx->node, "reverse", 0) != 0;
    gint64 outer = hg_dims_prod(x->dims, 0, (guint)axis), n = x->dims[axis], inner = hg_dims_prod(x->dims, (guint)axis + 1, x->rank);
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_U64)
        k = HG_KIND_I64;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, k);
    HgKBuf yb = hg_kbuf_reuse(&xb, y, k);
    if (x->dtype == HG_DTYPE_FLOAT16)
        cumsum_f16(xb.p, yb.p, outer, n, inner, excl, rev);
    else if (x->dtype == HG_DTYPE_BFLOAT16)
        cumsum_bf16(xb.p, yb.p, outer, n, inner, excl, rev);
    else
        HG_KIND_CALL(k, cumsum, xb.p, yb.p, outer, n, inner, excl, rev);
    hg_kbuf_store(y, &yb, k);
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_CumSum(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 1);
}

/* ---------------------------------------------------------------- interval rules
 *
 * Each rule encloses its op's outputs from the input ranges, the shapes shape inference knows and
 * the constant inputs (weights). Conventions shared by the helpers below:
 * - an input range with lo > hi (no number: empty, or only NaN) leaves the outputs unbounded;
 * - bounds multiply with 0 * inf = 0 (a bound of 0 times an unbounded side stays 0); whether an
 *   actual 0 * inf or inf - inf can occur is the nan flag's business;
 * - FP32 arithmetic inside kernels is covered by the driver's 2^-20 widening where the error is
 *   relative to the bound; where it is absolute (cancellation: x - mean, x - max) or grows with the
 *   element count, the rule adds its own slack;
 * - hg_range_finish() maps a bound to what the output type can hold (overflow to inf, FP16/BF16 rounding
 *   once on store, denormal tinies). */


const HgValueShape *
hg_range_shape(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->inputs[i] ? ctx->shapes[i] : NULL;
}

const HgArray *
hg_range_value(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->inputs[i] ? ctx->values[i] : NULL;
}

HgRange *
hg_range_output(const HgRangeCtx *ctx, guint k)
{
    return k < ctx->n_outputs ? ctx->outputs[k] : NULL;
}

int
hg_range_output_dtype(const HgRangeCtx *ctx, guint k)
{
    return k < ctx->n_outputs && ctx->out_shapes[k] ? ctx->out_shapes[k]->dtype : HG_DTYPE_UNDEFINED;
}

/* Whether r holds at least one number. */
gboolean
hg_range_nonempty(const HgRange *r)
{
    return r && r->lo <= r->hi;
}

double
hg_range_mag(const HgRange *r)
{
    return MAX(fabs(r->lo), fabs(r->hi));
}

/* Smallest |x| over r (0 when r straddles 0). */
double
hg_range_mag_lo(const HgRange *r)
{
    return r->lo > 0 ? r->lo : r->hi < 0 ? -r->hi : 0;
}

HgRange
hg_range_make(double lo, double hi, double tiny, gboolean nan)
{
    HgRange r = {lo, hi, tiny, nan};
    return r;
}

HgRange
hg_range_const(double c)
{
    return hg_range_make(c, c, fabs(c), FALSE);
}

/* Widen finite bounds outward by slack (an absolute rounding allowance). */
void
hg_range_slack(HgRange *r, double slack)
{
    if (!isfinite(slack))
        return;
    r->lo -= slack;
    r->hi += slack;
}

/* Fit r to the output type: values past the type's largest finite value overflow to inf; FP16 and
 * BF16 outputs are rounded once on store (half an ulp, relative); a tiny below the smallest normal
 * is dropped, since rounding to a denormal loses relative precision. An unknown type is taken as
 * FP16, the narrowest. Integer types are left alone (the rules check wrapping themselves). */
void
hg_range_finish(HgRange *r, int dtype)
{
    double max, rel, tiny_min;
    switch (dtype) {
    case HG_DTYPE_FLOAT: max = FLT_MAX; rel = 0; tiny_min = FLT_MIN; break;
    case HG_DTYPE_DOUBLE: max = DBL_MAX; rel = 0; tiny_min = DBL_MIN; break;
    case HG_DTYPE_BFLOAT16: max = 3.3895313892515355e38; rel = 1.0 / 128; tiny_min = FLT_MIN; break;
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_UNDEFINED: max = 65504; rel = 1.0 / 1024; tiny_min = 6.2e-5; break;
    default: return;
    }
    if (rel > 0) {
        if (isfinite(r->lo))
            r->lo -= fabs(r->lo) * rel;
        if (isfinite(r->hi))
            r->hi += fabs(r->hi) * rel;
        r->tiny *= 1 - rel;
    }
    if (r->lo < -max)
        r->lo = -INFINITY;
    if (r->hi > max)
        r->hi = INFINITY;
    if (r->tiny < tiny_min)
        r->tiny = 0;
}

static gboolean
is_int_dtype(int dtype)
{
    return dtype != HG_DTYPE_UNDEFINED && hg_dtype_compute(dtype) == HG_COMPUTE_I64;
}

/* Whether [lo, hi] fits an integer type without wrapping. */
static gboolean
int_fits(int dtype, double lo, double hi)
{
    if (dtype == HG_DTYPE_UINT64)
        return lo >= 0 && hi < 1.8e19;
    gint64 a, b;
    int_range(dtype, &a, &b);
    return lo >= (double)a && hi <= (double)b;
}

/* A known dim of an input's shape, -1 when unknown. */
gint64
hg_shape_dim(const HgValueShape *s, gint64 axis)
{
    return s && axis >= 0 && axis < s->rank ? s->dims[axis].v : -1;
}

/* Input elements per output element of a Reduce* node; FALSE when unknown. */
static gboolean
red_count(const HgRangeCtx *ctx, RedKind kind, gint64 *n)
{
    const HgValueShape *x = hg_range_shape(ctx, 0);
    if (!x || x->rank < 0)
        return FALSE;
    gboolean has_axes = hg_range_input(ctx, 1) != NULL;
    const HgArray *axes = hg_range_value(ctx, 1);
    const HgValueShape *as = hg_range_shape(ctx, 1);
    g_autoptr(HgArray) empty = NULL;
    if (has_axes && !axes && as && as->rank == 1 && as->dims[0].v == 0) {
        /* a computed but empty axes list is as good as a known one (as reduce_infer) */
        gint64 zero = 0;
        empty = hg_array_new(HG_DTYPE_INT64, 1, &zero, NULL);
        axes = empty;
    }
    gboolean mask[HG_MAX_RANK], known;
    if (!reduce_mask(ctx->node, kind, ctx->opset, has_axes, axes, (guint)x->rank, mask, &known, NULL) || !known)
        return FALSE;
    *n = 1;
    for (int i = 0; i < x->rank; i++) {
        if (!mask[i])
            continue;
        if (x->dims[i].v < 0)
            return FALSE;
        *n *= x->dims[i].v;
    }
    return TRUE;
}

static void
reduce_range(HgRangeCtx *ctx, RedKind kind)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *y = hg_range_output(ctx, 0);
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    if (!y || !hg_range_nonempty(x) || !xs || xs->dtype == HG_DTYPE_UNDEFINED)
        return;
    int dt = xs->dtype;
    gboolean is_int = is_int_dtype(dt);
    gint64 cnt = 0;
    gboolean known = red_count(ctx, kind, &cnt);
    double n = known ? (double)cnt : 0;
    gboolean wild = x->lo == -INFINITY && x->hi == INFINITY; /* inf + -inf can happen */
    gboolean same_sign = x->lo >= 0 || x->hi <= 0;
    double alo = hg_range_mag_lo(x), ahi = hg_range_mag(x);
    HgRange r;
    switch (kind) {
    case RED_MAX:
    case RED_MIN:
        r = *x;
        if (!known || cnt == 0) { /* the empty reduction's identity */
            if (kind == RED_MAX)
                r.lo = -INFINITY;
            else
                r.hi = INFINITY;
        }
        break;
    case RED_SUM:
        if (known && cnt == 0)
            r = hg_range_make(0, 0, 0, FALSE);
        else if (known)
            r = hg_range_make(hg_bound_mul(n, x->lo), hg_bound_mul(n, x->hi), same_sign ? x->tiny : 0, x->nan || (wild && cnt >= 2));
        else if (x->lo >= 0)
            r = hg_range_make(0, x->hi > 0 ? INFINITY : 0, x->tiny, x->nan);
        else if (x->hi <= 0)
            r = hg_range_make(x->lo < 0 ? -INFINITY : 0, 0, x->tiny, x->nan);
        else
            return;
        break;
    case RED_MEAN:
        if (is_int && (!known || !int_fits(dt, -n * ahi, n * ahi)))
            return; /* the sum may wrap */
        r = *x;
        if (!known || cnt != 1)
            r.tiny = 0;
        if (!known || cnt == 0 || (wild && cnt >= 2))
            r.nan = TRUE; /* 0/0, or inf - inf */
        break;
    case RED_L1:
        if (known)
            r = hg_range_make(hg_bound_mul(n, alo), hg_bound_mul(n, ahi), x->tiny, x->nan);
        else
            r = hg_range_make(0, ahi > 0 ? INFINITY : 0, x->tiny, x->nan);
        break;
    case RED_SUMSQ:
    case RED_L2: {
        /* FP32 squares underflow below 2^-63 and overflow above 2^64 */
        gboolean f64 = dt == HG_DTYPE_DOUBLE || is_int;
        double slo = alo * alo, shi = ahi * ahi, tiny = x->tiny * x->tiny;
        if (!f64 && alo < 1.1e-19)
            slo = 0;
        if (!f64 && x->tiny < 1.1e-19)
            tiny = 0;
        if (known)
            r = hg_range_make(hg_bound_mul(n, slo), hg_bound_mul(n, shi), tiny, x->nan);
        else
            r = hg_range_make(0, shi > 0 ? INFINITY : 0, tiny, x->nan);
        if (!f64 && r.hi > FLT_MAX)
            r.hi = INFINITY;
        if (kind == RED_L2) {
            r.lo = sqrt(r.lo);
            r.hi = sqrt(r.hi);
            r.tiny = sqrt(r.tiny);
            if (is_int) { /* computed in FP64, stored truncated */
                r.lo = floor(r.lo);
                r.hi = ceil(r.hi);
                r.tiny = 0;
            }
        }
        break;
    }
    case RED_LSE: {
        if (!known)
            return;
        if (cnt == 0) {
            r = hg_range_make(-INFINITY, -INFINITY, 0, FALSE);
            break;
        }
        double lg = log(n);
        r = hg_range_make(x->lo + lg, x->hi + lg, 0, x->nan || x->hi == INFINITY);
        /* log(sum) + max: absolute rounding of the size of the max */
        hg_range_slack(&r, 4 * HG_ULP32 * (ahi + lg + 1));
        if (is_int) {
            r.lo = floor(r.lo);
            r.hi = ceil(r.hi);
        }
        break;
    }
    case RED_PROD: {
        if (!known) {
            if (x->lo >= 0 && x->hi <= 1)
                r = hg_range_make(0, 1, 0, x->nan);
            else if (x->lo >= 1)
                r = hg_range_make(1, x->hi > 1 ? INFINITY : 1, 1, x->nan);
            else
                return;
            break;
        }
        if (cnt == 0) {
            r = hg_range_make(1, 1, 1, FALSE);
            break;
        }
        double plo = pow(alo, n), phi = pow(ahi, n);
        if (x->lo >= 0)
            r = hg_range_make(plo, phi, 0, FALSE);
        else if (x->hi <= 0)
            r = cnt % 2 ? hg_range_make(-phi, -plo, 0, FALSE) : hg_range_make(plo, phi, 0, FALSE);
        else if (cnt == 1)
            r = hg_range_make(x->lo, x->hi, 0, FALSE);
        else
            r = hg_range_make(-phi, phi, 0, FALSE);
        r.tiny = pow(x->tiny, n);
        r.nan = x->nan || (cnt >= 2 && alo == 0 && ahi == INFINITY);
        /* n roundings, each relative */
        if (!is_int) {
            double rel = (n + 1) * HG_ULP32;
            r.lo -= fabs(r.lo) * rel;
            r.hi += fabs(r.hi) * rel;
            r.tiny *= MAX(0, 1 - rel);
        }
        break;
    }
    default:
        return;
    }
    if (is_int && !int_fits(dt, r.lo, r.hi))
        return;
    hg_range_finish(&r, dt);
    *y = r;
}

/* Each output is a sum of k input elements along the axis, k in [1, n] (exclusive: [0, n - 1]); a
 * symbolic axis is as long as its --dim-max, else unbounded. */
void
hg_range_CumSum(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *y = hg_range_output(ctx, 0);
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    const HgArray *av = hg_range_value(ctx, 1);
    if (!y || !hg_range_nonempty(x) || !xs || xs->dtype == HG_DTYPE_UNDEFINED)
        return;
    int dt = xs->dtype;
    gboolean excl = hg_node_attr_int(ctx->node, "exclusive", 0) != 0;
    gint64 axis, n = -1;
    if (av && xs->rank >= 0 && cumsum_axis(ctx->node, av, (guint)xs->rank, &axis, NULL)) {
        n = hg_shape_dim(xs, axis);
        /* a symbolic axis: its --dim-max, where given (and reported), bounds the terms */
        if (n < 0 && hg_dim_max_lookup(ctx->dim_max, xs->dims[axis].sym, -1) > 0)
            n = hg_range_len_bound(ctx, xs, (int)axis, (int)axis + 1);
    } else if (xs->rank > 0) {
        /* a computed axis: the longest dim bounds the terms of every partial sum */
        for (int i = 0; i < xs->rank && (i == 0 || n >= 0); i++)
            n = xs->dims[i].v < 0 ? -1 : MAX(n, xs->dims[i].v);
    }
    gboolean same_sign = x->lo >= 0 || x->hi <= 0;
    HgRange r;
    if (n > 0) {
        double klo = excl ? 0 : 1, khi = excl ? (double)(n - 1) : (double)n;
        r = hg_range_make(x->lo < 0 ? hg_bound_mul(khi, x->lo) : hg_bound_mul(klo, x->lo), x->hi > 0 ? hg_bound_mul(khi, x->hi) : hg_bound_mul(klo, x->hi),
                  same_sign ? x->tiny : 0, x->nan || (x->lo == -INFINITY && x->hi == INFINITY && khi >= 2));
        /* every partial sum is rounded (FP16/BF16 to their own width) */
        double u = dt == HG_DTYPE_FLOAT16 ? 1.0 / 2048 : dt == HG_DTYPE_BFLOAT16 ? 1.0 / 256 : HG_ULP32;
        if (!is_int_dtype(dt))
            hg_range_slack(&r, khi * u * MAX(fabs(r.lo), fabs(r.hi)));
        /* Rounding is monotone and 0 is exact: partial sums of terms of one sign keep that sign. */
        if (x->lo >= 0)
            r.lo = MAX(r.lo, 0);
        if (x->hi <= 0)
            r.hi = MIN(r.hi, 0);
    } else if (x->lo >= 0) {
        r = hg_range_make(excl ? 0 : x->lo, x->hi > 0 ? INFINITY : 0, x->tiny, x->nan);
    } else if (x->hi <= 0) {
        r = hg_range_make(x->lo < 0 ? -INFINITY : 0, excl ? 0 : x->hi, x->tiny, x->nan);
    } else {
        return;
    }
    if (is_int_dtype(dt) && !int_fits(dt, r.lo, r.hi))
        return;
    hg_range_finish(&r, dt);
    *y = r;
}

void
hg_range_ReduceL1(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_L1);
}

void
hg_range_ReduceL2(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_L2);
}

void
hg_range_ReduceLogSumExp(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_LSE);
}

void
hg_range_ReduceMax(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_MAX);
}

void
hg_range_ReduceMean(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_MEAN);
}

void
hg_range_ReduceMin(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_MIN);
}

void
hg_range_ReduceProd(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_PROD);
}

void
hg_range_ReduceSum(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_SUM);
}

void
hg_range_ReduceSumSquare(HgRangeCtx *ctx)
{
    reduce_range(ctx, RED_SUMSQ);
}
