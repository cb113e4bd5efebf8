/* Kernels and shape rules of the tensor families (src/ops/shape.c, movement.c, index.c and resize.c,
 * and what they share, tensor.c), checked against values worked out by hand or with numpy (the
 * numbers are written here). Each test builds one node with the IR API, runs the op's eval or infer
 * at a chosen opset, and checks values, shapes, types and errors: the opset-version differences
 * (attributes that became inputs), FP16 behaviour (raw moves, one rounding, overflow to inf) and
 * bounds checks on indices taken from data. */
#include "opstest.h"
#include "ops/kernel.h"
#include "ranges.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define F32(rank, dims, ...) arr_f32(HG_DTYPE_FLOAT, (rank), (dims), F32S(__VA_ARGS__))

/* A 1-D int64 array. */
#define VEC(...) arr_i64(1, DIMS(sizeof(INTS(__VA_ARGS__)) / sizeof(gint64)), INTS(__VA_ARGS__))
#define SCALAR_I64(v) arr_i64(0, NULL, INTS(v))

/* A float array 0, 1, 2, ... of the given shape. */
static HgArray *
iota(int dtype, guint rank, const gint64 *dims)
{
    HgArray *a = hg_array_new(dtype, rank, dims, NULL);
    assert_non_null(a);
    g_autofree double *v = g_new(double, a->numel + 1);
    for (gint64 i = 0; i < a->numel; i++)
        v[i] = (double)i;
    hg_array_store_f64(a, v);
    return a;
}

static void
assert_ok_at(const Result *r, const char *file, int line)
{
    if (!r->ok) {
        print_error("%s:%d: eval failed: %s\n", file, line, r->error ? r->error->message : "?");
        _fail(file, line);
    }
}
#define assert_ok(r) assert_ok_at(&(r), __FILE__, __LINE__)

#define assert_shape(a, dtype, rank, dims) hg_assert_shape_at((a), (dtype), (rank), (dims), __FILE__, __LINE__)

/* Within tol, absolute; an infinity matches only itself, NaN nothing. */
static gboolean
within_abs(double got, double want, double tol)
{
    return fabs(got - want) <= tol || (isinf(got) && got == want);
}

/* Every element of a (read as double) within tol of want. */
#define VALUES(...) ((const double[]){__VA_ARGS__}), (sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
#define assert_values(a, ...) hg_assert_values_at((a), VALUES(__VA_ARGS__), 1e-5, within_abs, __FILE__, __LINE__)
#define assert_values_tol(a, tol, ...)                                                             \
    hg_assert_values_at((a), VALUES(__VA_ARGS__), (tol), within_abs, __FILE__, __LINE__)

/* Exact int64 comparison. */
#define assert_ints(a, ...)                                                                        \
    hg_assert_ints_at((a), INTS(__VA_ARGS__), sizeof(INTS(__VA_ARGS__)) / sizeof(gint64), __FILE__, __LINE__)

/* ---------------------------------------------------------------- inference helpers */

typedef struct {
    HgValueShape in[MAX_IO];
    HgValueShape out[MAX_IO];
    gboolean ok;
    GError *error;
} Infer;

/* An input whose value is known (v is taken). */
static void
vs_value(HgValueShape *s, HgArray *v)
{
    vs_set(s, v->dtype, (int)v->rank, v->dims, NULL);
    s->value = v;
}

static void
vs_sym(HgValueShape *s, int i, const char *name)
{
    s->dims[i].v = -1;
    s->dims[i].sym = g_intern_string(name);
}

/* Run n's shape rule at opset with the n_in inputs in f->in (rank 0 dtype UNDEFINED entries with
 * present[i] FALSE are omitted). */
static void
infer(Node *n, gint64 opset, Infer *f, guint n_in)
{
    const HgValueShape *ins[MAX_IO];
    HgValueShape *outs[MAX_IO];
    for (guint i = 0; i < n_in; i++)
        ins[i] = n->node->inputs[i] ? &f->in[i] : NULL;
    for (guint k = 0; k < MAX_IO; k++) {
        hg_vshape_unknown(&f->out[k]);
        outs[k] = &f->out[k];
    }
    f->ok = infer_node(n->node, opset, n_in, ins, n->node->n_outputs, outs, &f->error);
    assert_true(f->ok == (f->error == NULL));
}

static void
infer_free(Infer *f)
{
    for (int k = 0; k < MAX_IO; k++) {
        hg_vshape_unknown(&f->in[k]);
        hg_vshape_unknown(&f->out[k]);
        f->in[k].rank = 0; /* a present scalar unless a test sets it */
    }
    g_clear_error(&f->error);
}

#define assert_vshape(s, dtype, rank, dims) hg_assert_vshape_at((s), (dtype), (rank), (dims), __FILE__, __LINE__)

/* ---------------------------------------------------------------- the table */

static void
test_family_rows(void **state)
{
    (void)state;
    /* Every row of these families is reachable by name and has all three functions. */
    assert_family_rows("shape", 10);
    assert_family_rows("movement", 10);
    assert_family_rows("index", 6);
    assert_family_rows("resize", 3);
}

/* ---------------------------------------------------------------- Shape, Size, Constant */

static void
test_shape(void **state)
{
    (void)state;
    Node n = node_new("Shape", "x", "y");
    Result r = RUN(&n, 13, hg_array_new(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4), NULL));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT64, 1, DIMS(3));
    assert_ints(r.out[0], 2, 3, 4);
    result_free(&r);
    node_free(&n);

    /* opset 15: start/end, negative from the end, clamped */
    n = node_new("Shape", "x", "y");
    attr_i(n.node, "start", 1);
    attr_i(n.node, "end", -1);
    r = RUN(&n, 15, hg_array_new(HG_DTYPE_FLOAT, 4, DIMS(2, 3, 4, 5), NULL));
    assert_ok(r);
    assert_ints(r.out[0], 3, 4);
    result_free(&r);
    node_free(&n);

    n = node_new("Shape", "x", "y");
    attr_i(n.node, "start", -10);
    attr_i(n.node, "end", 10);
    r = RUN(&n, 15, hg_array_new(HG_DTYPE_FLOAT, 2, DIMS(7, 9), NULL));
    assert_ok(r);
    assert_ints(r.out[0], 7, 9);
    result_free(&r);
    node_free(&n);
}

static void
test_shape_infer_value(void **state)
{
    (void)state;
    /* [N, 3, 4]: the whole shape is not a constant, but Shape(start=1) is [3, 4]. */
    Node n = node_new("Shape", "x", "y");
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 3, DIMS(-1, 3, 4), NULL);
    vs_sym(&f.in[0], 0, "N");
    infer(&n, 15, &f, 1);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 1, DIMS(3));
    assert_null(f.out[0].value);
    infer_free(&f);
    node_free(&n);

    n = node_new("Shape", "x", "y");
    attr_i(n.node, "start", 1);
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 3, DIMS(-1, 3, 4), NULL);
    infer(&n, 15, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 1, DIMS(2));
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 3, 4);
    infer_free(&f);
    node_free(&n);

    /* Size folds when every dim is known; stays unknown otherwise. */
    n = node_new("Size", "x", "y");
    vs_set(&f.in[0], HG_DTYPE_FLOAT16, 2, DIMS(5, 6), NULL);
    infer(&n, 13, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 0, NULL);
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 30);
    infer_free(&f);
    vs_set(&f.in[0], HG_DTYPE_FLOAT16, 2, DIMS(-1, 6), NULL);
    infer(&n, 13, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 0, NULL);
    assert_null(f.out[0].value);
    infer_free(&f);
    node_free(&n);
}

static void
test_size(void **state)
{
    (void)state;
    Node n = node_new("Size", "x", "y");
    Result r = RUN(&n, 13, hg_array_new(HG_DTYPE_FLOAT16, 3, DIMS(2, 3, 5), NULL));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT64, 0, NULL);
    assert_ints(r.out[0], 30);
    result_free(&r);
    node_free(&n);
}

static void
test_constant(void **state)
{
    (void)state;
    Node n = node_new("Constant", "", "y");
    attr_floats(n.node, "value_floats", 3, F32S(1.5f, -2, 3));
    Result r = RUN(&n, 12, NULL);
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3));
    assert_values(r.out[0], 1.5, -2, 3);
    result_free(&r);
    node_free(&n);

    n = node_new("Constant", "", "y");
    attr_i(n.node, "value_int", -7);
    r = RUN(&n, 12, NULL);
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT64, 0, NULL);
    assert_ints(r.out[0], -7);
    result_free(&r);
    node_free(&n);

    /* A tensor attribute keeps its type (FP16 here) and shape; inference knows its value. */
    n = node_new("Constant", "", "y");
    HgArray *t16 = arr_f32(HG_DTYPE_FLOAT16, 2, DIMS(2, 1), F32S(0.1f, 70000));
    attr_t(n.node, "value", t16);
    hg_array_unref(t16);
    r = RUN(&n, 13, NULL);
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 1));
    assert_values(r.out[0], 0.0999755859375, INFINITY);
    result_free(&r);
    Infer f = {0};
    infer(&n, 13, &f, 0);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT16, 2, DIMS(2, 1));
    assert_non_null(f.out[0].value);
    infer_free(&f);
    node_free(&n);

    n = node_new("Constant", "", "y");
    hg_node_add_attr(n.node, hg_attr_new("sparse_value", HG_ATTR_SPARSE_TENSOR));
    RUN_FAILS(&n, 13, HG_ERROR_UNSUPPORTED, "sparse", NULL);
    node_free(&n);
}

static void
test_constant_of_shape(void **state)
{
    (void)state;
    /* default: float 0 */
    Node n = node_new("ConstantOfShape", "s", "y");
    Result r = RUN(&n, 9, VEC(2, 3));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    assert_values(r.out[0], 0, 0, 0, 0, 0, 0);
    result_free(&r);
    node_free(&n);

    n = node_new("ConstantOfShape", "s", "y");
    HgArray *v32 = arr_f32(HG_DTYPE_INT32, 1, DIMS(1), F32S(-5));
    attr_t(n.node, "value", v32);
    hg_array_unref(v32);
    r = RUN(&n, 9, VEC(3));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT32, 1, DIMS(3));
    assert_ints(r.out[0], -5, -5, -5);
    result_free(&r);
    node_free(&n);

    /* a zero dim gives an empty tensor; a negative one is an error */
    n = node_new("ConstantOfShape", "s", "y");
    r = RUN(&n, 9, VEC(0));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(0));
    result_free(&r);
    RUN_FAILS(&n, 9, HG_ERROR_INVALID, "negative", VEC(2, -1));

    /* inference: the shape value gives dims and a folded value; only its length gives the rank */
    Infer f = {0};
    vs_value(&f.in[0], VEC(2, 2));
    infer(&n, 9, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2));
    assert_non_null(f.out[0].value);
    infer_free(&f);
    vs_set(&f.in[0], HG_DTYPE_INT64, 1, DIMS(3), NULL);
    infer(&n, 9, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 3, DIMS(-1, -1, -1));
    infer_free(&f);
    node_free(&n);
}

static void
test_range(void **state)
{
    (void)state;
    Node n = node_new("Range", "s,l,d", "y");
    /* int32, negative delta: ceil((4 - 10) / -3) = 2 */
    Result r = RUN(&n, 11, arr_f32(HG_DTYPE_INT32, 0, NULL, F32S(10)), arr_f32(HG_DTYPE_INT32, 0, NULL, F32S(4)),
                   arr_f32(HG_DTYPE_INT32, 0, NULL, F32S(-3)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT32, 1, DIMS(2));
    assert_ints(r.out[0], 10, 7);
    result_free(&r);

    r = RUN(&n, 11, F32(0, NULL, 1), F32(0, NULL, 5), F32(0, NULL, 1.5f));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3));
    assert_values(r.out[0], 1, 2.5, 4);
    result_free(&r);

    /* a range that goes the other way is empty, not an error */
    r = RUN(&n, 11, SCALAR_I64(5), SCALAR_I64(1), SCALAR_I64(2));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT64, 1, DIMS(0));
    result_free(&r);

    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "delta", SCALAR_I64(0), SCALAR_I64(3), SCALAR_I64(0));

    /* inference folds a known range */
    Infer f = {0};
    vs_value(&f.in[0], SCALAR_I64(0));
    vs_value(&f.in[1], SCALAR_I64(7));
    vs_value(&f.in[2], SCALAR_I64(3));
    infer(&n, 11, &f, 3);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 1, DIMS(3));
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 0, 3, 6);
    infer_free(&f);
    node_free(&n);
}

/* ---------------------------------------------------------------- views */

static void
test_reshape(void **state)
{
    (void)state;
    Node n = node_new("Reshape", "x,s", "y");
    /* 0 copies, -1 infers */
    Result r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4)), VEC(0, -1, 2));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 6, 2));
    assert_values_tol(r.out[0], 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                      23);
    result_free(&r);

    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "reshape", iota(HG_DTYPE_FLOAT, 1, DIMS(6)), VEC(4, -1));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "-1", iota(HG_DTYPE_FLOAT, 1, DIMS(6)), VEC(-1, -1));
    node_free(&n);

    /* allowzero (opset 14): 0 is a real zero dim */
    n = node_new("Reshape", "x,s", "y");
    attr_i(n.node, "allowzero", 1);
    r = RUN(&n, 14, hg_array_new(HG_DTYPE_FLOAT, 2, DIMS(0, 3), NULL), VEC(3, 0));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 0));
    result_free(&r);
    node_free(&n);
}

