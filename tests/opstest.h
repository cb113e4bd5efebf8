/* Helpers shared by the kernel tests (test_ops_*.c): one node in its own model built with the IR API,
 * arrays from literal values, an op's eval and infer called through the op table, and assertions on
 * arrays, inferred shapes and table rows that report the caller's __FILE__/__LINE__.
 *
 * What each file keeps for itself is what only it does, or does by a rule of its own: the tolerance
 * by which it compares values, the form its assertion macros take, its own ways to run a node. */
#ifndef HG_OPSTEST_H
#define HG_OPSTEST_H

#include "testutil.h"

#include "ops/op.h"
#include "shapes.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- whole models */

/* The model a text form describes, with shape inference over it in *shapes (both the caller's);
 * fails the test when either fails. */
static inline HgModel *
text_model(const char *text, HgShapes **shapes)
{
    g_autoptr(GError) error = NULL;
    HgModel *m = hg_model_parse_text(text, strlen(text), &error);
    *shapes = m ? hg_shapes_infer(m->graph, NULL, 0, &error) : NULL;
    if (!*shapes)
        fail_msg("%s", error ? error->message : "no model");
    return m;
}

/* What shape inference and the interval analysis found for the value called name. */
#define SHAPE_OF(shapes, m, name) hg_shapes_get((shapes), g_hash_table_lookup((m)->graph->values, (name)))
#define RANGE_OF(ranges, m, name) hg_ranges_get((ranges), g_hash_table_lookup((m)->graph->values, (name)))

/* One expected shape: rank, dims (-1 unknown) and, where not NULL, the name an unknown dim has. */
typedef struct {
    const char *name;
    int rank;
    gint64 dims[4];
    const char *syms[4];
} WantShape;

/* Fails the test where a value's inferred shape differs from want[0..n). */
static inline void
assert_shapes(const HgShapes *shapes, const HgModel *m, const WantShape *want, gsize n)
{
    for (gsize i = 0; i < n; i++) {
        const HgValueShape *vs = SHAPE_OF(shapes, m, want[i].name);
        if (vs->rank != want[i].rank)
            fail_msg("%s: rank %d, expected %d", want[i].name, vs->rank, want[i].rank);
        for (int k = 0; k < vs->rank && k < 4; k++) {
            if (vs->dims[k].v != want[i].dims[k])
                fail_msg("%s: dim %d is %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT, want[i].name, k,
                         vs->dims[k].v, want[i].dims[k]);
            if (want[i].syms[k] && g_strcmp0(vs->dims[k].sym, want[i].syms[k]) != 0)
                fail_msg("%s: dim %d is named '%s', expected '%s'", want[i].name, k,
                         vs->dims[k].sym ? vs->dims[k].sym : "(none)", want[i].syms[k]);
        }
    }
}

/* ---------------------------------------------------------------- literals */

/* Compound literals for arguments: dims, exact int64 values, doubles, and floats (values a test wants
 * rounded to float before they are stored). */
#define DIMS(...) ((const gint64[]){__VA_ARGS__})
#define INTS(...) ((const gint64[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define F32S(...) ((const float[]){__VA_ARGS__})

/* The most inputs or outputs a node from node_new() has, and the outputs a Result holds (LSTM takes
 * 8 inputs). */
#define MAX_IO 8

/* ---------------------------------------------------------------- one node in its own model */

/* A node and the model that owns it (and its graph, values and attributes). */
typedef struct {
    HgModel *model;
    HgNode *node;
} Node;

/* A model holding one node op (default domain) whose inputs and outputs are named by the
 * comma-separated lists inputs and outputs; an empty name leaves that slot omitted (NULL). Each named
 * input is also a graph input, so the graph verifies. At most MAX_IO of each. Free with node_free(). */
static inline Node
node_new(const char *op, const char *inputs, const char *outputs)
{
    Node n = {hg_model_new(), NULL};
    HgGraph *g = hg_graph_new(n.model, NULL);
    n.model->graph = g;
    g_auto(GStrv) in = g_strsplit(inputs, ",", -1), out = g_strsplit(outputs, ",", -1);
    HgValue *iv[MAX_IO] = {0}, *ov[MAX_IO] = {0};
    guint ni = g_strv_length(in), no = g_strv_length(out);
    g_assert(ni <= MAX_IO && no <= MAX_IO);
    for (guint i = 0; i < ni; i++) {
        if (!*in[i])
            continue;
        iv[i] = hg_graph_new_value(g, in[i], NULL);
        hg_graph_add_input(g, iv[i], NULL);
    }
    for (guint i = 0; i < no; i++)
        if (*out[i])
            ov[i] = hg_graph_new_value(g, out[i], NULL);
    n.node = hg_graph_add_node(g, op, "", "n", ni, iv, no, ov);
    return n;
}

