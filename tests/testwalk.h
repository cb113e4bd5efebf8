/* What the runners over ONNX test data share (conformance.c, ranges_sound.c, shapes_agree.c):
 * walking the test-data layout, the scope test, and their command lines. */
#ifndef HG_TESTWALK_H
#define HG_TESTWALK_H

#include "halfguard/halfguard.h"
#include "ops/op.h"

#include <glib.h>
#include <stdio.h>

typedef void (*HgTestFolderFunc)(const char *dir, gpointer data);

static inline gint
hg_test_str_cmp(gconstpointer a, gconstpointer b)
{
    /* for g_ptr_array_sort of strings, which passes pointers to the elements, not the elements */
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

/* The entries of dir as full paths, sorted so that runs are reproducible (empty when dir cannot be
 * opened). The caller owns the array. */
static inline GPtrArray *
hg_test_children(const char *dir)
{
    GPtrArray *subs = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *e;
    while (d && (e = g_dir_read_name(d)))
        g_ptr_array_add(subs, g_build_filename(dir, e, NULL));
    g_ptr_array_sort(subs, hg_test_str_cmp);
    return subs;
}

/* The ONNX test-data layout: a test folder holds model.onnx and is given to fn; any other folder is
 * searched for test folders. */
static inline void
hg_test_walk(const char *dir, HgTestFolderFunc fn, gpointer data)
{
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    if (g_file_test(model, G_FILE_TEST_EXISTS)) {
        fn(dir, data);
        return;
    }
    g_autoptr(GPtrArray) subs = hg_test_children(dir);
    for (guint i = 0; i < subs->len; i++)
        if (g_file_test(subs->pdata[i], G_FILE_TEST_IS_DIR))
            hg_test_walk(subs->pdata[i], fn, data);
}

/* Every regular file under path (or path itself) whose name ends in suffix, in sorted order. */
static inline void
hg_test_walk_files(const char *path, const char *suffix, HgTestFolderFunc fn, gpointer data)
{
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        if (g_str_has_suffix(path, suffix))
            fn(path, data);
        return;
    }
    g_autoptr(GPtrArray) subs = hg_test_children(path);
    for (guint i = 0; i < subs->len; i++)
        hg_test_walk_files(subs->pdata[i], suffix, fn, data);
}

/* Whether the interpreter has a kernel row for every node of g. */
static inline gboolean
hg_test_in_scope(HgGraph *g)
{
    for (guint i = 0; i < g->nodes->len; i++)
        if (!hg_op_for_node(g->nodes->pdata[i]))
            return FALSE;
    return TRUE;
}

/* hg_test_in_scope for the interpreter, which also runs If and Loop: a node with an op row, or an If
 * or a Loop whose bodies hold only such nodes. */
static inline gboolean
hg_test_runnable(HgGraph *g)
{
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (hg_op_for_node(n))
            continue;
        if (!hg_node_is(n, "If") && !hg_node_is(n, "Loop"))
            return FALSE;
        for (guint a = 0; a < n->attrs->len; a++) {
            HgAttr *at = n->attrs->pdata[a];
            if (at->g && !hg_test_runnable(at->g))
                return FALSE;
        }
    }
    return TRUE;
}

/* The inputs of a node test folder's first data set for m (test_data_set_0/input_K.pb, one per feed),
 * or NULL when one is missing or unreadable. */
static inline GPtrArray *
hg_test_load_inputs(HgModel *m, const char *dir)
{
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    GPtrArray *ins = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint k = 0; k < feeds->len; k++) {
        g_autofree char *p = g_strdup_printf("%s/test_data_set_0/input_%u.pb", dir, k);
        HgTensor *t = hg_tensor_load_file(p, NULL);
        if (!t) {
            g_ptr_array_unref(ins);
            return NULL;
        }
        g_ptr_array_add(ins, t);
    }
    return ins;
}

/* Parses a runner's options (entries; args names the arguments in --help) and wants at least one
 * argument after them; otherwise prints "PROG: why" (the parser's message, or missing) on stderr and
 * returns FALSE (the runner exits 2). */
static inline gboolean
hg_test_parse_args(int *argc, char ***argv, const GOptionEntry *entries, const char *prog, const char *args,
                   const char *missing)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(args);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &error) || *argc < 2) {
        fprintf(stderr, "%s: %s\n", prog, error ? error->message : missing);
        return FALSE;
    }
    return TRUE;
}

#endif
