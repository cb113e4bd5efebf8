/* lower: make the element types say the precision assign_precision chose.
 *
 *     x:f32 -> Conv(W:f32) -> Relu -> Pow -> y:f32         Pow FP32, the rest FP16
 *  => x:f16 -> Conv(W:f16) -> Relu -> Cast(to=f32) -> Pow -> y:f32
 *
 * The plan is the IR's (HgNode.precision, from assign_precision). Float tensors written by FP16 nodes
 * become FLOAT16, those of FP32 nodes FLOAT; where a node reads a
 * tensor of the other precision a Cast is inserted (one per tensor and direction: node
 * "<tensor>/to_fp16" writing "<tensor>/fp16", or the same with fp32; shared by every reader).
 * Initializers read by FP16 nodes are converted: in place when every reader is FP16, else into a copy
 * "<name>_fp16" so FP32 readers keep theirs. Casts to FLOAT retarget to FLOAT16 in FP16 nodes (and
 * back), Constant and ConstantOfShape values follow their node. Inputs the op table keeps FP32
 * (Resize scales, ...) stay FLOAT. Graph inputs become FLOAT16 when FP16 nodes read them, unless
 * --keep-io-types or a node kept FP32 for a hazard reads them too (it reads the input unrounded, the
 * FP16 readers through a Cast); with --keep-io-types a graph output written in FP16 gets a Cast back
 * to FLOAT under its own name.
 */
#include "halfguard/pass.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ir_private.h"
#include "ops/array.h"
#include "ops/op.h"
#include "precision_cost.h"
#include "shapes.h"

typedef struct {
    HgGraph *g;
    const HgPassEnv *env;
    HgShapes *shapes;
    GHashTable *target;  /* HgValue* -> GINT_TO_POINTER(dtype): the element type a float value gets */
    GHashTable *casts;   /* "name\x01dtype" -> HgValue*: Cast outputs already made */
    GHashTable *inits;   /* HgValue* -> HgValue*: FP16 copies of initializers */
    GHashTable *frozen;  /* HgNode*: nodes that keep their element types (decided before any edit) */
    guint n_casts, n_inits, n_retargets;
    gboolean no_spill;   /* the spill file could not be written: convert in memory */
    GHashTable *wide;    /* HgValue*: values passing 65504 only where they saturate (read before any edit) */
    HgValue *fp16_range[2]; /* -65504 and 65504 as FP32 scalars for the Clips, made once */
    guint n_saturated;
} Lower;

static gboolean
is_float(int dtype)
{
    return dtype == HG_DTYPE_FLOAT || dtype == HG_DTYPE_FLOAT16;
}

static int
dtype_of(const Lower *l, const HgValue *v)
{
    return hg_shapes_get(l->shapes, v)->dtype;
}

/* Does n keep the element types the model gives it? An op without a row or with its output type in
 * an attribute (hg_precision_keeps_types), and a node that reads a value whose element type nobody
 * knows (an unknown op's undeclared output): retyping its other operands could break its type
 * constraints, whatever the value turns out to be. */
static gboolean
decide_keeps_types(const Lower *l, const HgNode *n)
{
    if (hg_precision_keeps_types(n))
        return TRUE;
    if (hg_node_is(n, "Cast"))
        return FALSE;
    for (guint k = 0; k < n->n_inputs; k++) {
        const HgValue *x = n->inputs[k];
        if (x && x->producer && !x->init && dtype_of(l, x) == HG_DTYPE_UNDEFINED)
            return TRUE;
    }
    return FALSE;
}

/* The same, as decided for the graph before lower added its Casts (whose outputs shape inference
 * never saw). */
static gboolean
keeps_types(const Lower *l, const HgNode *n)
{
    return g_hash_table_contains(l->frozen, n);
}

static gboolean
fp16_node(const Lower *l, const HgNode *n)
{
    return n->precision != HG_PRECISION_FP32; /* the plan in the IR */
}

/* The element type input k of n must have, or HG_DTYPE_UNDEFINED when any type will do (a Cast
 * converts whatever it reads). */
