/* rescale: keep a linear chain whose activations pass FP16's range in FP16, by a power of two.
 *
 *     x -> Conv(W1,b1) -> Relu -> Conv(W2,b2) -> Relu -> y        y reaches 2e5
 *  => x -> Conv(W1/2^k, b1/2^k) -> Relu -> Conv(W2, b2/2^k) -> Relu -> Mul(2^k) -> y
 *
 * Every op of the chain is positively homogeneous or linear, so scaling the first linear op's weights
 * and bias by 2^-k scales every tensor after it by 2^-k, provided each later bias or constant operand
 * is scaled too (Conv, ConvTranspose and Gemm biases, a constant added or subtracted, Clip's bounds,
 * BatchNormalization's mean and bias). The scale is undone where the chain ends: a scale-invariant
 * normalization (InstanceNormalization, LayerNormalization, GroupNormalization: epsilon times
 * 2^-2k), a constant Mul or Div (the constant absorbs 2^k), or else a Mul by 2^k before whatever reads
 * the chain's end (a graph output keeps its name). Powers of two are exact: in FP32 the outputs
 * before and after agree bit for bit, barring overflow and underflow. k is the smallest that brings
 * every tensor of the chain under the threshold (static bound, or calibration with margin), and the
 * chain is left alone when that would push its largest values below 2^-4 (ten bits above FP16's
 * subnormals), where precision would suffer. The chain follows single readers only: a tensor read
 * twice ends it. Each rewrite is reported with k and the tensor that needed it.
 */
#include "halfguard/pass.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ops/array.h"
#include "ops/op.h"

#define MAX_CHAIN 4096

static gboolean
is_const(const HgValue *v)
{
    return v && v->init && v->init->dtype == HG_DTYPE_FLOAT;
}

/* A linear op whose weights are a constant initializer (the chain can start here). */
static gboolean
is_linear(const HgNode *n)
{
    if (hg_node_is(n, "Conv") || hg_node_is(n, "ConvTranspose") || hg_node_is(n, "Gemm"))
        return n->n_inputs >= 2 && is_const(n->inputs[1]) &&
               (n->n_inputs < 3 || !n->inputs[2] || is_const(n->inputs[2]));
    if (hg_node_is(n, "MatMul"))
        return n->n_inputs == 2 && is_const(n->inputs[1]);
    return FALSE;
}

/* Does n commute with a positive scale of input 0 (with its constants adjusted)? */
static gboolean
commutes(const HgNode *n)
{
    static const char *const ops[] = {"Relu", "LeakyRelu", "MaxPool", "AveragePool", "GlobalAveragePool",
                                      "GlobalMaxPool", "Reshape", "Transpose", "Flatten", "Squeeze",
                                      "Unsqueeze", "Identity", "Slice", "Dropout"};
    for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
        if (hg_node_is(n, ops[i]))
            return TRUE;
    if (hg_node_is(n, "PRelu"))
        return n->n_inputs == 2 && is_const(n->inputs[1]);
    if (hg_node_is(n, "Pad")) { /* zero constant padding */
        g_autofree char *mode = hg_attr_string(n, "mode", "constant");
        gboolean zero = hg_node_attr_float(n, "value", 0) == 0 &&
                        (n->n_inputs < 3 || !n->inputs[2] || (is_const(n->inputs[2]) &&
                                                                hg_tensor_numel(n->inputs[2]->init) == 1));
        if (zero && n->n_inputs >= 3 && n->inputs[2]) {
            g_autoptr(HgArray) a = hg_array_from_tensor(n->inputs[2]->init, NULL);
            zero = a && hg_array_get_f64(a, 0) == 0;
        }
        return strcmp(mode, "constant") == 0 && zero;
    }
    if (hg_node_is(n, "Resize")) {
        g_autofree char *mode = hg_attr_string(n, "mode", "nearest");
        return strcmp(mode, "nearest") == 0 || strcmp(mode, "linear") == 0;
    }
    if (hg_node_is(n, "Clip")) /* bounds as constant inputs (opset 11+) or attributes */
        return (n->n_inputs < 2 || !n->inputs[1] || is_const(n->inputs[1])) &&
               (n->n_inputs < 3 || !n->inputs[2] || is_const(n->inputs[2]));
    if (hg_node_is(n, "Add") || hg_node_is(n, "Sub"))
        return n->n_inputs == 2 && is_const(n->inputs[1]);
    if (hg_node_is(n, "BatchNormalization"))
        return n->n_outputs == 1 && n->n_inputs == 5 && is_const(n->inputs[2]) && is_const(n->inputs[3]);
    return is_linear(n);
}

