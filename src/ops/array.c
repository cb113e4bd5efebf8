/* Runtime tensors, FP16/BF16 conversions, and the load/store steps kernels compute through. */
#include "ops/array.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- half and bfloat16 */

static float half_table[65536];

static float
half_to_float_slow(guint16 h)
{
    guint32 sign = (guint32)(h & 0x8000) << 16;
    guint32 e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) {
        /* zero or subnormal: m * 2^-24 is exact in FP32 */
        float f = (float)m * 5.9604644775390625e-8f;
        memcpy(&x, &f, 4);
        x |= sign;
    } else if (e == 31) {
        x = sign | 0x7f800000u | (m << 13);
    } else {
        x = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void
half_table_init(void)
{
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        for (guint i = 0; i < 65536; i++)
            half_table[i] = half_to_float_slow((guint16)i);
        g_once_init_leave(&once, 1);
    }
}

float
hg_half_to_float(guint16 h)
{
    half_table_init();
    return half_table[h];
}

guint16
hg_float_to_half(float f)
{
    guint32 x;
    memcpy(&x, &f, 4);
    guint32 sign = (x >> 16) & 0x8000;
    guint32 ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, or NaN kept quiet with some payload */
        return (guint16)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000u) /* >= 65520: rounds past 65504 */
        return (guint16)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal or zero */
        if (ax < 0x33000000u) /* below 2^-25: rounds to zero */
            return (guint16)sign;
        guint32 e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        guint32 shift = 126 - e, h = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1)))
            h++;
        return (guint16)(sign | h);
    }
    guint32 h = ((ax >> 23) - 112) << 10 | ((ax & 0x7fffff) >> 13);
    guint32 rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++;
    return (guint16)(sign | h);
}

/* ---------------------------------------------------------------- bulk FP16 conversions
 *
 * Four lanes at a time with GCC's vector extension (clang has it too), which becomes SSE even where gcc
 * leaves ordinary loops scalar, and without the data-dependent branches of the scalar functions above.
 * The method is Maratyszcza's (the FP16 library): scaling by 2^112 then 2^-110 sends overflow to inf
 * and lets one FP32 addition do the rounding; the reverse rescales the exponent and handles
 * subnormals by an FP32 subtraction. */
typedef float v4f __attribute__((vector_size(16)));
typedef gint32 v4i __attribute__((vector_size(16)));
typedef guint32 v4u __attribute__((vector_size(16)));
typedef guint16 v4h __attribute__((vector_size(8)));

/* mask ? a : b, lane by lane (mask lanes are 0 or -1, as vector comparisons give) */
static inline v4u
v4u_sel(v4i mask, v4u a, v4u b)
{
    return (v4u)((mask & (v4i)a) | (~mask & (v4i)b));
}

/* hg_float_to_half on four lanes: bit-identical for all 2^32 inputs, NaN payloads included. */
static inline v4h
v4_to_half(v4f f)
{
    const v4u w = (v4u)f, shl1 = w + w, sign = w & 0x80000000u;
    v4f base = ((v4f)(w & 0x7fffffffu) * 0x1.0p+112f) * 0x1.0p-110f;
    v4u bias = shl1 & 0xFF000000u;
    bias = v4u_sel((v4i)(bias < 0x71000000u), (v4u){0x71000000u, 0x71000000u, 0x71000000u, 0x71000000u},
                   bias);
    base = (v4f)((bias >> 1) + 0x07800000u) + base;
    const v4u b = (v4u)base;
    const v4u nonsign = ((b >> 13) & 0x7C00u) + (b & 0xFFFu);
    const v4u nan = 0x7E00u | ((w >> 13) & 0x3FFu);
    const v4u h = (sign >> 16) | v4u_sel((v4i)(shl1 > 0xFF000000u), nan, nonsign);
    return __builtin_convertvector(h, v4h);
}

/* hg_half_to_float on four lanes: bit-identical for all 2^16 inputs. Inf and NaN take the rescaled
 * bits as they are, without the FP32 multiply that would quiet a signalling NaN. */
