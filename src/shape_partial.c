/* Partially known shape values: shape math on symbolic dims, entry by entry.
 *
 *     x [batch, 7, 768] -> Shape -> Slice [0:1] -> Concat(., [-1, 12, 64]) -> Reshape(x, .)
 *
 * The Concat's value is not known (batch is not), but three of its four entries are, and the first
 * is batch: [batch, -1, 12, 64]. Reshape then knows [batch, 7, 12, 64] (batch cancels against x's),
 * and the MatMul after it its contraction length. The entries follow Shape, Gather, Slice, Concat,
 * Cast, Unsqueeze, Squeeze, Identity, ReduceProd, integer Add, Sub, Mul and Div, Reshape, Flatten,
 * Equal and Where; a known entry is
 * exactly that value, an unknown one stays unknown (named when it is a symbolic dim itself). Reshape
 * and Flatten of a vector keep its entries; Equal and Where follow TorchScript's expand(-1) pattern
 * (Where(Equal(shape, -1), 1, shape)). Each op's
 * shape rule runs first: where it folded the value, there is nothing to add.
 */
#include "shapes.h"
#include "ir_private.h"
#include "ops/kernel.h"
#include "ops/tensor.h"

#include <math.h>
#include <string.h>

#define ALL(n) ((n) >= 32 ? ~0u : (1u << (n)) - 1)

/* What is known of s's entries, for a scalar or a vector of at most HG_MAX_RANK integers (or
 * integer-valued floats, as Cast(Cast(...)) shape math makes); FALSE when it is neither. */
static gboolean
entries(const HgValueShape *s, HgPartial *p)
{
    memset(p, 0, sizeof(*p));
    if (!s || s->rank < 0 || s->rank > 1 ||
        !(hg_dtype_is_int(s->dtype) || hg_dtype_is_float(s->dtype) || s->dtype == HG_DTYPE_BOOL))
        return FALSE;
    if (s->value) {
        if (s->value->numel > HG_MAX_RANK || s->value->strings)
            return FALSE;
        p->n = (int)s->value->numel;
        for (int i = 0; i < p->n; i++) {
            double d = hg_array_get_f64(s->value, i);
            if (d != trunc(d) || fabs(d) > 0x1p53)
                continue; /* not an integer: leave unknown */
            p->v[i] = hg_array_get_i64(s->value, i);
            p->known |= 1u << i;
        }
        return TRUE;
    }
    if (s->part.n > 0) {
        *p = s->part;
        return TRUE;
    }
    if (s->rank == 0) {
        p->n = 1;
        return TRUE;
    }
    if (s->dims[0].v < 0 || s->dims[0].v > HG_MAX_RANK)
        return FALSE;
    p->n = (int)s->dims[0].v;
    return TRUE;
}

static gboolean
known(const HgPartial *p, int i)
{
    return (p->known >> i & 1) != 0;
}

static void
set_known(HgPartial *p, int i, gint64 v)
{
    p->v[i] = v;
    p->known |= 1u << i;
    p->sym[i] = NULL;
}

/* The constant int list of input i (at most HG_MAX_RANK entries), or FALSE. */
static gboolean
const_ints(const HgValueShape *const *ins, guint n_inputs, guint i, gint64 *vals, int *n)
{
    const HgValueShape *s = i < n_inputs ? ins[i] : NULL;
    if (!s || !s->value || s->value->strings || s->value->numel > HG_MAX_RANK || !hg_dtype_is_int(s->value->dtype))
        return FALSE;
    *n = (int)s->value->numel;
    for (int k = 0; k < *n; k++)
        vals[k] = hg_array_get_i64(s->value, k);
    return TRUE;
}

static gboolean
shape_of(const HgNode *node, const HgValueShape *x, HgPartial *o)
{
    if (!x || x->rank < 0)
        return FALSE;
    gint64 r = x->rank, s = hg_node_attr_int(node, "start", 0), e = hg_node_attr_int(node, "end", r);
    s = CLAMP(s < 0 ? s + r : s, 0, r);
    e = CLAMP(e < 0 ? e + r : e, 0, r);
    o->n = (int)MAX(e - s, 0);
    for (int i = 0; i < o->n; i++) {
        const HgSymDim *d = &x->dims[s + i];
        if (d->v >= 0)
            set_known(o, i, d->v);
        else
            o->sym[i] = d->sym;
    }
    return TRUE;
}

