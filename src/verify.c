/* `halfguard verify`: run an original model and its converted form on the same data and compare.
 *
 * Per graph output (matched by name) it measures the relative L2 error, the largest absolute error
 * and the non-finite values of each model; over the whole run it names the first value that turned
 * non-finite in the converted model. Both models run in the interpreter, which stores every tensor in
 * its declared element type, so an FP16 overflow shows up as inf in the tensor where it happens.
 */
#include "halfguard/halfguard.h"
#include "halfguard/run.h"
#include "halfguard/check.h"

#include <json-glib/json-glib.h>

#include "json_util.h"
#include <math.h>
#include <string.h>

#include "ir_private.h"
#include "ops/array.h"

/* Tensor data is little-endian; so is every host we build for, and the codecs below rely on it. */
G_STATIC_ASSERT(G_BYTE_ORDER == G_LITTLE_ENDIAN);

/* ---------------------------------------------------------------- non-finite values */

/* Elements of a float tensor's raw data whose exponent bits are all ones (inf or NaN); 0 for other
 * element types. Bit tests, not conversions: the observer sees every tensor of both models. */
static gint64
count_nonfinite(const HgTensor *t, gint64 *numel)
{
    gint64 n = hg_tensor_numel(t);
    *numel = MAX(n, 0);
    gsize size = t->dtype == HG_DTYPE_DOUBLE ? 8 : t->dtype == HG_DTYPE_FLOAT ? 4 : 2;
    if (!hg_dtype_is_float(t->dtype) || n <= 0 || !t->data || t->nbytes < (gsize)n * size)
        return 0;
    const guint8 *p = t->data;
    gint64 bad = 0;
    switch (t->dtype) {
    case HG_DTYPE_FLOAT:
        for (gint64 i = 0; i < n; i++) {
            guint32 u;
            memcpy(&u, p + 4 * i, 4);
            bad += (u & 0x7f800000u) == 0x7f800000u;
        }
        break;
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16: {
        guint16 mask = t->dtype == HG_DTYPE_FLOAT16 ? 0x7c00 : 0x7f80;
        for (gint64 i = 0; i < n; i++) {
            guint16 u;
            memcpy(&u, p + 2 * i, 2);
            bad += (u & mask) == mask;
        }
        break;
    }
    default: /* double */
        for (gint64 i = 0; i < n; i++) {
            guint64 u;
            memcpy(&u, p + 8 * i, 8);
            bad += (u & G_GUINT64_CONSTANT(0x7ff0000000000000)) == G_GUINT64_CONSTANT(0x7ff0000000000000);
        }
        break;
    }
    return bad;
}

/* ORIG's run: which float values it computed, and whether each was finite everywhere. */
static gboolean
orig_observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    (void)error;
    if (!hg_dtype_is_float(t->dtype))
        return TRUE;
    gint64 numel;
    gboolean finite = count_nonfinite(t, &numel) == 0;
    g_hash_table_insert(data, v->name, GINT_TO_POINTER(finite ? 1 : 2));
    return TRUE;
}

typedef struct {
    GHashTable *orig;    /* value name -> 1 finite, 2 not (ORIG, this folder) */
    guint seq;           /* observer calls so far: the position in CONVERTED's execution order */
    gboolean found;
    guint found_seq;
    const HgValue *value;
    gint64 nonfinite, count;
} ConvWatch;

static gboolean
conv_observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    (void)error;
    ConvWatch *w = data;
    guint seq = w->seq++;
    if (w->found || !hg_dtype_is_float(t->dtype))
        return TRUE;
    gint64 numel, bad = count_nonfinite(t, &numel);
    if (!bad || GPOINTER_TO_INT(g_hash_table_lookup(w->orig, v->name)) == 2)
        return TRUE;
    w->found = TRUE;
    w->found_seq = seq;
    w->value = v;
    w->nonfinite = bad;
    w->count = numel;
    return TRUE;
}

/* ---------------------------------------------------------------- the comparison */

typedef struct {
    double sum_d2, sum_o2; /* sums of squares of (conv - orig) and of orig over compared elements */
} Sums;

