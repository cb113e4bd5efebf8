/* Kernels and shape rules of the elementwise family (src/ops/elementwise.c), checked against values worked out by
 * hand (and, for the transcendental ones, by numpy in float32). */
#include "opstest.h"
#include "ranges.h"
#include "shapes.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define ARRS(...) ((HgArray *[]){__VA_ARGS__})

/* Run n's kernel at opset on ins (references taken over; NULL entries are omitted inputs). outs gets
 * n_out results; returns the kernel's verdict. */
static gboolean
run_n(HgNode *n, gint64 opset, guint n_in, HgArray **ins, guint n_out, HgArray **outs, GError **error)
{
    gboolean ok = eval_node(n, opset, 1, n_in, ins, n_out, outs, error);
    for (guint i = 0; i < n_in; i++)
        hg_array_unref(ins[i]);
    return ok;
}

/* The single output, or NULL with error set. */
static HgArray *
run1(HgNode *n, gint64 opset, guint n_in, HgArray **ins, GError **error)
{
    HgArray *out;
    if (!run_n(n, opset, n_in, ins, 1, &out, error)) {
        assert_null(out);
        return NULL;
    }
    assert_non_null(out);
    return out;
}

/* Within tol, relative, absolute below 1; NaN matches NaN, an infinity only itself. */
static gboolean
same_value(double got, double want, double tol)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* a has the dtype and shape given and values within tol (same_value) of want. */
static void
expect_f_at(const HgArray *a, int dtype, guint rank, const gint64 *dims, const double *want, double tol,
            const char *file, int line)
{
    hg_assert_shape_at(a, dtype, rank, dims, file, line);
    hg_assert_values_at(a, want, a ? a->numel : 0, tol, same_value, file, line);
}
#define expect_f(a, dtype, rank, dims, want, tol) expect_f_at(a, dtype, rank, dims, want, tol, __FILE__, __LINE__)

static void
expect_i_at(const HgArray *a, int dtype, guint rank, const gint64 *dims, const gint64 *want, const char *file,
            int line)
{
    hg_assert_shape_at(a, dtype, rank, dims, file, line);
    hg_assert_ints_at(a, want, a ? a->numel : 0, file, line);
}
#define expect_i(a, dtype, rank, dims, want) expect_i_at(a, dtype, rank, dims, want, __FILE__, __LINE__)

/* One unary op on float32 values at opset 18. */
static void
unary_f32_at(const char *op, guint n_vals, const double *x, const double *want, double tol, const char *file,
             int line)
{
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, op, 1, 1);
    g_autoptr(HgArray) y = run1(n, 18, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(n_vals), x)), NULL);
    expect_f_at(y, HG_DTYPE_FLOAT, 1, DIMS(n_vals), want, tol, file, line);
}
#define unary_f32(op, n, x, want, tol) unary_f32_at(op, n, x, want, tol, __FILE__, __LINE__)

/* ---------------------------------------------------------------- the table */

static void
test_family_rows(void **state)
{
    (void)state;
    /* Every row of this family is reachable by name and has all three functions. */
    assert_family_rows("elementwise", 54);
}

/* ---------------------------------------------------------------- binary arithmetic */

static void
test_add_broadcast(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Add", 2, 1);
    /* [2,3] + [3] */
    g_autoptr(HgArray) y = run1(n, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                                     arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(10, 20, 30))),
                                NULL);
    expect_f(y, HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(11, 22, 33, 14, 25, 36), 0);
    /* scalar on the left, [2,1] + [1,3] (outer product shape) */
    g_autoptr(HgArray) s = run1(n, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(0.5)),
                                     arr(HG_DTYPE_FLOAT, 2, DIMS(1, 2), VALS(1, 2))),
                                NULL);
    expect_f(s, HG_DTYPE_FLOAT, 2, DIMS(1, 2), VALS(1.5, 2.5), 0);
    g_autoptr(HgArray) o = run1(n, 14, 2,
                                ARRS(arr(HG_DTYPE_DOUBLE, 2, DIMS(2, 1), VALS(1, 2)),
                                     arr(HG_DTYPE_DOUBLE, 2, DIMS(1, 3), VALS(10, 20, 30))),
                                NULL);
    expect_f(o, HG_DTYPE_DOUBLE, 2, DIMS(2, 3), VALS(11, 21, 31, 12, 22, 32), 0);
    /* uint8 wraps like the type: 200 + 100 = 44 */
    g_autoptr(HgArray) u = run1(n, 14, 2,
                                ARRS(arr_i(HG_DTYPE_UINT8, 1, DIMS(2), INTS(200, 1)),
                                     arr_i(HG_DTYPE_UINT8, 1, DIMS(2), INTS(100, 2))),
                                NULL);
    expect_i(u, HG_DTYPE_UINT8, 1, DIMS(2), INTS(44, 3));
    /* shapes that do not broadcast */
    GError *error = NULL;
    assert_null(run1(n, 14, 2,
                     ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2)),
                          arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, 2, 3))),
                     &error));
    assert_hg_error(error, HG_ERROR_INVALID, "broadcast");
    g_clear_error(&error);
    /* strings have no arithmetic */
    assert_null(run1(n, 14, 2,
                     ARRS(hg_array_new(HG_DTYPE_STRING, 1, DIMS(1), NULL),
                          hg_array_new(HG_DTYPE_STRING, 1, DIMS(1), NULL)),
                     &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "string");
    g_clear_error(&error);
    /* a missing input */
    assert_null(run1(n, 14, 2, ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1)), NULL), &error));
    assert_hg_error(error, HG_ERROR_INVALID, "input 1 is missing");
    g_clear_error(&error);
}

static void
test_sub_mul_div_integers(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL;
    HgNode *sub = node_in_model(&m1, "Sub", 2, 1), *mul = node_in_model(&m2, "Mul", 2, 1), *div = node_in_model(&m3, "Div", 2, 1);
    g_autoptr(HgArray) s = run1(sub, 14, 2,
                                ARRS(arr_i(HG_DTYPE_INT64, 1, DIMS(2), INTS(G_MININT64, 5)),
                                     arr_i(HG_DTYPE_INT64, 0, NULL, INTS(1))),
                                NULL);
    expect_i(s, HG_DTYPE_INT64, 1, DIMS(2), INTS(G_MAXINT64, 4)); /* wraps, no UB */
    g_autoptr(HgArray) p = run1(mul, 14, 2,
                                ARRS(arr_i(HG_DTYPE_INT8, 1, DIMS(2), INTS(100, -3)),
                                     arr_i(HG_DTYPE_INT8, 1, DIMS(2), INTS(2, 7))),
                                NULL);
    expect_i(p, HG_DTYPE_INT8, 1, DIMS(2), INTS(-56, -21)); /* 200 wraps to -56 */
    /* integer division truncates toward zero; by zero gives 0 */
    g_autoptr(HgArray) q = run1(div, 14, 2,
                                ARRS(arr_i(HG_DTYPE_INT32, 1, DIMS(4), INTS(-7, 7, 9, 5)),
                                     arr_i(HG_DTYPE_INT32, 1, DIMS(4), INTS(2, -2, 0, 5))),
                                NULL);
    expect_i(q, HG_DTYPE_INT32, 1, DIMS(4), INTS(-3, -3, 0, 1));
    g_autoptr(HgArray) f = run1(div, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(1, -1, 0)),
                                     arr(HG_DTYPE_FLOAT, 0, NULL, VALS(0))),
                                NULL);
    expect_f(f, HG_DTYPE_FLOAT, 1, DIMS(3), VALS(INFINITY, -INFINITY, NAN), 0);
    /* uint64 past 2^63 divides as unsigned */
    g_autoptr(HgArray) u = run1(div, 14, 2,
                                ARRS(arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS((gint64)0xfffffffffffffffeULL)),
                                     arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS(2))),
                                NULL);
    assert_true(((guint64 *)u->data)[0] == 0x7fffffffffffffffULL);
}

static void
test_mod(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL, mf = NULL;
    HgNode *n = node_in_model(&m, "Mod", 2, 1), *nf = node_in_model(&mf, "Mod", 2, 1);
    attr_i(nf, "fmod", 1);
    /* fmod=0: Python's %, the sign of the divisor */
    g_autoptr(HgArray) a = run1(n, 13, 2,
                                ARRS(arr_i(HG_DTYPE_INT64, 1, DIMS(5), INTS(-4, 4, 5, -5, 3)),
                                     arr_i(HG_DTYPE_INT64, 1, DIMS(5), INTS(3, -3, -2, 2, 0))),
                                NULL);
    expect_i(a, HG_DTYPE_INT64, 1, DIMS(5), INTS(2, -2, -1, 1, 0));
    /* fmod=1: C's fmod, the sign of the dividend */
    g_autoptr(HgArray) b = run1(nf, 13, 2,
                                ARRS(arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(-4, 4)),
                                     arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(3, -3))),
                                NULL);
    expect_i(b, HG_DTYPE_INT32, 1, DIMS(2), INTS(-1, 1));
    g_autoptr(HgArray) c = run1(nf, 13, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-4.5, 4.5)),
                                     arr(HG_DTYPE_FLOAT, 0, NULL, VALS(2))),
                                NULL);
    expect_f(c, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-0.5, 0.5), 0);
    g_autoptr(HgArray) d = run1(n, 13, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-4.5, 4.5)),
                                     arr(HG_DTYPE_FLOAT, 0, NULL, VALS(2))),
                                NULL);
    expect_f(d, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1.5, 0.5), 0);
    /* uint64 beyond int64's range */
    g_autoptr(HgArray) u = run1(n, 13, 2,
                                ARRS(arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS((gint64)0xffffffffffffffffULL)),
                                     arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS(10))),
                                NULL);
    assert_true(((guint64 *)u->data)[0] == 5); /* 18446744073709551615 % 10 */
}

static void
test_pow_types(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Pow", 2, 1);
    /* float base, int64 exponent: the base's type */
    g_autoptr(HgArray) a = run1(n, 15, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(2, -2, 9)),
                                     arr_i(HG_DTYPE_INT64, 1, DIMS(3), INTS(3, 3, 0))),
                                NULL);
    expect_f(a, HG_DTYPE_FLOAT, 1, DIMS(3), VALS(8, -8, 1), 0);
    /* int base, float exponent: computed in double, result int32 */
    g_autoptr(HgArray) b = run1(n, 15, 2,
                                ARRS(arr_i(HG_DTYPE_INT32, 1, DIMS(3), INTS(1, 2, 3)),
                                     arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(4, 5, 6))),
                                NULL);
    expect_i(b, HG_DTYPE_INT32, 1, DIMS(3), INTS(1, 32, 729));
    /* integer power, exact past 2^53, negative exponents truncate */
    g_autoptr(HgArray) c = run1(n, 15, 2,
                                ARRS(arr_i(HG_DTYPE_INT64, 1, DIMS(5), INTS(3, 2, -1, 1, 7)),
                                     arr_i(HG_DTYPE_INT64, 1, DIMS(5), INTS(39, 10, -3, -5, -1))),
                                NULL);
    expect_i(c, HG_DTYPE_INT64, 1, DIMS(5), INTS(4052555153018976267LL, 1024, -1, 1, 0));
    /* FP16: 2^16 = 65536 overflows to inf; 2^15 fits */
    g_autoptr(HgArray) h = run1(n, 15, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(2, 2)),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(16, 15))),
                                NULL);
    expect_f(h, HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(INFINITY, 32768), 0);
}