static gboolean
gather(const HgNode *node, const HgValueShape *const *ins, guint n_inputs, const HgPartial *d, HgPartial *o)
{
    gint64 idx[HG_MAX_RANK];
    int ni;
    gint64 axis = hg_node_attr_int(node, "axis", 0);
    if (ins[0]->rank != 1 || (axis != 0 && axis != -1) || !const_ints(ins, n_inputs, 1, idx, &ni))
        return FALSE;
    o->n = ni;
    for (int j = 0; j < ni; j++) {
        gint64 k = idx[j] < 0 ? idx[j] + d->n : idx[j];
        if (k < 0 || k >= d->n)
            return FALSE;
        o->v[j] = d->v[k];
        o->sym[j] = d->sym[k];
        o->known |= (guint32)known(d, (int)k) << j;
    }
    return TRUE;
}

/* Slice of a vector along its one axis: opset 10 takes starts, ends, axes and steps as inputs. */
static gboolean
slice(const HgNode *node, gint64 opset, const HgValueShape *const *ins, guint n_inputs, const HgPartial *d,
      HgPartial *o)
{
    gint64 st[HG_MAX_RANK], en[HG_MAX_RANK], ax[HG_MAX_RANK], sp[HG_MAX_RANK];
    int ns, ne, na = 1, np = 1;
    ax[0] = 0, sp[0] = 1;
    if (ins[0]->rank != 1)
        return FALSE;
    if (opset >= 10) {
        if (!const_ints(ins, n_inputs, 1, st, &ns) || !const_ints(ins, n_inputs, 2, en, &ne))
            return FALSE;
        if (n_inputs > 3 && ins[3] && !const_ints(ins, n_inputs, 3, ax, &na))
            return FALSE;
        if (n_inputs > 4 && ins[4] && !const_ints(ins, n_inputs, 4, sp, &np))
            return FALSE;
    } else {
        guint ls = 0, le = 0, la = 0;
        const gint64 *ps = hg_attr_ints(node, "starts", &ls), *pe = hg_attr_ints(node, "ends", &le);
        const gint64 *pa = hg_attr_ints(node, "axes", &la);
        if (!ps || !pe || ls != 1 || le != 1 || (pa && la != 1))
            return FALSE;
        st[0] = ps[0], en[0] = pe[0], ns = ne = 1;
        ax[0] = pa ? pa[0] : 0;
    }
    /* steps other than 1 (rare in shape math) are left to the kernel's own clamping rules */
    if (ns != 1 || ne != 1 || na != 1 || np != 1 || (ax[0] != 0 && ax[0] != -1) || sp[0] != 1)
        return FALSE;
    gint64 n = d->n, s = st[0], e = en[0];
    if (s < 0)
        s += n;
    if (e < 0)
        e += n;
    s = CLAMP(s, 0, n);
    e = CLAMP(e, 0, n);
    o->n = 0;
    for (gint64 k = s; k < e; k++) {
        if (o->n == HG_MAX_RANK)
            return FALSE;
        o->v[o->n] = d->v[k];
        o->sym[o->n] = d->sym[k];
        o->known |= (guint32)known(d, (int)k) << o->n;
        o->n++;
    }
    return TRUE;
}

static gboolean
concat(const HgNode *node, const HgValueShape *const *ins, guint n_inputs, HgPartial *o)
{
    gint64 axis = hg_node_attr_int(node, "axis", 0);
    if (axis != 0 && axis != -1)
        return FALSE;
    o->n = 0;
    for (guint i = 0; i < n_inputs; i++) {
        HgPartial p;
        if (!ins[i] || ins[i]->rank != 1 || !entries(ins[i], &p) || o->n + p.n > HG_MAX_RANK)
            return FALSE;
        for (int k = 0; k < p.n; k++) {
            o->v[o->n] = p.v[k];
            o->sym[o->n] = p.sym[k];
            o->known |= (guint32)known(&p, k) << o->n;
            o->n++;
        }
    }
    return TRUE;
}

/* Integer a op b where both are known (exact: FALSE on overflow, and Div only where truncation and
 * flooring agree). */
static gboolean
arith(char op, gint64 a, gint64 b, gint64 *r)
{
    switch (op) {
    case '+': return !__builtin_add_overflow(a, b, r);
    case '-': return !__builtin_sub_overflow(a, b, r);
    case '*': return !__builtin_mul_overflow(a, b, r);
    default:
        if (a < 0 || b <= 0)
            return FALSE;
        *r = a / b;
        return TRUE;
    }
}