static inline v4f
v4_from_half(v4h h)
{
    const v4u w = __builtin_convertvector(h, v4u) << 16;
    const v4u sign = w & 0x80000000u, two_w = w + w;
    const v4u rescaled = (two_w >> 4) + (0xE0u << 23);
    const v4f normalized = (v4f)rescaled * 0x1.0p-112f;
    const v4f denormalized = (v4f)((two_w >> 17) | (126u << 23)) - 0.5f;
    const v4u finite = v4u_sel((v4i)(two_w < (1u << 27)), (v4u)denormalized, (v4u)normalized);
    return (v4f)(sign | v4u_sel((v4i)(two_w >= 0xF8000000u), rescaled, finite));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The CPU's own conversion (F16C's vcvtps2ph, eight lanes, round to nearest even): it gives the bits
 * hg_float_to_half gives for every input, NaN payloads included (a signalling NaN comes out quiet with
 * its top ten payload bits, as there); tests/test_array.c compares the two. Returns how many of the
 * n values it converted (a multiple of 8). */
__attribute__((target("avx,f16c"))) static gsize
f32_to_f16_f16c(const guint8 *s, guint8 *d, gsize n)
{
    gsize j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 f;
        memcpy(&f, s + 4 * j, sizeof f);
        __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
        memcpy(d + 2 * j, &h, sizeof h);
    }
    return j;
}

static gboolean
have_f16c(void)
{
    static int have = -1;
    int h = g_atomic_int_get(&have);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c") &&
            !g_getenv("HALFGUARD_NO_F16C");
        g_atomic_int_set(&have, h);
    }
    return h;
}
#endif

/* The loops read and write through memcpy, so they take bytes at any alignment: tensors viewed in a
 * mapped file often sit at odd offsets (protobuf lays raw_data out unaligned). */
void
hg_f32_bytes_to_f16(const void *src, void *dst, gsize n)
{
    const guint8 *s = src;
    guint8 *d = dst;
    gsize j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_f16c())
        j = f32_to_f16_f16c(s, d, n);
#endif
    for (; j + 4 <= n; j += 4) {
        v4f f;
        memcpy(&f, s + 4 * j, sizeof f);
        v4h h = v4_to_half(f);
        memcpy(d + 2 * j, &h, sizeof h);
    }
    if (j < n) {
        float pad[4] = {0};
        memcpy(pad, s + 4 * j, sizeof(float) * (n - j));
        v4f f;
        memcpy(&f, pad, sizeof f);
        v4h h = v4_to_half(f);
        memcpy(d + 2 * j, &h, sizeof(guint16) * (n - j));
    }
}

void
hg_f16_bytes_to_f32(const void *src, void *dst, gsize n)
{
    const guint8 *s = src;
    guint8 *d = dst;
    gsize j = 0;
    for (; j + 4 <= n; j += 4) {
        v4h h;
        memcpy(&h, s + 2 * j, sizeof h);
        v4f f = v4_from_half(h);
        memcpy(d + 4 * j, &f, sizeof f);
    }
    for (; j < n; j++) {
        guint16 h;
        memcpy(&h, s + 2 * j, sizeof h);
        float f = hg_half_to_float(h);
        memcpy(d + 4 * j, &f, sizeof f);
    }
}

void
hg_float_to_half_n(const float *src, guint16 *dst, gsize n)
{
    hg_f32_bytes_to_f16(src, dst, n);
}

void
hg_half_to_float_n(const guint16 *src, float *dst, gsize n)
{
    hg_f16_bytes_to_f32(src, dst, n);
}

