/* Index math proven exact in FP16, by following every integer it can see through the op table's
 * interval rules.
 *
 *   int X ──Cast──▶ s ──Div──▶ ──Log──▶ ──Div──▶ ──Mul──▶ v ──Cast(int)──▶ bucket
 *   ▲ or s: every integer n in [lo, hi]                                    ▲ compared, per n
 *
 * T5's relative-position buckets are float math on integers that ends in a Cast back to an index.
 * Rounding could move a bucket, so the hazard analysis keeps such chains FP32. But when the chain is
 * elementwise in one integer tensor, its root (other operands scalar constants; integer ops such as
 * Sign, Abs, comparisons and Where may come between the root and the float Casts) and that tensor takes a few
 * thousand integers, each can be followed on its own. For one n the chain is run twice in interval
 * arithmetic, with each op's rule (the same rules the range analysis uses):
 *
 *   - as declared: the values the model's types allow, with FP32 kernels' rounding (2^-20), which
 *     gives the indices an FP32 runtime may produce (more than one where the FP32 value sits on an
 *     integer: T5's 8 log(16/8) / log(16) is 2, or 1.9999999);
 *   - in FP16: source, constants and every op's output either rounded to FP16 or not (a fused kernel
 *     computes in FP32 and rounds once), which covers every mix of storage a runtime may choose.
 *
 * When the FP16 indices are among the declared ones for every n, FP16 cannot give an index the model
 * could not: a proof for the range it was given, as sound as that range and the rules. */
#include "index_exact.h"

#include <math.h>

#include "ops/array.h"
#include "ops/op.h"

#define MAX_DOMAIN (1 << 17)

/* Widen r by FP32 kernels' rounding, as the range analysis does. */
static HgRange
widen_fp32(HgRange r)
{
    const double rel = 1.0 / 1048576.0;
    if (isfinite(r.lo))
        r.lo -= fabs(r.lo) * rel;
    if (isfinite(r.hi))
        r.hi += fabs(r.hi) * rel;
    return r;
}

/* r either as it is or rounded to FP16 (to nearest, monotone: the bounds' roundings bound it). */
static HgRange
or_fp16(HgRange r)
{
    HgRange h = r;
    if (!isnan(r.lo))
        h.lo = hg_half_to_float(hg_float_to_half((float)r.lo));
    if (!isnan(r.hi))
        h.hi = hg_half_to_float(hg_float_to_half((float)r.hi));
    h.tiny = 0;
    return hg_range_union(r, h);
}

/* An op's output r (its rule's exact bounds) as FP32 kernels compute it and the chain stores it:
 * in FP16 (fp16, or a converted model's declared FLOAT16) either rounded or not, since a fused kernel
 * rounds only at its end. */
static HgRange
store(HgRange r, int dtype, gboolean fp16)
{
    if (!hg_dtype_is_float(dtype))
        return r; /* integers and bools: exact */
    r = widen_fp32(r);
    return fp16 || dtype == HG_DTYPE_FLOAT16 ? or_fp16(r) : hg_range_fit(r, dtype);
}

