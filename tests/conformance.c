/* Conformance: runs the ONNX backend node tests (model.onnx plus test_data_set_N folders of input_K.pb and
 * output_K.pb) through the interpreter and compares every output with the ONNX backend runner's
 * tolerances (rtol 1e-3, atol 1e-5; NaN equals NaN). Folders whose ops are not all in the op table (or
 * an If whose branches' are) are out of scope and not counted.
 *
 * Usage: conformance [--verbose] [--xfail FILE] [--min-pass PERCENT] [--skip-absent] DIR...
 *   DIR is a test folder or a folder of test folders. With --xfail, the listed tests ("name  # reason"
 *   per line) are expected to fail; any other failure, or a listed test that passes, fails the run.
 *   With --skip-absent, a DIR that does not exist makes the run a skip (exit 77, meson's code for
 *   it): the shared test corpus lives beside the checkout and a clone has none.
 */
#include "halfguard/halfguard.h"
#include "testwalk.h"
#include "halfguard/run.h"
#include "ops/array.h"
#include "ops/op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    gboolean verbose;
    guint in_scope, passed, out_of_scope;
    GPtrArray *failed;      /* of char* names */
    GHashTable *reasons;    /* name -> reason */
} Stats;

static char *
compare(const HgTensor *want, const HgTensor *got)
{
    if (want->dtype != got->dtype)
        return g_strdup_printf("output '%s' is %s, expected %s", got->name, hg_dtype_name(got->dtype),
                               hg_dtype_name(want->dtype));
    gboolean same = want->rank == got->rank;
    for (guint i = 0; same && i < want->rank; i++)
        same = want->dims[i] == got->dims[i];
    if (!same) {
        GString *a = g_string_new(NULL), *b = g_string_new(NULL);
        for (guint i = 0; i < got->rank; i++)
            g_string_append_printf(a, "%s%" G_GINT64_FORMAT, i ? "x" : "", got->dims[i]);
        for (guint i = 0; i < want->rank; i++)
            g_string_append_printf(b, "%s%" G_GINT64_FORMAT, i ? "x" : "", want->dims[i]);
        char *msg = g_strdup_printf("output '%s' has shape [%s], expected [%s]", got->name, a->str, b->str);
        g_string_free(a, TRUE);
        g_string_free(b, TRUE);
        return msg;
    }
    if (want->dtype == HG_DTYPE_STRING) {
        for (guint i = 0; want->strings && i < want->strings->len; i++)
            if (!got->strings || !g_bytes_equal(want->strings->pdata[i], got->strings->pdata[i]))
                return g_strdup_printf("output '%s': string %u differs", got->name, i);
        return NULL;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(HgArray) w = hg_array_from_tensor(want, &error);
    g_autoptr(HgArray) o = hg_array_from_tensor(got, NULL);
    if (!w || !o)
        return g_strdup_printf("output '%s': cannot compare: %s", got->name, error ? error->message : "?");
    gboolean is_float = hg_dtype_compute(want->dtype) != HG_COMPUTE_I64;
    double worst = 0;
    gint64 bad = -1, nbad = 0;
    for (gint64 i = 0; i < w->numel; i++) {
        if (is_float) {
            double a = hg_array_get_f64(o, i), b = hg_array_get_f64(w, i);
            gboolean ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 1e-5 + 1e-3 * fabs(b);
            if (!ok) {
                nbad++;
                double err = fabs(a - b);
                if (bad < 0 || err > worst || isnan(err)) {
                    worst = err;
                    bad = i;
                }
            }
        } else if (hg_array_get_i64(o, i) != hg_array_get_i64(w, i)) {
            nbad++;
            if (bad < 0)
                bad = i;
        }
    }
    if (bad >= 0)
        return g_strdup_printf("output '%s': %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                               " values differ; at %" G_GINT64_FORMAT " got %.9g, expected %.9g",
                               got->name, nbad, w->numel, bad, hg_array_get_f64(o, bad),
                               hg_array_get_f64(w, bad));
    return NULL;
}

static GPtrArray *
load_numbered(const char *dir, const char *prefix, GError **error)
{
    GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint k = 0;; k++) {
        g_autofree char *p = g_strdup_printf("%s/%s_%u.pb", dir, prefix, k);
        if (!g_file_test(p, G_FILE_TEST_EXISTS))
            break;
        HgTensor *t = hg_tensor_load_file(p, error);
        if (!t) {
            g_ptr_array_unref(a);
            return NULL;
        }
        g_ptr_array_add(a, t);
    }
    return a;
}