float
hg_bf16_to_float(guint16 h)
{
    guint32 x = (guint32)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

guint16
hg_float_to_bf16(float f)
{
    guint32 x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (guint16)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (guint16)(x >> 16);
}

float
hg_round_half(float f)
{
    return hg_half_to_float(hg_float_to_half(f));
}

/* ---------------------------------------------------------------- arrays */

gsize
hg_dtype_size(int dtype)
{
    guint bits = hg_dtype_bits(dtype);
    return bits >= 8 ? bits / 8 : 0;
}

HgCompute
hg_dtype_compute(int dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16:
        return HG_COMPUTE_F32;
    case HG_DTYPE_DOUBLE:
        return HG_COMPUTE_F64;
    case HG_DTYPE_BOOL:
    case HG_DTYPE_INT8:
    case HG_DTYPE_UINT8:
    case HG_DTYPE_INT16:
    case HG_DTYPE_UINT16:
    case HG_DTYPE_INT32:
    case HG_DTYPE_UINT32:
    case HG_DTYPE_INT64:
    case HG_DTYPE_UINT64:
        return HG_COMPUTE_I64;
    default:
        return HG_COMPUTE_NONE;
    }
}

/* The biggest array we allocate: past it a model's shapes are almost surely wrong. */
#define MAX_ARRAY_BYTES ((gint64)1 << 40)

/* The most bytes one array may take on this thread (0: no limit), as hg_array_set_alloc_limit sets it,
 * and the size of the last array it refused since then. */
static _Thread_local guint64 alloc_limit, alloc_refused;

guint64
hg_array_set_alloc_limit(guint64 bytes)
{
    guint64 old = alloc_limit;
    alloc_limit = bytes;
    alloc_refused = 0;
    return old;
}

guint64
hg_array_alloc_refused(void)
{
    return alloc_refused;
}

static HgArray *
array_alloc(int dtype, guint rank, const gint64 *dims, gboolean zero, GError **error)
{
    if (rank > HG_MAX_RANK) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "rank %u is above the supported %d", rank,
                    HG_MAX_RANK);
        return NULL;
    }
    gsize esize = hg_dtype_size(dtype);
    if (!esize && dtype != HG_DTYPE_STRING) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "element type %s is not supported",
                    hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "undefined");
        return NULL;
    }
    gint64 numel = hg_numel(rank, dims);
    if (numel < 0 || (esize && numel > MAX_ARRAY_BYTES / (gint64)esize)) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "a tensor of %s dims is too large or negative",
                    hg_dtype_name(dtype));
        return NULL;
    }
    if (alloc_limit && esize && (guint64)numel * esize > alloc_limit) {
        alloc_refused = (guint64)numel * esize;
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "a %" G_GINT64_FORMAT "-element tensor (%" G_GUINT64_FORMAT " bytes) would pass the %" G_GUINT64_FORMAT
                    " bytes the run's memory cap leaves (--max-memory)", numel, (guint64)numel * esize, alloc_limit);
        return NULL;
    }
    HgArray *a = g_new0(HgArray, 1);
    a->refcount = 1;
    a->dtype = dtype;
    a->rank = rank;
    if (rank)
        memcpy(a->dims, dims, sizeof(gint64) * rank);
    a->numel = numel;
    a->owns_data = TRUE;
    if (dtype == HG_DTYPE_STRING) {
        a->strings = g_ptr_array_new_full((guint)numel, (GDestroyNotify)g_bytes_unref);
        for (gint64 i = 0; i < numel; i++)
            g_ptr_array_add(a->strings, g_bytes_new(NULL, 0));
        return a;
    }
    a->data = zero ? g_try_malloc0((gsize)numel * esize + 1) : g_try_malloc((gsize)numel * esize + 1);
    if (!a->data) {
        g_free(a);
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "out of memory for a %" G_GINT64_FORMAT
                    "-element tensor", numel);
        return NULL;
    }
    return a;
}

HgArray *
hg_array_new(int dtype, guint rank, const gint64 *dims, GError **error)
{
    return array_alloc(dtype, rank, dims, TRUE, error);
}

HgArray *
hg_array_new_uninit(int dtype, guint rank, const gint64 *dims, GError **error)
{
    return array_alloc(dtype, rank, dims, FALSE, error);
}