/* The interval of `result` for source value n, or FALSE when a rule gives nothing. */
static gboolean
run_chain(const HgIndexChain *ch, double n, gboolean fp16, HgRange *out)
{
    HgRange vals[HG_INDEX_CHAIN_MAX + 1];
    const HgValue *keys[HG_INDEX_CHAIN_MAX + 1];
    guint nv = 0;
    keys[nv] = ch->source;
    vals[nv++] = store(hg_range_exact(n, n), ch->source_dtype, fp16);
    for (guint i = 0; i < ch->nodes->len; i++) {
        const HgNode *node = ch->nodes->pdata[i];
        const HgRange *ins[8] = {NULL};
        const HgValueShape *shapes[8] = {NULL};
        const HgArray *values[8] = {NULL};
        HgRange consts[8];
        if (node->n_inputs > G_N_ELEMENTS(ins) || node->n_outputs != 1 || nv > HG_INDEX_CHAIN_MAX)
            return FALSE;
        for (guint k = 0; k < node->n_inputs; k++) {
            const HgValue *x = node->inputs[k];
            if (!x)
                continue;
            shapes[k] = hg_shapes_get(ch->shapes, x);
            for (guint j = 0; j < nv && !ins[k]; j++)
                if (keys[j] == x)
                    ins[k] = &vals[j];
            for (guint j = 0; j < ch->constants->len && !ins[k]; j++) {
                if (ch->constants->pdata[j] != x)
                    continue;
                const HgRange *c = ch->constant_ranges->pdata[j];
                consts[k] = fp16 ? or_fp16(*c) : *c;
                ins[k] = &consts[k];
            }
            if (!ins[k] && !hg_index_chain_moves_only(node))
                return FALSE;
        }
        HgRange r = hg_range_any();
        if (hg_index_chain_moves_only(node)) {
            if (!ins[0])
                return FALSE;
            r = *ins[0]; /* reshaping, selection, float-to-float Casts: the values as they are */
        } else {
            const HgOpDef *op = hg_op_for_node(node);
            if (!op || !op->range)
                return FALSE;
            const HgValueShape *oshape = hg_shapes_get(ch->shapes, node->outputs[0]);
            HgRange *outs[1] = {&r};
            HgRangeCtx ctx = {node, ch->opset, node->n_inputs, ins, shapes, values, 1, &oshape, outs, NULL,
                              NULL};
            op->range(&ctx);
            r = store(r, oshape->dtype, fp16);
        }
        keys[nv] = node->outputs[0];
        vals[nv++] = r;
    }
    for (guint j = 0; j < nv; j++) {
        if (keys[j] == ch->result) {
            *out = vals[j];
            return TRUE;
        }
    }
    return FALSE;
}

/* The indices a Cast (truncation) of the values in r can give, within [type_lo, type_hi]; FALSE when
 * r may be NaN, reaches past the type (where a Cast is undefined) or holds an infinity with finite
 * values. [-inf, -inf] (log(0) on a diagonal) gives lo = hi = -inf: the same undefined Cast as FP32's. */
static gboolean
indices(const HgRange *r, double type_lo, double type_hi, double *lo, double *hi)
{
    if (r->nan)
        return FALSE;
    if (r->lo == r->hi && isinf(r->lo)) {
        *lo = *hi = r->lo;
        return TRUE;
    }
    if (!isfinite(r->lo) || !isfinite(r->hi))
        return FALSE;
    *lo = trunc(r->lo);
    *hi = trunc(r->hi);
    return *lo >= type_lo && *hi <= type_hi;
}

static void
int_type_range(int to, double *lo, double *hi)
{
    switch (to) {
    case HG_DTYPE_INT8: *lo = -128, *hi = 127; break;
    case HG_DTYPE_UINT8: *lo = 0, *hi = 255; break;
    case HG_DTYPE_INT16: *lo = -32768, *hi = 32767; break;
    case HG_DTYPE_UINT16: *lo = 0, *hi = 65535; break;
    case HG_DTYPE_INT32: *lo = -2147483648.0, *hi = 2147483647.0; break;
    case HG_DTYPE_UINT32: *lo = 0, *hi = 4294967295.0; break;
    case HG_DTYPE_UINT64: *lo = 0, *hi = 9007199254740992.0; break;
    default: *lo = -9007199254740992.0, *hi = 9007199254740992.0; break;
    }
}

gboolean
hg_index_chain_moves_only(const HgNode *n)
{
    return n->n_outputs == 1 && (hg_node_has_traits(n, HG_TRAIT_REARRANGES) || hg_node_is(n, "Cast"));
}

/* ---------------------------------------------------------------- finding the chain
 *
 * From the result upward through elementwise ops and moves (their data input) lies the closure. The
 * root is a tensor every path from the result passes (on the trunk), integer-valued (an integer or
 * bool tensor, or a float Cast of one), and the chain from it must be elementwise in it: a move that
 * rearranges elements (Unsqueeze, Expand; not a Cast) must sit on the trunk, or two branches would
 * pair different elements (DeBERTa's i - j over Unsqueezes of one Range is elementwise in i - j, not
 * in the Range). */

#define CLOSURE_MAX 96

static gboolean
is_const(const HgIndexChain *ch, const HgValue *v)
{
    return v->init || hg_shapes_get(ch->shapes, v)->value;
}

