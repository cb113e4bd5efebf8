/* fuse_layernorm: a LayerNorm spelled out of elementwise ops becomes one ONNX LayerNormalization
 * (opset 17, default domain), whose statistics are computed inside the op in FP32 (stash_type 1)
 * rather than in FP16 tensors: no Pow that overflows past |x - mean| > 256, no eps that rounds to 0.
 *
 *     m = ReduceMean <axes> (x)                 PyTorch; Cast may sit anywhere in the chain
 *     d = Sub(x, m)                             (a second Sub(x, m) may feed the Div)
 *     v = ReduceMean <axes> (Pow(d, 2))         or Mul(d, d)
 *     n = Div(d, Sqrt(Add(v, eps)))             or Mul(d, Reciprocal(...)), Mul(d, Div(1, ...));
 *                                               Pow(., 0.5) for Sqrt, Pow(., -0.5) for 1 / Sqrt
 *     y = Add(Mul(n, gamma), beta)              gamma and beta optional
 *                                                          =>   y = LayerNormalization <axis = first
 *     r = Reciprocal(Sqrt(Add(v, eps)))         TF/keras           of axes, epsilon = eps>
 *     s = Mul(r, gamma)                                            (x, gamma or ones, beta)
 *     y = Add(Mul(x, s), Sub(beta, Mul(m, s)))
 *
 *     x2 = Cast(Flatten <axis=a> (x))           ONNX's own function body (the _expanded node
 *     v = ReduceMean(x2 * x2) - m * m           tests), with its Mean and InvStdDev outputs
 *     Y = Reshape(Add(Mul(n, Flatten(W)), Flatten(B)), Shape(x))
 *
 * The axes must be consecutive and include the last one; epsilon and the exponent are constants
 * (initializers, Constant nodes, or folded casts of them); ReduceMean's axes may be an input (opset
 * 18). gamma and beta must broadcast over the normalized dims only: a constant one is expanded to the
 * normalized shape (LayerNormalization wants that), another must have it already; a Mul or Add that
 * does not fit stays after the fused node. The mean or the centered value read elsewhere keep the
 * nodes that compute them; any other intermediate read elsewhere leaves the instance unfused.
 *
 * Below opset 17 the model's default-domain opset is raised to 17 when every op keeps its meaning
 * (opset.c rewrites those whose form changed); otherwise nothing is fused, and a note says why.
 */
#include "halfguard/pass.h"
#include "ir_private.h"
#include "ops/array.h"
#include "opset.h"
#include "shapes.h"

#include <math.h>
#include <string.h>

#define PASS "fuse_layernorm"
#define LN_OPSET 17

typedef struct {
    HgGraph *g;
    const HgShapes *s;
    GHashTable *taken; /* nodes that belong to an earlier match */
} Fuse;

typedef struct {
    GHashTable *nodes;   /* every node of the instance */
    GHashTable *keep_ok; /* nodes that may stay for readers outside: x's Casts, the mean, the Subs */
    HgNode *rm1;         /* the mean */
    HgValue *x0;         /* what the statistics read */
    GPtrArray *xchain;   /* x0, then the inputs of the Casts above it */
    HgValue *x;          /* the fused node's X */
    gboolean flattened;  /* the statistics read Flatten(x) */
    gint64 axis;         /* LayerNormalization's axis */
    int xrank;           /* rank of x (-1: unknown) */
    guint naxes;         /* normalized dims of x */
    gint64 ndims[HG_MAX_RANK]; /* their sizes (-1: unknown) */
    float eps;
    HgValue *scale, *bias;
    HgValue *out;        /* what the fused node (and a Cast after it) will define */
    HgNode *tail;        /* out's producer */
    HgNode *mean_reshape, *inv_reshape; /* outputs that LayerNormalization's Mean/InvStdDev give */
    const char *why;     /* why the instance did not fuse (static string), for the note */
} Match;

static void
match_clear(Match *mt)
{
    g_clear_pointer(&mt->nodes, g_hash_table_unref);
    g_clear_pointer(&mt->keep_ok, g_hash_table_unref);
    g_clear_pointer(&mt->xchain, g_ptr_array_unref);
}

/* ---------------------------------------------------------------- small queries */

static gboolean
is_ln_float(int dtype)
{
    return dtype == HG_DTYPE_FLOAT || dtype == HG_DTYPE_FLOAT16 || dtype == HG_DTYPE_BFLOAT16;
}

/* A Cast (or Identity) from one float type to another: a link the chain may pass through. */
static gboolean
is_float_cast(const Fuse *f, const HgNode *n)
{
    if (!(hg_node_is(n, "Cast") || hg_node_is(n, "Identity")) || n->n_inputs < 1 || !n->inputs[0] ||
        n->n_outputs != 1 || !n->outputs[0])
        return FALSE;
    return hg_dtype_is_float(hg_shapes_dtype(f->s, n->inputs[0])) &&
           hg_dtype_is_float(hg_shapes_dtype(f->s, n->outputs[0]));
}

/* The value's constant contents, or NULL (owned by the shape table or by the tensor). */
static const HgArray *
const_of(const Fuse *f, const HgValue *v)
{
    return v ? hg_shapes_get(f->s, v)->value : NULL;
}

static gboolean
const_scalar(const Fuse *f, const HgValue *v, double *out)
{
    const HgArray *a = const_of(f, v);
    if (!a || a->numel != 1 || hg_dtype_compute(a->dtype) == HG_COMPUTE_NONE)
        return FALSE;
    *out = hg_array_get_f64(a, 0);
    return TRUE;
}

/* Follow w up through float Casts; TRUE when that reaches target. The Casts passed join the match. */
static gboolean
reaches(const Fuse *f, Match *mt, HgValue *w, const HgValue *target, gboolean keep_ok)
{
    HgValue *v = w;
    while (v != target && v->producer && is_float_cast(f, v->producer))
        v = v->producer->inputs[0];
    if (v != target)
        return FALSE;
    for (v = w; v != target; v = v->producer->inputs[0]) {
        g_hash_table_add(mt->nodes, v->producer);
        if (keep_ok)
            g_hash_table_add(mt->keep_ok, v->producer);
    }
    return TRUE;
}

