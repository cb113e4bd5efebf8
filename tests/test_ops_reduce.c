/* Kernels and shape rules of the reduction families (src/ops/reduce.c, order.c, softmax.c and norm.c,
 * with rows.c), checked against values worked out by hand or with numpy (the numbers are written
 * here). Each test builds one node with the IR API, runs the op's eval or infer at a chosen opset,
 * and checks values, shapes, types and errors. */
#include "opstest.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define check(a, dtype, rank, dims, want, tol) hg_check_rel_at((a), (dtype), (rank), (dims), (want), (tol), __FILE__, __LINE__)

/* ---------------------------------------------------------------- the table */

static void
test_family_rows(void **state)
{
    (void)state;
    /* Every row of these families is reachable by name and has all three functions. */
    assert_family_rows("reduce", 10);
    assert_family_rows("order", 4);
    assert_family_rows("softmax", 4);
    assert_family_rows("norm", 4);
}

/* ---------------------------------------------------------------- Reduce* */

static const double x3x2x2[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static void
test_reduce_sum_attr_and_input(void **state)
{
    (void)state;
    /* opset 11: axes attribute (the spec's example) */
    Node n = node_new("ReduceSum", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(3, 1, 2), VALS(4, 6, 12, 14, 20, 22), 0);
    result_free(&r);
    /* no axes attribute: every axis */
    node_free(&n);
    n = node_new("ReduceSum", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(78), 0);
    result_free(&r);
    node_free(&n);

    /* opset 13: axes is an input; a negative axis counts from the back */
    n = node_new("ReduceSum", "x,axes", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2), arr_i64(1, DIMS(1), (gint64[]){-2}));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 2), VALS(4, 6, 12, 14, 20, 22), 0);
    result_free(&r);
    /* empty axes: every axis... */
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2), arr_i64(1, DIMS(0), NULL));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(78), 0);
    result_free(&r);
    node_free(&n);
    /* ...unless noop_with_empty_axes, which passes the input through */
    n = node_new("ReduceSum", "x,axes", "y");
    attr_i(n.node, "noop_with_empty_axes", 1);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2), arr_i64(1, DIMS(0), NULL));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2, 0);
    result_free(&r);
    /* the axes input omitted altogether counts as empty */
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2), NULL);
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2, 0);
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_axes_errors(void **state)
{
    (void)state;
    Node n = node_new("ReduceMean", "x", "y");
    attr_ints(n.node, "axes", 2, DIMS(1, -2));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "repeated", arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2));
    node_free(&n);
    n = node_new("ReduceMean", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(3));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2));
    node_free(&n);
    /* a float axes tensor is not an axes list */
    n = node_new("ReduceMean", "x,axes", "y");
    RUN_FAILS(&n, 18, HG_ERROR_INVALID, "axes", arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)));
    node_free(&n);
    /* missing data, and a string tensor */
    n = node_new("ReduceMean", "x", "y");
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "missing", NULL);
    RUN_FAILS(&n, 13, HG_ERROR_UNSUPPORTED, "string", hg_array_new(HG_DTYPE_STRING, 1, DIMS(2), NULL));
    node_free(&n);
}

static void
test_reduce_mean_opset18(void **state)
{
    (void)state;
    /* opset 18 moved the axes of every Reduce* to an input; the attribute form still reads right */
    Node n = node_new("ReduceMean", "x,axes", "y");
    Result r = RUN(&n, 18, arr(HG_DTYPE_FLOAT, 3, DIMS(3, 2, 2), x3x2x2), arr_i64(1, DIMS(1), (gint64[]){1}));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(3, 1, 2), VALS(2, 3, 6, 7, 10, 11), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("ReduceMean", "x", "y");
    attr_i(n.node, "noop_with_empty_axes", 1);
    r = RUN(&n, 18, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 2, 3, 4)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 2, 3, 4), 0);
    result_free(&r);
    /* before 18 that attribute does not exist: no axes reduces everything */
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 2, 3, 4)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 1), VALS(2.5), 0);
    result_free(&r);
    node_free(&n);
    /* a long contiguous row takes the eight-lane path */
    double row[40];
    for (int i = 0; i < 40; i++)
        row[i] = i * 0.25 - 4;
    n = node_new("ReduceMean", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(-1));
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 20), row));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-1.625, 3.375), 1e-6);
    result_free(&r);
    node_free(&n);
}

/* y = arange(24).reshape(2,3,4) * 0.5 - 3 */
static double y2x3x4[24];

static void
fill_y(void)
{
    for (int i = 0; i < 24; i++)
        y2x3x4[i] = i * 0.5 - 3;
}

/* One reduction of y2x3x4 at opset 13 with axes as an attribute. */
static Result
reduce_y(const char *op, guint n_axes, const gint64 *axes, int dtype)
{
    fill_y();
    Node n = node_new(op, "x", "y");
    attr_ints(n.node, "axes", n_axes, axes);
    attr_i(n.node, "keepdims", 0);
    Result r = RUN(&n, 13, arr(dtype, 3, DIMS(2, 3, 4), y2x3x4));
    node_free(&n);
    return r;
}

