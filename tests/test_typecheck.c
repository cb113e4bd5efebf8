/* The whole-model type check (include/halfguard/typecheck.h): models in ONNX's text syntax, checked,
 * with the exact violations each must give. */
#include "testutil.h"

#include <string.h>

/* Assert the violations' messages, in order (NULL-terminated list; none for a valid model). */
static void
assert_violations_at(HgModel *m, const char *const *want, const char *file, int line)
{
    g_autoptr(GPtrArray) got = hg_model_typecheck(m);
    guint n = 0;
    while (want[n])
        n++;
    gboolean same = got->len == n;
    for (guint i = 0; same && i < n; i++)
        same = strcmp(((HgTypeViolation *)got->pdata[i])->message, want[i]) == 0;
    if (!same) {
        print_error("%s:%d: expected %u violations, got %u:\n", file, line, n, got->len);
        for (guint i = 0; i < got->len; i++)
            print_error("  got:  %s\n", ((HgTypeViolation *)got->pdata[i])->message);
        for (guint i = 0; i < n; i++)
            print_error("  want: %s\n", want[i]);
        _fail(file, line);
    }
}
#define assert_violations(m, ...)                                                                  \
    assert_violations_at((m), (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)
#define assert_valid(m) assert_violations_at((m), (const char *const[]){NULL}, __FILE__, __LINE__)

/* Assert that m has exactly one violation, with message want, and return it; *list holds the
 * violations (the caller's g_autoptr). */
static const HgTypeViolation *
one_violation_at(HgModel *m, GPtrArray **list, const char *want, const char *file, int line)
{
    *list = hg_model_typecheck(m);
    _assert_int_equal((*list)->len, 1, file, line);
    const HgTypeViolation *x = (*list)->pdata[0];
    _assert_string_equal(x->message, want, file, line);
    return x;
}
#define one_violation(m, list, want) one_violation_at((m), (list), (want), __FILE__, __LINE__)

/* A mixed-precision graph whose types all agree, with types inferred through Cast, Constant, Shape
 * and a Reshape whose shape is int64. */
static void
test_valid_mixed(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
                                    "g (float[2,4] x) => (float[8] y)\n"
                                    "<\n  float16[4,4] W = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}\n>\n"
                                    "{\n"
                                    "  h = Cast <to = 10> (x)  #@ name: \"down\"\n"
                                    "  p = MatMul(h, W)  #@ name: \"mm\"\n"
                                    "  c = Constant <value = float16[1] {2}> ()  #@ name: \"two\"\n"
                                    "  q = Mul(p, c)  #@ name: \"scale\"\n"
                                    "  s = Constant <value = int64[1] {-1}> ()  #@ name: \"shape\"\n"
                                    "  r = Reshape(q, s)  #@ name: \"flat\"\n"
                                    "  y = Cast <to = 1> (r)  #@ name: \"up\"\n"
                                    "}\n");
    assert_valid(m);
}

/* Issue 11: an unknown op's input went FP32 with no Cast after it; the next MatMul reads both. */
static void
test_parameter_mismatch(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 9,\n  opset_import: [\"\" : 20]\n>\n"
                                    "g (float16[2,8] x, float16[8,8] W) => (float16[2,8] y)\n"
                                    "{\n"
                                    "  h = MatMul(x, W)  #@ name: \"mm0\"\n"
                                    "  hf = Cast <to = 1> (h)  #@ name: \"h/to_fp32\"\n"
                                    "  g = Gelu(hf)  #@ name: \"gelu\"\n"
                                    "  y = MatMul(g, W)  #@ name: \"mm1\"\n"
                                    "}\n");
    g_autoptr(GPtrArray) v = NULL;
    const HgTypeViolation *x = one_violation(
        m, &v, "node 'mm1' (MatMul): type parameter T is float at input 0 'g' but float16 at input 1 'W'");
    assert_string_equal(x->node, "mm1");
    assert_string_equal(x->op, "MatMul");
    assert_string_equal(x->param, "T");
    assert_string_equal(x->output, "y");
}