static void
test_reshape_infer(void **state)
{
    (void)state;
    Node n = node_new("Reshape", "x,s", "y");
    Infer f = {0};
    /* [B, 12, 64] with [0, -1]: B is copied (by name) and cancels out of the -1 */
    vs_set(&f.in[0], HG_DTYPE_FLOAT16, 3, DIMS(-1, 12, 64), NULL);
    vs_sym(&f.in[0], 0, "B");
    vs_value(&f.in[1], VEC(0, -1));
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT16, 2, DIMS(-1, 768));
    assert_string_equal(f.out[0].dims[0].sym, "B");
    infer_free(&f);

    /* unknown shape value of known length: rank only */
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(4, 4), NULL);
    vs_set(&f.in[1], HG_DTYPE_INT64, 1, DIMS(3), NULL);
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 3, DIMS(-1, -1, -1));
    infer_free(&f);

    /* inconsistent: 16 elements into 3 x 5 */
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(4, 4), NULL);
    vs_value(&f.in[1], VEC(3, 5));
    infer(&n, 13, &f, 2);
    assert_hg_error(f.error, HG_ERROR_INVALID, "reshape");
    infer_free(&f);
    node_free(&n);
}

static void
test_flatten(void **state)
{
    (void)state;
    Node n = node_new("Flatten", "x", "y");
    attr_i(n.node, "axis", -1);
    Result r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(6, 4));
    result_free(&r);
    node_free(&n);

    n = node_new("Flatten", "x", "y");
    attr_i(n.node, "axis", 0);
    r = RUN(&n, 9, iota(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 24));
    result_free(&r);
    node_free(&n);

    /* default axis 1 keeps a symbolic batch by name */
    n = node_new("Flatten", "x", "y");
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 4, DIMS(-1, 3, 4, 5), NULL);
    vs_sym(&f.in[0], 0, "N");
    infer(&n, 13, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 60));
    assert_string_equal(f.out[0].dims[0].sym, "N");
    infer_free(&f);
    node_free(&n);
}

static void
test_squeeze_unsqueeze(void **state)
{
    (void)state;
    /* opset 11: axes attribute */
    Node n = node_new("Squeeze", "x", "y");
    attr_ints(n.node, "axes", 1, INTS(-1));
    Result r = RUN(&n, 11, iota(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 3));
    result_free(&r);
    node_free(&n);

    /* opset 13: axes input; squeezing a dim that is not 1 is an error */
    n = node_new("Squeeze", "x,a", "y");
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1)), VEC(0, 2));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3));
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "squeeze", iota(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1)), VEC(1));
    node_free(&n);

    /* no axes: every 1 goes */
    n = node_new("Squeeze", "x", "y");
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 4, DIMS(1, 3, 1, 2)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 2));
    result_free(&r);
    node_free(&n);

    n = node_new("Unsqueeze", "x", "y");
    attr_ints(n.node, "axes", 2, INTS(0, 3));
    r = RUN(&n, 11, iota(HG_DTYPE_FLOAT, 2, DIMS(3, 4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 3, 4, 1));
    result_free(&r);
    node_free(&n);

    /* opset 13: unsorted and negative axes index the output */
    n = node_new("Unsqueeze", "x,a", "y");
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 2, DIMS(3, 4)), VEC(-1, 1));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(3, 1, 4, 1));
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "repeated", iota(HG_DTYPE_FLOAT, 2, DIMS(3, 4)), VEC(1, 1));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", iota(HG_DTYPE_FLOAT, 2, DIMS(3, 4)), VEC(4));

    /* inference keeps symbolic dims and folds shape vectors */
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 4), NULL);
    vs_sym(&f.in[0], 0, "S");
    vs_value(&f.in[1], VEC(0));
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 3, DIMS(1, -1, 4));
    assert_string_equal(f.out[0].dims[1].sym, "S");
    infer_free(&f);
    vs_value(&f.in[0], SCALAR_I64(42));
    vs_value(&f.in[1], VEC(0));
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 1, DIMS(1));
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 42);
    infer_free(&f);
    node_free(&n);
}

/* ---------------------------------------------------------------- movement */

static void
test_transpose(void **state)
{
    (void)state;
    /* default perm reverses */
    Node n = node_new("Transpose", "x", "y");
    Result r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 2, DIMS(2, 3)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 2));
    assert_values(r.out[0], 0, 3, 1, 4, 2, 5);
    result_free(&r);
    node_free(&n);

    /* NCHW -> NHWC on sizes that cross the tile edges; FP16 bits move unchanged (a NaN payload too) */
    n = node_new("Transpose", "x", "y");
    attr_ints(n.node, "perm", 4, INTS(0, 2, 3, 1));
    const gint64 N = 2, C = 37, H = 5, W = 41;
    HgArray *x = hg_array_new(HG_DTYPE_FLOAT16, 4, DIMS(N, C, H, W), NULL);
    guint16 *xd = x->data;
    for (gint64 i = 0; i < x->numel; i++)
        xd[i] = (guint16)(i * 7919 % 65536);
    HgArray *keep = hg_array_ref(x);
    r = RUN(&n, 13, x);
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 4, DIMS(N, H, W, C));
    const guint16 *yd = r.out[0]->data;
    gint64 bad = 0;
    for (gint64 a = 0; a < N; a++)
        for (gint64 c = 0; c < C; c++)
            for (gint64 h = 0; h < H; h++)
                for (gint64 w = 0; w < W; w++)
                    bad += yd[((a * H + h) * W + w) * C + c] != xd[((a * C + c) * H + h) * W + w];
    assert_int_equal(bad, 0);
    hg_array_unref(keep);
    result_free(&r);

    /* perm must be a permutation of the rank */
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "perm", iota(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4)));
    node_free(&n);
}

static void
test_concat(void **state)
{
    (void)state;
    Node n = node_new("Concat", "a,b", "y");
    attr_i(n.node, "axis", -1);
    Result r = RUN(&n, 13, F32(2, DIMS(2, 1), 1, 2), F32(2, DIMS(2, 2), 3, 4, 5, 6));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    assert_values(r.out[0], 1, 3, 4, 2, 5, 6);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "dim", F32(2, DIMS(2, 1), 1, 2), F32(2, DIMS(3, 1), 3, 4, 5));

    /* strings move by reference */
    HgArray *s0 = hg_array_new(HG_DTYPE_STRING, 1, DIMS(1), NULL), *s1 = hg_array_new(HG_DTYPE_STRING, 1, DIMS(1), NULL);
    g_bytes_unref(s0->strings->pdata[0]);
    s0->strings->pdata[0] = g_bytes_new_static("ab", 2);
    g_bytes_unref(s1->strings->pdata[0]);
    s1->strings->pdata[0] = g_bytes_new_static("c", 1);
    r = RUN(&n, 13, s0, s1);
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_STRING, 1, DIMS(2));
    gsize len;
    assert_memory_equal(g_bytes_get_data(r.out[0]->strings->pdata[0], &len), "ab", 2);
    assert_memory_equal(g_bytes_get_data(r.out[0]->strings->pdata[1], &len), "c", 1);
    result_free(&r);

    /* inference: the axis adds up, other dims take the known value */
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 2), NULL);
    vs_set(&f.in[1], HG_DTYPE_FLOAT, 2, DIMS(5, 3), NULL);
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(5, 5));
    infer_free(&f);
    node_free(&n);
}

static void
test_split(void **state)
{
    (void)state;
    /* opset 11: split attribute */
    Node n = node_new("Split", "x", "a,b");
    attr_ints(n.node, "split", 2, INTS(1, 3));
    Result r = RUN(&n, 11, F32(1, DIMS(4), 1, 2, 3, 4));
    assert_ok(r);
    assert_values(r.out[0], 1);
    assert_values(r.out[1], 2, 3, 4);
    result_free(&r);
    node_free(&n);

    /* opset 13: split input, along axis 1 */
    n = node_new("Split", "x,s", "a,b");
    attr_i(n.node, "axis", 1);
    r = RUN(&n, 13, F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), VEC(2, 1));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 2));
    assert_values(r.out[0], 1, 2, 4, 5);
    assert_values(r.out[1], 3, 6);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "split", F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), VEC(2, 2));
    node_free(&n);

    /* opset 18: num_outputs, the last chunk smaller (7 = 3 + 3 + 1) */
    n = node_new("Split", "x", "a,b,c");
    attr_i(n.node, "num_outputs", 3);
    r = RUN(&n, 18, F32(1, DIMS(7), 1, 2, 3, 4, 5, 6, 7));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 3);
    assert_values(r.out[1], 4, 5, 6);
    assert_values(r.out[2], 7);
    result_free(&r);
    node_free(&n);

    /* no split: equal parts for the outputs there are */
    n = node_new("Split", "x", "a,b");
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(6, -1), NULL);
    vs_sym(&f.in[0], 1, "T");
    infer(&n, 13, &f, 1);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, -1));
    assert_vshape(&f.out[1], HG_DTYPE_FLOAT, 2, DIMS(3, -1));
    assert_string_equal(f.out[1].dims[1].sym, "T");
    infer_free(&f);
    node_free(&n);
}

static void
test_slice(void **state)
{
    (void)state;
    /* opset 9: attributes; ends past the dim clamp */
    Node n = node_new("Slice", "x", "y");
    attr_ints(n.node, "starts", 2, INTS(1, 0));
    attr_ints(n.node, "ends", 2, INTS(2, 1000));
    Result r = RUN(&n, 9, iota(HG_DTYPE_FLOAT, 2, DIMS(2, 4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 4));
    assert_values(r.out[0], 4, 5, 6, 7);
    result_free(&r);
    node_free(&n);

    /* opset 10+: inputs, negative axes and steps */
    n = node_new("Slice", "x,s,e,a,t", "y");
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 2, DIMS(2, 5)), VEC(-1), VEC(G_MININT64), VEC(-1), VEC(-2));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    assert_values(r.out[0], 4, 2, 0, 9, 7, 5);
    result_free(&r);
    /* start past the end gives an empty slice */
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 2, DIMS(2, 5)), VEC(10), VEC(20), VEC(1), VEC(1));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 0));
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "step", iota(HG_DTYPE_FLOAT, 2, DIMS(2, 5)), VEC(0), VEC(3), VEC(1), VEC(0));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", iota(HG_DTYPE_FLOAT, 2, DIMS(2, 5)), VEC(0), VEC(3), VEC(2),
              VEC(1));

    /* inference: x[1:INT_MAX] of a symbolic dim is unknown, x[0:INT_MAX] keeps it */
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 8), NULL);
    vs_sym(&f.in[0], 0, "L");
    vs_value(&f.in[1], VEC(0, 2));
    vs_value(&f.in[2], VEC(G_MAXINT64, -2));
    vs_value(&f.in[3], VEC(0, 1));
    vs_value(&f.in[4], VEC(1, 1));
    infer(&n, 13, &f, 5);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 4));
    assert_string_equal(f.out[0].dims[0].sym, "L");
    infer_free(&f);
    node_free(&n);
}

static void
test_slice_fold_chain(void **state)
{
    (void)state;
    /* Shape -> Slice -> Concat: what a shape subgraph looks like; every step folds */
    Node n = node_new("Slice", "x,s,e", "y");
    Infer f = {0};
    vs_value(&f.in[0], VEC(8, 16, 32));
    vs_value(&f.in[1], VEC(1));
    vs_value(&f.in[2], VEC(3));
    infer(&n, 13, &f, 3);
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 16, 32);
    HgArray *sliced = hg_array_ref(f.out[0].value);
    infer_free(&f);
    node_free(&n);

    n = node_new("Concat", "a,b", "y");
    attr_i(n.node, "axis", 0);
    vs_value(&f.in[0], VEC(-1));
    vs_value(&f.in[1], sliced);
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 1, DIMS(3));
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, -1, 16, 32);
    infer_free(&f);
    node_free(&n);
}

static void
test_expand_tile(void **state)
{
    (void)state;
    /* bidirectional: [3, 1] with shape [2, 1, 2] -> [2, 3, 2] */
    Node n = node_new("Expand", "x,s", "y");
    Result r = RUN(&n, 13, F32(2, DIMS(3, 1), 1, 2, 3), VEC(2, 1, 2));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 3, 2));
    assert_values(r.out[0], 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "broadcast", F32(1, DIMS(3), 1, 2, 3), VEC(2));
    node_free(&n);

    n = node_new("Tile", "x,r", "y");
    r = RUN(&n, 13, F32(2, DIMS(2, 2), 1, 2, 3, 4), VEC(2, 3));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(4, 6));
    assert_values(r.out[0], 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "repeats", F32(2, DIMS(2, 2), 1, 2, 3, 4), VEC(2));
    node_free(&n);
}

