/* Calibration statistics as an opaque, counted table: set, get, copy (deep), merge (min of mins, max
 * of maxes, summed counts). */
#include "testutil.h"

#include <math.h>

static HgTensorStats
stats(double lo, double hi, guint64 n_inf, guint samples)
{
    HgTensorStats s = {HG_DTYPE_FLOAT, lo, hi, MAX(fabs(lo), fabs(hi)), 0.5, n_inf, 0, 10, samples};
    return s;
}

static void
test_set_get_copy_merge(void **state)
{
    (void)state;
    g_autoptr(HgStats) a = hg_stats_new();
    assert_int_equal(hg_stats_size(a), 0);
    assert_null(hg_stats_get(a, "x"));
    HgTensorStats sx = stats(-2, 3, 0, 1);
    hg_stats_set(a, "x", &sx);
    assert_int_equal(hg_stats_size(a), 1);
    assert_float_equal(hg_stats_get(a, "x")->max, 3, 0);
    /* A copy is its own: changing it leaves the original. */
    g_autoptr(HgStats) c = hg_stats_copy(a);
    HgTensorStats sx2 = stats(-1, 9, 0, 1);
    hg_stats_set(c, "x", &sx2);
    assert_float_equal(hg_stats_get(a, "x")->max, 3, 0);
    assert_float_equal(hg_stats_get(c, "x")->max, 9, 0);
    /* Merge: the wider range, the sums of counts and samples; a tensor only the source has comes in. */
    HgTensorStats sy = stats(0, 1, 2, 1);
    hg_stats_set(c, "y", &sy);
    hg_stats_merge(a, c);
    const HgTensorStats *m = hg_stats_get(a, "x");
    assert_float_equal(m->min, -2, 0);
    assert_float_equal(m->max, 9, 0);
    assert_float_equal(m->absmax, 9, 0);
    assert_int_equal(m->count, 20);
    assert_int_equal(m->samples, 2);
    assert_int_equal(hg_stats_get(a, "y")->n_inf, 2);
    assert_int_equal(hg_stats_size(a), 2);
    /* References: the table lives while one is held. */
    HgStats *r = hg_stats_ref(c);
    hg_stats_unref(r);
    assert_int_equal(hg_stats_size(c), 2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get_copy_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
