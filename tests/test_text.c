/* The text form: dump -> parse -> dump on the ONNX node tests, each syntax feature read into the IR,
 * errors with their positions, and summaries of large tensors. */
#include "testutil.h"
#include "testwalk.h"

#include "elem.h"
#include "ops/array.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static char *
dump_all(HgModel *m)
{
    HgTextOptions opts = {G_MAXINT64};
    return hg_model_to_text(m, &opts);
}

static HgNode *
node_at(HgGraph *g, guint i)
{
    assert_true(i < g->nodes->len);
    return g->nodes->pdata[i];
}

static HgValue *
value(HgGraph *g, const char *name)
{
    HgValue *v = g_hash_table_lookup(g->values, name);
    if (!v)
        fail_msg("no value '%s'", name);
    return v;
}

static guint32
f32_bits(float f)
{
    guint32 b;
    memcpy(&b, &f, 4);
    return b;
}

/* ---------------------------------------------------------------- structural comparison */

/* Each compare_* returns FALSE and writes where the two differ into why. */

static const char *
norm(const char *s)
{
    return s ? s : "";
}

#define DIFFER(...)                                                                      \
    do {                                                                                 \
        g_string_append_printf(why, __VA_ARGS__);                                        \
        return FALSE;                                                                    \
    } while (0)

static gboolean compare_graphs(const HgGraph *a, const HgGraph *b, const char *where, GString *why);

