/* The norm family: BatchNormalization, InstanceNormalization, LayerNormalization and
 * RMSNormalization, with their interval rules. Statistics accumulate in FP32 (FP64 for double) and
 * the output rounds once. */
#include "ops/reduce.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- normalizations */

/* A parameter input that must hold exactly n numbers. */
static HgArray *
need_param(HgEvalCtx *ctx, guint i, const char *what, gint64 n)
{
    HgArray *p = hg_eval_need_input(ctx, i, what);
    if (p && p->numel != n) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "%s has %" G_GINT64_FORMAT " elements, expected %" G_GINT64_FORMAT, what, p->numel, n);
        return NULL;
    }
    return p;
}

/* The normalizations compute in FP32 for float, FP16 and BF16 and in FP64 for double. */
gboolean
hg_eval_need_float(HgEvalCtx *ctx, const HgArray *x, HgKind *c)
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
    float mean = n ? (float)(hg_sum_f32(x, n) / (double)n) : 0;
    float var = n ? (float)(hg_sumsq_dev_f32(x, n, mean) / (double)n) : 0;
    float inv = 1.0f / sqrtf(var + eps);
    *mean_out = mean;
    *inv_out = inv;
    if (!per_elem) {
        hg_center_scale_f32(x, y, n, mean, inv * g[0], b[0]);
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
    double mean = n ? hg_sum_f64(x, n) / (double)n : 0;
    double var = n ? hg_sumsq_dev_f64(x, n, mean) / (double)n : 0;
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
    gint64 rest = x->rank >= 2 ? hg_dims_prod(x->dims, 2, x->rank) : 1;
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
        HgValueShape *s = hg_shape_wanted(ctx, k);
        if (!s)
            continue;
        s->dtype = mean ? mean->dtype : x->dtype;
        if (x->rank >= 2) {
            s->rank = 1;
            s->dims[0] = x->dims[1];
        }
    }
    return hg_infer_same_shape(ctx, hg_eval_BatchNormalization);
}

/* Training mode (ONNX's formulas): each channel's statistics over the batch and spatial dims, the
 * population variance, y = (x - mean) / sqrt(var + eps) * scale + B, and the running statistics
 * updated by momentum (default 0.9): input * momentum + current * (1 - momentum). What exports write
 * it for is timm's weight-standardized convs (F.batch_norm over a conv's own weights, training=True),
 * constants that fold_shapes then computes once. Sums in FP64. The saved statistics of opsets before
 * 14 (outputs 3 and 4), whose meaning the versions do not agree on, are refused. */
static gboolean
bn_eval_training(HgEvalCtx *ctx, HgArray *x, gint64 outer, gint64 np, gint64 inner)
{
    if (hg_eval_wants(ctx, 3) || hg_eval_wants(ctx, 4)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "training mode's saved statistics (outputs 4 and 5)");
        return FALSE;
    }
    HgArray *sc = need_param(ctx, 1, "scale", np), *bi = sc ? need_param(ctx, 2, "B", np) : NULL;
    HgArray *rm = bi ? need_param(ctx, 3, "input_mean", np) : NULL, *rv = rm ? need_param(ctx, 4, "input_var", np) : NULL;
    if (!rv)
        return FALSE;
    double eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    double momentum = hg_node_attr_float(ctx->node, "momentum", 0.9f);
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    g_autoptr(HgArray) om = y ? hg_array_new_like(rm->dtype, rm, ctx->error) : NULL;
    g_autoptr(HgArray) ov = om ? hg_array_new_like(rv->dtype, rv, ctx->error) : NULL;
    if (!ov)
        return FALSE;
    gboolean owned;
    double *xd = hg_array_load_f64(x, &owned);
    g_autofree double *yd = g_new(double, x->numel + 1), *md = g_new(double, np + 1), *vd = g_new(double, np + 1);
    double count = (double)outer * (double)inner;
    for (gint64 p = 0; p < np; p++) {
        double sum = 0, ss = 0;
        for (gint64 o = 0; o < outer; o++)
            for (gint64 i = 0; i < inner; i++)
                sum += xd[(o * np + p) * inner + i];
        double mean = count > 0 ? sum / count : NAN;
        for (gint64 o = 0; o < outer; o++)
            for (gint64 i = 0; i < inner; i++) {
                double d = xd[(o * np + p) * inner + i] - mean;
                ss += d * d;
            }
        double var = count > 0 ? ss / count : NAN;
        double a = hg_array_get_f64(sc, p) / sqrt(var + eps), b = hg_array_get_f64(bi, p);
        for (gint64 o = 0; o < outer; o++)
            for (gint64 i = 0; i < inner; i++) {
                gint64 k = (o * np + p) * inner + i;
                yd[k] = (xd[k] - mean) * a + b;
            }
        md[p] = hg_array_get_f64(rm, p) * momentum + mean * (1 - momentum);
        vd[p] = hg_array_get_f64(rv, p) * momentum + var * (1 - momentum);
    }
    if (owned)
        g_free(xd);
    hg_array_store_f64(y, yd);
    hg_array_store_f64(om, md);
    hg_array_store_f64(ov, vd);
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    if (hg_eval_wants(ctx, 1))
        hg_eval_set_output(ctx, 1, g_steal_pointer(&om));
    if (hg_eval_wants(ctx, 2))
        hg_eval_set_output(ctx, 2, g_steal_pointer(&ov));
    return TRUE;
}