/* The top of the float Cast chain above v. */
static HgValue *
cast_root(const Fuse *f, HgValue *v)
{
    while (v->producer && is_float_cast(f, v->producer))
        v = v->producer->inputs[0];
    return v;
}

/* The readers of v, looking through float Casts (the Casts themselves are not listed). */
static void
readers(const Fuse *f, HgValue *v, GPtrArray *out)
{
    for (guint i = 0; i < v->uses->len; i++) {
        HgNode *u = g_array_index(v->uses, HgUse, i).node;
        if (u->graph != v->graph || u->flags & HG_NODE_DEAD)
            continue;
        if (is_float_cast(f, u))
            readers(f, u->outputs[0], out);
        else if (!g_ptr_array_find(out, u, NULL))
            g_ptr_array_add(out, u);
    }
}

/* A two-input node reading a (through Casts) on one side: the other input, or NULL. */
static HgValue *
other_input(const Fuse *f, Match *mt, HgNode *n, const HgValue *a, gboolean commutative)
{
    if (n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1])
        return NULL;
    if (reaches(f, mt, n->inputs[0], a, FALSE))
        return n->inputs[1];
    if (commutative && reaches(f, mt, n->inputs[1], a, FALSE))
        return n->inputs[0];
    return NULL;
}

/* ReduceMean's axes (attribute, or input from opset 18) normalized for rank; FALSE when absent (a
 * reduction over everything is not a LayerNorm) or not known. */
static gboolean
reduce_axes(const Fuse *f, const HgNode *rm, int rank, gint64 *axes, guint *n)
{
    if (hg_node_attr_int(rm, "keepdims", 1) != 1)
        return FALSE;
    const HgAttr *a = hg_node_attr(rm, "axes");
    *n = 0;
    if (a && a->ints) {
        for (guint i = 0; i < a->ints->len && i < HG_MAX_RANK; i++)
            axes[(*n)++] = g_array_index(a->ints, gint64, i);
    } else if (rm->n_inputs > 1 && rm->inputs[1]) {
        const HgArray *c = const_of(f, rm->inputs[1]);
        if (!c || c->numel > HG_MAX_RANK)
            return FALSE;
        for (gint64 i = 0; i < c->numel; i++)
            axes[(*n)++] = hg_array_get_i64(c, i);
    }
    if (*n == 0)
        return FALSE;
    for (guint i = 0; i < *n; i++) {
        if (axes[i] < 0 && rank >= 0)
            axes[i] += rank;
        if (rank >= 0 && (axes[i] < 0 || axes[i] >= rank))
            return FALSE;
    }
    /* sort (tiny lists) */
    for (guint i = 1; i < *n; i++)
        for (guint k = i; k > 0 && axes[k - 1] > axes[k]; k--) {
            gint64 t = axes[k];
            axes[k] = axes[k - 1];
            axes[k - 1] = t;
        }
    return TRUE;
}

static gboolean
same_axes(const Fuse *f, const HgNode *rm, int rank, const gint64 *axes, guint n)
{
    gint64 b[HG_MAX_RANK];
    guint nb;
    if (!reduce_axes(f, rm, rank, b, &nb) || nb != n)
        return FALSE;
    return memcmp(axes, b, n * sizeof(gint64)) == 0;
}

/* ---------------------------------------------------------------- scale and bias */

/* Whether two dims may be the same: equal known sizes, the same symbol, or not known. */
static gboolean
dim_fits(HgSymDim p, HgSymDim x)
{
    if (p.v >= 0 && x.v >= 0)
        return p.v == x.v;
    if (p.sym && x.sym)
        return p.sym == x.sym;
    return TRUE;
}

/* Whether p (gamma or beta, as the statistics see it: beside x0's normalized axes) broadcasts over
 * the normalized dims only. A constant may broadcast (it is expanded later); another value must be
 * the normalized shape already (trailing dims; leading 1s allowed). */
static gboolean
param_fits(const Fuse *f, const Match *mt, HgValue *p, const gint64 *axes, guint naxes)
{
    const HgValueShape *ps = hg_shapes_get(f->s, p), *xs = hg_shapes_get(f->s, mt->x0);
    if (ps->rank < 0 || xs->rank < 0 || ps->rank > xs->rank || !hg_dtype_is_float(ps->dtype))
        return FALSE;
    gboolean constant = const_of(f, p) != NULL;
    for (int i = 0; i < ps->rank; i++) {
        int xi = xs->rank - ps->rank + i;
        HgSymDim d = ps->dims[i];
        gboolean normalized = xi >= (int)axes[0];
        if (!normalized) {
            if (d.v != 1)
                return FALSE;
            continue;
        }
        if (constant && d.v == 1)
            continue;
        if (!dim_fits(d, xs->dims[xi]) || (constant && d.v < 0))
            return FALSE;
    }
    if (constant)
        return TRUE;
    /* LayerNormalization reads Scale and B as the normalized shape: a non-constant must be it. */
    if (mt->flattened)
        return FALSE; /* the function-body form hands them over through Flatten; see flat_param */
    return ps->rank >= (int)naxes && ps->rank <= xs->rank;
}

/* The function-body form scales by Flatten <axis=0> (W): W itself is the Scale when its shape is
 * x's normalized shape. */
static HgValue *
flat_param(const Fuse *f, Match *mt, HgValue *p)
{
    if (!p->producer || !hg_node_is(p->producer, "Flatten") || hg_node_attr_int(p->producer, "axis", 1) != 0)
        return NULL;
    HgValue *w = p->producer->inputs[0];
    const HgValueShape *ws = hg_shapes_get(f->s, w);
    if (ws->rank != (int)mt->naxes || !hg_dtype_is_float(ws->dtype))
        return NULL;
    const HgValueShape *xs = hg_shapes_get(f->s, mt->x);
    for (guint i = 0; i < mt->naxes; i++)
        if (!dim_fits(ws->dims[i], xs->dims[xs->rank - mt->naxes + i]))
            return NULL;
    g_hash_table_add(mt->nodes, p->producer);
    return w;
}

