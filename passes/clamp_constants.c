/* clamp_constants: mask fills FP16 cannot hold become +-65504, where that provably changes nothing.
 *
 *     fill = Constant(-3.4028235e38)                       fill = Constant(-65504)
 *     m = Mul(Sub(1, mask), fill)                     =>   m = Mul(Sub(1, mask), fill)
 *     p = Softmax(Add(scores, m))                          p = Softmax(Add(scores, m))
 *
 * A constant's values beyond FP16's range (float32 min or max, +-inf) are clamped to +-65504 only when
 * every path from it ends, through mask arithmetic (Mul by a 0/1 mask, Sub and Neg, which swap the
 * side, Expand, Reshape, Unsqueeze, Cast, Slice, Concat, Where's branches, Trilu: a causal mask as
 * torch.full((L, L), -inf).triu(1) writes it), in an Add, a Sub (logits
 * minus INF * (1 - mask), as Funnel writes it: the fill then acts on the other side), a Where's fill
 * or straight into a reader that saturates on its side (a running maximum's -1e38 start, as RWKV
 * writes it: Max(start, k), exp(start - m)), each
 * whose result goes only where that side saturates (again through reshaping and selection): for large
 * negatives Softmax, LogSoftmax, ReduceMax, Max, ArgMax or Exp (after Softmax a logit at -65504 and one at
 * -3.4e38 both weigh exp(-65504 - max) = 0, and a maximum ignores either), for large positives a
 * minimum, and for both Sigmoid and Tanh (RT-DETR's anchors filled with float32 max before the box
 * head's Add and a Sigmoid). Each clamp is reported. Anything else beyond
 * FP16's range stays as it is: its readers stay FP32 (assign_precision). Weights that FP16 flushes to
 * zero are reported; conversion keeps their sign (-1e-9 becomes -0). A Clip whose min is -inf or
 * whose max is +inf (a constant) loses that input: it bounds nothing.
 *
 *     n = Clip(ReduceL2(x), 1e-12)                      n = Clip(ReduceL2(x), 2^-23)
 *     y = Div(x, Expand(n, shape))               =>     y = Div(x, Expand(n, shape))
 *
 * A floor that FP16 flushes to 0 (at most 2^-25: F.normalize's eps of 1e-12, clamp_min before a
 * division), as a Clip's min or a Max's constant, whose result reaches only divisors (Div's second
 * input, Reciprocal, through ops that only rearrange values: Expand, Reshape, Transpose, Slice...),
 * becomes 2^-23, twice FP16's smallest nonzero value (so that it stays nonzero through the rounding
 * the analysis allows an FP16 result: a converted model converts again to the same): in FP16 a row
 * of zeros then divides by 2^-23 and gives 0, where the flushed floor gives 0/0. The result changes
 * only where the floored value is below 2^-23; a norm that small is of values FP16 holds at most
 * one or two bits of. Each is reported.
 */
#include "halfguard/pass.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ops/array.h"
#include "ops/op.h"

#define FP16_MAX 65504.0
#define FP16_FLUSH 0x1p-25        /* magnitudes at or below it round to 0 in FP16 */
#define FP16_FLOOR 0x1p-23        /* what such a floor becomes: twice FP16's smallest nonzero magnitude */

/* Is v (carrying a fill on the side of sign: -1 large negative, +1 large positive) used only as a
 * mask: added to logits, or chosen by a Where as the fill of logits, that end where a value past
 * FP16's range on that side weighs what +-65504 does (hg_value_ends_in_saturation), after mask
 * arithmetic? Sub from something and Neg swap the side. */
