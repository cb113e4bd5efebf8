/* Running a model over data folders: `halfguard run` (outputs, --mark-all) and `halfguard calibrate`
 * (per-tensor statistics: src/stats.c). */
#include "halfguard/run.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ir_private.h"
#include "json_util.h"
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


gboolean
hg_run_to_dir(HgModel *m, const char *data_dir, const char *out_dir, const char *const *outputs,
              HgTensorFormat format, gboolean mark_all, int threads, GError **error)
{
    g_return_val_if_fail(m != NULL && data_dir != NULL && out_dir != NULL, FALSE);
    if (strcmp(out_dir, "-") == 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "-o takes a folder: standard output cannot hold several files");
        return FALSE;
    }
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
            ok = hg_json_save(ma.index, index, error);
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
