/* convert --dot and check --dot: the decision as a Graphviz graph, built with libcgraph and, for a
 * file whose name ends in .svg, laid out and rendered with libgvc.
 *
 * Each node of the main graph is one of: plain (FP16 for convert; no finding for check), FP32 (an
 * island of the plan, with its reason), Cast, rewritten (a node that a pass created or whose inputs it
 * changed: fused LayerNorm, rescaled weights, the Mul that undoes a scale), and for check a hazard
 * (outlined by its level; dashed when convert rewrites it away). Plain nodes joined by edges to each
 * other are folded into one box ("37 FP16 nodes: MatMul 12, Add 10, ...") once there are FOLD_MIN of
 * them, so that a model of thousands of nodes draws as its islands and the runs between them. A legend
 * cluster names the marks. Every node carries a `class` (fp16, folded, fp32, cast, rewritten,
 * hazard-error, hazard-warning, hazard-note, fixed, input, output), which SVG output keeps, and its
 * full name as a tooltip.
 *
 * A run gathers plain nodes joined to each other that have as many marked nodes before them (on the
 * longest path from the inputs), so the picture stays acyclic. */
#include "cli.h"
#include "dot.h"

#include <string.h>

#ifdef HG_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

/* Plain nodes fewer than this in one connected run are drawn one by one. */
#define FOLD_MIN 3

/* ---------------------------------------------------------------- what the picture shows */

typedef enum { MARK_PLAIN, MARK_FP32, MARK_CAST, MARK_REWRITTEN } MarkClass;

typedef struct {
    MarkClass cls;
    const char *reason;  /* FP32: why (borrowed from the node) */
    int hazard_level;    /* check: 0 none, 1 note, 2 warning, 3 error */
    GString *hazards;    /* check: the kinds found at the node, "overflow, underflow" */
    gboolean fixed;      /* check: every hazard at the node is one convert rewrites away */
    gboolean rewritten;  /* convert: a pass made the node or changed its weights (whatever its class) */
} Mark;

struct DotSnapshot {
    GHashTable *sig;   /* node name -> "op\x1finput,input,..." */
    GHashTable *inits; /* initializer names */
};

/* The original initializer that `name` is lower's copy of ("W_fp16", "W_fp32_2": lower converts a
 * weight into a new initializer so that readers of the other precision keep theirs), or name. */
static const char *
before_lower(const char *name, const DotSnapshot *before, char **scratch)
{
    if (!before || g_hash_table_contains(before->inits, name))
        return name;
    for (const char *p = strstr(name, "_fp"); p; p = strstr(p + 1, "_fp")) {
        if (strncmp(p, "_fp16", 5) != 0 && strncmp(p, "_fp32", 5) != 0)
            continue;
        const char *rest = p + 5;
        gboolean tail = !*rest || (rest[0] == '_' && rest[1] && strspn(rest + 1, "0123456789") == strlen(rest + 1));
        g_autofree char *base = g_strndup(name, (gsize)(p - name));
        if (tail && g_hash_table_contains(before->inits, base)) {
            *scratch = g_steal_pointer(&base);
            return *scratch;
        }
    }
    return name;
}

/* What a pass's rewrite shows in a node: its op, and the float weights it reads, looking through the
 * Casts and weight copies that lower made (before: the snapshot, whose nodes and initializers are the
 * originals; NULL while taking it). Where its other inputs come from is left out: a node whose
 * producer was fused, or whose shape input was folded to a constant, or whose axes became an input
 * when the opset was raised, is not itself rewritten; a node whose weights were rescaled is, and so
 * is every node a pass made. */
static char *
signature(const HgNode *n, const DotSnapshot *inserted)
{
    GString *s = g_string_new(n->op_type);
    g_string_append_c(s, '\x1f');
    for (guint i = 0; i < n->n_inputs; i++) {
        const HgValue *v = n->inputs[i];
        while (inserted && v && v->producer && strcmp(v->producer->op_type, "Cast") == 0 &&
               v->producer->n_inputs && v->producer->inputs[0] &&
               !(v->producer->name && g_hash_table_contains(inserted->sig, v->producer->name)))
            v = v->producer->inputs[0];
        g_autofree char *scratch = NULL;
        gboolean weight = v && v->init && hg_dtype_is_float(v->init->dtype);
        if (weight) /* by position: a weight that moved is a rewrite too */
            g_string_append_printf(s, "%u=%s,", i, before_lower(v->name, inserted, &scratch));
    }
    return g_string_free(s, FALSE);
}

