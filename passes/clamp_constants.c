/* clamp_constants: mask fills FP16 cannot hold become -65504, where that provably changes nothing.
 *
 *     fill = Constant(-3.4028235e38)                       fill = Constant(-65504)
 *     m = Mul(Sub(1, mask), fill)                     =>   m = Mul(Sub(1, mask), fill)
 *     p = Softmax(Add(scores, m))                          p = Softmax(Add(scores, m))
 *
 * A constant whose values beyond FP16's range are all negative (float32 min, -inf) is clamped to
 * -65504 only when every path from it ends, through mask arithmetic (Mul by a 0/1 mask, Sub from 0,
 * Expand, Reshape, Unsqueeze, Cast, Slice, Concat, Where's branches), in an Add whose result goes
 * only to Softmax, LogSoftmax, ReduceMax, Max or ArgMax (again through reshaping), or directly in the
 * fill branch of a Where that does: after Softmax a logit at -65504 and one at -3.4e38 both weigh
 * exp(-65504 - max) = 0, and a maximum ignores either. Each clamp is reported. Anything else beyond
 * FP16's range stays as it is: its readers stay FP32 (assign_precision). Weights that FP16 flushes to
 * zero are reported; conversion keeps their sign (-1e-9 becomes -0).
 */
#include "halfguard/pass.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ops/array.h"
#include "ops/op.h"

#define FP16_MAX 65504.0

/* Is v (carrying the fill) used only as a mask: added to logits that end in a maximum, or chosen by
 * a Where as the fill of such logits, after mask arithmetic? */
static gboolean
mask_use(const HgValue *v, int depth)
{
    if (!v || v->is_output || !v->uses->len || depth > 8)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        gboolean ok;
        if (hg_node_is(n, "Add") || (hg_node_is(n, "Where") && use->index > 0))
            ok = hg_value_ends_in_max(n->outputs[0]) || mask_use(n->outputs[0], depth + 1);
        else if (hg_node_is(n, "Mul") || hg_node_passes_through(n) || (hg_node_is(n, "Sub") && use->index == 1))
            ok = mask_use(n->outputs[0], depth + 1);
        else
            ok = FALSE;
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* The values of t with every value below -65504 (and -inf) raised to -65504; NULL when t holds NaN
 * or values above 65504, or nothing to clamp. */
static HgTensor *
clamped(const HgTensor *t, double *worst)
{
    if (t->dtype != HG_DTYPE_FLOAT)
        return NULL;
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    if (!a)
        return NULL;
    gboolean any = FALSE;
    *worst = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double x = hg_array_get_f64(a, i);
        if (isnan(x) || x > FP16_MAX)
            return NULL;
        if (x < -FP16_MAX) {
            any = TRUE;
            *worst = MIN(*worst, x);
        }
    }
    if (!any)
        return NULL;
    HgTensor *c = hg_array_to_tensor(a, t->name);
    float *f = hg_tensor_data_mut(c);
    for (gint64 i = 0; i < a->numel; i++)
        if (f[i] < -FP16_MAX)
            f[i] = (float)-FP16_MAX;
    return c;
}

gboolean
hg_pass_clamp_constants(HgGraph *g, HgPassCtx *ctx, GError **error)
{
    /* Weights FP16 flushes to zero: counted (from the analysis's pass over the weights, before this
     * pass changes anything), reported once for the model. */
    HgCheckResult *res = hg_pass_ctx_analysis(ctx, g, error);
    if (!res)
        return FALSE;
    const HgRanges *ranges = hg_check_ranges(res);
    gint64 n_flush = 0;
    guint n_tensors = 0;
    double smallest = INFINITY;
    for (guint i = 0; i < g->initializers->len; i++) {
        const HgTensor *t = g->initializers->pdata[i];
        const HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        const HgScan *sc = v && t->dtype == HG_DTYPE_FLOAT && v->uses->len ? hg_ranges_scan(ranges, v) : NULL;
        if (!sc || !sc->n_flush)
            continue;
        n_flush += sc->n_flush;
        n_tensors++;
        smallest = MIN(smallest, sc->range.tiny);
    }
    if (n_flush)
        hg_pass_note(ctx, "clamp_constants", "%" G_GINT64_FORMAT " weight%s in %u initializer%s flush%s to "
                     "zero in FP16 (smallest %.3g; signs kept)", n_flush, n_flush == 1 ? "" : "s", n_tensors,
                     n_tensors == 1 ? "" : "s", n_flush == 1 ? "es" : "", smallest);
    guint n = 0;
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        double worst;
        if (!v || v->init != t || v->is_input || !mask_use(v, 0))
            continue;
        HgTensor *c = clamped(t, &worst);
        if (!c)
            continue;
        g->initializers->pdata[i] = c;
        v->init = c;
        hg_tensor_free(t);
        hg_pass_note(ctx, "clamp_constants", "mask fill '%s': %.3g -> -65504", v->name, worst);
        n++;
    }
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        HgAttr *a = node->flags & HG_NODE_DEAD ? NULL : hg_node_attr(node, "value");
        double worst;
        if (!a || !a->t || !(hg_node_is(node, "Constant") || hg_node_is(node, "ConstantOfShape")) ||
            !mask_use(node->outputs[0], 0))
            continue;
        HgTensor *c = clamped(a->t, &worst);
        if (!c)
            continue;
        hg_tensor_free(a->t);
        a->t = c;
        hg_pass_note(ctx, "clamp_constants", "mask fill of %s '%s': %.3g -> -65504", node->op_type,
                     node->name ? node->name : "", worst);
        n++;
    }
    /* A Pad (before opset 11: the fill is an attribute) that pads for a maximum. */
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        if (node->flags & HG_NODE_DEAD || !hg_node_is(node, "Pad") || !hg_value_ends_in_max(node->outputs[0]))
            continue;
        HgAttr *a = hg_node_attr(node, "value");
        if (a && a->f < -FP16_MAX) {
            hg_pass_note(ctx, "clamp_constants", "Pad '%s' before a maximum: fill %.3g -> -65504",
                         node->name ? node->name : "", a->f);
            a->f = (float)-FP16_MAX;
            n++;
        }
    }
    if (n)
        hg_graph_touch(g);
    ctx->n_changed += n;
    return TRUE;
}