static gboolean
chain_node(const HgNode *p)
{
    if (!p || p->n_outputs != 1)
        return FALSE;
    if (hg_index_chain_moves_only(p))
        return TRUE;
    const HgOpDef *op = hg_op_for_node(p);
    /* Where selects element i of a branch by element i of its condition: elementwise in structure */
    return op && ((op->traits & HG_TRAIT_ELEMENTWISE) || hg_node_is(p, "Where"));
}

/* The operands the chain follows: a move's data, every input of an elementwise op. */
static guint
chain_operands(const HgNode *p)
{
    return hg_index_chain_moves_only(p) ? MIN(1u, p->n_inputs) : p->n_inputs;
}

/* A value inside the closure whose producer the chain may follow. */
static gboolean
chain_expands(const HgIndexChain *ch, const HgValue *x)
{
    return !is_const(ch, x) && x->producer && chain_node(x->producer) &&
           g_hash_table_contains(ch->closure, x->producer);
}

/* The values upward of from in the closure (from included), not passing through stop: their number,
 * and whether a leaf (a non-constant value the closure does not expand) is among them. */
static guint
walk_up(const HgIndexChain *ch, const HgValue *from, const HgValue *stop, gboolean *leaf)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    g_ptr_array_add(stack, (gpointer)from);
    *leaf = FALSE;
    while (stack->len) {
        const HgValue *x = g_ptr_array_steal_index(stack, stack->len - 1);
        if (x == stop || g_hash_table_contains(seen, x))
            continue;
        g_hash_table_add(seen, (gpointer)x);
        if (is_const(ch, x))
            continue;
        if (!chain_expands(ch, x)) {
            *leaf = TRUE;
            continue;
        }
        for (guint k = 0; k < chain_operands(x->producer); k++)
            if (x->producer->inputs[k])
                g_ptr_array_add(stack, x->producer->inputs[k]);
    }
    return g_hash_table_size(seen);
}

/* An integer or bool element type: the values a chain can be followed over, one by one. */
static gboolean
countable(HgDType dt)
{
    return hg_dtype_is_int(dt) || dt == HG_DTYPE_BOOL;
}

/* An integer tensor, or a float Cast of one. */
static gboolean
integer_root(const HgIndexChain *ch, const HgValue *x)
{
    if (countable(hg_shapes_get(ch->shapes, x)->dtype))
        return TRUE;
    const HgNode *p = x->producer;
    return p && hg_node_is(p, "Cast") && p->inputs[0] && countable(hg_shapes_get(ch->shapes, p->inputs[0])->dtype);
}

static gint
by_upward(gconstpointer a, gconstpointer b, gpointer counts)
{
    guint ca = GPOINTER_TO_UINT(g_hash_table_lookup(counts, *(gconstpointer *)a));
    guint cb = GPOINTER_TO_UINT(g_hash_table_lookup(counts, *(gconstpointer *)b));
    return ca < cb ? -1 : ca > cb;
}

GPtrArray *
hg_index_chain_roots(HgIndexChain *ch)
{
    GPtrArray *roots = g_ptr_array_new();
    if (!ch->result)
        return roots;
    g_autoptr(GHashTable) values = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    g_ptr_array_add(stack, (gpointer)ch->result);
    while (stack->len) {
        const HgValue *x = g_ptr_array_steal_index(stack, stack->len - 1);
        if (g_hash_table_contains(values, x))
            continue;
        g_hash_table_add(values, (gpointer)x);
        const HgNode *p = x->producer;
        if (is_const(ch, x) || !chain_node(p) || g_hash_table_size(ch->closure) >= CLOSURE_MAX)
            continue;
        g_hash_table_add(ch->closure, (gpointer)p);
        for (guint k = 0; k < chain_operands(p); k++)
            if (p->inputs[k])
                g_ptr_array_add(stack, p->inputs[k]);
    }
    g_autoptr(GHashTable) counts = g_hash_table_new(NULL, NULL);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, values);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        const HgValue *x = key;
        gboolean leaf;
        if (is_const(ch, x))
            continue;
        if (x != ch->result) {
            walk_up(ch, ch->result, x, &leaf);
            if (leaf)
                continue; /* a path from the result goes around x */
        }
        g_hash_table_add(ch->trunk, key);
        g_hash_table_insert(counts, key, GUINT_TO_POINTER(walk_up(ch, x, NULL, &leaf)));
        if (x != ch->result && integer_root(ch, x))
            g_ptr_array_add(roots, key);
    }
    g_ptr_array_sort_with_data(roots, by_upward, counts);
    return roots;
}

