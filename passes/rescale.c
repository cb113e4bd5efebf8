/* rescale: keep tensors that pass FP16's range in FP16, by a power of two.
 *
 *     x -> Conv(W1,b1) -> Relu -> Conv(W2,b2) -> Relu -> y        y reaches 2e5
 *  => x -> Conv(W1/2^k, b1/2^k) -> Relu -> Conv(W2, b2/2^k) -> Relu -> Mul(2^k) -> y
 *
 * A region of linear and positively homogeneous ops carries a scale of 2^-k. It starts at the linear
 * ops (Conv, ConvTranspose, Gemm, MatMul with constant weights) nearest before the tensor that
 * overflows, whose weights and bias take 2^-k, or at gains (a Mul by a constant, whose constant takes
 * 2^-k, a Div by one, whose divisor takes 2^k; left alone where FP16 would not hold that constant
 * any more), and covers every op the scale passes through: ReLU,
 * pooling, zero Pad, Slice, Reshape, Transpose, Split, Concat, nearest/linear Resize, reductions that
 * sum, average or pick, Clip (bounds scaled), BatchNormalization (mean and bias scaled), later linear
 * ops (bias scaled), and Add, Sub, Sum, Max, Min, Mean, Concat whose operands all carry the scale (a
 * constant operand is scaled; an Add whose other operand does not carry it and whose output
 * overflows pulls that operand's linear ops into the region: a residual block's trunk and branch
 * both carry 2^-k). An unscaled tensor that must enter is multiplied by 2^-k. The scale is undone
 * where it is absorbed: a scale-invariant normalization (InstanceNormalization, LayerNormalization,
 * GroupNormalization, RMSNormalization: epsilon times 2^-2k), a constant Mul or Div (the constant absorbs 2^k), a later
 * linear op whose output fits again (its weights take 2^k, its bias stays); failing those, a Mul by
 * 2^k before whatever reads the tensor (a graph output keeps its name; where its values pass FP16's
 * range the Mul is the only FP32 node left). Powers of two are exact: in FP32 the outputs before and
 * after agree bit for bit, barring overflow and underflow. k is the smallest that brings every tensor
 * of the region under the threshold (static bound, or calibration with margin), and the region is
 * left alone when that would push the largest value of one of its tensors below 2^-4 (ten bits above
 * FP16's subnormals). A DETR-style normalized CumSum is rescaled on its own (normalized_cumsums).
 * Each rewrite is reported with k, the bound that needed it, and where the scale comes in and goes.
 */
#include "halfguard/pass.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "precision_cost.h"
#include "ops/array.h"
#include "ops/op.h"

static gboolean
is_const(const HgValue *v)
{
    return v && v->init && v->init->dtype == HG_DTYPE_FLOAT;
}

/* A linear op whose weights are a constant initializer (the chain can start here). */
static gboolean
is_linear(const HgNode *n)
{
    if (hg_node_is(n, "Conv") || hg_node_is(n, "ConvTranspose") || hg_node_is(n, "Gemm"))
        return n->n_inputs >= 2 && is_const(n->inputs[1]) &&
               (n->n_inputs < 3 || !n->inputs[2] || is_const(n->inputs[2]));
    if (hg_node_is(n, "MatMul"))
        return n->n_inputs == 2 && is_const(n->inputs[1]);
    return FALSE;
}

/* A gain: Mul or Div of a computed tensor by a constant (a unit conversion, an un-normalised gain
 * folded into one number or one per channel). Like a linear op it can start a region: its constant
 * takes 2^-k (a divisor 2^k). */
static gboolean
is_gain(const HgNode *n)
{
    return (hg_node_is(n, "Mul") || hg_node_is(n, "Div")) && n->n_inputs == 2 && n->n_outputs == 1 &&
           n->inputs[0] && !is_const(n->inputs[0]) && is_const(n->inputs[1]) &&
           hg_tensor_numel(n->inputs[1]->init) >= 1;
}

/* Where a region may start: a linear op with constant weights, or a gain. */
static gboolean
is_source(const HgNode *n)
{
    return is_linear(n) || is_gain(n);
}

/* Ops whose every float input carries the scale (the others take it too, or are scaled constants):
 * the op table's JOINT ops. */
static gboolean
all_inputs_carry(const HgNode *n)
{
    return hg_node_has_traits(n, HG_TRAIT_JOINT);
}

/* Does input i of n carry the scale (as opposed to a shape, an index, a weight)? */
static gboolean
carries(const HgNode *n, guint i)
{
    return i == 0 || all_inputs_carry(n);
}

/* Does n commute with a positive scale of its carrying inputs (its constants adjusted)? */
static gboolean
commutes(const HgNode *n)
{
    if (all_inputs_carry(n))
        return n->n_inputs >= 1 && n->n_outputs == 1;
    if (hg_node_is(n, "PRelu")) /* homogeneous while its slope stays as it is */
        return n->n_inputs == 2 && is_const(n->inputs[1]);
    /* positively homogeneous in input 0 (the op table says which); linear ops with weights below */
    if (hg_node_has_traits(n, HG_TRAIT_HOMOGENEOUS) && !hg_node_has_traits(n, HG_TRAIT_LINEAR))
        return TRUE;
    if (hg_node_is(n, "Pad")) { /* zero constant padding */
        g_autofree char *mode = hg_attr_string(n, "mode", "constant");
        gboolean zero = hg_node_attr_float(n, "value", 0) == 0 &&
                        (n->n_inputs < 3 || !n->inputs[2] || (is_const(n->inputs[2]) &&
                                                                hg_tensor_numel(n->inputs[2]->init) == 1));
        if (zero && n->n_inputs >= 3 && n->inputs[2]) {
            g_autoptr(HgArray) a = hg_array_from_tensor(n->inputs[2]->init, NULL);
            zero = a && hg_array_get_f64(a, 0) == 0;
        }
        return strcmp(mode, "constant") == 0 && zero;
    }
    if (hg_node_is(n, "Resize")) {
        g_autofree char *mode = hg_attr_string(n, "mode", "nearest");
        return strcmp(mode, "nearest") == 0 || strcmp(mode, "linear") == 0;
    }
    if (hg_node_is(n, "Clip")) /* bounds as constant inputs (opset 11+) or attributes */
        return (n->n_inputs < 2 || !n->inputs[1] || is_const(n->inputs[1])) &&
               (n->n_inputs < 3 || !n->inputs[2] || is_const(n->inputs[2]));
    if (hg_node_is(n, "BatchNormalization"))
        return n->n_outputs == 1 && n->n_inputs == 5 && is_const(n->inputs[2]) && is_const(n->inputs[3]);
    return is_source(n);
}

/* Where the scale is undone inside the op (read at input 0): scale-invariant ops (normalizations,
 * with their epsilon adjusted; ArgMax, Sign) and a constant Mul or Div. */
static gboolean
absorbs(const HgNode *n)
{
    if (hg_node_has_traits(n, HG_TRAIT_SCALE_INVARIANT))
        return TRUE;
    return (hg_node_is(n, "Mul") || hg_node_is(n, "Div")) && n->n_inputs == 2 && is_const(n->inputs[1]) &&
           hg_tensor_numel(n->inputs[1]->init) >= 1;
}

