/* The shape family: shape arithmetic (Shape, Size, Constant, ConstantOfShape, EyeLike, Range) and the
 * views (Reshape, Flatten, Squeeze, Unsqueeze), with their interval rules.
 *
 * Shared with the other tensor families through tensor.h (plans over symbolic shapes, movers). */
#include "ops/tensor.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

/* ================================================================ Shape, Size */

/* The [start, end) dims that Shape reports: opset 15 attributes, negative from the end, clamped. */
static void
shape_range(const HgNode *n, gint64 rank, gint64 *start, gint64 *end)
{
    gint64 s = hg_node_attr_int(n, "start", 0), e = hg_node_attr_int(n, "end", rank);
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = CLAMP(s, 0, rank);
    e = CLAMP(e, 0, rank);
    *start = s;
    *end = MAX(e, s);
}

gboolean
hg_infer_Shape(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!o)
        return TRUE;
    if (x.rank < 0) {
        hg_sym_unknown_dims(&y, 1);
        hg_vshape_set_sym(o, HG_DTYPE_INT64, &y);
        return TRUE;
    }
    gint64 s, e, vals[HG_MAX_RANK];
    shape_range(ctx->node, x.rank, &s, &e);
    y.rank = 1;
    y.d[0] = hg_dim_known(e - s);
    hg_vshape_set_sym(o, HG_DTYPE_INT64, &y);
    for (gint64 i = s; i < e; i++) {
        if (x.d[i].v < 0)
            return TRUE;
        vals[i - s] = x.d[i].v;
    }
    gint64 n = e - s;
    o->value = hg_i64_array(1, &n, vals);
    return TRUE;
}

gboolean
hg_eval_Shape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    gint64 s, e;
    shape_range(ctx->node, x->rank, &s, &e);
    gint64 n = e - s;
    ctx->outputs[0] = hg_i64_array(1, &n, x->dims + s);
    return TRUE;
}

gboolean
hg_infer_Size(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    HgSymShape x, y = {0};
    hg_arg_shape(&a, 0, &x);
    if (!o)
        return TRUE;
    hg_vshape_set_sym(o, HG_DTYPE_INT64, &y);
    HgSymDim n = x.rank >= 0 ? hg_sym_prod(&x, 0, x.rank) : hg_dim_unknown();
    if (n.v >= 0)
        o->value = hg_i64_array(0, NULL, &n.v);
    return TRUE;
}

gboolean
hg_eval_Size(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    ctx->outputs[0] = hg_i64_array(0, NULL, &ctx->inputs[0]->numel);
    return TRUE;
}

/* ================================================================ Constant */

/* The constant a Constant node holds, from whichever value* attribute it has. NULL with an error when
 * it has none, or only sparse_value (not supported). */
static HgArray *
constant_value(const HgArgs *a)
{
    const HgNode *n = a->node;
    HgAttr *at;
    GError *err = NULL;
    HgArray *v = NULL;
    if ((at = hg_node_attr(n, "value")) && at->t) {
        v = hg_array_from_tensor(at->t, &err);
        if (!v) {
            hg_arg_fail(a, err->code, "%s", err->message);
            g_error_free(err);
        }
        return v;
    }
    if ((at = hg_node_attr(n, "value_float"))) {
        float f = at->f;
        v = hg_array_new(HG_DTYPE_FLOAT, 0, NULL, NULL);
        memcpy(v->data, &f, sizeof(f));
        return v;
    }
    if ((at = hg_node_attr(n, "value_int"))) {
        return hg_i64_array(0, NULL, &at->i);
    }
    if ((at = hg_node_attr(n, "value_floats"))) {
        gint64 len = at->floats ? at->floats->len : 0;
        v = hg_array_new(HG_DTYPE_FLOAT, 1, &len, NULL);
        if (len)
            memcpy(v->data, at->floats->data, sizeof(float) * (gsize)len);
        return v;
    }
    if ((at = hg_node_attr(n, "value_ints"))) {
        gint64 len = at->ints ? at->ints->len : 0;
        v = hg_array_new(HG_DTYPE_INT64, 1, &len, NULL);
        if (len)
            memcpy(v->data, at->ints->data, sizeof(gint64) * (gsize)len);
        return v;
    }
    if ((at = hg_node_attr(n, "value_string"))) {
        v = hg_array_new(HG_DTYPE_STRING, 0, NULL, NULL);
        if (at->s) {
            g_bytes_unref(v->strings->pdata[0]);
            v->strings->pdata[0] = g_bytes_ref(at->s);
        }
        return v;
    }
    if ((at = hg_node_attr(n, "value_strings"))) {
        gint64 len = at->strings ? at->strings->len : 0;
        v = hg_array_new(HG_DTYPE_STRING, 1, &len, NULL);
        for (gint64 i = 0; i < len; i++) {
            g_bytes_unref(v->strings->pdata[i]);
            v->strings->pdata[i] = g_bytes_ref(at->strings->pdata[i]);
        }
        return v;
    }
    if (hg_node_attr(n, "sparse_value")) {
        UNSUPPORTED(a, "sparse_value constants are not supported");
        return NULL;
    }
    INVALID(a, "no value attribute");
    return NULL;
}

