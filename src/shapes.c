/* Shape inference: walks the main graph in topological order and asks each op's shape rule for its
 * outputs. Graph inputs start from their declared types (and --shapes pins); initializers are known
 * exactly, and small ones carry their values so that shape arithmetic folds. */
#include "shapes.h"
#include "ops/kernel.h"
#include "halfguard/check.h"
#include "ir_private.h"
#include "ops/types.h"

#include <string.h>

/* Initializers up to this many elements carry their values into inference (Reshape targets, Slice
 * starts, Resize scales, ...). */
#define VALUE_LIMIT 4096

static void
vshape_free(gpointer p)
{
    HgValueShape *s = p;
    if (s->value)
        hg_array_unref(s->value);
    g_free(s);
}

static HgValueShape *
vshape_new_unknown(void)
{
    HgValueShape *s = g_new0(HgValueShape, 1);
    s->dtype = HG_DTYPE_UNDEFINED;
    s->rank = -1;
    return s;
}

void
hg_vshape_from_type(HgValueShape *out, const HgType *t)
{
    memset(out, 0, sizeof(*out));
    out->dtype = HG_DTYPE_UNDEFINED;
    out->rank = -1;
    if (!t || t->kind != HG_TYPE_TENSOR)
        return;
    if (t->has_elem_type)
        out->dtype = t->elem_type;
    if (!t->shape || t->shape->rank > HG_MAX_RANK)
        return;
    out->rank = (int)t->shape->rank;
    for (guint i = 0; i < t->shape->rank; i++) {
        const HgDim *d = &t->shape->dims[i];
        out->dims[i].v = d->has_value ? d->value : -1;
        out->dims[i].sym = !d->has_value && d->param && *d->param ? hg_sym_from_model(d->param) : NULL;
    }
}

HgShapes *
hg_shapes_infer_specs(HgGraph *g, const char *const *specs, GError **error)
{
    guint n = specs ? g_strv_length((char **)specs) : 0;
    g_autofree HgShapePin *pins = g_new0(HgShapePin, n + 1);
    gboolean ok = TRUE;
    for (guint i = 0; i < n && ok; i++)
        ok = hg_shape_pin_parse(specs[i], &pins[i], error);
    HgShapes *s = ok ? hg_shapes_infer(g, pins, n, error) : NULL;
    for (guint i = 0; i < n; i++)
        g_free(pins[i].name);
    return s;
}

gboolean
hg_shape_pin_parse(const char *spec, HgShapePin *pin, GError **error)
{
    memset(pin, 0, sizeof(*pin));
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1]) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--shapes '%s': expected NAME:DIMS, e.g. input:1x3x512x512",
                    spec);
        return FALSE;
    }
    g_auto(GStrv) parts = g_strsplit(colon + 1, "x", -1);
    for (guint i = 0; parts[i]; i++) {
        char *end;
        gint64 v = g_ascii_strtoll(parts[i], &end, 10);
        if (end == parts[i] || *end || v < 0 || pin->rank == HG_MAX_RANK) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--shapes '%s': '%s' is not a dimension", spec,
                        parts[i]);
            return FALSE;
        }
        pin->dims[pin->rank++] = v;
    }
    pin->name = g_strndup(spec, (gsize)(colon - spec));
    return TRUE;
}

static const HgShapePin *
find_pin(const HgShapePin *pins, guint n, const char *name)
{
    for (guint i = 0; i < n; i++)
        if (strcmp(pins[i].name, name) == 0)
            return &pins[i];
    for (guint i = 0; i < n; i++)
        if (strcmp(pins[i].name, "*") == 0)
            return &pins[i];
    return NULL;
}

const HgValueShape *
hg_shapes_get(const HgShapes *s, const HgValue *v)
{
    static const HgValueShape unknown = {HG_DTYPE_UNDEFINED, -1, {{0, NULL}}, NULL};
    const HgValueShape *r = v ? g_hash_table_lookup(s->shapes, v) : NULL;
    return r ? r : &unknown;
}

int
hg_shapes_dtype(const HgShapes *s, const HgValue *v)
{
    int dtype = hg_shapes_get(s, v)->dtype;
    return dtype != HG_DTYPE_UNDEFINED ? dtype : hg_value_elem_type(v);
}

void
hg_shapes_free(HgShapes *s)
{
    if (!s)
        return;
    g_hash_table_unref(s->shapes);
    g_ptr_array_unref(s->warnings);
    g_free(s);
}

