/* halfguard inspect: a model described for a person meeting it (include/halfguard/inspect.h). */
#include "halfguard/inspect.h"
#include "halfguard/check.h"
#include "halfguard/feeds.h"
#include "halfguard/halfguard.h"

#include <math.h>
#include <string.h>

#include "json_util.h"

/* Everything inspect says, gathered once for the text, JSON and ini writers. */
typedef struct {
    HgModel *m;
    const char *path;
    GPtrArray *feeds;      /* HgValueDecl*: the inputs to feed */
    HgCheckResult *check;  /* with no range given: what the model itself gives */
    GHashTable *op_counts; /* op name -> count (GUINT_TO_POINTER) */
    GPtrArray *ops;        /* op names by count, then name */
    guint64 init_bytes, ext_tensors;
    GHashTable *dtype_bytes; /* dtype name -> guint64* */
    GPtrArray *ext_files;    /* distinct external data locations */
    GPtrArray *escaped;      /* strings made safe to print (hg_escape_text), freed with the facts */
} Facts;

/* s as one printable line (a name from the model cannot forge lines of text or of the ini). */
static const char *
esc(const Facts *f, const char *s)
{
    char *e = hg_escape_text(s);
    g_ptr_array_add(f->escaped, e);
    return e;
}

static void
facts_clear(Facts *f)
{
    g_clear_pointer(&f->feeds, g_ptr_array_unref);
    g_clear_pointer(&f->check, hg_check_result_free);
    g_clear_pointer(&f->op_counts, g_hash_table_unref);
    g_clear_pointer(&f->ops, g_ptr_array_unref);
    g_clear_pointer(&f->dtype_bytes, g_hash_table_unref);
    g_clear_pointer(&f->ext_files, g_ptr_array_unref);
    g_clear_pointer(&f->escaped, g_ptr_array_unref);
}

static gint
by_count(gconstpointer a, gconstpointer b, gpointer counts)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    guint cx = GPOINTER_TO_UINT(g_hash_table_lookup(counts, x));
    guint cy = GPOINTER_TO_UINT(g_hash_table_lookup(counts, y));
    return cx != cy ? (cx > cy ? -1 : 1) : strcmp(x, y);
}

static gboolean
facts_gather(Facts *f, HgModel *m, const char *path, GError **error)
{
    *f = (Facts){m, path};
    f->escaped = g_ptr_array_new_with_free_func(g_free);
    HgCheckOptions none = {0};
    f->check = hg_check(m, &none, error);
    if (!f->check)
        return FALSE;
    f->feeds = hg_run_feeds(m);
    f->op_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < m->graph->nodes->len; i++) {
        const HgNode *n = m->graph->nodes->pdata[i];
        g_autofree char *name = hg_node_default_domain(n) ? g_strdup(n->op_type)
                                                           : g_strdup_printf("%s.%s", n->domain, n->op_type);
        guint c = GPOINTER_TO_UINT(g_hash_table_lookup(f->op_counts, name));
        g_hash_table_insert(f->op_counts, g_strdup(name), GUINT_TO_POINTER(c + 1));
    }
    f->ops = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, f->op_counts);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(f->ops, key);
    g_ptr_array_sort_with_data(f->ops, by_count, f->op_counts);
    f->dtype_bytes = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    f->ext_files = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < m->graph->initializers->len; i++) {
        const HgTensor *t = m->graph->initializers->pdata[i];
        guint64 bytes = t->storage == HG_STORAGE_EXTERNAL && t->ext_length > 0 ? (guint64)t->ext_length : t->nbytes;
        f->init_bytes += bytes;
        const char *dt = hg_dtype_name(t->dtype);
        guint64 *b = g_hash_table_lookup(f->dtype_bytes, dt);
        if (!b)
            g_hash_table_insert(f->dtype_bytes, (gpointer)dt, b = g_new0(guint64, 1));
        *b += bytes;
        if (t->storage == HG_STORAGE_EXTERNAL) {
            f->ext_tensors++;
            gboolean seen = FALSE;
            for (guint k = 0; k < f->ext_files->len && !seen; k++)
                seen = g_strcmp0(f->ext_files->pdata[k], t->ext_location) == 0;
            if (!seen)
                g_ptr_array_add(f->ext_files, g_strdup(t->ext_location ? t->ext_location : ""));
        }
    }
    return TRUE;
}