HgArray *
hg_array_new_like(int dtype, const HgArray *shape_of, GError **error)
{
    return hg_array_new(dtype, shape_of->rank, shape_of->dims, error);
}

HgArray *
hg_array_new_scalar_f32(int dtype, float v)
{
    HgArray *a = hg_array_new(dtype, 0, NULL, NULL);
    if (a)
        hg_array_store_f32(a, &v);
    return a;
}

HgArray *
hg_array_ref(HgArray *a)
{
    g_return_val_if_fail(a != NULL, NULL);
    g_atomic_int_inc(&a->refcount);
    return a;
}

void
hg_array_unref(HgArray *a)
{
    if (!a || !g_atomic_int_dec_and_test(&a->refcount))
        return;
    if (a->owns_data)
        g_free(a->data);
    hg_blob_unref(a->blob);
    hg_array_unref(a->base);
    if (a->strings)
        g_ptr_array_unref(a->strings);
    g_free(a);
}

HgArray *
hg_array_copy(const HgArray *a)
{
    HgArray *c = hg_array_new(a->dtype, a->rank, a->dims, NULL);
    if (!c)
        return NULL;
    if (a->strings) {
        for (guint i = 0; i < a->strings->len; i++) {
            g_bytes_unref(c->strings->pdata[i]);
            c->strings->pdata[i] = g_bytes_ref(a->strings->pdata[i]);
        }
    } else if (a->numel) {
        memcpy(c->data, a->data, (gsize)a->numel * hg_dtype_size(a->dtype));
    }
    return c;
}

HgArray *
hg_array_from_tensor(const HgTensor *t, GError **error)
{
    g_return_val_if_fail(t != NULL, NULL);
    HgArray *a;
    if (t->dtype == HG_DTYPE_STRING) {
        a = hg_array_new(HG_DTYPE_STRING, t->rank, t->dims, error);
        if (!a)
            return NULL;
        for (guint i = 0; t->strings && i < t->strings->len && i < a->strings->len; i++) {
            g_bytes_unref(a->strings->pdata[i]);
            a->strings->pdata[i] = g_bytes_ref(t->strings->pdata[i]);
        }
        return a;
    }
    gsize esize = hg_dtype_size(t->dtype);
    gint64 numel = hg_tensor_numel(t);
    if (!esize || numel < 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "tensor '%s': element type %s is not supported",
                    t->name ? t->name : "", hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?");
        return NULL;
    }
    if ((guint64)numel * esize != t->nbytes) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "tensor '%s' holds %" G_GSIZE_FORMAT
                    " bytes, its shape needs %" G_GINT64_FORMAT, t->name ? t->name : "", t->nbytes,
                    numel * (gint64)esize);
        return NULL;
    }
    if (t->blob && t->data && ((guintptr)t->data % esize) == 0 && t->rank <= HG_MAX_RANK) {
        a = g_new0(HgArray, 1);
        a->refcount = 1;
        a->dtype = t->dtype;
        a->rank = t->rank;
        memcpy(a->dims, t->dims, sizeof(gint64) * t->rank);
        a->numel = numel;
        a->data = (void *)t->data;
        a->blob = hg_blob_ref(t->blob);
        return a;
    }
    a = hg_array_new(t->dtype, t->rank, t->dims, error);
    if (a && t->nbytes)
        memcpy(a->data, t->data, t->nbytes);
    return a;
}

HgArray *
hg_array_view_tensor(const HgTensor *t, GError **error)
{
    g_return_val_if_fail(t != NULL, NULL);
    gsize esize = hg_dtype_size(t->dtype);
    gint64 numel = hg_tensor_numel(t);
    if (t->dtype == HG_DTYPE_STRING || !t->blob || !t->data || !esize || numel < 0 ||
        (guint64)numel * esize != t->nbytes || t->rank > HG_MAX_RANK)
        return hg_array_from_tensor(t, error);
    HgArray *a = g_new0(HgArray, 1);
    a->refcount = 1;
    a->dtype = t->dtype;
    a->rank = t->rank;
    memcpy(a->dims, t->dims, sizeof(gint64) * t->rank);
    a->numel = numel;
    a->data = (void *)t->data;
    a->blob = hg_blob_ref(t->blob);
    return a;
}