typedef struct {
    const HgTensor *src;
    int e;
    gsize prev; /* where the previous piece began */
} ScaleFill;

/* hg_tensor_new_spilled's fill: FP32 bytes [from, from + count) scaled by 2^e, as the loop of
 * scale_const computes them; the source pages read leave the process. */
static void
fill_scaled(guint8 *dst, gsize from, gsize count, gpointer data)
{
    ScaleFill *f = data;
    const guint8 *src = f->src->data;
    /* A product by a normal power of two is the exact x 2^e rounded once to FLOAT, as (float)ldexp
     * is: the same bits, without a libm call per element. */
    gboolean mul = f->e >= -126 && f->e <= 127;
    float s = mul ? ldexpf(1.0f, f->e) : 0;
    for (gsize i = 0; i + 4 <= count; i += 4) {
        float x, y;
        memcpy(&x, src + from + i, 4);
        y = mul ? x * s : (float)ldexp(x, f->e);
        memcpy(dst + i, &y, 4);
    }
    hg_blob_release(f->src->blob, src + f->prev, from + count - f->prev);
    f->prev = from;
}

/* A copy of constant input k of n times 2^e (a new initializer, so others reading it are untouched).
 * A large FP32 weight viewed in a mapped file is scaled into the model's spill file, not memory. */
static gboolean
scale_const(HgGraph *g, HgNode *n, guint k, int e, GError **error)
{
    HgValue *v = n->inputs[k];
    g_autofree char *base = g_strdup_printf("%s_scaled", v->name);
    g_autofree char *name = hg_graph_unique_name(g, base);
    const HgTensor *t = v->init;
    HgTensor *scaled = NULL;
    if (t->dtype == HG_DTYPE_FLOAT && g->model && hg_blob_fd(t->blob) >= 0 && t->data &&
        t->nbytes >= hg_spill_min() && (gint64)t->nbytes == hg_tensor_expected_bytes(t)) {
        ScaleFill f = {t, e, 0};
        scaled = hg_tensor_new_spilled(g->model, name, HG_DTYPE_FLOAT, t->rank, t->dims, fill_scaled, &f, NULL);
    }
    if (!scaled) {
        g_autoptr(HgArray) a = hg_array_from_tensor(t, error);
        if (!a)
            return FALSE;
        g_autoptr(HgArray) out = hg_array_new(HG_DTYPE_FLOAT, a->rank, a->dims, error);
        if (!out)
            return FALSE;
        float *src = a->data, *dst = out->data;
        for (gint64 i = 0; i < a->numel; i++)
            dst[i] = (float)ldexp(src[i], e);
        scaled = hg_array_to_tensor(out, name);
    }
    HgValue *c = hg_graph_new_value(g, name, error);
    if (!c) {
        hg_tensor_free(scaled);
        return FALSE;
    }
    hg_graph_add_initializer(g, c, scaled);
    hg_node_set_input(n, k, c);
    return TRUE;
}

/* The largest magnitude of a constant (NAN when it cannot be read). */
static double
const_absmax(const HgValue *v)
{
    g_autoptr(HgArray) a = hg_array_from_tensor(v->init, NULL);
    if (!a)
        return NAN;
    double m = 0;
    for (gint64 i = 0; i < a->numel; i++)
        m = MAX(m, fabs(hg_array_get_f64(a, i)));
    return m;
}

/* A scalar FP32 initializer holding 2^e. */
static HgValue *
pow2_const(HgGraph *g, const char *base, int e)
{
    HgTensor *t = hg_tensor_new(NULL, HG_DTYPE_FLOAT, 0, NULL);
    *(float *)hg_tensor_data_mut(t) = (float)ldexp(1.0, e);
    return hg_graph_new_initializer(g, base, t);
}

/* A Mul by 2^e reading v, named after v with `suffix`; its output is returned (a new value). */
static HgValue *
mul_after(HgGraph *g, HgValue *v, int e, const char *kbase, const char *suffix, const char *out_name,
          GError **error)
{
    HgValue *kv = pow2_const(g, kbase, e);
    g_autofree char *obase = g_strdup_printf("%s%s", v->name, suffix);
    g_autofree char *oname = out_name ? g_strdup(out_name) : hg_graph_unique_name(g, obase);
    HgValue *o = hg_graph_new_value(g, oname, error);
    if (!o)
        return NULL;
    g_autofree char *nname = g_strdup_printf("%s/%s", out_name ? out_name : v->name, kbase);
    g_autofree char *nuniq = hg_graph_unique_name(g, nname);
    HgValue *ins[2] = {v, kv};
    hg_graph_add_node(g, "Mul", NULL, nuniq, 2, ins, 1, &o);
    if (v->type)
        hg_value_set_elem_type(o, HG_DTYPE_FLOAT);
    return o;
}

/* Undo the scale of v for the readers in `uses` (HgUse) and, where v is a graph output, for the
 * output: a Mul by 2^k between. A graph output keeps its name on the unscaled tensor; the scaled
 * one is renamed NAME_scaled. */
static gboolean
undo_for(HgGraph *g, HgValue *v, GArray *uses, int k, GError **error)
{
    HgValue *o;
    if (v->is_output) {
        g_autofree char *name = g_strdup(v->name);
        g_autofree char *inner_base = g_strdup_printf("%s_scaled", name);
        g_autofree char *inner = hg_graph_unique_name(g, inner_base);
        if (!hg_value_rename(v, inner, error))
            return FALSE;
        g_autoptr(GArray) keep = g_array_copy(v->uses); /* readers inside the scaled region */
        HgValue *tmp = hg_graph_new_value(g, name, error);
        if (!tmp)
            return FALSE;
        hg_value_replace_uses(v, tmp); /* the graph output declaration now names tmp */
        for (guint u = 0; u < keep->len; u++) {
            HgUse *use = &g_array_index(keep, HgUse, u);
            hg_node_set_input(use->node, use->index, v);
        }
        HgValue *kv = pow2_const(g, "rescale_undo", k);
        g_autofree char *nname = g_strdup_printf("%s/rescale_undo", name);
        g_autofree char *nuniq = hg_graph_unique_name(g, nname);
        HgValue *ins[2] = {v, kv};
        hg_graph_add_node(g, "Mul", NULL, nuniq, 2, ins, 1, &tmp);
        if (v->type)
            hg_value_set_elem_type(tmp, HG_DTYPE_FLOAT);
        o = tmp;
    } else {
        o = mul_after(g, v, k, "rescale_undo", "_unscaled", NULL, error);
        if (!o)
            return FALSE;
    }
    for (guint u = 0; uses && u < uses->len; u++) {
        HgUse *use = &g_array_index(uses, HgUse, u);
        hg_node_set_input(use->node, use->index, o);
    }
    return TRUE;
}

/* A scaled region: the nodes that carry the scale 2^-k, and where it comes in and goes out. */
typedef enum { ROLE_SOURCE = 1, ROLE_INTERIOR } Role;

