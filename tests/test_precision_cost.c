/* assign_precision's cost model as an oracle (passes/precision_cost.h): the cut's value on small
 * models whose figures can be worked out by hand, and what `cured` lifts.
 *
 * The units (passes/assign_precision.c): a node in FP32 pays 1 + 2 bytes per element it reads or
 * writes + 0.1 per MAC; a Cast pays 1024 + 6 per element. Relu and Mul count one MAC per element,
 * MatMul M x K x N. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "passes/precision_cost.h"

#define HEADER "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"

/* With x in [0, 100], b reaches 4.1e5: an overflow at m1, and mm and mm2 read b. w has no range, so
 * their products are no hazard (unbounded only for lack of one); w itself is an unranged-input
 * finding, at no node, which forces nothing. */
static const char hazard_text[] = HEADER
    "h (float[1,64] x, float[64,64] w) => (float[1,64] y, float[1,64] z)\n<\n  float big = {4096}\n>\n"
    "{\n  a = Relu(x)  #@ name: \"relu\"\n  b = Mul(a, big)  #@ name: \"m1\"\n"
    "  y = MatMul(b, w)  #@ name: \"mm\"\n  z = MatMul(b, w)  #@ name: \"mm2\"\n}\n";
static const char clean_text[] = HEADER
    "c (float[1,64] x) => (float[1,64] y)\n{\n  y = Relu(x)  #@ name: \"relu\"\n}\n";

/* m1 in FP32: 1 + 2 x (64 + 1 + 64) + 0.1 x 64. */
#define M1_FP32 265.4
/* Relu in FP32: 1 + 2 x (64 + 64) + 0.1 x 64. */
#define RELU_FP32 263.4
/* mm in FP32: 1 + 2 x (64 + 4096 + 64) + 0.1 x 4096 MACs. */
#define MM_FP32 8858.6
/* A Cast of 64 elements (x, a, b, y), of 4096 (w). */
#define CAST_64 (1024.0 + 6.0 * 64)
#define CAST_W (1024.0 + 6.0 * 4096)

typedef struct {
    HgModel *m;
    HgConvertOptions *opts;
    HgAnalyses *an;
    HgConvertResult *result;
    HgPassEnv env;
    HgInputRangeSpec range;
    HgCheckOptions check;
    HgCheckResult *res;
} Fixture;

static void
fixture_open(Fixture *f, const char *text)
{
    g_autoptr(GError) error = NULL;
    memset(f, 0, sizeof *f);
    f->m = parse_ok(text);
    assert_non_null(f->m);
    assert_verified(f->m->graph);
    f->range = (HgInputRangeSpec){(char *)"x", 0, 100};
    f->check = (HgCheckOptions){.ranges = &f->range, .n_ranges = 1};
    f->opts = hg_convert_options_new();
    hg_convert_options_set_analysis(f->opts, &f->check);
    f->an = hg_analyses_new(f->opts);
    f->result = hg_convert_result_new();
    f->env = (HgPassEnv){f->opts, f->an, f->result};
    f->res = hg_analyses_get(f->an, f->m->graph, &error);
    assert_non_null(f->res);
}

static void
fixture_close(Fixture *f)
{
    hg_convert_result_free(f->result);
    hg_analyses_free(f->an);
    hg_convert_options_free(f->opts);
    hg_model_free(f->m);
}

static HgNode *
node(Fixture *f, const char *output)
{
    HgValue *v = hg_graph_lookup(f->m->graph, output);
    assert_non_null(v);
    assert_non_null(v->producer);
    return v->producer;
}

static double
cut(Fixture *f, GHashTable *cured)
{
    g_autoptr(GError) error = NULL;
    double cost = -1;
    gboolean ok = hg_precision_cut_cost(f->m->graph, &f->env, f->res, cured, &cost, &error);
    if (!ok)
        print_error("%s\n", error->message);
    assert_true(ok);
    return cost;
}

#define assert_cost(got, want) assert_float_equal((got), (want), 1e-6 * MAX(1.0, fabs((double)(want))))

static void
test_clean_model_costs_nothing(void **state)
{
    (void)state;
    Fixture f;
    fixture_open(&f, clean_text);
    assert_int_equal(f.res->hazards->len, 0);
    assert_cost(cut(&f, NULL), 0);
    /* With --keep-io-types FP16 would pay a Cast in and one out; FP32 costs the Relu's excess. */
    hg_convert_options_set_keep_io_types(f.opts, TRUE);
    assert_cost(cut(&f, NULL), RELU_FP32);
    /* A --block-op forces it, and x (FP16 without --keep-io-types) needs a Cast to reach it. */
    hg_convert_options_set_keep_io_types(f.opts, FALSE);
    const char *block[] = {"Relu", NULL};
    hg_convert_options_set_block_ops(f.opts, block);
    assert_cost(cut(&f, NULL), RELU_FP32 + CAST_64);
    fixture_close(&f);
}

