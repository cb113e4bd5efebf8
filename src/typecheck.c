/* The whole-model type check (include/halfguard/typecheck.h): every node whose op signature
 * (src/ops/types.h) is known at the model's opset is checked against it, after the types of undeclared
 * values have been inferred by the same signatures, graph by graph in topological order. */
#include "halfguard/typecheck.h"
#include "ops/types.h"

#include <string.h>

/* A value's type as far as the check cares: its kind, what a sequence or optional holds, and the
 * element type of the tensor innermost (HG_DTYPE_UNDEFINED when not known). */
typedef struct {
    HgTypeKind kind;  /* HG_TYPE_NONE: unknown */
    HgTypeKind inner; /* sequence: TENSOR or MAP; optional: TENSOR or SEQUENCE; else NONE */
    int elem;
} Ty;

static const Ty ty_unknown = {HG_TYPE_NONE, HG_TYPE_NONE, HG_DTYPE_UNDEFINED};

typedef struct {
    HgModel *model;
    GHashTable *inferred; /* HgValue* -> Ty* (owned): types of values nothing declares */
    GPtrArray *out;       /* of HgTypeViolation */
} Check;

void
hg_type_violation_free(HgTypeViolation *v)
{
    if (!v)
        return;
    g_free(v->node);
    g_free(v->op);
    g_free(v->output);
    g_free(v->param);
    g_free(v->message);
    g_free(v);
}

/* ---------------------------------------------------------------- types */

static Ty
ty_tensor(int elem)
{
    return (Ty){HG_TYPE_TENSOR, HG_TYPE_NONE, elem};
}

static Ty
ty_from_type(const HgType *t)
{
    if (!t)
        return ty_unknown;
    int elem = t->has_elem_type ? t->elem_type : HG_DTYPE_UNDEFINED;
    switch (t->kind) {
    case HG_TYPE_TENSOR:
    case HG_TYPE_SPARSE_TENSOR:
        return (Ty){t->kind, HG_TYPE_NONE, elem};
    case HG_TYPE_SEQUENCE:
    case HG_TYPE_OPTIONAL: {
        Ty e = ty_from_type(t->elem);
        /* optional(seq(tensor(E))): the element type is the sequence's. */
        return (Ty){t->kind, e.kind, e.kind == HG_TYPE_MAP ? HG_DTYPE_UNDEFINED : e.elem};
    }
    case HG_TYPE_MAP:
        return (Ty){HG_TYPE_MAP, HG_TYPE_NONE, HG_DTYPE_UNDEFINED};
    default:
        return ty_unknown;
    }
}

/* Known enough to check: a kind, and the element type of whatever holds tensors. */
static gboolean
ty_known(Ty t)
{
    switch (t.kind) {
    case HG_TYPE_NONE:
    case HG_TYPE_OPAQUE:
        return FALSE;
    case HG_TYPE_MAP:
        return TRUE;
    case HG_TYPE_SEQUENCE:
        return t.inner == HG_TYPE_MAP || (t.inner == HG_TYPE_TENSOR && t.elem != HG_DTYPE_UNDEFINED);
    case HG_TYPE_OPTIONAL:
        return (t.inner == HG_TYPE_TENSOR || t.inner == HG_TYPE_SEQUENCE) && t.elem != HG_DTYPE_UNDEFINED;
    default:
        return t.elem != HG_DTYPE_UNDEFINED;
    }
}

static gboolean
ty_equal(Ty a, Ty b)
{
    return a.kind == b.kind && a.inner == b.inner && a.elem == b.elem;
}

static char *
elem_name(int dtype)
{
    const char *n = hg_dtype_name(dtype);
    return n ? g_strdup(n) : dtype == 23 ? g_strdup("float4e2m1") : g_strdup_printf("dtype %d", dtype);
}

/* "float16" for a tensor, as ONNX writes the others: "seq(tensor(float))", "optional(tensor(int64))". */
static char *
ty_name(Ty t)
{
    g_autofree char *e = elem_name(t.elem);
    switch (t.kind) {
    case HG_TYPE_TENSOR:
        return g_steal_pointer(&e);
    case HG_TYPE_SPARSE_TENSOR:
        return g_strdup_printf("sparse_tensor(%s)", e);
    case HG_TYPE_SEQUENCE:
        return t.inner == HG_TYPE_MAP ? g_strdup("seq(map)") : g_strdup_printf("seq(tensor(%s))", e);
    case HG_TYPE_OPTIONAL:
        return t.inner == HG_TYPE_SEQUENCE ? g_strdup_printf("optional(seq(tensor(%s)))", e)
                                           : g_strdup_printf("optional(tensor(%s))", e);
    case HG_TYPE_MAP:
        return g_strdup("map");
    default:
        return g_strdup("unknown");
    }
}