DotSnapshot *
dot_snapshot(const HgGraph *g)
{
    DotSnapshot *s = g_new0(DotSnapshot, 1);
    s->sig = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    s->inits = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < g->initializers->len; i++) {
        const HgTensor *t = g->initializers->pdata[i];
        if (t->name)
            g_hash_table_add(s->inits, g_strdup(t->name));
    }
    for (guint i = 0; i < g->nodes->len; i++) {
        const HgNode *n = g->nodes->pdata[i];
        if (n->name && !(n->flags & HG_NODE_DEAD))
            g_hash_table_insert(s->sig, g_strdup(n->name), signature(n, NULL));
    }
    return s;
}

void
dot_snapshot_free(DotSnapshot *s)
{
    if (!s)
        return;
    g_hash_table_unref(s->sig);
    g_hash_table_unref(s->inits);
    g_free(s);
}

#ifdef HG_HAVE_GRAPHVIZ

static int
level_of(HgHazardKind kind)
{
    const char *l = hg_hazard_kind_level(kind);
    return strcmp(l, "error") == 0 ? 3 : strcmp(l, "warning") == 0 ? 2 : 1;
}

/* ---------------------------------------------------------------- drawing */

/* s as a DOT label line: escaped for the terminal's sake like every name halfguard prints, and
 * with backslashes doubled so that Graphviz reads none as an escape (\N, \l). */
static void
append_label(GString *out, const char *s)
{
    g_autofree char *safe = hg_escape_text(s ? s : "");
    for (const char *p = safe; *p; p++) {
        if (*p == '\\')
            g_string_append_c(out, '\\');
        g_string_append_c(out, *p);
    }
}

/* A graph input's or output's label: its name, and its element type when declared. */
static void
value_label(GString *label, const HgValue *v)
{
    append_label(label, v->name);
    const char *dt = v->type && v->type->has_elem_type ? hg_dtype_name(v->type->elem_type) : NULL;
    if (dt)
        g_string_append_printf(label, "\\n%s", dt);
}

static void
set(void *obj, const char *name, const char *value)
{
    agsafeset(obj, (char *)name, (char *)value, (char *)"");
}

/* Style a node: shape, fill, outline, class. */
static void
style(Agnode_t *an, const char *cls, const char *shape, const char *fill, const char *outline, const char *pen,
      const char *extra_style)
{
    set(an, "class", cls);
    set(an, "shape", shape);
    g_autofree char *st = g_strdup_printf("filled%s%s", extra_style ? "," : "", extra_style ? extra_style : "");
    set(an, "style", st);
    set(an, "fillcolor", fill);
    set(an, "color", outline);
    set(an, "penwidth", pen);
}

static const char *const level_colour[] = {"#555555", "#777777", "#e08000", "#d00000"};
static const char *const level_name[] = {"", "note", "warning", "error"};

