/* tensor kernels: STUBS, to be replaced by the real shape rules and kernels. */
#include "ops/op.h"

gboolean
hg_infer_Concat(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Constant(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ConstantOfShape(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_DepthToSpace(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Expand(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Flatten(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Gather(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_GatherElements(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_GatherND(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Pad(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Range(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Reshape(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Resize(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ScatterElements(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_ScatterND(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Shape(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Size(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Slice(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_SpaceToDepth(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Split(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Squeeze(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Tile(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Transpose(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Trilu(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Unsqueeze(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_infer_Upsample(HgShapeCtx *ctx)
{
    (void)ctx;
    return TRUE;
}

gboolean
hg_eval_Concat(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Constant(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ConstantOfShape(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_DepthToSpace(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Expand(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Flatten(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Gather(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_GatherElements(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_GatherND(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Pad(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Range(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Reshape(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Resize(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ScatterElements(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_ScatterND(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Shape(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Size(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Slice(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_SpaceToDepth(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Split(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Squeeze(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Tile(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Transpose(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Trilu(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Unsqueeze(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}

gboolean
hg_eval_Upsample(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "no kernel yet");
    return FALSE;
}