/* ---------------------------------------------------------------- matching */

static gboolean
fail(Match *mt, const char *why)
{
    mt->why = why;
    return FALSE;
}

/* The variance: ReduceMean(Pow(d, 2) | Mul(d, d)) over the same axes, for a centered value d; or
 * ReduceMean(x * x) - m * m (the function-body form). */
static HgValue *
match_variance(const Fuse *f, Match *mt, GPtrArray *subs, const gint64 *axes, guint naxes, int rank)
{
    g_autoptr(GPtrArray) rs = g_ptr_array_new();
    for (guint i = 0; i < subs->len; i++) {
        HgValue *d = ((HgNode *)subs->pdata[i])->outputs[0];
        g_ptr_array_set_size(rs, 0);
        readers(f, d, rs);
        for (guint k = 0; k < rs->len; k++) {
            HgNode *sq = rs->pdata[k];
            double e;
            gboolean square = FALSE;
            if (hg_node_is(sq, "Pow") && sq->n_inputs == 2 && reaches(f, mt, sq->inputs[0], d, FALSE) &&
                const_scalar(f, sq->inputs[1], &e) && e == 2.0)
                square = TRUE;
            else if (hg_node_is(sq, "Mul") && sq->n_inputs == 2 && reaches(f, mt, sq->inputs[0], d, FALSE) &&
                     reaches(f, mt, sq->inputs[1], d, FALSE))
                square = TRUE;
            if (!square)
                continue;
            g_autoptr(GPtrArray) vs = g_ptr_array_new();
            readers(f, sq->outputs[0], vs);
            for (guint j = 0; j < vs->len; j++) {
                HgNode *rm2 = vs->pdata[j];
                if (hg_node_is(rm2, "ReduceMean") && same_axes(f, rm2, rank, axes, naxes) &&
                    reaches(f, mt, rm2->inputs[0], sq->outputs[0], FALSE)) {
                    g_hash_table_add(mt->nodes, sq);
                    g_hash_table_add(mt->nodes, rm2);
                    return rm2->outputs[0];
                }
            }
        }
    }
    /* E[x^2] - E[x]^2 */
    HgValue *mean = mt->rm1->outputs[0];
    g_autoptr(GPtrArray) ms = g_ptr_array_new();
    readers(f, mean, ms);
    for (guint i = 0; i < ms->len; i++) {
        HgNode *m2 = ms->pdata[i];
        if (!hg_node_is(m2, "Mul") || m2->n_inputs != 2 || !reaches(f, mt, m2->inputs[0], mean, FALSE) ||
            !reaches(f, mt, m2->inputs[1], mean, FALSE))
            continue;
        g_autoptr(GPtrArray) subs2 = g_ptr_array_new();
        readers(f, m2->outputs[0], subs2);
        for (guint k = 0; k < subs2->len; k++) {
            HgNode *sub = subs2->pdata[k];
            if (!hg_node_is(sub, "Sub") || sub->n_inputs != 2 || !reaches(f, mt, sub->inputs[1], m2->outputs[0], FALSE))
                continue;
            HgValue *a = cast_root(f, sub->inputs[0]);
            HgNode *rm2 = a->producer;
            if (!hg_node_is(rm2, "ReduceMean") || !same_axes(f, rm2, rank, axes, naxes))
                continue;
            HgNode *sq = cast_root(f, rm2->inputs[0])->producer;
            if (!hg_node_is(sq, "Mul") || sq->n_inputs != 2 || !sq->inputs[0] || !sq->inputs[1] ||
                cast_root(f, sq->inputs[0]) != mt->xchain->pdata[mt->xchain->len - 1] ||
                cast_root(f, sq->inputs[1]) != mt->xchain->pdata[mt->xchain->len - 1])
                continue;
            reaches(f, mt, sub->inputs[0], a, FALSE);
            reaches(f, mt, rm2->inputs[0], sq->outputs[0], FALSE);
            reaches(f, mt, sq->inputs[0], cast_root(f, sq->inputs[0]), TRUE);
            reaches(f, mt, sq->inputs[1], cast_root(f, sq->inputs[1]), TRUE);
            g_hash_table_add(mt->nodes, m2);
            g_hash_table_add(mt->nodes, rm2);
            g_hash_table_add(mt->nodes, sq);
            g_hash_table_add(mt->nodes, sub);
            return sub->outputs[0];
        }
    }
    return NULL;
}

/* The single reader of v, looking through Casts (*v becomes the value it reads), or NULL when some
 * value on the way has several readers, is a graph output, or is read by a subgraph. */
static HgNode *
only_reader(const Fuse *f, HgValue **v)
{
    for (;;) {
        if ((*v)->is_output || (*v)->nested_outputs || (*v)->uses->len != 1)
            return NULL;
        HgNode *u = g_array_index((*v)->uses, HgUse, 0).node;
        if (u->graph != (*v)->graph || g_hash_table_contains(f->taken, u))
            return NULL;
        if (!is_float_cast(f, u))
            return u;
        *v = u->outputs[0];
    }
}

/* The Casts between from and its descendant to join the match. */
static void
add_casts(Match *mt, HgValue *to, const HgValue *from)
{
    for (HgValue *v = to; v != from && v->producer; v = v->producer->inputs[0])
        g_hash_table_add(mt->nodes, v->producer);
}