/* "[batch, 3, 224, 224]", "?" for an unknown dim, "(rank unknown)" without a shape. */
static char *
shape_text(const HgType *t)
{
    if (!t || !t->shape)
        return g_strdup("(rank unknown)");
    GString *s = g_string_new("[");
    for (guint d = 0; d < t->shape->rank; d++) {
        const HgDim *dim = &t->shape->dims[d];
        if (d)
            g_string_append(s, ", ");
        if (dim->has_value)
            g_string_append_printf(s, "%" G_GINT64_FORMAT, dim->value);
        else
            g_string_append(s, dim->param ? dim->param : "?");
    }
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static const char *
type_name(const HgType *t)
{
    return t && t->kind == HG_TYPE_TENSOR && t->has_elem_type ? hg_dtype_name(t->elem_type) : "?";
}

static const HgInputInfo *
input_info(const Facts *f, const char *name)
{
    for (guint i = 0; i < f->check->inputs->len; i++) {
        const HgInputInfo *in = f->check->inputs->pdata[i];
        if (strcmp(in->name, name) == 0)
            return in;
    }
    return NULL;
}

/* What the analysis knows of an input's range, and what to do about it. */
static char *
range_text(const HgInputInfo *in)
{
    if (!in)
        return g_strdup("");
    switch (in->source) {
    case HG_INPUT_RANGE_DERIVED:
        return g_strdup_printf("derived [%g, %g]: %s", in->lo, in->hi, in->why ? in->why : "");
    case HG_INPUT_RANGE_UNNEEDED:
        return g_strdup_printf("needs no range: %s", in->why ? in->why : "");
    case HG_INPUT_RANGE_GIVEN:
        return g_strdup_printf("[%g, %g]", in->lo, in->hi);
    case HG_INPUT_RANGE_NONE:
        break;
    }
    return in->reaches_float ? g_strdup_printf("no range: give -r '%s=LO:HI' or calibration data", in->name)
                             : g_strdup("no range needed (its values reach no float arithmetic)");
}

static char *
opsets_text(const Facts *f, const HgModel *m)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < m->opsets->len; i++) {
        const HgOpset *o = m->opsets->pdata[i];
        g_string_append_printf(s, "%s%s %" G_GINT64_FORMAT, i ? ", " : "",
                               o->domain && *o->domain ? esc(f, o->domain) : "ai.onnx", o->version);
    }
    return g_string_free(s, FALSE);
}

static void
text_values(GString *s, const Facts *f, GPtrArray *decls, gboolean inputs)
{
    for (guint i = 0; i < decls->len; i++) {
        const HgValueDecl *d = decls->pdata[i];
        g_autofree char *shape = shape_text(d->type);
        g_autofree char *range = inputs ? range_text(input_info(f, d->name)) : g_strdup("");
        g_string_append_printf(s, "    %-24s %-8s %-28s %s\n", esc(f, d->name), type_name(d->type), esc(f, shape),
                               esc(f, range));
    }
}

