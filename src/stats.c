/* Calibration statistics: collected by running the interpreter (`halfguard calibrate`, `check --calib`)
 * or read from a file: halfguard's stats JSON, or Polygraphy's --save-outputs / --save-inputs JSON,
 * whose arrays are whole .npy files in base64. */
#include "halfguard/check.h"
#include "halfguard/run.h"

#include <json-glib/json-glib.h>

#include "infile.h"
#include "json_util.h"
#include <math.h>
#include <string.h>

#include "ir_private.h"
#include "shapes.h"
#include "ops/array.h"
#include "ops/op.h"

/* The statistics of one tensor, with its first-seen position (the file lists tensors in that order,
 * which for the interpreter is the topological order). HgStats's table holds these. */
typedef struct {
    HgTensorStats s;
    guint seq;
} Entry;

struct HgStats {
    gint refcount;
    GHashTable *t; /* name -> Entry */
};

static HgStats *
stats_new(void)
{
    HgStats *st = g_new0(HgStats, 1);
    st->refcount = 1;
    st->t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return st;
}

HgStats *
hg_stats_new(void)
{
    return stats_new();
}

HgStats *
hg_stats_ref(HgStats *st)
{
    g_return_val_if_fail(st != NULL, NULL);
    g_atomic_int_inc(&st->refcount);
    return st;
}

void
hg_stats_unref(HgStats *st)
{
    if (!st || !g_atomic_int_dec_and_test(&st->refcount))
        return;
    g_hash_table_unref(st->t);
    g_free(st);
}

const HgTensorStats *
hg_stats_get(const HgStats *st, const char *name)
{
    g_return_val_if_fail(st != NULL, NULL);
    const Entry *e = name ? g_hash_table_lookup(st->t, name) : NULL;
    return e ? &e->s : NULL;
}

guint
hg_stats_size(const HgStats *st)
{
    g_return_val_if_fail(st != NULL, 0);
    return g_hash_table_size(st->t);
}

static Entry *
stats_entry(HgStats *st, const char *name, int dtype)
{
    Entry *e = g_hash_table_lookup(st->t, name);
    if (!e) {
        e = g_new0(Entry, 1);
        e->s.dtype = dtype;
        e->s.min = e->s.max = e->s.absmax = e->s.min_abs_nonzero = NAN;
        e->seq = g_hash_table_size(st->t);
        g_hash_table_insert(st->t, g_strdup(name), e);
    }
    return e;
}

/* NAN-aware min and max: NAN means "nothing seen". */
static double
min_known(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : MIN(a, b);
}

static double
max_known(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : MAX(a, b);
}

/* Fold one sample of tensor `name` into st. */
static void
stats_add(HgStats *st, const char *name, const HgTensor *t)
{
    Entry *e = stats_entry(st, name, t->dtype);
    HgTensorStats *s = &e->s;
    s->samples++;
    gint64 n = hg_tensor_numel(t);
    s->count += (guint64)n;
    HgArray view = {1, t->dtype, t->rank, {0}, n, (void *)t->data, FALSE, NULL, NULL, NULL};
    gboolean owned;
    double *x = hg_array_load_f64(&view, &owned);
    double lo = NAN, hi = NAN, tiny = NAN;
    for (gint64 i = 0; i < n; i++) {
        double a = x[i];
        if (isnan(a)) {
            s->n_nan++;
        } else if (isinf(a)) {
            s->n_inf++;
        } else {
            lo = min_known(lo, a);
            hi = max_known(hi, a);
            if (a != 0)
                tiny = min_known(tiny, fabs(a));
        }
    }
    if (owned)
        g_free(x);
    s->min = min_known(s->min, lo);
    s->max = max_known(s->max, hi);
    s->absmax = max_known(s->absmax, isnan(lo) ? NAN : MAX(fabs(lo), fabs(hi)));
    s->min_abs_nonzero = min_known(s->min_abs_nonzero, tiny);
}

