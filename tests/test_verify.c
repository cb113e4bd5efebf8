/* verify's library side: hg_tensor_convert between the float types, and hg_verify on models parsed
 * from ONNX text (the CLI and its numbers are tested end to end by test_verify.py). */
#include "testutil.h"

#include "ops/array.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static HgTensor *
f32_tensor(const char *name, const float *v, gint64 n)
{
    HgTensor *t = hg_tensor_new(name, HG_DTYPE_FLOAT, 1, &n);
    memcpy(hg_tensor_data_mut(t), v, sizeof(float) * (gsize)n);
    return t;
}

static void
test_convert_float_types(void **state)
{
    (void)state;
    const float v[] = {1.0f, -2049.0f, 70000.0f, 1e-12f, NAN, 0.1f};
    g_autoptr(HgTensor) t = f32_tensor("x", v, G_N_ELEMENTS(v));
    g_autoptr(GError) error = NULL;

    g_autoptr(HgTensor) h = hg_tensor_convert(t, HG_DTYPE_FLOAT16, &error);
    assert_non_null(h);
    assert_int_equal(h->dtype, HG_DTYPE_FLOAT16);
    assert_string_equal(h->name, "x");
    assert_int_equal(h->rank, 1);
    assert_int_equal(h->dims[0], 6);
    assert_int_equal(h->nbytes, 12);
    const guint16 *hb = h->data;
    for (guint i = 0; i < G_N_ELEMENTS(v); i++)
        assert_int_equal(hb[i], hg_float_to_half(v[i])); /* one rounding, the codec's own */
    assert_true(isinf(hg_half_to_float(hb[2])));            /* overflow is inf */
    assert_true(hg_half_to_float(hb[1]) == -2048.0f);       /* ties to even */

    g_autoptr(HgTensor) back = hg_tensor_convert(h, HG_DTYPE_FLOAT, &error);
    assert_non_null(back);
    const float *fb = back->data;
    assert_true(fb[0] == 1.0f && fb[1] == -2048.0f && isinf(fb[2]) && fb[3] == 0.0f && isnan(fb[4]));
    assert_true(fb[5] == hg_round_half(0.1f));

    g_autoptr(HgTensor) d = hg_tensor_convert(h, HG_DTYPE_DOUBLE, &error);
    assert_non_null(d);
    assert_true(((const double *)d->data)[5] == (double)hg_round_half(0.1f));
    g_autoptr(HgTensor) dh = hg_tensor_convert(d, HG_DTYPE_FLOAT16, &error);
    assert_non_null(dh);
    assert_memory_equal(dh->data, h->data, 12);

    g_autoptr(HgTensor) b = hg_tensor_convert(t, HG_DTYPE_BFLOAT16, &error);
    assert_non_null(b);
    assert_int_equal(((const guint16 *)b->data)[2], hg_float_to_bf16(70000.0f)); /* bf16 holds it */
    assert_true(hg_bf16_to_float(((const guint16 *)b->data)[0]) == 1.0f);

    g_autoptr(HgTensor) same = hg_tensor_convert(t, HG_DTYPE_FLOAT, &error);
    assert_non_null(same);
    assert_memory_equal(same->data, t->data, sizeof v);
    assert_null(error);
}

static void
test_convert_refuses_integers(void **state)
{
    (void)state;
    gint64 n = 2;
    g_autoptr(HgTensor) t = hg_tensor_new("i", HG_DTYPE_INT64, 1, &n);
    g_autoptr(GError) error = NULL;
    assert_null(hg_tensor_convert(t, HG_DTYPE_FLOAT, &error));
    hg_assert_error_at(error, HG_ERROR_UNSUPPORTED, "cannot convert int64 to float", __FILE__, __LINE__);
    g_autoptr(HgTensor) copy = hg_tensor_convert(t, HG_DTYPE_INT64, NULL);
    assert_non_null(copy);
}

#define HEADER "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"

/* y = (x * 300) * 300 in FP32, and in FP16 with FP16 graph I/O. */
static const char orig_text[] = HEADER
    "g (float[4] x) => (float[4] y)\n<\n  float c = {300.0}\n>\n"
    "{\n  a = Mul(x, c)  #@ name: \"m1\"\n  y = Mul(a, c)  #@ name: \"m2\"\n}\n";
static const char conv_text[] = HEADER
    "g (float16[4] x) => (float16[4] y)\n<\n  float16 c = {300.0}\n>\n"
    "{\n  a = Mul(x, c)  #@ name: \"m1\"\n  y = Mul(a, c)  #@ name: \"m2\"\n}\n";

