/* cleanup: remove what computes nothing, and leave the nodes in a topological order.
 *
 *     x -> A -> y (no uses, not a graph output)      =>   (A removed; then A's inputs may die too)
 *     nodes listed B, A where B reads A's output      =>   A, B
 *
 *     initializer w that nothing reads              =>   (w removed)
 *
 *     x:f16 -> Cast(to=f32) -> Cast(to=f16) -> B     =>   x -> B   (up then down changes no value)
 *     x -> Cast(to=f16) -> A,  x -> Cast(to=f16) -> B =>   one Cast read by A and B
 *     x:f16 -> Cast(to=f16) -> A                       =>   x -> A   (a Cast that changes nothing)
 *
 *     x:f16 -> Transpose(1,0,2) -> MatMul(., W:f16 2-D constant) -> y
 *  => x -> MatMul(., W) -> Transpose(1,0,2) -> y
 *     (a Transpose that keeps the last axis commutes with a product by a matrix: the same dot
 *     products, in the same order; onnxruntime 1.30's CPU optimizer at its default level crashes
 *     (SIGSEGV, at session creation) on the first form in FP16: torchvision's ViT and every
 *     batch_first=False RNN head export it)
 *
 * A Cast pair cancels only up then down (FP16 or BF16 to FP32 or FP64 and back, FP32 to FP64 and
 * back), where the first Cast's input type is known: down then up rounds, so it stays. A Cast whose
 * output is a graph output stays (its name is the output's).
 * Only default-domain nodes are removed: a node of another domain may have effects that ONNX does not
 * describe, so it stays. The topological sort keeps the file's order wherever it already is one, so a
 * sorted graph with nothing dead comes out unchanged. Runs on subgraphs too.
 */
#include "halfguard/pass.h"
#include "ir_private.h"
#include "ops/op.h"

static gboolean
is_default_domain(const HgNode *n)
{
    return !n->domain || !*n->domain || g_strcmp0(n->domain, "ai.onnx") == 0;
}

static gboolean
is_dead(const HgNode *n)
{
    if (n->flags & HG_NODE_DEAD || !is_default_domain(n) || n->n_outputs == 0)
        return FALSE;
    for (guint i = 0; i < n->n_outputs; i++) {
        const HgValue *v = n->outputs[i];
        if (v && (v->uses->len || v->is_output || v->nested_outputs))
            return FALSE;
    }
    return TRUE;
}

static gboolean
is_cast(const HgNode *n)
{
    return !(n->flags & HG_NODE_DEAD) && is_default_domain(n) && g_strcmp0(n->op_type, "Cast") == 0 &&
           n->n_inputs == 1 && n->n_outputs == 1 && n->inputs[0] && n->outputs[0];
}

/* Does every value of type a survive a trip through type b? */
static gboolean
widens(int a, int b)
{
    if (a == HG_DTYPE_FLOAT16 || a == HG_DTYPE_BFLOAT16)
        return b == HG_DTYPE_FLOAT || b == HG_DTYPE_DOUBLE;
    return a == HG_DTYPE_FLOAT && b == HG_DTYPE_DOUBLE;
}

/* Cast pairs that cancel and duplicate Casts of one tensor; their readers move to what they stand
 * for, and the Casts die with the dead nodes. */
static guint
merge_casts(HgGraph *g)
{
    guint n = 0;
    g_autoptr(GHashTable) first = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *c = g->nodes->pdata[i];
        if (!is_cast(c) || c->outputs[0]->is_output || c->outputs[0]->nested_outputs)
            continue;
        HgValue *y = c->inputs[0], *z = c->outputs[0];
        gint64 to = hg_node_attr_int(c, "to", 0);
        if (hg_value_elem_type(y) == to && y->graph == g) {
            /* A Cast to the type its input already has (lower retargets a Cast(to=FLOAT) whose
             * input went FP16): it changes nothing, and ONNX Runtime's CPU provider refuses an
             * FP16-to-FP16 one. */
            hg_value_replace_uses(z, y);
            n++;
            continue;
        }
        HgNode *p = y->producer;
        if (p && is_cast(p) && p->graph == g) {
            HgValue *x = p->inputs[0];
            if (hg_value_elem_type(x) == to && widens((int)to, (int)hg_node_attr_int(p, "to", 0)) &&
                x->graph == g) {
                hg_value_replace_uses(z, x);
                n++;
                continue;
            }
        }
        g_autofree char *key = g_strdup_printf("%p\x01%" G_GINT64_FORMAT, (void *)y, to);
        HgValue *same = g_hash_table_lookup(first, key);
        if (same) {
            hg_value_replace_uses(z, same);
            n++;
        } else {
            g_hash_table_insert(first, g_steal_pointer(&key), z);
        }
    }
    return n;
}

/* The Transpose before an FP16 MatMul by a 2-D constant moves after it where it keeps the last axis
 * (see the top): the MatMul reads the Transpose's input, and a new Transpose with the same perm writes
 * the MatMul's old output. The old Transpose stays for its other readers (a Shape of it, say), or
 * dies with the dead nodes. */