static int
required(const Lower *l, const HgNode *n, guint k)
{
    const HgOpDef *op = hg_op_for_node(n);
    if (hg_node_is(n, "Cast"))
        return HG_DTYPE_UNDEFINED;
    if (keeps_types(l, n))
        return dtype_of(l, n->inputs[k]); /* the type it had: a Cast back where its producer changed */
    if (op && k < 32 && (op->fp32_inputs >> k & 1))
        return HG_DTYPE_FLOAT;
    return fp16_node(l, n) ? HG_DTYPE_FLOAT16 : HG_DTYPE_FLOAT;
}

/* The element type output k of an FP16 or FP32 node writes. */
static int
output_type(const Lower *l, const HgNode *n, guint k)
{
    if (keeps_types(l, n))
        return dtype_of(l, n->outputs[k]); /* as declared: readers that need another type get a Cast */
    if (hg_node_is(n, "LayerNormalization") && k > 0) /* Mean and InvStdDev are stash_type's */
        return hg_node_attr_int(n, "stash_type", HG_DTYPE_FLOAT) == HG_DTYPE_DOUBLE ? HG_DTYPE_DOUBLE
                                                                                    : HG_DTYPE_FLOAT;
    return fp16_node(l, n) ? HG_DTYPE_FLOAT16 : HG_DTYPE_FLOAT;
}

typedef struct {
    const HgTensor *src;
    HgDType to;
    gsize prev; /* where in the source the previous piece began */
} Fill;

/* hg_spill_put's fill: output bytes [from, from + count) from the matching source elements; the
 * source pages read so far leave the process (from the previous piece's start, for the page the two
 * pieces share). */
static void
fill_converted(guint8 *dst, gsize from, gsize count, gpointer data)
{
    Fill *f = data;
    const guint8 *src = f->src->data;
    gsize s0, s1;
    if (f->to == HG_DTYPE_FLOAT16) {
        s0 = 2 * from, s1 = 2 * (from + count);
        hg_f32_bytes_to_f16(src + s0, dst, count / 2);
    } else {
        s0 = from / 2, s1 = (from + count) / 2;
        hg_f16_bytes_to_f32(src + s0, dst, count / 4);
    }
    hg_blob_release(f->src->blob, src + f->prev, s1 - f->prev);
    f->prev = s0;
}

/* t converted to `to` in the model's spill file instead of memory, when t views a mapped file and
 * the copy is large: a conversion's new weights then never sit in memory all at once. NULL: the
 * caller converts in memory. */
static HgTensor *
convert_to_spill(Lower *l, const HgTensor *t, const char *name, HgDType to)
{
    gint64 numel = hg_tensor_numel(t);
    if (!l || l->no_spill || !l->g->model || hg_blob_fd(t->blob) < 0 || numel <= 0 ||
        (guint64)numel * hg_dtype_size(to) < hg_spill_min())
        return NULL;
    Fill f = {t, to, 0};
    g_autoptr(GError) e = NULL;
    HgTensor *c = hg_tensor_new_spilled_output(l->g->model, name, to, t->rank, t->dims, fill_converted, &f, &e);
    if (!c) {
        /* No room for a scratch file: memory still works, it only costs more of it. */
        hg_pass_note(l->env->result, "lower", "converted weights kept in memory: %s", e->message);
        l->no_spill = TRUE;
        return NULL;
    }
    hg_tensor_release(t);
    return c;
}

/* A FLOAT tensor converted to FLOAT16 (or back), as a new raw tensor named name (its bytes in the
 * model's spill file where convert_to_spill says so; l may be NULL). */