static void
test_reduce_kinds(void **state)
{
    (void)state;
    /* axes 0 and 2 are not neighbours: the walk merges nothing and strides over the output */
    Result r = reduce_y("ReduceSum", 2, DIMS(0, 2), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3), VALS(6, 22, 38), 0);
    result_free(&r);
    r = reduce_y("ReduceMax", 2, DIMS(0, 2), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3), VALS(4.5, 6.5, 8.5), 0);
    result_free(&r);
    r = reduce_y("ReduceMin", 1, DIMS(1), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 4), VALS(-3, -2.5, -2, -1.5, 3, 3.5, 4, 4.5), 0);
    result_free(&r);
    r = reduce_y("ReduceL1", 1, DIMS(2), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(9, 2, 7, 15, 23, 31), 0);
    result_free(&r);
    r = reduce_y("ReduceL2", 1, DIMS(2), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3),
          VALS(4.6368093, 1.2247449, 3.6742346, 7.5828753, 11.55422, 15.54027), 1e-6);
    result_free(&r);
    r = reduce_y("ReduceSumSquare", 1, DIMS(-1), HG_DTYPE_DOUBLE);
    check(r.out[0], HG_DTYPE_DOUBLE, 2, DIMS(2, 3), VALS(21.5, 1.5, 13.5, 57.5, 133.5, 241.5), 0);
    result_free(&r);
    r = reduce_y("ReduceLogSumExp", 1, DIMS(2), HG_DTYPE_FLOAT);
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3),
          VALS(-0.7126614, 1.2873386, 3.2873387, 5.2873387, 7.2873387, 9.287338), 1e-6);
    result_free(&r);

    Node n = node_new("ReduceProd", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(0));
    r = RUN(&n, 11, arr(HG_DTYPE_DOUBLE, 3, DIMS(3, 2, 2), x3x2x2));
    check(r.out[0], HG_DTYPE_DOUBLE, 3, DIMS(1, 2, 2), VALS(45, 120, 231, 384), 0);
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_special_values(void **state)
{
    (void)state;
    /* NaN propagates through max and min */
    Node n = node_new("ReduceMax", "x", "y");
    attr_i(n.node, "keepdims", 0);
    Result r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, NAN, 3)));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(NAN), 0);
    result_free(&r);
    /* an empty axis gives the identity: -inf for max over floats, the type's minimum for integers */
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 0), NULL));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(-INFINITY), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("ReduceMax", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    r = RUN(&n, 13, arr(HG_DTYPE_INT32, 2, DIMS(2, 0), NULL));
    check(r.out[0], HG_DTYPE_INT32, 2, DIMS(2, 1), VALS(G_MININT32, G_MININT32), 0);
    result_free(&r);
    node_free(&n);
    const char *ops[] = {"ReduceSum", "ReduceProd", "ReduceMin", "ReduceMean", "ReduceLogSumExp", "ReduceL2"};
    const double ids[] = {0, 1, INFINITY, NAN, -INFINITY, 0};
    for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
        n = node_new(ops[i], "x", "y");
        attr_ints(n.node, "axes", 1, DIMS(0));
        r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(0, 2), NULL));
        check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 2), ((double[]){ids[i], ids[i]}), 0);
        result_free(&r);
        node_free(&n);
    }
    /* ReduceLogSumExp subtracts the max first: exp(1000) would overflow */
    n = node_new("ReduceLogSumExp", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1000, 1000)));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(1000.6931472), 1e-7);
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_fp16(void **state)
{
    (void)state;
    Node n = node_new("ReduceSum", "x", "y");
    attr_i(n.node, "keepdims", 0);
    /* FP32 accumulation: the partial sum 120000 would be inf in FP16, the total is not */
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(60000, 60000, -60000)));
    check(r.out[0], HG_DTYPE_FLOAT16, 0, NULL, VALS(60000), 0);
    result_free(&r);
    /* a total past 65504 is inf once stored */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(40000, 40000)));
    check(r.out[0], HG_DTYPE_FLOAT16, 0, NULL, VALS(INFINITY), 0);
    result_free(&r);
    /* rounded once: FP16 partial sums would stop at 2048 (2049 rounds to even), FP32 gets 2050 */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(2048, 1, 1)));
    check(r.out[0], HG_DTYPE_FLOAT16, 0, NULL, VALS(2050), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("ReduceSumSquare", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(300)));
    check(r.out[0], HG_DTYPE_FLOAT16, 0, NULL, VALS(INFINITY), 0);
    result_free(&r);
    node_free(&n);
    /* ReduceL2 of values whose squares overflow FP16 is finite: only the result is stored */
    n = node_new("ReduceL2", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(300, 400)));
    check(r.out[0], HG_DTYPE_FLOAT16, 0, NULL, VALS(500), 0);
    result_free(&r);
    node_free(&n);
    /* BF16 goes through FP32 as well */
    n = node_new("ReduceMean", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_BFLOAT16, 1, DIMS(4), VALS(1, 2, 3, 6)));
    check(r.out[0], HG_DTYPE_BFLOAT16, 0, NULL, VALS(3), 0);
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_fp16_bits(void **state)
{
    (void)state;
    /* every FP16 bit pattern through a noop ReduceSum (FP32 load, vectorized FP16 store) comes back
     * bit for bit, -0 and subnormals included; NaN stays NaN */
    HgArray *all = hg_array_new(HG_DTYPE_FLOAT16, 1, DIMS(65536), NULL);
    for (guint i = 0; i < 65536; i++)
        ((guint16 *)all->data)[i] = (guint16)i;
    Node n = node_new("ReduceSum", "x,axes", "y");
    attr_i(n.node, "noop_with_empty_axes", 1);
    Result r = RUN(&n, 13, hg_array_ref(all), arr_i64(1, DIMS(0), NULL));
    assert_non_null(r.out[0]);
    assert_int_equal(r.out[0]->numel, 65536);
    for (guint i = 0; i < 65536; i++) {
        guint16 got = ((guint16 *)r.out[0]->data)[i];
        if (isnan(hg_half_to_float((guint16)i)))
            assert_true(isnan(hg_half_to_float(got)));
        else
            assert_int_equal(got, i);
    }
    result_free(&r);
    node_free(&n);
    /* rounding of the store, differential against the shared conversion: means of FP16 pairs land
     * between FP16 values (ties included) across the whole range, odd lengths exercise the tail */
    const gint64 pairs = 4099;
    HgArray *x = hg_array_new(HG_DTYPE_FLOAT16, 2, DIMS(pairs, 2), NULL);
    guint32 seed = 12345;
    for (gint64 i = 0; i < 2 * pairs; i++) {
        seed = seed * 1664525u + 1013904223u;
        guint16 h = (guint16)(seed >> 16);
        if ((h & 0x7c00) == 0x7c00)
            h &= 0xbfff; /* no inf or NaN */
        ((guint16 *)x->data)[i] = i % 2 ? (guint16)((((guint16 *)x->data)[i - 1] & 0xfc00) | (h & 0x3ff)) : h;
    }
    n = node_new("ReduceMean", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, hg_array_ref(x));
    for (gint64 i = 0; i < pairs; i++) {
        float a = hg_half_to_float(((guint16 *)x->data)[2 * i]), b = hg_half_to_float(((guint16 *)x->data)[2 * i + 1]);
        assert_int_equal(((guint16 *)r.out[0]->data)[i], hg_float_to_half((a + b) / 2));
    }
    result_free(&r);
    node_free(&n);
    hg_array_unref(x);
    hg_array_unref(all);
    /* -0 is kept by sums (numpy's and ONNX Runtime's answer), an empty sum is +0 */
    n = node_new("ReduceSum", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(0));
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(-0.0, 1, -0.0, -1)));
    assert_true(signbit(hg_array_get_f64(r.out[0], 0)));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 0), 0);
    result_free(&r);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 2, DIMS(0, 1), NULL));
    assert_false(signbit(hg_array_get_f64(r.out[0], 0)));
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_integers(void **state)
{
    (void)state;
    /* int32 sums wrap as an int32 accumulator would */
    Node n = node_new("ReduceSum", "x", "y");
    attr_i(n.node, "keepdims", 0);
    Result r = RUN(&n, 11, arr(HG_DTYPE_INT32, 1, DIMS(2), VALS(2147483647, 1)));
    check(r.out[0], HG_DTYPE_INT32, 0, NULL, VALS(-2147483648.0), 0);
    result_free(&r);
    node_free(&n);
    /* integer mean truncates */
    n = node_new("ReduceMean", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_INT64, 1, DIMS(2), VALS(1, 2)));
    check(r.out[0], HG_DTYPE_INT64, 0, NULL, VALS(1), 0);
    result_free(&r);
    node_free(&n);
    /* uint8 max and min by value, uint64 above 2^63 compared as unsigned */
    n = node_new("ReduceMax", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_UINT8, 1, DIMS(3), VALS(7, 255, 3)));
    check(r.out[0], HG_DTYPE_UINT8, 0, NULL, VALS(255), 0);
    result_free(&r);
    HgArray *u = hg_array_new(HG_DTYPE_UINT64, 1, DIMS(2), NULL);
    ((guint64 *)u->data)[0] = G_GUINT64_CONSTANT(0x8000000000000001);
    ((guint64 *)u->data)[1] = 5;
    r = RUN(&n, 13, u);
    assert_true(((guint64 *)r.out[0]->data)[0] == G_GUINT64_CONSTANT(0x8000000000000001));
    result_free(&r);
    node_free(&n);
    n = node_new("ReduceMin", "x", "y");
    attr_i(n.node, "keepdims", 0);
    u = hg_array_new(HG_DTYPE_UINT64, 1, DIMS(2), NULL);
    ((guint64 *)u->data)[0] = G_GUINT64_CONSTANT(0x8000000000000001);
    ((guint64 *)u->data)[1] = 5;
    r = RUN(&n, 13, u);
    assert_true(((guint64 *)r.out[0]->data)[0] == 5);
    result_free(&r);
    /* int8 min of nothing is 127 */
    r = RUN(&n, 13, arr(HG_DTYPE_INT8, 1, DIMS(0), NULL));
    check(r.out[0], HG_DTYPE_INT8, 0, NULL, VALS(127), 0);
    result_free(&r);
    node_free(&n);
    /* L1 of int64 and L2 of int32 (computed in double, truncated) */
    n = node_new("ReduceL1", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 18, arr(HG_DTYPE_INT64, 1, DIMS(3), VALS(-3, 4, -5)));
    check(r.out[0], HG_DTYPE_INT64, 0, NULL, VALS(12), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("ReduceL2", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 18, arr(HG_DTYPE_INT32, 1, DIMS(2), VALS(3, 5)));
    check(r.out[0], HG_DTYPE_INT32, 0, NULL, VALS(5), 0); /* sqrt(34) = 5.83 */
    result_free(&r);
    node_free(&n);
    /* ReduceProd over a shape, the shape-subgraph case */
    n = node_new("ReduceProd", "x", "y");
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 13, arr_i64(1, DIMS(3), (gint64[]){2, 3, 4}));
    check(r.out[0], HG_DTYPE_INT64, 0, NULL, VALS(24), 0);
    result_free(&r);
    node_free(&n);
}

static void
test_reduce_infer(void **state)
{
    (void)state;
    /* symbolic dims ride through; reduced dims become 1 with keepdims */
    Node n = node_new("ReduceSum", "x,axes", "y");
    HgValueShape *in[2], *out[1];
    in[0] = vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 4, 5));
    in[0]->dims[0].sym = g_intern_string("batch");
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    in[1]->value = arr_i64(1, DIMS(1), (gint64[]){-1});
    GError *error = NULL;
    assert_true(infer_vs(&n, 13, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out[0]->rank, 3);
    assert_true(out[0]->dims[0].v < 0);
    assert_string_equal(out[0]->dims[0].sym, "batch");
    assert_int_equal(out[0]->dims[1].v, 4);
    assert_int_equal(out[0]->dims[2].v, 1);
    assert_null(out[0]->value);
    vs_free(out[0]);
    /* axes computed at run time: keepdims keeps the rank, and only 1s stay known */
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 5));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    assert_true(infer_vs(&n, 13, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->rank, 3);
    assert_int_equal(out[0]->dims[0].v, 1);
    assert_true(out[0]->dims[1].v < 0 && out[0]->dims[2].v < 0);
    vs_free(out[0]);
    /* an axes tensor known to be empty reduces everything */
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 5));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(0));
    assert_true(infer_vs(&n, 13, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->rank, 2);
    assert_int_equal(out[0]->dims[0].v, 1);
    assert_int_equal(out[0]->dims[1].v, 1);
    vs_free(out[0]);
    node_free(&n);

    /* without keepdims and with unknown axes the rank is unknown; bad axes are an error */
    n = node_new("ReduceMax", "x,axes", "y");
    attr_i(n.node, "keepdims", 0);
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 5));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    assert_true(infer_vs(&n, 18, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT);
    assert_int_equal(out[0]->rank, -1);
    vs_free(out[0]);
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 5));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    in[1]->value = arr_i64(1, DIMS(1), (gint64[]){2});
    assert_false(infer_vs(&n, 18, 2, in, n.node->n_outputs, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "out of range");
    g_clear_error(&error);
    vs_free(out[0]);
    node_free(&n);

    /* folding: ReduceProd of a known shape is a known scalar */
    n = node_new("ReduceProd", "x", "y");
    attr_i(n.node, "keepdims", 0);
    in[0] = vs_new(HG_DTYPE_INT64, 1, DIMS(3));
    in[0]->value = arr_i64(1, DIMS(3), (gint64[]){2, 3, 4});
    assert_true(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->rank, 0);
    assert_non_null(out[0]->value);
    assert_int_equal(hg_array_get_i64(out[0]->value, 0), 24);
    vs_free(out[0]);
    /* unknown rank: the type is still known */
    in[0] = vs_new(HG_DTYPE_INT32, -1, NULL);
    assert_true(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_INT32);
    assert_int_equal(out[0]->rank, -1);
    vs_free(out[0]);
    node_free(&n);
}

static void
test_costs(void **state)
{
    (void)state;
    HgValueShape *known = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 5)), *unknown = vs_new(HG_DTYPE_FLOAT, 2, DIMS(-1, 5));
    Node n = node_new("ReduceSum", "x", "y");
    const HgValueShape *ins[1] = {known};
    HgShapeCtx ctx = {.node = n.node, .opset = 13, .n_inputs = 1, .inputs = ins};
    assert_int_equal(hg_op_lookup("", "ReduceSum")->cost(&ctx), 20);
    assert_int_equal(hg_op_lookup("", "Softmax")->cost(&ctx), 40);
    assert_int_equal(hg_op_lookup("", "TopK")->cost(&ctx), 20 * 3); /* floor(log2(5)) + 1 per element */
    ins[0] = unknown;
    assert_int_equal(hg_op_lookup("", "ReduceSum")->cost(&ctx), -1);
    assert_int_equal(hg_op_lookup("", "LayerNormalization")->cost(&ctx), -1);
    node_free(&n);
    vs_free(known);
    vs_free(unknown);
}

