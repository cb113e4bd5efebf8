/* Running a model over data folders: `halfguard run` (outputs, --mark-all) and `halfguard calibrate`
 * (per-tensor statistics as JSON). */
#include "halfguard/run.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ops/array.h"

/* ---------------------------------------------------------------- run */

typedef struct {
    const char *out_dir;
    HgTensorFormat format;
    JsonBuilder *index;
    GHashTable *used_names; /* file names already written */
} MarkAll;

/* A file name for a tensor name: letters, digits, '.', '-', '_' kept, others become '_'; a counter
 * keeps distinct tensors apart when their safe names collide. */
static char *
safe_name(GHashTable *used, const char *name, const char *ext)
{
    GString *s = g_string_new(NULL);
    for (const char *p = name; *p; p++)
        g_string_append_c(s, g_ascii_isalnum(*p) || *p == '.' || *p == '-' || *p == '_' ? *p : '_');
    if (!s->len || s->str[0] == '.')
        g_string_prepend_c(s, '_');
    char *base = g_string_free(s, FALSE);
    char *file = g_strdup_printf("%s.%s", base, ext);
    for (guint k = 1; g_hash_table_contains(used, file); k++) {
        g_free(file);
        file = g_strdup_printf("%s_%u.%s", base, k, ext);
    }
    g_free(base);
    g_hash_table_add(used, g_strdup(file));
    return file;
}

static gboolean
write_tensor(const HgTensor *t, const char *path, HgTensorFormat format, GError **error)
{
    return format == HG_FORMAT_NPY ? hg_tensor_save_npy(t, path, error)
                                   : hg_tensor_save_pb_file(t, path, error);
}

static gboolean
mark_all_observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    MarkAll *ma = data;
    if (!hg_dtype_is_float(t->dtype))
        return TRUE;
    g_autofree char *file = safe_name(ma->used_names, v->name, ma->format == HG_FORMAT_NPY ? "npy" : "pb");
    g_autofree char *path = g_build_filename(ma->out_dir, file, NULL);
    if (!write_tensor(t, path, ma->format, error))
        return FALSE;
    json_builder_set_member_name(ma->index, v->name);
    json_builder_begin_object(ma->index);
    json_builder_set_member_name(ma->index, "file");
    json_builder_add_string_value(ma->index, file);
    json_builder_set_member_name(ma->index, "dtype");
    json_builder_add_string_value(ma->index, hg_dtype_name(t->dtype));
    json_builder_set_member_name(ma->index, "shape");
    json_builder_begin_array(ma->index);
    for (guint i = 0; i < t->rank; i++)
        json_builder_add_int_value(ma->index, t->dims[i]);
    json_builder_end_array(ma->index);
    json_builder_end_object(ma->index);
    return TRUE;
}

static gboolean
write_json(JsonBuilder *b, const char *path, GError **error)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    gsize len;
    g_autofree char *text = json_generator_to_data(gen, &len);
    return g_file_set_contents(path, text, (gssize)len, error);
}

gboolean
hg_run_to_dir(HgModel *m, const char *data_dir, const char *out_dir, const char *const *outputs,
              HgTensorFormat format, gboolean mark_all, int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && data_dir != NULL && out_dir != NULL, FALSE);
    g_autoptr(GPtrArray) feeds = hg_load_feeds(m, data_dir, error);
    if (!feeds)
        return FALSE;
    if (g_mkdir_with_parents(out_dir, 0755) != 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "cannot create %s: %s", out_dir, g_strerror(errno));
        return FALSE;
    }
    MarkAll ma = {out_dir, format, NULL, NULL};
    HgRunOptions opts = {threads, NULL, NULL, outputs};
    if (mark_all) {
        ma.index = json_builder_new();
        ma.used_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        /* Graph outputs keep their output_K names; intermediates must not take them. */
        guint n_out = outputs ? g_strv_length((char **)outputs) : m->graph->outputs->len;
        for (guint i = 0; i < n_out; i++)
            g_hash_table_add(ma.used_names, g_strdup_printf("output_%u.%s", i,
                                                            format == HG_FORMAT_NPY ? "npy" : "pb"));
        g_hash_table_add(ma.used_names, g_strdup("index.json"));
        json_builder_begin_object(ma.index);
        opts.observe = mark_all_observe;
        opts.observe_data = &ma;
    }
    g_autoptr(GPtrArray) outs = hg_run(m, feeds, &opts, error);
    gboolean ok = outs != NULL;
    for (guint i = 0; ok && i < outs->len; i++) {
        g_autofree char *path = g_strdup_printf("%s/output_%u.%s", out_dir, i,
                                                format == HG_FORMAT_NPY ? "npy" : "pb");
        ok = write_tensor(outs->pdata[i], path, format, error);
    }
    if (mark_all) {
        json_builder_end_object(ma.index);
        if (ok) {
            g_autofree char *index = g_build_filename(out_dir, "index.json", NULL);
            ok = write_json(ma.index, index, error);
        }
        g_object_unref(ma.index);
        g_hash_table_unref(ma.used_names);
    }
    return ok;
}