typedef struct {
    GHashTable *role;       /* member HgNode* -> Role */
    GPtrArray *members;     /* in topological order */
    GHashTable *scaled;     /* HgValue* whose contents take 2^-k */
    GArray *entries;        /* HgUse: a member's unscaled carrying input, fed x * 2^-k */
    GPtrArray *absorbers;   /* normalizations and constant Mul/Div reading a scaled input 0 */
    GPtrArray *linear_ends; /* later linear ops whose output fits: their weights take 2^k */
    GHashTable *undo;       /* scaled HgValue* -> GArray of HgUse needing the unscaled values */
} Region;

static void
region_init(Region *R)
{
    R->role = g_hash_table_new(NULL, NULL);
    R->members = g_ptr_array_new();
    R->scaled = g_hash_table_new(NULL, NULL);
    R->entries = g_array_new(FALSE, FALSE, sizeof(HgUse));
    R->absorbers = g_ptr_array_new();
    R->linear_ends = g_ptr_array_new();
    R->undo = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_array_unref);
}

static void
region_clear(Region *R)
{
    g_hash_table_unref(R->role);
    g_ptr_array_unref(R->members);
    g_hash_table_unref(R->scaled);
    g_array_unref(R->entries);
    g_ptr_array_unref(R->absorbers);
    g_ptr_array_unref(R->linear_ends);
    g_hash_table_unref(R->undo);
}

static void
need_undo(Region *R, HgValue *v, HgNode *reader, guint index)
{
    GArray *uses = g_hash_table_lookup(R->undo, v);
    if (!uses) {
        uses = g_array_new(FALSE, FALSE, sizeof(HgUse));
        g_hash_table_insert(R->undo, v, uses);
    }
    if (reader) {
        HgUse u = {reader, index};
        g_array_append_val(uses, u);
    }
}

/* May v hold scaled values? Not when a nested graph reads or passes it on (its readers there would
 * need their own undo). */
static gboolean
scalable(const HgGraph *g, const HgValue *v)
{
    if (v->nested_outputs)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++)
        if (g_array_index(v->uses, HgUse, u).node->graph != g)
            return FALSE;
    return TRUE;
}

static gboolean
outputs_scalable(const HgGraph *g, const HgShapes *shapes, const HgNode *n)
{
    for (guint o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] && hg_shapes_get(shapes, n->outputs[o])->dtype == HG_DTYPE_FLOAT &&
            !scalable(g, n->outputs[o]))
            return FALSE;
    return TRUE;
}

/* Plan the region that brings the tensor produced by `at` under the threshold. Backward from `at`
 * through commuting ops, stopping at linear ops with constant weights (the sources: their weights
 * take 2^-k); an unscaled tensor entering on the way is multiplied by 2^-k. Then forward in
 * topological order: a reader of a scaled tensor absorbs the scale (a normalization, a constant Mul
 * or Div, a later linear op whose output fits: its weights take 2^k), carries it on (it commutes and
 * all its carrying inputs are scaled), or else reads the tensor through a Mul by 2^k. A linear op
 * found backward whose input turns out to be scaled already carries the scale (only its bias
 * changes). FALSE when the region cannot be scaled (a nested graph reads one of its tensors). */
/* Add to `back` the nodes found backward from `from` through commuting ops, stopping at linear ops
 * with constant weights (the sources: their weights take 2^-k). */
static void
close_backward(GHashTable *back, HgNode *from, const HgGraph *g, GHashTable *taken, const HgShapes *shapes)
{
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    /* Producers judged once: a Sum may read one tensor 10^5 times, and outputs_scalable reads
     * every use of it. */
    g_autoptr(GHashTable) judged = g_hash_table_new(NULL, NULL);
    g_ptr_array_add(stack, from);
    while (stack->len) {
        HgNode *p = g_ptr_array_steal_index(stack, stack->len - 1);
        if (!g_hash_table_add(back, p))
            continue;
        if (is_source(p))
            continue;
        for (guint i = 0; i < p->n_inputs; i++) {
            HgValue *x = p->inputs[i];
            if (!carries(p, i) || !x || is_const(x))
                continue;
            HgNode *q = x->producer;
            if (q && g_hash_table_add(judged, q) && q->graph == g && commutes(q) &&
                !g_hash_table_contains(taken, q) && outputs_scalable(g, shapes, q))
                g_ptr_array_add(stack, q);
        }
    }
}

static void
region_reset(Region *R)
{
    region_clear(R);
    region_init(R);
}

/* Plan the region that brings the tensor produced by `at` under the threshold. Backward from `at`
 * (close_backward); an unscaled tensor entering on the way is multiplied by 2^-k. Then forward in
 * topological order: a reader of a scaled tensor absorbs the scale (a normalization, a constant Mul
 * or Div, a later linear op whose output fits: its weights take 2^k), carries it on (it commutes and
 * all its carrying inputs are scaled), or else reads the tensor through a Mul by 2^k. A reader that
 * commutes and writes a tensor FP16 cannot hold, but also reads an unscaled tensor (a residual Add),
 * joins with what lies behind it, and the forward pass starts again. A linear op found backward whose
 * input turns out to be scaled already carries the scale (only its bias changes). FALSE when the
 * region cannot be scaled (a nested graph reads one of its tensors). */