/* ---------------------------------------------------------------- ArgMax, ArgMin */

static void
test_argmax(void **state)
{
    (void)state;
    /* the spec's example: [[2, 1], [3, 10]], default axis 0 */
    Node n = node_new("ArgMax", "x", "y");
    Result r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(2, 1, 3, 10)));
    check(r.out[0], HG_DTYPE_INT64, 2, DIMS(1, 2), VALS(1, 1), 0);
    result_free(&r);
    node_free(&n);
    /* ties: first index, or last with select_last_index (opset 12) */
    n = node_new("ArgMax", "x", "y");
    attr_i(n.node, "axis", -1);
    attr_i(n.node, "keepdims", 0);
    r = RUN(&n, 12, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(2, 5, 5, 7, 7, 1)));
    check(r.out[0], HG_DTYPE_INT64, 1, DIMS(2), VALS(1, 0), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("ArgMax", "x", "y");
    attr_i(n.node, "axis", -1);
    attr_i(n.node, "keepdims", 0);
    attr_i(n.node, "select_last_index", 1);
    r = RUN(&n, 12, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(2, 5, 5, 7, 7, 1)));
    check(r.out[0], HG_DTYPE_INT64, 1, DIMS(2), VALS(2, 1), 0);
    result_free(&r);
    /* NaN wins, as in numpy */
    r = RUN(&n, 12, arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(1, NAN, 3)));
    check(r.out[0], HG_DTYPE_INT64, 0, NULL, VALS(1), 0);
    result_free(&r);
    node_free(&n);
    /* ArgMin on integers along a middle axis */
    n = node_new("ArgMin", "x", "y");
    attr_i(n.node, "axis", 1);
    r = RUN(&n, 11, arr(HG_DTYPE_INT32, 3, DIMS(2, 2, 2), VALS(5, -1, 4, 8, 0, 0, -7, 1)));
    check(r.out[0], HG_DTYPE_INT64, 3, DIMS(2, 1, 2), VALS(1, 0, 1, 0), 0);
    result_free(&r);
    /* uint64 above 2^63 is large, not negative */
    HgArray *u = hg_array_new(HG_DTYPE_UINT64, 3, DIMS(1, 2, 1), NULL);
    ((guint64 *)u->data)[0] = G_GUINT64_CONSTANT(0x8000000000000000);
    ((guint64 *)u->data)[1] = 1;
    r = RUN(&n, 11, u);
    check(r.out[0], HG_DTYPE_INT64, 3, DIMS(1, 1, 1), VALS(1), 0);
    result_free(&r);
    /* an empty axis has no argmin; an axis out of range is an error */
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "empty", arr(HG_DTYPE_FLOAT, 3, DIMS(2, 0, 2), NULL));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "out of range", arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    node_free(&n);

    /* shape rule: int64 output, the axis dropped without keepdims */
    n = node_new("ArgMax", "x", "y");
    attr_i(n.node, "axis", 1);
    attr_i(n.node, "keepdims", 0);
    HgValueShape *in[1] = {vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 7, 3))}, *out[1];
    in[0]->dims[0].sym = g_intern_string("N");
    GError *error = NULL;
    assert_true(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_INT64);
    assert_int_equal(out[0]->rank, 2);
    assert_string_equal(out[0]->dims[0].sym, "N");
    assert_int_equal(out[0]->dims[1].v, 3);
    vs_free(out[0]);
    /* folded when the input is known */
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1));
    in[0]->value = arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 9, 2));
    assert_true(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_non_null(out[0]->value);
    assert_int_equal(hg_array_get_i64(out[0]->value, 0), 1);
    vs_free(out[0]);
    node_free(&n);
}

/* ---------------------------------------------------------------- Softmax, LogSoftmax */

static const double z8[] = {0, 1, 2, 3, 4, 5, 6, 7};

static void
test_softmax_versions(void **state)
{
    (void)state;
    /* axis=1 on [2,2,2]: before opset 13 the trailing [2,2] block is one row of 4... */
    Node n = node_new("Softmax", "x", "y");
    attr_i(n.node, "axis", 1);
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2),
          VALS(0.032058603, 0.087144319, 0.236882818, 0.64391426, 0.032058603, 0.087144319, 0.236882818,
               0.64391426),
          1e-6);
    result_free(&r);
    /* ...from 13 the softmax runs along axis 1 alone */
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2),
          VALS(0.119202922, 0.119202922, 0.880797078, 0.880797078, 0.119202922, 0.119202922, 0.880797078,
               0.880797078),
          1e-6);
    result_free(&r);
    node_free(&n);
    /* defaults: axis 1 before 13 (same as above), -1 from 13 */
    n = node_new("Softmax", "x", "y");
    r = RUN(&n, 1, arr(HG_DTYPE_DOUBLE, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_DOUBLE, 3, DIMS(2, 2, 2),
          VALS(0.032058603, 0.087144319, 0.236882818, 0.64391426, 0.032058603, 0.087144319, 0.236882818,
               0.64391426),
          1e-6);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_DOUBLE, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_DOUBLE, 3, DIMS(2, 2, 2),
          VALS(0.268941421, 0.731058579, 0.268941421, 0.731058579, 0.268941421, 0.731058579, 0.268941421,
               0.731058579),
          1e-8);
    result_free(&r);
    node_free(&n);

    n = node_new("LogSoftmax", "x", "y");
    attr_i(n.node, "axis", 1);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2),
          VALS(-3.440189699, -2.440189699, -1.440189699, -0.440189699, -3.440189699, -2.440189699,
               -1.440189699, -0.440189699),
          1e-6);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2),
          VALS(-2.126928011, -2.126928011, -0.126928011, -0.126928011, -2.126928011, -2.126928011,
               -0.126928011, -0.126928011),
          1e-6);
    result_free(&r);
    /* the axis range is checked, and integers are not a softmax type */
    node_free(&n);
    n = node_new("LogSoftmax", "x", "y");
    attr_i(n.node, "axis", 3);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8));
    node_free(&n);
    n = node_new("Softmax", "x", "y");
    RUN_FAILS(&n, 13, HG_ERROR_UNSUPPORTED, "int32", arr(HG_DTYPE_INT32, 1, DIMS(2), VALS(1, 2)));
    node_free(&n);
}

static void
test_softmax_numerics(void **state)
{
    (void)state;
    /* max-subtracted in FP32: exp(60000) is inf in any float type, the softmax is not */
    Node n = node_new("Softmax", "x", "y");
    Result r = RUN(&n, 13, arr(HG_DTYPE_FLOAT16, 2, DIMS(1, 2), VALS(60000, 60000)));
    check(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(1, 2), VALS(0.5, 0.5), 0);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1000, 1001, 1002)));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0.09003057, 0.24472847, 0.66524096), 1e-6);
    result_free(&r);
    /* a long row (the vectorized path) still sums to one; an empty axis is fine */
    double row[100];
    for (int i = 0; i < 100; i++)
        row[i] = 0.0;
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 1, DIMS(100), row));
    for (int i = 0; i < 100; i++)
        row[i] = 0.01;
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(100), row, 1e-6);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(3, 0), NULL));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 0), NULL, 0);
    result_free(&r);
    node_free(&n);
    n = node_new("LogSoftmax", "x", "y");
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(60000, 0)));
    check(r.out[0], HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(0, -60000), 0);
    result_free(&r);
    node_free(&n);

    /* shape rule: same shape and type, symbolic dims kept; axis checked */
    n = node_new("Softmax", "x", "y");
    attr_i(n.node, "axis", 2);
    HgValueShape *in[1] = {vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 12, 64))}, *out[1];
    in[0]->dims[0].sym = g_intern_string("seq");
    GError *error = NULL;
    assert_true(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out[0]->rank, 3);
    assert_string_equal(out[0]->dims[0].sym, "seq");
    assert_int_equal(out[0]->dims[2].v, 64);
    vs_free(out[0]);
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(3, 4));
    assert_false(infer_vs(&n, 13, 1, in, n.node->n_outputs, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "out of range");
    g_clear_error(&error);
    vs_free(out[0]);
    node_free(&n);
}

/* ---------------------------------------------------------------- CumSum */

static void
test_cumsum(void **state)
{
    (void)state;
    Node n = node_new("CumSum", "x,axis", "y");
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 2, 3, 4, 5)), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 3, 6, 10, 15), 0);
    result_free(&r);
    /* axis 1 of a [2,3], given as an int32 one-element tensor */
    r = RUN(&n, 11, arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)),
            arr(HG_DTYPE_INT32, 1, DIMS(1), VALS(-1)));
    check(r.out[0], HG_DTYPE_DOUBLE, 2, DIMS(2, 3), VALS(1, 3, 6, 4, 9, 15), 0);
    result_free(&r);
    /* axis 0 runs down the columns */
    r = RUN(&n, 11, arr(HG_DTYPE_INT32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_INT32, 2, DIMS(2, 3), VALS(1, 2, 3, 5, 7, 9), 0);
    result_free(&r);
    /* integer sums wrap */
    r = RUN(&n, 11, arr(HG_DTYPE_INT32, 1, DIMS(2), VALS(2147483647, 1)), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_INT32, 1, DIMS(2), VALS(2147483647, -2147483648.0), 0);
    result_free(&r);
    /* bad axis values */
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "out of range", arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)),
              arr_i64(0, NULL, (gint64[]){1}));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "integer scalar", arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)),
              arr(HG_DTYPE_FLOAT, 0, NULL, VALS(0)));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "integer scalar", arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)),
              arr_i64(1, DIMS(2), (gint64[]){0, 0}));
    node_free(&n);

    /* exclusive, reverse, and both (the spec's examples) */
    const struct {
        gboolean excl, rev;
        double want[5];
    } cases[] = {
        {TRUE, FALSE, {0, 1, 3, 6, 10}},
        {FALSE, TRUE, {15, 14, 12, 9, 5}},
        {TRUE, TRUE, {14, 12, 9, 5, 0}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        n = node_new("CumSum", "x,axis", "y");
        attr_i(n.node, "exclusive", cases[i].excl);
        attr_i(n.node, "reverse", cases[i].rev);
        r = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 2, 3, 4, 5)), arr_i64(0, NULL, (gint64[]){0}));
        check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(5), cases[i].want, 0);
        result_free(&r);
        node_free(&n);
    }
}

