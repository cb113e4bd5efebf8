/* Element-type helpers for the text dump and parser: float8 codecs, canonical NaNs, the C locale.
 * The contracts are in elem.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* newlocale */
#endif

#include "elem.h"

#include <math.h>

/* ---------------------------------------------------------------- float8 */

const HgF8Format *
hg_f8_format(int dtype)
{
    static const HgF8Format e4m3fn = {4, 3, 7, FALSE, FALSE}, e4m3fnuz = {4, 3, 8, TRUE, FALSE},
                            e5m2 = {5, 2, 15, FALSE, TRUE}, e5m2fnuz = {5, 2, 16, TRUE, FALSE};
    switch (dtype) {
    case HG_DTYPE_FLOAT8E4M3FN:
        return &e4m3fn;
    case HG_DTYPE_FLOAT8E4M3FNUZ:
        return &e4m3fnuz;
    case HG_DTYPE_FLOAT8E5M2:
        return &e5m2;
    case HG_DTYPE_FLOAT8E5M2FNUZ:
        return &e5m2fnuz;
    default:
        return NULL;
    }
}

/* 2^k for k in float's normal range, exactly (and without libm). */
static float
pow2f(int k)
{
    guint32 b = (guint32)(127 + k) << 23;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

float
hg_f8_to_float(guint8 b, const HgF8Format *fmt)
{
    if (fmt->fnuz && b == 0x80)
        return NAN;
    guint emask = (1u << fmt->exp_bits) - 1, mmask = (1u << fmt->man_bits) - 1;
    guint e = (b >> fmt->man_bits) & emask, m = b & mmask;
    gboolean neg = (b & 0x80) != 0;
    if (!fmt->ieee && !fmt->fnuz && (b & 0x7f) == 0x7f)
        return neg ? -NAN : NAN;
    if (fmt->ieee && e == emask)
        return m ? (neg ? -NAN : NAN) : (neg ? -INFINITY : INFINITY);
    float v = e == 0 ? (float)m * pow2f(1 - fmt->bias - fmt->man_bits)
                     : (float)((1u << fmt->man_bits) + m) * pow2f((int)e - fmt->bias - fmt->man_bits);
    return neg ? -v : v;
}

guint8
hg_float_to_f8(float f, const HgF8Format *fmt)
{
    if (isnan(f))
        return fmt->fnuz ? 0x80 : (guint8)((signbit(f) ? 0x80 : 0) | (fmt->ieee ? 0x7e : 0x7f));
    if (fmt->ieee && isinf(f))
        return signbit(f) ? 0xfc : 0x7c;
    /* Beyond the largest finite code, saturate (ONNX's Cast with saturate=1, the default); the
     * search below would otherwise compare infinite or huge distances. */
    float mx = hg_f8_max(fmt);
    f = f > mx ? mx : f < -mx ? -mx : f;
    /* A search over the 256 codes: slow, but the text dump and parser are the only callers and this
     * is plainly right for every format. */
    int best = -1;
    float best_d = INFINITY;
    for (int c = 0; c < 256; c++) {
        float v = hg_f8_to_float((guint8)c, fmt);
        if (isnan(v) || isinf(v) || (signbit(v) != signbit(f) && !(v == 0 && fmt->fnuz)))
            continue;
        float dist = fabsf(v - f);
        if (dist < best_d || (dist == best_d && best >= 0 && (c & 1) == 0 && (best & 1))) {
            best_d = dist;
            best = c;
        }
    }
    return (guint8)(best < 0 ? 0 : best);
}

float
hg_f8_max(const HgF8Format *fmt)
{
    float best = 0;
    for (int c = 0; c < 0x80; c++) {
        float v = hg_f8_to_float((guint8)c, fmt);
        if (isfinite(v))
            best = MAX(best, v);
    }
    return best;
}

/* ---------------------------------------------------------------- NaNs */

guint64
hg_canonical_nan(int dtype, gboolean negative)
{
    switch (dtype) {
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_COMPLEX128:
        return 0x7ff8000000000000ull | (negative ? 0x8000000000000000ull : 0);
    case HG_DTYPE_FLOAT16:
        return 0x7e00u | (negative ? 0x8000u : 0);
    case HG_DTYPE_BFLOAT16:
        return 0x7fc0u | (negative ? 0x8000u : 0);
    case HG_DTYPE_FLOAT8E4M3FN:
        return 0x7fu | (negative ? 0x80u : 0);
    case HG_DTYPE_FLOAT8E5M2:
        return 0x7eu | (negative ? 0x80u : 0);
    case HG_DTYPE_FLOAT8E4M3FNUZ:
    case HG_DTYPE_FLOAT8E5M2FNUZ:
        return 0x80u;
    default:
        return 0x7fc00000u | (negative ? 0x80000000u : 0);
    }
}

gboolean
hg_bits_are_nan(guint64 bits, int dtype)
{
    switch (dtype) {
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_COMPLEX128:
        return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits & 0xfffffffffffffull);
    case HG_DTYPE_FLOAT16:
        return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu);
    case HG_DTYPE_BFLOAT16:
        return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu);
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_COMPLEX64:
        return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu);
    default:
        return isnan(hg_f8_to_float((guint8)bits, hg_f8_format(dtype)));
    }
}

/* ---------------------------------------------------------------- locale */

locale_t
hg_c_locale(void)
{
    static gsize once;
    static locale_t loc;
    if (g_once_init_enter(&once)) {
        loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        g_once_init_leave(&once, 1);
    }
    return loc;
}