static gboolean
compare_output(HgVerifyOutput *o, Sums *sums, const HgTensor *a, const HgTensor *b, const HgVerifyReport *r,
               GError **error)
{
    gboolean same = a->rank == b->rank;
    for (guint i = 0; same && i < a->rank; i++)
        same = a->dims[i] == b->dims[i];
    if (!same) {
        g_autofree char *sa = hg_dims_string(a->rank, a->dims);
        g_autofree char *sb = hg_dims_string(b->rank, b->dims);
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "output '%s' has shape %s in the original model but %s in the converted one",
                    o->name, sa, sb);
        return FALSE;
    }
    if (a->dtype == HG_DTYPE_STRING || b->dtype == HG_DTYPE_STRING) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "output '%s' holds strings: not compared",
                    o->name);
        return FALSE;
    }
    g_autoptr(HgArray) xa = hg_array_from_tensor(a, error);
    g_autoptr(HgArray) xb = xa ? hg_array_from_tensor(b, error) : NULL;
    if (!xb) {
        g_prefix_error(error, "output '%s': ", o->name);
        return FALSE;
    }
    gboolean own_a, own_b;
    double *x = hg_array_load_f64(xa, &own_a);
    double *y = hg_array_load_f64(xb, &own_b);
    gint64 n = xa->numel;
    for (gint64 i = 0; i < n; i++) {
        gboolean fx = isfinite(x[i]), fy = isfinite(y[i]);
        if (fx && fy) {
            double d = y[i] - x[i];
            sums->sum_d2 += d * d;
            sums->sum_o2 += x[i] * x[i];
            o->max_abs = MAX(o->max_abs, fabs(d));
            o->compared++;
            if (r->elementwise) {
                double tol = r->atol + r->rtol * fabs(x[i]);
                double ratio = tol > 0 ? fabs(d) / tol : d != 0 ? INFINITY : 0;
                o->elements_over += ratio > 1;
                o->worst_ratio = MAX(o->worst_ratio, ratio);
            }
            continue;
        }
        o->nonfinite_orig += !fx;
        o->nonfinite_conv += !fy;
        o->new_nonfinite += fx && !fy;
    }
    o->count += n;
    if (own_a)
        g_free(x);
    if (own_b)
        g_free(y);
    return TRUE;
}

void
hg_verify_report_free(HgVerifyReport *r)
{
    if (!r)
        return;
    for (guint i = 0; i < r->n_outputs; i++)
        g_free(r->outputs[i].name);
    g_free(r->outputs);
    g_free(r->first_nonfinite.value);
    g_free(r->first_nonfinite.node);
    g_free(r->first_nonfinite.op);
    g_free(r->first_nonfinite.data_dir);
    g_free(r);
}

/* Index of each of orig's outputs among conv's; an error listing every name only one model has. */
static guint *
match_outputs(HgModel *orig, HgModel *conv, GError **error)
{
    GPtrArray *oa = orig->graph->outputs, *ob = conv->graph->outputs;
    g_autoptr(GHashTable) in_conv = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) in_orig = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint j = 0; j < ob->len; j++)
        g_hash_table_insert(in_conv, ((HgValueDecl *)ob->pdata[j])->value->name, GUINT_TO_POINTER(j + 1));
    for (guint i = 0; i < oa->len; i++)
        g_hash_table_add(in_orig, ((HgValueDecl *)oa->pdata[i])->value->name);
    guint *map = g_new0(guint, oa->len + 1);
    g_autoptr(GString) msg = g_string_new(NULL);
    for (guint i = 0; i < oa->len; i++) {
        const char *name = ((HgValueDecl *)oa->pdata[i])->value->name;
        guint j = GPOINTER_TO_UINT(g_hash_table_lookup(in_conv, name));
        if (!j)
            g_string_append_printf(msg, "%soutput '%s' of the original model is missing from the "
                                   "converted one", msg->len ? "; " : "", name);
        map[i] = j - 1;
    }
    for (guint j = 0; j < ob->len; j++) {
        const char *name = ((HgValueDecl *)ob->pdata[j])->value->name;
        if (!g_hash_table_contains(in_orig, name))
            g_string_append_printf(msg, "%soutput '%s' of the converted model is not an output of the "
                                   "original", msg->len ? "; " : "", name);
    }
    if (msg->len) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s", msg->str);
        g_free(map);
        return NULL;
    }
    return map;
}