gboolean
hg_infer_Constant(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    GError *err = NULL;
    a.error = &err;
    HgArray *v = constant_value(&a);
    if (!v) {
        if (err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_error_free(err);
        return TRUE;
    }
    if (!o) {
        hg_array_unref(v);
        return TRUE;
    }
    HgSymShape s;
    hg_sym_from_dims(&s, v->rank, v->dims);
    hg_vshape_set_sym(o, v->dtype, &s);
    /* A view of the attribute's tensor: keeping it costs nothing, whatever its size. */
    if (o->value)
        hg_array_unref(o->value);
    o->value = v;
    return TRUE;
}

gboolean
hg_eval_Constant(HgEvalCtx *ctx)
{
    HgArgs a = hg_args_eval(ctx);
    HgArray *v = constant_value(&a);
    if (!v)
        return FALSE;
    ctx->outputs[0] = v;
    return TRUE;
}

/* ================================================================ ConstantOfShape */

/* The fill value: the 'value' attribute (a one-element tensor), float 0 by default. */
static HgArray *
cos_value(const HgArgs *a)
{
    HgAttr *at = hg_node_attr(a->node, "value");
    if (!at || !at->t)
        return hg_array_new(HG_DTYPE_FLOAT, 0, NULL, NULL);
    GError *err = NULL;
    HgArray *v = hg_array_from_tensor(at->t, &err);
    if (!v) {
        hg_arg_fail(a, err->code, "%s", err->message);
        g_error_free(err);
        return NULL;
    }
    if (v->numel != 1 || v->strings) {
        hg_array_unref(v);
        INVALID(a, "value must hold one number");
        return NULL;
    }
    return v;
}

/* The output dims from the shape input: 1 known, 0 unknown (rank filled when the input's length is
 * known), -1 error. */
static int
cos_plan(const HgArgs *a, HgSymShape *out)
{
    g_autofree gint64 *dims = NULL;
    guint n;
    out->rank = -1;
    HgPState ps = hg_arg_ints(a, 0, NULL, &dims, &n);
    if (ps != P_KNOWN) {
        HgSymShape s;
        guint32 known;
        const char *syms[HG_MAX_RANK] = {NULL};
        hg_arg_shape(a, 0, &s);
        if (s.rank == 1 && s.d[0].v >= 0 && s.d[0].v <= HG_MAX_RANK)
            hg_sym_unknown_dims(out, (int)s.d[0].v);
        if (hg_arg_ints_partial(a, 0, &dims, &n, &known, syms)) {
            /* the entries known in part: by value, or by a symbolic dim's name */
            out->rank = (int)n;
            for (guint i = 0; i < n; i++)
                out->d[i] = known >> i & 1 ? hg_dim_known(dims[i] < 0 ? -1 : dims[i]) : (HgSymDim){-1, syms[i]};
        }
        return 0;
    }
    if (n > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", n, HG_MAX_RANK);
        return -1;
    }
    for (guint i = 0; i < n; i++) {
        if (dims[i] < 0) {
            INVALID(a, "negative dim %" G_GINT64_FORMAT, dims[i]);
            return -1;
        }
    }
    hg_sym_from_dims(out, n, dims);
    return 1;
}

gboolean
hg_infer_ConstantOfShape(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    GError *err = NULL;
    a.error = &err;
    g_autoptr(HgArray) v = cos_value(&a);
    HgSymShape y;
    int st = v ? cos_plan(&a, &y) : -1;
    if (st < 0) {
        if (err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_error_free(err);
        return TRUE;
    }
    hg_vshape_set_sym(hg_shape_output(ctx, 0), v->dtype, &y);
    return st > 0 ? hg_fold(ctx, hg_eval_ConstantOfShape, HG_FOLD_STRICT) : TRUE;
}

#define FILL(T)                                                                                    \
    do {                                                                                           \
        T *d_ = (T *)out->data, v_;                                                                \
        memcpy(&v_, v->data, sizeof(T));                                                           \
        for (gint64 i_ = 0; i_ < out->numel; i_++)                                                 \
            d_[i_] = v_;                                                                           \
    } while (0)

gboolean
hg_eval_ConstantOfShape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    g_autoptr(HgArray) v = cos_value(&a);
    HgSymShape y;
    int st = v ? cos_plan(&a, &y) : -1;
    if (st == 0)
        return INVALID(&a, "the shape input is not readable");
    if (st < 0)
        return FALSE;
    gint64 dims[HG_MAX_RANK];
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, v->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    HG_WIDTH_SWITCH(hg_mover_size(v->dtype), FILL);
    ctx->outputs[0] = out;
    return TRUE;
}

/* ================================================================ EyeLike */

/* The output's element type: the dtype attribute, else the input's (HG_DTYPE_UNDEFINED when neither
 * is known). */
static int
eyelike_dtype(const HgNode *n, int input_dtype)
{
    return (int)hg_node_attr_int(n, "dtype", input_dtype);
}

/* The input's shape and element type alone matter: the output has its dims, ones where j - i = k and
 * zeros elsewhere. */
gboolean
hg_infer_EyeLike(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x;
    hg_arg_shape(&a, 0, &x);
    if (x.rank >= 0 && x.rank != 2)
        return INVALID(&a, "input has rank %d, needs 2", x.rank);
    hg_vshape_set_sym(hg_shape_output(ctx, 0), eyelike_dtype(ctx->node, hg_arg_dtype(&a, 0)), &x);
    return TRUE;
}

gboolean
hg_eval_EyeLike(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    if (x->rank != 2)
        return INVALID(&a, "input has rank %u, needs 2", x->rank);
    int dt = eyelike_dtype(ctx->node, x->dtype);
    if (hg_dtype_compute(dt) == HG_COMPUTE_NONE)
        return hg_eval_unsupported(ctx, dt);
    gint64 k = hg_node_attr_int(ctx->node, "k", 0), rows = x->dims[0], cols = x->dims[1];
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, dt, 2, x->dims);
    if (!y)
        return FALSE;
    g_autofree double *v = g_new0(double, MAX(y->numel, 1));
    /* row i holds its one at column i + k, where that lies inside [0, cols) */
    for (gint64 i = MAX(0, -k); i < rows && i + k < cols; i++)
        v[i * cols + i + k] = 1;
    hg_array_store_f64(y, v);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

/* ================================================================ Range */

/* Elements Range produces: max(ceil((limit - start) / delta), 0), exact for integers. */
static gboolean
range_count(const HgArgs *a, const HgArray *start, const HgArray *limit, const HgArray *delta,
            gint64 *count)
{
    if (start->numel != 1 || limit->numel != 1 || delta->numel != 1)
        return INVALID(a, "start, limit and delta must be scalars");
    if (hg_dtype_compute(start->dtype) == HG_COMPUTE_I64) {
        gint64 s = hg_array_get_i64(start, 0), l = hg_array_get_i64(limit, 0);
        gint64 d = hg_array_get_i64(delta, 0);
        if (d == 0)
            return INVALID(a, "delta is 0");
        /* unsigned differences: limit - start may not fit in int64 */
        if (d > 0)
            *count = l > s ? (gint64)(((guint64)l - (guint64)s - 1) / (guint64)d + 1) : 0;
        else
            *count = s > l ? (gint64)(((guint64)s - (guint64)l - 1) / (0 - (guint64)d) + 1) : 0;
        return TRUE;
    }
    double s = hg_array_get_f64(start, 0), l = hg_array_get_f64(limit, 0);
    double d = hg_array_get_f64(delta, 0);
    double c = ceil((l - s) / d);
    if (d == 0 || !isfinite(c))
        return INVALID(a, "start, limit and delta give no finite count");
    *count = c > 0 ? (c < 9e18 ? (gint64)c : G_MAXINT64) : 0;
    return TRUE;
}

gboolean
hg_infer_Range(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape y;
    const HgArray *s = hg_arg_value(&a, 0), *l = hg_arg_value(&a, 1), *d = hg_arg_value(&a, 2);
    hg_sym_unknown_dims(&y, 1);
    if (s && l && d) {
        gint64 n;
        if (!range_count(&a, s, l, d, &n))
            return FALSE;
        y.d[0] = hg_dim_known(n);
    } else if (s && d && !l && s->numel == 1 && d->numel == 1 && hg_dtype_compute(s->dtype) == HG_COMPUTE_I64 &&
               hg_array_get_i64(s, 0) == 0 && hg_array_get_i64(d, 0) == 1) {
        /* Range(0, S, 1) over integers, S a dim known by name: S elements */
        const HgValueShape *ls = hg_shape_input(ctx, 1);
        if (ls && ls->part.n == 1 && !(ls->part.known & 1) && ls->part.sym[0])
            y.d[0] = (HgSymDim){-1, ls->part.sym[0]};
    }
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Range, HG_FOLD_STRICT);
}