static void
test_cumsum_fp16_sequential(void **state)
{
    (void)state;
    /* FP16 rounds every running sum: 2048 + 1 = 2049 rounds back to 2048 (ties to even), so a
     * CumSum of 4096 ones stops at 2048, as torch.cumsum and ONNX Runtime's CUDA kernel do */
    double ones[4096], want[4096];
    for (int i = 0; i < 4096; i++) {
        ones[i] = 1;
        want[i] = MIN(i + 1, 2048);
    }
    Node n = node_new("CumSum", "x,axis", "y");
    Result r = RUN(&n, 14, arr(HG_DTYPE_FLOAT16, 1, DIMS(4096), ones), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_FLOAT16, 1, DIMS(4096), want, 0);
    assert_true(hg_array_get_f64(r.out[0], 4095) == 2048);
    result_free(&r);
    /* FP32 accumulates in FP32: all the way to 4096 */
    for (int i = 0; i < 4096; i++)
        want[i] = i + 1;
    r = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 1, DIMS(4096), ones), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(4096), want, 0);
    result_free(&r);
    /* a running FP16 sum that passes 65504 is inf from there on, even if later terms bring it back */
    r = RUN(&n, 14, arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(40000, 40000, -40000)),
            arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(40000, INFINITY, INFINITY), 0);
    result_free(&r);
    /* BF16 (8 bits of mantissa) rounds its running sums too: 256 + 1 stays 256 */
    double b[258];
    for (int i = 0; i < 258; i++) {
        b[i] = 1;
        want[i] = MIN(i + 1, 256);
    }
    r = RUN(&n, 14, arr(HG_DTYPE_BFLOAT16, 1, DIMS(258), b), arr_i64(0, NULL, (gint64[]){0}));
    check(r.out[0], HG_DTYPE_BFLOAT16, 1, DIMS(258), want, 0);
    result_free(&r);
    node_free(&n);

    /* shape rule: same shape; a constant axis is checked */
    n = node_new("CumSum", "x,axis", "y");
    HgValueShape *in[2] = {vs_new(HG_DTYPE_FLOAT16, 2, DIMS(-1, 8)), vs_new(HG_DTYPE_INT64, 0, NULL)}, *out[1];
    in[1]->value = arr_i64(0, NULL, (gint64[]){2});
    GError *error = NULL;
    assert_false(infer_vs(&n, 14, 2, in, n.node->n_outputs, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "out of range");
    g_clear_error(&error);
    vs_free(out[0]);
    in[0] = vs_new(HG_DTYPE_INT32, 1, DIMS(3));
    in[0]->value = arr(HG_DTYPE_INT32, 1, DIMS(3), VALS(1, 2, 3));
    in[1] = vs_new(HG_DTYPE_INT64, 0, NULL);
    in[1]->value = arr_i64(0, NULL, (gint64[]){0});
    assert_true(infer_vs(&n, 14, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_INT32);
    assert_non_null(out[0]->value);
    check(out[0]->value, HG_DTYPE_INT32, 1, DIMS(3), VALS(1, 3, 6), 0);
    vs_free(out[0]);
    node_free(&n);
}

/* ---------------------------------------------------------------- TopK */

/* NonZero: [rank, count] indices in row-major order, NaN counted as nonzero, bool and integer
 * inputs too; a scalar gives [0, 0 or 1]; nothing nonzero gives [rank, 0]. */
static void
test_nonzero(void **state)
{
    (void)state;
    Node n = node_new("NonZero", "x", "y");
    Result r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(0, 2, 0, NAN, 0, -1)));
    check(r.out[0], HG_DTYPE_INT64, 2, DIMS(2, 3), VALS(0, 1, 1, 1, 0, 2), 0);
    result_free(&r);
    r = RUN(&n, 13, arr_i64(3, DIMS(2, 1, 2), (gint64[]){0, 0, 5, 0}));
    check(r.out[0], HG_DTYPE_INT64, 2, DIMS(3, 1), VALS(1, 0, 0), 0);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(0, 0, 0, 0)));
    check(r.out[0], HG_DTYPE_INT64, 2, DIMS(2, 0), NULL, 0);
    result_free(&r);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 0, NULL, VALS(3)));
    check(r.out[0], HG_DTYPE_INT64, 2, DIMS(0, 1), NULL, 0);
    result_free(&r);
    node_free(&n);
}

static void
test_topk(void **state)
{
    (void)state;
    /* opset 1-9: k is an attribute */
    Node n = node_new("TopK", "x", "v,i");
    attr_i(n.node, "k", 2);
    Result r = RUN(&n, 9, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 4), VALS(0, 1, 2, 3, 7, 6, 5, 4)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(3, 2, 7, 6), 0);
    check(r.out[1], HG_DTYPE_INT64, 2, DIMS(2, 2), VALS(3, 2, 0, 1), 0);
    result_free(&r);
    node_free(&n);
    /* from 10: K is an input; ties go to the lower index */
    n = node_new("TopK", "x,k", "v,i");
    r = RUN(&n, 10, arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 5, 3, 5, 1)), arr_i64(1, DIMS(1), (gint64[]){3}));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3), VALS(5, 5, 3), 0);
    check(r.out[1], HG_DTYPE_INT64, 1, DIMS(3), VALS(1, 3, 2), 0);
    result_free(&r);
    /* k = 0 gives empty outputs; k past the axis and a negative k are errors */
    r = RUN(&n, 10, arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 5, 3, 5, 1)), arr_i64(1, DIMS(1), (gint64[]){0}));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(0), NULL, 0);
    result_free(&r);
    RUN_FAILS(&n, 10, HG_ERROR_INVALID, "larger than the axis", arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 5, 3, 5, 1)),
              arr_i64(1, DIMS(1), (gint64[]){6}));
    RUN_FAILS(&n, 10, HG_ERROR_INVALID, "negative", arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 5, 3, 5, 1)),
              arr_i64(1, DIMS(1), (gint64[]){-1}));
    RUN_FAILS(&n, 10, HG_ERROR_INVALID, "K is missing", arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, 5, 3, 5, 1)), NULL);
    node_free(&n);
    /* opset 11: largest=0 along axis 0; FP16 values are copied, not recomputed */
    n = node_new("TopK", "x,k", "v,i");
    attr_i(n.node, "axis", 0);
    attr_i(n.node, "largest", 0);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT16, 2, DIMS(3, 2), VALS(0.1, 9, -2, 9, 0.3, -9)),
            arr_i64(1, DIMS(1), (gint64[]){2}));
    check(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 2), VALS(-2, -9, hg_round_half(0.1f), 9), 0);
    check(r.out[1], HG_DTYPE_INT64, 2, DIMS(2, 2), VALS(1, 2, 0, 0), 0);
    result_free(&r);
    /* integers, and NaN counts as the largest */
    r = RUN(&n, 11, arr(HG_DTYPE_INT8, 1, DIMS(4), VALS(3, -128, 127, 0)), arr_i64(1, DIMS(1), (gint64[]){3}));
    check(r.out[0], HG_DTYPE_INT8, 1, DIMS(3), VALS(-128, 0, 3), 0);
    result_free(&r);
    node_free(&n);
    n = node_new("TopK", "x,k", "v,i");
    r = RUN(&n, 11, arr(HG_DTYPE_DOUBLE, 1, DIMS(3), VALS(1, NAN, 2)), arr_i64(1, DIMS(1), (gint64[]){2}));
    check(r.out[0], HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(NAN, 2), 0);
    check(r.out[1], HG_DTYPE_INT64, 1, DIMS(2), VALS(1, 2), 0);
    result_free(&r);
    node_free(&n);

    /* shape rule: the axis dim becomes k when k is known, unknown otherwise */
    n = node_new("TopK", "x,k", "v,i");
    HgValueShape *in[2] = {vs_new(HG_DTYPE_FLOAT16, 2, DIMS(-1, 50)), vs_new(HG_DTYPE_INT64, 1, DIMS(1))}, *out[2];
    in[0]->dims[0].sym = g_intern_string("B");
    GError *error = NULL;
    assert_true(infer_vs(&n, 11, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out[1]->dtype, HG_DTYPE_INT64);
    assert_int_equal(out[1]->rank, 2);
    assert_string_equal(out[1]->dims[0].sym, "B");
    assert_true(out[1]->dims[1].v < 0);
    vs_free(out[0]);
    vs_free(out[1]);
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 50));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    in[1]->value = arr_i64(1, DIMS(1), (gint64[]){5});
    assert_true(infer_vs(&n, 11, 2, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dims[1].v, 5);
    assert_int_equal(out[1]->dims[0].v, 4);
    vs_free(out[0]);
    vs_free(out[1]);
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(4, 3));
    in[1] = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    in[1]->value = arr_i64(1, DIMS(1), (gint64[]){5});
    assert_false(infer_vs(&n, 11, 2, in, n.node->n_outputs, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "larger than the axis");
    g_clear_error(&error);
    vs_free(out[0]);
    vs_free(out[1]);
    node_free(&n);
}

/* ---------------------------------------------------------------- normalizations */

static const double bn_x[] = {-1, 0, 1, 2, 3, 4};