/* conv's feeds from orig's: matched by input name, converted to the element type conv declares. */
static GPtrArray *
convert_feeds(GPtrArray *orig_decls, GPtrArray *orig_feeds, GPtrArray *conv_decls, GError **error)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint i = 0; i < conv_decls->len; i++) {
        const HgValueDecl *d = conv_decls->pdata[i];
        const HgTensor *t = NULL;
        for (guint k = 0; !t && k < orig_decls->len; k++)
            if (strcmp(((HgValueDecl *)orig_decls->pdata[k])->value->name, d->value->name) == 0)
                t = orig_feeds->pdata[k];
        if (!t) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                        "input '%s' of the converted model is not an input of the original",
                        d->value->name);
            g_ptr_array_unref(out);
            return NULL;
        }
        const HgType *ty = d->type;
        HgDType want = ty && ty->kind == HG_TYPE_TENSOR && ty->has_elem_type ? ty->elem_type : t->dtype;
        HgTensor *c = hg_tensor_convert(t, want, error);
        if (!c) {
            g_prefix_error(error, "input '%s' of the converted model: ", d->value->name);
            g_ptr_array_unref(out);
            return NULL;
        }
        g_ptr_array_add(out, c);
    }
    return out;
}

/* One sample: feeds for orig (hg_run_feeds order); dir labels it in the report and errors. */
static gboolean
verify_folder(HgModel *orig, HgModel *conv, const char *dir, GPtrArray *feeds, const guint *map, Sums *sums,
              HgVerifyReport *r, guint *best_seq, int threads, const char *const *names, GError **error)
{
    g_autoptr(GPtrArray) orig_decls = hg_run_feeds(orig);
    g_autoptr(GPtrArray) conv_decls = hg_run_feeds(conv);
    g_autoptr(GPtrArray) conv_feeds = convert_feeds(orig_decls, feeds, conv_decls, error);
    if (!conv_feeds)
        return FALSE;
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    HgRunOptions ro = {threads, orig_observe, seen, names};
    g_autoptr(GPtrArray) oa = hg_run(orig, feeds, &ro, error);
    if (!oa) {
        g_prefix_error(error, "the original model on %s: ", dir);
        return FALSE;
    }
    ConvWatch w = {seen, 0, FALSE, 0, NULL, 0, 0};
    HgRunOptions rc = {threads, conv_observe, &w, names};
    g_autoptr(GPtrArray) ob = hg_run(conv, conv_feeds, &rc, error);
    if (!ob) {
        g_prefix_error(error, "the converted model on %s: ", dir);
        return FALSE;
    }
    for (guint i = 0; i < r->n_outputs; i++) {
        if (!compare_output(&r->outputs[i], &sums[i], oa->pdata[i], ob->pdata[map[i]], r, error)) {
            g_prefix_error(error, "%s: ", dir);
            return FALSE;
        }
    }
    if (w.found && (!r->first_nonfinite.value || w.found_seq < *best_seq)) {
        *best_seq = w.found_seq;
        g_free(r->first_nonfinite.value);
        g_free(r->first_nonfinite.node);
        g_free(r->first_nonfinite.op);
        g_free(r->first_nonfinite.data_dir);
        const HgNode *p = w.value->producer;
        r->first_nonfinite.value = g_strdup(w.value->name);
        r->first_nonfinite.node = p ? g_strdup(p->name) : NULL;
        r->first_nonfinite.op = p ? g_strdup(p->op_type) : NULL;
        r->first_nonfinite.data_dir = g_strdup(dir);
        r->first_nonfinite.nonfinite = w.nonfinite;
        r->first_nonfinite.count = w.count;
    }
    return TRUE;
}