void
hg_stats_set(HgStats *st, const char *name, const HgTensorStats *s)
{
    g_return_if_fail(st != NULL && name != NULL && s != NULL);
    stats_entry(st, name, s->dtype)->s = *s;
}

HgStats *
hg_stats_copy(HgStats *stats)
{
    g_return_val_if_fail(stats != NULL, NULL);
    HgStats *c = stats_new();
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, stats->t);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        Entry *e = g_memdup2(v, sizeof(Entry));
        g_hash_table_insert(c->t, g_strdup(k), e);
    }
    return c;
}

void
hg_stats_merge(HgStats *dst, HgStats *src)
{
    g_return_if_fail(dst != NULL && src != NULL);
    g_autoptr(GList) keys = g_hash_table_get_keys(src->t);
    for (GList *k = keys; k; k = k->next) {
        const HgTensorStats *s = hg_stats_get(src, k->data);
        HgTensorStats *d = &stats_entry(dst, k->data, s->dtype)->s;
        d->min = min_known(d->min, s->min);
        d->max = max_known(d->max, s->max);
        d->absmax = max_known(d->absmax, s->absmax);
        d->min_abs_nonzero = min_known(d->min_abs_nonzero, s->min_abs_nonzero);
        d->n_inf += s->n_inf;
        d->n_nan += s->n_nan;
        d->count += s->count;
        d->samples += s->samples;
        d->synthetic += s->synthetic;
    }
}

/* ---------------------------------------------------------------- the interpreter */

/* Numbers the statistics can hold: floats, integers, bool. */
static gboolean
numeric(int dtype)
{
    switch (dtype) {
    case HG_DTYPE_BOOL: case HG_DTYPE_INT8: case HG_DTYPE_INT16: case HG_DTYPE_INT32: case HG_DTYPE_INT64:
    case HG_DTYPE_UINT8: case HG_DTYPE_UINT16: case HG_DTYPE_UINT32: case HG_DTYPE_UINT64:
        return TRUE;
    default:
        return hg_dtype_is_float(dtype);
    }
}

/* Every float tensor, and the graph inputs of any numeric type: what the data covered of an integer
 * input (a mask, ids) is known too. */
static gboolean
collect_observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    (void)error;
    if (hg_dtype_is_float(t->dtype) || (!v->producer && !v->init && numeric(t->dtype)))
        stats_add(data, v->name, t);
    return TRUE;
}

/* Does the interpreter have a kernel for n: an op with one, or an If or a Loop whose bodies hold only
 * such nodes (depth bounds the nesting)? */
static gboolean
has_kernel(const HgNode *n, int depth)
{
    const HgOpDef *op = hg_op_for_node(n);
    if (op)
        return op->eval != NULL;
    if (!(hg_node_is(n, "If") || hg_node_is(n, "Loop")) || depth > 64)
        return FALSE;
    for (guint i = 0; i < n->attrs->len; i++) {
        const HgAttr *a = n->attrs->pdata[i];
        for (guint j = 0; a->g && j < a->g->nodes->len; j++)
            if (!has_kernel(a->g->nodes->pdata[j], depth + 1))
                return FALSE;
    }
    return TRUE;
}

/* The values to ask the interpreter for so that it computes every tensor it can: the last ones of
 * the part of the graph whose ops it has kernels for (a model whose outputs go through ops it lacks,
 * ai.onnx.ml's ZipMap say, still calibrates up to them). NULL-terminated; NULL on a cycle. */
