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
 * A Cast pair cancels only up then down (FP16 or BF16 to FP32 or FP64 and back, FP32 to FP64 and
 * back), where the first Cast's input type is known: down then up rounds, so it stays. A Cast whose
 * output is a graph output stays (its name is the output's).
 * Only default-domain nodes are removed: a node of another domain may have effects that ONNX does not
 * describe, so it stays. The topological sort keeps the file's order wherever it already is one, so a
 * sorted graph with nothing dead comes out unchanged. Runs on subgraphs too.
 */
#include "halfguard/pass.h"
#include "ir_private.h"

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

typedef struct {
    const HgPassEnv *env;
    guint removed, removed_inits, merged;
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
}

static void
collect_graph(HgGraph *g, gpointer data)
{
    g_ptr_array_add(data, g);
}

gboolean
hg_pass_cleanup(HgGraph *g, const HgPassEnv *env, GError **error)
{
    CleanupCtx c = {env, 0, 0, 0, error, TRUE};
    /* Collect graphs first: removing nodes frees subgraphs that a live walk would visit. */
    g_autoptr(GPtrArray) graphs = g_ptr_array_new();
    hg_graph_foreach(g, collect_graph, graphs);
    for (guint i = graphs->len; i-- > 0 && c.ok;)
        cleanup_graph(graphs->pdata[i], &c);
    if (c.merged) {
        hg_pass_note(env->result, "cleanup", "merged %u Cast%s", c.merged, c.merged == 1 ? "" : "s");
        env->result->n_changed += c.merged;
        env->result->n_casts -= MIN(env->result->n_casts, c.merged);
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
