/* fold_shapes: shape arithmetic whose result shape inference knows becomes a constant.
 *
 *     x -> Shape -> Gather(0) -> Unsqueeze -> Concat(.., [-1]) -> s        s = [1, -1] (initializer)
 *     x -> Reshape(x, s)                                            =>   x -> Reshape(x, s)
 *
 * A node is folded when every output is an integer tensor of at most 4096 elements whose value
 * inference computed, or the output of Shape or Size: the integer math that describes shapes. The
 * nodes that fed the folded ones go too once nothing reads them (the initializers they read are left
 * for cleanup), so that later passes place only what runs. --shapes
 * pins symbolic input dims, which is what lets shapes that depend on a batch size fold; when anything
 * folds, the pinned inputs are declared with those dims, since the model now only works for them.
 *
 * Float arithmetic whose inputs are all constants is computed too, in FP32 by the op's kernel, where
 * the model does not grow by it: the weight-norm reparametrization the dynamo exporter leaves as
 * g * v / ||v||, weights it stores transposed or reshaped. The FP16 model then holds those weights
 * rounded once, not computed in FP16 at run time, and the analysis sees them as the constants they
 * are (a Conv's bound needs its weights). Single values (scalar arithmetic on sizes, which
 * assign_precision places as the model wrote it), Quantize/Dequantize nodes (a QDQ model's structure),
 * random ops, Identity (TorchScript's shared parameters), nodes that write a graph output and nodes
 * reading a constant FP16 cannot hold (clamp_constants reads those where they are) are left, and so
 * is a node that would add more than FLOAT_FOLD_GROWTH bytes (what it writes less the constants only
 * it reads) or write more than FLOAT_FOLD_MAX_BYTES. Constants are initializers, Constant nodes'
 * tensors (timm's weight standardization, TorchScript-exported, is a training-mode
 * BatchNormalization over a conv's weights with Constant scale and bias) and values shape inference
 * computed (a Range to Cast(Shape(x)[2])). Before IR 4 nothing float is folded.
 */
#include "halfguard/pass.h"
#include "ir_private.h"
#include "ops/array.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "shapes.h"

#include <math.h>
#include <string.h>

#define FOLD_MAX_ELEMENTS 4096
#define FLOAT_FOLD_GROWTH ((gsize)64 << 10)
/* The folded values live in memory, not in the mapped file: a node writing more than this is left
 * as it is, and folding stops once this much has been computed (a conversion's memory stays bounded
 * on a model of many gigabytes whatever its constant math). */
#define FLOAT_FOLD_MAX_BYTES ((gsize)32 << 20)
#define FLOAT_FOLD_TOTAL_BYTES ((gsize)256 << 20)

/* t when v is a constant of the graph: an initializer that is no graph input, or a Constant node's
 * tensor (the TorchScript exporter writes the scale and bias of timm's weight standardization so), or
 * NULL. */
static const HgTensor *
const_tensor(const HgValue *v)
{
    if (v && v->init && !v->is_input)
        return v->init;
    const HgNode *p = v ? v->producer : NULL;
    if (!p || (p->flags & HG_NODE_DEAD) || strcmp(p->op_type, "Constant") ||
        (p->domain && *p->domain && strcmp(p->domain, "ai.onnx")) || p->n_outputs != 1)
        return NULL;
    const HgAttr *a = hg_node_attr(p, "value");
    return a ? a->t : NULL;
}

static const char *const NO_FLOAT_FOLD[] = {
    "Constant", "Identity", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "RandomNormal",
    "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", NULL,
};

/* n's outputs become initializers holding vals[k] (NULL entries: omitted outputs); n goes, and the
 * nodes that fed it join orphans (they may be dead now). */
static void
replace_by_initializers(HgGraph *g, HgNode *n, const HgArray *const *vals, GPtrArray *orphans)
{
    for (guint k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && n->inputs[k]->producer)
            g_ptr_array_add(orphans, n->inputs[k]->producer);
    g_autoptr(GPtrArray) outs = g_ptr_array_new();
    for (guint k = 0; k < n->n_outputs; k++)
        g_ptr_array_add(outs, n->outputs[k]);
    hg_node_remove(n);
    for (guint k = 0; k < outs->len; k++) {
        HgValue *v = outs->pdata[k];
        if (v)
            hg_graph_add_initializer(g, v, hg_array_to_tensor(vals[k], v->name));
    }
}