static gboolean
seed_inputs(HgShapes *s, HgGraph *g, const HgShapePin *pins, guint n_pins, GError **error)
{
    for (guint i = 0; i < g->inputs->len; i++) {
        HgValueDecl *d = g->inputs->pdata[i];
        if (d->value->init)
            continue;
        HgValueShape *vs = vshape_new_unknown();
        hg_vshape_from_type(vs, d->type);
        const HgShapePin *pin = find_pin(pins, n_pins, d->value->name);
        gboolean wildcard = pin && strcmp(pin->name, "*") == 0;
        if (pin && !(wildcard && (vs->rank != (int)pin->rank || hg_vshape_known(vs)))) {
            if (vs->rank >= 0 && vs->rank != (int)pin->rank) {
                g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                            "--shapes: input '%s' has rank %d, the pin gives %u dims", d->value->name,
                            vs->rank, pin->rank);
                vshape_free(vs);
                return FALSE;
            }
            for (guint k = 0; k < pin->rank; k++) {
                if (vs->rank >= 0 && vs->dims[k].v >= 0 && vs->dims[k].v != pin->dims[k]) {
                    g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                                "--shapes: input '%s' has dim %u = %" G_GINT64_FORMAT
                                ", the pin says %" G_GINT64_FORMAT, d->value->name, k, vs->dims[k].v,
                                pin->dims[k]);
                    vshape_free(vs);
                    return FALSE;
                }
                vs->dims[k].v = pin->dims[k];
            }
            vs->rank = (int)pin->rank;
        }
        g_hash_table_insert(s->shapes, d->value, vs);
    }
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(g->values, t->name) : NULL;
        if (!v || v->init != t || t->rank > HG_MAX_RANK)
            continue;
        HgValueShape *vs = vshape_new_unknown();
        hg_vshape_set_known(vs, t->dtype, t->rank, t->dims);
        if (hg_tensor_numel(t) <= VALUE_LIMIT && t->storage != HG_STORAGE_STRINGS)
            vs->value = hg_array_from_tensor(t, NULL);
        g_hash_table_replace(s->shapes, v, vs);
    }
    return TRUE;
}

/* An op without a row is opaque, but its signature still says which input's element type each output
 * takes (Gelu's Y is X's T): so the passes know that an unknown op's float output is float. */
static void
opaque_dtypes(const HgShapes *s, const HgNode *n, HgValueShape **outs)
{
    gint64 opset = n->graph->model ? hg_model_opset(n->graph->model, n->domain) : 0;
    const HgOpSchema *sig = hg_op_schema_nearest(n->domain, n->op_type, opset);
    if (!sig)
        return;
    g_autofree int *in = g_new0(int, n->n_inputs + 1);
    for (guint k = 0; k < n->n_inputs; k++)
        in[k] = n->inputs[k] ? hg_shapes_dtype(s, n->inputs[k]) : HG_DTYPE_UNDEFINED;
    for (guint k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && outs[k]->dtype == HG_DTYPE_UNDEFINED)
            outs[k]->dtype = hg_op_schema_output_dtype(sig, k, n->n_inputs, in);
}

/* The declared type of output k of subgraph attribute `name` of n, or NULL. */
static const HgType *
body_output_type(const HgNode *n, const char *name, guint k)
{
    const HgAttr *a = hg_node_attr(n, name);
    if (!a || !a->g || k >= a->g->outputs->len)
        return NULL;
    const HgType *t = ((const HgValueDecl *)a->g->outputs->pdata[k])->type;
    return t && t->kind == HG_TYPE_TENSOR ? t : NULL;
}

/* Two declared types as one: the element type where both say it (or one does and the other is
 * silent), the rank where both give the same one, each dim where both give the same value. */
static void
vshape_from_branches(HgValueShape *out, const HgType *a, const HgType *b)
{
    if (!a || !b) {
        hg_vshape_from_type(out, a ? a : b);
        return;
    }
    HgValueShape sa, sb;
    hg_vshape_from_type(&sa, a);
    hg_vshape_from_type(&sb, b);
    out->dtype = sa.dtype == sb.dtype || sb.dtype == HG_DTYPE_UNDEFINED ? sa.dtype
                 : sa.dtype == HG_DTYPE_UNDEFINED ? sb.dtype : HG_DTYPE_UNDEFINED;
    out->rank = sa.rank == sb.rank ? sa.rank : -1;
    for (int i = 0; i < out->rank; i++) {
        gboolean same = sa.dims[i].v == sb.dims[i].v && sa.dims[i].sym == sb.dims[i].sym;
        out->dims[i].v = same ? sa.dims[i].v : -1;
        out->dims[i].sym = same ? sa.dims[i].sym : NULL;
    }
}

/* If and Loop have no row, but their bodies declare what they give: an If's output k is what both
 * branches declare of their output k; a Loop's loop-carried output j has its initial value's element
 * type (else its body's declared one), and its scan output k is the body's declared scan output with
 * a first axis of unknown length. Filled in only where the model declares nothing of the output. */
