/* avgpool_integral: an integral-image box filter becomes the AveragePool it computes. FP16 cannot
 * hold the prefix sums (they overflow, or cancel in the Subs with 11 bits left); AveragePool sums
 * each window on its own, so it runs all FP16 and is exact.
 *
 *     s = CumSum <axis=H> (CumSum <axis=W> (x))     either order; zero Pads before, between or after
 *     s = Pad(s, [0,0,1,1, 0,0,0,0])                the CumSums; float Casts anywhere in the chain
 *     s1 = Slice(s, [0,0], [-k,-k], [2,3])
 *     s2 = Slice(s, [0,k], [-k,end], [2,3])                  y = AveragePool <kernel_shape = [k,k],
 *     s3 = Slice(s, [k,0], [end,-k], [2,3])          =>          pads, strides, count_include_pad = 1>
 *     s4 = Slice(s, [k,k], [end,end], [2,3])                     (x)
 *     y = Div(s4 + s1 - s2 - s3, k * k)              any association of the Adds and Subs; or Mul by
 *                                                    1/(k*k); slices may be chains of Slices
 *
 * and the 1-D form: y = Div(Slice(s, k, end) - Slice(s, 0, -k), k) over one CumSum (kernel 1 on the
 * other spatial axes). The window, its padding and strides come from the slices' offsets and steps
 * and from the Pads; the pass then checks, position by position along each axis, that the two
 * prefix sums a window reads differ by exactly that window of x (clipped to x, the rest being
 * padding): CumSums inclusive and forward over spatial axes (2 and up), Pads constant with value 0
 * and only on the pooled axes, the divisor exactly the window's area (count_include_pad=1: padding
 * counts). Windows that start after x's first element (no zero leads the prefix sums, so window i
 * is x[i+1 .. i+k]) or stop before its last read a Slice of x. The 1-D form may also run over axis
 * 0 or 1, or over a tensor of rank 1 or 2 (a moving average over time in [batch, time, channels], a
 * [1, n] signal): x is then reshaped to [before, 1, length, after] for a [k, 1] pool, and the result
 * back, one symbolic dim taken as -1. Dims along the pooled axes must be static. Anything else stays
 * as it is; its CumSum hazards then keep the prefix sums FP32 (assign_precision), and a note says
 * why it did not match.
 */
#include "halfguard/pass.h"
#include "ir_private.h"
#include "ops/array.h"
#include "shapes.h"

#include <string.h>

#define PASS "avgpool_integral"
#define MAX_LEN (1 << 24) /* longest axis simulated, padding included */

typedef struct {
    HgGraph *g;
    const HgShapes *s;
} Scan;

/* Where one corner of the windows reads the integral image: per axis, the first position, the step
 * and the count (a full axis is 0, 1, its length). */
typedef struct {
    int sign;
    gint64 start[HG_MAX_RANK], step[HG_MAX_RANK], count[HG_MAX_RANK];
} Leaf;

typedef struct {
    GHashTable *nodes;  /* every node of the instance (removed once nothing else reads them) */
    GPtrArray *chain;   /* Pad, CumSum and Cast nodes from the top down to the integral image */
    HgValue *x;         /* AveragePool's input */
    HgValue *integral;  /* the value the slices read */
    HgNode *cumsum;     /* the CumSum that completes the integral image (for the note) */
    HgNode *div;        /* the division; its output becomes AveragePool's */
    int rank;
    guint naxes;
    gint64 axes[2];     /* pooled axes, ascending */
    gint64 kernel[HG_MAX_RANK], pads[2 * HG_MAX_RANK], strides[HG_MAX_RANK]; /* spatial axes */
    /* The part of x the windows read, per pooled axis: [cut_begin, cut_end) (a Slice of x where it
     * is not all of it: windows that start after x's first element or stop before its last). */
    gint64 cut_begin[2], cut_end[2];
    gboolean cut;       /* some pooled axis is cut */
    /* The 1-D form over axis 0 or 1, or over a tensor of rank 1 or 2: x (cut) is reshaped to
     * [before, 1, length, after] for an AveragePool of kernel [k, 1], and the result back. */
    gboolean flat;
    const char *why;    /* why a recognized instance did not match (static string) */
} Match;

static void
match_clear(Match *mt)
{
    g_clear_pointer(&mt->nodes, g_hash_table_unref);
    g_clear_pointer(&mt->chain, g_ptr_array_unref);
}

static gboolean
fail(Match *mt, const char *why)
{
    mt->why = why;
    return FALSE;
}

/* ---------------------------------------------------------------- small queries */

static gboolean
is_float_cast(const Scan *sc, const HgNode *n)
{
    if (!hg_node_is(n, "Cast") || n->n_inputs < 1 || !n->inputs[0] || n->n_outputs != 1 || !n->outputs[0])
        return FALSE;
    return hg_dtype_is_float(hg_shapes_dtype(sc->s, n->inputs[0])) &&
           hg_dtype_is_float(hg_shapes_dtype(sc->s, n->outputs[0]));
}