/* One marked (or lone plain) node. */
static void
draw_node(Agraph_t *dg, const char *id, const HgNode *n, const Mark *mk, gboolean check)
{
    Agnode_t *an = agnode(dg, (char *)id, 1);
    g_autoptr(GString) label = g_string_new(NULL);
    append_label(label, n->op_type);
    if (n->name) {
        g_string_append(label, "\\n");
        g_autofree char *shortname = g_utf8_strlen(n->name, -1) > 40 ? g_strdup_printf("…%s", g_utf8_offset_to_pointer(n->name, g_utf8_strlen(n->name, -1) - 39)) : g_strdup(n->name);
        append_label(label, shortname);
    }
    g_autoptr(GString) tip = g_string_new(NULL);
    append_label(tip, n->name ? n->name : n->op_type);
    set(an, "tooltip", tip->str);
    switch (mk->cls) {
    case MARK_FP32:
        g_string_append(label, "\\nFP32");
        if (mk->reason) {
            g_string_append(label, ": ");
            append_label(label, mk->reason);
        }
        if (mk->rewritten) /* kept FP32 after a rewrite: both */
            g_string_append(label, "\\n(rewritten)");
        style(an, "fp32", "box", "#f6b0b0", "#a00000", "2", mk->rewritten ? "rounded" : NULL);
        break;
    case MARK_CAST:
        style(an, "cast", "cds", "#ffe08a", "#8a6d00", "1", NULL);
        break;
    case MARK_REWRITTEN:
        g_string_append(label, "\\nrewritten");
        style(an, "rewritten", "box", "#b0cdf6", "#0040a0", "2", "rounded");
        break;
    case MARK_PLAIN:
        if (mk->hazard_level) {
            g_string_append(label, "\\n");
            append_label(label, mk->hazards->str);
            if (mk->fixed)
                g_string_append(label, " (convert fixes)");
            g_autofree char *cls = mk->fixed ? g_strdup("fixed")
                                             : g_strdup_printf("hazard-%s", level_name[mk->hazard_level]);
            style(an, cls, "box", mk->fixed ? "#f0f0f0" : "#fff0f0", level_colour[mk->hazard_level],
                  mk->fixed ? "2" : "3", mk->fixed ? "dashed" : NULL);
        } else {
            style(an, "fp16", "box", check ? "#ffffff" : "#d8f0d8", "#406040", "1", NULL);
        }
        break;
    }
    set(an, "label", label->str);
}

/* The legend: one sample node per mark the picture can hold. */
static void
draw_legend(Agraph_t *dg, gboolean check)
{
    Agraph_t *lg = agsubg(dg, (char *)"cluster_legend", 1);
    set(lg, "label", "legend");
    set(lg, "style", "dashed");
    set(lg, "class", "legend");
    static const struct {
        const char *cls, *text, *shape, *fill, *outline, *pen, *style;
        gboolean convert, check;
    } items[] = {
        {"fp16", "FP16 node", "box", "#d8f0d8", "#406040", "1", NULL, TRUE, FALSE},
        {"fp16", "node without findings", "box", "#ffffff", "#406040", "1", NULL, FALSE, TRUE},
        {"folded", "run of N nodes, folded", "box3d", "#d8f0d8", "#406040", "1", NULL, TRUE, TRUE},
        {"fp32", "FP32 island: reason", "box", "#f6b0b0", "#a00000", "2", NULL, TRUE, FALSE},
        {"cast", "Cast", "cds", "#ffe08a", "#8a6d00", "1", NULL, TRUE, FALSE},
        {"rewritten", "rewritten by a pass", "box", "#b0cdf6", "#0040a0", "2", "rounded", TRUE, FALSE},
        {"hazard-error", "hazard: error", "box", "#fff0f0", "#d00000", "3", NULL, FALSE, TRUE},
        {"hazard-warning", "hazard: warning", "box", "#fff0f0", "#e08000", "3", NULL, FALSE, TRUE},
        {"hazard-note", "hazard: note", "box", "#fff0f0", "#777777", "3", NULL, FALSE, TRUE},
        {"fixed", "hazard convert rewrites away", "box", "#f0f0f0", "#555555", "2", "dashed", FALSE, TRUE},
    };
    Agnode_t *prev = NULL;
    for (guint i = 0; i < G_N_ELEMENTS(items); i++) {
        if (!(check ? items[i].check : items[i].convert))
            continue;
        g_autofree char *id = g_strdup_printf("legend%u", i);
        Agnode_t *an = agnode(lg, id, 1);
        const char *fill = check && strcmp(items[i].cls, "folded") == 0 ? "#ffffff" : items[i].fill;
        style(an, items[i].cls, items[i].shape, fill, items[i].outline, items[i].pen, items[i].style);
        set(an, "label", items[i].text);
        if (prev) { /* a column, kept in order by invisible edges */
            Agedge_t *e = agedge(lg, prev, an, NULL, 1);
            set(e, "style", "invis");
        }
        prev = an;
    }
}