/* Assert that n's graph verifies (reported at the caller's line), then free n's model. */
static inline void
hg_node_free_at(Node *n, const char *file, int line)
{
    hg_assert_verified_at(n->model->graph, file, line);
    hg_model_free(n->model);
}
#define node_free(n) hg_node_free_at((n), __FILE__, __LINE__)

/* A new model, stored in *model (the caller's: hg_model_free() or g_autoptr(HgModel)), holding one
 * node op (default domain) with n_in inputs in0, in1, ... and n_out outputs out0, out1, ..., all
 * present. The inputs are not graph inputs: the graph does not verify. Returns the node. */
static inline HgNode *
node_in_model(HgModel **model, const char *op, guint n_in, guint n_out)
{
    HgModel *m = hg_model_new();
    HgGraph *g = m->graph = hg_graph_new(m, NULL);
    HgValue *ins[16], *outs[8];
    g_assert(n_in <= G_N_ELEMENTS(ins) && n_out <= G_N_ELEMENTS(outs));
    for (guint i = 0; i < n_in; i++) {
        g_autofree char *name = g_strdup_printf("in%u", i);
        ins[i] = hg_graph_new_value(g, name, NULL);
    }
    for (guint i = 0; i < n_out; i++) {
        g_autofree char *name = g_strdup_printf("out%u", i);
        outs[i] = hg_graph_new_value(g, name, NULL);
    }
    *model = m;
    return hg_graph_add_node(g, op, "", "n", n_in, ins, n_out, outs);
}

/* node_in_model() as a Node. Free it with hg_model_free(n.model): node_free() would fail to verify. */
static inline Node
node_new_n(const char *op, guint n_in, guint n_out)
{
    Node n;
    n.node = node_in_model(&n.model, op, n_in, n_out);
    return n;
}

/* ---------------------------------------------------------------- attributes (owned by the node) */

static inline void
attr_i(HgNode *n, const char *name, gint64 v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INT);
    a->i = v;
    hg_node_add_attr(n, a);
}

static inline void
attr_f(HgNode *n, const char *name, float v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_FLOAT);
    a->f = v;
    hg_node_add_attr(n, a);
}

static inline void
attr_s(HgNode *n, const char *name, const char *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_STRING);
    g_bytes_unref(a->s);
    a->s = g_bytes_new(v, strlen(v));
    hg_node_add_attr(n, a);
}

/* A new GArray of len elements of size bytes copied from v. */
static inline GArray *
garray_of(const void *v, guint len, guint size)
{
    GArray *g = g_array_new(FALSE, FALSE, size);
    g_array_append_vals(g, v, len);
    return g;
}

static inline void
attr_ints(HgNode *n, const char *name, guint len, const gint64 *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INTS);
    a->ints = garray_of(v, len, sizeof(gint64));
    hg_node_add_attr(n, a);
}

static inline void
attr_floats(HgNode *n, const char *name, guint len, const float *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_FLOATS);
    a->floats = garray_of(v, len, sizeof(float));
    hg_node_add_attr(n, a);
}

/* A tensor attribute holding a copy of v. */
static inline void
attr_t(HgNode *n, const char *name, const HgArray *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_TENSOR);
    a->t = hg_array_to_tensor(v, name);
    hg_node_add_attr(n, a);
}

/* ---------------------------------------------------------------- arrays from literal values */

/* Defines name(dtype, rank, dims, v): a new array of dtype and shape holding v (numel values of type
 * T, or none when v is NULL: zeros), stored by store. The caller owns the reference. */
#define HG_ARR_FROM(name, T, store)                                                                \
    static inline HgArray *name(int dtype, guint rank, const gint64 *dims, const T *v)             \
    {                                                                                              \
        HgArray *a = hg_array_new(dtype, rank, dims, NULL);                                        \
        assert_non_null(a);                                                                        \
        if (v && a->numel)                                                                         \
            store(a, v);                                                                           \
        return a;                                                                                  \
    }