gboolean
hg_eval_Range(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *s = ctx->inputs[0], *l = ctx->inputs[1], *d = ctx->inputs[2];
    gint64 n;
    if (!range_count(&a, s, l, d, &n))
        return FALSE;
    HgArray *out = hg_mover_new(&a, s->dtype, 1, &n);
    if (!out)
        return FALSE;
    switch (hg_dtype_compute(s->dtype)) {
    case HG_COMPUTE_I64: {
        g_autofree gint64 *v = g_try_new(gint64, n + 1);
        if (!v) {
            hg_mover_drop(out);
            return INVALID(&a, "out of memory for %" G_GINT64_FORMAT " elements", n);
        }
        guint64 s0 = (guint64)hg_array_get_i64(s, 0), d0 = (guint64)hg_array_get_i64(d, 0);
        for (gint64 i = 0; i < n; i++) /* wraps like the narrow type would, without overflow UB */
            v[i] = (gint64)(s0 + (guint64)i * d0);
        hg_array_store_i64(out, v);
        break;
    }
    case HG_COMPUTE_F32:
    case HG_COMPUTE_F64: {
        g_autofree double *v = g_try_new(double, n + 1);
        if (!v) {
            hg_mover_drop(out);
            return INVALID(&a, "out of memory for %" G_GINT64_FORMAT " elements", n);
        }
        double s0 = hg_array_get_f64(s, 0), d0 = hg_array_get_f64(d, 0);
        for (gint64 i = 0; i < n; i++)
            v[i] = s0 + (double)i * d0;
        hg_array_store_f64(out, v);
        break;
    }
    default:
        hg_mover_drop(out);
        return UNSUPPORTED(&a, "Range of %s", hg_dtype_name(s->dtype));
    }
    ctx->outputs[0] = out;
    return TRUE;
}