static gboolean
compare_tensors(const HgTensor *a, const HgTensor *b, const char *where, GString *why)
{
    if (g_strcmp0(norm(a->name), norm(b->name)) != 0)
        DIFFER("%s: tensor name '%s' vs '%s'", where, norm(a->name), norm(b->name));
    if (a->dtype != b->dtype || a->rank != b->rank)
        DIFFER("%s: tensor %s dtype %d/%d rank %u/%u", where, norm(a->name), a->dtype, b->dtype, a->rank,
               b->rank);
    for (guint i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            DIFFER("%s: tensor %s dim %u", where, norm(a->name), i);
    if (a->dtype == HG_DTYPE_STRING) {
        guint na = a->strings ? a->strings->len : 0, nb = b->strings ? b->strings->len : 0;
        if (na != nb)
            DIFFER("%s: tensor %s has %u/%u strings", where, norm(a->name), na, nb);
        for (guint i = 0; i < na; i++)
            if (!g_bytes_equal(a->strings->pdata[i], b->strings->pdata[i]))
                DIFFER("%s: tensor %s string %u", where, norm(a->name), i);
        return TRUE;
    }
    if (a->nbytes != b->nbytes || (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0))
        DIFFER("%s: tensor %s bytes differ (%zu/%zu)", where, norm(a->name), a->nbytes, b->nbytes);
    return TRUE;
}

static gboolean
compare_decls(const GPtrArray *a, const GPtrArray *b, const char *what, const char *where, GString *why)
{
    if (a->len != b->len)
        DIFFER("%s: %u/%u %s", where, a->len, b->len, what);
    for (guint i = 0; i < a->len; i++) {
        const HgValueDecl *x = a->pdata[i], *y = b->pdata[i];
        if (g_strcmp0(x->name, y->name) != 0)
            DIFFER("%s: %s %u is '%s' vs '%s'", where, what, i, x->name, y->name);
        if (!hg_type_equal(x->type, y->type))
            DIFFER("%s: %s '%s' has another type", where, what, x->name);
        if (g_strcmp0(norm(x->doc_string), norm(y->doc_string)) != 0)
            DIFFER("%s: %s '%s' doc_string", where, what, x->name);
    }
    return TRUE;
}

static gboolean
compare_values(HgValue *const *a, HgValue *const *b, guint n, const char *what, const char *where,
               GString *why)
{
    for (guint i = 0; i < n; i++) {
        const char *x = a[i] ? a[i]->name : NULL, *y = b[i] ? b[i]->name : NULL;
        if (g_strcmp0(x, y) != 0)
            DIFFER("%s: %s %u is '%s' vs '%s'", where, what, i, norm(x), norm(y));
    }
    return TRUE;
}

static gboolean
compare_attrs(const HgAttr *a, const HgAttr *b, const char *where, GString *why)
{
    g_autofree char *here = g_strdup_printf("%s attribute %s", where, a->name);
    if (g_strcmp0(a->name, b->name) != 0 || a->type != b->type)
        DIFFER("%s: name/type %s %d vs %s %d", here, a->name, a->type, b->name, b->type);
    if (g_strcmp0(a->ref_attr_name, b->ref_attr_name) != 0)
        DIFFER("%s: ref_attr_name", here);
    switch (a->type) {
    case HG_ATTR_FLOAT:
        if (f32_bits(a->f) != f32_bits(b->f))
            DIFFER("%s: %.9g vs %.9g", here, a->f, b->f);
        break;
    case HG_ATTR_INT:
        if (a->i != b->i)
            DIFFER("%s: %" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT, here, a->i, b->i);
        break;
    case HG_ATTR_STRING:
        if (!a->s != !b->s || (a->s && !g_bytes_equal(a->s, b->s)))
            DIFFER("%s: string differs", here);
        break;
    case HG_ATTR_TENSOR:
        if (!a->t != !b->t)
            DIFFER("%s: tensor missing", here);
        return !a->t || compare_tensors(a->t, b->t, here, why);
    case HG_ATTR_GRAPH:
        if (!a->g != !b->g)
            DIFFER("%s: graph missing", here);
        return !a->g || compare_graphs(a->g, b->g, here, why);
    case HG_ATTR_TYPE_PROTO:
        if (!hg_type_equal(a->tp, b->tp))
            DIFFER("%s: type differs", here);
        break;
    default: {
        guint na = a->floats ? a->floats->len : 0, nb = b->floats ? b->floats->len : 0;
        if (na != nb || (na && memcmp(a->floats->data, b->floats->data, na * sizeof(float))))
            DIFFER("%s: floats differ", here);
        na = a->ints ? a->ints->len : 0, nb = b->ints ? b->ints->len : 0;
        if (na != nb || (na && memcmp(a->ints->data, b->ints->data, na * sizeof(gint64))))
            DIFFER("%s: ints differ", here);
        na = a->strings ? a->strings->len : 0, nb = b->strings ? b->strings->len : 0;
        if (na != nb)
            DIFFER("%s: %u/%u strings", here, na, nb);
        for (guint i = 0; i < na; i++)
            if (!g_bytes_equal(a->strings->pdata[i], b->strings->pdata[i]))
                DIFFER("%s: string %u differs", here, i);
        na = a->tensors ? a->tensors->len : 0, nb = b->tensors ? b->tensors->len : 0;
        if (na != nb)
            DIFFER("%s: %u/%u tensors", here, na, nb);
        for (guint i = 0; i < na; i++)
            if (!compare_tensors(a->tensors->pdata[i], b->tensors->pdata[i], here, why))
                return FALSE;
        na = a->graphs ? a->graphs->len : 0, nb = b->graphs ? b->graphs->len : 0;
        if (na != nb)
            DIFFER("%s: %u/%u graphs", here, na, nb);
        for (guint i = 0; i < na; i++)
            if (!compare_graphs(a->graphs->pdata[i], b->graphs->pdata[i], here, why))
                return FALSE;
        na = a->type_protos ? a->type_protos->len : 0, nb = b->type_protos ? b->type_protos->len : 0;
        if (na != nb)
            DIFFER("%s: %u/%u types", here, na, nb);
        for (guint i = 0; i < na; i++)
            if (!hg_type_equal(a->type_protos->pdata[i], b->type_protos->pdata[i]))
                DIFFER("%s: type %u differs", here, i);
        break;
    }
    }
    return TRUE;
}

static gboolean
compare_nodes(const HgNode *a, const HgNode *b, const char *where, GString *why)
{
    g_autofree char *here = g_strdup_printf("%s node %s '%s'", where, a->op_type, norm(a->name));
    if (g_strcmp0(a->op_type, b->op_type) != 0)
        DIFFER("%s: op %s vs %s", here, a->op_type, b->op_type);
    /* Absent and "" domains both mean ONNX's; the text cannot tell them apart. */
    if (g_strcmp0(norm(a->domain), norm(b->domain)) != 0)
        DIFFER("%s: domain '%s' vs '%s'", here, norm(a->domain), norm(b->domain));
    if (g_strcmp0(norm(a->name), norm(b->name)) != 0)
        DIFFER("%s: name vs '%s'", here, norm(b->name));
    if (g_strcmp0(norm(a->overload), norm(b->overload)) != 0 ||
        g_strcmp0(norm(a->doc_string), norm(b->doc_string)) != 0)
        DIFFER("%s: overload or doc_string", here);
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        DIFFER("%s: %u/%u inputs, %u/%u outputs", here, a->n_inputs, b->n_inputs, a->n_outputs,
               b->n_outputs);
    if (!compare_values(a->inputs, b->inputs, a->n_inputs, "input", here, why) ||
        !compare_values(a->outputs, b->outputs, a->n_outputs, "output", here, why))
        return FALSE;
    if (a->attrs->len != b->attrs->len)
        DIFFER("%s: %u/%u attributes", here, a->attrs->len, b->attrs->len);
    for (guint i = 0; i < a->attrs->len; i++)
        if (!compare_attrs(a->attrs->pdata[i], b->attrs->pdata[i], here, why))
            return FALSE;
    return TRUE;
}

static gboolean
compare_graphs(const HgGraph *a, const HgGraph *b, const char *where, GString *why)
{
    g_autofree char *here = g_strdup_printf("%s graph '%s'", where, norm(a->name));
    if (g_strcmp0(norm(a->name), norm(b->name)) != 0 ||
        g_strcmp0(norm(a->doc_string), norm(b->doc_string)) != 0)
        DIFFER("%s: name or doc_string ('%s')", here, norm(b->name));
    if (!compare_decls(a->inputs, b->inputs, "inputs", here, why) ||
        !compare_decls(a->outputs, b->outputs, "outputs", here, why) ||
        !compare_decls(a->value_info, b->value_info, "value_info", here, why))
        return FALSE;
    if (a->initializers->len != b->initializers->len)
        DIFFER("%s: %u/%u initializers", here, a->initializers->len, b->initializers->len);
    for (guint i = 0; i < a->initializers->len; i++)
        if (!compare_tensors(a->initializers->pdata[i], b->initializers->pdata[i], here, why))
            return FALSE;
    if (a->nodes->len != b->nodes->len)
        DIFFER("%s: %u/%u nodes", here, a->nodes->len, b->nodes->len);
    for (guint i = 0; i < a->nodes->len; i++)
        if (!compare_nodes(a->nodes->pdata[i], b->nodes->pdata[i], here, why))
            return FALSE;
    if (a->outer_refs->len != b->outer_refs->len)
        DIFFER("%s: %u/%u outer references", here, a->outer_refs->len, b->outer_refs->len);
    return TRUE;
}

static gboolean
compare_models(const HgModel *a, const HgModel *b, GString *why)
{
    if (a->has_ir_version != b->has_ir_version || a->ir_version != b->ir_version)
        DIFFER("ir_version");
    if (a->opsets->len != b->opsets->len)
        DIFFER("%u/%u opsets", a->opsets->len, b->opsets->len);
    for (guint i = 0; i < a->opsets->len; i++) {
        const HgOpset *x = a->opsets->pdata[i], *y = b->opsets->pdata[i];
        if (g_strcmp0(norm(x->domain), norm(y->domain)) != 0 || x->version != y->version)
            DIFFER("opset %u", i);
    }
    if (g_strcmp0(a->producer_name, b->producer_name) || g_strcmp0(a->producer_version, b->producer_version) ||
        g_strcmp0(a->domain, b->domain) || g_strcmp0(a->doc_string, b->doc_string) ||
        a->has_model_version != b->has_model_version || a->model_version != b->model_version)
        DIFFER("model header fields");
    guint na = a->metadata ? a->metadata->len : 0, nb = b->metadata ? b->metadata->len : 0;
    if (na != nb)
        DIFFER("%u/%u metadata_props", na, nb);
    for (guint i = 0; i < na; i++) {
        const HgStringPair *x = a->metadata->pdata[i], *y = b->metadata->pdata[i];
        if (g_strcmp0(norm(x->key), norm(y->key)) || g_strcmp0(norm(x->value), norm(y->value)))
            DIFFER("metadata_props %u", i);
    }
    if (!a->graph != !b->graph)
        DIFFER("graph missing");
    return !a->graph || compare_graphs(a->graph, b->graph, "", why);
}

/* dump -> parse -> dump: identical text and an identical graph. Returns NULL or what differs. */
static char *
round_trip(HgModel *m)
{
    GError *error = NULL;
    g_autofree char *text = dump_all(m);
    g_autoptr(HgModel) back = hg_model_parse_text(text, strlen(text), &error);
    if (!back) {
        char *msg = g_strdup_printf("parse: %s", error->message);
        g_error_free(error);
        return msg;
    }
    if (!hg_graph_verify(back->graph, &error)) {
        char *msg = g_strdup_printf("verify: %s", error->message);
        g_error_free(error);
        return msg;
    }
    g_autofree char *again = dump_all(back);
    if (strcmp(text, again) != 0) {
        gsize i = 0;
        while (text[i] && text[i] == again[i])
            i++;
        return g_strdup_printf("dumps differ at byte %zu: ...%.60s... vs ...%.60s...", i,
                               text + (i > 20 ? i - 20 : 0), again + (i > 20 ? i - 20 : 0));
    }
    g_autoptr(GString) why = g_string_new(NULL);
    if (!compare_models(m, back, why))
        return g_string_free(g_steal_pointer(&why), FALSE);
    return NULL;
}

/* ---------------------------------------------------------------- (a) the ONNX node tests */

static void
test_node_models_round_trip(void **state)
{
    (void)state;
    g_autofree char *node_dir = test_data("HG_TESTDATA", "node");
    if (!g_file_test(node_dir, G_FILE_TEST_IS_DIR))
        skip();
    g_autoptr(GPtrArray) subs = hg_test_children(node_dir);

    guint tried = 0, failed = 0;
    for (guint i = 0; i < subs->len; i++) {
        g_autofree char *path = g_build_filename(subs->pdata[i], "model.onnx", NULL);
        g_autofree char *name = g_path_get_basename(subs->pdata[i]);
        if (!g_file_test(path, G_FILE_TEST_EXISTS))
            continue;
        GError *error = NULL;
        g_autoptr(HgModel) m = hg_model_load(path, &error);
        if (!m) {
            print_error("%s: load: %s\n", name, error->message);
            g_error_free(error);
            failed++;
            continue;
        }
        assert_verified(m->graph);
        tried++;
        g_autofree char *why = round_trip(m);
        if (why) {
            print_error("%s: %s\n", name, why);
            failed++;
        }
    }
    print_message("%u node models round-tripped, %u failed\n", tried, failed);
    assert_true(tried > 900);
    assert_int_equal(failed, 0);
}

/* ---------------------------------------------------------------- (b) syntax features */

static void
test_header(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "<\n"
        "  ir_version: 8,\n"
        "  opset_import: [\"\" : 17, \"com.microsoft\" : 1],\n"
        "  producer_name: \"x\", producer_version: \"1.2\", domain: \"ai.test\",\n"
        "  model_version: 3, doc_string: \"two\\nlines\",\n"
        "  metadata_props: [\"k\" : \"v\", \"k2\" : \"\"]\n"
        ">\n"
        "g (float X) => (float Y) { Y = Relu(X) }\n");
    assert_true(m->has_ir_version);
    assert_int_equal(m->ir_version, 8);
    assert_int_equal(m->opsets->len, 2);
    assert_int_equal(hg_model_opset(m, ""), 17);
    assert_int_equal(hg_model_opset(m, "com.microsoft"), 1);
    assert_string_equal(((HgOpset *)m->opsets->pdata[1])->domain, "com.microsoft");
    assert_string_equal(m->producer_name, "x");
    assert_string_equal(m->producer_version, "1.2");
    assert_string_equal(m->domain, "ai.test");
    assert_true(m->has_model_version);
    assert_int_equal(m->model_version, 3);
    assert_string_equal(m->doc_string, "two\nlines");
    assert_int_equal(m->metadata->len, 2);
    assert_string_equal(((HgStringPair *)m->metadata->pdata[1])->key, "k2");
    assert_string_equal(((HgStringPair *)m->metadata->pdata[1])->value, "");
    assert_string_equal(m->graph->name, "g");
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_signature(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "(float[N,3,?] X, int64 s, bool[] u, \"input.1\", float16[\"batch size\"] \"0\")\n"
        "  => (float[N,3,?] Y, seq(float[2]) S) {\n"
        "  Y = Relu(X)\n"
        "  S = SequenceConstruct(X)\n"
        "}\n");
    HgGraph *g = m->graph;
    assert_null(g->name);
    assert_int_equal(g->inputs->len, 5);
    const HgValueDecl *x = g->inputs->pdata[0];
    assert_string_equal(x->name, "X");
    assert_int_equal(x->type->kind, HG_TYPE_TENSOR);
    assert_int_equal(x->type->elem_type, HG_DTYPE_FLOAT);
    assert_int_equal(x->type->shape->rank, 3);
    assert_string_equal(x->type->shape->dims[0].param, "N");
    assert_false(x->type->shape->dims[0].has_value);
    assert_true(x->type->shape->dims[1].has_value);
    assert_int_equal(x->type->shape->dims[1].value, 3);
    assert_false(x->type->shape->dims[2].has_value);
    assert_null(x->type->shape->dims[2].param);
    const HgValueDecl *s = g->inputs->pdata[1];
    assert_int_equal(s->type->elem_type, HG_DTYPE_INT64);
    assert_non_null(s->type->shape); /* a scalar: rank 0, not unknown rank */
    assert_int_equal(s->type->shape->rank, 0);
    const HgValueDecl *u = g->inputs->pdata[2];
    assert_int_equal(u->type->elem_type, HG_DTYPE_BOOL);
    assert_null(u->type->shape);
    const HgValueDecl *q = g->inputs->pdata[3];
    assert_string_equal(q->name, "input.1");
    assert_null(q->type);
    const HgValueDecl *z = g->inputs->pdata[4];
    assert_string_equal(z->name, "0");
    assert_int_equal(z->type->elem_type, HG_DTYPE_FLOAT16);
    assert_string_equal(z->type->shape->dims[0].param, "batch size");
    const HgValueDecl *seq = g->outputs->pdata[1];
    assert_int_equal(seq->type->kind, HG_TYPE_SEQUENCE);
    assert_int_equal(seq->type->elem->kind, HG_TYPE_TENSOR);
    assert_int_equal(seq->type->elem->shape->dims[0].value, 2);
    assert_true(value(g, "0")->is_input);

    /* The dump quotes what 1.12 cannot read as a name and moves the seq type to an annotation. */
    g_autofree char *text = dump_all(m);
    assert_string_equal(text, "(float[N,3,?] X, int64 s, bool[] u, \"input.1\", float16[\"batch size\"] \"0\") => (\n"
                              "  float[N,3,?] Y,\n"
                              "  S  #@ type: seq(float[2])\n"
                              ") {\n"
                              "  Y = Relu(X)\n"
                              "  S = SequenceConstruct(X)\n"
                              "}\n");
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_initializers_and_value_info(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "g (float[2] X, float[2] B = {0.5, -1.5}) => (float[2] Y)\n"
        "<float[2] W = {1.0, 2.0}, float[2] T, int64[2,2] I = {1, -2, 3, 9223372036854775807}>\n"
        "{\n"
        "  T = Mul(X, W)\n"
        "  Y = Add(T, B)\n"
        "}\n");
    HgGraph *g = m->graph;
    assert_int_equal(g->inputs->len, 2);
    assert_int_equal(g->initializers->len, 3);
    HgTensor *b = g->initializers->pdata[0];
    assert_string_equal(b->name, "B");
    assert_true(value(g, "B")->is_input);
    assert_ptr_equal(value(g, "B")->init, b);
    const float *bd = b->data;
    assert_true(bd[0] == 0.5f && bd[1] == -1.5f);
    HgTensor *w = g->initializers->pdata[1];
    assert_string_equal(w->name, "W");
    assert_false(value(g, "W")->is_input);
    HgTensor *i = g->initializers->pdata[2];
    assert_int_equal(i->dtype, HG_DTYPE_INT64);
    assert_int_equal(i->rank, 2);
    assert_int_equal(((const gint64 *)i->data)[3], G_MAXINT64);
    assert_int_equal(((const gint64 *)i->data)[1], -2);
    assert_int_equal(g->value_info->len, 1);
    const HgValueDecl *t = g->value_info->pdata[0];
    assert_string_equal(t->name, "T");
    assert_ptr_equal(t->value, value(g, "T"));
    /* An input with an initializer is written as the input plus an entry of the `<...>` list. */
    g_autofree char *text = dump_all(m);
    assert_non_null(strstr(text, "g (float[2] X, float[2] B) => (float[2] Y)\n<\n  float[2] B = {0.5, -1.5},\n"));
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_nodes(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "g (float[4] X, float lo) => (float[4] Y, float[4] Z) {\n"
        "  # Z is used before the node that defines it\n"
        "  Y = Add(Z, C)  #@ name: \"add\", doc_string: \"a \\\"doc\\\"\"\n"
        "  C = Clip(X, , lo)\n"
        "  Z, = com.microsoft.Gelu(X)\n"
        "  \"\", D = Dropout(X, )\n"
        "  = Print <when = \"now\"> (X)  #@ domain: \"my-domain\", overload: \"v2\"\n"
        "  \"w.1\" = Neg(X) <a = 1>\n"
        "}\n");
    HgGraph *g = m->graph;
    assert_int_equal(g->nodes->len, 6);
    HgNode *add = node_at(g, 0);
    assert_string_equal(add->name, "add");
    assert_string_equal(add->doc_string, "a \"doc\"");
    assert_ptr_equal(add->inputs[0], value(g, "Z"));
    HgNode *clip = node_at(g, 1);
    assert_int_equal(clip->n_inputs, 3);
    assert_null(clip->inputs[1]);
    assert_ptr_equal(clip->inputs[2], value(g, "lo"));
    HgNode *gelu = node_at(g, 2);
    assert_string_equal(gelu->domain, "com.microsoft");
    assert_string_equal(gelu->op_type, "Gelu");
    assert_int_equal(gelu->n_outputs, 2);
    assert_null(gelu->outputs[1]);
    HgNode *drop = node_at(g, 3);
    assert_int_equal(drop->n_outputs, 2);
    assert_null(drop->outputs[0]);
    assert_ptr_equal(drop->outputs[1], value(g, "D"));
    assert_int_equal(drop->n_inputs, 2);
    assert_null(drop->inputs[1]);
    HgNode *print = node_at(g, 4);
    assert_int_equal(print->n_outputs, 0);
    assert_string_equal(print->domain, "my-domain");
    assert_string_equal(print->overload, "v2");
    HgNode *neg = node_at(g, 5);
    assert_ptr_equal(neg->outputs[0], value(g, "w.1"));
    assert_int_equal(hg_node_attr_int(neg, "a", 0), 1);
    /* Graph order is file order, even where it is not topological. */
    assert_ptr_equal(value(g, "Z")->producer, gelu);

    g_autofree char *text = dump_all(m);
    assert_non_null(strstr(text, "  C = Clip(X, , lo)\n"));
    assert_non_null(strstr(text, "  Z, = com.microsoft.Gelu(X)\n"));
    assert_non_null(strstr(text, "  \"\", D = Dropout(X,)\n"));
    assert_non_null(strstr(text, "  = Print <when = \"now\"> (X)  #@ domain: \"my-domain\", overload: \"v2\"\n"));
    assert_non_null(strstr(text, "  \"w.1\" = Neg <a = 1> (X)\n"));
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_attributes(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "g (float[2] X) => (float[2] Y) {\n"
        "  Y = Op <i = -7, f = 1e-05, g = 2.0, h: float = 3, s = \"a\\tb\\x01\", is = [1, -2, 3],\n"
        "          fs = [0.5, 2], ss = [\"x\", \"\"], e: ints = [], ef: floats = [],\n"
        "          t = float[2] tw {1.5, -0.0}, sc = int64 {42}, ni = nan, pi = inf, mi = -inf,\n"
        "          r: float = @alpha, tp: type_proto = optional(seq(float[3])),\n"
        "          ts = [float[1] {1.0}, int32[2] {1, 2}], \"odd name\" = 1> (X)\n"
        "}\n");
    HgNode *n = node_at(m->graph, 0);
    HgAttr *a;
    assert_int_equal(hg_node_attr_int(n, "i", 0), -7);
    a = hg_node_attr(n, "f");
    assert_int_equal(a->type, HG_ATTR_FLOAT);
    assert_int_equal(f32_bits(a->f), f32_bits(1e-05f));
    a = hg_node_attr(n, "g");
    assert_int_equal(a->type, HG_ATTR_FLOAT);
    assert_true(a->f == 2.0f);
    a = hg_node_attr(n, "h"); /* an int literal where a float is declared */
    assert_int_equal(a->type, HG_ATTR_FLOAT);
    assert_true(a->f == 3.0f);
    a = hg_node_attr(n, "s");
    assert_int_equal(a->type, HG_ATTR_STRING);
    assert_int_equal(g_bytes_get_size(a->s), 4);
    assert_memory_equal(g_bytes_get_data(a->s, NULL), "a\tb\001", 4);
    a = hg_node_attr(n, "is");
    assert_int_equal(a->type, HG_ATTR_INTS);
    assert_int_equal(a->ints->len, 3);
    assert_int_equal(g_array_index(a->ints, gint64, 1), -2);
    a = hg_node_attr(n, "fs"); /* one float makes a list of floats */
    assert_int_equal(a->type, HG_ATTR_FLOATS);
    assert_true(g_array_index(a->floats, float, 1) == 2.0f);
    a = hg_node_attr(n, "ss");
    assert_int_equal(a->type, HG_ATTR_STRINGS);
    assert_int_equal(a->strings->len, 2);
    assert_int_equal(g_bytes_get_size(a->strings->pdata[1]), 0);
    a = hg_node_attr(n, "e");
    assert_int_equal(a->type, HG_ATTR_INTS);
    assert_true(!a->ints || a->ints->len == 0);
    assert_int_equal(hg_node_attr(n, "ef")->type, HG_ATTR_FLOATS);
    a = hg_node_attr(n, "t");
    assert_int_equal(a->type, HG_ATTR_TENSOR);
    assert_string_equal(a->t->name, "tw");
    assert_int_equal(a->t->rank, 1);
    assert_int_equal(f32_bits(((const float *)a->t->data)[1]), 0x80000000u);
    a = hg_node_attr(n, "sc");
    assert_int_equal(a->t->rank, 0);
    assert_int_equal(a->t->dtype, HG_DTYPE_INT64);
    assert_int_equal(*(const gint64 *)a->t->data, 42);
    assert_int_equal(f32_bits(hg_node_attr(n, "ni")->f), 0x7fc00000u);
    assert_true(isinf(hg_node_attr(n, "pi")->f) && hg_node_attr(n, "pi")->f > 0);
    assert_true(isinf(hg_node_attr(n, "mi")->f) && hg_node_attr(n, "mi")->f < 0);
    a = hg_node_attr(n, "r");
    assert_int_equal(a->type, HG_ATTR_FLOAT);
    assert_string_equal(a->ref_attr_name, "alpha");
    a = hg_node_attr(n, "tp");
    assert_int_equal(a->type, HG_ATTR_TYPE_PROTO);
    assert_int_equal(a->tp->kind, HG_TYPE_OPTIONAL);
    assert_int_equal(a->tp->elem->kind, HG_TYPE_SEQUENCE);
    a = hg_node_attr(n, "ts");
    assert_int_equal(a->type, HG_ATTR_TENSORS);
    assert_int_equal(a->tensors->len, 2);
    assert_int_equal(((HgTensor *)a->tensors->pdata[1])->dtype, HG_DTYPE_INT32);
    assert_int_equal(hg_node_attr_int(n, "odd name", 0), 1);

    g_autofree char *text = dump_all(m);
    assert_non_null(strstr(text, "f = 1e-05, g = 2.0, h = 3.0, s = \"a\\tb\\x01\", is = [1, -2, 3], "
                                 "fs = [0.5, 2.0], ss = [\"x\", \"\"], e: ints = [], ef: floats = [], "
                                 "t = float[2] tw {1.5, -0.0}, sc = int64 {42}, ni = nan, pi = inf, "
                                 "mi = -inf, r: float = @alpha, tp: type_proto = optional(seq(float[3]))"));
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_subgraphs(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "main (bool c, float[2] X) => (float[2] Y) {\n"
        "  Y = If (c) <\n"
        "    then_branch = then_g () => (float[2] a) {\n"
        "      a = Add(X, K)\n"
        "    },\n"
        "    else_branch = else_g () => (float[2] b) <float[2] one = {1.0, 1.0}> {\n"
        "      b = Sub(K, one)\n"
        "    }\n"
        "  >\n"
        "  K = Neg(X)\n"
        "}\n");
    HgGraph *g = m->graph;
    HgNode *iff = node_at(g, 0);
    HgAttr *then_a = hg_node_attr(iff, "then_branch"), *else_a = hg_node_attr(iff, "else_branch");
    assert_int_equal(then_a->type, HG_ATTR_GRAPH);
    HgGraph *tg = then_a->g, *eg = else_a->g;
    assert_string_equal(tg->name, "then_g");
    assert_ptr_equal(tg->parent, g);
    assert_ptr_equal(tg->parent_node, iff);
    /* X and K (defined by a node listed after If) are read from the outer scope. */
    HgNode *inner = node_at(tg, 0);
    assert_ptr_equal(inner->inputs[0], value(g, "X"));
    assert_ptr_equal(inner->inputs[1], value(g, "K"));
    assert_int_equal(tg->outer_refs->len, 2);
    assert_int_equal(eg->initializers->len, 1);
    assert_ptr_equal(node_at(eg, 0)->inputs[1], value(eg, "one"));
    /* K's uses include the subgraph nodes', so a topological order puts K first. */
    GError *error = NULL;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, &error);
    assert_non_null(order);
    assert_string_equal(((HgNode *)order->pdata[0])->op_type, "Neg");
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_tensor_types(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "g (float X) => (float Y)\n"
        "<\n"
        "  float16[4] h = {0.1, 65504.0, -inf, nan},\n"
        "  bfloat16[2] bf = {0.1, -nan},\n"
        "  double[2] d = {0.1, 1e-300},\n"
        "  int8[2] i8 = {-128, 127},\n"
        "  uint64[1] u64 = {18446744073709551615},\n"
        "  bool[3] b = {1, 0, 1},\n"
        "  string[2] s = {\"a\", \"\\xff\\x00z\"},\n"
        "  int4[3] i4 = {-8, 7, -1},\n"
        "  complex64[1] c = {1.5, -2.0},\n"
        "  float[3] f = {nan0x7fc00001, 3.40282347e+38, 1e-45},\n"
        "  float8e4m3fn[2] f8 = {448.0, -0.5}\n"
        ">\n"
        "{ Y = Identity(X) }\n");
    HgGraph *g = m->graph;
    const guint16 *h = value(g, "h")->init->data;
    assert_int_equal(h[0], 0x2e66);
    assert_int_equal(h[1], 0x7bff);
    assert_int_equal(h[2], 0xfc00);
    assert_int_equal(h[3], 0x7e00);
    const guint16 *bf = value(g, "bf")->init->data;
    assert_int_equal(bf[0], 0x3dcd);
    assert_int_equal(bf[1], 0xffc0);
    const double *d = value(g, "d")->init->data;
    assert_true(d[0] == 0.1 && d[1] == 1e-300);
    const gint8 *i8 = value(g, "i8")->init->data;
    assert_int_equal(i8[0], -128);
    assert_int_equal(((const guint64 *)value(g, "u64")->init->data)[0], G_MAXUINT64);
    assert_memory_equal(value(g, "b")->init->data, "\001\000\001", 3);
    HgTensor *s = value(g, "s")->init;
    assert_int_equal(s->storage, HG_STORAGE_STRINGS);
    assert_int_equal(g_bytes_get_size(s->strings->pdata[1]), 3);
    assert_memory_equal(g_bytes_get_data(s->strings->pdata[1], NULL), "\xff\0z", 3);
    HgTensor *i4 = value(g, "i4")->init;
    assert_int_equal(i4->nbytes, 2);
    assert_int_equal(((const guint8 *)i4->data)[0], 0x78); /* low nibble first: -8 = 0x8, 7 */
    assert_int_equal(((const guint8 *)i4->data)[1], 0x0f);
    const float *c = value(g, "c")->init->data;
    assert_true(c[0] == 1.5f && c[1] == -2.0f);
    const float *f = value(g, "f")->init->data;
    assert_int_equal(f32_bits(f[0]), 0x7fc00001u);
    assert_true(f[1] == FLT_MAX);
    assert_int_equal(f32_bits(f[2]), 1u);
    const guint8 *f8 = value(g, "f8")->init->data;
    assert_int_equal(f8[0], 0x7e);
    assert_int_equal(f8[1], 0xb0);

    /* Shortest forms that read back exactly. */
    g_autofree char *text = dump_all(m);
    assert_non_null(strstr(text, "float16[4] h = {0.1, 65504.0, -inf, nan}"));
    assert_non_null(strstr(text, "bfloat16[2] bf = {0.1, -nan}"));
    assert_non_null(strstr(text, "double[2] d = {0.1, 1e-300}"));
    assert_non_null(strstr(text, "string[2] s = {\"a\", \"\\xff\\x00z\"}"));
    assert_non_null(strstr(text, "int4[3] i4 = {-8, 7, -1}"));
    assert_non_null(strstr(text, "float[3] f = {nan0x7fc00001, 3.4028235e+38, 1e-45}"));
    assert_non_null(strstr(text, "float8e4m3fn[2] f8 = {448.0, -0.5}"));
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

