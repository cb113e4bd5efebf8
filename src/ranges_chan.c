/* Per-channel intervals (issue 12): beside the one interval of a value, an interval per index of
 * axis 1 (the channels of NCHW activations, the features of [N, K] rows), carried through the ops
 * that keep channels apart and used where an op mixes them with constant weights. A Conv's output
 * channel m is bounded from each input channel's own interval and m's own weights, where one interval
 * per tensor charges every channel with the widest; after a BatchNormalization each channel has its
 * own scale. The interval of the whole value is then met with the hull of its channels, so every
 * rule downstream gains, and the side table is dropped where an op mixes channels in a way the rules
 * below do not follow (a value without an entry counts as its one interval in every channel).
 *
 * Followed: Conv (constant weights and bias), BatchNormalization (inference), Relu, LeakyRelu, Clip,
 * Add, Sub, Mul, Div (with constants or channel-aligned values), MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool, Pad (constant mode, spatial pads), Concat, Identity, Dropout,
 * Flatten, Reshape and Squeeze that keep the channel axis and drop only 1s after it, Gemm and rank-2
 * MatMul with constant weights. Each bound is exact real arithmetic plus the FP32 rounding of the
 * op's sums (K terms: (K + 2) 2 u times the sum of magnitudes, as the matrix products' rule); only
 * FP32 and FP64 outputs get one, and only from finite bounds. */
#include "ranges.h"
#include "ops/linalg.h"

#include <math.h>
#include <string.h>

#define CHAN_MAX 65536

static void
chan_free(HgChan *c)
{
    if (!c)
        return;
    g_free(c->lo);
    g_free(c->hi);
    g_free(c);
}

static HgChan *
chan_new(gint64 c)
{
    HgChan *ch = g_new0(HgChan, 1);
    ch->c = c;
    ch->lo = g_new(double, c);
    ch->hi = g_new(double, c);
    return ch;
}

static gboolean
default_domain(const HgNode *n)
{
    return !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
}

/* The channel count of a value of shape s: dims[1] when known and the rank at least 2, else 0. */
static gint64
chan_count(const HgValueShape *s)
{
    if (!s || s->rank < 2 || s->dims[1].v <= 0 || s->dims[1].v > CHAN_MAX)
        return 0;
    return s->dims[1].v;
}

/* Input k's interval in each of the c channels of the output: its own entry when its axis 1 is the
 * output's (same rank, same count), else its one interval everywhere. NULL when not finite. The
 * returned table is owned by *tmp when it had to be made. */
static const HgChan *
input_chan(const HgChanCtx *cx, guint k, gint64 c, int out_rank, HgChan **tmp)
{
    *tmp = NULL;
    const HgValue *v = k < cx->node->n_inputs ? cx->node->inputs[k] : NULL;
    const HgRange *r = cx->inputs[k];
    if (!v || !r)
        return NULL;
    const HgChan *own = g_hash_table_lookup(cx->chans, v);
    if (own && own->c == c && cx->shapes[k] && cx->shapes[k]->rank == out_rank)
        return own;
    const HgArray *a = cx->values[k];
    if (a && !a->strings && (int)a->rank <= out_rank && a->numel > 0) {
        /* a constant: each channel's range over the elements that broadcast into it */
        int ax = 1 - (out_rank - (int)a->rank); /* the constant's axis aligned with the channels */
        gint64 ca = ax >= 0 ? a->dims[ax] : 1;
        if (ca != 1 && ca != c)
            return NULL;
        gint64 inner = 1;
        for (guint i = (guint)MAX(ax + 1, 0); i < a->rank; i++)
            inner *= a->dims[i];
        HgChan *t = *tmp = chan_new(c);
        for (gint64 j = 0; j < c; j++)
            t->lo[j] = INFINITY, t->hi[j] = -INFINITY;
        for (gint64 i = 0; i < a->numel; i++) {
            double x = hg_array_get_f64(a, i);
            if (!isfinite(x))
                return NULL;
            gint64 j0 = ca == 1 ? 0 : (i / inner) % ca, j1 = ca == 1 ? c : j0 + 1;
            for (gint64 j = j0; j < j1; j++) {
                t->lo[j] = MIN(t->lo[j], x);
                t->hi[j] = MAX(t->hi[j], x);
            }
        }
        return t;
    }
    if (!hg_range_bounded(r))
        return NULL;
    HgChan *t = *tmp = chan_new(c);
    for (gint64 j = 0; j < c; j++)
        t->lo[j] = r->lo, t->hi[j] = r->hi;
    return t;
}