/* Where the chain's scale is undone inside the op: scale-invariant normalizations and a constant Mul
 * or Div. */
static gboolean
absorbs(const HgNode *n)
{
    if (hg_node_is(n, "InstanceNormalization") || hg_node_is(n, "LayerNormalization") ||
        hg_node_is(n, "GroupNormalization"))
        return TRUE;
    return (hg_node_is(n, "Mul") || hg_node_is(n, "Div")) && n->n_inputs == 2 && is_const(n->inputs[1]) &&
           hg_tensor_numel(n->inputs[1]->init) >= 1;
}

/* The single reader of v inside the graph, or NULL (none, several, or a graph output). */
static HgNode *
single_reader(const HgValue *v)
{
    if (!v || v->is_output || v->nested_outputs || v->uses->len != 1)
        return NULL;
    const HgUse *u = &g_array_index(v->uses, HgUse, 0);
    return u->index == 0 ? u->node : NULL;
}

/* A copy of constant input k of n times 2^e (a new initializer, so others reading it are untouched). */
static gboolean
scale_const(HgGraph *g, HgNode *n, guint k, int e, GError **error)
{
    HgValue *v = n->inputs[k];
    g_autoptr(HgArray) a = hg_array_from_tensor(v->init, error);
    if (!a)
        return FALSE;
    g_autoptr(HgArray) out = hg_array_new(HG_DTYPE_FLOAT, a->rank, a->dims, error);
    if (!out)
        return FALSE;
    float *src = a->data, *dst = out->data;
    for (gint64 i = 0; i < a->numel; i++)
        dst[i] = (float)ldexp(src[i], e);
    g_autofree char *base = g_strdup_printf("%s_scaled", v->name);
    g_autofree char *name = hg_graph_unique_name(g, base);
    HgValue *c = hg_graph_new_value(g, name, error);
    if (!c)
        return FALSE;
    hg_graph_add_initializer(g, c, hg_array_to_tensor(out, name));
    hg_node_set_input(n, k, c);
    return TRUE;
}

/* A Mul by 2^k reading v, whose output takes over v's readers (and its name, for a graph output). */
static gboolean
undo_after(HgGraph *g, HgValue *v, int k, GError **error)
{
    g_autoptr(GArray) uses = g_array_copy(v->uses);
    gboolean out = v->is_output;
    g_autofree char *name = g_strdup(v->name);
    /* A graph output keeps its name on the unscaled tensor; the scaled one is renamed. */
    g_autofree char *inner_base = g_strdup_printf(out ? "%s_scaled" : "%s_unscaled", name);
    g_autofree char *inner = hg_graph_unique_name(g, inner_base);
    g_autofree char *kname = hg_graph_unique_name(g, "rescale_undo");
    HgValue *kv = hg_graph_new_value(g, kname, error);
    if (!kv)
        return FALSE;
    HgTensor *t = hg_tensor_new(kname, HG_DTYPE_FLOAT, 0, NULL);
    *(float *)hg_tensor_data_mut(t) = (float)ldexp(1.0, k);
    hg_graph_add_initializer(g, kv, t);
    HgValue *o;
    if (out) {
        if (!hg_value_rename(v, inner, error))
            return FALSE;
        o = hg_graph_new_value(g, name, error);
    } else {
        o = hg_graph_new_value(g, inner, error);
    }
    if (!o)
        return FALSE;
    g_autofree char *nname = g_strdup_printf("%s/rescale_undo", name);
    g_autofree char *nuniq = hg_graph_unique_name(g, nname);
    HgValue *ins[2] = {v, kv};
    HgNode *mul = hg_graph_add_node(g, "Mul", NULL, nuniq, 2, ins, 1, &o);
    if (out)
        hg_value_replace_uses(v, o); /* the graph output now names o */
    for (guint u = 0; u < uses->len; u++) {
        HgUse *use = &g_array_index(uses, HgUse, u);
        hg_node_set_input(use->node, use->index, out ? v : o);
    }
    if (out)
        hg_node_set_input(mul, 0, v);
    if (v->type)
        hg_value_set_elem_type(o, HG_DTYPE_FLOAT);
    return TRUE;
}