static gboolean
binary(char op, const HgPartial *a, const HgPartial *b, HgPartial *o)
{
    if (a->n != b->n && a->n != 1 && b->n != 1)
        return FALSE;
    o->n = MAX(a->n, b->n);
    for (int i = 0; i < o->n; i++) {
        int ia = a->n == 1 ? 0 : i, ib = b->n == 1 ? 0 : i;
        gint64 r;
        if (known(a, ia) && known(b, ib)) {
            if (arith(op, a->v[ia], b->v[ib], &r))
                set_known(o, i, r);
        } else if (!known(a, ia) && known(b, ib) &&
                   b->v[ib] == (op == '*' || op == '/' ? 1 : 0)) {
            o->sym[i] = a->sym[ia]; /* x * 1, x + 0: still the dim */
        } else if (!known(b, ib) && known(a, ia) && (op == '*' || op == '+') &&
                   a->v[ia] == (op == '*' ? 1 : 0)) {
            o->sym[i] = b->sym[ib];
        } else if (op == '*') {
            /* products of named dims (and whole numbers) keep a name: batch * 4 is 4*batch */
            gboolean ka = known(a, ia), kb = known(b, ib);
            if ((ka || a->sym[ia]) && (kb || b->sym[ib]) && !(ka && a->v[ia] < 0) && !(kb && b->v[ib] < 0)) {
                HgSymDim p = hg_dim_mul(ka ? hg_dim_known(a->v[ia]) : (HgSymDim){-1, a->sym[ia]},
                                        kb ? hg_dim_known(b->v[ib]) : (HgSymDim){-1, b->sym[ib]});
                if (p.v >= 0)
                    set_known(o, i, p.v);
                else
                    o->sym[i] = p.sym;
            }
        } else if (op == '/' && !known(a, ia) && a->sym[ia]) {
            /* a named product over one of its factors: 4*batch / 4 is batch */
            gint64 ca, cb = 1;
            const char *na[HG_SYM_MAX_FACTORS], *nb[HG_SYM_MAX_FACTORS];
            int ka, kb = 0;
            gboolean ok = hg_sym_factors(a->sym[ia], &ca, na, &ka) &&
                          (known(b, ib) ? (cb = b->v[ib]) > 0 : hg_sym_factors(b->sym[ib], &cb, nb, &kb)) &&
                          hg_sym_factors_take(na, &ka, nb, kb);
            if (ok && cb > 0 && ca % cb == 0) {
                if (ka == 0)
                    set_known(o, i, ca / cb);
                else
                    o->sym[i] = hg_sym_product(ca / cb, na, ka);
            }
        }
    }
    return TRUE;
}

static gboolean
reduce_prod(const HgNode *node, const HgValueShape *const *ins, guint n_inputs, const HgPartial *d, HgPartial *o)
{
    guint la = 0;
    const gint64 *axes = hg_attr_ints(node, "axes", &la);
    gint64 in_axes[HG_MAX_RANK];
    int ni = 0;
    if (n_inputs > 1 && ins[1] && (!const_ints(ins, n_inputs, 1, in_axes, &ni) || ni > 1))
        return FALSE;
    if (ins[0]->rank != 1 || (axes && (la != 1 || (axes[0] != 0 && axes[0] != -1))) ||
        (ni == 1 && in_axes[0] != 0 && in_axes[0] != -1))
        return FALSE;
    if (!axes && ni == 0 && hg_node_attr_int(node, "noop_with_empty_axes", 0))
        return FALSE; /* no axes: the identity */
    o->n = 1;
    gint64 prod = 1;
    for (int i = 0; i < d->n; i++)
        if (known(d, i) && d->v[i] == 0) {
            set_known(o, 0, 0);
            return TRUE;
        }
    for (int i = 0; i < d->n; i++) {
        if (!known(d, i)) {
            /* the product of one unknown dim and 1s is that dim */
            gboolean alone = TRUE;
            for (int j = 0; j < d->n; j++)
                alone = alone && (j == i || (known(d, j) && d->v[j] == 1));
            o->sym[0] = alone ? d->sym[i] : NULL;
            return TRUE;
        }
        if (__builtin_mul_overflow(prod, d->v[i], &prod))
            return TRUE;
    }
    set_known(o, 0, prod);
    return TRUE;
}

/* Equal of two entry lists (broadcast as binary's): known where both entries are, and false where
 * one is a symbolic dim (>= 0) and the other a known negative number (Equal(shape, -1) in
 * TorchScript's expand(-1) pattern). */