static gboolean
plan_region(HgGraph *g, HgNode *at, GPtrArray *order, GHashTable *taken, HgCheckResult *res,
            double threshold, Region *R)
{
    const HgShapes *shapes = hg_check_shapes(res);
    g_autoptr(GHashTable) back = g_hash_table_new(NULL, NULL);
    close_backward(back, at, g, taken, shapes);
restart:
    for (guint i = 0; i < order->len; i++) {
        HgNode *r = order->pdata[i];
        gboolean member = g_hash_table_contains(back, r);
        if (!member) {
            /* A reader of the region's tensors? */
            guint n_scaled = 0, first = G_MAXUINT;
            for (guint k = 0; k < r->n_inputs; k++)
                if (r->inputs[k] && g_hash_table_contains(R->scaled, r->inputs[k]))
                    n_scaled++, first = MIN(first, k);
            if (!n_scaled)
                continue;
            if (n_scaled == 1 && first == 0 && absorbs(r)) {
                g_ptr_array_add(R->absorbers, r);
                continue;
            }
            if (n_scaled == 1 && first == 0 && is_linear(r) &&
                hg_check_value_bound(res, r->outputs[0], NULL) <= threshold) {
                g_ptr_array_add(R->linear_ends, r);
                continue;
            }
            gboolean joins = commutes(r) && !g_hash_table_contains(taken, r) && outputs_scalable(g, shapes, r);
            gboolean mixed = FALSE, unsafe = FALSE;
            for (guint k = 0; joins && k < r->n_inputs; k++) {
                HgValue *x = r->inputs[k];
                if (!x)
                    continue;
                gboolean sc = g_hash_table_contains(R->scaled, x);
                if (!carries(r, k))
                    joins = !sc;
                else if (!sc && !is_const(x) && hg_shapes_get(shapes, x)->dtype == HG_DTYPE_FLOAT)
                    mixed = TRUE;
            }
            for (guint o = 0; joins && o < r->n_outputs; o++)
                if (r->outputs[o] && hg_shapes_get(shapes, r->outputs[o])->dtype == HG_DTYPE_FLOAT) {
                    joins = isfinite(hg_check_value_bound(res, r->outputs[o], NULL));
                    unsafe |= hg_check_value_unsafe(res, r->outputs[o]);
                }
            if (joins && mixed && unsafe) {
                close_backward(back, r, g, taken, shapes);
                region_reset(R);
                goto restart;
            }
            if (!joins || mixed) {
                for (guint k = 0; k < r->n_inputs; k++)
                    if (r->inputs[k] && g_hash_table_contains(R->scaled, r->inputs[k]))
                        need_undo(R, r->inputs[k], r, k);
                continue;
            }
        }
        Role role = is_source(r) && !g_hash_table_contains(R->scaled, r->inputs[0]) ? ROLE_SOURCE : ROLE_INTERIOR;
        g_hash_table_insert(R->role, r, GINT_TO_POINTER(role));
        g_ptr_array_add(R->members, r);
        if (role == ROLE_INTERIOR)
            for (guint k = 0; k < r->n_inputs; k++) {
                HgValue *x = r->inputs[k];
                if (x && carries(r, k) && !is_const(x) && !g_hash_table_contains(R->scaled, x) &&
                    hg_shapes_get(shapes, x)->dtype == HG_DTYPE_FLOAT) {
                    if (!scalable(g, x))
                        return FALSE;
                    HgUse e = {r, k};
                    g_array_append_val(R->entries, e);
                }
            }
        for (guint o = 0; o < r->n_outputs; o++)
            if (r->outputs[o] && hg_shapes_get(shapes, r->outputs[o])->dtype == HG_DTYPE_FLOAT) {
                if (!scalable(g, r->outputs[o]))
                    return FALSE;
                g_hash_table_add(R->scaled, r->outputs[o]);
                if (r->outputs[o]->is_output)
                    need_undo(R, r->outputs[o], NULL, 0);
            }
    }
    return R->members->len > 0;
}

/* Scale the constants of member m for its role: a source's weights and bias by 2^-k, an interior
 * linear op's bias, added constants, Clip's bounds, BatchNormalization's mean and bias. */
static gboolean
scale_member(HgGraph *g, HgNode *m, Role role, int k, GError **error)
{
    if (role == ROLE_SOURCE && is_gain(m))
        return scale_const(g, m, 1, hg_node_is(m, "Div") ? k : -k, error);
    if (role == ROLE_SOURCE) {
        if (!scale_const(g, m, 1, -k, error))
            return FALSE;
        return m->n_inputs < 3 || !m->inputs[2] || scale_const(g, m, 2, -k, error);
    }
    if (is_linear(m))
        return hg_node_is(m, "MatMul") || m->n_inputs < 3 || !m->inputs[2] || scale_const(g, m, 2, -k, error);
    if (all_inputs_carry(m)) {
        for (guint b = 0; b < m->n_inputs; b++)
            if (is_const(m->inputs[b]) && !scale_const(g, m, b, -k, error))
                return FALSE;
        return TRUE;
    }
    if (hg_node_is(m, "Clip")) {
        for (guint b = 1; b < m->n_inputs; b++)
            if (m->inputs[b] && !scale_const(g, m, b, -k, error))
                return FALSE;
        for (guint a = 0; a < m->attrs->len; a++) {
            HgAttr *at = m->attrs->pdata[a];
            if (!strcmp(at->name, "min") || !strcmp(at->name, "max"))
                at->f = (float)ldexp(at->f, -k);
        }
        return TRUE;
    }
    if (hg_node_is(m, "BatchNormalization"))
        return scale_const(g, m, 2, -k, error) && scale_const(g, m, 3, -k, error);
    return TRUE;
}

/* Calibration saw the unscaled tensor called `was`: record what v holds now, under v's name. */
static void
stats_scaled(const HgCheckOptions *opts, const char *was, const HgValue *v, int k)
{
    const HgTensorStats *s = opts->stats ? hg_stats_get(opts->stats, was) : NULL;
    if (!s)
        return;
    HgTensorStats scaled = *s;
    scaled.min = ldexp(s->min, -k);
    scaled.max = ldexp(s->max, -k);
    scaled.absmax = ldexp(s->absmax, -k);
    scaled.min_abs_nonzero = ldexp(s->min_abs_nonzero, -k);
    hg_stats_set(opts->stats, v->name, &scaled);
}

/* A small constant input as int64s (initializer or folded), or FALSE. */
static gboolean
const_ints(const HgShapes *shapes, const HgValue *v, gint64 *out, guint max, guint *n)
{
    g_autoptr(HgArray) a = !v ? NULL : v->init ? hg_array_from_tensor(v->init, NULL)
                                               : hg_shapes_get(shapes, v)->value
                                                     ? hg_array_ref(hg_shapes_get(shapes, v)->value)
                                                     : NULL;
    if (!a || a->numel > max)
        return FALSE;
    for (gint64 i = 0; i < a->numel; i++)
        out[i] = hg_array_get_i64(a, i);
    *n = (guint)a->numel;
    return TRUE;
}

/* A CumSum divided by its own last element (plus an epsilon), as DETR normalises its position
 * embedding: y = c / (c[..., -1:] + eps) with c = CumSum(x). It is invariant under x -> 2^-k x with
 * eps -> 2^-k eps, exactly. When c's sums pass 2048 (where FP16 stops holding integers) on an axis
 * short enough that an FP16 CumSum stays accurate (at most 128 elements: worst-case relative error
 * len x 2^-11 <= 1/16), x takes 2^-k in front of the CumSum. With `found`, a dry run: the candidates
 * are appended (CumsumFound) and nothing changes; else only the CumSums in `accept` are rewritten,
 * each note ending in costs[i] (the weighing, by the CumSum's place in `found`). Returns the
 * rewrites made. */
/* ---------------------------------------------------------------- what the values really reach
 *
 * k comes from the largest bound among a region's tensors; the scale is worth making only where the
 * values really come near that bound. Calibration says what they reach. A static bound can be far
 * looser than anything an input in range produces (1e13 where 13 is reached, after a dozen frozen
 * BatchNorm blocks), and 2^-k chosen from it pushes the real values into FP16's subnormals, or to 0.
 * So where a region's tensors have no calibration statistics, the pass runs the graph as it stands on
 * PROBE_SAMPLES seeded synthetic inputs inside the input ranges (hg_stats_collect_synthetic) and
 * requires the largest value each scaled tensor really reaches to stay at 2^-10 or more after the
 * scale: a factor of 16 above FP16's smallest normal (2^-14). Below its normal range FP16 keeps an
 * absolute precision of 2^-25, so what the scale pushes there errs by at most 2^-15 of the tensor's
 * largest value, under FP16's own rounding of it (2^-11). A tensor the probe saw only as 0 says
 * nothing and is passed over; a region none of whose tensors was seen other than 0 is left unscaled
 * (RoPE's angles at a sequence of 1 are all 0, and 2^-48 from their bound would flush every real one).
 * (The bounds themselves must stay at 2^-4 or more after the scale, as before: ten bits of headroom
 * for a bound that may be loose.)
 *
 * A scale of at most 2^-PROBE_MIN_K is made without asking: a power of two moves a normal FP16 value
 * exactly, so only values that the scale takes below 2^-14 lose anything, and each of them errs by at
 * most 2^-25, which is 2^(k-25) <= 2^-22 in the tensor's own units: under half an FP16 ulp of any
 * value of 2^-11 or more, whatever the values really reach. The probe runs the whole model twice
 * (on a 4.5 GiB transformer it took ten times the rest of the conversion), and a bound just past
 * 65504 is the common case in deep residual stacks, where k comes out 1 to 3; the loose bounds the
 * probe guards against are off by far more (k of 20 or more where values of about 1 are reached). */
