/* stable_softplus: a softplus whose exp overflows FP16 becomes the form that never exponentiates a
 * positive number.
 *
 *     y = Softplus(x)                        y = Add(Relu(x), Softplus(Neg(Abs(x))))
 *     y = Log(Add(Exp(x), 1))         =>     y = Add(Relu(x), Log(Add(Exp(Neg(Abs(x))), 1)))
 *
 * log(1 + e^x) = max(x, 0) + log(1 + e^-|x|) for every real x, so the two forms are the same function;
 * the second only ever takes exp of a value <= 0, in (0, 1], and its log reads a value in (1, 2]. In
 * FP16 the first passes 65504 inside (e^x for x > 11.09: an internal overflow of the Softplus op, an
 * overflow of the Exp of the written-out form) and gives inf where the result, about x, fits; the
 * second gives x plus at most log 2, each term rounded once. (In FP32 the written-out form itself
 * gives inf past x = 88.7; the rewritten one gives x.)
 *
 * A Softplus is rewritten where the check finds the internal overflow (its input may pass 11.09), a
 * Log(Add(Exp(x), 1)) where it finds the Exp's overflow and nothing else reads the Exp's or the Add's
 * output. The nodes of the original keep their names (the check's findings at them are gone after the
 * rewrite); the Abs, Neg, Relu and Add are new, named after the Softplus or the Log. The pointwise
 * nodes this adds fuse with their neighbours in TensorRT, and an FP32 island would cost two Casts
 * and a kernel of its own: the rewrite is made wherever the hazard is, without weighing it.
 */
#include "halfguard/pass.h"

#include <string.h>

#include "hazards.h"
#include "ops/array.h"

#define PASS "stable_softplus"

/* Is v a constant whose every value is 1 (a scalar or a broadcast tensor)? */
static gboolean
all_ones(const HgShapes *shapes, const HgValue *v)
{
    const HgArray *a = v && !v->is_input ? hg_shapes_get(shapes, v)->value : NULL;
    if (!a || a->numel < 1 || !hg_dtype_is_float(a->dtype))
        return FALSE;
    for (gint64 i = 0; i < a->numel; i++)
        if (hg_array_get_f64(a, i) != 1.0)
            return FALSE;
    return TRUE;
}

/* The only node reading v, when exactly one node reads it once and v is no graph output. */
static HgNode *
sole_reader(const HgValue *v)
{
    if (!v || v->is_output || v->nested_outputs || v->uses->len != 1)
        return NULL;
    return g_array_index(v->uses, HgUse, 0).node;
}

/* A new node op_type(in) named base_suffix, writing a new value; placed before anchor. */
static HgNode *
add_unary(HgGraph *g, const char *op_type, HgValue *in, const char *base, const char *suffix, HgNode *anchor,
          GError **error)
{
    g_autofree char *want = g_strconcat(base, suffix, NULL);
    g_autofree char *name = hg_graph_unique_name(g, want);
    HgValue *out = hg_graph_new_value(g, name, error);
    if (!out)
        return NULL;
    HgNode *n = hg_graph_add_node(g, op_type, NULL, name, 1, &in, 1, &out);
    hg_graph_move_node_before(g, n, anchor);
    return n;
}

/* Rewrite around head (the Softplus, or the Exp of the written-out form) and tail (the node whose
 * output is y: the Softplus itself, or the Log): head reads Neg(Abs(x)) instead of x, and y becomes
 * Add(Relu(x), what tail now writes). */