static void
test_batchnorm(void **state)
{
    (void)state;
    /* the spec's example at opset 15, scale and B FP32 while X is FP16 (T and T1 differ) */
    Node n = node_new("BatchNormalization", "x,s,b,m,v", "y");
    Result r = RUN(&n, 15, arr(HG_DTYPE_FLOAT16, 4, DIMS(1, 2, 1, 3), bn_x), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 1.5)),
                   arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 3)),
                   arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 1.5)));
    check(r.out[0], HG_DTYPE_FLOAT16, 4, DIMS(1, 2, 1, 3), VALS(-0.999995, 0, 0.999995, -0.224740789, 1, 2.224740789),
          1e-3);
    result_free(&r);
    /* epsilon is read; a parameter of the wrong length is an error */
    node_free(&n);
    n = node_new("BatchNormalization", "x,s,b,m,v", "y");
    attr_f(n.node, "epsilon", 3.0f);
    r = RUN(&n, 9, arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 1), VALS(1, 3)), arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(1)),
            arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(0)), arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(1)),
            arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(1)));
    check(r.out[0], HG_DTYPE_DOUBLE, 2, DIMS(2, 1), VALS(0, 1), 1e-12);
    result_free(&r);
    RUN_FAILS(&n, 9, HG_ERROR_INVALID, "scale has 1 elements, expected 2",
              arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 3, 1, 3)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)));
    node_free(&n);

    /* opset 7 spatial=0: one parameter per element of a sample (C x D) */
    n = node_new("BatchNormalization", "x,s,b,m,v", "y");
    attr_i(n.node, "spatial", 0);
    r = RUN(&n, 7, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8), arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 2, 3, 4)),
            arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(0, 1, 0, 1)), arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 1, 2, 2)),
            arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 4, 1, 4)));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2),
          VALS(-0.999995, 1, 0, 2.9999975, 2.999985, 4.999995, 11.99994, 10.9999875), 1e-6);
    result_free(&r);
    /* spatial is gone from opset 9: the same node then wants per-channel parameters */
    RUN_FAILS(&n, 9, HG_ERROR_INVALID, "expected 2", arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), z8),
              arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 2, 3, 4)),
              arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(0, 1, 0, 1)),
              arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 1, 2, 2)),
              arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 4, 1, 4)));
    node_free(&n);

    /* training: training_mode=1 from 14. Channel 0 is {1, 3} over the batch (mean 2, population
     * variance 1), channel 1 is {4, 4} (variance 0): y = (x - mean) / sqrt(var + eps) * s + b, and the
     * running statistics m * 0.5 + current * 0.5 (momentum 0.5) */
    n = node_new("BatchNormalization", "x,s,b,m,v", "y,rm,rv");
    attr_i(n.node, "training_mode", 1);
    attr_f(n.node, "momentum", 0.5f);
    r = RUN(&n, 15, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(1, 4, 3, 4)), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(2, 1)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 6)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    double z = 1 / sqrt(1.00001);
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(-2 * z, 1, 2 * z, 1), 1e-6);
    check(r.out[1], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 5), 1e-6);
    check(r.out[2], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 1), 1e-6);
    result_free(&r);
    node_free(&n);
    /* the saved statistics of the older opsets are refused */
    n = node_new("BatchNormalization", "x,s,b,m,v", "y,m1,v1,sm,sv");
    RUN_FAILS(&n, 9, HG_ERROR_UNSUPPORTED, "saved statistics", arr(HG_DTYPE_FLOAT, 2, DIMS(1, 1), VALS(1)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)));
    node_free(&n);
    /* opset 6 with is_test=1: inference, and the running statistics pass through */
    n = node_new("BatchNormalization", "x,s,b,m,v", "y,m1,v1");
    attr_i(n.node, "is_test", 1);
    r = RUN(&n, 6, arr(HG_DTYPE_FLOAT, 2, DIMS(1, 1), VALS(3)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(4)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 1), VALS(2 / sqrt(4.00001)), 1e-6);
    check(r.out[1], HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1), 0);
    check(r.out[2], HG_DTYPE_FLOAT, 1, DIMS(1), VALS(4), 0);
    result_free(&r);
    node_free(&n);
}

static void
test_instancenorm(void **state)
{
    (void)state;
    /* the spec's example */
    Node n = node_new("InstanceNormalization", "x,s,b", "y");
    Result r = RUN(&n, 6, arr(HG_DTYPE_FLOAT, 4, DIMS(1, 2, 1, 3), bn_x), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 1.5)),
                   arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 2, 1, 3),
          VALS(-1.224735618, 0, 1.224735618, -0.837103426, 1, 2.837103426), 1e-6);
    result_free(&r);
    /* FP16 statistics in FP32: the variance 1e6 would be inf in FP16; two batches index the channels */
    double x16[8] = {1000, -1000, 1000, -1000, 5, 5, 5, 5};
    r = RUN(&n, 6, arr(HG_DTYPE_FLOAT16, 3, DIMS(2, 1, 4), x16), arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(2)),
            arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(0.5)));
    check(r.out[0], HG_DTYPE_FLOAT16, 3, DIMS(2, 1, 4), VALS(2.5, -1.5, 2.5, -1.5, 0.5, 0.5, 0.5, 0.5), 1e-3);
    result_free(&r);
    /* a large mean does not cancel the variance: two passes */
    r = RUN(&n, 6, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(10000.5, 10001.5)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(-0.99998, 0.99998), 1e-5);
    result_free(&r);
    /* bad inputs */
    RUN_FAILS(&n, 6, HG_ERROR_INVALID, "rank 2 or more", arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)));
    RUN_FAILS(&n, 6, HG_ERROR_INVALID, "expected 2", arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 2), bn_x),
              arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1)), arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(0)));
    node_free(&n);
}

static const double ln_x[] = {1, 2, 3, 4, 6, 8};

static void
test_layernorm(void **state)
{
    (void)state;
    /* default axis -1, with Mean and InvStdDev */
    Node n = node_new("LayerNormalization", "x,s,b", "y,mean,inv");
    Result r = RUN(&n, 17, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)),
                   arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0.5, 0, -1)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(-0.7247356, 0, 2.6742067, -0.72474265, 0, 2.674228), 1e-6);
    check(r.out[1], HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(2, 6), 1e-7);
    check(r.out[2], HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(1.2247356, 0.6123713), 1e-6);
    result_free(&r);
    /* FP16 X: Y is FP16, the statistics FP32 (stash_type 1) */
    r = RUN(&n, 17, arr(HG_DTYPE_FLOAT16, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(1, 2, 3)),
            arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(0.5, 0, -1)));
    check(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 3), VALS(-0.7247356, 0, 2.6742067, -0.72474265, 0, 2.674228), 1e-3);
    check(r.out[1], HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(2, 6), 1e-7);
    check(r.out[2], HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(1.2247356, 0.6123713), 1e-6);
    result_free(&r);
    /* stash_type DOUBLE: the statistics are computed and stored in FP64 (var of 1, 2, 3 is 2/3 and of
     * 4, 6, 8 is 8/3, so InvStdDev is 1 / sqrt(var + 1e-5f) to double precision) */
    attr_i(n.node, "stash_type", HG_DTYPE_DOUBLE);
    r = RUN(&n, 17, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0.5, 0, -1)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(-0.7247356, 0, 2.6742067, -0.72474265, 0, 2.674228), 1e-6);
    check(r.out[1], HG_DTYPE_DOUBLE, 2, DIMS(2, 1), VALS(2, 6), 0);
    check(r.out[2], HG_DTYPE_DOUBLE, 2, DIMS(2, 1),
          VALS(1 / sqrt(2.0 / 3 + (double)1e-5f), 1 / sqrt(8.0 / 3 + (double)1e-5f)), 1e-15);
    result_free(&r);
    node_free(&n);
    /* below opset 17 (ONNX Runtime's contrib op) Y has Scale's type, narrower or wider than X's */
    n = node_new("LayerNormalization", "x,s,b", "y");
    r = RUN(&n, 16, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(1, 2, 3)),
            arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(0.5, 0, -1)));
    check(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 3), VALS(-0.7247356, 0, 2.6742067, -0.72474265, 0, 2.674228), 1e-3);
    result_free(&r);
    r = RUN(&n, 16, arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0.5, 0, -1)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(-0.7247356, 0, 2.6742067, -0.72474265, 0, 2.674228), 1e-6);
    result_free(&r);
    node_free(&n);
    /* axis 0 normalizes everything; B omitted; Scale [3] broadcasts over the [2,3] block */
    n = node_new("LayerNormalization", "x,s", "y");
    attr_i(n.node, "axis", 0);
    r = RUN(&n, 17, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x), arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(-1.260251, -1.6803347, -1.260251, 0, 1.6803347, 5.041004), 1e-6);
    result_free(&r);
    /* a Scale that does not broadcast, and a bad axis */
    RUN_FAILS(&n, 17, HG_ERROR_INVALID, "Scale does not broadcast", arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x),
              arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    node_free(&n);
    n = node_new("LayerNormalization", "x,s", "y");
    attr_i(n.node, "axis", -3);
    RUN_FAILS(&n, 17, HG_ERROR_INVALID, "out of range", arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), ln_x),
              arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)));
    node_free(&n);
    /* epsilon is read: a constant row has variance 0, so y = B exactly and inv = 1/sqrt(eps) */
    n = node_new("LayerNormalization", "x,s,b", "y,,inv");
    attr_f(n.node, "epsilon", 0.25f);
    r = RUN(&n, 17, arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(7, 7)), arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(1, 1)),
            arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(3, 4)));
    check(r.out[0], HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(3, 4), 0);
    assert_null(r.out[1]);
    check(r.out[2], HG_DTYPE_FLOAT, 1, DIMS(1), VALS(2), 0);
    result_free(&r);
    node_free(&n);

    /* shape rule: Mean and InvStdDev keep the leading dims, 1s after; type from stash_type */
    n = node_new("LayerNormalization", "x,s,b", "y,mean,inv");
    attr_i(n.node, "axis", -2);
    HgValueShape *in[3] = {vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 128, 768)), vs_new(HG_DTYPE_FLOAT16, 1, DIMS(768)),
                           vs_new(HG_DTYPE_FLOAT16, 1, DIMS(768))},
                 *out[3];
    in[0]->dims[0].sym = g_intern_string("batch");
    GError *error = NULL;
    assert_true(infer_vs(&n, 17, 3, in, n.node->n_outputs, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out[0]->dims[2].v, 768);
    assert_int_equal(out[1]->dtype, HG_DTYPE_FLOAT);
    assert_int_equal(out[2]->rank, 3);
    assert_string_equal(out[2]->dims[0].sym, "batch");
    assert_int_equal(out[2]->dims[1].v, 1);
    assert_int_equal(out[2]->dims[2].v, 1);
    for (int k = 0; k < 3; k++)
        vs_free(out[k]);
    node_free(&n);
}

