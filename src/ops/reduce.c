/* The reduce family: reductions (Reduce*, ArgMax/ArgMin, TopK, CumSum), normalizations (Softmax,
 * LogSoftmax, BatchNormalization, InstanceNormalization, LayerNormalization, RMSNormalization) and
 * the losses built on them (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
 *
 * Numerics. Float data of any width is computed in FP32 (FP64 for double, int64 with wrap-around for
 * the integer types) and rounded once when stored: an FP16 ReduceSum whose total passes 65504 is inf,
 * one whose partial sums pass it but whose total does not is finite. The one deviation is CumSum on
 * FP16/BF16 data, which rounds every running sum to the storage type as GPU kernels do (a CumSum of
 * 4096 FP16 ones stops at 2048).
 *
 * Layout. Kernels see a tensor as [outer, axis, inner] (RedLayout generalizes that to several
 * reduced axes). inner == 1 is the contiguous case that real models hit (Softmax over the last axis,
 * LayerNormalization, ReduceMean over the hidden size, InstanceNormalization planes). Those loops are
 * written so that gcc vectorizes them at -O2: fixed blocks of eight lanes, or GCC vector types (the
 * exp of Softmax; array.c's bulk FP16 conversions). Sums therefore add in a different but fixed
 * order. FP16 and BF16 rows stream through a row of FP32 scratch (hg_array_load_span_f32) rather than
 * a converted copy of the whole tensor.
 */
#include "ops/kernel.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- small helpers */

/* Output k's shape record, or NULL when the node omits that output. */
static HgValueShape *
out_shape(HgShapeCtx *ctx, guint k)
{
    if (k >= ctx->n_outputs || !ctx->outputs[k])
        return NULL;
    if (ctx->node && (k >= ctx->node->n_outputs || !ctx->node->outputs[k]))
        return NULL;
    return ctx->outputs[k];
}

static void
vshape_like(HgValueShape *dst, const HgValueShape *src, int dtype)
{
    dst->dtype = dtype;
    dst->rank = src->rank;
    for (int i = 0; i < src->rank && i < HG_MAX_RANK; i++)
        dst->dims[i] = src->dims[i];
}

/* Whether the node asks for output k. */
static gboolean
want_output(const HgEvalCtx *ctx, guint k)
{
    if (k >= ctx->n_outputs)
        return FALSE;
    return !ctx->node || (k < ctx->node->n_outputs && ctx->node->outputs[k]);
}

/* Store a (owned) as output k. */
static void
set_output(HgEvalCtx *ctx, guint k, HgArray *a)
{
    if (ctx->outputs[k])
        hg_array_unref(ctx->outputs[k]);
    ctx->outputs[k] = a;
}

/* Input i, which must be present and hold numbers of a type the kernels compute in. */
static HgArray *
need_input(HgEvalCtx *ctx, guint i, const char *what)
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

static gboolean
need_outputs(HgEvalCtx *ctx, guint n)
{
    if (ctx->n_outputs >= n)
        return TRUE;
    hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "needs %u output slots, has %u", n, ctx->n_outputs);
    return FALSE;
}

/* Product of dims [from, to); 1 when the range is empty. */
static gint64
prod(const gint64 *dims, guint from, guint to)
{
    return to > from ? hg_numel(to - from, dims + from) : 1;
}

/* The input of a cost function, as a known element count or -1. */
static gint64
input_numel(const HgShapeCtx *ctx, guint i)
{
    const HgValueShape *s = hg_shape_input(ctx, i);
    return s ? hg_vshape_numel(s) : -1;
}

static gint64
scaled_cost(const HgShapeCtx *ctx, gint64 per_element)
{
    gint64 n = input_numel(ctx, 0);
    return n < 0 ? -1 : n * per_element;
}

/* Smallest and largest value of an integer dtype, as int64 (UINT64 compares through flip_sign and
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
static void
flip_sign(gint64 *v, gint64 n)
{
    for (gint64 i = 0; i < n; i++)
        v[i] = (gint64)((guint64)v[i] ^ ((guint64)1 << 63));
}

/* x in its kind for an order-based kernel (uint64 as int64): a uint64 array as a copy with the sign
 * bits flipped (flip the results back where they are values). */
static HgKBuf
load_ordered(const HgArray *x)
{
    HgKind k = hg_kind_of(x->dtype);
    HgKBuf b = hg_kbuf_load(x, k == HG_KIND_U64 ? HG_KIND_I64 : k);
    if (x->dtype == HG_DTYPE_UINT64) {
        if (!b.owned)
            b = (HgKBuf){g_memdup2(b.p, sizeof(gint64) * (gsize)(x->numel + 1)), TRUE};
        flip_sign(b.p, x->numel);
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

/* ---------------------------------------------------------------- four FP32 lanes
 *
 * The hot loops use GCC's vector extension (clang has it too): plain C arithmetic on 4-float vectors
 * that becomes SSE even at -O2, where gcc leaves ordinary loops scalar. Tails go through a padded
 * block so every element takes the same arithmetic wherever it sits. */
typedef float v4f __attribute__((vector_size(16)));
typedef gint32 v4i __attribute__((vector_size(16)));
typedef guint32 v4u __attribute__((vector_size(16)));

static inline v4f
v4_load(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void
v4_store(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

static inline v4f
v4_splat(float x)
{
    return (v4f){x, x, x, x};
}

/* mask ? a : b, lane by lane (mask lanes are 0 or -1, as vector comparisons give) */
static inline v4f
v4_sel(v4i mask, v4f a, v4f b)
{
    return (v4f)((mask & (v4i)a) | (~mask & (v4i)b));
}

/* exp(x) for x <= 0 or NaN, the max-subtracted arguments of Softmax: Cephes' expf reduction and
 * polynomial (within 1.4 ulp of exp on [-87.3, 0], checked against libm), 0 below -87.3 where expf
 * would give an FP32 subnormal. x - n ln2 is split into two constants so r stays exact. */
static inline v4f
v4_exp_neg(v4f x)
{
    const v4i tiny = x < -87.33654f;
    const v4f v = v4_sel(tiny, v4_splat(-87.33654f), x);
    const v4f t = v * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an integer n */
    const v4f n = t - 12582912.0f;
    v4f r = v - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    v4f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const v4i e = ((v4i)t - 0x4B400000 + 127) << 23; /* 2^n, from the integer held in t's mantissa */
    return v4_sel(tiny, v4_splat(0), p * (v4f)e);
}

/* Row streaming for F32 kernels over a float array x and its like-typed output y: FLOAT rows are
 * used in place; other rows are converted into scratch (n + 1 floats, NULL for FLOAT) and the kernel
 * writes its result over them, which row_put then stores. */
static float *
row_scratch(const HgArray *x, gint64 n)
{
    return x->dtype == HG_DTYPE_FLOAT ? NULL : g_new(float, n + 1);
}

static const float *
row_get(const HgArray *x, gint64 off, gint64 n, float *scratch)
{
    if (!scratch)
        return (const float *)x->data + off;
    hg_array_load_span_f32(x, off, n, scratch);
    return scratch;
}

static float *
row_out(HgArray *y, gint64 off, float *scratch)
{
    return scratch ? scratch : (float *)y->data + off;
}

static void
row_put(HgArray *y, gint64 off, gint64 n, float *scratch)
{
    if (scratch)
        hg_array_store_span_f32(y, off, n, scratch);
}

/* Sum of n floats, and of squared deviations from m: eight FP32 lanes (vectorized by gcc) over blocks
 * of 4096, the block sums added in double so long rows lose no more than short ones. */
#define LANE_BLOCK 4096

static double
sum_f32(const float *x, gint64 n)
{
    double total = 0;
    for (gint64 b = 0; b < n; b += LANE_BLOCK) {
        gint64 e = MIN(n, b + LANE_BLOCK), j = b;
        float lane[8] = {0};
        for (; j + 8 <= e; j += 8)
            for (int k = 0; k < 8; k++)
                lane[k] += x[j + k];
        float s = 0;
        for (; j < e; j++)
            s += x[j];
        for (int k = 0; k < 8; k++)
            s += lane[k];
        total += s;
    }
    return total;
}

static double
sumsq_dev_f32(const float *x, gint64 n, float m)
{
    double total = 0;
    for (gint64 b = 0; b < n; b += LANE_BLOCK) {
        gint64 e = MIN(n, b + LANE_BLOCK), j = b;
        float lane[8] = {0};
        for (; j + 8 <= e; j += 8)
            for (int k = 0; k < 8; k++) {
                float d = x[j + k] - m;
                lane[k] += d * d;
            }
        float s = 0;
        for (; j < e; j++) {
            float d = x[j] - m;
            s += d * d;
        }
        for (int k = 0; k < 8; k++)
            s += lane[k];
        total += s;
    }
    return total;
}

static double
sum_f64(const double *x, gint64 n)
{
    double lane[4] = {0}, s = 0;
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            lane[k] += x[j + k];
    for (; j < n; j++)
        s += x[j];
    return s + lane[0] + lane[1] + lane[2] + lane[3];
}

static double
sumsq_dev_f64(const double *x, gint64 n, double m)
{
    double lane[4] = {0}, s = 0;
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            lane[k] += (x[j + k] - m) * (x[j + k] - m);
    for (; j < n; j++)
        s += (x[j] - m) * (x[j] - m);
    return s + lane[0] + lane[1] + lane[2] + lane[3];
}

/* Largest of n > 0 floats; NaN wins (as numpy's max). */
static float
max_f32(const float *x, gint64 n)
{
    float m = x[0];
    gint64 j = 0;
    if (n >= 8) {
        v4f lane = v4_load(x);
        for (j = 4; j + 4 <= n; j += 4) {
            v4f v = v4_load(x + j);
            lane = v4_sel((v > lane) | (v != v), v, lane);
        }
        for (int k = 0; k < 4; k++)
            m = lane[k] > m || isnan(lane[k]) ? lane[k] : m;
    }
    for (; j < n; j++)
        m = x[j] > m || isnan(x[j]) ? x[j] : m;
    return m;
}

/* Fill y[j] = exp(x[j] - m) (when y) and return their sum; x - m <= 0 for the max m. */
static float
sum_exp_f32(const float *x, float *y, gint64 n, float m)
{
    v4f acc = v4_splat(0);
    gint64 j = 0;
    for (; j + 4 <= n; j += 4) {
        v4f e = v4_exp_neg(v4_load(x + j) - m);
        acc += e;
        if (y)
            v4_store(y + j, e);
    }
    float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    if (j < n) {
        float pad[4];
        for (int k = 0; k < 4; k++)
            pad[k] = j + k < n ? x[j + k] - m : -INFINITY;
        v4f e = v4_exp_neg(v4_load(pad));
        for (int k = 0; j + k < n; k++) {
            s += e[k];
            if (y)
                y[j + k] = e[k];
        }
    }
    return s;
}

/* y[j] = x[j] * a + b (y may be x) */
static void
scale_shift_f32(const float *x, float *y, gint64 n, float a, float b)
{
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, v4_load(x + j) * a + b);
    for (; j < n; j++)
        y[j] = x[j] * a + b;
}

/* y[j] = (x[j] - m) * a + b (y may be x): normalization with known statistics, the mean taken off
 * first so that a large mean does not cancel the digits of x */
static void
center_scale_f32(const float *x, float *y, gint64 n, float m, float a, float b)
{
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, (v4_load(x + j) - m) * a + b);
    for (; j < n; j++)
        y[j] = (x[j] - m) * a + b;
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

static gboolean
reduce_infer(HgShapeCtx *ctx, RedKind kind, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = out_shape(ctx, 0);
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
    return TRUE;
}

static gboolean
reduce_eval(HgEvalCtx *ctx, RedKind kind)
{
    HgArray *x = need_input(ctx, 0, "data");
    if (!x || !need_outputs(ctx, 1))
        return FALSE;
    HgArray *axes = hg_eval_input(ctx, 1);
    gboolean mask[HG_MAX_RANK], known;
    if (!reduce_mask(ctx->node, kind, ctx->opset, axes != NULL, axes, x->rank, mask, &known, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    gint64 dims[HG_MAX_RANK];
    guint r = 0;
    for (guint i = 0; i < x->rank; i++)
        if (!mask[i])
            dims[r++] = x->dims[i];
        else if (keep)
            dims[r++] = 1;
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
    g_auto(HgKBuf) xb = flip ? load_ordered(x) : hg_kbuf_load(x, k);
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
            flip_sign(acc.p, y->numel);
    } else {
        HG_KIND_CALL_FLOAT(k, reduce, kind, &lay, xb.p, acc.p);
    }
    hg_kbuf_store(y, &acc, k);
    set_output(ctx, 0, g_steal_pointer(&y));
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
        return scaled_cost(ctx, KIND == RED_LSE ? 2 : 1);                                          \
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
    HgValueShape *y = out_shape(ctx, 0);
    if (!x || !y)
        return TRUE;
    y->dtype = HG_DTYPE_INT64;
    if (x->rank < 0)
        return TRUE;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", 0), (guint)x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != axis) {
            y->dims[r++] = x->dims[i];
        } else if (keep) {
            y->dims[r].v = 1;
            y->dims[r++].sym = NULL;
        }
    }
    y->rank = r;
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

static gboolean
arg_eval(HgEvalCtx *ctx, gboolean is_max)
{
    HgArray *x = need_input(ctx, 0, "data");
    if (!x || !need_outputs(ctx, 1))
        return FALSE;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", 0), x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    gboolean keep = hg_node_attr_int(ctx->node, "keepdims", 1) != 0;
    gboolean last = hg_node_attr_int(ctx->node, "select_last_index", 0) != 0;
    gint64 outer = prod(x->dims, 0, (guint)axis), n = x->dims[axis], inner = prod(x->dims, (guint)axis + 1, x->rank);
    if (n == 0 && outer * inner > 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "cannot take the %s of an empty axis",
                    is_max ? "argmax" : "argmin");
        return FALSE;
    }
    gint64 dims[HG_MAX_RANK];
    guint r = 0;
    for (guint i = 0; i < x->rank; i++)
        if (i != axis)
            dims[r++] = x->dims[i];
        else if (keep)
            dims[r++] = 1;
    g_autoptr(HgArray) y = hg_array_new(HG_DTYPE_INT64, r, dims, ctx->error);
    if (!y)
        return FALSE;
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_U64)
        k = HG_KIND_I64;
    g_auto(HgKBuf) xb = load_ordered(x);
    HG_KIND_CALL(k, arg, xb.p, outer, n, inner, is_max, last, y->data);
    set_output(ctx, 0, g_steal_pointer(&y));
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
    return scaled_cost(ctx, 1);
}

gint64
hg_cost_ArgMin(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 1);
}