static void
test_prelu(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "PRelu", 2, 1);
    /* x [1,2,2], slope [2,1]: one slope per channel */
    g_autoptr(HgArray) y = run1(n, 16, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 2), VALS(-1, 2, -3, 4)),
                                     arr(HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(0.5, 0.25))),
                                NULL);
    expect_f(y, HG_DTYPE_FLOAT, 3, DIMS(1, 2, 2), VALS(-0.5, 2, -0.75, 4), 0);
    /* the slope may not widen x */
    GError *error = NULL;
    assert_null(run1(n, 16, 2,
                     ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(-1)),
                          arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 2))),
                     &error));
    assert_hg_error(error, HG_ERROR_INVALID, "does not broadcast to the shape of input 0");
    g_clear_error(&error);
    /* before opset 7 a [C] slope applies along axis 1 */
    g_autoptr(HgArray) old = run1(n, 6, 2,
                                  ARRS(arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 3), VALS(-1, -1, -1, -1, -1, 1)),
                                       arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0.5, 0.25))),
                                  NULL);
    expect_f(old, HG_DTYPE_FLOAT, 3, DIMS(1, 2, 3), VALS(-0.5, -0.5, -0.5, -0.25, -0.25, 1), 0);
    /* int32 */
    g_autoptr(HgArray) i = run1(n, 16, 2,
                                ARRS(arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(-3, 3)),
                                     arr_i(HG_DTYPE_INT32, 0, NULL, INTS(2))),
                                NULL);
    expect_i(i, HG_DTYPE_INT32, 1, DIMS(2), INTS(-6, 3));
}

/* ---------------------------------------------------------------- comparisons and logic */

static void
test_compare(void **state)
{
    (void)state;
    const char *ops[] = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"};
    /* x = [1, 2, 3, NaN] against the scalar 2 */
    const gint64 want[][4] = {{0, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 1, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}};
    for (guint k = 0; k < G_N_ELEMENTS(ops); k++) {
        g_autoptr(HgModel) m = NULL;
        HgNode *n = node_in_model(&m, ops[k], 2, 1);
        g_autoptr(HgArray) y = run1(n, 16, 2,
                                    ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(4), VALS(1, 2, 3, NAN)),
                                         arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(2))),
                                    NULL);
        expect_i(y, HG_DTYPE_BOOL, 1, DIMS(4), want[k]);
    }
    /* uint64 past 2^63 compares as unsigned; int32 broadcasts [2,1] against [2] */
    g_autoptr(HgModel) m = NULL;
    HgNode *gt = node_in_model(&m, "Greater", 2, 1);
    g_autoptr(HgArray) u = run1(gt, 13, 2,
                                ARRS(arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS((gint64)0x8000000000000001ULL)),
                                     arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS(1))),
                                NULL);
    expect_i(u, HG_DTYPE_BOOL, 1, DIMS(1), INTS(1));
    g_autoptr(HgArray) b = run1(gt, 13, 2,
                                ARRS(arr_i(HG_DTYPE_INT32, 2, DIMS(2, 1), INTS(1, 5)),
                                     arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(0, 3))),
                                NULL);
    expect_i(b, HG_DTYPE_BOOL, 2, DIMS(2, 2), INTS(1, 0, 1, 1));
}

/* Equal on strings (opset 19) */
static void
test_equal_strings(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Equal", 2, 1);
    HgArray *a = hg_array_new(HG_DTYPE_STRING, 1, DIMS(3), NULL), *b = hg_array_new(HG_DTYPE_STRING, 0, NULL, NULL);
    const char *txt[] = {"cat", "ca", ""};
    for (guint i = 0; i < 3; i++) {
        g_bytes_unref(a->strings->pdata[i]);
        a->strings->pdata[i] = g_bytes_new(txt[i], strlen(txt[i]));
    }
    g_bytes_unref(b->strings->pdata[0]);
    b->strings->pdata[0] = g_bytes_new("cat", 3);
    g_autoptr(HgArray) y = run1(n, 19, 2, ARRS(a, b), NULL);
    expect_i(y, HG_DTYPE_BOOL, 1, DIMS(3), INTS(1, 0, 0));
}

static void
test_logic(void **state)
{
    (void)state;
    const char *ops[] = {"And", "Or", "Xor"};
    const gint64 want[][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
    for (guint k = 0; k < G_N_ELEMENTS(ops); k++) {
        g_autoptr(HgModel) m = NULL;
        HgNode *n = node_in_model(&m, ops[k], 2, 1);
        /* [2,1] x [2]: the truth table */
        g_autoptr(HgArray) y = run1(n, 7, 2,
                                    ARRS(arr_i(HG_DTYPE_BOOL, 2, DIMS(2, 1), INTS(0, 1)),
                                         arr_i(HG_DTYPE_BOOL, 1, DIMS(2), INTS(0, 1))),
                                    NULL);
        expect_i(y, HG_DTYPE_BOOL, 2, DIMS(2, 2), want[k]);
        GError *error = NULL;
        assert_null(run1(n, 7, 2,
                         ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1)), arr_i(HG_DTYPE_BOOL, 0, NULL, INTS(1))),
                         &error));
        assert_hg_error(error, HG_ERROR_UNSUPPORTED, "float");
        g_clear_error(&error);
    }
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Not", 1, 1);
    g_autoptr(HgArray) y = run1(n, 7, 1, ARRS(arr_i(HG_DTYPE_BOOL, 1, DIMS(3), INTS(0, 1, 0))), NULL);
    expect_i(y, HG_DTYPE_BOOL, 1, DIMS(3), INTS(1, 0, 1));
}

/* ---------------------------------------------------------------- unary ops */

static void
test_unary_math(void **state)
{
    (void)state;
    unary_f32("Abs", 3, VALS(-1.5, 0, 2), VALS(1.5, 0, 2), 0);
    unary_f32("Neg", 2, VALS(-1.5, 2), VALS(1.5, -2), 0);
    unary_f32("Ceil", 3, VALS(-1.5, 1.2, 2), VALS(-1, 2, 2), 0);
    unary_f32("Floor", 3, VALS(-1.5, 1.2, 2), VALS(-2, 1, 2), 0);
    /* half to even */
    unary_f32("Round", 6, VALS(0.5, 1.5, 2.5, -0.5, -1.5, 2.6), VALS(0, 2, 2, -0.0, -2, 3), 0);
    unary_f32("Sign", 4, VALS(-3, 0, 7, NAN), VALS(-1, 0, 1, NAN), 0);
    unary_f32("Reciprocal", 2, VALS(4, -0.5), VALS(0.25, -2), 0);
    unary_f32("Sqrt", 2, VALS(9, -1), VALS(3, NAN), 0);
    unary_f32("Exp", 2, VALS(1, 100), VALS(2.7182817, INFINITY), 1e-7);
    unary_f32("Log", 3, VALS(2, 0, -1), VALS(0.6931472, -INFINITY, NAN), 1e-7);
    unary_f32("Cos", 1, VALS(1), VALS(0.5403023), 1e-7);
    unary_f32("Sin", 1, VALS(1), VALS(0.84147096), 1e-7);
    unary_f32("Tanh", 2, VALS(0.5, -30), VALS(0.46211717, -1), 1e-7);
    unary_f32("Erf", 2, VALS(0.5, -4), VALS(0.5204999, -1), 1e-7);
}

static void
test_activations(void **state)
{
    (void)state;
    unary_f32("Relu", 3, VALS(-1, 0, 2), VALS(0, 0, 2), 0);
    unary_f32("Sigmoid", 4, VALS(0, 2, -200, 200), VALS(0.5, 0.8807971, 0, 1), 1e-7);
    /* Softplus must not overflow for large x nor lose small results for very negative x */
    unary_f32("Softplus", 3, VALS(0, 100, 1000), VALS(0.6931472, 100, 1000), 1e-7);
    unary_f32("Softsign", 2, VALS(3, -1), VALS(0.75, -0.5), 0);
    unary_f32("Mish", 3, VALS(1, 0, 100), VALS(0.8650984, 0, 100), 1e-7);
    unary_f32("HardSwish", 4, VALS(1, -1, 4, -4), VALS(0.6666667, -0.33333334, 4, 0), 1e-7);
    /* defaults: HardSigmoid alpha 0.2 beta 0.5, Elu alpha 1, LeakyRelu 0.01, Selu's constants,
     * ThresholdedRelu alpha 1 */
    unary_f32("HardSigmoid", 3, VALS(1, 10, -10), VALS(0.7, 1, 0), 1e-7);
    unary_f32("Elu", 2, VALS(-1, 2), VALS(-0.63212055, 2), 1e-7);
    unary_f32("LeakyRelu", 2, VALS(-2, 2), VALS(-0.02, 2), 1e-7);
    unary_f32("Selu", 2, VALS(-1, 2), VALS(-1.1113307, 2.101402), 1e-7);
    unary_f32("ThresholdedRelu", 3, VALS(1, 1.5, -3), VALS(0, 1.5, 0), 0);

    g_autoptr(HgModel) m = NULL;
    HgNode *sp = node_in_model(&m, "Softplus", 1, 1);
    g_autoptr(HgArray) tiny = run1(sp, 18, 1, ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(-100))), NULL);
    double v = hg_array_get_f64(tiny, 0);
    assert_true(v > 3.5e-44 && v < 4e-44); /* e^-100, a float subnormal */

    /* attributes */
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL, m4 = NULL;
    HgNode *elu = node_in_model(&m1, "Elu", 1, 1), *hs = node_in_model(&m2, "HardSigmoid", 1, 1);
    HgNode *lr = node_in_model(&m3, "LeakyRelu", 1, 1), *tr = node_in_model(&m4, "ThresholdedRelu", 1, 1);
    attr_f(elu, "alpha", 2);
    attr_f(hs, "alpha", 0.5f);
    attr_f(hs, "beta", 0.25f);
    attr_f(lr, "alpha", 0.5f);
    attr_f(tr, "alpha", -1);
    g_autoptr(HgArray) a = run1(elu, 6, 1, ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(-1))), NULL);
    expect_f(a, HG_DTYPE_FLOAT, 0, NULL, VALS(-1.2642411), 1e-7);
    g_autoptr(HgArray) b = run1(hs, 6, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, -2))), NULL);
    expect_f(b, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0.75, 0), 0);
    g_autoptr(HgArray) c = run1(lr, 6, 1, ARRS(arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(-4, 4))), NULL);
    expect_f(c, HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(-2, 4), 0);
    g_autoptr(HgArray) d = run1(tr, 10, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-0.5, -2))), NULL);
    expect_f(d, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-0.5, 0), 0);
}

/* Gelu against the spec's formulas evaluated in double: 0.5 x (1 + erf(x / sqrt 2)) and
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static void
test_gelu(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Gelu", 1, 1);
    g_autoptr(HgArray) y = run1(n, 20, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(5), VALS(1, -1, -3, 0.5, 2))), NULL);
    expect_f(y, HG_DTYPE_FLOAT, 1, DIMS(5),
             VALS(0.8413447460685429, -0.15865525393145707, -0.00404969409489031, 0.34573123063700656,
                  1.9544997361036416), 1e-6);
    /* where 1 + erf cancels, the kernel keeps its relative precision: at -8 the value is
     * -4 erfc(8 / sqrt 2) = -4.97661e-15 (erfc(5.656854) = 1.244192e-15) */
    g_autoptr(HgArray) far = run1(n, 20, 1, ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(-8))), NULL);
    expect_f(far, HG_DTYPE_FLOAT, 0, NULL, VALS(-4 * erfc(8 / sqrt(2))), 1e-5);
    assert_true(hg_array_get_f64(far, 0) < -4.9e-15);
    /* -inf * 0 is NaN, as the spec's formula gives; +inf stays */
    g_autoptr(HgArray) inf = run1(n, 20, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-INFINITY, INFINITY))), NULL);
    expect_f(inf, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(NAN, INFINITY), 0);
    /* FP16 storage: rounded once (gelu(3) = 2.9959502 is 2.9960938 in FP16) */
    g_autoptr(HgArray) h = run1(n, 20, 1, ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(3))), NULL);
    expect_f(h, HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(2.99609375), 0);

    g_autoptr(HgModel) mt = NULL;
    HgNode *t = node_in_model(&mt, "Gelu", 1, 1);
    attr_s(t, "approximate", "tanh");
    g_autoptr(HgArray) yt = run1(t, 20, 1, ARRS(arr(HG_DTYPE_DOUBLE, 1, DIMS(5), VALS(1, -1, -3, 0.5, 2))), NULL);
    expect_f(yt, HG_DTYPE_DOUBLE, 1, DIMS(5),
             VALS(0.8411919906082768, -0.15880800939172324, -0.0036373920817729943, 0.34571400982514394,
                  1.954597694087775), 1e-12);
    g_autoptr(HgArray) yf = run1(t, 20, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, -3))), NULL);
    expect_f(yf, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0.8411919906082768, -0.0036373920817729943), 1e-6);

    g_autoptr(HgModel) mb = NULL;
    HgNode *b = node_in_model(&mb, "Gelu", 1, 1);
    attr_s(b, "approximate", "fast");
    GError *error = NULL;
    assert_null(run1(b, 20, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(1))), &error));
    assert_hg_error(error, HG_ERROR_INVALID, "approximate is 'fast'");
    g_clear_error(&error);

    /* the shape rule keeps the input's type and shape; one operation per element */
    assert_true(hg_op_lookup("", "Gelu")->traits & HG_TRAIT_ELEMENTWISE);
}