#define PROBE_MIN_K 3
#define PROBE_SAMPLES 2
#define PROBE_SEED 0x4847u /* "HG" */
#define SCALED_FLOOR 0x1p-10

typedef struct {
    gboolean tried;
    HgStats *stats;  /* NULL when the probe could not run */
    char *why;       /* its error, for the note */
} Probe;

static void
probe_clear(Probe *pr)
{
    g_clear_pointer(&pr->stats, hg_stats_unref);
    g_clear_pointer(&pr->why, g_free);
}

/* The probe draws symbolic dims as synthetic calibration does (--shapes, --dim-max, else 1, and
 * again longer where the model cannot run that short: hg_stats_collect_synthetic). */
static HgStats *
probe_get(Probe *pr, HgGraph *g, const HgCheckOptions *opts)
{
    if (!pr->tried) {
        pr->tried = TRUE;
        g_autoptr(GError) err = NULL;
        pr->stats = hg_stats_collect_synthetic(g->model, opts, PROBE_SAMPLES, PROBE_SEED, 0, &err);
        if (!pr->stats)
            pr->why = g_strdup(err ? err->message : "the interpreter failed");
    }
    return pr->stats;
}

/* The smallest magnitude the values of v really reach at their largest: calibration's absmax, else
 * the probe's; NAN when neither saw a nonzero finite value. *probed says the probe was asked. */
static double
reached_absmax(Probe *pr, HgGraph *g, const HgCheckOptions *opts, const HgValue *v, gboolean *failed)
{
    const HgTensorStats *s = opts->stats ? hg_stats_get(opts->stats, v->name) : NULL;
    if (!s) {
        HgStats *ps = probe_get(pr, g, opts);
        if (!ps) {
            *failed = TRUE;
            return NAN;
        }
        s = hg_stats_get(ps, v->name);
    }
    return s && isfinite(s->absmax) && s->absmax > 0 ? s->absmax : NAN;
}

/* Do the values of the tensors in vals (HgValue* keys) stay at SCALED_FLOOR or above once scaled by
 * 2^-k? FALSE with *why (new string) naming the first that does not, or why none could be seen. */
static gboolean
values_reach(Probe *pr, HgGraph *g, const HgCheckOptions *opts, const HgCheckResult *res,
             GHashTable *vals, int k, char **why)
{
    if (k <= PROBE_MIN_K)
        return TRUE;
    GHashTableIter it;
    gpointer key;
    const HgValue *worst = NULL;
    double worst_a = INFINITY;
    g_hash_table_iter_init(&it, vals);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        gboolean failed = FALSE;
        double a = reached_absmax(pr, g, opts, key, &failed);
        if (failed) {
            *why = g_strdup_printf("k = %d comes from static bounds and the synthetic probe that would "
                                   "check them could not run (%s)", k, pr->why);
            return FALSE;
        }
        /* Ties go to the name, so the note does not depend on hash order. */
        if (!isnan(a) && (a < worst_a || (a == worst_a && strcmp(((HgValue *)key)->name, worst->name) < 0))) {
            worst_a = a;
            worst = key;
        }
    }
    if (!worst) {
        /* Not one value seen other than 0 (positions at a symbolic length of 1, all 0): nothing says
         * what the values reach, and a k this large from the bounds alone may flush them all. */
        *why = g_strdup_printf("k = %d comes from static bounds, and neither calibration nor the synthetic "
                               "probe saw any of its values other than 0", k);
        return FALSE;
    }
    if (ldexp(worst_a, -k) >= SCALED_FLOOR)
        return TRUE;
    *why = g_strdup_printf("'%s' may reach %.3g by its bound, but in-range inputs reach %.3g%s: 2^-%d would "
                           "leave it at %.3g, within 16x of FP16's subnormals", worst->name,
                           hg_check_value_bound(res, worst, NULL), worst_a,
                           opts->stats && hg_stats_get(opts->stats, worst->name) ? " (calibration)"
                                                                                          : " (synthetic probe)",
                           k, ldexp(worst_a, -k));
    return FALSE;
}

typedef struct {
    HgNode *nodes[4]; /* the CumSum, the Slice, the Div, the epsilon's Add (or NULL) */
    gint64 numel;     /* elements of the CumSum's input (the Mul in front reads and writes them) */
} CumsumFound;