/* ---------------------------------------------------------------- Softmax, LogSoftmax */

/* The rows a softmax normalizes, as [outer, n, inner]. Before opset 13 the input is flattened to 2-D
 * at axis (default 1) and each row of the trailing block is normalized as one; from 13 the softmax
 * runs along axis alone (default -1). */
static gboolean
softmax_layout(const HgNode *node, gint64 opset, guint rank, const gint64 *dims, gint64 *outer,
               gint64 *n, gint64 *inner, GError **error)
{
    gboolean old = opset < 13;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(node, "axis", old ? 1 : -1), rank, &axis, node, error))
        return FALSE;
    if (!dims)
        return TRUE;
    *outer = prod(dims, 0, (guint)axis);
    *n = old ? prod(dims, (guint)axis, rank) : dims[axis];
    *inner = old ? 1 : prod(dims, (guint)axis + 1, rank);
    return TRUE;
}

/* DEFINE_SOFTMAX(SUF, T, EXP, LOG, MAX) defines softmax_SUF(x, y, outer, n, inner, lg): max-subtracted
 * softmax (or log-softmax when lg) of each length-n line of [outer, n, inner]; y may be x. Strided
 * lines (inner > 1) keep a running max and sum per inner position so the loops stay unit-stride. FP32
 * rows with inner == 1 go to softmax_row_f32 instead. */
#define DEFINE_SOFTMAX(SUF, T, EXP, LOG, MAX)                                                      \
    static void softmax_##SUF(const T *x, T *y, gint64 outer, gint64 n, gint64 inner, gboolean lg)  \
    {                                                                                              \
        if (n == 0)                                                                                \
            return;                                                                                \
        if (inner == 1) {                                                                          \
            for (gint64 o = 0; o < outer; o++) {                                                   \
                const T *xr = x + o * n;                                                           \
                T *yr = y + o * n;                                                                 \
                T m = MAX(xr, n), s = 0;                                                           \
                if (lg) {                                                                          \
                    for (gint64 j = 0; j < n; j++)                                                 \
                        s += EXP(xr[j] - m);                                                       \
                    T sub = m + LOG(s);                                                            \
                    for (gint64 j = 0; j < n; j++)                                                 \
                        yr[j] = xr[j] - sub;                                                       \
                } else {                                                                           \
                    for (gint64 j = 0; j < n; j++) {                                               \
                        yr[j] = EXP(xr[j] - m);                                                    \
                        s += yr[j];                                                                \
                    }                                                                              \
                    T inv = 1 / s;                                                                 \
                    for (gint64 j = 0; j < n; j++)                                                 \
                        yr[j] *= inv;                                                              \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        T *m = g_new(T, inner), *s = g_new(T, inner);                                              \
        for (gint64 o = 0; o < outer; o++) {                                                       \
            const T *xo = x + o * n * inner;                                                       \
            T *yo = y + o * n * inner;                                                             \
            for (gint64 i = 0; i < inner; i++) {                                                   \
                m[i] = xo[i];                                                                      \
                s[i] = 0;                                                                          \
            }                                                                                      \
            for (gint64 a = 1; a < n; a++)                                                         \
                for (gint64 i = 0; i < inner; i++) {                                               \
                    T v = xo[a * inner + i];                                                       \
                    m[i] = v > m[i] || isnan(v) ? v : m[i];                                        \
                }                                                                                  \
            for (gint64 a = 0; a < n; a++)                                                         \
                for (gint64 i = 0; i < inner; i++) {                                               \
                    T e = EXP(xo[a * inner + i] - m[i]);                                           \
                    s[i] += e;                                                                     \
                    if (!lg)                                                                       \
                        yo[a * inner + i] = e;                                                     \
                }                                                                                  \
            for (gint64 i = 0; i < inner; i++)                                                     \
                s[i] = lg ? m[i] + LOG(s[i]) : 1 / s[i];                                           \
            for (gint64 a = 0; a < n; a++)                                                         \
                for (gint64 i = 0; i < inner; i++) {                                               \
                    if (lg)                                                                        \
                        yo[a * inner + i] = xo[a * inner + i] - s[i];                              \
                    else                                                                           \
                        yo[a * inner + i] *= s[i];                                                 \
                }                                                                                  \
        }                                                                                          \
        g_free(m);                                                                                 \
        g_free(s);                                                                                 \
    }

static double
max_f64(const double *x, gint64 n)
{
    double m = x[0];
    for (gint64 j = 1; j < n; j++)
        m = x[j] > m || isnan(x[j]) ? x[j] : m;
    return m;
}

DEFINE_SOFTMAX(f32, float, expf, logf, max_f32)
DEFINE_SOFTMAX(f64, double, exp, log, max_f64)

/* One contiguous FP32 row (the last axis of attention scores and logits) with the vectorized exp;
 * y may be x. */
static void
softmax_row_f32(const float *x, float *y, gint64 n, gboolean lg)
{
    if (n == 0)
        return;
    float m = max_f32(x, n);
    if (lg) {
        float s = sum_exp_f32(x, NULL, n, m);
        scale_shift_f32(x, y, n, 1, -(m + logf(s)));
    } else {
        float s = sum_exp_f32(x, y, n, m);
        scale_shift_f32(y, y, n, 1 / s, 0);
    }
}

/* Shape inference for ops whose one output has the input's shape and type, checking the axis
 * attribute where check_axis says so. */
static gboolean
same_shape_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = out_shape(ctx, 0);
    if (!x || !y)
        return TRUE;
    vshape_like(y, x, x->dtype);
    if (x->rank >= 0)
        hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

static gboolean
softmax_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    if (x && x->rank >= 0 &&
        !softmax_layout(ctx->node, ctx->opset, (guint)x->rank, NULL, NULL, NULL, NULL, ctx->error))
        return FALSE;
    return same_shape_infer(ctx, eval);
}

static gboolean
softmax_eval(HgEvalCtx *ctx, gboolean lg)
{
    HgArray *x = need_input(ctx, 0, "input");
    if (!x || !need_outputs(ctx, 1))
        return FALSE;
    gint64 outer, n, inner;
    if (!softmax_layout(ctx->node, ctx->opset, x->rank, x->dims, &outer, &n, &inner, ctx->error))
        return FALSE;
    HgKind k = hg_kind_of(x->dtype);
    if (k != HG_KIND_F32 && k != HG_KIND_F64) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "input of type %s is not supported",
                    hg_dtype_name(x->dtype));
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    if (k == HG_KIND_F32 && inner == 1) {
        g_autofree float *scratch = row_scratch(x, n);
        for (gint64 o = 0; o < outer; o++) {
            const float *xr = row_get(x, o * n, n, scratch);
            softmax_row_f32(xr, row_out(y, o * n, scratch), n, lg);
            row_put(y, o * n, n, scratch);
        }
    } else {
        /* FP16 runs in place in its FP32 copy */
        g_auto(HgKBuf) xb = hg_kbuf_load(x, k);
        HgKBuf yb = hg_kbuf_reuse(&xb, y, k);
        HG_KIND_CALL_FLOAT(k, softmax, xb.p, yb.p, outer, n, inner, lg);
        hg_kbuf_store(y, &yb, k);
    }
    set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gboolean
hg_infer_Softmax(HgShapeCtx *ctx)
{
    return softmax_infer(ctx, hg_eval_Softmax);
}

gboolean
hg_infer_LogSoftmax(HgShapeCtx *ctx)
{
    return softmax_infer(ctx, hg_eval_LogSoftmax);
}

gboolean
hg_eval_Softmax(HgEvalCtx *ctx)
{
    return softmax_eval(ctx, FALSE);
}

gboolean
hg_eval_LogSoftmax(HgEvalCtx *ctx)
{
    return softmax_eval(ctx, TRUE);
}

gint64
hg_cost_Softmax(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 2);
}

gint64
hg_cost_LogSoftmax(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 2);
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
    return same_shape_infer(ctx, hg_eval_CumSum);
}