static char **
runnable_leaves(HgModel *m)
{
    g_autoptr(GPtrArray) order = hg_graph_topo_order(m->graph, NULL);
    if (!order)
        return NULL;
    g_autoptr(GHashTable) ok = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        gboolean runs = has_kernel(n, 0);
        for (guint k = 0; runs && k < n->n_inputs; k++)
            runs = !n->inputs[k] || !n->inputs[k]->producer || g_hash_table_contains(ok, n->inputs[k]->producer);
        /* and what an If's branches read of the main graph */
        for (guint a = 0; runs && a < n->attrs->len; a++) {
            const HgGraph *sub = ((const HgAttr *)n->attrs->pdata[a])->g;
            for (guint k = 0; runs && sub && sub->outer_refs && k < sub->outer_refs->len; k++) {
                const HgValue *v = sub->outer_refs->pdata[k];
                runs = v->graph != m->graph || !v->producer || g_hash_table_contains(ok, v->producer);
            }
        }
        if (runs)
            g_hash_table_add(ok, n);
    }
    GPtrArray *names = g_ptr_array_new();
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        if (!g_hash_table_contains(ok, n))
            continue;
        for (guint k = 0; k < n->n_outputs; k++) {
            HgValue *v = n->outputs[k];
            gboolean leaf = v != NULL;
            for (guint u = 0; leaf && u < v->uses->len; u++)
                leaf = !g_hash_table_contains(ok, g_array_index(v->uses, HgUse, u).node);
            if (leaf && (v->uses->len || v->is_output))
                g_ptr_array_add(names, g_strdup(v->name));
        }
    }
    g_ptr_array_add(names, NULL);
    return (char **)g_ptr_array_free(names, FALSE);
}

HgStats *
hg_stats_collect(HgModel *m, const char *const *data_dirs, int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && data_dirs != NULL, NULL);
    HgStats *st = stats_new();
    g_auto(GStrv) leaves = runnable_leaves(m);
    HgRunOptions opts = {threads, collect_observe, st, (const char *const *)leaves};
    for (guint i = 0; data_dirs[i]; i++) {
        g_autoptr(GPtrArray) feeds = hg_load_feeds_converted(m, data_dirs[i], error);
        g_autoptr(GPtrArray) outs = feeds ? hg_run(m, feeds, &opts, error) : NULL;
        if (!outs) {
            g_prefix_error(error, "%s: ", data_dirs[i]);
            hg_stats_unref(st);
            return NULL;
        }
    }
    return st;
}

HgStats *
hg_stats_collect_samples(HgModel *m, const GPtrArray *samples, int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && samples != NULL, NULL);
    HgStats *st = stats_new();
    g_auto(GStrv) leaves = runnable_leaves(m);
    HgRunOptions opts = {threads, collect_observe, st, (const char *const *)leaves};
    for (guint i = 0; i < samples->len; i++) {
        const HgSample *smp = samples->pdata[i];
        g_autoptr(GPtrArray) outs = hg_run(m, smp->feeds, &opts, error);
        if (!outs) {
            g_prefix_error(error, "%s: ", smp->label);
            hg_stats_unref(st);
            return NULL;
        }
    }
    return st;
}

static HgStats *
collect_synthetic(HgModel *m, const HgCheckOptions *ranges, guint samples, guint64 seed, int threads,
                  guint64 max_memory, GError **error)
{
    HgStats *st = stats_new();
    g_auto(GStrv) leaves = runnable_leaves(m);
    HgRunOptions opts = {threads, collect_observe, st, (const char *const *)leaves, max_memory};
    for (guint i = 0; i < samples; i++) {
        g_autoptr(GPtrArray) feeds = hg_synth_feeds(m, ranges, seed + i, error);
        g_autoptr(GPtrArray) outs = feeds ? hg_run(m, feeds, &opts, error) : NULL;
        if (!outs) {
            g_prefix_error(error, "synthetic sample %u: ", i);
            hg_stats_unref(st);
            return NULL;
        }
    }
    GHashTableIter it;
    gpointer e;
    g_hash_table_iter_init(&it, st->t);
    while (g_hash_table_iter_next(&it, NULL, &e))
        ((Entry *)e)->s.synthetic = ((Entry *)e)->s.samples;
    return st;
}