/* Union-find over node indices. */
static guint
find(guint *parent, guint i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static int put(void *chan, const char *str);
static int flush(void *chan);

/* The discipline the pictures are opened with: agwrite appends to a GString. (One process draws one
 * picture at a time.) */
static Agiodisc_t io_disc;
static Agdisc_t disc;

static gboolean
plain_at(const Mark *marks, guint i)
{
    return marks[i].cls == MARK_PLAIN && !marks[i].hazard_level;
}

/* Union the plain nodes of g joined by an edge whose keys are equal (parent, size: n entries each);
 * returns how many boxes the picture then has. */
static guint
fold_by(const HgGraph *g, const Mark *marks, GHashTable *index, const guint *key, guint *parent, guint *size)
{
    guint n = g->nodes->len, boxes = 0;
    for (guint i = 0; i < n; i++) {
        parent[i] = i;
        size[i] = 0;
    }
    for (guint i = 0; i < n; i++) {
        const HgNode *nd = g->nodes->pdata[i];
        for (guint k = 0; plain_at(marks, i) && k < nd->n_inputs; k++) {
            const HgValue *v = nd->inputs[k];
            guint p = v && v->producer ? GPOINTER_TO_UINT(g_hash_table_lookup(index, v->producer)) : 0;
            if (!p || !plain_at(marks, p - 1) || key[p - 1] != key[i])
                continue;
            guint a = find(parent, i), b = find(parent, p - 1);
            if (a != b)
                parent[a] = b;
        }
    }
    for (guint i = 0; i < n; i++)
        if (plain_at(marks, i))
            size[find(parent, i)]++;
    for (guint i = 0; i < n; i++)
        boxes += !plain_at(marks, i) || size[find(parent, i)] < FOLD_MIN || find(parent, i) == i;
    return boxes;
}

/* Build the picture of g with one mark per node (g->nodes order). */
static Agraph_t *
build(const HgGraph *g, const Mark *marks, gboolean check, const char *title, GHashTable *input_hazards)
{
    io_disc = (Agiodisc_t){AgIoDisc.afread, put, flush};
    disc = (Agdisc_t){&AgMemDisc, &AgIdDisc, &io_disc};
    Agraph_t *dg = agopen((char *)"halfguard", Agdirected, &disc);
    set(dg, "rankdir", "TB");
    g_autoptr(GString) tl = g_string_new(NULL);
    append_label(tl, title);
    set(dg, "label", tl->str);
    set(dg, "labelloc", "t");
    set(dg, "fontname", "Helvetica");
    agattr(dg, AGNODE, (char *)"fontname", (char *)"Helvetica");
    agattr(dg, AGNODE, (char *)"fontsize", (char *)"10");
    agattr(dg, AGEDGE, (char *)"color", (char *)"#606060");
    guint n = g->nodes->len;
    g_autofree guint *parent = g_new(guint, n + 1);
    g_autofree guint *size = g_new0(guint, n + 1);
    g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < n; i++)
        g_hash_table_insert(index, g->nodes->pdata[i], GUINT_TO_POINTER(i + 1));
    /* Plain nodes joined by an edge fall into one run when they have as many marked nodes before them
     * (on the longest path from the inputs), or else as many after them (to the outputs), whichever
     * draws fewer boxes. Either way a run never reaches itself again through a marked node (what
     * follows a marked node has one more before it, and one fewer after it), so the picture has no
     * cycle: a residual block around an FP32 Crop draws as a run before it and a run after it. The
     * first key suits side outputs, the second side inputs (shape math feeding a Reshape). */
    g_autofree guint *before = g_new0(guint, n + 1), *after = g_new0(guint, n + 1);
    g_autoptr(GPtrArray) topo = hg_graph_topo_order((HgGraph *)g, NULL); /* NULL on a cycle: keys all 0 */
    for (guint t = 0; topo && t < topo->len; t++) {
        const HgNode *nd = topo->pdata[t];
        guint i = GPOINTER_TO_UINT(g_hash_table_lookup(index, nd));
        for (guint k = 0; i && k < nd->n_inputs; k++) {
            const HgValue *v = nd->inputs[k];
            guint p = v && v->producer ? GPOINTER_TO_UINT(g_hash_table_lookup(index, v->producer)) : 0;
            if (p)
                before[i - 1] = MAX(before[i - 1], before[p - 1] + !plain_at(marks, p - 1));
        }
    }
    for (guint t = topo ? topo->len : 0; t-- > 0;) {
        const HgNode *nd = topo->pdata[t];
        guint i = GPOINTER_TO_UINT(g_hash_table_lookup(index, nd));
        for (guint k = 0; i && k < nd->n_outputs; k++) {
            const HgValue *v = nd->outputs[k];
            for (guint u = 0; v && v->uses && u < v->uses->len; u++) {
                guint c = GPOINTER_TO_UINT(g_hash_table_lookup(index, g_array_index(v->uses, HgUse, u).node));
                if (c)
                    after[i - 1] = MAX(after[i - 1], after[c - 1] + !plain_at(marks, c - 1));
            }
        }
    }
    g_autofree guint *parent2 = g_new(guint, n + 1), *size2 = g_new0(guint, n + 1);
    if (fold_by(g, marks, index, after, parent2, size2) < fold_by(g, marks, index, before, parent, size)) {
        memcpy(parent, parent2, n * sizeof *parent);
        memcpy(size, size2, n * sizeof *size);
    }
    /* The DOT node each graph node is drawn as. */
    g_autofree Agnode_t **drawn = g_new0(Agnode_t *, n + 1);
    g_autoptr(GHashTable) ops = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_hash_table_unref);
    for (guint i = 0; i < n; i++) {
        const HgNode *nd = g->nodes->pdata[i];
        gboolean plain = marks[i].cls == MARK_PLAIN && !marks[i].hazard_level;
        guint root = find(parent, i);
        if (plain && size[root] >= FOLD_MIN) {
            g_autofree char *id = g_strdup_printf("run%u", root);
            drawn[i] = agnode(dg, id, 1);
            GHashTable *count = g_hash_table_lookup(ops, GUINT_TO_POINTER(root + 1));
            if (!count) {
                count = g_hash_table_new(g_str_hash, g_str_equal);
                g_hash_table_insert(ops, GUINT_TO_POINTER(root + 1), count);
            }
            g_hash_table_insert(count, nd->op_type,
                                GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(count, nd->op_type)) + 1));
        } else {
            g_autofree char *id = g_strdup_printf("n%u", i);
            draw_node(dg, id, nd, &marks[i], check);
            drawn[i] = agnode(dg, id, 0);
        }
    }
    /* The folded runs: their size and their commonest ops. */
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, ops);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        guint root = GPOINTER_TO_UINT(key) - 1;
        g_autoptr(GList) names = g_hash_table_get_keys(value);
        g_autoptr(GPtrArray) sorted = g_ptr_array_new();
        for (GList *l = names; l; l = l->next)
            g_ptr_array_add(sorted, l->data);
        /* by count, then name: the same picture every run */
        for (guint a = 1; a < sorted->len; a++)
            for (guint b = a; b > 0; b--) {
                const char *x = sorted->pdata[b - 1], *y = sorted->pdata[b];
                guint cx = GPOINTER_TO_UINT(g_hash_table_lookup(value, x)), cy = GPOINTER_TO_UINT(g_hash_table_lookup(value, y));
                if (cx > cy || (cx == cy && strcmp(x, y) < 0))
                    break;
                sorted->pdata[b - 1] = (gpointer)y;
                sorted->pdata[b] = (gpointer)x;
            }
        g_autoptr(GString) label = g_string_new(NULL);
        g_string_append_printf(label, "%u %snodes", size[root], check ? "" : "FP16 ");
        for (guint k = 0; k < sorted->len && k < 4; k++) {
            g_string_append(label, k ? ", " : "\\n");
            append_label(label, sorted->pdata[k]);
            g_string_append_printf(label, " %u", GPOINTER_TO_UINT(g_hash_table_lookup(value, sorted->pdata[k])));
        }
        if (sorted->len > 4)
            g_string_append(label, ", ...");
        g_autofree char *id = g_strdup_printf("run%u", root);
        Agnode_t *an = agnode(dg, id, 0);
        style(an, "folded", "box3d", check ? "#ffffff" : "#d8f0d8", "#406040", "1", NULL);
        set(an, "label", label->str);
        g_autofree char *count = g_strdup_printf("%u", size[root]);
        set(an, "folded", count); /* for tools that read the DOT */
    }
    /* Graph inputs (not initializers) and outputs. */
    g_autoptr(GHashTable) inputs = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < g->inputs->len; i++) {
        const HgValue *v = ((HgValueDecl *)g->inputs->pdata[i])->value;
        if (!v || v->init)
            continue;
        g_autofree char *id = g_strdup_printf("in%u", i);
        Agnode_t *an = agnode(dg, id, 1);
        g_autoptr(GString) label = g_string_new(NULL);
        value_label(label, v);
        const char *kind = input_hazards ? g_hash_table_lookup(input_hazards, v->name) : NULL;
        if (kind) { /* unranged-input: outlined as a warning */
            g_string_append(label, "\\n");
            append_label(label, kind);
            set(an, "class", "hazard-warning");
            set(an, "color", level_colour[2]);
            set(an, "penwidth", "3");
        } else {
            set(an, "class", "input");
        }
        set(an, "shape", "ellipse");
        set(an, "label", label->str);
        g_hash_table_insert(inputs, (gpointer)v, an);
    }
    /* Edges, once per pair of drawn nodes. */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < n; i++) {
        const HgNode *nd = g->nodes->pdata[i];
        for (guint k = 0; k < nd->n_inputs; k++) {
            const HgValue *v = nd->inputs[k];
            if (!v)
                continue;
            guint p = v->producer ? GPOINTER_TO_UINT(g_hash_table_lookup(index, v->producer)) : 0;
            Agnode_t *from = p ? drawn[p - 1] : g_hash_table_lookup(inputs, v);
            if (!from || from == drawn[i])
                continue;
            g_autofree char *pair = g_strdup_printf("%p>%p", (void *)from, (void *)drawn[i]);
            if (g_hash_table_add(seen, g_steal_pointer(&pair)))
                agedge(dg, from, drawn[i], NULL, 1);
        }
    }
    for (guint i = 0; i < g->outputs->len; i++) {
        const HgValue *v = ((HgValueDecl *)g->outputs->pdata[i])->value;
        if (!v)
            continue;
        g_autofree char *id = g_strdup_printf("out%u", i);
        Agnode_t *an = agnode(dg, id, 1);
        g_autoptr(GString) label = g_string_new(NULL);
        value_label(label, v);
        set(an, "class", "output");
        set(an, "shape", "ellipse");
        set(an, "style", "bold");
        set(an, "label", label->str);
        guint p = v->producer ? GPOINTER_TO_UINT(g_hash_table_lookup(index, v->producer)) : 0;
        Agnode_t *from = p ? drawn[p - 1] : g_hash_table_lookup(inputs, v);
        if (from)
            agedge(dg, from, an, NULL, 1);
    }
    draw_legend(dg, check);
    return dg;
}

