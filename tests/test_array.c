/* Runtime tensors: FP16/BF16 conversions, load/store through compute types, broadcasting. */
#include "testutil.h"

#include "ops/array.h"

#include <math.h>
#include <string.h>

static void
test_half_round_trip_every_value(void **state)
{
    (void)state;
    /* Every binary16 value survives half -> float -> half (NaNs stay NaN). */
    for (guint i = 0; i < 65536; i++) {
        float f = hg_half_to_float((guint16)i);
        guint16 back = hg_float_to_half(f);
        if ((i & 0x7c00) == 0x7c00 && (i & 0x3ff))
            assert_true(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        else
            assert_int_equal(back, i);
    }
}

static guint32
f32_bits(float f)
{
    guint32 x;
    memcpy(&x, &f, 4);
    return x;
}

static void
test_bulk_to_half_matches_scalar(void **state)
{
    (void)state;
    /* hg_f32_bytes_to_f16 (the CPU's F16C conversion where it has one, else four-lane vector code)
     * against the scalar hg_float_to_half: every sign, exponent and top 7 mantissa bits, each with
     * low bits on both sides of the rounding points (halfway, ties, subnormal shifts) and NaN payloads;
     * at odd offsets, since weights lie unaligned in a mapped file. (An exhaustive run over all 2^32
     * inputs agreed too; it takes too long for the suite.) */
    static const guint32 low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001,
                                  0x3000, 0x7fff, 0x8000, 0xa5a5, 0xc000, 0xe001, 0xf000, 0xffff};
    const gsize n = 65536 * G_N_ELEMENTS(low);
    g_autofree guint8 *in = g_malloc(4 * n + 3), *out = g_malloc(2 * n + 1);
    for (guint32 hi = 0; hi < 65536; hi++)
        for (guint k = 0; k < G_N_ELEMENTS(low); k++) {
            guint32 x = hi << 16 | low[k];
            memcpy(in + 3 + 4 * (hi * G_N_ELEMENTS(low) + k), &x, 4);
        }
    hg_f32_bytes_to_f16(in + 3, out + 1, n);
    for (gsize i = 0; i < n; i++) {
        float f;
        guint16 h;
        memcpy(&f, in + 3 + 4 * i, 4);
        memcpy(&h, out + 1 + 2 * i, 2);
        if (h != hg_float_to_half(f))
            fail_msg("0x%08x: bulk 0x%04x, scalar 0x%04x", (guint)f32_bits(f), h, hg_float_to_half(f));
    }
}

static void
test_half_rounding(void **state)
{
    (void)state;
    assert_true(hg_half_to_float(hg_float_to_half(65504.0f)) == 65504.0f);
    assert_true(isinf(hg_half_to_float(hg_float_to_half(65520.0f))));  /* the midpoint ties up */
    assert_true(hg_half_to_float(hg_float_to_half(65519.0f)) == 65504.0f);
    assert_true(isinf(hg_round_half(1e5f)) && hg_round_half(-1e5f) < 0);
    /* 2049 is halfway between 2048 and 2050: ties to even gives 2048; 2051 goes to 2052. */
    assert_true(hg_round_half(2049.0f) == 2048.0f);
    assert_true(hg_round_half(2051.0f) == 2052.0f);
    /* Subnormals: the smallest is 2^-24; half of it ties to zero; 1e-12 flushes. */
    assert_true(hg_round_half(5.9604645e-8f) == 5.9604645e-8f);
    assert_true(hg_round_half(2.9802322e-8f) == 0.0f);
    assert_true(hg_round_half(1e-12f) == 0.0f);
    assert_true(signbit(hg_round_half(-1e-12f)));
    assert_true(hg_round_half(6.1035156e-5f) == 6.1035156e-5f); /* smallest normal */
    assert_true(hg_round_half(0.1f) == 0.0999755859375f);
}

static void
test_bfloat16(void **state)
{
    (void)state;
    assert_true(hg_bf16_to_float(hg_float_to_bf16(1.0f)) == 1.0f);
    assert_true(hg_bf16_to_float(hg_float_to_bf16(3.0e38f)) > 2.9e38f); /* bf16 keeps FP32's range */
    assert_true(hg_bf16_to_float(hg_float_to_bf16(1.00390625f)) == 1.0f); /* tie to even */
    assert_true(isnan(hg_bf16_to_float(hg_float_to_bf16(NAN))));
}