/* Does a graph input have a dim the model leaves symbolic? */
static gboolean
symbolic_inputs(const HgGraph *g)
{
    for (guint i = 0; i < g->inputs->len; i++) {
        const HgValueDecl *d = g->inputs->pdata[i];
        if (d->value->init || !d->type || !d->type->shape)
            continue;
        for (guint k = 0; k < d->type->shape->rank; k++)
            if (!d->type->shape->dims[k].has_value)
                return TRUE;
    }
    return FALSE;
}

/* Symbolic dims are drawn at 1 unless --shapes or --dim-max say otherwise; a model that cannot run
 * that short (an audio front end of strided Convs needs hundreds of samples; Mamba's scan reads the
 * second step) is tried again with every dim nothing pins at RETRY_LEN[0], then [1], as long as its
 * inputs at that length stay within RETRY_MAX_ELEMENTS (a [batch, seq, 3072] input at 1024 would be
 * 3.2e9 values). Where none runs, the error is the one at the dims asked for. */
static const gint64 RETRY_LEN[] = {128, 1024};
#define RETRY_MAX_ELEMENTS ((gint64)1 << 24)

/* The graph inputs' elements with every symbolic dim at len, capped at RETRY_MAX_ELEMENTS + 1. */
static gint64
input_elements_at(const HgGraph *g, gint64 len)
{
    gint64 total = 0;
    for (guint i = 0; i < g->inputs->len && total <= RETRY_MAX_ELEMENTS; i++) {
        const HgValueDecl *d = g->inputs->pdata[i];
        if (d->value->init || !d->type || !d->type->shape)
            continue;
        gint64 n = 1;
        for (guint k = 0; k < d->type->shape->rank && n <= RETRY_MAX_ELEMENTS; k++) {
            const HgDim *dm = &d->type->shape->dims[k];
            gint64 v = dm->has_value ? MAX(dm->value, 0) : len;
            n = v && n > RETRY_MAX_ELEMENTS / v ? RETRY_MAX_ELEMENTS + 1 : n * v;
        }
        total += n;
    }
    return MIN(total, RETRY_MAX_ELEMENTS + 1);
}

static HgStats *
synthetic_retried(HgModel *m, const HgCheckOptions *ranges, guint samples, guint64 seed, int threads,
                  guint64 max_memory, GError **error)
{
    HgCheckOptions none = {0};
    const HgCheckOptions *o = ranges ? ranges : &none;
    g_autoptr(GError) err = NULL, first = NULL;
    HgStats *st = collect_synthetic(m, o, samples, seed, threads, max_memory, &first);
    for (guint r = 0; !st && first->domain == HG_ERROR && first->code == HG_ERROR_INVALID &&
                      r < G_N_ELEMENTS(RETRY_LEN) && symbolic_inputs(m->graph) &&
                      input_elements_at(m->graph, RETRY_LEN[r]) <= RETRY_MAX_ELEMENTS;
         r++) {
        guint n = o->dim_max ? g_strv_length((char **)o->dim_max) : 0;
        g_autofree const char **dm = g_new0(const char *, n + 2);
        for (guint i = 0; i < n; i++)
            dm[i] = o->dim_max[i];
        g_autofree char *len = g_strdup_printf("*=%" G_GINT64_FORMAT, RETRY_LEN[r]);
        dm[n] = len;
        HgCheckOptions longer = *o;
        longer.dim_max = dm;
        g_clear_error(&err);
        st = collect_synthetic(m, &longer, samples, seed, threads, max_memory, &err);
    }
    if (!st && first->domain == HG_ERROR && first->code == HG_ERROR_INVALID && symbolic_inputs(m->graph)) {
        /* the error at the dims asked for, and how to ask for others */
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                    "%s (symbolic dims were drawn at 1 unless pinned, and where the inputs allow at 128 and "
                    "1024; give the lengths the model runs at with --shapes NAME:DIMS or --dim-max NAME=N)",
                    first->message);
    } else if (!st) {
        g_propagate_error(error, g_steal_pointer(&first));
    }
    return st;
}