static gboolean
ty_allowed(Ty t, const HgTypeSet *set)
{
    gboolean in_mask = t.elem > 0 && t.elem < 32;
    switch (t.kind) {
    case HG_TYPE_TENSOR:
        return in_mask && (set->tensor >> t.elem & 1);
    case HG_TYPE_SEQUENCE:
        if (t.inner == HG_TYPE_MAP)
            return (set->other & HG_SIG_SEQ_MAP) != 0;
        return in_mask && (set->seq >> t.elem & 1);
    case HG_TYPE_OPTIONAL:
        return (set->other &
                (t.inner == HG_TYPE_SEQUENCE ? HG_SIG_OPTIONAL_SEQ : HG_SIG_OPTIONAL_TENSOR)) != 0;
    case HG_TYPE_MAP:
        return (set->other & HG_SIG_MAP) != 0;
    default:
        return FALSE; /* sparse tensors: no op signature of these opsets takes one */
    }
}

/* The types a set allows, "float16, float, double". */
static char *
type_set_text(const HgTypeSet *set)
{
    GString *s = g_string_new(NULL);
    for (int d = 1; d < 32; d++) {
        if (set->tensor >> d & 1) {
            g_autofree char *e = elem_name(d);
            g_string_append_printf(s, "%s%s", s->len ? ", " : "", e);
        }
    }
    for (int d = 1; d < 32; d++) {
        if (set->seq >> d & 1) {
            g_autofree char *e = elem_name(d);
            g_string_append_printf(s, "%sseq(tensor(%s))", s->len ? ", " : "", e);
        }
    }
    static const struct {
        guint flag;
        const char *text;
    } others[] = {{HG_SIG_MAP, "map"},
                  {HG_SIG_SEQ_MAP, "seq(map)"},
                  {HG_SIG_OPTIONAL_TENSOR, "optional(tensor)"},
                  {HG_SIG_OPTIONAL_SEQ, "optional(seq)"}};
    for (guint i = 0; i < G_N_ELEMENTS(others); i++)
        if (set->other & others[i].flag)
            g_string_append_printf(s, "%s%s", s->len ? ", " : "", others[i].text);
    return g_string_free(s, FALSE);
}

/* The one type a set allows, or unknown when it allows several. */
static Ty
ty_only(const HgTypeSet *set)
{
    guint32 t = set->tensor, s = set->seq;
    if (set->other)
        return ty_unknown;
    if (t && !(t & (t - 1)) && !s)
        return ty_tensor(g_bit_nth_lsf(t, -1));
    if (s && !(s & (s - 1)) && !t)
        return (Ty){HG_TYPE_SEQUENCE, HG_TYPE_TENSOR, g_bit_nth_lsf(s, -1)};
    return ty_unknown;
}

/* v's type: declared, else inferred. */
static Ty
value_ty(const Check *c, const HgValue *v)
{
    Ty d = ty_from_type(v->type);
    if (ty_known(d))
        return d;
    const Ty *i = g_hash_table_lookup(c->inferred, v);
    return i ? *i : d;
}

static void
set_inferred(Check *c, HgValue *v, Ty t)
{
    if (!v || !ty_known(t) || ty_known(ty_from_type(v->type)))
        return;
    Ty *p = g_new(Ty, 1);
    *p = t;
    g_hash_table_replace(c->inferred, v, p);
}

/* ---------------------------------------------------------------- inference */

static gboolean
is_default(const HgNode *n)
{
    return !n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0;
}

static HgGraph *
attr_graph(const HgNode *n, const char *name)
{
    HgAttr *a = hg_node_attr(n, name);
    return a ? a->g : NULL;
}

static Ty
input_ty(const Check *c, const HgNode *n, guint i)
{
    return i < n->n_inputs && n->inputs[i] ? value_ty(c, n->inputs[i]) : ty_unknown;
}

/* The type of the k-th output declaration of g (a body's output), or unknown. */
static Ty
graph_output_ty(const Check *c, const HgGraph *g, guint k)
{
    if (!g || k >= g->outputs->len)
        return ty_unknown;
    const HgValueDecl *d = g->outputs->pdata[k];
    Ty t = ty_from_type(d->type);
    return ty_known(t) || !d->value ? t : value_ty(c, d->value);
}