static void
test_pad(void **state)
{
    (void)state;
    /* opset 2: pads and value attributes; negative pads crop */
    Node n = node_new("Pad", "x", "y");
    attr_ints(n.node, "pads", 4, INTS(1, -1, 0, 1));
    attr_f(n.node, "value", 9);
    Result r = RUN(&n, 7, F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 3));
    assert_values(r.out[0], 9, 9, 9, 2, 3, 9, 5, 6, 9);
    result_free(&r);
    node_free(&n);

    /* opset 11: pads and constant value inputs */
    n = node_new("Pad", "x,p,v", "y");
    r = RUN(&n, 11, arr_f32(HG_DTYPE_INT32, 2, DIMS(1, 2), F32S(1, 2)), VEC(0, 1, 0, 2),
            arr_f32(HG_DTYPE_INT32, 0, NULL, F32S(-4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT32, 2, DIMS(1, 5));
    assert_ints(r.out[0], -4, 1, 2, -4, -4);
    result_free(&r);
    node_free(&n);

    /* reflect (beyond one period), edge, and wrap (opset 19) */
    n = node_new("Pad", "x,p", "y");
    attr_s(n.node, "mode", "reflect");
    r = RUN(&n, 13, F32(1, DIMS(3), 1, 2, 3), VEC(5, 5));
    assert_ok(r);
    assert_values(r.out[0], 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2);
    result_free(&r);
    node_free(&n);

    n = node_new("Pad", "x,p", "y");
    attr_s(n.node, "mode", "edge");
    r = RUN(&n, 13, F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), VEC(1, 0, 0, 2));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 3, 3, 3, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6);
    result_free(&r);
    node_free(&n);

    /* wrap: the data as a torus, also for a pad wider than the axis (numpy's iterative padding gives
     * 1 where the torus gives 3 at the left edge) */
    n = node_new("Pad", "x,p", "y");
    attr_s(n.node, "mode", "wrap");
    r = RUN(&n, 19, F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), VEC(0, 4, 1, 1));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(3, 8));
    assert_values(r.out[0], 3, 1, 2, 3, 1, 2, 3, 1, 6, 4, 5, 6, 4, 5, 6, 4, 3, 1, 2, 3, 1, 2, 3, 1);
    result_free(&r);
    node_free(&n);

    /* opset 18: axes input (pads only for the listed axes) */
    n = node_new("Pad", "x,p,v,a", "y");
    r = RUN(&n, 18, F32(2, DIMS(2, 2), 1, 2, 3, 4), VEC(1, 0), NULL, VEC(-1));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    assert_values(r.out[0], 0, 1, 2, 0, 3, 4);
    result_free(&r);
    RUN_FAILS(&n, 18, HG_ERROR_INVALID, "pads", F32(2, DIMS(2, 2), 1, 2, 3, 4), VEC(1, 0, 0), NULL, VEC(-1));
    node_free(&n);

    /* edge padding of an empty axis has nothing to copy */
    n = node_new("Pad", "x,p", "y");
    attr_s(n.node, "mode", "edge");
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "empty", hg_array_new(HG_DTYPE_FLOAT, 1, DIMS(0), NULL), VEC(1, 1));
    node_free(&n);
}

static void
test_depth_space(void **state)
{
    (void)state;
    Node n = node_new("DepthToSpace", "x", "y");
    attr_i(n.node, "blocksize", 2);
    Result r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 4, DIMS(1, 8, 2, 2)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 2, 4, 4));
    assert_values(r.out[0], 0, 8, 1, 9, 16, 24, 17, 25, 2, 10, 3, 11, 18, 26, 19, 27, 4, 12, 5, 13, 20, 28, 21, 29,
                  6, 14, 7, 15, 22, 30, 23, 31);
    result_free(&r);
    node_free(&n);

    n = node_new("DepthToSpace", "x", "y");
    attr_i(n.node, "blocksize", 2);
    attr_s(n.node, "mode", "CRD");
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 4, DIMS(1, 8, 2, 2)));
    assert_ok(r);
    assert_values(r.out[0], 0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15, 16, 20, 17, 21, 24, 28, 25, 29,
                  18, 22, 19, 23, 26, 30, 27, 31);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "blocksize", iota(HG_DTYPE_FLOAT, 4, DIMS(1, 6, 2, 2)));
    node_free(&n);

    n = node_new("SpaceToDepth", "x", "y");
    attr_i(n.node, "blocksize", 2);
    r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 4, DIMS(1, 1, 4, 4)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 4, 2, 2));
    assert_values(r.out[0], 0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15);
    result_free(&r);
    node_free(&n);
}

static void
test_trilu(void **state)
{
    (void)state;
    Node n = node_new("Trilu", "x,k", "y");
    Result r = RUN(&n, 14, arr_i64(2, DIMS(3, 3), INTS(1, 2, 3, 4, 5, 6, 7, 8, 9)), SCALAR_I64(1));
    assert_ok(r);
    assert_ints(r.out[0], 0, 2, 3, 0, 0, 6, 0, 0, 0);
    result_free(&r);
    /* k far outside the matrix keeps everything */
    r = RUN(&n, 14, arr_i64(2, DIMS(2, 2), INTS(1, 2, 3, 4)), SCALAR_I64(G_MININT64));
    assert_ok(r);
    assert_ints(r.out[0], 1, 2, 3, 4);
    result_free(&r);
    node_free(&n);

    n = node_new("Trilu", "x,k", "y");
    attr_i(n.node, "upper", 0);
    r = RUN(&n, 14, arr_i64(3, DIMS(1, 3, 3), INTS(1, 2, 3, 4, 5, 6, 7, 8, 9)), SCALAR_I64(-1));
    assert_ok(r);
    assert_ints(r.out[0], 0, 0, 0, 4, 0, 0, 7, 8, 0);
    result_free(&r);
    node_free(&n);
}

/* ---------------------------------------------------------------- indexing */

static void
test_gather(void **state)
{
    (void)state;
    Node n = node_new("Gather", "x,i", "y");
    attr_i(n.node, "axis", 1);
    Result r = RUN(&n, 13, iota(HG_DTYPE_FLOAT, 2, DIMS(2, 3)), arr_i64(2, DIMS(1, 2), INTS(-1, 0)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 1, 2));
    assert_values(r.out[0], 2, 0, 5, 3);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", iota(HG_DTYPE_FLOAT, 2, DIMS(2, 3)), VEC(3));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", iota(HG_DTYPE_FLOAT, 2, DIMS(2, 3)), VEC(-4));
    node_free(&n);

    /* the typical shape fold: Gather(Shape(x), 0) is a scalar */
    n = node_new("Gather", "x,i", "y");
    Infer f = {0};
    vs_value(&f.in[0], VEC(4, 7, 9));
    vs_value(&f.in[1], SCALAR_I64(1));
    infer(&n, 13, &f, 2);
    assert_vshape(&f.out[0], HG_DTYPE_INT64, 0, NULL);
    assert_non_null(f.out[0].value);
    assert_ints(f.out[0].value, 7);
    infer_free(&f);
    /* an out-of-range constant index is an inconsistency inference reports */
    vs_value(&f.in[0], VEC(4, 7, 9));
    vs_value(&f.in[1], SCALAR_I64(3));
    infer(&n, 13, &f, 2);
    assert_hg_error(f.error, HG_ERROR_INVALID, "out of range");
    infer_free(&f);
    node_free(&n);
}

static void
test_gather_elements_nd(void **state)
{
    (void)state;
    Node n = node_new("GatherElements", "x,i", "y");
    attr_i(n.node, "axis", 1);
    Result r = RUN(&n, 13, F32(2, DIMS(2, 2), 1, 2, 3, 4), arr_i64(2, DIMS(2, 2), INTS(0, 0, -1, 0)));
    assert_ok(r);
    assert_values(r.out[0], 1, 1, 4, 3);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", F32(2, DIMS(2, 2), 1, 2, 3, 4),
              arr_i64(2, DIMS(2, 2), INTS(0, 0, 2, 0)));
    /* indices larger than the data along another axis would read out of bounds */
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "indices dim", F32(2, DIMS(2, 2), 1, 2, 3, 4),
              arr_i64(2, DIMS(3, 1), INTS(0, 0, 0)));
    node_free(&n);

    n = node_new("GatherND", "x,i", "y");
    attr_i(n.node, "batch_dims", 1);
    r = RUN(&n, 13, arr_f32(HG_DTYPE_INT32, 3, DIMS(2, 2, 2), F32S(0, 1, 2, 3, 4, 5, 6, 7)),
            arr_i64(2, DIMS(2, 1), INTS(1, 0)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT32, 2, DIMS(2, 2));
    assert_ints(r.out[0], 2, 3, 4, 5);
    result_free(&r);
    node_free(&n);

    n = node_new("GatherND", "x,i", "y");
    r = RUN(&n, 13, F32(2, DIMS(2, 2), 0, 1, 2, 3), arr_i64(2, DIMS(2, 2), INTS(0, 0, 1, -1)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(2));
    assert_values(r.out[0], 0, 3);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", F32(2, DIMS(2, 2), 0, 1, 2, 3),
              arr_i64(2, DIMS(1, 2), INTS(2, 0)));
    node_free(&n);
}

static void
test_scatter_elements(void **state)
{
    (void)state;
    /* opset 16: add with duplicate indices */
    Node n = node_new("ScatterElements", "x,i,u", "y");
    attr_i(n.node, "axis", 1);
    attr_s(n.node, "reduction", "add");
    Result r = RUN(&n, 16, F32(2, DIMS(1, 5), 1, 2, 3, 4, 5), arr_i64(2, DIMS(1, 2), INTS(1, 1)),
                   F32(2, DIMS(1, 2), 1.1f, 2.1f));
    assert_ok(r);
    assert_values(r.out[0], 1, 5.2, 3, 4, 5);
    result_free(&r);

    /* FP16: the sum is computed in FP32 and rounded once. 2048 + 1 + 1 is 2050 (exact in FP16); rounding
     * each partial sum would give 2048 twice over. */
    r = RUN(&n, 16, arr_f32(HG_DTYPE_FLOAT16, 2, DIMS(1, 2), F32S(2048, 0)), arr_i64(2, DIMS(1, 2), INTS(0, 0)),
            arr_f32(HG_DTYPE_FLOAT16, 2, DIMS(1, 2), F32S(1, 1)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(1, 2));
    assert_values(r.out[0], 2050, 0);
    result_free(&r);
    node_free(&n);

    /* opset 18: max and min */
    n = node_new("ScatterElements", "x,i,u", "y");
    attr_s(n.node, "reduction", "max");
    r = RUN(&n, 18, F32(1, DIMS(3), 1, 5, 3), VEC(1, 2, 2), F32(1, DIMS(3), 4, 2, 7));
    assert_ok(r);
    assert_values(r.out[0], 1, 5, 7);
    result_free(&r);
    node_free(&n);
    n = node_new("ScatterElements", "x,i,u", "y");
    attr_s(n.node, "reduction", "min");
    r = RUN(&n, 18, arr_i64(1, DIMS(3), INTS(1, 5, 3)), VEC(1, -1), arr_i64(1, DIMS(2), INTS(4, -9)));
    assert_ok(r);
    assert_ints(r.out[0], 1, 4, -9);
    result_free(&r);
    node_free(&n);

    /* no reduction: the data's elements move raw; a bad index is an error */
    n = node_new("ScatterElements", "x,i,u", "y");
    r = RUN(&n, 13, F32(2, DIMS(2, 2), 1, 2, 3, 4), arr_i64(2, DIMS(1, 2), INTS(1, 0)), F32(2, DIMS(1, 2), 8, 9));
    assert_ok(r);
    assert_values(r.out[0], 1, 9, 8, 4);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", F32(2, DIMS(2, 2), 1, 2, 3, 4),
              arr_i64(2, DIMS(1, 2), INTS(2, 0)), F32(2, DIMS(1, 2), 8, 9));
    node_free(&n);
}

static void
test_scatter_nd(void **state)
{
    (void)state;
    Node n = node_new("ScatterND", "x,i,u", "y");
    Result r = RUN(&n, 13, F32(1, DIMS(8), 1, 2, 3, 4, 5, 6, 7, 8), arr_i64(2, DIMS(4, 1), INTS(4, 3, 1, 7)),
                   F32(1, DIMS(4), 9, 10, 11, 12));
    assert_ok(r);
    assert_values(r.out[0], 1, 11, 3, 10, 9, 6, 7, 12);
    result_free(&r);
    /* slices: indices [[1]] replace row 1 */
    r = RUN(&n, 13, F32(2, DIMS(2, 2), 1, 2, 3, 4), arr_i64(2, DIMS(1, 1), INTS(-1)), F32(2, DIMS(1, 2), 7, 8));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 7, 8);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", F32(2, DIMS(2, 2), 1, 2, 3, 4), arr_i64(2, DIMS(1, 1), INTS(2)),
              F32(2, DIMS(1, 2), 7, 8));
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "updates", F32(2, DIMS(2, 2), 1, 2, 3, 4), arr_i64(2, DIMS(1, 1), INTS(0)),
              F32(2, DIMS(1, 3), 7, 8, 9));
    node_free(&n);

    n = node_new("ScatterND", "x,i,u", "y");
    attr_s(n.node, "reduction", "mul");
    r = RUN(&n, 16, F32(1, DIMS(3), 1, 2, 3), arr_i64(2, DIMS(2, 1), INTS(2, 2)), F32(1, DIMS(2), 2, 5));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 30);
    result_free(&r);
    node_free(&n);
}

