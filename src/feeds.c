/* What a run is fed: the graph inputs a caller must give (hg_run_feeds), their check against the
 * declarations, loading them from a folder (input_K.pb or NAME.npy), and the conversion between float
 * element types that feeding an FP16 model FP32 sample data needs (hg_tensor_convert). The
 * interpreter, verify, calibration and the hazard analysis all read feeds; none of them needs the
 * others for it.
 */
#include "halfguard/feeds.h"
#include "halfguard/io.h"
#include "halfguard/run.h"
#include "ir_private.h"
#include "ops/array.h"

#include <string.h>

/* ---------------------------------------------------------------- the graph inputs to feed */

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

gboolean
hg_feed_check(const HgValueDecl *d, const HgTensor *t, GError **error)
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
        g_autofree char *got = hg_dims_string(t->rank, t->dims);
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "input '%s' has shape %s, the model declares %s",
                    name, got, want->str);
        g_string_free(want, TRUE);
        return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- element type conversion */

HgTensor *
hg_tensor_convert(const HgTensor *t, HgDType dtype, GError **error)
{
    g_return_val_if_fail(t != NULL, NULL);
    if (t->dtype == dtype)
        return hg_tensor_copy(t);
    if (!hg_dtype_is_float(t->dtype) || !hg_dtype_is_float(dtype)) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "cannot convert %s to %s",
                    hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?",
                    hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "?");
        return NULL;
    }
    /* The array checks the byte count against the shape and gives aligned data. */
    g_autoptr(HgArray) a = hg_array_from_tensor(t, error);
    if (!a)
        return NULL;
    HgTensor *out = hg_tensor_try_new(t->name, dtype, t->rank, t->dims);
    if (!out) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "tensor '%s' is too large",
                    t->name ? t->name : "");
        return NULL;
    }
    gsize n = (gsize)a->numel;
    void *dst = hg_tensor_data_mut(out);
    if (a->dtype == HG_DTYPE_DOUBLE && dtype == HG_DTYPE_FLOAT) {
        for (gsize i = 0; i < n; i++)
            ((float *)dst)[i] = (float)((const double *)a->data)[i];
        return out;
    }
    /* Every other pair goes through FP32, which holds float16 and bfloat16 exactly. */
    gboolean owned;
    float *f = hg_array_load_f32(a, &owned);
    switch (dtype) {
    case HG_DTYPE_FLOAT:
        memcpy(dst, f, n * sizeof(float));
        break;
    case HG_DTYPE_FLOAT16:
        hg_float_to_half_n(f, dst, n);
        break;
    case HG_DTYPE_BFLOAT16:
        for (gsize i = 0; i < n; i++)
            ((guint16 *)dst)[i] = hg_float_to_bf16(f[i]);
        break;
    case HG_DTYPE_DOUBLE:
        for (gsize i = 0; i < n; i++)
            ((double *)dst)[i] = f[i];
        break;
    default:
        g_assert_not_reached();
    }
    if (owned)
        g_free(f);
    return out;
}

/* ---------------------------------------------------------------- feeds from a folder */

static GPtrArray *
load_feeds(HgModel *m, const char *dir, gboolean convert, GError **error);

GPtrArray *
hg_load_feeds(HgModel *m, const char *dir, GError **error)
{
    return load_feeds(m, dir, FALSE, error);
}

GPtrArray *
hg_load_feeds_converted(HgModel *m, const char *dir, GError **error)
{
    return load_feeds(m, dir, TRUE, error);
}

static GPtrArray *
load_feeds(HgModel *m, const char *dir, gboolean convert, GError **error)
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
        const HgType *ty = d->type;
        if (t && convert && ty && ty->kind == HG_TYPE_TENSOR && ty->has_elem_type &&
            ty->elem_type != t->dtype && hg_dtype_is_float(ty->elem_type) && hg_dtype_is_float(t->dtype)) {
            HgTensor *c = hg_tensor_convert(t, ty->elem_type, error);
            hg_tensor_free(t);
            t = c;
        }
        if (!t || !hg_feed_check(d, t, error)) {
            hg_tensor_free(t);
            g_prefix_error(error, "%s: ", path);
            g_ptr_array_unref(tensors);
            return NULL;
        }
        g_ptr_array_add(tensors, t);
    }
    return tensors;
}
