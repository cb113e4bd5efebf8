/* Sample inputs in the formats users have (include/halfguard/run.h, HgSamples): folders of tensor
 * files, folders of such folders, numpy's .npz, Polygraphy's --save-inputs JSON.
 *
 * A file is parsed whole when opened, before any model is loaded, so that a malformed one stops the
 * command before it writes anything; fitting the arrays to a model's inputs (names, types, shapes, the
 * leading sample axis of an .npz) happens per model in hg_samples_feeds. */
#include "halfguard/run.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "ir_private.h"
#include "infile.h"
#include "json_util.h"
#include "ops/array.h"
#include "zip.h"

typedef enum { SRC_FOLDER, SRC_FOLDERS, SRC_ARRAYS } SourceKind;

struct HgSamples {
    gint refcount;
    char *path;
    SourceKind kind;
    GPtrArray *folders;  /* SRC_FOLDERS: char* paths, in name order */
    /* SRC_ARRAYS: one GHashTable (name -> HgTensor*) per group: an .npz is one group whose arrays may
     * carry a sample axis; a Polygraphy file one group per sample. */
    GPtrArray *groups;
    gboolean npz;
};

void
hg_sample_free(HgSample *s)
{
    if (!s)
        return;
    g_free(s->label);
    if (s->feeds)
        g_ptr_array_unref(s->feeds);
    g_free(s);
}

HgSamples *
hg_samples_ref(HgSamples *s)
{
    g_return_val_if_fail(s != NULL, NULL);
    g_atomic_int_inc(&s->refcount);
    return s;
}

void
hg_samples_free(HgSamples *s)
{
    if (!s || !g_atomic_int_dec_and_test(&s->refcount))
        return;
    g_free(s->path);
    if (s->folders)
        g_ptr_array_unref(s->folders);
    if (s->groups)
        g_ptr_array_unref(s->groups);
    g_free(s);
}

const char *
hg_samples_path(const HgSamples *s)
{
    g_return_val_if_fail(s != NULL, NULL);
    return s->path;
}

static GHashTable *
group_new(void)
{
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)hg_tensor_free);
}

/* ---------------------------------------------------------------- opening */

static gboolean
is_input_file(const char *name)
{
    return (g_str_has_prefix(name, "input_") && g_str_has_suffix(name, ".pb")) || g_str_has_suffix(name, ".npy");
}

static int
by_filename(gconstpointer a, gconstpointer b)
{
    g_autofree char *ka = g_utf8_collate_key_for_filename(*(char *const *)a, -1);
    g_autofree char *kb = g_utf8_collate_key_for_filename(*(char *const *)b, -1);
    return strcmp(ka, kb);
}

static gboolean
open_folder(HgSamples *s, GError **error)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GDir) dir = g_dir_open(s->path, 0, &e);
    if (!dir) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s: %s", s->path, e->message);
        return FALSE;
    }
    g_autoptr(GPtrArray) subs = g_ptr_array_new_with_free_func(g_free);
    gboolean inputs = FALSE;
    for (const char *name; (name = g_dir_read_name(dir));) {
        g_autofree char *full = g_build_filename(s->path, name, NULL);
        if (is_input_file(name))
            inputs = TRUE;
        else if (g_file_test(full, G_FILE_TEST_IS_DIR))
            g_ptr_array_add(subs, g_strdup(name));
    }
    /* With nothing in it, it is still one sample: the loader then names the input that is missing. */
    if (inputs || !subs->len) {
        s->kind = SRC_FOLDER;
        return TRUE;
    }
    g_ptr_array_sort(subs, by_filename);
    s->kind = SRC_FOLDERS;
    s->folders = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < subs->len; i++)
        g_ptr_array_add(s->folders, g_build_filename(s->path, subs->pdata[i], NULL));
    return TRUE;
}

static gboolean
open_npz(HgSamples *s, const guint8 *data, gsize len, GError **error)
{
    g_autoptr(GPtrArray) members = hg_zip_read(data, len, error);
    if (!members)
        return FALSE;
    if (!members->len) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "the .npz holds no arrays");
        return FALSE;
    }
    GHashTable *group = group_new();
    g_ptr_array_add(s->groups, group);
    for (guint i = 0; i < members->len; i++) {
        const HgZipMember *m = members->pdata[i];
        if (!g_str_has_suffix(m->name, ".npy")) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "member '%s' is not a .npy array", m->name);
            return FALSE;
        }
        g_autofree char *name = g_strndup(m->name, strlen(m->name) - 4);
        HgTensor *t = hg_npy_parse(m->data, m->size, name, error);
        if (!t) {
            g_prefix_error(error, "array '%s': ", name);
            return FALSE;
        }
        if (!g_hash_table_insert(group, g_steal_pointer(&name), t)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "array '%s' is there twice", t->name);
            return FALSE;
        }
    }
    s->npz = TRUE;
    return TRUE;
}

