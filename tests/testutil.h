/* Helpers shared by the cmocka tests: every test checks its graphs with hg_graph_verify(). */
#ifndef HG_TESTUTIL_H
#define HG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
