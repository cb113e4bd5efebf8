/* The pass driver: what a pass list needs and the order it must keep, the plan in the IR, and the check
 * that every pass that changes the graph moves its generation. */
#include "testutil.h"

#include <math.h>

#include <string.h>

static const char *const chain_text =
    "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
    "g (float[8] x) => (float[8] y)\n<\n  float k = {1000.0}\n>\n"
    "{\n  a = Relu(x)  #@ name: \"relu\"\n  y = Mul(a, k)  #@ name: \"scale\"\n}\n";

static HgModel *
parse(const char *text)
{
    g_autoptr(GError) error = NULL;
    HgModel *m = hg_model_parse_text(text, strlen(text), &error);
    if (!m)
        print_error("%s\n", error->message);
    assert_non_null(m);
    return m;
}

/* A pass that edits a field behind the IR's back: the generation does not move. */
static gboolean
sneaky_pass(HgGraph *g, const HgPassEnv *env, GError **error)
{
    (void)env;
    (void)error;
    HgNode *n = g->nodes->pdata[0];
    g_free(n->op_type);
    n->op_type = g_strdup("Abs");
    return TRUE;
}

/* The same edit through a verb. */
static gboolean
honest_pass(HgGraph *g, const HgPassEnv *env, GError **error)
{
    (void)env;
    (void)error;
    hg_node_set_op(g->nodes->pdata[0], "Abs", NULL);
    return TRUE;
}

static void
test_edit_without_generation_fails(void **state)
{
    (void)state;
    g_setenv("HALFGUARD_CHECK_EDITS", "1", TRUE);
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    const HgPassInfo sneaky = {"sneaky", sneaky_pass, "edits op_type directly", 0, 0, NULL};
    const HgPassInfo honest = {"honest", honest_pass, "edits op_type with hg_node_set_op", 0, 0, NULL};
    const HgPassInfo *list[] = {&sneaky};
    g_autoptr(HgModel) m = parse(chain_text);
    g_autoptr(HgConvertResult) r = hg_convert_result_new();
    g_autoptr(GError) error = NULL;
    assert_false(hg_pipeline_run_passes(m, list, 1, o, NULL, r, NULL, &error));
    assert_hg_error(error, HG_ERROR_INTERNAL, "pass sneaky changed the graph without moving its generation");
    g_autoptr(HgModel) m2 = parse(chain_text);
    list[0] = &honest;
    g_clear_error(&error);
    assert_true(hg_pipeline_run_passes(m2, list, 1, o, NULL, r, NULL, &error));
    assert_true(hg_node_is(m2->graph->nodes->pdata[0], "Abs"));
    /* Without the check the driver trusts the pass. */
    g_unsetenv("HALFGUARD_CHECK_EDITS");
    g_autoptr(HgModel) m3 = parse(chain_text);
    list[0] = &sneaky;
    assert_true(hg_pipeline_run_passes(m3, list, 1, o, NULL, r, NULL, &error));
    g_setenv("HALFGUARD_CHECK_EDITS", "1", TRUE);
}

static void
test_needs_and_order(void **state)
{
    (void)state;
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    g_autoptr(GError) error = NULL;
    /* lower alone has no plan to read. */
    g_autoptr(HgModel) m = parse(chain_text);
    const char *lower_only[] = {"lower", NULL};
    HgPipelineOptions po = {lower_only, NULL, NULL};
    assert_null(hg_convert(m, o, &po, &error));
    assert_hg_error(error, HG_ERROR_USAGE, "pass lower needs the precision plan, which assign_precision makes");
    /* Nor before assign_precision. */
    g_clear_error(&error);
    const char *backwards[] = {"lower", "assign_precision", NULL};
    po.passes = backwards;
    assert_null(hg_convert(m, o, &po, &error));
    assert_hg_error(error, HG_ERROR_USAGE, "pass lower needs the precision plan");
    /* A rewrite after the plan would leave its nodes out of it. */
    g_clear_error(&error);
    const char *late[] = {"assign_precision", "rescale", NULL};
    po.passes = late;
    assert_null(hg_convert(m, o, &po, &error));
    assert_hg_error(error, HG_ERROR_USAGE, "pass assign_precision must come after rescale, not before it");
    /* Nothing ran: the graph is as it was. */
    assert_false(hg_graph_has_plan(m->graph));
    /* In order, the plan is in the IR and lower reads it. */
    g_clear_error(&error);
    HgInputRangeSpec range = {(char *)"x", 0, 100};
    HgCheckOptions check = {.ranges = &range, .n_ranges = 1};
    hg_convert_options_set_analysis(o, &check);
    const char *both[] = {"assign_precision", "lower", NULL};
    po.passes = both;
    g_autoptr(HgConvertResult) r = hg_convert(m, o, &po, &error);
    assert_non_null(r);
    HgNode *relu = m->graph->nodes->pdata[0];
    HgValue *y = hg_graph_lookup(m->graph, "y");
    assert_int_equal(relu->precision, HG_PRECISION_FP16);
    assert_int_equal(y->producer->precision, HG_PRECISION_FP32); /* y reaches 1e5 */
    assert_string_equal(y->producer->precision_reason, "overflow");
    assert_int_equal(hg_value_elem_type(y), HG_DTYPE_FLOAT);
    assert_int_equal(hg_value_elem_type(hg_graph_lookup(m->graph, "a")), HG_DTYPE_FLOAT16);
}

