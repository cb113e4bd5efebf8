/* The interval rules of the elementwise family (elementwise.c has its shape rules and kernels).
 *
 * Each rule computes the exact real range of its op over the input ranges (hg_range_* interval
 * arithmetic), then hg_range_fit applies what storing into the output's element type does (FP32 and
 * FP16 overflow to inf, integer wrap). Where a kernel's float expression rounds an intermediate that
 * is larger than its result (alpha * x + beta), the rule pads by that intermediate's rounding. */
#include "ops/elementwise.h"
#include "ir_private.h"

#include <float.h>
#include <string.h>
#include <tgmath.h>

/* Input i's range; unbounded when the input is omitted. */
static HgRange
in_range(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->inputs[i] ? *ctx->inputs[i] : hg_range_any();
}

/* The element type of output k (else of input 0, whose type most rules keep). */
static int
out_dtype(const HgRangeCtx *ctx, guint k)
{
    if (k < ctx->n_outputs && ctx->out_shapes[k] && ctx->out_shapes[k]->dtype != HG_DTYPE_UNDEFINED)
        return ctx->out_shapes[k]->dtype;
    return HG_DTYPE_UNDEFINED;
}

static int
in_dtype(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs && ctx->shapes[i] ? ctx->shapes[i]->dtype : HG_DTYPE_UNDEFINED;
}

/* Set output k to r as its element type stores it. */
static void
set_out(HgRangeCtx *ctx, guint k, HgRange r)
{
    if (k < ctx->n_outputs && ctx->outputs[k])
        *ctx->outputs[k] = hg_range_fit(r, out_dtype(ctx, k));
}

static gboolean
out_is_float(const HgRangeCtx *ctx, guint k)
{
    return hg_dtype_is_float(out_dtype(ctx, k));
}

/* Widen finite bounds by abs (absolute slack, for intermediate rounding). */
static HgRange
pad(HgRange r, double abs)
{
    if (isfinite(r.lo))
        r.lo -= abs;
    if (isfinite(r.hi))
        r.hi += abs;
    return r;
}

static HgRange
point(double v)
{
    HgRange r = {v, v, fabs(v), isnan(v)};
    if (isnan(v))
        r.lo = r.hi = 0;
    return r;
}

/* A float attribute as the kernel reads it (float, widened to double). */
static double
attr_f(const HgRangeCtx *ctx, const char *name, double dflt)
{
    return ctx->node ? (double)hg_node_attr_float(ctx->node, name, (float)dflt) : dflt;
}

static double
max_abs(const HgRange *r)
{
    return MAX(fabs(r->lo), fabs(r->hi));
}

/* A bool result: [0, 1], narrowed to a constant where known. */
static void
set_bool(HgRangeCtx *ctx, gboolean can_false, gboolean can_true)
{
    HgRange r = {can_false ? 0 : 1, can_true ? 1 : 0, 1, FALSE};
    if (!can_false && !can_true)
        r.lo = 0, r.hi = 1;
    set_out(ctx, 0, r);
}

/* Apply a double function to a range through hg_range_monotone, libm's double version (tgmath's macros
 * are function-like, so the parenthesised names are the functions themselves). */
static double f_exp(double x) { return (exp)(x); }
static double f_log(double x) { return (log)(x); }
static double f_sqrt(double x) { return (sqrt)(x); }
static double f_tanh(double x) { return (tanh)(x); }
static double f_erf(double x) { return (erf)(x); }
static double f_floor(double x) { return (floor)(x); }
static double f_ceil(double x) { return (ceil)(x); }
static double f_round(double x) { return (nearbyint)(x); }
static double f_expm1(double x) { return (expm1)(x); }
static double f_sigmoid(double x) { return 1 / (1 + (exp)(-x)); }
static double f_softplus(double x) { return (x > 0 ? x : 0) + (log1p)((exp)(-(fabs)(x))); }
static double f_softsign(double x) { return isinf(x) ? (x > 0 ? 1 : -1) : x / (1 + (fabs)(x)); }

/* ---- identity-like */

void
hg_range_Identity(HgRangeCtx *ctx)
{
    set_out(ctx, 0, in_range(ctx, 0));
}

/* Inference: the output is x; the mask is all ones (training with a nonzero ratio is unsupported). */
void
hg_range_Dropout(HgRangeCtx *ctx)
{
    set_out(ctx, 0, in_range(ctx, 0));
    HgRange one = {1, 1, 1, FALSE};
    set_out(ctx, 1, one);
}

/* The target type's storage: floats saturate to infinity past their largest finite value; floats to
 * integers truncate and saturate to int64 (NaN -> 0) and then wrap into narrower types. */
static void
cast_rule(HgRangeCtx *ctx, int to)
{
    if (in_dtype(ctx, 0) == HG_DTYPE_STRING || to == HG_DTYPE_STRING || to == HG_DTYPE_UNDEFINED)
        return;
    HgRange x = in_range(ctx, 0);
    if (!hg_dtype_is_float(to) && to != HG_DTYPE_BOOL) {
        x.lo = trunc(x.lo);
        x.hi = trunc(x.hi);
        if (x.nan)
            x = hg_range_union(x, point(0));
        x.nan = FALSE;
    }
    if (ctx->outputs[0])
        *ctx->outputs[0] = hg_range_fit(x, to);
}

void
hg_range_Cast(HgRangeCtx *ctx)
{
    HgAttr *to = ctx->node ? hg_node_attr(ctx->node, "to") : NULL;
    if (to && to->type == HG_ATTR_INT && to->i > HG_DTYPE_UNDEFINED && to->i < HG_DTYPE_COUNT)
        cast_rule(ctx, (int)to->i);
}

void
hg_range_CastLike(HgRangeCtx *ctx)
{
    int to = in_dtype(ctx, 1);
    cast_rule(ctx, to != HG_DTYPE_UNDEFINED ? to : out_dtype(ctx, 0));
}

/* Either branch; only one where the condition is known everywhere (all true, or all false): the
 * branch not taken may hold anything (index math computes log(0) in the branch a Where discards). */
void
hg_range_Where(HgRangeCtx *ctx)
{
    HgRange c = in_range(ctx, 0);
    if (!c.nan && c.lo > 0)
        set_out(ctx, 0, in_range(ctx, 1));
    else if (!c.nan && c.lo == 0 && c.hi == 0)
        set_out(ctx, 0, in_range(ctx, 2));
    else
        set_out(ctx, 0, hg_range_union(in_range(ctx, 1), in_range(ctx, 2)));
}

/* ---- decomposed LayerNorm
 *
 * Exporters spell LayerNormalization out of elementwise ops; interval arithmetic alone sees each op
 * apart and bounds the quotient by |d| / sqrt(eps), which grows layer after layer. Two spellings:
 *
 *   PyTorch:  d = x - mean;  s = Sqrt(ReduceMean(Pow(d, 2) or Mul(d, d), keepdims) + eps);  y = d / s
 *   TF:       the same s;  m = Reciprocal(s) [* gamma];
 *             y = Mul(x, m) + Sub(beta, Mul(mean, m))          ( = (x - mean) * m + beta )
 *
 * For every element, d_i^2 <= the sum of d_j^2 over the row that ReduceMean averaged (i is in it:
 * keepdims broadcasts the row's mean back over the row) = n * mean(d^2), so |d_i / s_i| <= sqrt(n)
 * whatever x is. The rules below recognise the pattern from the node's producers and intersect that
 * bound with the interval one. The rounding of the chain is covered by a relative slack (the FP32
 * sum of n squares, FP16/BF16 storage of the intermediates) and by the absolute rounding of squares
 * that underflow, which eps > 0 dominates. */

/* Input 0 of n, NULL when it has none. */
static const HgValue *
first_input(const HgNode *n)
{
    return n && n->n_inputs >= 1 ? n->inputs[0] : NULL;
}

/* The unit roundoff of a float type the kernels store in (FP32's for every wider type). */
static double
unit_roundoff(int dtype)
{
    return dtype == HG_DTYPE_FLOAT16 ? 0x1p-11 : dtype == HG_DTYPE_BFLOAT16 ? 0x1p-8 : 0x1p-24;
}