static void
test_unary_integers(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL, m4 = NULL;
    HgNode *abs_ = node_in_model(&m1, "Abs", 1, 1), *relu = node_in_model(&m2, "Relu", 1, 1);
    HgNode *sign = node_in_model(&m3, "Sign", 1, 1), *sqrt_ = node_in_model(&m4, "Sqrt", 1, 1);
    /* int8 -128 has no positive: it wraps back, as numpy's abs */
    g_autoptr(HgArray) a = run1(abs_, 13, 1, ARRS(arr_i(HG_DTYPE_INT8, 1, DIMS(3), INTS(-128, -5, 7))), NULL);
    expect_i(a, HG_DTYPE_INT8, 1, DIMS(3), INTS(-128, 5, 7));
    g_autoptr(HgArray) r = run1(relu, 14, 1, ARRS(arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(-5, 7))), NULL);
    expect_i(r, HG_DTYPE_INT32, 1, DIMS(2), INTS(0, 7));
    g_autoptr(HgArray) s = run1(sign, 13, 1, ARRS(arr_i(HG_DTYPE_INT64, 1, DIMS(3), INTS(-9, 0, 4))), NULL);
    expect_i(s, HG_DTYPE_INT64, 1, DIMS(3), INTS(-1, 0, 1));
    GError *error = NULL;
    assert_null(run1(sqrt_, 13, 1, ARRS(arr_i(HG_DTYPE_INT32, 0, NULL, INTS(4))), &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "int32");
    g_clear_error(&error);
}

static void
test_isinf_isnan(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL;
    HgNode *isinf_ = node_in_model(&m1, "IsInf", 1, 1), *neg = node_in_model(&m2, "IsInf", 1, 1);
    HgNode *isnan_ = node_in_model(&m3, "IsNaN", 1, 1);
    attr_i(neg, "detect_positive", 0);
    const double x[] = {INFINITY, -INFINITY, NAN, 1};
    g_autoptr(HgArray) a = run1(isinf_, 10, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(4), x)), NULL);
    expect_i(a, HG_DTYPE_BOOL, 1, DIMS(4), INTS(1, 1, 0, 0));
    g_autoptr(HgArray) b = run1(neg, 10, 1, ARRS(arr(HG_DTYPE_DOUBLE, 1, DIMS(4), x)), NULL);
    expect_i(b, HG_DTYPE_BOOL, 1, DIMS(4), INTS(0, 1, 0, 0));
    g_autoptr(HgArray) c = run1(isnan_, 13, 1, ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(4), x)), NULL);
    expect_i(c, HG_DTYPE_BOOL, 1, DIMS(4), INTS(0, 0, 1, 0));
}

static void
test_identity(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Identity", 1, 1);
    HgArray *x = arr_i(HG_DTYPE_INT16, 1, DIMS(2), INTS(3, -4));
    g_autoptr(HgArray) y = run1(n, 16, 1, ARRS(hg_array_ref(x)), NULL);
    assert_ptr_equal(y, x); /* arrays are immutable: the same one is passed on */
    expect_i(y, HG_DTYPE_INT16, 1, DIMS(2), INTS(3, -4));
    hg_array_unref(x);
}

/* ---------------------------------------------------------------- FP16: computed in FP32, rounded once */

static void
test_fp16_rounds_once(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL, m4 = NULL;
    HgNode *add = node_in_model(&m1, "Add", 2, 1), *sum = node_in_model(&m2, "Sum", 3, 1);
    HgNode *mean = node_in_model(&m3, "Mean", 2, 1), *mul = node_in_model(&m4, "Mul", 2, 1);
    /* 65504 + 16 = 65520 rounds past the largest half: inf where it happens */
    g_autoptr(HgArray) a = run1(add, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(65504, 65504)),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(16, 15))),
                                NULL);
    expect_f(a, HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(INFINITY, 65504), 0);
    /* 2048 + 1 + 1: rounding each partial sum would stick at 2048 (2049 ties to even); once gives 2050 */
    g_autoptr(HgArray) s = run1(sum, 13, 3,
                                ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(2048)),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(1)),
                                     arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(1))),
                                NULL);
    expect_f(s, HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(2050), 0);
    /* the FP32 sum 131008 does not fit FP16, the mean does */
    g_autoptr(HgArray) mn = run1(mean, 13, 2,
                                 ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(65504)),
                                      arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(65504))),
                                 NULL);
    expect_f(mn, HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(65504), 0);
    /* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9 */
    g_autoptr(HgArray) p = run1(mul, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(1.0009765625)),
                                     arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(1.0009765625))),
                                NULL);
    expect_f(p, HG_DTYPE_FLOAT16, 0, NULL, VALS(1.001953125), 0);
    /* BF16 keeps FP32's range */
    g_autoptr(HgArray) b = run1(mul, 14, 2,
                                ARRS(arr(HG_DTYPE_BFLOAT16, 0, NULL, VALS(1e30)),
                                     arr(HG_DTYPE_BFLOAT16, 0, NULL, VALS(1e4))),
                                NULL);
    assert_int_equal(b->dtype, HG_DTYPE_BFLOAT16);
    assert_true(fabs(hg_array_get_f64(b, 0) / 1e34 - 1) < 1e-2);
}

/* Rows longer than the conversion chunk, rows shorter than the whole-operand threshold, and a
 * broadcast operand inside a row: FP16 results against values worked out here. */
static void
test_fp16_broadcast_paths(void **state)
{
    (void)state;
    const gint64 cols = 5000;
    g_autoptr(HgModel) m = NULL;
    HgNode *add = node_in_model(&m, "Add", 2, 1);
    /* [2, 5000] + [5000] */
    g_autofree double *x = g_new(double, 2 * cols), *b = g_new(double, cols), *want = g_new(double, 2 * cols);
    for (gint64 i = 0; i < 2 * cols; i++)
        x[i] = (double)(i % 7);
    for (gint64 j = 0; j < cols; j++)
        b[j] = (double)(j % 5) * 100;
    for (gint64 i = 0; i < 2 * cols; i++)
        want[i] = x[i] + b[i % cols];
    g_autoptr(HgArray) y = run1(add, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 2, DIMS(2, cols), x),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(cols), b)),
                                NULL);
    expect_f(y, HG_DTYPE_FLOAT16, 2, DIMS(2, cols), want, 0);
    /* [3, 1] + [1, 5000]: the left operand is a stride-0 run in every row */
    g_autofree double *w2 = g_new(double, 3 * cols);
    for (gint64 r = 0; r < 3; r++)
        for (gint64 j = 0; j < cols; j++)
            w2[r * cols + j] = (double)r * 1000 + b[j];
    g_autoptr(HgArray) z = run1(add, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 2, DIMS(3, 1), VALS(0, 1000, 2000)),
                                     arr(HG_DTYPE_FLOAT16, 2, DIMS(1, cols), b)),
                                NULL);
    expect_f(z, HG_DTYPE_FLOAT16, 2, DIMS(3, cols), w2, 0);
    /* [100, 3] + [3]: short rows, converted whole. FP16 spacing at 2048 is 2: 2048 + 3 and 2048 + 5 are
     * midpoints and tie to the even 2052 */
    g_autofree double *s = g_new(double, 300), *ws = g_new(double, 300);
    for (gint64 i = 0; i < 300; i++) {
        s[i] = 2048;
        ws[i] = i % 3 == 0 ? 2048 : 2052;
    }
    g_autoptr(HgArray) t = run1(add, 14, 2,
                                ARRS(arr(HG_DTYPE_FLOAT16, 2, DIMS(100, 3), s),
                                     arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0, 3, 5))),
                                NULL);
    expect_f(t, HG_DTYPE_FLOAT16, 2, DIMS(100, 3), ws, 0);
}

/* ---------------------------------------------------------------- variadic */

static void
test_variadic(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL, m3 = NULL, m4 = NULL;
    HgNode *max = node_in_model(&m1, "Max", 3, 1), *min = node_in_model(&m2, "Min", 2, 1);
    HgNode *mean = node_in_model(&m3, "Mean", 3, 1), *one = node_in_model(&m4, "Max", 1, 1);
    /* three inputs broadcasting to [2,2]; NaN wins */
    g_autoptr(HgArray) a = run1(max, 13, 3,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 5)),
                                     arr(HG_DTYPE_FLOAT, 2, DIMS(2, 1), VALS(3, NAN)),
                                     arr(HG_DTYPE_FLOAT, 0, NULL, VALS(2))),
                                NULL);
    expect_f(a, HG_DTYPE_FLOAT, 2, DIMS(2, 2), VALS(3, 5, NAN, NAN), 0);
    g_autoptr(HgArray) b = run1(min, 13, 2,
                                ARRS(arr_i(HG_DTYPE_UINT64, 1, DIMS(2), INTS((gint64)0x8000000000000000ULL, 7)),
                                     arr_i(HG_DTYPE_UINT64, 1, DIMS(2), INTS(1, 9))),
                                NULL);
    assert_true(((guint64 *)b->data)[0] == 1 && ((guint64 *)b->data)[1] == 7);
    g_autoptr(HgArray) c = run1(mean, 13, 3,
                                ARRS(arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(1, 2)),
                                     arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(2, 4)),
                                     arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(6))),
                                NULL);
    expect_f(c, HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(3, 4), 0);
    g_autoptr(HgArray) d = run1(one, 13, 1, ARRS(arr_i(HG_DTYPE_INT8, 1, DIMS(2), INTS(-3, 4))), NULL);
    expect_i(d, HG_DTYPE_INT8, 1, DIMS(2), INTS(-3, 4));
    GError *error = NULL;
    assert_null(run1(mean, 13, 3,
                     ARRS(arr_i(HG_DTYPE_INT32, 0, NULL, INTS(1)), arr_i(HG_DTYPE_INT32, 0, NULL, INTS(1)),
                          arr_i(HG_DTYPE_INT32, 0, NULL, INTS(1))),
                     &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "int32");
    g_clear_error(&error);
}

/* ---------------------------------------------------------------- Where */

