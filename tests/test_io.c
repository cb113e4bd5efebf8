/* Loading and saving: lossless round trips, external data, atomic writes, and every kind of bad input
 * the loader must refuse with a clear message. Models are built here with protobuf-c directly, so the
 * test controls the exact bytes. */
#include "testutil.h"

#include "onnx.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- building protobuf models */

/* Everything allocated for one protobuf model, freed together. */
typedef struct {
    GPtrArray *allocs;
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
} PbModel;

/* p (g_free'd by pb_model_clear()). */
static gpointer
pb_keep(PbModel *pm, gpointer p)
{
    g_ptr_array_add(pm->allocs, p);
    return p;
}

static gpointer
pb_alloc(PbModel *pm, gsize n)
{
    return pb_keep(pm, g_malloc0(n));
}

static char *
pb_str(PbModel *pm, const char *s)
{
    return pb_keep(pm, g_strdup(s));
}

static void
pb_model_init(PbModel *pm)
{
    pm->allocs = g_ptr_array_new_with_free_func(g_free);
    onnx__model_proto__init(&pm->model);
    onnx__graph_proto__init(&pm->graph);
    onnx__operator_set_id_proto__init(&pm->opset);
    pm->opset.domain = pb_str(pm, "");
    pm->opset.has_version = TRUE;
    pm->opset.version = 17;
    pm->opsets[0] = &pm->opset;
    pm->model.has_ir_version = TRUE;
    pm->model.ir_version = 8;
    pm->model.n_opset_import = 1;
    pm->model.opset_import = pm->opsets;
    pm->model.producer_name = pb_str(pm, "halfguard-tests");
    pm->model.graph = &pm->graph;
    pm->graph.name = pb_str(pm, "g");
    pm->graph.node = pb_alloc(pm, sizeof(gpointer) * 16);
    pm->graph.input = pb_alloc(pm, sizeof(gpointer) * 8);
    pm->graph.output = pb_alloc(pm, sizeof(gpointer) * 8);
    pm->graph.initializer = pb_alloc(pm, sizeof(gpointer) * 8);
    pm->graph.value_info = pb_alloc(pm, sizeof(gpointer) * 8);
}