static guint
sink_transposes(HgGraph *g)
{
    guint n = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *m = g->nodes->pdata[i];
        if ((m->flags & HG_NODE_DEAD) || !is_default_domain(m) || g_strcmp0(m->op_type, "MatMul") ||
            m->n_inputs != 2 || m->n_outputs != 1 || !m->inputs[0] || !m->inputs[1] || !m->outputs[0])
            continue;
        HgValue *t = m->inputs[0], *w = m->inputs[1], *y = m->outputs[0];
        HgNode *p = t->producer;
        if (!p || p->graph != g || (p->flags & HG_NODE_DEAD) || !is_default_domain(p) ||
            g_strcmp0(p->op_type, "Transpose") || p->n_inputs != 1 || !p->inputs[0] || !w->init || w->is_input ||
            w->init->rank != 2 || w->init->dtype != HG_DTYPE_FLOAT16) /* (MatMul's A, B and Y share one type) */
            continue;
        guint np = 0;
        const gint64 *perm = hg_attr_ints(p, "perm", &np);
        if (!perm || np < 3 || perm[np - 1] != (gint64)np - 1)
            continue;
        g_autofree char *pre = g_strconcat(y->name ? y->name : "matmul", "/before_transpose", NULL);
        g_autofree char *uname = hg_graph_unique_name(g, pre);
        g_autofree char *qname = hg_graph_unique_name(g, p->name ? p->name : "transpose");
        HgValue *u = hg_graph_new_value(g, uname, NULL);
        if (!u)
            continue;
        hg_value_set_elem_type(u, HG_DTYPE_FLOAT16);
        hg_node_set_output(m, 0, u);
        hg_node_set_input(m, 0, p->inputs[0]);
        HgNode *q = hg_graph_add_node(g, "Transpose", NULL, qname, 1, &u, 1, &y);
        HgAttr *a = hg_attr_new("perm", HG_ATTR_INTS);
        a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), np);
        g_array_append_vals(a->ints, perm, np);
        hg_node_add_attr(q, a);
        n++;
    }
    return n;
}

typedef struct {
    const HgPassEnv *env;
    guint removed, removed_inits, merged, sunk, placed;
    GError **error;
    gboolean ok;
} CleanupCtx;

static void
cleanup_graph(HgGraph *g, gpointer data)
{
    CleanupCtx *c = data;
    if (!c->ok)
        return;
    c->merged += merge_casts(g);
    c->sunk += sink_transposes(g);
    /* Walk backwards so a chain of dead nodes dies in one sweep when the file is sorted; repeat
     * until nothing changes for unsorted files. */
    gboolean changed;
    do {
        changed = FALSE;
        for (guint i = g->nodes->len; i-- > 0;) {
            HgNode *n = g->nodes->pdata[i];
            if (is_dead(n)) {
                hg_node_remove(n);
                c->removed++;
                changed = TRUE;
            }
        }
    } while (changed);
    /* Initializers nothing reads (and that are not graph inputs or outputs) go too. */
    for (guint i = g->initializers->len; i-- > 0;) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t || v->uses->len || v->is_input || v->is_output || v->nested_outputs)
            continue;
        hg_value_remove_initializer(v);
        c->removed_inits++;
    }
    hg_graph_compact(g);
    c->ok = hg_graph_sort(g, c->error);
    for (guint i = 0; i < g->nodes->len; i++)
        if (((HgNode *)g->nodes->pdata[i])->flags & HG_NODE_PLACED_CAST)
            c->placed++;
}

static void
collect_graph(HgGraph *g, gpointer data)
{
    g_ptr_array_add(data, g);
}

gboolean
hg_pass_cleanup(HgGraph *g, const HgPassEnv *env, GError **error)
{
    CleanupCtx c = {env, 0, 0, 0, 0, 0, error, TRUE};
    /* Collect graphs first: removing nodes frees subgraphs that a live walk would visit. */
    g_autoptr(GPtrArray) graphs = g_ptr_array_new();
    hg_graph_foreach(g, collect_graph, graphs);
    for (guint i = graphs->len; i-- > 0 && c.ok;)
        cleanup_graph(graphs->pdata[i], &c);
    if (c.merged) {
        hg_pass_note(env->result, "cleanup", "merged %u Cast%s", c.merged, c.merged == 1 ? "" : "s");
        env->result->n_changed += c.merged;
    }
    /* The summary's Casts: those lower placed that are still there (a merge may remove one of them,
     * or one of the model's own). */
    if (c.ok)
        env->result->n_casts = c.placed;
    if (c.sunk) {
        hg_pass_note(env->result, "cleanup", "moved %u Transpose%s after the FP16 MatMul%s that read%s %s",
                     c.sunk, c.sunk == 1 ? "" : "s", c.sunk == 1 ? "" : "s", c.sunk == 1 ? "s" : "",
                     c.sunk == 1 ? "it" : "them");
        env->result->n_changed += c.sunk;
    }
    if (c.removed) {
        hg_pass_note(env->result, "cleanup", "removed %u dead node%s", c.removed, c.removed == 1 ? "" : "s");
        env->result->n_changed += c.removed;
    }
    if (c.removed_inits) {
        hg_pass_note(env->result, "cleanup", "removed %u unused initializer%s", c.removed_inits,
                     c.removed_inits == 1 ? "" : "s");
        env->result->n_changed += c.removed_inits;
    }
    return c.ok;
}
