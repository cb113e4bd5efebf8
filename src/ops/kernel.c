/* The kernel vocabulary shared by the families (kernel.h). */
#include "ops/kernel.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- compute kinds */

HgKind
hg_kind_of(int dtype)
{
    if (dtype == HG_DTYPE_UINT64)
        return HG_KIND_U64;
    switch (hg_dtype_compute(dtype)) {
    case HG_COMPUTE_F32: return HG_KIND_F32;
    case HG_COMPUTE_F64: return HG_KIND_F64;
    case HG_COMPUTE_I64: return HG_KIND_I64;
    default: return HG_KIND_COUNT;
    }
}

gsize
hg_kind_size(HgKind k)
{
    return k == HG_KIND_F32 ? sizeof(float) : 8;
}

int
hg_kind_dtype(HgKind k)
{
    static const int dtypes[HG_KIND_COUNT] = {HG_DTYPE_FLOAT, HG_DTYPE_DOUBLE, HG_DTYPE_INT64,
                                              HG_DTYPE_UINT64};
    g_return_val_if_fail(k < HG_KIND_COUNT, HG_DTYPE_UNDEFINED);
    return dtypes[k];
}

gboolean
hg_kind_stores(HgKind k, int dtype)
{
    switch (k) {
    case HG_KIND_F32: return dtype == HG_DTYPE_FLOAT;
    case HG_KIND_F64: return dtype == HG_DTYPE_DOUBLE;
    default: return dtype == HG_DTYPE_INT64 || dtype == HG_DTYPE_UINT64;
    }
}

void
hg_kbuf_clear(HgKBuf *b)
{
    if (b->owned)
        g_free(b->p);
    b->p = NULL;
    b->owned = FALSE;
}

HgKBuf
hg_kbuf_load(const HgArray *a, HgKind k)
{
    HgKBuf b = {NULL, FALSE};
    if (!a)
        return b;
    switch (k) {
    case HG_KIND_F32: b.p = hg_array_load_f32(a, &b.owned); break;
    case HG_KIND_F64: b.p = hg_array_load_f64(a, &b.owned); break;
    case HG_KIND_U64:
        /* uint64 data is its own buffer; anything else converts through int64 (the same bits) */
        if (a->dtype == HG_DTYPE_UINT64) {
            b.p = a->data;
            break;
        }
        b.p = hg_array_load_i64(a, &b.owned);
        break;
    default: b.p = hg_array_load_i64(a, &b.owned); break;
    }
    return b;
}

HgKBuf
hg_kbuf_out(HgArray *out, HgKind k)
{
    if (hg_kind_stores(k, out->dtype))
        return (HgKBuf){out->data, FALSE};
    return (HgKBuf){g_try_malloc0((gsize)out->numel * hg_kind_size(k) + 8), TRUE};
}

HgKBuf
hg_kbuf_reuse(HgKBuf *xb, HgArray *y, HgKind k)
{
    if (!xb->owned)
        return hg_kbuf_out(y, k);
    HgKBuf b = *xb;
    xb->owned = FALSE;
    return b;
}

/* d as a float rounded to odd: truncated toward zero, its last bit set when inexact. Rounding that
 * float to FP16 or BF16 (13 and 16 fewer bits) gives the correctly rounded result of d: one rounding,
 * where a round-to-nearest float in between could round twice. */
static float
f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || (double)f == d)
        return f;
    if (fabs((double)f) > fabs(d))
        f = nextafterf(f, 0.0f);
    guint32 u;
    memcpy(&u, &f, sizeof u);
    u |= 1;
    memcpy(&f, &u, sizeof u);
    return f;
}

void
hg_store_f64_once(HgArray *out, const double *src)
{
    if (out->dtype == HG_DTYPE_FLOAT16 || out->dtype == HG_DTYPE_BFLOAT16) {
        guint16 *d = out->data;
        gboolean half = out->dtype == HG_DTYPE_FLOAT16;
        for (gint64 i = 0; i < out->numel; i++) {
            float f = f64_to_f32_odd(src[i]);
            d[i] = half ? hg_float_to_half(f) : hg_float_to_bf16(f);
        }
        return;
    }
    hg_array_store_f64(out, src);
}