static HgTensor *
convert_tensor(Lower *l, const HgTensor *t, const char *name, HgDType to)
{
    /* Weights are most of a model's bytes: convert them from where they lie (often the mapped input,
     * unaligned) straight into the new tensor, touching each byte once, with the converters the
     * HgArray path below uses, so the bits are the same. */
    gint64 numel = hg_tensor_numel(t);
    gsize from = hg_dtype_size(t->dtype);
    if (is_float(t->dtype) && is_float(to) && t->dtype != to && numel >= 0 && t->rank <= HG_MAX_RANK &&
        (guint64)numel * from == t->nbytes && (t->data || !t->nbytes)) {
        HgTensor *c = convert_to_spill(l, t, name, to);
        if (c)
            return c;
        c = hg_tensor_new(name, to, t->rank, t->dims);
        if (c && c->nbytes) {
            if (to == HG_DTYPE_FLOAT16)
                hg_f32_bytes_to_f16(t->data, hg_tensor_data_mut(c), (gsize)numel);
            else
                hg_f16_bytes_to_f32(t->data, hg_tensor_data_mut(c), (gsize)numel);
        }
        return c;
    }
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    if (!a)
        return NULL;
    HgTensor *c = hg_tensor_new(name, to, t->rank, t->dims);
    if (!c)
        return NULL;
    g_autoptr(HgArray) out = hg_array_new(to, t->rank, t->dims, NULL);
    gboolean owned;
    float *f = hg_array_load_f32(a, &owned);
    hg_array_store_f32(out, f);
    if (owned)
        g_free(f);
    if (c->nbytes)
        memcpy(hg_tensor_data_mut(c), out->data, c->nbytes);
    return c;
}

/* Replace v's initializer by t (ownership taken), in the same place of graph.initializer. */
static void
replace_initializer(HgGraph *g, HgValue *v, HgTensor *t)
{
    for (guint i = 0; i < g->initializers->len; i++)
        if (g->initializers->pdata[i] == v->init) {
            hg_tensor_free(v->init);
            g->initializers->pdata[i] = t;
            v->init = t;
            break;
        }
    hg_value_set_elem_type(v, t->dtype);
}

/* Is n FP32 for a hazard (assign_precision names its kind as the reason)? Such a node reads a graph
 * input as it is: rounded to FP16 first, a Log's tiny input is already 0, a Softmax's large logits
 * have already lost their units. */
static gboolean
hazard_reader(const HgNode *n)
{
    return n->precision == HG_PRECISION_FP32 && n->precision_reason &&
           hg_hazard_kind_from_name(n->precision_reason) >= 0;
}

/* The version of initializer v that a reader needing dtype `to` reads. */
static HgValue *
initializer_for(Lower *l, HgValue *v, HgDType to, GError **error)
{
    if (v->init->dtype == to || !is_float(v->init->dtype))
        return v;
    /* Every reader that computes with v needs the other type: convert in place. Before IR 4 every
     * initializer is also a graph input (its default value), and that declaration is retyped with
     * it; from IR 4 on an initializer declared as an input is one a caller may override, and keeps
     * its type. */
    HgModel *model = l->g->model;
    gboolean ir3_input = v->is_input && model && l->g == model->graph && model->has_ir_version &&
                         model->ir_version < 4;
    gboolean all = (!v->is_input || ir3_input) && !v->is_output;
    for (guint u = 0; all && u < v->uses->len; u++) {
        HgUse *use = &g_array_index(v->uses, HgUse, u);
        all = use->node->graph == l->g && required(l, use->node, use->index) == (int)to;
    }
    if (all) {
        HgTensor *t = convert_tensor(l, v->init, v->name, to);
        if (!t) {
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "lower: cannot convert initializer '%s'",
                        v->name);
            return NULL;
        }
        replace_initializer(l->g, v, t);
        l->n_inits++;
        return v;
    }
    HgValue *c = g_hash_table_lookup(l->inits, v);
    if (c)
        return c;
    g_autofree char *base = g_strdup_printf("%s_%s", v->name, to == HG_DTYPE_FLOAT16 ? "fp16" : "fp32");
    g_autofree char *name = hg_graph_unique_name(l->g, base);
    HgTensor *t = convert_tensor(l, v->init, name, to);
    c = t ? hg_graph_new_value(l->g, name, error) : NULL;
    if (!c) {
        if (t)
            hg_tensor_free(t);
        else
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "lower: cannot convert initializer '%s'",
                        v->name);
        return NULL;
    }
    hg_graph_add_initializer(l->g, c, t);
    /* Before IR 4 every initializer is also a graph input (onnx.checker refuses one that is not),
     * and the original is one: declare the copy the same way. */
    HgModel *m = l->g->model;
    if (v->is_input && m && l->g == m->graph && m->has_ir_version && m->ir_version < 4) {
        g_autoptr(HgType) type = hg_type_new_tensor(to, t->rank, t->dims);
        hg_graph_add_input(l->g, c, type);
    }
    hg_value_set_elem_type(c, to);
    g_hash_table_insert(l->inits, v, c);
    l->n_inits++;
    return c;
}

