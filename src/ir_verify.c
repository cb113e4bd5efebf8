/* The graph IR's order and invariants: hg_graph_topo_order (Kahn's algorithm over the edges between
 * nodes and those their subgraphs add through outer-scope reads, ties going to the earlier node),
 * hg_graph_sort, and hg_graph_verify (one definition per value, every input defined and visible from
 * its graph, use records in step, declarations that name values of their graph). */
#include "halfguard/ir.h"
#include "ir_private.h"

#include <string.h>

/* ---------------------------------------------------------------- topological order */

/* Min-heap of node orders: Kahn's algorithm that always takes the earliest ready node in file order,
 * so a file that is already sorted comes out in its own order. */
typedef struct {
    guint *a;
    guint n;
} Heap;

static void
heap_push(Heap *h, guint x)
{
    guint i = h->n++;
    h->a[i] = x;
    while (i > 0) {
        guint p = (i - 1) / 2;
        if (h->a[p] <= h->a[i])
            break;
        guint t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static guint
heap_pop(Heap *h)
{
    guint top = h->a[0];
    h->a[0] = h->a[--h->n];
    guint i = 0;
    for (;;) {
        guint l = 2 * i + 1, r = l + 1, s = i;
        if (l < h->n && h->a[l] < h->a[s])
            s = l;
        if (r < h->n && h->a[r] < h->a[s])
            s = r;
        if (s == i)
            break;
        guint t = h->a[s];
        h->a[s] = h->a[i];
        h->a[i] = t;
        i = s;
    }
    return top;
}

/* For every value of g read by a node (directly or from a subgraph), add an edge from its producer
 * to the reading node's ancestor in g. */
typedef struct {
    HgGraph *g;
    guint *indeg;
    GPtrArray *succ; /* per node order: GArray of guint successors */
} EdgeCtx;

static void
add_edge(EdgeCtx *c, HgNode *from, HgNode *to)
{
    GArray *s = c->succ->pdata[from->order];
    if (!s) {
        s = g_array_new(FALSE, FALSE, sizeof(guint));
        c->succ->pdata[from->order] = s;
    }
    g_array_append_val(s, to->order);
    c->indeg[to->order]++;
}

/* The edges that sub (g itself, or a graph nested in g at any depth) adds. reader: the node of g that
 * contains sub (NULL for g itself), handed down the walk: finding it again from each nested node made
 * the walk cost the depth per node (1,200 nested Ifs of width 40: 336 s). */
static void
edges_of_graph(EdgeCtx *c, HgGraph *sub, HgNode *reader)
{
    /* A nested graph may pass an outer value straight through as its output. */
    if (reader) {
        for (guint i = 0; i < sub->outputs->len; i++) {
            HgValue *v = ((HgValueDecl *)sub->outputs->pdata[i])->value;
            if (v && v->graph == c->g && v->producer && !(v->producer->flags & HG_NODE_DEAD))
                add_edge(c, v->producer, reader);
        }
    }
    for (guint i = 0; i < sub->nodes->len; i++) {
        HgNode *n = sub->nodes->pdata[i];
        if (n->flags & HG_NODE_DEAD)
            continue;
        HgNode *r = reader ? reader : n;
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (!v || v->graph != c->g || !v->producer || (v->producer->flags & HG_NODE_DEAD))
                continue;
            add_edge(c, v->producer, r);
        }
        for (guint k = 0; k < n->attrs->len; k++) {
            HgAttr *a = n->attrs->pdata[k];
            if (a->g)
                edges_of_graph(c, a->g, r);
            for (guint j = 0; a->graphs && j < a->graphs->len; j++)
                edges_of_graph(c, a->graphs->pdata[j], r);
        }
    }
}

GPtrArray *
hg_graph_topo_order(HgGraph *g, GError **error)
{
    g_return_val_if_fail(g != NULL, NULL);
    guint n = g->nodes->len;
    for (guint i = 0; i < n; i++)
        ((HgNode *)g->nodes->pdata[i])->order = i;
    EdgeCtx c = {g, g_new0(guint, n ? n : 1), g_ptr_array_new_full(n, NULL)};
    g_ptr_array_set_size(c.succ, n);
    edges_of_graph(&c, g, NULL);

    GPtrArray *out = g_ptr_array_new_full(n, NULL);
    Heap h = {g_new(guint, n ? n : 1), 0};
    guint live = 0;
    for (guint i = 0; i < n; i++) {
        HgNode *nd = g->nodes->pdata[i];
        if (nd->flags & HG_NODE_DEAD)
            continue;
        live++;
        if (c.indeg[i] == 0)
            heap_push(&h, i);
    }
    while (h.n) {
        guint i = heap_pop(&h);
        g_ptr_array_add(out, g->nodes->pdata[i]);
        GArray *s = c.succ->pdata[i];
        for (guint k = 0; s && k < s->len; k++) {
            guint j = g_array_index(s, guint, k);
            if (--c.indeg[j] == 0)
                heap_push(&h, j);
        }
    }
    gboolean ok = out->len == live;
    if (!ok) {
        /* Name a node on the cycle: one that never became ready. */
        const HgNode *stuck = NULL;
        for (guint i = 0; i < n && !stuck; i++) {
            HgNode *nd = g->nodes->pdata[i];
            if (!(nd->flags & HG_NODE_DEAD) && c.indeg[i] > 0)
                stuck = nd;
        }
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "node '%s' (%s): the graph has a cycle",
                    stuck && stuck->name ? stuck->name : "", stuck ? stuck->op_type : "?");
    }
    for (guint i = 0; i < n; i++)
        if (c.succ->pdata[i])
            g_array_unref(c.succ->pdata[i]);
    g_ptr_array_unref(c.succ);
    g_free(c.indeg);
    g_free(h.a);
    if (!ok) {
        g_ptr_array_unref(out);
        return NULL;
    }
    return out;
}