void
hg_kbuf_store(HgArray *out, HgKBuf *b, HgKind k)
{
    if (b->p != out->data) {
        switch (k) {
        case HG_KIND_F32: hg_array_store_f32(out, b->p); break;
        case HG_KIND_F64: hg_store_f64_once(out, b->p); break;
        default: hg_array_store_i64(out, b->p); break;
        }
    }
    hg_kbuf_clear(b);
}

/* ---------------------------------------------------------------- kernels' checks */

gboolean
hg_eval_need(HgEvalCtx *ctx, guint n)
{
    for (guint i = 0; i < n; i++) {
        if (i >= ctx->n_inputs || !ctx->inputs[i]) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input %u is missing", i);
            return FALSE;
        }
    }
    if (ctx->n_outputs < 1) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "the node has no output");
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_eval_wants(const HgEvalCtx *ctx, guint i)
{
    if (i >= ctx->n_outputs)
        return FALSE;
    return !ctx->node || (i < ctx->node->n_outputs && ctx->node->outputs[i]);
}

gboolean
hg_eval_unsupported(HgEvalCtx *ctx, int dtype)
{
    const char *name = hg_dtype_name(dtype);
    hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                name ? name : "?");
    return FALSE;
}

gboolean
hg_eval_oom(HgEvalCtx *ctx)
{
    hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "out of memory");
    return FALSE;
}

/* ---------------------------------------------------------------- shape rules' helpers */

HgSymDim
hg_dim_known(gint64 v)
{
    HgSymDim d = {v, NULL};
    return d;
}

HgSymDim
hg_dim_unknown(void)
{
    HgSymDim d = {-1, NULL};
    return d;
}

HgSymDim
hg_dim_min(HgSymDim d, gint64 cap)
{
    if (d.v >= 0)
        return hg_dim_known(MIN(d.v, cap));
    if (!d.sym || cap < 1)
        return hg_dim_unknown();
    const char *base = d.sym;
    gint64 c0;
    if (hg_sym_min_parts(d.sym, &base, &c0) && c0 <= cap)
        return d;
    g_autofree char *name = g_strdup_printf("min(%s,%" G_GINT64_FORMAT ")", base, cap);
    return (HgSymDim){-1, g_intern_string(name)};
}

gboolean
hg_sym_min_parts(const char *sym, const char **base, gint64 *cap)
{
    gsize len = sym ? strlen(sym) : 0;
    if (len < 7 || strncmp(sym, "min(", 4) != 0 || sym[len - 1] != ')')
        return FALSE;
    const char *comma = strrchr(sym, ',');
    if (!comma || comma < sym + 5)
        return FALSE;
    char *end;
    gint64 c = g_ascii_strtoll(comma + 1, &end, 10);
    if (end != sym + len - 1 || end == comma + 1 || c < 1)
        return FALSE;
    g_autofree char *b = g_strndup(sym + 4, (gsize)(comma - sym - 4));
    *base = g_intern_string(b);
    *cap = c;
    return TRUE;
}

const char *
hg_sym_from_model(const char *param)
{
    if (!param)
        return NULL;
    if (!g_ascii_isdigit(param[0]) && !strpbrk(param, "*(),\""))
        return g_intern_string(param);
    g_autoptr(GString) s = g_string_new("\"");
    for (const char *q = param; *q; q++) {
        if (*q == '"')
            g_string_append_c(s, '"');
        g_string_append_c(s, *q);
    }
    g_string_append_c(s, '"');
    return g_intern_string(s->str);
}

char *
hg_sym_model_name(const char *sym)
{
    gsize len = sym ? strlen(sym) : 0;
    if (len < 2 || sym[0] != '"' || sym[len - 1] != '"')
        return g_strdup(sym);
    GString *s = g_string_new(NULL);
    for (gsize i = 1; i + 1 < len; i++) {
        g_string_append_c(s, sym[i]);
        if (sym[i] == '"' && sym[i + 1] == '"')
            i++;
    }
    return g_string_free(s, FALSE);
}