/* arr(): from doubles, converted as hg_array_store_f64() does: FP16 rounds, integers truncate. */
HG_ARR_FROM(arr, double, hg_array_store_f64)
/* arr_f32(): from floats, converted as hg_array_store_f32() does. */
HG_ARR_FROM(arr_f32, float, hg_array_store_f32)
/* arr_i(): from int64 values, exact where dtype holds them (narrower integers wrap, as a cast does). */
HG_ARR_FROM(arr_i, gint64, hg_array_store_i64)

/* An int64 array (doubles cannot hold every int64). */
static inline HgArray *
arr_i64(guint rank, const gint64 *dims, const gint64 *v)
{
    return arr_i(HG_DTYPE_INT64, rank, dims, v);
}

/* ---------------------------------------------------------------- eval through the op table */

/* Run the kernel of node's op at opset with threads threads on ins[0..n_in) (NULL entries are omitted
 * inputs; the references stay the caller's). outs[0..n_out) are set to NULL, then receive the new
 * references the kernel stores. Returns the kernel's verdict; error (may be NULL) is set as it left it. */
static inline gboolean
eval_node(const HgNode *node, gint64 opset, int threads, guint n_in, HgArray *const *ins, guint n_out,
          HgArray **outs, GError **error)
{
    const HgOpDef *d = hg_op_for_node(node);
    assert_non_null(d);
    for (guint i = 0; i < n_out; i++)
        outs[i] = NULL;
    HgEvalCtx ctx = {node, opset, n_in, ins, n_out, outs, threads, error};
    return d->eval(&ctx);
}

/* eval_node(), asserting that the verdict and the error agree. error must be non-NULL and *error NULL. */
static inline gboolean
eval_checked(const HgNode *node, gint64 opset, int threads, guint n_in, HgArray *const *ins, guint n_out,
             HgArray **outs, GError **error)
{
    gboolean ok = eval_node(node, opset, threads, n_in, ins, n_out, outs, error);
    assert_true(ok == (*error == NULL));
    return ok;
}

/* The outputs of one eval (NULL where not produced), and its error. Release with result_free(). */
typedef struct {
    gboolean ok;
    HgArray *out[MAX_IO];
    GError *error;
} Result;

/* Run n's op at opset on one thread with all of the node's outputs, taking the inputs (unref'd here;
 * NULL for an omitted input). */
static inline Result
run(Node *n, gint64 opset, guint n_in, HgArray *const *ins)
{
    Result r = {0};
    r.ok = eval_checked(n->node, opset, 1, n_in, ins, n->node->n_outputs, r.out, &r.error);
    for (guint i = 0; i < n_in; i++)
        if (ins[i])
            hg_array_unref(ins[i]);
    return r;
}

/* run() on the inputs listed: RUN(&n, 13, arr(...), NULL, arr_i64(...)). */
#define RUN(n, opset, ...)                                                                         \
    run((n), (opset), sizeof((HgArray *[]){__VA_ARGS__}) / sizeof(HgArray *), (HgArray *[]){__VA_ARGS__})

static inline void
result_free(Result *r)
{
    for (int i = 0; i < MAX_IO; i++)
        if (r->out[i])
            hg_array_unref(r->out[i]);
    g_clear_error(&r->error);
}

/* RUN() on the inputs listed, which must fail with an error of code (in HG_ERROR) whose message holds
 * needle: RUN_FAILS(&n, 13, HG_ERROR_INVALID, "out of range", arr(...)). */
#define RUN_FAILS(n, opset, code, needle, ...)                                                     \
    do {                                                                                           \
        Result r_ = RUN((n), (opset), __VA_ARGS__);                                                \
        assert_hg_error(r_.error, (code), (needle));                                               \
        result_free(&r_);                                                                          \
    } while (0)

/* ---------------------------------------------------------------- shape inference through the table */

/* Set *s, whatever it held (a value it held is not released), to unknown: dtype UNDEFINED, rank -1. */
static inline void
vs_init(HgValueShape *s)
{
    memset(s, 0, sizeof(*s));
    s->dtype = HG_DTYPE_UNDEFINED;
    s->rank = -1;
}

