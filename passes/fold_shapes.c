/* fold_shapes: shape arithmetic whose result shape inference knows becomes a constant.
 *
 *     x -> Shape -> Gather(0) -> Unsqueeze -> Concat(.., [-1]) -> s        s = [1, -1] (initializer)
 *     x -> Reshape(x, s)                                            =>   x -> Reshape(x, s)
 *
 * A node is folded when every output is an integer tensor of at most 4096 elements whose value
 * inference computed, or the output of Shape or Size: the integer math that describes shapes. Float
 * arithmetic on constants is left as the model wrote it. The nodes that fed the folded ones are left
 * for cleanup to remove once nothing reads them. --shapes pins symbolic input dims, which is what
 * lets shapes that depend on a batch size fold; when anything folds, the pinned inputs are declared
 * with those dims, since the model now only works for them.
 */
#include "halfguard/pass.h"
#include "ir_private.h"
#include "ops/array.h"
#include "shapes.h"

#include <string.h>

#define FOLD_MAX_ELEMENTS 4096

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
     * chain behind them is left dead, for cleanup. */
    g_autoptr(GPtrArray) fold = g_ptr_array_new();
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
        g_autoptr(GPtrArray) outs = g_ptr_array_new();
        for (guint k = 0; k < n->n_outputs; k++)
            g_ptr_array_add(outs, n->outputs[k]);
        hg_node_remove(n);
        for (guint k = 0; k < outs->len; k++) {
            HgValue *v = outs->pdata[k];
            if (!v)
                continue;
            const HgValueShape *vs = hg_shapes_get(s, v);
            hg_graph_add_initializer(g, v, hg_array_to_tensor(vs->value, v->name));
        }
        folded++;
    }
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
    return TRUE;
}
