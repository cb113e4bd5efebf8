/* Input ranges that follow from the model itself, so that nobody has to give them and nothing rests on
 * a guess where the model already says enough. Each rule is sound: no value of the input outside the
 * derived range changes what the analysis bounds.
 *
 *   - An integer input whose values only index Gathers (directly, or through Cast to another integer
 *     type, Reshape, Unsqueeze, Squeeze, Flatten, Identity, Slice, Transpose, Expand, Tile, Concat,
 *     Split, or the data side of another Gather), and whose other readers look at its shape alone
 *     (Shape, Size), takes [0, rows - 1] of the smallest table, rows being the table's dim along the
 *     Gather's axis. Token ids run [0, vocab). A Gather's output holds rows of its table whatever the
 *     index (any valid index, negative ones included, selects one of them; an invalid one is an
 *     error, not a value), so every float bound downstream is the same for any index: the range only
 *     decides which ids synthetic inputs draw.
 *   - A bool input takes [0, 1].
 *   - An input whose every reader saturates both ways (Sigmoid, Tanh; through Add, reshaping and
 *     selection, as hg_value_ends_in_saturation follows them) or reads its shape alone needs no range:
 *     a value past FP16's range becomes +-inf there and saturates to what the FP32 model computes
 *     (sigmoid(inf) = 1 = sigmoid(1e6) in FP32), unless a Log reads what is computed from it: how
 *     close to 0 a Sigmoid comes depends on the input's range (log(sigmoid(-20)) is -20 in FP32 and
 *     -inf once FP16 makes the 2e-9 a 0). A Softmax bounds its output too, but +inf in a
 *     Softmax is NaN: an input it reads still needs its range. So does an integer input read only
 *     for shapes' sake by Reshape or Slice's starts, which is not a Gather index.
 */
#include "derive.h"
#include "hazards.h"
#include "halfguard/run.h"

#include <math.h>
#include <string.h>

#include "ops/op.h"

const char *
hg_input_range_source_name(HgInputRangeSource source)
{
    switch (source) {
    case HG_INPUT_RANGE_GIVEN: return "given";
    case HG_INPUT_RANGE_DERIVED: return "derived";
    case HG_INPUT_RANGE_UNNEEDED: return "unneeded";
    default: return "none";
    }
}

void
hg_input_info_free(HgInputInfo *info)
{
    if (!info)
        return;
    g_free(info->name);
    g_free(info->why);
    g_free(info);
}

/* Ops whose output holds values of their input at index 0 (or of any input: Concat), moved or
 * selected but not computed on. */
static gboolean
moves_values(const HgNode *n, guint index)
{
    static const char *const data0[] = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Slice",
                                        "Transpose", "Expand", "Tile", "Split", "Gather", "Cast"};
    if (hg_node_is(n, "Concat"))
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(data0); i++)
        if (hg_node_is(n, data0[i]))
            return index == 0;
    return FALSE;
}

static gboolean
shape_only(const HgNode *n)
{
    const HgOpDef *op = hg_op_for_node(n);
    return op && (op->traits & HG_TRAIT_SHAPE_ONLY);
}

typedef struct {
    const HgShapes *shapes;
    GHashTable *seen;     /* HgValue* walked */
    gint64 rows;          /* the smallest table indexed, -1 before any */
    const HgNode *gather; /* the Gather with that table */
    gint64 axis;
    guint n_gathers;
} IndexWalk;

/* Does every reader of v (and of the integers moved on from it) use it as a Gather's indices or read
 * its shape alone? Records the tables in w. */