static gboolean
chan_finite(const HgChan *ch)
{
    for (gint64 j = 0; j < ch->c; j++)
        if (!isfinite(ch->lo[j]) || !isfinite(ch->hi[j]) || ch->lo[j] > ch->hi[j])
            return FALSE;
    return TRUE;
}

/* The FP32 (or FP64) rounding of a sum of k terms whose magnitudes add up to mag. */
static double
sum_slack(int dtype, gint64 k, double mag)
{
    const double u = dtype == HG_DTYPE_DOUBLE ? 0x1p-53 : 0x1p-24;
    return (double)(MAX(k, 0) + 2) * 2 * u * mag;
}

/* ---------------------------------------------------------------- the rules */

/* Conv: output channel m from the input channels of its group and m's own weights. Padding adds
 * zeros to each input channel's values. */
static HgChan *
chan_conv(const HgChanCtx *cx, gint64 c_out, int rank, int dtype)
{
    const HgArray *w = cx->values[1];
    const HgArray *b = cx->node->n_inputs > 2 && cx->node->inputs[2] ? cx->values[2] : NULL;
    if (!w || w->rank < 3 || w->dims[0] != c_out || (cx->node->n_inputs > 2 && cx->node->inputs[2] && !b))
        return NULL;
    gint64 group = hg_node_attr_int(cx->node, "group", 1);
    gint64 c_in = cx->shapes[0] ? chan_count(cx->shapes[0]) : 0;
    if (group < 1 || !c_in || c_in % group || c_out % group || w->dims[1] != c_in / group ||
        (b && b->numel != c_out))
        return NULL;
    g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)chan_free);
    HgChan *tmp;
    const HgChan *x = input_chan(cx, 0, c_in, rank, &tmp);
    if (tmp)
        g_ptr_array_add(keep, tmp);
    if (!x || !chan_finite(x))
        return NULL;
    gint64 max_pad;
    gboolean padded = hg_win_pads(cx->node, &max_pad);
    gint64 per_in = w->numel / (c_out * w->dims[1]); /* kernel positions */
    gint64 cg = c_in / group, mg = c_out / group;
    HgChan *y = chan_new(c_out);
    for (gint64 m = 0; m < c_out; m++) {
        double bias = b ? hg_array_get_f64(b, m) : 0;
        double lo = bias, hi = bias, mag = fabs(bias);
        gint64 g0 = (m / mg) * cg;
        for (gint64 cc = 0; cc < cg; cc++) {
            double xl = x->lo[g0 + cc], xh = x->hi[g0 + cc];
            if (padded)
                xl = MIN(xl, 0), xh = MAX(xh, 0);
            double xm = MAX(fabs(xl), fabs(xh));
            gint64 base = (m * cg + cc) * per_in;
            for (gint64 i = 0; i < per_in; i++) {
                double wv = hg_array_get_f64(w, base + i);
                if (wv >= 0)
                    lo += wv * xl, hi += wv * xh;
                else
                    lo += wv * xh, hi += wv * xl;
                mag += fabs(wv) * xm;
            }
        }
        double e = sum_slack(dtype, cg * per_in, mag);
        y->lo[m] = lo - e, y->hi[m] = hi + e;
    }
    return y;
}

/* BatchNormalization in inference: channel c is x * s + t with s = scale / sqrt(var + eps) and
 * t = B - mean * s, each computed with a few roundings. */