gboolean
hg_eval_CumSum(HgEvalCtx *ctx)
{
    HgArray *x = need_input(ctx, 0, "x"), *a = x ? need_input(ctx, 1, "axis") : NULL;
    gint64 axis;
    if (!a || !need_outputs(ctx, 1) || !cumsum_axis(ctx->node, a, x->rank, &axis, ctx->error))
        return FALSE;
    gboolean excl = hg_node_attr_int(ctx->node, "exclusive", 0) != 0;
    gboolean rev = hg_node_attr_int(ctx->node, "reverse", 0) != 0;
    gint64 outer = prod(x->dims, 0, (guint)axis), n = x->dims[axis], inner = prod(x->dims, (guint)axis + 1, x->rank);
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
    set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_CumSum(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 1);
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
    HgValueShape *vals = out_shape(ctx, 0), *idx = out_shape(ctx, 1);
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
        vshape_like(outs[j], x, outs[j]->dtype);
        outs[j]->dims[axis].v = known ? k : -1;
        outs[j]->dims[axis].sym = NULL;
    }
    hg_fold(ctx, hg_eval_TopK, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_eval_TopK(HgEvalCtx *ctx)
{
    HgArray *x = need_input(ctx, 0, "X");
    if (!x || !need_outputs(ctx, 1))
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
    gint64 outer = prod(x->dims, 0, (guint)axis), inner = prod(x->dims, (guint)axis + 1, x->rank);
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
            flip_sign(iv, x->numel);
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
    set_output(ctx, 0, g_steal_pointer(&vals));
    if (want_output(ctx, 1))
        set_output(ctx, 1, g_steal_pointer(&idx));
    return TRUE;
}

gint64
hg_cost_TopK(const HgShapeCtx *ctx)
{
    /* a sort per line: about log2(n) comparisons per element */
    const HgValueShape *x = hg_shape_input(ctx, 0);
    gint64 n = input_numel(ctx, 0);
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

/* ---------------------------------------------------------------- normalizations */

/* A parameter input that must hold exactly n numbers. */
static HgArray *
need_param(HgEvalCtx *ctx, guint i, const char *what, gint64 n)
{
    HgArray *p = need_input(ctx, i, what);
    if (p && p->numel != n) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "%s has %" G_GINT64_FORMAT " elements, expected %" G_GINT64_FORMAT, what, p->numel, n);
        return NULL;
    }
    return p;
}

/* The normalizations compute in FP32 for float, FP16 and BF16 and in FP64 for double. */
static gboolean
need_float(HgEvalCtx *ctx, const HgArray *x, HgKind *c)
{
    *c = hg_kind_of(x->dtype);
    if (*c == HG_KIND_F32 || *c == HG_KIND_F64)
        return TRUE;
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "input of type %s is not supported",
                hg_dtype_name(x->dtype));
    return FALSE;
}

/* Normalize one block of n values with its own statistics: the mean, then the biased variance as the
 * mean squared deviation (a second pass, so a large mean does not cancel the variance away), then
 * y = (x - mean) * inv * g + b with inv = 1/sqrt(var + eps). g and b hold n values when per_elem
 * (LayerNormalization), else one (InstanceNormalization's channel). y may be x. */
static void
norm_row_f32(const float *x, float *y, gint64 n, float eps, const float *g, const float *b, gboolean per_elem,
             float *mean_out, float *inv_out)
{
    float mean = n ? (float)(sum_f32(x, n) / (double)n) : 0;
    float var = n ? (float)(sumsq_dev_f32(x, n, mean) / (double)n) : 0;
    float inv = 1.0f / sqrtf(var + eps);
    *mean_out = mean;
    *inv_out = inv;
    if (!per_elem) {
        center_scale_f32(x, y, n, mean, inv * g[0], b[0]);
        return;
    }
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, (v4_load(x + j) - mean) * inv * v4_load(g + j) + v4_load(b + j));
    for (; j < n; j++)
        y[j] = (x[j] - mean) * inv * g[j] + b[j];
}

static void
norm_row_f64(const double *x, double *y, gint64 n, double eps, const double *g, const double *b,
             gboolean per_elem, double *mean_out, double *inv_out)
{
    double mean = n ? sum_f64(x, n) / (double)n : 0;
    double var = n ? sumsq_dev_f64(x, n, mean) / (double)n : 0;
    double inv = 1.0 / sqrt(var + eps);
    *mean_out = mean;
    *inv_out = inv;
    for (gint64 j = 0; j < n; j++)
        y[j] = per_elem ? (x[j] - mean) * inv * g[j] + b[j] : (x[j] - mean) * (inv * g[0]) + b[0];
}

/* Whether a BatchNormalization node runs in training mode: the training_mode attribute from opset 14;
 * before, the outputs beyond Y (running and saved statistics) exist only in training, except at
 * opset 6 with is_test=1. */
static gboolean
bn_training(const HgNode *node, gint64 opset)
{
    if (opset >= 14)
        return hg_node_attr_int(node, "training_mode", 0) != 0;
    if (opset < 7 && hg_node_attr_int(node, "is_test", 0) != 0)
        return FALSE;
    for (guint k = 1; k < node->n_outputs; k++)
        if (node->outputs[k])
            return TRUE;
    return FALSE;
}

/* BatchNormalization's parameter layout: with spatial=1 (the only form from opset 9) one value per
 * channel; spatial=0 (opset 6 and 7) one per element of a sample, C x D1 x ... */
static void
bn_layout(const HgNode *node, gint64 opset, const HgArray *x, gint64 *outer, gint64 *np, gint64 *inner)
{
    gboolean spatial = opset >= 9 || hg_node_attr_int(node, "spatial", 1) != 0;
    *outer = x->rank ? x->dims[0] : 1;
    gint64 c = x->rank >= 2 ? x->dims[1] : 1; /* a 1-D input is N samples of one channel */
    gint64 rest = x->rank >= 2 ? prod(x->dims, 2, x->rank) : 1;
    *np = spatial ? c : c * rest;
    *inner = spatial ? rest : 1;
}

gboolean
hg_infer_BatchNormalization(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *mean = hg_shape_input(ctx, 3);
    if (!x)
        return TRUE;
    /* the statistics outputs of training mode are per channel */
    for (guint k = 1; k < 5; k++) {
        HgValueShape *s = out_shape(ctx, k);
        if (!s)
            continue;
        s->dtype = mean ? mean->dtype : x->dtype;
        if (x->rank >= 2) {
            s->rank = 1;
            s->dims[0] = x->dims[1];
        }
    }
    return same_shape_infer(ctx, hg_eval_BatchNormalization);
}

/* Inference with the running statistics: y = (x - mean) * a + B with a = scale / sqrt(var + eps) per
 * parameter, streamed one sample ([np, inner]) at a time. */