static const HgArray *
const_of(const Scan *sc, const HgValue *v)
{
    return v ? hg_shapes_get(sc->s, v)->value : NULL;
}

/* The integers of a constant input; FALSE when absent, not constant, not integer or too long. */
static gboolean
const_ints(const Scan *sc, const HgValue *v, gint64 *out, guint *n, guint max)
{
    const HgArray *a = const_of(sc, v);
    if (!a || a->numel > (gint64)max || (a->dtype != HG_DTYPE_INT64 && a->dtype != HG_DTYPE_INT32))
        return FALSE;
    for (gint64 i = 0; i < a->numel; i++)
        out[i] = hg_array_get_i64(a, i);
    *n = (guint)a->numel;
    return TRUE;
}

static gboolean
static_dim(const Scan *sc, const HgValue *v, gint64 axis, gint64 *len)
{
    const HgValueShape *vs = hg_shapes_get(sc->s, v);
    if (vs->rank <= axis || vs->dims[axis].v < 0)
        return FALSE;
    *len = vs->dims[axis].v;
    return TRUE;
}

/* Up from v through float Casts (which join the instance). */
static HgValue *
skip_casts(const Scan *sc, Match *mt, HgValue *v)
{
    while (v->producer && is_float_cast(sc, v->producer)) {
        g_hash_table_add(mt->nodes, v->producer);
        v = v->producer->inputs[0];
    }
    return v;
}

/* A node's name for the notes: its name, else its first output's. */
static const char *
label(const HgNode *n)
{
    if (!n)
        return "";
    if (n->name && *n->name)
        return n->name;
    return n->n_outputs && n->outputs[0] ? n->outputs[0]->name : "";
}

static gboolean
is_pooled(const Match *mt, gint64 axis)
{
    for (guint i = 0; i < mt->naxes; i++)
        if (mt->axes[i] == axis)
            return TRUE;
    return FALSE;
}

/* ---------------------------------------------------------------- the combination and the slices */

/* The slices that read one corner: composed into leaf's start/step/count per axis. Returns the
 * value they slice (through float Casts), or NULL when a Slice is not constant or steps backwards. */
static HgValue *
slice_chain(const Scan *sc, Match *mt, HgValue *v, Leaf *leaf, int rank)
{
    /* collect the Slices bottom-up, then compose top-down */
    HgNode *sl[8];
    guint n = 0;
    for (;;) {
        v = skip_casts(sc, mt, v);
        if (!hg_node_is(v->producer, "Slice"))
            break;
        if (n == G_N_ELEMENTS(sl))
            return NULL;
        sl[n++] = v->producer;
        v = v->producer->inputs[0];
        if (!v)
            return NULL;
    }
    for (int d = 0; d < rank; d++) {
        leaf->start[d] = 0;
        leaf->step[d] = 1;
        leaf->count[d] = -1; /* the whole axis, length not needed */
    }
    for (guint j = n; j-- > 0;) {
        HgNode *s = sl[j];
        gint64 starts[HG_MAX_RANK], ends[HG_MAX_RANK], axes[HG_MAX_RANK], steps[HG_MAX_RANK];
        guint ns, ne, na = 0, nst = 0;
        if (s->n_inputs < 3 || !const_ints(sc, s->inputs[1], starts, &ns, HG_MAX_RANK) ||
            !const_ints(sc, s->inputs[2], ends, &ne, HG_MAX_RANK) || ns != ne)
            return NULL;
        if (s->n_inputs > 3 && s->inputs[3]) {
            if (!const_ints(sc, s->inputs[3], axes, &na, HG_MAX_RANK) || na != ns)
                return NULL;
        } else {
            for (guint i = 0; i < ns; i++)
                axes[i] = i;
        }
        if (s->n_inputs > 4 && s->inputs[4]) {
            if (!const_ints(sc, s->inputs[4], steps, &nst, HG_MAX_RANK) || nst != ns)
                return NULL;
        } else {
            for (guint i = 0; i < ns; i++)
                steps[i] = 1;
        }
        for (guint i = 0; i < ns; i++) {
            gint64 a = axes[i] < 0 ? axes[i] + rank : axes[i], len;
            if (a < 0 || a >= rank || steps[i] < 1 || !static_dim(sc, s->inputs[0], a, &len))
                return NULL;
            gint64 b = starts[i] < 0 ? starts[i] + len : starts[i];
            gint64 e = ends[i] < 0 ? ends[i] + len : ends[i];
            b = CLAMP(b, 0, len);
            e = CLAMP(e, 0, len);
            gint64 cnt = e > b ? (e - b + steps[i] - 1) / steps[i] : 0;
            /* position p of this slice reads its input at b + p*step, which reads the axis at
             * start + (b + p*step)*leaf step */
            leaf->start[a] += b * leaf->step[a];
            leaf->step[a] *= steps[i];
            leaf->count[a] = cnt;
        }
        g_hash_table_add(mt->nodes, s);
    }
    return v;
}

/* The signed terms of an Add/Sub (and Neg) tree over v, each a slice chain of one integral image.
 * FALSE when there are too many terms or a term is not a slice of *integral. */
