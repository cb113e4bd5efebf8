/* The signal family: DFT (opsets 17 and 20), with its interval rule.
 *
 * X is [signal dims..., 1] (real) or [signal dims..., 2] (complex: real, imaginary); the transform
 * runs along one signal axis and Y is [..., 2]. Opset 17 names the axis by an attribute (default 1),
 * opset 20 by an optional third input (default -2); both accept [-r, -2] and [0, r - 2], r the rank
 * of X. dft_length (input 1) zero-pads or truncates the axis to n; onesided keeps frequencies
 * [0, floor(n / 2)]; inverse uses e^{+2 pi i jk / n} and divides by n.
 *
 * The kernel is a direct DFT: each output is a sum of min(len, n) products, in FP64 with exact
 * twiddles from a table indexed by jk mod n, rounded once to the output type (float, double,
 * float16, bfloat16). O(n^2) per line, which the lengths exporters write (a hidden size, a sequence)
 * afford.
 *
 * onesided with a complex input is an error, as ONNX's shape inference (and so ONNX Runtime) has it:
 * the real-input symmetry it rests on does not hold. onesided with inverse is not supported
 * (HG_ERROR_UNSUPPORTED): ONNX Runtime 1.30 reads it as a Hermitian half in and a real signal out
 * ([..., n, 1], an inverse real FFT), onnx's reference implementation as the first half of a full
 * inverse; no exporter writes it.
 */
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/tensor.h"
#include "halfguard/check.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

typedef struct {
    int axis;       /* normalized, < rank - 1; -1 unknown */
    gint64 len;     /* X's dim along the axis, -1 unknown */
    gint64 n;       /* the DFT length (dft_length, else len), -1 unknown */
    gint64 out_len; /* Y's dim along the axis, -1 unknown */
    int comps;      /* X's last dim: 1 real, 2 complex, -1 unknown */
    gboolean inverse, onesided;
} DftPlan;

/* The plan from X's shape, the attributes and the constant inputs; y gets Y's shape as far as
 * known. */
static int
dft_plan(const HgArgs *a, DftPlan *p, HgSymShape *y)
{
    HgSymShape x;
    hg_arg_shape(a, 0, &x);
    memset(p, 0, sizeof(*p));
    p->axis = -1;
    p->len = p->n = p->out_len = -1;
    p->comps = -1;
    p->inverse = hg_node_attr_int(a->node, "inverse", 0) != 0;
    p->onesided = hg_node_attr_int(a->node, "onesided", 0) != 0;
    y->rank = -1;
    int st = PLAN_OK;

    /* the axis: an attribute before opset 20, an input from it */
    gint64 axis = 1;
    gboolean axis_known = TRUE;
    if (a->opset >= 20) {
        g_autofree gint64 *v = NULL;
        guint nv;
        HgPState ps = hg_arg_ints(a, 2, NULL, &v, &nv);
        axis = -2;
        if (ps == P_UNKNOWN)
            axis_known = FALSE;
        else if (ps == P_KNOWN && nv != 1)
            return INVALID(a, "axis must hold one value"), PLAN_ERR;
        else if (ps == P_KNOWN)
            axis = v[0];
    } else {
        axis = hg_node_attr_int(a->node, "axis", 1);
    }

    /* dft_length */
    gint64 n = -1;
    {
        g_autofree gint64 *v = NULL;
        guint nv;
        HgPState ps = hg_arg_ints(a, 1, NULL, &v, &nv);
        if (ps == P_KNOWN) {
            if (nv != 1)
                return INVALID(a, "dft_length must hold one value"), PLAN_ERR;
            if (v[0] < 1)
                return INVALID(a, "dft_length %" G_GINT64_FORMAT " is below 1", v[0]), PLAN_ERR;
            n = v[0];
        } else if (ps == P_UNKNOWN) {
            st = PLAN_UNKNOWN;
        }
    }
    gboolean has_length = hg_arg_present(a, 1);

    if (x.rank < 0)
        return PLAN_UNKNOWN;
    if (x.rank < 2)
        return INVALID(a, "input has rank %d, needs at least 2", x.rank), PLAN_ERR;
    int r = x.rank;
    if (x.d[r - 1].v >= 0) {
        if (x.d[r - 1].v != 1 && x.d[r - 1].v != 2)
            return INVALID(a, "the last dim is %" G_GINT64_FORMAT ", must be 1 (real) or 2 (complex)",
                           x.d[r - 1].v), PLAN_ERR;
        p->comps = (int)x.d[r - 1].v;
    } else {
        st = PLAN_UNKNOWN;
    }
    if (p->onesided && p->inverse)
        return UNSUPPORTED(a, "onesided with inverse"), PLAN_ERR;
    if (p->onesided && p->comps == 2)
        return INVALID(a, "onesided needs a real input (last dim 1)"), PLAN_ERR;

    *y = x;
    y->d[r - 1] = hg_dim_known(2);
    if (!axis_known) {
        /* the axis is not known: so is not which dim changes, unless none does */
        if (has_length || p->onesided)
            for (int i = 0; i < r - 1; i++)
                y->d[i] = hg_dim_unknown();
        return PLAN_UNKNOWN;
    }
    if (axis < -r || axis > r - 2 || axis == -1)
        return INVALID(a, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, r), PLAN_ERR;
    p->axis = (int)(axis < 0 ? axis + r : axis);
    p->len = x.d[p->axis].v;
    p->n = has_length ? n : p->len;
    if (p->n >= 0)
        p->out_len = p->onesided ? p->n / 2 + 1 : p->n;
    if (p->out_len >= 0)
        y->d[p->axis] = hg_dim_known(p->out_len);
    else if (has_length || p->onesided)
        y->d[p->axis] = hg_dim_unknown();
    if (p->len < 0 || p->n < 0)
        st = PLAN_UNKNOWN;
    return st;
}