/* An FP32 tensor whose values may pass FP16's range but whose readers may still run in FP16: a mask
 * or fill that only reaches where its side saturates (a Softmax, a Max; check's benign overflow).
 * Cast as it is, -1e10 becomes -inf in FP16, and a row whose every entry is masked (the padding rows
 * of LongT5's local attention) then gives -inf - (-inf) = NaN in the Softmax, where FP32 gives a
 * finite row; NaN in one row reaches every other through the next attention. x is clipped to
 * +-65504 before its Cast, as clamp_constants makes such a constant: a Clip in FP32, which changes
 * nothing but what FP16 cannot hold. NULL when x needs no Clip (or an error is set). */
static HgValue *
saturate_to_fp16(Lower *l, HgValue *x, gboolean *needed, GError **error)
{
    *needed = FALSE;
    if (x->init || !g_hash_table_contains(l->wide, x))
        return NULL;
    gint64 opset = l->g->model ? hg_model_opset(l->g->model, "") : 0;
    if (opset < 6)
        return NULL;
    *needed = TRUE;
    g_autofree char *vbase = g_strdup_printf("%s/saturated", x->name);
    g_autofree char *vname = hg_graph_unique_name(l->g, vbase);
    HgValue *y = hg_graph_new_value(l->g, vname, error);
    if (!y)
        return NULL;
    g_autofree char *nbase = g_strdup_printf("%s/saturate", x->name);
    g_autofree char *nname = hg_graph_unique_name(l->g, nbase);
    HgNode *c;
    if (opset >= 11) {
        static const char *const names[2] = {"fp16_lowest", "fp16_max"};
        for (guint i = 0; i < 2 && !l->fp16_range[i]; i++) {
            HgTensor *t = hg_tensor_new(NULL, HG_DTYPE_FLOAT, 0, NULL);
            *(float *)hg_tensor_data_mut(t) = i ? 65504.0f : -65504.0f;
            l->fp16_range[i] = hg_graph_new_initializer(l->g, names[i], t);
        }
        HgValue *ins[3] = {x, l->fp16_range[0], l->fp16_range[1]};
        c = hg_graph_add_node(l->g, "Clip", NULL, nname, 3, ins, 1, &y);
    } else {
        c = hg_graph_add_node(l->g, "Clip", NULL, nname, 1, &x, 1, &y);
        HgAttr *a = hg_attr_new("min", HG_ATTR_FLOAT), *b = hg_attr_new("max", HG_ATTR_FLOAT);
        a->f = -65504.0f;
        a->has |= HG_ATTR_HAS_F;
        b->f = 65504.0f;
        b->has |= HG_ATTR_HAS_F;
        hg_node_add_attr(c, a);
        hg_node_add_attr(c, b);
    }
    hg_value_set_elem_type(y, HG_DTYPE_FLOAT);
    l->n_saturated++;
    return y;
}

