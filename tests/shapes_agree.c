/* Shape inference against the shapes models record: for every value a model declares (graph outputs
 * and value_info) with a known element type or dims, the inferred type and dims must agree wherever
 * both are known. Also measures coverage: how many declared dims inference found on its own.
 *
 * Usage: shapes_agree [--verbose] [--min-coverage PCT] [--xfail FILE] PATH...   (model files, or
 * folders searched for *.onnx). FILE lists models (path suffixes, "suffix  # reason") whose recorded
 * shapes are known to be wrong: their disagreements are expected, and agreement there fails the run
 * so the list stays honest. */
#include "halfguard/halfguard.h"
#include "shapes.h"
#include "testwalk.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    gboolean verbose;
    GPtrArray *xfail;    /* path suffixes */
    GHashTable *xfail_hit;
    guint models, models_bad, load_failed, known_bad, stale;
    guint64 dims_declared, dims_inferred, dims_agree, dims_disagree, types_disagree;
} Stats;

static void
check_decl(const char *path, const HgShapes *s, const HgValueDecl *d, Stats *st, gboolean *bad)
{
    HgValueShape want;
    hg_vshape_from_type(&want, d->type);
    const HgValueShape *got = hg_shapes_get(s, d->value);
    if (want.dtype != HG_DTYPE_UNDEFINED && got->dtype != HG_DTYPE_UNDEFINED && want.dtype != got->dtype) {
        st->types_disagree++;
        *bad = TRUE;
        printf("%s: value '%s': inferred %s, declared %s\n", path, d->value->name,
               hg_dtype_name(got->dtype), hg_dtype_name(want.dtype));
    }
    if (want.rank < 0)
        return;
    for (int i = 0; i < want.rank; i++)
        if (want.dims[i].v >= 0)
            st->dims_declared++;
    if (got->rank < 0)
        return;
    if (got->rank != want.rank) {
        st->dims_disagree++;
        *bad = TRUE;
        printf("%s: value '%s': inferred rank %d, declared %d\n", path, d->value->name, got->rank,
               want.rank);
        return;
    }
    for (int i = 0; i < want.rank; i++) {
        if (want.dims[i].v < 0 || got->dims[i].v < 0)
            continue;
        st->dims_inferred++;
        if (want.dims[i].v == got->dims[i].v) {
            st->dims_agree++;
        } else {
            st->dims_disagree++;
            *bad = TRUE;
            printf("%s: value '%s': dim %d inferred %" G_GINT64_FORMAT ", declared %" G_GINT64_FORMAT "\n",
                   path, d->value->name, i, got->dims[i].v, want.dims[i].v);
        }
    }
}

static void
check_model(const char *path, gpointer data)
{
    Stats *st = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_load(path, &error);
    if (!m) {
        st->load_failed++;
        printf("%s: %s\n", path, error->message);
        return;
    }
    g_autoptr(HgShapes) s = hg_shapes_infer(m->graph, NULL, 0, &error);
    st->models++;
    if (!s) {
        st->models_bad++;
        printf("%s: %s\n", path, error->message);
        return;
    }
    gboolean bad = FALSE;
    for (guint i = 0; i < m->graph->outputs->len; i++)
        check_decl(path, s, m->graph->outputs->pdata[i], st, &bad);
    for (guint i = 0; i < m->graph->value_info->len; i++)
        check_decl(path, s, m->graph->value_info->pdata[i], st, &bad);
    const char *expected = NULL;
    for (guint i = 0; st->xfail && i < st->xfail->len && !expected; i++)
        if (g_str_has_suffix(path, st->xfail->pdata[i]))
            expected = st->xfail->pdata[i];
    if (expected) {
        g_hash_table_add(st->xfail_hit, (gpointer)expected);
        if (bad) {
            st->known_bad++;
        } else {
            st->models_bad++;
            printf("%s: listed as wrong in the xfail file, but agrees: remove it\n", path);
        }
    } else if (bad) {
        st->models_bad++;
    }
    if (st->verbose)
        for (guint i = 0; i < s->warnings->len; i++)
            printf("%s: note: %s\n", path, (const char *)s->warnings->pdata[i]);
}

int
main(int argc, char **argv)
{
    gboolean verbose = FALSE;
    double min_cov = 0;
    char *xfail = NULL;
    GOptionEntry entries[] = {
        {"xfail", 0, 0, G_OPTION_ARG_FILENAME, &xfail, "Models whose recorded shapes are wrong", "FILE"},
        {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Print shape-rule notes", NULL},
        {"min-coverage", 0, 0, G_OPTION_ARG_DOUBLE, &min_cov,
         "Fail when fewer declared dims than this (percent) are inferred", "PCT"},
        {NULL},
    };
    if (!hg_test_parse_args(&argc, &argv, entries, "shapes_agree", "PATH...", "no path given"))
        return 2;
    g_autoptr(GError) error = NULL;
    Stats st = {0};
    st.verbose = verbose;
    st.xfail_hit = g_hash_table_new(NULL, NULL);
    if (xfail) {
        g_autofree char *text = NULL;
        if (!g_file_get_contents(xfail, &text, NULL, &error)) {
            fprintf(stderr, "shapes_agree: %s\n", error->message);
            return 2;
        }
        st.xfail = g_ptr_array_new_with_free_func(g_free);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
            char *l = g_strstrip(lines[i]);
            if (!*l || *l == '#')
                continue;
            l[strcspn(l, " \t#")] = '\0';
            g_ptr_array_add(st.xfail, g_strdup(l));
        }
    }
    gboolean absent = FALSE; /* a path that is not there (the shared corpus, in a clone without it) */
    for (int i = 1; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_EXISTS)) {
            printf("note: %s is absent, skipped\n", argv[i]);
            absent = TRUE;
            continue;
        }
        hg_test_walk_files(argv[i], ".onnx", check_model, &st);
    }
    double cov = st.dims_declared ? 100.0 * (double)st.dims_inferred / (double)st.dims_declared : 0;
    printf("models: %u (%u did not load); declared dims: %" G_GUINT64_FORMAT "; inferred: %" G_GUINT64_FORMAT
           " (%.1f%%); agree: %" G_GUINT64_FORMAT "; disagree: %" G_GUINT64_FORMAT
           "; element types disagree: %" G_GUINT64_FORMAT "\n",
           st.models, st.load_failed, st.dims_declared, st.dims_inferred, cov, st.dims_agree,
           st.dims_disagree, st.types_disagree);
    for (guint i = 0; st.xfail && i < st.xfail->len; i++)
        if (!g_hash_table_contains(st.xfail_hit, st.xfail->pdata[i])) {
            printf("%s: listed in the xfail file but not checked%s\n", (const char *)st.xfail->pdata[i],
                   absent ? " (a path given is absent: not counted)" : "");
            st.models_bad += !absent;
        }
    printf("%u models with known wrong declarations\n", st.known_bad);
    gboolean ok = st.models_bad == 0 && st.load_failed == 0 && cov >= min_cov && st.models > 0;
    if (cov < min_cov)
        printf("coverage %.1f%% is below the required %.1f%%\n", cov, min_cov);
    printf("%u passed, %u failed\n", st.models - st.models_bad - st.known_bad, st.models_bad + st.load_failed);
    g_free(xfail);
    if (st.xfail)
        g_ptr_array_unref(st.xfail);
    g_hash_table_unref(st.xfail_hit);
    return ok ? 0 : 1;
}