static Onnx__ValueInfoProto *
pb_value_info(PbModel *pm, const char *name, int elem, guint rank, const gint64 *dims)
{
    Onnx__ValueInfoProto *vi = pb_alloc(pm, sizeof(*vi));
    onnx__value_info_proto__init(vi);
    vi->name = pb_str(pm, name);
    Onnx__TypeProto *tp = pb_alloc(pm, sizeof(*tp));
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = pb_alloc(pm, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = TRUE;
    tt->elem_type = elem;
    Onnx__TensorShapeProto *sh = pb_alloc(pm, sizeof(*sh));
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = rank;
    sh->dim = pb_alloc(pm, sizeof(gpointer) * (rank + 1));
    for (guint i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = pb_alloc(pm, sizeof(*d));
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = pb_str(pm, "N");
        }
        sh->dim[i] = d;
    }
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

static void
pb_input(PbModel *pm, const char *name, guint rank, const gint64 *dims)
{
    pm->graph.input[pm->graph.n_input++] = pb_value_info(pm, name, 1, rank, dims);
}

static void
pb_output(PbModel *pm, const char *name, guint rank, const gint64 *dims)
{
    pm->graph.output[pm->graph.n_output++] = pb_value_info(pm, name, 1, rank, dims);
}

/* A node with inputs/outputs given as NULL-terminated name lists. */
static Onnx__NodeProto *
pb_node(PbModel *pm, const char *op, const char *name, const char *const *ins,
        const char *const *outs)
{
    Onnx__NodeProto *n = pb_alloc(pm, sizeof(*n));
    onnx__node_proto__init(n);
    n->op_type = pb_str(pm, op);
    n->name = name ? pb_str(pm, name) : NULL;
    n->input = pb_alloc(pm, sizeof(char *) * 8);
    n->output = pb_alloc(pm, sizeof(char *) * 8);
    for (; ins && ins[n->n_input]; n->n_input++)
        n->input[n->n_input] = pb_str(pm, ins[n->n_input]);
    for (; outs && outs[n->n_output]; n->n_output++)
        n->output[n->n_output] = pb_str(pm, outs[n->n_output]);
    n->attribute = pb_alloc(pm, sizeof(gpointer) * 8);
    pm->graph.node[pm->graph.n_node++] = n;
    return n;
}

static Onnx__TensorProto *
pb_tensor(PbModel *pm, const char *name, int dtype, guint rank, const gint64 *dims)
{
    Onnx__TensorProto *t = pb_alloc(pm, sizeof(*t));
    onnx__tensor_proto__init(t);
    t->name = name ? pb_str(pm, name) : NULL;
    t->has_data_type = TRUE;
    t->data_type = dtype;
    t->n_dims = rank;
    t->dims = pb_alloc(pm, sizeof(int64_t) * (rank + 1));
    if (rank)
        memcpy(t->dims, dims, sizeof(int64_t) * rank);
    return t;
}

static Onnx__TensorProto *
pb_initializer_raw(PbModel *pm, const char *name, guint rank, const gint64 *dims, const float *data,
                   gsize n)
{
    Onnx__TensorProto *t = pb_tensor(pm, name, 1, rank, dims);
    t->has_raw_data = TRUE;
    t->raw_data.len = n * sizeof(float);
    t->raw_data.data = pb_alloc(pm, t->raw_data.len + 1);
    memcpy(t->raw_data.data, data, t->raw_data.len);
    pm->graph.initializer[pm->graph.n_initializer++] = t;
    return t;
}

static GBytes *
pb_pack(PbModel *pm)
{
    gsize n = onnx__model_proto__get_packed_size(&pm->model);
    guint8 *buf = g_malloc(n);
    onnx__model_proto__pack(&pm->model, buf);
    return g_bytes_new_take(buf, n);
}

static void
pb_model_clear(PbModel *pm)
{
    g_ptr_array_unref(pm->allocs);
}

/* A valid model: y = Relu(x) + w; z = Identity(y). */
static void
pb_basic(PbModel *pm)
{
    static const gint64 dims[] = {2, 2};
    static const float w[] = {1, -2, 3.5f, 0};
    pb_model_init(pm);
    pb_input(pm, "x", 2, dims);
    pb_initializer_raw(pm, "w", 2, dims, w, 4);
    pb_node(pm, "Relu", "relu", (const char *[]){"x", NULL}, (const char *[]){"r", NULL});
    pb_node(pm, "Add", "add", (const char *[]){"r", "w", NULL}, (const char *[]){"y", NULL});
    pb_node(pm, "Identity", NULL, (const char *[]){"y", NULL}, (const char *[]){"z", NULL});
    pb_output(pm, "z", 2, dims);
}

/* Load bytes, expect failure with code and a message containing needle. */
static void
expect_load_error(GBytes *bytes, int code, const char *needle)
{
    GError *error = NULL;
    gsize len;
    const void *data = g_bytes_get_data(bytes, &len);
    HgModel *m = hg_model_load_bytes(data, len, NULL, &error);
    assert_null(m);
    assert_hg_error(error, code, needle);
    g_error_free(error);
}

static HgModel *
load_ok(GBytes *bytes)
{
    GError *error = NULL;
    gsize len;
    const void *data = g_bytes_get_data(bytes, &len);
    HgModel *m = hg_model_load_bytes(data, len, NULL, &error);
    if (!m)
        fail_msg("load failed: %s", error->message);
    assert_verified(m->graph);
    return m;
}

static void
assert_resaves_identical(HgModel *m, GBytes *want)
{
    GError *error = NULL;
    gsize len;
    g_autofree guint8 *out = hg_model_save_bytes(m, &len, &error);
    assert_non_null(out);
    gsize wlen;
    const void *w = g_bytes_get_data(want, &wlen);
    assert_int_equal(len, wlen);
    assert_memory_equal(out, w, len);
}

/* ---------------------------------------------------------------- lossless */

static void
test_basic_round_trip(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    HgModel *m = load_ok(bytes);
    assert_int_equal(m->graph->nodes->len, 3);
    HgValue *w = hg_graph_lookup(m->graph, "w");
    assert_non_null(w->init);
    assert_int_equal(w->init->storage, HG_STORAGE_RAW);
    assert_int_equal(w->init->nbytes, 16);
    assert_true(((const float *)w->init->data)[2] == 3.5f);
    HgNode *id = m->graph->nodes->pdata[2];
    assert_null(id->name); /* absent, not "" */
    assert_resaves_identical(m, bytes);
    hg_model_free(m);
    pb_model_clear(&pm);
}

static void
test_everything_rides_along(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    /* Unknown fields at three levels, doc strings, metadata, value_info, a typed-field tensor, a
     * function and a training_info: all must come back as they were. */
    static const guint8 unk_data[] = {0x2a};
    ProtobufCMessageUnknownField unk = {.tag = 99, .wire_type = PROTOBUF_C_WIRE_TYPE_VARINT,
                                        .len = 1, .data = (uint8_t *)unk_data};
    pm.graph.node[0]->base.n_unknown_fields = 1;
    pm.graph.node[0]->base.unknown_fields = &unk;
    pm.model.base.n_unknown_fields = 1;
    pm.model.base.unknown_fields = &unk;
    pm.graph.doc_string = pb_str(&pm, "graph doc");
    pm.graph.node[1]->doc_string = pb_str(&pm, "node doc");
    Onnx__StringStringEntryProto meta = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    meta.key = pb_str(&pm, "author");
    meta.value = pb_str(&pm, "tests");
    Onnx__StringStringEntryProto *metas[] = {&meta};
    pm.model.n_metadata_props = 1;
    pm.model.metadata_props = metas;
    static const gint64 dims[] = {2, 2};
    pm.graph.value_info[pm.graph.n_value_info++] = pb_value_info(&pm, "r", 1, 2, dims);
    static const gint64 d3[] = {3};
    Onnx__TensorProto *typed = pb_tensor(&pm, "k", 7 /* int64 */, 1, d3);
    static int64_t kdata[] = {5, -6, 7};
    typed->n_int64_data = 3;
    typed->int64_data = kdata;
    pm.graph.initializer[pm.graph.n_initializer++] = typed;
    Onnx__FunctionProto fn = ONNX__FUNCTION_PROTO__INIT;
    fn.name = pb_str(&pm, "MyFn");
    fn.domain = pb_str(&pm, "local");
    Onnx__FunctionProto *fns[] = {&fn};
    pm.model.n_functions = 1;
    pm.model.functions = fns;
    Onnx__TrainingInfoProto ti = ONNX__TRAINING_INFO_PROTO__INIT;
    ti.n_update_binding = 1;
    ti.update_binding = metas;
    Onnx__TrainingInfoProto *tis[] = {&ti};
    pm.model.n_training_info = 1;
    pm.model.training_info = tis;
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    HgModel *m = load_ok(bytes);
    HgNode *relu = m->graph->nodes->pdata[0];
    assert_non_null(relu->unknown);
    assert_int_equal(relu->unknown->fields[0].tag, 99);
    HgValue *k = hg_graph_lookup(m->graph, "k");
    assert_int_equal(k->init->storage, HG_STORAGE_TYPED);
    assert_int_equal(((const gint64 *)k->init->data)[1], -6);
    assert_int_equal(m->functions->len, 1);
    assert_resaves_identical(m, bytes);
    hg_model_free(m);
    pb_model_clear(&pm);
}

static void
test_packed_scalar_style_detected(void **state)
{
    (void)state;
    /* PyTorch 0.2 packed attribute ints and tensor dims; ONNX declares them unpacked. */
    g_autofree char *path =
        test_data("HG_CORPUS", "microsoft_onnxruntime/winml/test/collateral/models/starry-night-fp16.onnx");
    GError *error = NULL;
    HgModel *m = hg_model_load(path, &error);
    assert_non_null(m);
    assert_int_equal(m->encoding, HG_ENCODING_PACKED_SCALARS);
    g_autofree char *orig = NULL;
    gsize olen;
    assert_true(g_file_get_contents(path, &orig, &olen, NULL));
    g_autoptr(GBytes) want = g_bytes_new_take(g_steal_pointer(&orig), olen);
    assert_resaves_identical(m, want);
    hg_model_free(m);
}

static void
test_duplicate_constants_later_wins(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    /* Two Constants define "c"; the later one (value 2) must be the one Add reads. */
    for (int which = 1; which <= 2; which++) {
        Onnx__NodeProto *n =
            pb_node(&pm, "Constant", which == 1 ? "first" : "second", NULL, (const char *[]){"c", NULL});
        Onnx__AttributeProto *a = pb_alloc(&pm, sizeof(*a));
        onnx__attribute_proto__init(a);
        a->name = pb_str(&pm, "value");
        a->has_type = TRUE;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        a->t = pb_tensor(&pm, NULL, 1, 0, NULL);
        a->t->n_float_data = 1;
        a->t->float_data = pb_alloc(&pm, sizeof(float));
        a->t->float_data[0] = (float)which;
        n->attribute[n->n_attribute++] = a;
    }
    pb_node(&pm, "Add", "use_c", (const char *[]){"z", "c", NULL}, (const char *[]){"out", NULL});
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    HgModel *m = load_ok(bytes);
    HgValue *c = hg_graph_lookup(m->graph, "c");
    assert_string_equal(c->producer->name, "second");
    assert_int_equal(m->warnings->len, 1);
    assert_non_null(strstr(m->warnings->pdata[0], "'c' is defined by two Constant nodes"));
    assert_resaves_identical(m, bytes);
    hg_model_free(m);
    pb_model_clear(&pm);
}

static void
test_subgraph_reads_outer_scope(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    static const gint64 one[] = {1};
    pb_input(&pm, "cond", 1, one);
    /* then_branch: out_t = Identity(r), where r is defined by the main graph's Relu, which comes
     * AFTER the If in file order. */
    Onnx__GraphProto *branch = pb_alloc(&pm, sizeof(*branch));
    onnx__graph_proto__init(branch);
    branch->name = pb_str(&pm, "then");
    Onnx__NodeProto *inner = pb_alloc(&pm, sizeof(*inner));
    onnx__node_proto__init(inner);
    inner->op_type = pb_str(&pm, "Identity");
    inner->n_input = 1;
    inner->input = pb_alloc(&pm, sizeof(char *));
    inner->input[0] = pb_str(&pm, "r");
    inner->n_output = 1;
    inner->output = pb_alloc(&pm, sizeof(char *));
    inner->output[0] = pb_str(&pm, "out_t");
    branch->n_node = 1;
    branch->node = pb_alloc(&pm, sizeof(gpointer));
    branch->node[0] = inner;
    branch->n_output = 1;
    branch->output = pb_alloc(&pm, sizeof(gpointer));
    static const gint64 dims[] = {2, 2};
    branch->output[0] = pb_value_info(&pm, "out_t", 1, 2, dims);
    Onnx__NodeProto *nif = pb_node(&pm, "If", "if", (const char *[]){"cond", NULL},
                                   (const char *[]){"if_out", NULL});
    Onnx__AttributeProto *a = pb_alloc(&pm, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = pb_str(&pm, "then_branch");
    a->has_type = TRUE;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = branch;
    nif->attribute[nif->n_attribute++] = a;
    /* Move the If to the front of the node list. */
    Onnx__NodeProto *last = pm.graph.node[pm.graph.n_node - 1];
    memmove(&pm.graph.node[1], &pm.graph.node[0], sizeof(gpointer) * (pm.graph.n_node - 1));
    pm.graph.node[0] = last;
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    HgModel *m = load_ok(bytes);
    HgValue *r = hg_graph_lookup(m->graph, "r");
    HgNode *if_node = m->graph->nodes->pdata[0];
    HgAttr *then = hg_node_attr(if_node, "then_branch");
    assert_non_null(then->g);
    assert_int_equal(then->g->outer_refs->len, 1);
    assert_ptr_equal(then->g->outer_refs->pdata[0], r);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(m->graph, NULL);
    assert_string_equal(((HgNode *)order->pdata[0])->op_type, "Relu");
    assert_resaves_identical(m, bytes); /* the file's order is kept */
    hg_model_free(m);

    /* The same subgraph reading a name nobody defines is refused. */
    inner->input[0] = pb_str(&pm, "nowhere");
    g_autoptr(GBytes) bad = pb_pack(&pm);
    expect_load_error(bad, HG_ERROR_INVALID, "input 'nowhere' is used but never defined");
    pb_model_clear(&pm);
}

/* ---------------------------------------------------------------- bad input */

static void
test_garbage_and_truncation(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    gsize len;
    const guint8 *data = g_bytes_get_data(bytes, &len);
    /* Every truncation point either fails to parse or, where the cut falls between fields, loses
     * the graph or a definition: never a crash, never success with a partial graph. */
    guint refused = 0;
    for (gsize cut = 1; cut < len; cut++) {
        GError *error = NULL;
        HgModel *m = hg_model_load_bytes(data, cut, NULL, &error);
        if (m) {
            /* A cut between top-level fields before the graph leaves a valid prefix model? No: the
             * graph is field 7, written after the header fields, and all of it is needed. */
            assert_verified(m->graph);
            hg_model_free(m);
        } else {
            assert_int_equal(error->domain, HG_ERROR);
            refused++;
            g_error_free(error);
        }
    }
    assert_true(refused > len * 9 / 10);
    static const char garbage[] = "this is not a protobuf \xff\xff\xff\xff";
    g_autoptr(GBytes) g = g_bytes_new_static(garbage, sizeof garbage - 1);
    expect_load_error(g, HG_ERROR_PARSE, "not an ONNX model");
    g_autoptr(GBytes) empty = g_bytes_new_static("", 0);
    expect_load_error(empty, HG_ERROR_PARSE, "empty file");
    static const char lfs[] = "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1\n";
    g_autoptr(GBytes) l = g_bytes_new_static(lfs, sizeof lfs - 1);
    expect_load_error(l, HG_ERROR_LFS, "Git LFS pointer, not a model: run git lfs pull");
    pb_model_clear(&pm);
}

static void
test_field_number_zero(void **state)
{
    (void)state;
    /* Protobuf forbids field number 0. Written as a two-byte key (0x81 0x00: field 0, fixed64)
     * protobuf-c keeps it as an unknown field, and the model we would save from it would not load:
     * found by the fuzz target. */
    PbModel pm;
    pb_basic(&pm);
    g_autoptr(GBytes) good = pb_pack(&pm);
    GByteArray *bad = g_byte_array_new();
    g_byte_array_append(bad, g_bytes_get_data(good, NULL), (guint)g_bytes_get_size(good));
    static const guint8 field0[] = {0x81, 0x00, 1, 2, 3, 4, 5, 6, 7, 8};
    g_byte_array_append(bad, field0, sizeof field0);
    g_autoptr(GBytes) b = g_byte_array_free_to_bytes(bad);
    expect_load_error(b, HG_ERROR_PARSE, "a field numbered 0");
    pb_model_clear(&pm);
}

static void
test_undefined_value(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    pm.graph.node[1]->input[1] = pb_str(&pm, "missing");
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    expect_load_error(bytes, HG_ERROR_INVALID, "node 'add' (Add): input 'missing' is used but never defined");
    pm.graph.node[1]->input[1] = pb_str(&pm, "w");
    pm.graph.output[0]->name = pb_str(&pm, "nothing");
    g_autoptr(GBytes) b2 = pb_pack(&pm);
    expect_load_error(b2, HG_ERROR_INVALID, "graph output 'nothing' is never defined");
    pb_model_clear(&pm);
}

static void
test_cycle(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    /* relu reads y, which add computes from relu's output. */
    pm.graph.node[0]->input[0] = pb_str(&pm, "y");
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    expect_load_error(bytes, HG_ERROR_INVALID, "cycle");
    pb_model_clear(&pm);
}

static void
test_duplicate_definitions(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    pm.graph.node[2]->output[0] = pb_str(&pm, "r"); /* Identity also writes r */
    g_autoptr(GBytes) b1 = pb_pack(&pm);
    expect_load_error(b1, HG_ERROR_INVALID, "node '' (Identity): output 'r' is defined twice");
    pm.graph.node[2]->output[0] = pb_str(&pm, "w"); /* ... or the initializer's name */
    g_autoptr(GBytes) b2 = pb_pack(&pm);
    expect_load_error(b2, HG_ERROR_INVALID, "output 'w' is defined twice (also as an initializer)");
    pm.graph.node[2]->output[0] = pb_str(&pm, "z");
    static const gint64 dims[] = {2, 2};
    static const float w[] = {0, 0, 0, 0};
    pb_initializer_raw(&pm, "w", 2, dims, w, 4);
    g_autoptr(GBytes) b3 = pb_pack(&pm);
    expect_load_error(b3, HG_ERROR_INVALID, "initializer 'w' is defined twice");
    pm.graph.n_initializer--;
    pb_input(&pm, "x", 2, dims);
    g_autoptr(GBytes) b4 = pb_pack(&pm);
    expect_load_error(b4, HG_ERROR_INVALID, "graph input 'x' is listed twice");
    pb_model_clear(&pm);
}

static void
test_bad_tensor_sizes(void **state)
{
    (void)state;
    PbModel pm;
    pb_basic(&pm);
    Onnx__TensorProto *w = pm.graph.initializer[0];
    w->dims[1] = 3; /* 2x3 floats need 24 bytes, raw_data holds 16 */
    g_autoptr(GBytes) b1 = pb_pack(&pm);
    expect_load_error(b1, HG_ERROR_INVALID, "tensor 'w': raw_data holds 16 bytes but float [2,3] needs 24");
    w->dims[0] = G_MAXINT64 / 2;
    w->dims[1] = 1024;
    g_autoptr(GBytes) b2 = pb_pack(&pm);
    expect_load_error(b2, HG_ERROR_INVALID, "product overflows");
    w->dims[0] = -2;
    w->dims[1] = 2;
    g_autoptr(GBytes) b3 = pb_pack(&pm);
    expect_load_error(b3, HG_ERROR_INVALID, "negative or their product overflows");
    w->dims[0] = 2;
    w->has_raw_data = FALSE;
    static float fl[] = {1, 2, 3};
    w->n_float_data = 3;
    w->float_data = fl;
    g_autoptr(GBytes) b4 = pb_pack(&pm);
    expect_load_error(b4, HG_ERROR_INVALID, "tensor 'w': holds 3 values but float [2,2] needs 4");
    w->n_float_data = 0;
    g_autoptr(GBytes) b5 = pb_pack(&pm);
    expect_load_error(b5, HG_ERROR_INVALID, "tensor 'w': holds no data but float [2,2] needs 4 values");
    pb_model_clear(&pm);
}

/* ---------------------------------------------------------------- files */

static char *
make_tmpdir(void)
{
    GError *error = NULL;
    char *d = g_dir_make_tmp("hg-test-io-XXXXXX", &error);
    assert_non_null(d);
    return d;
}

static void
rm_rf(const char *dir)
{
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void
write_file(const char *path, const void *data, gsize len)
{
    GError *error = NULL;
    assert_true(g_file_set_contents(path, data, (gssize)len, &error));
}

static GBytes *
read_file(const char *path)
{
    char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &data, &len, NULL))
        return NULL;
    return g_bytes_new_take(data, len);
}

static guint
count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    return n;
}