/* A plan read from the text form is a plan: lower alone reads it, and the text shows it again. */
static void
test_plan_from_text(void **state)
{
    (void)state;
    static const char *const planned =
        "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
        "g (float[8] x) => (float[8] y)\n<\n  float k = {2.0}\n>\n"
        "{\n  a = Relu(x)  #@ name: \"relu\", precision: \"fp32 (--block-op)\"\n"
        "  y = Mul(a, k)  #@ name: \"scale\", precision: \"fp16 (prefers FP16)\"\n}\n";
    g_autoptr(HgModel) m = parse(planned);
    HgNode *relu = m->graph->nodes->pdata[0];
    assert_int_equal(relu->precision, HG_PRECISION_FP32);
    assert_string_equal(relu->precision_reason, "--block-op");
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    const char *lower_only[] = {"lower", NULL};
    HgPipelineOptions po = {lower_only, NULL, NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(HgConvertResult) r = hg_convert(m, o, &po, &error);
    if (!r)
        print_error("%s\n", error->message);
    assert_non_null(r);
    /* Relu FP32, the Mul FP16: one Cast to FLOAT16 between them, read by the Mul. */
    assert_int_equal(hg_value_elem_type(hg_graph_lookup(m->graph, "y")), HG_DTYPE_FLOAT16);
    HgValue *a16 = hg_graph_lookup(m->graph, "a/fp16");
    assert_non_null(a16);
    assert_true(hg_node_is(a16->producer, "Cast"));
    assert_int_equal(hg_node_attr_int(a16->producer, "to", 0), HG_DTYPE_FLOAT16);
    assert_ptr_equal(a16->producer->inputs[0], hg_graph_lookup(m->graph, "a"));
    assert_int_equal(r->n_casts, 1);
    g_autofree char *text = hg_model_to_text(m, NULL);
    assert_non_null(strstr(text, "#@ name: \"relu\", precision: \"fp32 (--block-op)\""));
    /* A precision that is neither is a parse error naming it. */
    static const char *const bad =
        "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
        "g (float[8] x) => (float[8] y)\n{\n  y = Relu(x)  #@ precision: \"fp8\"\n}\n";
    g_clear_error(&error);
    assert_null(hg_model_parse_text(bad, strlen(bad), &error));
    assert_hg_error(error, HG_ERROR_PARSE, "precision 'fp8'");
}

/* The options a one-call conversion is built from: ranges appended and copied (the parsed name is
 * the caller's, released by g_auto), the calibration paths, threads and seed, and a deep copy that
 * outlives the original. */
static void
test_convert_options(void **state)
{
    (void)state;
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    {
        g_auto(HgInputRangeSpec) r = {0};
        assert_true(hg_input_range_parse("past_*=-5:5", &r, NULL));
        hg_convert_options_add_input_range(o, r.name, r.lo, r.hi);
    }
    HgInputRangeSpec bad = {NULL, 0, 0};
    assert_false(hg_input_range_parse("x=2:1", &bad, NULL));
    assert_null(bad.name);
    hg_convert_options_add_input_range(o, "*", -INFINITY, INFINITY);
    hg_convert_options_add_calib(o, "a");
    hg_convert_options_add_calib(o, "b.npz");
    hg_convert_options_set_threads(o, 3);
    hg_convert_options_set_seed(o, 7);
    HgConvertOptions *c = hg_convert_options_copy(o);
    g_clear_pointer(&o, hg_convert_options_free);
    const HgCheckOptions *co = hg_convert_options_analysis(c);
    assert_int_equal(co->n_ranges, 2);
    assert_string_equal(co->ranges[0].name, "past_*");
    assert_true(co->ranges[0].lo == -5 && co->ranges[0].hi == 5);
    assert_string_equal(co->ranges[1].name, "*");
    assert_true(isinf(co->ranges[1].hi));
    const char *const *calib = hg_convert_options_calib(c);
    assert_string_equal(calib[0], "a");
    assert_string_equal(calib[1], "b.npz");
    assert_null(calib[2]);
    assert_int_equal(hg_convert_options_threads(c), 3);
    assert_true(hg_convert_options_seed(c) == 7);
    hg_convert_options_free(c);
}

/* NonMaxSuppression has no FP16 form (boxes and scores are tensor(float) only, and ONNX Runtime has
 * only a float kernel): a conversion computes its producers in FP16 and Casts its boxes and scores back
 * to FP32, its thresholds stay float; RoiAlign (float16 allowed) goes FP16 with its rois. The whole
 * model passes the type check hg_convert ends with. */
static void
test_detection_precision(void **state)
{
    (void)state;
    static const char *const text =
        "<\n  ir_version: 8,\n  opset_import: [\"\" : 16]\n>\n"
        "g (float[1,4,8,8] x, float[1,8,4] b, float[1,2,8] s, float[3,4] rois, int64[3] bi)\n"
        "  => (int64[n,3] sel, float[3,4,2,2] y)\n"
        "<\n  int64[1] m = {3},\n  float[1] iou = {0.5},\n  float[1] t = {0.1},\n  float[1] two = {2.0}\n>\n"
        "{\n  b2 = Mul(b, two)\n  s2 = Sigmoid(s)\n  sel = NonMaxSuppression(b2, s2, m, iou, t)\n"
        "  x2 = Relu(x)\n"
        "  y = RoiAlign <output_height = 2, output_width = 2, sampling_ratio = 2, spatial_scale = 0.5> (x2, rois, bi)\n}\n";
    g_autoptr(HgModel) m = parse(text);
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    hg_convert_options_add_input_range(o, "x", 0, 1);
    hg_convert_options_add_input_range(o, "b", 0, 100);
    hg_convert_options_add_input_range(o, "s", -5, 5);
    hg_convert_options_add_input_range(o, "rois", 0, 16);
    hg_convert_options_add_input_range(o, "bi", 0, 0);
    g_autoptr(GError) error = NULL;
    g_autoptr(HgConvertResult) r = hg_convert(m, o, NULL, &error);
    if (!r)
        print_error("%s\n", error->message);
    assert_non_null(r);
    const HgNode *nms = hg_graph_lookup(m->graph, "sel")->producer, *ra = hg_graph_lookup(m->graph, "y")->producer;
    assert_true(hg_node_is(nms, "NonMaxSuppression") && hg_node_is(ra, "RoiAlign"));
    for (guint k = 0; k < 2; k++) {
        assert_int_equal(hg_value_elem_type(nms->inputs[k]), HG_DTYPE_FLOAT);
        assert_true(hg_node_is(nms->inputs[k]->producer, "Cast"));
    }
    for (guint k = 3; k < 5; k++)
        assert_int_equal(hg_value_elem_type(nms->inputs[k]), HG_DTYPE_FLOAT);
    assert_int_equal(hg_value_elem_type(hg_graph_lookup(m->graph, "b2")), HG_DTYPE_FLOAT16);
    assert_int_equal(hg_value_elem_type(ra->inputs[0]), HG_DTYPE_FLOAT16);
    assert_int_equal(hg_value_elem_type(ra->inputs[1]), HG_DTYPE_FLOAT16);
    assert_int_equal(hg_value_elem_type(hg_graph_lookup(m->graph, "y")), HG_DTYPE_FLOAT16);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_without_generation_fails),
        cmocka_unit_test(test_needs_and_order),
        cmocka_unit_test(test_plan_from_text),
        cmocka_unit_test(test_convert_options),
        cmocka_unit_test(test_detection_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