/* Set *s as vs_init() does, then to dtype and rank with dims; a negative dim is unknown, named by
 * syms[i] when syms and syms[i] are non-NULL. */
static inline void
vs_set(HgValueShape *s, int dtype, int rank, const gint64 *dims, const char *const *syms)
{
    vs_init(s);
    s->dtype = dtype;
    s->rank = rank;
    for (int i = 0; i < rank; i++) {
        s->dims[i].v = dims[i];
        s->dims[i].sym = syms && syms[i] ? g_intern_string(syms[i]) : NULL;
    }
}

/* A new shape record as vs_set() makes it, without names; release with vs_free(). */
static inline HgValueShape *
vs_new(int dtype, int rank, const gint64 *dims)
{
    HgValueShape *s = g_new(HgValueShape, 1);
    vs_set(s, dtype, rank, dims, NULL);
    return s;
}

/* Free s (NULL is ignored) and the value it holds. */
static inline void
vs_free(HgValueShape *s)
{
    if (s) {
        hg_vshape_unknown(s);
        g_free(s);
    }
}

/* Run the shape rule of node's op at opset on ins[0..n_in) (NULL entries are omitted inputs) into
 * outs[0..n_out), which the caller has made unknown. Returns the rule's verdict; error may be NULL. */
static inline gboolean
infer_node(const HgNode *node, gint64 opset, guint n_in, const HgValueShape *const *ins, guint n_out,
           HgValueShape **outs, GError **error)
{
    HgShapeCtx ctx = {node, opset, n_in, ins, n_out, outs, error};
    return hg_op_for_node(node)->infer(&ctx);
}

/* infer_node() on n's node with inputs from vs_new() (freed here) into n_out new unknown records
 * stored in outs (the caller vs_free()s them). */
static inline gboolean
infer_vs(Node *n, gint64 opset, guint n_in, HgValueShape **ins, guint n_out, HgValueShape **outs,
         GError **error)
{
    for (guint k = 0; k < n_out; k++) {
        outs[k] = g_new0(HgValueShape, 1);
        hg_vshape_unknown(outs[k]);
    }
    gboolean ok = infer_node(n->node, opset, n_in, (const HgValueShape *const *)ins, n_out, outs, error);
    for (guint i = 0; i < n_in; i++)
        vs_free(ins[i]);
    return ok;
}

/* ---------------------------------------------------------------- assertions (at the caller's line) */

/* For hg_assert_shape_at(): any dtype will do. */
#define ANY_DTYPE (-1)

/* Assert that a is an array of dtype (unless ANY_DTYPE) with rank dims equal to dims. */
static inline void
hg_assert_shape_at(const HgArray *a, int dtype, guint rank, const gint64 *dims, const char *file, int line)
{
    if (!a) {
        print_error("%s:%d: no array\n", file, line);
        _fail(file, line);
        return;
    }
    gboolean same = (dtype == ANY_DTYPE || a->dtype == dtype) && a->rank == rank;
    for (guint i = 0; same && i < rank; i++)
        same = a->dims[i] == dims[i];
    if (!same) {
        print_error("%s:%d: array is %s of rank %u (dims", file, line, hg_dtype_name(a->dtype), a->rank);
        for (guint i = 0; i < a->rank; i++)
            print_error(" %" G_GINT64_FORMAT, a->dims[i]);
        print_error("), expected %s of rank %u (dims", dtype == ANY_DTYPE ? "any dtype" : hg_dtype_name(dtype), rank);
        for (guint i = 0; i < rank; i++)
            print_error(" %" G_GINT64_FORMAT, dims[i]);
        print_error(")\n");
        _fail(file, line);
    }
}

/* Whether a holds n elements; else fail, and say so. */
static inline gboolean
hg_assert_numel_at(const HgArray *a, gint64 n, const char *file, int line)
{
    if (a && a->numel == n)
        return TRUE;
    print_error("%s:%d: %" G_GINT64_FORMAT " values, expected %" G_GINT64_FORMAT "\n", file, line,
                a ? a->numel : -1, n);
    _fail(file, line);
    return FALSE;
}

/* A file's rule for comparing values: whether got matches want within tol. */
typedef gboolean (*HgMatchFunc)(double got, double want, double tol);