/* ================================================================ views: Reshape, Flatten, Squeeze,
 * Unsqueeze. The output shares the input's data (hg_array_reshape_view). */

static HgArray *
view_output(const HgArgs *a, HgArray *x, const HgSymShape *y)
{
    gint64 dims[HG_MAX_RANK];
    hg_sym_dims(y, dims);
    GError *err = NULL;
    HgArray *v = hg_array_reshape_view(x, (guint)y->rank, dims, &err);
    if (!v) {
        hg_arg_fail(a, HG_ERROR_INVALID, "%s", err->message);
        g_error_free(err);
    }
    return v;
}

static gboolean
mul_ok(gint64 *p, gint64 v)
{
    if (v && *p > G_MAXINT64 / v)
        return FALSE;
    *p *= v;
    return TRUE;
}

/* The factors of dims d[0..n) but the skipped ones: the product of the known dims in *coef, the
 * names of the symbolic ones (products split, hg_sym_factors) in names; FALSE where a dim is unknown
 * without a name, or the products overflow. */
static gboolean
dims_factors(const HgSymDim *d, int n, const gboolean *skip, gint64 *coef, const char **names, int *k)
{
    *coef = 1;
    *k = 0;
    for (int i = 0; i < n; i++) {
        if (skip[i])
            continue;
        gint64 c = d[i].v;
        int m = 0;
        if (c < 0 && (!d[i].sym || !hg_sym_factors(d[i].sym, &c, names + *k, &m)))
            return FALSE;
        if (!mul_ok(coef, c))
            return FALSE;
        *k += m;
    }
    return TRUE;
}