static HgChan *
chan_batchnorm(const HgChanCtx *cx, gint64 c, int rank, int dtype)
{
    if (cx->node->n_outputs > 1 && cx->node->outputs[1])
        return NULL;
    if (hg_node_attr_int(cx->node, "training_mode", 0))
        return NULL;
    for (guint k = 1; k < 5; k++)
        if (k >= cx->n_inputs || !cx->values[k] || cx->values[k]->numel != c)
            return NULL;
    HgChan *tmp;
    const HgChan *x = input_chan(cx, 0, c, rank, &tmp);
    g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)chan_free);
    if (tmp)
        g_ptr_array_add(keep, tmp);
    if (!x || !chan_finite(x))
        return NULL;
    double eps = hg_node_attr_float(cx->node, "epsilon", 1e-5f);
    HgChan *y = chan_new(c);
    for (gint64 j = 0; j < c; j++) {
        double sc = hg_array_get_f64(cx->values[1], j), bb = hg_array_get_f64(cx->values[2], j);
        double mean = hg_array_get_f64(cx->values[3], j), var = hg_array_get_f64(cx->values[4], j);
        if (!(var + eps > 0) || !isfinite(sc) || !isfinite(bb) || !isfinite(mean) || !isfinite(var)) {
            chan_free(y);
            return NULL;
        }
        double s = sc / sqrt(var + eps);
        double a = (x->lo[j] - mean) * s, bnd = (x->hi[j] - mean) * s;
        double lo = MIN(a, bnd) + bb, hi = MAX(a, bnd) + bb;
        /* FP32 kernels round var + eps, the square root, the quotient, the difference, the product
         * and the sum: relative 2^-20 of the terms' magnitudes covers them with room */
        double mag = (MAX(fabs(x->lo[j]), fabs(x->hi[j])) + fabs(mean)) * fabs(s) + fabs(bb);
        double e = mag * (dtype == HG_DTYPE_DOUBLE ? 0x1p-48 : 0x1p-19);
        y->lo[j] = lo - e, y->hi[j] = hi + e;
    }
    return y;
}

/* Elementwise ops of one input with a monotone nondecreasing map per channel (Relu, LeakyRelu with a
 * nonnegative slope, Clip with constant bounds), and the copies. */
static HgChan *
chan_unary(const HgChanCtx *cx, gint64 c, int rank, double clo, double chi, double slope)
{
    HgChan *tmp;
    const HgChan *x = input_chan(cx, 0, c, rank, &tmp);
    if (!x || !g_hash_table_lookup(cx->chans, cx->node->inputs[0])) {
        chan_free(tmp);
        return NULL; /* nothing per channel to carry */
    }
    HgChan *y = chan_new(c);
    for (gint64 j = 0; j < c; j++) {
        double lo = x->lo[j], hi = x->hi[j];
        if (slope >= 0) { /* LeakyRelu: x < 0 -> slope x */
            lo = lo < 0 ? slope * lo : lo;
            hi = hi < 0 ? slope * hi : hi;
        }
        y->lo[j] = MIN(MAX(lo, clo), chi);
        y->hi[j] = MIN(MAX(hi, clo), chi);
    }
    chan_free(tmp);
    return y;
}

/* Add, Sub, Mul, Div of two inputs, each per channel, constant per channel or one interval. */
static HgChan *
chan_binary(const HgChanCtx *cx, gint64 c, int rank, char op)
{
    if (cx->n_inputs != 2)
        return NULL;
    gboolean any = FALSE; /* something differs by channel: an input's table or a constant's values */
    for (guint k = 0; k < 2; k++) {
        const HgValue *v = cx->node->inputs[k];
        const HgChan *own = v ? g_hash_table_lookup(cx->chans, v) : NULL;
        const HgArray *a = cx->values[k];
        any = any || (own && own->c == c && cx->shapes[k] && cx->shapes[k]->rank == rank) ||
              (a && (int)a->rank >= rank - 1 && a->rank <= (guint)rank && a->dims[1 - (rank - (int)a->rank)] == c);
    }
    if (!any)
        return NULL;
    HgChan *ta, *tb;
    const HgChan *a = input_chan(cx, 0, c, rank, &ta), *b = input_chan(cx, 1, c, rank, &tb);
    HgChan *y = a && b ? chan_new(c) : NULL;
    double sa = 1; /* x * Sigmoid(a x): channel by channel, x's channel through the function */
    int sx = op == '*' ? hg_silu_operand(cx->node, &sa) : -1;
    for (gint64 j = 0; y && j < c; j++) {
        HgRange ra = hg_range_exact(a->lo[j], a->hi[j]), rb = hg_range_exact(b->lo[j], b->hi[j]);
        HgRange r = op == '+' ? hg_range_add(ra, rb) : op == '-' ? hg_range_sub(ra, rb)
                    : op == '*' ? hg_range_mul(ra, rb) : hg_range_div(ra, rb);
        if (sx >= 0) {
            HgRange f = hg_range_silu(sx ? rb : ra, sa, cx->shapes[sx] ? cx->shapes[sx]->dtype : HG_DTYPE_FLOAT);
            r.lo = MAX(r.lo, f.lo);
            r.hi = MIN(r.hi, f.hi);
        }
        y->lo[j] = r.lo, y->hi[j] = r.hi;
    }
    chan_free(ta);
    chan_free(tb);
    if (y && !chan_finite(y))
        g_clear_pointer(&y, chan_free);
    return y;
}