/* Compute n when its inputs are constants and it writes float tensors, without growing the model
 * (above). Everything is decided from the inferred shapes before the kernel runs (a ConstantOfShape
 * of a billion elements is a few bytes of input). Its outputs become initializers; FALSE when it is
 * left. */
static gboolean
fold_float(HgGraph *g, const HgShapes *s, HgNode *n, gint64 opset, gsize *total, GPtrArray *orphans)
{
    const HgOpDef *op = hg_op_for_node(n);
    /* Before IR 4 every initializer must also be a graph input (one a user may feed): what is
     * computed here would have to be declared so, and is left instead. */
    const HgModel *m = g->model;
    if (m && m->has_ir_version && m->ir_version < 4)
        return FALSE;
    if (n->flags & HG_NODE_DEAD || !op || !op->eval || n->n_outputs == 0 || n->n_inputs == 0 ||
        (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) || g_strv_contains(NO_FLOAT_FOLD, n->op_type))
        return FALSE;
    for (guint i = 0; i < n->attrs->len; i++) {
        const HgAttr *a = n->attrs->pdata[i];
        if (a->g || (a->graphs && a->graphs->len))
            return FALSE;
    }
    /* What it writes: no graph output (a runtime may not take a constant as a network output), sizes
     * known, some float tensor of more than one value (a single value is scalar arithmetic, on sizes
     * most often, which assign_precision places as it is: weights are what the analysis needs). */
    gsize out_bytes = 0;
    gboolean any_float = FALSE;
    g_autofree gint64 *numels = g_new0(gint64, n->n_outputs + 1);
    for (guint k = 0; k < n->n_outputs; k++) {
        const HgValue *v = n->outputs[k];
        if (!v)
            continue;
        const HgValueShape *vs = hg_shapes_get(s, v);
        numels[k] = hg_vshape_numel(vs);
        gsize es = vs->dtype != HG_DTYPE_UNDEFINED ? hg_dtype_size(vs->dtype) : 0;
        if (v->is_output || v->nested_outputs || numels[k] < 0 || es == 0 ||
            (guint64)numels[k] > FLOAT_FOLD_MAX_BYTES / es)
            return FALSE;
        out_bytes += (gsize)numels[k] * es;
        any_float |= hg_dtype_is_float(vs->dtype) && numels[k] > 1;
    }
    /* What it reads: constants only (or values shape inference computed: Cast(Shape(x)[2]) as the
     * limit of a Range, where the dims are static); the initializers only it reads are freed */
    gsize freed = 0, in_bytes = 0;
    g_autofree HgArray **ins = g_new0(HgArray *, n->n_inputs + 1);
    g_autofree HgArray **outs = g_new0(HgArray *, n->n_outputs + 1);
    gboolean ok = TRUE;
    for (guint k = 0; k < n->n_inputs && ok; k++) {
        const HgValue *v = n->inputs[k];
        if (!v)
            continue;
        const HgTensor *t = const_tensor(v);
        /* (a graph input is never constant: in IR 3 every initializer is one, which a user may feed) */
        HgArray *known = t || v->is_input ? NULL : hg_shapes_get(s, v)->value;
        ins[k] = t ? hg_array_view_tensor(t, NULL) : known ? hg_array_ref(known) : NULL;
        if (!ins[k] || ins[k]->strings) {
            ok = FALSE;
            break;
        }
        gsize nb = t ? t->nbytes : (gsize)ins[k]->numel * hg_dtype_size(ins[k]->dtype);
        in_bytes += nb;
        /* a fill FP16 cannot hold (float32-max anchors, -inf masks) stays where clamp_constants can
         * read the pattern around it (a Where's branch, a Sigmoid after), and so does the +-65504 it
         * clamps such a fill to (a second conversion leaves the first one's result as it is) */
        if (hg_dtype_is_float(ins[k]->dtype)) {
            HgScan sc = hg_scan_array(ins[k]);
            if (sc.n_nonfinite || sc.range.nan || MAX(fabs(sc.range.lo), fabs(sc.range.hi)) >= 65504.0) {
                ok = FALSE;
                break;
            }
        }
        gboolean only_here = t && !v->is_output && !v->nested_outputs;
        for (guint j = 0; j < v->uses->len && only_here; j++)
            only_here = g_array_index(v->uses, HgUse, j).node == n;
        if (only_here)
            freed += nb;
    }
    ok = ok && any_float && out_bytes <= FLOAT_FOLD_MAX_BYTES && out_bytes <= freed + FLOAT_FOLD_GROWTH &&
         *total + out_bytes <= FLOAT_FOLD_TOTAL_BYTES && in_bytes <= 4 * FLOAT_FOLD_MAX_BYTES;
    ok = ok && hg_eval_constants(n, opset, op->eval, n->n_inputs, ins, n->n_outputs, outs, NULL);
    /* the kernel wrote what inference said it would */
    for (guint k = 0; ok && k < n->n_outputs; k++)
        ok = !n->outputs[k] || (outs[k] && !outs[k]->strings && outs[k]->numel == numels[k]);
    if (ok) {
        *total += out_bytes;
        replace_by_initializers(g, n, (const HgArray *const *)outs, orphans);
    }
    for (guint k = 0; k < n->n_inputs; k++)
        if (ins[k])
            hg_array_unref(ins[k]);
    for (guint k = 0; k < n->n_outputs; k++)
        if (outs[k])
            hg_array_unref(outs[k]);
    return ok;
}