/* x as dtype `to`, through a Cast made once per tensor and type. */
static HgValue *
cast_of(Lower *l, HgValue *x, HgDType to, GError **error)
{
    g_autofree char *key = g_strdup_printf("%s\x01%d", x->name, to);
    HgValue *y = g_hash_table_lookup(l->casts, key);
    if (y)
        return y;
    const char *prec = to == HG_DTYPE_FLOAT16 ? "fp16" : "fp32";
    g_autofree char *vbase = g_strdup_printf("%s/%s", x->name, prec);
    g_autofree char *vname = hg_graph_unique_name(l->g, vbase);
    y = hg_graph_new_value(l->g, vname, error);
    if (!y)
        return NULL;
    g_autofree char *cbase = g_strdup_printf("%s/to_%s", x->name, prec);
    g_autofree char *nname = hg_graph_unique_name(l->g, cbase);
    HgValue *src = x;
    if (to == HG_DTYPE_FLOAT16) {
        gboolean needed;
        HgValue *sat = saturate_to_fp16(l, x, &needed, error);
        if (needed && !sat)
            return NULL;
        if (sat)
            src = sat;
    }
    HgNode *c = hg_graph_add_node(l->g, "Cast", NULL, nname, 1, &src, 1, &y);
    c->flags |= HG_NODE_PLACED_CAST;
    HgAttr *a = hg_attr_new("to", HG_ATTR_INT);
    a->i = to;
    a->has |= HG_ATTR_HAS_I;
    hg_node_add_attr(c, a);
    hg_value_set_elem_type(y, to);
    g_hash_table_insert(l->casts, g_steal_pointer(&key), y);
    l->n_casts++;
    return y;
}

/* A float tensor attribute of n converted to `to` (value of Constant and ConstantOfShape). */
static void
retype_value_attr(Lower *l, HgNode *n, HgDType to)
{
    HgAttr *a = hg_node_attr(n, "value");
    if (a && a->t && is_float(a->t->dtype) && a->t->dtype != to) {
        HgTensor *t = convert_tensor(l, a->t, a->t->name, to);
        if (t) {
            hg_tensor_free(a->t);
            a->t = t;
            l->n_retargets++;
        }
    } else if (!a && hg_node_is(n, "ConstantOfShape") && to == HG_DTYPE_FLOAT16) {
        /* The default fill is a float 0: say FLOAT16 explicitly. */
        HgAttr *v = hg_attr_new("value", HG_ATTR_TENSOR);
        gint64 one = 1;
        v->t = hg_tensor_new(NULL, HG_DTYPE_FLOAT16, 1, &one);
        hg_node_add_attr(n, v);
        l->n_retargets++;
    }
}