/* A model whose initializer w lives in weights.bin at offset 8 (after 8 bytes of padding). */
static GBytes *
pb_external(PbModel *pm, const char *location, gint64 offset, gint64 length)
{
    pb_basic(pm);
    Onnx__TensorProto *w = pm->graph.initializer[0];
    w->has_raw_data = FALSE;
    w->has_data_location = TRUE;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    w->n_external_data = 3;
    w->external_data = pb_alloc(pm, sizeof(gpointer) * 3);
    const char *keys[] = {"location", "offset", "length"};
    char *vals[] = {pb_str(pm, location), g_strdup_printf("%" G_GINT64_FORMAT, offset),
                    g_strdup_printf("%" G_GINT64_FORMAT, length)};
    g_ptr_array_add(pm->allocs, vals[1]);
    g_ptr_array_add(pm->allocs, vals[2]);
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *e = pb_alloc(pm, sizeof(*e));
        onnx__string_string_entry_proto__init(e);
        e->key = pb_str(pm, keys[i]);
        e->value = vals[i];
        w->external_data[i] = e;
    }
    return pb_pack(pm);
}

static const float ext_weights[] = {9, 8, 7, 6};

static void
write_weights(const char *dir)
{
    guint8 buf[24] = {0};
    memcpy(buf + 8, ext_weights, 16);
    g_autofree char *p = g_build_filename(dir, "weights.bin", NULL);
    write_file(p, buf, sizeof buf);
}