static void
test_where(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Where", 3, 1);
    /* cond [2,1], x [1,3], y scalar */
    g_autoptr(HgArray) a = run1(n, 16, 3,
                                ARRS(arr_i(HG_DTYPE_BOOL, 2, DIMS(2, 1), INTS(1, 0)),
                                     arr_i(HG_DTYPE_INT64, 2, DIMS(1, 3), INTS(1, 2, 3)),
                                     arr_i(HG_DTYPE_INT64, 0, NULL, INTS(-1))),
                                NULL);
    expect_i(a, HG_DTYPE_INT64, 2, DIMS(2, 3), INTS(1, 2, 3, -1, -1, -1));
    g_autoptr(HgArray) b = run1(n, 16, 3,
                                ARRS(arr_i(HG_DTYPE_BOOL, 1, DIMS(3), INTS(1, 0, 1)),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(1, 2, 3)),
                                     arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(-1, -2, -3))),
                                NULL);
    expect_f(b, HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(1, -2, 3), 0);
    /* strings */
    HgArray *xs = hg_array_new(HG_DTYPE_STRING, 1, DIMS(2), NULL), *ys = hg_array_new(HG_DTYPE_STRING, 0, NULL, NULL);
    g_bytes_unref(xs->strings->pdata[0]);
    xs->strings->pdata[0] = g_bytes_new("ab", 2);
    g_bytes_unref(ys->strings->pdata[0]);
    ys->strings->pdata[0] = g_bytes_new("z", 1);
    g_autoptr(HgArray) s = run1(n, 16, 3, ARRS(arr_i(HG_DTYPE_BOOL, 1, DIMS(2), INTS(1, 0)), xs, ys), NULL);
    assert_int_equal(s->dtype, HG_DTYPE_STRING);
    assert_int_equal(g_bytes_get_size(s->strings->pdata[0]), 2);
    assert_memory_equal(g_bytes_get_data(s->strings->pdata[1], NULL), "z", 1);
    GError *error = NULL;
    assert_null(run1(n, 16, 3,
                     ARRS(arr_i(HG_DTYPE_BOOL, 0, NULL, INTS(1)), arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1)),
                          arr(HG_DTYPE_DOUBLE, 0, NULL, VALS(1))),
                     &error));
    assert_hg_error(error, HG_ERROR_INVALID, "X is float and Y is double");
    g_clear_error(&error);
}

/* ---------------------------------------------------------------- Cast */

static HgArray *
cast(HgArray *x, int to, GError **error)
{
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Cast", 1, 1);
    attr_i(n, "to", to);
    return run1(n, 13, 1, ARRS(x), error);
}

static void
test_cast_numbers(void **state)
{
    (void)state;
    /* float -> FP16: one rounding, overflow to inf */
    g_autoptr(HgArray) a = cast(arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0.1, 1e5, -65519)), HG_DTYPE_FLOAT16, NULL);
    expect_f(a, HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(0.0999755859375, INFINITY, -65504), 0);
    /* double -> FP16 rounds once: 1 + 2^-11 + 2^-40 is just above the midpoint between 1 and 1 + 2^-10;
     * through a nearest float it would land on the midpoint and tie down to 1 */
    double d = 1.0 + ldexp(1, -11) + ldexp(1, -40);
    g_autoptr(HgArray) b = cast(arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(d, -d)), HG_DTYPE_FLOAT16, NULL);
    expect_f(b, HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(1.0009765625, -1.0009765625), 0);
    g_autoptr(HgArray) bb = cast(arr(HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(1.0 + ldexp(1, -8) + ldexp(1, -40))),
                                 HG_DTYPE_BFLOAT16, NULL);
    expect_f(bb, HG_DTYPE_BFLOAT16, 1, DIMS(1), VALS(1.0078125), 0);
    /* float -> int truncates toward zero; int64 -> uint8 wraps; -> bool is != 0 */
    g_autoptr(HgArray) c = cast(arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(-2.7, 2.7, 0)), HG_DTYPE_INT32, NULL);
    expect_i(c, HG_DTYPE_INT32, 1, DIMS(3), INTS(-2, 2, 0));
    g_autoptr(HgArray) e = cast(arr_i(HG_DTYPE_INT64, 1, DIMS(2), INTS(300, -1)), HG_DTYPE_UINT8, NULL);
    expect_i(e, HG_DTYPE_UINT8, 1, DIMS(2), INTS(44, 255));
    g_autoptr(HgArray) f = cast(arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0, -0.5, NAN)), HG_DTYPE_BOOL, NULL);
    expect_i(f, HG_DTYPE_BOOL, 1, DIMS(3), INTS(0, 1, 1));
    g_autoptr(HgArray) g = cast(arr_i(HG_DTYPE_BOOL, 1, DIMS(2), INTS(1, 0)), HG_DTYPE_FLOAT, NULL);
    expect_f(g, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 0), 0);
    /* uint64 max -> double, unsigned; int64 -> float rounds once (2^24 + 1 ties to 2^24) */
    g_autoptr(HgArray) h = cast(arr_i(HG_DTYPE_UINT64, 1, DIMS(1), INTS(-1)), HG_DTYPE_DOUBLE, NULL);
    expect_f(h, HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(18446744073709551615.0), 0);
    g_autoptr(HgArray) i = cast(arr_i(HG_DTYPE_INT64, 1, DIMS(2), INTS(16777217, 16777219)), HG_DTYPE_FLOAT, NULL);
    expect_f(i, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(16777216, 16777220), 0);
    g_autoptr(HgArray) j = cast(arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(2049, 70000)), HG_DTYPE_FLOAT16, NULL);
    expect_f(j, HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(2048, INFINITY), 0);
    /* FP16 -> double is exact */
    g_autoptr(HgArray) k = cast(arr(HG_DTYPE_FLOAT16, 1, DIMS(1), VALS(0.1)), HG_DTYPE_DOUBLE, NULL);
    expect_f(k, HG_DTYPE_DOUBLE, 1, DIMS(1), VALS(0.0999755859375), 0);
    /* same type: the array itself */
    HgArray *x = arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1));
    g_autoptr(HgArray) same = cast(hg_array_ref(x), HG_DTYPE_FLOAT, NULL);
    assert_ptr_equal(same, x);
    hg_array_unref(x);
    /* float8 targets are not supported; a missing 'to' is invalid */
    GError *error = NULL;
    assert_null(cast(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1)), HG_DTYPE_FLOAT8E4M3FN, &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "float8");
    g_clear_error(&error);
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Cast", 1, 1);
    assert_null(run1(n, 13, 1, ARRS(arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1))), &error));
    assert_hg_error(error, HG_ERROR_INVALID, "'to'");
    g_clear_error(&error);
}

static void
test_cast_strings(void **state)
{
    (void)state;
    g_autoptr(HgArray) s = cast(arr(HG_DTYPE_FLOAT, 1, DIMS(4), VALS(0.1, 0.039187793, -INFINITY, 3)),
                                HG_DTYPE_STRING, NULL);
    assert_int_equal(s->dtype, HG_DTYPE_STRING);
    const char *want[] = {"0.1", "0.039187793", "-inf", "3"};
    for (guint i = 0; i < 4; i++) {
        gsize len;
        const char *p = g_bytes_get_data(s->strings->pdata[i], &len);
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(p, want[i], len);
    }
    g_autoptr(HgArray) t = cast(arr_i(HG_DTYPE_INT64, 1, DIMS(1), INTS(-42)), HG_DTYPE_STRING, NULL);
    assert_memory_equal(g_bytes_get_data(t->strings->pdata[0], NULL), "-42", 3);
    HgArray *in = hg_array_new(HG_DTYPE_STRING, 1, DIMS(4), NULL);
    const char *txt[] = {"-1.5", "INF", "NaN", "12"};
    for (guint i = 0; i < 4; i++) {
        g_bytes_unref(in->strings->pdata[i]);
        in->strings->pdata[i] = g_bytes_new(txt[i], strlen(txt[i]));
    }
    g_autoptr(HgArray) f = cast(hg_array_ref(in), HG_DTYPE_FLOAT, NULL);
    expect_f(f, HG_DTYPE_FLOAT, 1, DIMS(4), VALS(-1.5, INFINITY, NAN, 12), 0);
    g_bytes_unref(in->strings->pdata[2]);
    in->strings->pdata[2] = g_bytes_new("x1", 2);
    GError *error = NULL;
    assert_null(cast(in, HG_DTYPE_INT32, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "'x1'");
    g_clear_error(&error);
}

static void
test_castlike(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "CastLike", 2, 1);
    g_autoptr(HgArray) y = run1(n, 15, 2,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1.5, 70000)),
                                     arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(0))),
                                NULL);
    expect_f(y, HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(1.5, INFINITY), 0);
}

/* ---------------------------------------------------------------- Clip, Dropout */

static void
test_clip_versions(void **state)
{
    (void)state;
    /* opset 6: attributes */
    g_autoptr(HgModel) m1 = NULL;
    HgNode *old = node_in_model(&m1, "Clip", 1, 1);
    attr_f(old, "min", -1);
    attr_f(old, "max", 1);
    g_autoptr(HgArray) a = run1(old, 6, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(4), VALS(-3, 0.5, 3, NAN))), NULL);
    expect_f(a, HG_DTYPE_FLOAT, 1, DIMS(4), VALS(-1, 0.5, 1, NAN), 0);
    /* the same node at opset 11 reads inputs instead: without them nothing is clipped */
    g_autoptr(HgArray) b = run1(old, 11, 1, ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-3, 3))), NULL);
    expect_f(b, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-3, 3), 0);
    /* opset 11: min only, max omitted */
    g_autoptr(HgModel) m2 = NULL;
    HgNode *n = node_in_model(&m2, "Clip", 3, 1);
    g_autoptr(HgArray) c = run1(n, 11, 3,
                                ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(-3, 0, 70000)),
                                     arr(HG_DTYPE_FLOAT16, 0, NULL, VALS(-1)), NULL),
                                NULL);
    expect_f(c, HG_DTYPE_FLOAT16, 1, DIMS(3), VALS(-1, 0, INFINITY), 0);
    /* opset 12: integers; min > max gives max everywhere */
    g_autoptr(HgArray) d = run1(n, 12, 3,
                                ARRS(arr_i(HG_DTYPE_INT8, 1, DIMS(3), INTS(-128, 5, 127)),
                                     arr_i(HG_DTYPE_INT8, 0, NULL, INTS(-10)), arr_i(HG_DTYPE_INT8, 0, NULL, INTS(10))),
                                NULL);
    expect_i(d, HG_DTYPE_INT8, 1, DIMS(3), INTS(-10, 5, 10));
    g_autoptr(HgArray) e = run1(n, 13, 3,
                                ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-5, 5)),
                                     arr(HG_DTYPE_FLOAT, 0, NULL, VALS(2)), arr(HG_DTYPE_FLOAT, 0, NULL, VALS(1))),
                                NULL);
    expect_f(e, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(1, 1), 0);
    g_autoptr(HgArray) u = run1(n, 13, 3,
                                ARRS(arr_i(HG_DTYPE_UINT64, 1, DIMS(2), INTS((gint64)0xf000000000000000ULL, 3)),
                                     arr_i(HG_DTYPE_UINT64, 0, NULL, INTS(5)), NULL),
                                NULL);
    assert_true(((guint64 *)u->data)[0] == 0xf000000000000000ULL && ((guint64 *)u->data)[1] == 5);
    GError *error = NULL;
    assert_null(run1(n, 13, 3,
                     ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-5, 5)),
                          arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)), NULL),
                     &error));
    assert_hg_error(error, HG_ERROR_INVALID, "scalar");
    g_clear_error(&error);
}