gboolean
hg_verify_input_sensitivity(HgModel *m, const HgCheckOptions *ranges, guint64 seed, int threads, double *rel,
                            char **output, GError **error)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL && rel != NULL, FALSE);
    *rel = 0;
    if (output)
        *output = NULL;
    g_autoptr(GPtrArray) feeds = hg_synth_feeds(m, ranges, seed, error);
    if (!feeds)
        return FALSE;
    g_autoptr(GPtrArray) rounded = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    gboolean any = FALSE;
    for (guint i = 0; i < feeds->len; i++) {
        HgTensor *t = hg_tensor_copy(feeds->pdata[i]);
        if (t->dtype == HG_DTYPE_FLOAT) {
            float *d = hg_tensor_data_mut(t);
            for (gint64 k = 0, n = hg_tensor_numel(t); k < n; k++) {
                float r = hg_round_half(d[k]);
                any |= r != d[k];
                d[k] = r;
            }
        }
        g_ptr_array_add(rounded, t);
    }
    if (!any)
        return TRUE; /* nothing to round: no float input, or inputs FP16 holds exactly */
    HgRunOptions opts = {threads, NULL, NULL, NULL, HG_PROBE_MAX_MEMORY};
    g_autoptr(GPtrArray) a = hg_run(m, feeds, &opts, error);
    g_autoptr(GPtrArray) b = a ? hg_run(m, rounded, &opts, error) : NULL;
    if (!b)
        return FALSE;
    const HgVerifyReport r = {0}; /* no elementwise tolerances */
    for (guint i = 0; i < a->len && i < b->len && i < m->graph->outputs->len; i++) {
        const HgTensor *x = a->pdata[i];
        if (x->dtype != HG_DTYPE_FLOAT && x->dtype != HG_DTYPE_FLOAT16 && x->dtype != HG_DTYPE_DOUBLE &&
            x->dtype != HG_DTYPE_BFLOAT16)
            continue;
        const char *name = ((HgValueDecl *)m->graph->outputs->pdata[i])->value->name;
        HgVerifyOutput o = {.name = (char *)name};
        Sums sums = {0};
        if (!compare_output(&o, &sums, x, b->pdata[i], &r, error))
            return FALSE;
        double num = sqrt(sums.sum_d2), den = sqrt(sums.sum_o2);
        double d = den > 0 ? num / den : num > 0 ? INFINITY : 0;
        if (d > *rel) {
            *rel = d;
            if (output) {
                g_free(*output);
                *output = g_strdup(name);
            }
        }
    }
    return TRUE;
}

HgVerifyReport *
hg_verify(HgModel *orig, HgModel *conv, const char *const *data_dirs, const HgVerifyOptions *opts,
          GError **error)
{
    g_return_val_if_fail(orig != NULL && conv != NULL && data_dirs != NULL && data_dirs[0] != NULL,
                         NULL);
    g_autoptr(GPtrArray) samples = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
    for (guint k = 0; data_dirs[k]; k++) {
        HgSample *smp = g_new0(HgSample, 1);
        smp->label = g_strdup(data_dirs[k]);
        g_ptr_array_add(samples, smp);
    }
    return hg_verify_samples(orig, conv, samples, opts, error);
}