static gboolean
mask_use(const HgValue *v, int sign, int depth)
{
    if (!v || v->is_output || !v->uses->len || depth > 8)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        gboolean ok;
        if (hg_node_saturates(n, sign))
            ok = TRUE; /* a running maximum started at -1e38 (RWKV): Max(fill, x), exp(fill - m) */
        else if (hg_node_is(n, "Add") || (hg_node_is(n, "Where") && use->index > 0))
            ok = hg_value_ends_in_saturation(n->outputs[0], sign) || mask_use(n->outputs[0], sign, depth + 1);
        else if (hg_node_is(n, "Sub")) { /* logits - INF * (1 - mask) (Funnel): the fill on the other side */
            int side = use->index == 1 ? -sign : sign;
            ok = hg_value_ends_in_saturation(n->outputs[0], side) || mask_use(n->outputs[0], side, depth + 1);
        } else if (hg_node_is(n, "Mul") || hg_node_passes_through(n) || (hg_node_is(n, "Trilu") && use->index == 0))
            ok = mask_use(n->outputs[0], sign, depth + 1);
        else if (hg_node_is(n, "Neg"))
            ok = mask_use(n->outputs[0], -sign, depth + 1);
        else
            ok = FALSE;
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* The values of t with every value past +-65504 (infinities too) brought to +-65504, where v (what
 * reads them) is a mask on each side that has such values; NULL when t holds NaN, or nothing to
 * clamp, or a side that is no mask. *worst receives the largest magnitude clamped, with its sign. */
static HgTensor *
clamped(const HgTensor *t, const HgValue *v, const HgScan *known, double *worst)
{
    if (t->dtype != HG_DTYPE_FLOAT)
        return NULL;
    /* Almost no weight has a value past FP16's range: the analysis's scan of t (known), or one
     * vectorised scan of the bytes where they lie (often the mapped input), says so before anything
     * is copied. */
    HgScan sc = {0};
    g_autoptr(HgArray) view = known ? NULL : hg_array_view_tensor(t, NULL);
    if (known)
        sc = *known;
    else if (view)
        sc = hg_scan_array(view);
    if ((known || view) && (sc.range.nan || (sc.range.lo >= -FP16_MAX && sc.range.hi <= FP16_MAX)))
        return NULL;
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    if (!a)
        return NULL;
    gboolean neg = FALSE, pos = FALSE;
    *worst = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double x = hg_array_get_f64(a, i);
        if (isnan(x))
            return NULL;
        neg |= x < -FP16_MAX;
        pos |= x > FP16_MAX;
        if (fabs(x) > FP16_MAX && fabs(x) > fabs(*worst))
            *worst = x;
    }
    if ((!neg && !pos) || (neg && !mask_use(v, -1, 0)) || (pos && !mask_use(v, 1, 0)))
        return NULL;
    HgTensor *c = hg_array_to_tensor(a, t->name);
    float *f = hg_tensor_data_mut(c);
    for (gint64 i = 0; i < a->numel; i++)
        f[i] = (float)CLAMP((double)f[i], -FP16_MAX, FP16_MAX);
    return c;
}

/* Does every path from v end in a divisor (Div's second input, Reciprocal), through ops that only
 * rearrange its values (the op table's REARRANGES: Reshape, Expand, Transpose, Slice, Gather...)? */
static gboolean
only_divides(const HgValue *v, int depth)
{
    if (!v || v->is_output || v->nested_outputs || !v->uses->len || depth > 8)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        if ((hg_node_is(n, "Div") && use->index == 1) || hg_node_is(n, "Reciprocal"))
            continue;
        if (use->index != 0 || n->n_outputs != 1 || !hg_node_has_traits(n, HG_TRAIT_REARRANGES) ||
            !only_divides(n->outputs[0], depth + 1))
            return FALSE;
    }
    return TRUE;
}

/* The floor of n, a Clip (its min, an input or, before opset 11, an attribute) or a Max of two
 * operands (the constant one): its value, or 0 when n has none that FP16 flushes. *slot is the
 * input that holds it (-1: the attribute). */
static double
flushed_floor(const HgShapes *shapes, const HgNode *n, int *slot)
{
    double f = 0;
    *slot = -2;
    if (hg_node_is(n, "Clip") && n->n_inputs >= 2 && n->inputs[1]) {
        const HgArray *a = n->inputs[1]->is_input ? NULL : hg_shapes_get(shapes, n->inputs[1])->value;
        if (a && a->numel == 1 && hg_dtype_is_float(a->dtype))
            f = hg_array_get_f64(a, 0), *slot = 1;
    } else if (hg_node_is(n, "Clip") && n->n_inputs == 1 && hg_node_attr(n, "min")) {
        f = hg_node_attr_float(n, "min", 0), *slot = -1;
    } else if (hg_node_is(n, "Max") && n->n_inputs == 2 && n->inputs[0] && n->inputs[1]) {
        for (int k = 0; k < 2 && *slot == -2; k++) {
            const HgArray *a = n->inputs[k]->is_input ? NULL : hg_shapes_get(shapes, n->inputs[k])->value;
            if (a && a->numel == 1 && hg_dtype_is_float(a->dtype) && !hg_shapes_get(shapes, n->inputs[1 - k])->value)
                f = hg_array_get_f64(a, 0), *slot = k;
        }
    }
    return *slot != -2 && f > 0 && f <= FP16_FLUSH ? f : 0;
}