static gboolean
open_polygraphy(HgSamples *s, const char *data, gsize len, GError **error)
{
    g_autoptr(JsonParser) p = json_parser_new();
    if (!hg_json_parse(p, data, len, error))
        return FALSE;
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_ARRAY(root)) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE,
                    "not Polygraphy --save-inputs JSON (a list of {input name: array}, one per sample)%s",
                    root && JSON_NODE_HOLDS_OBJECT(root) ? "; statistics and --save-outputs files go to --stats" : "");
        return FALSE;
    }
    JsonArray *a = json_node_get_array(root);
    guint n = json_array_get_length(a);
    if (!n) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "the list holds no samples");
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        JsonNode *it = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_OBJECT(it)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "sample %u is not an object of {input name: array}", i);
            return FALSE;
        }
        GHashTable *group = group_new();
        g_ptr_array_add(s->groups, group);
        JsonObject *o = json_node_get_object(it);
        g_autoptr(GList) names = json_object_get_members(o);
        for (GList *l = names; l; l = l->next) {
            gboolean is_array = FALSE;
            HgTensor *t = hg_polygraphy_array(json_object_get_member(o, l->data), l->data, &is_array, error);
            if (!t) {
                if (!is_array)
                    g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "'%s' is not a Polygraphy-encoded array",
                                (char *)l->data);
                g_prefix_error(error, "sample %u: ", i);
                return FALSE;
            }
            g_hash_table_insert(group, g_strdup(l->data), t);
        }
        if (!g_hash_table_size(group)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "sample %u holds no arrays", i);
            return FALSE;
        }
    }
    return TRUE;
}

HgSamples *
hg_samples_open(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(HgSamples) s = g_new0(HgSamples, 1);
    s->refcount = 1;
    s->path = g_strdup(path);
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
        return open_folder(s, error) ? g_steal_pointer(&s) : NULL;
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!hg_infile_read(path, &data, &len, error)) {
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    s->kind = SRC_ARRAYS;
    s->groups = g_ptr_array_new_with_free_func((GDestroyNotify)g_hash_table_unref);
    gboolean zip = len >= 4 && memcmp(data, "PK", 2) == 0;
    gboolean ok;
    if (zip || g_str_has_suffix(path, ".npz")) {
        ok = open_npz(s, (const guint8 *)data, len, error);
    } else if (g_str_has_suffix(path, ".json") || (len && (data[0] == '[' || data[0] == '{'))) {
        ok = open_polygraphy(s, data, len, error);
    } else {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE,
                    "neither a folder, an .npz nor Polygraphy --save-inputs JSON");
        ok = FALSE;
    }
    if (!ok) {
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    return g_steal_pointer(&s);
}

/* ---------------------------------------------------------------- fitting to a model */

static gboolean
is_int(int dt)
{
    switch (dt) {
    case HG_DTYPE_INT8: case HG_DTYPE_INT16: case HG_DTYPE_INT32: case HG_DTYPE_INT64:
    case HG_DTYPE_UINT8: case HG_DTYPE_UINT16: case HG_DTYPE_UINT32: case HG_DTYPE_UINT64:
        return TRUE;
    default:
        return FALSE;
    }
}