/* ---------------------------------------------------------------- Resize, Upsample */

static void
test_resize_nearest(void **state)
{
    (void)state;
    /* opset 10 (asymmetric, ceil when downsampling) and opset 11 asymmetric with nearest_mode floor
     * differ on a 0.6 downsample: x = 0, 1.67, 3.33 */
    Node n = node_new("Resize", "x,s", "y");
    Result r = RUN(&n, 10, F32(1, DIMS(5), 1, 2, 3, 4, 5), F32(1, DIMS(1), 0.6f));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 1, DIMS(3));
    assert_values(r.out[0], 1, 3, 5);
    result_free(&r);
    node_free(&n);

    n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "coordinate_transformation_mode", "asymmetric");
    attr_s(n.node, "nearest_mode", "floor");
    r = RUN(&n, 11, F32(1, DIMS(5), 1, 2, 3, 4, 5), F32(1, DIMS(0)), F32(1, DIMS(1), 0.6f));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 4);
    result_free(&r);
    node_free(&n);

    /* opset 13 sizes, half_pixel, round_prefer_ceil: x = -0.17, 0.5, 1.17, 1.83, 2.5, 3.17 */
    n = node_new("Resize", "x,roi,s,z", "y");
    attr_s(n.node, "nearest_mode", "round_prefer_ceil");
    r = RUN(&n, 13, F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, NULL, VEC(1, 6));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 6));
    assert_values(r.out[0], 1, 2, 2, 3, 4, 4);
    result_free(&r);
    RUN_FAILS(&n, 13, HG_ERROR_INVALID, "sizes", F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, NULL, VEC(6));
    node_free(&n);

    /* Upsample opset 7 (scales attribute) and 9 (input): floor of x / scale */
    n = node_new("Upsample", "x", "y");
    attr_floats(n.node, "scales", 2, F32S(1, 2));
    r = RUN(&n, 7, F32(2, DIMS(1, 2), 1, 2));
    assert_ok(r);
    assert_values(r.out[0], 1, 1, 2, 2);
    result_free(&r);
    node_free(&n);
    n = node_new("Upsample", "x,s", "y");
    attr_s(n.node, "mode", "linear");
    r = RUN(&n, 9, F32(2, DIMS(1, 2), 1, 3), F32(1, DIMS(2), 1, 2));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 3, 3);
    result_free(&r);
    node_free(&n);
}

static void
test_resize_linear_cubic(void **state)
{
    (void)state;
    /* linear: half_pixel (opset 11 default) vs asymmetric (opset 10) */
    Node n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "linear");
    Result r = RUN(&n, 11, F32(2, DIMS(1, 2), 1, 3), F32(1, DIMS(0)), F32(1, DIMS(2), 1, 2));
    assert_ok(r);
    assert_values(r.out[0], 1, 1.5, 2.5, 3);
    result_free(&r);
    node_free(&n);
    n = node_new("Resize", "x,s", "y");
    attr_s(n.node, "mode", "linear");
    r = RUN(&n, 10, F32(2, DIMS(1, 2), 1, 3), F32(1, DIMS(2), 1, 2));
    assert_ok(r);
    assert_values(r.out[0], 1, 2, 3, 3);
    result_free(&r);
    node_free(&n);

    /* align_corners: 4 -> 3 */
    n = node_new("Resize", "x,roi,s,z", "y");
    attr_s(n.node, "mode", "linear");
    attr_s(n.node, "coordinate_transformation_mode", "align_corners");
    r = RUN(&n, 13, F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, NULL, VEC(1, 3));
    assert_ok(r);
    assert_values(r.out[0], 1, 2.5, 4);
    result_free(&r);
    node_free(&n);

    /* cubic, half_pixel, A = -0.75, x2 (the ONNX reference's numbers) */
    n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "cubic");
    r = RUN(&n, 13, F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, F32(1, DIMS(2), 1, 2));
    assert_ok(r);
    assert_values(r.out[0], 0.89453125, 1.19140625, 1.66796875, 2.296875, 2.703125, 3.33203125, 3.80859375,
                  4.10546875);
    result_free(&r);
    node_free(&n);
}

static void
test_resize_opset18_19(void **state)
{
    (void)state;
    HgArray *x16 = iota(HG_DTYPE_FLOAT, 4, DIMS(1, 1, 4, 4));
    float *xd = x16->data;
    for (int i = 0; i < 16; i++)
        xd[i] += 1;

    /* antialias linear and cubic downsampling by 0.6 (opset 18) */
    Node n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "linear");
    attr_i(n.node, "antialias", 1);
    Result r = RUN(&n, 18, hg_array_copy(x16), NULL, F32(1, DIMS(4), 1, 1, 0.6f, 0.6f));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 2, 2));
    assert_values_tol(r.out[0], 1e-5, 2.875, 4.5, 9.375, 11.0);
    result_free(&r);
    node_free(&n);
    n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "cubic");
    attr_i(n.node, "antialias", 1);
    r = RUN(&n, 18, hg_array_copy(x16), NULL, F32(1, DIMS(4), 1, 1, 0.6f, 0.6f));
    assert_ok(r);
    assert_values_tol(r.out[0], 1e-5, 2.518072135, 4.285886181, 9.589328318, 11.357142364);
    result_free(&r);
    node_free(&n);

    /* axes (18) with tf_crop_and_resize: roi and sizes name axes 3 and 2 */
    n = node_new("Resize", "x,roi,s,z", "y");
    attr_s(n.node, "mode", "linear");
    attr_s(n.node, "coordinate_transformation_mode", "tf_crop_and_resize");
    attr_ints(n.node, "axes", 2, INTS(3, 2));
    r = RUN(&n, 18, hg_array_copy(x16), F32(1, DIMS(4), 0.6f, 0.4f, 0.8f, 0.6f), NULL, VEC(3, 3));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 3, 3));
    assert_values_tol(r.out[0], 1e-4, 7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10.0, 10.3, 10.6);
    result_free(&r);
    node_free(&n);

    /* extrapolation outside the roi */
    n = node_new("Resize", "x,roi,s,z", "y");
    attr_s(n.node, "mode", "linear");
    attr_s(n.node, "coordinate_transformation_mode", "tf_crop_and_resize");
    attr_f(n.node, "extrapolation_value", 10);
    r = RUN(&n, 13, hg_array_copy(x16), F32(1, DIMS(8), 0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f), NULL,
            VEC(1, 1, 3, 3));
    assert_ok(r);
    assert_values_tol(r.out[0], 1e-4, 7.6, 10, 10, 12.4, 10, 10, 10, 10, 10);
    result_free(&r);
    node_free(&n);

    /* keep_aspect_ratio_policy not_larger: sizes 7x8 of 2x2 keep the 3.5 ratio -> 7x7 */
    n = node_new("Resize", "x,roi,s,z", "y");
    attr_ints(n.node, "axes", 2, INTS(2, 3));
    attr_s(n.node, "keep_aspect_ratio_policy", "not_larger");
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 4, DIMS(-1, 3, 2, 2), NULL);
    vs_sym(&f.in[0], 0, "N");
    vs_value(&f.in[3], VEC(7, 8));
    infer(&n, 18, &f, 4);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 4, DIMS(-1, 3, 7, 7));
    assert_string_equal(f.out[0].dims[0].sym, "N");
    infer_free(&f);
    node_free(&n);

    /* half_pixel_symmetric (19) on a 1.7 upscale of the width: 4 -> 6 */
    n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "linear");
    attr_s(n.node, "coordinate_transformation_mode", "half_pixel_symmetric");
    r = RUN(&n, 19, F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, F32(1, DIMS(2), 1, 1.7f));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(1, 6));
    assert_values_tol(r.out[0], 1e-5, 1.029411806, 1.617647084, 2.205882361, 2.794117639, 3.382352916, 3.970588194);
    result_free(&r);
    node_free(&n);
    hg_array_unref(x16);
}

static void
test_resize_fp16(void **state)
{
    (void)state;
    /* Bilinear 2x2 -> 3x3 of FP16 data: computed in FP32 across both axes and rounded once. The centre
     * is 1377.25 -> 1377 in FP16; rounding after the first pass would give 1378. */
    Node n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "linear");
    Result r = RUN(&n, 13, arr_f32(HG_DTYPE_FLOAT16, 2, DIMS(2, 2), F32S(969, 1048, 1546, 1946)), NULL,
                   F32(1, DIMS(2), 1.5f, 1.5f));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(3, 3));
    assert_values(r.out[0], 969, 1008.5, 1048, 1258, 1377, 1497, 1546, 1746, 1946);
    result_free(&r);
    node_free(&n);

    /* cubic overshoot past 65504 is inf in FP16 */
    n = node_new("Resize", "x,roi,s", "y");
    attr_s(n.node, "mode", "cubic");
    r = RUN(&n, 13, arr_f32(HG_DTYPE_FLOAT16, 1, DIMS(4), F32S(0, 0, 65504, 65504)), NULL, F32(1, DIMS(1), 2));
    assert_ok(r);
    gboolean saw_inf = FALSE;
    for (gint64 i = 0; i < r.out[0]->numel; i++)
        saw_inf |= isinf(hg_array_get_f64(r.out[0], i));
    assert_true(saw_inf);
    result_free(&r);

    /* nearest moves FP16 bits unchanged */
    node_free(&n);
    n = node_new("Resize", "x,roi,s", "y");
    HgArray *x = hg_array_new(HG_DTYPE_FLOAT16, 1, DIMS(2), NULL);
    ((guint16 *)x->data)[0] = 0x7e01; /* a NaN with payload */
    ((guint16 *)x->data)[1] = 0x0001; /* the smallest subnormal */
    r = RUN(&n, 13, x, NULL, F32(1, DIMS(1), 2));
    assert_ok(r);
    const guint16 *y = r.out[0]->data;
    assert_int_equal(y[0], 0x7e01);
    assert_int_equal(y[1], 0x7e01);
    assert_int_equal(y[2], 0x0001);
    assert_int_equal(y[3], 0x0001);
    result_free(&r);
    node_free(&n);
}

/* ---------------------------------------------------------------- robustness */

/* Every op of these families, at several opsets: inference with nothing known succeeds (only attributes
 * that are missing or wrong may fail it), and evaluation on odd inputs (scalars, empty and 1-D int
 * tensors) returns either outputs or an error, never a crash (ASan and UBSan run this too). */
static void
test_unknown_and_odd_inputs(void **state)
{
    (void)state;
    static const gint64 opsets[] = {7, 10, 11, 13, 18, 21};
    for (int id = 1; id < HG_OP_COUNT; id++) {
        const HgOpDef *d = hg_op_by_id((HgOpId)id);
        if (strcmp(d->family, "shape") && strcmp(d->family, "movement") && strcmp(d->family, "index") &&
            strcmp(d->family, "resize"))
            continue;
        for (guint oi = 0; oi < G_N_ELEMENTS(opsets); oi++) {
            Node n = node_new(d->name, "a,b,c,d,e", "y,z");
            Infer f = {0};
            for (int k = 0; k < 5; k++) {
                f.in[k].dtype = HG_DTYPE_UNDEFINED;
                f.in[k].rank = -1;
            }
            infer(&n, opsets[oi], &f, 5);
            gboolean may_fail = !strcmp(d->name, "Constant") || !strcmp(d->name, "DepthToSpace") ||
                                !strcmp(d->name, "SpaceToDepth");
            if (!f.ok && !may_fail)
                fail_msg("%s at opset %" G_GINT64_FORMAT ": %s", d->name, opsets[oi], f.error->message);
            infer_free(&f);

            /* eval on the same scalar, empty and vector inputs in every slot */
            HgArray *kinds[4] = {
                F32(0, NULL, 1),
                hg_array_new(HG_DTYPE_FLOAT, 2, DIMS(0, 3), NULL),
                VEC(2, -1),
                arr_i64(2, DIMS(2, 1), INTS(7, -9)),
            };
            for (guint k = 0; k < 4; k++) {
                for (guint n_in = 1; n_in <= 5; n_in++) {
                    HgArray *ins[5] = {NULL};
                    for (guint i = 0; i < n_in; i++)
                        ins[i] = hg_array_ref(kinds[(k + i) % 4]);
                    Result r = run(&n, opsets[oi], n_in, ins);
                    result_free(&r);
                }
            }
            for (guint k = 0; k < 4; k++)
                hg_array_unref(kinds[k]);
            node_free(&n);
        }
    }
}

/* ---------------------------------------------------------------- GridSample */