gboolean
hg_eval_BatchNormalization(HgEvalCtx *ctx)
{
    if (ctx->node && bn_training(ctx->node, ctx->opset)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "training mode is not supported");
        return FALSE;
    }
    HgArray *x = need_input(ctx, 0, "X");
    HgKind c;
    if (!x || !need_outputs(ctx, 1) || !need_float(ctx, x, &c))
        return FALSE;
    gint64 outer, np, inner;
    bn_layout(ctx->node, ctx->opset, x, &outer, &np, &inner);
    HgArray *sc = need_param(ctx, 1, "scale", np), *bi = sc ? need_param(ctx, 2, "B", np) : NULL;
    HgArray *mean = bi ? need_param(ctx, 3, "mean", np) : NULL, *var = mean ? need_param(ctx, 4, "var", np) : NULL;
    if (!var)
        return FALSE;
    double eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    gint64 sample = np * inner;
    if (c == HG_KIND_F32) {
        g_autofree float *m = g_new(float, np + 1), *a = g_new(float, np + 1), *b = g_new(float, np + 1);
        for (gint64 p = 0; p < np; p++) {
            m[p] = (float)hg_array_get_f64(mean, p);
            a[p] = (float)hg_array_get_f64(sc, p) / sqrtf((float)hg_array_get_f64(var, p) + (float)eps);
            b[p] = (float)hg_array_get_f64(bi, p);
        }
        g_autofree float *scratch = row_scratch(x, sample);
        for (gint64 o = 0; o < outer; o++) {
            const float *xs = row_get(x, o * sample, sample, scratch);
            float *ys = row_out(y, o * sample, scratch);
            if (inner == 1) {
                for (gint64 p = 0; p < np; p++)
                    ys[p] = (xs[p] - m[p]) * a[p] + b[p];
            } else {
                for (gint64 p = 0; p < np; p++)
                    center_scale_f32(xs + p * inner, ys + p * inner, inner, m[p], a[p], b[p]);
            }
            row_put(y, o * sample, sample, scratch);
        }
    } else {
        const double *xd = x->data;
        double *yd = y->data;
        for (gint64 p = 0; p < np; p++) {
            double mp = hg_array_get_f64(mean, p), bp = hg_array_get_f64(bi, p);
            double ap = hg_array_get_f64(sc, p) / sqrt(hg_array_get_f64(var, p) + eps);
            for (gint64 o = 0; o < outer; o++)
                for (gint64 i = 0; i < inner; i++) {
                    gint64 k = (o * np + p) * inner + i;
                    yd[k] = (xd[k] - mp) * ap + bp;
                }
        }
    }
    set_output(ctx, 0, g_steal_pointer(&y));
    /* opset 6 with is_test=1: the running statistics pass through unchanged */
    if (want_output(ctx, 1))
        set_output(ctx, 1, hg_array_copy(mean));
    if (want_output(ctx, 2))
        set_output(ctx, 2, hg_array_copy(var));
    return TRUE;
}

gint64
hg_cost_BatchNormalization(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 1);
}

gboolean
hg_infer_InstanceNormalization(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    if (x && x->rank >= 0 && x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must have rank 2 or more, has %d", x->rank);
        return FALSE;
    }
    return same_shape_infer(ctx, hg_eval_InstanceNormalization);
}

/* Each (sample, channel) plane is normalized with its own mean and variance, then scaled and
 * shifted by the channel's scale and B. */
gboolean
hg_eval_InstanceNormalization(HgEvalCtx *ctx)
{
    HgArray *x = need_input(ctx, 0, "input");
    HgKind c;
    if (!x || !need_outputs(ctx, 1) || !need_float(ctx, x, &c))
        return FALSE;
    if (x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must have rank 2 or more, has %u", x->rank);
        return FALSE;
    }
    gint64 ch = x->dims[1], planes = x->dims[0] * ch, n = prod(x->dims, 2, x->rank);
    HgArray *sc = need_param(ctx, 1, "scale", ch), *bi = sc ? need_param(ctx, 2, "B", ch) : NULL;
    if (!bi)
        return FALSE;
    float eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    if (c == HG_KIND_F32) {
        g_autofree float *scratch = row_scratch(x, n);
        for (gint64 r = 0; r < planes; r++) {
            float g = (float)hg_array_get_f64(sc, r % ch), b = (float)hg_array_get_f64(bi, r % ch), m, inv;
            const float *xr = row_get(x, r * n, n, scratch);
            norm_row_f32(xr, row_out(y, r * n, scratch), n, eps, &g, &b, FALSE, &m, &inv);
            row_put(y, r * n, n, scratch);
        }
    } else {
        for (gint64 r = 0; r < planes; r++) {
            double g = hg_array_get_f64(sc, r % ch), b = hg_array_get_f64(bi, r % ch), m, inv;
            norm_row_f64((const double *)x->data + r * n, (double *)y->data + r * n, n, eps, &g, &b, FALSE, &m, &inv);
        }
    }
    set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_InstanceNormalization(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 3);
}

gboolean
hg_infer_LayerNormalization(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    if (!x)
        return TRUE;
    int stash = (int)hg_node_attr_int(ctx->node, "stash_type", HG_DTYPE_FLOAT);
    gint64 axis = 0;
    if (x->rank >= 0 && !hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    /* Mean and InvStdDev: the leading dims, then 1s; their type is stash_type */
    for (guint k = 1; k < 3; k++) {
        HgValueShape *s = out_shape(ctx, k);
        if (!s)
            continue;
        s->dtype = stash;
        if (x->rank < 0)
            continue;
        vshape_like(s, x, stash);
        for (int i = (int)axis; i < x->rank; i++) {
            s->dims[i].v = 1;
            s->dims[i].sym = NULL;
        }
    }
    if (!same_shape_infer(ctx, hg_eval_LayerNormalization))
        return FALSE;
    /* Below opset 17 (ONNX Runtime's contrib op) Y takes Scale's type; see the kernel. */
    const HgValueShape *scale = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    if (ctx->opset < 17 && scale && scale->dtype != HG_DTYPE_UNDEFINED && out_shape(ctx, 0))
        out_shape(ctx, 0)->dtype = scale->dtype;
    return TRUE;
}

/* Scale or B of LayerNormalization as n values of the normalized shape dims[0..rank), broadcasting
 * it unidirectionally (numpy rules) when it is smaller; p NULL gives n copies of fill. FALSE with
 * HG_ERROR_INVALID when p does not broadcast. */
static gboolean
ln_param(HgEvalCtx *ctx, const HgArray *p, const char *what, guint rank, const gint64 *dims, gint64 n,
         double fill, double *out)
{
    if (!p || p->numel == n) {
        for (gint64 j = 0; j < n; j++)
            out[j] = p ? hg_array_get_f64(p, j) : fill;
        return TRUE;
    }
    gboolean ok = p->rank <= rank;
    for (guint i = 0; ok && i < p->rank; i++) {
        gint64 d = p->dims[p->rank - 1 - i];
        ok = d == 1 || d == dims[rank - 1 - i];
    }
    if (!ok) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s does not broadcast to the normalized shape", what);
        return FALSE;
    }
    gint64 strides[HG_MAX_RANK], idx[HG_MAX_RANK] = {0}, off = 0;
    hg_broadcast_strides(p->rank, p->dims, rank, dims, strides);
    for (gint64 j = 0; j < n; j++) {
        out[j] = hg_array_get_f64(p, off);
        for (int d = (int)rank - 1; d >= 0; d--) {
            off += strides[d];
            if (++idx[d] < dims[d])
                break;
            off -= strides[d] * dims[d];
            idx[d] = 0;
        }
    }
    return TRUE;
}

/* Each row of the trailing block from axis on is normalized with its own statistics (computed in
 * FP32, FP64 for double), then scaled by Scale and shifted by B; Mean and InvStdDev are the
 * statistics, stored as stash_type. */
gboolean
hg_eval_LayerNormalization(HgEvalCtx *ctx)
{
    HgArray *x = need_input(ctx, 0, "X"), *sc = x ? need_input(ctx, 1, "Scale") : NULL;
    HgKind c;
    if (!sc || !need_outputs(ctx, 1) || !need_float(ctx, x, &c))
        return FALSE;
    HgArray *bi = hg_eval_input(ctx, 2);
    if (bi && !need_input(ctx, 2, "B"))
        return FALSE;
    gint64 axis;
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), x->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    int stash = (int)hg_node_attr_int(ctx->node, "stash_type", HG_DTYPE_FLOAT);
    if (hg_kind_of(stash) != HG_KIND_F32 && hg_kind_of(stash) != HG_KIND_F64) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "stash_type %d is not a float type", stash);
        return FALSE;
    }
    guint nr = x->rank - (guint)axis;
    const gint64 *ndims = x->dims + axis;
    gint64 rows = prod(x->dims, 0, (guint)axis), n = prod(x->dims, (guint)axis, x->rank);
    g_autofree double *g = g_new(double, n + 1), *b = g_new(double, n + 1);
    if (!ln_param(ctx, sc, "Scale", nr, ndims, n, 1, g) || !ln_param(ctx, bi, "B", nr, ndims, n, 0, b))
        return FALSE;
    float eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    gint64 sdims[HG_MAX_RANK];
    for (guint i = 0; i < x->rank; i++)
        sdims[i] = i < axis ? x->dims[i] : 1;
    /* Below opset 17 LayerNormalization is ONNX Runtime's contrib op in the default domain, whose Y
     * has the type of Scale (V), not of X (T): an FP16 X with FP32 Scale gives FP32. */
    int ytype = ctx->opset < 17 && ctx->n_inputs > 1 && ctx->inputs[1] ? ctx->inputs[1]->dtype : x->dtype;
    g_autoptr(HgArray) y = hg_array_new_like(ytype, x, ctx->error);
    g_autoptr(HgArray) mean = NULL;
    g_autoptr(HgArray) inv = NULL;
    if (!y)
        return FALSE;
    if (want_output(ctx, 1) && !(mean = hg_array_new(stash, x->rank, sdims, ctx->error)))
        return FALSE;
    if (want_output(ctx, 2) && !(inv = hg_array_new(stash, x->rank, sdims, ctx->error)))
        return FALSE;
    /* the statistics in the compute type, stored to stash_type at the end; stash_type DOUBLE (or a
     * double X or Y) computes in FP64, as the spec's stage one in stash_type precision says */
    g_autofree double *md = g_new(double, rows + 1), *id = g_new(double, rows + 1);
    if (c == HG_KIND_F32 && hg_kind_of(stash) == HG_KIND_F32 && y->dtype != HG_DTYPE_DOUBLE) {
        g_autofree float *gf = g_new(float, n + 1), *bf = g_new(float, n + 1);
        for (gint64 j = 0; j < n; j++) {
            gf[j] = (float)g[j];
            bf[j] = (float)b[j];
        }
        /* rows in place where X and Y are both FLOAT, else through scratch (below opset 17 Y has
         * Scale's type, which may differ from X's) */
        gboolean direct_in = x->dtype == HG_DTYPE_FLOAT, direct_out = y->dtype == HG_DTYPE_FLOAT;
        g_autofree float *scratch = direct_in && direct_out ? NULL : g_new(float, n + 1);
        for (gint64 r = 0; r < rows; r++) {
            float m, iv;
            const float *xr = (const float *)x->data + r * n;
            if (!direct_in) {
                hg_array_load_span_f32(x, r * n, n, scratch);
                xr = scratch;
            }
            float *yr = direct_out ? (float *)y->data + r * n : scratch;
            norm_row_f32(xr, yr, n, eps, gf, bf, TRUE, &m, &iv);
            if (!direct_out)
                hg_array_store_span_f32(y, r * n, n, scratch);
            md[r] = m;
            id[r] = iv;
        }
    } else {
        gboolean own;
        double *xd = hg_array_load_f64(x, &own);
        g_autofree double *yd = g_new(double, y->numel + 1);
        for (gint64 r = 0; r < rows; r++)
            norm_row_f64(xd + r * n, yd + r * n, n, eps, g, b, TRUE, &md[r], &id[r]);
        if (own)
            g_free(xd);
        hg_array_store_f64(y, yd);
    }
    if (mean)
        hg_array_store_f64(mean, md);
    if (inv)
        hg_array_store_f64(inv, id);
    set_output(ctx, 0, g_steal_pointer(&y));
    if (mean)
        set_output(ctx, 1, g_steal_pointer(&mean));
    if (inv)
        set_output(ctx, 2, g_steal_pointer(&inv));
    return TRUE;
}