/* t's integers as dtype, or NULL with an error naming the first value that does not fit. */
static HgTensor *
convert_int(const HgTensor *t, int dtype, GError **error)
{
    HgTensor *c = hg_tensor_new(t->name, dtype, t->rank, t->dims);
    gint64 n = hg_tensor_numel(t);
    const guint8 *src = t->data;
    guint8 *dst = n ? hg_tensor_data_mut(c) : NULL;
    for (gint64 i = 0; i < n; i++) {
        gint64 v = 0;
        guint64 uv = 0;
        gboolean big = FALSE; /* a uint64 past G_MAXINT64 */
        switch (t->dtype) {
        case HG_DTYPE_INT8: v = ((const gint8 *)src)[i]; break;
        case HG_DTYPE_INT16: v = ((const gint16 *)src)[i]; break;
        case HG_DTYPE_INT32: v = ((const gint32 *)src)[i]; break;
        case HG_DTYPE_INT64: v = ((const gint64 *)src)[i]; break;
        case HG_DTYPE_UINT8: v = ((const guint8 *)src)[i]; break;
        case HG_DTYPE_UINT16: v = ((const guint16 *)src)[i]; break;
        case HG_DTYPE_UINT32: v = ((const guint32 *)src)[i]; break;
        default:
            uv = ((const guint64 *)src)[i];
            big = uv > (guint64)G_MAXINT64;
            v = (gint64)MIN(uv, (guint64)G_MAXINT64);
            break;
        }
        gboolean fits;
        switch (dtype) {
        case HG_DTYPE_INT8: fits = v >= G_MININT8 && v <= G_MAXINT8; ((gint8 *)dst)[i] = (gint8)v; break;
        case HG_DTYPE_INT16: fits = v >= G_MININT16 && v <= G_MAXINT16; ((gint16 *)dst)[i] = (gint16)v; break;
        case HG_DTYPE_INT32: fits = v >= G_MININT32 && v <= G_MAXINT32; ((gint32 *)dst)[i] = (gint32)v; break;
        case HG_DTYPE_INT64: fits = !big; ((gint64 *)dst)[i] = v; break;
        case HG_DTYPE_UINT8: fits = v >= 0 && v <= G_MAXUINT8; ((guint8 *)dst)[i] = (guint8)v; break;
        case HG_DTYPE_UINT16: fits = v >= 0 && v <= G_MAXUINT16; ((guint16 *)dst)[i] = (guint16)v; break;
        case HG_DTYPE_UINT32: fits = v >= 0 && v <= (gint64)G_MAXUINT32; ((guint32 *)dst)[i] = (guint32)v; break;
        default: fits = v >= 0; ((guint64 *)dst)[i] = big ? uv : (guint64)v; break;
        }
        if (!fits) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "its value %" G_GINT64_FORMAT "%s does not fit %s", v,
                        big ? "+" : "", hg_dtype_name(dtype));
            hg_tensor_free(c);
            return NULL;
        }
    }
    return c;
}