gboolean
hg_infer_DFT(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    GError *err = NULL;
    a.error = &err;
    DftPlan p;
    HgSymShape y;
    int st = dft_plan(&a, &p, &y);
    if (st == PLAN_ERR) {
        if (err && err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_clear_error(&err);
        HgSymShape unknown = {.rank = -1};
        hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &unknown);
        return TRUE;
    }
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return TRUE;
}

gboolean
hg_eval_DFT(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    if (!hg_dtype_is_float(x->dtype) || hg_dtype_compute(x->dtype) == HG_COMPUTE_NONE)
        return hg_eval_unsupported(ctx, x->dtype);
    DftPlan p;
    HgSymShape ys;
    int st = dft_plan(&a, &p, &ys);
    if (st == PLAN_ERR || !hg_plan_done(&a, st))
        return FALSE;
    gint64 dims[HG_MAX_RANK];
    hg_sym_dims(&ys, dims);
    g_autoptr(HgArray) out = hg_eval_new_output(ctx, x->dtype, (guint)ys.rank, dims);
    if (!out)
        return FALSE;
    gint64 outer = 1, inner = 1;
    for (int i = 0; i < p.axis; i++)
        outer *= x->dims[i];
    for (guint i = (guint)p.axis + 1; i + 1 < x->rank; i++)
        inner *= x->dims[i];
    gint64 n = p.n, m = MIN(p.len, p.n), c = p.comps;
    gboolean owned;
    double *xv = hg_array_load_f64(x, &owned);
    double *yv = g_new0(double, MAX(out->numel, 1));
    /* cos and sin of 2 pi t / n for t in [0, n): jk mod n indexes them, so every twiddle is as
     * exact as one libm call */
    double *tc = g_new(double, n), *ts = g_new(double, n);
    double sign = p.inverse ? 1 : -1, scale = p.inverse ? 1.0 / (double)n : 1;
    for (gint64 t = 0; t < n; t++) {
        tc[t] = cos(2 * G_PI * (double)t / (double)n);
        ts[t] = sign * sin(2 * G_PI * (double)t / (double)n);
    }
    for (gint64 o = 0; o < outer; o++) {
        for (gint64 i = 0; i < inner; i++) {
            const double *xl = xv + (o * p.len * inner + i) * c;
            double *yl = yv + (o * p.out_len * inner + i) * 2;
            for (gint64 k = 0; k < p.out_len; k++) {
                double re = 0, im = 0;
                gint64 t = 0; /* j * k mod n */
                for (gint64 j = 0; j < m; j++) {
                    double xr = xl[j * inner * c], xi = c == 2 ? xl[j * inner * c + 1] : 0;
                    /* (xr + i xi)(cos + i sin) */
                    re += xr * tc[t] - xi * ts[t];
                    im += xr * ts[t] + xi * tc[t];
                    t += k % n;
                    if (t >= n)
                        t -= n;
                }
                yl[k * inner * 2] = re * scale;
                yl[k * inner * 2 + 1] = im * scale;
            }
        }
    }
    hg_array_store_f64(out, yv);
    g_free(tc);
    g_free(ts);
    g_free(yv);
    if (owned)
        g_free(xv);
    ctx->outputs[0] = g_steal_pointer(&out);
    return TRUE;
}