static void
test_dropout_versions(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Dropout", 3, 2);
    HgArray *outs[2];
    /* opset 7: the mask has x's type, all ones */
    assert_true(run_n(n, 7, 1, ARRS(arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(3, -4))), 2, outs, NULL));
    expect_f(outs[0], HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(3, -4), 0);
    expect_f(outs[1], HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(1, 1), 0);
    hg_array_unref(outs[0]);
    hg_array_unref(outs[1]);
    /* opset 13: bool mask; training with ratio 0 is still the identity */
    assert_true(run_n(n, 13, 3,
                      ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(3, -4)), arr(HG_DTYPE_FLOAT, 0, NULL, VALS(0)),
                           arr_i(HG_DTYPE_BOOL, 0, NULL, INTS(1))),
                      2, outs, NULL));
    expect_f(outs[0], HG_DTYPE_FLOAT, 1, DIMS(2), VALS(3, -4), 0);
    expect_i(outs[1], HG_DTYPE_BOOL, 1, DIMS(2), INTS(1, 1));
    hg_array_unref(outs[0]);
    hg_array_unref(outs[1]);
    /* training with the default ratio 0.5 would be random */
    GError *error = NULL;
    assert_false(run_n(n, 13, 3,
                       ARRS(arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(3, -4)), NULL, arr_i(HG_DTYPE_BOOL, 0, NULL, INTS(1))),
                       2, outs, &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "training_mode");
    g_clear_error(&error);
}

/* ---------------------------------------------------------------- shape inference */

