/* The interpreter: runs the main graph in topological order through the op table's kernels, frees
 * each intermediate after its last use, and hands every computed tensor to an observer (calibration,
 * --mark-all). */
#include "halfguard/run.h"
#include "halfguard/io.h"
#include "ir_private.h"
#include "ops/op.h"

#include <string.h>

GPtrArray *
hg_run_feeds(HgModel *m)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL, NULL);
    GPtrArray *feeds = g_ptr_array_new();
    for (guint i = 0; i < m->graph->inputs->len; i++) {
        HgValueDecl *d = m->graph->inputs->pdata[i];
        if (!d->value->init)
            g_ptr_array_add(feeds, d);
    }
    return feeds;
}

/* A tensor header over an array's data, for observers; nothing is copied or owned. */
static void
tensor_view(HgTensor *t, const HgValue *v, const HgArray *a)
{
    memset(t, 0, sizeof(*t));
    t->name = v->name;
    t->has_dtype = TRUE;
    t->dtype = a->dtype;
    t->rank = a->rank;
    t->dims = (gint64 *)a->dims;
    t->storage = a->strings ? HG_STORAGE_STRINGS : HG_STORAGE_RAW;
    t->data = a->data;
    t->nbytes = (gsize)a->numel * hg_dtype_size(a->dtype);
    t->strings = a->strings;
}

static gboolean
check_feed(const HgValueDecl *d, const HgTensor *t, GError **error)
{
    const HgType *ty = d->type;
    const char *name = d->value->name;
    if (!t) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "input '%s' is missing", name);
        return FALSE;
    }
    if (!ty || ty->kind != HG_TYPE_TENSOR)
        return TRUE;
    if (ty->has_elem_type && ty->elem_type != t->dtype) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "input '%s' is %s, the model declares %s", name,
                    hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?",
                    hg_dtype_name(ty->elem_type) ? hg_dtype_name(ty->elem_type) : "?");
        return FALSE;
    }
    if (!ty->shape)
        return TRUE;
    gboolean ok = ty->shape->rank == t->rank;
    for (guint i = 0; ok && i < t->rank; i++)
        ok = !ty->shape->dims[i].has_value || ty->shape->dims[i].value == t->dims[i];
    if (!ok) {
        GString *want = g_string_new("[");
        for (guint i = 0; i < ty->shape->rank; i++) {
            const HgDim *dm = &ty->shape->dims[i];
            if (i)
                g_string_append_c(want, ',');
            if (dm->has_value)
                g_string_append_printf(want, "%" G_GINT64_FORMAT, dm->value);
            else
                g_string_append(want, dm->param ? dm->param : "?");
        }
        g_string_append_c(want, ']');
        GString *got = g_string_new("[");
        for (guint i = 0; i < t->rank; i++)
            g_string_append_printf(got, "%s%" G_GINT64_FORMAT, i ? "," : "", t->dims[i]);
        g_string_append_c(got, ']');
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "input '%s' has shape %s, the model declares %s",
                    name, got->str, want->str);
        g_string_free(want, TRUE);
        g_string_free(got, TRUE);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    GHashTable *arrays;    /* HgValue -> HgArray (owned) */
    GHashTable *remaining; /* HgValue -> uses left (GPOINTER_TO_UINT) */
    const HgRunOptions *opts;
    GHashTable *keep;      /* values returned at the end: never freed early */
} Run;

static gboolean
observe(Run *r, const HgValue *v, const HgArray *a, GError **error)
{
    if (!r->opts || !r->opts->observe)
        return TRUE;
    HgTensor t;
    tensor_view(&t, v, a);
    return r->opts->observe(v, &t, r->opts->observe_data, error);
}

static void
release_use(Run *r, HgValue *v)
{
    guint left = GPOINTER_TO_UINT(g_hash_table_lookup(r->remaining, v));
    if (left == 0)
        return;
    if (--left == 0 && !g_hash_table_contains(r->keep, v))
        g_hash_table_remove(r->arrays, v);
    g_hash_table_insert(r->remaining, v, GUINT_TO_POINTER(left));
}