static gboolean
collect_terms(const Scan *sc, Match *mt, HgValue *v, int sign, GArray *leaves, HgValue **integral,
              int rank, int depth)
{
    if (depth > 8)
        return FALSE;
    v = skip_casts(sc, mt, v);
    HgNode *p = v->producer;
    if ((hg_node_is(p, "Add") || hg_node_is(p, "Sub")) && p->n_inputs == 2 && p->inputs[0] && p->inputs[1]) {
        g_hash_table_add(mt->nodes, p);
        return collect_terms(sc, mt, p->inputs[0], sign, leaves, integral, rank, depth + 1) &&
               collect_terms(sc, mt, p->inputs[1], hg_node_is(p, "Sub") ? -sign : sign, leaves, integral, rank,
                             depth + 1);
    }
    if (hg_node_is(p, "Neg") && p->inputs[0]) {
        g_hash_table_add(mt->nodes, p);
        return collect_terms(sc, mt, p->inputs[0], -sign, leaves, integral, rank, depth + 1);
    }
    if (leaves->len == 4)
        return FALSE;
    Leaf leaf = {.sign = sign};
    HgValue *src = slice_chain(sc, mt, v, &leaf, rank);
    if (!src || (*integral && src != *integral))
        return FALSE;
    *integral = src;
    g_array_append_val(leaves, leaf);
    return TRUE;
}

/* ---------------------------------------------------------------- the integral image */

/* A Pad the pattern can absorb: constant mode, value 0, pads >= 0 and only on spatial axes (strict:
 * only on the pooled ones, which must be known by then). Its per-axis pads go to begin/end. */
static gboolean
zero_pad(const Scan *sc, const Match *mt, const HgNode *p, int rank, gint64 *begin, gint64 *end, gboolean strict)
{
    g_autofree char *mode = hg_attr_string(p, "mode", "constant");
    gint64 pads[2 * HG_MAX_RANK], axes[HG_MAX_RANK];
    guint np, na;
    if (strcmp(mode, "constant") != 0 || p->n_inputs < 2 || !p->inputs[0] ||
        !const_ints(sc, p->inputs[1], pads, &np, 2 * HG_MAX_RANK))
        return FALSE;
    if (p->n_inputs > 2 && p->inputs[2]) {
        const HgArray *c = const_of(sc, p->inputs[2]);
        if (!c || c->numel != 1 || hg_array_get_f64(c, 0) != 0.0)
            return FALSE;
    }
    if (p->n_inputs > 3 && p->inputs[3]) {
        if (!const_ints(sc, p->inputs[3], axes, &na, HG_MAX_RANK))
            return FALSE;
    } else {
        na = (guint)rank;
        for (guint i = 0; i < na; i++)
            axes[i] = i;
    }
    if (np != 2 * na)
        return FALSE;
    for (int d = 0; d < rank; d++)
        begin[d] = end[d] = 0;
    for (guint i = 0; i < na; i++) {
        gint64 a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank || pads[i] < 0 || pads[na + i] < 0 || pads[i] > MAX_LEN ||
            pads[na + i] > MAX_LEN)
            return FALSE;
        begin[a] += pads[i];
        end[a] += pads[na + i];
    }
    for (int d = 0; d < rank; d++)
        if ((begin[d] || end[d]) && strict && !is_pooled(mt, d))
            return FALSE;
    return TRUE;
}

/* CumSum's axis, normalized; -1 unless constant, inclusive and forward. */
static gint64
cumsum_axis(const Scan *sc, const HgNode *c, int rank)
{
    gint64 ax[1];
    guint n;
    if (c->n_inputs < 2 || !c->inputs[0] || !const_ints(sc, c->inputs[1], ax, &n, 1) || n != 1 ||
        hg_node_attr_int(c, "exclusive", 0) != 0 || hg_node_attr_int(c, "reverse", 0) != 0)
        return -1;
    gint64 a = ax[0] < 0 ? ax[0] + rank : ax[0];
    return a >= 0 && a < rank ? a : -1;
}

/* Up from the integral image: zero Pads, the CumSums (naxes of them, on distinct spatial axes) and
 * float Casts, into mt->chain (top first). Above the last CumSum found, a Pad joins only when the
 * chain alone reads it and absorb_pre says so; x becomes what the chain's top reads. */