/* Inference with the running statistics: y = (x - mean) * a + B with a = scale / sqrt(var + eps) per
 * parameter, streamed one sample ([np, inner]) at a time. */
gboolean
hg_eval_BatchNormalization(HgEvalCtx *ctx)
{
    if (ctx->node && bn_training(ctx->node, ctx->opset)) {
        HgArray *xt = hg_eval_need_input(ctx, 0, "X");
        HgKind kt;
        if (!xt || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, xt, &kt))
            return FALSE;
        gint64 outer, np, inner;
        bn_layout(ctx->node, ctx->opset, xt, &outer, &np, &inner);
        return bn_eval_training(ctx, xt, outer, np, inner);
    }
    HgArray *x = hg_eval_need_input(ctx, 0, "X");
    HgKind c;
    if (!x || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, x, &c))
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
        g_autofree float *scratch = hg_row_scratch(x, sample);
        for (gint64 o = 0; o < outer; o++) {
            const float *xs = hg_row_get(x, o * sample, sample, scratch);
            float *ys = hg_row_out(y, o * sample, scratch);
            if (inner == 1) {
                for (gint64 p = 0; p < np; p++)
                    ys[p] = (xs[p] - m[p]) * a[p] + b[p];
            } else {
                for (gint64 p = 0; p < np; p++)
                    hg_center_scale_f32(xs + p * inner, ys + p * inner, inner, m[p], a[p], b[p]);
            }
            hg_row_put(y, o * sample, sample, scratch);
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
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    /* opset 6 with is_test=1: the running statistics pass through unchanged */
    if (hg_eval_wants(ctx, 1))
        hg_eval_set_output(ctx, 1, hg_array_copy(mean));
    if (hg_eval_wants(ctx, 2))
        hg_eval_set_output(ctx, 2, hg_array_copy(var));
    return TRUE;
}

gint64
hg_cost_BatchNormalization(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 1);
}

gboolean
hg_infer_InstanceNormalization(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    if (x && x->rank >= 0 && x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must have rank 2 or more, has %d", x->rank);
        return FALSE;
    }
    return hg_infer_same_shape(ctx, hg_eval_InstanceNormalization);
}

/* Each (sample, channel) plane is normalized with its own mean and variance, then scaled and
 * shifted by the channel's scale and B. */