gint64
hg_cost_LayerNormalization(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 3);
}

/* RMSNormalization (opset 23): y = x / sqrt(mean(x^2) + epsilon) * scale over the trailing block
 * from axis on; Y has scale's type (V), which may differ from X's (T). */
static gboolean
rms_axis(const HgNode *node, int rank, gint64 *axis, GError **error)
{
    return hg_norm_axis(hg_node_attr_int(node, "axis", -1), (guint)rank, axis, node, error);
}

gboolean
hg_infer_RMSNormalization(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *scale = hg_shape_input(ctx, 1);
    gint64 axis;
    if (x && x->rank >= 0 && !rms_axis(ctx->node, x->rank, &axis, ctx->error))
        return FALSE;
    if (!same_shape_infer(ctx, hg_eval_RMSNormalization))
        return FALSE;
    HgValueShape *y = out_shape(ctx, 0);
    if (y && scale && scale->dtype != HG_DTYPE_UNDEFINED)
        y->dtype = scale->dtype;
    return TRUE;
}

/* One row: y = x * inv * g with inv = 1 / sqrt(mean(x^2) + eps), the mean in FP32 lanes (see
 * sumsq_dev_f32: blocks of 4096 summed in double, so its relative error stays below 600 ulps however
 * long the row). y may be x. */
static void
rms_row_f32(const float *x, float *y, gint64 n, float eps, const float *g)
{
    float ms = n ? (float)(sumsq_dev_f32(x, n, 0) / (double)n) : 0;
    float inv = 1 / sqrtf(ms + eps);
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, v4_load(x + j) * inv * v4_load(g + j));
    for (; j < n; j++)
        y[j] = x[j] * inv * g[j];
}

static void
rms_row_f64(const double *x, double *y, gint64 n, double eps, const double *g)
{
    double inv = 1 / sqrt((n ? sumsq_dev_f64(x, n, 0) / (double)n : 0) + eps);
    for (gint64 j = 0; j < n; j++)
        y[j] = x[j] * inv * g[j];
}

/* Rows stream through FP32 scratch when X or Y is not FLOAT (Y has scale's type); stash_type DOUBLE,
 * or a double X, computes in FP64. */
gboolean
hg_eval_RMSNormalization(HgEvalCtx *ctx)
{
    HgArray *x = need_input(ctx, 0, "X"), *sc = x ? need_input(ctx, 1, "scale") : NULL;
    HgKind c;
    if (!sc || !need_outputs(ctx, 1) || !need_float(ctx, x, &c))
        return FALSE;
    HgKind cs = hg_kind_of(sc->dtype);
    if (cs != HG_KIND_F32 && cs != HG_KIND_F64) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "scale of type %s is not supported",
                    hg_dtype_name(sc->dtype));
        return FALSE;
    }
    gint64 axis;
    if (!rms_axis(ctx->node, (int)x->rank, &axis, ctx->error))
        return FALSE;
    int stash = (int)hg_node_attr_int(ctx->node, "stash_type", HG_DTYPE_FLOAT);
    HgKind cstash = hg_kind_of(stash);
    if (cstash != HG_KIND_F32 && cstash != HG_KIND_F64) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "stash_type %d is not a float type", stash);
        return FALSE;
    }
    if (cstash == HG_KIND_F64)
        c = HG_KIND_F64;
    gint64 rows = prod(x->dims, 0, (guint)axis), n = prod(x->dims, (guint)axis, x->rank);
    g_autofree double *g = g_new(double, n + 1);
    if (!ln_param(ctx, sc, "scale", x->rank - (guint)axis, x->dims + axis, n, 1, g))
        return FALSE;
    double eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    g_autoptr(HgArray) y = hg_array_new_like(sc->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    if (c == HG_KIND_F32 && y->dtype != HG_DTYPE_DOUBLE) {
        g_autofree float *gf = g_new(float, n + 1);
        for (gint64 j = 0; j < n; j++)
            gf[j] = (float)g[j];
        gboolean direct_in = x->dtype == HG_DTYPE_FLOAT, direct_out = y->dtype == HG_DTYPE_FLOAT;
        g_autofree float *scratch = direct_in && direct_out ? NULL : g_new(float, n + 1);
        for (gint64 r = 0; r < rows; r++) {
            const float *xr = (const float *)x->data + r * n;
            if (!direct_in) {
                hg_array_load_span_f32(x, r * n, n, scratch);
                xr = scratch;
            }
            float *yr = direct_out ? (float *)y->data + r * n : scratch;
            rms_row_f32(xr, yr, n, (float)eps, gf);
            if (!direct_out)
                hg_array_store_span_f32(y, r * n, n, scratch);
        }
    } else {
        gboolean own;
        double *xd = hg_array_load_f64(x, &own);
        g_autofree double *yd = g_new(double, y->numel + 1);
        for (gint64 r = 0; r < rows; r++)
            rms_row_f64(xd + r * n, yd + r * n, n, eps, g);
        if (own)
            g_free(xd);
        hg_array_store_f64(y, yd);
    }
    set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_RMSNormalization(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 2);
}

/* ---------------------------------------------------------------- NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss
 *
 * input (N, C, D1, ..., Dk) and target (N, D1, ..., Dk) of class indices: each position's loss is
 * -input[n, target, d] (SoftmaxCrossEntropyLoss: of the log-softmax over C, which its second output
 * gives), times weight[target] when a weight is given, and 0 where target is ignore_index. Reduction
 * "none" keeps target's shape; "sum" adds; "mean" divides the sum by the sum of the weights taken
 * (1 each without a weight, 0 where ignored), so a mean over nothing is 0 / 0. FP32 log-softmax
 * (FP64 for double), sums in FP64, rounded once. */

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } LossReduction;

static gboolean
loss_reduction(const HgNode *node, LossReduction *r, GError **error)
{
    g_autofree char *s = hg_attr_string(node, "reduction", "mean");
    if (!strcmp(s, "none"))
        *r = LOSS_NONE;
    else if (!strcmp(s, "sum"))
        *r = LOSS_SUM;
    else if (!strcmp(s, "mean"))
        *r = LOSS_MEAN;
    else {
        hg_op_error(error, HG_ERROR_INVALID, node, "reduction '%s' is not none, sum or mean", s);
        return FALSE;
    }
    return TRUE;
}

static gboolean
loss_infer(HgShapeCtx *ctx, gboolean softmax, HgEvalFunc eval)
{
    LossReduction red;
    if (!loss_reduction(ctx->node, &red, ctx->error))
        return FALSE;
    const HgValueShape *x = hg_shape_input(ctx, 0), *t = hg_shape_input(ctx, 1);
    HgValueShape *y = out_shape(ctx, 0), *lp = softmax ? out_shape(ctx, 1) : NULL;
    if (x && x->rank >= 0 && x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must have rank 2 or more, has %d", x->rank);
        return FALSE;
    }
    if (x && t && x->rank >= 0 && t->rank >= 0 && t->rank != x->rank - 1) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "target has rank %d, input %d: expected one less",
                    t->rank, x->rank);
        return FALSE;
    }
    if (y && x) {
        y->dtype = x->dtype;
        if (red != LOSS_NONE) {
            y->rank = 0;
        } else if (x->rank >= 0) {
            y->rank = x->rank - 1;
            for (int i = 0; i < y->rank; i++) {
                HgSymDim a = x->dims[i ? i + 1 : 0], b = t && t->rank == y->rank ? t->dims[i] : a;
                y->dims[i] = a.v >= 0 ? a : b;
            }
        }
    }
    if (lp && x)
        vshape_like(lp, x, x->dtype);
    if (x && t && x->value && t->value)
        hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_infer_NegativeLogLikelihoodLoss(HgShapeCtx *ctx)
{
    return loss_infer(ctx, FALSE, hg_eval_NegativeLogLikelihoodLoss);
}

gboolean
hg_infer_SoftmaxCrossEntropyLoss(HgShapeCtx *ctx)
{
    return loss_infer(ctx, TRUE, hg_eval_SoftmaxCrossEntropyLoss);
}