static void
test_hazard_forces_and_cured_lifts(void **state)
{
    (void)state;
    Fixture f;
    fixture_open(&f, hazard_text);
    HgNode *m1 = node(&f, "b"), *mm = node(&f, "y"), *mm2 = node(&f, "z");
    assert_int_equal(f.res->hazards->len, 2);
    const HgHazard *w = f.res->hazards->pdata[0];
    assert_int_equal(w->kind, HG_HAZARD_UNRANGED_INPUT);
    assert_string_equal(w->node, "w");
    assert_null(w->at);
    assert_ptr_equal(((HgHazard *)f.res->hazards->pdata[1])->at, m1);

    /* m1 (the overflow), mm and mm2 (they read b) FP32, w cast up for each MatMul, a cast up for m1:
     * the Relu stays FP16 (in FP32 it would need x cast up instead, and cost its excess too). */
    double island = cut(&f, NULL);
    assert_cost(island, M1_FP32 + 2 * (MM_FP32 + CAST_W) + CAST_64);
    g_autoptr(GHashTable) empty = g_hash_table_new(NULL, NULL);
    assert_cost(cut(&f, empty), island);

    /* Cured at the producer: its hazard and the tensor it writes force nothing, on m1 nor on the
     * MatMuls. */
    g_autoptr(GHashTable) at_m1 = g_hash_table_new(NULL, NULL);
    g_hash_table_add(at_m1, m1);
    assert_cost(cut(&f, at_m1), 0);

    /* Cured at one reader: m1 still writes b and mm2 still reads it, both FP32; mm is free, and FP16
     * (a Cast of b) is cheaper for it than FP32 with w cast up. */
    g_autoptr(GHashTable) at_mm = g_hash_table_new(NULL, NULL);
    g_hash_table_add(at_mm, mm);
    assert_cost(cut(&f, at_mm), M1_FP32 + CAST_64 + CAST_64 + MM_FP32 + CAST_W);
    /* The same with the readers' roles swapped. */
    g_autoptr(GHashTable) at_mm2 = g_hash_table_new(NULL, NULL);
    g_hash_table_add(at_mm2, mm2);
    assert_cost(cut(&f, at_mm2), M1_FP32 + CAST_64 + CAST_64 + MM_FP32 + CAST_W);

    /* A cure lifts what the analysis forces, not the user's overrides: m1 blocked and cured stays FP32
     * between Casts (a in, b out to each MatMul), the MatMuls go FP16. */
    const char *block_m1[] = {"^m1$", NULL};
    hg_convert_options_set_block_nodes(f.opts, block_m1);
    assert_cost(cut(&f, at_m1), M1_FP32 + 3 * CAST_64);
    hg_convert_options_set_block_nodes(f.opts, NULL);

    /* assign_precision makes the uncured cut: m1 and the MatMuls FP32, the Relu FP16. */
    g_autoptr(GError) error = NULL;
    assert_true(hg_pass_find("assign_precision")->run(f.m->graph, &f.env, &error));
    assert_int_equal(f.result->n_fp32_nodes, 3);
    assert_int_equal(m1->precision, HG_PRECISION_FP32);
    assert_int_equal(mm->precision, HG_PRECISION_FP32);
    assert_int_equal(mm2->precision, HG_PRECISION_FP32);
    assert_int_equal(node(&f, "a")->precision, HG_PRECISION_FP16);
    assert_string_equal(m1->precision_reason, "overflow");
    fixture_close(&f);
}

static void
test_bad_pattern_is_an_error(void **state)
{
    (void)state;
    Fixture f;
    fixture_open(&f, clean_text);
    const char *bad[] = {"(", NULL};
    hg_convert_options_set_block_nodes(f.opts, bad);
    g_autoptr(GError) error = NULL;
    double cost = 123;
    assert_false(hg_precision_cut_cost(f.m->graph, &f.env, f.res, NULL, &cost, &error));
    assert_hg_error(error, HG_ERROR_USAGE, "bad node-name pattern");
    assert_cost(cost, 123);
    fixture_close(&f);
}

static void
test_fp16_node_cost(void **state)
{
    (void)state;
    /* A launch, 1024, plus 2 bytes per element read and written. */
    assert_cost(hg_precision_fp16_node_cost(0, 0), 1024);
    assert_cost(hg_precision_fp16_node_cost(7681, 7680), 1024 + 2.0 * (7681 + 7680));
}

HG_TEST_MAIN("precision_cost",
             cmocka_unit_test(test_clean_model_costs_nothing),
             cmocka_unit_test(test_hazard_forces_and_cured_lifts),
             cmocka_unit_test(test_bad_pattern_is_an_error),
             cmocka_unit_test(test_fp16_node_cost))