static gboolean
run_node(Run *r, HgNode *n, gint64 opset, int threads, GError **error)
{
    const HgOpDef *op = hg_op_for_node(n);
    if (!op) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                    "node '%s' (%s%s%s): the interpreter has no kernel for this op", n->name ? n->name : "",
                    n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "",
                    n->op_type);
        return FALSE;
    }
    g_autofree HgArray **ins = g_new0(HgArray *, n->n_inputs + 1);
    for (guint i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i])
            continue;
        ins[i] = g_hash_table_lookup(r->arrays, n->inputs[i]);
        if (!ins[i]) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "node '%s' (%s): input '%s' has no value",
                        n->name ? n->name : "", n->op_type, n->inputs[i]->name);
            return FALSE;
        }
    }
    g_autofree HgArray **outs = g_new0(HgArray *, n->n_outputs + 1);
    HgEvalCtx ctx = {n, opset, n->n_inputs, ins, n->n_outputs, outs, threads, error};
    gboolean ok = op->eval(&ctx);
    for (guint i = 0; ok && i < n->n_outputs; i++) {
        HgValue *v = n->outputs[i];
        if (!v) {
            hg_array_unref(outs[i]);
            continue;
        }
        if (!outs[i]) {
            if (g_hash_table_lookup(r->remaining, v) || g_hash_table_contains(r->keep, v)) {
                hg_op_error(error, HG_ERROR_INVALID, n, "output %u was not computed", i);
                ok = FALSE;
            }
            continue;
        }
        ok = observe(r, v, outs[i], error);
        if (g_hash_table_lookup(r->remaining, v) || g_hash_table_contains(r->keep, v))
            g_hash_table_insert(r->arrays, v, g_steal_pointer(&outs[i]));
    }
    for (guint i = 0; i < n->n_outputs; i++)
        hg_array_unref(outs[i]);
    if (!ok)
        return FALSE;
    for (guint i = 0; i < n->n_inputs; i++)
        if (n->inputs[i])
            release_use(r, n->inputs[i]);
    return TRUE;
}