/* RMSNormalization against x / sqrt(mean(x^2) + eps) * scale evaluated in double. */
static void
test_rmsnorm(void **state)
{
    (void)state;
    static const double x[] = {3, 4, 1, -1};
    Node n = node_new("RMSNormalization", "x,s", "y");
    Result r = RUN(&n, 23, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), x), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2),
          VALS(0.8485277980128058, 2.2627407947008153, 0.9999950000374997, -1.9999900000749995), 1e-6);
    result_free(&r);
    /* Y takes scale's type: FP16 X with FP32 scale gives FP32; FP32 X with FP16 scale gives FP16 */
    r = RUN(&n, 23, arr(HG_DTYPE_FLOAT16, 2, DIMS(2, 2), x), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2),
          VALS(0.8485277980128058, 2.2627407947008153, 0.9999950000374997, -1.9999900000749995), 1e-6);
    result_free(&r);
    r = RUN(&n, 23, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), x), arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(1, 2)));
    check(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 2), VALS(0.84863281, 2.2636719, 1, -2), 0);
    result_free(&r);
    node_free(&n);
    /* axis 0: one mean over all four, (9 + 16 + 1 + 1) / 4 = 6.75; scale [2]
     * broadcasts over the [2, 2] block, and a full [2, 2] scale pairs element by element */
    n = node_new("RMSNormalization", "x,s", "y");
    attr_i(n.node, "axis", 0);
    r = RUN(&n, 23, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), x), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2),
          VALS(1.1546996830464697, 3.079199154790586, 0.38489989434882327, -0.7697997886976465), 1e-6);
    result_free(&r);
    r = RUN(&n, 23, arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 2), x), arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 2), VALS(1, 2, 3, 4)));
    check(r.out[0], HG_DTYPE_DOUBLE, 2, DIMS(2, 2),
          VALS(1.1546996830464697, 3.079199154790586, 1.1546996830464697, -1.539599577395293), 1e-14);
    result_free(&r);
    RUN_FAILS(&n, 23, HG_ERROR_INVALID, "scale does not broadcast", arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), x),
              arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)));
    node_free(&n);
    /* epsilon is read: a zero row gives 0 (not NaN); stash_type DOUBLE computes in FP64 */
    n = node_new("RMSNormalization", "x,s", "y");
    attr_f(n.node, "epsilon", 0.25f);
    attr_i(n.node, "stash_type", HG_DTYPE_DOUBLE);
    r = RUN(&n, 23, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(0, 0, 3, 4)), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    /* row 2: 1 / sqrt(12.5 + 0.25) = 0.28005602 */
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(0, 0, 3 / sqrt(12.75), 8 / sqrt(12.75)), 1e-7);
    result_free(&r);
    node_free(&n);
    n = node_new("RMSNormalization", "x,s", "y");
    attr_i(n.node, "stash_type", HG_DTYPE_INT32);
    RUN_FAILS(&n, 23, HG_ERROR_INVALID, "stash_type", arr(HG_DTYPE_FLOAT, 1, DIMS(2), x),
              arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)));
    node_free(&n);

    /* shape rule: X's shape, scale's type; a bad axis is an error */
    n = node_new("RMSNormalization", "x,s", "y");
    HgValueShape *in[2] = {vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 7, 64)), vs_new(HG_DTYPE_FLOAT, 1, DIMS(64))}, *out[1];
    GError *error = NULL;
    assert_true(infer_vs(&n, 23, 2, in, 1, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT);
    assert_int_equal(out[0]->rank, 3);
    assert_int_equal(out[0]->dims[2].v, 64);
    vs_free(out[0]);
    attr_i(n.node, "axis", 3);
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 7, 64));
    in[1] = vs_new(HG_DTYPE_FLOAT, 1, DIMS(64));
    assert_false(infer_vs(&n, 23, 2, in, 1, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "out of range");
    g_clear_error(&error);
    vs_free(out[0]);
    node_free(&n);
}

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss on scores [[1, 2, 3], [1, 1, 1]] and
 * targets [2, 0]: the log-softmax rows are -log(1 + e^-1 + e^-2) - [2, 1, 0] (that log is
 * 0.40760596) and log(1/3) three times, so the losses are 0.40760596 and log 3 = 1.0986123. */
static void
test_losses(void **state)
{
    (void)state;
    static const double sx[] = {1, 2, 3, 1, 1, 1};
    const double a = 0.4076059644443806, b = 1.0986122886681098;
    Node n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y,lp");
    attr_s(n.node, "reduction", "none");
    Result r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)));
    check(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(a, b), 1e-6);
    check(r.out[1], HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(-a - 2, -a - 1, -a, -b, -b, -b), 1e-6);
    result_free(&r);
    node_free(&n);
    /* the default reduction is the mean; sum adds */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y");
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS((a + b) / 2), 1e-6);
    result_free(&r);
    node_free(&n);
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y");
    attr_s(n.node, "reduction", "sum");
    r = RUN(&n, 13, arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)));
    check(r.out[0], HG_DTYPE_DOUBLE, 0, NULL, VALS(a + b), 1e-14);
    result_free(&r);
    node_free(&n);
    /* weights [1, 2, 3]: 3a and 1b, the mean divided by the weights taken, 3 + 1 */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t,w", "y");
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3)));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS((3 * a + b) / 4), 1e-6);
    result_free(&r);
    node_free(&n);
    /* ignore_index 0: the second position is left out of the sum and the count; a target that is not
     * a class is an error */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y");
    attr_i(n.node, "ignore_index", 0);
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)));
    check(r.out[0], HG_DTYPE_FLOAT, 0, NULL, VALS(a), 1e-6);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "target 3", arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), sx),
              arr_i64(1, DIMS(2), INTS(3, 0)));
    node_free(&n);
    /* (N, C, D): the classes along axis 1, D = 2 positions per sample */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y");
    attr_s(n.node, "reduction", "none");
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 2), VALS(1, 1, 2, 1, 3, 1)), arr_i64(2, DIMS(1, 2), INTS(2, 1)));
    check(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 2), VALS(a, b), 1e-6);
    result_free(&r);
    node_free(&n);
    /* NegativeLogLikelihoodLoss reads the input as log-probabilities: -x[n, target] */
    n = node_new("NegativeLogLikelihoodLoss", "x,t", "y");
    attr_s(n.node, "reduction", "none");
    r = RUN(&n, 13, arr(HG_DTYPE_FLOAT16, 2, DIMS(2, 3), sx), arr_i64(1, DIMS(2), INTS(2, 0)));
    check(r.out[0], HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(-3, -1), 0);
    result_free(&r);
    node_free(&n);

    /* shapes: none keeps target's, sum and mean are scalars; log_prob has the input's */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y,lp");
    attr_s(n.node, "reduction", "none");
    HgValueShape *in[2] = {vs_new(HG_DTYPE_FLOAT16, 3, DIMS(-1, 10, 7)), vs_new(HG_DTYPE_INT64, 2, DIMS(4, 7))}, *out[2];
    GError *error = NULL;
    assert_true(infer_vs(&n, 13, 2, in, 2, out, &error));
    assert_int_equal(out[0]->dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out[0]->rank, 2);
    assert_int_equal(out[0]->dims[0].v, 4);
    assert_int_equal(out[0]->dims[1].v, 7);
    assert_int_equal(out[1]->rank, 3);
    assert_int_equal(out[1]->dims[1].v, 10);
    for (int i = 0; i < 2; i++)
        vs_free(out[i]);
    node_free(&n);
    n = node_new("NegativeLogLikelihoodLoss", "x,t", "y");
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(4, 10, 7));
    in[1] = vs_new(HG_DTYPE_INT64, 2, DIMS(4, 7));
    assert_true(infer_vs(&n, 13, 2, in, 1, out, &error));
    assert_int_equal(out[0]->rank, 0);
    vs_free(out[0]);
    attr_s(n.node, "reduction", "max");
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(4, 10, 7));
    in[1] = vs_new(HG_DTYPE_INT64, 2, DIMS(4, 7));
    assert_false(infer_vs(&n, 13, 2, in, 1, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "reduction 'max'");
    g_clear_error(&error);
    vs_free(out[0]);
    node_free(&n);
}

/* ---------------------------------------------------------------- interval rules */

/* Call node's interval rule at opset. Input i is present when sh[i] is non-NULL, with range in[i],
 * that shape, and constant value vals[i] (vals may be NULL). Every output has dtype odt and unknown
 * dims. out[0..n_out) receive the ranges (without the driver's widening). */
static void
range_rule(const HgNode *node, gint64 opset, guint n_in, const HgRange *in, HgValueShape *const *sh,
           const HgArray *const *vals, int odt, guint n_out, HgRange *out)
{
    const HgOpDef *d = hg_op_for_node(node);
    assert_non_null(d);
    const HgRange *ip[MAX_IO] = {0};
    const HgValueShape *sp[MAX_IO] = {0}, *op[MAX_IO];
    const HgArray *vp[MAX_IO] = {0};
    HgRange *outp[MAX_IO];
    HgValueShape os;
    vs_set(&os, odt, -1, NULL, NULL);
    for (guint i = 0; i < n_in; i++) {
        ip[i] = sh[i] ? &in[i] : NULL;
        sp[i] = sh[i];
        vp[i] = vals ? vals[i] : NULL;
    }
    for (guint k = 0; k < n_out; k++) {
        out[k] = hg_range_any();
        outp[k] = &out[k];
        op[k] = &os;
    }
    HgRangeCtx ctx = {node, opset, n_in, ip, sp, vp, n_out, op, outp};
    d->range(&ctx);
}

