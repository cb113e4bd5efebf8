/* The deprecated image ops of opsets 1-9 (Affine, Crop, ImageScaler): gone from the standard since
 * opset 10, still found in real exported models (fns-candy), and run by ONNX Runtime. */
#include "ops/op.h"

#include <float.h>
#include <math.h>
#include <string.h>

gboolean
hg_eval_Affine(HgEvalCtx *ctx)
{
    const HgArray *x = ctx->inputs[0];
    float alpha = hg_node_attr_float(ctx->node, "alpha", 1.0f);
    float beta = hg_node_attr_float(ctx->node, "beta", 0.0f);
    HgArray *y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    gboolean owned;
    const float *in = hg_array_load_f32(x, &owned);
    float *out = g_new(float, x->numel + 1);
    for (gint64 i = 0; i < x->numel; i++)
        out[i] = alpha * in[i] + beta;
    hg_array_store_f32(y, out);
    g_free(out);
    if (owned)
        g_free((float *)in);
    ctx->outputs[0] = y;
    return TRUE;
}

/* y[n,c,h,w] = scale * x[n,c,h,w] + bias[c] */
gboolean
hg_eval_ImageScaler(HgEvalCtx *ctx)
{
    const HgArray *x = ctx->inputs[0];
    if (x->rank != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must be NCHW, got rank %u", x->rank);
        return FALSE;
    }
    guint nbias;
    const float *bias = hg_attr_floats(ctx->node, "bias", &nbias);
    float scale = hg_node_attr_float(ctx->node, "scale", 1.0f);
    gint64 c = x->dims[1], hw = x->dims[2] * x->dims[3];
    if (bias && nbias != c) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "bias has %u values for %" G_GINT64_FORMAT
                    " channels", nbias, c);
        return FALSE;
    }
    HgArray *y = hg_array_new_like(x->dtype, x, ctx->error);
    if (!y)
        return FALSE;
    gboolean owned;
    const float *in = hg_array_load_f32(x, &owned);
    float *out = g_new(float, x->numel + 1);
    for (gint64 i = 0; i < x->numel; i++) {
        gint64 ch = (i / hw) % c;
        out[i] = scale * in[i] + (bias ? bias[ch] : 0.0f);
    }
    hg_array_store_f32(y, out);
    g_free(out);
    if (owned)
        g_free((float *)in);
    ctx->outputs[0] = y;
    return TRUE;
}

/* Crop NCHW by border = [left, top, right, bottom]; with scale = [H, W] the output is H x W starting
 * at (top, left). */