HgStats *
hg_stats_collect_synthetic(HgModel *m, const HgCheckOptions *ranges, guint samples, guint64 seed,
                           int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL, NULL);
    return synthetic_retried(m, ranges, samples, seed, threads, 0, error);
}

/* What the probe can tell of one run before it starts, from shape inference with the --shapes pins:
 * the largest value whose shape is known (the interpreter computes what constants alone give before
 * a run's memory cap applies: a ConstantOfShape of 800 MB that a Slice cuts to 4 values), and the
 * multiply-accumulates of the nodes whose cost is known (a small file can ask for hours of compute:
 * a chain of wide convolutions over a large fixed image). */
typedef struct {
    guint64 bytes;
    const char *name;
    double macs;
} RunSize;

static RunSize
run_size(HgModel *m, const char *const *pins)
{
    HgGraph *g = m->graph;
    RunSize rs = {0, NULL, 0};
    g_autoptr(HgShapes) sh = hg_shapes_infer_specs(g, pins, NULL);
    gint64 opset = hg_model_opset(m, "");
    /* the graph inputs first (a fixed input of 4 GiB would be drawn in full), then every node */
    for (guint i = 0; sh && i < g->inputs->len + g->nodes->len; i++) {
        HgValueDecl *in = i < g->inputs->len ? g->inputs->pdata[i] : NULL;
        HgNode *n = in ? NULL : g->nodes->pdata[i - g->inputs->len];
        guint n_out = in ? 1 : n->n_outputs;
        for (guint k = 0; k < n_out; k++) {
            HgValue *v = in ? in->value : n->outputs[k];
            const HgValueShape *vs = v && !v->init ? hg_shapes_get(sh, v) : NULL;
            if (!vs || vs->rank < 0 || vs->dtype == HG_DTYPE_UNDEFINED)
                continue;
            double bytes = (double)hg_dtype_size(vs->dtype);
            gboolean known = TRUE;
            for (int d = 0; d < vs->rank && known; d++) {
                known = vs->dims[d].v >= 0;
                bytes *= (double)MAX(vs->dims[d].v, 0);
            }
            if (known && bytes > (double)rs.bytes) {
                rs.bytes = bytes > (double)G_MAXUINT64 ? G_MAXUINT64 : (guint64)bytes;
                rs.name = v->name;
            }
        }
        if (!n)
            continue;
        const HgOpDef *op = hg_op_for_node(n);
        if (!op || !op->cost)
            continue;
        g_autofree const HgValueShape **ins = g_new0(const HgValueShape *, n->n_inputs + 1);
        g_autofree HgValueShape **outs = g_new0(HgValueShape *, n->n_outputs + 1);
        for (guint k = 0; k < n->n_inputs; k++)
            ins[k] = n->inputs[k] ? hg_shapes_get(sh, n->inputs[k]) : NULL;
        for (guint k = 0; k < n->n_outputs; k++)
            outs[k] = n->outputs[k] ? (HgValueShape *)hg_shapes_get(sh, n->outputs[k]) : NULL;
        HgShapeCtx sc = {n, opset, n->n_inputs, ins, n->n_outputs, outs, NULL};
        gint64 c = op->cost(&sc);
        if (c > 0)
            rs.macs += (double)c;
    }
    return rs;
}