void
hg_array_release(const HgArray *a)
{
    if (a && a->blob && a->data && !a->owns_data)
        hg_blob_release(a->blob, a->data, (gsize)a->numel * hg_dtype_size(a->dtype));
}

HgTensor *
hg_array_to_tensor(const HgArray *a, const char *name)
{
    HgTensor *t = hg_tensor_try_new(name, a->dtype, a->rank, a->dims);
    if (!t)
        return NULL;
    if (a->strings) {
        for (guint i = 0; i < a->strings->len && i < t->strings->len; i++) {
            g_bytes_unref(t->strings->pdata[i]);
            t->strings->pdata[i] = g_bytes_ref(a->strings->pdata[i]);
        }
    } else if (t->nbytes) {
        memcpy(hg_tensor_data_mut(t), a->data, t->nbytes);
    }
    return t;
}

HgArray *
hg_array_reshape_view(HgArray *a, guint rank, const gint64 *dims, GError **error)
{
    gint64 n = hg_numel(rank, dims);
    if (rank > HG_MAX_RANK || n != a->numel) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "cannot view %" G_GINT64_FORMAT
                    " elements with %" G_GINT64_FORMAT, a->numel, n);
        return NULL;
    }
    HgArray *v = g_new0(HgArray, 1);
    v->refcount = 1;
    v->dtype = a->dtype;
    v->rank = rank;
    if (rank)
        memcpy(v->dims, dims, sizeof(gint64) * rank);
    v->numel = n;
    v->data = a->data;
    v->base = hg_array_ref(a);
    if (a->strings)
        v->strings = g_ptr_array_ref(a->strings);
    return v;
}

/* ---------------------------------------------------------------- load and store */

#define LOAD_LOOP(T, dst, a)                                                                       \
    do {                                                                                           \
        const T *s_ = (const T *)(a)->data;                                                        \
        for (gint64 i_ = 0; i_ < (a)->numel; i_++)                                                 \
            dst[i_] = s_[i_];                                                                      \
    } while (0)