HgVerifyReport *
hg_verify_samples(HgModel *orig, HgModel *conv, const GPtrArray *samples, const HgVerifyOptions *opts,
                  GError **error)
{
    g_return_val_if_fail(orig != NULL && conv != NULL && samples != NULL && samples->len > 0, NULL);
    g_return_val_if_fail(!opts || (opts->l2_tol >= 0 && opts->atol >= 0 && opts->rtol >= 0), NULL);
    if (!orig->graph || !conv->graph) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "the %s model has no graph",
                    orig->graph ? "converted" : "original");
        return NULL;
    }
    const char *const *names = opts ? opts->outputs : NULL;
    guint n_names = names ? g_strv_length((char **)names) : 0;
    g_autofree guint *map = NULL;
    if (names) { /* the named values, the same in both models */
        map = g_new0(guint, n_names + 1);
        for (guint i = 0; i < n_names; i++) {
            map[i] = i;
            for (int k = 0; k < 2; k++)
                if (!hg_graph_lookup((k ? conv : orig)->graph, names[i])) {
                    g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "the %s model has no value '%s'",
                                k ? "converted" : "original", names[i]);
                    return NULL;
                }
        }
    } else if (!(map = match_outputs(orig, conv, error))) {
        return NULL;
    }
    g_autoptr(HgVerifyReport) r = g_new0(HgVerifyReport, 1);
    r->l2_tol = opts ? opts->l2_tol : HG_VERIFY_DEFAULT_L2_TOL;
    r->elementwise = opts && opts->elementwise;
    r->atol = r->elementwise ? opts->atol : 0;
    r->rtol = r->elementwise ? opts->rtol : 0;
    r->n_outputs = names ? n_names : orig->graph->outputs->len;
    r->outputs = g_new0(HgVerifyOutput, r->n_outputs + 1);
    for (guint i = 0; i < r->n_outputs; i++) {
        HgValue *v = names ? hg_graph_lookup(orig->graph, names[i])
                           : ((HgValueDecl *)orig->graph->outputs->pdata[i])->value;
        HgValue *c = names ? hg_graph_lookup(conv->graph, names[i])
                           : ((HgValueDecl *)conv->graph->outputs->pdata[map[i]])->value;
        r->outputs[i].name = g_strdup(v->name);
        r->outputs[i].dtype_orig = v->type && v->type->has_elem_type ? v->type->elem_type : 0;
        r->outputs[i].dtype_conv = c->type && c->type->has_elem_type ? c->type->elem_type : 0;
    }
    g_autofree Sums *sums = g_new0(Sums, r->n_outputs + 1);
    guint best_seq = 0;
    for (guint k = 0; k < samples->len; k++) {
        const HgSample *smp = samples->pdata[k];
        if (opts && opts->progress)
            opts->progress(k, samples->len, smp->label, opts->progress_data);
        g_autoptr(GPtrArray) loaded = smp->feeds ? NULL : hg_load_feeds(orig, smp->label, error);
        if ((!smp->feeds && !loaded) ||
            !verify_folder(orig, conv, smp->label, smp->feeds ? smp->feeds : loaded, map, sums, r, &best_seq,
                           opts ? opts->threads : 0, names, error))
            return NULL;
        r->samples++;
    }
    r->pass = TRUE;
    for (guint i = 0; i < r->n_outputs; i++) {
        HgVerifyOutput *o = &r->outputs[i];
        double num = sqrt(sums[i].sum_d2), den = sqrt(sums[i].sum_o2);
        /* 0/0: the outputs agree exactly (both all zero); x/0: any error relative to zero is
         * unbounded. */
        o->rel_l2 = den > 0 ? num / den : num > 0 ? INFINITY : 0;
        o->pass = o->new_nonfinite == 0 && o->rel_l2 <= r->l2_tol && o->elements_over == 0;
        r->pass &= o->pass;
    }
    return g_steal_pointer(&r);
}

/* ---------------------------------------------------------------- reports */

char *
hg_verify_format_text(const HgVerifyReport *r)
{
    g_return_val_if_fail(r != NULL, NULL);
    GString *s = g_string_new(NULL);
    guint failed = 0;
    for (guint i = 0; i < r->n_outputs; i++) {
        const HgVerifyOutput *o = &r->outputs[i];
        g_autofree char *name = hg_escape_text(o->name); /* one output, one line */
        g_string_append_printf(s, "%s: rel L2 %.1e, max abs %.1e, non-finite %" G_GINT64_FORMAT
                               " (of %" G_GINT64_FORMAT ")", name, o->rel_l2, o->max_abs,
                               o->nonfinite_conv, o->count);
        if (o->nonfinite_orig)
            g_string_append_printf(s, ", original non-finite %" G_GINT64_FORMAT, o->nonfinite_orig);
        if (r->elementwise)
            g_string_append_printf(s, ", %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " elements over atol + "
                                   "rtol*|orig| (worst at %.2gx)", o->elements_over, o->compared, o->worst_ratio);
        if (!o->pass) {
            failed++;
            if (o->new_nonfinite)
                g_string_append_printf(s, " [FAIL: %" G_GINT64_FORMAT " non-finite where the original "
                                       "is finite]", o->new_nonfinite);
            else if (o->rel_l2 > r->l2_tol && o->elements_over)
                g_string_append_printf(s, " [FAIL: over l2-tol %.1e and atol %.1e + rtol %.1e]", r->l2_tol,
                                       r->atol, r->rtol);
            else if (o->rel_l2 > r->l2_tol)
                g_string_append_printf(s, " [FAIL: over l2-tol %.1e]", r->l2_tol);
            else
                g_string_append_printf(s, " [FAIL: elements over atol %.1e + rtol %.1e]", r->atol, r->rtol);
        }
        g_string_append_c(s, '\n');
    }
    const HgVerifyNonFinite *f = &r->first_nonfinite;
    g_autofree char *value = f->value ? hg_escape_text(f->value) : NULL;
    g_autofree char *node = hg_escape_text(f->node ? f->node : "");
    g_autofree char *op = f->op ? hg_escape_text(f->op) : NULL;
    g_autofree char *dir = hg_escape_text(f->data_dir);
    if (!f->value)
        g_string_append(s, "first non-finite: none\n");
    else if (!f->op)
        g_string_append_printf(s, "first non-finite: '%s' (a graph input), %" G_GINT64_FORMAT " of %"
                               G_GINT64_FORMAT " values, in %s\n", value, f->nonfinite, f->count,
                               dir);
    else
        g_string_append_printf(s, "first non-finite: '%s' from node '%s' (%s), %" G_GINT64_FORMAT " of %"
                               G_GINT64_FORMAT " values, in %s\n", value, node,
                               op, f->nonfinite, f->count, dir);
    g_autofree char *tols = r->elementwise ? g_strdup_printf("l2-tol %.1e, atol %.1e, rtol %.1e", r->l2_tol,
                                                             r->atol, r->rtol)
                                           : g_strdup_printf("l2-tol %.1e", r->l2_tol);
    if (r->pass)
        g_string_append_printf(s, "verdict: PASS (%u output%s, %u data folder%s, %s)\n",
                               r->n_outputs, r->n_outputs == 1 ? "" : "s", r->samples,
                               r->samples == 1 ? "" : "s", tols);
    else
        g_string_append_printf(s, "verdict: FAIL (%u of %u output%s non-finite or over %s)\n",
                               failed, r->n_outputs, r->n_outputs == 1 ? "" : "s", tols);
    return g_string_free(s, FALSE);
}