/* Add the chain from the root to x, post-order; FALSE when a move is off the trunk, a constant is not
 * a scalar or the chain is too long. */
static gboolean
chain_from(HgIndexChain *ch, const HgValue *x, GHashTable *seen)
{
    if (g_hash_table_contains(seen, x))
        return TRUE;
    g_hash_table_add(seen, (gpointer)x);
    if (x == ch->source)
        return TRUE;
    if (is_const(ch, x)) {
        g_autoptr(HgArray) a = x->init ? hg_array_from_tensor(x->init, NULL)
                                       : hg_array_ref(hg_shapes_get(ch->shapes, x)->value);
        if (!a || a->numel != 1)
            return FALSE;
        g_ptr_array_add(ch->constants, (gpointer)x);
        HgRange *r = g_new(HgRange, 1);
        *r = hg_range_of_array(a);
        g_ptr_array_add(ch->constant_ranges, r);
        return TRUE;
    }
    const HgNode *p = x->producer;
    if (!chain_expands(ch, x) || ch->nodes->len >= HG_INDEX_CHAIN_MAX ||
        (hg_index_chain_moves_only(p) && !hg_node_is(p, "Cast") && !hg_node_is(p, "Identity") &&
         !g_hash_table_contains(ch->trunk, x)))
        return FALSE;
    for (guint k = 0; k < chain_operands(p); k++)
        if (!p->inputs[k] || !chain_from(ch, p->inputs[k], seen))
            return FALSE;
    g_ptr_array_add(ch->nodes, (gpointer)p);
    return TRUE;
}

gboolean
hg_index_chain_build(HgIndexChain *ch, const HgValue *root)
{
    g_ptr_array_set_size(ch->nodes, 0);
    g_ptr_array_set_size(ch->constants, 0);
    g_ptr_array_set_size(ch->constant_ranges, 0);
    ch->source = root;
    ch->source_dtype = hg_shapes_get(ch->shapes, root)->dtype;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    if (ch->result && chain_from(ch, ch->result, seen) && ch->nodes->len)
        return TRUE;
    ch->source = NULL;
    return FALSE;
}

gboolean
hg_index_chain_exact(const HgIndexChain *ch, double lo, double hi, int to)
{
    if (!ch->source || !ch->result || !ch->shapes || isnan(lo) || isnan(hi) ||
        ch->nodes->len > HG_INDEX_CHAIN_MAX ||
        (ch->source_dtype != HG_DTYPE_FLOAT && ch->source_dtype != HG_DTYPE_FLOAT16 &&
         !countable(ch->source_dtype)))
        return FALSE;
    lo = ceil(lo);
    hi = floor(hi);
    if (!(lo <= hi) || hi - lo + 1 > MAX_DOMAIN)
        return FALSE;
    double tlo, thi;
    int_type_range(to, &tlo, &thi);
    for (double n = lo; n <= hi; n++) {
        HgRange a, b;
        double alo, ahi, blo, bhi;
        if (!run_chain(ch, n, FALSE, &a) || !run_chain(ch, n, TRUE, &b) ||
            !indices(&a, tlo, thi, &alo, &ahi) || !indices(&b, tlo, thi, &blo, &bhi) || blo < alo ||
            bhi > ahi)
            return FALSE;
    }
    return TRUE;
}

void
hg_index_chain_init(HgIndexChain *ch, const HgShapes *shapes, gint64 opset)
{
    *ch = (HgIndexChain){NULL, HG_DTYPE_UNDEFINED, NULL, g_ptr_array_new(), g_ptr_array_new(),
                         g_ptr_array_new_with_free_func(g_free), shapes, opset,
                         g_hash_table_new(NULL, NULL), g_hash_table_new(NULL, NULL)};
}

void
hg_index_chain_clear(HgIndexChain *ch)
{
    g_ptr_array_unref(ch->nodes);
    g_ptr_array_unref(ch->constants);
    g_ptr_array_unref(ch->constant_ranges);
    g_hash_table_unref(ch->closure);
    g_hash_table_unref(ch->trunk);
}