static void
control_flow_shapes(const HgShapes *s, const HgNode *n, HgValueShape **outs)
{
    gboolean is_if = hg_node_is(n, "If"), is_loop = hg_node_is(n, "Loop");
    if (!is_if && !is_loop)
        return;
    guint n_carried = n->n_inputs >= 2 ? n->n_inputs - 2 : 0;
    for (guint k = 0; k < n->n_outputs; k++) {
        if (!n->outputs[k] || outs[k]->dtype != HG_DTYPE_UNDEFINED || outs[k]->rank >= 0)
            continue;
        HgValueShape *o = outs[k];
        if (is_if) {
            vshape_from_branches(o, body_output_type(n, "then_branch", k), body_output_type(n, "else_branch", k));
        } else if (k < n_carried) {
            /* A loop-carried value may change shape from one iteration to the next: its shape is known
             * only where the initial value's is, and the body declares the same for what it carries on. */
            const HgValueShape *init = n->inputs[2 + k] ? hg_shapes_get(s, n->inputs[2 + k]) : NULL;
            hg_vshape_from_type(o, body_output_type(n, "body", 1 + k));
            gboolean same = init && init->rank >= 0 && init->rank == o->rank;
            for (int i = 0; same && i < o->rank; i++)
                same = init->dims[i].v >= 0 && init->dims[i].v == o->dims[i].v;
            if (!same)
                o->rank = -1;
            if (init && init->dtype != HG_DTYPE_UNDEFINED)
                o->dtype = init->dtype;
        } else {
            HgValueShape per;
            hg_vshape_from_type(&per, body_output_type(n, "body", 1 + k));
            o->dtype = per.dtype;
            if (per.rank >= 0 && per.rank < HG_MAX_RANK) {
                o->rank = per.rank + 1;
                o->dims[0].v = -1;
                o->dims[0].sym = NULL;
                memcpy(o->dims + 1, per.dims, per.rank * sizeof(HgSymDim));
            }
        }
    }
}

HgShapes *
hg_shapes_infer(HgGraph *g, const HgShapePin *pins, guint n_pins, GError **error)
{
    g_return_val_if_fail(g != NULL, NULL);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return NULL;
    HgShapes *s = g_new0(HgShapes, 1);
    s->graph = g;
    s->generation = g->generation;
    s->shapes = g_hash_table_new_full(NULL, NULL, NULL, vshape_free);
    s->warnings = g_ptr_array_new_with_free_func(g_free);
    if (!seed_inputs(s, g, pins, n_pins, error)) {
        hg_shapes_free(s);
        return NULL;
    }
    gint64 opset = g->model ? hg_model_opset(g->model, "") : 0;
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        g_autofree const HgValueShape **ins = g_new0(const HgValueShape *, n->n_inputs + 1);
        g_autofree HgValueShape **outs = g_new0(HgValueShape *, n->n_outputs + 1);
        for (guint k = 0; k < n->n_inputs; k++)
            ins[k] = n->inputs[k] ? hg_shapes_get(s, n->inputs[k]) : NULL;
        for (guint k = 0; k < n->n_outputs; k++)
            outs[k] = vshape_new_unknown();
        const HgOpDef *op = hg_op_for_node(n);
        if (op) {
            g_autoptr(GError) err = NULL;
            HgShapeCtx ctx = {n, opset, n->n_inputs, ins, n->n_outputs, outs, &err};
            if (!op->infer(&ctx)) {
                /* A shape rule that finds the inputs inconsistent: note it, leave the outputs unknown
                 * and go on, so one odd node does not blind the whole analysis. */
                g_ptr_array_add(s->warnings, g_strdup_printf("shape inference: node '%s' (%s): %s",
                                                             n->name ? n->name : "", n->op_type,
                                                             err ? err->message : "its inputs disagree"));
                for (guint k = 0; k < n->n_outputs; k++)
                    hg_vshape_unknown(outs[k]);
            } else if (n->n_outputs == 1) {
                hg_partial_infer(n, opset, ins, n->n_inputs, outs[0]);
            }
            /* An element type the rule could not give (inputs it found inconsistent, or unknown):
             * the declared one, else the op's signature's, so the types around the node stay known. */
            for (guint k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] && outs[k]->dtype == HG_DTYPE_UNDEFINED)
                    outs[k]->dtype = hg_value_elem_type(n->outputs[k]);
            opaque_dtypes(s, n, outs);
        } else {
            /* An op without a row: what the model declares of its outputs (value_info, graph
             * outputs) is all there is to know, and the passes need at least its element types to
             * keep the types around it consistent. */
            for (guint k = 0; k < n->n_outputs; k++)
                if (n->outputs[k])
                    hg_vshape_from_type(outs[k], n->outputs[k]->type);
            /* Where nothing is declared, an If's or a Loop's bodies say, or the op's signature (Gelu's
             * Y is X's T). */
            control_flow_shapes(s, n, outs);
            opaque_dtypes(s, n, outs);
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k])
                g_hash_table_replace(s->shapes, n->outputs[k], outs[k]);
            else
                vshape_free(outs[k]);
        }
    }
    return s;
}

GPtrArray *
hg_check_shape_warnings(HgModel *m, const char *const *shapes, GError **error)
{
    g_return_val_if_fail(m != NULL, NULL);
    g_autoptr(HgShapes) s = hg_shapes_infer_specs(m->graph, shapes, error);
    return s ? g_ptr_array_ref(s->warnings) : NULL;
}