gboolean
hg_pass_clamp_constants(HgGraph *g, const HgPassEnv *env, GError **error)
{
    /* Weights FP16 flushes to zero: counted from the analysis's pass over the weights (after the
     * floors, before anything else changes), reported once for the model. */
    HgCheckResult *res = hg_analyses_get(env->analyses, g, error);
    if (!res)
        return FALSE;
    const HgRanges *ranges = hg_check_ranges(res);
    const HgShapes *shapes = hg_check_shapes(res);
    /* Floors FP16 flushes to 0 before a division (above), first: the flushed weights counted
     * below are then those that stay. */
    guint floors = 0;
    g_autoptr(GHashTable) raised = g_hash_table_new(NULL, NULL); /* old floor -> its 2^-23 */
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        int slot;
        double f = node->flags & HG_NODE_DEAD ? 0 : flushed_floor(shapes, node, &slot);
        if (f == 0 || !node->outputs[0] || !only_divides(node->outputs[0], 0))
            continue;
        if (slot < 0) {
            hg_node_set_attr_float(node, "min", (float)FP16_FLOOR);
        } else {
            HgValue *old = node->inputs[slot], *v = g_hash_table_lookup(raised, old);
            if (!v) {
                g_autofree char *base = g_strdup_printf("%s_fp16_floor", old->name);
                g_autoptr(HgArray) a = hg_array_new_scalar_f32(hg_shapes_dtype(shapes, old), (float)FP16_FLOOR);
                v = hg_graph_new_initializer(g, base, hg_array_to_tensor(a, NULL));
                g_hash_table_insert(raised, old, v);
            }
            hg_node_set_input(node, (guint)slot, v);
            hg_value_drop_if_unused(g, old);
        }
        hg_pass_note(env->result, "clamp_constants", "%s '%s' before a division: floor %.3g, which FP16 flushes "
                     "to 0, raised to 2^-23", node->op_type, node->name ? node->name : "", f);
        hg_graph_touch(g);
        floors++;
    }
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
        hg_pass_note(env->result, "clamp_constants", "%" G_GINT64_FORMAT " weight%s in %u initializer%s flush%s to "
                     "zero in FP16 (smallest %.3g; signs kept)", n_flush, n_flush == 1 ? "" : "s", n_tensors,
                     n_tensors == 1 ? "" : "s", n_flush == 1 ? "es" : "", smallest);
    guint n = 0;
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        double worst;
        if (!v || v->init != t || v->is_input)
            continue;
        /* The analysis scanned t itself: no initializer before it was replaced by this loop. */
        const HgScan *sc = t->dtype == HG_DTYPE_FLOAT && v->uses->len ? hg_ranges_scan(ranges, v) : NULL;
        HgTensor *c = clamped(t, v, sc, &worst);
        if (!c)
            continue;
        hg_value_set_initializer(v, c);
        hg_pass_note(env->result, "clamp_constants", "mask fill '%s': %.3g -> %g", v->name, worst,
                     worst < 0 ? -FP16_MAX : FP16_MAX);
        n++;
    }
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        HgAttr *a = node->flags & HG_NODE_DEAD ? NULL : hg_node_attr(node, "value");
        double worst;
        if (!a || !a->t || !(hg_node_is(node, "Constant") || hg_node_is(node, "ConstantOfShape")))
            continue;
        HgTensor *c = clamped(a->t, node->outputs[0], NULL, &worst);
        if (!c)
            continue;
        hg_node_set_attr_tensor(node, "value", c);
        hg_pass_note(env->result, "clamp_constants", "mask fill of %s '%s': %.3g -> %g", node->op_type,
                     node->name ? node->name : "", worst, worst < 0 ? -FP16_MAX : FP16_MAX);
        n++;
    }
    /* A Clip bound of -inf (its min) or +inf (its max) bounds nothing: Clip without it is the same
     * function in every precision, so the input goes, and with it a constant FP16 would keep as
     * inf but that the check reports (torch.clamp(x, min=0, max=float('inf'))). */
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        if (node->flags & HG_NODE_DEAD || !hg_node_is(node, "Clip"))
            continue;
        gboolean dropped = FALSE;
        for (guint k = 1; k < node->n_inputs && k < 3; k++) {
            HgValue *b = node->inputs[k];
            /* shape inference holds the values of small constants (the analysis is of the graph before
             * this pass; no Clip bound is a mask fill it clamped) */
            const HgArray *bv = b ? hg_shapes_get(shapes, b)->value : NULL;
            double x = bv && bv->numel == 1 && hg_dtype_is_float(bv->dtype) && !b->is_input
                           ? hg_array_get_f64(bv, 0) : NAN;
            if (!isinf(x) || (k == 1) != (x < 0))
                continue;
            hg_pass_note(env->result, "clamp_constants", "Clip '%s': dropped its %s bound '%s' (%s)",
                         node->name ? node->name : "", k == 1 ? "lower" : "upper", b->name, x < 0 ? "-inf" : "inf");
            hg_node_set_input(node, k, NULL);
            hg_value_drop_if_unused(g, b);
            dropped = TRUE;
            n++;
        }
        while (dropped && node->n_inputs > 1 && !node->inputs[node->n_inputs - 1])
            node->n_inputs--; /* no trailing "" where this pass made it */
        if (dropped)
            hg_graph_touch(g);
    }
    /* A Pad (before opset 11: the fill is an attribute) that pads for a maximum. */
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *node = g->nodes->pdata[i];
        if (node->flags & HG_NODE_DEAD || !hg_node_is(node, "Pad") || !hg_value_ends_in_max(node->outputs[0]))
            continue;
        HgAttr *a = hg_node_attr(node, "value");
        if (a && a->f < -FP16_MAX) {
            hg_pass_note(env->result, "clamp_constants", "Pad '%s' before a maximum: fill %.3g -> -65504",
                         node->name ? node->name : "", a->f);
            hg_node_set_attr_float(node, "value", (float)-FP16_MAX);
            n++;
        }
    }
    env->result->n_changed += n + floors;
    return TRUE;
}