/* Every float16 value, and a sweep of floats, read back bit for bit from their shortest form. */
static void
test_float_round_trip_exhaustive(void **state)
{
    (void)state;
    g_autoptr(GString) text = g_string_new("g (float X) => (float Y) <\n  float16[65536] h = {");
    for (guint i = 0; i < 65536; i++)
        g_string_append_printf(text, "%s%s", i ? ", " : "", "0");
    g_string_append(text, "}\n> { Y = Identity(X) }\n");
    g_autoptr(HgModel) m = parse_ok(text->str);
    HgTensor *h = value(m->graph, "h")->init;
    guint16 *data = hg_tensor_data_mut(h);
    for (guint i = 0; i < 65536; i++)
        data[i] = (guint16)i;
    HgTensor *f = hg_tensor_new("f", HG_DTYPE_FLOAT, 1, (gint64[]){4096});
    float *fd = hg_tensor_data_mut(f);
    guint32 bits = 0x00000001u;
    for (guint i = 0; i < 4096; i++, bits += 0x000fe3a1u)
        memcpy(&fd[i], &bits, 4);
    hg_graph_add_initializer(m->graph, hg_graph_new_value(m->graph, "f", NULL), f);
    assert_verified(m->graph);
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

static void
test_annotations_and_comments(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(
        "# a comment before the model\n"
        "g (\n"
        "  float[2] X,  #@ doc_string: \"the input\"\n"
        "  O  #@ type: optional(float[2])\n"
        ") => (float[2] Y) {  # comments end the line\n"
        "  #@ doc_string: \"graph doc\"\n"
        "  Y = Relu(X)  #@ name: \"relu\"\n"
        "}\n");
    HgGraph *g = m->graph;
    assert_string_equal(g->doc_string, "graph doc");
    const HgValueDecl *x = g->inputs->pdata[0];
    assert_string_equal(x->doc_string, "the input");
    const HgValueDecl *o = g->inputs->pdata[1];
    assert_int_equal(o->type->kind, HG_TYPE_OPTIONAL);
    assert_string_equal(node_at(g, 0)->name, "relu");
    g_autofree char *text = dump_all(m);
    assert_string_equal(text, "g (\n"
                              "  float[2] X,  #@ doc_string: \"the input\"\n"
                              "  O  #@ type: optional(float[2])\n"
                              ") => (float[2] Y) {\n"
                              "  #@ doc_string: \"graph doc\"\n"
                              "  Y = Relu(X)  #@ name: \"relu\"\n"
                              "}\n");
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

/* ---------------------------------------------------------------- (c) errors */

typedef struct {
    const char *text;
    int code;
    const char *message; /* the start of a parse error's message; a part of another's */
} BadCase;

static void
test_errors(void **state)
{
    (void)state;
    static const BadCase cases[] = {
        {"", HG_ERROR_PARSE, "line 1, column 1: expected a graph, found the end of the text"},
        {"g (float X) => (float Y) {\n  Y = Relu(Z)\n}\n", HG_ERROR_PARSE,
         "line 2, column 12: 'Z' is not defined"},
        {"g (float X) => (float Y) {\n  Y = Relu(X\n}\n", HG_ERROR_PARSE,
         "line 3, column 1: expected ',' or ')' after the node's inputs, found '}'"},
        {"g (float X) => (float Y) {\n  Y = Relu(0)\n}\n", HG_ERROR_PARSE,
         "line 2, column 12: expected an input name, found '0' (quote names"},
        {"g (float X) => (float Y) {\n  Y = Relu(X)\n  Y = Neg(X)\n}\n", HG_ERROR_PARSE,
         "line 3, column 3: 'Y' is defined twice (also by another node)"},
        {"g (float X) => (float Y) {\n  Y = F <s = \"a\\q\"> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 16: unknown escape '\\q'"},
        {"g (float X) => (float Y) {\n  Y = F <s = \"abc> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 14: the string has no closing"},
        {"g (float X) => (float Y) <float[3] W = {1.0, 2.0}> {\n  Y = Relu(X)\n}\n", HG_ERROR_PARSE,
         "line 1, column 40: W has 3 values, 2 given"},
        {"g (float X) => (float Y) <int8[1] W = {200}> {\n  Y = Relu(X)\n}\n", HG_ERROR_PARSE,
         "line 1, column 40: 200 is out of range for int8"},
        {"g (float X) => (float Y) {\n  Y = ReduceSum <axes = []> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 18: an empty list needs a type"},
        {"g (float X) => (float Y) {\n  Y = Relu(X)  #@ colour: \"red\"\n}\n", HG_ERROR_PARSE,
         "line 2, column 19: unknown annotation 'colour'"},
        {"g (float X) => (float Y) {\n  Y = Relu(X)  #@ type: float\n}\n", HG_ERROR_PARSE,
         "line 2, column 19: annotation 'type' does not apply here"},
        {"g (float X) => (float Y) {\n  Y = F <f = 1e39> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 14: 1e39 is out of range for float"},
        {"g (float X) => (float Y) {\n  Y = F <n: int = 1.5> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 19: attribute 'n' is declared int but this value is float"},
        {"g (float X) => (float Y) {\n  Y = Relu(X) $\n}\n", HG_ERROR_PARSE,
         "line 2, column 15: unexpected character '$'"},
        {"<ir_version: 8, colour: \"red\">\ng (float X) => (float Y) { Y = Relu(X) }\n", HG_ERROR_PARSE,
         "line 1, column 17: unknown model key 'colour'"},
        {"g (float X) => (float Y) { Y = Relu(X) }\ntrailing", HG_ERROR_PARSE,
         "line 2, column 1: expected the end of the text"},
        /* Columns count characters, not bytes. */
        {"g (float X) => (float Y) {\n  Y = F <s = \"\xc3\xa9\xc3\xa9\", t = ?> (X)\n}\n", HG_ERROR_PARSE,
         "line 2, column 24: expected an attribute value, found '?'"},
        {"g (float X) => (float Y) {\n  Y = Relu(W)\n  W = Neg(Y)\n}\n", HG_ERROR_INVALID, "cycle"},
        {"g (float X) => (float Z) {\n  Y = Relu(X)\n}\n", HG_ERROR_PARSE,
         "line 1, column 23: graph output 'Z' is not defined"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *error = NULL;
        g_autoptr(HgModel) m = hg_model_parse_text(cases[i].text, strlen(cases[i].text), &error);
        /* Parse errors start with their position; others (the IR's checks) just say what. */
        gboolean match = error && (cases[i].code == HG_ERROR_PARSE
                                       ? g_str_has_prefix(error->message, cases[i].message)
                                       : strstr(error->message, cases[i].message) != NULL);
        if (m || !error || error->code != cases[i].code || !match) {
            print_error("case %u: expected '%s', got %s\n", i, cases[i].message,
                        error ? error->message : "success");
            fail();
        }
        g_clear_error(&error);
    }
}

/* Input that is not NUL-terminated where len says it ends, with NUL bytes inside, cut anywhere. */
static void
test_truncated_input_never_crashes(void **state)
{
    (void)state;
    const char *text =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float[2] X, bool c) => (float[2] Y) <float[2] W = {1.0, 2.0}> {\n"
        "  T = Mul <a = [1, 2], s = \"x\"> (X, W)  #@ name: \"mul\"\n"
        "  Y = If (c) <then_branch = t () => (float[2] a) { a = Neg(T) },\n"
        "              else_branch = e () => (float[2] b) { b = Abs(T) }>\n"
        "}\n";
    gsize len = strlen(text);
    guint parsed = 0;
    for (gsize cut = 0; cut <= len; cut++) {
        /* A heap copy of exactly cut bytes, so ASan catches a read past len. */
        g_autofree char *copy = g_memdup2(text, cut ? cut : 1);
        GError *error = NULL;
        g_autoptr(HgModel) m = hg_model_parse_text(copy, cut, &error);
        if (m) {
            assert_verified(m->graph);
            parsed++;
        } else {
            assert_non_null(error);
            assert_true(g_str_has_prefix(error->message, "line "));
            g_error_free(error);
        }
    }
    /* Only the whole text, or the text without some of its final newline/brace tail, parses. */
    assert_true(parsed >= 1 && parsed <= 2);

    /* Nesting deep enough to exhaust a stack is refused, in graphs and in types. */
    g_autoptr(GString) deep = g_string_new(NULL);
    for (int i = 0; i < 100000; i++)
        g_string_append(deep, "g () => (float Y) { Y = If (c) <b = ");
    g_string_append(deep, "g (float X) => (float Y) { Y = Identity(X) }");
    GError *deep_error = NULL;
    g_autoptr(HgModel) dm = hg_model_parse_text(deep->str, deep->len, &deep_error);
    assert_null(dm);
    assert_hg_error(deep_error, HG_ERROR_PARSE, "nested more than 64 levels deep");
    g_clear_error(&deep_error);
    g_autoptr(GString) deep_type = g_string_new("g (");
    for (int i = 0; i < 100000; i++)
        g_string_append(deep_type, "seq(");
    g_autoptr(HgModel) tm = hg_model_parse_text(deep_type->str, deep_type->len, &deep_error);
    assert_null(tm);
    assert_hg_error(deep_error, HG_ERROR_PARSE, "line 1, column 256: nested more than 64 levels deep");
    g_clear_error(&deep_error);

    GError *error = NULL;
    static const char nul[] = "g (float X) => (float Y) {\0 Y = Relu(X) }";
    g_autoptr(HgModel) m = hg_model_parse_text(nul, sizeof nul - 1, &error);
    assert_null(m);
    assert_hg_error(error, HG_ERROR_PARSE, "line 1, column 27: unexpected byte 0x00");
    g_clear_error(&error);
}

/* ---------------------------------------------------------------- (d) summaries */

static void
test_large_initializer_summarised(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = hg_model_new();
    hg_model_set_opset(m, "", 17);
    HgGraph *g = m->graph = hg_graph_new(m, NULL);
    g->name = g_strdup("g");
    HgValue *x = hg_graph_new_value(g, "X", NULL);
    HgType *tx = hg_type_new_tensor(HG_DTYPE_FLOAT, 2, (gint64[]){10, 10});
    hg_graph_add_input(g, x, tx);
    HgTensor *big = hg_tensor_new("big", HG_DTYPE_FLOAT, 2, (gint64[]){10, 10});
    float *bd = hg_tensor_data_mut(big);
    for (int i = 0; i < 100; i++)
        bd[i] = (float)i - 50.0f; /* -50 .. 49, mean -0.5 */
    HgValue *vb = hg_graph_new_value(g, "big", NULL);
    hg_graph_add_initializer(g, vb, big);
    HgTensor *small = hg_tensor_new("small", HG_DTYPE_FLOAT, 1, (gint64[]){3});
    float *sd = hg_tensor_data_mut(small);
    sd[0] = 1.0f, sd[1] = 0.25f, sd[2] = -3.0f;
    HgValue *vs = hg_graph_new_value(g, "small", NULL);
    hg_graph_add_initializer(g, vs, small);
    HgValue *t = hg_graph_new_value(g, "T", NULL);
    HgValue *y = hg_graph_new_value(g, "Y", NULL);
    hg_graph_add_node(g, "Add", NULL, NULL, 2, (HgValue *[]){x, vb}, 1, &t);
    HgNode *c = hg_graph_add_node(g, "Constant", NULL, "const", 0, NULL, 1, (HgValue *[]){
        hg_graph_new_value(g, "C", NULL)});
    HgAttr *a = hg_attr_new("value", HG_ATTR_TENSOR);
    a->t = hg_tensor_new(NULL, HG_DTYPE_INT64, 1, (gint64[]){65});
    hg_node_add_attr(c, a);
    hg_graph_add_node(g, "Mul", NULL, NULL, 2, (HgValue *[]){t, vs}, 1, &y);
    hg_graph_add_output(g, y, tx);
    hg_type_free(tx);
    assert_verified(g);

    const char *expected =
        "<\n"
        "  opset_import: [\"\" : 17]\n"
        ">\n"
        "g (float[10,10] X) => (float[10,10] Y)\n"
        "<\n"
        "  # float[10,10] big: 100 values, min -50, max 49, mean -0.5\n"
        "  float[3] small = {1.0, 0.25, -3.0}\n"
        ">\n"
        "{\n"
        "  T = Add(X, big)\n"
        "  # value: int64[65] not shown: 65 values, min 0, max 0, mean 0\n"
        "  C = Constant <value = int64[65] {}> ()  #@ name: \"const\"\n"
        "  Y = Mul(T, small)\n"
        "}\n";
    g_autofree char *text = hg_model_to_text(m, NULL);
    assert_string_equal(text, expected);
    /* The same again: the text is the contract, so it must not vary. */
    g_autofree char *text2 = hg_model_to_text(m, &(HgTextOptions){0});
    assert_string_equal(text, text2);

    /* A summary does not read back: the constant lacks its values (and 'big' is missing). */
    GError *error = NULL;
    g_autoptr(HgModel) back = hg_model_parse_text(text, strlen(text), &error);
    assert_null(back);
    assert_hg_error(error, HG_ERROR_PARSE, "line 12, column 35: the constant has 65 values, 0 given");
    g_clear_error(&error);

    /* A higher limit prints everything, and that reads back. */
    HgTextOptions all = {100};
    g_autofree char *full = hg_model_to_text(m, &all);
    assert_non_null(strstr(full, "  float[10,10] big = {-50.0, -49.0, "));
    assert_non_null(strstr(full, "C = Constant <value = int64[65] {0, 0, "));
    g_autofree char *why = round_trip(m);
    assert_null(why);
}

/* ---------------------------------------------------------------- element types (elem.c) */

static const int f8_types[] = {HG_DTYPE_FLOAT8E4M3FN, HG_DTYPE_FLOAT8E4M3FNUZ, HG_DTYPE_FLOAT8E5M2,
                               HG_DTYPE_FLOAT8E5M2FNUZ};

/* Known codes, the range, and every code back to itself through its value. */
static void
test_f8_codes(void **state)
{
    (void)state;
    assert_null(hg_f8_format(HG_DTYPE_FLOAT));
    assert_null(hg_f8_format(HG_DTYPE_FLOAT16));
    const HgF8Format *e4m3 = hg_f8_format(HG_DTYPE_FLOAT8E4M3FN);
    const HgF8Format *e4m3z = hg_f8_format(HG_DTYPE_FLOAT8E4M3FNUZ);
    const HgF8Format *e5m2 = hg_f8_format(HG_DTYPE_FLOAT8E5M2);
    const HgF8Format *e5m2z = hg_f8_format(HG_DTYPE_FLOAT8E5M2FNUZ);
    assert_true(hg_f8_max(e4m3) == 448.0f);
    assert_true(hg_f8_max(e4m3z) == 240.0f);
    assert_true(hg_f8_max(e5m2) == 57344.0f);
    assert_true(hg_f8_max(e5m2z) == 57344.0f);
    assert_true(hg_f8_to_float(0x38, e4m3) == 1.0f);
    assert_true(hg_f8_to_float(0xb0, e4m3) == -0.5f);
    assert_true(hg_f8_to_float(0x01, e4m3) == 0x1p-9f);  /* the smallest subnormal */
    assert_true(hg_f8_to_float(0x01, e4m3z) == 0x1p-10f);
    assert_true(hg_f8_to_float(0x7c, e5m2) == INFINITY);
    assert_true(hg_f8_to_float(0xfc, e5m2) == -INFINITY);
    assert_true(isnan(hg_f8_to_float(0x7f, e4m3)) && signbit(hg_f8_to_float(0xff, e4m3)));
    assert_true(isnan(hg_f8_to_float(0x80, e4m3z)) && isnan(hg_f8_to_float(0x80, e5m2z)));
    assert_true(signbit(hg_f8_to_float(0x80, e4m3)) && hg_f8_to_float(0x80, e4m3) == 0);

    for (guint k = 0; k < G_N_ELEMENTS(f8_types); k++) {
        int dtype = f8_types[k];
        const HgF8Format *fmt = hg_f8_format(dtype);
        guint nans = 0;
        for (guint c = 0; c < 256; c++) {
            float v = hg_f8_to_float((guint8)c, fmt);
            assert_int_equal(hg_bits_are_nan(c, dtype), isnan(v));
            if (isnan(v)) {
                nans++;
                /* Every NaN reads back as the canonical NaN of its sign. */
                assert_int_equal(hg_float_to_f8(v, fmt), hg_canonical_nan(dtype, signbit(v) != 0));
            } else {
                assert_int_equal(hg_float_to_f8(v, fmt), c);
            }
        }
        assert_int_equal(nans, fmt->fnuz ? 1 : fmt->ieee ? 6 : 2);
        assert_true(hg_bits_are_nan(hg_canonical_nan(dtype, FALSE), dtype));
        assert_true(hg_bits_are_nan(hg_canonical_nan(dtype, TRUE), dtype));
    }
}

/* Rounding to nearest, ties to the even code, checked at and beside every midpoint; saturation,
 * signed zeros and infinities. */
static void
test_f8_rounding(void **state)
{
    (void)state;
    for (guint k = 0; k < G_N_ELEMENTS(f8_types); k++) {
        const HgF8Format *fmt = hg_f8_format(f8_types[k]);
        for (guint sign = 0; sign < 2; sign++) {
            for (guint c = 0; c < 0x7f; c++) {
                guint8 lo = (guint8)(c | (sign << 7)), hi = (guint8)(lo + 1);
                float a = hg_f8_to_float(lo, fmt), b = hg_f8_to_float(hi, fmt);
                if (!isfinite(a) || !isfinite(b) || (fmt->fnuz && sign && c == 0))
                    continue;
                float mid = (a + b) / 2; /* exact: these values have a few significant bits */
                assert_int_equal(hg_float_to_f8(mid, fmt), lo & 1 ? hi : lo);
                assert_int_equal(hg_float_to_f8(nextafterf(mid, a), fmt), lo);
                assert_int_equal(hg_float_to_f8(nextafterf(mid, b), fmt), hi);
            }
        }
        /* Just past the range: the largest finite code of the sign. */
        float max = hg_f8_max(fmt);
        guint8 top = hg_float_to_f8(max, fmt);
        assert_true(hg_f8_to_float(top, fmt) == max && !(top & 0x80));
        assert_int_equal(hg_float_to_f8(max * 1.5f, fmt), top);
        assert_int_equal(hg_float_to_f8(-max * 1e4f, fmt), top | 0x80);
        /* Tiny values round to a zero of their sign, except where there is no -0. */
        assert_int_equal(hg_float_to_f8(-1e-30f, fmt), fmt->fnuz ? 0x00 : 0x80);
        assert_int_equal(hg_float_to_f8(-0.0f, fmt), fmt->fnuz ? 0x00 : 0x80);
        /* Far past the range too (3e38 once compared equal distances to every code). Infinities:
         * E5M2's own; formats without one saturate like far values. */
        assert_int_equal(hg_float_to_f8(3e38f, fmt), top);
        assert_int_equal(hg_float_to_f8(-3e38f, fmt), top | 0x80);
        assert_int_equal(hg_float_to_f8(INFINITY, fmt), fmt->ieee ? 0x7c : top);
        assert_int_equal(hg_float_to_f8(-INFINITY, fmt), fmt->ieee ? 0xfc : top | 0x80);
    }
}

/* Canonical NaNs are the quiet NaNs with no payload; infinities and numbers are not NaNs. */
static void
test_canonical_nan(void **state)
{
    (void)state;
    assert_int_equal(hg_canonical_nan(HG_DTYPE_FLOAT, FALSE), 0x7fc00000u);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_COMPLEX64, TRUE), 0xffc00000u);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_DOUBLE, TRUE), 0xfff8000000000000ull);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_FLOAT16, FALSE), 0x7e00u);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_BFLOAT16, TRUE), 0xffc0u);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_FLOAT8E4M3FN, TRUE), 0xffu);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_FLOAT8E5M2, FALSE), 0x7eu);
    assert_int_equal(hg_canonical_nan(HG_DTYPE_FLOAT8E5M2FNUZ, TRUE), 0x80u);
    /* They are what the rest of the library makes of a quiet NaN. */
    assert_int_equal(hg_float_to_half(NAN), hg_canonical_nan(HG_DTYPE_FLOAT16, FALSE));
    assert_int_equal(hg_float_to_bf16(-NAN), hg_canonical_nan(HG_DTYPE_BFLOAT16, TRUE));
    assert_int_equal(hg_float_bits(NAN), hg_canonical_nan(HG_DTYPE_FLOAT, FALSE));

    const struct {
        int dtype;
        guint64 inf, nan_min;
    } edges[] = {
        {HG_DTYPE_DOUBLE, 0x7ff0000000000000ull, 0x7ff0000000000001ull},
        {HG_DTYPE_COMPLEX128, 0x7ff0000000000000ull, 0x7ff0000000000001ull},
        {HG_DTYPE_FLOAT, 0x7f800000u, 0x7f800001u},
        {HG_DTYPE_COMPLEX64, 0x7f800000u, 0x7f800001u},
        {HG_DTYPE_FLOAT16, 0x7c00u, 0x7c01u},
        {HG_DTYPE_BFLOAT16, 0x7f80u, 0x7f81u},
        {HG_DTYPE_FLOAT8E5M2, 0x7cu, 0x7du},
    };
    for (guint i = 0; i < G_N_ELEMENTS(edges); i++) {
        assert_false(hg_bits_are_nan(edges[i].inf, edges[i].dtype));
        assert_false(hg_bits_are_nan(edges[i].inf - 1, edges[i].dtype));
        assert_true(hg_bits_are_nan(edges[i].nan_min, edges[i].dtype));
        assert_false(hg_bits_are_nan(0, edges[i].dtype));
    }
    assert_true(hg_bits_are_nan(0xffffu, HG_DTYPE_FLOAT16));
    assert_false(hg_bits_are_nan(0x7bffu, HG_DTYPE_FLOAT16)); /* 65504 */
    assert_true(hg_bits_are_nan(0x7f80u, HG_DTYPE_FLOAT16)); /* bfloat16's inf */
}

HG_TEST_MAIN("text",
             cmocka_unit_test(test_header),
             cmocka_unit_test(test_signature),
             cmocka_unit_test(test_initializers_and_value_info),
             cmocka_unit_test(test_nodes),
             cmocka_unit_test(test_attributes),
             cmocka_unit_test(test_subgraphs),
             cmocka_unit_test(test_tensor_types),
             cmocka_unit_test(test_float_round_trip_exhaustive),
             cmocka_unit_test(test_annotations_and_comments),
             cmocka_unit_test(test_errors),
             cmocka_unit_test(test_truncated_input_never_crashes),
             cmocka_unit_test(test_large_initializer_summarised),
             cmocka_unit_test(test_node_models_round_trip),
             cmocka_unit_test(test_f8_codes),
             cmocka_unit_test(test_f8_rounding),
             cmocka_unit_test(test_canonical_nan))