/* The nodes of orphans and what they were computed from that nothing reads any more go
 * (hg_nodes_remove_unread over them and their default-domain ancestors): the chains that computed
 * what is now a constant. Later passes then see only what runs (assign_precision would otherwise
 * place and count float shape math that cleanup removes). Nodes of other domains stay, as cleanup
 * leaves them. Empties orphans; returns how many went. */
static guint
remove_orphans(GPtrArray *orphans)
{
    g_autoptr(GHashTable) chain = g_hash_table_new(NULL, NULL);
    while (orphans->len) {
        HgNode *p = g_ptr_array_steal_index(orphans, orphans->len - 1);
        if (p->flags & HG_NODE_DEAD || p->n_outputs == 0 || !hg_node_default_domain(p) ||
            !g_hash_table_add(chain, p))
            continue;
        for (guint k = 0; k < p->n_inputs; k++)
            if (p->inputs[k] && p->inputs[k]->producer)
                g_ptr_array_add(orphans, p->inputs[k]->producer);
    }
    return hg_nodes_remove_unread(chain);
}

static gboolean
foldable(const HgNode *n, const HgShapes *s)
{
    if (n->flags & HG_NODE_DEAD || n->n_outputs == 0 || !hg_op_for_node(n))
        return FALSE;
    /* A Constant is already a constant; folding it would only rename it. */
    if (strcmp(n->op_type, "Constant") == 0)
        return FALSE;
    gboolean shape_op = strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0;
    for (guint i = 0; i < n->n_outputs; i++) {
        const HgValue *v = n->outputs[i];
        if (!v)
            continue;
        const HgValueShape *vs = hg_shapes_get(s, v);
        if (!vs->value || vs->value->numel > FOLD_MAX_ELEMENTS)
            return FALSE;
        if (!shape_op && hg_dtype_compute(vs->value->dtype) != HG_COMPUTE_I64)
            return FALSE;
        if (vs->value->dtype == HG_DTYPE_STRING)
            return FALSE;
    }
    return TRUE;
}

static void
pin_declaration(HgValueDecl *d, const HgShapes *s)
{
    const HgValueShape *vs = hg_shapes_get(s, d->value);
    if (!d->type || !d->type->shape || vs->rank != (int)d->type->shape->rank)
        return;
    for (guint k = 0; k < d->type->shape->rank; k++) {
        HgDim *dim = &d->type->shape->dims[k];
        if (!dim->has_value && vs->dims[k].v >= 0) {
            dim->has_value = TRUE;
            dim->value = vs->dims[k].v;
            g_clear_pointer(&dim->param, g_free);
        }
    }
}