static void
test_infer_broadcast(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Add", 2, 1);
    HgValueShape a, b, out;
    /* [N, 3] + [1, 3] -> [N, 3] */
    vs_set(&a, HG_DTYPE_FLOAT16, 2, DIMS(-1, 3), (const char *[]){"N", NULL});
    vs_set(&b, HG_DTYPE_FLOAT16, 2, DIMS(1, 3), NULL);
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_FLOAT16);
    assert_int_equal(out.rank, 2);
    assert_true(out.dims[0].v < 0 && out.dims[0].sym == g_intern_string("N"));
    assert_int_equal(out.dims[1].v, 3);
    /* [N, 1] + [M]: both names kept where the other side is 1; [N] + [N] keeps N; [N] + [M] is unknown */
    vs_set(&a, HG_DTYPE_FLOAT, 2, DIMS(-1, 1), (const char *[]){"N", NULL});
    vs_set(&b, HG_DTYPE_FLOAT, 1, DIMS(-1), (const char *[]){"M"});
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.rank, 2);
    assert_true(out.dims[0].sym == g_intern_string("N") && out.dims[1].sym == g_intern_string("M"));
    vs_set(&a, HG_DTYPE_FLOAT, 1, DIMS(-1), (const char *[]){"N"});
    vs_set(&b, HG_DTYPE_FLOAT, 1, DIMS(-1), (const char *[]){"N"});
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_true(out.dims[0].v < 0 && out.dims[0].sym == g_intern_string("N"));
    vs_set(&b, HG_DTYPE_FLOAT, 1, DIMS(-1), (const char *[]){"M"});
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_true(out.dims[0].v < 0 && out.dims[0].sym == NULL);
    /* an unknown dim against a known 5 is 5 */
    vs_set(&b, HG_DTYPE_FLOAT, 2, DIMS(4, 5), NULL);
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.dims[0].v, 4);
    assert_int_equal(out.dims[1].v, 5);
    /* an unknown rank: the dtype is still known */
    vs_init(&a);
    a.dtype = HG_DTYPE_INT32;
    vs_init(&out);
    assert_true(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.rank, -1);
    assert_int_equal(out.dtype, HG_DTYPE_INT32);
    /* conflicting known dims */
    vs_set(&a, HG_DTYPE_FLOAT, 2, DIMS(2, 3), NULL);
    vs_set(&b, HG_DTYPE_FLOAT, 2, DIMS(4, 3), NULL);
    vs_init(&out);
    GError *error = NULL;
    assert_false(infer_node(n, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "do not broadcast");
    g_clear_error(&error);
    /* comparisons are bool; Where takes X's type over three shapes */
    g_autoptr(HgModel) m2 = NULL, m3 = NULL;
    HgNode *less = node_in_model(&m2, "Less", 2, 1), *where = node_in_model(&m3, "Where", 3, 1);
    vs_set(&a, HG_DTYPE_FLOAT, 1, DIMS(3), NULL);
    vs_set(&b, HG_DTYPE_FLOAT, 2, DIMS(2, 1), NULL);
    vs_init(&out);
    assert_true(infer_node(less, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_BOOL);
    assert_int_equal(out.rank, 2);
    HgValueShape c;
    vs_set(&c, HG_DTYPE_BOOL, 3, DIMS(5, 1, 1), NULL);
    vs_init(&out);
    assert_true(infer_node(where, 16, 3, (const HgValueShape *[]){&c, &a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_FLOAT);
    assert_int_equal(out.rank, 3);
    assert_true(out.dims[0].v == 5 && out.dims[1].v == 2 && out.dims[2].v == 3);
}

static void
test_infer_per_op(void **state)
{
    (void)state;
    HgValueShape x, y, out, mask;
    vs_set(&x, HG_DTYPE_FLOAT, 2, DIMS(-1, 4), (const char *[]){"batch", NULL});
    /* Cast: 'to', the input's shape with its names */
    g_autoptr(HgModel) m1 = NULL;
    HgNode *c = node_in_model(&m1, "Cast", 1, 1);
    attr_i(c, "to", HG_DTYPE_FLOAT16);
    vs_init(&out);
    assert_true(infer_node(c, 13, 1, (const HgValueShape *[]){&x}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_FLOAT16);
    assert_true(out.rank == 2 && out.dims[0].sym == g_intern_string("batch") && out.dims[1].v == 4);
    /* CastLike: the type of input 1 */
    g_autoptr(HgModel) m2 = NULL;
    HgNode *cl = node_in_model(&m2, "CastLike", 2, 1);
    vs_set(&y, HG_DTYPE_BFLOAT16, 0, NULL, NULL);
    vs_init(&out);
    assert_true(infer_node(cl, 15, 2, (const HgValueShape *[]){&x, &y}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_BFLOAT16);
    assert_int_equal(out.rank, 2);
    /* Dropout's mask: x's type before opset 10, bool from 10 */
    g_autoptr(HgModel) m3 = NULL;
    HgNode *d = node_in_model(&m3, "Dropout", 1, 2);
    vs_init(&out);
    vs_init(&mask);
    assert_true(infer_node(d, 7, 1, (const HgValueShape *[]){&x}, 2, (HgValueShape *[]){&out, &mask}, NULL));
    assert_int_equal(out.dtype, HG_DTYPE_FLOAT);
    assert_int_equal(mask.dtype, HG_DTYPE_FLOAT);
    assert_int_equal(mask.rank, 2);
    vs_init(&out);
    vs_init(&mask);
    assert_true(infer_node(d, 12, 1, (const HgValueShape *[]){&x}, 2, (HgValueShape *[]){&out, &mask}, NULL));
    assert_int_equal(mask.dtype, HG_DTYPE_BOOL);
    /* predicates are bool, Clip keeps its type, variadic broadcasts every input */
    const char *bool_ops[] = {"IsNaN", "IsInf", "Not"};
    for (guint i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
        g_autoptr(HgModel) m = NULL;
        HgNode *n = node_in_model(&m, bool_ops[i], 1, 1);
        vs_init(&out);
        assert_true(infer_node(n, 13, 1, (const HgValueShape *[]){&x}, 1, (HgValueShape *[]){&out}, NULL));
        assert_int_equal(out.dtype, HG_DTYPE_BOOL);
        assert_int_equal(out.rank, 2);
    }
    g_autoptr(HgModel) m4 = NULL;
    HgNode *sum = node_in_model(&m4, "Sum", 3, 1);
    HgValueShape s1, s2;
    vs_set(&s1, HG_DTYPE_FLOAT, 3, DIMS(7, 1, 1), NULL);
    vs_set(&s2, HG_DTYPE_FLOAT, 1, DIMS(1), NULL);
    vs_init(&out);
    assert_true(infer_node(sum, 13, 3, (const HgValueShape *[]){&x, &s1, &s2}, 1, (HgValueShape *[]){&out}, NULL));
    assert_int_equal(out.rank, 3);
    assert_true(out.dims[0].v == 7 && out.dims[1].sym == g_intern_string("batch") && out.dims[2].v == 4);
    /* a Cast without 'to' is an inconsistent model */
    g_autoptr(HgModel) m5 = NULL;
    HgNode *bad = node_in_model(&m5, "Cast", 1, 1);
    vs_init(&out);
    GError *error = NULL;
    assert_false(infer_node(bad, 13, 1, (const HgValueShape *[]){&x}, 1, (HgValueShape *[]){&out}, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "'to'");
    g_clear_error(&error);
    /* PRelu before opset 7: [C] slope along the channels */
    g_autoptr(HgModel) m6 = NULL;
    HgNode *pr = node_in_model(&m6, "PRelu", 2, 1);
    vs_set(&s1, HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4), NULL);
    vs_set(&s2, HG_DTYPE_FLOAT, 1, DIMS(3), NULL);
    vs_init(&out);
    assert_true(infer_node(pr, 6, 2, (const HgValueShape *[]){&s1, &s2}, 1, (HgValueShape *[]){&out}, NULL));
    assert_true(out.rank == 3 && out.dims[2].v == 4);
    vs_init(&out);
    assert_false(infer_node(pr, 9, 2, (const HgValueShape *[]){&s1, &s2}, 1, (HgValueShape *[]){&out}, &error));
    g_clear_error(&error);
}

/* Known inputs fold into known outputs when the result is small. */
static void
test_infer_folds(void **state)
{
    (void)state;
    g_autoptr(HgModel) m1 = NULL, m2 = NULL;
    HgNode *mul = node_in_model(&m1, "Mul", 2, 1), *cast_ = node_in_model(&m2, "Cast", 1, 1);
    attr_i(cast_, "to", HG_DTYPE_FLOAT);
    HgValueShape a, b, out, out2;
    vs_set(&a, HG_DTYPE_INT64, 1, DIMS(2), NULL);
    a.value = arr_i(HG_DTYPE_INT64, 1, DIMS(2), INTS(3, 4));
    vs_set(&b, HG_DTYPE_INT64, 0, NULL, NULL);
    b.value = arr_i(HG_DTYPE_INT64, 0, NULL, INTS(2));
    vs_init(&out);
    assert_true(infer_node(mul, 14, 2, (const HgValueShape *[]){&a, &b}, 1, (HgValueShape *[]){&out}, NULL));
    expect_i(out.value, HG_DTYPE_INT64, 1, DIMS(2), INTS(6, 8));
    vs_init(&out2);
    assert_true(infer_node(cast_, 13, 1, (const HgValueShape *[]){&out}, 1, (HgValueShape *[]){&out2}, NULL));
    expect_f(out2.value, HG_DTYPE_FLOAT, 1, DIMS(2), VALS(6, 8), 0);
    hg_vshape_unknown(&out);
    hg_vshape_unknown(&out2);
    /* an unknown input: no value */
    HgValueShape c;
    vs_set(&c, HG_DTYPE_INT64, 1, DIMS(2), NULL);
    vs_init(&out);
    assert_true(infer_node(mul, 14, 2, (const HgValueShape *[]){&a, &c}, 1, (HgValueShape *[]){&out}, NULL));
    assert_null(out.value);
    assert_int_equal(out.rank, 1);
    /* too big to fold: [2] x [1000, 1] is 2000 elements */
    hg_vshape_unknown(&c);
    vs_set(&c, HG_DTYPE_INT64, 2, DIMS(1000, 1), NULL);
    c.value = hg_array_new(HG_DTYPE_INT64, 2, DIMS(1000, 1), NULL);
    vs_init(&out);
    assert_true(infer_node(mul, 14, 2, (const HgValueShape *[]){&a, &c}, 1, (HgValueShape *[]){&out}, NULL));
    assert_null(out.value);
    assert_int_equal(out.dims[0].v, 1000);
    hg_vshape_unknown(&a);
    hg_vshape_unknown(&b);
    hg_vshape_unknown(&c);
}

static void
test_cost(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Add", 2, 1);
    HgValueShape a, b, out;
    vs_set(&a, HG_DTYPE_FLOAT, 2, DIMS(8, 3), NULL);
    vs_set(&b, HG_DTYPE_FLOAT, 1, DIMS(3), NULL);
    vs_init(&out);
    const HgValueShape *ins[] = {&a, &b};
    HgValueShape *outs[] = {&out};
    HgShapeCtx ctx = {n, 14, 2, ins, 1, outs, NULL};
    const HgOpDef *d = hg_op_for_node(n);
    assert_true(d->infer(&ctx));
    assert_int_equal(d->cost(&ctx), 24);
    vs_set(&a, HG_DTYPE_FLOAT, 2, DIMS(-1, 3), NULL);
    vs_init(&out);
    assert_true(d->infer(&ctx));
    assert_int_equal(d->cost(&ctx), -1);
}

/* ---------------------------------------------------------------- interval rules */

/* r is [lo, hi] exactly (within 1e-12 relative), with the NaN flag given. */
static void
expect_range_at(HgRange r, double lo, double hi, gboolean nan, const char *file, int line)
{
    if (same_value(r.lo, lo, 1e-12) && same_value(r.hi, hi, 1e-12) && r.nan == nan)
        return;
    print_error("range [%.17g, %.17g] nan %d, wanted [%.17g, %.17g] nan %d\n", r.lo, r.hi, r.nan, lo, hi,
                nan);
    _fail(file, line);
}
#define expect_range(r, lo, hi, nan) expect_range_at((r), (lo), (hi), (nan), __FILE__, __LINE__)

static HgRange
rg(double lo, double hi)
{
    return hg_range_exact(lo, hi);
}

/* Output 0's range from n's interval rule at opset, its inputs of dtype in (NULL ranges: omitted) and
 * its output of dtype out. */
static HgRange
rule_at(HgNode *n, gint64 opset, int in, int out, guint n_in, const HgRange *ranges, const HgArray *const *vals)
{
    HgValueShape shp[MAX_IO], oshp;
    const HgValueShape *ishapes[MAX_IO];
    const HgRange *ins[MAX_IO];
    for (guint i = 0; i < n_in; i++) {
        vs_set(&shp[i], in, 1, DIMS(4), NULL);
        ishapes[i] = &shp[i];
        ins[i] = &ranges[i];
    }
    vs_set(&oshp, out, 1, DIMS(4), NULL);
    const HgValueShape *oshapes[1] = {&oshp};
    HgRange r = hg_range_any();
    HgRange *outs[1] = {&r};
    const HgArray *nov[MAX_IO] = {NULL};
    HgRangeCtx ctx = {n, opset, n_in, ins, ishapes, vals ? vals : nov, 1, oshapes, outs};
    hg_op_for_node(n)->range(&ctx);
    return r;
}

static HgRange
rule(const char *op, int in, int out, guint n_in, const HgRange *ranges)
{
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, op, n_in, 1);
    return rule_at(n, 18, in, out, n_in, ranges, NULL);
}
#define F HG_DTYPE_FLOAT
#define RANGES(...) ((const HgRange[]){__VA_ARGS__})

static void
test_range_helpers(void **state)
{
    (void)state;
    expect_range(hg_range_add(rg(1, 2), rg(-INFINITY, 3)), -INFINITY, 5, FALSE);
    /* inf + -inf is NaN, and the bounds stay unbounded rather than NaN */
    expect_range(hg_range_add(rg(-INFINITY, 1), rg(0, INFINITY)), -INFINITY, INFINITY, TRUE);
    expect_range(hg_range_sub(rg(1, 2), rg(-1, 3)), -2, 3, FALSE);
    expect_range(hg_range_mul(rg(-2, 3), rg(4, 5)), -10, 15, FALSE);
    /* 0 * inf: the bound counts it as 0, the flag as NaN */
    expect_range(hg_range_mul(rg(0, 1), rg(1, INFINITY)), 0, INFINITY, TRUE);
    HgRange a = {1, 2, 0.5, FALSE}, b = {-3, -1, 0.25, FALSE};
    assert_true(hg_range_mul(a, b).tiny == 0.125);
    HgRange r = hg_range_recip(rg(2, 4));
    expect_range(r, 0.25, 0.5, FALSE);
    assert_true(r.tiny == 0.25);
    expect_range(hg_range_recip(rg(0, 4)), -INFINITY, INFINITY, FALSE);
    expect_range(hg_range_div(rg(1, 2), rg(-4, -2)), -1, -0.25, FALSE);
    expect_range(hg_range_div(rg(0, 2), rg(-1, 1)), -INFINITY, INFINITY, TRUE); /* 0 / 0 */
    expect_range(hg_range_div(rg(1, INFINITY), rg(1, INFINITY)), 0, INFINITY, TRUE); /* inf / inf */
    expect_range(hg_range_union(rg(1, 2), rg(-1, 0)), -1, 2, FALSE);
    expect_range(hg_range_monotone(rg(-INFINITY, 0), exp, TRUE), 0, 1, FALSE);
    expect_range(hg_range_monotone(rg(1, 2), exp, FALSE), exp(2), exp(1), FALSE);
    /* storage: FP16 overflows to inf past 65504, FP32 past FLT_MAX; integers wrap to the whole type */
    assert_true(isinf(hg_range_fit(rg(0, 70000), HG_DTYPE_FLOAT16).hi));
    assert_true(hg_range_fit(rg(0, 60000), HG_DTYPE_FLOAT16).hi < 60100);
    assert_true(isinf(hg_range_fit(rg(-1e39, 0), HG_DTYPE_FLOAT).lo));
    expect_range(hg_range_fit(rg(-200, 100), HG_DTYPE_INT8), -128, 127, FALSE);
    expect_range(hg_range_fit(rg(-2.5, 100.5), HG_DTYPE_INT8), -2, 100, FALSE);
    expect_range(hg_range_fit(rg(2, 3), HG_DTYPE_BOOL), 1, 1, FALSE);
    HgRange nan_in = {1, 2, 0, TRUE};
    assert_false(hg_range_fit(nan_in, HG_DTYPE_INT32).nan);
    /* subnormal FP16: rounding is absolute there (1e-6 stores as 1.013e-6, 6% up), and never changes
     * a sign (a positive range keeps lo >= 0, a negative one hi <= 0) */
    const float sub[] = {1e-6f, 3e-8f, 2.5e-5f, 1e-7f};
    for (guint i = 0; i < G_N_ELEMENTS(sub); i++) {
        double h = hg_half_to_float(hg_float_to_half(sub[i]));
        HgRange p = hg_range_fit(rg(sub[i], sub[i]), HG_DTYPE_FLOAT16);
        HgRange n = hg_range_fit(rg(-sub[i], -sub[i]), HG_DTYPE_FLOAT16);
        assert_true(p.lo <= h && h <= p.hi && p.lo >= 0);
        assert_true(n.lo <= -h && -h <= n.hi && n.hi <= 0);
    }
    expect_range(hg_range_fit(rg(0, 0), HG_DTYPE_FLOAT16), 0, 0, FALSE);
}

/* Decomposed LayerNorm, PyTorch (Y = d / sqrt(mean(d^2) + eps)) and TF (T = X * m + (B - mean * m))
 * spellings: |Y| <= sqrt(n) per row of n = 8, not |d| / sqrt(eps) = 63246. A row with one spike
 * attains |Y| = sqrt(7), which the bound must hold. */
static void
decomposed_layernorm(const char *dims)
{
    static const char tmpl[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[2,8] X, float[1] E = {1e-5}, float[1] two = {2},\n"
        "   float[8] G = {2, -1, 0.5, 1, 1, 1, 1, 1}, float[8] B = {1, 0, 0, 0, 0, 0, 0, -0.5})\n"
        "  => (float[2,8] Y, float[2,8] T) {\n"
        "  M = ReduceMean <axes = [-1]> (X)\n"
        "  D = Sub(X, M)\n"
        "  P = Pow(D, two)\n"
        "  V = ReduceMean <axes = [-1]> (P)\n"
        "  VE = Add(V, E)\n"
        "  S = Sqrt(VE)\n"
        "  Y = Div(D, S)\n"
        "  Q = Mul(D, D)\n"
        "  V2 = ReduceMean <axes = [-1]> (Q)\n"
        "  VE2 = Add(E, V2)\n"
        "  S2 = Sqrt(VE2)\n"
        "  R = Reciprocal(S2)\n"
        "  MG = Mul(R, G)\n"
        "  M1 = Mul(X, MG)\n"
        "  M2 = Mul(M, MG)\n"
        "  SB = Sub(B, M2)\n"
        "  T = Add(M1, SB)\n"
        "}\n";
    g_autoptr(GString) text = g_string_new(tmpl);
    g_string_replace(text, "float[2,8]", dims, 0);
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_parse_text(text->str, text->len, &error);
    assert_non_null(m);
    g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, NULL, 0, &error);
    assert_non_null(shapes);
    HgInputRange in = {"X", {-100, 100, 0, FALSE}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, &in, 1);
    const HgRange *q = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Q"));
    assert_true(q->lo >= 0); /* Mul(D, D) is a square */
    const HgRange *y = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Y"));
    assert_false(y->nan);
    assert_true(y->hi >= sqrt(7) && y->hi <= sqrt(8) * 1.02);
    assert_true(y->lo <= -sqrt(7) && y->lo >= -sqrt(8) * 1.02);
    /* |G| <= 2, |B| <= 1: 2 sqrt(7) + 1 is attained (spike where G = 2, B = 1) */
    const HgRange *t = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "T"));
    assert_false(t->nan);
    assert_true(t->hi >= 2 * sqrt(7) + 1 && t->hi <= 2 * sqrt(8) * 1.02 + 1.1);
    assert_true(t->lo <= -(2 * sqrt(7) - 0.5) && t->lo >= -(2 * sqrt(8) * 1.02 + 1.1));
}

static void
test_range_decomposed_layernorm(void **state)
{
    (void)state;
    decomposed_layernorm("float[2,8]");
    /* The rule asks only for the averaged axis: a symbolic batch gives the same bounds. */
    decomposed_layernorm("float[batch,8]");
}

/* Decomposed RMSNorm as the torch exporters write it for LLaMA-family models: X * Reciprocal(S)
 * (dynamo) and Div(1, S) * X (TorchScript), S = Sqrt(mean(X^2) + eps), and by hand X * Pow(VE, -0.5)
 * and X / Pow(VE, 0.5): |Y| <= sqrt(8), which a spike row attains (100 / sqrt(100^2 / 8) =
 * sqrt(8)); a numerator of 3 scales it. The interval bound would be 100 / sqrt(1e-5) = 31623.
 * Another tensor times the same reciprocal is not normalized by it, nor is X by a power of -0.4: no
 * such bound. */
static void
test_range_decomposed_rmsnorm(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float[batch,8] X, float[batch,8] Z, float[1] E = {1e-5}, float two = {2}, float one = {1},\n"
        "   float three = {3}, float mhalf = {-0.5}, float half = {0.5}, float other = {-0.4})\n"
        "  => (float[batch,8] Y1, float[batch,8] Y2, float[batch,8] Y3, float[batch,8] Y4,\n"
        "      float[batch,8] Y5, float[batch,8] Y6, float[batch,8] Y7) {\n"
        "  P = Pow(X, two)\n"
        "  V = ReduceMean <axes = [-1]> (P)\n"
        "  VE = Add(V, E)\n"
        "  S = Sqrt(VE)\n"
        "  R = Reciprocal(S)\n"
        "  Y1 = Mul(X, R)\n"
        "  D1 = Div(one, S)\n"
        "  Y2 = Mul(D1, X)\n"
        "  D3 = Div(three, S)\n"
        "  Y3 = Mul(X, D3)\n"
        "  Y4 = Mul(Z, R)\n"
        "  RP = Pow(VE, mhalf)\n"
        "  Y5 = Mul(RP, X)\n"
        "  SP = Pow(VE, half)\n"
        "  Y6 = Div(X, SP)\n"
        "  RO = Pow(VE, other)\n"
        "  Y7 = Mul(X, RO)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    HgInputRange in[2] = {{"X", {-100, 100, 0, FALSE}}, {"Z", {-100, 100, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, in, 2);
    const char *names[] = {"Y1", "Y2", "Y3", "Y5", "Y6"};
    for (int i = 0; i < 5; i++) {
        const HgRange *y = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, names[i]));
        double c = i == 2 ? 3 : 1;
        if (y->nan || !(y->hi >= c * sqrt(8) * (1 - 1e-6) && y->hi <= c * sqrt(8) * 1.02 &&
                        y->lo <= -c * sqrt(8) * (1 - 1e-6) && y->lo >= -c * sqrt(8) * 1.02))
            fail_msg("%s: [%g, %g] nan %d, expected +-%g sqrt(8)", names[i], y->lo, y->hi, y->nan, c);
    }
    const HgRange *y4 = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Y4"));
    assert_true(y4->hi >= 30000);
    const HgRange *y7 = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Y7"));
    assert_true(y7->hi >= 1000);
}