static gboolean
loss_eval(HgEvalCtx *ctx, gboolean softmax)
{
    HgArray *x = need_input(ctx, 0, "input"), *t = x ? need_input(ctx, 1, "target") : NULL;
    HgKind c;
    LossReduction red;
    if (!t || !need_outputs(ctx, 1) || !need_float(ctx, x, &c) || !loss_reduction(ctx->node, &red, ctx->error))
        return FALSE;
    HgArray *w = hg_eval_input(ctx, 2);
    if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0] ||
        hg_dtype_compute(t->dtype) != HG_COMPUTE_I64) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "input must be (N, C, D...) and target integer (N, D...)");
        return FALSE;
    }
    for (guint i = 1; i < t->rank; i++)
        if (t->dims[i] != x->dims[i + 1]) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "target's dims do not match input's");
            return FALSE;
        }
    gint64 n = x->dims[0], nc = x->dims[1], d = prod(x->dims, 2, x->rank);
    if (w && (!need_input(ctx, 2, "weight") || w->numel != nc)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "weight must hold one value per class (%" G_GINT64_FORMAT ")", nc);
        return FALSE;
    }
    gboolean has_ii = ctx->node && hg_node_attr(ctx->node, "ignore_index") != NULL;
    gint64 ii = has_ii ? hg_node_attr_int(ctx->node, "ignore_index", 0) : 0;
    /* log-probabilities, [N, C, D]: the input itself, or its log-softmax over C */
    gboolean own;
    double *xd = hg_array_load_f64(x, &own);
    g_autofree double *lp = NULL;
    if (softmax) {
        lp = g_new(double, x->numel + 1);
        if (c == HG_KIND_F32) {
            g_autofree float *xf = g_new(float, x->numel + 1);
            for (gint64 i = 0; i < x->numel; i++)
                xf[i] = (float)xd[i];
            softmax_f32(xf, xf, n, nc, d, TRUE);
            for (gint64 i = 0; i < x->numel; i++)
                lp[i] = xf[i];
        } else {
            softmax_f64(xd, lp, n, nc, d, TRUE);
        }
    }
    const double *src = softmax ? lp : xd;
    g_autofree double *loss = g_new(double, n * d + 1);
    double total = 0, weights = 0;
    gboolean ok = TRUE;
    for (gint64 i = 0; i < n && ok; i++)
        for (gint64 j = 0; j < d; j++) {
            gint64 k = hg_array_get_i64(t, i * d + j);
            if (has_ii && k == ii) {
                loss[i * d + j] = 0;
                continue;
            }
            if (k < 0 || k >= nc) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "target %" G_GINT64_FORMAT " is not a class of %" G_GINT64_FORMAT, k, nc);
                ok = FALSE;
                break;
            }
            double wk = w ? hg_array_get_f64(w, k) : 1;
            loss[i * d + j] = -src[(i * nc + k) * d + j] * wk;
            total += loss[i * d + j];
            weights += wk;
        }
    if (own)
        g_free(xd);
    if (!ok)
        return FALSE;
    g_autoptr(HgArray) y = red == LOSS_NONE ? hg_array_new(x->dtype, t->rank, t->dims, ctx->error)
                                            : hg_array_new(x->dtype, 0, NULL, ctx->error);
    if (!y)
        return FALSE;
    if (red == LOSS_NONE) {
        hg_array_store_f64(y, loss);
    } else {
        double v = red == LOSS_SUM ? total : total / weights;
        hg_array_store_f64(y, &v);
    }
    set_output(ctx, 0, g_steal_pointer(&y));
    if (softmax && want_output(ctx, 1)) {
        HgArray *l = hg_array_new_like(x->dtype, x, ctx->error);
        if (!l)
            return FALSE;
        hg_array_store_f64(l, lp);
        set_output(ctx, 1, l);
    }
    return TRUE;
}

gboolean
hg_eval_NegativeLogLikelihoodLoss(HgEvalCtx *ctx)
{
    return loss_eval(ctx, FALSE);
}

gboolean
hg_eval_SoftmaxCrossEntropyLoss(HgEvalCtx *ctx)
{
    return loss_eval(ctx, TRUE);
}

gint64
hg_cost_NegativeLogLikelihoodLoss(const HgShapeCtx *ctx)
{
    const HgValueShape *t = hg_shape_input(ctx, 1);
    return t ? hg_vshape_numel(t) : -1;
}