gboolean
hg_pass_fold_shapes(HgGraph *g, const HgPassEnv *env, GError **error)
{
    guint n_pins = hg_convert_options_analysis(env->options)->shapes ? g_strv_length((char **)hg_convert_options_analysis(env->options)->shapes) : 0;
    g_autofree HgShapePin *pins = g_new0(HgShapePin, n_pins + 1);
    gboolean ok = TRUE;
    for (guint i = 0; i < n_pins && ok; i++)
        ok = hg_shape_pin_parse(hg_convert_options_analysis(env->options)->shapes[i], &pins[i], error);
    g_autoptr(HgShapes) s = ok ? hg_shapes_infer(g, pins, n_pins, error) : NULL;
    if (!s) {
        for (guint i = 0; i < n_pins; i++)
            g_free(pins[i].name);
        return FALSE;
    }
    g_autoptr(GHashTable) can = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < g->nodes->len; i++)
        if (foldable(g->nodes->pdata[i], s))
            g_hash_table_add(can, g->nodes->pdata[i]);
    /* Only the frontier becomes constants: folded nodes whose values something else reads. The
     * chain behind them dies (remove_orphans). */
    g_autoptr(GPtrArray) fold = g_ptr_array_new();
    g_autoptr(GPtrArray) orphans = g_ptr_array_new();
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (!g_hash_table_contains(can, n))
            continue;
        gboolean frontier = FALSE;
        for (guint k = 0; k < n->n_outputs && !frontier; k++) {
            const HgValue *v = n->outputs[k];
            if (!v)
                continue;
            frontier = v->is_output || v->nested_outputs;
            for (guint j = 0; j < v->uses->len && !frontier; j++)
                frontier = !g_hash_table_contains(can, g_array_index(v->uses, HgUse, j).node);
        }
        if (frontier)
            g_ptr_array_add(fold, n);
    }
    guint folded = 0;
    for (guint i = 0; i < fold->len; i++) {
        HgNode *n = fold->pdata[i];
        g_autofree const HgArray **vals = g_new0(const HgArray *, n->n_outputs + 1);
        for (guint k = 0; k < n->n_outputs; k++)
            vals[k] = n->outputs[k] ? hg_shapes_get(s, n->outputs[k])->value : NULL;
        replace_by_initializers(g, n, vals, orphans);
        folded++;
    }
    /* Float math on constants, in graph order (a chain folds node by node); the constants it no
     * longer reads are left for cleanup, the nodes that only fed it go. */
    guint folded_float = 0;
    gsize folded_bytes = 0;
    gint64 opset = g->model ? hg_model_opset(g->model, "") : 0;
    guint dead = remove_orphans(orphans); /* (float math that only fed shapes is not computed) */
    for (guint i = 0; i < g->nodes->len; i++)
        folded_float += fold_float(g, s, g->nodes->pdata[i], opset, &folded_bytes, orphans);
    dead += remove_orphans(orphans);
    hg_graph_compact(g);
    /* The folded constants hold for the pinned dims only: say so wherever a declaration (inputs,
     * outputs, value_info) has a symbolic dim that inference now knows. */
    if (folded && n_pins) {
        GPtrArray *lists[] = {g->inputs, g->outputs, g->value_info};
        for (guint l = 0; l < G_N_ELEMENTS(lists); l++)
            for (guint i = 0; i < lists[l]->len; i++)
                pin_declaration(lists[l]->pdata[i], s);
    }
    for (guint i = 0; i < n_pins; i++)
        g_free(pins[i].name);
    if (folded) {
        hg_pass_note(env->result, "fold_shapes", "folded %u shape node%s to constants", folded,
                     folded == 1 ? "" : "s");
        env->result->n_changed += folded;
    }
    if (dead) {
        hg_pass_note(env->result, "fold_shapes", "removed %u node%s that only computed what was folded", dead,
                     dead == 1 ? "" : "s");
        env->result->n_changed += dead;
    }
    if (folded_float) {
        hg_pass_note(env->result, "fold_shapes", "computed %u node%s of float math on constants (weight norms, "
                     "transposed weights) into initializers", folded_float, folded_float == 1 ? "" : "s");
        env->result->n_changed += folded_float;
    }
    return TRUE;
}