gboolean
hg_sym_factors(const char *sym, gint64 *coef, const char **names, int *n)
{
    *coef = 1;
    *n = 0;
    if (!sym)
        return FALSE;
    const char *start = sym;
    int depth = 0;
    gboolean quoted = FALSE; /* a model's own name (hg_sym_from_model): one factor, whatever it holds */
    for (const char *q = sym;; q++) {
        if (*q == '"')
            quoted = !quoted;
        else if (*q == '(' && !quoted)
            depth++;
        else if (*q == ')' && !quoted)
            depth--;
        if (*q && (*q != '*' || depth > 0 || quoted))
            continue;
        gsize len = (gsize)(q - start);
        g_autofree char *f = g_strndup(start, len);
        char *end;
        gint64 c = len && g_ascii_isdigit(f[0]) ? g_ascii_strtoll(f, &end, 10) : 0;
        if (len && g_ascii_isdigit(f[0]) && !*end && c > 0) {
            if (*coef > G_MAXINT64 / c)
                return FALSE;
            *coef *= c;
        } else if (len && *n < HG_SYM_MAX_FACTORS) {
            names[(*n)++] = g_intern_string(f);
        } else {
            return FALSE;
        }
        if (!*q)
            break;
        start = q + 1;
    }
    return TRUE;
}

