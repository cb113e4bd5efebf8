/* Raising the default-domain opset to 17 (see opset.h).
 *
 * The table below lists every version between 7 and 17 at which a default-domain op changed its form
 * or its meaning; other version bumps only widened the types an op accepts, or added an attribute
 * whose default keeps the old behaviour. Each row has a rule that rewrites the node into its new
 * form, or refuses (returns FALSE with a reason) where no rewrite keeps the meaning:
 *
 *     Squeeze <axes=[1]> (x)               =>   Squeeze(x, axes)          axes = int64[1] {1}
 *     Softmax <axis=1> (x), rank 2         =>   Softmax <axis=1> (x)      (13 normalizes one axis)
 *     Softmax <axis=1> (x), rank 3         =>   refused (the old form flattens from the axis on)
 *
 * Models below opset 7 carry the legacy broadcast attributes; they are not upgraded.
 */
#include "opset.h"
#include "ir_private.h"

#include <string.h>

#define MIN_SOURCE_OPSET 7

/* Every default-domain op that has a non-deprecated schema at opset 17 (ONNX 1.12). */
static const char *const ops17[] = {
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh",
    "AveragePool", "BatchNormalization", "Bernoulli", "BitShift", "BlackmanWindow", "Cast",
    "CastLike", "Ceil", "Celu", "Clip", "Compress", "Concat", "ConcatFromSequence", "Constant",
    "ConstantOfShape", "Conv", "ConvInteger", "ConvTranspose", "Cos", "Cosh", "CumSum", "DFT",
    "DepthToSpace", "DequantizeLinear", "Det", "Div", "Dropout", "DynamicQuantizeLinear", "Einsum",
    "Elu", "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather",
    "GatherElements", "GatherND", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool",
    "Greater", "GreaterOrEqual", "GridSample", "HammingWindow", "HannWindow", "HardSigmoid",
    "HardSwish", "Hardmax", "Identity", "If", "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LSTM",
    "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Loop",
    "LpNormalization", "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool", "MaxRoiPool",
    "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mod", "Mul",
    "Multinomial", "Neg", "NegativeLogLikelihoodLoss", "NonMaxSuppression", "NonZero", "Not",
    "OneHot", "Optional", "OptionalGetElement", "OptionalHasElement", "Or", "PRelu", "Pad", "Pow",
    "QLinearConv", "QLinearMatMul", "QuantizeLinear", "RNN", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike", "Range", "Reciprocal", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize", "ReverseSequence", "RoiAlign",
    "Round", "STFT", "Scan", "ScatterElements", "ScatterND", "Selu", "SequenceAt",
    "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
    "SequenceMap", "Shape", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice", "Softmax",
    "SoftmaxCrossEntropyLoss", "Softplus", "Softsign", "SpaceToDepth", "Split", "SplitToSequence",
    "Sqrt", "Squeeze", "StringNormalizer", "Sub", "Sum", "Tan", "Tanh", "TfIdfVectorizer",
    "ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu", "Unique", "Unsqueeze", "Where", "Xor",
};

typedef struct {
    const HgShapes *s;
    gboolean apply;
    char *why; /* set by a rule that refuses */
} Rw;

typedef gboolean (*RuleFn)(HgNode *n, Rw *rw);

