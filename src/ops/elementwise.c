/* The elementwise family: unary math and activations, broadcasting arithmetic and comparisons, logic,
 * the variadic Max/Min/Sum/Mean, Where, Cast/CastLike, Clip, Dropout and Identity.
 *
 * How a kernel is built. Each op is a "row" function over a contiguous run of elements, written once
 * per compute kind (kernel.h's HgKind: FP32, FP64, int64, uint64) by a macro, an op's rows in a table
 * indexed by kind. A driver walks the broadcast output row by
 * row; it hands FLOAT, DOUBLE and INT64 data to the row as it is, and converts other types (FP16, BF16,
 * narrow integers) a chunk at a time into the compute kind and back, the result rounded once per
 * element (FP16, BF16) or cast (narrow integers). The walk merges adjacent dims that are contiguous in
 * every input, so a same-shape op is a single row and a scalar operand is a stride-0 row; the row
 * functions have a separate loop for each of those cases, plain enough for gcc to vectorize.
 *
 * Float kernels use <tgmath.h>: exp(x) is expf for a float x and exp for a double, so one expression
 * serves both kinds. The family's interval rules are in elementwise_range.c.
 */
#include "ops/elementwise.h"
#include "ir_private.h"

#include <float.h>
#include <string.h>
#include <tgmath.h>

/* ================================================================ small helpers */

static gboolean
broadcast(HgEvalCtx *ctx, guint ra, const gint64 *da, guint rb, const gint64 *db, guint *rout,
          gint64 *dout)
{
    GError *e = NULL;
    if (hg_broadcast_shape(ra, da, rb, db, rout, dout, &e))
        return TRUE;
    hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s", e->message);
    g_error_free(e);
    return FALSE;
}

/* Before opset 7 a 1-D slope of x's channel count applied along axis 1 (x is N x C x ...). */
static gboolean
prelu_legacy_slope(gint64 opset, guint x_rank, const gint64 *x_dims, guint s_rank, const gint64 *s_dims)
{
    return opset < 7 && x_rank >= 2 && s_rank == 1 && s_dims[0] != 1 && s_dims[0] == x_dims[1] &&
           s_dims[0] != x_dims[x_rank - 1];
}

/* ================================================================ the broadcast walk */

/* The output of a broadcast split into rows: dims[rank-1] elements each, the outer dims indexing the
 * rows. Along a row input k advances by st[k][rank-1] (1, or 0 where it is broadcast). */
typedef struct {
    guint n;
    guint rank;
    gint64 dims[HG_MAX_RANK];
    gint64 st[3][HG_MAX_RANK];
} Walk;

static void
walk_init(Walk *w, guint n, const guint *ranks, const gint64 *const *dims, guint rout, const gint64 *dout)
{
    gint64 st[3][HG_MAX_RANK];
    for (guint k = 0; k < n; k++)
        hg_broadcast_strides(ranks[k], dims[k], rout, dout, st[k]);
    w->n = n;
    w->rank = 0;
    for (guint i = 0; i < rout; i++) {
        if (dout[i] == 1)
            continue; /* moves nothing */
        if (w->rank > 0) {
            guint j = w->rank - 1;
            gboolean merge = TRUE;
            for (guint k = 0; k < n; k++)
                merge = merge && w->st[k][j] == st[k][i] * dout[i];
            if (merge) {
                w->dims[j] *= dout[i];
                for (guint k = 0; k < n; k++)
                    w->st[k][j] = st[k][i];
                continue;
            }
        }
        w->dims[w->rank] = dout[i];
        for (guint k = 0; k < n; k++)
            w->st[k][w->rank] = st[k][i];
        w->rank++;
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->dims[0] = 1;
        for (guint k = 0; k < n; k++)
            w->st[k][0] = 0;
    }
}

/* Move the row index idx and the inputs' element offsets off to the next row. */
static void
walk_step(const Walk *w, gint64 *idx, gint64 *off)
{
    for (int d = (int)w->rank - 2; d >= 0; d--) {
        idx[d]++;
        for (guint k = 0; k < w->n; k++)
            off[k] += w->st[k][d];
        if (idx[d] < w->dims[d])
            return;
        for (guint k = 0; k < w->n; k++)
            off[k] -= w->st[k][d] * w->dims[d];
        idx[d] = 0;
    }
}

/* ================================================================ row kernels */

/* Attributes the unary rows read. */
typedef struct {
    double alpha, beta, gamma; /* activation attributes; Clip's bounds (alpha, beta) for float kinds */
    gint64 lo, hi;             /* Clip's bounds for integer kinds (the bits, for uint64) */
    gboolean neg, pos;         /* IsInf's detect_negative, detect_positive */
} Params;

typedef void (*UnRow)(void *o, const void *x, gint64 n, const Params *p);
typedef void (*BinRow)(void *o, const void *a, gint64 sa, const void *b, gint64 sb, gint64 n);

/* Unary row over a float kind: EXPR of x, alpha, beta, gamma. */
#define DEF_UNF(name, T, TO, EXPR)                                                                 \
    static void name(void *o_, const void *x_, gint64 n, const Params *p)                          \
    {                                                                                              \
        TO *restrict o = o_;                                                                       \
        const T *restrict xs = x_;                                                                 \
        const T alpha = (T)p->alpha, beta = (T)p->beta, gamma = (T)p->gamma;                       \
        (void)alpha, (void)beta, (void)gamma;                                                      \
        for (gint64 i = 0; i < n; i++) {                                                           \
            const T x G_GNUC_UNUSED = xs[i];                                                                     \
            o[i] = (TO)(EXPR);                                                                     \
        }                                                                                          \
    }

/* Unary row over an integer kind: EXPR of x, lo, hi. */
#define DEF_UNI(name, T, TO, EXPR)                                                                 \
    static void name(void *o_, const void *x_, gint64 n, const Params *p)                          \
    {                                                                                              \
        TO *restrict o = o_;                                                                       \
        const T *restrict xs = x_;                                                                 \
        const T lo = (T)p->lo, hi = (T)p->hi;                                                      \
        (void)lo, (void)hi;                                                                        \
        for (gint64 i = 0; i < n; i++) {                                                           \
            const T x G_GNUC_UNUSED = xs[i];                                                                     \
            o[i] = (TO)(EXPR);                                                                     \
        }                                                                                          \
    }