/* A homogeneous variadic binds every value; the declared output must agree too. */
static void
test_variadic_and_outputs(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 13]\n>\n"
                                    "g (float[2] a, float[2] b, float16[2] c) => (float16[6] y, float16[2] z)\n"
                                    "{\n"
                                    "  y = Concat <axis = 0> (a, b, c)  #@ name: \"cat\"\n"
                                    "  z = Relu(a)  #@ name: \"relu\"\n"
                                    "}\n");
    assert_violations(m,
                      "node 'cat' (Concat): type parameter T is float at input 0 'a' but float16 at input 2 'c'",
                      "node 'relu' (Relu): type parameter T is float at input 0 'a' but float16 at output 0 'z'");
}

/* FLOAT16 where the op's version has no FP16 form: CumSum took float16 only at opset 14. */
static void
test_float16_not_allowed_at_old_opset(void **state)
{
    (void)state;
#define CUMSUM(opset)                                                                              \
    "<\n  ir_version: 8,\n  opset_import: [\"\" : " opset "]\n>\n"                                  \
    "g (float16[8] x) => (float16[8] y)\n"                                                         \
    "<\n  int64 axis = {0}\n>\n"                                                                  \
    "{\n  y = CumSum(x, axis)  #@ name: \"cs\"\n}\n"
    const char *old = CUMSUM("13"), *now = CUMSUM("14");
#undef CUMSUM
    g_autoptr(HgModel) m13 = parse_ok(old);
    assert_violations(m13, "node 'cs' (CumSum): type parameter T is float16 at input 0 'x', which CumSum-11 "
                           "does not allow (it allows float, int32, int64, double, uint32, uint64)");
    g_autoptr(HgModel) m14 = parse_ok(now);
    assert_valid(m14);
}

/* A literal type: Reshape's shape is int64, whatever the data. */
static void
test_literal_mismatch(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 14]\n>\n"
                                    "g (float[2,3] x, float[2] s) => (float[3,2] y)\n"
                                    "{\n  y = Reshape(x, s)  #@ name: \"rs\"\n}\n");
    g_autoptr(GPtrArray) v = NULL;
    const HgTypeViolation *x =
        one_violation(m, &v, "node 'rs' (Reshape): input 1 's' is float, not int64 as Reshape-14 requires");
    assert_string_equal(x->param, "tensor(int64)");
}

/* A node inside an If branch reads an outer FP32 value and an FP16 one; the If's output takes the
 * branch's type, and a reader outside sees it. */
static void
test_nested_if(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
                                    "g (bool c, float[2] x, float16[2] w) => (float[2] z)\n"
                                    "{\n"
                                    "  t = Relu(x)  #@ name: \"relu\"\n"
                                    "  y = If(c) <\n"
                                    "    then_branch = then_g () => (float16[2] o) {\n"
                                    "      o = Add(t, w)  #@ name: \"inner_add\"\n"
                                    "    },\n"
                                    "    else_branch = else_g () => (float16[2] o2) {\n"
                                    "      o2 = Identity(w)  #@ name: \"inner_id\"\n"
                                    "    }\n"
                                    "  >  #@ name: \"if\"\n"
                                    "  z = Sub(y, x)  #@ name: \"outer_sub\"\n"
                                    "}\n");
    assert_violations(m,
                      "node 'inner_add' (Add): type parameter T is float at input 0 't' but float16 at input 1 'w'",
                      "node 'outer_sub' (Sub): type parameter T is float16 at input 0 'y' but float at input 1 'x'");
}

/* A value nothing declares and no signature can type (a custom op's output) is reported where a
 * known op reads it; once declared, it feeds the rest. */
static void
test_untyped_value(void **state)
{
    (void)state;
    const char *head = "<\n  ir_version: 8,\n  opset_import: [\"\" : 17, \"custom\" : 1]\n>\n"
                       "g (float[2] x) => (float[2] y)\n";
    const char *body = "{\n"
                       "  u = Mystery(x)  #@ name: \"mystery\", domain: \"custom\"\n"
                       "  y = Relu(u)  #@ name: \"relu\"\n"
                       "}\n";
    g_autofree char *bare = g_strconcat(head, body, NULL);
    g_autoptr(HgModel) m = parse_ok(bare);
    assert_violations(m, "node 'relu' (Relu): input 0 'u' has no known type");
    g_autofree char *declared = g_strconcat(head, "<\n  float[2] u\n>\n", body, NULL);
    g_autoptr(HgModel) ok = parse_ok(declared);
    assert_valid(ok);
    g_autofree char *wrong = g_strconcat(head, "<\n  float16[2] u\n>\n", body, NULL);
    g_autoptr(HgModel) bad = parse_ok(wrong);
    assert_violations(bad, "node 'relu' (Relu): type parameter T is float16 at input 0 'u' but float at output 0 'y'");
}