/* Pools: each output channel is a max or an average of its own input channel's values (and of the
 * pool's zero padding where an average counts it). n: the values one output averages (0 for max). */
static HgChan *
chan_pool(const HgChanCtx *cx, gint64 c, int rank, int dtype, gboolean average, gboolean global)
{
    gboolean with_zero = FALSE;
    gint64 n = 0;
    if (!global) {
        gint64 max_pad;
        gboolean pads = hg_win_pads(cx->node, &max_pad);
        gint64 ext = hg_pool_window_extent(cx->node);
        guint nd = 0;
        const gint64 *ds = hg_attr_ints(cx->node, "dilations", &nd);
        for (guint i = 0; ds && i < nd; i++)
            if (ds[i] != 1)
                return NULL; /* holes: a window may fall between the values */
        if (!ext || hg_node_attr_int(cx->node, "ceil_mode", 0) || (pads && max_pad >= ext))
            return NULL; /* a window of padding only */
        with_zero = average && pads && hg_node_attr_int(cx->node, "count_include_pad", 0);
        guint nk = 0;
        const gint64 *ks = hg_attr_ints(cx->node, "kernel_shape", &nk);
        n = 1;
        for (guint i = 0; i < nk; i++)
            n *= MAX(ks[i], 1);
    } else if (average) {
        const HgValueShape *s = cx->shapes[0];
        n = 1;
        for (int i = 2; s && i < s->rank; i++)
            n = n < 0 || s->dims[i].v <= 0 ? -1 : n * s->dims[i].v;
        if (!s || n <= 0)
            return NULL; /* an empty window: 0 / 0 */
    }
    HgChan *y = chan_unary(cx, c, rank, -INFINITY, INFINITY, -1);
    for (gint64 j = 0; y && j < c; j++) {
        if (with_zero)
            y->lo[j] = MIN(y->lo[j], 0), y->hi[j] = MAX(y->hi[j], 0);
        if (average) {
            double e = sum_slack(dtype, n, MAX(fabs(y->lo[j]), fabs(y->hi[j])));
            y->lo[j] -= e, y->hi[j] += e;
        }
    }
    return y;
}

/* Pad in constant mode on the spatial axes: each channel gains the padding value. */
static HgChan *
chan_pad(const HgChanCtx *cx, gint64 c, int rank)
{
    g_autofree char *mode = hg_attr_string(cx->node, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "edge") && strcmp(mode, "reflect"))
        return NULL;
    guint np = 0;
    const gint64 *pads = hg_attr_ints(cx->node, "pads", &np);
    g_autofree gint64 *pv = NULL;
    double value = hg_node_attr_float(cx->node, "value", 0);
    if (!pads) {
        const HgArray *pa = cx->n_inputs > 1 ? cx->values[1] : NULL;
        if (!pa || pa->rank != 1 || cx->n_inputs > 3)
            return NULL; /* the axes input (opset 18) is not followed */
        np = (guint)pa->numel;
        pv = g_new(gint64, np + 1);
        for (guint i = 0; i < np; i++)
            pv[i] = hg_array_get_i64(pa, i);
        pads = pv;
        const HgArray *va = cx->n_inputs > 2 && cx->node->inputs[2] ? cx->values[2] : NULL;
        if (cx->n_inputs > 2 && cx->node->inputs[2] && (!va || va->numel != 1))
            return NULL;
        value = va ? hg_array_get_f64(va, 0) : 0;
    }
    if (np != 2 * (guint)rank || pads[1] || pads[1 + rank])
        return NULL;
    gboolean any = FALSE;
    for (guint i = 0; i < np; i++)
        any = any || pads[i] != 0;
    HgChan *y = chan_unary(cx, c, rank, -INFINITY, INFINITY, -1);
    for (gint64 j = 0; y && any && !strcmp(mode, "constant") && j < c; j++)
        y->lo[j] = MIN(y->lo[j], value), y->hi[j] = MAX(y->hi[j], value);
    if (y && !chan_finite(y))
        g_clear_pointer(&y, chan_free);
    return y;
}

