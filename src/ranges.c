/* Interval analysis: walks the main graph in topological order and asks each op's interval rule for
 * its outputs. Exact ranges come from initializers and from every value shape inference computed
 * (folded shape math); graph inputs take the ranges the caller gives. */
#include "ranges.h"
#include "halfguard/check.h"

#include <math.h>
#include <string.h>

static HgRange *
range_new(HgRange r)
{
    return g_memdup2(&r, sizeof r);
}

/* FP32 kernels round: a rule's exact-arithmetic bound can be crossed by a few ulps of accumulated
 * rounding. Widen every finite bound outward by a relative 2^-20 (about 8 FP32 ulps). */
static void
widen(HgRange *r)
{
    const double rel = 1.0 / 1048576.0;
    if (isfinite(r->lo))
        r->lo -= fabs(r->lo) * rel;
    if (isfinite(r->hi))
        r->hi += fabs(r->hi) * rel;
    r->tiny *= 1.0 - rel;
}

static const HgInputRange *
find_input(const HgInputRange *in, guint n, const char *name)
{
    const HgInputRange *best = NULL;
    int rank = 0;
    for (guint i = 0; i < n; i++) {
        int r = hg_input_range_rank(in[i].name, name);
        if (r > rank)
            best = &in[i], rank = r;
    }
    return best;
}

const HgRange *
hg_ranges_get(const HgRanges *r, const HgValue *v)
{
    static const HgRange any = {-INFINITY, INFINITY, 0, TRUE};
    const HgRange *x = v ? g_hash_table_lookup(r->ranges, v) : NULL;
    return x ? x : &any;
}

static const HgRange *
range_lookup(gconstpointer data, const HgValue *v)
{
    return hg_ranges_get(data, v);
}

static const HgValueShape *
shape_lookup(gconstpointer data, const HgValue *v)
{
    return hg_shapes_get(data, v);
}

const HgScan *
hg_ranges_scan(const HgRanges *r, const HgValue *v)
{
    return v ? g_hash_table_lookup(r->scans, v) : NULL;
}

void
hg_ranges_free(HgRanges *r)
{
    if (!r)
        return;
    g_hash_table_unref(r->scans);
    g_hash_table_unref(r->ranges);
    g_free(r);
}

HgRanges *
hg_ranges_infer(HgGraph *g, const HgShapes *shapes, const HgInputRange *inputs, guint n_inputs)
{
    g_return_val_if_fail(g != NULL && shapes != NULL, NULL);
    HgRanges *r = g_new0(HgRanges, 1);
    r->graph = g;
    r->generation = g->generation;
    r->ranges = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    r->scans = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, NULL);
    if (!order)
        return r;
    for (guint i = 0; i < g->inputs->len; i++) {
        HgValueDecl *d = g->inputs->pdata[i];
        const HgInputRange *ir = find_input(inputs, n_inputs, d->value->name);
        if (ir && !d->value->init)
            g_hash_table_insert(r->ranges, d->value, range_new(ir->range));
    }
    /* Constant inputs of nodes: initializers (any size: views of the file, read once here) and values
     * shape inference folded. */
    g_autoptr(GHashTable) consts = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_array_unref);
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t)
            continue;
        HgArray *a = hg_array_view_tensor(t, NULL);
        if (!a)
            continue;
        HgScan *scan = g_new(HgScan, 1);
        *scan = hg_scan_array(a);
        hg_array_release(a);
        g_hash_table_insert(r->scans, v, scan);
        g_hash_table_insert(r->ranges, v, range_new(scan->range));
        g_hash_table_insert(consts, v, a);
    }
    gint64 opset = g->model ? hg_model_opset(g->model, "") : 0;
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        g_autofree const HgRange **ins = g_new0(const HgRange *, n->n_inputs + 1);
        g_autofree const HgValueShape **ishapes = g_new0(const HgValueShape *, n->n_inputs + 1);
        g_autofree const HgArray **vals = g_new0(const HgArray *, n->n_inputs + 1);
        g_autofree const HgValueShape **oshapes = g_new0(const HgValueShape *, n->n_outputs + 1);
        g_autofree HgRange **outs = g_new0(HgRange *, n->n_outputs + 1);
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (!v)
                continue;
            ins[k] = hg_ranges_get(r, v);
            ishapes[k] = hg_shapes_get(shapes, v);
            vals[k] = g_hash_table_lookup(consts, v);
            if (!vals[k])
                vals[k] = ishapes[k]->value;
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            oshapes[k] = hg_shapes_get(shapes, n->outputs[k]);
            outs[k] = range_new(hg_range_any());
        }
        const HgOpDef *op = hg_op_for_node(n);
        if (op && op->range) {
            HgRangeCtx ctx = {n, opset, n->n_inputs, ins, ishapes, vals, n->n_outputs, oshapes, outs,
                              range_lookup, r, shape_lookup, shapes};
            op->range(&ctx);
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            /* A value shape inference computed is known exactly, whatever the rule said. */
            if (oshapes[k]->value) {
                *outs[k] = hg_range_of_array(oshapes[k]->value);
            } else {
                widen(outs[k]);
                /* stored in the output's float type: past its range inf, under its subnormals 0 */
                if (hg_dtype_is_float(oshapes[k]->dtype))
                    *outs[k] = hg_range_fit(*outs[k], oshapes[k]->dtype);
            }
            if (n->outputs[k])
                g_hash_table_replace(r->ranges, n->outputs[k], outs[k]);
            else
                g_free(outs[k]);
        }
    }
    return r;
}