char *
hg_verify_format_json(const HgVerifyReport *r)
{
    g_return_val_if_fail(r != NULL, NULL);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    hg_json_add_str(b, "format", "halfguard-verify");
    hg_json_add_int(b, "version", 2); /* 2: "rtol" is per element; the L2 tolerance is "l2_tol" */
    hg_json_add_bool(b, "pass", r->pass);
    hg_json_add_num(b, "l2_tol", r->l2_tol);
    /* The per-element tolerances: null when the check did not run. */
    json_builder_set_member_name(b, "atol");
    r->elementwise ? (void)json_builder_add_double_value(b, r->atol) : (void)json_builder_add_null_value(b);
    json_builder_set_member_name(b, "rtol");
    r->elementwise ? (void)json_builder_add_double_value(b, r->rtol) : (void)json_builder_add_null_value(b);
    hg_json_add_int(b, "samples", r->samples);
    json_builder_set_member_name(b, "outputs");
    json_builder_begin_array(b);
    for (guint i = 0; i < r->n_outputs; i++) {
        const HgVerifyOutput *o = &r->outputs[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "name", o->name);
        hg_json_add_str(b, "dtype_orig", hg_dtype_name(o->dtype_orig));
        hg_json_add_str(b, "dtype_conv", hg_dtype_name(o->dtype_conv));
        hg_json_add_int(b, "count", o->count);
        hg_json_add_int(b, "compared", o->compared);
        hg_json_add_num(b, "rel_l2", o->rel_l2);
        hg_json_add_num(b, "max_abs", o->max_abs);
        json_builder_set_member_name(b, "elements_over");
        r->elementwise ? (void)json_builder_add_int_value(b, o->elements_over) : (void)json_builder_add_null_value(b);
        hg_json_add_num(b, "worst_ratio", r->elementwise ? o->worst_ratio : NAN); /* inf: null too */
        hg_json_add_int(b, "nonfinite_orig", o->nonfinite_orig);
        hg_json_add_int(b, "nonfinite_conv", o->nonfinite_conv);
        hg_json_add_int(b, "new_nonfinite", o->new_nonfinite);
        hg_json_add_bool(b, "pass", o->pass);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "first_nonfinite");
    if (!r->first_nonfinite.value) {
        json_builder_add_null_value(b);
    } else {
        json_builder_begin_object(b);
        hg_json_add_str(b, "value", r->first_nonfinite.value);
        hg_json_add_str(b, "node", r->first_nonfinite.node);
        hg_json_add_str(b, "op", r->first_nonfinite.op);
        hg_json_add_str(b, "data_dir", r->first_nonfinite.data_dir);
        hg_json_add_int(b, "nonfinite", r->first_nonfinite.nonfinite);
        hg_json_add_int(b, "count", r->first_nonfinite.count);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    return hg_json_to_text(b);
}
