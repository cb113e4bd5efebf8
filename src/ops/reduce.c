/* reduce kernels: STUBS, to be replaced by the real shape rules and kernels. */
#include "ops/op.h"

gboolean
hg_infer_ArgMax(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ArgMin(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_BatchNormalization(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_CumSum(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_InstanceNormalization(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_LayerNormalization(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_LogSoftmax(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceL1(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceL2(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceLogSumExp(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceMax(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceMean(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceMin(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceProd(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceSum(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ReduceSumSquare(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Softmax(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_TopK(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_eval_ArgMax(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ArgMin(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_BatchNormalization(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_CumSum(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_InstanceNormalization(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_LayerNormalization(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_LogSoftmax(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceL1(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceL2(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceLogSumExp(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceMax(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceMean(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceMin(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceProd(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceSum(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ReduceSumSquare(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Softmax(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_TopK(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gint64
hg_cost_ArgMax(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ArgMin(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_BatchNormalization(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_CumSum(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_InstanceNormalization(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_LayerNormalization(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_LogSoftmax(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceL1(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceL2(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceLogSumExp(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceMax(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceMean(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceMin(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceProd(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceSum(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_ReduceSumSquare(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_Softmax(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}

gint64
hg_cost_TopK(const HgShapeCtx *ctx)
{
    (void)ctx;
    return -1;
}