typedef struct {
    GPtrArray *nodes;  /* the chain, first linear op first */
    HgNode *end;       /* the absorbing node after the chain, or NULL */
} Chain;

/* The chain from linear op start forward along single readers. */
static void
build_chain(HgNode *start, GHashTable *taken, Chain *c)
{
    c->nodes = g_ptr_array_new();
    c->end = NULL;
    for (HgNode *n = start; n && c->nodes->len < MAX_CHAIN && !g_hash_table_contains(taken, n);) {
        g_ptr_array_add(c->nodes, n);
        HgNode *next = single_reader(n->outputs[0]);
        if (!next || next->graph != n->graph)
            break;
        if (absorbs(next)) {
            c->end = next;
            break;
        }
        if (!commutes(next))
            break;
        n = next;
    }
}

/* A small constant input as int64s (initializer or folded), or FALSE. */
static gboolean
const_ints(const HgShapes *shapes, const HgValue *v, gint64 *out, guint max, guint *n)
{
    g_autoptr(HgArray) a = !v ? NULL : v->init ? hg_array_from_tensor(v->init, NULL)
                                               : hg_shapes_get(shapes, v)->value
                                                     ? hg_array_ref(hg_shapes_get(shapes, v)->value)
                                                     : NULL;
    if (!a || a->numel > max)
        return FALSE;
    for (gint64 i = 0; i < a->numel; i++)
        out[i] = hg_array_get_i64(a, i);
    *n = (guint)a->numel;
    return TRUE;
}

/* A CumSum divided by its own last element (plus an epsilon), as DETR normalises its position
 * embedding: y = c / (c[..., -1:] + eps) with c = CumSum(x). It is invariant under x -> 2^-k x with
 * eps -> 2^-k eps, exactly. When c's sums pass 2048 (where FP16 stops holding integers) on an axis
 * short enough that an FP16 CumSum stays accurate (at most 128 elements: worst-case relative error
 * len x 2^-11 <= 1/16), x takes 2^-k in front of the CumSum. Returns the rewrites made. */