/* GridSample on X = [[1, 2], [3, 4]] (1x1x2x2) at four points (x, y): the centre (0, 0), the corner
 * (-1, -1), (1.5, 0) past the right edge and (0.25, -0.6); every mode, padding and align_corners.
 * The expected values are the ONNX reference implementation's (onnx/reference/ops/op_grid_sample.py,
 * run in numpy); several by hand: the centre is the mean 2.5 for linear, X[0][0] = 1 for nearest
 * (0.5 rounds to even 0), and 0.59375^2 * 10 = 3.5253906 for cubic with zeros padding (weights
 * -0.09375, 0.59375, 0.59375, -0.09375 at distance 1.5, 0.5, 0.5, 1.5, the outer taps reading 0). */
static void
test_gridsample(void **state)
{
    (void)state;
    static const char *const modes[3] = {"linear", "nearest", "cubic"};
    static const char *const old_modes[3] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[3] = {"zeros", "border", "reflection"};
    static const double want[3][3][2][4] = {
        {{{2.5, 0.25, 0, 1.5749999}, {2.5, 1, 2.25, 2.0250001}},
         {{2.5, 1, 3, 1.75}, {2.5, 1, 3, 2.0250001}},
         {{2.5, 1, 3, 1.75}, {2.5, 1, 2.75, 2.0250001}}},
        {{{1, 1, 0, 2}, {1, 1, 2, 2}}, {{1, 1, 2, 2}, {1, 1, 2, 2}}, {{1, 1, 2, 2}, {1, 1, 2, 2}}},
        {{{3.5253906, 0.109375, 0, 1.7153436}, {3.5253906, 1, 2.8806152, 2.6266406}},
         {{2.5, 0.71875, 3, 1.6519375}, {2.5, 1, 3, 1.9916484}},
         {{2.5, 0.4375, 3, 1.6384375}, {2.5, 1, 2.84375, 1.8915937}}},
    };
    for (int opset = 16; opset <= 20; opset += 4)
        for (int m = 0; m < 3; m++)
            for (int p = 0; p < 3; p++)
                for (int al = 0; al < 2; al++) {
                    Node n = node_new("GridSample", "x,g", "y");
                    attr_s(n.node, "mode", opset < 20 ? old_modes[m] : modes[m]);
                    attr_s(n.node, "padding_mode", pads[p]);
                    attr_i(n.node, "align_corners", al);
                    Result r = RUN(&n, opset, F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4),
                                   F32(4, DIMS(1, 1, 4, 2), 0, 0, -1, -1, 1.5, 0, 0.25, -0.6));
                    assert_ok(r);
                    assert_shape(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 4));
                    hg_assert_values_at(r.out[0], want[m][p][al], 4, 2e-6, within_abs, __FILE__, __LINE__);
                    result_free(&r);
                    node_free(&n);
                }
    /* 3-D (volumetric, opset 20): X = 1..8 as 1x1x2x2x2, points (x, y, z) (0, 0, 0), (0.5, -0.25, 1),
     * (-1, 1, 0.3); the reference's values again (the centre is the mean 4.5) */
    static const struct {
        const char *mode, *pad;
        int align;
        double v[3];
    } vol[] = {
        {"linear", "zeros", 0, {4.5, 3.25, 1.5499999523162842}},
        {"linear", "border", 1, {4.5, 6.5, 5.599999904632568}},
        {"linear", "reflection", 0, {4.5, 6.5, 6.199999809265137}},
        {"nearest", "zeros", 0, {1, 0, 0}},
        {"nearest", "border", 1, {1, 6, 7}},
        {"cubic", "zeros", 0, {7.5355224609375, 4.111328125, 1.8125}},
        {"cubic", "reflection", 0, {4.5, 7.203125, 6.483500003814697}},
    };
    for (gsize k = 0; k < G_N_ELEMENTS(vol); k++) {
        Node n = node_new("GridSample", "x,g", "y");
        attr_s(n.node, "mode", vol[k].mode);
        attr_s(n.node, "padding_mode", vol[k].pad);
        attr_i(n.node, "align_corners", vol[k].align);
        Result r = RUN(&n, 20, F32(5, DIMS(1, 1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8),
                       F32(5, DIMS(1, 1, 1, 3, 3), 0, 0, 0, 0.5, -0.25, 1, -1, 1, 0.3));
        assert_ok(r);
        assert_shape(r.out[0], HG_DTYPE_FLOAT, 5, DIMS(1, 1, 1, 1, 3));
        hg_assert_values_at(r.out[0], vol[k].v, 3, 2e-6, within_abs, __FILE__, __LINE__);
        result_free(&r);
        node_free(&n);
    }
    /* 1-D at opset 22, reflection: X = [1, 5, 2], points 0.2, -0.9, 2.5 (x = 1.3, -0.35, 4.75;
     * 4.75 reflects off 2.5 to 0.25) */
    Node n = node_new("GridSample", "x,g", "y");
    attr_s(n.node, "padding_mode", "reflection");
    Result r = RUN(&n, 22, F32(3, DIMS(1, 1, 3), 1, 5, 2), F32(3, DIMS(1, 3, 1), 0.2, -0.9, 2.5));
    assert_ok(r);
    assert_values(r.out[0], 4.1000004, 1, 2);
    result_free(&r);
    /* FP16 X, FP32 grid, two channels and a batch of 2: each channel sampled at the same points */
    r = RUN(&n, 22, arr(HG_DTYPE_FLOAT16, 3, DIMS(2, 2, 3), VALS(1, 5, 2, 10, 50, 20, 0, 0, 0, 2, 2, 2)),
            F32(3, DIMS(2, 1, 1), 0.2, 0.9));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 3, DIMS(2, 2, 1));
    /* 0.2 -> 1.3 (4.1, 41); 0.9 -> 2.35, reflected to 1.65: 5 * 0.35 + 2 * 0.65 times 0 and 2 */
    assert_values_tol(r.out[0], 0.02, 4.1, 41, 0, 2);
    result_free(&r);
    /* NaN coordinates give NaN; an infinite one reads zeros under zeros padding */
    node_free(&n);
    n = node_new("GridSample", "x,g", "y");
    r = RUN(&n, 20, F32(3, DIMS(1, 1, 3), 1, 5, 2), F32(3, DIMS(1, 2, 1), NAN, INFINITY));
    assert_ok(r);
    assert_true(isnan(hg_array_get_f64(r.out[0], 0)));
    assert_true(hg_array_get_f64(r.out[0], 1) == 0);
    result_free(&r);
    /* errors: the opset-20 names at 16, rank 3 at 16, a grid for the wrong rank, batches that differ */
    node_free(&n);
    n = node_new("GridSample", "x,g", "y");
    attr_s(n.node, "mode", "linear");
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "mode 'linear'", F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4),
              F32(4, DIMS(1, 1, 1, 2), 0, 0));
    node_free(&n);
    n = node_new("GridSample", "x,g", "y");
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "4-D", F32(3, DIMS(1, 1, 3), 1, 5, 2), F32(3, DIMS(1, 1, 1), 0));
    RUN_FAILS(&n, 20, HG_ERROR_INVALID, "grid's last dim is 3", F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4),
              F32(4, DIMS(1, 1, 1, 3), 0, 0, 0));
    RUN_FAILS(&n, 20, HG_ERROR_INVALID, "batch", F32(3, DIMS(1, 1, 3), 1, 5, 2), F32(3, DIMS(2, 1, 1), 0, 0));

    /* shape rule: (N, C) from X, the output's spatial dims from the grid; the grid stays FP32 */
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT16, 4, DIMS(-1, 3, 32, 32), NULL);
    vs_sym(&f.in[0], 0, "N");
    vs_set(&f.in[1], HG_DTYPE_FLOAT, 4, DIMS(-1, 7, 9, 2), NULL);
    infer(&n, 16, &f, 2);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT16, 4, DIMS(-1, 3, 7, 9));
    assert_string_equal(f.out[0].dims[0].sym, "N");
    infer_free(&f);
    assert_true(hg_op_lookup("", "GridSample")->fp32_inputs == 1u << 1);
    /* cost: 4 bilinear taps per output element */
    HgValueShape ys;
    vs_set(&ys, HG_DTYPE_FLOAT, 4, DIMS(2, 3, 7, 9), NULL);
    HgValueShape *yp = &ys;
    HgShapeCtx cc = {n.node, 16, 0, NULL, 1, &yp, NULL};
    assert_int_equal(hg_op_lookup("", "GridSample")->cost(&cc), 2 * 3 * 7 * 9 * 4);
    node_free(&n);
}

/* ---------------------------------------------------------------- interval rules */

/* Run n's interval rule at opset on input ranges ins (NULL: omitted), with the input shapes and
 * constant values given (either may be NULL); the output ranges land in outs. */
static void
range_rule(Node *n, gint64 opset, guint n_in, const HgRange *ins, HgValueShape *const *shapes,
           const HgArray *const *values, HgRange *outs)
{
    const HgOpDef *op = hg_op_for_node(n->node);
    assert_non_null(op);
    assert_non_null(op->range);
    const HgRange *ip[MAX_IO] = {0};
    const HgValueShape *sp[MAX_IO] = {0};
    const HgArray *vp[MAX_IO] = {0};
    const HgValueShape *op_shapes[MAX_IO] = {0};
    HgRange *opp[MAX_IO] = {0};
    HgValueShape unknown[MAX_IO];
    for (guint i = 0; i < n_in; i++) {
        vs_init(&unknown[i]);
        ip[i] = isnan(ins[i].lo) ? NULL : &ins[i];
        sp[i] = ip[i] ? (shapes && shapes[i] ? shapes[i] : &unknown[i]) : NULL;
        vp[i] = values ? values[i] : NULL;
    }
    for (guint k = 0; k < n->node->n_outputs; k++) {
        vs_init(&unknown[MAX_IO - 1]);
        op_shapes[k] = &unknown[MAX_IO - 1];
        outs[k] = hg_range_any();
        opp[k] = &outs[k];
    }
    HgRangeCtx ctx = {n->node, opset, n_in, ip, sp, vp, n->node->n_outputs, op_shapes, opp};
    op->range(&ctx);
}

#define RANGE(lo, hi) hg_range_exact((lo), (hi))
#define OMITTED ((HgRange){NAN, NAN, 0, FALSE})

static void
assert_range_at(const HgRange *r, double lo, double hi, double tol, const char *file, int line)
{
    if (fabs(r->lo - lo) > tol || fabs(r->hi - hi) > tol || (isinf(lo) && r->lo != lo) ||
        (isinf(hi) && r->hi != hi))
    {
        print_error("%s:%d: range [%.9g, %.9g], want [%.9g, %.9g]\n", file, line, r->lo, r->hi, lo, hi);
        _fail(file, line);
    }
}
#define assert_range(r, lo, hi) assert_range_at(&(r), (lo), (hi), 1e-5, __FILE__, __LINE__)

/* Expand to a shape none of whose entries is known still has the shape's length for its rank, and
 * keeps every input dim past 1 (the entry there can only be 1 or that dim): TorchScript's attention
 * masks are Expand(mask, Where(Equal(s, -1), ones, s)), and without a rank the attention products
 * after them could not be bounded. A shape of unknown length leaves the rank unknown. */