gboolean
hg_run_timed(HgModel *m, const char *data_dir, const char *const *outputs, int threads, guint repeat,
             double *times_ms, GError **error)
{
    g_return_val_if_fail(m != NULL && data_dir != NULL && (times_ms != NULL || !repeat), FALSE);
    g_autoptr(GPtrArray) feeds = hg_load_feeds(m, data_dir, error);
    if (!feeds)
        return FALSE;
    HgRunOptions opts = {threads, NULL, NULL, outputs};
    for (guint i = 0; i <= repeat; i++) {
        gint64 t0 = g_get_monotonic_time();
        g_autoptr(GPtrArray) outs = hg_run(m, feeds, &opts, error);
        if (!outs)
            return FALSE;
        if (i > 0)
            times_ms[i - 1] = (double)(g_get_monotonic_time() - t0) / 1000.0;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- calibrate */

typedef struct {
    char *name;
    int dtype;
    double min, max, absmax, min_abs_nonzero;
    gboolean any_finite, any_nonzero;
    guint64 n_inf, n_nan, count;
    guint samples;
} TensorStats;

typedef struct {
    GHashTable *by_name;  /* name -> TensorStats */
    GPtrArray *order;     /* first-seen order, for a stable file */
} Calib;

static void
tensor_stats_free(gpointer p)
{
    TensorStats *s = p;
    g_free(s->name);
    g_free(s);
}

static gboolean
calib_observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    Calib *c = data;
    if (!hg_dtype_is_float(t->dtype))
        return TRUE;
    TensorStats *s = g_hash_table_lookup(c->by_name, v->name);
    if (!s) {
        s = g_new0(TensorStats, 1);
        s->name = g_strdup(v->name);
        s->dtype = t->dtype;
        g_hash_table_insert(c->by_name, s->name, s);
        g_ptr_array_add(c->order, s);
    }
    s->samples++;
    gint64 n = hg_tensor_numel(t);
    s->count += (guint64)n;
    HgArray view = {1, t->dtype, t->rank, {0}, n, (void *)t->data, FALSE, NULL, NULL, NULL};
    gboolean owned;
    double *x = hg_array_load_f64(&view, &owned);
    for (gint64 i = 0; i < n; i++) {
        double a = x[i];
        if (isnan(a)) {
            s->n_nan++;
            continue;
        }
        if (isinf(a)) {
            s->n_inf++;
            continue;
        }
        if (!s->any_finite) {
            s->min = s->max = a;
            s->any_finite = TRUE;
        }
        s->min = MIN(s->min, a);
        s->max = MAX(s->max, a);
        double m = fabs(a);
        s->absmax = MAX(s->absmax, m);
        if (m > 0 && (!s->any_nonzero || m < s->min_abs_nonzero)) {
            s->min_abs_nonzero = m;
            s->any_nonzero = TRUE;
        }
    }
    if (owned)
        g_free(x);
    return TRUE;
}

static void
add_number(JsonBuilder *b, const char *key, gboolean known, double v)
{
    json_builder_set_member_name(b, key);
    if (known)
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

gboolean
hg_calibrate(HgModel *m, const char *const *data_dirs, int threads, const char *json_path,
             GError **error)
{
    g_return_val_if_fail(m != NULL && data_dirs != NULL && json_path != NULL, FALSE);
    Calib c = {g_hash_table_new(g_str_hash, g_str_equal), g_ptr_array_new_with_free_func(tensor_stats_free)};
    HgRunOptions opts = {threads, calib_observe, &c, NULL};
    guint samples = 0;
    gboolean ok = TRUE;
    for (guint i = 0; ok && data_dirs[i]; i++) {
        g_autoptr(GPtrArray) feeds = hg_load_feeds(m, data_dirs[i], error);
        g_autoptr(GPtrArray) outs = feeds ? hg_run(m, feeds, &opts, error) : NULL;
        ok = outs != NULL;
        if (!ok)
            g_prefix_error(error, "%s: ", data_dirs[i]);
        samples++;
    }
    if (ok) {
        JsonBuilder *b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "format");
        json_builder_add_string_value(b, "halfguard-stats");
        json_builder_set_member_name(b, "version");
        json_builder_add_int_value(b, 1);
        json_builder_set_member_name(b, "samples");
        json_builder_add_int_value(b, samples);
        json_builder_set_member_name(b, "tensors");
        json_builder_begin_object(b);
        for (guint i = 0; i < c.order->len; i++) {
            TensorStats *s = c.order->pdata[i];
            json_builder_set_member_name(b, s->name);
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "dtype");
            json_builder_add_string_value(b, hg_dtype_name(s->dtype));
            add_number(b, "min", s->any_finite, s->min);
            add_number(b, "max", s->any_finite, s->max);
            add_number(b, "absmax", s->any_finite, s->absmax);
            add_number(b, "min_abs_nonzero", s->any_nonzero, s->min_abs_nonzero);
            json_builder_set_member_name(b, "inf");
            json_builder_add_int_value(b, (gint64)s->n_inf);
            json_builder_set_member_name(b, "nan");
            json_builder_add_int_value(b, (gint64)s->n_nan);
            json_builder_set_member_name(b, "count");
            json_builder_add_int_value(b, (gint64)s->count);
            json_builder_set_member_name(b, "samples");
            json_builder_add_int_value(b, s->samples);
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
        json_builder_end_object(b);
        ok = write_json(b, json_path, error);
        g_object_unref(b);
    }
    g_hash_table_unref(c.by_name);
    g_ptr_array_unref(c.order);
    return ok;
}