static guint
normalized_cumsums(HgGraph *g, const HgPassEnv *env, HgCheckResult *res, const HgCheckOptions *opts,
                   GPtrArray *order, GArray *found, GHashTable *accept, const char *const *costs,
                   Probe *probe, GError **error, gboolean *ok)
{
    const HgShapes *shapes = hg_check_shapes(res);
    const HgRanges *ranges = hg_check_ranges(res);
    guint n_done = 0;
    *ok = TRUE;
    for (guint i = 0; *ok && i < order->len; i++) {
        HgNode *c = order->pdata[i];
        if (!hg_node_is(c, "CumSum") || c->n_inputs != 2 || !c->inputs[0] || !c->outputs[0] ||
            hg_node_attr_int(c, "exclusive", 0) || hg_node_attr_int(c, "reverse", 0) ||
            hg_shapes_get(shapes, c->inputs[0])->dtype != HG_DTYPE_FLOAT)
            continue;
        const HgValueShape *xs = hg_shapes_get(shapes, c->inputs[0]);
        gint64 axv[1];
        guint na;
        if (xs->rank < 1 || !const_ints(shapes, c->inputs[1], axv, 1, &na) || na != 1)
            continue;
        gint64 axis = axv[0] < 0 ? axv[0] + xs->rank : axv[0];
        gint64 len = axis >= 0 && axis < xs->rank ? xs->dims[axis].v : -1;
        if (len < 1 || len > 128)
            continue;
        /* Readers: the Div's numerator, and the Slice of the last element feeding its denominator. */
        HgValue *cv = c->outputs[0];
        HgNode *div = NULL, *slice = NULL;
        for (guint u = 0; u < cv->uses->len; u++) {
            HgUse *use = &g_array_index(cv->uses, HgUse, u);
            if (hg_node_is(use->node, "Div") && use->index == 0 && !div)
                div = use->node;
            else if (hg_node_is(use->node, "Slice") && use->index == 0 && !slice)
                slice = use->node;
            else
                div = slice = NULL, u = cv->uses->len;
        }
        if (!div || !slice || cv->uses->len != 2 || cv->is_output || slice->n_inputs < 3)
            continue;
        gint64 st[1], en[1], ax[1] = {axis}, sp[1] = {1};
        guint n1, n2, n3 = 1, n4 = 1;
        if (!const_ints(shapes, slice->inputs[1], st, 1, &n1) || !const_ints(shapes, slice->inputs[2], en, 1, &n2) ||
            (slice->n_inputs > 3 && slice->inputs[3] && !const_ints(shapes, slice->inputs[3], ax, 1, &n3)) ||
            (slice->n_inputs > 4 && slice->inputs[4] && !const_ints(shapes, slice->inputs[4], sp, 1, &n4)) ||
            n1 != 1 || n2 != 1 || n3 != 1 || n4 != 1)
            continue;
        gint64 a2 = ax[0] < 0 ? ax[0] + xs->rank : ax[0];
        gint64 s0 = st[0] < 0 ? st[0] + len : st[0];
        if (a2 != axis || sp[0] != 1 || s0 != len - 1 || en[0] < len)
            continue;
        /* The denominator: the slice itself, or the slice plus a constant epsilon. */
        HgValue *den = div->inputs[1], *sv = slice->outputs[0];
        HgNode *add = NULL;
        if (den != sv) {
            add = den ? den->producer : NULL;
            if (!hg_node_is(add, "Add") || add->n_inputs != 2 || sv->uses->len != 1 ||
                !(add->inputs[0] == sv || add->inputs[1] == sv) ||
                !is_const(add->inputs[add->inputs[0] == sv ? 1 : 0]) || den->uses->len != 1)
                continue;
        } else if (sv->uses->len != 1) {
            continue;
        }
        /* k: the sums (static bound, or calibration with margin) down to 2048. */
        double big = hg_check_value_bound(res, cv, NULL);
        if (!isfinite(big) || big <= 2048)
            continue;
        int k = (int)ceil(log2(big / 2048));
        const HgRange *xr = hg_ranges_get(ranges, c->inputs[0]);
        if (ldexp(MAX(fabs(xr->lo), fabs(xr->hi)), -k) < 0x1p-4) {
            if (found)
                hg_pass_note(env->result, "rescale", "left the normalized CumSum '%s' unscaled: 2^-%d would push its "
                             "input below 2^-4", c->name ? c->name : "", k);
            continue;
        }
        if (found) {
            g_autoptr(GHashTable) vals = g_hash_table_new(NULL, NULL);
            g_hash_table_add(vals, c->inputs[0]);
            g_autofree char *why = NULL;
            if (!values_reach(probe, g, opts, res, vals, k, &why)) {
                hg_pass_note(env->result, "rescale", "left the normalized CumSum '%s' unscaled: %s", c->name ? c->name : "",
                             why);
                continue;
            }
            CumsumFound f = {{c, slice, div, add}, hg_precision_numel(shapes, c->inputs[0])};
            g_array_append_val(found, f);
            continue;
        }
        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(accept, c));
        if (!at)
            continue;
        /* x * 2^-k in front of the CumSum; the epsilon takes 2^-k too; the sums and the slice hold
         * scaled values now. */
        HgValue *mv = mul_after(g, c->inputs[0], -k, "rescale_cumsum", "_scaled", NULL, error);
        if (!mv) {
            *ok = FALSE;
            break;
        }
        hg_node_set_input(c, 0, mv);
        if (add)
            *ok = scale_const(g, add, add->inputs[0] == sv ? 1 : 0, -k, error);
        stats_scaled(opts, cv->name, cv, k);
        stats_scaled(opts, sv->name, sv, k);
        hg_pass_note(env->result, "rescale", "normalized CumSum '%s': input x 2^-%d (its sums reach %.3g > 2048; "
                     "over %" G_GINT64_FORMAT " elements an FP16 CumSum's worst-case relative error is %.2g)%s",
                     c->name ? c->name : "", k, big, len, (double)len / 2048.0, costs[at - 1]);
        n_done++;
    }
    return n_done;
}

/* "'a', 'b' and 2 more" for a note. */
static char *
name_list(GPtrArray *nodes)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < nodes->len && i < 3; i++) {
        const HgNode *n = nodes->pdata[i];
        g_string_append_printf(s, "%s'%s'", i == 0 ? "" : i + 1 == nodes->len ? " and " : ", ",
                               n->name ? n->name : n->op_type);
    }
    if (nodes->len > 3)
        g_string_append_printf(s, " and %u more", nodes->len - 3);
    return g_string_free(s, FALSE);
}

/* Apply a planned region with scale 2^-k. */
static gint
by_value_name(gconstpointer a, gconstpointer b)
{
    return strcmp((*(const HgValue *const *)a)->name, (*(const HgValue *const *)b)->name);
}

/* The tensors R undoes, by name: what they are called and what their costs sum to must not follow
 * the hash table's order, which follows the addresses (same input, same bytes). */
static GPtrArray *
undo_order(const Region *R)
{
    GPtrArray *keys = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, R->undo);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(keys, key);
    g_ptr_array_sort(keys, by_value_name);
    return keys;
}

static gboolean
apply_region(HgGraph *g, Region *R, int k, const HgCheckOptions *opts, GError **error)
{
    /* The scaled values' names now: undo may rename a graph output, and calibration saw the old. */
    g_autoptr(GHashTable) was = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, R->scaled);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_hash_table_insert(was, key, g_strdup(((HgValue *)key)->name));
    /* Entries: one Mul by 2^-k per unscaled tensor, read by the members that need it. */
    g_autoptr(GHashTable) entered = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < R->entries->len; i++) {
        HgUse *e = &g_array_index(R->entries, HgUse, i);
        HgValue *x = e->node->inputs[e->index];
        HgValue *xs = g_hash_table_lookup(entered, x);
        if (!xs) {
            xs = mul_after(g, x, -k, "rescale_in", "_scaled", NULL, error);
            if (!xs)
                return FALSE;
            g_hash_table_insert(entered, x, xs);
            stats_scaled(opts, x->name, xs, k);
        }
        hg_node_set_input(e->node, e->index, xs);
    }
    for (guint i = 0; i < R->members->len; i++) {
        HgNode *m = R->members->pdata[i];
        if (!scale_member(g, m, (Role)GPOINTER_TO_INT(g_hash_table_lookup(R->role, m)), k, error))
            return FALSE;
    }
    for (guint i = 0; i < R->absorbers->len; i++) {
        HgNode *a = R->absorbers->pdata[i];
        if (hg_node_is(a, "Mul") || hg_node_is(a, "Div")) {
            if (!scale_const(g, a, 1, hg_node_is(a, "Mul") ? k : -k, error))
                return FALSE;
            continue;
        }
        if (hg_node_has_traits(a, HG_TRAIT_EPS_NORM)) /* 1e-5 is the default of them all */
            hg_node_set_attr_float(a, "epsilon", (float)ldexp(hg_node_attr_float(a, "epsilon", 1e-5f), -2 * k));
    }
    for (guint i = 0; i < R->linear_ends->len; i++)
        if (!scale_const(g, R->linear_ends->pdata[i], 1, k, error))
            return FALSE;
    g_autoptr(GPtrArray) undo = undo_order(R);
    for (guint i = 0; i < undo->len; i++)
        if (!undo_for(g, undo->pdata[i], g_hash_table_lookup(R->undo, undo->pdata[i]), k, error))
            return FALSE;
    g_hash_table_iter_init(&it, was);
    while (g_hash_table_iter_next(&it, &key, &val))
        stats_scaled(opts, val, key, k);
    return TRUE;
}