static void
test_expand_unknown_entries(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[2,1,5] x, int64[4] s, int64[n] sn) => (float[a,b,c,d] e, float[?] f) {\n"
        "  e = Expand(x, s)\n"
        "  f = Expand(x, sn)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    const HgValueShape *e = SHAPE_OF(shapes, m, "e");
    assert_int_equal(e->rank, 4);
    gint64 want[4] = {-1, 2, -1, 5};
    for (int k = 0; k < 4; k++)
        if (e->dims[k].v != want[k])
            fail_msg("e: dim %d is %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT, k, e->dims[k].v, want[k]);
    assert_true(SHAPE_OF(shapes, m, "f")->rank < 0);
}

/* Shape math on a symbolic dim keeps the entries it knows (issue 12): Reshape(x, Concat(Shape(x)[0:1],
 * [-1, 2, 4])) is [B, 6, 2, 4] (B cancels against x's B), so the attention products after it know
 * their contraction lengths and are bounded; a head size computed by Gather and Div, a ReduceProd of
 * known dims, and Expand to Shape(x) keep theirs too. */
static void
test_partial_shape_values(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[B,6,8] x, float[1,6,1] w) => (float[B,2,6,4] o, float[B,12,4] r2, float[B,48] fl,\n"
        "                                      float[B,6,8] e)\n"
        "  <int64[1] st = {0}, int64[1] en = {1}, int64[3] tail = {-1, 2, 4}, int64 two = {2},\n"
        "   int64[1] axes0 = {0}, int64[1] m1 = {-1}, int64[1] st1 = {1}, int64[1] en3 = {3},\n"
        "   int64[1] far = {-100}> {\n"
        "  s = Shape(x)\n"
        "  b = Slice(s, st, en)\n"
        "  t = Concat <axis = 0> (b, tail)\n"
        "  q = Reshape(x, t)\n"
        "  qt = Transpose <perm = [0, 2, 1, 3]> (q)\n"
        "  kt = Transpose <perm = [0, 2, 3, 1]> (q)\n"
        "  sc = MatMul(qt, kt)\n"
        "  p = Softmax <axis = -1> (sc)\n"
        "  o = MatMul(p, qt)\n"
        "  g = Gather <axis = 0> (s, two)\n"
        "  hd = Div(g, two)\n"
        "  u = Unsqueeze(hd, axes0)\n"
        "  t2 = Concat <axis = 0> (b, m1, u)\n"
        "  r2 = Reshape(x, t2)\n"
        "  hw = Slice(s, st1, en3)\n"
        "  n = ReduceProd <keepdims = 1> (hw)\n"
        "  t3 = Concat <axis = 0> (b, n)\n"
        "  fl = Reshape(x, t3)\n"
        "  e = Expand(w, s)\n"
        "  rv = Slice(s, m1, far, axes0, m1)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    struct {
        const char *name;
        int rank;
        gint64 dims[4];
    } want[] = {{"q", 4, {-1, 6, 2, 4}}, {"sc", 4, {-1, 2, 6, 6}}, {"o", 4, {-1, 2, 6, 4}},
                {"r2", 3, {-1, 12, 4}}, {"fl", 2, {-1, 48}}, {"e", 3, {-1, 6, 8}}};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        const HgValueShape *vs = SHAPE_OF(shapes, m, want[i].name);
        if (vs->rank != want[i].rank)
            fail_msg("%s: rank %d, expected %d", want[i].name, vs->rank, want[i].rank);
        for (int k = 0; k < vs->rank; k++)
            if (vs->dims[k].v != want[i].dims[k])
                fail_msg("%s: dim %d is %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT, want[i].name, k,
                         vs->dims[k].v, want[i].dims[k]);
        /* the batch keeps its name */
        assert_string_equal(vs->dims[0].sym, "B");
    }
    /* the shape vector is known but for its first entry */
    const HgValueShape *ts = SHAPE_OF(shapes, m, "t");
    assert_null(ts->value);
    assert_int_equal(ts->part.n, 4);
    assert_int_equal(ts->part.known, 0xe);
    assert_string_equal(ts->part.sym[0], "B");
    /* a Slice stepping other than by 1 is left alone (its clamping is the kernel's business) */
    const HgValueShape *rv = SHAPE_OF(shapes, m, "rv");
    assert_true(rv->value == NULL && rv->part.n == 0);
    /* the products are bounded: 4 terms of [-1, 1]^2, and a convex-weighted sum of 6 */
    HgInputRange in[2] = {{"x", {-1, 1, 0, FALSE}}, {"w", {-1, 1, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, in, 2);
    const HgRange *sc = RANGE_OF(ranges, m, "sc");
    assert_true(sc->lo >= -4.01 && sc->hi <= 4.01 && sc->hi >= 4);
    const HgRange *o = RANGE_OF(ranges, m, "o");
    assert_true(isfinite(o->lo) && isfinite(o->hi) && o->hi <= 6.01);
}

/* Position ids sliced to the sequence length, as TorchScript exports write them (issue 12):
 * positions[:, :S] of a [1, 16] table is min(S, 16), named so; added to [B, S, 8] embeddings it
 * broadcasts to S (any S where they broadcast at all), so a head split by view(B, S, 2, -1) knows its
 * head size 4 and the scores' contraction. Range(0, S, 1) is S long, ConstantOfShape and Tile read
 * entries known by name, and expand(-1)'s Where(Equal(shape, -1), 1, shape) keeps them. */
static void
test_position_slice_shapes(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (int64[B,S] ids, float[1,6,8] w, float[32,8] tok, float[16,8] ptab, int64[1,16] pos)\n"
        "  => (float[B,S,2,4] q, float[B,2,S,S] sc, int64[S] r,\n"
        "                                       float[S,S] z, float[B,6,8] e, float[B,1,8] t0, float[1,S,8] pe)\n"
        "  <int64[1] zero = {0}, int64[1] one = {1},\n"
        "   int64[1] two = {2}, int64[2] tail = {2, -1}, int64 one_s = {1}, int64 zero_s = {0},\n"
        "   int64[1] m1 = {-1}, int64 m1_s = {-1}> {\n"
        "  s = Shape(ids)\n"
        "  seq = Gather <axis = 0> (s, one_s)\n"
        "  u = Unsqueeze(seq, zero)\n"
        "  p = Slice(pos, zero, u, one)\n"
        "  pe = Gather(ptab, p)\n"
        "  emb = Gather(tok, ids)\n"
        "  h = Add(emb, pe)\n"
        "  hs = Shape(h)\n"
        "  lead = Slice(hs, zero, two)\n"
        "  tgt = Concat <axis = 0> (lead, tail)\n"
        "  q = Reshape(h, tgt)\n"
        "  qt = Transpose <perm = [0, 2, 1, 3]> (q)\n"
        "  kt = Transpose <perm = [0, 2, 3, 1]> (q)\n"
        "  sc = MatMul(qt, kt)\n"
        "  r = Range(zero_s, seq, one_s)\n"
        "  uu = Concat <axis = 0> (u, u)\n"
        "  z = ConstantOfShape(uu)\n"
        "  b = Slice(s, zero, one)\n"
        "  sh = Concat <axis = 0> (b, m1, m1)\n"
        "  shf = Reshape(sh, m1)\n"
        "  shs = Shape(shf)\n"
        "  ones = ConstantOfShape <value = int64[1] {1}> (shs)\n"
        "  neg = Mul(ones, m1_s)\n"
        "  eq = Equal(shf, neg)\n"
        "  wh = Where(eq, ones, shf)\n"
        "  e = Expand(w, wh)\n"
        "  reps = Concat <axis = 0> (b, one, one)\n"
        "  w1 = Slice(w, zero, one, one)\n"
        "  t0 = Tile(w1, reps)\n"
        "  late = Slice(pos, one, u, one)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    const HgValueShape *p = SHAPE_OF(shapes, m, "p");
    assert_int_equal(p->rank, 2);
    assert_int_equal(p->dims[1].v, -1);
    assert_string_equal(p->dims[1].sym, "min(S,16)");
    static const WantShape want[] = {{"h", 3, {-1, -1, 8}, {"B", "S", NULL}},
                {"q", 4, {-1, -1, 2, 4}, {"B", "S", NULL, NULL}},
                {"sc", 4, {-1, 2, -1, -1}, {"B", NULL, "S", "S"}},
                {"r", 1, {-1}, {"S"}},
                {"z", 2, {-1, -1}, {"S", "S"}},
                {"e", 3, {-1, 6, 8}, {"B", NULL, NULL}},
                {"t0", 3, {-1, 1, 8}, {"B", NULL, NULL}}};
    assert_shapes(shapes, m, want, G_N_ELEMENTS(want));
    /* positions[:, 1:S] is not a prefix: its length is unknown, and nameless */
    const HgValueShape *late = SHAPE_OF(shapes, m, "late");
    assert_true(late->rank == 2 && late->dims[1].v < 0 && late->dims[1].sym == NULL);
    /* two different names do not merge; S and min(S, c) do, either way round */
    const char *S = g_intern_string("S"), *T = g_intern_string("T");
    const char *cap = hg_dim_min((HgSymDim){-1, S}, 16).sym;
    assert_null(hg_sym_broadcast(S, T));
    assert_ptr_equal(hg_sym_broadcast(cap, S), S);
    assert_ptr_equal(hg_sym_broadcast(S, cap), S);
    assert_null(hg_sym_broadcast(cap, T));
    /* a cap capped again keeps the smaller one; a known dim is just the minimum */
    assert_ptr_equal(hg_dim_min((HgSymDim){-1, cap}, 100).sym, cap);
    assert_string_equal(hg_dim_min((HgSymDim){-1, cap}, 4).sym, "min(S,4)");
    assert_int_equal(hg_dim_min(hg_dim_known(30), 16).v, 16);
    /* its size: S's, capped; the cap where S has none */
    assert_int_equal(hg_dim_max_lookup(NULL, cap, -1), 16);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"S=8", NULL}, cap, -1), 8);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"S=100", NULL}, cap, -1), 16);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"S=100", NULL}, "min(S,x)", -1), -1);
    /* the scores are bounded: a contraction of 4 known terms */
    HgInputRange in[5] = {{"ids", {0, 31, 0, FALSE}}, {"w", {-1, 1, 0, FALSE}}, {"tok", {-1, 1, 0, FALSE}},
                          {"ptab", {-1, 1, 0, FALSE}}, {"pos", {0, 15, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, in, 5);
    const HgRange *sc = RANGE_OF(ranges, m, "sc");
    assert_true(sc->lo >= -16.01 && sc->hi <= 16.01); /* 4 terms of [-2, 2]^2 */
}

/* Products of named dims keep a name (issue 12): BLOOM merges batch and heads with
 * view(batch * heads, S, -1) and splits them back with view(batch, heads, S, -1). Shape math
 * Shape(x)[0] * 4 is 4*B; the reshape to [4*B, S, -1] leaves -1 = 8 and the one back to
 * [B, 4, S, -1] leaves S, so the softmax's rows stay whole through both and P x V is a convex
 * combination of V's rows (bounded by V's range, where the contraction length is symbolic). */
static void
test_product_dims(void **state)
{
    (void)state;
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[B,4,S,8] x, float[B,4,S,8] v) => (float[B,4,S,8] o)\n"
        "  <int64[1] zero = {0}, int64[1] one = {1}, int64[1] two = {2}, int64[1] three = {3},\n"
        "   int64[1] four = {4}, int64[1] m1 = {-1}, int64 zero_s = {0}, int64 four_s = {4}> {\n"
        "  s = Shape(x)\n"
        "  b = Slice(s, zero, one)\n"
        "  sq = Slice(s, two, three)\n"
        "  bh = Mul(b, four)\n"
        "  t1 = Concat <axis = 0> (bh, sq, m1)\n"
        "  q = Reshape(x, t1)\n"
        "  vr = Reshape(v, t1)\n"
        "  kt = Transpose <perm = [0, 2, 1]> (q)\n"
        "  sc = MatMul(q, kt)\n"
        "  t2 = Concat <axis = 0> (b, four, sq, m1)\n"
        "  sc4 = Reshape(sc, t2)\n"
        "  p = Softmax <axis = -1> (sc4)\n"
        "  p3 = Reshape(p, t1)\n"
        "  o3 = MatMul(p3, vr)\n"
        "  o = Reshape(o3, t2)\n"
        "  qs = Shape(q)\n"
        "  g0 = Gather <axis = 0> (qs, zero_s)\n"
        "  back = Div(g0, four_s)\n"
        "  fl = Flatten <axis = 2> (x)\n"
        "}\n";
    g_autoptr(HgShapes) shapes = NULL;
    g_autoptr(HgModel) m = text_model(text, &shapes);
    static const WantShape want[] = {{"q", 3, {-1, -1, 8}, {"4*B", "S", NULL}},
                {"sc", 3, {-1, -1, -1}, {"4*B", "S", "S"}},
                {"sc4", 4, {-1, 4, -1, -1}, {"B", NULL, "S", "S"}},
                {"p3", 3, {-1, -1, -1}, {"4*B", "S", "S"}},
                {"o", 4, {-1, 4, -1, 8}, {"B", NULL, "S", NULL}},
                {"fl", 2, {-1, -1}, {"4*B", "8*S"}}};
    assert_shapes(shapes, m, want, G_N_ELEMENTS(want));
    /* Shape(q)[0] / 4 is B again */
    const HgValueShape *back = SHAPE_OF(shapes, m, "back");
    assert_true(back->part.n == 1 && !(back->part.known & 1));
    assert_string_equal(back->part.sym[0], "B");
    /* names: products split and made back in one order; sizes multiply */
    gint64 coef;
    const char *f[HG_SYM_MAX_FACTORS];
    int nf;
    assert_true(hg_sym_factors("min(S,16)*4*B", &coef, f, &nf));
    assert_int_equal(coef, 4);
    assert_int_equal(nf, 2);
    assert_string_equal(hg_sym_product(coef, f, nf), "4*B*min(S,16)");
    assert_string_equal(hg_dim_mul((HgSymDim){-1, g_intern_string("S")}, (HgSymDim){-1, g_intern_string("B")}).sym,
                        "B*S");
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"B=2", NULL}, "4*B", -1), 8);
    assert_int_equal(hg_dim_max_lookup(NULL, "4*B", 128), 512);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"B=2", NULL}, "4*B*S", -1), -1);
    /* A model's own dim called "4*B" says nothing about B: it is quoted, one factor, and does not
     * merge with the product 4*B inference makes; --dim-max finds it by the model's spelling. */
    static const char named[] =
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "g (float[B,4] x, float[\"4*B\"] y) => (float[\"4*B\"] z) <int64[1] m1 = {-1}> {\n"
        "  xf = Reshape(x, m1)\n"
        "  z = Add(xf, y)\n"
        "}\n";
    g_autoptr(HgShapes) ns = NULL;
    g_autoptr(HgModel) nm = text_model(named, &ns);
    const HgValueShape *ys = SHAPE_OF(ns, nm, "y"), *xf = SHAPE_OF(ns, nm, "xf"), *zs = SHAPE_OF(ns, nm, "z");
    assert_string_equal(ys->dims[0].sym, "\"4*B\"");
    assert_string_equal(xf->dims[0].sym, "4*B");
    assert_null(zs->dims[0].sym);
    assert_true(hg_sym_factors(ys->dims[0].sym, &coef, f, &nf) && coef == 1 && nf == 1);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"4*B=3", NULL}, ys->dims[0].sym, -1), 3);
    assert_int_equal(hg_dim_max_lookup((const char *const[]){"4*B=3", "B=2", NULL}, xf->dims[0].sym, -1), 8);
    g_autofree char *spelled = hg_sym_model_name(hg_sym_from_model("a\"b*c"));
    assert_string_equal(hg_sym_from_model("a\"b*c"), "\"a\"\"b*c\"");
    assert_string_equal(spelled, "a\"b*c");
    assert_string_equal(hg_sym_from_model("batch"), "batch");
    /* P x V through both reshapes: within V's range, plus a rounding slack for S terms (without
     * the convex rule: S times 3, unbounded); S's --dim-max of 64 makes the slack small */
    HgInputRange in[2] = {{"x", {-1, 1, 0, FALSE}}, {"v", {-3, 2, 0, FALSE}}};
    g_autoptr(HgRanges) ranges = hg_ranges_infer_dims(m->graph, shapes, in, 2, (const char *const[]){"S=64", NULL});
    const HgRange *o = RANGE_OF(ranges, m, "o");
    if (!(o->lo >= -3.03 && o->hi <= 2.02))
        fail_msg("o: [%g, %g], expected within [-3, 2]", o->lo, o->hi);
    g_autoptr(HgRanges) r2 = hg_ranges_infer(m->graph, shapes, in, 2);
    const HgRange *o2 = RANGE_OF(r2, m, "o");
    if (!(o2->lo >= -3.8 && o2->hi <= 2.8)) /* 2^20 x 2^-23 of the largest magnitude, 3 */
        fail_msg("o without --dim-max: [%g, %g], expected within 2^20 terms' slack of [-3, 2]", o2->lo, o2->hi);
}