static int
put(void *chan, const char *str)
{
    g_string_append(chan, str);
    return 0;
}

static int
flush(void *chan)
{
    (void)chan;
    return 0;
}

/* Write dg to path: DOT text, or an SVG rendered by Graphviz when path ends in .svg. */
static gboolean
write_graph(Agraph_t *dg, const char *path, GError **error)
{
    if (g_str_has_suffix(path, ".svg")) {
        GVC_t *gvc = gvContext();
        char *data = NULL;
        unsigned int len = 0;
        gboolean ok = gvLayout(gvc, dg, "dot") == 0;
        ok = ok && gvRenderData(gvc, dg, "svg", &data, &len) == 0 && data;
        if (!ok) {
            g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT,
                        "%s: Graphviz could not lay out or render the picture as SVG (are Graphviz's 'dot' "
                        "plugins installed? the graphviz package has them); write a .dot file instead", path);
        } else {
            ok = hg_write_file(path, data, len, error);
        }
        if (data)
            gvFreeRenderData(data);
        gvFreeLayout(gvc, dg);
        gvFreeContext(gvc);
        return ok;
    }
    g_autoptr(GString) text = g_string_new(NULL);
    if (agwrite(dg, text) != 0) { /* through io_disc */
        g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT, "%s: Graphviz could not write the graph", path);
        return FALSE;
    }
    return hg_write_file(path, text->str, text->len, error);
}

