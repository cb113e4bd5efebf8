/* Element-type helpers shared by the text dump and parser (internal, not installed): the float8
 * codecs, the canonical NaN of each float type, and the C locale numbers are read and written in.
 *
 * float16 and bfloat16 conversions are not here: they are ops/array.h's hg_float_to_half,
 * hg_half_to_float, hg_float_to_bf16 and hg_bf16_to_float.
 *
 * locale_t needs POSIX 2008: the build defines _GNU_SOURCE for every file.
 */
#ifndef HG_ELEM_H
#define HG_ELEM_H

#include "halfguard/ir.h"

#include <locale.h>
#include <string.h>

G_BEGIN_DECLS

/* A float8 format: 1 sign bit, exp_bits, man_bits; a value is (1.m or 0.m) * 2^(e - bias). */
typedef struct {
    int exp_bits, man_bits, bias;
    gboolean fnuz; /* no infinities, no negative zero, NaN is 0x80 */
    gboolean ieee; /* infinities and NaNs in the top exponent (E5M2) */
} HgF8Format;

/* The format of a float8 dtype (a static table entry, not to be freed), or NULL for any other dtype. */
const HgF8Format *hg_f8_format(int dtype);

/* The value of code b in fmt (not NULL), exactly: a NaN code gives a NaN of b's sign (fnuz: +NaN),
 * an E5M2 infinity code gives that infinity. */
float hg_f8_to_float(guint8 b, const HgF8Format *fmt);

/* The code of fmt (not NULL) whose value is nearest to f, ties to the even code; what rounds to
 * zero keeps f's sign except in fnuz formats. NaN gives the format's NaN of f's sign (fnuz: 0x80);
 * an infinity gives E5M2's infinity. Values past the range (and infinities of formats without one)
 * saturate to the largest finite code of their sign, as ONNX's Cast does with saturate=1. */
guint8 hg_float_to_f8(float f, const HgF8Format *fmt);

/* The largest finite value of fmt (not NULL): 448, 240, 57344 or 57344. */
float hg_f8_max(const HgF8Format *fmt);

/* The bits of the canonical quiet NaN of a float dtype (negative: with the sign bit; the fnuz
 * float8 types have only one NaN, 0x80), in the low end. Any other dtype answers as FLOAT. */
guint64 hg_canonical_nan(int dtype, gboolean negative);

/* Whether bits (in the low end) are a NaN of dtype: DOUBLE, COMPLEX128, FLOAT16, BFLOAT16, FLOAT,
 * COMPLEX64 (complex: of one part) or a float8 type. Other dtypes are a caller bug. */
gboolean hg_bits_are_nan(guint64 bits, int dtype);

/* The "C" locale, created once and never freed: numbers are read and written in it (strtof_l,
 * strtod_l) whatever locale the process has set. */
locale_t hg_c_locale(void);

/* The bits of f. */
static inline guint32
hg_float_bits(float f)
{
    guint32 b;
    memcpy(&b, &f, sizeof b);
    return b;
}

G_END_DECLS

#endif
