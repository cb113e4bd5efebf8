/* The op table built from ops.def, lookups, and helpers shared by the kernel families. */
#include "ops/op.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

static const HgOpDef op_table[] = {
    {HG_OP_OPAQUE, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL},
#define HG_OP(name, family, infer, eval, cost, traits, fp32_inputs, accum)                          \
    {HG_OP_##name, #name, family, infer, eval, cost, traits, fp32_inputs, accum, hg_range_##name},
#include "ops/ops.def"
#undef HG_OP
};
/* The 123 ops of the interpreter's scope, 3 deprecated image ops, and the opaque entry. A row added or
 * lost shows up here first. */
G_STATIC_ASSERT(G_N_ELEMENTS(op_table) == HG_OP_COUNT);
G_STATIC_ASSERT(HG_OP_COUNT == 127);

static GHashTable *
op_index(void)
{
    static gsize once = 0;
    static GHashTable *index;
    if (g_once_init_enter(&once)) {
        index = g_hash_table_new(g_str_hash, g_str_equal);
        for (guint i = 1; i < G_N_ELEMENTS(op_table); i++)
            g_hash_table_insert(index, (gpointer)op_table[i].name, (gpointer)&op_table[i]);
        g_once_init_leave(&once, 1);
    }
    return index;
}

const HgOpDef *
hg_op_lookup(const char *domain, const char *op_type)
{
    if (!op_type || (domain && *domain && strcmp(domain, "ai.onnx") != 0))
        return NULL;
    return g_hash_table_lookup(op_index(), op_type);
}

const HgOpDef *
hg_op_by_id(HgOpId id)
{
    g_return_val_if_fail(id > HG_OP_OPAQUE && id < HG_OP_COUNT, NULL);
    return &op_table[id];
}

const HgOpDef *
hg_op_for_node(const HgNode *node)
{
    g_return_val_if_fail(node != NULL, NULL);
    return hg_op_lookup(node->domain, node->op_type);
}

gboolean
hg_node_has_traits(const HgNode *node, guint traits)
{
    const HgOpDef *op = hg_op_for_node(node);
    return op && (op->traits & traits) == traits;
}

gboolean
hg_op_accumulates_fp16(const HgOpDef *op, HgAccumulateModel model)
{
    if (!op || !(op->traits & HG_TRAIT_ACCUMULATES))
        return FALSE;
    return model == HG_ACCUMULATE_FP16 || (op->traits & HG_TRAIT_ACCUM_FP16);
}

/* ---------------------------------------------------------------- costs shared by many rows */

gint64
hg_cost_elementwise(const HgShapeCtx *ctx)
{
    if (!ctx->n_outputs || !ctx->outputs[0])
        return -1;
    return hg_vshape_numel(ctx->outputs[0]);
}

gint64
hg_cost_none(const HgShapeCtx *ctx)
{
    (void)ctx;
    return 0;
}

/* ---------------------------------------------------------------- ranges */

HgRange
hg_range_any(void)
{
    HgRange r = {-INFINITY, INFINITY, 0, TRUE};
    return r;
}

HgRange
hg_range_exact(double lo, double hi)
{
    HgRange r = {lo, hi, 0, FALSE};
    return r;
}

gboolean
hg_range_bounded(const HgRange *r)
{
    return r && isfinite(r->lo) && isfinite(r->hi);
}

/* FP32 bit patterns, as sortable signed keys (the order of the floats they encode) and magnitudes. */
#define F32_INF_BITS 0x7f800000
#define F32_FP16_MAX_BITS 0x477fe000   /* 65504 */
#define F32_FP16_FLUSH_BITS 0x33000000 /* 2^-25 */

typedef gint32 V8i __attribute__((vector_size(32)));

static double
f32_of_key(gint32 key)
{
    guint32 b = (guint32)(key ^ ((key >> 31) & 0x7fffffff));
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* The FLOAT case of hg_scan_array in one pass over the bit patterns, 8 lanes at a time: the data may
 * be an unaligned view of a file (memcpy loads), and it is the weights of a whole model, so it runs
 * at memory speed (AVX2 where the CPU has it). Counts per lane stay below 2^31 by blocks. */
__attribute__((target_clones("avx2", "default"))) static void
scan_f32(const guint8 *p, gint64 n, HgScan *out)
{
    const V8i absm = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                      0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    const V8i zero = {0};
    V8i kmin = absm, kmax = -absm - 1, tiny = absm & F32_INF_BITS, anynan = zero;
    gint64 n_flush = 0, n_nonzero = 0, i = 0;
    while (i + 8 <= n) {
        gint64 end = MIN(n, i + ((gint64)1 << 30));
        V8i cf = zero, cz = zero;
        for (; i + 8 <= end; i += 8) {
            V8i b;
            memcpy(&b, p + 4 * i, sizeof b);
            V8i a = b & absm;
            V8i isn = a > F32_INF_BITS;
            V8i key = b ^ ((b >> 31) & absm);
            V8i lt = (key < kmin) & ~isn, gt = (key > kmax) & ~isn;
            kmin = (lt & key) | (~lt & kmin);
            kmax = (gt & key) | (~gt & kmax);
            V8i nz = (a != 0) & ~isn;
            V8i tl = nz & (a < tiny);
            tiny = (tl & a) | (~tl & tiny);
            anynan |= isn;
            cf -= nz & (a <= F32_FP16_FLUSH_BITS);
            cz -= nz;
        }
        for (int k = 0; k < 8; k++) {
            n_flush += cf[k];
            n_nonzero += cz[k];
        }
    }
    gint32 lo = G_MAXINT32, hi = G_MININT32, t = F32_INF_BITS;
    gboolean nan = FALSE;
    for (int k = 0; k < 8; k++) {
        lo = MIN(lo, kmin[k]);
        hi = MAX(hi, kmax[k]);
        t = MIN(t, tiny[k]);
        nan |= anynan[k] != 0;
    }
    for (; i < n; i++) {
        gint32 b;
        memcpy(&b, p + 4 * i, 4);
        gint32 a = b & 0x7fffffff;
        if (a > F32_INF_BITS) {
            nan = TRUE;
            continue;
        }
        gint32 key = b ^ ((b >> 31) & 0x7fffffff);
        lo = MIN(lo, key);
        hi = MAX(hi, key);
        if (a) {
            t = MIN(t, a);
            n_nonzero++;
            n_flush += a <= F32_FP16_FLUSH_BITS;
        }
    }
    out->range.nan = nan;
    if (lo > hi) { /* empty, or only NaN */
        out->range.lo = out->range.hi = 0;
    } else {
        out->range.lo = f32_of_key(lo);
        out->range.hi = f32_of_key(hi);
    }
    out->range.tiny = t == F32_INF_BITS ? 0 : f32_of_key(t);
    out->n_flush = n_flush;
    out->n_nonzero = n_nonzero; /* so far: every finite nonzero value */
}

void
hg_scan_f32_bytes(const guint8 *p, gint64 n, HgScan *out)
{
    *out = (HgScan){hg_range_any(), 0, 0, 0, 0};
    scan_f32(p, n, out);
}

void
hg_scan_merge(HgScan *acc, const HgScan *part)
{
    acc->range.lo = MIN(acc->range.lo, part->range.lo);
    acc->range.hi = MAX(acc->range.hi, part->range.hi);
    if (part->range.tiny > 0 && (acc->range.tiny == 0 || part->range.tiny < acc->range.tiny))
        acc->range.tiny = part->range.tiny;
    acc->range.nan |= part->range.nan;
    acc->n_nonfinite += part->n_nonfinite;
    acc->n_big += part->n_big;
    acc->n_flush += part->n_flush;
    acc->n_nonzero += part->n_nonzero;
}

HgScan
hg_scan_array(const HgArray *a)
{
    HgScan s = {hg_range_any(), 0, 0, 0, 0};
    if (!a || a->strings || hg_dtype_compute(a->dtype) == HG_COMPUTE_NONE)
        return s;
    if (a->dtype == HG_DTYPE_FLOAT) {
        gsize bytes = (gsize)a->numel * 4;
        gboolean keep = a->blob && bytes >= HG_FACT_MIN_BYTES;
        if (keep && hg_blob_fact_get(a->blob, a->data, bytes, HG_FACT_SCAN, NULL, 0, &s, sizeof s))
            return s;
        scan_f32(a->data, a->numel, &s);
        /* Values past FP16's range are rare: count them (and inf and NaN) only when the range says
         * there are some. */
        if (s.range.nan || s.range.lo < -65504 || s.range.hi > 65504) {
            s.n_nonzero = 0;
            for (gint64 i = 0; i < a->numel; i++) {
                double v = hg_array_get_f64(a, i);
                s.n_nonfinite += !isfinite(v);
                s.n_big += isfinite(v) && fabs(v) > 65504;
                s.n_nonzero += isfinite(v) && v != 0 && fabs(v) <= 65504;
            }
        }
        if (keep)
            hg_blob_fact_put(a->blob, a->data, bytes, HG_FACT_SCAN, NULL, 0, &s, sizeof s);
        return s;
    }
    HgRange r = {INFINITY, -INFINITY, INFINITY, FALSE};
    for (gint64 i = 0; i < a->numel; i++) {
        double v = hg_array_get_f64(a, i);
        if (isnan(v)) {
            r.nan = TRUE;
            s.n_nonfinite++;
            continue;
        }
        r.lo = MIN(r.lo, v);
        r.hi = MAX(r.hi, v);
        if (v != 0)
            r.tiny = MIN(r.tiny, fabs(v));
        if (isinf(v))
            s.n_nonfinite++;
        else if (fabs(v) > 65504)
            s.n_big++;
        else if (v != 0) {
            s.n_nonzero++;
            s.n_flush += fabs(v) <= 0x1p-25;
        }
    }
    if (r.lo > r.hi) /* empty, or only NaN */
        r.lo = r.hi = 0;
    if (!isfinite(r.tiny))
        r.tiny = 0;
    s.range = r;
    return s;
}

HgRange
hg_range_of_array(const HgArray *a)
{
    return hg_scan_array(a).range;
}

double
hg_bound_add(double x, double y, double dflt)
{
    double r = x + y;
    return isnan(r) ? dflt : r;
}

double
hg_bound_mul(double x, double y)
{
    return x == 0 || y == 0 ? 0 : x * y;
}

static gboolean
has_inf(const HgRange *r)
{
    return isinf(r->lo) || isinf(r->hi);
}

static gboolean
has_zero(const HgRange *r)
{
    return r->lo <= 0 && r->hi >= 0;
}

HgRange
hg_range_neg(HgRange a)
{
    HgRange r = {-a.hi, -a.lo, a.tiny, a.nan};
    return r;
}

HgRange
hg_range_add(HgRange a, HgRange b)
{
    HgRange r;
    r.lo = hg_bound_add(a.lo, b.lo, -INFINITY);
    r.hi = hg_bound_add(a.hi, b.hi, INFINITY);
    r.tiny = 0;
    r.nan = a.nan || b.nan || (a.hi == INFINITY && b.lo == -INFINITY) ||
            (a.lo == -INFINITY && b.hi == INFINITY);
    return r;
}

HgRange
hg_range_sub(HgRange a, HgRange b)
{
    return hg_range_add(a, hg_range_neg(b));
}

HgRange
hg_range_mul(HgRange a, HgRange b)
{
    double c[4] = {hg_bound_mul(a.lo, b.lo), hg_bound_mul(a.lo, b.hi), hg_bound_mul(a.hi, b.lo),
                   hg_bound_mul(a.hi, b.hi)};
    HgRange r = {c[0], c[0], a.tiny * b.tiny, FALSE};
    for (int i = 1; i < 4; i++) {
        r.lo = MIN(r.lo, c[i]);
        r.hi = MAX(r.hi, c[i]);
    }
    if (isnan(r.tiny))
        r.tiny = 0;
    r.nan = a.nan || b.nan || (has_zero(&a) && has_inf(&b)) || (has_zero(&b) && has_inf(&a));
    return r;
}

HgRange
hg_range_recip(HgRange b)
{
    HgRange r = {-INFINITY, INFINITY, 0, b.nan};
    double m = MAX(fabs(b.lo), fabs(b.hi));
    if (isfinite(m) && m > 0)
        r.tiny = 1 / m;
    if (b.lo > 0 || b.hi < 0) {
        r.lo = 1 / b.hi; /* 1 / inf = 0 */
        r.hi = 1 / b.lo;
    }
    return r;
}

HgRange
hg_range_div(HgRange a, HgRange b)
{
    return hg_range_mul(a, hg_range_recip(b));
}

HgRange
hg_range_union(HgRange a, HgRange b)
{
    HgRange r = {MIN(a.lo, b.lo), MAX(a.hi, b.hi), MIN(a.tiny, b.tiny), a.nan || b.nan};
    return r;
}

HgRange
hg_range_monotone(HgRange x, double (*f)(double), gboolean increasing)
{
    double fl = f(x.lo), fh = f(x.hi);
    HgRange r = {increasing ? fl : fh, increasing ? fh : fl, 0, x.nan};
    if (isnan(r.lo)) {
        r.lo = -INFINITY;
        r.nan = TRUE;
    }
    if (isnan(r.hi)) {
        r.hi = INFINITY;
        r.nan = TRUE;
    }
    return r;
}

HgRange
hg_range_fit(HgRange r, int dtype)
{
    /* half_sub: half the subnormal spacing, the absolute rounding below the normal range */
    double max = 0, min = 0, rel = 0, sub = 0, half_sub = 0;
    switch (dtype) {
    case HG_DTYPE_DOUBLE: return r;
    case HG_DTYPE_FLOAT: max = FLT_MAX; sub = FLT_MIN; half_sub = 0x1p-150; break;
    case HG_DTYPE_FLOAT16: max = 65504.0; rel = 1.0 / 1024; sub = 6.103515625e-05; half_sub = 0x1p-25; break;
    case HG_DTYPE_BFLOAT16: max = 3.3895313892515355e38; rel = 1.0 / 128; sub = FLT_MIN; half_sub = 0x1p-134; break;
    case HG_DTYPE_BOOL: min = 0; max = 1; break;
    case HG_DTYPE_INT8: min = G_MININT8; max = G_MAXINT8; break;
    case HG_DTYPE_UINT8: min = 0; max = G_MAXUINT8; break;
    case HG_DTYPE_INT16: min = G_MININT16; max = G_MAXINT16; break;
    case HG_DTYPE_UINT16: min = 0; max = G_MAXUINT16; break;
    case HG_DTYPE_INT32: min = G_MININT32; max = G_MAXINT32; break;
    case HG_DTYPE_UINT32: min = 0; max = G_MAXUINT32; break;
    /* past 2^53 a double bound may have rounded inward: give up there */
    case HG_DTYPE_INT64: min = -9007199254740992.0; max = 9007199254740992.0; break;
    case HG_DTYPE_UINT64: min = 0; max = 9007199254740992.0; break;
    default: return hg_range_any();
    }
    if (hg_dtype_is_float(dtype)) {
        /* rounding to nearest is monotone: a value inside [lo, hi] rounds inside [round(lo),
         * round(hi)], which is within half an ulp (relative rel / 2; FP32's relative rounding is the
         * range driver's widening) of the bounds; below the normal range half an ulp is absolute (a
         * positive bound under half_sub may store as 0: exp(-200) is 0 in FP32), and rounding never
         * changes a sign, so a bound at or past 0 stays there */
        if (isfinite(r.lo) && r.lo > 0)
            r.lo = MAX(0, r.lo - r.lo * rel - half_sub);
        else if (isfinite(r.lo) && r.lo < 0)
            r.lo += r.lo * rel - half_sub;
        if (isfinite(r.hi) && r.hi < 0)
            r.hi = MIN(0, r.hi - r.hi * rel + half_sub);
        else if (isfinite(r.hi) && r.hi > 0)
            r.hi += r.hi * rel + half_sub;
        if (r.lo < -max)
            r.lo = -INFINITY;
        if (r.hi > max)
            r.hi = INFINITY;
        /* below the normal range rounding is absolute, not relative */
        r.tiny = r.tiny < sub ? 0 : r.tiny * (1 - rel);
        return r;
    }
    if (dtype == HG_DTYPE_BOOL) {
        /* x != 0: NaN is true */
        HgRange b = {r.lo > 0 || r.hi < 0 ? 1 : 0, (r.lo == 0 && r.hi == 0 && !r.nan) ? 0 : 1, 1, FALSE};
        if (r.nan)
            b.hi = 1;
        return b;
    }
    /* integer storage: bounds are integers, and a value past the type's limits wraps */
    r.nan = FALSE;
    r.lo = ceil(r.lo);
    r.hi = floor(r.hi);
    if (!(r.lo >= min && r.hi <= max) || r.lo > r.hi) {
        r.lo = min;
        r.hi = max;
        if (dtype == HG_DTYPE_INT64) {
            r.lo = (double)G_MININT64;
            r.hi = (double)G_MAXINT64;
        } else if (dtype == HG_DTYPE_UINT64) {
            r.hi = (double)G_MAXUINT64;
        }
    }
    r.tiny = 1;
    return r;
}

/* ---------------------------------------------------------------- attributes */

const gint64 *
hg_attr_ints(const HgNode *n, const char *name, guint *len)
{
    HgAttr *a = hg_node_attr(n, name);
    if (!a || !a->ints) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = a->ints->len;
    return (const gint64 *)a->ints->data;
}

const float *
hg_attr_floats(const HgNode *n, const char *name, guint *len)
{
    HgAttr *a = hg_node_attr(n, name);
    if (!a || !a->floats) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = a->floats->len;
    return (const float *)a->floats->data;
}

char *
hg_attr_string(const HgNode *n, const char *name, const char *dflt)
{
    HgAttr *a = hg_node_attr(n, name);
    if (!a || !a->s)
        return g_strdup(dflt);
    gsize len;
    const char *p = g_bytes_get_data(a->s, &len);
    return g_strndup(p ? p : "", len);
}

void
hg_op_error(GError **error, int code, const HgNode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HG_ERROR, code, "node '%s' (%s): %s", n && n->name ? n->name : "",
                n ? n->op_type : "?", msg);
}

gboolean
hg_norm_axis(gint64 axis, guint rank, gint64 *out, const HgNode *n, GError **error)
{
    gint64 a = axis < 0 ? axis + (gint64)rank : axis;
    if (a < 0 || a >= (gint64)rank) {
        hg_op_error(error, HG_ERROR_INVALID, n, "axis %" G_GINT64_FORMAT " is out of range for rank %u",
                    axis, rank);
        return FALSE;
    }
    *out = a;
    return TRUE;
}

/* ---------------------------------------------------------------- inputs and outputs */

const HgValueShape *
hg_shape_input(const HgShapeCtx *ctx, guint i)
{
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

HgValueShape *
hg_shape_output(const HgShapeCtx *ctx, guint i)
{
    return i < ctx->n_outputs ? ctx->outputs[i] : NULL;
}

HgArray *
hg_eval_input(const HgEvalCtx *ctx, guint i)
{
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

static HgArray *
eval_new_output(HgEvalCtx *ctx, int dtype, guint rank, const gint64 *dims, gboolean zero)
{
    GError *err = NULL;
    HgArray *a = zero ? hg_array_new(dtype, rank, dims, &err) : hg_array_new_uninit(dtype, rank, dims, &err);
    if (!a) {
        hg_op_error(ctx->error, err->code, ctx->node, "%s", err->message);
        g_error_free(err);
    }
    return a;
}

HgArray *
hg_eval_new_output(HgEvalCtx *ctx, int dtype, guint rank, const gint64 *dims)
{
    return eval_new_output(ctx, dtype, rank, dims, TRUE);
}

HgArray *
hg_eval_new_output_uninit(HgEvalCtx *ctx, int dtype, guint rank, const gint64 *dims)
{
    return eval_new_output(ctx, dtype, rank, dims, FALSE);
}

/* ---------------------------------------------------------------- shapes */

void
hg_vshape_unknown(HgValueShape *s)
{
    if (s->value)
        hg_array_unref(s->value);
    memset(s, 0, sizeof(*s));
    s->dtype = HG_DTYPE_UNDEFINED;
    s->rank = -1;
}

void
hg_vshape_set_known(HgValueShape *s, int dtype, guint rank, const gint64 *dims)
{
    g_return_if_fail(rank <= HG_MAX_RANK);
    s->dtype = dtype;
    s->rank = (int)rank;
    for (guint i = 0; i < rank; i++) {
        s->dims[i].v = dims[i];
        s->dims[i].sym = NULL;
    }
}

gboolean
hg_vshape_known(const HgValueShape *s)
{
    if (!s || s->rank < 0)
        return FALSE;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i].v < 0)
            return FALSE;
    return TRUE;
}

gint64
hg_vshape_numel(const HgValueShape *s)
{
    if (!hg_vshape_known(s))
        return -1;
    gint64 n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i].v && n > G_MAXINT64 / s->dims[i].v)
            return -1;
        n *= s->dims[i].v;
    }
    return n;
}