gint64
hg_cost_SoftmaxCrossEntropyLoss(const HgShapeCtx *ctx)
{
    return scaled_cost(ctx, 2);
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
 * - finish() maps a bound to what the output type can hold (overflow to inf, FP16/BF16 rounding
 *   once on store, denormal tinies). */

#define ULP32 (1.0 / 8388608.0) /* 2^-23 */

static const HgRange *
rin(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

static const HgValueShape *
rshape(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->inputs[i] ? ctx->shapes[i] : NULL;
}

static const HgArray *
rvalue(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->inputs[i] ? ctx->values[i] : NULL;
}

static HgRange *
rout(const HgRangeCtx *ctx, guint k)
{
    return k < ctx->n_outputs ? ctx->outputs[k] : NULL;
}

static int
rout_dtype(const HgRangeCtx *ctx, guint k)
{
    return k < ctx->n_outputs && ctx->out_shapes[k] ? ctx->out_shapes[k]->dtype : HG_DTYPE_UNDEFINED;
}

/* Whether r holds at least one number. */
static gboolean
rnonempty(const HgRange *r)
{
    return r && r->lo <= r->hi;
}

static double
rmag(const HgRange *r)
{
    return MAX(fabs(r->lo), fabs(r->hi));
}

/* Smallest |x| over r (0 when r straddles 0). */
static double
rmag_lo(const HgRange *r)
{
    return r->lo > 0 ? r->lo : r->hi < 0 ? -r->hi : 0;
}

static HgRange
rmake(double lo, double hi, double tiny, gboolean nan)
{
    HgRange r = {lo, hi, tiny, nan};
    return r;
}

static HgRange
iv_const(double c)
{
    return rmake(c, c, fabs(c), FALSE);
}

/* Widen finite bounds outward by slack (an absolute rounding allowance). */
static void
iv_slack(HgRange *r, double slack)
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
static void
finish(HgRange *r, int dtype)
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
static gint64
rdim(const HgValueShape *s, gint64 axis)
{
    return s && axis >= 0 && axis < s->rank ? s->dims[axis].v : -1;
}

/* Input elements per output element of a Reduce* node; FALSE when unknown. */
static gboolean
red_count(const HgRangeCtx *ctx, RedKind kind, gint64 *n)
{
    const HgValueShape *x = rshape(ctx, 0);
    if (!x || x->rank < 0)
        return FALSE;
    gboolean has_axes = rin(ctx, 1) != NULL;
    const HgArray *axes = rvalue(ctx, 1);
    const HgValueShape *as = rshape(ctx, 1);
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
    const HgRange *x = rin(ctx, 0);
    HgRange *y = rout(ctx, 0);
    const HgValueShape *xs = rshape(ctx, 0);
    if (!y || !rnonempty(x) || !xs || xs->dtype == HG_DTYPE_UNDEFINED)
        return;
    int dt = xs->dtype;
    gboolean is_int = is_int_dtype(dt);
    gint64 cnt = 0;
    gboolean known = red_count(ctx, kind, &cnt);
    double n = known ? (double)cnt : 0;
    gboolean wild = x->lo == -INFINITY && x->hi == INFINITY; /* inf + -inf can happen */
    gboolean same_sign = x->lo >= 0 || x->hi <= 0;
    double alo = rmag_lo(x), ahi = rmag(x);
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
            r = rmake(0, 0, 0, FALSE);
        else if (known)
            r = rmake(hg_bound_mul(n, x->lo), hg_bound_mul(n, x->hi), same_sign ? x->tiny : 0, x->nan || (wild && cnt >= 2));
        else if (x->lo >= 0)
            r = rmake(0, x->hi > 0 ? INFINITY : 0, x->tiny, x->nan);
        else if (x->hi <= 0)
            r = rmake(x->lo < 0 ? -INFINITY : 0, 0, x->tiny, x->nan);
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
            r = rmake(hg_bound_mul(n, alo), hg_bound_mul(n, ahi), x->tiny, x->nan);
        else
            r = rmake(0, ahi > 0 ? INFINITY : 0, x->tiny, x->nan);
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
            r = rmake(hg_bound_mul(n, slo), hg_bound_mul(n, shi), tiny, x->nan);
        else
            r = rmake(0, shi > 0 ? INFINITY : 0, tiny, x->nan);
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
            r = rmake(-INFINITY, -INFINITY, 0, FALSE);
            break;
        }
        double lg = log(n);
        r = rmake(x->lo + lg, x->hi + lg, 0, x->nan || x->hi == INFINITY);
        /* log(sum) + max: absolute rounding of the size of the max */
        iv_slack(&r, 4 * ULP32 * (ahi + lg + 1));
        if (is_int) {
            r.lo = floor(r.lo);
            r.hi = ceil(r.hi);
        }
        break;
    }
    case RED_PROD: {
        if (!known) {
            if (x->lo >= 0 && x->hi <= 1)
                r = rmake(0, 1, 0, x->nan);
            else if (x->lo >= 1)
                r = rmake(1, x->hi > 1 ? INFINITY : 1, 1, x->nan);
            else
                return;
            break;
        }
        if (cnt == 0) {
            r = rmake(1, 1, 1, FALSE);
            break;
        }
        double plo = pow(alo, n), phi = pow(ahi, n);
        if (x->lo >= 0)
            r = rmake(plo, phi, 0, FALSE);
        else if (x->hi <= 0)
            r = cnt % 2 ? rmake(-phi, -plo, 0, FALSE) : rmake(plo, phi, 0, FALSE);
        else if (cnt == 1)
            r = rmake(x->lo, x->hi, 0, FALSE);
        else
            r = rmake(-phi, phi, 0, FALSE);
        r.tiny = pow(x->tiny, n);
        r.nan = x->nan || (cnt >= 2 && alo == 0 && ahi == INFINITY);
        /* n roundings, each relative */
        if (!is_int) {
            double rel = (n + 1) * ULP32;
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
    finish(&r, dt);
    *y = r;
}

/* The index output k of an op over axis (attribute name, default) of input 0: [0, dim - 1]. */
static void
index_range(HgRangeCtx *ctx, guint k, gint64 dflt_axis)
{
    HgRange *y = rout(ctx, k);
    if (!y)
        return;
    const HgValueShape *xs = rshape(ctx, 0);
    gint64 dim = -1, axis;
    if (xs && xs->rank >= 0 &&
        hg_norm_axis(hg_node_attr_int(ctx->node, "axis", dflt_axis), (guint)xs->rank, &axis, NULL, NULL))
        dim = rdim(xs, axis);
    *y = rmake(0, dim > 0 ? (double)(dim - 1) : INFINITY, 1, FALSE);
}

/* Length of the lines a (Log)Softmax normalizes, -1 when unknown (see softmax_layout). */
static gint64
softmax_len(const HgRangeCtx *ctx)
{
    const HgValueShape *xs = rshape(ctx, 0);
    gboolean old = ctx->opset < 13;
    gint64 axis;
    if (!xs || xs->rank < 0 ||
        !hg_norm_axis(hg_node_attr_int(ctx->node, "axis", old ? 1 : -1), (guint)xs->rank, &axis, NULL, NULL))
        return -1;
    gint64 n = 1;
    for (int i = (int)axis; i < (old ? xs->rank : axis + 1); i++) {
        if (xs->dims[i].v < 0)
            return -1;
        n *= xs->dims[i].v;
    }
    return n;
}

/* p_j = 1 / (1 + sum_{k != j} e^(x_k - x_j)) and every x_k - x_j lies in [-w, w], so p_j lies in
 * [1/(1 + (n-1)e^w), 1/(1 + (n-1)e^-w)]; log-softmax is the log of that. The (log-)softmax of
 * lines of n values (n < 1: unknown) from x, before fitting to a type. */
static HgRange
softmax_bound(const HgRange *x, gint64 n, gboolean lg)
{
    gboolean bounded = hg_range_bounded(x);
    gboolean nan = x->nan || !bounded; /* an infinite max gives inf - inf */
    HgRange r = lg ? rmake(-INFINITY, 0, 0, nan) : rmake(0, 1, 0, nan);
    if (bounded && n >= 1) {
        /* x - max is rounded to the ulp of |x|; the sum of n exps adds n roundings */
        double w = x->hi - x->lo + 4 * ULP32 * rmag(x);
        double m1 = (double)(n - 1), rel = ((double)n + 8) * ULP32;
        if (lg) {
            /* log(1 + m1 e^w) = w + log(m1 + e^-w), which does not overflow */
            double ylo = m1 > 0 ? -(w + log(m1 + exp(-w))) : 0, yhi = -log1p(m1 * exp(-w));
            r.lo = ylo - rel - 4 * ULP32 * (rmag(x) - ylo);
            r.hi = MIN(0, yhi + rel + 4 * ULP32 * (rmag(x) - ylo));
        } else {
            double plo = 1 / (1 + m1 * exp(w)), phi = 1 / (1 + m1 * exp(-w));
            plo *= 1 - rel;
            r.lo = plo < 1e-30 ? 0 : plo; /* exps that underflow give 0 */
            r.tiny = r.lo;
            r.hi = MIN(1, phi * (1 + rel));
        }
    }
    return r;
}

static void
softmax_range(HgRangeCtx *ctx, gboolean lg)
{
    const HgRange *x = rin(ctx, 0);
    HgRange *y = rout(ctx, 0);
    if (!y || !rnonempty(x))
        return;
    HgRange r = softmax_bound(x, softmax_len(ctx), lg);
    finish(&r, rout_dtype(ctx, 0));
    *y = r;
}

/* A bound on |z| for z = (x - mean) / sqrt(var + eps) over a row of n values in x (n < 0: unknown).
 * |x_i - m|^2 <= sum (x_j - m)^2 = n var for any m, the rounded mean included, so |z| <= sqrt(n);
 * and |x_i - m| <= w for a mean inside the range, so |z| <= w / sqrt(eps). */
static double
norm_zbound(const HgRange *x, gint64 n, double eps)
{
    double zb = INFINITY;
    if (n >= 0)
        zb = sqrt((double)n) * (1 + 1.0 / 65536);
    if (hg_range_bounded(x) && eps > 0)
        zb = MIN(zb, ((x->hi - x->lo) * (1 + 1.0 / 262144) + 4 * ULP32 * rmag(x)) / (sqrt(eps) * (1 - ULP32)));
    return zb;
}

/* y = z * g + b with |z| <= zb, g and b from inputs gi and bi (bi may be absent: 0). When both are
 * constants of the same size they are paired element by element (per_channel: one pair per
 * channel, as InstanceNormalization); else their ranges are combined. */
static gboolean
norm_affine(const HgRangeCtx *ctx, double zb, guint gi, guint bi, HgRange *out)
{
    const HgRange *g = rin(ctx, gi), *b = rin(ctx, bi);
    const HgArray *gv = rvalue(ctx, gi), *bv = rvalue(ctx, bi);
    if (!isfinite(zb) || !rnonempty(g) || (b && !rnonempty(b)))
        return FALSE;
    HgRange z = rmake(-zb, zb, 0, FALSE);
    if (gv && (!b || (bv && bv->numel == gv->numel)) && gv->numel > 0) {
        HgRange acc = rmake(INFINITY, -INFINITY, 0, FALSE);
        for (gint64 j = 0; j < gv->numel; j++) {
            double gj = hg_array_get_f64(gv, j), bj = bv ? hg_array_get_f64(bv, j) : 0;
            if (isnan(gj) || isnan(bj))
                return FALSE;
            HgRange t = hg_range_add(hg_range_mul(z, iv_const(gj)), iv_const(bj));
            iv_slack(&t, 2 * ULP32 * (zb * fabs(gj) + fabs(bj)));
            acc = hg_range_union(acc, t);
        }
        *out = acc;
        out->tiny = 0;
        return TRUE;
    }
    HgRange t = hg_range_mul(z, *g);
    if (b)
        t = hg_range_add(t, *b);
    iv_slack(&t, 2 * ULP32 * (zb * rmag(g) + (b ? rmag(b) : 0)));
    t.tiny = 0;
    *out = t;
    return TRUE;
}

/* Elements of input 0 from dim `from` on, -1 when unknown. */
static gint64
rnumel_from(const HgValueShape *s, int from)
{
    if (!s || s->rank < 0 || from > s->rank)
        return -1;
    gint64 n = 1;
    for (int i = from; i < s->rank; i++) {
        if (s->dims[i].v < 0)
            return -1;
        n *= s->dims[i].v;
    }
    return n;
}

static void
norm_range(HgRangeCtx *ctx, gint64 n, gboolean layer)
{
    const HgRange *x = rin(ctx, 0);
    if (!rnonempty(x))
        return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    if (!(eps > 0))
        return; /* a constant row gives 0/0 */
    gboolean nan = x->nan || !hg_range_bounded(x);
    HgRange *y = rout(ctx, 0);
    HgRange r;
    if (y && norm_affine(ctx, norm_zbound(x, n, eps), 1, 2, &r)) {
        r.nan = r.nan || nan;
        finish(&r, rout_dtype(ctx, 0));
        *y = r;
    }
    if (!layer)
        return;
    HgRange *mean = rout(ctx, 1), *inv = rout(ctx, 2);
    if (mean) {
        r = rmake(x->lo, x->hi, 0, x->nan || (x->lo == -INFINITY && x->hi == INFINITY));
        if (n <= 0) { /* empty rows have mean 0 */
            r.lo = MIN(r.lo, 0);
            r.hi = MAX(r.hi, 0);
        }
        finish(&r, rout_dtype(ctx, 1));
        *mean = r;
    }
    if (inv) {
        double hw = hg_range_bounded(x) ? (x->hi - x->lo) / 2 + 4 * ULP32 * rmag(x) : INFINITY;
        double lo = 1 / sqrt(hw * hw + eps) * (1 - 4 * ULP32), hi = 1 / sqrt(eps) * (1 + 4 * ULP32);
        r = rmake(lo, hi, lo, nan);
        finish(&r, rout_dtype(ctx, 2));
        *inv = r;
    }
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

/* Inference: y = (x - mean) * a + B per channel with a = scale / sqrt(var + eps). Constant
 * statistics (the usual case) give each channel's exact affine map, and y the union over channels;
 * otherwise the parameters' ranges are combined. */
void
hg_range_BatchNormalization(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0);
    HgRange *y = rout(ctx, 0);
    if (!y || !rnonempty(x) || bn_training(ctx->node, ctx->opset))
        return;
    for (guint i = 1; i < 5; i++)
        if (!rnonempty(rin(ctx, i)))
            return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    const HgArray *sv = rvalue(ctx, 1), *bv = rvalue(ctx, 2), *mv = rvalue(ctx, 3), *vv = rvalue(ctx, 4);
    HgRange r;
    if (sv && bv && mv && vv && sv->numel > 0 && bv->numel == sv->numel && mv->numel == sv->numel &&
        vv->numel == sv->numel) {
        r = rmake(INFINITY, -INFINITY, 0, FALSE);
        for (gint64 p = 0; p < sv->numel; p++) {
            double s = hg_array_get_f64(sv, p), b = hg_array_get_f64(bv, p), m = hg_array_get_f64(mv, p);
            double v = hg_array_get_f64(vv, p) + eps;
            if (!(v > 0) || isnan(s) || isnan(b) || isnan(m))
                return;
            double a = s / sqrt(v);
            HgRange t = hg_range_add(hg_range_mul(hg_range_add(*x, iv_const(-m)), iv_const(a)), iv_const(b));
            iv_slack(&t, 4 * ULP32 * ((rmag(x) + fabs(m)) * fabs(a) + fabs(b)));
            r = hg_range_union(r, t);
        }
    } else {
        const HgRange *s = rin(ctx, 1), *b = rin(ctx, 2), *m = rin(ctx, 3), *v = rin(ctx, 4);
        if (!(v->lo + eps > 0))
            return;
        HgRange inv = rmake(1 / sqrt(v->hi + eps), 1 / sqrt(v->lo + eps), 0, v->nan);
        inv.lo *= 1 - 4 * ULP32;
        inv.hi *= 1 + 4 * ULP32;
        HgRange a = hg_range_mul(*s, inv);
        HgRange negm = rmake(-m->hi, -m->lo, 0, m->nan);
        r = hg_range_add(hg_range_mul(hg_range_add(*x, negm), a), *b);
        iv_slack(&r, 4 * ULP32 * ((rmag(x) + rmag(m)) * rmag(&a) + rmag(b)));
    }
    r.tiny = 0;
    finish(&r, rout_dtype(ctx, 0));
    *y = r;
}

/* Each output is a sum of k input elements along the axis, k in [1, n] (exclusive: [0, n - 1]). */
void
hg_range_CumSum(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0);
    HgRange *y = rout(ctx, 0);
    const HgValueShape *xs = rshape(ctx, 0);
    const HgArray *av = rvalue(ctx, 1);
    if (!y || !rnonempty(x) || !xs || xs->dtype == HG_DTYPE_UNDEFINED)
        return;
    int dt = xs->dtype;
    gboolean excl = hg_node_attr_int(ctx->node, "exclusive", 0) != 0;
    gint64 axis, n = -1;
    if (av && xs->rank >= 0 && cumsum_axis(ctx->node, av, (guint)xs->rank, &axis, NULL)) {
        n = rdim(xs, axis);
    } else if (xs->rank > 0) {
        /* a computed axis: the longest dim bounds the terms of every partial sum */
        for (int i = 0; i < xs->rank && (i == 0 || n >= 0); i++)
            n = xs->dims[i].v < 0 ? -1 : MAX(n, xs->dims[i].v);
    }
    gboolean same_sign = x->lo >= 0 || x->hi <= 0;
    HgRange r;
    if (n > 0) {
        double klo = excl ? 0 : 1, khi = excl ? (double)(n - 1) : (double)n;
        r = rmake(x->lo < 0 ? hg_bound_mul(khi, x->lo) : hg_bound_mul(klo, x->lo), x->hi > 0 ? hg_bound_mul(khi, x->hi) : hg_bound_mul(klo, x->hi),
                  same_sign ? x->tiny : 0, x->nan || (x->lo == -INFINITY && x->hi == INFINITY && khi >= 2));
        /* every partial sum is rounded (FP16/BF16 to their own width) */
        double u = dt == HG_DTYPE_FLOAT16 ? 1.0 / 2048 : dt == HG_DTYPE_BFLOAT16 ? 1.0 / 256 : ULP32;
        if (!is_int_dtype(dt))
            iv_slack(&r, khi * u * MAX(fabs(r.lo), fabs(r.hi)));
        /* Rounding is monotone and 0 is exact: partial sums of terms of one sign keep that sign. */
        if (x->lo >= 0)
            r.lo = MAX(r.lo, 0);
        if (x->hi <= 0)
            r.hi = MIN(r.hi, 0);
    } else if (x->lo >= 0) {
        r = rmake(excl ? 0 : x->lo, x->hi > 0 ? INFINITY : 0, x->tiny, x->nan);
    } else if (x->hi <= 0) {
        r = rmake(x->lo < 0 ? -INFINITY : 0, excl ? 0 : x->hi, x->tiny, x->nan);
    } else {
        return;
    }
    if (is_int_dtype(dt) && !int_fits(dt, r.lo, r.hi))
        return;
    finish(&r, dt);
    *y = r;
}

void
hg_range_InstanceNormalization(HgRangeCtx *ctx)
{
    norm_range(ctx, rnumel_from(rshape(ctx, 0), 2), FALSE);
}

void
hg_range_LayerNormalization(HgRangeCtx *ctx)
{
    const HgValueShape *xs = rshape(ctx, 0);
    gint64 axis, n = -1;
    if (xs && xs->rank >= 0 &&
        hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)xs->rank, &axis, NULL, NULL))
        n = rnumel_from(xs, (int)axis);
    norm_range(ctx, n, TRUE);
}