static gboolean
accept_param(const Fuse *f, Match *mt, HgValue **p, const gint64 *axes, guint naxes)
{
    /* Identity on gamma and beta is only a name */
    while ((*p)->producer && hg_node_is((*p)->producer, "Identity"))
        *p = (*p)->producer->inputs[0];
    if (mt->flattened && !const_of(f, *p)) {
        HgValue *w = flat_param(f, mt, *p);
        if (!w)
            return FALSE;
        *p = w;
        return TRUE;
    }
    return param_fits(f, mt, *p, axes, naxes);
}

/* From the normalized value n: Casts, Mul by gamma, Add of beta, and (function-body form) the
 * Reshape back to x's shape, as far as each fits. */
static gboolean
extend_tail(const Fuse *f, Match *mt, HgValue *n, const gint64 *axes, guint naxes)
{
    HgValue *cur = n;
    gboolean reshaped = FALSE;
    for (;;) {
        HgValue *at = cur;
        HgNode *u = only_reader(f, &at);
        if (!u)
            break;
        HgValue *p = NULL;
        if (!mt->scale && !mt->bias && hg_node_is(u, "Mul") && !reshaped &&
            (p = other_input(f, mt, u, at, TRUE)) && accept_param(f, mt, &p, axes, naxes)) {
            mt->scale = p;
        } else if (!mt->bias && hg_node_is(u, "Add") && !reshaped &&
                   (p = other_input(f, mt, u, at, TRUE)) && accept_param(f, mt, &p, axes, naxes)) {
            mt->bias = p;
        } else if (mt->flattened && !reshaped && hg_node_is(u, "Reshape")) {
            const HgValueShape *ys = hg_shapes_get(f->s, u->outputs[0]), *xs = hg_shapes_get(f->s, mt->x);
            if (ys->rank != xs->rank || ys->rank < 0)
                break;
            for (int i = 0; i < ys->rank; i++)
                if (ys->dims[i].v < 0 || ys->dims[i].v != xs->dims[i].v)
                    return fail(mt, "the function-body form's Reshape does not give x's shape back");
            reshaped = TRUE;
        } else {
            break;
        }
        add_casts(mt, at, cur);
        g_hash_table_add(mt->nodes, u);
        cur = u->outputs[0];
    }
    /* Casts right after the last absorbed node stay outside: they are the reader's business. */
    if (mt->flattened && !reshaped)
        return fail(mt, "the function-body form ends without its Reshape");
    mt->out = cur;
    mt->tail = cur->producer;
    return TRUE;
}

/* The TF form: s = Mul(r, gamma); y = Add(Mul(x, s), Sub(beta, Mul(m, s))). r is 1/std. */
static gboolean
match_tf(const Fuse *f, Match *mt, HgValue *r, const gint64 *axes, guint naxes)
{
    HgValue *x = mt->xchain->pdata[mt->xchain->len - 1];
    HgValue *mean = mt->rm1->outputs[0];
    HgValue *s = r, *gamma = NULL;
    HgValue *at = r;
    HgNode *u = only_reader(f, &at);
    if (u && hg_node_is(u, "Mul")) {
        HgValue *p = other_input(f, mt, u, at, TRUE);
        if (p && cast_root(f, p) != x && accept_param(f, mt, &p, axes, naxes)) {
            gamma = p;
            s = u->outputs[0];
            add_casts(mt, at, r);
            g_hash_table_add(mt->nodes, u);
        }
    }
    /* s feeds exactly Mul(x, s) and Mul(m, s) */
    g_autoptr(GPtrArray) rs = g_ptr_array_new();
    readers(f, s, rs);
    if (rs->len != 2 || s->is_output)
        return FALSE;
    HgNode *xs = NULL, *ms = NULL;
    for (guint i = 0; i < 2; i++) {
        HgNode *m = rs->pdata[i];
        HgValue *o = hg_node_is(m, "Mul") ? other_input(f, mt, m, s, TRUE) : NULL;
        if (!o)
            return FALSE;
        if (cast_root(f, o) == x && !xs)
            xs = m;
        else if (reaches(f, mt, o, mean, TRUE) && !ms)
            ms = m;
    }
    if (!xs || !ms)
        return FALSE;
    HgValue *xo = other_input(f, mt, xs, s, TRUE);
    reaches(f, mt, xo, x, TRUE);
    HgValue *mso = ms->outputs[0];
    HgNode *sub = only_reader(f, &mso);
    if (!hg_node_is(sub, "Sub") || sub->n_inputs != 2 || !reaches(f, mt, sub->inputs[1], ms->outputs[0], FALSE))
        return FALSE;
    HgValue *beta = sub->inputs[0];
    if (!accept_param(f, mt, &beta, axes, naxes))
        return fail(mt, "beta does not broadcast over the normalized dims only");
    HgValue *xso = xs->outputs[0];
    HgNode *add = only_reader(f, &xso);
    HgValue *subo = sub->outputs[0];
    HgNode *add2 = only_reader(f, &subo);
    if (!hg_node_is(add, "Add") || add != add2)
        return FALSE;
    add_casts(mt, xso, xs->outputs[0]);
    add_casts(mt, subo, sub->outputs[0]);
    g_hash_table_add(mt->nodes, xs);
    g_hash_table_add(mt->nodes, ms);
    g_hash_table_add(mt->nodes, sub);
    g_hash_table_add(mt->nodes, add);
    mt->scale = gamma;
    mt->bias = beta;
    mt->out = add->outputs[0];
    mt->tail = add;
    return TRUE;
}