static int
cmp_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *
hg_sym_product(gint64 coef, const char **names, int n)
{
    if (n <= 0 || n > HG_SYM_MAX_FACTORS || coef < 1)
        return NULL;
    if (n == 1 && coef == 1)
        return names[0];
    const char *sorted[HG_SYM_MAX_FACTORS];
    memcpy(sorted, names, sizeof(*names) * (gsize)n);
    qsort(sorted, (gsize)n, sizeof(*sorted), cmp_names);
    g_autoptr(GString) s = g_string_new(NULL);
    if (coef != 1)
        g_string_append_printf(s, "%" G_GINT64_FORMAT, coef);
    for (int i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", s->len ? "*" : "", sorted[i]);
    return g_intern_string(s->str);
}

HgSymDim
hg_dim_mul(HgSymDim a, HgSymDim b)
{
    if (a.v == 0 || b.v == 0)
        return hg_dim_known(0);
    if (a.v >= 0 && b.v >= 0)
        return a.v <= G_MAXINT64 / MAX(b.v, 1) ? hg_dim_known(a.v * b.v) : hg_dim_unknown();
    if (a.v == 1)
        return b;
    if (b.v == 1)
        return a;
    const char *names[2 * HG_SYM_MAX_FACTORS];
    gint64 ca = 1, cb = 1;
    int na = 0, nb = 0;
    if ((a.v < 0 && !hg_sym_factors(a.sym, &ca, names, &na)) ||
        (b.v < 0 && !hg_sym_factors(b.sym, &cb, names + na, &nb)))
        return hg_dim_unknown();
    if (a.v >= 0)
        ca = a.v;
    if (b.v >= 0)
        cb = b.v;
    if (na + nb > HG_SYM_MAX_FACTORS || ca > G_MAXINT64 / cb)
        return hg_dim_unknown();
    return (HgSymDim){-1, hg_sym_product(ca * cb, names, na + nb)};
}

gboolean
hg_sym_factors_take(const char **from, int *n, const char *const *take, int k)
{
    for (int q = 0; q < k; q++) {
        int hit = -1;
        for (int t = 0; t < *n && hit < 0; t++)
            if (from[t] == take[q])
                hit = t;
        if (hit < 0)
            return FALSE;
        from[hit] = from[--*n];
    }
    return TRUE;
}

const char *
hg_sym_broadcast(const char *a, const char *b)
{
    if (!a || !b)
        return NULL;
    if (a == b)
        return a;
    const char *base;
    gint64 cap;
    if (hg_sym_min_parts(a, &base, &cap) && base == b)
        return b;
    if (hg_sym_min_parts(b, &base, &cap) && base == a)
        return a;
    return NULL;
}

void
hg_vshape_set(HgValueShape *o, int dtype, int rank, const HgSymDim *dims)
{
    if (!o)
        return;
    o->dtype = dtype;
    o->rank = rank;
    for (int i = 0; i < rank; i++)
        o->dims[i] = dims[i];
}

/* ---------------------------------------------------------------- interval rules' helpers */

const HgRange *
hg_range_input(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

/* ---------------------------------------------------------------- constant folding */

gboolean
hg_eval_constants(const HgNode *node, gint64 opset, HgEvalFunc eval, guint n_inputs,
                  HgArray *const *inputs, guint n_outputs, HgArray **outputs, GError **error)
{
    for (guint k = 0; k < n_outputs; k++)
        outputs[k] = NULL;
    /* Kernels read their inputs through typed pointers; a constant viewed in a mapped file may sit at
     * an odd offset (protobuf lays raw_data out unaligned), so such an input runs from an aligned
     * copy (hg_array_aligned). */
    g_autofree HgArray **copies = g_new0(HgArray *, n_inputs + 1);
    g_autofree HgArray **use = g_new0(HgArray *, n_inputs + 1);
    for (guint k = 0; k < n_inputs; k++)
        use[k] = inputs[k] ? (HgArray *)hg_array_aligned(inputs[k], &copies[k]) : NULL;
    HgEvalCtx ctx = {node, opset, n_inputs, use, n_outputs, outputs, 1, error};
    gboolean ok = eval(&ctx);
    for (guint k = 0; k < n_inputs; k++)
        g_clear_pointer(&copies[k], hg_array_unref);
    if (ok)
        return TRUE;
    for (guint k = 0; k < n_outputs; k++)
        g_clear_pointer(&outputs[k], hg_array_unref);
    return FALSE;
}

gboolean
hg_fold(HgShapeCtx *ctx, HgEvalFunc eval, HgFoldFlags flags)
{
    if (!ctx->n_outputs)
        return TRUE;
    if (!eval) {
        const HgOpDef *op = ctx->node ? hg_op_for_node(ctx->node) : NULL;
        if (!op || !op->eval)
            return TRUE;
        eval = op->eval;
    }
    for (guint i = 0; i < ctx->n_inputs; i++) {
        const HgValueShape *s = ctx->inputs[i];
        if (s && (!s->value || ((flags & HG_FOLD_SMALL_INPUTS) && s->value->numel > HG_FOLD_MAX_INPUT)))
            return TRUE;
    }
    for (guint k = 0; k < ctx->n_outputs; k++) {
        const HgValueShape *o = ctx->outputs[k];
        if (!o)
            continue;
        gint64 n = hg_vshape_numel(o);
        if (n < 0 || n > HG_FOLD_MAX_OUTPUT)
            return TRUE;
    }
    g_autofree HgArray **ins = g_new0(HgArray *, ctx->n_inputs + 1);
    g_autofree HgArray **outs = g_new0(HgArray *, ctx->n_outputs + 1);
    for (guint i = 0; i < ctx->n_inputs; i++)
        ins[i] = ctx->inputs[i] ? ctx->inputs[i]->value : NULL;
    GError *err = NULL;
    if (!hg_eval_constants(ctx->node, ctx->opset, eval, ctx->n_inputs, ins, ctx->n_outputs, outs, &err)) {
        if ((flags & HG_FOLD_STRICT) && err && err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_clear_error(&err);
        return TRUE;
    }
    for (guint k = 0; k < ctx->n_outputs; k++) {
        HgValueShape *o = ctx->outputs[k];
        HgArray *a = outs[k];
        if (!a)
            continue;
        if (!o || (int)a->rank != o->rank || (o->dtype != a->dtype && o->dtype != HG_DTYPE_UNDEFINED)) {
            hg_array_unref(a);
            continue;
        }
        o->dtype = a->dtype;
        for (guint i = 0; i < a->rank; i++)
            o->dims[i].v = a->dims[i];
        if (o->value)
            hg_array_unref(o->value);
        o->value = a;
    }
    return TRUE;
}