gboolean
dot_available(void)
{
    return TRUE;
}

gboolean
dot_write_convert(const char *path, const HgGraph *g, const DotSnapshot *before, const char *title,
                  GError **error)
{
    guint n = g->nodes->len;
    g_autofree Mark *marks = g_new0(Mark, n + 1);
    for (guint i = 0; i < n; i++) {
        const HgNode *nd = g->nodes->pdata[i];
        if (nd->name && before) {
            const char *was = g_hash_table_lookup(before->sig, nd->name);
            g_autofree char *now = signature(nd, before);
            marks[i].rewritten = !was || strcmp(was, now) != 0;
        }
        if (strcmp(nd->op_type, "Cast") == 0 && (!nd->domain || !*nd->domain || strcmp(nd->domain, "ai.onnx") == 0)) {
            marks[i].cls = MARK_CAST;
        } else if (nd->precision == HG_PRECISION_FP32) {
            marks[i].cls = MARK_FP32;
            marks[i].reason = nd->precision_reason;
        } else if (marks[i].rewritten) {
            marks[i].cls = MARK_REWRITTEN;
        }
    }
    Agraph_t *dg = build(g, marks, FALSE, title, NULL);
    gboolean ok = write_graph(dg, path, error);
    agclose(dg);
    return ok;
}