static void
test_range_rules_movement(void **state)
{
    (void)state;
    HgRange out[MAX_IO];
    /* data movement keeps the range, NaN flag and tiny; every Split output gets it */
    Node n = node_new("Split", "x", "a,b,c");
    HgRange x = {-2, 3, 0.5, TRUE};
    range_rule(&n, 13, 1, &x, NULL, NULL, out);
    for (int k = 0; k < 3; k++) {
        assert_range(out[k], -2, 3);
        assert_true(out[k].nan);
        assert_true(out[k].tiny == 0.5);
    }
    node_free(&n);
    /* Concat: the union; an unbounded input stays unbounded on its side */
    n = node_new("Concat", "a,b", "y");
    range_rule(&n, 13, 2, (HgRange[]){RANGE(-1, 2), RANGE(5, INFINITY)}, NULL, NULL, out);
    assert_range(out[0], -1, INFINITY);
    assert_false(out[0].nan);
    node_free(&n);
    /* Trilu: the other triangle is 0 */
    n = node_new("Trilu", "x", "y");
    range_rule(&n, 14, 1, (HgRange[]){RANGE(2, 5)}, NULL, NULL, out);
    assert_range(out[0], 0, 5);
    node_free(&n);
    /* Pad: constant mode adds its value, reflect does not; before opset 11 the value is an attr */
    n = node_new("Pad", "x,p,v", "y");
    range_rule(&n, 13, 3, (HgRange[]){RANGE(-1, 1), RANGE(0, 4), RANGE(5, 6)}, NULL, NULL, out);
    assert_range(out[0], -1, 6);
    node_free(&n);
    n = node_new("Pad", "x,p", "y");
    range_rule(&n, 13, 2, (HgRange[]){RANGE(1, 2), RANGE(0, 4)}, NULL, NULL, out);
    assert_range(out[0], 0, 2);
    node_free(&n);
    n = node_new("Pad", "x,p", "y");
    attr_s(n.node, "mode", "reflect");
    range_rule(&n, 13, 2, (HgRange[]){RANGE(1, 2), RANGE(0, 4)}, NULL, NULL, out);
    assert_range(out[0], 1, 2);
    node_free(&n);
    n = node_new("Pad", "x", "y");
    attr_f(n.node, "value", -7);
    range_rule(&n, 2, 1, (HgRange[]){RANGE(1, 2)}, NULL, NULL, out);
    assert_range(out[0], -7, 2);
    node_free(&n);
    /* Shape and Size from the dims */
    HgValueShape *xs = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 7, 3));
    n = node_new("Shape", "x", "y");
    range_rule(&n, 13, 1, (HgRange[]){RANGE(0, 1)}, &xs, NULL, out);
    assert_range(out[0], 0, 7);
    node_free(&n);
    n = node_new("Size", "x", "y");
    range_rule(&n, 13, 1, (HgRange[]){RANGE(0, 1)}, &xs, NULL, out);
    assert_range(out[0], 0, 42);
    node_free(&n);
    vs_free(xs);
    /* Range: between start and limit, whatever delta */
    n = node_new("Range", "s,l,d", "y");
    range_rule(&n, 11, 3, (HgRange[]){RANGE(-3, -2), RANGE(10, 20), RANGE(1, 2)}, NULL, NULL, out);
    assert_range_at(&out[0], -3, 20, 1e-3, __FILE__, __LINE__);
    node_free(&n);
}

/* EyeLike: ones where j - i = k, zeros elsewhere, in the dtype attribute's type or the input's; the
 * input's values do not matter (NaN included); a diagonal that misses the matrix gives all zeros. */
static void
test_eyelike(void **state)
{
    (void)state;
    Node n = node_new("EyeLike", "x", "y");
    Result r = RUN(&n, 9, arr(HG_DTYPE_FLOAT, 2, DIMS(2, 3), VALS(NAN, 7, -1, 0, 0, 0)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    assert_values(r.out[0], 1, 0, 0, 0, 1, 0);
    result_free(&r);
    r = RUN(&n, 9, arr(HG_DTYPE_FLOAT16, 2, DIMS(0, 3), NULL));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(0, 3));
    result_free(&r);
    RUN_FAILS(&n, 9, HG_ERROR_INVALID, "rank 3", iota(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 2)));
    node_free(&n);

    n = node_new("EyeLike", "x", "y");
    attr_i(n.node, "k", -1);
    attr_i(n.node, "dtype", HG_DTYPE_INT32);
    r = RUN(&n, 9, iota(HG_DTYPE_FLOAT, 2, DIMS(3, 2)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT32, 2, DIMS(3, 2));
    assert_ints(r.out[0], 0, 0, 1, 0, 0, 1);
    result_free(&r);
    node_free(&n);

    n = node_new("EyeLike", "x", "y");
    attr_i(n.node, "k", 3);
    attr_i(n.node, "dtype", HG_DTYPE_DOUBLE);
    r = RUN(&n, 9, arr_i64(2, DIMS(2, 3), INTS(1, 2, 3, 4, 5, 6)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_DOUBLE, 2, DIMS(2, 3));
    assert_values(r.out[0], 0, 0, 0, 0, 0, 0);
    result_free(&r);

    /* shape inference: the input's dims (a symbolic one kept), the dtype attribute's type */
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_FLOAT, 2, DIMS(-1, 4), NULL);
    vs_sym(&f.in[0], 0, "S");
    infer(&n, 9, &f, 1);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_DOUBLE, 2, DIMS(-1, 4));
    assert_string_equal(f.out[0].dims[0].sym, "S");
    infer_free(&f);
    node_free(&n);

    /* the interval rule: [0, 1], exactly 0 where the diagonal misses */
    HgRange out[MAX_IO];
    HgValueShape *xs = vs_new(HG_DTYPE_FLOAT, 2, DIMS(2, 3));
    n = node_new("EyeLike", "x", "y");
    range_rule(&n, 9, 1, (HgRange[]){RANGE(-5, 5)}, &xs, NULL, out);
    assert_range(out[0], 0, 1);
    assert_false(out[0].nan);
    node_free(&n);
    n = node_new("EyeLike", "x", "y");
    attr_i(n.node, "k", -2);
    range_rule(&n, 9, 1, (HgRange[]){RANGE(-5, 5)}, &xs, NULL, out);
    assert_range(out[0], 0, 0);
    range_rule(&n, 9, 1, (HgRange[]){RANGE(-5, 5)}, NULL, NULL, out);
    assert_range(out[0], 0, 1);
    node_free(&n);
    vs_free(xs);
}

/* OneHot: on_value where the index (negative counting from the end) names the position along the new
 * axis, off_value elsewhere and for indices outside [-depth, depth - 1]; depth of any numeric type,
 * truncated; a float index that is not an integer matches nothing (as ONNX Runtime 1.30 has it). */
static void
test_onehot(void **state)
{
    (void)state;
    /* axis -1 (the default): [[0, 2], [-1, 5]], depth 3, values [-1, 5] */
    Node n = node_new("OneHot", "i,d,v", "y");
    Result r = RUN(&n, 11, arr_i64(2, DIMS(2, 2), INTS(0, 2, -1, 5)), SCALAR_I64(3),
                   arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(-1, 5)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT, 3, DIMS(2, 2, 3));
    assert_values(r.out[0], 5, -1, -1, -1, -1, 5, -1, -1, 5, -1, -1, -1);
    result_free(&r);
    /* opset 9 too: ONNX Runtime wraps negative indices there as well */
    r = RUN(&n, 9, arr_i64(1, DIMS(3), INTS(-3, -4, 3)), SCALAR_I64(3),
            arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)));
    assert_ok(r);
    assert_values(r.out[0], 1, 0, 0, 0, 0, 0, 0, 0, 0);
    result_free(&r);
    /* float indices: integral ones (-1.0 is 2) hit; 1.7, -0.5 and NaN miss; float16 values */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 1, DIMS(6), VALS(1, -1, 1.7, -0.5, NAN, 2)),
            arr_i(HG_DTYPE_INT32, 1, DIMS(1), INTS(3)), arr(HG_DTYPE_FLOAT16, 1, DIMS(2), VALS(0, 1)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_FLOAT16, 2, DIMS(6, 3));
    assert_values(r.out[0], 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1);
    result_free(&r);
    /* depth 0, a float depth under 1, three values: errors (ONNX Runtime: "Depth is negative") */
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "depth 0", VEC(1), SCALAR_I64(0), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "depth 0", VEC(1), arr(HG_DTYPE_FLOAT, 0, NULL, VALS(0.5)),
              arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "needs 2", VEC(1), SCALAR_I64(3),
              arr(HG_DTYPE_FLOAT, 1, DIMS(3), VALS(0, 1, 2)));
    node_free(&n);

    /* axis 0, a float depth 3.7 read as 3, int64 values: out[p, k] = on where index k names p */
    n = node_new("OneHot", "i,d,v", "y");
    attr_i(n.node, "axis", 0);
    r = RUN(&n, 11, arr_i64(1, DIMS(3), INTS(1, -3, 3)), arr(HG_DTYPE_FLOAT, 0, NULL, VALS(3.7)),
            arr_i64(1, DIMS(2), INTS(0, 1)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_INT64, 2, DIMS(3, 3));
    assert_ints(r.out[0], 0, 1, 0, 1, 0, 0, 0, 0, 0);
    result_free(&r);
    node_free(&n);

    /* a middle axis: [2, 2] indices, axis 1 (or -2): out[a, p, b] */
    n = node_new("OneHot", "i,d,v", "y");
    attr_i(n.node, "axis", -2);
    r = RUN(&n, 11, arr_i64(2, DIMS(2, 2), INTS(0, 1, 1, 7)), SCALAR_I64(2), arr(HG_DTYPE_DOUBLE, 1, DIMS(2), VALS(2, -3)));
    assert_ok(r);
    assert_shape(r.out[0], HG_DTYPE_DOUBLE, 3, DIMS(2, 2, 2));
    assert_values(r.out[0], -3, 2, 2, -3, 2, 2, -3, 2);
    result_free(&r);
    /* a scalar index gives a vector: axis -2 is outside [-1, 0] */
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "axis", SCALAR_I64(1), SCALAR_I64(3), arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(0, 1)));
    node_free(&n);

    /* shape inference: depth's value gives the new dim, else it is unknown (named where depth is a
     * symbolic dim); the element type is values' */
    n = node_new("OneHot", "i,d,v", "y");
    Infer f = {0};
    vs_set(&f.in[0], HG_DTYPE_INT64, 2, DIMS(-1, 4), NULL);
    vs_sym(&f.in[0], 0, "S");
    vs_value(&f.in[1], SCALAR_I64(10));
    vs_set(&f.in[2], HG_DTYPE_FLOAT16, 1, DIMS(2), NULL);
    infer(&n, 11, &f, 3);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT16, 3, DIMS(-1, 4, 10));
    assert_string_equal(f.out[0].dims[0].sym, "S");
    infer_free(&f);
    vs_set(&f.in[0], HG_DTYPE_INT64, 1, DIMS(4), NULL);
    vs_set(&f.in[1], HG_DTYPE_INT64, 0, NULL, NULL);
    f.in[1].part.n = 1;
    f.in[1].part.sym[0] = g_intern_string("T");
    vs_set(&f.in[2], HG_DTYPE_FLOAT, 1, DIMS(2), NULL);
    infer(&n, 11, &f, 3);
    assert_true(f.ok);
    assert_vshape(&f.out[0], HG_DTYPE_FLOAT, 2, DIMS(4, -1));
    assert_string_equal(f.out[0].dims[1].sym, "T");
    infer_free(&f);
    vs_set(&f.in[0], HG_DTYPE_INT64, 1, DIMS(4), NULL);
    vs_value(&f.in[1], SCALAR_I64(-2));
    vs_set(&f.in[2], HG_DTYPE_FLOAT, 1, DIMS(2), NULL);
    infer(&n, 11, &f, 3);
    assert_hg_error(f.error, HG_ERROR_INVALID, "depth -2");
    infer_free(&f);

    /* the interval rule: the hull of the two values, exact when they are constant */
    HgRange out[MAX_IO];
    HgArray *vals = arr(HG_DTYPE_FLOAT, 1, DIMS(2), VALS(5, -1));
    range_rule(&n, 11, 3, (HgRange[]){RANGE(-100, 100), RANGE(3, 3), RANGE(-1, 5)}, NULL,
               (const HgArray *const[]){NULL, NULL, vals}, out);
    assert_range(out[0], -1, 5);
    assert_false(out[0].nan);
    range_rule(&n, 11, 3, (HgRange[]){RANGE(-100, 100), RANGE(3, 3), RANGE(2, 3)}, NULL, NULL, out);
    assert_range(out[0], 2, 3);
    hg_array_unref(vals);
    node_free(&n);
}