/* An op below the opset that introduced it is not checked (ONNX Runtime accepts LayerNormalization
 * at opset 13), but its output type is still inferred from its signature for the nodes after it. */
static void
test_op_before_its_opset(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 13]\n>\n"
                                    "g (float16[2,4] x, float16[4] s, float[2,4] r) => (float16[2,4] y)\n"
                                    "{\n"
                                    "  n = LayerNormalization(x, s)  #@ name: \"ln\"\n"
                                    "  y = Add(n, r)  #@ name: \"add\"\n"
                                    "}\n");
    assert_violations(m, "node 'add' (Add): type parameter T is float16 at input 0 'n' but float at input 1 'r'");
}

/* Loop's carried values may differ in type from each other (a heterogeneous variadic); the body's
 * inputs are typed from the Loop's. */
static void
test_loop_heterogeneous(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 16]\n>\n"
                                    "g (int64 n, bool c, float[2] a, float16[2] b) => (float[2] ya, float16[2] yb)\n"
                                    "{\n"
                                    "  ya, yb = Loop(n, c, a, b) <\n"
                                    "    body = body (i, cond, xa, xb) => (bool co, float[2] oa, float16[2] ob) {\n"
                                    "      co = Identity(cond)  #@ name: \"keep\"\n"
                                    "      oa = Relu(xa)  #@ name: \"ra\"\n"
                                    "      ob = Relu(xb)  #@ name: \"rb\"\n"
                                    "    }\n"
                                    "  >  #@ name: \"loop\"\n"
                                    "}\n");
    assert_valid(m);
}

/* What convert keeps: violations the input had (same node, op and parameter, whatever the message)
 * are not new; others are, as HG_ERROR_INTERNAL with the violation's message. Unnamed nodes are known
 * by their first output. */
static void
test_none_new(void **state)
{
    (void)state;
    const char *head = "<\n  ir_version: 8,\n  opset_import: [\"\" : 13]\n>\n";
    g_autofree char *t_in = g_strconcat(head, "g (float[2] a, float16[2] b) => (float[2] y, float[2] z)\n"
                                              "{\n  y = Add(a, b)  #@ name: \"add\"\n  z = Mul(a, b)\n}\n", NULL);
    g_autofree char *t_same = g_strconcat(head, "g (float16[2] a, float[2] b) => (float[2] y, float[2] z)\n"
                                                "{\n  y = Add(a, b)  #@ name: \"add\"\n  z = Mul(a, b)\n}\n", NULL);
    g_autofree char *t_worse = g_strconcat(head, "g (float[2] a, float16[2] b) => (float[2] y, float[2] z)\n"
                                                 "{\n  y = Add(a, b)  #@ name: \"add\"\n  z = Mul(a, b)\n"
                                                 "  w = Sub(a, b)  #@ name: \"sub\"\n}\n", NULL);
    g_autoptr(HgModel) in = parse_ok(t_in);
    g_autoptr(HgModel) same = parse_ok(t_same);
    g_autoptr(HgModel) worse = parse_ok(t_worse);
    g_autoptr(GPtrArray) before = hg_model_typecheck(in);
    g_autoptr(GPtrArray) after_same = hg_model_typecheck(same);
    g_autoptr(GPtrArray) after_worse = hg_model_typecheck(worse);
    assert_int_equal(before->len, 2);
    assert_string_equal(((HgTypeViolation *)before->pdata[1])->node, "");
    assert_string_equal(((HgTypeViolation *)before->pdata[1])->output, "z");
    GError *error = NULL;
    assert_true(hg_typecheck_none_new(before, after_same, &error));
    assert_null(error);
    assert_true(hg_typecheck_none_new(before, before, &error));
    assert_false(hg_typecheck_none_new(before, after_worse, &error));
    assert_hg_error(error, HG_ERROR_INTERNAL,
                    "node 'sub' (Sub): type parameter T is float at input 0 'a' but float16 at input 1 'b'");
    g_clear_error(&error);
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    assert_false(hg_typecheck_none_new(none, before, &error));
    assert_hg_error(error, HG_ERROR_INTERNAL, "node 'add' (Add)");
    g_clear_error(&error);
    assert_true(hg_typecheck_none_new(before, none, &error));
}