static char *
inspect_text(const Facts *f)
{
    const HgModel *m = f->m;
    GString *s = g_string_new(NULL);
    g_autofree char *opsets = opsets_text(f, m);
    g_string_append_printf(s, "%s\n  IR version %" G_GINT64_FORMAT "; opsets: %s; producer: %s%s%s\n", esc(f, f->path),
                           m->ir_version, opsets, m->producer_name ? esc(f, m->producer_name) : "(none)",
                           m->producer_version ? " " : "", m->producer_version ? esc(f, m->producer_version) : "");
    g_string_append_printf(s, "  inputs (%u to feed):\n", f->feeds->len);
    text_values(s, f, f->feeds, TRUE);
    g_string_append_printf(s, "  outputs (%u):\n", m->graph->outputs->len);
    text_values(s, f, m->graph->outputs, FALSE);
    g_string_append_printf(s, "  nodes: %u:", m->graph->nodes->len);
    for (guint i = 0; i < f->ops->len; i++)
        g_string_append_printf(s, "%s %s %u", i ? "," : "", esc(f, f->ops->pdata[i]),
                               GPOINTER_TO_UINT(g_hash_table_lookup(f->op_counts, f->ops->pdata[i])));
    g_autofree char *total = g_format_size(f->init_bytes);
    g_string_append_printf(s, "\n  initializers: %u, %s", m->graph->initializers->len, total);
    g_autoptr(GList) dts = g_list_sort(g_hash_table_get_keys(f->dtype_bytes), (GCompareFunc)strcmp);
    for (GList *l = dts; l; l = l->next) {
        g_autofree char *b = g_format_size(*(guint64 *)g_hash_table_lookup(f->dtype_bytes, l->data));
        g_string_append_printf(s, "%s %s %s", l == dts ? ":" : ",", (const char *)l->data, b);
    }
    if (f->ext_tensors) {
        g_string_append_printf(s, "\n  external data: %" G_GUINT64_FORMAT " tensors in", f->ext_tensors);
        for (guint i = 0; i < f->ext_files->len; i++)
            g_string_append_printf(s, "%s %s", i ? "," : "", esc(f, f->ext_files->pdata[i]));
    } else {
        g_string_append(s, "\n  external data: none");
    }
    g_string_append(s, "\n  ops halfguard does not know:");
    for (guint i = 0; i < f->check->unknown_ops->len; i++) {
        const HgUnknownOp *u = f->check->unknown_ops->pdata[i];
        g_string_append_printf(s, "%s %s (%u node%s: convert keeps them FP32)", i ? "," : "", esc(f, u->op), u->nodes,
                               u->nodes == 1 ? "" : "s");
    }
    if (!f->check->unknown_ops->len)
        g_string_append(s, " none");
    g_string_append_c(s, '\n');
    return g_string_free(s, FALSE);
}