gboolean
hg_eval_InstanceNormalization(HgEvalCtx *ctx)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "input");
    HgKind c;
    if (!x || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, x, &c))
        return FALSE;
    if (x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must have rank 2 or more, has %u", x->rank);
        return FALSE;
    }
    gint64 ch = x->dims[1], planes = x->dims[0] * ch, n = hg_dims_prod(x->dims, 2, x->rank);
    HgArray *sc = need_param(ctx, 1, "scale", ch), *bi = sc ? need_param(ctx, 2, "B", ch) : NULL;
    if (!bi)
        return FALSE;
    float eps = hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    g_autoptr(HgArray) y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    if (c == HG_KIND_F32) {
        g_autofree float *scratch = hg_row_scratch(x, n);
        for (gint64 r = 0; r < planes; r++) {
            float g = (float)hg_array_get_f64(sc, r % ch), b = (float)hg_array_get_f64(bi, r % ch), m, inv;
            const float *xr = hg_row_get(x, r * n, n, scratch);
            norm_row_f32(xr, hg_row_out(y, r * n, scratch), n, eps, &g, &b, FALSE, &m, &inv);
            hg_row_put(y, r * n, n, scratch);
        }
    } else {
        for (gint64 r = 0; r < planes; r++) {
            double g = hg_array_get_f64(sc, r % ch), b = hg_array_get_f64(bi, r % ch), m, inv;
            norm_row_f64((const double *)x->data + r * n, (double *)y->data + r * n, n, eps, &g, &b, FALSE, &m, &inv);
        }
    }
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_InstanceNormalization(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 3);
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
        HgValueShape *s = hg_shape_wanted(ctx, k);
        if (!s)
            continue;
        s->dtype = stash;
        if (x->rank < 0)
            continue;
        hg_vshape_like(s, x, stash);
        for (int i = (int)axis; i < x->rank; i++) {
            s->dims[i].v = 1;
            s->dims[i].sym = NULL;
        }
    }
    if (!hg_infer_same_shape(ctx, hg_eval_LayerNormalization))
        return FALSE;
    /* Y has X's shape, and Scale and B broadcast to it: a normalized dim X leaves unknown is Scale's
     * or B's where theirs is known and not 1 (MobileViT's [B * P, N, -1] rows before a LayerNorm of
     * 32 channels). */
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    for (guint k = 1; y && y->rank >= 0 && k < 3 && k < ctx->n_inputs; k++) {
        const HgValueShape *p = ctx->inputs[k];
        if (!p || p->rank < 0 || p->rank > y->rank)
            continue;
        for (int i = 0; i < p->rank; i++) {
            int j = y->rank - p->rank + i;
            if (j >= (int)axis && y->dims[j].v < 0 && p->dims[i].v > 1)
                y->dims[j] = (HgSymDim){p->dims[i].v, NULL};
        }
    }
    /* Below opset 17 (ONNX Runtime's contrib op) Y takes Scale's type; see the kernel. */
    const HgValueShape *scale = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    if (ctx->opset < 17 && scale && scale->dtype != HG_DTYPE_UNDEFINED && hg_shape_wanted(ctx, 0))
        hg_shape_wanted(ctx, 0)->dtype = scale->dtype;
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
    HgArray *x = hg_eval_need_input(ctx, 0, "X"), *sc = x ? hg_eval_need_input(ctx, 1, "Scale") : NULL;
    HgKind c;
    if (!sc || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, x, &c))
        return FALSE;
    HgArray *bi = hg_eval_input(ctx, 2);
    if (bi && !hg_eval_need_input(ctx, 2, "B"))
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
    gint64 rows = hg_dims_prod(x->dims, 0, (guint)axis), n = hg_dims_prod(x->dims, (guint)axis, x->rank);
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
    if (hg_eval_wants(ctx, 1) && !(mean = hg_array_new(stash, x->rank, sdims, ctx->error)))
        return FALSE;
    if (hg_eval_wants(ctx, 2) && !(inv = hg_array_new(stash, x->rank, sdims, ctx->error)))
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
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    if (mean)
        hg_eval_set_output(ctx, 1, g_steal_pointer(&mean));
    if (inv)
        hg_eval_set_output(ctx, 2, g_steal_pointer(&inv));
    return TRUE;
}

gint64
hg_cost_LayerNormalization(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 3);
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
    if (!hg_infer_same_shape(ctx, hg_eval_RMSNormalization))
        return FALSE;
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (y && scale && scale->dtype != HG_DTYPE_UNDEFINED)
        y->dtype = scale->dtype;
    return TRUE;
}

/* One row: y = x * inv * g with inv = 1 / sqrt(mean(x^2) + eps), the mean in FP32 lanes (see
 * hg_sumsq_dev_f32: blocks of 4096 summed in double, so its relative error stays below 600 ulps however
 * long the row). y may be x. */
static void
rms_row_f32(const float *x, float *y, gint64 n, float eps, const float *g)
{
    float ms = n ? (float)(hg_sumsq_dev_f32(x, n, 0) / (double)n) : 0;
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
    double inv = 1 / sqrt((n ? hg_sumsq_dev_f64(x, n, 0) / (double)n : 0) + eps);
    for (gint64 j = 0; j < n; j++)
        y[j] = x[j] * inv * g[j];
}

/* Rows stream through FP32 scratch when X or Y is not FLOAT (Y has scale's type); stash_type DOUBLE,
 * or a double X, computes in FP64. */