gboolean
hg_graph_sort(HgGraph *g, GError **error)
{
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return FALSE;
    gboolean same = TRUE;
    guint live = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *nd = g->nodes->pdata[i];
        if (nd->flags & HG_NODE_DEAD)
            continue;
        if (order->pdata[live++] != nd)
            same = FALSE;
    }
    if (same)
        return TRUE;
    hg_graph_compact(g);
    for (guint i = 0; i < order->len; i++) {
        HgNode *nd = order->pdata[i];
        nd->order = i;
        g->nodes->pdata[i] = nd;
    }
    hg_graph_touch(g);
    return TRUE;
}

/* ---------------------------------------------------------------- verify */

static gboolean
graph_encloses(const HgGraph *outer, const HgGraph *g)
{
    for (; g; g = g->parent)
        if (g == outer)
            return TRUE;
    return FALSE;
}

static const char *
node_label(const HgNode *n)
{
    return n->name ? n->name : "";
}

#define FAIL(...)                                                                        \
    do {                                                                                 \
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, __VA_ARGS__);                     \
        return FALSE;                                                                    \
    } while (0)

static gboolean
verify_decls(HgGraph *g, GPtrArray *decls, const char *what, GError **error)
{
    for (guint i = 0; i < decls->len; i++) {
        HgValueDecl *d = decls->pdata[i];
        if (!d->value)
            FAIL("graph %s '%s' names no value", what, d->name ? d->name : "");
        if (!graph_encloses(d->value->graph, g))
            FAIL("graph %s '%s' belongs to another graph", what, d->value->name);
    }
    return TRUE;
}

static gboolean
value_defined(const HgValue *v)
{
    return v->init || v->sparse_init || v->is_input || (v->producer && !(v->producer->flags & HG_NODE_DEAD));
}

static guint
use_hash(gconstpointer p)
{
    const HgUse *u = p;
    return g_direct_hash(u->node) ^ (u->index * 2654435761u);
}

static gboolean
use_equal(gconstpointer a, gconstpointer b)
{
    const HgUse *x = a, *y = b;
    return x->node == y->node && x->index == y->index;
}

static void
collect_uses(HgGraph *sub, gpointer data)
{
    GHashTable *set = data;
    GHashTableIter it;
    gpointer val;
    g_hash_table_iter_init(&it, sub->values);
    while (g_hash_table_iter_next(&it, NULL, &val)) {
        HgValue *v = val;
        for (guint j = 0; j < v->uses->len; j++)
            g_hash_table_add(set, &g_array_index(v->uses, HgUse, j));
    }
}