GPtrArray *
hg_run(HgModel *m, GPtrArray *inputs, const HgRunOptions *opts, GError **error)
{
    g_return_val_if_fail(m != NULL && inputs != NULL, NULL);
    if (!m->graph) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "the model has no graph");
        return NULL;
    }
    HgGraph *g = m->graph;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return NULL;
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    if (inputs->len != feeds->len) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "the model takes %u inputs, %u were given",
                    feeds->len, inputs->len);
        return NULL;
    }
    /* The values to return, and the nodes they need. */
    g_autoptr(GPtrArray) wanted = g_ptr_array_new();
    if (opts && opts->outputs) {
        for (guint i = 0; opts->outputs[i]; i++) {
            HgValue *v = g_hash_table_lookup(g->values, opts->outputs[i]);
            if (!v) {
                g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "the model has no value '%s'",
                            opts->outputs[i]);
                return NULL;
            }
            g_ptr_array_add(wanted, v);
        }
    } else {
        for (guint i = 0; i < g->outputs->len; i++)
            g_ptr_array_add(wanted, ((HgValueDecl *)g->outputs->pdata[i])->value);
    }
    g_autoptr(GHashTable) needed = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    for (guint i = 0; i < wanted->len; i++)
        g_ptr_array_add(stack, ((HgValue *)wanted->pdata[i])->producer);
    while (stack->len) {
        HgNode *n = g_ptr_array_steal_index_fast(stack, stack->len - 1);
        if (!n || g_hash_table_contains(needed, n))
            continue;
        g_hash_table_add(needed, n);
        for (guint k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] && n->inputs[k]->producer)
                g_ptr_array_add(stack, n->inputs[k]->producer);
    }
    guint w = 0;
    for (guint i = 0; i < order->len; i++)
        if (g_hash_table_contains(needed, order->pdata[i]))
            order->pdata[w++] = order->pdata[i];
    g_ptr_array_set_size(order, w);

    Run r = {g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_array_unref),
             g_hash_table_new(NULL, NULL), opts, NULL};
    r.keep = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < wanted->len; i++)
        g_hash_table_add(r.keep, wanted->pdata[i]);
    GPtrArray *result = NULL;
    int threads = opts && opts->threads > 0 ? opts->threads : (int)g_get_num_processors();
    gint64 opset = hg_model_opset(m, "");

    /* Uses left per value, counting each node input once per slot. */
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (v)
                g_hash_table_insert(r.remaining, v,
                                    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(r.remaining, v)) + 1));
        }
    }
    for (guint i = 0; i < feeds->len; i++) {
        HgValueDecl *d = feeds->pdata[i];
        const HgTensor *t = inputs->pdata[i];
        if (!check_feed(d, t, error))
            goto out;
        HgArray *a = hg_array_from_tensor(t, error);
        if (!a) {
            g_prefix_error(error, "input '%s': ", d->value->name);
            goto out;
        }
        g_hash_table_insert(r.arrays, d->value, a);
        if (!observe(&r, d->value, a, error))
            goto out;
    }
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || g_hash_table_contains(r.arrays, v))
            continue;
        HgArray *a = hg_array_from_tensor(t, error);
        if (!a)
            goto out;
        g_hash_table_insert(r.arrays, v, a);
    }
    for (guint i = 0; i < order->len; i++)
        if (!run_node(&r, order->pdata[i], opset, threads, error))
            goto out;
    result = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint i = 0; i < wanted->len; i++) {
        HgValue *v = wanted->pdata[i];
        HgArray *a = g_hash_table_lookup(r.arrays, v);
        if (!a) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "output '%s' was not computed", v->name);
            g_clear_pointer(&result, g_ptr_array_unref);
            goto out;
        }
        HgTensor *t = hg_array_to_tensor(a, v->name);
        if (!t) {
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "output '%s' (%s) cannot be returned",
                        v->name, hg_dtype_name(a->dtype) ? hg_dtype_name(a->dtype) : "?");
            g_clear_pointer(&result, g_ptr_array_unref);
            goto out;
        }
        g_ptr_array_add(result, t);
    }
out:
    g_hash_table_unref(r.arrays);
    g_hash_table_unref(r.remaining);
    g_hash_table_unref(r.keep);
    return result;
}

/* ---------------------------------------------------------------- feeds from a folder */

GPtrArray *
hg_load_feeds(HgModel *m, const char *dir, GError **error)
{
    g_return_val_if_fail(m != NULL && dir != NULL, NULL);
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    GPtrArray *tensors = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint i = 0; i < feeds->len; i++) {
        HgValueDecl *d = feeds->pdata[i];
        g_autofree char *npy_name = g_strdup_printf("%s.npy", d->value->name);
        /* Names with '/' or ':' cannot be file names as they are; the usual escape is '_'. */
        g_strdelimit(npy_name, "/\\:", '_');
        g_autofree char *pb = g_strdup_printf("%s/input_%u.pb", dir, i);
        g_autofree char *npy = g_build_filename(dir, npy_name, NULL);
        const char *path = g_file_test(pb, G_FILE_TEST_EXISTS)    ? pb
                           : g_file_test(npy, G_FILE_TEST_EXISTS) ? npy
                                                                  : NULL;
        if (!path) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                        "input '%s' is missing: no input_%u.pb or %s in %s", d->value->name, i,
                        npy_name, dir);
            g_ptr_array_unref(tensors);
            return NULL;
        }
        HgTensor *t = hg_tensor_load_file(path, error);
        if (!t || !check_feed(d, t, error)) {
            hg_tensor_free(t);
            g_prefix_error(error, "%s: ", path);
            g_ptr_array_unref(tensors);
            return NULL;
        }
        g_ptr_array_add(tensors, t);
    }
    return tensors;
}