/* Where a type comes from, for messages. */
typedef char Source[64];

/* A tensor of the element type attribute `name` gives, else of dflt (from says which). */
static Ty
dtype_attr_ty(const HgNode *n, const char *name, int dflt, const char *dflt_from, Source from)
{
    HgAttr *a = hg_node_attr(n, name);
    gboolean set = a && (a->has & HG_ATTR_HAS_I) && a->i;
    if (set)
        g_snprintf(from, sizeof(Source), "attribute '%s'", name);
    else
        g_snprintf(from, sizeof(Source), "%s", dflt_from);
    return ty_tensor(set ? (int)a->i : dflt);
}

/* Output k's type where an attribute, a body or an input decides it rather than the signature's
 * parameters, with from saying what decides it ("attribute 'to'", "then_branch output 0"); unknown
 * when the signature should decide. */
static Ty
infer_special(const Check *c, const HgNode *n, guint k, Source from)
{
    g_strlcpy(from, "input 0", sizeof(Source));
    if (!is_default(n))
        return ty_unknown;
    const char *op = n->op_type;
    if (strcmp(op, "Cast") == 0)
        return dtype_attr_ty(n, "to", HG_DTYPE_UNDEFINED, "", from);
    if (strcmp(op, "Constant") == 0) {
        static const struct {
            const char *attr;
            int dtype;
        } plain[] = {{"value_float", HG_DTYPE_FLOAT},   {"value_floats", HG_DTYPE_FLOAT},
                     {"value_int", HG_DTYPE_INT64},     {"value_ints", HG_DTYPE_INT64},
                     {"value_string", HG_DTYPE_STRING}, {"value_strings", HG_DTYPE_STRING}};
        for (guint i = 0; i < n->attrs->len; i++) {
            const HgAttr *a = n->attrs->pdata[i];
            if (!a->name)
                continue;
            g_snprintf(from, sizeof(Source), "attribute '%s'", a->name);
            if (strcmp(a->name, "value") == 0 && a->t && a->t->has_dtype)
                return ty_tensor(a->t->dtype);
            if (strcmp(a->name, "sparse_value") == 0 && a->sparse && a->sparse->values)
                return (Ty){HG_TYPE_SPARSE_TENSOR, HG_TYPE_NONE, a->sparse->values->dtype};
            for (guint j = 0; j < G_N_ELEMENTS(plain); j++)
                if (strcmp(a->name, plain[j].attr) == 0)
                    return ty_tensor(plain[j].dtype);
        }
        return ty_unknown;
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        HgAttr *a = hg_node_attr(n, "value");
        g_strlcpy(from, a && a->t && a->t->has_dtype ? "attribute 'value'" : "the default of attribute 'value'",
                  sizeof(Source));
        return ty_tensor(a && a->t && a->t->has_dtype ? a->t->dtype : HG_DTYPE_FLOAT);
    }
    if (strcmp(op, "RandomNormal") == 0 || strcmp(op, "RandomUniform") == 0)
        return dtype_attr_ty(n, "dtype", HG_DTYPE_FLOAT, "the default of attribute 'dtype'", from);
    if (strcmp(op, "Multinomial") == 0)
        return dtype_attr_ty(n, "dtype", HG_DTYPE_INT32, "the default of attribute 'dtype'", from);
    if (strcmp(op, "RandomNormalLike") == 0 || strcmp(op, "RandomUniformLike") == 0 ||
        strcmp(op, "EyeLike") == 0 || strcmp(op, "Bernoulli") == 0) {
        Ty in = input_ty(c, n, 0);
        return dtype_attr_ty(n, "dtype", in.kind == HG_TYPE_TENSOR ? in.elem : HG_DTYPE_UNDEFINED, "input 0", from);
    }
    if (strcmp(op, "QuantizeLinear") == 0 && k == 0 && (n->n_inputs < 3 || !n->inputs[2]))
        return dtype_attr_ty(n, "output_dtype", HG_DTYPE_UINT8, "the default (uint8, no zero point)", from);
    if (strcmp(op, "SequenceEmpty") == 0) {
        Ty e = dtype_attr_ty(n, "dtype", HG_DTYPE_FLOAT, "the default of attribute 'dtype'", from);
        return (Ty){HG_TYPE_SEQUENCE, HG_TYPE_TENSOR, e.elem};
    }
    if (strcmp(op, "SequenceConstruct") == 0 || strcmp(op, "SplitToSequence") == 0) {
        Ty in = input_ty(c, n, 0);
        return in.kind == HG_TYPE_TENSOR ? (Ty){HG_TYPE_SEQUENCE, HG_TYPE_TENSOR, in.elem} : ty_unknown;
    }
    if (strcmp(op, "SequenceAt") == 0 || strcmp(op, "ConcatFromSequence") == 0) {
        Ty in = input_ty(c, n, 0);
        return in.kind == HG_TYPE_SEQUENCE && in.inner == HG_TYPE_TENSOR ? ty_tensor(in.elem) : ty_unknown;
    }
    if (strcmp(op, "Optional") == 0) {
        Ty in = input_ty(c, n, 0);
        if (in.kind == HG_TYPE_NONE) {
            HgAttr *a = hg_node_attr(n, "type");
            in = ty_from_type(a ? a->tp : NULL);
            g_strlcpy(from, "attribute 'type'", sizeof(Source));
        }
        return in.kind == HG_TYPE_TENSOR || (in.kind == HG_TYPE_SEQUENCE && in.inner == HG_TYPE_TENSOR)
                   ? (Ty){HG_TYPE_OPTIONAL, in.kind, in.elem}
                   : ty_unknown;
    }
    if (strcmp(op, "OptionalGetElement") == 0) {
        Ty in = input_ty(c, n, 0);
        if (in.kind != HG_TYPE_OPTIONAL)
            return in; /* version 18 passes a tensor or sequence through */
        return in.inner == HG_TYPE_SEQUENCE ? (Ty){HG_TYPE_SEQUENCE, HG_TYPE_TENSOR, in.elem}
                                            : ty_tensor(in.elem);
    }
    /* Bodies: If's branches give its outputs; Loop's body gives its condition first, then the
     * carried values and scan outputs; Scan's body its states and scan outputs. */
    gboolean is_if = strcmp(op, "If") == 0, is_loop = strcmp(op, "Loop") == 0;
    if (!is_if && !is_loop && strcmp(op, "Scan") != 0)
        return ty_unknown;
    const char *body = is_if ? "then_branch" : "body";
    guint slot = is_loop ? k + 1 : k;
    Ty t = graph_output_ty(c, attr_graph(n, body), slot);
    if (!ty_known(t) && is_if) {
        body = "else_branch";
        t = graph_output_ty(c, attr_graph(n, body), slot);
    }
    g_snprintf(from, sizeof(Source), "%s output %u", body, slot);
    return t;
}