/* RMSNormalization: z_i = x_i / sqrt(mean(x^2) + eps). The mean of the n squares is at least
 * x_i^2 / n and at least m^2, m the smallest |x| the range allows, so |z_i| <= t / sqrt(max(t^2 / n,
 * m^2) + eps) at t = |x_i|; that increases with t, so its value at the largest |x|, M, bounds every
 * z: at most sqrt(n), and at most M / sqrt(eps). The mean is also at most M^2, so an x of one sign
 * keeps z at least m / sqrt(M^2 + eps) from 0. Then y = z * scale, whose interval product is the
 * union over the scale's values when they are constants. The computed mean is low by at most 600
 * ulps (FP32 lanes, see rms_row_f32), which raises |z| by half that. */
void
hg_range_RMSNormalization(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0), *g = rin(ctx, 1);
    HgRange *y = rout(ctx, 0);
    const HgValueShape *xs = rshape(ctx, 0);
    if (!y || !rnonempty(x) || !rnonempty(g))
        return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    gint64 axis, n = -1;
    if (xs && xs->rank >= 0 && hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)xs->rank, &axis, NULL, NULL))
        n = rnumel_from(xs, (int)axis);
    double big = rmag(x), small = rmag_lo(x);
    if (!(eps >= 0) || !hg_range_bounded(x) || (eps == 0 && small == 0 && n < 0))
        return;
    /* 1 / n; an unknown n leaves only the m^2 bound */
    double inv_n = n > 0 ? 1.0 / (double)n : 0;
    double zb = 0, zmin = 0;
    if (big > 0) {
        double q = small / big;
        zb = 1 / sqrt(MAX(inv_n, q * q) + eps / (big * big));
        zmin = small / sqrt(big * big + eps);
    }
    double slack = ldexp(1, -24) * ((n >= 0 && n < 600 ? (double)n : 600) + 16);
    zb *= 1 + slack;
    zmin *= 1 - slack;
    HgRange z = rmake(x->lo > 0 ? zmin : -zb, x->hi < 0 ? -zmin : zb, 0, FALSE);
    HgRange r = hg_range_mul(z, *g);
    iv_slack(&r, 2 * ULP32 * rmag(&r));
    r.tiny = 0;
    /* inf / inf, 0 / 0 with eps = 0, NaN inputs, and a scale that may be infinite times 0 */
    r.nan = r.nan || x->nan || g->nan || (eps == 0 && small == 0);
    finish(&r, rout_dtype(ctx, 0));
    *y = r;
}

void
hg_range_LogSoftmax(HgRangeCtx *ctx)
{
    softmax_range(ctx, TRUE);
}

/* The losses: each position's -logp (SoftmaxCrossEntropyLoss: the log-softmax over C, whose bound
 * the second output takes; NegativeLogLikelihoodLoss: -input) times a weight, 0 where ignored. "none"
 * keeps those; "sum" adds count of them; "mean" is a weighted mean, inside their range when the
 * weights cannot be negative, and 0 / 0 when they can all be 0 (ignored positions, zero weights). */
static void
loss_range(HgRangeCtx *ctx, gboolean softmax)
{
    const HgRange *x = rin(ctx, 0), *w = rin(ctx, 2);
    const HgValueShape *xs = rshape(ctx, 0), *ts = rshape(ctx, 1);
    LossReduction red;
    if (!rnonempty(x) || (w && !rnonempty(w)) || !loss_reduction(ctx->node, &red, NULL))
        return;
    gboolean has_ii = ctx->node && hg_node_attr(ctx->node, "ignore_index") != NULL;
    HgRange e;
    if (softmax) {
        gint64 nc = xs && xs->rank >= 2 ? xs->dims[1].v : -1;
        HgRange lp = softmax_bound(x, nc, TRUE);
        HgRange *lpo = rout(ctx, 1);
        if (lpo) {
            HgRange f = lp;
            finish(&f, rout_dtype(ctx, 1));
            *lpo = f;
        }
        e = hg_range_neg(lp);
    } else {
        e = hg_range_neg(*x);
    }
    HgRange *y = rout(ctx, 0);
    if (!y)
        return;
    HgRange term = w ? hg_range_mul(e, *w) : e;
    if (has_ii)
        term = hg_range_union(term, rmake(0, 0, 0, FALSE));
    HgRange r;
    if (red == LOSS_NONE) {
        r = term;
    } else if (red == LOSS_SUM) {
        gint64 cnt = ts ? hg_vshape_numel(ts) : -1;
        if (cnt < 0)
            return;
        r = hg_range_mul(term, rmake((double)cnt, (double)cnt, 0, FALSE));
        /* FP64 sums of up to cnt terms */
        iv_slack(&r, (double)cnt * 0x1p-52 * rmag(&r));
    } else {
        if (w && w->lo < 0)
            return;
        r = e;
        r.nan = r.nan || has_ii || (w && (w->lo <= 0 || w->nan));
    }
    r.tiny = 0;
    finish(&r, rout_dtype(ctx, 0));
    *y = r;
}

void
hg_range_NegativeLogLikelihoodLoss(HgRangeCtx *ctx)
{
    loss_range(ctx, FALSE);
}

void
hg_range_SoftmaxCrossEntropyLoss(HgRangeCtx *ctx)
{
    loss_range(ctx, TRUE);
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

void
hg_range_Softmax(HgRangeCtx *ctx)
{
    softmax_range(ctx, FALSE);
}

/* Values are elements of the input; indices lie along the axis. */
void
hg_range_TopK(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0);
    HgRange *vals = rout(ctx, 0);
    if (vals && rnonempty(x))
        *vals = *x;
    index_range(ctx, 1, -1);
}