static gboolean
refuse(Rw *rw, const HgNode *n, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* The node's name, or its first output's for an unnamed node. */
static const char *
node_label(const HgNode *n)
{
    if (n->name && *n->name)
        return n->name;
    return n->n_outputs && n->outputs[0] ? n->outputs[0]->name : "";
}

static gboolean
refuse(Rw *rw, const HgNode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    rw->why = g_strdup_printf("node '%s' (%s): %s", node_label(n), n->op_type, msg);
    return FALSE;
}

static gboolean
is_default_domain(const HgNode *n)
{
    return !n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0;
}

/* What shape inference knows of v, when v belongs to the graph it ran on (subgraphs: unknown). */
static const HgValueShape *
vshape(const Rw *rw, const HgValue *v)
{
    static const HgValueShape unknown = {HG_DTYPE_UNDEFINED, -1, {{0, NULL}}, NULL};
    if (!v || !rw->s || v->graph != rw->s->graph)
        return &unknown;
    return hg_shapes_get(rw->s, v);
}

static int
elem_type(const Rw *rw, const HgValue *v)
{
    const HgValueShape *vs = vshape(rw, v);
    return vs->dtype != HG_DTYPE_UNDEFINED ? vs->dtype : hg_value_elem_type(v);
}

static void
remove_attr(HgNode *n, const char *name)
{
    for (guint i = 0; i < n->attrs->len; i++)
        if (g_strcmp0(((HgAttr *)n->attrs->pdata[i])->name, name) == 0) {
            g_ptr_array_remove_index(n->attrs, i);
            hg_graph_touch(n->graph);
            return;
        }
}

static void
set_string_attr(HgNode *n, const char *name, const char *value)
{
    remove_attr(n, name);
    HgAttr *a = hg_attr_new(name, HG_ATTR_STRING);
    g_bytes_unref(a->s);
    a->s = g_bytes_new(value, strlen(value));
    hg_node_add_attr(n, a);
}

static gboolean
string_attr_is(const HgNode *n, const char *name, const char *value, const char *dflt)
{
    const HgAttr *a = hg_node_attr(n, name);
    if (!a || !a->s)
        return g_strcmp0(dflt, value) == 0;
    gsize len;
    const char *d = g_bytes_get_data(a->s, &len);
    return len == strlen(value) && memcmp(d, value, len) == 0;
}

/* Grow n's input list to k slots; the new slots are omitted inputs until set. */
static void
grow_inputs(HgNode *n, guint k)
{
    if (k <= n->n_inputs)
        return;
    n->inputs = g_renew(HgValue *, n->inputs, k);
    for (guint i = n->n_inputs; i < k; i++)
        n->inputs[i] = NULL;
    n->n_inputs = k;
}

/* A new initializer in n's graph holding rank/dims of dtype from data, set as input slot of n. */
static void
const_input(HgNode *n, guint slot, const char *what, int dtype, guint rank, const gint64 *dims,
            const void *data)
{
    g_autofree char *base = g_strdup_printf("%s_%s", n->name && *n->name ? n->name : n->op_type, what);
    HgTensor *t = hg_tensor_new(NULL, dtype, rank, dims);
    g_assert(t);
    if (t->nbytes)
        memcpy(hg_tensor_data_mut(t), data, t->nbytes);
    HgValue *v = hg_graph_new_initializer(n->graph, base, t);
    grow_inputs(n, slot + 1);
    hg_node_set_input(n, slot, v);
}

/* An INTS attribute moved to input slot as int64[len] (no input when the attribute is absent). */
static void
ints_attr_to_input(HgNode *n, const char *attr, guint slot)
{
    HgAttr *a = hg_node_attr(n, attr);
    if (!a)
        return;
    gint64 len = a->ints ? a->ints->len : 0;
    const void *data = a->ints ? (const void *)a->ints->data : "";
    const_input(n, slot, attr, HG_DTYPE_INT64, 1, &len, data);
    remove_attr(n, attr);
}

/* A float scalar stored in the element type dtype; FALSE for a dtype that is not float. */
static gboolean
scalar_input(HgNode *n, guint slot, const char *what, int dtype, double value)
{
    guint8 buf[8];
    switch (dtype) {
    case HG_DTYPE_FLOAT: {
        float f = (float)value;
        memcpy(buf, &f, 4);
        break;
    }
    case HG_DTYPE_DOUBLE:
        memcpy(buf, &value, 8);
        break;
    case HG_DTYPE_FLOAT16: {
        guint16 h = hg_float_to_half((float)value);
        memcpy(buf, &h, 2);
        break;
    }
    default:
        return FALSE;
    }
    const_input(n, slot, what, dtype, 0, NULL, buf);
    return TRUE;
}

static gboolean
is_float_dtype(int dtype)
{
    return dtype == HG_DTYPE_FLOAT || dtype == HG_DTYPE_DOUBLE || dtype == HG_DTYPE_FLOAT16;
}

/* ---------------------------------------------------------------- the rules */

static gboolean
rule_axes_input(HgNode *n, Rw *rw)
{
    if (rw->apply)
        ints_attr_to_input(n, "axes", 1);
    return TRUE;
}

static gboolean
rule_slice(HgNode *n, Rw *rw)
{
    if (!hg_node_attr(n, "starts") || !hg_node_attr(n, "ends"))
        return refuse(rw, n, "Slice-1 without starts or ends");
    if (rw->apply) {
        ints_attr_to_input(n, "starts", 1);
        ints_attr_to_input(n, "ends", 2);
        ints_attr_to_input(n, "axes", 3);
    }
    return TRUE;
}

static gboolean
rule_split(HgNode *n, Rw *rw)
{
    if (rw->apply)
        ints_attr_to_input(n, "split", 1);
    return TRUE;
}

static gboolean
rule_topk(HgNode *n, Rw *rw)
{
    const HgAttr *k = hg_node_attr(n, "k");
    if (!k || k->type != HG_ATTR_INT)
        return refuse(rw, n, "TopK-1 without k");
    if (rw->apply) {
        gint64 one = 1, kv = k->i;
        const_input(n, 1, "k", HG_DTYPE_INT64, 1, &one, &kv);
        remove_attr(n, "k");
    }
    return TRUE;
}

static gboolean
rule_pad(HgNode *n, Rw *rw)
{
    int dtype = elem_type(rw, n->inputs[0]);
    float value = hg_node_attr_float(n, "value", 0.0f);
    if (value != 0.0f && !is_float_dtype(dtype))
        return refuse(rw, n, "the pad value needs the data's element type, which is unknown");
    if (!hg_node_attr(n, "pads"))
        return refuse(rw, n, "Pad-2 without pads");
    if (rw->apply) {
        ints_attr_to_input(n, "pads", 1);
        if (value != 0.0f)
            scalar_input(n, 2, "value", dtype, value);
        remove_attr(n, "value");
    }
    return TRUE;
}

static gboolean
rule_clip(HgNode *n, Rw *rw)
{
    gboolean has_min = hg_node_attr(n, "min") != NULL, has_max = hg_node_attr(n, "max") != NULL;
    int dtype = elem_type(rw, n->inputs[0]);
    if ((has_min || has_max) && !is_float_dtype(dtype))
        return refuse(rw, n, "min and max need the input's element type, which is unknown");
    if (rw->apply) {
        if (has_min)
            scalar_input(n, 1, "min", dtype, hg_node_attr_float(n, "min", 0));
        if (has_max)
            scalar_input(n, 2, "max", dtype, hg_node_attr_float(n, "max", 0));
        remove_attr(n, "min");
        remove_attr(n, "max");
    }
    return TRUE;
}

static gboolean
rule_dropout_mask(HgNode *n, Rw *rw)
{
    /* The mask output was of the data's type before 10 and is bool from 10 on. */
    if (n->n_outputs > 1 && n->outputs[1])
        return refuse(rw, n, "its mask output changes type at opset 10");
    return TRUE;
}

static gboolean
rule_dropout_ratio(HgNode *n, Rw *rw)
{
    if (rw->apply) {
        const HgAttr *r = hg_node_attr(n, "ratio");
        if (r && r->type == HG_ATTR_FLOAT)
            scalar_input(n, 1, "ratio", HG_DTYPE_FLOAT, r->f);
        remove_attr(n, "ratio");
        remove_attr(n, "is_test");
    }
    return TRUE;
}

static gboolean
rule_batchnorm_spatial(HgNode *n, Rw *rw)
{
    const HgAttr *a = hg_node_attr(n, "spatial");
    if (a && a->type == HG_ATTR_INT && a->i != 1)
        return refuse(rw, n, "spatial=0 has no form after opset 9");
    if (rw->apply)
        remove_attr(n, "spatial");
    return TRUE;
}

static gboolean
rule_batchnorm_outputs(HgNode *n, Rw *rw)
{
    for (guint i = 1; i < n->n_outputs; i++)
        if (n->outputs[i])
            return refuse(rw, n, "its training outputs change meaning at opset 14");
    return TRUE;
}

static gboolean
rule_softmax(HgNode *n, Rw *rw)
{
    /* Before 13 the input is flattened to 2-D at axis (default 1); from 13 one axis (default -1) is
     * normalized. They agree when axis is the last one. */
    const HgValueShape *x = vshape(rw, n->inputs[0]);
    gint64 axis = hg_node_attr_int(n, "axis", 1);
    if (x->rank < 0)
        return refuse(rw, n, "the input's rank is unknown, and the meaning of axis changes at 13");
    if (axis < 0)
        axis += x->rank;
    if (axis != x->rank - 1 && x->rank > 0)
        return refuse(rw, n, "it normalizes over the dims from axis %" G_GINT64_FORMAT
                      " on together, which opset 13 cannot say", axis);
    if (rw->apply && !hg_node_attr(n, "axis")) {
        HgAttr *a = hg_attr_new("axis", HG_ATTR_INT);
        a->i = 1;
        hg_node_add_attr(n, a);
    }
    return TRUE;
}

static void
resize_asymmetric(HgNode *n)
{
    set_string_attr(n, "coordinate_transformation_mode", "asymmetric");
    if (string_attr_is(n, "mode", "nearest", "nearest"))
        set_string_attr(n, "nearest_mode", "floor");
}

static gboolean
rule_resize10(HgNode *n, Rw *rw)
{
    /* Resize-10 (X, scales) samples asymmetrically and floors for nearest. */
    if (n->n_inputs < 2 || !n->inputs[1])
        return refuse(rw, n, "Resize-10 without scales");
    if (rw->apply) {
        HgValue *scales = n->inputs[1];
        grow_inputs(n, 3);
        hg_node_set_input(n, 1, NULL);
        hg_node_set_input(n, 2, scales);
        resize_asymmetric(n);
    }
    return TRUE;
}

static gboolean
rule_resize11(HgNode *n, Rw *rw)
{
    if (string_attr_is(n, "coordinate_transformation_mode", "tf_half_pixel_for_nn", "half_pixel"))
        return refuse(rw, n, "coordinate_transformation_mode tf_half_pixel_for_nn ends at opset 13");
    return TRUE;
}

static gboolean
rule_upsample(HgNode *n, Rw *rw)
{
    /* Upsample is deprecated; Resize with asymmetric coordinates (and floor for nearest) is it. */
    const HgAttr *sc = hg_node_attr(n, "scales");
    if (!(n->n_inputs >= 2 && n->inputs[1]) && !(sc && sc->floats))
        return refuse(rw, n, "Upsample without scales");
    if (rw->apply) {
        HgValue *scales = n->n_inputs >= 2 ? n->inputs[1] : NULL;
        grow_inputs(n, 3);
        if (scales) {
            hg_node_set_input(n, 1, NULL);
            hg_node_set_input(n, 2, scales);
        } else {
            gint64 len = sc->floats->len;
            const_input(n, 2, "scales", HG_DTYPE_FLOAT, 1, &len, sc->floats->data);
        }
        remove_attr(n, "scales");
        resize_asymmetric(n);
        g_free(n->op_type);
        n->op_type = g_strdup("Resize");
        hg_graph_touch(n->graph);
    }
    return TRUE;
}

static gboolean
rule_scatter(HgNode *n, Rw *rw)
{
    /* Scatter is deprecated; ScatterElements is the same op under its new name. */
    if (rw->apply) {
        g_free(n->op_type);
        n->op_type = g_strdup("ScatterElements");
        hg_graph_touch(n->graph);
    }
    return TRUE;
}

static gboolean
rule_roialign(HgNode *n, Rw *rw)
{
    if (rw->apply && !hg_node_attr(n, "coordinate_transformation_mode"))
        set_string_attr(n, "coordinate_transformation_mode", "output_half_pixel");
    return TRUE;
}

static gboolean
rule_scan8(HgNode *n, Rw *rw)
{
    return refuse(rw, n, "Scan-8 batches its inputs, which Scan-9 does not");
}

static gboolean
rule_layernorm_contrib(HgNode *n, Rw *rw)
{
    /* Below 17 this is ONNX Runtime's contrib op, whose Y takes Scale's type. */
    int tx = elem_type(rw, n->inputs[0]);
    int ts = n->n_inputs > 1 ? elem_type(rw, n->inputs[1]) : tx;
    if (tx == HG_DTYPE_UNDEFINED || ts != tx)
        return refuse(rw, n, "ONNX Runtime's LayerNormalization with Scale of another type than X");
    return TRUE;
}

/* The versions at which an op changed form. A row applies when the model's opset is below its
 * version. Resize's rows come before Upsample's, which turns the node into a Resize-13. */
static const struct {
    const char *op;
    gint64 version;
    RuleFn rule;
} changes[] = {
    {"BatchNormalization", 9, rule_batchnorm_spatial},
    {"BatchNormalization", 14, rule_batchnorm_outputs},
    {"Clip", 11, rule_clip},
    {"Dropout", 10, rule_dropout_mask},
    {"Dropout", 12, rule_dropout_ratio},
    {"Hardmax", 13, rule_softmax},
    {"LogSoftmax", 13, rule_softmax},
    {"Softmax", 13, rule_softmax},
    {"Pad", 11, rule_pad},
    {"ReduceSum", 13, rule_axes_input},
    {"Squeeze", 13, rule_axes_input},
    {"Unsqueeze", 13, rule_axes_input},
    {"Split", 13, rule_split},
    {"Slice", 10, rule_slice},
    {"TopK", 10, rule_topk},
    {"Resize", 11, rule_resize10},
    {"Resize", 13, rule_resize11},
    {"Upsample", 18, rule_upsample},
    {"Scatter", 18, rule_scatter},
    {"RoiAlign", 16, rule_roialign},
    {"Scan", 9, rule_scan8},
    {"LayerNormalization", 17, rule_layernorm_contrib},
};

static gboolean
known_at_17(const char *op)
{
    for (guint i = 0; i < G_N_ELEMENTS(ops17); i++)
        if (strcmp(ops17[i], op) == 0)
            return TRUE;
    return FALSE;
}

/* Check (and with rw->apply, rewrite) one node. *rewritten says whether a rule touched it. */
static gboolean
upgrade_node(HgNode *n, gint64 from, gint64 target, Rw *rw, gboolean *rewritten)
{
    *rewritten = FALSE;
    if (n->flags & HG_NODE_DEAD || !is_default_domain(n))
        return TRUE;
    gboolean renamed = FALSE;
    guint64 generation = n->graph->generation; /* every edit bumps it */
    for (guint i = 0; i < G_N_ELEMENTS(changes); i++) {
        /* Upsample's and Scatter's rows (deprecated ops) apply at any version. */
        if (strcmp(changes[i].op, n->op_type) != 0 || from >= changes[i].version)
            continue;
        if (!changes[i].rule(n, rw))
            return FALSE;
        *rewritten = n->graph->generation != generation;
        renamed |= strcmp(changes[i].op, "Upsample") == 0 || strcmp(changes[i].op, "Scatter") == 0;
    }
    if (!renamed && !known_at_17(n->op_type)) {
        g_free(rw->why);
        rw->why = g_strdup_printf("node '%s' (%s): not an ONNX op at opset %" G_GINT64_FORMAT,
                                  node_label(n), n->op_type, target);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    Rw rw;
    gint64 from, target;
    guint rewritten;
    gboolean ok;
} Walk;

static void
walk_graph(HgGraph *g, gpointer data)
{
    Walk *w = data;
    /* Rules may append initializers, never nodes: iterating by index is safe. */
    for (guint i = 0; i < g->nodes->len && w->ok; i++) {
        gboolean touched;
        w->ok = upgrade_node(g->nodes->pdata[i], w->from, w->target, &w->rw, &touched);
        w->rewritten += touched && w->rw.apply;
    }
}

gboolean
hg_opset_can_upgrade(HgModel *m, const HgShapes *s, gint64 target, char **why)
{
    g_return_val_if_fail(m != NULL && target <= 17, FALSE);
    gint64 from = hg_model_opset(m, "");
    *why = NULL;
    if (from >= target)
        return TRUE;
    if (from < MIN_SOURCE_OPSET) {
        *why = g_strdup_printf("opset %" G_GINT64_FORMAT " predates numpy broadcasting (opset 7)", from);
        return FALSE;
    }
    if (m->functions && m->functions->len) {
        /* their bodies import the default domain themselves; halfguard passes them through opaque */
        *why = g_strdup("the model has local functions, whose opset imports are not rewritten");
        return FALSE;
    }
    Walk w = {{s, FALSE, NULL}, from, target, 0, TRUE};
    if (m->graph)
        hg_graph_foreach(m->graph, walk_graph, &w);
    *why = w.rw.why;
    return w.ok;
}

void
hg_opset_upgrade(HgModel *m, const HgShapes *s, gint64 target, guint *n_rewritten)
{
    g_return_if_fail(m != NULL && target <= 17);
    gint64 from = hg_model_opset(m, "");
    *n_rewritten = 0;
    if (from >= target)
        return;
    Walk w = {{s, TRUE, NULL}, from, target, 0, TRUE};
    if (m->graph)
        hg_graph_foreach(m->graph, walk_graph, &w);
    g_warn_if_fail(w.ok);
    g_free(w.rw.why);
    *n_rewritten = w.rewritten;
    hg_model_set_opset(m, "", target);
    /* opset 17 came with IR version 8 */
    if (target >= 17 && (!m->has_ir_version || m->ir_version < 8)) {
        m->has_ir_version = TRUE;
        m->ir_version = 8;
    }
}