/* Float-only unary op: rows for FP32 and FP64. */
#define UNARY_F(op, EXPR)                                                                          \
    DEF_UNF(op##_f32, float, float, EXPR)                                                          \
    DEF_UNF(op##_f64, double, double, EXPR)                                                        \
    static const UnRow op##_rows[HG_KIND_COUNT] = {op##_f32, op##_f64, NULL, NULL};

/* Unary op over every numeric kind. */
#define UNARY_ALL(op, EF, EI, EU)                                                                  \
    DEF_UNF(op##_f32, float, float, EF)                                                            \
    DEF_UNF(op##_f64, double, double, EF)                                                          \
    DEF_UNI(op##_i64, gint64, gint64, EI)                                                          \
    DEF_UNI(op##_u64, guint64, guint64, EU)                                                        \
    static const UnRow op##_rows[HG_KIND_COUNT] = {op##_f32, op##_f64, op##_i64, op##_u64};

/* Unary predicate: bool output for every kind. */
#define UNARY_PRED(op, EF, EI)                                                                     \
    DEF_UNF(op##_f32, float, guint8, EF)                                                           \
    DEF_UNF(op##_f64, double, guint8, EF)                                                          \
    DEF_UNI(op##_i64, gint64, guint8, EI)                                                          \
    DEF_UNI(op##_u64, guint64, guint8, EI)                                                         \
    static const UnRow op##_rows[HG_KIND_COUNT] = {op##_f32, op##_f64, op##_i64, op##_u64};

/* Binary row: EXPR of x (from a) and y (from b). sa, sb are 1, or 0 for a broadcast operand; each
 * case has its own loop so that the common ones (same shape, one scalar) vectorize. */
#define DEF_BIN(name, T, TO, EXPR)                                                                 \
    static void name(void *o_, const void *a_, gint64 sa, const void *b_, gint64 sb, gint64 n)      \
    {                                                                                              \
        TO *restrict o = o_;                                                                       \
        const T *restrict a = a_, *restrict b = b_;                                                \
        if (sa && sb) {                                                                            \
            for (gint64 i = 0; i < n; i++) {                                                       \
                const T x G_GNUC_UNUSED = a[i], y G_GNUC_UNUSED = b[i];                                                        \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else if (sa) {                                                                           \
            const T y G_GNUC_UNUSED = b[0];                                                                      \
            for (gint64 i = 0; i < n; i++) {                                                       \
                const T x G_GNUC_UNUSED = a[i];                                                                  \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else if (sb) {                                                                           \
            const T x G_GNUC_UNUSED = a[0];                                                                      \
            for (gint64 i = 0; i < n; i++) {                                                       \
                const T y G_GNUC_UNUSED = b[i];                                                                  \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else {                                                                                   \
            const T x G_GNUC_UNUSED = a[0], y G_GNUC_UNUSED = b[0];                                                            \
            const TO r = (TO)(EXPR);                                                               \
            for (gint64 i = 0; i < n; i++)                                                         \
                o[i] = r;                                                                          \
        }                                                                                          \
    }

#define BINARY_ALL(op, EF, EI, EU)                                                                 \
    DEF_BIN(op##_f32, float, float, EF)                                                            \
    DEF_BIN(op##_f64, double, double, EF)                                                          \
    DEF_BIN(op##_i64, gint64, gint64, EI)                                                          \
    DEF_BIN(op##_u64, guint64, guint64, EU)                                                        \
    static const BinRow op##_rows[HG_KIND_COUNT] = {op##_f32, op##_f64, op##_i64, op##_u64};

/* Comparison: bool output, the same expression for every kind. */
#define BINARY_CMP(op, E)                                                                          \
    DEF_BIN(op##_f32, float, guint8, E)                                                            \
    DEF_BIN(op##_f64, double, guint8, E)                                                           \
    DEF_BIN(op##_i64, gint64, guint8, E)                                                           \
    DEF_BIN(op##_u64, guint64, guint8, E)                                                          \
    static const BinRow op##_rows[HG_KIND_COUNT] = {op##_f32, op##_f64, op##_i64, op##_u64};

/* int64 arithmetic that wraps (two's complement) instead of overflowing into undefined behaviour. */
#define WRAP(x, OP, y) ((gint64)((guint64)(x) OP (guint64)(y)))

/* softplus(x) = log(1 + e^x), written so that e^x never overflows. */
#define SOFTPLUS(x) (((x) > 0 ? (x) : 0) + log1p(exp(-fabs(x))))


UNARY_ALL(abs, fabs(x), x < 0 ? WRAP(0, -, x) : x, x)
UNARY_ALL(neg, -x, WRAP(0, -, x), 0 - x)
UNARY_ALL(sign, x > 0 ? 1 : x < 0 ? -1 : x, (x > 0) - (x < 0), x != 0)
UNARY_ALL(relu, x < 0 ? 0 : x, x < 0 ? 0 : x, x)
/* Clip: min(max(x, lo), hi), so that hi wins when lo > hi, as the spec says; NaN stays NaN. */
#define CLIP(x, lo, hi) ((x) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) : (x) > (hi) ? (hi) : (x))
UNARY_ALL(clip, CLIP(x, alpha, beta), CLIP(x, lo, hi), CLIP(x, lo, hi))
UNARY_F(ceil, ceil(x))
UNARY_F(floor, floor(x))
UNARY_F(round, nearbyint(x)) /* the default rounding mode: half to even */
UNARY_F(cos, cos(x))
UNARY_F(sin, sin(x))
UNARY_F(exp, exp(x))
UNARY_F(log, log(x))
UNARY_F(sqrt, sqrt(x))
UNARY_F(tanh, tanh(x))
UNARY_F(erf, erf(x))
UNARY_F(reciprocal, 1 / x)
UNARY_F(sigmoid, 1 / (1 + exp(-x)))
UNARY_F(softplus, SOFTPLUS(x))
UNARY_F(softsign, x / (1 + fabs(x)))
UNARY_F(mish, x * tanh(SOFTPLUS(x)))
/* Gelu, x * Phi(x) with alpha = -1/sqrt(2), beta = 1/2: 1 + erf(x / sqrt 2) is erfc(-x / sqrt 2),
 * which keeps its relative precision where 1 + erf would cancel (x < 0). The tanh form with
 * alpha = -2 sqrt(2/pi), gamma = 0.044715: 0.5 (1 + tanh(u)) is 1 / (1 + exp(-2u)), no cancellation
 * either. Both give NaN at x = -inf (-inf * 0), as the spec's formulas do. */
UNARY_F(gelu, beta * x * erfc(alpha * x))
UNARY_F(gelu_tanh, x / (1 + exp(alpha * (x + gamma * x * x * x))))
UNARY_F(elu, x < 0 ? alpha * expm1(x) : x)
UNARY_F(selu, x <= 0 ? gamma * alpha * expm1(x) : gamma * x)
UNARY_F(hardsigmoid, CLAMP01(alpha * x + beta))
UNARY_F(hardswish, x * CLAMP01(alpha * x + beta))
UNARY_F(leakyrelu, x < 0 ? alpha * x : x)
UNARY_F(thresholdedrelu, x > alpha ? x : 0)
/* Integer types hold no NaN or infinity. */
UNARY_PRED(isnan, isnan(x), 0)
UNARY_PRED(isinf, isinf(x) && (x > 0 ? p->pos : p->neg), 0)

BINARY_ALL(add, x + y, WRAP(x, +, y), x + y)
BINARY_ALL(sub, x - y, WRAP(x, -, y), x - y)
BINARY_ALL(mul, x * y, WRAP(x, *, y), x * y)
/* Integer division truncates; by zero it gives 0 instead of trapping. */
BINARY_ALL(div, x / y, y == 0 ? 0 : y == -1 ? WRAP(0, -, x) : x / y, y ? x / y : 0)
/* NaN wins, as numpy.maximum / numpy.minimum */
BINARY_ALL(max, x > y || isnan(x) ? x : y, x > y ? x : y, x > y ? x : y)
BINARY_ALL(min, x < y || isnan(x) ? x : y, x < y ? x : y, x < y ? x : y)
BINARY_ALL(prelu, x < 0 ? y * x : x, x < 0 ? WRAP(x, *, y) : x, x)
/* Mod with fmod=1: C's fmod / %, the sign of the dividend. */
BINARY_ALL(fmod, fmod(x, y), y == 0 || y == -1 ? 0 : x % y, y ? x % y : 0)

/* Mod with fmod=0: Python's %, the sign of the divisor. */
static inline float
pymod_f32(float x, float y)
{
    float r = fmodf(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

static inline double
pymod_f64(double x, double y)
{
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

static inline gint64
pymod_i64(gint64 x, gint64 y)
{
    if (y == 0 || y == -1)
        return 0;
    gint64 r = x % y;
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

DEF_BIN(pymod_f32_row, float, float, pymod_f32(x, y))
DEF_BIN(pymod_f64_row, double, double, pymod_f64(x, y))
DEF_BIN(pymod_i64_row, gint64, gint64, pymod_i64(x, y))
static const BinRow pymod_rows[HG_KIND_COUNT] = {pymod_f32_row, pymod_f64_row, pymod_i64_row, fmod_u64};

/* Integer power by squaring, wrapping like the integer type. A negative exponent gives 1/x^-y
 * truncated: 0 unless |x| is 1 (and 0 for x = 0 rather than a division by zero). */
static inline gint64
ipow(gint64 x, gint64 y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    guint64 r = 1, b = (guint64)x;
    for (guint64 e = (guint64)y; e; e >>= 1) {
        if (e & 1)
            r *= b;
        b *= b;
    }
    return (gint64)r;
}

DEF_BIN(pow_f32, float, float, pow(x, y))
DEF_BIN(pow_f64, double, double, pow(x, y))
DEF_BIN(pow_i64, gint64, gint64, ipow(x, y))

BINARY_CMP(equal, x == y)
BINARY_CMP(greater, x > y)
BINARY_CMP(greater_equal, x >= y)
BINARY_CMP(less, x < y)
BINARY_CMP(less_equal, x <= y)

/* Logic on bool storage (any nonzero byte is true). */
DEF_BIN(and_row, guint8, guint8, (x != 0) & (y != 0))
DEF_BIN(or_row, guint8, guint8, (x != 0) | (y != 0))
DEF_BIN(xor_row, guint8, guint8, (x != 0) ^ (y != 0))

/* ================================================================ drivers */

/* An operand as the drivers see it: the storage of an array (or of a compute buffer, whose dtype is
 * then hg_kind_dtype(k)) and its shape. Chunks of it are converted to the compute kind as the walk reaches
 * them, so an FP16 tensor never needs an FP32 copy of itself. */
typedef struct {
    int dtype;
    void *data;
    guint rank;
    const gint64 *dims;
} Operand;

/* Elements converted per step: 16-32 KiB of compute buffer, which stays in L1/L2. */
#define CHUNK 4096
/* Rows shorter than this convert whole operands up front: converting per row costs per row. */
#define MIN_CHUNKED_ROW 64

/* Where a chunk's results of kind k go: the chunk's own storage when it is stored in that kind, else
 * scratch of CHUNK elements that hg_kbuf_store converts. */
static HgKBuf
chunk_out(HgArray *vo, HgKind k, double *scratch)
{
    return (HgKBuf){hg_kind_stores(k, vo->dtype) ? vo->data : scratch, FALSE};
}

static Operand
operand_of(const HgArray *a)
{
    return (Operand){a->dtype, a->data, a->rank, a->dims};
}

/* A header over elements [off, off + n) of some storage, so that array.h's loaders and stores convert
 * one chunk. It owns nothing. */
static HgArray
view_of(int dtype, void *data, gint64 off, gint64 n)
{
    HgArray v;
    memset(&v, 0, sizeof v);
    v.refcount = 1;
    v.dtype = dtype;
    v.rank = 1;
    v.dims[0] = n;
    v.numel = n;
    v.data = (char *)data + (gsize)off * hg_dtype_size(dtype);
    return v;
}

/* Elements [off, off + n) of op in kind k; HG_KIND_COUNT takes them as stored (bool logic). */
static HgKBuf
op_load(const Operand *op, HgKind k, gint64 off, gint64 n)
{
    if (k == HG_KIND_COUNT)
        return (HgKBuf){(char *)op->data + (gsize)off * hg_dtype_size(op->dtype), FALSE};
    HgArray v = view_of(op->dtype, op->data, off, n);
    return hg_kbuf_load(&v, k);
}

/* When rows are short, convert op whole into kind k (kept in *full) and point op at the result. */
static void
op_convert_whole(Operand *op, HgKind k, HgKBuf *full)
{
    if (k == HG_KIND_COUNT || op->dtype == hg_kind_dtype(k))
        return;
    HgArray v = view_of(op->dtype, op->data, 0, hg_numel(op->rank, op->dims));
    *full = hg_kbuf_load(&v, k);
    op->dtype = hg_kind_dtype(k);
    op->data = full->p;
}

/* o (rout, dout) = row(a, b), a and b broadcast, computed in kind k. direct: the row writes o's
 * storage as it is (bool results, and HG_KIND_COUNT); else results of kind k are stored into o with one
 * rounding per element. */
static void
bin_apply(BinRow row, HgKind k, gboolean direct, Operand o, Operand a, Operand b, guint rout,
          const gint64 *dout)
{
    gint64 numel = hg_numel(rout, dout);
    if (numel <= 0)
        return;
    Walk w;
    const guint ranks[2] = {a.rank, b.rank};
    const gint64 *const dims[2] = {a.dims, b.dims};
    walk_init(&w, 2, ranks, dims, rout, dout);
    gint64 inner = w.dims[w.rank - 1], rows = numel / inner;
    gint64 sa = w.st[0][w.rank - 1], sb = w.st[1][w.rank - 1];
    HgKBuf fa = {NULL, FALSE}, fb = {NULL, FALSE}, fo = {NULL, FALSE};
    double scratch[CHUNK];
    Operand final = o;
    if (inner < MIN_CHUNKED_ROW) {
        op_convert_whole(&a, k, &fa);
        op_convert_whole(&b, k, &fb);
        if (!direct && o.dtype != hg_kind_dtype(k)) {
            fo = (HgKBuf){g_malloc((gsize)numel * hg_kind_size(k) + 8), TRUE};
            o.dtype = hg_kind_dtype(k);
            o.data = fo.p;
        }
    }
    gint64 idx[HG_MAX_RANK] = {0}, off[3] = {0, 0, 0};
    for (gint64 r = 0; r < rows; r++) {
        for (gint64 c = 0; c < inner; c += CHUNK) {
            gint64 len = MIN(CHUNK, inner - c);
            HgKBuf ba = op_load(&a, k, off[0] + (sa ? c : 0), sa ? len : 1);
            HgKBuf bb = op_load(&b, k, off[1] + (sb ? c : 0), sb ? len : 1);
            HgArray vo = view_of(o.dtype, o.data, r * inner + c, len);
            HgKBuf bo = direct ? (HgKBuf){vo.data, FALSE} : chunk_out(&vo, k, scratch);
            row(bo.p, ba.p, sa, bb.p, sb, len);
            if (!direct)
                hg_kbuf_store(&vo, &bo, k);
            hg_kbuf_clear(&ba);
            hg_kbuf_clear(&bb);
        }
        walk_step(&w, idx, off);
    }
    if (fo.p) {
        HgArray v = view_of(final.dtype, final.data, 0, numel);
        hg_kbuf_store(&v, &fo, k);
    }
    hg_kbuf_clear(&fa);
    hg_kbuf_clear(&fb);
}

/* outputs[0] (out_dtype) = row(inputs[0], inputs[1]) computed in kind k. A comparison row writes bool
 * directly. unidirectional: the result must have input 0's shape (PRelu's slope). */
static gboolean
binary_run(HgEvalCtx *ctx, BinRow row, HgKind k, int out_dtype, gboolean unidirectional)
{
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1];
    guint r;
    gint64 d[HG_MAX_RANK];
    if (!broadcast(ctx, a->rank, a->dims, b->rank, b->dims, &r, d))
        return FALSE;
    if (unidirectional && (r != a->rank || memcmp(d, a->dims, sizeof(gint64) * r) != 0)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "input 1 does not broadcast to the shape of input 0");
        return FALSE;
    }
    /* bin_apply writes every element */
    HgArray *out = hg_eval_new_output_uninit(ctx, out_dtype, r, d);
    if (!out)
        return FALSE;
    bin_apply(row, k, out_dtype == HG_DTYPE_BOOL, operand_of(out), operand_of(a), operand_of(b), r, d);
    ctx->outputs[0] = out;
    return TRUE;
}

/* A binary op computed in the kind of input 0; output of input 0's type, or bool for a comparison. */
static gboolean
binary_eval(HgEvalCtx *ctx, const BinRow rows[HG_KIND_COUNT], gboolean compare)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    int ta = ctx->inputs[0]->dtype, tb = ctx->inputs[1]->dtype;
    HgKind k = hg_kind_of(ta);
    if (k == HG_KIND_COUNT || !rows[k])
        return hg_eval_unsupported(ctx, ta);
    if (hg_kind_of(tb) == HG_KIND_COUNT)
        return hg_eval_unsupported(ctx, tb);
    return binary_run(ctx, rows[k], k, compare ? HG_DTYPE_BOOL : ta, FALSE);
}

static gboolean
logic_eval(HgEvalCtx *ctx, BinRow row)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (a->dtype != HG_DTYPE_BOOL || b->dtype != HG_DTYPE_BOOL)
        return hg_eval_unsupported(ctx, a->dtype != HG_DTYPE_BOOL ? a->dtype : b->dtype);
    guint r;
    gint64 d[HG_MAX_RANK];
    if (!broadcast(ctx, a->rank, a->dims, b->rank, b->dims, &r, d))
        return FALSE;
    HgArray *out = hg_eval_new_output(ctx, HG_DTYPE_BOOL, r, d);
    if (!out)
        return FALSE;
    bin_apply(row, HG_KIND_COUNT, TRUE, operand_of(out), operand_of(a), operand_of(b), r, d);
    ctx->outputs[0] = out;
    return TRUE;
}

/* outputs[0] = row(inputs[0]) computed in the input's kind, chunk by chunk; bool output for a
 * predicate. */
static gboolean
unary_eval(HgEvalCtx *ctx, const UnRow rows[HG_KIND_COUNT], const Params *p, gboolean predicate)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_COUNT || !rows[k])
        return hg_eval_unsupported(ctx, x->dtype);
    /* the chunks below cover every element */
    HgArray *out = hg_eval_new_output_uninit(ctx, predicate ? HG_DTYPE_BOOL : x->dtype, x->rank, x->dims);
    if (!out)
        return FALSE;
    Operand ox = operand_of(x);
    double scratch[CHUNK];
    for (gint64 c = 0; c < x->numel; c += CHUNK) {
        gint64 len = MIN(CHUNK, x->numel - c);
        HgKBuf bx = op_load(&ox, k, c, len);
        HgArray vo = view_of(out->dtype, out->data, c, len);
        HgKBuf bo = predicate ? (HgKBuf){vo.data, FALSE} : chunk_out(&vo, k, scratch);
        rows[k](bo.p, bx.p, len, p);
        if (!predicate)
            hg_kbuf_store(&vo, &bo, k);
        hg_kbuf_clear(&bx);
    }
    ctx->outputs[0] = out;
    return TRUE;
}

/* Max/Min/Sum/Mean: fold the inputs pairwise, broadcasting as it goes, in the kind of input 0. Mean
 * divides the sum once at the end, so FP16 rounds once. One input is passed on as it is. */
static gboolean
variadic_eval(HgEvalCtx *ctx, const BinRow rows[HG_KIND_COUNT], gboolean mean)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    guint n = ctx->n_inputs;
    if (!hg_eval_need(ctx, n))
        return FALSE;
    int dtype = ctx->inputs[0]->dtype;
    HgKind k = hg_kind_of(dtype);
    if (k == HG_KIND_COUNT || !rows[k] || (mean && k != HG_KIND_F32 && k != HG_KIND_F64))
        return hg_eval_unsupported(ctx, dtype);
    guint r = ctx->inputs[0]->rank;
    gint64 d[HG_MAX_RANK];
    memcpy(d, ctx->inputs[0]->dims, sizeof(gint64) * r);
    for (guint i = 1; i < n; i++) {
        if (hg_kind_of(ctx->inputs[i]->dtype) == HG_KIND_COUNT)
            return hg_eval_unsupported(ctx, ctx->inputs[i]->dtype);
        gint64 prev[HG_MAX_RANK];
        memcpy(prev, d, sizeof(gint64) * r);
        if (!broadcast(ctx, r, prev, ctx->inputs[i]->rank, ctx->inputs[i]->dims, &r, d))
            return FALSE;
    }
    if (n == 1) {
        ctx->outputs[0] = hg_array_ref(ctx->inputs[0]);
        return TRUE;
    }
    HgArray *out = hg_eval_new_output(ctx, dtype, r, d);
    if (!out)
        return FALSE;
    /* acc: input 0, then each partial result in a compute buffer (the last one in out, unless Mean
     * still has to divide) */
    gint64 ad[HG_MAX_RANK], nd[HG_MAX_RANK];
    Operand acc = operand_of(ctx->inputs[0]);
    HgKBuf accbuf = {NULL, FALSE};
    for (guint i = 1; i < n; i++) {
        const HgArray *in = ctx->inputs[i];
        guint nr;
        hg_broadcast_shape(acc.rank, acc.dims, in->rank, in->dims, &nr, nd, NULL); /* checked above */
        gboolean last = i == n - 1 && !mean;
        HgKBuf next = {NULL, FALSE};
        Operand dst = operand_of(out);
        if (!last) {
            next = (HgKBuf){g_malloc((gsize)hg_numel(nr, nd) * hg_kind_size(k) + 8), TRUE};
            dst = (Operand){hg_kind_dtype(k), next.p, nr, nd};
        }
        bin_apply(rows[k], k, FALSE, dst, acc, operand_of(in), nr, nd);
        hg_kbuf_clear(&accbuf);
        accbuf = next;
        memcpy(ad, nd, sizeof(gint64) * nr);
        acc = (Operand){dst.dtype, dst.data, nr, ad};
    }
    if (mean) {
        if (k == HG_KIND_F32) {
            float *s = accbuf.p, inv = (float)n;
            for (gint64 i = 0; i < out->numel; i++)
                s[i] /= inv;
        } else {
            double *s = accbuf.p;
            for (gint64 i = 0; i < out->numel; i++)
                s[i] /= (double)n;
        }
        hg_kbuf_store(out, &accbuf, k);
    }
    ctx->outputs[0] = out;
    return TRUE;
}

/* ================================================================ shape rules */

/* out takes dtype and in's rank and dims (symbolic names included); an absent in leaves them unknown. */
static void
copy_shape(HgValueShape *out, const HgValueShape *in, int dtype)
{
    if (!out)
        return;
    out->dtype = dtype;
    out->rank = in ? in->rank : -1;
    for (int i = 0; in && i < in->rank; i++)
        out->dims[i] = in->dims[i];
}

/* NumPy broadcasting of n input shapes into out (dtype left alone). A known dim other than 1 wins;
 * where every other dim is 1, an unknown dim is copied with its name, unknown dims named S and
 * min(S, c) give S (hg_sym_broadcast), and unknown dims of other or no names give an unknown dim.
 * An unknown rank gives an unknown rank. FALSE with HG_ERROR_INVALID when two known dims conflict. */
static gboolean
infer_broadcast(HgShapeCtx *ctx, const HgValueShape *const *ins, guint n, HgValueShape *out)
{
    int rank = 0;
    for (guint k = 0; k < n; k++) {
        if (!ins[k] || ins[k]->rank < 0) {
            out->rank = -1;
            return TRUE;
        }
        rank = MAX(rank, ins[k]->rank);
    }
    for (int i = 0; i < rank; i++) {
        gint64 known = 1;
        const HgSymDim *unknown = NULL;
        gboolean mixed = FALSE;
        for (guint k = 0; k < n; k++) {
            int j = i - (rank - ins[k]->rank);
            if (j < 0)
                continue;
            const HgSymDim *d = &ins[k]->dims[j];
            if (d->v == 1)
                continue;
            if (d->v >= 0) {
                if (known != 1 && known != d->v) {
                    hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                                "shapes do not broadcast: dim %d is %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                                i, known, d->v);
                    return FALSE;
                }
                known = d->v;
            } else if (!unknown) {
                unknown = d;
            } else {
                const char *both = hg_sym_broadcast(unknown->sym, d->sym);
                mixed |= !both;
                if (both && both != unknown->sym)
                    unknown = d; /* S with min(S, c): S */
            }
        }
        if (known != 1)
            out->dims[i] = (HgSymDim){known, NULL};
        else if (unknown && !mixed)
            out->dims[i] = *unknown;
        else
            out->dims[i] = (HgSymDim){unknown ? -1 : 1, NULL};
    }
    out->rank = rank;
    return TRUE;
}

/* Output 0 is the broadcast of inputs 0..n-1 with the given dtype; then fold. */
static gboolean
infer_nary(HgShapeCtx *ctx, guint n, int dtype)
{
    HgValueShape *out = hg_shape_output(ctx, 0);
    if (!out)
        return TRUE;
    const HgValueShape *ins[16];
    n = MIN(n, 16);
    for (guint k = 0; k < n; k++)
        ins[k] = hg_shape_input(ctx, k);
    if (!infer_broadcast(ctx, ins, n, out))
        return FALSE;
    out->dtype = dtype;
    hg_fold(ctx, NULL, 0);
    return TRUE;
}

static int
dtype_of(const HgShapeCtx *ctx, guint i)
{
    const HgValueShape *s = hg_shape_input(ctx, i);
    return s ? s->dtype : HG_DTYPE_UNDEFINED;
}

/* Output 0: input 0's shape with the given dtype; then fold. */
static gboolean
infer_like0(HgShapeCtx *ctx, int dtype)
{
    copy_shape(hg_shape_output(ctx, 0), hg_shape_input(ctx, 0), dtype);
    hg_fold(ctx, NULL, 0);
    return TRUE;
}

gboolean
hg_infer_unary(HgShapeCtx *ctx)
{
    return infer_like0(ctx, dtype_of(ctx, 0));
}

/* PRelu's output is x's shape: its slope broadcasts one way (and along the channels before opset 7). */
static gboolean
infer_prelu(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *s = hg_shape_input(ctx, 1);
    if (x && s && x->rank >= 0 && s->rank >= 0) {
        gint64 xd[HG_MAX_RANK], sd[HG_MAX_RANK];
        for (int i = 0; i < x->rank; i++)
            xd[i] = x->dims[i].v;
        for (int i = 0; i < s->rank; i++)
            sd[i] = s->dims[i].v;
        if (prelu_legacy_slope(ctx->opset, (guint)x->rank, xd, (guint)s->rank, sd))
            return infer_like0(ctx, x->dtype);
    }
    return infer_nary(ctx, 2, dtype_of(ctx, 0));
}

gboolean
hg_infer_binary(HgShapeCtx *ctx)
{
    if (ctx->node && g_strcmp0(ctx->node->op_type, "PRelu") == 0)
        return infer_prelu(ctx);
    return infer_nary(ctx, 2, dtype_of(ctx, 0));
}

gboolean
hg_infer_compare(HgShapeCtx *ctx)
{
    return infer_nary(ctx, 2, HG_DTYPE_BOOL);
}

gboolean
hg_infer_variadic(HgShapeCtx *ctx)
{
    if (ctx->n_inputs == 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "needs at least one input");
        return FALSE;
    }
    return infer_nary(ctx, ctx->n_inputs, dtype_of(ctx, 0));
}

gboolean
hg_infer_Where(HgShapeCtx *ctx)
{
    int dtype = dtype_of(ctx, 1);
    return infer_nary(ctx, 3, dtype != HG_DTYPE_UNDEFINED ? dtype : dtype_of(ctx, 2));
}

gboolean
hg_infer_Not(HgShapeCtx *ctx)
{
    return infer_like0(ctx, HG_DTYPE_BOOL);
}

gboolean
hg_infer_IsInf(HgShapeCtx *ctx)
{
    return infer_like0(ctx, HG_DTYPE_BOOL);
}

gboolean
hg_infer_IsNaN(HgShapeCtx *ctx)
{
    return infer_like0(ctx, HG_DTYPE_BOOL);
}

gboolean
hg_infer_Clip(HgShapeCtx *ctx)
{
    return infer_like0(ctx, dtype_of(ctx, 0));
}

gboolean
hg_infer_Cast(HgShapeCtx *ctx)
{
    HgAttr *to = hg_node_attr(ctx->node, "to");
    if (!to || to->type != HG_ATTR_INT || to->i <= HG_DTYPE_UNDEFINED || to->i >= HG_DTYPE_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "attribute 'to' is missing or not a type");
        return FALSE;
    }
    return infer_like0(ctx, (int)to->i);
}

gboolean
hg_infer_CastLike(HgShapeCtx *ctx)
{
    return infer_like0(ctx, dtype_of(ctx, 1));
}

/* Dropout's mask is of the input's type before opset 10, bool after. */
static int
dropout_mask_dtype(gint64 opset, int x_dtype)
{
    return opset >= 10 ? HG_DTYPE_BOOL : x_dtype;
}

gboolean
hg_infer_Dropout(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    copy_shape(hg_shape_output(ctx, 0), x, dtype_of(ctx, 0));
    copy_shape(hg_shape_output(ctx, 1), x, dropout_mask_dtype(ctx->opset, dtype_of(ctx, 0)));
    hg_fold(ctx, NULL, 0);
    return TRUE;
}

/* ================================================================ unary kernels */

#define UNARY_EVAL(Op, rows)                                                                       \
    gboolean hg_eval_##Op(HgEvalCtx *ctx)                                                          \
    {                                                                                              \
        const Params p = {0};                                                                      \
        return unary_eval(ctx, rows, &p, FALSE);                                                   \
    }

UNARY_EVAL(Abs, abs_rows)
UNARY_EVAL(Neg, neg_rows)
UNARY_EVAL(Sign, sign_rows)
UNARY_EVAL(Relu, relu_rows)
UNARY_EVAL(Ceil, ceil_rows)
UNARY_EVAL(Floor, floor_rows)
UNARY_EVAL(Round, round_rows)
UNARY_EVAL(Cos, cos_rows)
UNARY_EVAL(Sin, sin_rows)
UNARY_EVAL(Exp, exp_rows)
UNARY_EVAL(Log, log_rows)
UNARY_EVAL(Sqrt, sqrt_rows)
UNARY_EVAL(Tanh, tanh_rows)
UNARY_EVAL(Erf, erf_rows)
UNARY_EVAL(Reciprocal, reciprocal_rows)
UNARY_EVAL(Sigmoid, sigmoid_rows)
UNARY_EVAL(Softplus, softplus_rows)
UNARY_EVAL(Softsign, softsign_rows)
UNARY_EVAL(Mish, mish_rows)

gboolean
hg_gelu_form(const HgNode *n, gboolean *tanh_form, GError **error)
{
    g_autofree char *a = n ? hg_attr_string(n, "approximate", "none") : g_strdup("none");
    *tanh_form = strcmp(a, "tanh") == 0;
    if (*tanh_form || strcmp(a, "none") == 0)
        return TRUE;
    hg_op_error(error, HG_ERROR_INVALID, n, "approximate is '%s', expected 'none' or 'tanh'", a);
    return FALSE;
}

gboolean
hg_eval_Gelu(HgEvalCtx *ctx)
{
    gboolean tanh_form;
    if (!hg_gelu_form(ctx->node, &tanh_form, ctx->error))
        return FALSE;
    if (tanh_form) {
        const Params p = {.alpha = -2 * sqrt(2 / G_PI), .gamma = 0.044715};
        return unary_eval(ctx, gelu_tanh_rows, &p, FALSE);
    }
    const Params p = {.alpha = -G_SQRT2 / 2, .beta = 0.5};
    return unary_eval(ctx, gelu_rows, &p, FALSE);
}

/* An activation with float attributes (defaults as the spec gives them). */
static gboolean
activation(HgEvalCtx *ctx, const UnRow rows[HG_KIND_COUNT], double alpha, double beta, double gamma)
{
    const HgNode *n = ctx->node;
    Params p = {0};
    p.alpha = n ? hg_node_attr_float(n, "alpha", (float)alpha) : alpha;
    p.beta = n ? hg_node_attr_float(n, "beta", (float)beta) : beta;
    p.gamma = n ? hg_node_attr_float(n, "gamma", (float)gamma) : gamma;
    return unary_eval(ctx, rows, &p, FALSE);
}

gboolean
hg_eval_Elu(HgEvalCtx *ctx)
{
    return activation(ctx, elu_rows, 1.0, 0, 0);
}

gboolean
hg_eval_Selu(HgEvalCtx *ctx)
{
    return activation(ctx, selu_rows, 1.67326319217681884765625, 0, 1.05070102214813232421875);
}

gboolean
hg_eval_HardSigmoid(HgEvalCtx *ctx)
{
    return activation(ctx, hardsigmoid_rows, 0.2, 0.5, 0);
}

gboolean
hg_eval_HardSwish(HgEvalCtx *ctx)
{
    /* HardSigmoid's clamp with alpha = 1/6, beta = 0.5; HardSwish has no attributes */
    const Params p = {.alpha = 1.0 / 6.0, .beta = 0.5};
    return unary_eval(ctx, hardswish_rows, &p, FALSE);
}

gboolean
hg_eval_LeakyRelu(HgEvalCtx *ctx)
{
    return activation(ctx, leakyrelu_rows, 0.01, 0, 0);
}

gboolean
hg_eval_ThresholdedRelu(HgEvalCtx *ctx)
{
    return activation(ctx, thresholdedrelu_rows, 1.0, 0, 0);
}

gboolean
hg_eval_IsNaN(HgEvalCtx *ctx)
{
    const Params p = {0};
    return unary_eval(ctx, isnan_rows, &p, TRUE);
}

gboolean
hg_eval_IsInf(HgEvalCtx *ctx)
{
    Params p = {0};
    p.neg = hg_node_attr_int(ctx->node, "detect_negative", 1) != 0;
    p.pos = hg_node_attr_int(ctx->node, "detect_positive", 1) != 0;
    return unary_eval(ctx, isinf_rows, &p, TRUE);
}

gboolean
hg_eval_Not(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    if (x->dtype != HG_DTYPE_BOOL)
        return hg_eval_unsupported(ctx, x->dtype);
    HgArray *out = hg_eval_new_output(ctx, HG_DTYPE_BOOL, x->rank, x->dims);
    if (!out)
        return FALSE;
    const guint8 *s = x->data;
    guint8 *d = out->data;
    for (gint64 i = 0; i < x->numel; i++)
        d[i] = s[i] == 0;
    ctx->outputs[0] = out;
    return TRUE;
}

/* Arrays are immutable once made, so Identity hands on a reference. */
gboolean
hg_eval_Identity(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    ctx->outputs[0] = hg_array_ref(ctx->inputs[0]);
    return TRUE;
}

/* Clip's bounds: attributes min/max before opset 11, optional scalar inputs from 11 on. An absent bound
 * is no bound. */
gboolean
hg_eval_Clip(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_COUNT)
        return hg_eval_unsupported(ctx, x->dtype);
    Params p = {.alpha = -INFINITY, .beta = INFINITY, .lo = G_MININT64, .hi = G_MAXINT64};
    if (k == HG_KIND_U64) {
        p.lo = 0;
        p.hi = (gint64)G_MAXUINT64; /* the bits of the uint64 maximum */
    }
    if (ctx->opset < 11) {
        p.alpha = hg_node_attr_float(ctx->node, "min", -FLT_MAX);
        p.beta = hg_node_attr_float(ctx->node, "max", FLT_MAX);
        if (k != HG_KIND_F32 && k != HG_KIND_F64)
            return hg_eval_unsupported(ctx, x->dtype);
    } else {
        for (guint i = 1; i < 3; i++) {
            const HgArray *b = i < ctx->n_inputs ? ctx->inputs[i] : NULL;
            if (!b)
                continue;
            if (b->numel != 1) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "the %s bound must be a scalar, it has %" G_GINT64_FORMAT " elements",
                            i == 1 ? "min" : "max", b->numel);
                return FALSE;
            }
            double v = hg_array_get_f64(b, 0);
            gint64 iv = b->dtype == HG_DTYPE_UINT64 ? (gint64)((const guint64 *)b->data)[0]
                                                    : hg_array_get_i64(b, 0);
            if (i == 1) {
                p.alpha = v;
                p.lo = iv;
            } else {
                p.beta = v;
                p.hi = iv;
            }
        }
    }
    return unary_eval(ctx, clip_rows, &p, FALSE);
}

/* Inference only: the output is the input and the mask is all true (all ones of the input's type
 * before opset 10). Training with a nonzero ratio would be random: unsupported. */
gboolean
hg_eval_Dropout(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    if (ctx->opset >= 12) {
        const HgArray *ratio = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
        const HgArray *training = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
        double r = ratio && ratio->numel > 0 ? hg_array_get_f64(ratio, 0) : 0.5;
        if (training && training->numel > 0 && hg_array_get_i64(training, 0) != 0 && r != 0) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node,
                        "training_mode=true with ratio %g (random dropout) is not supported", r);
            return FALSE;
        }
    }
    if (ctx->n_outputs > 1) {
        int mt = dropout_mask_dtype(ctx->opset, x->dtype);
        if (mt != HG_DTYPE_BOOL && hg_kind_of(mt) == HG_KIND_COUNT)
            return hg_eval_unsupported(ctx, mt);
        HgArray *mask = hg_eval_new_output(ctx, mt, x->rank, x->dims);
        if (!mask)
            return FALSE;
        if (mt == HG_DTYPE_BOOL) {
            memset(mask->data, 1, (gsize)mask->numel);
        } else {
            g_autofree double *ones = g_new(double, mask->numel + 1);
            for (gint64 i = 0; i < mask->numel; i++)
                ones[i] = 1;
            hg_array_store_f64(mask, ones);
        }
        ctx->outputs[1] = mask;
    }
    ctx->outputs[0] = hg_array_ref(ctx->inputs[0]);
    return TRUE;
}

/* ================================================================ binary kernels */

#define BINARY_EVAL(Op, rows, compare)                                                             \
    gboolean hg_eval_##Op(HgEvalCtx *ctx)                                                          \
    {                                                                                              \
        return binary_eval(ctx, rows, compare);                                                    \
    }

BINARY_EVAL(Add, add_rows, FALSE)
BINARY_EVAL(Sub, sub_rows, FALSE)
BINARY_EVAL(Mul, mul_rows, FALSE)
BINARY_EVAL(Div, div_rows, FALSE)

/* Equal on strings (opset 19): byte-wise equality over the broadcast. */
static gboolean
equal_strings(HgEvalCtx *ctx)
{
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1];
    guint r;
    gint64 d[HG_MAX_RANK];
    if (!broadcast(ctx, a->rank, a->dims, b->rank, b->dims, &r, d))
        return FALSE;
    HgArray *out = hg_eval_new_output(ctx, HG_DTYPE_BOOL, r, d);
    if (!out)
        return FALSE;
    ctx->outputs[0] = out;
    if (out->numel == 0)
        return TRUE;
    Walk w;
    const guint ranks[2] = {a->rank, b->rank};
    const gint64 *const dims[2] = {a->dims, b->dims};
    walk_init(&w, 2, ranks, dims, r, d);
    gint64 inner = w.dims[w.rank - 1], rows = out->numel / inner;
    gint64 sa = w.st[0][w.rank - 1], sb = w.st[1][w.rank - 1];
    gint64 idx[HG_MAX_RANK] = {0}, off[3] = {0, 0, 0};
    guint8 *o = out->data;
    for (gint64 row = 0; row < rows; row++) {
        for (gint64 i = 0; i < inner; i++)
            o[row * inner + i] = g_bytes_equal(a->strings->pdata[off[0] + i * sa],
                                               b->strings->pdata[off[1] + i * sb]);
        walk_step(&w, idx, off);
    }
    return TRUE;
}

gboolean
hg_eval_Equal(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    if (ctx->inputs[0]->dtype == HG_DTYPE_STRING && ctx->inputs[1]->dtype == HG_DTYPE_STRING)
        return equal_strings(ctx);
    return binary_eval(ctx, equal_rows, TRUE);
}

BINARY_EVAL(Greater, greater_rows, TRUE)
BINARY_EVAL(GreaterOrEqual, greater_equal_rows, TRUE)
BINARY_EVAL(Less, less_rows, TRUE)
BINARY_EVAL(LessOrEqual, less_equal_rows, TRUE)

gboolean
hg_eval_Mod(HgEvalCtx *ctx)
{
    gboolean c_fmod = hg_node_attr_int(ctx->node, "fmod", 0) != 0;
    return binary_eval(ctx, c_fmod ? fmod_rows : pymod_rows, FALSE);
}

/* The slope broadcasts to x's shape (unidirectionally). */
gboolean
hg_eval_PRelu(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    HgArray *x = ctx->inputs[0], *slope = ctx->inputs[1];
    HgKind k = hg_kind_of(x->dtype);
    if (k == HG_KIND_COUNT || hg_kind_of(slope->dtype) == HG_KIND_COUNT)
        return hg_eval_unsupported(ctx, k == HG_KIND_COUNT ? x->dtype : slope->dtype);
    if (!prelu_legacy_slope(ctx->opset, x->rank, x->dims, slope->rank, slope->dims))
        return binary_run(ctx, prelu_rows[k], k, x->dtype, TRUE);
    gint64 d[HG_MAX_RANK];
    d[0] = slope->dims[0];
    for (guint i = 1; i + 1 < x->rank; i++)
        d[i] = 1;
    g_autoptr(HgArray) view = hg_array_reshape_view(slope, x->rank - 1, d, NULL);
    HgArray *ins[2] = {x, view};
    HgEvalCtx c = *ctx;
    c.inputs = ins;
    return binary_run(&c, prelu_rows[k], k, x->dtype, TRUE);
}

/* The base and the exponent may have different types; the result has the base's. A float base
 * computes in its float kind; an integer base with an integer exponent multiplies exactly (wrapping);
 * an integer base with a float exponent computes in FP64 and truncates, as numpy's power then astype. */
gboolean
hg_eval_Pow(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    int tx = ctx->inputs[0]->dtype, ty = ctx->inputs[1]->dtype;
    HgKind kx = hg_kind_of(tx), ky = hg_kind_of(ty);
    if (kx == HG_KIND_COUNT || ky == HG_KIND_COUNT)
        return hg_eval_unsupported(ctx, kx == HG_KIND_COUNT ? tx : ty);
    if (kx == HG_KIND_F32)
        return binary_run(ctx, pow_f32, HG_KIND_F32, tx, FALSE);
    if (kx == HG_KIND_F64 || ky == HG_KIND_F32 || ky == HG_KIND_F64)
        return binary_run(ctx, pow_f64, HG_KIND_F64, tx, FALSE);
    return binary_run(ctx, pow_i64, HG_KIND_I64, tx, FALSE);
}

gboolean
hg_eval_And(HgEvalCtx *ctx)
{
    return logic_eval(ctx, and_row);
}

gboolean
hg_eval_Or(HgEvalCtx *ctx)
{
    return logic_eval(ctx, or_row);
}

gboolean
hg_eval_Xor(HgEvalCtx *ctx)
{
    return logic_eval(ctx, xor_row);
}

gboolean
hg_eval_Max(HgEvalCtx *ctx)
{
    return variadic_eval(ctx, max_rows, FALSE);
}

gboolean
hg_eval_Min(HgEvalCtx *ctx)
{
    return variadic_eval(ctx, min_rows, FALSE);
}

gboolean
hg_eval_Sum(HgEvalCtx *ctx)
{
    return variadic_eval(ctx, add_rows, FALSE);
}

gboolean
hg_eval_Mean(HgEvalCtx *ctx)
{
    return variadic_eval(ctx, add_rows, TRUE);
}

/* ================================================================ Where */

/* A row of Where over elements of type T: o = c ? x : y, with strides 0 or 1. */
#define WHERE_ROW(T)                                                                               \
    do {                                                                                           \
        T *o_ = (T *)out->data + row * inner;                                                        \
        const T *x_ = (const T *)x->data + off[1], *y_ = (const T *)y->data + off[2];              \
        const guint8 *c_ = (const guint8 *)c->data + off[0];                                       \
        for (gint64 i = 0; i < inner; i++)                                                         \
            o_[i] = c_[i * sc] ? x_[i * sx] : y_[i * sy];                                          \
    } while (0)

gboolean
hg_eval_Where(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    const HgArray *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    if (c->dtype != HG_DTYPE_BOOL)
        return hg_eval_unsupported(ctx, c->dtype);
    if (x->dtype != y->dtype) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X is %s and Y is %s",
                    hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?",
                    hg_dtype_name(y->dtype) ? hg_dtype_name(y->dtype) : "?");
        return FALSE;
    }
    gsize es = hg_dtype_size(x->dtype);
    if (!es && x->dtype != HG_DTYPE_STRING)
        return hg_eval_unsupported(ctx, x->dtype);
    guint r1, r;
    gint64 d1[HG_MAX_RANK], d[HG_MAX_RANK];
    if (!broadcast(ctx, c->rank, c->dims, x->rank, x->dims, &r1, d1) ||
        !broadcast(ctx, r1, d1, y->rank, y->dims, &r, d))
        return FALSE;
    HgArray *out = hg_eval_new_output(ctx, x->dtype, r, d);
    if (!out)
        return FALSE;
    ctx->outputs[0] = out;
    if (out->numel == 0)
        return TRUE;
    Walk w;
    const guint ranks[3] = {c->rank, x->rank, y->rank};
    const gint64 *const dims[3] = {c->dims, x->dims, y->dims};
    walk_init(&w, 3, ranks, dims, r, d);
    gint64 inner = w.dims[w.rank - 1], rows = out->numel / inner;
    gint64 sc = w.st[0][w.rank - 1], sx = w.st[1][w.rank - 1], sy = w.st[2][w.rank - 1];
    gint64 idx[HG_MAX_RANK] = {0}, off[3] = {0, 0, 0};
    for (gint64 row = 0; row < rows; row++) {
        if (x->strings) {
            for (gint64 i = 0; i < inner; i++) {
                gboolean pick_x = ((const guint8 *)c->data)[off[0] + i * sc] != 0;
                GBytes *s = pick_x ? x->strings->pdata[off[1] + i * sx] : y->strings->pdata[off[2] + i * sy];
                g_bytes_unref(out->strings->pdata[row * inner + i]);
                out->strings->pdata[row * inner + i] = g_bytes_ref(s);
            }
        } else {
            HG_WIDTH_SWITCH(es, WHERE_ROW);
        }
        walk_step(&w, idx, off);
    }
    return TRUE;
}

/* ================================================================ Cast */

/* Types Cast converts between: every type with arithmetic, and strings. */
static gboolean
castable(int dtype)
{
    return dtype == HG_DTYPE_STRING || hg_kind_of(dtype) != HG_KIND_COUNT;
}

/* The shortest "%.Ng" form of v that reads back as the same value of its type (numpy's str()). */
static char *
format_shortest(double v, gboolean single)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE], fmt[8];
    for (int prec = 1; prec <= 17; prec++) {
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        double back = g_ascii_strtod(buf, NULL);
        if (single ? (float)back == (float)v : back == v)
            break;
    }
    return g_strdup(buf);
}

/* Number -> string, as numpy's str(): shortest round-trip floats, "nan", "inf". */
static void
cast_to_string(const HgArray *x, HgArray *out)
{
    HgKind k = hg_kind_of(x->dtype);
    for (gint64 i = 0; i < x->numel; i++) {
        char *s;
        if (k == HG_KIND_F32 || k == HG_KIND_F64)
            s = format_shortest(hg_array_get_f64(x, i), k == HG_KIND_F32);
        else if (k == HG_KIND_U64)
            s = g_strdup_printf("%" G_GUINT64_FORMAT, ((const guint64 *)x->data)[i]);
        else
            s = g_strdup_printf("%" G_GINT64_FORMAT, hg_array_get_i64(x, i));
        g_bytes_unref(out->strings->pdata[i]);
        out->strings->pdata[i] = g_bytes_new_take(s, strlen(s));
    }
}

/* String -> number: integers parse exactly when the whole string is an integer; everything else goes
 * through strtod ("NaN", "INF", "-inf" included). */
static gboolean
cast_from_string(HgEvalCtx *ctx, const HgArray *x, HgArray *out)
{
    HgKind k = hg_kind_of(out->dtype);
    g_autofree double *f = g_new(double, x->numel + 1);
    g_autofree gint64 *n = g_new(gint64, x->numel + 1);
    for (gint64 i = 0; i < x->numel; i++) {
        gsize len;
        const char *p = g_bytes_get_data(x->strings->pdata[i], &len);
        g_autofree char *s = g_strndup(p ? p : "", len);
        char *end;
        n[i] = g_ascii_strtoll(s, &end, 10);
        gboolean integral = end != s && *end == '\0';
        f[i] = g_ascii_strtod(s, &end);
        if (end == s || *end != '\0') {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "cannot read '%s' as a number", s);
            return FALSE;
        }
        if (!integral)
            n[i] = isnan(f[i]) ? 0 : f[i] >= 9.2233720368547758e18 ? G_MAXINT64
                 : f[i] <= -9.2233720368547758e18 ? G_MININT64 : (gint64)f[i];
    }
    if (k == HG_KIND_F32 || k == HG_KIND_F64)
        hg_store_f64_once(out, f);
    else
        hg_array_store_i64(out, n);
    return TRUE;
}

/* Convert x into a new array of dtype `to`, rounding once. */
static gboolean
cast_eval(HgEvalCtx *ctx, int to)
{
    const HgArray *x = ctx->inputs[0];
    if (x->dtype == to) {
        ctx->outputs[0] = hg_array_ref(ctx->inputs[0]);
        return TRUE;
    }
    if (!castable(x->dtype))
        return hg_eval_unsupported(ctx, x->dtype);
    if (!castable(to))
        return hg_eval_unsupported(ctx, to);
    HgArray *out = hg_eval_new_output(ctx, to, x->rank, x->dims);
    if (!out)
        return FALSE;
    gboolean ok = TRUE;
    if (to == HG_DTYPE_STRING) {
        cast_to_string(x, out);
    } else if (x->dtype == HG_DTYPE_STRING) {
        ok = cast_from_string(ctx, x, out);
    } else {
        HgKind from = hg_kind_of(x->dtype), dst = hg_kind_of(to);
        if (from == HG_KIND_F32 || (from == HG_KIND_F64 && dst != HG_KIND_F32)) {
            /* float sources: exact in the compute kind; the store rounds once (or truncates to int) */
            HgKBuf b = hg_kbuf_load(x, from);
            hg_kbuf_store(out, &b, from);
        } else if (from == HG_KIND_F64 || dst == HG_KIND_F32 || dst == HG_KIND_F64) {
            /* double -> FP32 kinds, and integers -> floats: through FP64 with one rounding to FP16/BF16
             * (integers past 2^53 round twice; no float type can tell) */
            g_autofree double *v = g_new(double, x->numel + 1);
            for (gint64 i = 0; i < x->numel; i++)
                v[i] = from == HG_KIND_U64 ? (double)((const guint64 *)x->data)[i] : hg_array_get_f64(x, i);
            if (to == HG_DTYPE_FLOAT) {
                /* an int64 source rounds to float once, directly */
                float *o = out->data;
                for (gint64 i = 0; i < x->numel; i++)
                    o[i] = from == HG_KIND_I64   ? (float)hg_array_get_i64(x, i)
                         : from == HG_KIND_U64 ? (float)((const guint64 *)x->data)[i]
                                           : (float)v[i];
            } else {
                hg_store_f64_once(out, v);
            }
        } else {
            /* integer -> integer: wraps like a C cast; bool is x != 0 */
            HgKBuf b = hg_kbuf_load(x, from);
            hg_kbuf_store(out, &b, from);
        }
    }
    if (!ok) {
        hg_array_unref(out);
        return FALSE;
    }
    ctx->outputs[0] = out;
    return TRUE;
}

/* The 'saturate' attribute (opset 19) only concerns float8 targets, which are unsupported. */
gboolean
hg_eval_Cast(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgAttr *to = hg_node_attr(ctx->node, "to");
    if (!to || to->type != HG_ATTR_INT || to->i <= HG_DTYPE_UNDEFINED || to->i >= HG_DTYPE_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "attribute 'to' is missing or not a type");
        return FALSE;
    }
    return cast_eval(ctx, (int)to->i);
}

gboolean
hg_eval_CastLike(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    return cast_eval(ctx, ctx->inputs[1]->dtype);
}
