/* The softmax family: Softmax and LogSoftmax, and the losses built on them (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), with their interval rules. */
#include "ops/reduce.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    *outer = hg_dims_prod(dims, 0, (guint)axis);
    *n = old ? hg_dims_prod(dims, (guint)axis, rank) : dims[axis];
    *inner = old ? 1 : hg_dims_prod(dims, (guint)axis + 1, rank);
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

DEFINE_SOFTMAX(f32, float, expf, logf, hg_max_f32)
DEFINE_SOFTMAX(f64, double, exp, log, max_f64)

/* One contiguous FP32 row (the last axis of attention scores and logits) with the vectorized exp;
 * y may be x. */
static void
softmax_row_f32(const float *x, float *y, gint64 n, gboolean lg)
{
    if (n == 0)
        return;
    float m = hg_max_f32(x, n);
    if (lg) {
        float s = hg_sum_exp_f32(x, NULL, n, m);
        hg_scale_shift_f32(x, y, n, 1, -(m + logf(s)));
    } else {
        float s = hg_sum_exp_f32(x, y, n, m);
        hg_scale_shift_f32(y, y, n, 1 / s, 0);
    }
}

static gboolean
softmax_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    if (x && x->rank >= 0 &&
        !softmax_layout(ctx->node, ctx->opset, (guint)x->rank, NULL, NULL, NULL, NULL, ctx->error))
        return FALSE;
    return hg_infer_same_shape(ctx, eval);
}

static gboolean
softmax_eval(HgEvalCtx *ctx, gboolean lg)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "input");
    if (!x || !hg_eval_need_outputs(ctx, 1))
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
        g_autofree float *scratch = hg_row_scratch(x, n);
        for (gint64 o = 0; o < outer; o++) {
            const float *xr = hg_row_get(x, o * n, n, scratch);
            softmax_row_f32(xr, hg_row_out(y, o * n, scratch), n, lg);
            hg_row_put(y, o * n, n, scratch);
        }
    } else {
        /* FP16 runs in place in its FP32 copy */
        g_auto(HgKBuf) xb = hg_kbuf_load(x, k);
        HgKBuf yb = hg_kbuf_reuse(&xb, y, k);
        HG_KIND_CALL_FLOAT(k, softmax, xb.p, yb.p, outer, n, inner, lg);
        hg_kbuf_store(y, &yb, k);
    }
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
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
    return hg_cost_per_element(ctx, 2);
}

gint64
hg_cost_LogSoftmax(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 2);
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
    HgValueShape *y = hg_shape_wanted(ctx, 0), *lp = softmax ? hg_shape_wanted(ctx, 1) : NULL;
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
        hg_vshape_like(lp, x, x->dtype);
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
    HgArray *x = hg_eval_need_input(ctx, 0, "input"), *t = x ? hg_eval_need_input(ctx, 1, "target") : NULL;
    HgKind c;
    LossReduction red;
    if (!t || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, x, &c) || !loss_reduction(ctx->node, &red, ctx->error))
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
    gint64 n = x->dims[0], nc = x->dims[1], d = hg_dims_prod(x->dims, 2, x->rank);
    if (w && (!hg_eval_need_input(ctx, 2, "weight") || w->numel != nc)) {
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
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    if (softmax && hg_eval_wants(ctx, 1)) {
        HgArray *l = hg_array_new_like(x->dtype, x, ctx->error);
        if (!l)
            return FALSE;
        hg_array_store_f64(l, lp);
        hg_eval_set_output(ctx, 1, l);
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
    return hg_cost_per_element(ctx, 2);
}

/* ---------------------------------------------------------------- interval rules */

/* Length of the lines a (Log)Softmax normalizes, -1 when unknown (see softmax_layout). */
static gint64
softmax_len(const HgRangeCtx *ctx)
{
    const HgValueShape *xs = hg_range_shape(ctx, 0);
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
    HgRange r = lg ? hg_range_make(-INFINITY, 0, 0, nan) : hg_range_make(0, 1, 0, nan);
    if (bounded && n >= 1) {
        /* x - max is rounded to the ulp of |x|; the sum of n exps adds n roundings */
        double w = x->hi - x->lo + 4 * HG_ULP32 * hg_range_mag(x);
        double m1 = (double)(n - 1), rel = ((double)n + 8) * HG_ULP32;
        if (lg) {
            /* log(1 + m1 e^w) = w + log(m1 + e^-w), which does not overflow */
            double ylo = m1 > 0 ? -(w + log(m1 + exp(-w))) : 0, yhi = -log1p(m1 * exp(-w));
            r.lo = ylo - rel - 4 * HG_ULP32 * (hg_range_mag(x) - ylo);
            r.hi = MIN(0, yhi + rel + 4 * HG_ULP32 * (hg_range_mag(x) - ylo));
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
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *y = hg_range_output(ctx, 0);
    if (!y || !hg_range_nonempty(x))
        return;
    HgRange r = softmax_bound(x, softmax_len(ctx), lg);
    hg_range_finish(&r, hg_range_output_dtype(ctx, 0));
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
    const HgRange *x = hg_range_input(ctx, 0), *w = hg_range_input(ctx, 2);
    const HgValueShape *xs = hg_range_shape(ctx, 0), *ts = hg_range_shape(ctx, 1);
    LossReduction red;
    if (!hg_range_nonempty(x) || (w && !hg_range_nonempty(w)) || !loss_reduction(ctx->node, &red, NULL))
        return;
    gboolean has_ii = ctx->node && hg_node_attr(ctx->node, "ignore_index") != NULL;
    HgRange e;
    if (softmax) {
        gint64 nc = xs && xs->rank >= 2 ? xs->dims[1].v : -1;
        HgRange lp = softmax_bound(x, nc, TRUE);
        HgRange *lpo = hg_range_output(ctx, 1);
        if (lpo) {
            HgRange f = lp;
            hg_range_finish(&f, hg_range_output_dtype(ctx, 1));
            *lpo = f;
        }
        e = hg_range_neg(lp);
    } else {
        e = hg_range_neg(*x);
    }
    HgRange *y = hg_range_output(ctx, 0);
    if (!y)
        return;
    HgRange term = w ? hg_range_mul(e, *w) : e;
    if (has_ii)
        term = hg_range_union(term, hg_range_make(0, 0, 0, FALSE));
    HgRange r;
    if (red == LOSS_NONE) {
        r = term;
    } else if (red == LOSS_SUM) {
        gint64 cnt = ts ? hg_vshape_numel(ts) : -1;
        if (cnt < 0)
            return;
        r = hg_range_mul(term, hg_range_make((double)cnt, (double)cnt, 0, FALSE));
        /* FP64 sums of up to cnt terms */
        hg_range_slack(&r, (double)cnt * 0x1p-52 * hg_range_mag(&r));
    } else {
        if (w && w->lo < 0)
            return;
        r = e;
        r.nan = r.nan || has_ii || (w && (w->lo <= 0 || w->nan));
    }
    r.tiny = 0;
    hg_range_finish(&r, hg_range_output_dtype(ctx, 0));
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
hg_range_Softmax(HgRangeCtx *ctx)
{
    softmax_range(ctx, FALSE);
}