static gboolean
walk_chain(const Scan *sc, Match *mt, guint naxes, gboolean absorb_pre)
{
    HgValue *v = mt->integral;
    guint found = 0;
    gint64 begin[HG_MAX_RANK], end[HG_MAX_RANK];
    g_ptr_array_set_size(mt->chain, 0);
    mt->naxes = 0;
    for (;;) {
        HgNode *p = v->producer;
        if (!p)
            break;
        if (is_float_cast(sc, p)) {
            /* Casts above the CumSums stay outside: x is picked among them */
            if (found == naxes)
                break;
        } else if (hg_node_is(p, "CumSum")) {
            if (found == naxes)
                break;
            gint64 a = cumsum_axis(sc, p, mt->rank);
            if (a < 0)
                return fail(mt, "a CumSum is exclusive, reversed, or its axis is not constant");
            if (a < 2 && naxes > 1)
                return fail(mt, "a CumSum runs over the batch or channel axis");
            if (is_pooled(mt, a))
                return fail(mt, "two CumSums run over the same axis");
            mt->axes[mt->naxes++] = a;
            found++;
        } else if (hg_node_is(p, "Pad")) {
            if (found == naxes && (!absorb_pre || v->uses->len != 1 || v->is_output || v->nested_outputs ||
                                   !zero_pad(sc, mt, p, mt->rank, begin, end, TRUE)))
                break;
            if (found < naxes && !zero_pad(sc, mt, p, mt->rank, begin, end, FALSE))
                return fail(mt, "a Pad in the chain is not a zero constant pad");
        } else {
            break;
        }
        g_ptr_array_insert(mt->chain, 0, p);
        v = p->inputs[0];
    }
    if (found < naxes)
        return fail(mt, "fewer CumSums than the slices' corners need");
    if (mt->axes[0] > mt->axes[naxes - 1]) {
        gint64 t = mt->axes[0];
        mt->axes[0] = mt->axes[1];
        mt->axes[1] = t;
    }
    /* Pads on non-pooled axes were allowed while the axes were not all known: check them again. */
    for (guint i = 0; i < mt->chain->len; i++)
        if (hg_node_is(mt->chain->pdata[i], "Pad") &&
            !zero_pad(sc, mt, mt->chain->pdata[i], mt->rank, begin, end, TRUE))
            return fail(mt, "a Pad in the chain pads an axis that is not pooled");
    mt->x = v;
    return TRUE;
}

/* Along pooled axis a: for each position of the integral image, how many of x's leading elements
 * its prefix sum holds (it sums x[0..m) along a). *lead gets the padding in front of x's first
 * element, all Pads together. NULL when the axis is too long or not static. */
static gint64 *
prefix_counts(const Scan *sc, const Match *mt, gint64 a, gint64 xlen, gint64 *len, gint64 *lead)
{
    gint64 total = xlen;
    for (guint i = 0; i < mt->chain->len; i++) {
        HgNode *p = mt->chain->pdata[i];
        gint64 begin[HG_MAX_RANK], end[HG_MAX_RANK];
        if (hg_node_is(p, "Pad")) {
            zero_pad(sc, mt, p, mt->rank, begin, end, TRUE);
            total += begin[a] + end[a];
            if (total > MAX_LEN)
                return NULL;
        }
    }
    if (total > MAX_LEN)
        return NULL;
    /* before the CumSum: the index of x each position holds (-1: padding); after: the count */
    gint64 *m = g_new(gint64, total + 1), *tmp = g_new(gint64, total + 1);
    gint64 n = xlen;
    gboolean summed = FALSE;
    *lead = 0;
    for (gint64 i = 0; i < n; i++)
        m[i] = i;
    for (guint i = 0; i < mt->chain->len; i++) {
        HgNode *p = mt->chain->pdata[i];
        gint64 begin[HG_MAX_RANK], end[HG_MAX_RANK];
        if (hg_node_is(p, "Pad")) {
            zero_pad(sc, mt, p, mt->rank, begin, end, TRUE);
            gint64 fill = summed ? 0 : -1, k = 0;
            for (gint64 j = 0; j < begin[a]; j++)
                tmp[k++] = fill;
            for (gint64 j = 0; j < n; j++)
                tmp[k++] = m[j];
            for (gint64 j = 0; j < end[a]; j++)
                tmp[k++] = fill;
            memcpy(m, tmp, (gsize)k * sizeof(gint64));
            n = k;
            *lead += begin[a];
        } else if (hg_node_is(p, "CumSum") && cumsum_axis(sc, p, mt->rank) == a) {
            gint64 c = 0;
            for (gint64 j = 0; j < n; j++) {
                if (m[j] >= 0)
                    c++;
                m[j] = c;
            }
            summed = TRUE;
        }
    }
    g_free(tmp);
    *len = n;
    return m;
}

/* Whether corners lo and hi (first positions, one step, n outputs) of the integral image along one
 * axis cut out, at every output i, exactly x's window [i*step - pb, i*step - pb + k) clipped to x:
 * the AveragePool window with k, pb, pe found here, over x cut to [c0, c1) (windows that start after
 * x's first element, where no zero leads the integral image, or stop before its last: pb and pe are
 * then those of the cut x, and never negative). */
static gboolean
window_of(const gint64 *m, gint64 len, gint64 xlen, gint64 lead, gint64 lo, gint64 hi, gint64 step,
          gint64 n, gint64 *k, gint64 *pb, gint64 *pe, gint64 *c0, gint64 *c1)
{
    /* where no clipping happens the prefix at position r holds r - lead + 1 elements */
    *k = hi - lo;
    gint64 first = lo + 1 - lead; /* x's index where window 0 starts (negative: in the padding) */
    if (*k < 1 || step < 1 || n < 1 || -first >= *k || first >= xlen)
        return FALSE;
    gint64 end = first + (n - 1) * step + *k; /* where the last window ends */
    *c0 = MAX(0, first);
    *c1 = MIN(xlen, end);
    *pb = MAX(0, -first);
    *pe = MAX(0, end - xlen);
    if (*pe >= *k || *c1 <= *c0)
        return FALSE;
    for (gint64 i = 0; i < n; i++) {
        gint64 rl = lo + i * step, rh = hi + i * step, s = first + i * step;
        if (rl < 0 || rh >= len || m[rl] != CLAMP(s, 0, xlen) || m[rh] != CLAMP(s + *k, 0, xlen))
            return FALSE;
    }
    return TRUE;
}