/* Concat: along the channels, the inputs' channels one after the other; along another axis, the
 * union channel by channel. */
static HgChan *
chan_concat(const HgChanCtx *cx, gint64 c, int rank)
{
    gint64 axis = hg_node_attr_int(cx->node, "axis", 1);
    if (axis < 0)
        axis += rank;
    gboolean any = FALSE;
    for (guint k = 0; k < cx->n_inputs; k++)
        any = any || (cx->node->inputs[k] && g_hash_table_lookup(cx->chans, cx->node->inputs[k]));
    if (!any)
        return NULL;
    HgChan *y = chan_new(c);
    gint64 at = 0;
    for (gint64 j = 0; j < c; j++)
        y->lo[j] = INFINITY, y->hi[j] = -INFINITY;
    for (guint k = 0; k < cx->n_inputs; k++) {
        gint64 ck = axis == 1 ? chan_count(cx->shapes[k]) : c;
        HgChan *tmp;
        const HgChan *x = ck > 0 && at + ck <= c ? input_chan(cx, k, ck, rank, &tmp) : NULL;
        if (!x) {
            chan_free(y);
            return NULL;
        }
        for (gint64 j = 0; j < ck; j++) {
            gint64 o = axis == 1 ? at + j : j;
            y->lo[o] = MIN(y->lo[o], x->lo[j]);
            y->hi[o] = MAX(y->hi[o], x->hi[j]);
        }
        chan_free(tmp);
        if (axis == 1)
            at += ck;
    }
    if ((axis == 1 && at != c) || !chan_finite(y))
        g_clear_pointer(&y, chan_free);
    return y;
}

/* Reshape, Flatten, Squeeze: the channels survive when axis 1 keeps its count and everything after it
 * is 1 on both sides (a pooled [N, C, 1, 1] to [N, C]). */
static HgChan *
chan_reshape(const HgChanCtx *cx, gint64 c, int rank)
{
    const HgValueShape *s = cx->shapes[0], *o = cx->out_shape;
    if (!s || chan_count(s) != c || o->rank < 2)
        return NULL;
    for (int i = 2; i < s->rank; i++)
        if (s->dims[i].v != 1)
            return NULL;
    for (int i = 2; i < o->rank; i++)
        if (o->dims[i].v != 1)
            return NULL;
    HgChan *tmp;
    const HgChan *x = input_chan(cx, 0, c, s->rank, &tmp);
    HgChan *y = x && g_hash_table_lookup(cx->chans, cx->node->inputs[0]) ? chan_new(c) : NULL;
    for (gint64 j = 0; y && j < c; j++)
        y->lo[j] = x->lo[j], y->hi[j] = x->hi[j];
    chan_free(tmp);
    (void)rank;
    return y;
}

/* Gemm (A not transposed) and MatMul of [N, K] rows with constant [K, M] weights: output feature j is
 * sum_k A_k B_kj, from each k's own interval. */
static HgChan *
chan_gemm(const HgChanCtx *cx, gint64 m_out, int dtype, gboolean gemm)
{
    const HgValueShape *as = cx->shapes[0];
    const HgArray *b = cx->values[1];
    if (!as || as->rank != 2 || !b || b->rank != 2 || cx->values[0])
        return NULL;
    gboolean tb = gemm && hg_node_attr_int(cx->node, "transB", 0);
    if (gemm && hg_node_attr_int(cx->node, "transA", 0))
        return NULL;
    gint64 k = tb ? b->dims[1] : b->dims[0];
    if ((tb ? b->dims[0] : b->dims[1]) != m_out || chan_count(as) != k)
        return NULL;
    double alpha = gemm ? hg_node_attr_float(cx->node, "alpha", 1) : 1;
    double beta = gemm ? hg_node_attr_float(cx->node, "beta", 1) : 1;
    HgChan *tc = NULL;
    const HgChan *cc = NULL;
    if (gemm && cx->n_inputs > 2 && cx->node->inputs[2]) {
        if (!cx->values[2])
            return NULL;
        cc = input_chan(cx, 2, m_out, 2, &tc);
        if (!cc) 
            return NULL;
    }
    HgChan *tmp;
    const HgChan *x = input_chan(cx, 0, k, 2, &tmp);
    HgChan *y = x && chan_finite(x) && g_hash_table_lookup(cx->chans, cx->node->inputs[0]) ? chan_new(m_out) : NULL;
    for (gint64 j = 0; y && j < m_out; j++) {
        double lo = 0, hi = 0, mag = 0;
        for (gint64 i = 0; i < k; i++) {
            double wv = alpha * hg_array_get_f64(b, tb ? j * k + i : i * m_out + j);
            if (wv >= 0)
                lo += wv * x->lo[i], hi += wv * x->hi[i];
            else
                lo += wv * x->hi[i], hi += wv * x->lo[i];
            mag += fabs(wv) * MAX(fabs(x->lo[i]), fabs(x->hi[i]));
        }
        if (cc) {
            double c0 = beta * cc->lo[j], c1 = beta * cc->hi[j];
            lo += MIN(c0, c1), hi += MAX(c0, c1);
            mag += MAX(fabs(c0), fabs(c1));
        }
        double e = sum_slack(dtype, k + 1, mag) + mag * 0x1p-22; /* alpha, beta: one more rounding */
        y->lo[j] = lo - e, y->hi[j] = hi + e;
    }
    chan_free(tmp);
    chan_free(tc);
    if (y && !chan_finite(y))
        g_clear_pointer(&y, chan_free);
    return y;
}

