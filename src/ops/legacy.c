/* The deprecated image ops of opsets 1-9 (Affine, Crop, ImageScaler): gone from the standard since
 * opset 10, still found in real exported models (fns-candy), and run by ONNX Runtime. */
#include "ops/op.h"

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

/* ---------------------------------------------------------------- interval rules
 * STUBS: every output stays unbounded (sound, useless) until each op has its rule. */

void
hg_range_Affine(HgRangeCtx *ctx)
{
    (void)ctx;
}

void
hg_range_Crop(HgRangeCtx *ctx)
{
    (void)ctx;
}

void
hg_range_ImageScaler(HgRangeCtx *ctx)
{
    (void)ctx;
}