/* The corners' signs and offsets make one window per pooled axis: each axis's (lo, hi) corner. */
static gboolean
corners(const Match *mt, const GArray *leaves, gint64 *lo, gint64 *hi)
{
    const Leaf *L = (const Leaf *)leaves->data;
    gint64 a0 = mt->axes[0];
    if (mt->naxes == 1) {
        if (L[0].sign == L[1].sign)
            return FALSE;
        const Leaf *p = L[0].sign > 0 ? &L[0] : &L[1], *q = L[0].sign > 0 ? &L[1] : &L[0];
        hi[0] = p->start[a0];
        lo[0] = q->start[a0];
        return TRUE;
    }
    gint64 a1 = mt->axes[1];
    const Leaf *plus[2], *minus[2];
    guint np = 0, nm = 0;
    for (guint i = 0; i < 4; i++) {
        if (L[i].sign > 0 && np < 2)
            plus[np++] = &L[i];
        else if (L[i].sign < 0 && nm < 2)
            minus[nm++] = &L[i];
        else
            return FALSE;
    }
    /* + (R1,C1), (R2,C2) and - (R1,C2), (R2,C1): (P_R1 - P_R2) x (Q_C1 - Q_C2) */
    gint64 r1 = plus[0]->start[a0], c1 = plus[0]->start[a1], r2 = plus[1]->start[a0], c2 = plus[1]->start[a1];
    if (r1 == r2 || c1 == c2)
        return FALSE;
    gboolean ok = (minus[0]->start[a0] == r1 && minus[0]->start[a1] == c2 && minus[1]->start[a0] == r2 &&
                   minus[1]->start[a1] == c1) ||
                  (minus[1]->start[a0] == r1 && minus[1]->start[a1] == c2 && minus[0]->start[a0] == r2 &&
                   minus[0]->start[a1] == c1);
    if (!ok)
        return FALSE;
    if (r1 < r2) {
        gint64 t = r1;
        r1 = r2;
        r2 = t;
        t = c1;
        c1 = c2;
        c2 = t;
    }
    hi[0] = r1;
    lo[0] = r2;
    hi[1] = c1;
    lo[1] = c2;
    return TRUE;
}

/* The division by the window's area: Div(comb, area) or Mul(comb, 1/area), the constant a scalar of
 * the division's type. *comb gets the other operand. */
static gboolean
division(const Scan *sc, HgNode *n, HgValue **comb, const HgArray **ca, gboolean *recip)
{
    if (n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs != 1 || !n->outputs[0])
        return FALSE;
    const HgArray *a = NULL;
    if (hg_node_is(n, "Div")) {
        a = const_of(sc, n->inputs[1]);
        *comb = n->inputs[0];
        *recip = FALSE;
    } else if (hg_node_is(n, "Mul")) {
        guint k = const_of(sc, n->inputs[1]) ? 1 : 0;
        a = const_of(sc, n->inputs[k]);
        *comb = n->inputs[1 - k];
        *recip = TRUE;
    }
    if (!a || a->numel != 1 || !hg_dtype_is_float(a->dtype) || const_of(sc, *comb))
        return FALSE;
    *ca = a;
    return TRUE;
}

/* area, or its reciprocal, as a constant of type dtype holds it */
static double
rounded(double v, int dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT:
        return (float)v;
    case HG_DTYPE_FLOAT16:
        return hg_round_half((float)v);
    case HG_DTYPE_BFLOAT16:
        return hg_bf16_to_float(hg_float_to_bf16((float)v));
    default:
        return v;
    }
}