HgStats *
hg_stats_collect_probe(HgModel *m, const HgCheckOptions *ranges, guint64 seed, int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL, NULL);
    guint64 weights = 0;
    for (guint i = 0; i < m->graph->initializers->len; i++) {
        const HgTensor *t = m->graph->initializers->pdata[i];
        weights += (guint64)MAX(hg_tensor_numel(t), 0) * hg_dtype_size(t->dtype);
    }
    if (weights > HG_PROBE_MAX_WEIGHTS) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "its weights take %" G_GUINT64_FORMAT " MiB, past the probe's %" G_GUINT64_FORMAT " MiB",
                    weights >> 20, HG_PROBE_MAX_WEIGHTS >> 20);
        return NULL;
    }
    RunSize rs = run_size(m, ranges ? ranges->shapes : NULL);
    if (rs.bytes > HG_PROBE_MAX_MEMORY) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "value '%s' alone takes %" G_GUINT64_FORMAT " bytes, past the probe's cap of %" G_GUINT64_FORMAT,
                    rs.name ? rs.name : "", rs.bytes, HG_PROBE_MAX_MEMORY);
        return NULL;
    }
    if (rs.macs > HG_PROBE_MAX_MACS) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "a run takes %.3g multiply-accumulates at the shapes known, past the probe's %.3g", rs.macs,
                    HG_PROBE_MAX_MACS);
        return NULL;
    }
    return synthetic_retried(m, ranges, HG_PROBE_SAMPLES, seed, threads, HG_PROBE_MAX_MEMORY, error);
}

/* ---------------------------------------------------------------- halfguard's stats JSON */


static int
by_seq(gconstpointer a, gconstpointer b, gpointer st)
{
    const Entry *x = g_hash_table_lookup(((HgStats *)st)->t, *(char *const *)a);
    const Entry *y = g_hash_table_lookup(((HgStats *)st)->t, *(char *const *)b);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

gboolean
hg_stats_save(HgStats *st, const char *path, GError **error)
{
    g_return_val_if_fail(st != NULL && path != NULL, FALSE);
    guint n;
    g_autofree char **names = (char **)g_hash_table_get_keys_as_array(st->t, &n);
    g_qsort_with_data(names, (gint)n, sizeof *names, by_seq, st);
    guint samples = 0;
    for (guint i = 0; i < n; i++)
        samples = MAX(samples, hg_stats_get(st, names[i])->samples);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format");
    json_builder_add_string_value(b, "halfguard-stats");
    json_builder_set_member_name(b, "version");
    json_builder_add_int_value(b, 1);
    json_builder_set_member_name(b, "samples");
    json_builder_add_int_value(b, samples);
    json_builder_set_member_name(b, "tensors");
    json_builder_begin_object(b);
    for (guint i = 0; i < n; i++) {
        const HgTensorStats *s = hg_stats_get(st, names[i]);
        json_builder_set_member_name(b, names[i]);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "dtype");
        json_builder_add_string_value(b, hg_dtype_name(s->dtype));
        hg_json_add_num(b, "min", s->min);
        hg_json_add_num(b, "max", s->max);
        hg_json_add_num(b, "absmax", s->absmax);
        hg_json_add_num(b, "min_abs_nonzero", s->min_abs_nonzero);
        json_builder_set_member_name(b, "inf");
        json_builder_add_int_value(b, (gint64)s->n_inf);
        json_builder_set_member_name(b, "nan");
        json_builder_add_int_value(b, (gint64)s->n_nan);
        json_builder_set_member_name(b, "count");
        json_builder_add_int_value(b, (gint64)s->count);
        json_builder_set_member_name(b, "samples");
        json_builder_add_int_value(b, s->samples);
        if (s->synthetic) {
            json_builder_set_member_name(b, "synthetic");
            json_builder_add_int_value(b, s->synthetic);
        }
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    return hg_json_save(b, path, error);
}

gboolean
hg_calibrate(HgModel *m, const char *const *data_dirs, int threads, const char *json_path, GError **error)
{
    g_return_val_if_fail(m != NULL && data_dirs != NULL && json_path != NULL, FALSE);
    g_autoptr(HgStats) st = hg_stats_collect(m, data_dirs, threads, error);
    return st && hg_stats_save(st, json_path, error);
}

/* A number member, or NAN when absent or null; FALSE when present but not a number. */
static gboolean
get_number(JsonObject *o, const char *key, double *out)
{
    JsonNode *n = json_object_get_member(o, key);
    *out = NAN;
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) == G_TYPE_STRING ||
        json_node_get_value_type(n) == G_TYPE_BOOLEAN)
        return FALSE;
    *out = json_node_get_double(n);
    return TRUE;
}