HgChan *
hg_chan_rule(const HgChanCtx *cx)
{
    const HgNode *n = cx->node;
    const HgValueShape *o = cx->out_shape;
    if (!n->n_outputs || !n->outputs[0] || !default_domain(n) || !o || o->value || cx->n_inputs < 1 ||
        !n->inputs[0] || (o->dtype != HG_DTYPE_FLOAT && o->dtype != HG_DTYPE_DOUBLE))
        return NULL;
    gint64 c = chan_count(o);
    if (!c)
        return NULL;
    int rank = o->rank, dt = o->dtype;
    const char *op = n->op_type;
    if (!strcmp(op, "Conv"))
        return cx->n_inputs >= 2 ? chan_conv(cx, c, rank, dt) : NULL;
    if (!strcmp(op, "BatchNormalization"))
        return chan_batchnorm(cx, c, rank, dt);
    if (!strcmp(op, "Relu"))
        return chan_unary(cx, c, rank, 0, INFINITY, -1);
    if (!strcmp(op, "LeakyRelu")) {
        double a = hg_node_attr_float(n, "alpha", 0.01f);
        return a >= 0 ? chan_unary(cx, c, rank, -INFINITY, INFINITY, a) : NULL;
    }
    if (!strcmp(op, "Clip")) {
        double lo = hg_node_attr_float(n, "min", -INFINITY), hi = hg_node_attr_float(n, "max", INFINITY);
        for (guint k = 1; k < 3 && k < cx->n_inputs; k++) {
            if (!n->inputs[k])
                continue;
            const HgArray *a = cx->values[k];
            if (!a || a->numel != 1)
                return NULL;
            double v = hg_array_get_f64(a, 0);
            if (isnan(v))
                return NULL;
            if (k == 1)
                lo = v;
            else
                hi = v;
        }
        return lo <= hi ? chan_unary(cx, c, rank, lo, hi, -1) : NULL;
    }
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout"))
        return chan_unary(cx, c, rank, -INFINITY, INFINITY, -1);
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"))
        return chan_binary(cx, c, rank, op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[0] == 'M' ? '*' : '/');
    if (!strcmp(op, "MaxPool"))
        return chan_pool(cx, c, rank, dt, FALSE, FALSE);
    if (!strcmp(op, "AveragePool"))
        return chan_pool(cx, c, rank, dt, TRUE, FALSE);
    if (!strcmp(op, "GlobalMaxPool"))
        return chan_pool(cx, c, rank, dt, FALSE, TRUE);
    if (!strcmp(op, "GlobalAveragePool"))
        return chan_pool(cx, c, rank, dt, TRUE, TRUE);
    if (!strcmp(op, "Pad"))
        return chan_pad(cx, c, rank);
    if (!strcmp(op, "Concat"))
        return chan_concat(cx, c, rank);
    if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze"))
        return chan_reshape(cx, c, rank);
    if (!strcmp(op, "Gemm") || (!strcmp(op, "MatMul") && rank == 2))
        return cx->n_inputs >= 2 ? chan_gemm(cx, c, dt, op[0] == 'G') : NULL;
    return NULL;
}

void
hg_chan_free(HgChan *c)
{
    chan_free(c);
}