/* A planned region and what the note about it says. */
typedef struct {
    Region R;
    HgNode *at;
    int k;
    double big;
    gboolean accepted;
    char *cost_note; /* the weighing, for the note */
} Planned;

/* values_reach over a planned region's scaled and entering tensors. */
static gboolean
region_values_reach(const Planned *P, Probe *probe, HgGraph *g, const HgCheckOptions *opts,
                    const HgCheckResult *res, char **why)
{
    g_autoptr(GHashTable) vals = g_hash_table_new(NULL, NULL);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, P->R.scaled);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_hash_table_add(vals, key);
    for (guint j = 0; j < P->R.entries->len; j++) {
        HgUse *e = &g_array_index(P->R.entries, HgUse, j);
        g_hash_table_add(vals, e->node->inputs[e->index]);
    }
    return values_reach(probe, g, opts, res, vals, P->k, why);
}

/* The rewrite's own cost in assign_precision's units: a Mul per entering tensor and per undone
 * tensor, FP16; an undone tensor whose values pass the threshold (a graph output that overflows)
 * has its Mul in FP32 and a Cast in front. */
static double
region_rewrite_cost(const Region *R, const HgShapes *shapes, const HgCheckResult *res, double threshold)
{
    double cost = 0;
    g_autoptr(GHashTable) xs = g_hash_table_new(NULL, NULL);
    for (guint j = 0; j < R->entries->len; j++) {
        HgUse *e = &g_array_index(R->entries, HgUse, j);
        HgValue *x = e->node->inputs[e->index];
        if (g_hash_table_add(xs, x)) {
            double n = (double)hg_precision_numel(shapes, x);
            cost += hg_precision_fp16_node_cost(n, n);
        }
    }
    g_autoptr(GPtrArray) undo = undo_order(R);
    for (guint i = 0; i < undo->len; i++) {
        const HgValue *key = undo->pdata[i];
        double n = (double)hg_precision_numel(shapes, key);
        if (hg_check_value_bound(res, key, NULL) > threshold)
            cost += hg_precision_fp16_node_cost(2 * n, 2 * n) + hg_precision_fp16_node_cost(2 * n, n);
        else
            cost += hg_precision_fp16_node_cost(n, n);
    }
    return cost;
}