/* Reshape's output: 0 copies the input dim (unless allowzero, opset 14), -1 takes what is left. The
 * -1 is found even with unknown input dims when those dims are the copied ones: [B, 12, 64] with
 * [0, -1] gives [B, 768]; or when the shape's entries that inference knows only by their symbolic
 * names (Shape(x)[0]: HgValueShape.part) account for the input's named dims: [B, 7, 768] with
 * [B, -1, 12, 64] gives [B, 7, 12, 64] (products of names below). */
static int
reshape_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y)
{
    g_autofree gint64 *req = NULL;
    guint n;
    guint32 known = ~0u;
    const char *syms[HG_MAX_RANK] = {NULL};
    y->rank = -1;
    HgPState ps = hg_arg_ints(a, 1, "shape", &req, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no shape input");
        return PLAN_ERR;
    }
    if (ps == P_UNKNOWN && !hg_arg_ints_partial(a, 1, &req, &n, &known, syms)) {
        hg_sym_rank_from_param(a, 1, 0, y);
        return PLAN_UNKNOWN;
    }
    if (n > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", n, HG_MAX_RANK);
        return PLAN_ERR;
    }
    gboolean allowzero = hg_node_attr_int(a->node, "allowzero", 0) != 0, has_zero = FALSE;
    gboolean copied[HG_MAX_RANK] = {FALSE};
    int neg = -1;
    y->rank = (int)n;
    for (guint i = 0; i < n; i++) {
        gint64 v = req[i];
        if (!(known >> i & 1)) {
            y->d[i].v = -1;
            y->d[i].sym = syms[i];
        } else if (v == 0 && !allowzero) {
            if (x->rank >= 0 && (int)i >= x->rank) {
                INVALID(a, "shape[%u] is 0 (copy) but the input has rank %d", i, x->rank);
                return PLAN_ERR;
            }
            y->d[i] = x->rank >= 0 ? x->d[i] : hg_dim_unknown();
            copied[i] = TRUE;
        } else if (v == -1) {
            if (neg >= 0) {
                INVALID(a, "shape has more than one -1");
                return PLAN_ERR;
            }
            neg = (int)i;
            y->d[i] = hg_dim_unknown();
        } else if (v < 0) {
            INVALID(a, "shape[%u] is %" G_GINT64_FORMAT, i, v);
            return PLAN_ERR;
        } else {
            has_zero |= v == 0;
            y->d[i] = hg_dim_known(v);
        }
    }
    if (allowzero && has_zero && neg >= 0) {
        INVALID(a, "allowzero with both 0 and -1 in shape");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
    /* Products over the dims that are not copied (the copied ones cancel), each a whole number times
     * the names of its symbolic dims (products split: hg_sym_factors). The output's names cancel
     * against the input's, and -1 is what the input leaves: [B, 7, 768] to [B, -1, 12, 64] gives 7,
     * [4*batch, S, S] to [batch, 4, S, -1] gives S, [batch, 4, S, K] to [4*batch, S, -1] gives K.
     * Where nothing symbolic is left, the element counts must agree. */
    gboolean skip_in[HG_MAX_RANK], skip_out[HG_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        skip_in[i] = i < (int)n && copied[i];
    for (guint i = 0; i < n; i++)
        skip_out[i] = (int)i == neg || copied[i];
    gint64 pin, pout;
    const char *fin[HG_MAX_RANK * HG_SYM_MAX_FACTORS], *fout[HG_MAX_RANK * HG_SYM_MAX_FACTORS];
    int kin, kout;
    if (!dims_factors(x->d, x->rank, skip_in, &pin, fin, &kin) ||
        !dims_factors(y->d, (int)n, skip_out, &pout, fout, &kout) || !hg_sym_factors_take(fin, &kin, fout, kout))
        return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
    if (kin > 0) {
        if (neg >= 0 && pout > 0 && pin % pout == 0)
            y->d[neg] = (HgSymDim){-1, hg_sym_product(pin / pout, fin, kin)};
    } else if (neg >= 0) {
        if (pout == 0) {
            if (pin != 0) {
                INVALID(a, "cannot infer -1 of a reshape to zero elements");
                return PLAN_ERR;
            }
            y->d[neg] = hg_dim_known(0);
        } else if (pin % pout) {
            INVALID(a, "cannot reshape %" G_GINT64_FORMAT " elements into a multiple of %" G_GINT64_FORMAT,
                    pin, pout);
            return PLAN_ERR;
        } else {
            y->d[neg] = hg_dim_known(pin / pout);
        }
    } else if (pin != pout) {
        INVALID(a, "cannot reshape %" G_GINT64_FORMAT " elements into %" G_GINT64_FORMAT, pin, pout);
        return PLAN_ERR;
    }
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Reshape(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (reshape_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Reshape, HG_FOLD_STRICT);
}

gboolean
hg_eval_Reshape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!hg_plan_done(&a, reshape_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

static gboolean
flatten_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y)
{
    gint64 axis = hg_node_attr_int(a->node, "axis", 1);
    hg_sym_unknown_dims(y, 2);
    if (x->rank < 0)
        return TRUE;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return INVALID(a, "axis %" G_GINT64_FORMAT " is out of range for rank %d",
                       hg_node_attr_int(a->node, "axis", 1), x->rank);
    y->d[0] = hg_sym_prod(x, 0, (int)axis);
    y->d[1] = hg_sym_prod(x, (int)axis, x->rank);
    return TRUE;
}

gboolean
hg_infer_Flatten(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!flatten_plan(&a, &x, &y))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Flatten, HG_FOLD_STRICT);
}

gboolean
hg_eval_Flatten(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!flatten_plan(&a, &x, &y))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* Squeeze: axes from the attribute (before 13) or input 1; without axes every dim of size 1 goes. */
static int
squeeze_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y)
{
    g_autofree gint64 *axes = NULL;
    guint n;
    y->rank = -1;
    HgPState ps = hg_arg_ints(a, 1, "axes", &axes, &n);
    if (ps == P_UNKNOWN) {
        HgSymShape s;
        hg_arg_shape(a, 1, &s);
        if (x->rank >= 0 && s.rank == 1 && s.d[0].v >= 0 && s.d[0].v <= x->rank)
            hg_sym_unknown_dims(y, x->rank - (int)s.d[0].v);
        return PLAN_UNKNOWN;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    gboolean drop[HG_MAX_RANK] = {FALSE};
    if (ps == P_ABSENT) {
        for (int i = 0; i < x->rank; i++) {
            if (x->d[i].v < 0)
                return PLAN_UNKNOWN;
            drop[i] = x->d[i].v == 1;
        }
    } else {
        if (!hg_arg_norm_axes(a, axes, n, (guint)x->rank))
            return PLAN_ERR;
        for (guint i = 0; i < n; i++) {
            gint64 d = x->d[axes[i]].v;
            if (d >= 0 && d != 1) {
                INVALID(a, "cannot squeeze axis %" G_GINT64_FORMAT " of size %" G_GINT64_FORMAT, axes[i], d);
                return PLAN_ERR;
            }
            drop[axes[i]] = TRUE;
        }
    }
    y->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            y->d[y->rank++] = x->d[i];
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Squeeze(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (squeeze_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Squeeze, HG_FOLD_STRICT);
}

gboolean
hg_eval_Squeeze(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!hg_plan_done(&a, squeeze_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* Unsqueeze: axes (attribute before 13, input from 13) name positions in the output. */
static int
unsqueeze_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y)
{
    g_autofree gint64 *axes = NULL;
    guint n;
    y->rank = -1;
    HgPState ps = hg_arg_ints(a, 1, "axes", &axes, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no axes");
        return PLAN_ERR;
    }
    if (ps == P_UNKNOWN) {
        if (x->rank >= 0)
            hg_sym_rank_from_param(a, 1, x->rank, y);
        return PLAN_UNKNOWN;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    guint r = (guint)x->rank + n;
    if (r > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", r, HG_MAX_RANK);
        return PLAN_ERR;
    }
    if (!hg_arg_norm_axes(a, axes, n, r))
        return PLAN_ERR;
    gboolean one[HG_MAX_RANK] = {FALSE};
    for (guint i = 0; i < n; i++)
        one[axes[i]] = TRUE;
    y->rank = (int)r;
    for (guint i = 0, k = 0; i < r; i++)
        y->d[i] = one[i] ? hg_dim_known(1) : x->d[k++];
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Unsqueeze(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (unsqueeze_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Unsqueeze, HG_FOLD_STRICT);
}

gboolean
hg_eval_Unsqueeze(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (!hg_plan_done(&a, unsqueeze_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* ---------------------------------------------------------------- interval rules */

void
hg_range_Constant(HgRangeCtx *ctx)
{
    HgArgs a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    HgArray *v = constant_value(&a);
    if (!v)
        return;
    if (ctx->n_outputs)
        *ctx->outputs[0] = hg_range_of_array(v);
    hg_array_unref(v);
}

/* EyeLike holds zeros and ones; only zeros where the diagonal misses the matrix (k >= cols or
 * -k >= rows, dims known). */
void
hg_range_EyeLike(HgRangeCtx *ctx)
{
    if (!ctx->n_outputs)
        return;
    const HgValueShape *xs = ctx->n_inputs ? ctx->shapes[0] : NULL;
    gint64 k = hg_node_attr_int(ctx->node, "k", 0);
    gint64 rows = xs && xs->rank == 2 ? xs->dims[0].v : -1;
    gint64 cols = xs && xs->rank == 2 ? xs->dims[1].v : -1;
    gboolean misses = (cols >= 0 && k >= cols) || (rows >= 0 && -k >= rows);
    *ctx->outputs[0] = misses ? hg_range_exact(0, 0) : (HgRange){0, 1, 1, FALSE};
}

void
hg_range_ConstantOfShape(HgRangeCtx *ctx)
{
    HgArgs a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    HgArray *v = cos_value(&a);
    if (!v)
        return;
    if (ctx->n_outputs)
        *ctx->outputs[0] = hg_range_of_array(v);
    hg_array_unref(v);
}

void
hg_range_Flatten(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

/* Range's elements lie between start and limit: [start, limit) counting up, (limit, start] down. */
void
hg_range_Range(HgRangeCtx *ctx)
{
    const HgRange *s = hg_range_input(ctx, 0), *l = hg_range_input(ctx, 1), *d = hg_range_input(ctx, 2);
    if (!s || !l || !d || !ctx->n_outputs)
        return;
    HgRange r = hg_range_union(*s, *l);
    /* a count rounded up by floating point can add one element a rounding error past limit */
    double slack = (MAX(fabs(r.lo), fabs(r.hi)) + MAX(fabs(d->lo), fabs(d->hi))) * 1e-6;
    r.lo -= slack;
    r.hi += slack;
    r.tiny = 0;
    r.nan = s->nan || l->nan || d->nan;
    *ctx->outputs[0] = r;
}

void
hg_range_Reshape(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

/* Shape's elements are dims (a slice of them from opset 15): each within the largest known dim. */
void
hg_range_Shape(HgRangeCtx *ctx)
{
    const HgValueShape *x = ctx->n_inputs ? ctx->shapes[0] : NULL;
    HgRange r = hg_range_exact(0, INFINITY);
    r.tiny = 1;
    if (x && x->rank >= 0) {
        double m = 0;
        for (int i = 0; i < x->rank; i++)
            m = x->dims[i].v < 0 ? INFINITY : MAX(m, (double)x->dims[i].v);
        r.hi = m;
    }
    if (ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_Size(HgRangeCtx *ctx)
{
    const HgValueShape *x = ctx->n_inputs ? ctx->shapes[0] : NULL;
    HgRange r = hg_range_exact(0, INFINITY);
    r.tiny = 1;
    if (x && x->rank >= 0) {
        double n = 1;
        for (int i = 0; i < x->rank; i++)
            n *= x->dims[i].v < 0 ? INFINITY : (double)x->dims[i].v;
        r.hi = isnan(n) ? INFINITY : n;
    }
    if (ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_Squeeze(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_Unsqueeze(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}