/* Sequences: SequenceConstruct makes seq(tensor(float)), SequenceAt takes the element type out. */
static void
test_sequences(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
                                    "g (float[2] a, float[2] b, float16[2] c) => (float16[2] y)\n"
                                    "<\n  int64 i = {0}\n>\n"
                                    "{\n"
                                    "  s = SequenceConstruct(a, b)  #@ name: \"seq\"\n"
                                    "  e = SequenceAt(s, i)  #@ name: \"at\"\n"
                                    "  y = Add(e, c)  #@ name: \"add\"\n"
                                    "}\n");
    assert_violations(m, "node 'add' (Add): type parameter T is float at input 0 'e' but float16 at input 1 'c'");
}

/* Outputs an attribute or a body decides: a Cast declared as something other than its `to` (what
 * ONNX Runtime reports as "Type (tensor(float)) of output arg ... does not match expected type"), and
 * a Loop whose declared output disagrees with its body. */
static void
test_output_decided_elsewhere(void **state)
{
    (void)state;
    g_autoptr(HgModel) cast = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
                                       "g (float[2] x) => (float16[2] y)\n"
                                       "{\n  y = Cast <to = 1> (x)  #@ name: \"c\"\n}\n");
    assert_violations(cast, "node 'c' (Cast): output 0 'y' is float16 but attribute 'to' makes it float");
    g_autoptr(HgModel) loop = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 16]\n>\n"
                                       "g (int64 n, bool c, float[2] a) => (float16[2] ya)\n"
                                       "{\n"
                                       "  ya = Loop(n, c, a) <\n"
                                       "    body = body (int64 i, bool cond, float[2] xa) => (bool co, float[2] oa) {\n"
                                       "      co = Identity(cond)  #@ name: \"keep\"\n"
                                       "      oa = Relu(xa)  #@ name: \"ra\"\n"
                                       "    }\n"
                                       "  >  #@ name: \"loop\"\n"
                                       "}\n");
    assert_violations(loop, "node 'loop' (Loop): output 0 'ya' is float16 but body output 1 makes it float");
    /* fp16model_loop converted: the carried value FP32, the body's input FP16. */
    g_autoptr(HgModel) fed = parse_ok("<\n  ir_version: 8,\n  opset_import: [\"\" : 16]\n>\n"
                                      "g (int64 n, bool c, float[2] a) => (float16[2] ya)\n"
                                      "{\n"
                                      "  ya = Loop(n, c, a) <\n"
                                      "    body = body (int64 i, bool cond, float16[2] xa) => (bool co, float16[2] oa) {\n"
                                      "      co = Identity(cond)  #@ name: \"keep\"\n"
                                      "      oa = Relu(xa)  #@ name: \"ra\"\n"
                                      "    }\n"
                                      "  >  #@ name: \"loop\"\n"
                                      "}\n");
    assert_violations(fed, "node 'loop' (Loop): body input 2 'xa' is float16 but input 2 'a' is float");
}

HG_TEST_MAIN("typecheck",
             cmocka_unit_test(test_valid_mixed),
             cmocka_unit_test(test_parameter_mismatch),
             cmocka_unit_test(test_variadic_and_outputs),
             cmocka_unit_test(test_float16_not_allowed_at_old_opset),
             cmocka_unit_test(test_literal_mismatch),
             cmocka_unit_test(test_nested_if),
             cmocka_unit_test(test_untyped_value),
             cmocka_unit_test(test_op_before_its_opset),
             cmocka_unit_test(test_loop_heterogeneous),
             cmocka_unit_test(test_none_new),
             cmocka_unit_test(test_sequences),
             cmocka_unit_test(test_output_decided_elsewhere))
