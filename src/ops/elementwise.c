/* elementwise kernels: STUBS, to be replaced by the real shape rules and kernels. */
#include "ops/op.h"

gboolean
hg_infer_unary(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_binary(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_compare(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Cast(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_CastLike(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Clip(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Dropout(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_IsInf(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_IsNaN(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_variadic(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Not(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Where(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_eval_Abs(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Add(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_And(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Cast(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_CastLike(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Ceil(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Clip(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Cos(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Div(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Dropout(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Elu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Equal(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Erf(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Exp(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Floor(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Greater(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_GreaterOrEqual(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_HardSigmoid(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_HardSwish(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Identity(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_IsInf(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_IsNaN(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_LeakyRelu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Less(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_LessOrEqual(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Log(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Max(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Mean(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Min(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Mish(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Mod(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Mul(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Neg(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Not(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Or(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_PRelu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Pow(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Reciprocal(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Relu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Round(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Selu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sigmoid(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sign(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sin(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Softplus(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Softsign(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sqrt(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sub(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Sum(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Tanh(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ThresholdedRelu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Where(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Xor(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}