#define LOAD_ANY(dst, a)                                                                           \
    do {                                                                                           \
        switch ((a)->dtype) {                                                                      \
        case HG_DTYPE_FLOAT: LOAD_LOOP(float, dst, a); break;                                      \
        case HG_DTYPE_DOUBLE: LOAD_LOOP(double, dst, a); break;                                    \
        case HG_DTYPE_INT8: LOAD_LOOP(gint8, dst, a); break;                                       \
        case HG_DTYPE_UINT8: LOAD_LOOP(guint8, dst, a); break;                                     \
        case HG_DTYPE_BOOL: LOAD_LOOP(guint8, dst, a); break;                                      \
        case HG_DTYPE_INT16: LOAD_LOOP(gint16, dst, a); break;                                     \
        case HG_DTYPE_UINT16: LOAD_LOOP(guint16, dst, a); break;                                   \
        case HG_DTYPE_INT32: LOAD_LOOP(gint32, dst, a); break;                                     \
        case HG_DTYPE_UINT32: LOAD_LOOP(guint32, dst, a); break;                                   \
        case HG_DTYPE_INT64: LOAD_LOOP(gint64, dst, a); break;                                     \
        case HG_DTYPE_UINT64: LOAD_LOOP(guint64, dst, a); break;                                   \
        case HG_DTYPE_FLOAT16: {                                                                   \
            half_table_init();                                                                     \
            const guint16 *s_ = (const guint16 *)(a)->data;                                        \
            for (gint64 i_ = 0; i_ < (a)->numel; i_++)                                             \
                dst[i_] = half_table[s_[i_]];                                                      \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_BFLOAT16: {                                                                  \
            const guint16 *s_ = (const guint16 *)(a)->data;                                        \
            for (gint64 i_ = 0; i_ < (a)->numel; i_++)                                             \
                dst[i_] = hg_bf16_to_float(s_[i_]);                                                \
            break;                                                                                 \
        }                                                                                          \
        default:                                                                                   \
            memset(dst, 0, sizeof(*dst) * (gsize)(a)->numel);                                      \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

const HgArray *
hg_array_aligned(const HgArray *a, HgArray **tmp)
{
    gsize esize = hg_dtype_size(a->dtype);
    *tmp = NULL;
    if (a->strings || !esize || (guintptr)a->data % esize == 0)
        return a;
    *tmp = hg_array_new_uninit(a->dtype, a->rank, a->dims, NULL);
    memcpy((*tmp)->data, a->data, (gsize)a->numel * esize);
    return *tmp;
}

float *
hg_array_load_f32(const HgArray *a, gboolean *owned)
{
    g_autoptr(HgArray) tmp = NULL;
    a = hg_array_aligned(a, &tmp);
    if (a->dtype == HG_DTYPE_FLOAT && !tmp) {
        *owned = FALSE;
        return a->data;
    }
    float *d = g_new(float, a->numel + 1);
    if (a->dtype == HG_DTYPE_FLOAT16)
        hg_half_to_float_n(a->data, d, (gsize)a->numel);
    else
        LOAD_ANY(d, a);
    *owned = TRUE;
    return d;
}

double *
hg_array_load_f64(const HgArray *a, gboolean *owned)
{
    g_autoptr(HgArray) tmp = NULL;
    a = hg_array_aligned(a, &tmp);
    if (a->dtype == HG_DTYPE_DOUBLE && !tmp) {
        *owned = FALSE;
        return a->data;
    }
    double *d = g_new(double, a->numel + 1);
    LOAD_ANY(d, a);
    *owned = TRUE;
    return d;
}

/* Float to integer conversion without undefined behaviour: NaN becomes 0 and values beyond the range
 * saturate (C leaves both undefined). */
static gint64
f64_to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9.2233720368547758e18)
        return G_MAXINT64;
    if (v <= -9.2233720368547758e18)
        return G_MININT64;
    return (gint64)v;
}

gint64 *
hg_array_load_i64(const HgArray *a, gboolean *owned)
{
    g_autoptr(HgArray) tmp = NULL;
    a = hg_array_aligned(a, &tmp);
    if (a->dtype == HG_DTYPE_INT64 && !tmp) {
        *owned = FALSE;
        return a->data;
    }
    gint64 *d = g_new(gint64, a->numel + 1);
    switch (a->dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16:
        for (gint64 i = 0; i < a->numel; i++)
            d[i] = f64_to_i64(hg_array_get_f64(a, i));
        break;
    default:
        LOAD_ANY(d, a);
        break;
    }
    *owned = TRUE;
    return d;
}

/* Store from a compute buffer of type ST into out's dtype. Integer outputs take a float source by
 * saturating conversion; bool is value != 0. */
#define STORE_INT_LOOP(T, src, out, conv)                                                          \
    do {                                                                                           \
        T *d_ = (T *)(out)->data;                                                                  \
        for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                               \
            d_[i_] = (T)conv(src[i_]);                                                             \
    } while (0)

#define ID(x) (x)

#define STORE_ANY(src, out, conv)                                                                  \
    do {                                                                                           \
        switch ((out)->dtype) {                                                                    \
        case HG_DTYPE_FLOAT: {                                                                     \
            float *d_ = (float *)(out)->data;                                                      \
            for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                           \
                d_[i_] = (float)src[i_];                                                           \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_DOUBLE: {                                                                    \
            double *d_ = (double *)(out)->data;                                                    \
            for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                           \
                d_[i_] = (double)src[i_];                                                          \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_FLOAT16: {                                                                   \
            guint16 *d_ = (guint16 *)(out)->data;                                                  \
            for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                           \
                d_[i_] = hg_float_to_half((float)src[i_]);                                         \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_BFLOAT16: {                                                                  \
            guint16 *d_ = (guint16 *)(out)->data;                                                  \
            for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                           \
                d_[i_] = hg_float_to_bf16((float)src[i_]);                                         \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_BOOL: {                                                                      \
            guint8 *d_ = (guint8 *)(out)->data;                                                    \
            for (gint64 i_ = 0; i_ < (out)->numel; i_++)                                           \
                d_[i_] = src[i_] != 0;                                                             \
            break;                                                                                 \
        }                                                                                          \
        case HG_DTYPE_INT8: STORE_INT_LOOP(gint8, src, out, conv); break;                          \
        case HG_DTYPE_UINT8: STORE_INT_LOOP(guint8, src, out, conv); break;                        \
        case HG_DTYPE_INT16: STORE_INT_LOOP(gint16, src, out, conv); break;                        \
        case HG_DTYPE_UINT16: STORE_INT_LOOP(guint16, src, out, conv); break;                      \
        case HG_DTYPE_INT32: STORE_INT_LOOP(gint32, src, out, conv); break;                        \
        case HG_DTYPE_UINT32: STORE_INT_LOOP(guint32, src, out, conv); break;                      \
        case HG_DTYPE_INT64: STORE_INT_LOOP(gint64, src, out, conv); break;                        \
        case HG_DTYPE_UINT64: STORE_INT_LOOP(guint64, src, out, conv); break;                      \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

void
hg_array_store_f32(HgArray *out, const float *src)
{
    if (out->dtype == HG_DTYPE_FLOAT) {
        if ((const void *)src != out->data)
            memmove(out->data, src, sizeof(float) * (gsize)out->numel);
        return;
    }
    if (out->dtype == HG_DTYPE_FLOAT16) {
        hg_float_to_half_n(src, out->data, (gsize)out->numel);
        return;
    }
    STORE_ANY(src, out, f64_to_i64);
}

void
hg_array_store_f64(HgArray *out, const double *src)
{
    if (out->dtype == HG_DTYPE_DOUBLE) {
        if ((const void *)src != out->data)
            memmove(out->data, src, sizeof(double) * (gsize)out->numel);
        return;
    }
    STORE_ANY(src, out, f64_to_i64);
}

void
hg_array_store_i64(HgArray *out, const gint64 *src)
{
    if (out->dtype == HG_DTYPE_INT64) {
        if ((const void *)src != out->data)
            memmove(out->data, src, sizeof(gint64) * (gsize)out->numel);
        return;
    }
    /* Narrowing integer stores wrap, as a cast does. */
    STORE_ANY(src, out, ID);
}

void
hg_array_load_span_f32(const HgArray *a, gint64 off, gint64 n, float *dst)
{
    g_return_if_fail(hg_dtype_compute(a->dtype) == HG_COMPUTE_F32 && off >= 0 && n >= 0);
    const guint16 *s = (const guint16 *)a->data + off;
    if (a->dtype == HG_DTYPE_FLOAT) {
        memcpy(dst, (const float *)a->data + off, sizeof(float) * (gsize)n);
    } else if (a->dtype == HG_DTYPE_FLOAT16) {
        hg_half_to_float_n(s, dst, (gsize)n);
    } else {
        for (gint64 j = 0; j < n; j++)
            dst[j] = hg_bf16_to_float(s[j]);
    }
}

void
hg_array_store_span_f32(HgArray *a, gint64 off, gint64 n, const float *src)
{
    g_return_if_fail(hg_dtype_compute(a->dtype) == HG_COMPUTE_F32 && off >= 0 && n >= 0);
    guint16 *d = (guint16 *)a->data + off;
    if (a->dtype == HG_DTYPE_FLOAT) {
        float *f = (float *)a->data + off;
        if (f != src)
            memmove(f, src, sizeof(float) * (gsize)n);
    } else if (a->dtype == HG_DTYPE_FLOAT16) {
        hg_float_to_half_n(src, d, (gsize)n);
    } else {
        for (gint64 j = 0; j < n; j++)
            d[j] = hg_float_to_bf16(src[j]);
    }
}

/* One element, read with memcpy: arrays viewing a file's bytes may be unaligned (hg_array_view_tensor). */
#define GET(T, p, i)                                                                               \
    ({                                                                                             \
        T v_;                                                                                      \
        memcpy(&v_, (const char *)(p) + (gsize)(i) * sizeof(T), sizeof(T));                       \
        v_;                                                                                        \
    })

double
hg_array_get_f64(const HgArray *a, gint64 i)
{
    const void *p = a->data;
    switch (a->dtype) {
    case HG_DTYPE_FLOAT: return GET(float, p, i);
    case HG_DTYPE_DOUBLE: return GET(double, p, i);
    case HG_DTYPE_FLOAT16: return hg_half_to_float(GET(guint16, p, i));
    case HG_DTYPE_BFLOAT16: return hg_bf16_to_float(GET(guint16, p, i));
    case HG_DTYPE_INT8: return ((const gint8 *)p)[i];
    case HG_DTYPE_UINT8:
    case HG_DTYPE_BOOL: return ((const guint8 *)p)[i];
    case HG_DTYPE_INT16: return GET(gint16, p, i);
    case HG_DTYPE_UINT16: return GET(guint16, p, i);
    case HG_DTYPE_INT32: return GET(gint32, p, i);
    case HG_DTYPE_UINT32: return GET(guint32, p, i);
    case HG_DTYPE_INT64: return (double)GET(gint64, p, i);
    case HG_DTYPE_UINT64: return (double)GET(guint64, p, i);
    default: return 0;
    }
}

gint64
hg_array_get_i64(const HgArray *a, gint64 i)
{
    const void *p = a->data;
    switch (a->dtype) {
    case HG_DTYPE_INT8: return ((const gint8 *)p)[i];
    case HG_DTYPE_UINT8:
    case HG_DTYPE_BOOL: return ((const guint8 *)p)[i];
    case HG_DTYPE_INT16: return GET(gint16, p, i);
    case HG_DTYPE_UINT16: return GET(guint16, p, i);
    case HG_DTYPE_INT32: return GET(gint32, p, i);
    case HG_DTYPE_UINT32: return GET(guint32, p, i);
    case HG_DTYPE_INT64: return GET(gint64, p, i);
    case HG_DTYPE_UINT64: return (gint64)GET(guint64, p, i);
    default: return f64_to_i64(hg_array_get_f64(a, i));
    }
}

/* ---------------------------------------------------------------- shapes */

void
hg_strides(guint rank, const gint64 *dims, gint64 *strides)
{
    gint64 s = 1;
    for (guint i = rank; i-- > 0;) {
        strides[i] = s;
        s *= dims[i];
    }
}

gboolean
hg_broadcast_shape(guint ra, const gint64 *da, guint rb, const gint64 *db, guint *rout, gint64 *dout,
                   GError **error)
{
    guint r = MAX(ra, rb);
    for (guint i = 0; i < r; i++) {
        gint64 a = i < r - ra ? 1 : da[i - (r - ra)];
        gint64 b = i < r - rb ? 1 : db[i - (r - rb)];
        if (a != b && a != 1 && b != 1) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                        "shapes do not broadcast: dim %u is %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                        i, a, b);
            return FALSE;
        }
        dout[i] = a == 1 ? b : a;
    }
    *rout = r;
    return TRUE;
}

void
hg_broadcast_strides(guint rank, const gint64 *dims, guint rout, const gint64 *dout, gint64 *strides)
{
    gint64 own[HG_MAX_RANK];
    hg_strides(rank, dims, own);
    for (guint i = 0; i < rout; i++) {
        if (i < rout - rank) {
            strides[i] = 0;
        } else {
            guint k = i - (rout - rank);
            strides[i] = dims[k] == 1 && dout[i] != 1 ? 0 : own[k];
        }
    }
}