gboolean
dot_write_check(const char *path, const HgGraph *g, const HgCheckResult *r, const char *title, GError **error)
{
    guint n = g->nodes->len;
    g_autofree Mark *marks = g_new0(Mark, n + 1);
    g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < n; i++)
        g_hash_table_insert(index, g->nodes->pdata[i], GUINT_TO_POINTER(i + 1));
    for (guint i = 0; i < n; i++)
        marks[i].fixed = TRUE;
    g_autoptr(GHashTable) inputs = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint k = 0; k < r->hazards->len; k++) {
        const HgHazard *h = r->hazards->pdata[k];
        guint i = h->at ? GPOINTER_TO_UINT(g_hash_table_lookup(index, h->at)) : 0;
        if (!h->at && h->kind == HG_HAZARD_UNRANGED_INPUT && !h->suppressed && h->node)
            g_hash_table_insert(inputs, h->node, (gpointer)hg_hazard_kind_name(h->kind));
        if (!i || h->suppressed)
            continue;
        Mark *mk = &marks[i - 1];
        if (!mk->hazards)
            mk->hazards = g_string_new(NULL);
        const char *kind = hg_hazard_kind_name(h->kind);
        if (!strstr(mk->hazards->str, kind)) /* each kind once: "overflow, underflow" */
            g_string_append_printf(mk->hazards, "%s%s", mk->hazards->len ? ", " : "", kind);
        mk->hazard_level = MAX(mk->hazard_level, level_of(h->kind));
        mk->fixed = mk->fixed && h->fixed_by;
    }
    Agraph_t *dg = build(g, marks, TRUE, title, inputs);
    gboolean ok = write_graph(dg, path, error);
    agclose(dg);
    for (guint i = 0; i < n; i++)
        if (marks[i].hazards)
            g_string_free(marks[i].hazards, TRUE);
    return ok;
}

#else /* no Graphviz */

gboolean
dot_available(void)
{
    return FALSE;
}

static gboolean
absent(const char *path, GError **error)
{
    g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                "%s: this halfguard was built without Graphviz (Debian: libgraphviz-dev), so --dot cannot "
                "draw", path);
    return FALSE;
}

gboolean
dot_write_convert(const char *path, const HgGraph *g, const DotSnapshot *before, const char *title,
                  GError **error)
{
    (void)g, (void)before, (void)title;
    return absent(path, error);
}

gboolean
dot_write_check(const char *path, const HgGraph *g, const HgCheckResult *r, const char *title, GError **error)
{
    (void)g, (void)r, (void)title;
    return absent(path, error);
}

#endif