static guint
normalized_cumsums(HgGraph *g, HgPassCtx *ctx, HgCheckResult *res, const HgCheckOptions *opts,
                   GPtrArray *order, GError **error, gboolean *ok)
{
    const HgShapes *shapes = hg_check_shapes(res);
    const HgRanges *ranges = hg_check_ranges(res);
    double margin = opts->margin > 0 ? opts->margin : HG_DEFAULT_MARGIN;
    guint n_done = 0;
    *ok = TRUE;
    for (guint i = 0; *ok && i < order->len; i++) {
        HgNode *c = order->pdata[i];
        if (!hg_node_is(c, "CumSum") || c->n_inputs != 2 || !c->inputs[0] || !c->outputs[0] ||
            hg_node_attr_int(c, "exclusive", 0) || hg_node_attr_int(c, "reverse", 0) ||
            hg_shapes_get(shapes, c->inputs[0])->dtype != HG_DTYPE_FLOAT)
            continue;
        const HgValueShape *xs = hg_shapes_get(shapes, c->inputs[0]);
        gint64 axv[1];
        guint na;
        if (xs->rank < 1 || !const_ints(shapes, c->inputs[1], axv, 1, &na) || na != 1)
            continue;
        gint64 axis = axv[0] < 0 ? axv[0] + xs->rank : axv[0];
        gint64 len = axis >= 0 && axis < xs->rank ? xs->dims[axis].v : -1;
        if (len < 1 || len > 128)
            continue;
        /* Readers: the Div's numerator, and the Slice of the last element feeding its denominator. */
        HgValue *cv = c->outputs[0];
        HgNode *div = NULL, *slice = NULL;
        for (guint u = 0; u < cv->uses->len; u++) {
            HgUse *use = &g_array_index(cv->uses, HgUse, u);
            if (hg_node_is(use->node, "Div") && use->index == 0 && !div)
                div = use->node;
            else if (hg_node_is(use->node, "Slice") && use->index == 0 && !slice)
                slice = use->node;
            else
                div = slice = NULL, u = cv->uses->len;
        }
        if (!div || !slice || cv->uses->len != 2 || cv->is_output || slice->n_inputs < 3)
            continue;
        gint64 st[1], en[1], ax[1] = {axis}, sp[1] = {1};
        guint n1, n2, n3 = 1, n4 = 1;
        if (!const_ints(shapes, slice->inputs[1], st, 1, &n1) || !const_ints(shapes, slice->inputs[2], en, 1, &n2) ||
            (slice->n_inputs > 3 && slice->inputs[3] && !const_ints(shapes, slice->inputs[3], ax, 1, &n3)) ||
            (slice->n_inputs > 4 && slice->inputs[4] && !const_ints(shapes, slice->inputs[4], sp, 1, &n4)) ||
            n1 != 1 || n2 != 1 || n3 != 1 || n4 != 1)
            continue;
        gint64 a2 = ax[0] < 0 ? ax[0] + xs->rank : ax[0];
        gint64 s0 = st[0] < 0 ? st[0] + len : st[0];
        if (a2 != axis || sp[0] != 1 || s0 != len - 1 || en[0] < len)
            continue;
        /* The denominator: the slice itself, or the slice plus a constant epsilon. */
        HgValue *den = div->inputs[1], *sv = slice->outputs[0];
        HgNode *add = NULL;
        if (den != sv) {
            add = den ? den->producer : NULL;
            if (!hg_node_is(add, "Add") || add->n_inputs != 2 || sv->uses->len != 1 ||
                !(add->inputs[0] == sv || add->inputs[1] == sv) ||
                !is_const(add->inputs[add->inputs[0] == sv ? 1 : 0]) || den->uses->len != 1)
                continue;
        } else if (sv->uses->len != 1) {
            continue;
        }
        /* k: the sums (static bound, or calibration with margin) down to 2048. */
        const HgRange *r = hg_ranges_get(ranges, cv);
        double big = MAX(fabs(r->lo), fabs(r->hi));
        const HgTensorStats *s = opts->stats ? g_hash_table_lookup(opts->stats, cv->name) : NULL;
        if (s && !isnan(s->absmax) && !s->n_inf)
            big = MIN(big, s->absmax * margin);
        if (!isfinite(big) || big <= 2048)
            continue;
        int k = (int)ceil(log2(big / 2048));
        const HgRange *xr = hg_ranges_get(ranges, c->inputs[0]);
        if (ldexp(MAX(fabs(xr->lo), fabs(xr->hi)), -k) < 0x1p-4) {
            hg_pass_note(ctx, "rescale", "left the normalized CumSum '%s' unscaled: 2^-%d would push its "
                         "input below 2^-4", c->name ? c->name : "", k);
            continue;
        }
        /* x * 2^-k in front of the CumSum; the epsilon takes 2^-k too. */
        g_autofree char *kname = hg_graph_unique_name(g, "rescale_cumsum");
        HgValue *kv = hg_graph_new_value(g, kname, error);
        g_autofree char *base = g_strdup_printf("%s_scaled", c->inputs[0]->name);
        g_autofree char *mname = hg_graph_unique_name(g, base);
        HgValue *mv = kv ? hg_graph_new_value(g, mname, error) : NULL;
        if (!mv) {
            *ok = FALSE;
            break;
        }
        HgTensor *t = hg_tensor_new(kname, HG_DTYPE_FLOAT, 0, NULL);
        *(float *)hg_tensor_data_mut(t) = (float)ldexp(1.0, -k);
        hg_graph_add_initializer(g, kv, t);
        HgValue *ins[2] = {c->inputs[0], kv};
        g_autofree char *nname = g_strdup_printf("%s/rescale", c->name ? c->name : "CumSum");
        g_autofree char *nuniq = hg_graph_unique_name(g, nname);
        hg_graph_add_node(g, "Mul", NULL, nuniq, 2, ins, 1, &mv);
        hg_node_set_input(c, 0, mv);
        if (add)
            *ok = scale_const(g, add, add->inputs[0] == sv ? 1 : 0, -k, error);
        if (*ok && opts->stats)
            for (guint j = 0; j < 2; j++) { /* the sums and the slice hold scaled values now */
                const HgValue *v = j ? sv : cv;
                const HgTensorStats *old = g_hash_table_lookup(opts->stats, v->name);
                if (old) {
                    HgTensorStats sc = *old;
                    sc.min = ldexp(sc.min, -k), sc.max = ldexp(sc.max, -k);
                    sc.absmax = ldexp(sc.absmax, -k), sc.min_abs_nonzero = ldexp(sc.min_abs_nonzero, -k);
                    hg_stats_set(opts->stats, v->name, &sc);
                }
            }
        hg_pass_note(ctx, "rescale", "normalized CumSum '%s': input x 2^-%d (its sums reach %.3g > 2048; "
                     "over %" G_GINT64_FORMAT " elements an FP16 CumSum's worst-case relative error is %.2g)",
                     c->name ? c->name : "", k, big, len, (double)len / 2048.0);
        n_done++;
    }
    return n_done;
}