/* dir/model.onnx, whose initializer w is ext_weights at offset 8 of dir/weights.bin (written too);
 * returns its path. pm holds the model's protobuf until pb_model_clear(). */
static char *
write_external_model(PbModel *pm, const char *dir)
{
    g_autoptr(GBytes) bytes = pb_external(pm, "weights.bin", 8, 16);
    char *path = g_build_filename(dir, "model.onnx", NULL);
    write_file(path, g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
    write_weights(dir);
    return path;
}

static void
test_external_data_round_trip(void **state)
{
    (void)state;
    g_autofree char *in_dir = make_tmpdir();
    g_autofree char *out_dir = make_tmpdir();
    PbModel pm;
    g_autofree char *in = write_external_model(&pm, in_dir);

    GError *error = NULL;
    HgModel *m = hg_model_load(in, &error);
    assert_non_null(m);
    assert_verified(m->graph);
    HgValue *w = hg_graph_lookup(m->graph, "w");
    assert_int_equal(w->init->storage, HG_STORAGE_EXTERNAL);
    assert_memory_equal(w->init->data, ext_weights, 16);

    /* The output's data file is its own, named after it; unchanged data is copied whole and only the
     * location differs from the input. */
    g_autofree char *out = g_build_filename(out_dir, "model.onnx", NULL);
    assert_true(hg_model_save(m, out, &error));
    g_autoptr(GBytes) saved = read_file(out);
    PbModel pm2;
    g_autoptr(GBytes) renamed = pb_external(&pm2, "model.onnx.data", 8, 16);
    assert_true(g_bytes_equal(saved, renamed));
    pb_model_clear(&pm2);
    g_autofree char *wi = g_build_filename(in_dir, "weights.bin", NULL);
    g_autofree char *wo = g_build_filename(out_dir, "model.onnx.data", NULL);
    g_autoptr(GBytes) win = read_file(wi), wout = read_file(wo);
    assert_non_null(wout);
    assert_true(g_bytes_equal(win, wout)); /* whole file copied, padding included */
    assert_int_equal(count_entries(out_dir), 2); /* no temporary files left */

    /* Changed data is laid out again and the offsets follow. */
    float *d = hg_tensor_data_mut(w->init);
    d[0] = 42;
    assert_true(hg_model_save(m, out, &error));
    hg_model_free(m);
    m = hg_model_load(out, &error);
    assert_non_null(m);
    w = hg_graph_lookup(m->graph, "w");
    assert_int_equal(w->init->ext_offset, 0);
    assert_true(((const float *)w->init->data)[0] == 42);
    assert_true(((const float *)w->init->data)[3] == 6);
    hg_model_free(m);
    /* The input's data file was not touched. */
    g_autoptr(GBytes) win2 = read_file(wi);
    assert_true(g_bytes_equal(win, win2));
    pb_model_clear(&pm);
    rm_rf(in_dir);
    rm_rf(out_dir);
}

static void
expect_file_error(const char *dir, GBytes *bytes, int code, const char *needle)
{
    g_autofree char *in = g_build_filename(dir, "model.onnx", NULL);
    write_file(in, g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
    GError *error = NULL;
    HgModel *m = hg_model_load(in, &error);
    assert_null(m);
    assert_hg_error(error, code, needle);
    g_error_free(error);
}

static void
test_external_data_escapes_refused(void **state)
{
    (void)state;
    g_autofree char *root = make_tmpdir();
    g_autofree char *dir = g_build_filename(root, "model", NULL);
    g_mkdir(dir, 0755);
    write_weights(root); /* outside the model's folder */
    PbModel pm;
    g_autoptr(GBytes) up = pb_external(&pm, "../weights.bin", 8, 16);
    expect_file_error(dir, up, HG_ERROR_INVALID, "leaves the model's folder");
    pb_model_clear(&pm);
    g_autofree char *abs = g_build_filename(root, "weights.bin", NULL);
    g_autoptr(GBytes) ab = pb_external(&pm, abs, 8, 16);
    expect_file_error(dir, ab, HG_ERROR_INVALID, "is not a relative path");
    pb_model_clear(&pm);
    g_autofree char *link = g_build_filename(dir, "link.bin", NULL);
    assert_int_equal(symlink(abs, link), 0);
    g_autoptr(GBytes) ln = pb_external(&pm, "link.bin", 8, 16);
    expect_file_error(dir, ln, HG_ERROR_INVALID, "is a link that leaves the model's folder");
    pb_model_clear(&pm);
    write_weights(dir);
    g_autoptr(GBytes) far = pb_external(&pm, "weights.bin", 16, 16);
    expect_file_error(dir, far, HG_ERROR_INVALID, "lies beyond the end of 'weights.bin'");
    pb_model_clear(&pm);
    g_autoptr(GBytes) none = pb_external(&pm, "absent.bin", 0, 16);
    expect_file_error(dir, none, HG_ERROR_IO, "absent.bin");
    pb_model_clear(&pm);
    rm_rf(root);
}

static void
test_external_data_fifo_refused(void **state)
{
    (void)state;
    /* A FIFO where the weights should be would block open() forever. */
    g_autofree char *dir = make_tmpdir();
    g_autofree char *fifo = g_build_filename(dir, "weights.bin", NULL);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    PbModel pm;
    g_autoptr(GBytes) b = pb_external(&pm, "weights.bin", 8, 16);
    expect_file_error(dir, b, HG_ERROR_INVALID, "is not a regular file");
    pb_model_clear(&pm);
    rm_rf(dir);
}

static void
test_failed_save_changes_nothing(void **state)
{
    (void)state;
    /* The model cannot be written (its path is a folder): the data file beside it, which belongs to
     * someone else, must not be replaced either. */
    g_autofree char *in_dir = make_tmpdir();
    g_autofree char *out_dir = make_tmpdir();
    PbModel pm;
    g_autofree char *in = write_external_model(&pm, in_dir);
    g_autofree char *theirs = g_build_filename(out_dir, "model.onnx.data", NULL);
    write_file(theirs, "OTHER", 5);
    g_autofree char *out = g_build_filename(out_dir, "model.onnx", NULL);
    g_mkdir(out, 0755);
    GError *error = NULL;
    HgModel *m = hg_model_load(in, &error);
    assert_non_null(m);
    assert_false(hg_model_save(m, out, &error));
    assert_hg_error(error, HG_ERROR_OUTPUT, "is a directory");
    g_clear_error(&error);
    g_autoptr(GBytes) after = read_file(theirs);
    assert_int_equal(g_bytes_get_size(after), 5);
    assert_memory_equal(g_bytes_get_data(after, NULL), "OTHER", 5);
    assert_int_equal(count_entries(out_dir), 2); /* no temporary left */
    hg_model_free(m);
    pb_model_clear(&pm);
    rm_rf(in_dir);
    rm_rf(out_dir);
}

static void
test_run_output_lists(void **state)
{
    (void)state;
    /* The interpreter caches a plan per list of requested outputs: "no outputs" and "the graph
     * outputs" must not share one. */
    PbModel pm;
    pb_basic(&pm);
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    HgModel *m = load_ok(bytes);
    g_autoptr(GPtrArray) feeds = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    const gint64 dims[] = {2, 2};
    g_ptr_array_add(feeds, hg_tensor_new("x", HG_DTYPE_FLOAT, 2, dims));
    const char *none[] = {NULL};
    const char *mid[] = {"r", NULL};
    HgRunOptions o1 = {1, NULL, NULL, none}, o2 = {1, NULL, NULL, NULL}, o3 = {1, NULL, NULL, mid};
    GError *error = NULL;
    g_autoptr(GPtrArray) r1 = hg_run(m, feeds, &o1, &error);
    g_autoptr(GPtrArray) r2 = hg_run(m, feeds, &o2, &error);
    g_autoptr(GPtrArray) r3 = hg_run(m, feeds, &o3, &error);
    assert_non_null(r1);
    assert_non_null(r2);
    assert_non_null(r3);
    assert_int_equal(r1->len, 0);
    assert_int_equal(r2->len, 1);
    assert_string_equal(((HgTensor *)r2->pdata[0])->name, "z");
    assert_int_equal(r3->len, 1);
    assert_string_equal(((HgTensor *)r3->pdata[0])->name, "r");
    hg_model_free(m);
    pb_model_clear(&pm);
}

static void
test_atomic_save(void **state)
{
    (void)state;
    g_autofree char *dir = make_tmpdir();
    PbModel pm;
    pb_basic(&pm);
    g_autoptr(GBytes) bytes = pb_pack(&pm);
    g_autofree char *in = g_build_filename(dir, "m.onnx", NULL);
    write_file(in, g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
    GError *error = NULL;
    HgModel *m = hg_model_load(in, &error);
    assert_non_null(m);
    /* Overwriting the input itself works and leaves nothing else behind. */
    assert_true(hg_model_save(m, in, &error));
    g_autoptr(GBytes) again = read_file(in);
    assert_true(g_bytes_equal(again, bytes));
    assert_int_equal(count_entries(dir), 1);
    /* A folder that does not exist: an error, and no file appears. */
    g_autofree char *bad = g_build_filename(dir, "no", "such", "out.onnx", NULL);
    assert_false(hg_model_save(m, bad, &error));
    assert_hg_error(error, HG_ERROR_OUTPUT, "cannot create a file in");
    g_clear_error(&error);
    assert_false(g_file_test(bad, G_FILE_TEST_EXISTS));
    hg_model_free(m);
    pb_model_clear(&pm);
    rm_rf(dir);
}

HG_TEST_MAIN("io",
             cmocka_unit_test(test_basic_round_trip),
             cmocka_unit_test(test_everything_rides_along),
             cmocka_unit_test(test_packed_scalar_style_detected),
             cmocka_unit_test(test_duplicate_constants_later_wins),
             cmocka_unit_test(test_subgraph_reads_outer_scope),
             cmocka_unit_test(test_garbage_and_truncation),
             cmocka_unit_test(test_field_number_zero),
             cmocka_unit_test(test_undefined_value),
             cmocka_unit_test(test_cycle),
             cmocka_unit_test(test_duplicate_definitions),
             cmocka_unit_test(test_bad_tensor_sizes),
             cmocka_unit_test(test_external_data_round_trip),
             cmocka_unit_test(test_external_data_escapes_refused),
             cmocka_unit_test(test_external_data_fifo_refused),
             cmocka_unit_test(test_failed_save_changes_nothing),
             cmocka_unit_test(test_run_output_lists),
             cmocka_unit_test(test_atomic_save))