static guint64
get_count(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64
               ? (guint64)MAX(json_node_get_int(n), 0)
               : 0;
}

static gboolean
load_halfguard(HgStats *st, JsonObject *root, GError **error)
{
    JsonNode *tn = json_object_get_member(root, "tensors");
    if (!tn || !JSON_NODE_HOLDS_OBJECT(tn)) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "halfguard stats without a \"tensors\" object");
        return FALSE;
    }
    JsonObject *tensors = json_node_get_object(tn);
    g_autoptr(GList) names = json_object_get_members(tensors);
    for (GList *l = names; l; l = l->next) {
        JsonNode *en = json_object_get_member(tensors, l->data);
        if (!JSON_NODE_HOLDS_OBJECT(en)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "tensor '%s': not an object", (char *)l->data);
            return FALSE;
        }
        JsonObject *o = json_node_get_object(en);
        const char *dt =
            json_object_has_member(o, "dtype") ? json_object_get_string_member(o, "dtype") : NULL;
        HgTensorStats s = {dt ? hg_dtype_from_name(dt) : HG_DTYPE_UNDEFINED, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        if (!get_number(o, "min", &s.min) || !get_number(o, "max", &s.max) ||
            !get_number(o, "absmax", &s.absmax) || !get_number(o, "min_abs_nonzero", &s.min_abs_nonzero) ||
            (!isnan(s.min) && !isnan(s.max) && s.min > s.max)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "tensor '%s': min, max, absmax and "
                        "min_abs_nonzero must be numbers or null, min <= max", (char *)l->data);
            return FALSE;
        }
        if (isnan(s.absmax) && !isnan(s.min))
            s.absmax = MAX(fabs(s.min), fabs(s.max));
        s.n_inf = get_count(o, "inf");
        s.n_nan = get_count(o, "nan");
        s.count = get_count(o, "count");
        s.samples = (guint)MIN(get_count(o, "samples"), G_MAXUINT);
        s.synthetic = (guint)MIN(get_count(o, "synthetic"), s.samples);
        g_autoptr(HgStats) one = stats_new();
        *(HgTensorStats *)stats_entry(one, l->data, s.dtype) = s;
        hg_stats_merge(st, one);
    }
    return TRUE;
}

/* ---------------------------------------------------------------- Polygraphy's JSON */

/* A Polygraphy-encoded array: {"array": base64 of a .npy file, "polygraphy_class": "ndarray"} (older
 * files mark it with "__polygraphy_encoded_ndarray"), possibly wrapped in a LazyArray {"values": ...}.
 * Returns NULL when node is not one (no error), or NULL with error when it is one but is broken. */
HgTensor *
hg_polygraphy_array(JsonNode *node, const char *name, gboolean *is_array, GError **error)
{
    *is_array = FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(node))
        return NULL;
    JsonObject *o = json_node_get_object(node);
    JsonNode *values = json_object_get_member(o, "values");
    if (values && JSON_NODE_HOLDS_OBJECT(values))
        return hg_polygraphy_array(values, name, is_array, error);
    JsonNode *arr = json_object_get_member(o, "array");
    if (!arr || !JSON_NODE_HOLDS_VALUE(arr) || json_node_get_value_type(arr) != G_TYPE_STRING)
        return NULL;
    *is_array = TRUE;
    gsize len = 0;
    g_autofree guchar *npy = g_base64_decode(json_node_get_string(arr), &len);
    HgTensor *t = hg_npy_parse(npy, len, name, error);
    if (!t)
        g_prefix_error(error, "array '%s': ", name);
    return t;
}