static gboolean
rewrite(HgGraph *g, HgNode *head, HgNode *tail, GError **error)
{
    HgValue *x = head->inputs[0], *y = tail->outputs[0];
    const char *base = tail->name && *tail->name ? tail->name : y->name;
    HgNode *abs = add_unary(g, "Abs", x, base, "_abs", head, error);
    HgNode *neg = abs ? add_unary(g, "Neg", abs->outputs[0], base, "_neg", head, error) : NULL;
    HgNode *relu = neg ? add_unary(g, "Relu", x, base, "_relu", head, error) : NULL;
    if (!relu)
        return FALSE;
    hg_node_set_input(head, 0, neg->outputs[0]);
    g_autofree char *twant = g_strconcat(y->name, "_stable", NULL);
    g_autofree char *tname = hg_graph_unique_name(g, twant);
    HgValue *t = hg_graph_new_value(g, tname, error);
    if (!t)
        return FALSE;
    hg_node_set_output(tail, 0, t);
    g_autofree char *want = g_strconcat(base, "_add", NULL);
    g_autofree char *aname = hg_graph_unique_name(g, want);
    HgValue *ins[2] = {relu->outputs[0], t};
    HgNode *add = hg_graph_add_node(g, "Add", NULL, aname, 2, ins, 1, &y);
    /* right after tail, so that a sorted file stays sorted */
    guint at = 0;
    while (at < g->nodes->len && g->nodes->pdata[at] != tail)
        at++;
    if (at + 1 < g->nodes->len && g->nodes->pdata[at + 1] != add)
        hg_graph_move_node_before(g, add, g->nodes->pdata[at + 1]);
    return TRUE;
}

gboolean
hg_pass_stable_softplus(HgGraph *g, const HgPassEnv *env, GError **error)
{
    HgCheckResult *res = hg_analyses_get(env->analyses, g, error);
    if (!res)
        return FALSE;
    const HgShapes *shapes = hg_check_shapes(res);
    /* Add broadcasts as the rewrite needs (and runtimes have its kernel) from opset 7 on. */
    if (g->model && hg_model_opset(g->model, "") < 7)
        return TRUE;
    /* The matches first: the analysis holds pointers into the graph as it was. */
    g_autoptr(GPtrArray) heads = g_ptr_array_new(), tails = g_ptr_array_new();
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < res->hazards->len; i++) {
        const HgHazard *h = res->hazards->pdata[i];
        HgNode *n = (HgNode *)h->at;
        /* (the main graph's nodes: a subgraph's stay as they are) */
        if (!n || n->graph != g || h->suppressed || !g_hash_table_add(seen, n) || n->n_inputs < 1 ||
            !n->inputs[0] || !n->outputs[0])
            continue;
        if (h->kind == HG_HAZARD_INTERNAL_OVERFLOW && hg_node_is(n, "Softplus")) {
            g_ptr_array_add(heads, n);
            g_ptr_array_add(tails, n);
            continue;
        }
        if (h->kind != HG_HAZARD_OVERFLOW || !hg_node_is(n, "Exp"))
            continue;
        HgNode *add = sole_reader(n->outputs[0]);
        if (!hg_node_is(add, "Add") || add->graph != g || add->n_inputs != 2 || !add->outputs[0])
            continue;
        guint k = add->inputs[0] == n->outputs[0] ? 1 : 0;
        HgNode *log = sole_reader(add->outputs[0]);
        if (add->inputs[k] == n->outputs[0] || !all_ones(shapes, add->inputs[k]) || !hg_node_is(log, "Log") ||
            log->graph != g || !log->outputs[0])
            continue;
        /* the constant must not widen the shape: Exp's output is as large as the sum */
        const HgValueShape *es = hg_shapes_get(shapes, n->outputs[0]), *as = hg_shapes_get(shapes, add->outputs[0]);
        if (es->rank < 0 || es->rank != as->rank)
            continue;
        gboolean same = TRUE;
        for (int d = 0; d < es->rank && same; d++)
            same = (es->dims[d].v >= 0 && es->dims[d].v == as->dims[d].v) ||
                   (es->dims[d].sym && as->dims[d].sym && !strcmp(es->dims[d].sym, as->dims[d].sym));
        if (!same)
            continue;
        g_ptr_array_add(heads, n);
        g_ptr_array_add(tails, log);
    }
    for (guint i = 0; i < heads->len; i++) {
        HgNode *head = heads->pdata[i], *tail = tails->pdata[i];
        const char *at = tail->name && *tail->name ? tail->name : tail->outputs[0]->name;
        if (!rewrite(g, head, tail, error))
            return FALSE;
        hg_pass_note(env->result, PASS, "%s '%s': exp now reads -|x| (softplus(x) = relu(x) + softplus(-|x|))",
                     head == tail ? "Softplus" : "Log(Exp(x) + 1) at", at);
    }
    if (heads->len) {
        env->result->n_changed += heads->len;
        hg_graph_touch(g);
    }
    return TRUE;
}