static void
assert_range_at(const HgRange *r, double lo, double hi, double tol, const char *file, int line)
{
    gboolean ok = (lo == r->lo || fabs(r->lo - lo) <= tol * MAX(1, fabs(lo))) &&
                  (hi == r->hi || fabs(r->hi - hi) <= tol * MAX(1, fabs(hi)));
    if (!ok)
        fail_msg("%s:%d: range [%.9g, %.9g], expected [%.9g, %.9g]", file, line, r->lo, r->hi, lo, hi);
}

#define assert_range(r, lo, hi, tol) assert_range_at((r), (lo), (hi), (tol), __FILE__, __LINE__)

/* Every value of a lies in r (NaN only when r allows it; nonzero magnitudes at least tiny). */
static void
assert_inside_at(const HgArray *a, const HgRange *r, const char *file, int line)
{
    for (gint64 i = 0; a && i < a->numel; i++) {
        double v = hg_array_get_f64(a, i);
        gboolean ok = isnan(v) ? r->nan : v >= r->lo && v <= r->hi && (v == 0 || fabs(v) >= r->tiny);
        if (!ok)
            fail_msg("%s:%d: value %.9g at %" G_GINT64_FORMAT " outside [%.9g, %.9g] (tiny %g)", file, line, v, i,
                     r->lo, r->hi, r->tiny);
    }
}

#define assert_inside(a, r) assert_inside_at((a), (r), __FILE__, __LINE__)

static void
test_range_reduce(void **state)
{
    (void)state;
    HgRange out[2];
    HgValueShape *x34 = vs_new(HG_DTYPE_FLOAT, 2, DIMS(3, 4)), *xq = vs_new(HG_DTYPE_FLOAT, 2, DIMS(3, -1));
    HgValueShape *i8 = vs_new(HG_DTYPE_INT8, 2, DIMS(3, 4));
    HgRange x = hg_range_exact(-1, 2);
    /* ReduceSum over 4 elements: [4 lo, 4 hi]; the straddling input gives no tiny */
    Node n = node_new("ReduceSum", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    range_rule(n.node, 11, 1, &x, &x34, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -4, 8, 0);
    assert_false(out[0].nan);
    /* an unknown count: a nonnegative input sums to [0, inf) with its tiny */
    HgRange pos = {0.5, 2, 0.5, FALSE};
    range_rule(n.node, 11, 1, &pos, &xq, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0, INFINITY, 0);
    assert_true(out[0].tiny == 0.5);
    /* a straddling input with an unknown count: unbounded */
    range_rule(n.node, 11, 1, &x, &xq, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -INFINITY, INFINITY, 0);
    /* int8 sums that may wrap are unbounded; FP16 overflows to inf */
    HgRange big = hg_range_exact(-100, 100);
    range_rule(n.node, 11, 1, &big, &i8, NULL, HG_DTYPE_INT8, 1, out);
    assert_range(&out[0], -INFINITY, INFINITY, 0);
    HgRange huge = hg_range_exact(0, 30000);
    HgValueShape *h34 = vs_new(HG_DTYPE_FLOAT16, 2, DIMS(3, 4));
    range_rule(n.node, 11, 1, &huge, &h34, NULL, HG_DTYPE_FLOAT16, 1, out);
    vs_free(h34);
    assert_true(out[0].hi == INFINITY && out[0].lo == 0);
    node_free(&n);
    /* opset 13: the axes come from the constant second input; noop with no axes */
    n = node_new("ReduceSum", "x,axes", "y");
    g_autoptr(HgArray) ax = arr_i64(1, DIMS(1), INTS(0));
    HgValueShape *axs = vs_new(HG_DTYPE_INT64, 1, DIMS(1));
    HgRange xr[2] = {x, hg_range_exact(0, 0)};
    HgValueShape *sh[2] = {x34, axs};
    const HgArray *vals[2] = {NULL, ax};
    range_rule(n.node, 13, 2, xr, sh, vals, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -3, 6, 0);
    node_free(&n);

    /* Mean, Max, Min: the input range; Max keeps tiny; L1, L2, SumSquare, LogSumExp, Prod */
    struct {
        const char *op;
        double lo, hi;
    } cases[] = {
        {"ReduceMean", -1, 2},          {"ReduceMax", -1, 2},         {"ReduceMin", -1, 2},
        {"ReduceL1", 0, 8},             {"ReduceL2", 0, 4},           {"ReduceSumSquare", 0, 16},
        {"ReduceProd", -16, 16},
    };
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        n = node_new(cases[c].op, "x", "y");
        attr_ints(n.node, "axes", 1, DIMS(1));
        range_rule(n.node, 11, 1, &x, &x34, NULL, HG_DTYPE_FLOAT, 1, out);
        assert_range(&out[0], cases[c].lo, cases[c].hi, 1e-5);
        node_free(&n);
    }
    /* a positive input: L2 of 4 values in [0.5, 2] is in [1, 4]; LogSumExp in [0.5 + log 4, 2 + log 4] */
    n = node_new("ReduceL2", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    range_rule(n.node, 11, 1, &pos, &x34, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 1, 4, 0);
    node_free(&n);
    n = node_new("ReduceLogSumExp", "x", "y");
    attr_ints(n.node, "axes", 1, DIMS(1));
    range_rule(n.node, 11, 1, &pos, &x34, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0.5 + log(4), 2 + log(4), 1e-5);
    node_free(&n);

    /* ArgMax along a 4-long axis: [0, 3], integers (tiny 1); TopK's indices likewise */
    n = node_new("ArgMax", "x", "y");
    attr_i(n.node, "axis", 1);
    range_rule(n.node, 13, 1, &x, &x34, NULL, HG_DTYPE_INT64, 1, out);
    assert_range(&out[0], 0, 3, 0);
    assert_true(out[0].tiny == 1 && !out[0].nan);
    node_free(&n);
    n = node_new("TopK", "x,k", "v,i");
    g_autoptr(HgArray) k = arr_i64(1, DIMS(1), INTS(2));
    HgRange kr[2] = {pos, hg_range_exact(2, 2)};
    HgValueShape *tsh[2] = {x34, axs};
    const HgArray *tv[2] = {NULL, k};
    range_rule(n.node, 11, 2, kr, tsh, tv, HG_DTYPE_FLOAT, 2, out);
    assert_range(&out[0], 0.5, 2, 0);
    assert_range(&out[1], 0, 3, 0);
    node_free(&n);
    /* CumSum along 4: inclusive [4 lo, 4 hi] for a straddling input, exclusive (-1 .. 3 terms) */
    n = node_new("CumSum", "x,axis", "y");
    g_autoptr(HgArray) ca = arr_i64(0, NULL, INTS(1));
    HgValueShape *cas = vs_new(HG_DTYPE_INT64, 0, NULL);
    HgValueShape *csh[2] = {x34, cas};
    const HgArray *cv[2] = {NULL, ca};
    range_rule(n.node, 14, 2, xr, csh, cv, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -4, 8, 1e-5);
    attr_i(n.node, "exclusive", 1);
    range_rule(n.node, 14, 2, kr, csh, cv, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0, 6, 1e-5);
    node_free(&n);
    vs_free(x34);
    vs_free(xq);
    vs_free(i8);
    vs_free(axs);
    vs_free(cas);
}

static void
test_range_softmax_norms(void **state)
{
    (void)state;
    HgRange out[3];
    HgValueShape *x23 = vs_new(HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    /* rows of 3 in [0, ln 3]: p in [1/(1 + 2*3), 1/(1 + 2/3)] = [1/7, 0.6] */
    HgRange x = hg_range_exact(0, log(3));
    Node n = node_new("Softmax", "x", "y");
    range_rule(n.node, 13, 1, &x, &x23, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 1.0 / 7, 0.6, 1e-5);
    assert_true(out[0].tiny > 0.14 && !out[0].nan);
    /* unbounded input: [0, 1] and NaN possible (inf - inf) */
    HgRange any = hg_range_any();
    range_rule(n.node, 13, 1, &any, &x23, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0, 1, 0);
    assert_true(out[0].nan);
    node_free(&n);
    n = node_new("LogSoftmax", "x", "y");
    range_rule(n.node, 13, 1, &x, &x23, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -log(7), -log(5.0 / 3), 1e-5);
    node_free(&n);

    /* LayerNormalization over 4 values: |z| <= sqrt(4) = 2, then times Scale plus B per element */
    n = node_new("LayerNormalization", "x,s,b", "y,mean,inv");
    attr_f(n.node, "epsilon", 0.25f);
    HgValueShape *x24 = vs_new(HG_DTYPE_FLOAT, 2, DIMS(2, 4)), *p4 = vs_new(HG_DTYPE_FLOAT, 1, DIMS(4));
    g_autoptr(HgArray) s = arr(HG_DTYPE_FLOAT, 1, DIMS(4), VALS(1, 2, -1, 0.5));
    g_autoptr(HgArray) b = arr(HG_DTYPE_FLOAT, 1, DIMS(4), VALS(0, 10, 0, -1));
    HgRange lr[3] = {hg_range_exact(-100, 100), hg_range_of_array(s), hg_range_of_array(b)};
    HgValueShape *lsh[3] = {x24, p4, p4};
    const HgArray *lv[3] = {NULL, s, b};
    range_rule(n.node, 17, 3, lr, lsh, lv, HG_DTYPE_FLOAT, 3, out);
    assert_range(&out[0], -2, 14, 1e-4); /* element 1: 10 +- 2*2 */
    assert_range(&out[1], -100, 100, 0);
    assert_range(&out[2], 1 / sqrt(100.0 * 100 + 0.25), 2, 1e-4);
    /* a narrow input: |z| <= w / sqrt(eps) = 0.2 / 0.5 (element 3: 0.5 z - 1 down to -1.2) */
    lr[0] = hg_range_exact(1, 1.2);
    range_rule(n.node, 17, 3, lr, lsh, lv, HG_DTYPE_FLOAT, 3, out);
    assert_range(&out[0], -1.2, 10.8, 1e-4);
    /* and the kernel's outputs lie inside */
    HgArray *xv = arr(HG_DTYPE_FLOAT, 2, DIMS(2, 4), VALS(1, 1.2, 1.1, 1.05, 1.2, 1.2, 1.2, 1));
    Result r = RUN(&n, 17, xv, hg_array_ref(s), hg_array_ref(b));
    for (int kk = 0; kk < 3; kk++)
        assert_inside(r.out[kk], &out[kk]);
    result_free(&r);
    node_free(&n);

    /* SoftmaxCrossEntropyLoss over 3 classes of scores in [0, ln 3]: log-probabilities in
     * [-ln 7, -ln(5/3)] (as LogSoftmax), each loss in [ln(5/3), ln 7]; "none" with weights [1, 2]
     * multiplies, "sum" over 4 positions times 4, ignore_index adds 0, "mean" stays inside and
     * may be 0 / 0 when positions can be ignored */
    n = node_new("SoftmaxCrossEntropyLoss", "x,t", "y,lp");
    HgValueShape *sx = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 2)), *st = vs_new(HG_DTYPE_INT64, 2, DIMS(2, 2));
    HgValueShape *sw = vs_new(HG_DTYPE_FLOAT, 1, DIMS(3));
    HgRange srr[3] = {x, hg_range_exact(0, 2), hg_range_exact(1, 2)};
    HgValueShape *ssh[3] = {sx, st, sw};
    range_rule(n.node, 13, 2, srr, ssh, NULL, HG_DTYPE_FLOAT, 2, out);
    assert_range(&out[0], log(5.0 / 3), log(7), 1e-5);
    assert_false(out[0].nan);
    assert_range(&out[1], -log(7), -log(5.0 / 3), 1e-5);
    attr_s(n.node, "reduction", "sum");
    range_rule(n.node, 13, 2, srr, ssh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 4 * log(5.0 / 3), 4 * log(7), 1e-5);
    node_free(&n);
    n = node_new("SoftmaxCrossEntropyLoss", "x,t,w", "y");
    attr_s(n.node, "reduction", "none");
    attr_i(n.node, "ignore_index", -1);
    range_rule(n.node, 13, 3, srr, ssh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0, 2 * log(7), 1e-5);
    node_free(&n);
    n = node_new("SoftmaxCrossEntropyLoss", "x,t,w", "y");
    attr_i(n.node, "ignore_index", -1);
    range_rule(n.node, 13, 3, srr, ssh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], log(5.0 / 3), log(7), 1e-5);
    assert_true(out[0].nan);
    /* and the kernel's values lie inside */
    Result sr = RUN(&n, 13, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 2), VALS(0, 1, 1.0986, 0.5, 0.2, 0.3, 1, 1, 0, 0, 0.7, 0.1)),
                    arr_i64(2, DIMS(2, 2), INTS(0, 2, -1, 1)), arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 1.5)));
    assert_inside(sr.out[0], &out[0]);
    result_free(&sr);
    node_free(&n);
    /* NegativeLogLikelihoodLoss: -x */
    n = node_new("NegativeLogLikelihoodLoss", "x,t", "y");
    attr_s(n.node, "reduction", "none");
    HgRange nr[2] = {hg_range_exact(-4, 0.5), hg_range_exact(0, 2)};
    range_rule(n.node, 13, 2, nr, ssh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -0.5, 4, 1e-6);
    node_free(&n);
    vs_free(sx);
    vs_free(st);
    vs_free(sw);

    /* RMSNormalization over 4 values: |z| <= 1 / sqrt(1/4 + eps / M^2) = 1.9999 (about sqrt 4), times
     * the scale's values [1, 2, -1, 0.5] */
    n = node_new("RMSNormalization", "x,s", "y");
    attr_f(n.node, "epsilon", 0.25f);
    HgRange rr[2] = {hg_range_exact(-100, 100), hg_range_of_array(s)};
    HgValueShape *rsh[2] = {x24, p4};
    const HgArray *rv[2] = {NULL, s};
    range_rule(n.node, 23, 2, rr, rsh, rv, HG_DTYPE_FLOAT, 1, out);
    double zb = 1 / sqrt(0.25 + 0.25 / 10000);
    assert_range(&out[0], -2 * zb, 2 * zb, 1e-5);
    /* one sign: x in [1, 1.2] has mean(x^2) >= 1, so z in [1 / sqrt(1.44 + 0.25), 1.2 / sqrt(1 + 0.25)]
     * and y = z * [-1, 2] */
    rr[0] = hg_range_exact(1, 1.2);
    range_rule(n.node, 23, 2, rr, rsh, rv, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -1.2 / sqrt(1.25), 2 * 1.2 / sqrt(1.25), 1e-5);
    rr[1] = hg_range_exact(0.5, 2);
    range_rule(n.node, 23, 2, rr, rsh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0.5 / sqrt(1.69), 2 * 1.2 / sqrt(1.25), 1e-5);
    assert_false(out[0].nan);
    /* the kernel's outputs lie inside */
    r = RUN(&n, 23, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 4), VALS(1, 1.2, 1.1, 1.05, 1.2, 1.2, 1.2, 1)),
            arr(HG_DTYPE_FLOAT, 1, DIMS(4), VALS(0.5, 2, 1, 0.75)));
    assert_inside(r.out[0], &out[0]);
    result_free(&r);
    /* rows of unknown length: only |z| <= M / sqrt(eps) = 2 M holds */
    HgValueShape *xu = vs_new(HG_DTYPE_FLOAT, 2, DIMS(2, -1));
    HgRange ru[2] = {hg_range_exact(-3, 1), hg_range_exact(1, 1)};
    HgValueShape *ush[2] = {xu, p4};
    range_rule(n.node, 23, 2, ru, ush, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -6, 6, 1e-4);
    node_free(&n);
    /* epsilon 0 and a range holding 0: a zero row is 0 / 0 */
    n = node_new("RMSNormalization", "x,s", "y");
    attr_f(n.node, "epsilon", 0);
    ru[0] = hg_range_exact(-3, 1);
    range_rule(n.node, 23, 2, ru, rsh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -2, 2, 1e-4);
    assert_true(out[0].nan);
    node_free(&n);
    vs_free(xu);

    /* BatchNormalization with constant statistics (epsilon 0): channel 0 maps [0, 1] to itself,
     * channel 1 (scale 2, var 4, mean 1, B 10) to [9, 10] */
    n = node_new("BatchNormalization", "x,s,b,m,v", "y");
    attr_f(n.node, "epsilon", 0);
    HgValueShape *x2 = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 3)), *p2 = vs_new(HG_DTYPE_FLOAT, 1, DIMS(2));
    g_autoptr(HgArray) bs = arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2));
    g_autoptr(HgArray) bb = arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 10));
    g_autoptr(HgArray) bm = arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1));
    g_autoptr(HgArray) bv = arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 4));
    HgRange br[5] = {hg_range_exact(0, 1), hg_range_of_array(bs), hg_range_of_array(bb), hg_range_of_array(bm),
                     hg_range_of_array(bv)};
    HgValueShape *bsh[5] = {x2, p2, p2, p2, p2};
    const HgArray *bvals[5] = {NULL, bs, bb, bm, bv};
    range_rule(n.node, 15, 5, br, bsh, bvals, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], 0, 10, 1e-5);
    r = RUN(&n, 15, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 3), VALS(0, 0.5, 1, 0, 0.5, 1)), hg_array_ref(bs),
            hg_array_ref(bb), hg_array_ref(bm), hg_array_ref(bv));
    assert_inside(r.out[0], &out[0]);
    result_free(&r);
    /* without constants the ranges combine: scale [1, 2] / sqrt([1, 4]) in [0.5, 2] */
    range_rule(n.node, 15, 5, br, bsh, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -2, 12, 1e-5);
    node_free(&n);

    /* the legacy Affine and ImageScaler: y = 2x + 1 over [-1, 3]; 0.5 x + bias[c] over [0, 2] */
    n = node_new("Affine", "x", "y");
    attr_f(n.node, "alpha", 2);
    attr_f(n.node, "beta", 1);
    HgRange ar = hg_range_exact(-1, 3);
    range_rule(n.node, 9, 1, &ar, &x23, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -1, 7, 1e-5);
    node_free(&n);
    n = node_new("ImageScaler", "x", "y");
    attr_f(n.node, "scale", 0.5f);
    attr_floats(n.node, "bias", 2, F32S(1, -1));
    HgRange ir = hg_range_exact(0, 2);
    range_rule(n.node, 9, 1, &ir, &x2, NULL, HG_DTYPE_FLOAT, 1, out);
    assert_range(&out[0], -1, 2, 1e-5);
    node_free(&n);
    vs_free(x23);
    vs_free(x24);
    vs_free(p4);
    vs_free(x2);
    vs_free(p2);
}