static char *
shape_text(guint rank, const gint64 *dims)
{
    GString *s = g_string_new("[");
    for (guint i = 0; i < rank; i++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "", dims[i]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static char *
declared_text(const HgShape *tt)
{
    GString *s = g_string_new("[");
    for (guint i = 0; tt && i < tt->rank; i++) {
        const HgDim *dm = &tt->dims[i];
        if (i)
            g_string_append_c(s, ',');
        if (dm->has_value)
            g_string_append_printf(s, "%" G_GINT64_FORMAT, dm->value);
        else
            g_string_append(s, dm->param ? dm->param : "?");
    }
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

/* Does a tensor of rank and dims fit declaration d (its known dims)? */
static gboolean
fits_shape(const HgValueDecl *d, guint rank, const gint64 *dims)
{
    const HgType *ty = d->type;
    if (!ty || ty->kind != HG_TYPE_TENSOR || !ty->shape)
        return TRUE;
    if (ty->shape->rank != rank)
        return FALSE;
    for (guint i = 0; i < rank; i++)
        if (ty->shape->dims[i].has_value && ty->shape->dims[i].value != dims[i])
            return FALSE;
    return TRUE;
}

/* t as feed for declaration d: type converted (convert) and checked, shape checked. New tensor. */
static HgTensor *
fit(const HgValueDecl *d, const HgTensor *t, gboolean convert, GError **error)
{
    const HgType *ty = d->type;
    HgDType want = ty && ty->kind == HG_TYPE_TENSOR && ty->has_elem_type ? ty->elem_type : t->dtype;
    HgTensor *c = NULL;
    if (want == t->dtype)
        c = hg_tensor_copy(t);
    else if (convert && hg_dtype_is_float(want) && hg_dtype_is_float(t->dtype))
        c = hg_tensor_convert(t, want, error);
    else if (convert && is_int(want) && is_int(t->dtype))
        c = convert_int(t, want, error);
    else
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "it is %s, the model declares %s",
                    hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?",
                    hg_dtype_name(want) ? hg_dtype_name(want) : "?");
    if (!c)
        return NULL;
    g_free(c->name);
    c->name = g_strdup(d->value->name);
    if (!fits_shape(d, c->rank, c->dims)) {
        g_autofree char *got = shape_text(c->rank, c->dims);
        g_autofree char *decl = declared_text(ty->shape);
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "its shape %s does not fit the model's %s", got, decl);
        hg_tensor_free(c);
        return NULL;
    }
    return c;
}

/* Sample j of t along its first axis: a new tensor of t's other dims. */
static HgTensor *
slice0(const HgTensor *t, gint64 j)
{
    HgTensor *c = hg_tensor_new(t->name, t->dtype, t->rank - 1, t->dims + 1);
    gsize bytes = c->nbytes;
    if (bytes)
        memcpy(hg_tensor_data_mut(c), (const guint8 *)t->data + (gsize)j * bytes, bytes);
    return c;
}

/* The array of group for input name: by its name, else by the name made safe for a file ('/', '\'
 * and ':' as '_'), as NAME.npy files are named. */
static const HgTensor *
lookup(GHashTable *group, const char *name, const char **key)
{
    gpointer k = NULL, v = NULL;
    if (g_hash_table_lookup_extended(group, name, &k, &v)) {
        *key = k;
        return v;
    }
    g_autofree char *safe = g_strdelimit(g_strdup(name), "/\\:", '_');
    if (g_hash_table_lookup_extended(group, safe, &k, &v)) {
        *key = k;
        return v;
    }
    return NULL;
}

/* The samples of one group of arrays: one per index of the sample axis (an .npz), or one. */
static gboolean
group_feeds(const HgSamples *s, GHashTable *group, guint gi, GPtrArray *decls, gboolean convert, GPtrArray *out,
            GError **error)
{
    g_autofree const HgTensor **arrays = g_new0(const HgTensor *, decls->len + 1);
    g_autofree gboolean *axis = g_new0(gboolean, decls->len + 1);
    g_autoptr(GHashTable) used = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree char *where = s->npz ? g_strdup(s->path) : g_strdup_printf("%s, sample %u", s->path, gi);
    gint64 n = -1;
    const char *n_from = NULL;
    for (guint i = 0; i < decls->len; i++) {
        const HgValueDecl *d = decls->pdata[i];
        const char *key = NULL;
        arrays[i] = lookup(group, d->value->name, &key);
        if (!arrays[i]) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: no array for input '%s'", where, d->value->name);
            return FALSE;
        }
        g_hash_table_add(used, (gpointer)key);
        const HgType *ty = d->type;
        const HgTensor *t = arrays[i];
        /* One dim more than the input declares, the rest fitting it: a leading sample axis. */
        axis[i] = s->npz && ty && ty->kind == HG_TYPE_TENSOR && ty->shape && t->rank == ty->shape->rank + 1 &&
                  fits_shape(d, t->rank - 1, t->dims + 1);
        if (axis[i]) {
            if (n >= 0 && t->dims[0] != n) {
                g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: array '%s' holds %" G_GINT64_FORMAT
                            " samples, array '%s' %" G_GINT64_FORMAT, where, key, t->dims[0], n_from, n);
                return FALSE;
            }
            n = t->dims[0];
            n_from = key;
        }
    }
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, group);
    while (g_hash_table_iter_next(&it, &key, NULL))
        if (!g_hash_table_contains(used, key)) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: array '%s' is no input of the model", where,
                        (char *)key);
            return FALSE;
        }
    if (n == 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: the sample axis of array '%s' is empty", where, n_from);
        return FALSE;
    }
    for (gint64 j = 0; j < MAX(n, 1); j++) {
        HgSample *smp = g_new0(HgSample, 1);
        smp->label = !s->npz ? g_strdup_printf("%s[%u]", s->path, gi)
                     : n >= 0 ? g_strdup_printf("%s[%" G_GINT64_FORMAT "]", s->path, j)
                              : g_strdup(s->path);
        smp->feeds = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
        g_ptr_array_add(out, smp);
        for (guint i = 0; i < decls->len; i++) {
            const HgValueDecl *d = decls->pdata[i];
            g_autoptr(HgTensor) part = axis[i] ? slice0(arrays[i], j) : NULL;
            HgTensor *t = fit(d, part ? part : arrays[i], convert, error);
            if (!t) {
                g_prefix_error(error, "%s: input '%s': ", smp->label, d->value->name);
                return FALSE;
            }
            g_ptr_array_add(smp->feeds, t);
        }
    }
    return TRUE;
}

GPtrArray *
hg_samples_feeds(const HgSamples *s, HgModel *m, gboolean convert, GError **error)
{
    g_return_val_if_fail(s != NULL && m != NULL, NULL);
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
    if (s->kind == SRC_FOLDER || s->kind == SRC_FOLDERS) {
        guint n = s->kind == SRC_FOLDER ? 1 : s->folders->len;
        for (guint i = 0; i < n; i++) {
            const char *dir = s->kind == SRC_FOLDER ? s->path : s->folders->pdata[i];
            GPtrArray *feeds = convert ? hg_load_feeds_converted(m, dir, error) : hg_load_feeds(m, dir, error);
            if (!feeds)
                return NULL;
            HgSample *smp = g_new0(HgSample, 1);
            smp->label = g_strdup(dir);
            smp->feeds = feeds;
            g_ptr_array_add(out, smp);
        }
        return g_steal_pointer(&out);
    }
    g_autoptr(GPtrArray) decls = hg_run_feeds(m);
    for (guint g = 0; g < s->groups->len; g++)
        if (!group_feeds(s, s->groups->pdata[g], g, decls, convert, out, error))
            return NULL;
    return g_steal_pointer(&out);
}