/* use_set: every use record of every value of the model, so that checking an input's record is one
 * lookup, not a scan of the value's uses. It is made once: made per graph from the graph and its
 * enclosing ones, it cost the depth times the outer graphs' uses. A record filed under another value
 * than the input's is stale, which that value's own check finds. */
static gboolean
verify_one(HgGraph *g, GHashTable *use_set, GError **error)
{
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (n->graph != g)
            FAIL("node '%s' (%s) is listed in a graph it does not belong to", node_label(n),
                 n->op_type);
        if (n->flags & HG_NODE_DEAD)
            continue;
        for (guint k = 0; k < n->n_outputs; k++) {
            HgValue *v = n->outputs[k];
            if (!v)
                continue;
            if (v->producer != n || v->producer_index != k)
                FAIL("node '%s' (%s): output '%s' is also defined elsewhere", node_label(n),
                     n->op_type, v->name);
            if (v->graph != g || g_hash_table_lookup(g->values, v->name) != v)
                FAIL("node '%s' (%s): output '%s' is not a value of its graph", node_label(n),
                     n->op_type, v->name);
            if (v->init || v->is_input)
                FAIL("node '%s' (%s): output '%s' is also a graph input or initializer",
                     node_label(n), n->op_type, v->name);
        }
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (!v)
                continue;
            if (!graph_encloses(v->graph, g))
                FAIL("node '%s' (%s): input '%s' is not visible from its graph", node_label(n),
                     n->op_type, v->name);
            if (!value_defined(v))
                FAIL("node '%s' (%s): input '%s' is used but never defined", node_label(n),
                     n->op_type, v->name);
            HgUse want = {n, k};
            if (!g_hash_table_contains(use_set, &want))
                FAIL("node '%s' (%s): input '%s' misses its use record", node_label(n), n->op_type,
                     v->name);
        }
    }
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, g->values);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        HgValue *v = val;
        if (strcmp(key, v->name) != 0 || v->graph != g)
            FAIL("value '%s' is filed under the wrong name or graph", v->name);
        for (guint j = 0; j < v->uses->len; j++) {
            HgUse *u = &g_array_index(v->uses, HgUse, j);
            if (u->node->flags & HG_NODE_DEAD)
                FAIL("value '%s' is used by a removed node", v->name);
            if (u->index >= u->node->n_inputs || u->node->inputs[u->index] != v)
                FAIL("value '%s' has a stale use record", v->name);
            if (!graph_encloses(g, u->node->graph))
                FAIL("value '%s' is used outside its scope", v->name);
        }
    }
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t)
            FAIL("initializer '%s' is not the value of its name", t->name ? t->name : "");
    }
    if (!verify_decls(g, g->inputs, "input", error) || !verify_decls(g, g->outputs, "output", error) ||
        !verify_decls(g, g->value_info, "value_info", error))
        return FALSE;
    for (guint i = 0; i < g->outputs->len; i++) {
        HgValueDecl *d = g->outputs->pdata[i];
        if (!value_defined(d->value))
            FAIL("graph output '%s' is never defined", d->value->name);
    }
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    return order != NULL;
}

typedef struct {
    GHashTable *use_set;
    GError **error;
    gboolean ok;
} VerifyCtx;

static void
verify_each(HgGraph *g, gpointer data)
{
    VerifyCtx *c = data;
    if (c->ok)
        c->ok = verify_one(g, c->use_set, c->error);
}

gboolean
hg_graph_verify(HgGraph *g, GError **error)
{
    g_return_val_if_fail(g != NULL, FALSE);
    g_autoptr(GHashTable) use_set = g_hash_table_new(use_hash, use_equal);
    for (HgGraph *a = g->parent; a; a = a->parent)
        collect_uses(a, use_set);
    hg_graph_foreach(g, collect_uses, use_set);
    VerifyCtx c = {use_set, error, TRUE};
    hg_graph_foreach(g, verify_each, &c);
    return c.ok;
}