/* Everything past the recognition: corners, windows along each axis, the divisor. */
static gboolean
check_windows(const Scan *sc, Match *mt, const GArray *leaves, HgValue *comb, const HgArray *ca,
              gboolean recip)
{
    const Leaf *L = (const Leaf *)leaves->data;
    int rank = mt->rank;
    /* corners read the non-pooled axes whole, the pooled ones with one step and count */
    for (guint i = 0; i < leaves->len; i++)
        for (int d = 0; d < rank; d++) {
            if (is_pooled(mt, d)) {
                if (L[i].count[d] < 0 || L[i].step[d] != L[0].step[d] || L[i].count[d] != L[0].count[d])
                    return fail(mt, "the slices differ in step or length");
            } else if (L[i].start[d] != 0 || L[i].step[d] != 1 ||
                       (L[i].count[d] >= 0 &&
                        L[i].count[d] != hg_shapes_get(sc->s, mt->integral)->dims[d].v)) {
                return fail(mt, "a slice cuts an axis that no CumSum runs over");
            }
        }
    gint64 lo[2], hi[2];
    if (!corners(mt, leaves, lo, hi))
        return fail(mt, "the signs and offsets of the slices do not make s1 - s2 - s3 + s4");
    /* The 1-D form over axis 0 or 1 (or a tensor of rank below 3) pools a reshaped x: its kernel,
     * strides and pads are kept at index 0 of a 2-D pool whose second axis has kernel 1. */
    mt->flat = rank < 3 || mt->axes[0] < 2;
    if (mt->flat) {
        /* the reshapes take one unknown dim (as -1): a symbolic batch */
        const HgValueShape *xs = hg_shapes_get(sc->s, mt->x), *ys = hg_shapes_get(sc->s, mt->div->outputs[0]);
        int unknown = 0;
        for (int d = 0; d < rank; d++)
            unknown += xs->dims[d].v < 0;
        gboolean same = ys->rank == rank;
        for (int d = 0; same && d < rank; d++)
            same = d == mt->axes[0] ? ys->dims[d].v >= 0 : (ys->dims[d].v < 0) == (xs->dims[d].v < 0);
        if (unknown > 1 || !same)
            return fail(mt, "the 1-D form off the spatial axes takes at most one symbolic dim");
    }
    int ns = mt->flat ? 2 : rank - 2;
    for (int d = 0; d < ns; d++) {
        mt->kernel[d] = 1;
        mt->strides[d] = 1;
        mt->pads[d] = mt->pads[ns + d] = 0;
    }
    double area = 1;
    mt->cut = FALSE;
    for (guint i = 0; i < mt->naxes; i++) {
        gint64 a = mt->axes[i], xlen, len, lead, k, pb, pe, c0, c1;
        if (!static_dim(sc, mt->x, a, &xlen))
            return fail(mt, "a pooled axis has no static length");
        g_autofree gint64 *m = prefix_counts(sc, mt, a, xlen, &len, &lead);
        if (!m)
            return fail(mt, "a pooled axis is too long to check");
        if (!window_of(m, len, xlen, lead, lo[i], hi[i], L[0].step[a], L[0].count[a], &k, &pb, &pe, &c0, &c1))
            return fail(mt, "the slice offsets do not give one window at every position");
        gint64 at = mt->flat ? 0 : a - 2;
        mt->kernel[at] = k;
        mt->strides[at] = L[0].step[a];
        mt->pads[at] = pb;
        mt->pads[ns + at] = pe;
        mt->cut_begin[i] = c0;
        mt->cut_end[i] = c1;
        mt->cut |= c0 > 0 || c1 < xlen;
        area *= (double)k;
    }
    if (hg_array_get_f64(ca, 0) != rounded(recip ? 1.0 / area : area, ca->dtype))
        return fail(mt, recip ? "the scale is not the reciprocal of the window's area"
                              : "the divisor is not the window's area");
    return TRUE;
}

static gboolean
match_at(const Scan *sc, HgNode *div, Match *mt)
{
    memset(mt, 0, sizeof(*mt));
    mt->nodes = g_hash_table_new(NULL, NULL);
    mt->chain = g_ptr_array_new();
    mt->div = div;
    HgValue *comb;
    const HgArray *ca;
    gboolean recip;
    if (!division(sc, div, &comb, &ca, &recip))
        return FALSE;
    int rank = hg_shapes_get(sc->s, comb)->rank;
    /* a scalar of higher rank would broadcast the result to more dims */
    if (rank < 1 || rank > HG_MAX_RANK || (int)ca->rank > rank)
        return FALSE;
    mt->rank = rank;
    g_autoptr(GArray) leaves = g_array_new(FALSE, TRUE, sizeof(Leaf));
    HgValue *integral = NULL;
    if (!collect_terms(sc, mt, comb, 1, leaves, &integral, rank, 0) || !integral ||
        (leaves->len != 2 && leaves->len != 4) || hg_shapes_get(sc->s, integral)->rank != rank ||
        (leaves->len == 4 && rank < 3))
        return FALSE;
    mt->integral = integral;
    /* the chain must hold a CumSum right under the slices (through Pads and Casts) to be ours */
    HgValue *v = integral;
    while (v->producer && (hg_node_is(v->producer, "Pad") || is_float_cast(sc, v->producer)))
        v = v->producer->inputs[0];
    if (!v || !hg_node_is(v->producer, "CumSum"))
        return FALSE;
    mt->cumsum = v->producer;
    guint naxes = leaves->len == 4 ? 2 : 1;
    /* x padded by the Pads above the CumSums first; those Pads left outside if that fails */
    gboolean ok = FALSE;
    for (int absorb = 1; absorb >= 0 && !ok; absorb--) {
        mt->why = NULL;
        if (!walk_chain(sc, mt, naxes, absorb))
            return FALSE;
        ok = check_windows(sc, mt, leaves, comb, ca, recip);
        if (!ok && (mt->chain->len == 0 || !hg_node_is(mt->chain->pdata[0], "Pad")))
            break;
    }
    if (!ok)
        return FALSE;
    for (guint i = 0; i < mt->chain->len; i++)
        g_hash_table_add(mt->nodes, mt->chain->pdata[i]);
    g_hash_table_add(mt->nodes, div);
    /* a Constant node holding the area goes with the division when nothing else reads it */
    for (guint i = 0; i < 2; i++)
        if (div->inputs[i] != comb && hg_node_is(div->inputs[i]->producer, "Constant"))
            g_hash_table_add(mt->nodes, div->inputs[i]->producer);
    int tx = hg_shapes_dtype(sc->s, mt->x);
    if ((tx != HG_DTYPE_FLOAT && tx != HG_DTYPE_FLOAT16 && tx != HG_DTYPE_DOUBLE) ||
        !hg_dtype_is_float(hg_shapes_dtype(sc->s, div->outputs[0])))
        return fail(mt, "x is not float, float16 or double");
    return TRUE;
}

