/* The kernel vocabulary shared by the families (kernel.h). */
#include "ops/kernel.h"

/* ---------------------------------------------------------------- constant folding */

gboolean
hg_eval_constants(const HgNode *node, gint64 opset, HgEvalFunc eval, guint n_inputs,
                  HgArray *const *inputs, guint n_outputs, HgArray **outputs, GError **error)
{
    for (guint k = 0; k < n_outputs; k++)
        outputs[k] = NULL;
    HgEvalCtx ctx = {node, opset, n_inputs, inputs, n_outputs, outputs, 1, error};
    if (eval(&ctx))
        return TRUE;
    for (guint k = 0; k < n_outputs; k++)
        g_clear_pointer(&outputs[k], hg_array_unref);
    return FALSE;
}

gboolean
hg_fold(HgShapeCtx *ctx, HgEvalFunc eval, HgFoldFlags flags)
{
    if (!ctx->n_outputs)
        return TRUE;
    if (!eval) {
        const HgOpDef *op = ctx->node ? hg_op_for_node(ctx->node) : NULL;
        if (!op || !op->eval)
            return TRUE;
        eval = op->eval;
    }
    for (guint i = 0; i < ctx->n_inputs; i++) {
        const HgValueShape *s = ctx->inputs[i];
        if (s && (!s->value || ((flags & HG_FOLD_SMALL_INPUTS) && s->value->numel > HG_FOLD_MAX_INPUT)))
            return TRUE;
    }
    for (guint k = 0; k < ctx->n_outputs; k++) {
        const HgValueShape *o = ctx->outputs[k];
        if (!o)
            continue;
        gint64 n = hg_vshape_numel(o);
        if (n < 0 || n > HG_FOLD_MAX_OUTPUT)
            return TRUE;
    }
    g_autofree HgArray **ins = g_new0(HgArray *, ctx->n_inputs + 1);
    g_autofree HgArray **outs = g_new0(HgArray *, ctx->n_outputs + 1);
    for (guint i = 0; i < ctx->n_inputs; i++)
        ins[i] = ctx->inputs[i] ? ctx->inputs[i]->value : NULL;
    GError *err = NULL;
    if (!hg_eval_constants(ctx->node, ctx->opset, eval, ctx->n_inputs, ins, ctx->n_outputs, outs, &err)) {
        if ((flags & HG_FOLD_STRICT) && err && err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_clear_error(&err);
        return TRUE;
    }
    for (guint k = 0; k < ctx->n_outputs; k++) {
        HgValueShape *o = ctx->outputs[k];
        HgArray *a = outs[k];
        if (!a)
            continue;
        if (!o || (int)a->rank != o->rank || (o->dtype != a->dtype && o->dtype != HG_DTYPE_UNDEFINED)) {
            hg_array_unref(a);
            continue;
        }
        o->dtype = a->dtype;
        for (guint i = 0; i < a->rank; i++)
            o->dims[i].v = a->dims[i];
        if (o->value)
            hg_array_unref(o->value);
        o->value = a;
    }
    return TRUE;
}