static gboolean
crop_box(const HgNode *n, const gint64 *dims, gint64 box[4], GError **error)
{
    guint nb, ns;
    const gint64 *border = hg_attr_ints(n, "border", &nb);
    const gint64 *scale = hg_attr_ints(n, "scale", &ns);
    if (nb != 4 || (scale && ns != 2)) {
        hg_op_error(error, HG_ERROR_INVALID, n, "border needs 4 values and scale 2");
        return FALSE;
    }
    gint64 left = border[0], top = border[1], right = border[2], bottom = border[3];
    box[0] = top;
    box[1] = left;
    box[2] = scale ? scale[0] : dims[2] - top - bottom;
    box[3] = scale ? scale[1] : dims[3] - left - right;
    if (left < 0 || top < 0 || box[2] < 0 || box[3] < 0 || top + box[2] > dims[2] ||
        left + box[3] > dims[3]) {
        hg_op_error(error, HG_ERROR_INVALID, n, "the crop leaves the %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                    " image", dims[2], dims[3]);
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_Crop(HgShapeCtx *ctx)
{
    const HgValueShape *x = ctx->inputs[0];
    if (!x || x->rank != 4)
        return TRUE;
    HgValueShape *y = ctx->outputs[0];
    *y = *x;
    y->value = NULL;
    if (x->dims[2].v < 0 || x->dims[3].v < 0)
        return TRUE;
    gint64 dims[4] = {x->dims[0].v, x->dims[1].v, x->dims[2].v, x->dims[3].v}, box[4];
    if (!crop_box(ctx->node, dims, box, ctx->error))
        return FALSE;
    y->dims[2].v = box[2];
    y->dims[3].v = box[3];
    y->dims[2].sym = y->dims[3].sym = NULL;
    return TRUE;
}

gboolean
hg_eval_Crop(HgEvalCtx *ctx)
{
    const HgArray *x = ctx->inputs[0];
    if (x->rank != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input must be NCHW, got rank %u", x->rank);
        return FALSE;
    }
    gint64 box[4];
    if (!crop_box(ctx->node, x->dims, box, ctx->error))
        return FALSE;
    gint64 dims[4] = {x->dims[0], x->dims[1], box[2], box[3]};
    HgArray *y = hg_array_new(x->dtype, 4, dims, ctx->error);
    if (!y)
        return FALSE;
    gsize es = hg_dtype_size(x->dtype);
    const guint8 *in = x->data;
    guint8 *out = y->data;
    for (gint64 p = 0; p < x->dims[0] * x->dims[1]; p++)
        for (gint64 h = 0; h < box[2]; h++)
            memcpy(out + ((p * box[2] + h) * box[3]) * es,
                   in + ((p * x->dims[2] + box[0] + h) * x->dims[3] + box[1]) * es, (gsize)box[3] * es);
    ctx->outputs[0] = y;
    return TRUE;
}

/* ---------------------------------------------------------------- interval rules */

/* y = a * x + b over x's range, with 0 * inf = 0 at the bounds (the nan flag says whether an actual
 * 0 * inf can occur) and an absolute allowance for the FP32 rounding of the sum. */
static HgRange
affine_range(const HgRange *x, double a, double b)
{
    double p = a == 0 ? 0 : a * x->lo, q = a == 0 ? 0 : a * x->hi;
    HgRange r = {MIN(p, q) + b, MAX(p, q) + b, 0, x->nan || (a == 0 && (isinf(x->lo) || isinf(x->hi)))};
    double slack = (fabs(a) * MAX(fabs(x->lo), fabs(x->hi)) + fabs(b)) / 4194304.0; /* 2^-22 */
    if (isfinite(slack)) {
        r.lo -= slack;
        r.hi += slack;
    }
    if (b == 0)
        r.tiny = fabs(a) * x->tiny;
    return r;
}

/* The output type's overflow (FP16: 65504) and store rounding, as the families' rules do. */
static void
legacy_finish(HgRange *r, const HgRangeCtx *ctx)
{
    int dt = ctx->n_outputs && ctx->out_shapes[0] ? ctx->out_shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    double max = dt == HG_DTYPE_FLOAT ? FLT_MAX : dt == HG_DTYPE_DOUBLE ? DBL_MAX : 65504;
    if (dt != HG_DTYPE_FLOAT && dt != HG_DTYPE_DOUBLE) {
        double rel = dt == HG_DTYPE_BFLOAT16 ? 1.0 / 128 : 1.0 / 1024;
        if (dt == HG_DTYPE_BFLOAT16)
            max = 3.3895313892515355e38;
        if (isfinite(r->lo))
            r->lo -= fabs(r->lo) * rel;
        if (isfinite(r->hi))
            r->hi += fabs(r->hi) * rel;
        r->tiny = 0;
    }
    if (r->lo < -max)
        r->lo = -INFINITY;
    if (r->hi > max)
        r->hi = INFINITY;
    if (r->tiny < FLT_MIN)
        r->tiny = 0;
}

static const HgRange *
legacy_input(const HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs ? ctx->inputs[0] : NULL;
    return x && x->lo <= x->hi && ctx->n_outputs && ctx->outputs[0] ? x : NULL;
}

void
hg_range_Affine(HgRangeCtx *ctx)
{
    const HgRange *x = legacy_input(ctx);
    if (!x)
        return;
    HgRange r = affine_range(x, hg_node_attr_float(ctx->node, "alpha", 1.0f),
                             hg_node_attr_float(ctx->node, "beta", 0.0f));
    legacy_finish(&r, ctx);
    *ctx->outputs[0] = r;
}

/* Crop selects elements. */
void
hg_range_Crop(HgRangeCtx *ctx)
{
    const HgRange *x = legacy_input(ctx);
    if (x)
        *ctx->outputs[0] = *x;
}

/* y = scale * x + bias[c]: the union over channels. */
void
hg_range_ImageScaler(HgRangeCtx *ctx)
{
    const HgRange *x = legacy_input(ctx);
    if (!x)
        return;
    guint nb;
    const float *bias = hg_attr_floats(ctx->node, "bias", &nb);
    double scale = hg_node_attr_float(ctx->node, "scale", 1.0f);
    HgRange r = affine_range(x, scale, bias && nb ? bias[0] : 0);
    for (guint c = 1; bias && c < nb; c++) {
        HgRange t = affine_range(x, scale, bias[c]);
        r.lo = MIN(r.lo, t.lo);
        r.hi = MAX(r.hi, t.hi);
        r.tiny = MIN(r.tiny, t.tiny);
    }
    legacy_finish(&r, ctx);
    *ctx->outputs[0] = r;
}