gboolean
hg_pass_rescale(HgGraph *g, const HgPassEnv *env, GError **error)
{
    HgCheckOptions none = {0};
    const HgCheckOptions *opts = hg_analyses_options(env->analyses) ? hg_analyses_options(env->analyses) : &none;
    HgCheckResult *res = hg_analyses_get(env->analyses, g, error);
    if (!res)
        return FALSE;
    const HgShapes *shapes = hg_check_shapes(res);
    double threshold = opts->threshold > 0 ? opts->threshold : HG_DEFAULT_THRESHOLD;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return FALSE;
    g_autoptr(GHashTable) taken = g_hash_table_new(NULL, NULL);
    gboolean ok = TRUE;
    Probe probe = {0};
    /* 1. Every rewrite is planned on the graph as it is, nothing changed yet: the normalized
     * CumSums, then the regions in the order of their first unsafe tensor (each region's nodes are
     * not part of a later one). */
    g_autoptr(GArray) cumsums = g_array_new(FALSE, FALSE, sizeof(CumsumFound));
    normalized_cumsums(g, env, res, opts, order, cumsums, NULL, NULL, &probe, error, &ok);
    g_autoptr(GArray) plans = g_array_new(FALSE, TRUE, sizeof(Planned));
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        gboolean unsafe = FALSE;
        for (guint o = 0; o < n->n_outputs && !unsafe; o++)
            unsafe = hg_check_value_unsafe(res, n->outputs[o]);
        if (!unsafe || g_hash_table_contains(taken, n) || !commutes(n) || !outputs_scalable(g, shapes, n))
            continue;
        Planned P = {.at = n};
        region_init(&P.R);
        gboolean planned = plan_region(g, n, order, taken, res, threshold, &P.R);
        g_hash_table_add(taken, n);
        for (guint j = 0; j < P.R.members->len; j++)
            g_hash_table_add(taken, P.R.members->pdata[j]);
        /* k from the largest bound among the scaled tensors (and those entering); the smallest
         * largest bound must stay above 2^-4. */
        double big = 0, small = INFINITY;
        gboolean known = planned;
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, P.R.scaled);
        while (known && g_hash_table_iter_next(&it, &key, NULL)) {
            double b = hg_check_value_bound(res, key, NULL);
            known &= isfinite(b);
            big = MAX(big, b);
            if (b > 0)
                small = MIN(small, b);
        }
        for (guint j = 0; known && j < P.R.entries->len; j++) {
            HgUse *e = &g_array_index(P.R.entries, HgUse, j);
            double b = hg_check_value_bound(res, e->node->inputs[e->index], NULL);
            known &= isfinite(b);
            big = MAX(big, b);
            if (b > 0)
                small = MIN(small, b);
        }
        int k = known && big > 0 ? (int)ceil(log2(big / threshold)) : -1;
        const char *at = n->name ? n->name : n->op_type;
        if (!(known && k > 0 && k < 60 && ldexp(small, -k) >= 0x1p-4)) {
            if (!planned)
                hg_pass_note(env->result, "rescale", "left '%s' unscaled: a nested graph reads a tensor of its region", at);
            else if (known && k > 0) /* (an unbounded region is left without a note: calibration bounds it) */
                hg_pass_note(env->result, "rescale", "left the region of '%s' unscaled: 2^-%d would push its values "
                             "(down to %.3g) below 2^-4", at, k, small);
            region_clear(&P.R);
            continue;
        }
        /* A later linear op absorbs 2^k in its weights only where they stay in range. */
        for (guint j = 0; j < P.R.linear_ends->len;) {
            HgNode *r = P.R.linear_ends->pdata[j];
            double w = const_absmax(r->inputs[1]);
            if (isfinite(w) && ldexp(w, k) <= threshold) {
                j++;
                continue;
            }
            need_undo(&P.R, r->inputs[0], r, 0);
            g_ptr_array_remove_index(P.R.linear_ends, j);
        }
        /* A gain's constant takes 2^-k (a divisor 2^k): FP16 must still hold it. */
        const HgNode *unfit = NULL;
        for (guint j = 0; j < P.R.members->len && !unfit; j++) {
            const HgNode *m = P.R.members->pdata[j];
            if (is_gain(m) && GPOINTER_TO_INT(g_hash_table_lookup(P.R.role, m)) == ROLE_SOURCE &&
                !(ldexp(const_absmax(m->inputs[1]), hg_node_is(m, "Div") ? k : -k) <= threshold))
                unfit = m;
        }
        if (unfit) {
            hg_pass_note(env->result, "rescale", "left the region of '%s' unscaled: the constant of %s '%s' "
                         "would pass %g at 2^%s%d", at, unfit->op_type, unfit->name ? unfit->name : "",
                         threshold, hg_node_is(unfit, "Div") ? "" : "-", k);
            region_clear(&P.R);
            continue;
        }
        P.k = k;
        P.big = big;
        g_array_append_val(plans, P);
    }

    /* 2. Each rewrite against the FP32 island it avoids, by assign_precision's minimum cut on the
     * graph before the pass: the cut with the rewrite's nodes cured (and those of the rewrites
     * accepted before it) plus the nodes it adds, against the cut without. */
    g_autoptr(GHashTable) cured = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) accept = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) cumsum_costs = g_ptr_array_new_with_free_func(g_free);
    double island = 0;
    if (cumsums->len + plans->len)
        ok = ok && hg_precision_cut_cost(g, env, res, cured, &island, error);
    for (guint i = 0; ok && i < cumsums->len + plans->len; i++) {
        CumsumFound *f = i < cumsums->len ? &g_array_index(cumsums, CumsumFound, i) : NULL;
        Planned *P = f ? NULL : &g_array_index(plans, Planned, i - cumsums->len);
        g_autoptr(GHashTable) trial = g_hash_table_new(NULL, NULL);
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, cured);
        while (g_hash_table_iter_next(&it, &key, NULL))
            g_hash_table_add(trial, key);
        double rewrite;
        if (f) {
            for (guint j = 0; j < 4; j++)
                if (f->nodes[j])
                    g_hash_table_add(trial, f->nodes[j]);
            rewrite = hg_precision_fp16_node_cost((double)f->numel, (double)f->numel);
        } else {
            for (guint j = 0; j < P->R.members->len; j++)
                g_hash_table_add(trial, P->R.members->pdata[j]);
            rewrite = region_rewrite_cost(&P->R, shapes, res, threshold);
        }
        double after = 0;
        ok = hg_precision_cut_cost(g, env, res, trial, &after, error);
        if (!ok)
            break;
        /* What the island costs over the cured graph (the flows carry rounding noise near 0); a
         * rewrite that adds nothing is made even where the island costs nothing either. */
        double saved = island - after;
        if (saved < 1e-9 * MAX(island, 1.0))
            saved = 0;
        gboolean take = hg_precision_rewrite_pays(rewrite, saved);
        const HgNode *at = f ? f->nodes[0] : P->at;
        if (!take) {
            hg_pass_note(env->result, "rescale", "left %s '%s' in FP32: the island costs %.3g, the rewrite %.3g",
                         f ? "the normalized CumSum" : "the region of", at->name ? at->name : at->op_type,
                         saved, rewrite);
            if (f)
                g_ptr_array_add(cumsum_costs, NULL);
            continue;
        }
        /* The bounds that chose k must be near what the values reach (see values_reach). Asked only of
         * a rewrite that wins: the synthetic probe runs the whole model, and most regions of a
         * transformer lose to the island anyway. */
        g_autofree char *why = NULL;
        if (P && !region_values_reach(P, &probe, g, opts, res, &why)) {
            hg_pass_note(env->result, "rescale", "left the region of '%s' unscaled: %s; calibration (--calib) "
                         "decides with what the values reach", at->name ? at->name : at->op_type, why);
            continue;
        }
        char *note = g_strdup_printf(" (rewrite costs %.3g against %.3g for an FP32 island)", rewrite, saved);
        g_hash_table_iter_init(&it, trial);
        while (g_hash_table_iter_next(&it, &key, NULL))
            g_hash_table_add(cured, key);
        island = after;
        if (f) {
            g_ptr_array_add(cumsum_costs, note);
            g_hash_table_insert(accept, f->nodes[0], GUINT_TO_POINTER(cumsum_costs->len));
        } else {
            P->accepted = TRUE;
            P->cost_note = note;
        }
    }

    /* 3. The accepted rewrites. */
    guint n_done = 0;
    if (ok && g_hash_table_size(accept))
        n_done += normalized_cumsums(g, env, res, opts, order, NULL, accept,
                                     (const char *const *)cumsum_costs->pdata, &probe, error, &ok);
    for (guint i = 0; i < plans->len; i++) {
        Planned *P = &g_array_index(plans, Planned, i);
        if (ok && P->accepted) {
            Region *R = &P->R;
            int k = P->k;
            g_autoptr(GPtrArray) sources = g_ptr_array_new();
            for (guint j = 0; j < R->members->len; j++)
                if (GPOINTER_TO_INT(g_hash_table_lookup(R->role, R->members->pdata[j])) == ROLE_SOURCE)
                    g_ptr_array_add(sources, R->members->pdata[j]);
            g_autofree char *src_names = name_list(sources);
            g_autofree char *abs_names = name_list(R->absorbers);
            g_autofree char *lin_names = name_list(R->linear_ends);
            guint n_entries = 0, n_undo = g_hash_table_size(R->undo);
            g_autoptr(GHashTable) xs = g_hash_table_new(NULL, NULL);
            for (guint j = 0; j < R->entries->len; j++) {
                HgUse *e = &g_array_index(R->entries, HgUse, j);
                n_entries += g_hash_table_add(xs, e->node->inputs[e->index]);
            }
            g_autoptr(GString) how = g_string_new(NULL);
            if (R->absorbers->len)
                g_string_append_printf(how, "; undone by %s", abs_names);
            if (R->linear_ends->len)
                g_string_append_printf(how, "; absorbed by the weights (x 2^%d) of %s", k, lin_names);
            if (n_undo)
                g_string_append_printf(how, "; undone by %u Mul%s by 2^%d", n_undo, n_undo == 1 ? "" : "s", k);
            if (n_entries)
                g_string_append_printf(how, "; %u input%s entering x 2^-%d", n_entries, n_entries == 1 ? "" : "s", k);
            const char *at = P->at->name ? P->at->name : P->at->op_type;
            ok = apply_region(g, R, k, opts, error);
            if (ok) {
                hg_pass_note(env->result, "rescale", "region of %u node%s at '%s': weights x 2^-%d in %s (k = %d: its "
                             "tensors reach %.3g > %g)%s%s", R->members->len, R->members->len == 1 ? "" : "s", at, k,
                             sources->len ? src_names : "no linear op", k, P->big, threshold, how->str,
                             P->cost_note);
                n_done++;
            }
        }
        g_free(P->cost_note);
        region_clear(&P->R);
    }
    probe_clear(&probe);
    if (!ok)
        return FALSE;
    if (n_done) {
        hg_graph_touch(g);
        env->result->n_changed += n_done;
        return hg_graph_sort(g, error);
    }
    return TRUE;
}
