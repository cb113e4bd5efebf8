/* Helpers shared by the cmocka tests: every test checks its graphs with hg_graph_verify(). */
#ifndef HG_TESTUTIL_H
#define HG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "halfguard/halfguard.h"

static inline void
hg_assert_verified_at(HgGraph *g, const char *file, int line)
{
    GError *error = NULL;
    if (!hg_graph_verify(g, &error)) {
        print_error("%s:%d: hg_graph_verify: %s\n", file, line, error->message);
        g_error_free(error);
        _fail(file, line);
    }
}
#define assert_verified(g) hg_assert_verified_at((g), __FILE__, __LINE__)

/* Assert that error is set, in HG_ERROR with the given code, and that its message contains needle. */
static inline void
hg_assert_error_at(GError *error, int code, const char *needle, const char *file, int line)
{
    if (!error) {
        print_error("%s:%d: expected an error containing '%s', got success\n", file, line, needle);
        _fail(file, line);
        return;
    }
    if (error->domain != HG_ERROR || error->code != code || !strstr(error->message, needle)) {
        print_error("%s:%d: expected error %d containing '%s', got %d: %s\n", file, line, code,
                       needle, error->code, error->message);
        _fail(file, line);
    }
}
#define assert_hg_error(e, code, needle) hg_assert_error_at((e), (code), (needle), __FILE__, __LINE__)

/* The model text parses to (the caller owns it), or fail, showing the text; its graph must verify. */
static inline HgModel *
hg_parse_ok_at(const char *text, const char *file, int line)
{
    GError *error = NULL;
    HgModel *m = hg_model_parse_text(text, strlen(text), &error);
    if (!m) {
        print_error("%s:%d: parse failed: %s\n--- text ---\n%s\n", file, line, error->message, text);
        g_error_free(error);
        _fail(file, line);
        return NULL;
    }
    hg_assert_verified_at(m->graph, file, line);
    return m;
}
#define parse_ok(text) hg_parse_ok_at((text), __FILE__, __LINE__)

/* The path rel under the folder the environment variable env names (HG_TESTDATA, HG_CORPUS: meson
 * sets them); the test is skipped where env is unset. The caller frees the path. */
static inline char *
hg_test_data_at(const char *env, const char *rel, const char *file, int line)
{
    const char *root = g_getenv(env);
    if (!root || !g_file_test(root, G_FILE_TEST_IS_DIR)) /* unset, or absent (a clone without ../shared) */
        _skip(file, line);
    return g_build_filename(root, rel, NULL);
}
#define test_data(env, rel) hg_test_data_at((env), (rel), __FILE__, __LINE__)

/* A test file's main: HG_TEST_MAIN("name", cmocka_unit_test(a), cmocka_unit_test(b), ...) runs the
 * tests listed as the group name. */
#define HG_TEST_MAIN(name, ...)                                                                    \
    int main(void)                                                                                 \
    {                                                                                              \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                           \
        return cmocka_run_group_tests_name((name), tests, NULL, NULL);                             \
    }

#endif