/* Output k's type from the signature: a parameter that allows one type, or the type an input of the
 * same parameter has. */
static Ty
infer_signature(const Check *c, const HgNode *n, const HgOpSchema *s, guint k)
{
    const HgSigFormal *f = hg_op_schema_output(s, k);
    if (!f || f->heterogeneous)
        return ty_unknown;
    Ty only = ty_only(&s->params[f->param].allowed);
    if (ty_known(only))
        return only;
    for (guint i = 0; i < n->n_inputs; i++) {
        Ty t = hg_op_schema_binds(s, k, i) ? input_ty(c, n, i) : ty_unknown;
        if (ty_known(t))
            return t;
    }
    return ty_unknown;
}

/* What a Loop or Scan feeds body input k: Loop's iteration count and condition, then its carried
 * values; Scan's states and a slice of each scanned input, of the same element type (version 8 has
 * sequence_lens first). *input is the node's input it comes from, -1 for none. */
static Ty
body_input_ty(const Check *c, const HgNode *n, const HgOpSchema *s, guint k, int *input)
{
    *input = -1;
    if (hg_node_is(n, "Loop") && k < 2)
        return ty_tensor(k == 0 ? HG_DTYPE_INT64 : HG_DTYPE_BOOL);
    if (!hg_node_is(n, "Loop") && !hg_node_is(n, "Scan"))
        return ty_unknown;
    guint i = hg_node_is(n, "Scan") && s && s->since < 9 ? k + 1 : k;
    if (i >= n->n_inputs || !n->inputs[i])
        return ty_unknown;
    *input = (int)i;
    return input_ty(c, n, i);
}

/* Body inputs that declare no type get the types the node feeds them. */
static void
seed_body(Check *c, const HgNode *n, const HgOpSchema *s, HgGraph *body)
{
    for (guint k = 0; k < body->inputs->len; k++) {
        int input;
        set_inferred(c, ((HgValueDecl *)body->inputs->pdata[k])->value, body_input_ty(c, n, s, k, &input));
    }
}