/* Multiply-accumulates of the direct DFT: per output pair, min(len, n) complex products (2 real ones
 * for a real input, 4 for a complex one). */
gint64
hg_cost_DFT(const HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    GError *err = NULL;
    a.error = &err;
    DftPlan p;
    HgSymShape y;
    int st = dft_plan(&a, &p, &y);
    g_clear_error(&err);
    if (st != PLAN_OK || !hg_sym_known(&y))
        return -1;
    gint64 numel = 1;
    for (int i = 0; i < y.rank; i++)
        numel *= y.d[i].v;
    return numel * MIN(p.len, p.n) * p.comps;
}

/* Each output is (1 / n for inverse) times a sum over the m = min(len, n) kept input positions j of
 * (re_j + i im_j)(cos t_j + i sin t_j): its real part re_j cos - im_j sin, its imaginary part
 * re_j sin + im_j cos, each at most sqrt(re_j^2 + im_j^2) in magnitude (Cauchy-Schwarz, as cos^2 +
 * sin^2 = 1), so at most M for a real input and sqrt(2) M for a complex one, M = max |x| over X's
 * range (re and im share it). A forward output is then at most m M (times sqrt(2)); an inverse one
 * m / n <= 1 times that, whatever n. m is X's dim along the axis or dft_length, the smaller where both
 * are known; a symbolic dim counts at its --dim-max (reported), else a forward bound is unbounded; an
 * axis not known (an opset 20 axis input computed at run time) counts the longest signal dim.
 * hg_range_set_linear adds the rounding of an m-term sum of partial sums within the bound (a
 * runtime's FP32 or FFT accumulation) and of the stored type; the sign of the terms varies with the
 * twiddles, so the bound is symmetric. */
void
hg_range_DFT(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    if (!x || !ctx->n_outputs || !ctx->outputs[0] || !hg_range_nonempty(x))
        return;
    HgValueShape *shapes = NULL;
    HgArgs a = hg_args_range(ctx, &shapes);
    GError *err = NULL;
    a.error = &err;
    DftPlan p;
    HgSymShape y;
    int st = dft_plan(&a, &p, &y);
    hg_args_range_free(&a, shapes);
    g_clear_error(&err);
    if (st == PLAN_ERR)
        return;
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    gint64 m = p.n; /* dft_length when known; the axis dim narrows it below */
    if (p.axis >= 0) {
        gint64 len = p.len;
        if (len < 0 && xs && hg_dim_max_lookup(ctx->dim_max, xs->dims[p.axis].sym, -1) > 0)
            len = hg_range_len_bound(ctx, xs, p.axis, p.axis + 1);
        if (len >= 0)
            m = m >= 0 ? MIN(m, len) : len;
    } else if (xs && xs->rank >= 2) {
        gint64 longest = 0;
        for (int i = 0; i < xs->rank - 1 && longest >= 0; i++)
            longest = xs->dims[i].v < 0 ? -1 : MAX(longest, xs->dims[i].v);
        if (longest >= 0)
            m = m >= 0 ? MIN(m, longest) : longest;
    }
    double per = hg_range_mag(x) * (p.comps == 1 ? 1 : G_SQRT2);
    gint64 k = m;
    if (k < 0 && p.inverse)
        k = xs && p.axis >= 0 ? hg_range_len_bound(ctx, xs, p.axis, p.axis + 1) : HG_ASSUMED_LEN;
    double bound = p.inverse ? per : m >= 0 ? hg_bound_mul((double)m, per) : INFINITY;
    gboolean nan = x->nan || !hg_range_bounded(x);
    if (k < 0) {
        *ctx->outputs[0] = hg_range_make(-INFINITY, INFINITY, 0, nan);
        return;
    }
    hg_range_set_linear(ctx, -bound, bound, bound, k, nan);
}