/* The producer of v when it is a default-domain node of type op, else NULL. */
static const HgNode *
made_by(const HgValue *v, const char *op)
{
    const HgNode *n = v ? v->producer : NULL;
    if (!n || strcmp(n->op_type, op) || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return NULL;
    return n;
}

/* The value v holds when it is an initializer or a Constant's output (new reference), else NULL. */
static HgArray *
value_const(const HgValue *v)
{
    if (!v)
        return NULL;
    if (v->init)
        return hg_array_from_tensor(v->init, NULL);
    const HgNode *c = made_by(v, "Constant");
    HgAttr *at = c ? hg_node_attr(c, "value") : NULL;
    return at && at->t ? hg_array_from_tensor(at->t, NULL) : NULL;
}

/* The range of the finite constant v (no NaN), in *r; FALSE when v is not one. */
static gboolean
const_range(const HgValue *v, HgRange *r, guint max_rank)
{
    HgArray *a = value_const(v);
    if (!a)
        return FALSE;
    gboolean ok = a->numel > 0 && a->rank <= max_rank;
    if (ok) {
        *r = hg_range_of_array(a);
        ok = !r->nan && hg_range_bounded(r);
    }
    hg_array_unref(a);
    return ok;
}

/* The value of the scalar (or uniform) constant v, or NAN. */
static double
const_scalar_of(const HgValue *v)
{
    HgRange c;
    return v && const_range(v, &c, HG_MAX_RANK) && c.lo == c.hi ? c.lo : NAN;
}

/* c within a relative 1e-6 of want (an exporter's float rounding of sqrt 2); false for NAN. */
static gboolean
near(double c, double want)
{
    return fabs(c - want) <= 1e-6 * fabs(want);
}

/* A scalar constant near want. */
static gboolean
const_near(const HgValue *v, double want)
{
    return near(const_scalar_of(v), want);
}

const HgValue *
hg_square_base(const HgNode *n)
{
    if (!n || n->n_inputs != 2 || !n->inputs[0] || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return NULL;
    if (hg_node_is(n, "Mul"))
        return n->inputs[0] == n->inputs[1] ? n->inputs[0] : NULL;
    if (!hg_node_is(n, "Pow"))
        return NULL;
    g_autoptr(HgArray) e = value_const(n->inputs[1]); /* one element: the square has x's shape */
    return e && e->numel == 1 && hg_array_get_f64(e, 0) == 2.0 ? n->inputs[0] : NULL;
}

/* Whether sq holds d * d: Mul(d, d) or Pow(d, 2), d possibly through a Cast that keeps every value
 * (d of dtype dt, to FP32 or FP64). Its shape is d's. */
static gboolean
is_square_of(const HgValue *sq, const HgValue *d, int dt)
{
    const HgValue *base = sq ? hg_square_base(sq->producer) : NULL;
    if (!base)
        return FALSE;
    if (base == d)
        return TRUE;
    const HgNode *c = made_by(base, "Cast");
    if (!c || c->n_inputs < 1 || c->inputs[0] != d)
        return FALSE;
    gint64 to = hg_node_attr_int(c, "to", HG_DTYPE_UNDEFINED);
    return to == dt || ((to == HG_DTYPE_FLOAT || to == HG_DTYPE_DOUBLE) &&
                        (dt == HG_DTYPE_FLOAT || dt == HG_DTYPE_FLOAT16 || dt == HG_DTYPE_BFLOAT16));
}

/* Elements one ReduceMean row of a value of shape s averages over, an upper bound: s may be the
 * shape of a broadcast of it (exact FALSE), and then a nonnegative axis may sit at any offset.
 * -1 when unknown. */
static double
row_length(const HgNode *rm, const HgValueShape *s, gboolean exact)
{
    if (!s || s->rank < 1)
        return -1;
    guint na = 0;
    const gint64 *axes = hg_attr_ints(rm, "axes", &na);
    g_autoptr(HgArray) av = NULL;
    if (!axes && rm->n_inputs > 1 && rm->inputs[1]) {
        av = value_const(rm->inputs[1]);
        if (!av || av->dtype != HG_DTYPE_INT64 || av->rank != 1)
            return -1;
        axes = av->data;
        na = (guint)av->numel;
    }
    /* Only the averaged axes' dims are asked for: a symbolic batch or sequence elsewhere is no matter. */
    if (!axes || na == 0) {
        if (hg_node_attr_int(rm, "noop_with_empty_axes", 0))
            return 1;
        double n = 1;
        for (int i = 0; i < s->rank; i++) {
            if (s->dims[i].v < 0)
                return -1;
            n *= (double)s->dims[i].v;
        }
        return n;
    }
    gint64 top = -1;
    for (guint k = 0; k < na; k++)
        top = MAX(top, axes[k]);
    double best = -1;
    for (gint64 off = 0; off <= (exact ? 0 : s->rank - 1 - MAX(top, 0)); off++) {
        double n = 1;
        for (guint k = 0; k < na; k++) {
            gint64 a = axes[k] >= 0 ? axes[k] + off : s->rank + axes[k];
            if (a < 0 || a >= s->rank || s->dims[a].v < 0)
                return -1;
            n *= (double)s->dims[a].v;
        }
        best = MAX(best, n);
    }
    return best;
}

/* The Add under a deviation s = Sqrt(add) or Pow(add, 0.5), else NULL. */
static const HgNode *
std_add(const HgValue *s)
{
    const HgNode *p = made_by(s, "Pow");
    if (p && !(p->n_inputs == 2 && const_scalar_of(p->inputs[1]) == 0.5))
        return NULL;
    return made_by(first_input(p ? p : made_by(s, "Sqrt")), "Add");
}

/* The Add under m = c / sqrt(add), and *c (its largest magnitude): Reciprocal(s) and Pow(add, -0.5)
 * (c = 1), Div(c, s) with a constant numerator (how the exporters write an rsqrt), s a deviation
 * (std_add). NULL otherwise. */
static const HgNode *
inv_std_add(const HgValue *m, double *c)
{
    const HgNode *rc = made_by(m, "Reciprocal"), *dv = rc ? NULL : made_by(m, "Div"), *p = made_by(m, "Pow");
    HgRange num;
    *c = 1;
    if (rc)
        return std_add(first_input(rc));
    if (p)
        return p->n_inputs == 2 && const_scalar_of(p->inputs[1]) == -0.5 ? made_by(first_input(p), "Add") : NULL;
    if (!dv || dv->n_inputs != 2 || !dv->inputs[1] || !const_range(dv->inputs[0], &num, 1))
        return NULL;
    *c = max_abs(&num);
    return isfinite(*c) ? std_add(dv->inputs[1]) : NULL;
}

/* When add = ReduceMean(square of d) + eps with eps > 0 (under a deviation s: std_add), a bound zb
 * on |d_i / s_i| for a d of dtype dt whose shape is ds (exact) or broadcasts from it; else 0. */
static double
norm_quotient_bound(const HgNode *add, const HgValue *d, int dt, const HgValueShape *ds, gboolean exact)
{
    if (!add || add->n_inputs != 2 || !ds || ds->rank < 1)
        return 0;
    guint rank = (guint)ds->rank;
    for (int k = 0; k < 2; k++) {
        const HgNode *rm = made_by(add->inputs[k], "ReduceMean");
        HgRange eps;
        if (!first_input(rm) || hg_node_attr_int(rm, "keepdims", 1) != 1 ||
            !const_range(add->inputs[1 - k], &eps, rank) || !(eps.lo > 0) ||
            !is_square_of(rm->inputs[0], d, dt))
            continue;
        double n = row_length(rm, ds, exact);
        /* FP32 sums n squares with relative error n u; FP16/BF16 store each stage rounded */
        double abs_sq = dt == HG_DTYPE_FLOAT16 ? 0x1p-24 : dt == HG_DTYPE_BFLOAT16 ? 0x1p-133 : 0x1p-149;
        if (!(n >= 1) || (dt != HG_DTYPE_FLOAT && dt != HG_DTYPE_DOUBLE && dt != HG_DTYPE_FLOAT16 &&
                          dt != HG_DTYPE_BFLOAT16))
            return 0;
        double rel = 1.0 / 256 + n * 0x1p-22;
        return sqrt(n) * sqrt(1 + rel + 2 * n * abs_sq / eps.lo) * (1 + rel);
    }
    return 0;
}

/* Whether the reduction rm (ReduceMean, ReduceL2) averages or sums over exactly the last axis of a
 * rank-`rank` input, keeping dims. */
static gboolean
reduces_last_axis(const HgNode *rm, int rank)
{
    if (!rm || rank < 1 || hg_node_attr_int(rm, "keepdims", 1) != 1)
        return FALSE;
    guint na = 0;
    const gint64 *axes = hg_attr_ints(rm, "axes", &na);
    g_autoptr(HgArray) av = NULL;
    if (!axes && rm->n_inputs > 1 && rm->inputs[1]) {
        av = value_const(rm->inputs[1]);
        if (!av || av->dtype != HG_DTYPE_INT64 || av->numel != 1)
            return FALSE;
        axes = av->data;
        na = 1;
    }
    return axes && na == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

/* Whether m is x's L2 norm over the last axis floored at a positive constant, as F.normalize writes
 * it: [Expand(..., Shape(x)) of] Clip(ReduceL2(x), eps) or Max(ReduceL2(x), eps), eps > 0. */
static gboolean
is_l2_floor_of(const HgValue *m, const HgValue *x, int rank)
{
    const HgNode *e = made_by(m, "Expand");
    if (e)
        m = first_input(e);
    const HgNode *cl = made_by(m, "Clip"), *mx = cl ? NULL : made_by(m, "Max");
    HgRange eps;
    const HgValue *nv = NULL;
    if (cl && cl->n_inputs >= 2 && cl->inputs[1] && const_range(cl->inputs[1], &eps, 1) && eps.lo > 0 &&
        (cl->n_inputs < 3 || !cl->inputs[2]))
        nv = cl->inputs[0];
    for (int k = 0; mx && mx->n_inputs == 2 && !nv && k < 2; k++)
        if (const_range(mx->inputs[1 - k], &eps, 1) && eps.lo > 0)
            nv = mx->inputs[k];
    const HgNode *rl = made_by(nv, "ReduceL2");
    return rl && first_input(rl) == x && reduces_last_axis(rl, rank);
}

double
hg_norm_row_l2(const HgRangeCtx *ctx, const HgValue *y)
{
    const HgNode *n = y ? y->producer : NULL;
    if (!ctx->shape_of || !n || n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1] ||
        (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return INFINITY;
    gboolean div = !strcmp(n->op_type, "Div"), mul = !strcmp(n->op_type, "Mul");
    if (!div && !mul)
        return INFINITY;
    for (int k = 0; k < (mul ? 2 : 1); k++) {
        const HgValue *x = n->inputs[k], *m = n->inputs[1 - k];
        const HgValueShape *xs = ctx->shape_of(ctx->shape_data, x);
        if (!xs || xs->rank < 1 || xs->dims[xs->rank - 1].v < 1)
            continue;
        double len = (double)xs->dims[xs->rank - 1].v;
        /* x / max(||x||, eps): norm at most 1, up to the FP32 sum's and the quotients' rounding */
        if (div && is_l2_floor_of(m, x, xs->rank))
            return (1 + 0x1p-16 + len * 0x1p-23) * (xs->dtype == HG_DTYPE_FLOAT || xs->dtype == HG_DTYPE_DOUBLE ? 1 : 1 + 0x1p-9);
        /* x / s, x * Reciprocal(s), x * Div(c, s), s = Sqrt(mean over the last axis of x^2 + eps): the
         * row's norm is ||x|| / sqrt(||x||^2 / len + eps) <= sqrt(len), times |c| */
        double c = 1;
        const HgNode *add = div ? std_add(m) : inv_std_add(m, &c);
        gboolean last = FALSE;
        for (int a = 0; add && add->n_inputs == 2 && a < 2; a++)
            last = last || reduces_last_axis(made_by(add->inputs[a], "ReduceMean"), xs->rank);
        if (!last)
            continue;
        /* the per-element bound is the row norm's: both are sqrt(len) times the same slack */
        double zb = norm_quotient_bound(add, x, xs->dtype, xs, TRUE);
        if (zb > 0)
            return c * zb;
    }
    return INFINITY;
}

/* Intersect r with [-zb, zb] (zb > 0). */
static HgRange
clamp_abs(HgRange r, double zb)
{
    if (zb > 0) {
        r.lo = MAX(r.lo, -zb);
        r.hi = MIN(r.hi, zb);
    }
    return r;
}

/* A constant int64 scalar or one-element tensor (initializer or Constant). */
static gboolean
const_int1(const HgValue *v, gint64 *out)
{
    HgArray *a = value_const(v);
    gboolean ok = a && a->numel == 1 && !hg_dtype_is_float(a->dtype);
    if (ok)
        *out = hg_array_get_i64(a, 0);
    if (a)
        hg_array_unref(a);
    return ok;
}

/* DETR's normalised CumSum, y = c / (c[last] + e) with c = CumSum(x) inclusive and forward over x >= 0,
 * e >= 0: the partial sums of nonnegative terms never decrease (rounding is monotone), so every c is at
 * most the last one and y lies in [0, 1]; NaN only from 0 / 0 when e can be 0. */
static gboolean
cumsum_share(const HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    if (!ctx->range_of || !n || n->n_inputs != 2)
        return FALSE;
    const HgValue *c = n->inputs[0];
    const HgNode *cs = made_by(c, "CumSum");
    gint64 axis;
    if (!cs || cs->n_inputs != 2 || hg_node_attr_int(cs, "exclusive", 0) || hg_node_attr_int(cs, "reverse", 0) ||
        !const_int1(cs->inputs[1], &axis) || ctx->range_of(ctx->range_data, cs->inputs[0])->lo < 0 ||
        !ctx->shapes[0] || ctx->shapes[0]->rank < 1)
        return FALSE;
    int rank = ctx->shapes[0]->rank;
    if (axis < 0)
        axis += rank;
    gint64 len = axis >= 0 && axis < rank ? ctx->shapes[0]->dims[axis].v : -1;
    /* The denominator: the last element of c along the axis, possibly plus e >= 0. */
    const HgValue *den = n->inputs[1];
    const HgNode *sl = made_by(den, "Slice");
    double e_lo = 0;
    if (!sl) {
        const HgNode *add = made_by(den, "Add");
        for (int k = 0; add && add->n_inputs == 2 && !sl && k < 2; k++)
            if ((sl = made_by(add->inputs[k], "Slice")))
                e_lo = ctx->range_of(ctx->range_data, add->inputs[1 - k])->lo;
    }
    gint64 st, en, ax = axis, step = 1;
    if (!sl || sl->n_inputs < 3 || sl->inputs[0] != c || !(e_lo >= 0) || len < 1 ||
        !const_int1(sl->inputs[1], &st) || !const_int1(sl->inputs[2], &en) ||
        (sl->n_inputs > 3 && sl->inputs[3] && !const_int1(sl->inputs[3], &ax)) ||
        (sl->n_inputs > 4 && sl->inputs[4] && !const_int1(sl->inputs[4], &step)))
        return FALSE;
    if (ax < 0)
        ax += rank;
    if (st < 0)
        st += len;
    if (ax != axis || step != 1 || st != len - 1 || en < len)
        return FALSE;
    *r = hg_range_exact(0, 1);
    r->nan = e_lo == 0;
    return TRUE;
}

/* PyTorch's y = d / s; d finite means no NaN: s >= sqrt(eps) > 0 and inf / inf needs an infinite d. */
static gboolean
norm_div(const HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    if (!n || n->n_inputs != 2 || !n->inputs[0] || !ctx->shapes[0])
        return FALSE;
    double zb = norm_quotient_bound(std_add(n->inputs[1]), n->inputs[0], in_dtype(ctx, 0), ctx->shapes[0], TRUE);
    if (!(zb > 0))
        return FALSE;
    HgRange a = in_range(ctx, 0);
    *r = clamp_abs(*r, zb);
    r->nan = a.nan || !hg_range_bounded(&a);
    return TRUE;
}

/* TF's y = Mul(x, m) + Sub(beta, Mul(mean, m)), m = Reciprocal(s) [* gamma]: (x - mean) * m + beta,
 * where d = x - mean is what s normalizes. Output 0's range into *r. */
static gboolean
norm_tf_add(const HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    if (!n || n->n_inputs != 2)
        return FALSE;
    for (int k = 0; k < 2; k++) {
        const HgNode *m1 = made_by(n->inputs[k], "Mul"), *sb = made_by(n->inputs[1 - k], "Sub");
        if (!m1 || !sb || m1->n_inputs != 2 || sb->n_inputs != 2)
            continue;
        const HgNode *m2 = made_by(sb->inputs[1], "Mul");
        HgRange beta;
        if (!m2 || m2->n_inputs != 2 || !const_range(sb->inputs[0], &beta, HG_MAX_RANK))
            continue;
        for (int j = 0; j < 2; j++) {
            const HgValue *x = m1->inputs[j], *m = m1->inputs[1 - j];
            const HgValue *mean = m2->inputs[0] == m ? m2->inputs[1] : m2->inputs[1] == m ? m2->inputs[0] : NULL;
            if (!mean || !x)
                continue;
            /* m = c / s or Mul(c / s, gamma), c / s in any of inv_std_add's spellings */
            HgRange gamma = hg_range_exact(1, 1);
            double c = 1;
            const HgNode *add = inv_std_add(m, &c), *mg = add ? NULL : made_by(m, "Mul");
            for (int g = 0; mg && !add && g < 2; g++)
                if ((add = inv_std_add(mg->inputs[g], &c)) && !const_range(mg->inputs[1 - g], &gamma, HG_MAX_RANK))
                    add = NULL;
            if (!add)
                continue;
            gamma = hg_range_mul(gamma, hg_range_exact(-c, c));
            /* d = Sub(x, mean) is the value s normalizes */
            const HgValue *d = NULL;
            for (int a = 0; add && a < 2 && !d; a++) {
                const HgValue *sqv = first_input(made_by(add->inputs[a], "ReduceMean"));
                const HgValue *base = sqv ? first_input(sqv->producer) : NULL;
                const HgNode *sub = made_by(base, "Sub");
                if (sub && sub->n_inputs == 2 && sub->inputs[0] == x && sub->inputs[1] == mean)
                    d = base;
            }
            int dt = out_dtype(ctx, 0);
            double zb = d ? norm_quotient_bound(add, d, dt, ctx->shapes[k], FALSE) : 0;
            if (!(zb > 0))
                continue;
            /* the roundings of x * m, mean * m, beta - mean * m and the sum are each relative u
             * of their own result; |x * m| is bounded by input k's range and |mean * m| by
             * |beta| + |input 1 - k| (ranges of stored values, so a factor 1 + u more) */
            double u = unit_roundoff(dt);
            HgRange pm = in_range(ctx, (guint)k), sm = in_range(ctx, (guint)(1 - k));
            double bmax = max_abs(&beta);
            HgRange y = hg_range_add(hg_range_mul(hg_range_exact(-zb * (1 + 8 * u), zb * (1 + 8 * u)), gamma), beta);
            y = pad(y, 1.25 * u * (max_abs(&pm) + 3 * max_abs(&sm) + 2 * bmax));
            if (!hg_range_bounded(&y))
                continue;
            y.lo = MAX(y.lo, r->lo);
            y.hi = MIN(y.hi, r->hi);
            y.nan = r->nan;
            y.tiny = 0;
            *r = y;
            return TRUE;
        }
    }
    return FALSE;
}

/* ---- arithmetic */

void
hg_range_Add(HgRangeCtx *ctx)
{
    HgRange r = hg_range_add(in_range(ctx, 0), in_range(ctx, 1));
    if (out_is_float(ctx, 0))
        norm_tf_add(ctx, &r);
    set_out(ctx, 0, r);
}

void
hg_range_Sub(HgRangeCtx *ctx)
{
    set_out(ctx, 0, hg_range_sub(in_range(ctx, 0), in_range(ctx, 1)));
}

/* The RMSNorm that LLaMA-family exports spell y = Mul(x, Reciprocal(s)) (the dynamo exporter) or
 * Mul(x, Div(1, s)) (TorchScript), or Mul(x, Pow(a, -0.5)) by hand, s = Sqrt(a) or Pow(a, 0.5),
 * a = ReduceMean(x^2) + eps: |y_i| <= c sqrt(n) for a
 * constant numerator c (1 for Reciprocal), as for d / s above (norm_quotient_bound; its relative
 * slack of 2^-8 covers the reciprocal's and the product's roundings). Narrows *r; TRUE when the
 * pattern is there. */
static gboolean
norm_mul_reciprocal(const HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    if (!n || n->n_inputs != 2)
        return FALSE;
    for (int k = 0; k < 2; k++) {
        double c;
        const HgNode *add = inv_std_add(n->inputs[1 - k], &c);
        if (!n->inputs[k] || !add || !ctx->shapes[k])
            continue;
        double zb = c * norm_quotient_bound(add, n->inputs[k], in_dtype(ctx, (guint)k), ctx->shapes[k], TRUE);
        if (!(zb > 0))
            continue;
        HgRange x = in_range(ctx, (guint)k);
        *r = clamp_abs(*r, zb);
        r->nan = x.nan || !hg_range_bounded(&x);
        return TRUE;
    }
    return FALSE;
}

double
hg_silu(double x)
{
    return x / (1.0 + exp(-x));
}

/* x * sigmoid(x) (SiLU, Swish) has its one minimum at x = -1.278464542761074, where it is
 * -0.2784645427610738; it falls before and rises after. */
#define SILU_ARGMIN (-1.278464542761074)
#define SILU_MIN (-0.2784645427610738)

HgRange
hg_range_silu(HgRange x, double a, int dtype)
{
    if (!hg_range_bounded(&x) || x.nan || !(a > 0))
        return hg_range_any();
    double fl = hg_silu(a * x.lo) / a, fh = hg_silu(a * x.hi) / a;
    double lo = a * x.hi <= SILU_ARGMIN ? fh : a * x.lo >= SILU_ARGMIN ? fl : SILU_MIN / a;
    double hi = MAX(fl, fh);
    /* the sigmoid's and the product's roundings, in the type they are stored in: 16 units, relative;
     * a x rounds by a relative u too, which moves the sigmoid by at most a |x| u / 4: times |x| */
    double u = unit_roundoff(dtype), X = MAX(fabs(x.lo), fabs(x.hi));
    double e = a == 1 ? 0 : 0.25 * u * a * X * X + 16 * u;
    return (HgRange){lo - fabs(lo) * 16 * u - e, hi + fabs(hi) * 16 * u + e, 0, FALSE};
}

int
hg_silu_operand(const HgNode *n, double *a)
{
    if (!n || n->n_inputs != 2)
        return -1;
    for (int k = 0; k < 2; k++) {
        const HgNode *sg = made_by(n->inputs[1 - k], "Sigmoid");
        if (!n->inputs[k] || !sg || sg->n_inputs < 1)
            continue;
        if (sg->inputs[0] == n->inputs[k]) {
            *a = 1;
            return k;
        }
        const HgNode *m = made_by(sg->inputs[0], "Mul");
        HgRange c;
        int j = !m || m->n_inputs != 2 ? -1 : m->inputs[0] == n->inputs[k] ? 1 : m->inputs[1] == n->inputs[k] ? 0 : -1;
        if (j >= 0 && const_range(m->inputs[j], &c, HG_MAX_RANK) && c.lo == c.hi && c.lo > 0) {
            *a = c.lo;
            return k;
        }
    }
    return -1;
}

/* Mul(x, Sigmoid(x)), either order: SiLU (timm's and torchvision's SiLU and Swish export so). A
 * product of the two intervals keeps x's negative side whole ([-11.8, 11.4] after a stem conv); the
 * function itself never goes below -0.2785. Also Mul(x, Sigmoid(Mul(x, a))) for a scalar a > 0,
 * CLIP's QuickGELU (a = 1.702): silu(a x) / a, at least -0.1636. Narrows *r; TRUE where the
 * pattern is there. */
static gboolean
silu_mul(const HgRangeCtx *ctx, HgRange *r)
{
    double a;
    int k = hg_silu_operand(ctx->node, &a);
    if (k < 0)
        return FALSE;
    HgRange x = in_range(ctx, (guint)k);
    if (!hg_range_bounded(&x) || x.nan)
        return FALSE;
    HgRange f = hg_range_silu(x, a, in_dtype(ctx, (guint)k));
    r->lo = MAX(r->lo, f.lo);
    r->hi = MIN(r->hi, f.hi);
    if (r->lo > r->hi)
        *r = f;
    return TRUE;
}

static double f_gelu(double x);

/* GELU's tanh form with the constants an export holds: 0.5 x (1 + tanh(c (x + k x^3))). */
static double
f_gelu_ck(double x, double c, double k)
{
    return x == -INFINITY ? 0 : x / (1 + (exp)(-2 * c * (x + k * x * x * x)));
}

/* Is c3 = x^3 (Pow(x, 3), Mul(x, Mul(x, x)) in any order)? */
static gboolean
is_cube_of(const HgValue *c3, const HgValue *x)
{
    const HgNode *p = made_by(c3, "Pow"), *m = made_by(c3, "Mul");
    if (p)
        return p->n_inputs == 2 && p->inputs[0] == x && const_scalar_of(p->inputs[1]) == 3;
    for (int j = 0; m && m->n_inputs == 2 && j < 2; j++) {
        const HgNode *sq = made_by(m->inputs[1 - j], "Mul");
        if (m->inputs[j] == x && sq && sq->n_inputs == 2 && sq->inputs[0] == x && sq->inputs[1] == x)
            return TRUE;
    }
    return FALSE;
}

/* Is t = c (x + k x^3) with c near sqrt(2 / pi) and k near 0.044715 (GELU's tanh form, as HF's
 * gelu_new and gelu_pytorch_tanh are exported)? Its x, with the constants in *c and *k. */
static const HgValue *
tanh_arg_of(const HgValue *t, double *c, double *k)
{
    const HgNode *m = made_by(t, "Mul");
    for (int j = 0; m && m->n_inputs == 2 && j < 2; j++) {
        *c = const_scalar_of(m->inputs[1 - j]);
        const HgNode *add = made_by(m->inputs[j], "Add");
        if (!near(*c, sqrt(2 / G_PI)) || !add || add->n_inputs != 2)
            continue;
        for (int a = 0; a < 2; a++) {
            const HgValue *x = add->inputs[a];
            const HgNode *kx = made_by(add->inputs[1 - a], "Mul");
            for (int b = 0; x && kx && kx->n_inputs == 2 && b < 2; b++) {
                *k = const_scalar_of(kx->inputs[1 - b]);
                if (near(*k, 0.044715) && is_cube_of(kx->inputs[b], x))
                    return x;
            }
        }
    }
    return NULL;
}

/* Is e = 1 + Erf(x / sqrt 2) (Add either order; Div by sqrt 2 or Mul by 1/sqrt 2), or 1 + Tanh(t)
 * with t as tanh_arg_of takes it, with that x? *c is 0 for the Erf; the Tanh's constants else. */
static const HgValue *
erf_term_of(const HgValue *e, double *c, double *kc)
{
    const HgNode *add = made_by(e, "Add");
    *c = 0;
    if (!add || add->n_inputs != 2)
        return NULL;
    for (int k = 0; k < 2; k++) {
        const HgNode *th = made_by(add->inputs[k], "Tanh");
        const HgValue *tx = th && th->n_inputs == 1 && const_near(add->inputs[1 - k], 1.0)
                                ? tanh_arg_of(th->inputs[0], c, kc) : NULL;
        if (tx)
            return tx;
        *c = 0;
        const HgNode *erf = made_by(add->inputs[k], "Erf");
        if (!erf || erf->n_inputs != 1 || !const_near(add->inputs[1 - k], 1.0))
            continue;
        const HgNode *d = made_by(erf->inputs[0], "Div"), *m = made_by(erf->inputs[0], "Mul");
        if (d && d->n_inputs == 2 && const_near(d->inputs[1], G_SQRT2))
            return d->inputs[0];
        for (int j = 0; m && m->n_inputs == 2 && j < 2; j++)
            if (const_near(m->inputs[1 - j], G_SQRT2 / 2))
                return m->inputs[j];
    }
    return NULL;
}

/* GELU written out, as the TorchScript exporter writes it below opset 20: a product of
 * 1 + Erf(x / sqrt 2) (or 1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3)), HF's gelu_new and
 * gelu_pytorch_tanh) and x (then times 0.5), or x * 0.5 (either order); or, as TensorFlow's
 * exporters write it, x times 0.5 * (1 + Erf(x / sqrt 2)). That is 2 gelu(x), or
 * gelu(x), which never goes below -0.17; the product of the two intervals keeps x's negative side
 * whole. Rounding, in the type stored (unit u): the quotient, the Erf, the Add and the product each
 * round; near x = -3.3, where 1 + erf(x / sqrt 2) stops being 0 in FP16, the Add's cancellation costs
 * up to u absolute, times |x|. So 16 u relative and 64 u absolute either side. Narrows *r; TRUE where
 * the pattern is there. */
static gboolean
gelu_mul(const HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    if (!n || n->n_inputs != 2)
        return FALSE;
    for (guint k = 0; k < 2; k++) {
        double tc, tk;
        const HgValue *x = erf_term_of(n->inputs[1 - k], &tc, &tk);
        const HgValue *o = n->inputs[k];
        double scale = 2; /* o is x itself */
        const HgNode *h = x ? NULL : made_by(n->inputs[1 - k], "Mul");
        for (int j = 0; h && h->n_inputs == 2 && j < 2 && !x; j++)
            if (const_near(h->inputs[1 - j], 0.5) && (x = erf_term_of(h->inputs[j], &tc, &tk)))
                scale = 1; /* TF's form: x * (0.5 * (1 + erf)) */
        if (x && scale == 1 && o != x)
            continue;
        const HgNode *half = made_by(o, "Mul");
        if (x && o != x && half && half->n_inputs == 2 &&
            ((half->inputs[0] == x && const_near(half->inputs[1], 0.5)) ||
             (half->inputs[1] == x && const_near(half->inputs[0], 0.5))))
            scale = 1; /* o is x * 0.5 */
        else if (o != x)
            continue;
        if (!ctx->range_of)
            return FALSE;
        const HgRange *xr = ctx->range_of(ctx->range_data, x);
        if (!xr || !hg_range_bounded(xr) || xr->nan)
            return FALSE;
        /* gelu falls from 0 to its one minimum and rises after (the tanh form too): the extremes are
         * at the ends and at that minimum, found for the tanh form's constants by golden section */
        double xmin = -0.751791526040078, fmin = -0.16997120747990369;
        if (tc > 0) {
            double a = -3, b = 0, q = (sqrt(5) - 1) / 2;
            for (int it = 0; it < 100; it++) {
                double m1 = b - q * (b - a), m2 = a + q * (b - a);
                if (f_gelu_ck(m1, tc, tk) < f_gelu_ck(m2, tc, tk))
                    b = m2;
                else
                    a = m1;
            }
            xmin = (a + b) / 2;
            fmin = f_gelu_ck(xmin, tc, tk);
        }
        double flo = tc > 0 ? f_gelu_ck(xr->lo, tc, tk) : f_gelu(xr->lo);
        double fhi = tc > 0 ? f_gelu_ck(xr->hi, tc, tk) : f_gelu(xr->hi);
        double lo = xr->hi <= xmin ? fhi : xr->lo >= xmin ? flo : fmin, hi = MAX(flo, fhi);
        double u = unit_roundoff(in_dtype(ctx, k));
        lo = scale * lo - fabs(scale * lo) * 16 * u - 64 * u;
        hi = scale * hi + fabs(scale * hi) * 16 * u + 64 * u;
        r->lo = MAX(r->lo, lo);
        r->hi = MIN(r->hi, hi);
        if (r->lo > r->hi)
            r->lo = lo, r->hi = hi;
        return TRUE;
    }
    return FALSE;
}

/* Mul(x, x) is a square: nonnegative, which Sqrt(var + eps) after it needs to stay away from 0. */
void
hg_range_Mul(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0);
    const HgNode *n = ctx->node;
    if (n && n->n_inputs == 2 && n->inputs[0] && n->inputs[0] == n->inputs[1]) {
        double l2 = hg_bound_mul(a.lo, a.lo), h2 = hg_bound_mul(a.hi, a.hi);
        HgRange r = {a.lo >= 0 ? l2 : a.hi <= 0 ? h2 : 0, MAX(l2, h2), a.tiny * a.tiny, a.nan};
        set_out(ctx, 0, r);
        return;
    }
    HgRange r = hg_range_mul(a, in_range(ctx, 1));
    if (out_is_float(ctx, 0) && !norm_mul_reciprocal(ctx, &r) && !silu_mul(ctx, &r))
        gelu_mul(ctx, &r);
    set_out(ctx, 0, r);
}

/* a / (ReduceMean(a) + eps) or a / (ReduceSum(a) + eps), eps >= 0 or absent, keeping dims, with a >= 0:
 * each a_i is one of the n terms its own row sums, so the quotient lies in [0, n] for a mean and in
 * [0, 1] for a sum, whatever a's bound (ConvNeXt V2's Global Response Normalization divides ReduceL2
 * of the activations by their mean over the channels). Rounding: the sum of n nonnegative terms comes
 * out low by at most gamma_n = n u / (1 - n u), the mean, the Add and the quotient round once each
 * (u = 2^-24 in FP32, 2^-11 or 2^-8 where a is stored in FP16 or BF16, whose sums FP16 may keep).
 * Narrows r; FALSE where the pattern is not there or n is not known. */
static gboolean
share_of_own_sum(HgRangeCtx *ctx, HgRange *r)
{
    const HgNode *n = ctx->node;
    const HgValue *a = n->inputs[0], *d = n->inputs[1];
    HgRange ar = in_range(ctx, 0);
    const HgValueShape *as = ctx->shapes[0];
    int dt = in_dtype(ctx, 0);
    if (!(ar.lo >= 0) || !as || as->rank < 1)
        return FALSE;
    const HgNode *add = made_by(d, "Add");
    if (add) {
        HgRange eps;
        d = NULL;
        for (int k = 0; add->n_inputs == 2 && k < 2 && !d; k++)
            if (const_range(add->inputs[1 - k], &eps, (guint)as->rank) && eps.lo >= 0)
                d = add->inputs[k];
    }
    const HgNode *red = made_by(d, "ReduceMean");
    gboolean mean = red != NULL;
    if (!red)
        red = made_by(d, "ReduceSum");
    if (!red || first_input(red) != a || hg_node_attr_int(red, "keepdims", 1) != 1)
        return FALSE;
    double len = row_length(red, as, TRUE);
    double u = dt == HG_DTYPE_FLOAT16 ? 0x1p-11 : dt == HG_DTYPE_BFLOAT16 ? 0x1p-8
               : dt == HG_DTYPE_FLOAT || dt == HG_DTYPE_DOUBLE ? 0x1p-24 : NAN;
    if (!(len >= 1) || !(len * u < 0.5))
        return FALSE;
    double gamma = len * u / (1 - len * u);
    double top = (mean ? len : 1) * (1 + u) / ((1 - gamma) * (1 - u) * (1 - u));
    r->lo = MAX(r->lo, 0);
    r->hi = MIN(r->hi, top);
    r->nan = ar.nan;
    return TRUE;
}

/* Float: a * (1 / b), unbounded and NaN-prone when b reaches 0. Integer: the truncated quotient when
 * |b| >= 1 throughout; a divisor range that holds 0 adds the kernel's 0 for x / 0. */
void
hg_range_Div(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    if (out_is_float(ctx, 0)) {
        HgRange r = hg_range_div(a, b);
        /* x / max(||x||, eps) over the last axis: every element within the row's norm, at most 1 */
        const HgNode *n = ctx->node;
        if (n && n->n_inputs == 2 && n->outputs[0] && ctx->shapes[0] &&
            is_l2_floor_of(n->inputs[1], n->inputs[0], ctx->shapes[0]->rank)) {
            double zb = hg_norm_row_l2(ctx, n->outputs[0]);
            if (isfinite(zb)) {
                r = clamp_abs(r, zb);
                r.nan = a.nan || !hg_range_bounded(&a);
            }
        } else if (!share_of_own_sum(ctx, &r) && !norm_div(ctx, &r)) {
            cumsum_share(ctx, &r);
        }
        set_out(ctx, 0, r);
        return;
    }
    /* integers: nonzero |b| >= 1, so split b around 0 */
    HgRange q = {INFINITY, -INFINITY, 0, FALSE};
    if (b.hi >= 1) {
        HgRange pos = {MAX(b.lo, 1), b.hi, 1, FALSE};
        q = hg_range_union(q, hg_range_div(a, pos));
    }
    if (b.lo <= -1) {
        HgRange neg = {b.lo, MIN(b.hi, -1), 1, FALSE};
        q = hg_range_union(q, hg_range_div(a, neg));
    }
    if (b.lo <= 0 && b.hi >= 0)
        q = hg_range_union(q, point(0));
    q.lo = trunc(q.lo - fabs(q.lo) * 1e-12); /* outward past the double rounding of a * (1 / b) */
    q.hi = trunc(q.hi + fabs(q.hi) * 1e-12);
    q.nan = FALSE;
    set_out(ctx, 0, q);
}

void
hg_range_Neg(HgRangeCtx *ctx)
{
    set_out(ctx, 0, hg_range_neg(in_range(ctx, 0)));
}

void
hg_range_Abs(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0), r = x;
    if (x.hi <= 0) {
        r = hg_range_neg(x);
    } else if (x.lo < 0) {
        r.lo = 0;
        r.hi = MAX(-x.lo, x.hi);
    }
    set_out(ctx, 0, r);
}

/* x^y. A constant exponent: the exact power law (even powers are |x|^y, odd ones monotone, fractional
 * ones NaN below 0); a nonnegative base: pow is monotone in each argument, so the corners bound it.
 * Integer results (wrapping, truncation of negative exponents) are left unbounded. */
void
hg_range_Pow(HgRangeCtx *ctx)
{
    if (!out_is_float(ctx, 0))
        return;
    HgRange x = in_range(ctx, 0), y = in_range(ctx, 1);
    HgRange r = hg_range_any();
    if (y.lo == y.hi && !y.nan && isfinite(y.lo)) {
        double e = y.lo;
        HgRange base = x;
        gboolean integral = e == floor(e);
        gboolean even = integral && fmod(e, 2) == 0;
        if (e == 0) {
            r = point(1); /* pow(x, 0) = 1 even for NaN */
            set_out(ctx, 0, r);
            return;
        }
        if (even || !integral) {
            /* |x|^e (even), or x^e on x >= 0 (x < 0 gives NaN) */
            if (!integral && x.lo < 0)
                base.nan = TRUE;
            if (even) {
                base.lo = x.hi <= 0 ? -x.hi : x.lo >= 0 ? x.lo : 0;
                base.hi = max_abs(&x);
            } else {
                base.lo = MAX(x.lo, 0);
                base.hi = MAX(x.hi, 0);
            }
            /* pow over [0, inf] is increasing for e > 0, decreasing for e < 0 */
            double pl = pow(base.lo, e), ph = pow(base.hi, e);
            r = (HgRange){MIN(pl, ph), MAX(pl, ph), 0, base.nan};
            if (even && x.lo < 0 && !(x.hi <= 0) && e < 0)
                r.hi = INFINITY; /* 1 / 0 */
        } else {
            /* odd integer: increasing for e > 0; for e < 0 decreasing on each side of 0 */
            if (e > 0) {
                r = (HgRange){pow(x.lo, e), pow(x.hi, e), 0, x.nan};
            } else if (x.lo > 0 || x.hi < 0) {
                r = (HgRange){pow(x.hi, e), pow(x.lo, e), 0, x.nan};
            } else {
                r = hg_range_any();
                r.nan = x.nan;
            }
        }
        if (x.tiny > 0 && e > 0)
            r.tiny = pow(x.tiny, e);
        r.tiny = isnan(r.tiny) ? 0 : r.tiny;
        set_out(ctx, 0, r);
        return;
    }
    if (x.lo >= 0 && !isnan(y.lo) && !isnan(y.hi)) {
        double c[4] = {pow(x.lo, y.lo), pow(x.lo, y.hi), pow(x.hi, y.lo), pow(x.hi, y.hi)};
        r = (HgRange){c[0], c[0], 0, x.nan || y.nan};
        for (int i = 1; i < 4; i++) {
            r.lo = MIN(r.lo, c[i]);
            r.hi = MAX(r.hi, c[i]);
        }
        /* pow(inf, 0) and pow(0, 0) are 1: no NaN from the corners themselves */
        set_out(ctx, 0, r);
    }
}

/* fmod: |r| < |y| and |r| <= |x|, the sign of x; Python's mod: the sign of y. Float x / 0 and
 * fmod(inf, y) are NaN; integers give 0 there. */
void
hg_range_Mod(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    gboolean c_fmod = ctx->node && hg_node_attr_int(ctx->node, "fmod", 0) != 0;
    double m = max_abs(&b);
    HgRange r = {-m, m, 0, a.nan || b.nan};
    if (out_is_float(ctx, 0) && (isinf(a.lo) || isinf(a.hi) || (b.lo <= 0 && b.hi >= 0)))
        r.nan = TRUE;
    if (c_fmod) {
        double ma = max_abs(&a);
        r.lo = a.lo >= 0 ? 0 : -MIN(m, ma);
        r.hi = a.hi <= 0 ? 0 : MIN(m, ma);
    } else if (isinf(m)) {
        r.lo = -INFINITY, r.hi = INFINITY; /* x + inf */
    } else if (b.lo >= 0) {
        r.lo = 0;
    } else if (b.hi <= 0) {
        r.hi = 0;
    }
    set_out(ctx, 0, r);
}

static void
variadic_minmax(HgRangeCtx *ctx, gboolean is_max)
{
    HgRange r = {0, 0, INFINITY, FALSE};
    gboolean first = TRUE;
    for (guint i = 0; i < ctx->n_inputs; i++) {
        if (!ctx->inputs[i])
            continue;
        HgRange x = *ctx->inputs[i];
        if (first) {
            r = x;
            first = FALSE;
            continue;
        }
        r.lo = is_max ? MAX(r.lo, x.lo) : MIN(r.lo, x.lo);
        r.hi = is_max ? MAX(r.hi, x.hi) : MIN(r.hi, x.hi);
        r.tiny = MIN(r.tiny, x.tiny); /* the result is one of the inputs */
        r.nan = r.nan || x.nan;
    }
    if (!first)
        set_out(ctx, 0, r);
}

void
hg_range_Max(HgRangeCtx *ctx)
{
    variadic_minmax(ctx, TRUE);
}

void
hg_range_Min(HgRangeCtx *ctx)
{
    variadic_minmax(ctx, FALSE);
}

static gboolean
variadic_sum(const HgRangeCtx *ctx, HgRange *sum, guint *n)
{
    *n = 0;
    for (guint i = 0; i < ctx->n_inputs; i++) {
        if (!ctx->inputs[i])
            continue;
        *sum = *n ? hg_range_add(*sum, *ctx->inputs[i]) : *ctx->inputs[i];
        (*n)++;
        /* partial sums are FP32 for every narrower float type: one that overflows stays infinite */
        if (out_is_float(ctx, 0) && out_dtype(ctx, 0) != HG_DTYPE_DOUBLE) {
            if (sum->lo < -FLT_MAX)
                sum->lo = -INFINITY;
            if (sum->hi > FLT_MAX)
                sum->hi = INFINITY;
        }
    }
    return *n > 0;
}

void
hg_range_Sum(HgRangeCtx *ctx)
{
    HgRange s;
    guint n;
    if (variadic_sum(ctx, &s, &n))
        set_out(ctx, 0, s);
}

/* The sum's range over n: the kernel sums first, so a partial sum that overflows stays infinite. */
void
hg_range_Mean(HgRangeCtx *ctx)
{
    HgRange s;
    guint n;
    if (!variadic_sum(ctx, &s, &n))
        return;
    HgRange m = hg_range_mul(s, point(1.0 / n));
    /* the kernel sums in the element type first: an overflowed partial sum stays infinite */
    HgRange fit = hg_range_fit(s, out_dtype(ctx, 0));
    if (isinf(fit.lo))
        m.lo = -INFINITY;
    if (isinf(fit.hi))
        m.hi = INFINITY;
    m.tiny = 0;
    set_out(ctx, 0, m);
}

/* ---- unary math */

void
hg_range_Exp(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    HgRange r = hg_range_monotone(x, f_exp, TRUE);
    r.tiny = r.lo; /* exp > 0: any nonzero result is at least exp(lo) */
    set_out(ctx, 0, r);
}

/* log(0) = -inf, log(x < 0) = NaN. */
void
hg_range_Log(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    gboolean neg = x.lo < 0;
    x.lo = MAX(x.lo, 0);
    x.hi = MAX(x.hi, 0);
    HgRange r = hg_range_monotone(x, f_log, TRUE);
    r.nan = r.nan || neg;
    set_out(ctx, 0, r);
}

void
hg_range_Sqrt(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    gboolean neg = x.lo < 0;
    x.lo = MAX(x.lo, 0);
    x.hi = MAX(x.hi, 0);
    HgRange r = hg_range_monotone(x, f_sqrt, TRUE);
    r.tiny = sqrt(x.tiny);
    r.nan = r.nan || neg;
    set_out(ctx, 0, r);
}

void
hg_range_Reciprocal(HgRangeCtx *ctx)
{
    set_out(ctx, 0, hg_range_recip(in_range(ctx, 0)));
}

void
hg_range_Sigmoid(HgRangeCtx *ctx)
{
    HgRange r = hg_range_monotone(in_range(ctx, 0), f_sigmoid, TRUE);
    r.tiny = r.lo;
    set_out(ctx, 0, r);
}

/* Odd and increasing: the smallest nonzero magnitude maps too. */
static void
odd_monotone(HgRangeCtx *ctx, double (*f)(double))
{
    HgRange x = in_range(ctx, 0);
    HgRange r = hg_range_monotone(x, f, TRUE);
    r.tiny = f(x.tiny);
    set_out(ctx, 0, r);
}

void
hg_range_Tanh(HgRangeCtx *ctx)
{
    odd_monotone(ctx, f_tanh);
}

void
hg_range_Erf(HgRangeCtx *ctx)
{
    odd_monotone(ctx, f_erf);
}

/* sin, cos of inf are NaN. */
static void
periodic(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    HgRange r = {-1, 1, 0, x.nan || isinf(x.lo) || isinf(x.hi)};
    set_out(ctx, 0, r);
}

void
hg_range_Sin(HgRangeCtx *ctx)
{
    periodic(ctx);
}

void
hg_range_Cos(HgRangeCtx *ctx)
{
    periodic(ctx);
}

/* Rounding to an integer: monotone, and a nonzero integer has magnitude >= 1. */
static void
rounding(HgRangeCtx *ctx, double (*f)(double))
{
    HgRange x = in_range(ctx, 0);
    if (!out_is_float(ctx, 0)) {
        set_out(ctx, 0, x);
        return;
    }
    HgRange r = hg_range_monotone(x, f, TRUE);
    r.tiny = 1;
    set_out(ctx, 0, r);
}

void
hg_range_Floor(HgRangeCtx *ctx)
{
    rounding(ctx, f_floor);
}

void
hg_range_Ceil(HgRangeCtx *ctx)
{
    rounding(ctx, f_ceil);
}

void
hg_range_Round(HgRangeCtx *ctx)
{
    rounding(ctx, f_round);
}

/* -1, 0 or 1 (NaN stays NaN). */
void
hg_range_Sign(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    HgRange r = {x.lo > 0 ? 1 : x.lo == 0 ? 0 : -1, x.hi < 0 ? -1 : x.hi == 0 ? 0 : 1, 1, x.nan};
    set_out(ctx, 0, r);
}

/* ---- activations */

void
hg_range_Relu(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    x.lo = MAX(x.lo, 0);
    x.hi = MAX(x.hi, 0);
    set_out(ctx, 0, x);
}

/* x for x >= 0, slope * x below: the union of the two pieces (slope * -inf with slope 0 is NaN). */
static HgRange
leaky(HgRange x, HgRange slope)
{
    HgRange r = {INFINITY, -INFINITY, INFINITY, x.nan};
    if (x.hi >= 0) {
        HgRange pos = {MAX(x.lo, 0), x.hi, x.tiny, x.nan};
        r = hg_range_union(r, pos);
    }
    if (x.lo < 0) {
        HgRange neg = {x.lo, MIN(x.hi, 0), x.tiny, x.nan};
        r = hg_range_union(r, hg_range_mul(neg, slope));
    }
    if (isinf(r.tiny))
        r.tiny = 0;
    return r;
}

void
hg_range_LeakyRelu(HgRangeCtx *ctx)
{
    set_out(ctx, 0, leaky(in_range(ctx, 0), point(attr_f(ctx, "alpha", 0.01))));
}

void
hg_range_PRelu(HgRangeCtx *ctx)
{
    set_out(ctx, 0, leaky(in_range(ctx, 0), in_range(ctx, 1)));
}

/* x above the threshold alpha, else 0. */
void
hg_range_ThresholdedRelu(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    double alpha = attr_f(ctx, "alpha", 1.0);
    HgRange r = {INFINITY, -INFINITY, x.tiny, x.nan};
    if (x.lo <= alpha)
        r = hg_range_union(r, point(0));
    if (x.hi > alpha) {
        HgRange above = {MAX(x.lo, alpha), x.hi, x.tiny, FALSE};
        r = hg_range_union(r, above);
    }
    if (alpha >= 0)
        r.tiny = MAX(x.tiny, alpha);
    r.nan = x.nan;
    set_out(ctx, 0, r);
}

/* x above 0, scale * expm1(x) at or below it. */
static HgRange
elu_like(HgRange x, double neg_scale, double pos_scale)
{
    HgRange r = {INFINITY, -INFINITY, 0, x.nan};
    if (x.hi > 0) {
        HgRange pos = {MAX(x.lo, 0), x.hi, 0, FALSE};
        r = hg_range_union(r, hg_range_mul(pos, point(pos_scale)));
    }
    if (x.lo <= 0) {
        HgRange neg = {x.lo, MIN(x.hi, 0), 0, FALSE};
        r = hg_range_union(r, hg_range_mul(hg_range_monotone(neg, f_expm1, TRUE), point(neg_scale)));
    }
    r.tiny = 0;
    r.nan = x.nan;
    return r;
}

void
hg_range_Elu(HgRangeCtx *ctx)
{
    set_out(ctx, 0, elu_like(in_range(ctx, 0), attr_f(ctx, "alpha", 1.0), 1.0));
}

void
hg_range_Selu(HgRangeCtx *ctx)
{
    double alpha = attr_f(ctx, "alpha", 1.67326319217681884765625);
    double gamma = attr_f(ctx, "gamma", 1.05070102214813232421875);
    set_out(ctx, 0, elu_like(in_range(ctx, 0), gamma * alpha, gamma));
}

/* clamp(alpha * x + beta, 0, 1). The kernel rounds alpha * x before adding beta: pad by that. */
static HgRange
hard_sigmoid(HgRange x, double alpha, double beta)
{
    HgRange ax = hg_range_mul(x, point(alpha));
    HgRange t = hg_range_add(ax, point(beta));
    t = pad(t, (max_abs(&ax) + fabs(beta)) * 1e-6);
    HgRange r = {CLAMP01(t.lo), CLAMP01(t.hi), 0, t.nan};
    return r;
}

void
hg_range_HardSigmoid(HgRangeCtx *ctx)
{
    set_out(ctx, 0, hard_sigmoid(in_range(ctx, 0), attr_f(ctx, "alpha", 0.2), attr_f(ctx, "beta", 0.5)));
}

/* x * hardsigmoid(x): 0 up to -3, x(x + 3)/6 between (its minimum -3/8 at -1.5), x from 3. */
static double
f_hardswish(double x)
{
    return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
}

void
hg_range_HardSwish(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    double fl = f_hardswish(x.lo), fh = f_hardswish(x.hi);
    HgRange r = {MIN(fl, fh), MAX(fl, fh), 0, x.nan || x.lo == -INFINITY}; /* -inf * 0 */
    if (x.lo <= -1.5 && x.hi >= -1.5)
        r.lo = -0.375;
    /* the kernel's alpha is 1/6 rounded, and alpha * x + beta rounds near -3 and 3 */
    r = pad(r, (max_abs(&r) + 1) * 1e-6);
    set_out(ctx, 0, r);
}

void
hg_range_Softplus(HgRangeCtx *ctx)
{
    set_out(ctx, 0, hg_range_monotone(in_range(ctx, 0), f_softplus, TRUE));
}

/* x / (1 + |x|) in (-1, 1); inf / inf is NaN. */
void
hg_range_Softsign(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    HgRange r = hg_range_monotone(x, f_softsign, TRUE);
    r.nan = x.nan || isinf(x.lo) || isinf(x.hi);
    r.tiny = x.tiny / (1 + x.tiny);
    set_out(ctx, 0, r);
}

/* x * tanh(softplus(x)): decreasing down to its minimum near x = -1.1924, increasing after; it tends
 * to 0 at -inf (where the kernel's -inf * 0 is NaN). */
static double
f_mish(double x)
{
    if (x == -INFINITY)
        return 0;
    return x * (tanh)(f_softplus(x));
}

void
hg_range_Mish(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    double fl = f_mish(x.lo), fh = f_mish(x.hi);
    HgRange r = {MIN(fl, fh), MAX(fl, fh), 0, x.nan || x.lo == -INFINITY};
    if (x.lo <= -1.1924 && x.hi >= -1.1924)
        r.lo = -0.30885; /* the minimum is -0.308840...; a little below */
    if (x.lo < -1.1924)
        r.hi = MAX(r.hi, 0); /* the left tail rises toward 0 */
    r = pad(r, max_abs(&r) * 1e-6 + 1e-37);
    set_out(ctx, 0, r);
}

/* Gelu, in double as the rule needs it; the limit 0 at -inf. */
static double
f_gelu(double x)
{
    return x == -INFINITY ? 0 : 0.5 * x * (erfc)(-x / G_SQRT2);
}

static double
f_gelu_tanh(double x)
{
    return x == -INFINITY ? 0 : x / (1 + (exp)(-2 * sqrt(2 / G_PI) * (x + 0.044715 * x * x * x)));
}

/* A relative bound on the FP32 kernel's error at x: erfc's argument rounds by a relative 2^-24,
 * which erfc's logarithmic slope (about 2t at t = x / sqrt 2) magnifies to x^2 2^-24; exp's argument
 * w = -2u likewise carries |w| times its few roundings. Where the value underflows past FP32's normal
 * range the error is absolute (1e-37 covers it). */
static double
gelu_rel(double x)
{
    double w = 2 * sqrt(2 / G_PI) * fabs(x + 0.044715 * x * x * x);
    return isfinite(w) ? 1e-6 + 0x1p-21 * (x * x + w) : INFINITY;
}

/* v = f(x) moved by its error bound toward +inf (up) or -inf; v = 0 stays (the limit at -inf). */
static double
gelu_edge(double v, double x, gboolean up)
{
    if (v == 0)
        return up ? 1e-37 : -1e-37;
    double e = fabs(v) * MIN(gelu_rel(x), 1) + 1e-37;
    return up ? v + e : v - e;
}

/* Gelu falls from 0 (at -inf) to its minimum near x = -0.752 and rises after, like x at +inf. Where
 * it falls, the kernel's value at x <= lo cannot rise above f(lo) by more than lo's error: f(x) <=
 * f(lo) < 0 there and the error grows with |x| (see gelu_rel). */
void
hg_range_Gelu(HgRangeCtx *ctx)
{
    gboolean tanh_form;
    HgRange x = in_range(ctx, 0);
    if (!hg_gelu_form(ctx->node, &tanh_form, NULL) || !(x.lo <= x.hi))
        return;
    double (*f)(double) = tanh_form ? f_gelu_tanh : f_gelu;
    /* the minimum (x, f(x)) of each form, from a golden-section search in double */
    const double xmin = tanh_form ? -0.7524614066473527 : -0.751791526040078;
    const double fmin = tanh_form ? -0.17004075057125403 : -0.16997120747990369;
    double flo = f(x.lo), fhi = f(x.hi);
    HgRange r = {0, 0, 0, x.nan || x.lo == -INFINITY}; /* -inf * 0 */
    if (x.hi <= xmin) {
        r.lo = gelu_edge(fhi, x.hi, FALSE);
        r.hi = gelu_edge(flo, x.lo, TRUE);
    } else if (x.lo >= xmin) {
        r.lo = gelu_edge(flo, x.lo, FALSE);
        r.hi = gelu_edge(fhi, x.hi, TRUE);
    } else {
        r.lo = fmin * (1 + 1e-6);
        r.hi = MAX(gelu_edge(fhi, x.hi, TRUE), gelu_edge(flo, x.lo, TRUE));
    }
    set_out(ctx, 0, r);
}

/* min(max(x, lo), hi), hi winning when lo > hi. Before opset 11 the bounds are attributes (default
 * -FLT_MAX, FLT_MAX), from 11 optional inputs (absent: no bound). A NaN bound compares false: the
 * kernel then skips that side. */
void
hg_range_Clip(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    HgRange lo = {-INFINITY, -INFINITY, 0, FALSE}, hi = {INFINITY, INFINITY, 0, FALSE};
    if (ctx->opset < 11) {
        lo = point(attr_f(ctx, "min", -FLT_MAX));
        hi = point(attr_f(ctx, "max", FLT_MAX));
    } else {
        if (ctx->n_inputs > 1 && ctx->inputs[1])
            lo = *ctx->inputs[1];
        if (ctx->n_inputs > 2 && ctx->inputs[2])
            hi = *ctx->inputs[2];
    }
    HgRange r = x;
    r.lo = lo.nan ? x.lo : MAX(x.lo, lo.lo);
    r.hi = MAX(x.hi, lo.hi);
    if (!hi.nan) {
        r.lo = MIN(r.lo, hi.lo);
        r.hi = MIN(r.hi, hi.hi);
    }
    r.tiny = 0;
    r.nan = x.nan;
    set_out(ctx, 0, r);
}

/* ---- comparisons and logic: bool results, constant where the ranges decide them */

static gboolean
no_nan(const HgRange *a, const HgRange *b)
{
    return !a->nan && !b->nan;
}

void
hg_range_Equal(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    gboolean apart = a.lo > b.hi || b.lo > a.hi;
    set_bool(ctx, TRUE, !apart);
}

void
hg_range_Greater(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    set_bool(ctx, !(no_nan(&a, &b) && a.lo > b.hi), a.hi > b.lo);
}

void
hg_range_GreaterOrEqual(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    set_bool(ctx, !(no_nan(&a, &b) && a.lo >= b.hi), a.hi >= b.lo);
}

void
hg_range_Less(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    set_bool(ctx, !(no_nan(&a, &b) && a.hi < b.lo), a.lo < b.hi);
}

void
hg_range_LessOrEqual(HgRangeCtx *ctx)
{
    HgRange a = in_range(ctx, 0), b = in_range(ctx, 1);
    set_bool(ctx, !(no_nan(&a, &b) && a.hi <= b.lo), a.lo <= b.hi);
}

void
hg_range_And(HgRangeCtx *ctx)
{
    set_bool(ctx, TRUE, TRUE);
}

void
hg_range_Or(HgRangeCtx *ctx)
{
    set_bool(ctx, TRUE, TRUE);
}

void
hg_range_Xor(HgRangeCtx *ctx)
{
    set_bool(ctx, TRUE, TRUE);
}

void
hg_range_Not(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    set_bool(ctx, x.hi > 0 || x.lo < 0, x.lo <= 0 && x.hi >= 0);
}

void
hg_range_IsNaN(HgRangeCtx *ctx)
{
    set_bool(ctx, TRUE, in_range(ctx, 0).nan);
}

void
hg_range_IsInf(HgRangeCtx *ctx)
{
    HgRange x = in_range(ctx, 0);
    set_bool(ctx, TRUE, isinf(x.lo) || isinf(x.hi));
}