gboolean
hg_pass_rescale(HgGraph *g, HgPassCtx *ctx, GError **error)
{
    HgCheckOptions none = {0};
    const HgCheckOptions *opts = ctx->check ? ctx->check : &none;
    HgCheckResult *res = hg_pass_ctx_analysis(ctx, g, error);
    if (!res)
        return FALSE;
    const HgRanges *ranges = hg_check_ranges(res);
    double threshold = opts->threshold > 0 ? opts->threshold : HG_DEFAULT_THRESHOLD;
    double margin = opts->margin > 0 ? opts->margin : HG_DEFAULT_MARGIN;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return FALSE;
    g_autoptr(GHashTable) taken = g_hash_table_new(NULL, NULL);
    gboolean cumsums_ok;
    guint n_done = normalized_cumsums(g, ctx, res, opts, order, error, &cumsums_ok);
    if (!cumsums_ok)
        return FALSE;
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        if (!n->n_outputs || !hg_check_value_unsafe(res, n->outputs[0]) || g_hash_table_contains(taken, n) ||
            !commutes(n))
            continue;
        /* Back to the chain's first linear op, along single readers. */
        HgNode *start = NULL;
        for (HgNode *p = n; p && commutes(p) && !g_hash_table_contains(taken, p);) {
            if (is_linear(p))
                start = p;
            HgValue *in = p->inputs[0];
            HgNode *q = in ? in->producer : NULL;
            if (!q || single_reader(in) != p || q->graph != g)
                break;
            p = q;
        }
        if (!start)
            continue;
        Chain c;
        build_chain(start, taken, &c);
        /* k from the largest magnitude in the chain; the smallest largest magnitude limits it. */
        double big = 0, small = INFINITY;
        gboolean known = TRUE;
        for (guint j = 0; j < c.nodes->len; j++) {
            const HgNode *m = c.nodes->pdata[j];
            const HgRange *r = hg_ranges_get(ranges, m->outputs[0]);
            double b = MAX(fabs(r->lo), fabs(r->hi));
            const HgTensorStats *s =
                opts->stats ? g_hash_table_lookup(opts->stats, m->outputs[0]->name) : NULL;
            if (s && !isnan(s->absmax) && !s->n_inf)
                b = MIN(b, s->absmax * margin);
            known &= isfinite(b);
            big = MAX(big, b);
            if (b > 0)
                small = MIN(small, b);
        }
        int k = known && big > 0 ? (int)ceil(log2(big / threshold)) : -1;
        gboolean fits = known && k > 0 && k < 60 && ldexp(small, -k) >= 0x1p-4;
        if (!fits) {
            if (known && k > 0)
                hg_pass_note(ctx, "rescale", "left the chain from '%s' unscaled: 2^-%d would push its values "
                             "(down to %.3g) below 2^-4", start->name ? start->name : "", k, small);
            for (guint j = 0; j < c.nodes->len; j++)
                g_hash_table_add(taken, c.nodes->pdata[j]);
            g_ptr_array_unref(c.nodes);
            continue;
        }
        /* The first linear op takes 2^-k in weights and bias; later biases and constants follow. */
        gboolean ok = TRUE;
        for (guint j = 0; ok && j < c.nodes->len; j++) {
            HgNode *m = c.nodes->pdata[j];
            g_hash_table_add(taken, m);
            if (j == 0) {
                ok = scale_const(g, m, 1, -k, error);
                if (ok && m->n_inputs >= 3 && m->inputs[2])
                    ok = scale_const(g, m, 2, -k, error);
            } else if (is_linear(m) || hg_node_is(m, "Add") || hg_node_is(m, "Sub")) {
                guint b = is_linear(m) ? 2 : 1;
                if (b < m->n_inputs && m->inputs[b])
                    ok = scale_const(g, m, b, -k, error);
            } else if (hg_node_is(m, "Clip")) {
                for (guint b = 1; ok && b < m->n_inputs; b++)
                    if (m->inputs[b])
                        ok = scale_const(g, m, b, -k, error);
                for (guint a = 0; a < m->attrs->len; a++) {
                    HgAttr *at = m->attrs->pdata[a];
                    if (!strcmp(at->name, "min") || !strcmp(at->name, "max"))
                        at->f = (float)ldexp(at->f, -k);
                }
            } else if (hg_node_is(m, "BatchNormalization")) {
                ok = scale_const(g, m, 2, -k, error) && scale_const(g, m, 3, -k, error);
            }
        }
        HgNode *last = c.nodes->pdata[c.nodes->len - 1];
        g_autofree char *last_name = g_strdup(last->outputs[0]->name);
        const char *how;
        if (ok && c.end && (hg_node_is(c.end, "Mul") || hg_node_is(c.end, "Div"))) {
            ok = scale_const(g, c.end, 1, hg_node_is(c.end, "Mul") ? k : -k, error);
            how = "undone by the constant of";
        } else if (ok && c.end) {
            HgAttr *eps = hg_node_attr(c.end, "epsilon");
            if (!eps) {
                eps = hg_attr_new("epsilon", HG_ATTR_FLOAT);
                eps->has |= HG_ATTR_HAS_F;
                eps->f = 1e-5f; /* the default of all three */
                hg_node_add_attr(c.end, eps);
            }
            eps->f = (float)ldexp(eps->f, -2 * k);
            how = "absorbed by the normalization";
        } else if (ok) {
            ok = undo_after(g, last->outputs[0], k, error);
            how = "undone by a Mul after";
        }
        /* Calibration saw the unscaled tensors: what it says of the chain's tensors scales too. The
         * chain's last tensor may have given its name to the undoing Mul, whose values are the
         * unscaled ones: its statistics move to the tensor's new name. */
        for (guint j = 0; ok && opts->stats && j < c.nodes->len; j++) {
            const HgValue *v = ((const HgNode *)c.nodes->pdata[j])->outputs[0];
            const char *was = j + 1 == c.nodes->len ? last_name : v->name;
            HgTensorStats *s = g_hash_table_lookup(opts->stats, was);
            if (!s)
                continue;
            HgTensorStats scaled = *s;
            scaled.min = ldexp(s->min, -k);
            scaled.max = ldexp(s->max, -k);
            scaled.absmax = ldexp(s->absmax, -k);
            scaled.min_abs_nonzero = ldexp(s->min_abs_nonzero, -k);
            hg_stats_set(opts->stats, v->name, &scaled);
        }
        if (ok) {
            const HgNode *at = c.end ? c.end : last;
            hg_pass_note(ctx, "rescale", "chain of %u node%s from '%s': weights x 2^-%d (k = %d: its tensors "
                         "reach %.3g > %g), %s '%s'", c.nodes->len, c.nodes->len == 1 ? "" : "s",
                         start->name ? start->name : "", k, k, big, threshold, how, at->name ? at->name : "");
            n_done++;
        }
        g_ptr_array_unref(c.nodes);
        if (!ok)
            return FALSE;
    }
    if (n_done) {
        hg_graph_touch(g);
        ctx->n_changed += n_done;
        return hg_graph_sort(g, error);
    }
    return TRUE;
}