/* The normalized dims of x and the fused node's axis, from the statistics' axes. */
static gboolean
settle_axes(const Fuse *f, Match *mt, const gint64 *axes, guint naxes, int rank)
{
    const HgValueShape *xs = hg_shapes_get(f->s, mt->x);
    mt->xrank = xs->rank;
    if (mt->flattened) {
        HgNode *fl = cast_root(f, mt->x0)->producer;
        if (rank != 2 || naxes != 1 || axes[0] != 1 || xs->rank < 0)
            return fail(mt, "the flattened statistics do not run over Flatten's second dim");
        gint64 a = hg_node_attr_int(fl, "axis", 1);
        gint64 an = a < 0 ? a + xs->rank : a;
        if (an < 0 || an >= xs->rank)
            return fail(mt, "Flatten's axis leaves nothing to normalize");
        mt->axis = a;
        mt->naxes = (guint)(xs->rank - an);
    } else {
        for (guint i = 1; i < naxes; i++)
            if (axes[i] != axes[i - 1] + 1)
                return fail(mt, "the axes are not consecutive");
        if (rank >= 0) {
            if (axes[naxes - 1] != rank - 1)
                return fail(mt, "the axes do not include the last one");
            mt->axis = axes[0];
        } else {
            /* negative axes name the trailing dims whatever the rank */
            if (axes[naxes - 1] != -1)
                return fail(mt, "the axes do not include the last one, or the rank is unknown");
            mt->axis = axes[0];
        }
        mt->naxes = naxes;
    }
    for (guint i = 0; i < mt->naxes; i++)
        mt->ndims[i] = xs->rank >= 0 ? xs->dims[xs->rank - mt->naxes + i].v : -1;
    return TRUE;
}

/* The fused node's X: the highest value of x's Cast chain whose type is the output's (a Cast up to
 * FP32 before the statistics is what stash_type does), else the value the statistics read. */
static void
pick_x(const Fuse *f, Match *mt)
{
    GPtrArray *chain = mt->xchain;
    guint start = 0;
    if (mt->flattened) {
        /* the chain above Flatten's input */
        HgValue *v = cast_root(f, mt->x0)->producer->inputs[0];
        g_ptr_array_set_size(chain, 0);
        g_ptr_array_add(chain, v);
        while (v->producer && is_float_cast(f, v->producer)) {
            v = v->producer->inputs[0];
            g_ptr_array_add(chain, v);
        }
    }
    int want = mt->out ? hg_shapes_dtype(f->s, mt->out) : HG_DTYPE_UNDEFINED;
    mt->x = chain->pdata[start];
    for (guint i = start; i < chain->len; i++)
        if (hg_shapes_dtype(f->s, chain->pdata[i]) == want)
            mt->x = chain->pdata[i];
}

/* Where the outside reads an intermediate: fine for nodes that may stay (what they need stays), a
 * reason otherwise. The function-body form's Mean and InvStdDev Reshapes are taken over. */
static gboolean
check_outside_uses(const Fuse *f, Match *mt)
{
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, mt->nodes);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        HgNode *n = key;
        if (n == mt->tail)
            continue;
        if (g_hash_table_contains(f->taken, n) && !g_hash_table_contains(mt->keep_ok, n))
            return fail(mt, "it shares nodes with another LayerNorm");
        for (guint k = 0; k < n->n_outputs; k++) {
            HgValue *v = n->outputs[k];
            if (!v)
                continue;
            gboolean outside = v->is_output || v->nested_outputs;
            for (guint i = 0; i < v->uses->len && !outside; i++) {
                HgNode *u = g_array_index(v->uses, HgUse, i).node;
                outside = !g_hash_table_contains(mt->nodes, u) && u != mt->mean_reshape &&
                          u != mt->inv_reshape;
            }
            if (outside && !g_hash_table_contains(mt->keep_ok, n))
                return fail(mt, "an intermediate value past the mean is read outside the pattern");
        }
    }
    return TRUE;
}

/* LayerNormalization's Mean / InvStdDev shape: x's dims with the normalized ones set to 1. */
static gboolean
is_stat_shape(const Fuse *f, const Match *mt, const HgValue *v)
{
    const HgValueShape *vs = hg_shapes_get(f->s, v), *xs = hg_shapes_get(f->s, mt->x);
    if (vs->rank != xs->rank || vs->rank < 0 || vs->dtype != HG_DTYPE_FLOAT)
        return FALSE;
    for (int i = 0; i < vs->rank; i++) {
        gboolean normalized = i >= vs->rank - (int)mt->naxes;
        if (normalized ? vs->dims[i].v != 1 : !dim_fits(vs->dims[i], xs->dims[i]) || vs->dims[i].v < 0)
            return FALSE;
    }
    return TRUE;
}

/* The function-body form reshapes Mean2D and Reciprocal(StdDev) into its Mean and InvStdDev
 * outputs; the fused node gives both. */
static void
match_stat_outputs(const Fuse *f, Match *mt, HgValue *std)
{
    HgValue *mean = mt->rm1->outputs[0];
    for (guint i = 0; i < mean->uses->len; i++) {
        HgNode *u = g_array_index(mean->uses, HgUse, i).node;
        if (hg_node_is(u, "Reshape") && u->inputs[0] == mean && is_stat_shape(f, mt, u->outputs[0]))
            mt->mean_reshape = u;
    }
    for (guint i = 0; i < std->uses->len; i++) {
        HgNode *r = g_array_index(std->uses, HgUse, i).node;
        if (!hg_node_is(r, "Reciprocal") || g_hash_table_contains(mt->nodes, r) || r->outputs[0]->is_output ||
            r->outputs[0]->uses->len != 1)
            continue;
        HgNode *u = g_array_index(r->outputs[0]->uses, HgUse, 0).node;
        if (hg_node_is(u, "Reshape") && u->inputs[0] == r->outputs[0] && is_stat_shape(f, mt, u->outputs[0])) {
            mt->inv_reshape = u;
            g_hash_table_add(mt->nodes, r);
        }
    }
}