static void
infer_node(Check *c, HgNode *n, const HgOpSchema *s)
{
    for (guint k = 0; k < n->n_outputs; k++) {
        HgValue *v = n->outputs[k];
        if (!v || ty_known(ty_from_type(v->type)))
            continue;
        Source from;
        Ty t = infer_special(c, n, k, from);
        if (!ty_known(t) && s)
            t = infer_signature(c, n, s, k);
        set_inferred(c, v, t);
    }
}

/* ---------------------------------------------------------------- the check */

static void
add_violation(Check *c, const HgNode *n, const char *param, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static void
add_violation(Check *c, const HgNode *n, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    HgTypeViolation *v = g_new0(HgTypeViolation, 1);
    v->node = g_strdup(n->name ? n->name : "");
    v->op = g_strdup(n->op_type);
    v->output = n->n_outputs && n->outputs[0] ? g_strdup(n->outputs[0]->name) : NULL;
    v->param = g_strdup(param);
    v->message = g_strdup_printf("node '%s' (%s): %s", v->node, n->op_type, msg);
    g_ptr_array_add(c->out, v);
}

/* Where a parameter was first bound, for the message. */
typedef struct {
    Ty ty;
    const char *side; /* "input" / "output" */
    guint index;
    const char *value;
} Binding;

static void
check_node(Check *c, const HgNode *n, const HgOpSchema *s)
{
    g_autofree Binding *bound = g_new0(Binding, s->n_params ? s->n_params : 1);
    g_autofree gboolean *reported = g_new0(gboolean, s->n_params ? s->n_params : 1);
    for (int side = 0; side < 2; side++) {
        gboolean in = side == 0;
        guint count = in ? n->n_inputs : n->n_outputs;
        for (guint i = 0; i < count; i++) {
            const HgValue *v = in ? n->inputs[i] : n->outputs[i];
            const HgSigFormal *f = in ? hg_op_schema_input(s, i) : hg_op_schema_output(s, i);
            if (!v || !f || reported[f->param])
                continue;
            const HgSigParam *p = &s->params[f->param];
            const char *where = in ? "input" : "output";
            Ty t = value_ty(c, v);
            if (!ty_known(t)) {
                reported[f->param] = TRUE;
                add_violation(c, n, p->name, "%s %u '%s' has no known %s", where, i, v->name,
                              t.kind == HG_TYPE_NONE ? "type" : "element type");
                continue;
            }
            if (!ty_allowed(t, &p->allowed)) {
                reported[f->param] = TRUE;
                g_autofree char *tn = ty_name(t);
                g_autofree char *allowed = type_set_text(&p->allowed);
                if (p->literal)
                    add_violation(c, n, p->name, "%s %u '%s' is %s, not %s as %s-%u requires", where, i,
                                  v->name, tn, allowed, s->name, s->since);
                else
                    add_violation(c, n, p->name, "type parameter %s is %s at %s %u '%s', which %s-%u does "
                                  "not allow (it allows %s)", p->name, tn, where, i, v->name, s->name,
                                  s->since, allowed);
                continue;
            }
            if (p->literal || f->heterogeneous)
                continue;
            Binding *b = &bound[f->param];
            if (!b->side) {
                *b = (Binding){t, where, i, v->name};
            } else if (!ty_equal(b->ty, t)) {
                reported[f->param] = TRUE;
                g_autofree char *t1 = ty_name(b->ty);
                g_autofree char *t2 = ty_name(t);
                add_violation(c, n, p->name, "type parameter %s is %s at %s %u '%s' but %s at %s %u '%s'",
                              p->name, t1, b->side, b->index, b->value, t2, where, i, v->name);
            }
        }
    }
    /* A Loop's or Scan's body must declare its inputs as the node feeds them. */
    HgGraph *body = hg_node_is(n, "Loop") || hg_node_is(n, "Scan") ? attr_graph(n, "body") : NULL;
    for (guint k = 0; body && k < body->inputs->len; k++) {
        const HgValueDecl *d = body->inputs->pdata[k];
        int i;
        Ty fed = body_input_ty(c, n, s, k, &i);
        Ty t = ty_from_type(d->type);
        const HgSigFormal *f = i >= 0 ? hg_op_schema_input(s, (guint)i) : NULL;
        if (!f || reported[f->param] || !ty_known(t) || !ty_known(fed) || ty_equal(t, fed))
            continue;
        reported[f->param] = TRUE;
        g_autofree char *tn = ty_name(t);
        g_autofree char *fn = ty_name(fed);
        add_violation(c, n, s->params[f->param].name, "body input %u '%s' is %s but input %d '%s' is %s", k,
                      d->value ? d->value->name : "", tn, i, n->inputs[i]->name, fn);
    }
    /* Outputs whose type an attribute, a body or an input decides (Cast's `to`, an If's branches)
     * must be declared as that type. */
    for (guint k = 0; k < n->n_outputs; k++) {
        const HgValue *v = n->outputs[k];
        const HgSigFormal *f = hg_op_schema_output(s, k);
        if (!v || !f || reported[f->param])
            continue;
        Ty t = value_ty(c, v);
        Source from;
        Ty d = infer_special(c, n, k, from);
        if (ty_known(d) && ty_known(t) && !ty_equal(d, t)) {
            reported[f->param] = TRUE;
            g_autofree char *tn = ty_name(t);
            g_autofree char *dn = ty_name(d);
            add_violation(c, n, s->params[f->param].name, "output %u '%s' is %s but %s makes it %s", k, v->name,
                          tn, from, dn);
        } else if (hg_node_is(n, "If")) {
            /* infer_special read the then_branch; the else_branch must agree too. */
            d = graph_output_ty(c, attr_graph(n, "else_branch"), k);
            if (ty_known(d) && ty_known(t) && !ty_equal(d, t)) {
                reported[f->param] = TRUE;
                g_autofree char *tn = ty_name(t);
                g_autofree char *dn = ty_name(d);
                add_violation(c, n, s->params[f->param].name, "output %u '%s' is %s but else_branch output %u makes "
                              "it %s", k, v->name, tn, k, dn);
            }
        }
    }
}

static void
check_graph(Check *c, HgGraph *g)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, &error);
    if (!order) {
        /* A cycle: check what the file order allows (types inferred along it). */
        order = g_ptr_array_new();
        for (guint i = 0; i < g->nodes->len; i++) {
            HgNode *n = g->nodes->pdata[i];
            if (!(n->flags & HG_NODE_DEAD))
                g_ptr_array_add(order, n);
        }
    }
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        gint64 opset = hg_model_opset(c->model, n->domain);
        const HgOpSchema *s = hg_op_schema(n->domain, n->op_type, opset);
        const HgOpSchema *hint = s ? s : hg_op_schema_nearest(n->domain, n->op_type, opset);
        for (guint k = 0; k < n->attrs->len; k++) {
            HgAttr *a = n->attrs->pdata[k];
            if (a->g) {
                seed_body(c, n, hint, a->g);
                check_graph(c, a->g);
            }
            for (guint j = 0; a->graphs && j < a->graphs->len; j++)
                check_graph(c, a->graphs->pdata[j]);
        }
        infer_node(c, n, hint);
        if (s)
            check_node(c, n, s);
    }
}