/* {name: array, ...}: every float array member becomes a sample of that tensor; of a feed dict
 * (inputs), every numeric one. */
static gboolean
load_feed_dict(HgStats *st, JsonObject *o, gboolean inputs, GError **error)
{
    g_autoptr(GList) names = json_object_get_members(o);
    for (GList *l = names; l; l = l->next) {
        gboolean is_array;
        JsonNode *node = json_object_get_member(o, l->data);
        g_autoptr(HgTensor) t = hg_polygraphy_array(node, l->data, &is_array, error);
        if (is_array && !t)
            return FALSE;
        if (t && (hg_dtype_is_float(t->dtype) || (inputs && numeric(t->dtype))))
            stats_add(st, l->data, t);
    }
    return TRUE;
}

static gboolean
not_polygraphy(GError **error)
{
    if (error && !*error)
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not a Polygraphy RunResults or inputs file");
    return FALSE;
}

static gboolean
load_polygraphy(HgStats *st, JsonNode *root, GError **error)
{
    if (JSON_NODE_HOLDS_ARRAY(root)) { /* --save-inputs: a list of {name: array} per iteration */
        JsonArray *a = json_node_get_array(root);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *it = json_array_get_element(a, i);
            if (!JSON_NODE_HOLDS_OBJECT(it) || !load_feed_dict(st, json_node_get_object(it), TRUE, error))
                return not_polygraphy(error);
        }
        return TRUE;
    }
    /* --save-outputs: {"lst": [[runner, [IterationResult...]], ...], "polygraphy_class": "RunResults"} */
    JsonNode *lst = json_object_get_member(json_node_get_object(root), "lst");
    if (!lst || !JSON_NODE_HOLDS_ARRAY(lst))
        return not_polygraphy(error);
    JsonArray *runners = json_node_get_array(lst);
    for (guint i = 0; i < json_array_get_length(runners); i++) {
        JsonNode *pair = json_array_get_element(runners, i);
        if (!JSON_NODE_HOLDS_ARRAY(pair) || json_array_get_length(json_node_get_array(pair)) != 2)
            return not_polygraphy(error);
        JsonNode *iters = json_array_get_element(json_node_get_array(pair), 1);
        if (!JSON_NODE_HOLDS_ARRAY(iters))
            return not_polygraphy(error);
        JsonArray *ia = json_node_get_array(iters);
        for (guint k = 0; k < json_array_get_length(ia); k++) {
            JsonNode *ir = json_array_get_element(ia, k);
            JsonNode *outs = JSON_NODE_HOLDS_OBJECT(ir)
                                 ? json_object_get_member(json_node_get_object(ir), "outputs") : NULL;
            if (!outs || !JSON_NODE_HOLDS_OBJECT(outs) || !load_feed_dict(st, json_node_get_object(outs), FALSE, error))
                return not_polygraphy(error);
        }
    }
    return TRUE;
}

HgStats *
hg_stats_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(JsonParser) p = json_parser_new();
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!hg_infile_read(path, &data, &len, error) ||
        !hg_json_parse(p, data, len, error)) {
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(p);
    HgStats *st = stats_new();
    gboolean ok;
    JsonObject *o = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    const char *format = o && json_object_has_member(o, "format") &&
                                 JSON_NODE_HOLDS_VALUE(json_object_get_member(o, "format"))
                             ? json_object_get_string_member(o, "format") : NULL;
    if (format && strcmp(format, "halfguard-stats") == 0)
        ok = load_halfguard(st, o, error);
    else if (root && (o || JSON_NODE_HOLDS_ARRAY(root)))
        ok = load_polygraphy(st, root, error);
    else {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "neither halfguard stats nor Polygraphy JSON");
        ok = FALSE;
    }
    if (!ok) {
        g_prefix_error(error, "%s: ", path);
        hg_stats_unref(st);
        return NULL;
    }
    return st;
}