static gboolean
match_at(const Fuse *f, HgNode *rm1, Match *mt)
{
    memset(mt, 0, sizeof(*mt));
    mt->nodes = g_hash_table_new(NULL, NULL);
    mt->keep_ok = g_hash_table_new(NULL, NULL);
    mt->xchain = g_ptr_array_new();
    mt->rm1 = rm1;
    if (!rm1->inputs[0] || !rm1->outputs[0] || g_hash_table_contains(f->taken, rm1))
        return FALSE;
    mt->x0 = rm1->inputs[0];
    const HgValueShape *x0s = hg_shapes_get(f->s, mt->x0);
    int rank = x0s->rank;
    gint64 axes[HG_MAX_RANK];
    guint naxes;
    if (!reduce_axes(f, rm1, rank, axes, &naxes))
        return FALSE;
    for (HgValue *v = mt->x0;;) {
        g_ptr_array_add(mt->xchain, v);
        if (!v->producer || !is_float_cast(f, v->producer))
            break;
        g_hash_table_add(mt->nodes, v->producer);
        g_hash_table_add(mt->keep_ok, v->producer);
        v = v->producer->inputs[0];
    }
    HgValue *xr = mt->xchain->pdata[mt->xchain->len - 1];
    mt->flattened = xr->producer && hg_node_is(xr->producer, "Flatten");
    g_hash_table_add(mt->nodes, rm1);
    g_hash_table_add(mt->keep_ok, rm1);
    if (mt->flattened) {
        g_hash_table_add(mt->nodes, xr->producer);
        g_hash_table_add(mt->keep_ok, xr->producer);
    }
    HgValue *mean = rm1->outputs[0];
    /* the centered values: Sub(x, mean), one or two of them */
    g_autoptr(GPtrArray) rs = g_ptr_array_new();
    g_autoptr(GPtrArray) subs = g_ptr_array_new();
    readers(f, mean, rs);
    for (guint i = 0; i < rs->len; i++) {
        HgNode *u = rs->pdata[i];
        if (hg_node_is(u, "Sub") && u->n_inputs == 2 && u->inputs[0] && u->inputs[1] &&
            cast_root(f, u->inputs[0]) == xr && reaches(f, mt, u->inputs[1], mean, TRUE)) {
            reaches(f, mt, u->inputs[0], xr, TRUE);
            g_ptr_array_add(subs, u);
            g_hash_table_add(mt->nodes, u);
            g_hash_table_add(mt->keep_ok, u);
        }
    }
    HgValue *var = match_variance(f, mt, subs, axes, naxes, rank);
    if (!var)
        return FALSE;
    /* var + eps, then Sqrt */
    g_ptr_array_set_size(rs, 0);
    readers(f, var, rs);
    HgNode *add = rs->len == 1 && hg_node_is(rs->pdata[0], "Add") ? rs->pdata[0] : NULL;
    HgValue *epsv = add ? other_input(f, mt, add, var, TRUE) : NULL;
    double eps;
    if (!epsv || !const_scalar(f, epsv, &eps) || !(eps >= 0) || !isfinite(eps))
        return fail(mt, "no constant epsilon is added to the variance");
    mt->eps = (float)eps;
    g_hash_table_add(mt->nodes, add);
    g_ptr_array_set_size(rs, 0);
    readers(f, add->outputs[0], rs);
    /* the deviation: Sqrt or Pow(., 0.5); or its inverse at once, Pow(., -0.5) */
    HgNode *root = rs->len == 1 ? rs->pdata[0] : NULL;
    double pe = 0;
    gboolean is_pow = root && hg_node_is(root, "Pow") && root->n_inputs == 2 && root->inputs[1] &&
                   const_scalar(f, root->inputs[1], &pe) && (pe == 0.5 || pe == -0.5);
    if (!root || !(hg_node_is(root, "Sqrt") || is_pow) || !reaches(f, mt, root->inputs[0], add->outputs[0], FALSE))
        return FALSE;
    g_hash_table_add(mt->nodes, root);
    HgValue *std = root->outputs[0];
    /* normalized: Div(d, std), or Mul(d, 1 / std) with 1 / std spelled Reciprocal(std), Div(1, std)
     * (TorchScript's rsqrt) or Pow(var + eps, -0.5); or the TF form */
    HgValue *n = NULL;
    g_autoptr(GPtrArray) invs = g_ptr_array_new(); /* the nodes whose output is 1 / std */
    g_ptr_array_set_size(rs, 0);
    if (is_pow && pe < 0)
        g_ptr_array_add(invs, root);
    else
        readers(f, std, rs);
    for (guint i = 0; i < rs->len && !n; i++) {
        HgNode *u = rs->pdata[i];
        double one = 0;
        if (hg_node_is(u, "Div") && u->n_inputs == 2 && reaches(f, mt, u->inputs[1], std, FALSE)) {
            for (guint k = 0; k < subs->len && !n; k++)
                if (reaches(f, mt, u->inputs[0], ((HgNode *)subs->pdata[k])->outputs[0], FALSE))
                    n = u->outputs[0];
            if (n)
                g_hash_table_add(mt->nodes, u);
            else if (u->inputs[0] && const_scalar(f, u->inputs[0], &one) && one == 1)
                g_ptr_array_add(invs, u);
        } else if (hg_node_is(u, "Reciprocal") && reaches(f, mt, u->inputs[0], std, FALSE)) {
            g_ptr_array_add(invs, u);
        }
    }
    for (guint i = 0; i < invs->len && !n; i++) {
        HgNode *u = invs->pdata[i];
        g_autoptr(GPtrArray) ms = g_ptr_array_new();
        readers(f, u->outputs[0], ms);
        for (guint j = 0; j < ms->len && !n; j++) {
            HgNode *m = ms->pdata[j];
            HgValue *o = hg_node_is(m, "Mul") ? other_input(f, mt, m, u->outputs[0], TRUE) : NULL;
            for (guint k = 0; o && k < subs->len && !n; k++)
                if (reaches(f, mt, o, ((HgNode *)subs->pdata[k])->outputs[0], FALSE)) {
                    n = m->outputs[0];
                    g_hash_table_add(mt->nodes, m);
                    g_hash_table_add(mt->nodes, u);
                }
        }
        if (!n && !mt->flattened) {
            /* TF/keras: the statistics' x and axes settle first, for gamma's check */
            mt->x = xr;
            if (!settle_axes(f, mt, axes, naxes, rank))
                return FALSE;
            if (match_tf(f, mt, u->outputs[0], axes, naxes)) {
                g_hash_table_add(mt->nodes, u);
                pick_x(f, mt);
                return check_outside_uses(f, mt);
            }
        }
    }
    if (!n)
        return FALSE;
    /* x: the top of the chain for now (settle_axes needs a rank); pick_x refines it */
    mt->x = xr;
    if (mt->flattened) {
        mt->x = xr->producer->inputs[0];
    }
    if (!settle_axes(f, mt, axes, naxes, rank))
        return FALSE;
    if (!extend_tail(f, mt, n, axes, naxes))
        return FALSE;
    pick_x(f, mt);
    if (mt->flattened)
        match_stat_outputs(f, mt, std);
    return check_outside_uses(f, mt);
}