gboolean
hg_eval_RMSNormalization(HgEvalCtx *ctx)
{
    HgArray *x = hg_eval_need_input(ctx, 0, "X"), *sc = x ? hg_eval_need_input(ctx, 1, "scale") : NULL;
    HgKind c;
    if (!sc || !hg_eval_need_outputs(ctx, 1) || !hg_eval_need_float(ctx, x, &c))
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
    gint64 rows = hg_dims_prod(x->dims, 0, (guint)axis), n = hg_dims_prod(x->dims, (guint)axis, x->rank);
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
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

gint64
hg_cost_RMSNormalization(const HgShapeCtx *ctx)
{
    return hg_cost_per_element(ctx, 2);
}

/* ---------------------------------------------------------------- interval rules */

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
        zb = MIN(zb, ((x->hi - x->lo) * (1 + 1.0 / 262144) + 4 * HG_ULP32 * hg_range_mag(x)) / (sqrt(eps) * (1 - HG_ULP32)));
    return zb;
}

/* y = z * g + b with |z| <= zb, g and b from inputs gi and bi (bi may be absent: 0). When both are
 * constants of the same size they are paired element by element (per_channel: one pair per
 * channel, as InstanceNormalization); else their ranges are combined. */
static gboolean
norm_affine(const HgRangeCtx *ctx, double zb, guint gi, guint bi, HgRange *out)
{
    const HgRange *g = hg_range_input(ctx, gi), *b = hg_range_input(ctx, bi);
    const HgArray *gv = hg_range_value(ctx, gi), *bv = hg_range_value(ctx, bi);
    if (!isfinite(zb) || !hg_range_nonempty(g) || (b && !hg_range_nonempty(b)))
        return FALSE;
    HgRange z = hg_range_make(-zb, zb, 0, FALSE);
    if (gv && (!b || (bv && bv->numel == gv->numel)) && gv->numel > 0) {
        HgRange acc = hg_range_make(INFINITY, -INFINITY, 0, FALSE);
        for (gint64 j = 0; j < gv->numel; j++) {
            double gj = hg_array_get_f64(gv, j), bj = bv ? hg_array_get_f64(bv, j) : 0;
            if (isnan(gj) || isnan(bj))
                return FALSE;
            HgRange t = hg_range_add(hg_range_mul(z, hg_range_const(gj)), hg_range_const(bj));
            hg_range_slack(&t, 2 * HG_ULP32 * (zb * fabs(gj) + fabs(bj)));
            acc = hg_range_union(acc, t);
        }
        *out = acc;
        out->tiny = 0;
        return TRUE;
    }
    HgRange t = hg_range_mul(z, *g);
    if (b)
        t = hg_range_add(t, *b);
    hg_range_slack(&t, 2 * HG_ULP32 * (zb * hg_range_mag(g) + (b ? hg_range_mag(b) : 0)));
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
    const HgRange *x = hg_range_input(ctx, 0);
    if (!hg_range_nonempty(x))
        return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    if (!(eps > 0))
        return; /* a constant row gives 0/0 */
    gboolean nan = x->nan || !hg_range_bounded(x);
    HgRange *y = hg_range_output(ctx, 0);
    HgRange r;
    if (y && norm_affine(ctx, norm_zbound(x, n, eps), 1, 2, &r)) {
        r.nan = r.nan || nan;
        hg_range_finish(&r, hg_range_output_dtype(ctx, 0));
        *y = r;
    }
    if (!layer)
        return;
    HgRange *mean = hg_range_output(ctx, 1), *inv = hg_range_output(ctx, 2);
    if (mean) {
        r = hg_range_make(x->lo, x->hi, 0, x->nan || (x->lo == -INFINITY && x->hi == INFINITY));
        if (n <= 0) { /* empty rows have mean 0 */
            r.lo = MIN(r.lo, 0);
            r.hi = MAX(r.hi, 0);
        }
        hg_range_finish(&r, hg_range_output_dtype(ctx, 1));
        *mean = r;
    }
    if (inv) {
        double hw = hg_range_bounded(x) ? (x->hi - x->lo) / 2 + 4 * HG_ULP32 * hg_range_mag(x) : INFINITY;
        double lo = 1 / sqrt(hw * hw + eps) * (1 - 4 * HG_ULP32), hi = 1 / sqrt(eps) * (1 + 4 * HG_ULP32);
        r = hg_range_make(lo, hi, lo, nan);
        hg_range_finish(&r, hg_range_output_dtype(ctx, 2));
        *inv = r;
    }
}

/* Inference: y = (x - mean) * a + B per channel with a = scale / sqrt(var + eps). Constant
 * statistics (the usual case) give each channel's exact affine map, and y the union over channels;
 * otherwise the parameters' ranges are combined. */