static gboolean
only_indexes(const HgValue *v, IndexWalk *w)
{
    if (!v || !g_hash_table_add(w->seen, (gpointer)v))
        return TRUE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        if (shape_only(n))
            continue;
        if (hg_node_is(n, "Gather") && use->index == 1 && n->n_inputs > 1) {
            const HgValueShape *ds = n->inputs[0] ? hg_shapes_get(w->shapes, n->inputs[0]) : NULL;
            gint64 axis = hg_node_attr_int(n, "axis", 0);
            if (!ds || ds->rank < 1)
                return FALSE;
            if (axis < 0)
                axis += ds->rank;
            if (axis < 0 || axis >= ds->rank || ds->dims[axis].v < 1)
                return FALSE;
            gint64 rows = ds->dims[axis].v;
            w->n_gathers++;
            if (w->rows < 0 || rows < w->rows) {
                w->rows = rows;
                w->gather = n;
                w->axis = axis;
            }
            continue;
        }
        if (!moves_values(n, use->index))
            return FALSE;
        for (guint k = 0; k < n->n_outputs; k++) {
            const HgValue *o = n->outputs[k];
            if (!o)
                continue;
            if (!hg_dtype_is_int(hg_shapes_get(w->shapes, o)->dtype) || !only_indexes(o, w))
                return FALSE;
        }
    }
    return TRUE;
}

/* Inputs (by index, a bit each) that give a shape, axes, sizes, counts or positions: their values
 * decide where values go or how many there are, never what they are. */
static const struct {
    const char *op;
    guint inputs;
} placing[] = {
    {"Reshape", 1u << 1}, {"Expand", 1u << 1}, {"Tile", 1u << 1}, {"Slice", 0x1eu}, {"Squeeze", 1u << 1},
    {"Unsqueeze", 1u << 1}, {"ConstantOfShape", 1u << 0}, {"Pad", (1u << 1) | (1u << 3)}, {"TopK", 1u << 1},
    {"Resize", 0xeu}, {"Upsample", 1u << 1}, {"OneHot", 1u << 1}, {"Split", 1u << 1}, {"CumSum", 1u << 1},
    {"Gather", 1u << 1}, {"GatherElements", 1u << 1}, {"GatherND", 1u << 1}, {"ScatterND", 1u << 1},
    {"ScatterElements", 1u << 1}, {"Trilu", 1u << 1}, {"ReduceSum", 1u << 1}, {"ReduceMean", 1u << 1},
    {"ReduceMax", 1u << 1}, {"ReduceMin", 1u << 1}, {"ReduceProd", 1u << 1}, {"ReduceL1", 1u << 1},
    {"ReduceL2", 1u << 1}, {"ReduceSumSquare", 1u << 1}, {"ReduceLogSum", 1u << 1},
    {"ReduceLogSumExp", 1u << 1},
};

static gboolean
places_values(const HgNode *n, guint index)
{
    for (guint i = 0; i < G_N_ELEMENTS(placing); i++)
        if (hg_node_is(n, placing[i].op))
            return index < 32 && (placing[i].inputs >> index & 1);
    return FALSE;
}

/* Do v's values reach float arithmetic: a float output of a node that reads them (a Cast to float,
 * say), through integer math? Shape readers, Gather indices and other inputs that only place values
 * (a Reshape's shape, a Slice's starts) do not count: none passes values on. */
static gboolean
reaches_float(const HgShapes *shapes, const HgValue *v, GHashTable *seen)
{
    if (!v || !g_hash_table_add(seen, (gpointer)v))
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        if (shape_only(n) || places_values(n, use->index))
            continue;
        for (guint k = 0; k < n->n_outputs; k++) {
            const HgValue *o = n->outputs[k];
            if (!o)
                continue;
            int dt = hg_shapes_get(shapes, o)->dtype;
            if (hg_dtype_is_float(dt) || dt == HG_DTYPE_UNDEFINED || reaches_float(shapes, o, seen))
                return TRUE;
        }
    }
    return FALSE;
}

static const HgInputRangeSpec *
given_range(const HgInputRangeSpec *given, guint n, const char *name)
{
    const HgInputRangeSpec *best = NULL;
    int rank = 0;
    for (guint i = 0; i < n; i++) {
        int r = hg_input_range_rank(given[i].name, name);
        if (r > rank)
            best = &given[i], rank = r;
    }
    return best;
}

