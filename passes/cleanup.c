/* cleanup: remove what computes nothing, and leave the nodes in a topological order.
 *
 *     x -> A -> y (no uses, not a graph output)      =>   (A removed; then A's inputs may die too)
 *     nodes listed B, A where B reads A's output      =>   A, B
 *
 *     initializer w that nothing reads              =>   (w removed)
 *
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

typedef struct {
    HgPassCtx *ctx;
    guint removed, removed_inits;
    GError **error;
    gboolean ok;
} CleanupCtx;

static void
cleanup_graph(HgGraph *g, gpointer data)
{
    CleanupCtx *c = data;
    if (!c->ok)
        return;
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
        v->init = NULL;
        g_ptr_array_remove_index(g->initializers, i);
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
hg_pass_cleanup(HgGraph *g, HgPassCtx *ctx, GError **error)
{
    CleanupCtx c = {ctx, 0, 0, error, TRUE};
    /* Collect graphs first: removing nodes frees subgraphs that a live walk would visit. */
    g_autoptr(GPtrArray) graphs = g_ptr_array_new();
    hg_graph_foreach(g, collect_graph, graphs);
    for (guint i = graphs->len; i-- > 0 && c.ok;)
        cleanup_graph(graphs->pdata[i], &c);
    if (c.removed) {
        hg_pass_note(ctx, "cleanup", "removed %u dead node%s", c.removed, c.removed == 1 ? "" : "s");
        ctx->n_changed += c.removed;
    }
    if (c.removed_inits) {
        hg_pass_note(ctx, "cleanup", "removed %u unused initializer%s", c.removed_inits,
                     c.removed_inits == 1 ? "" : "s");
        ctx->n_changed += c.removed_inits;
    }
    return c.ok;
}