gboolean
hg_pass_lower(HgGraph *g, const HgPassEnv *env, GError **error)
{
    if (!hg_graph_has_plan(g)) {
        hg_pass_note(env->result, "lower", "nothing to lower: the graph has no precision plan");
        return TRUE;
    }
    g_autoptr(HgShapes) shapes = hg_shapes_infer_specs(g, hg_convert_options_analysis(env->options)->shapes, error);
    if (!shapes)
        return FALSE;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return FALSE;
    Lower l = {g, env, shapes, g_hash_table_new(NULL, NULL),
               g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL), g_hash_table_new(NULL, NULL),
               g_hash_table_new(NULL, NULL), 0, 0, 0};
    /* The bounds of what may cross into FP16, from the analysis the plan rests on, read before any
     * edit (none: no Clips). */
    l.wide = g_hash_table_new(NULL, NULL);
    HgCheckResult *res = hg_analyses_get(env->analyses, g, NULL);
    for (guint i = 0; res && i < order->len + g->inputs->len; i++) {
        HgNode *n = i < order->len ? order->pdata[i] : NULL;
        for (guint k = 0; k < (n ? n->n_outputs : 1); k++) {
            HgValue *v = n ? n->outputs[k] : ((HgValueDecl *)g->inputs->pdata[i - order->len])->value;
            if (v && !v->init && is_float(dtype_of(&l, v)) && hg_check_value_saturates(res, v))
                g_hash_table_add(l.wide, v);
        }
    }
    for (guint i = 0; i < order->len; i++)
        if (decide_keeps_types(&l, order->pdata[i]))
            g_hash_table_add(l.frozen, order->pdata[i]);

    /* Where each float tensor lives: node outputs by their node; graph inputs FP16 when an FP16 node
     * computes with them (and --keep-io-types is off). */
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        for (guint k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && is_float(dtype_of(&l, n->outputs[k])))
                g_hash_table_insert(l.target, n->outputs[k], GINT_TO_POINTER(output_type(&l, n, k)));
    }
    for (guint i = 0; i < g->inputs->len; i++) {
        HgValue *v = ((HgValueDecl *)g->inputs->pdata[i])->value;
        int dt = dtype_of(&l, v);
        if (v->init || !is_float(dt))
            continue;
        int to = dt;
        gboolean exact = FALSE;
        for (guint u = 0; !hg_convert_options_keep_io_types(env->options) && u < v->uses->len; u++) {
            HgUse *use = &g_array_index(v->uses, HgUse, u);
            if (use->node->graph == g && required(&l, use->node, use->index) == HG_DTYPE_FLOAT16)
                to = HG_DTYPE_FLOAT16;
            exact |= use->node->graph == g && hazard_reader(use->node);
        }
        if (exact)
            to = dt;
        g_hash_table_insert(l.target, v, GINT_TO_POINTER(to));
    }

    /* Values that nodes of subgraphs read from this graph: lower leaves the bodies as they are, so
     * they read the type the value had, through a Cast here where it changes. */
    gboolean ok = TRUE;
    for (guint i = 0; ok && i < order->len + g->inputs->len; i++) {
        HgNode *n = i < order->len ? order->pdata[i] : NULL;
        guint n_vals = n ? n->n_outputs : 1;
        for (guint k = 0; ok && k < n_vals; k++) {
            HgValue *v = n ? n->outputs[k] : ((HgValueDecl *)g->inputs->pdata[i - order->len])->value;
            gpointer t = v ? g_hash_table_lookup(l.target, v) : NULL;
            int was = v ? dtype_of(&l, v) : HG_DTYPE_UNDEFINED;
            if (!t || GPOINTER_TO_INT(t) == was)
                continue;
            g_autoptr(GArray) uses = g_array_copy(v->uses);
            for (guint u = 0; ok && u < uses->len; u++) {
                HgUse *use = &g_array_index(uses, HgUse, u);
                if (use->node->graph == g)
                    continue;
                HgValue *c = cast_of(&l, v, was, error);
                ok = c != NULL;
                if (ok)
                    hg_node_set_input(use->node, use->index, c);
            }
        }
    }

    /* Readers: convert initializers, insert Casts. */
    for (guint i = 0; ok && i < order->len; i++) {
        HgNode *n = order->pdata[i];
        for (guint k = 0; ok && k < n->n_inputs; k++) {
            HgValue *x = n->inputs[k];
            if (!x || !is_float(dtype_of(&l, x)))
                continue;
            int need = required(&l, n, k);
            if (need == HG_DTYPE_UNDEFINED)
                continue;
            HgValue *y = x;
            if (x->init) {
                y = initializer_for(&l, x, need, error);
            } else {
                gpointer t = g_hash_table_lookup(l.target, x);
                int have = t ? GPOINTER_TO_INT(t) : dtype_of(&l, x);
                if (have != need)
                    y = cast_of(&l, x, need, error);
            }
            ok = y != NULL;
            if (ok && y != x)
                hg_node_set_input(n, k, y);
        }
        /* Nodes whose attributes name the type they write. */
        if (ok && n->n_outputs && n->outputs[0] && g_hash_table_contains(l.target, n->outputs[0])) {
            int to = GPOINTER_TO_INT(g_hash_table_lookup(l.target, n->outputs[0]));
            if (hg_node_is(n, "Cast") && hg_node_attr_int(n, "to", 0) != to) {
                HgAttr *a = hg_node_attr(n, "to");
                a->i = to;
                l.n_retargets++;
            } else if (hg_node_is(n, "Constant") || hg_node_is(n, "ConstantOfShape")) {
                retype_value_attr(&l, n, to);
            }
        }
    }
    if (!ok)
        goto out;

    /* Element types of the tensors, then the graph outputs --keep-io-types keeps. */
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, l.target);
    while (g_hash_table_iter_next(&it, &key, &val))
        if (dtype_of(&l, key) != GPOINTER_TO_INT(val))
            hg_value_set_elem_type(key, GPOINTER_TO_INT(val));
    for (guint i = 0; hg_convert_options_keep_io_types(env->options) && ok && i < g->outputs->len; i++) {
        HgValueDecl *d = g->outputs->pdata[i];
        HgValue *v = d->value;
        int was = dtype_of(&l, v);
        gpointer t = g_hash_table_lookup(l.target, v);
        if (!v || !t || GPOINTER_TO_INT(t) == was || !is_float(was))
            continue;
        /* v keeps its name and type as the output of a Cast; the node's tensor takes a new name. */
        g_autofree char *name = g_strdup(v->name);
        g_autofree char *base = g_strdup_printf("%s_fp16", name);
        g_autofree char *inner = hg_graph_unique_name(g, base);
        g_autoptr(GArray) uses = g_array_copy(v->uses);
        ok = hg_value_rename(v, inner, error);
        HgValue *o = ok ? hg_graph_new_value(g, name, error) : NULL;
        ok = o != NULL;
        if (!ok)
            break;
        g_autofree char *cname = g_strdup_printf("%s/to_fp32", name);
        g_autofree char *nname = hg_graph_unique_name(g, cname);
        HgNode *c = hg_graph_add_node(g, "Cast", NULL, nname, 1, &v, 1, &o);
        c->flags |= HG_NODE_PLACED_CAST;
        HgAttr *a = hg_attr_new("to", HG_ATTR_INT);
        a->i = was;
        a->has |= HG_ATTR_HAS_I;
        hg_node_add_attr(c, a);
        hg_value_replace_uses(v, o);
        for (guint u = 0; u < uses->len; u++) {
            HgUse *use = &g_array_index(uses, HgUse, u);
            hg_node_set_input(use->node, use->index, v);
        }
        hg_node_set_input(c, 0, v);
        hg_value_set_elem_type(o, was);
        l.n_casts++;
    }
    /* The Casts were appended: put each before its readers. */
    ok = hg_graph_sort(g, error);
    env->result->weight_bytes_total = env->result->weight_bytes_fp16 = 0;
    for (guint i = 0; i < g->initializers->len; i++) {
        const HgTensor *t = g->initializers->pdata[i];
        /* Weights nothing reads (the originals of copies an earlier pass scaled) go in cleanup. */
        const HgValue *tv = hg_graph_lookup(g, t->name);
        if (tv && !tv->uses->len && !tv->is_output && !tv->nested_outputs && !tv->is_input)
            continue;
        gint64 n = is_float(t->dtype) ? hg_tensor_numel(t) : 0;
        env->result->weight_bytes_total += 4 * MAX(n, 0);
        if (t->dtype == HG_DTYPE_FLOAT16)
            env->result->weight_bytes_fp16 += 4 * MAX(n, 0);
    }
    env->result->n_casts += l.n_casts;
    hg_pass_note(env->result, "lower", "%u Cast%s, %u initializer%s converted", l.n_casts, l.n_casts == 1 ? "" : "s",
                 l.n_inits, l.n_inits == 1 ? "" : "s");
    if (l.n_saturated)
        hg_pass_note(env->result, "lower", "clipped %u tensor%s to +-65504 before %s Cast to FP16: %s values FP16 "
                     "cannot hold that only reach where they saturate (masks)", l.n_saturated,
                     l.n_saturated == 1 ? "" : "s", l.n_saturated == 1 ? "its" : "their",
                     l.n_saturated == 1 ? "its" : "their");
    env->result->n_changed += l.n_casts + l.n_inits + l.n_retargets + l.n_saturated;
out:
    g_hash_table_unref(l.wide);
    g_hash_table_unref(l.target);
    g_hash_table_unref(l.casts);
    g_hash_table_unref(l.inits);
    g_hash_table_unref(l.frozen);
    return ok;
}