/* ---------------------------------------------------------------- the rewrite */

/* A new initializer in g from array a. */
static HgValue *
add_initializer(HgGraph *g, const char *base, const HgArray *a)
{
    return hg_graph_new_initializer(g, base, hg_array_to_tensor(a, NULL));
}

/* Scale or B for the fused node: type T and x's normalized shape. A constant is expanded (and
 * converted); another value keeps its shape, and is Cast when its type is not T. NULL p: fill. */
static HgValue *
ln_param(const Fuse *f, const Match *mt, HgValue *p, int T, double fill, const char *what, HgNode *anchor)
{
    HgGraph *g = f->g;
    const HgArray *c = p ? const_of(f, p) : NULL;
    g_autofree char *base = g_strdup_printf("%s_%s", mt->out->name, what);
    if (p && !c) {
        if (hg_shapes_dtype(f->s, p) == T)
            return p;
        g_autofree char *cname = hg_graph_unique_name(g, base);
        HgValue *cv = hg_graph_new_value(g, cname, NULL);
        HgNode *cast = hg_graph_add_node(g, "Cast", NULL, cname, 1, &p, 1, &cv);
        HgAttr *to = hg_attr_new("to", HG_ATTR_INT);
        to->i = T;
        hg_node_add_attr(cast, to);
        hg_graph_move_node_before(g, cast, anchor);
        return cv;
    }
    const HgValueShape *ps = p ? hg_shapes_get(f->s, p) : NULL;
    if (p && p->init && ps->dtype == T && ps->rank == (int)mt->naxes) {
        gboolean same = TRUE;
        for (guint i = 0; i < mt->naxes; i++)
            same &= ps->dims[i].v == mt->ndims[i];
        if (same)
            return p;
    }
    g_autoptr(HgArray) a = hg_array_new(T, mt->naxes, mt->ndims, NULL);
    g_assert(a);
    g_autofree float *buf = g_new(float, a->numel + 1);
    /* broadcast c (aligned at the right, over x's normalized dims) into buf */
    gint64 n = a->numel;
    if (!c) {
        for (gint64 j = 0; j < n; j++)
            buf[j] = (float)fill;
    } else if (c->numel == n) {
        for (gint64 j = 0; j < n; j++)
            buf[j] = (float)hg_array_get_f64(c, j);
    } else {
        /* c's dims beyond the normalized ones are 1 (param_fits): drop them */
        guint lead = c->rank > mt->naxes ? c->rank - mt->naxes : 0;
        guint cr = c->rank - lead;
        gint64 strides[HG_MAX_RANK], idx[HG_MAX_RANK] = {0}, off = 0;
        hg_broadcast_strides(cr, c->dims + lead, mt->naxes, mt->ndims, strides);
        for (gint64 j = 0; j < n; j++) {
            buf[j] = (float)hg_array_get_f64(c, off);
            for (int d = (int)mt->naxes - 1; d >= 0; d--) {
                off += strides[d];
                if (++idx[d] < mt->ndims[d])
                    break;
                off -= strides[d] * mt->ndims[d];
                idx[d] = 0;
            }
        }
    }
    hg_array_store_f32(a, buf);
    return add_initializer(g, base, a);
}

static gboolean
dims_known(const Match *mt)
{
    for (guint i = 0; i < mt->naxes; i++)
        if (mt->ndims[i] < 0)
            return FALSE;
    return TRUE;
}

/* Whether the rewrite has what it needs (types, and the normalized shape where a constant must be
 * built); a reason otherwise. */
static gboolean
can_rewrite(const Fuse *f, Match *mt)
{
    int T = hg_shapes_dtype(f->s, mt->x);
    if (!is_ln_float(T))
        return fail(mt, "x is not float, float16 or bfloat16");
    if (!hg_dtype_is_float(hg_shapes_dtype(f->s, mt->out)))
        return fail(mt, "the output type is unknown");
    gboolean need_dims = !mt->scale || const_of(f, mt->scale) || (mt->bias && const_of(f, mt->bias));
    if (need_dims && !dims_known(mt))
        return fail(mt, "the normalized dims are not known (a constant scale needs them)");
    return TRUE;
}