/* NULL when the test passes, else the reason. */
static char *
run_test(const char *dir, HgModel *m)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
    const char *e;
    while (d && (e = g_dir_read_name(d)))
        if (g_str_has_prefix(e, "test_data_set_"))
            g_ptr_array_add(sets, g_build_filename(dir, e, NULL));
    if (!sets->len)
        return g_strdup("no test_data_set_* folder");
    g_ptr_array_sort(sets, hg_test_str_cmp);
    for (guint s = 0; s < sets->len; s++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) ins = load_numbered(sets->pdata[s], "input", &error);
        g_autoptr(GPtrArray) want = ins ? load_numbered(sets->pdata[s], "output", &error) : NULL;
        if (!want)
            return g_strdup_printf("test data: %s", error->message);
        /* ONNX's test data stores bfloat16 tensors as uint16 (NumPy has no bfloat16): same bits. */
        g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
        for (guint i = 0; i < ins->len && i < feeds->len; i++) {
            HgTensor *t = ins->pdata[i];
            const HgType *ty = ((HgValueDecl *)feeds->pdata[i])->type;
            if (t->dtype == HG_DTYPE_UINT16 && ty && ty->elem_type == HG_DTYPE_BFLOAT16)
                t->dtype = HG_DTYPE_BFLOAT16;
        }
        for (guint i = 0; i < want->len && i < m->graph->outputs->len; i++) {
            HgTensor *t = want->pdata[i];
            const HgType *ty = ((HgValueDecl *)m->graph->outputs->pdata[i])->type;
            if (t->dtype == HG_DTYPE_UINT16 && ty && ty->elem_type == HG_DTYPE_BFLOAT16)
                t->dtype = HG_DTYPE_BFLOAT16;
        }
        HgRunOptions opts = {1, NULL, NULL, NULL};
        g_autoptr(GPtrArray) got = hg_run(m, ins, &opts, &error);
        if (!got)
            return g_strdup(error->message);
        if (got->len != want->len)
            return g_strdup_printf("%u outputs, expected %u", got->len, want->len);
        for (guint i = 0; i < got->len; i++) {
            char *why = compare(want->pdata[i], got->pdata[i]);
            if (why)
                return why;
        }
    }
    return NULL;
}

/* Run one folder in a child process, so that a kernel that crashes fails its test instead of the
 * whole run. The child writes "P", "S" (out of scope) or "F<reason>" to a pipe. */
static char *run_isolated(const char *dir);

static void
run_folder(const char *dir, Stats *st)
{
    g_autofree char *name = g_path_get_basename(dir);
    g_autofree char *res = run_isolated(dir);
    if (res[0] == 'S') {
        st->out_of_scope++;
        return;
    }
    st->in_scope++;
    if (res[0] == 'P') {
        st->passed++;
        if (st->verbose)
            printf("PASS %s\n", name);
        return;
    }
    g_ptr_array_add(st->failed, g_strdup(name));
    g_hash_table_insert(st->reasons, g_strdup(name), g_strdup(res + 1));
}

static char *
run_in_child(const char *dir)
{
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_load(model, &error);
    if (!m)
        return g_strdup_printf("Fload: %s", error->message);
    if (!hg_test_runnable(m->graph))
        return g_strdup("S");
    g_autofree char *why = run_test(dir, m);
    return why ? g_strdup_printf("F%s", why) : g_strdup("P");
}

