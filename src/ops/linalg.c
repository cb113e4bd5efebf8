/* linalg kernels: STUBS, to be replaced by the real shape rules and kernels. */
#include "ops/op.h"

gboolean
hg_infer_AveragePool(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Conv(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ConvTranspose(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Einsum(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Gemm(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_GlobalAveragePool(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_GlobalMaxPool(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_MatMul(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_MaxPool(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_eval_AveragePool(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Conv(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ConvTranspose(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Einsum(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Gemm(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_GlobalAveragePool(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_GlobalMaxPool(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_MatMul(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_MaxPool(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gint64
hg_cost_AveragePool(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_Conv(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ConvTranspose(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_Einsum(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_Gemm(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_GlobalAveragePool(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_GlobalMaxPool(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_MatMul(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_MaxPool(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}