GPtrArray *
hg_model_typecheck(HgModel *m)
{
    g_return_val_if_fail(m != NULL, NULL);
    Check c = {m, g_hash_table_new_full(NULL, NULL, NULL, g_free),
               g_ptr_array_new_with_free_func((GDestroyNotify)hg_type_violation_free)};
    if (m->graph)
        check_graph(&c, m->graph);
    g_hash_table_unref(c.inferred);
    return c.out;
}

/* What makes two violations the same across a conversion. */
static char *
violation_key(const HgTypeViolation *v)
{
    const char *output = *v->node || !v->output ? "" : v->output;
    return g_strdup_printf("%s\x1f%s\x1f%s\x1f%s", v->node, output, v->op, v->param);
}

gboolean
hg_typecheck_none_new(const GPtrArray *before, const GPtrArray *after, GError **error)
{
    g_return_val_if_fail(before != NULL && after != NULL, FALSE);
    g_autoptr(GHashTable) known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < before->len; i++)
        g_hash_table_add(known, violation_key(before->pdata[i]));
    for (guint i = 0; i < after->len; i++) {
        const HgTypeViolation *v = after->pdata[i];
        g_autofree char *key = violation_key(v);
        if (!g_hash_table_contains(known, key)) {
            g_set_error(error, HG_ERROR, HG_ERROR_INTERNAL, "%s", v->message);
            return FALSE;
        }
    }
    return TRUE;
}