void
hg_range_BatchNormalization(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *y = hg_range_output(ctx, 0);
    if (!y || !hg_range_nonempty(x) || bn_training(ctx->node, ctx->opset))
        return;
    for (guint i = 1; i < 5; i++)
        if (!hg_range_nonempty(hg_range_input(ctx, i)))
            return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    const HgArray *sv = hg_range_value(ctx, 1), *bv = hg_range_value(ctx, 2), *mv = hg_range_value(ctx, 3), *vv = hg_range_value(ctx, 4);
    HgRange r;
    if (sv && bv && mv && vv && sv->numel > 0 && bv->numel == sv->numel && mv->numel == sv->numel &&
        vv->numel == sv->numel) {
        r = hg_range_make(INFINITY, -INFINITY, 0, FALSE);
        for (gint64 p = 0; p < sv->numel; p++) {
            double s = hg_array_get_f64(sv, p), b = hg_array_get_f64(bv, p), m = hg_array_get_f64(mv, p);
            double v = hg_array_get_f64(vv, p) + eps;
            if (!(v > 0) || isnan(s) || isnan(b) || isnan(m))
                return;
            double a = s / sqrt(v);
            HgRange t = hg_range_add(hg_range_mul(hg_range_add(*x, hg_range_const(-m)), hg_range_const(a)), hg_range_const(b));
            hg_range_slack(&t, 4 * HG_ULP32 * ((hg_range_mag(x) + fabs(m)) * fabs(a) + fabs(b)));
            r = hg_range_union(r, t);
        }
    } else {
        const HgRange *s = hg_range_input(ctx, 1), *b = hg_range_input(ctx, 2), *m = hg_range_input(ctx, 3), *v = hg_range_input(ctx, 4);
        if (!(v->lo + eps > 0))
            return;
        HgRange inv = hg_range_make(1 / sqrt(v->hi + eps), 1 / sqrt(v->lo + eps), 0, v->nan);
        inv.lo *= 1 - 4 * HG_ULP32;
        inv.hi *= 1 + 4 * HG_ULP32;
        HgRange a = hg_range_mul(*s, inv);
        HgRange negm = hg_range_make(-m->hi, -m->lo, 0, m->nan);
        r = hg_range_add(hg_range_mul(hg_range_add(*x, negm), a), *b);
        hg_range_slack(&r, 4 * HG_ULP32 * ((hg_range_mag(x) + hg_range_mag(m)) * hg_range_mag(&a) + hg_range_mag(b)));
    }
    r.tiny = 0;
    hg_range_finish(&r, hg_range_output_dtype(ctx, 0));
    *y = r;
}

void
hg_range_InstanceNormalization(HgRangeCtx *ctx)
{
    norm_range(ctx, rnumel_from(hg_range_shape(ctx, 0), 2), FALSE);
}

void
hg_range_LayerNormalization(HgRangeCtx *ctx)
{
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    const HgValueShape *ys = ctx->n_outputs && ctx->out_shapes ? ctx->out_shapes[0] : NULL;
    gint64 axis, n = -1;
    if (xs && xs->rank >= 0 &&
        hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)xs->rank, &axis, NULL, NULL)) {
        n = rnumel_from(xs, (int)axis);
        if (n < 0 && ys && ys->rank == xs->rank) /* Y's dims: X's, with Scale's where X's are unknown */
            n = rnumel_from(ys, (int)axis);
    }
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
    const HgRange *x = hg_range_input(ctx, 0), *g = hg_range_input(ctx, 1);
    HgRange *y = hg_range_output(ctx, 0);
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    if (!y || !hg_range_nonempty(x) || !hg_range_nonempty(g))
        return;
    double eps = (double)hg_node_attr_float(ctx->node, "epsilon", 1e-5f);
    gint64 axis, n = -1;
    if (xs && xs->rank >= 0 && hg_norm_axis(hg_node_attr_int(ctx->node, "axis", -1), (guint)xs->rank, &axis, NULL, NULL))
        n = rnumel_from(xs, (int)axis);
    double big = hg_range_mag(x), small = hg_range_mag_lo(x);
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
    HgRange z = hg_range_make(x->lo > 0 ? zmin : -zb, x->hi < 0 ? -zmin : zb, 0, FALSE);
    HgRange r = hg_range_mul(z, *g);
    hg_range_slack(&r, 2 * HG_ULP32 * hg_range_mag(&r));
    r.tiny = 0;
    /* inf / inf, 0 / 0 with eps = 0, NaN inputs, and a scale that may be infinite times 0 */
    r.nan = r.nan || x->nan || g->nan || (eps == 0 && small == 0);
    hg_range_finish(&r, hg_range_output_dtype(ctx, 0));
    *y = r;
}