static void
test_range_rules_scatter(void **state)
{
    (void)state;
    HgRange out[MAX_IO];
    HgValueShape *shapes[3] = {vs_new(HG_DTYPE_FLOAT, 1, DIMS(4)), vs_new(HG_DTYPE_INT64, 2, DIMS(3, 1)),
                               vs_new(HG_DTYPE_FLOAT, 1, DIMS(3))};
    HgRange ins[3] = {RANGE(0, 1), RANGE(0, 3), RANGE(-1, 2)};
    /* no reduction: the union */
    Node n = node_new("ScatterND", "x,i,u", "y");
    range_rule(&n, 16, 3, ins, shapes, NULL, out);
    assert_range(out[0], -1, 2);
    node_free(&n);
    /* add: up to 3 updates on one element */
    n = node_new("ScatterND", "x,i,u", "y");
    attr_s(n.node, "reduction", "add");
    range_rule(&n, 16, 3, ins, shapes, NULL, out);
    assert_range(out[0], -3, 7);
    assert_false(out[0].nan);
    node_free(&n);
    /* add with updates of unknown count: unbounded */
    n = node_new("ScatterND", "x,i,u", "y");
    attr_s(n.node, "reduction", "add");
    range_rule(&n, 16, 3, ins, NULL, NULL, out);
    assert_range(out[0], -INFINITY, INFINITY);
    node_free(&n);
    /* mul: |x| * max(1, |u|)^3 */
    n = node_new("ScatterND", "x,i,u", "y");
    attr_s(n.node, "reduction", "mul");
    range_rule(&n, 16, 3, ins, shapes, NULL, out);
    assert_range(out[0], -8, 8);
    node_free(&n);
    for (int i = 0; i < 3; i++)
        vs_free(shapes[i]);
}

static void
test_range_rules_resize(void **state)
{
    (void)state;
    HgRange out[MAX_IO];
    /* cubic x2, half_pixel, A = -0.75: every output mixes its taps with fraction 1/4 or 3/4, where
     * the negative lobes sum to 0.75 * r (1 - r) = 0.140625, so [1, 4] -> [1 - 0.140625 * 3,
     * 4 + 0.140625 * 3]; the kernel's own outputs (test_resize_linear_cubic) lie inside */
    HgArray *scales = F32(1, DIMS(2), 1, 2);
    HgValueShape *shapes[3] = {vs_new(HG_DTYPE_FLOAT, 2, DIMS(1, 4)), NULL, vs_new(HG_DTYPE_FLOAT, 1, DIMS(2))};
    const HgArray *values[3] = {NULL, NULL, scales};
    HgRange ins[3] = {RANGE(1, 4), OMITTED, RANGE(1, 2)};
    Node n = node_new("Resize", "x,,s", "y");
    attr_s(n.node, "mode", "cubic");
    range_rule(&n, 13, 3, ins, shapes, values, out);
    assert_range(out[0], 0.578125, 4.421875);
    Result r = RUN(&n, 13, F32(2, DIMS(1, 4), 1, 2, 3, 4), NULL, F32(1, DIMS(2), 1, 2));
    assert_ok(r);
    for (gint64 i = 0; i < r.out[0]->numel; i++) {
        double v = hg_array_get_f64(r.out[0], i);
        assert_true(v >= out[0].lo && v <= out[0].hi);
    }
    result_free(&r);
    node_free(&n);
    /* linear: a convex combination */
    n = node_new("Resize", "x,,s", "y");
    attr_s(n.node, "mode", "linear");
    range_rule(&n, 13, 3, ins, shapes, values, out);
    assert_range(out[0], 1, 4);
    node_free(&n);
    /* cubic with unknown scales: each of the 2 axes may overshoot by 0.75/4 of the width:
     * [1, 4] -> [0.4375, 4.5625] -> [-0.3359375, 5.3359375]; with exclude_outside, unbounded */
    n = node_new("Resize", "x,,s", "y");
    attr_s(n.node, "mode", "cubic");
    range_rule(&n, 13, 3, ins, shapes, NULL, out);
    assert_range(out[0], -0.3359375, 5.3359375);
    node_free(&n);
    n = node_new("Resize", "x,,s", "y");
    attr_s(n.node, "mode", "cubic");
    attr_i(n.node, "exclude_outside", 1);
    range_rule(&n, 13, 3, ins, shapes, NULL, out);
    assert_range(out[0], -INFINITY, INFINITY);
    node_free(&n);
    n = node_new("Resize", "x,,s", "y");
    attr_s(n.node, "mode", "nearest");
    range_rule(&n, 13, 3, ins, shapes, NULL, out);
    assert_range(out[0], 1, 4);
    node_free(&n);
    hg_array_unref(scales);
    vs_free(shapes[0]);
    vs_free(shapes[2]);
}

/* GridSample's rule: the input's hull, with 0 where zeros padding can read outside (not when the
 * grid's range keeps every tap inside), cubic widened by 3/16 of the width per spatial axis. */
static void
test_range_rules_gridsample(void **state)
{
    (void)state;
    HgRange out[MAX_IO];
    HgValueShape *shapes[2] = {vs_new(HG_DTYPE_FLOAT, 4, DIMS(1, 1, 8, 8)), vs_new(HG_DTYPE_FLOAT, 4, DIMS(1, 4, 4, 2))};
    Node n = node_new("GridSample", "x,g", "y");
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-1.5, 1.5)}, shapes, NULL, out);
    assert_range(out[0], 0, 4);
    assert_false(out[0].nan);
    /* a grid inside [-0.5, 0.5] keeps bilinear's taps at x in [1.5, 5.5]: no 0 */
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-0.5, 0.5)}, shapes, NULL, out);
    assert_range(out[0], 1, 4);
    /* but not at the edge: (1 + 1) * 8 / 2 - 0.5 = 7.5 reaches past pixel 7 */
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-0.5, 1)}, shapes, NULL, out);
    assert_range(out[0], 0, 4);
    /* a NaN grid gives NaN samples; an infinite X times a 0 weight too */
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), (HgRange){-1, 1, 0, TRUE}}, shapes, NULL, out);
    assert_true(out[0].nan);
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, INFINITY), RANGE(-0.5, 0.5)}, shapes, NULL, out);
    assert_true(out[0].nan);
    node_free(&n);
    /* border keeps the hull; cubic widens it by 0.1875 of the width per axis: [1, 4] ->
     * [0.4375, 4.5625] -> [-0.3359375, 5.3359375] */
    n = node_new("GridSample", "x,g", "y");
    attr_s(n.node, "padding_mode", "border");
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-3, 3)}, shapes, NULL, out);
    assert_range(out[0], 1, 4);
    attr_s(n.node, "mode", "bicubic");
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-3, 3)}, shapes, NULL, out);
    assert_range(out[0], -0.3359375, 5.3359375);
    /* and the kernel's values lie inside: a checkerboard of 1 and 4 sampled densely */
    HgArray *x = hg_array_new(HG_DTYPE_FLOAT, 4, DIMS(1, 1, 8, 8), NULL);
    HgArray *g = hg_array_new(HG_DTYPE_FLOAT, 4, DIMS(1, 40, 40, 2), NULL);
    for (gint64 i = 0; i < 64; i++)
        ((float *)x->data)[i] = ((i / 8 + i % 8) % 2) ? 4 : 1;
    for (gint64 i = 0; i < 40 * 40; i++) {
        ((float *)g->data)[2 * i] = (float)(-1.2 + 2.4 * (i % 40) / 39);
        ((float *)g->data)[2 * i + 1] = (float)(-1.2 + 2.4 * (i / 40) / 39);
    }
    Result r = RUN(&n, 16, hg_array_ref(x), hg_array_ref(g));
    assert_ok(r);
    double lo = INFINITY, hi = -INFINITY;
    for (gint64 i = 0; i < r.out[0]->numel; i++) {
        double v = hg_array_get_f64(r.out[0], i);
        lo = MIN(lo, v);
        hi = MAX(hi, v);
    }
    assert_true(lo >= out[0].lo && hi <= out[0].hi);
    assert_true(lo < 1 && hi > 4); /* cubic does overshoot the input's hull */
    result_free(&r);
    node_free(&n);
    /* zeros padding, cubic: the hull takes 0 first, [0, 4] -> [-1.40625, 5.40625] */
    n = node_new("GridSample", "x,g", "y");
    attr_s(n.node, "mode", "bicubic");
    range_rule(&n, 16, 2, (HgRange[]){RANGE(1, 4), RANGE(-3, 3)}, shapes, NULL, out);
    assert_range(out[0], -0.75 - 0.1875 * 5.5, 4.75 + 0.1875 * 5.5);
    r = RUN(&n, 16, x, g);
    assert_ok(r);
    for (gint64 i = 0; i < r.out[0]->numel; i++) {
        double v = hg_array_get_f64(r.out[0], i);
        assert_true(v >= out[0].lo && v <= out[0].hi);
    }
    result_free(&r);
    node_free(&n);
    vs_free(shapes[0]);
    vs_free(shapes[1]);
}

HG_TEST_MAIN("ops_tensor",
             cmocka_unit_test(test_family_rows),
             cmocka_unit_test(test_shape),
             cmocka_unit_test(test_shape_infer_value),
             cmocka_unit_test(test_size),
             cmocka_unit_test(test_constant),
             cmocka_unit_test(test_constant_of_shape),
             cmocka_unit_test(test_range),
             cmocka_unit_test(test_reshape),
             cmocka_unit_test(test_reshape_infer),
             cmocka_unit_test(test_flatten),
             cmocka_unit_test(test_squeeze_unsqueeze),
             cmocka_unit_test(test_transpose),
             cmocka_unit_test(test_concat),
             cmocka_unit_test(test_split),
             cmocka_unit_test(test_slice),
             cmocka_unit_test(test_slice_fold_chain),
             cmocka_unit_test(test_expand_tile),
             cmocka_unit_test(test_pad),
             cmocka_unit_test(test_depth_space),
             cmocka_unit_test(test_trilu),
             cmocka_unit_test(test_eyelike),
             cmocka_unit_test(test_onehot),
             cmocka_unit_test(test_gather),
             cmocka_unit_test(test_gather_elements_nd),
             cmocka_unit_test(test_scatter_elements),
             cmocka_unit_test(test_scatter_nd),
             cmocka_unit_test(test_resize_nearest),
             cmocka_unit_test(test_resize_linear_cubic),
             cmocka_unit_test(test_resize_opset18_19),
             cmocka_unit_test(test_resize_fp16),
             cmocka_unit_test(test_gridsample),
             cmocka_unit_test(test_unknown_and_odd_inputs),
             cmocka_unit_test(test_partial_shape_values),
             cmocka_unit_test(test_position_slice_shapes),
             cmocka_unit_test(test_product_dims),
             cmocka_unit_test(test_expand_unknown_entries),
             cmocka_unit_test(test_range_rules_movement),
             cmocka_unit_test(test_range_rules_scatter),
             cmocka_unit_test(test_range_rules_resize),
             cmocka_unit_test(test_range_rules_gridsample))