static HgAttr *
ints_attr(const char *name, const gint64 *v, guint n)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INTS);
    a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), n);
    g_array_append_vals(a->ints, v, n);
    return a;
}

/* "8x8", "1x5" */
static char *
dims_text(const gint64 *v, guint n, const char *sep)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? sep : "", v[i]);
    return g_string_free(s, FALSE);
}

/* The AveragePool's input: the value of x's float Cast chain whose type is the result's (so no Cast
 * is needed after it), else x itself. */
static HgValue *
pick_x(const Scan *sc, const Match *mt, int want)
{
    for (HgValue *v = mt->x;; v = v->producer->inputs[0]) {
        if (hg_shapes_dtype(sc->s, v) == want)
            return v;
        if (!v->producer || !is_float_cast(sc, v->producer))
            return mt->x;
    }
}

/* A new int64[n] initializer named after base. */
static HgValue *
ints_const(HgGraph *g, const char *base, const gint64 *v, gint64 n)
{
    HgTensor *t = hg_tensor_new(NULL, HG_DTYPE_INT64, 1, &n);
    memcpy(hg_tensor_data_mut(t), v, (gsize)n * sizeof(gint64));
    return hg_graph_new_initializer(g, base, t);
}

/* A new node op(ins) writing out (a new value named after base when out is NULL), placed before
 * anchor; returns what it writes. */
static HgValue *
add_before(HgGraph *g, HgNode *anchor, const char *op, const char *base, guint n_in, HgValue *const *ins,
           HgValue *out, HgNode **node)
{
    g_autofree char *name = hg_graph_unique_name(g, base);
    if (!out) {
        g_autofree char *vname = hg_graph_unique_name(g, name);
        out = hg_graph_new_value(g, vname, NULL);
    }
    HgNode *n = hg_graph_add_node(g, op, NULL, name, n_in, ins, 1, &out);
    hg_graph_move_node_before(g, n, anchor);
    if (node)
        *node = n;
    return out;
}