/* GRN (ConvNeXt V2): G / (mean of G over the channels + eps), G >= 0, lies in [0, 16] for 16 channels
 * (a row with one nonzero entry attains 16 up to eps), whatever G's own bound (1e4); over a sum it
 * lies in [0, 1]. Not when the numerator can be negative, nor when it is not the tensor averaged,
 * nor when the averaged axis is symbolic. */
static void
test_range_share_of_own_sum(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float[2,3,16] G, float[2,3,16] H, float[2,3,16] X, float[2,n] W, float eps = {1e-6},\n"
        "   int64[1] last = {-1})\n"
        "  => (float[2,3,16] Y, float[2,3,16] S, float[2,3,16] N, float[2,3,16] O, float[2,n] U) {\n"
        "  M = ReduceMean <axes = [-1]> (G)\n"
        "  ME = Add(M, eps)\n"
        "  Y = Div(G, ME)\n"
        "  T = ReduceSum(G, last)\n"
        "  S = Div(G, T)\n"
        "  MX = ReduceMean <axes = [-1]> (X)\n"
        "  MXE = Add(eps, MX)\n"
        "  N = Div(X, MXE)\n"
        "  O = Div(H, ME)\n"
        "  MW = ReduceMean <axes = [-1]> (W)\n"
        "  U = Div(W, MW)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    HgInputRange in[4] = {{"G", {0, 1e4, 0, FALSE}}, {"H", {0, 1e4, 0, FALSE}}, {"X", {-1, 1e4, 0, FALSE}},
                          {"W", {0, 1e4, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, in, 4);
    const HgRange *y = RANGE_OF(ranges, m, "Y");
    if (!(y->lo == 0 && y->hi >= 16 && y->hi <= 16 * (1 + 1e-5)))
        fail_msg("Y: [%g, %g]", y->lo, y->hi);
    const HgRange *sm = RANGE_OF(ranges, m, "S");
    if (!(sm->lo == 0 && sm->hi >= 1 && sm->hi <= 1 + 1e-5))
        fail_msg("S: [%g, %g]", sm->lo, sm->hi);
    const char *loose[] = {"N", "O", "U"};
    for (int i = 0; i < 3; i++) {
        const HgRange *r = RANGE_OF(ranges, m, loose[i]);
        if (!(r->hi > 1e6))
            fail_msg("%s: [%g, %g] should keep the interval bound", loose[i], r->lo, r->hi);
    }
    /* The interpreter's quotients lie inside, on rows that reach the bound (one nonzero entry) and
     * on random rows. */
    g_autoptr(HgArray) gv = hg_array_new(HG_DTYPE_FLOAT, 3, (gint64[]){2, 3, 16}, NULL);
    float *gp = gv->data;
    guint32 seed = 7;
    for (int i = 0; i < 96; i++) {
        seed = seed * 1103515245u + 12345u;
        gp[i] = i < 16 ? (i == 5 ? 1e4f : 0.0f) : (float)((seed >> 8) % 10000) * 0.37f;
    }
    /* G through ReduceMean, Add, Div and ReduceSum, Div, by the kernels */
    g_autoptr(GHashTable) vals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)hg_array_unref);
    g_hash_table_insert(vals, (gpointer) "G", hg_array_ref(gv));
    for (guint i = 0; i < m->graph->initializers->len; i++) {
        HgTensor *t = m->graph->initializers->pdata[i];
        g_hash_table_insert(vals, t->name, hg_array_from_tensor(t, NULL));
    }
    const char *chain[] = {"M", "ME", "Y", "T", "S"};
    for (guint c = 0; c < G_N_ELEMENTS(chain); c++) {
        const HgNode *node = ((HgValue *)g_hash_table_lookup(m->graph->values, chain[c]))->producer;
        HgArray *ins[2] = {NULL, NULL}, *out = NULL;
        for (guint k = 0; k < node->n_inputs && k < 2; k++)
            ins[k] = g_hash_table_lookup(vals, node->inputs[k]->name);
        g_autoptr(GError) err = NULL;
        assert_true(eval_checked(node, 17, 1, node->n_inputs, ins, 1, &out, &err));
        g_hash_table_insert(vals, (gpointer)chain[c], out);
    }
    const char *checked[] = {"Y", "S"};
    for (int k = 0; k < 2; k++) {
        const HgRange *r = k ? sm : y;
        const HgArray *o = g_hash_table_lookup(vals, checked[k]);
        double top = 0;
        for (gint64 i = 0; i < o->numel; i++) {
            double v = hg_array_get_f64(o, i);
            top = MAX(top, v);
            if (!(v >= r->lo && v <= r->hi))
                fail_msg("%s[%" G_GINT64_FORMAT "] = %.9g outside [%g, %g]", checked[k], i, v, r->lo, r->hi);
        }
        assert_true(top >= (k ? 1 : 16) * (1 - 1e-6)); /* the spike row reaches the bound */
    }
}

/* The averaged axis symbolic: its length is unknown, so the rule must not apply (the quotient's
 * interval bound |d| / sqrt(eps) stays). */
static void
test_range_decomposed_layernorm_symbolic_row(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[2,n] X, float[1] E = {1e-5}, float[1] two = {2}) => (float[2,n] Y) {\n"
        "  M = ReduceMean <axes = [-1]> (X)\n"
        "  D = Sub(X, M)\n"
        "  P = Pow(D, two)\n"
        "  V = ReduceMean <axes = [-1]> (P)\n"
        "  VE = Add(V, E)\n"
        "  S = Sqrt(VE)\n"
        "  Y = Div(D, S)\n"
        "}\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_parse_text(text, strlen(text), &error);
    assert_non_null(m);
    g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, NULL, 0, &error);
    assert_non_null(shapes);
    HgInputRange in = {"X", {-100, 100, 0, FALSE}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, &in, 1);
    const HgRange *y = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Y"));
    assert_true(y->hi >= 200 / sqrt(1e-5) * 0.99);
}

/* DETR's normalised CumSum: c / (c[last] + eps) lies in [0, 1] when x >= 0 (and without eps, 0 / 0
 * may be NaN); not when x can be negative, nor when the Slice is not the last element. */
static void
test_range_normalized_cumsum(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float[1,6,3] X, float[1,6,3] Z) => (float[1,6,3] Y, float[1,6,3] N, float[1,6,3] W, "
        "float[1,6,3] U)\n"
        "  <int64 ax = {1}, int64[1] s = {-1}, int64[1] e = {100}, int64[1] a = {1}, int64[1] s2 = {4},\n"
        "   float eps = {1e-6}> {\n"
        "  C = CumSum(X, ax)\n"
        "  L = Slice(C, s, e, a)\n"
        "  D = Add(L, eps)\n"
        "  Y = Div(C, D)\n"
        "  N = Div(C, L)\n"
        "  CZ = CumSum(Z, ax)\n"
        "  LZ = Slice(CZ, s, e, a)\n"
        "  DZ = Add(LZ, eps)\n"
        "  W = Div(CZ, DZ)\n"
        "  L2 = Slice(C, s2, e, a)\n"
        "  D2 = Add(L2, eps)\n"
        "  U = Div(C, D2)\n"
        "}\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_parse_text(text, strlen(text), &error);
    assert_non_null(m);
    g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, NULL, 0, &error);
    assert_non_null(shapes);
    HgInputRange in[2] = {{"X", {0, 50, 0, FALSE}}, {"Z", {-1, 50, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, in, 2);
    const HgRange *y = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "Y"));
    assert_true(y->lo >= 0 && y->lo <= 0 && y->hi >= 1 && y->hi <= 1.001 && !y->nan);
    const HgRange *n = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "N"));
    assert_true(n->hi <= 1.001 && n->nan); /* 0 / 0 when a column of X is all zero */
    const HgRange *w = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "W"));
    assert_true(w->hi > 2); /* negative terms: the partial sums can pass the last one */
    const HgRange *u = hg_ranges_get(ranges, g_hash_table_lookup(m->graph->values, "U"));
    assert_true(u->hi > 2); /* the fifth element is not the last: c[5] can exceed it */
}

