/* The op type-signature table (src/ops/types.h): lookups by opset, formals, allowed types, and the
 * hand-written versions after python3-onnx 1.12 (opsets 18 to 23). */
#include "testutil.h"
#include "ops/types.h"

#include <string.h>

static const HgSigParam *
param_of(const HgOpSchema *s, const HgSigFormal *f)
{
    return &s->params[f->param];
}

/* The version in effect is the latest at or below the opset; none before the first. */
static void
test_lookup_by_opset(void **state)
{
    (void)state;
    assert_null(hg_op_schema("", "Gelu", 19));
    const HgOpSchema *g = hg_op_schema("", "Gelu", 20);
    assert_non_null(g);
    assert_int_equal(g->since, 20);
    assert_ptr_equal(hg_op_schema("ai.onnx", "Gelu", 23), g);
    assert_ptr_equal(hg_op_schema(NULL, "Gelu", 25), g);
    assert_int_equal(hg_op_schema("", "Add", 13)->since, 13);
    assert_int_equal(hg_op_schema("", "Add", 16)->since, 14);
    assert_int_equal(hg_op_schema("", "Add", 6)->since, 6);
    assert_null(hg_op_schema("", "LayerNormalization", 16));
    assert_int_equal(hg_op_schema("", "LayerNormalization", 23)->since, 17);
    assert_null(hg_op_schema("", "NoSuchOp", 17));
    assert_null(hg_op_schema("com.microsoft", "Attention", 1));
    assert_int_equal(hg_op_schema("ai.onnx.ml", "LabelEncoder", 3)->since, 2);
    assert_int_equal(hg_op_schema("ai.onnx.ml", "LabelEncoder", 4)->since, 4);
}

/* A deprecated op is not in effect; inference still finds a version near it. */
static void
test_deprecated_and_nearest(void **state)
{
    (void)state;
    assert_int_equal(hg_op_schema("", "Upsample", 9)->since, 9);
    assert_null(hg_op_schema("", "Upsample", 10));
    assert_int_equal(hg_op_schema_nearest("", "Upsample", 10)->since, 9);
    assert_int_equal(hg_op_schema_nearest("", "LayerNormalization", 13)->since, 17);
    assert_int_equal(hg_op_schema_nearest("", "Add", 15)->since, 14);
    assert_null(hg_op_schema_nearest("", "NoSuchOp", 17));
    /* GroupNormalization-18 as opsets 18 to 20 defined it (ONNX 1.16 deprecated that version). */
    assert_int_equal(hg_op_schema("", "GroupNormalization", 20)->since, 18);
    assert_int_equal(hg_op_schema("", "GroupNormalization", 21)->since, 21);
}

/* Versions that opsets 18 to 23 changed: inputs that arrived, types that were added. */
static void
test_opsets_18_to_23(void **state)
{
    (void)state;
    const HgOpSchema *r17 = hg_op_schema("", "ReduceMean", 17), *r18 = hg_op_schema("", "ReduceMean", 18);
    assert_int_equal(r17->n_inputs, 1);
    assert_int_equal(r18->n_inputs, 2);
    assert_string_equal(r18->inputs[1].name, "axes");
    assert_int_equal(r18->inputs[1].option, HG_SIG_OPTIONAL);
    assert_true(param_of(r18, &r18->inputs[1])->literal);
    assert_true(hg_type_set_has_tensor(&param_of(r18, &r18->inputs[1])->allowed, HG_DTYPE_INT64));
    assert_int_equal(hg_op_schema("", "Pad", 18)->n_inputs, 4);
    assert_int_equal(hg_op_schema("", "Pad", 17)->n_inputs, 3);

    /* Cos gained bfloat16 at 22; FP16 was always there. */
    const HgOpSchema *c7 = hg_op_schema("", "Cos", 21), *c22 = hg_op_schema("", "Cos", 22);
    assert_false(hg_type_set_has_tensor(&c7->params[0].allowed, HG_DTYPE_BFLOAT16));
    assert_true(hg_type_set_has_tensor(&c22->params[0].allowed, HG_DTYPE_BFLOAT16));
    assert_true(hg_type_set_has_tensor(&c7->params[0].allowed, HG_DTYPE_FLOAT16));

    /* Cast took float8 at 19 and int4 at 21. */
    assert_false(hg_type_set_has_tensor(&hg_op_schema("", "Cast", 18)->params[0].allowed, HG_DTYPE_FLOAT8E4M3FN));
    assert_true(hg_type_set_has_tensor(&hg_op_schema("", "Cast", 19)->params[0].allowed, HG_DTYPE_FLOAT8E4M3FN));
    assert_false(hg_type_set_has_tensor(&hg_op_schema("", "Cast", 20)->params[0].allowed, HG_DTYPE_INT4));
    assert_true(hg_type_set_has_tensor(&hg_op_schema("", "Cast", 21)->params[0].allowed, HG_DTYPE_INT4));

    /* The new ops of 23, with their separate parameters. */
    const HgOpSchema *rms = hg_op_schema("", "RMSNormalization", 23);
    assert_non_null(rms);
    assert_int_not_equal(rms->inputs[0].param, rms->inputs[1].param);
    assert_int_equal(rms->outputs[0].param, rms->inputs[1].param);
    const HgOpSchema *att = hg_op_schema("", "Attention", 23);
    assert_non_null(att);
    assert_string_equal(att->inputs[0].name, "Q");
    assert_int_equal(att->inputs[0].param, att->inputs[1].param);
    assert_int_not_equal(att->inputs[0].param, att->inputs[2].param);
    assert_non_null(hg_op_schema("", "RotaryEmbedding", 23));
    assert_null(hg_op_schema("", "RotaryEmbedding", 22));
}