static gboolean
equal(const HgPartial *a, const HgPartial *b, HgPartial *o)
{
    if (a->n != b->n && a->n != 1 && b->n != 1)
        return FALSE;
    o->n = MAX(a->n, b->n);
    for (int i = 0; i < o->n; i++) {
        int ia = a->n == 1 ? 0 : i, ib = b->n == 1 ? 0 : i;
        gboolean ka = known(a, ia), kb = known(b, ib);
        if (ka && kb)
            set_known(o, i, a->v[ia] == b->v[ib]);
        else if ((ka && a->v[ia] < 0 && b->sym[ib]) || (kb && b->v[ib] < 0 && a->sym[ia]))
            set_known(o, i, 0);
    }
    return TRUE;
}

/* Where(cond, a, b) entry by entry, where cond's entry is known. */
static gboolean
where(const HgValueShape *const *ins, guint n_inputs, const HgPartial *c, HgPartial *o)
{
    HgPartial a, b;
    if (n_inputs != 3 || !entries(ins[1], &a) || !entries(ins[2], &b))
        return FALSE;
    o->n = MAX(c->n, MAX(a.n, b.n));
    if ((c->n != o->n && c->n != 1) || (a.n != o->n && a.n != 1) || (b.n != o->n && b.n != 1))
        return FALSE;
    for (int i = 0; i < o->n; i++) {
        int ic = c->n == 1 ? 0 : i;
        if (!known(c, ic))
            continue;
        const HgPartial *src = c->v[ic] ? &a : &b;
        int is = src->n == 1 ? 0 : i;
        o->v[i] = src->v[is];
        o->sym[i] = src->sym[is];
        o->known |= (guint32)known(src, is) << i;
    }
    return TRUE;
}

void
hg_partial_infer(const HgNode *node, gint64 opset, const HgValueShape *const *ins, guint n_inputs,
                 HgValueShape *out)
{
    if (!out || out->value || out->rank < 0 || out->rank > 1 || !n_inputs || !ins[0] ||
        (node->domain && *node->domain && strcmp(node->domain, "ai.onnx")))
        return;
    const char *op = node->op_type;
    HgPartial o, d;
    memset(&o, 0, sizeof(o));
    gboolean ok;
    if (!strcmp(op, "Shape")) {
        ok = shape_of(node, ins[0], &o);
    } else if (!strcmp(op, "Concat")) {
        ok = concat(node, ins, n_inputs, &o);
    } else if (!entries(ins[0], &d)) {
        return;
    } else if (!strcmp(op, "Gather")) {
        ok = gather(node, ins, n_inputs, &d, &o);
    } else if (!strcmp(op, "Slice")) {
        ok = slice(node, opset, ins, n_inputs, &d, &o);
    } else if (!strcmp(op, "ReduceProd")) {
        ok = reduce_prod(node, ins, n_inputs, &d, &o);
    } else if (!strcmp(op, "Equal")) {
        HgPartial b;
        ok = n_inputs == 2 && entries(ins[1], &b) && equal(&d, &b, &o);
    } else if (!strcmp(op, "Where")) {
        ok = hg_dtype_is_int(out->dtype) && where(ins, n_inputs, &d, &o);
    } else if (!strcmp(op, "Cast") || !strcmp(op, "Identity") || !strcmp(op, "Unsqueeze") ||
               !strcmp(op, "Squeeze") || !strcmp(op, "Reshape") || !strcmp(op, "Flatten")) {
        o = d;
        ok = hg_dtype_is_int(out->dtype) || out->dtype == HG_DTYPE_FLOAT || out->dtype == HG_DTYPE_DOUBLE;
        /* FP32 holds integers exactly only to 2^24 */
        for (int i = 0; ok && out->dtype == HG_DTYPE_FLOAT && i < o.n; i++)
            if (known(&o, i) && llabs(o.v[i]) > (1 << 24))
                o.known &= ~(1u << i);
    } else if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div")) {
        HgPartial b;
        ok = hg_dtype_is_int(out->dtype) && n_inputs == 2 && entries(ins[1], &b) &&
             binary(op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[0] == 'M' ? '*' : '/', &d, &b, &o);
    } else {
        return;
    }
    /* Only what the rule's own shape allows: a scalar holds one entry, a vector its length. */
    if (!ok || o.n <= 0 || o.n > HG_MAX_RANK || (out->rank == 0 && o.n != 1) ||
        (out->rank == 1 && out->dims[0].v >= 0 && out->dims[0].v != o.n))
        return;
    if (o.known == ALL(o.n) && out->dtype == HG_DTYPE_INT64) {
        gint64 dims = o.n;
        out->value = hg_i64_array((guint)out->rank, &dims, o.v);
        return;
    }
    for (int i = 0; i < o.n; i++)
        if (known(&o, i))
            o.sym[i] = NULL;
    out->part = o;
}
