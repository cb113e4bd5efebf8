/* The reduction families (internal): reductions and CumSum (reduce.c), ArgMax, ArgMin and TopK
 * (order.c), the softmaxes and their losses (softmax.c), the normalizations (norm.c), and what they
 * share: helpers defined in reduce.c, FP32 rows in rows.c.
 */
#ifndef HG_OPS_REDUCE_H
#define HG_OPS_REDUCE_H

#include "ops/kernel.h"

#include <string.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------- kernels' helpers */

/* Output k's shape record, or NULL when the node omits that output. */
HgValueShape *hg_shape_wanted(HgShapeCtx *ctx, guint k);

/* The dims of a tensor (rank, dims) reduced over the axes in mask: removed, or kept as 1 with keep;
 * returns the rank. */
guint hg_reduced_dims(guint rank, const gint64 *dims, const gboolean *mask, gboolean keep, gint64 *out);
/* The shape rule of a reduction of x over the axes in mask: y takes x's other dims (names kept), the
 * reduced ones as 1 with keep, then the node folds with eval. */
void hg_infer_reduced(HgShapeCtx *ctx, const HgValueShape *x, HgValueShape *y, const gboolean *mask, gboolean keep,
                      HgEvalFunc eval);

/* dst takes src's rank and dims, and dtype. */
void hg_vshape_like(HgValueShape *dst, const HgValueShape *src, int dtype);

/* Shape inference for ops whose one output has input 0's shape and type; folds with eval. */
gboolean hg_infer_same_shape(HgShapeCtx *ctx, HgEvalFunc eval);

/* Store a (owned) as output k. */
void hg_eval_set_output(HgEvalCtx *ctx, guint k, HgArray *a);

/* Input i, which must be present and hold numbers of a type the kernels compute in. */
HgArray *hg_eval_need_input(HgEvalCtx *ctx, guint i, const char *what);

/* At least n output slots; else HG_ERROR_INVALID. */
gboolean hg_eval_need_outputs(HgEvalCtx *ctx, guint n);

/* The normalizations compute in FP32 for float, FP16 and BF16 and in FP64 for double. */
gboolean hg_eval_need_float(HgEvalCtx *ctx, const HgArray *x, HgKind *c);

/* Product of dims [from, to); 1 when the range is empty. */
gint64 hg_dims_prod(const gint64 *dims, guint from, guint to);

/* The input of a cost function, as a known element count or -1. */
gint64 hg_shape_input_numel(const HgShapeCtx *ctx, guint i);

/* per_element multiply-adds per element of input 0; -1 when its size is unknown. */
gint64 hg_cost_per_element(const HgShapeCtx *ctx, gint64 per_element);

/* UINT64 values compare like int64 once the sign bit is flipped; flipping again restores them. The
 * order-based kernels (ReduceMax/Min, ArgMax/Min, TopK) run on flipped copies. */
void hg_flip_sign(gint64 *v, gint64 n);

/* x in its kind for an order-based kernel (uint64 as int64): a uint64 array as a copy with the sign
 * bits flipped (flip the results back where they are values). */
HgKBuf hg_kbuf_load_ordered(const HgArray *x);

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

/* ---------------------------------------------------------------- FP32 rows (rows.c) */

/* Row streaming for F32 kernels over a float array x and its like-typed output y: FLOAT rows are
 * used in place; other rows are converted into scratch (n + 1 floats, NULL for FLOAT) and the kernel
 * writes its result over them, which row_put then stores. */
float *hg_row_scratch(const HgArray *x, gint64 n);

/* Elements [off, off + n) of x as FP32, and where the kernel writes the same row of y. */
const float *hg_row_get(const HgArray *x, gint64 off, gint64 n, float *scratch);
float *hg_row_out(HgArray *y, gint64 off, float *scratch);
/* Store the row written into scratch (nothing for FLOAT, written in place). */
void hg_row_put(HgArray *y, gint64 off, gint64 n, float *scratch);

/* Sums of x[0, n) and of (x - m)^2, in blocks of FP32 lanes summed in double (FP64 with four lanes
 * for double data). */
double hg_sum_f32(const float *x, gint64 n);
double hg_sumsq_dev_f32(const float *x, gint64 n, float m);
double hg_sum_f64(const double *x, gint64 n);
double hg_sumsq_dev_f64(const double *x, gint64 n, double m);

/* Largest of n > 0 floats; NaN wins (as numpy's max). */
float hg_max_f32(const float *x, gint64 n);

/* Fill y[j] = exp(x[j] - m) (when y) and return their sum; x - m <= 0 for the max m. */
float hg_sum_exp_f32(const float *x, float *y, gint64 n, float m);

/* y[j] = x[j] * a + b (y may be x) */
void hg_scale_shift_f32(const float *x, float *y, gint64 n, float a, float b);

/* y[j] = (x[j] - m) * a + b (y may be x): normalization with known statistics, the mean taken off
 * first so that a large mean does not cancel the digits of x */
void hg_center_scale_f32(const float *x, float *y, gint64 n, float m, float a, float b);

/* ---------------------------------------------------------------- interval rules' helpers */

/* FP32's unit in the last place, relative. */
#define HG_ULP32 (1.0 / 8388608.0) /* 2^-23 */

/* Input i's shape and constant value, NULL when the input is omitted (or has no value); output k's
 * range to fill and its element type. */
const HgValueShape *hg_range_shape(const HgRangeCtx *ctx, guint i);
const HgArray *hg_range_value(const HgRangeCtx *ctx, guint i);
HgRange *hg_range_output(const HgRangeCtx *ctx, guint k);
int hg_range_output_dtype(const HgRangeCtx *ctx, guint k);

/* Whether r holds at least one number. */
gboolean hg_range_nonempty(const HgRange *r);

/* Largest |x| over r. */
double hg_range_mag(const HgRange *r);

/* Smallest |x| over r (0 when r straddles 0). */
double hg_range_mag_lo(const HgRange *r);

HgRange hg_range_make(double lo, double hi, double tiny, gboolean nan);
/* The range of the one value c. */
HgRange hg_range_const(double c);

/* Widen finite bounds outward by slack (an absolute rounding allowance). */
void hg_range_slack(HgRange *r, double slack);

/* Fit r to the output type: values past the type's largest finite value overflow to inf; FP16 and
 * BF16 outputs are rounded once on store (half an ulp, relative); a tiny below the smallest normal
 * is dropped, since rounding to a denormal loses relative precision. An unknown type is taken as
 * FP16, the narrowest. Integer types are left alone (the rules check wrapping themselves). */
void hg_range_finish(HgRange *r, int dtype);

/* A known dim of an input's shape, -1 when unknown. */
gint64 hg_shape_dim(const HgValueShape *s, gint64 axis);

G_END_DECLS

#endif