static void
test_store_rounds_once(void **state)
{
    (void)state;
    const gint64 dims[] = {3};
    g_autoptr(HgArray) h = hg_array_new(HG_DTYPE_FLOAT16, 1, dims, NULL);
    const float src[] = {1e5f, 0.1f, -2049.0f};
    hg_array_store_f32(h, src);
    gboolean owned;
    float *back = hg_array_load_f32(h, &owned);
    assert_true(owned);
    assert_true(isinf(back[0]));
    assert_true(back[1] == 0.0999755859375f);
    assert_true(back[2] == -2048.0f);
    g_free(back);
    /* Integer stores: float sources saturate instead of invoking undefined behaviour. */
    g_autoptr(HgArray) i32 = hg_array_new(HG_DTYPE_INT32, 1, dims, NULL);
    const double d[] = {NAN, 1e300, -7.9};
    hg_array_store_f64(i32, d);
    assert_int_equal(((gint32 *)i32->data)[0], 0);
    assert_int_equal(((gint32 *)i32->data)[2], -7);
    g_autoptr(HgArray) b = hg_array_new(HG_DTYPE_BOOL, 1, dims, NULL);
    const gint64 iv[] = {0, 5, -1};
    hg_array_store_i64(b, iv);
    assert_memory_equal(b->data, ((guint8[]){0, 1, 1}), 3);
    assert_int_equal(hg_array_get_i64(b, 1), 1);
}

static void
test_new_refuses_bad_shapes(void **state)
{
    (void)state;
    GError *error = NULL;
    const gint64 huge[] = {G_MAXINT64 / 4, 8};
    assert_null(hg_array_new(HG_DTYPE_FLOAT, 2, huge, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "too large");
    g_clear_error(&error);
    const gint64 d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_null(hg_array_new(HG_DTYPE_FLOAT, 9, d9, &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "rank 9");
    g_clear_error(&error);
    assert_null(hg_array_new(HG_DTYPE_INT4, 1, d9, &error));
    assert_hg_error(error, HG_ERROR_UNSUPPORTED, "int4");
    g_error_free(error);
}

static void
test_tensor_views(void **state)
{
    (void)state;
    const gint64 dims[] = {2, 2};
    g_autoptr(HgTensor) t = hg_tensor_new("t", HG_DTYPE_FLOAT, 2, dims);
    float *d = hg_tensor_data_mut(t);
    d[3] = 4.5f;
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    assert_ptr_equal(a->data, t->data); /* a view, no copy */
    assert_int_equal(a->numel, 4);
    g_autoptr(HgTensor) back = hg_array_to_tensor(a, "back");
    assert_true(((const float *)back->data)[3] == 4.5f);
    assert_string_equal(back->name, "back");
    const gint64 flat[] = {4};
    g_autoptr(HgArray) v = hg_array_reshape_view(a, 1, flat, NULL);
    assert_ptr_equal(v->data, a->data);
    const gint64 wrong[] = {5};
    GError *error = NULL;
    assert_null(hg_array_reshape_view(a, 1, wrong, &error));
    g_error_free(error);
}

static void
test_broadcasting(void **state)
{
    (void)state;
    const gint64 a[] = {2, 1, 3}, b[] = {4, 1};
    gint64 out[HG_MAX_RANK];
    guint r;
    assert_true(hg_broadcast_shape(3, a, 2, b, &r, out, NULL));
    assert_int_equal(r, 3);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 4);
    assert_int_equal(out[2], 3);
    gint64 st[HG_MAX_RANK];
    hg_broadcast_strides(2, b, 3, out, st);
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 1);
    assert_int_equal(st[2], 0);
    const gint64 c[] = {3, 2};
    GError *error = NULL;
    assert_false(hg_broadcast_shape(3, a, 2, c, &r, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "do not broadcast");
    g_error_free(error);
}

HG_TEST_MAIN("array",
             cmocka_unit_test(test_half_round_trip_every_value),
             cmocka_unit_test(test_half_rounding),
             cmocka_unit_test(test_bulk_to_half_matches_scalar),
             cmocka_unit_test(test_bfloat16),
             cmocka_unit_test(test_store_rounds_once),
             cmocka_unit_test(test_new_refuses_bad_shapes),
             cmocka_unit_test(test_tensor_views),
             cmocka_unit_test(test_broadcasting))