static void
rewrite(const Scan *sc, const HgPassEnv *env, Match *mt)
{
    HgGraph *g = sc->g;
    HgNode *div = mt->div;
    HgValue *out = div->outputs[0];
    int Tout = hg_shapes_dtype(sc->s, out);
    HgValue *x = pick_x(sc, mt, Tout);
    for (HgValue *v = mt->x; v != x; v = v->producer->inputs[0])
        g_hash_table_add(mt->nodes, v->producer);
    guint ns = mt->flat ? 2 : (guint)mt->rank - 2;
    gboolean padded = FALSE, strided = FALSE, cut = mt->cut;
    for (guint i = 0; i < 2 * ns; i++)
        padded |= mt->pads[i] != 0;
    for (guint i = 0; i < ns; i++)
        strided |= mt->strides[i] != 1;
    g_autofree char *base = g_strdup_printf("AveragePool_%s", out->name);
    gboolean recast = hg_shapes_dtype(sc->s, x) != Tout;
    /* the windows' part of x: Slice(x, begins, ends, axes) */
    HgValue *in = x;
    if (cut) {
        g_autofree char *b = g_strdup_printf("%s_cut", base);
        g_autofree char *bs = g_strdup_printf("%s_starts", b), *be = g_strdup_printf("%s_ends", b),
                        *ba = g_strdup_printf("%s_axes", b);
        HgValue *ins[4] = {x, ints_const(g, bs, mt->cut_begin, mt->naxes), ints_const(g, be, mt->cut_end, mt->naxes),
                           ints_const(g, ba, mt->axes, mt->naxes)};
        in = add_before(g, div, "Slice", b, 4, ins, NULL, NULL);
    }
    /* the 1-D form off the spatial axes: [before, 1, length, after] */
    const HgValueShape *xs = hg_shapes_get(sc->s, mt->x), *ys = hg_shapes_get(sc->s, out);
    if (mt->flat) {
        gint64 dims[4] = {1, 1, mt->cut_end[0] - mt->cut_begin[0], 1};
        for (int d = 0; d < mt->rank; d++) {
            gint64 *at = d < mt->axes[0] ? &dims[0] : d > mt->axes[0] ? &dims[3] : NULL;
            if (at && (xs->dims[d].v < 0 || *at < 0))
                *at = -1; /* the one symbolic dim (check_windows) */
            else if (at)
                *at *= xs->dims[d].v;
        }
        g_autofree char *b = g_strdup_printf("%s_in", base), *bs = g_strdup_printf("%s_shape", b);
        HgValue *ins[2] = {in, ints_const(g, bs, dims, 4)};
        in = add_before(g, div, "Reshape", b, 2, ins, NULL, NULL);
    }
    gboolean last = !mt->flat && !recast;
    hg_node_remove(div);
    HgNode *pool;
    HgValue *y = add_before(g, div, "AveragePool", base, 1, &in, last ? out : NULL, &pool);
    hg_node_add_attr(pool, ints_attr("kernel_shape", mt->kernel, ns));
    if (padded)
        hg_node_add_attr(pool, ints_attr("pads", mt->pads, 2 * ns));
    if (strided)
        hg_node_add_attr(pool, ints_attr("strides", mt->strides, ns));
    if (padded) {
        HgAttr *a = hg_attr_new("count_include_pad", HG_ATTR_INT);
        a->i = 1;
        hg_node_add_attr(pool, a);
    }
    if (mt->flat) {
        gint64 dims[HG_MAX_RANK];
        for (int d = 0; d < ys->rank; d++)
            dims[d] = ys->dims[d].v >= 0 ? ys->dims[d].v : -1;
        g_autofree char *b = g_strdup_printf("%s_out", base), *bs = g_strdup_printf("%s_shape", b);
        HgValue *ins[2] = {y, ints_const(g, bs, dims, ys->rank)};
        y = add_before(g, div, "Reshape", b, 2, ins, recast ? NULL : out, NULL);
    }
    if (recast) {
        g_autofree char *cbase = g_strdup_printf("%s_cast", base);
        HgNode *cast;
        add_before(g, div, "Cast", cbase, 1, &y, out, &cast);
        HgAttr *a = hg_attr_new("to", HG_ATTR_INT);
        a->i = Tout;
        hg_node_add_attr(cast, a);
    }
    g_autofree char *k = dims_text(mt->kernel, mt->flat ? 1 : ns, "x");
    g_autofree char *p = mt->flat ? g_strdup_printf("%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT, mt->pads[0], mt->pads[2])
                                  : dims_text(mt->pads, 2 * ns, ",");
    g_autofree char *st = dims_text(mt->strides, mt->flat ? 1 : ns, "x");
    GString *where = g_string_new(NULL);
    if (cut) {
        for (guint i = 0; i < mt->naxes; i++)
            g_string_append_printf(where, "%s%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, i ? "," : "; of x[",
                                   mt->cut_begin[i], mt->cut_end[i]);
        g_string_append_printf(where, "] along axis %s", mt->naxes == 1 ? "" : "es ");
        for (guint i = 0; i < mt->naxes; i++)
            g_string_append_printf(where, "%s%" G_GINT64_FORMAT, i ? "," : "", mt->axes[i]);
    }
    if (mt->flat)
        g_string_append_printf(where, "; over axis %" G_GINT64_FORMAT ", reshaped", mt->axes[0]);
    hg_pass_note(env->result, PASS, "integral image '%s' -> AveragePool %s (pads %s%s%s%s)",
                 label(mt->cumsum), k, p, strided ? "; strides " : "", strided ? st : "", where->str);
    g_string_free(where, TRUE);
    /* The instance's nodes go once nothing reads them; those read elsewhere stay. */
    hg_nodes_remove_unread(mt->nodes);
}

gboolean
hg_pass_avgpool_integral(HgGraph *g, const HgPassEnv *env, GError **error)
{
    if (g->parent || !g->model)
        return TRUE;
    /* CumSum needs opset 11, and AveragePool's count_include_pad 7: an older model has no match. */
    if (hg_model_opset(g->model, "") < 11)
        return TRUE;
    g_autoptr(HgShapes) s = hg_shapes_infer_specs(g, hg_convert_options_analysis(env->options)->shapes, error);
    if (!s)
        return FALSE;
    Scan sc = {g, s};
    g_autoptr(GArray) matches = g_array_new(FALSE, TRUE, sizeof(Match));
    guint n_nodes = g->nodes->len;
    for (guint i = 0; i < n_nodes; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (!hg_node_is(n, "Div") && !hg_node_is(n, "Mul"))
            continue;
        Match mt;
        if (match_at(&sc, n, &mt)) {
            g_array_append_val(matches, mt);
            continue;
        }
        if (mt.why)
            hg_pass_note(env->result, PASS, "left the integral image '%s' (read by '%s') as it is: %s",
                         label(mt.cumsum), label(n), mt.why);
        match_clear(&mt);
    }
    for (guint i = 0; i < matches->len; i++) {
        rewrite(&sc, env, &g_array_index(matches, Match, i));
        match_clear(&g_array_index(matches, Match, i));
    }
    env->result->n_changed += matches->len;
    if (!matches->len)
        return TRUE;
    hg_graph_compact(g);
    return hg_graph_sort(g, error);
}