static void
test_range_rules(void **state)
{
    (void)state;
    expect_range(rule("Exp", F, F, 1, RANGES(rg(0, 1))), 1, exp(1), FALSE);
    expect_range(rule("Sigmoid", F, F, 1, RANGES(rg(-INFINITY, 0))), 0, 0.5, FALSE);
    expect_range(rule("Tanh", F, F, 1, RANGES(rg(-1, INFINITY))), tanh(-1), 1, FALSE);
    expect_range(rule("Sqrt", F, F, 1, RANGES(rg(-1, 4))), 0, 2, TRUE);
    expect_range(rule("Log", F, F, 1, RANGES(rg(0, exp(1)))), -INFINITY, 1, FALSE);
    expect_range(rule("Reciprocal", F, F, 1, RANGES(rg(-4, -0.5))), -2, -0.25, FALSE);
    expect_range(rule("Abs", F, F, 1, RANGES(rg(-3, 2))), 0, 3, FALSE);
    expect_range(rule("Neg", F, F, 1, RANGES(rg(-3, 2))), -2, 3, FALSE);
    expect_range(rule("Floor", F, F, 1, RANGES(rg(-2.5, 2.5))), -3, 2, FALSE);
    expect_range(rule("Sign", F, F, 1, RANGES(rg(0, 2))), 0, 1, FALSE);
    HgRange relu_in = {-3, 2, 0.5, FALSE};
    HgRange relu = rule("Relu", F, F, 1, RANGES(relu_in));
    expect_range(relu, 0, 2, FALSE);
    assert_true(relu.tiny == 0.5);
    expect_range(rule("HardSwish", F, F, 1, RANGES(rg(-4, 4))), -0.375 - 5e-6, 4 + 5e-6, FALSE);
    /* alpha is the float 0.2f; the rule pads by the rounding of alpha * x + beta */
    const double a02 = (double)0.2f, pad_hs = (a02 + 0.5) * 1e-6;
    expect_range(rule("HardSigmoid", F, F, 1, RANGES(rg(-1, 1))), 0.5 - a02 - pad_hs, 0.5 + a02 + pad_hs, FALSE);
    expect_range(rule("Elu", F, F, 1, RANGES(rg(-INFINITY, 2))), -1, 2, FALSE);
    /* Add, Mul, Div and Pow */
    expect_range(rule("Add", F, F, 2, RANGES(rg(1, 2), rg(-5, 1))), -4, 3, FALSE);
    expect_range(rule("Mul", F, F, 2, RANGES(rg(-1, 2), rg(-5, 1))), -10, 5, FALSE);
    /* 1 / 0 is inf, not NaN: a stays away from 0 */
    expect_range(rule("Div", F, F, 2, RANGES(rg(1, 2), rg(-1, 1))), -INFINITY, INFINITY, FALSE);
    expect_range(rule("Div", F, F, 2, RANGES(rg(0, 2), rg(-1, 1))), -INFINITY, INFINITY, TRUE);
    expect_range(rule("Div", HG_DTYPE_INT64, HG_DTYPE_INT64, 2, RANGES(rg(7, 9), rg(2, 3))), 2, 4, FALSE);
    expect_range(rule("Pow", F, F, 2, RANGES(rg(-3, 2), rg(2, 2))), 0, 9, FALSE);
    expect_range(rule("Pow", F, F, 2, RANGES(rg(-2, 3), rg(3, 3))), -8, 27, FALSE);
    expect_range(rule("Pow", F, F, 2, RANGES(rg(-1, 4), rg(0.5, 0.5))), 0, 2, TRUE);
    expect_range(rule("Pow", F, F, 2, RANGES(rg(1, 2), rg(-1, 2))), 0.5, 4, FALSE);
    /* FP32 overflow: 1e38 * 10 is inf in float */
    expect_range(rule("Mul", F, F, 2, RANGES(rg(0, 1e38), rg(0, 10))), 0, INFINITY, FALSE);
    /* variadic, Where, Clip */
    expect_range(rule("Max", F, F, 3, RANGES(rg(1, 2), rg(-5, 1), rg(0, 3))), 1, 3, FALSE);
    expect_range(rule("Min", F, F, 3, RANGES(rg(1, 2), rg(-5, 1), rg(0, 3))), -5, 1, FALSE);
    expect_range(rule("Sum", F, F, 3, RANGES(rg(1, 2), rg(-5, 1), rg(0, 3))), -4, 6, FALSE);
    expect_range(rule("Mean", F, F, 2, RANGES(rg(1, 2), rg(-5, 1))), -2, 1.5, FALSE);
    expect_range(rule("Where", F, F, 3, RANGES(rg(0, 1), rg(-5, 1), rg(0, 3))), -5, 3, FALSE);
    expect_range(rule("Clip", F, F, 3, RANGES(rg(-10, 10), rg(-1, -1), rg(2, 2))), -1, 2, FALSE);
    {
        g_autoptr(HgModel) m = NULL;
        HgNode *n = node_in_model(&m, "Clip", 1, 1);
        attr_f(n, "min", -1);
        attr_f(n, "max", 1);
        expect_range(rule_at(n, 6, F, F, 1, RANGES(rg(-5, 0.5)), NULL), -1, 0.5, FALSE);
        HgNode *l = node_in_model(&m, "LeakyRelu", 1, 1);
        attr_f(l, "alpha", 0.25f);
        expect_range(rule_at(l, 16, F, F, 1, RANGES(rg(-8, 5)), NULL), -2, 5, FALSE);
        HgNode *c = node_in_model(&m, "Cast", 1, 1);
        attr_i(c, "to", HG_DTYPE_FLOAT16);
        assert_true(isinf(rule_at(c, 18, F, HG_DTYPE_FLOAT16, 1, RANGES(rg(0, 1e5)), NULL).hi));
        HgNode *ci = node_in_model(&m, "Cast", 1, 1);
        attr_i(ci, "to", HG_DTYPE_INT32);
        expect_range(rule_at(ci, 18, F, HG_DTYPE_INT32, 1, RANGES(rg(-2.7, 3.9)), NULL), -2, 3, FALSE);
        HgNode *c8 = node_in_model(&m, "Cast", 1, 1);
        attr_i(c8, "to", HG_DTYPE_INT8);
        expect_range(rule_at(c8, 18, F, HG_DTYPE_INT8, 1, RANGES(rg(-1000, 1000)), NULL), -128, 127, FALSE);
    }
    /* comparisons decided by the ranges */
    expect_range(rule("Greater", F, HG_DTYPE_BOOL, 2, RANGES(rg(3, 4), rg(1, 2))), 1, 1, FALSE);
    expect_range(rule("Less", F, HG_DTYPE_BOOL, 2, RANGES(rg(3, 4), rg(1, 2))), 0, 0, FALSE);
    expect_range(rule("Equal", F, HG_DTYPE_BOOL, 2, RANGES(rg(0, 4), rg(1, 2))), 0, 1, FALSE);
    expect_range(rule("IsNaN", F, HG_DTYPE_BOOL, 1, RANGES(rg(0, 4))), 0, 0, FALSE);
}

/* Gelu's rule: f(lo), f(hi) on monotone stretches, the minimum -0.16997 (tanh: -0.17004) when the
 * range spans x = -0.752; -inf brings NaN (-inf * 0) and the limit 0. */
static void
test_range_gelu(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = NULL;
    HgNode *n = node_in_model(&m, "Gelu", 1, 1);
    HgRange r = rule_at(n, 20, F, F, 1, RANGES(rg(-1, 2)), NULL);
    assert_true(r.lo <= -0.16997120747990369 && r.lo > -0.16998);
    assert_true(r.hi >= 1.9544997361036416 && r.hi < 1.95451);
    assert_false(r.nan);
    /* increasing stretch: [gelu(0.5), gelu(2)] */
    r = rule_at(n, 20, F, F, 1, RANGES(rg(0.5, 2)), NULL);
    assert_true(r.lo <= 0.34573123063700656 && r.lo > 0.345730);
    assert_true(r.hi >= 1.9544997361036416 && r.hi < 1.95451);
    /* decreasing stretch: [gelu(-1), gelu(-3)] */
    r = rule_at(n, 20, F, F, 1, RANGES(rg(-3, -1)), NULL);
    assert_true(r.lo <= -0.15865525393145707 && r.lo > -0.158656);
    assert_true(r.hi >= -0.00404969409489031 && r.hi < -0.0040496);
    /* the left tail reaches 0 only in the limit, where the kernel gives NaN */
    r = rule_at(n, 20, F, F, 1, RANGES(rg(-INFINITY, -3)), NULL);
    assert_true(r.lo <= -0.00404969409489031 && r.lo > -0.0040498);
    assert_true(r.hi >= 0 && r.hi < 1e-30);
    assert_true(r.nan);
    /* FP16 output: the storage's rounding widens it */
    r = rule_at(n, 20, HG_DTYPE_FLOAT16, HG_DTYPE_FLOAT16, 1, RANGES(rg(-1, 2)), NULL);
    assert_true(r.hi >= 1.955);
    attr_s(n, "approximate", "tanh");
    r = rule_at(n, 20, F, F, 1, RANGES(rg(-1, 1)), NULL);
    assert_true(r.lo <= -0.17004075057125403 && r.lo > -0.170042);
    assert_true(r.hi >= 0.8411919906082768 && r.hi < 0.8412);

    /* the kernel's values on a fine grid, far into the tails, lie inside the rule's range */
    enum { N = 2001 };
    double x[N];
    for (int form = 0; form < 2; form++) {
        g_autoptr(HgModel) mk = NULL;
        HgNode *k = node_in_model(&mk, "Gelu", 1, 1);
        if (form)
            attr_s(k, "approximate", "tanh");
        for (int lo = -40; lo <= 0; lo += 5) {
            for (int i = 0; i < N; i++)
                x[i] = lo + (lo + 45.0 - lo) * i / (N - 1);
            r = rule_at(k, 20, F, F, 1, RANGES(rg(lo, lo + 45)), NULL);
            g_autoptr(HgArray) y = run1(k, 20, 1, ARRS(arr(F, 1, DIMS(N), x)), NULL);
            for (int i = 0; i < N; i++) {
                double v = hg_array_get_f64(y, i);
                if (!(v >= r.lo && v <= r.hi))
                    fail_msg("Gelu form %d at %.9g: %.9g outside [%.9g, %.9g]", form, x[i], v, r.lo, r.hi);
            }
        }
    }
}

/* Kernel outputs on a grid over [-6, 6] lie inside the rule's range for that interval. */
static void
test_range_contains_kernel(void **state)
{
    (void)state;
    static const char *const ops[] = {"Abs", "Neg", "Relu", "Exp", "Sigmoid", "Tanh", "Erf", "Softplus",
                                      "Softsign", "Elu", "Selu", "HardSigmoid", "HardSwish", "Mish", "Gelu",
                                      "LeakyRelu", "ThresholdedRelu", "Floor", "Ceil", "Round", "Sign",
                                      "Sin", "Cos", "Sqrt", "Log", "Reciprocal"};
    enum { N = 241 };
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = -6 + 12.0 * i / (N - 1);
    for (gsize k = 0; k < G_N_ELEMENTS(ops); k++) {
        g_autoptr(HgModel) m = NULL;
        HgNode *n = node_in_model(&m, ops[k], 1, 1);
        HgRange r = rule_at(n, 18, F, F, 1, RANGES(rg(-6, 6)), NULL);
        g_autoptr(HgArray) y = run1(n, 18, 1, ARRS(arr(F, 1, DIMS(N), x)), NULL);
        assert_non_null(y);
        for (int i = 0; i < N; i++) {
            double v = hg_array_get_f64(y, i);
            gboolean ok = isnan(v) ? r.nan
                                   : v >= r.lo - fabs(r.lo) * 1e-6 && v <= r.hi + fabs(r.hi) * 1e-6 &&
                                         (v == 0 || fabs(v) >= r.tiny * (1 - 1e-6));
            if (!ok)
                fail_msg("%s(%g) = %g outside [%g, %g] (tiny %g, nan %d)", ops[k], x[i], v, r.lo, r.hi,
                         r.tiny, r.nan);
        }
    }
}

HG_TEST_MAIN("ops_elementwise",
             cmocka_unit_test(test_family_rows),
             cmocka_unit_test(test_add_broadcast),
             cmocka_unit_test(test_sub_mul_div_integers),
             cmocka_unit_test(test_mod),
             cmocka_unit_test(test_pow_types),
             cmocka_unit_test(test_prelu),
             cmocka_unit_test(test_compare),
             cmocka_unit_test(test_equal_strings),
             cmocka_unit_test(test_logic),
             cmocka_unit_test(test_unary_math),
             cmocka_unit_test(test_activations),
             cmocka_unit_test(test_gelu),
             cmocka_unit_test(test_unary_integers),
             cmocka_unit_test(test_isinf_isnan),
             cmocka_unit_test(test_identity),
             cmocka_unit_test(test_fp16_rounds_once),
             cmocka_unit_test(test_fp16_broadcast_paths),
             cmocka_unit_test(test_variadic),
             cmocka_unit_test(test_where),
             cmocka_unit_test(test_cast_numbers),
             cmocka_unit_test(test_cast_strings),
             cmocka_unit_test(test_castlike),
             cmocka_unit_test(test_clip_versions),
             cmocka_unit_test(test_dropout_versions),
             cmocka_unit_test(test_infer_broadcast),
             cmocka_unit_test(test_infer_per_op),
             cmocka_unit_test(test_infer_folds),
             cmocka_unit_test(test_cost),
             cmocka_unit_test(test_range_helpers),
             cmocka_unit_test(test_range_rules),
             cmocka_unit_test(test_range_decomposed_layernorm),
             cmocka_unit_test(test_range_decomposed_rmsnorm),
             cmocka_unit_test(test_range_share_of_own_sum),
             cmocka_unit_test(test_range_decomposed_layernorm_symbolic_row),
             cmocka_unit_test(test_range_normalized_cumsum),
             cmocka_unit_test(test_range_contains_kernel),
             cmocka_unit_test(test_range_gelu))