/* Does a Log read anything computed from v (within 64 nodes)? */
static gboolean
reaches_log(const HgValue *v, GHashTable *seen, int depth)
{
    if (!v || depth > 64 || !g_hash_table_add(seen, (gpointer)v))
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgNode *n = g_array_index(v->uses, HgUse, u).node;
        if (hg_node_is(n, "Log"))
            return TRUE;
        for (guint k = 0; k < n->n_outputs; k++)
            if (reaches_log(n->outputs[k], seen, depth + 1))
                return TRUE;
    }
    return FALSE;
}

static void
derive_one(HgInputInfo *info, const HgValue *v, const HgShapes *shapes)
{
    if (!v->uses->len && !v->is_output) {
        info->source = HG_INPUT_RANGE_UNNEEDED;
        info->why = g_strdup("no node reads it");
        return;
    }
    if (info->dtype == HG_DTYPE_BOOL) {
        info->source = HG_INPUT_RANGE_DERIVED;
        info->lo = 0;
        info->hi = 1;
        info->why = g_strdup("it is bool");
        return;
    }
    if (hg_dtype_is_int(info->dtype)) {
        g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
        IndexWalk w = {shapes, seen, -1, NULL, 0, 0};
        if (only_indexes(v, &w)) {
            if (!w.n_gathers) {
                info->source = HG_INPUT_RANGE_UNNEEDED;
                info->why = g_strdup("only its shape is read");
                return;
            }
            const char *g = w.gather->name && *w.gather->name ? w.gather->name : w.gather->outputs[0]->name;
            info->source = HG_INPUT_RANGE_DERIVED;
            info->lo = 0;
            info->hi = (double)(w.rows - 1);
            if (w.n_gathers == 1)
                info->why = g_strdup_printf("it only indexes Gather '%s' (a table of %" G_GINT64_FORMAT
                                            " rows along axis %" G_GINT64_FORMAT ")", g, w.rows, w.axis);
            else
                info->why = g_strdup_printf("it only indexes %u Gathers; the smallest table, Gather '%s''s, has %"
                                            G_GINT64_FORMAT " rows along axis %" G_GINT64_FORMAT,
                                            w.n_gathers, g, w.rows, w.axis);
            return;
        }
        g_hash_table_remove_all(seen);
        info->reaches_float = reaches_float(shapes, v, seen);
        return;
    }
    if (hg_dtype_is_float(info->dtype)) {
        g_autoptr(GHashTable) logs = g_hash_table_new(NULL, NULL);
        if (hg_value_ends_in_saturation(v, 1) && hg_value_ends_in_saturation(v, -1) && !reaches_log(v, logs, 0)) {
            info->source = HG_INPUT_RANGE_UNNEEDED;
            info->why = g_strdup("every value computed from it saturates (Sigmoid, Tanh) or is read for "
                                 "its shape alone");
            return;
        }
        info->reaches_float = TRUE;
    }
}

GPtrArray *
hg_derive_inputs(HgModel *m, const HgShapes *shapes, const HgInputRangeSpec *given, guint n_given)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL && shapes != NULL, NULL);
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hg_input_info_free);
    for (guint i = 0; i < feeds->len; i++) {
        const HgValue *v = ((HgValueDecl *)feeds->pdata[i])->value;
        HgInputInfo *info = g_new0(HgInputInfo, 1);
        info->name = g_strdup(v->name);
        info->dtype = hg_shapes_get(shapes, v)->dtype;
        info->source = HG_INPUT_RANGE_NONE;
        info->lo = -INFINITY;
        info->hi = INFINITY;
        const HgInputRangeSpec *r = given_range(given, n_given, v->name);
        if (r) {
            info->source = HG_INPUT_RANGE_GIVEN;
            info->lo = r->lo;
            info->hi = r->hi;
        } else {
            derive_one(info, v, shapes);
        }
        g_ptr_array_add(out, info);
    }
    return out;
}

GPtrArray *
hg_check_inputs(HgModel *m, const HgCheckOptions *opts, GError **error)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL, NULL);
    g_autoptr(HgShapes) shapes = hg_shapes_infer_specs(m->graph, opts ? opts->shapes : NULL, error);
    if (!shapes)
        return NULL;
    return hg_derive_inputs(m, shapes, opts ? opts->ranges : NULL, opts ? opts->n_ranges : 0);
}