static void
rewrite(Fuse *f, Match *mt)
{
    HgGraph *g = f->g;
    int T = hg_shapes_dtype(f->s, mt->x), Tout = hg_shapes_dtype(f->s, mt->out);
    HgNode *anchor = mt->tail;
    HgValue *scale = ln_param(f, mt, mt->scale, T, 1.0, "scale", anchor);
    HgValue *bias = mt->bias ? ln_param(f, mt, mt->bias, T, 0.0, "bias", anchor) : NULL;
    HgValue *out = mt->out, *mean_out = NULL, *inv_out = NULL;
    hg_node_remove(mt->tail);
    if (mt->mean_reshape) {
        mean_out = mt->mean_reshape->outputs[0];
        hg_node_remove(mt->mean_reshape);
    }
    if (mt->inv_reshape) {
        inv_out = mt->inv_reshape->outputs[0];
        hg_node_remove(mt->inv_reshape);
    }
    g_autofree char *name = g_strdup_printf("LayerNorm_%s", out->name);
    g_autofree char *lname = hg_graph_unique_name(g, name);
    HgValue *y = out;
    if (Tout != T) {
        g_autofree char *yname = hg_graph_unique_name(g, lname);
        y = hg_graph_new_value(g, yname, NULL);
    }
    HgValue *ins[3] = {mt->x, scale, bias};
    HgValue *outs[3] = {y, mean_out, inv_out};
    guint n_out = inv_out ? 3 : mean_out ? 2 : 1;
    HgNode *ln = hg_graph_add_node(g, "LayerNormalization", NULL, lname, bias ? 3 : 2, ins, n_out, outs);
    HgAttr *a = hg_attr_new("axis", HG_ATTR_INT);
    a->i = mt->axis;
    hg_node_add_attr(ln, a);
    a = hg_attr_new("epsilon", HG_ATTR_FLOAT);
    a->f = mt->eps;
    hg_node_add_attr(ln, a);
    hg_graph_move_node_before(g, ln, anchor);
    if (y != out) {
        g_autofree char *cbase = g_strdup_printf("%s_cast", lname);
        g_autofree char *cname = hg_graph_unique_name(g, cbase);
        HgNode *cast = hg_graph_add_node(g, "Cast", NULL, cname, 1, &y, 1, &out);
        a = hg_attr_new("to", HG_ATTR_INT);
        a->i = Tout;
        hg_node_add_attr(cast, a);
        hg_graph_move_node_before(g, cast, anchor);
    }
    /* The instance's other nodes go once nothing reads them; those read outside stay. */
    hg_nodes_remove_unread(mt->nodes);
}

gboolean
hg_pass_fuse_layernorm(HgGraph *g, const HgPassEnv *env, GError **error)
{
    if (g->parent || !g->model)
        return TRUE;
    g_autoptr(HgShapes) s = hg_shapes_infer_specs(g, hg_convert_options_analysis(env->options)->shapes, error);
    if (!s)
        return FALSE;
    Fuse f = {g, s, g_hash_table_new(NULL, NULL)};
    g_autoptr(GArray) matches = g_array_new(FALSE, TRUE, sizeof(Match));
    /* reasons in the order first met, with their counts: the notes come out the same every run */
    g_autoptr(GPtrArray) reasons = g_ptr_array_new();
    g_autoptr(GHashTable) skipped = g_hash_table_new(g_str_hash, g_str_equal);
    guint n_nodes = g->nodes->len;
    for (guint i = 0; i < n_nodes; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (!hg_node_is(n, "ReduceMean"))
            continue;
        Match mt;
        if (match_at(&f, n, &mt) && can_rewrite(&f, &mt)) {
            GHashTableIter it;
            gpointer key;
            g_hash_table_iter_init(&it, mt.nodes);
            while (g_hash_table_iter_next(&it, &key, NULL))
                if (!g_hash_table_contains(mt.keep_ok, key))
                    g_hash_table_add(f.taken, key);
            g_array_append_val(matches, mt);
        } else {
            if (mt.why) {
                guint c = GPOINTER_TO_UINT(g_hash_table_lookup(skipped, mt.why));
                if (!c)
                    g_ptr_array_add(reasons, (gpointer)mt.why);
                g_hash_table_insert(skipped, (gpointer)mt.why, GUINT_TO_POINTER(c + 1));
            }
            match_clear(&mt);
        }
    }
    for (guint i = 0; i < reasons->len; i++) {
        guint c = GPOINTER_TO_UINT(g_hash_table_lookup(skipped, reasons->pdata[i]));
        hg_pass_note(env->result, PASS, "left %u LayerNorm-like pattern%s unfused: %s", c, c == 1 ? "" : "s",
                     (const char *)reasons->pdata[i]);
    }
    gboolean fused = FALSE;
    if (matches->len) {
        gint64 opset = hg_model_opset(g->model, "");
        g_autofree char *why = NULL;
        if (opset < LN_OPSET && !hg_opset_can_upgrade(g->model, s, LN_OPSET, &why)) {
            hg_pass_note(env->result, PASS, "left %u LayerNorm unfused (kept FP32): opset %" G_GINT64_FORMAT
                         " cannot be raised to %d: %s", matches->len, opset, LN_OPSET, why);
            /* The plan in the IR keeps them there: assign_precision honours an FP32 set before it. */
            for (guint i = 0; i < matches->len; i++) {
                GHashTableIter it;
                gpointer node;
                g_hash_table_iter_init(&it, g_array_index(matches, Match, i).nodes);
                while (g_hash_table_iter_next(&it, &node, NULL))
                    hg_node_set_precision(node, HG_PRECISION_FP32, "a LayerNorm left unfused (fuse_layernorm)");
            }
        } else {
            if (opset < LN_OPSET) {
                guint rewritten;
                hg_opset_upgrade(g->model, s, LN_OPSET, &rewritten);
                if (rewritten)
                    hg_pass_note(env->result, PASS, "raised the opset from %" G_GINT64_FORMAT " to %d (rewrote %u node%s"
                                 " whose form changed)", opset, LN_OPSET, rewritten, rewritten == 1 ? "" : "s");
                else
                    hg_pass_note(env->result, PASS, "raised the opset from %" G_GINT64_FORMAT " to %d", opset, LN_OPSET);
                env->result->n_changed += rewritten + 1;
            }
            for (guint i = 0; i < matches->len; i++)
                rewrite(&f, &g_array_index(matches, Match, i));
            hg_pass_note(env->result, PASS, "fused %u LayerNorm", matches->len);
            env->result->n_fused_layernorm += matches->len;
            env->result->n_changed += matches->len;
            fused = TRUE;
        }
    }
    for (guint i = 0; i < matches->len; i++)
        match_clear(&g_array_index(matches, Match, i));
    g_hash_table_unref(f.taken);
    if (!fused)
        return TRUE;
    hg_graph_compact(g);
    return hg_graph_sort(g, error);
}