static void
test_verify_api(void **state)
{
    (void)state;
    g_autoptr(HgModel) orig = parse_ok(orig_text);
    g_autoptr(HgModel) conv = parse_ok(conv_text);
    g_autofree char *dir = g_dir_make_tmp("hg-verify-XXXXXX", NULL);
    assert_non_null(dir);
    const float x[] = {0.01f, -0.5f, 1.0f, 2.0f}; /* the last two overflow in FP16: 90000, 180000 */
    g_autoptr(HgTensor) t = f32_tensor("x", x, 4);
    g_autofree char *npy = g_build_filename(dir, "x.npy", NULL);
    assert_true(hg_tensor_save_npy(t, npy, NULL));

    const char *dirs[] = {dir, NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(HgVerifyReport) r = hg_verify(orig, conv, dirs, NULL, &error);
    assert_null(error);
    assert_non_null(r);
    assert_int_equal(r->samples, 1);
    assert_true(r->l2_tol == HG_VERIFY_DEFAULT_L2_TOL && !r->elementwise);
    assert_int_equal(r->n_outputs, 1);
    const HgVerifyOutput *o = &r->outputs[0];
    assert_string_equal(o->name, "y");
    assert_int_equal(o->dtype_orig, HG_DTYPE_FLOAT);
    assert_int_equal(o->dtype_conv, HG_DTYPE_FLOAT16);
    assert_int_equal(o->count, 4);
    assert_int_equal(o->compared, 2);
    assert_int_equal(o->nonfinite_conv, 2);
    assert_int_equal(o->nonfinite_orig, 0);
    assert_int_equal(o->new_nonfinite, 2);
    assert_false(o->pass);
    assert_false(r->pass);
    /* The finite pair, by hand: FP16 rounds 0.01 and -0.5 in, then each product out. */
    double ref[2], got[2], d2 = 0, o2 = 0, mx = 0;
    for (int i = 0; i < 2; i++) {
        ref[i] = (double)(x[i] * 300.0f * 300.0f);
        got[i] = hg_round_half(hg_round_half(hg_round_half(x[i]) * 300.0f) * 300.0f);
        d2 += (got[i] - ref[i]) * (got[i] - ref[i]);
        o2 += ref[i] * ref[i];
        mx = MAX(mx, fabs(got[i] - ref[i]));
    }
    assert_true(fabs(o->rel_l2 - sqrt(d2) / sqrt(o2)) <= 1e-12 * o->rel_l2);
    assert_true(o->max_abs == mx);
    assert_string_equal(r->first_nonfinite.value, "y");
    assert_string_equal(r->first_nonfinite.node, "m2");
    assert_string_equal(r->first_nonfinite.op, "Mul");
    assert_string_equal(r->first_nonfinite.data_dir, dir);
    assert_int_equal(r->first_nonfinite.nonfinite, 2);
    assert_int_equal(r->first_nonfinite.count, 4);

    g_autofree char *text = hg_verify_format_text(r);
    assert_non_null(strstr(text, "first non-finite: 'y' from node 'm2' (Mul), 2 of 4 values"));
    assert_non_null(strstr(text, "verdict: FAIL"));
    g_autofree char *json = hg_verify_format_json(r);
    assert_non_null(strstr(json, "\"format\" : \"halfguard-verify\""));

    /* The same model against itself: exact, and nothing non-finite. */
    HgVerifyOptions vo = {0.0, 1};
    g_autoptr(HgVerifyReport) same = hg_verify(orig, orig, dirs, &vo, &error);
    assert_non_null(same);
    assert_true(same->pass && same->outputs[0].rel_l2 == 0 && same->outputs[0].max_abs == 0);
    assert_null(same->first_nonfinite.value);

    g_unlink(npy);
    g_rmdir(dir);
}

static void
test_verify_output_mismatch(void **state)
{
    (void)state;
    g_autoptr(HgModel) orig = parse_ok(orig_text);
    g_autofree char *other = g_strdup(conv_text);
    /* rename the output y -> z */
    char *p = strstr(other, "=> (float16[4] y)");
    p[strlen("=> (float16[4] ")] = 'z';
    p = strstr(other, "  y = Mul");
    p[2] = 'z';
    g_autoptr(HgModel) conv = parse_ok(other);
    const char *dirs[] = {"/nonexistent", NULL};
    g_autoptr(GError) error = NULL;
    assert_null(hg_verify(orig, conv, dirs, NULL, &error));
    hg_assert_error_at(error, HG_ERROR_USAGE,
                       "output 'y' of the original model is missing from the converted one; output 'z' "
                       "of the converted model is not an output of the original", __FILE__, __LINE__);
}

HG_TEST_MAIN("verify",
             cmocka_unit_test(test_convert_float_types),
             cmocka_unit_test(test_convert_refuses_integers),
             cmocka_unit_test(test_verify_api),
             cmocka_unit_test(test_verify_output_mismatch))