static char *
run_isolated(const char *dir)
{
    int fds[2];
    if (pipe(fds) != 0)
        return run_in_child(dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        char *res = run_in_child(dir);
        gsize len = strlen(res);
        gboolean ok = write(fds[1], res, len) == (ssize_t)len;
        g_free(res);
        close(fds[1]);
        _exit(ok ? 0 : 3);
    }
    close(fds[1]);
    GString *buf = g_string_new(NULL);
    char chunk[4096];
    ssize_t n;
    while ((n = read(fds[0], chunk, sizeof chunk)) > 0)
        g_string_append_len(buf, chunk, n);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) || !buf->len) {
        g_string_free(buf, TRUE);
        return WIFSIGNALED(status) ? g_strdup_printf("Fcrashed with signal %d", WTERMSIG(status))
                                   : g_strdup_printf("Fthe test process exited with status %d",
                                                     WEXITSTATUS(status));
    }
    return g_string_free(buf, FALSE);
}

static void
walk_folder(const char *dir, gpointer data)
{
    run_folder(dir, data);
}

int
main(int argc, char **argv)
{
    gboolean verbose = FALSE, skip_absent = FALSE;
    char *xfail = NULL;
    double min_pass = 0;
    GOptionEntry entries[] = {
        {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Print passing tests too", NULL},
        {"xfail", 0, 0, G_OPTION_ARG_FILENAME, &xfail, "Tests expected to fail", "FILE"},
        {"min-pass", 0, 0, G_OPTION_ARG_DOUBLE, &min_pass, "Fail below this pass rate (percent)", "PCT"},
        {"skip-absent", 0, 0, G_OPTION_ARG_NONE, &skip_absent, "Skip (exit 77) when a folder is absent", NULL},
        {NULL},
    };
    if (!hg_test_parse_args(&argc, &argv, entries, "conformance", "DIR...", "no folder given"))
        return 2;
    for (int i = 1; skip_absent && i < argc; i++)
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            printf("skipped: %s is absent\n", argv[i]);
            g_free(xfail);
            return 77;
        }
    Stats st = {verbose, 0, 0, 0, g_ptr_array_new_with_free_func(g_free),
                g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)};
    for (int i = 1; i < argc; i++)
        hg_test_walk(argv[i], walk_folder, &st);

    g_autoptr(GHashTable) expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GError) error = NULL;
    if (xfail) {
        g_autofree char *text = NULL;
        if (!g_file_get_contents(xfail, &text, NULL, &error)) {
            fprintf(stderr, "conformance: %s\n", error->message);
            return 2;
        }
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
            char *l = g_strstrip(lines[i]);
            if (!*l || *l == '#')
                continue;
            char *end = l + strcspn(l, " \t#");
            *end = '\0';
            g_hash_table_add(expected, g_strdup(l));
        }
    }
    g_ptr_array_sort(st.failed, hg_test_str_cmp);
    guint unexpected = 0, known = 0;
    for (guint i = 0; i < st.failed->len; i++) {
        const char *name = st.failed->pdata[i];
        gboolean xf = g_hash_table_remove(expected, name);
        if (xf)
            known++;
        else
            unexpected++;
        if (!xf || verbose)
            printf("%s %s: %s\n", xf ? "XFAIL" : "FAIL", name,
                   (const char *)g_hash_table_lookup(st.reasons, name));
    }
    /* Entries left in the xfail list passed (or were not run): the list must be kept honest. */
    guint stale = 0;
    if (xfail) {
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, expected);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
            printf("UNEXPECTED PASS or not run %s: remove it from %s\n", (const char *)key, xfail);
            stale++;
        }
    }
    double rate = st.in_scope ? 100.0 * st.passed / st.in_scope : 0;
    printf("in scope: %u test folders (%u out of scope); passed %u (%.1f%%); failed %u (%u expected)\n",
           st.in_scope, st.out_of_scope, st.passed, rate, st.failed->len, known);
    gboolean ok = unexpected == 0 && stale == 0 && rate >= min_pass && st.in_scope > 0;
    if (rate < min_pass)
        printf("pass rate %.1f%% is below the required %.1f%%\n", rate, min_pass);
    printf("%u passed, %u failed\n", st.passed, unexpected + stale);
    g_ptr_array_unref(st.failed);
    g_hash_table_unref(st.reasons);
    g_free(xfail);
    return ok ? 0 : 1;
}
