/* Walking the ONNX test-data layout: a test folder holds model.onnx; any other folder is searched
 * (sorted, so runs are reproducible) for test folders. Shared by the runners over libonnx-testdata. */
#ifndef HG_TESTWALK_H
#define HG_TESTWALK_H

#include <glib.h>

typedef void (*HgTestFolderFunc)(const char *dir, gpointer data);

static inline void
hg_test_walk(const char *dir, HgTestFolderFunc fn, gpointer data)
{
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    if (g_file_test(model, G_FILE_TEST_EXISTS)) {
        fn(dir, data);
        return;
    }
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (!d)
        return;
    g_autoptr(GPtrArray) subs = g_ptr_array_new_with_free_func(g_free);
    const char *e;
    while ((e = g_dir_read_name(d)))
        g_ptr_array_add(subs, g_build_filename(dir, e, NULL));
    g_ptr_array_sort(subs, (GCompareFunc)g_strcmp0);
    for (guint i = 0; i < subs->len; i++)
        if (g_file_test(subs->pdata[i], G_FILE_TEST_IS_DIR))
            hg_test_walk(subs->pdata[i], fn, data);
}

#endif