/* GridSample: 1.12's version 16 bound X and grid together; the correction frees the grid. */
static void
test_gridsample(void **state)
{
    (void)state;
    for (gint64 opset = 16; opset <= 22; opset += 2) {
        const HgOpSchema *s = hg_op_schema("", "GridSample", opset);
        assert_non_null(s);
        assert_string_equal(s->inputs[1].name, "grid");
        assert_int_not_equal(s->inputs[0].param, s->inputs[1].param);
        assert_int_equal(s->outputs[0].param, s->inputs[0].param);
    }
    assert_int_equal(hg_op_schema("", "GridSample", 21)->since, 20);
    assert_int_equal(hg_op_schema("", "GridSample", 22)->since, 22);
}

/* Variadic formals cover every input past them; heterogeneous ones are marked. */
static void
test_formals(void **state)
{
    (void)state;
    const HgOpSchema *concat = hg_op_schema("", "Concat", 13);
    assert_ptr_equal(hg_op_schema_input(concat, 0), hg_op_schema_input(concat, 7));
    assert_int_equal(hg_op_schema_input(concat, 3)->option, HG_SIG_VARIADIC);
    assert_false(hg_op_schema_input(concat, 3)->heterogeneous);
    assert_null(hg_op_schema_output(concat, 1));
    const HgOpSchema *loop = hg_op_schema("", "Loop", 16);
    assert_true(hg_op_schema_input(loop, 5)->heterogeneous);
    assert_true(loop->params[hg_op_schema_output(loop, 0)->param].allowed.seq != 0);
    assert_true(loop->params[hg_op_schema_output(loop, 0)->param].allowed.other & HG_SIG_OPTIONAL_TENSOR);
    const HgOpSchema *reshape = hg_op_schema("", "Reshape", 14);
    assert_null(hg_op_schema_input(reshape, 2));
}

/* An output's element type from the signature: the input of its parameter, or its literal. */
static void
test_output_dtype(void **state)
{
    (void)state;
    const HgOpSchema *gelu = hg_op_schema("", "Gelu", 20);
    int f[] = {HG_DTYPE_FLOAT};
    assert_int_equal(hg_op_schema_output_dtype(gelu, 0, 1, f), HG_DTYPE_FLOAT);
    int none[] = {HG_DTYPE_UNDEFINED};
    assert_int_equal(hg_op_schema_output_dtype(gelu, 0, 1, none), HG_DTYPE_UNDEFINED);
    const HgOpSchema *shape = hg_op_schema("", "Shape", 15);
    assert_int_equal(hg_op_schema_output_dtype(shape, 0, 1, f), HG_DTYPE_INT64);
    const HgOpSchema *rms = hg_op_schema("", "RMSNormalization", 23);
    int xs[] = {HG_DTYPE_FLOAT, HG_DTYPE_FLOAT16};
    assert_int_equal(hg_op_schema_output_dtype(rms, 0, 2, xs), HG_DTYPE_FLOAT16);
    const HgOpSchema *cast = hg_op_schema("", "Cast", 13);
    assert_int_equal(hg_op_schema_output_dtype(cast, 0, 1, f), HG_DTYPE_UNDEFINED);
    const HgOpSchema *ln = hg_op_schema("", "LayerNormalization", 17);
    int ln_in[] = {HG_DTYPE_FLOAT16, HG_DTYPE_FLOAT16, HG_DTYPE_FLOAT16};
    assert_int_equal(hg_op_schema_output_dtype(ln, 0, 3, ln_in), HG_DTYPE_FLOAT16);
    assert_int_equal(hg_op_schema_output_dtype(ln, 1, 3, ln_in), HG_DTYPE_UNDEFINED); /* U: stash_type */
}

HG_TEST_MAIN("types",
             cmocka_unit_test(test_lookup_by_opset),
             cmocka_unit_test(test_deprecated_and_nearest),
             cmocka_unit_test(test_opsets_18_to_23),
             cmocka_unit_test(test_gridsample),
             cmocka_unit_test(test_formals),
             cmocka_unit_test(test_output_dtype))