/* Assert that a has n elements, each of which (read as double) matches want[i] by match. */
static inline void
hg_assert_values_at(const HgArray *a, const double *want, gint64 n, double tol, HgMatchFunc match,
                    const char *file, int line)
{
    if (!hg_assert_numel_at(a, n, file, line))
        return;
    for (gint64 i = 0; i < n; i++) {
        double got = hg_array_get_f64(a, i);
        if (!match(got, want[i], tol)) {
            print_error("%s:%d: element %" G_GINT64_FORMAT " is %.9g, expected %.9g\n", file, line, i, got,
                        want[i]);
            _fail(file, line);
        }
    }
}

/* Within tol, relative, plus 1e-6 absolute; NaN matches NaN, an infinity only itself. */
static inline gboolean
hg_within_rel(double got, double want, double tol)
{
    return (isnan(got) && isnan(want)) || (isinf(want) && got == want) ||
           (isfinite(want) && isfinite(got) && fabs(got - want) <= tol * fabs(want) + 1e-6);
}

/* Assert a has dtype, the given dims, and values within relative tolerance tol of want
 * (hg_within_rel): the kernel tests' `check`. */
static inline void
hg_check_rel_at(const HgArray *a, int dtype, guint rank, const gint64 *dims, const double *want, double tol,
                const char *file, int line)
{
    hg_assert_shape_at(a, dtype, rank, dims, file, line);
    hg_assert_values_at(a, want, a ? a->numel : 0, tol, hg_within_rel, file, line);
}

/* Assert that a has n elements, each of which (read as int64) equals want[i]. */
static inline void
hg_assert_ints_at(const HgArray *a, const gint64 *want, gint64 n, const char *file, int line)
{
    if (!hg_assert_numel_at(a, n, file, line))
        return;
    for (gint64 i = 0; i < n; i++) {
        gint64 got = hg_array_get_i64(a, i);
        if (got != want[i]) {
            print_error("%s:%d: element %" G_GINT64_FORMAT " is %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT
                        "\n", file, line, i, got, want[i]);
            _fail(file, line);
        }
    }
}

/* Assert that the inferred shape s has dtype and rank dims equal to dims. */
static inline void
hg_assert_vshape_at(const HgValueShape *s, int dtype, int rank, const gint64 *dims, const char *file, int line)
{
    gboolean same = s->dtype == dtype && s->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = s->dims[i].v == dims[i];
    if (!same) {
        print_error("%s:%d: inferred %s rank %d (dims", file, line, hg_dtype_name(s->dtype), s->rank);
        for (int i = 0; i < s->rank; i++)
            print_error(" %" G_GINT64_FORMAT, s->dims[i].v);
        print_error("), expected %s rank %d\n", hg_dtype_name(dtype), rank);
        _fail(file, line);
    }
}

/* Assert that every row of the op table in family is found by name in the default domain (as "" and
 * "ai.onnx") and not in com.microsoft, has infer, eval and cost, and that the family has n rows. */
static inline void
hg_assert_family_at(const char *family, guint n, const char *file, int line)
{
    guint count = 0;
    for (int id = 1; id < HG_OP_COUNT; id++) {
        const HgOpDef *d = hg_op_by_id((HgOpId)id);
        if (strcmp(d->family, family) != 0)
            continue;
        _assert_int_equal(cast_ptr_to_largest_integral_type(hg_op_lookup("", d->name)),
                          cast_ptr_to_largest_integral_type(d), file, line);
        _assert_int_equal(cast_ptr_to_largest_integral_type(hg_op_lookup("ai.onnx", d->name)),
                          cast_ptr_to_largest_integral_type(d), file, line);
        _assert_true(!cast_ptr_to_largest_integral_type(hg_op_lookup("com.microsoft", d->name)),
                     "hg_op_lookup(\"com.microsoft\", d->name) == NULL", file, line);
        _assert_true(cast_ptr_to_largest_integral_type(d->infer), "d->infer", file, line);
        _assert_true(cast_ptr_to_largest_integral_type(d->eval), "d->eval", file, line);
        _assert_true(cast_ptr_to_largest_integral_type(d->cost), "d->cost", file, line);
        count++;
    }
    _assert_int_equal(count, n, file, line);
}
#define assert_family_rows(family, n) hg_assert_family_at((family), (n), __FILE__, __LINE__)

#endif