HG_TEST_MAIN("ops_reduce",
             cmocka_unit_test(test_family_rows),
             cmocka_unit_test(test_reduce_sum_attr_and_input),
             cmocka_unit_test(test_reduce_axes_errors),
             cmocka_unit_test(test_reduce_mean_opset18),
             cmocka_unit_test(test_reduce_kinds),
             cmocka_unit_test(test_reduce_special_values),
             cmocka_unit_test(test_reduce_fp16),
             cmocka_unit_test(test_reduce_fp16_bits),
             cmocka_unit_test(test_reduce_integers),
             cmocka_unit_test(test_reduce_infer),
             cmocka_unit_test(test_costs),
             cmocka_unit_test(test_argmax),
             cmocka_unit_test(test_softmax_versions),
             cmocka_unit_test(test_softmax_numerics),
             cmocka_unit_test(test_cumsum),
             cmocka_unit_test(test_cumsum_fp16_sequential),
             cmocka_unit_test(test_nonzero),
             cmocka_unit_test(test_topk),
             cmocka_unit_test(test_batchnorm),
             cmocka_unit_test(test_instancenorm),
             cmocka_unit_test(test_layernorm),
             cmocka_unit_test(test_rmsnorm),
             cmocka_unit_test(test_losses),
             cmocka_unit_test(test_range_reduce),
             cmocka_unit_test(test_range_softmax_norms))