static void
json_values(JsonBuilder *b, const Facts *f, GPtrArray *decls, gboolean inputs)
{
    json_builder_begin_array(b);
    for (guint i = 0; i < decls->len; i++) {
        const HgValueDecl *d = decls->pdata[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "name", d->name);
        hg_json_add_str(b, "dtype", type_name(d->type));
        json_builder_set_member_name(b, "shape");
        if (d->type && d->type->shape) {
            json_builder_begin_array(b);
            for (guint k = 0; k < d->type->shape->rank; k++) {
                const HgDim *dim = &d->type->shape->dims[k];
                if (dim->has_value)
                    json_builder_add_int_value(b, dim->value);
                else if (dim->param)
                    json_builder_add_string_value(b, dim->param);
                else
                    json_builder_add_null_value(b);
            }
            json_builder_end_array(b);
        } else {
            json_builder_add_null_value(b);
        }
        const HgInputInfo *in = inputs ? input_info(f, d->name) : NULL;
        if (in) {
            json_builder_set_member_name(b, "range");
            json_builder_begin_object(b);
            hg_json_add_str(b, "source", hg_input_range_source_name(in->source));
            hg_json_add_num(b, "lo", in->lo);
            hg_json_add_num(b, "hi", in->hi);
            hg_json_add_str(b, "why", in->why);
            hg_json_add_bool(b, "needed", in->source == HG_INPUT_RANGE_NONE && in->reaches_float);
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

static char *
inspect_json(const Facts *f)
{
    const HgModel *m = f->m;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    hg_json_add_str(b, "file", f->path);
    hg_json_add_int(b, "ir_version", m->ir_version);
    json_builder_set_member_name(b, "opsets");
    json_builder_begin_array(b);
    for (guint i = 0; i < m->opsets->len; i++) {
        const HgOpset *o = m->opsets->pdata[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "domain", o->domain ? o->domain : "");
        hg_json_add_int(b, "version", o->version);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    hg_json_add_str(b, "producer_name", m->producer_name);
    hg_json_add_str(b, "producer_version", m->producer_version);
    json_builder_set_member_name(b, "inputs");
    json_values(b, f, f->feeds, TRUE);
    json_builder_set_member_name(b, "outputs");
    json_values(b, f, m->graph->outputs, FALSE);
    hg_json_add_int(b, "nodes", m->graph->nodes->len);
    json_builder_set_member_name(b, "ops");
    json_builder_begin_array(b);
    for (guint i = 0; i < f->ops->len; i++) {
        json_builder_begin_object(b);
        hg_json_add_str(b, "op", f->ops->pdata[i]);
        hg_json_add_int(b, "count", GPOINTER_TO_UINT(g_hash_table_lookup(f->op_counts, f->ops->pdata[i])));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "initializers");
    json_builder_begin_object(b);
    hg_json_add_int(b, "count", m->graph->initializers->len);
    hg_json_add_int(b, "bytes", (gint64)f->init_bytes);
    json_builder_set_member_name(b, "bytes_by_dtype");
    json_builder_begin_object(b);
    g_autoptr(GList) dts = g_list_sort(g_hash_table_get_keys(f->dtype_bytes), (GCompareFunc)strcmp);
    for (GList *l = dts; l; l = l->next)
        hg_json_add_int(b, l->data, (gint64)*(guint64 *)g_hash_table_lookup(f->dtype_bytes, l->data));
    json_builder_end_object(b);
    hg_json_add_int(b, "external_tensors", (gint64)f->ext_tensors);
    json_builder_set_member_name(b, "external_files");
    json_builder_begin_array(b);
    for (guint i = 0; i < f->ext_files->len; i++)
        json_builder_add_string_value(b, f->ext_files->pdata[i]);
    json_builder_end_array(b);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "unknown_ops");
    json_builder_begin_array(b);
    for (guint i = 0; i < f->check->unknown_ops->len; i++) {
        const HgUnknownOp *u = f->check->unknown_ops->pdata[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "op", u->op);
        hg_json_add_int(b, "nodes", u->nodes);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return hg_json_to_text(b);
}

char *
hg_inspect(HgModel *m, const char *path, gboolean json, GError **error)
{
    g_return_val_if_fail(m != NULL && path != NULL, NULL);
    Facts f;
    if (!facts_gather(&f, m, path, error)) {
        facts_clear(&f);
        return NULL;
    }
    char *out = json ? inspect_json(&f) : inspect_text(&f);
    facts_clear(&f);
    return out;
}

char *
hg_inspect_ini(HgModel *m, const char *path, GError **error)
{
    g_return_val_if_fail(m != NULL && path != NULL, NULL);
    Facts f;
    if (!facts_gather(&f, m, path, error)) {
        facts_clear(&f);
        return NULL;
    }
    g_autofree char *base = g_path_get_basename(path);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "# .halfguard.ini for %s\n"
                              "# (halfguard inspect --ini). Save it beside the model and give each input below\n"
                              "# its range at deployment (uncomment the line): check, convert, calibrate and\n"
                              "# verify all read it. An input left without one is an unranged-input finding.\n"
                              "[ranges %s]\n", esc(&f, path), esc(&f, base));
    for (guint i = 0; i < f.feeds->len; i++) {
        const HgValueDecl *d = f.feeds->pdata[i];
        const HgInputInfo *in = input_info(&f, d->name);
        g_autofree char *shape = shape_text(d->type);
        g_autofree char *range = range_text(in);
        g_string_append_printf(s, "# %s: %s %s: %s\n", esc(&f, d->name), type_name(d->type), esc(&f, shape),
                               esc(&f, range));
        if (in && in->source == HG_INPUT_RANGE_NONE && in->reaches_float)
            g_string_append_printf(s, "# %s = LO:HI\n", esc(&f, d->name));
    }
    facts_clear(&f);
    return g_string_free(s, FALSE);
}
