/* Saving ONNX protobuf files. With onnx_load.c and onnx_pb.c, the only code that sees onnx.pb-c.h.
 *
 * Build protobuf-c messages that point into the IR (no copies), in the encoding the model was read in,
 * and stream them to the output (src/outfile.c: a temporary file renamed over the destination, or a
 * stream written as is), with external data in a file of the output's own and the 2 GiB protobuf
 * limit kept.
 */
#include "halfguard/io.h"
#include "halfguard/text.h"
#include "ir_private.h"
#include "onnx.pb-c.h"
#include "onnx_pb.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================ save */

/* Every message the saver builds lives until the model is written; one list frees them all. */
typedef struct {
    GPtrArray *allocs;
    HgEncoding encoding;
    GPtrArray *unpacked; /* messages unpacked from pass-through bytes, freed with free_unpacked */
    /* Where tensor bytes go (hg_model_save): tensors in placed (HgTensor* -> gint64* offset) are
     * written as references into the data file called location; with inline_external, tensors that
     * are external in the IR are written as raw_data instead. */
    GHashTable *placed;
    const char *location;
    gboolean inline_external;
} SaveCtx;

static gpointer
salloc(SaveCtx *s, gsize size)
{
    gpointer p = g_malloc0(size);
    g_ptr_array_add(s->allocs, p);
    return p;
}

#define SNEW(s, Type, init_fn)                                                                     \
    ({                                                                                             \
        Type *_m = salloc((s), sizeof(Type));                                                      \
        init_fn(_m);                                                                               \
        _m;                                                                                        \
    })

static void
unknown_to_pb(SaveCtx *s, ProtobufCMessage *msg, const HgUnknown *u)
{
    if (!u || !u->n)
        return;
    msg->n_unknown_fields = u->n;
    msg->unknown_fields = salloc(s, sizeof(ProtobufCMessageUnknownField) * u->n);
    for (guint i = 0; i < u->n; i++) {
        msg->unknown_fields[i].tag = u->fields[i].tag;
        msg->unknown_fields[i].wire_type = (ProtobufCWireType)u->fields[i].wire_type;
        msg->unknown_fields[i].len = u->fields[i].len;
        msg->unknown_fields[i].data = u->fields[i].data;
    }
}

static Onnx__StringStringEntryProto **
pairs_to_pb(SaveCtx *s, const GPtrArray *a, size_t *n)
{
    *n = a ? a->len : 0;
    if (!*n)
        return NULL;
    Onnx__StringStringEntryProto **out = salloc(s, sizeof(*out) * a->len);
    for (guint i = 0; i < a->len; i++) {
        const HgStringPair *sp = a->pdata[i];
        out[i] = SNEW(s, Onnx__StringStringEntryProto, onnx__string_string_entry_proto__init);
        out[i]->key = sp->key;
        out[i]->value = sp->value;
        unknown_to_pb(s, &out[i]->base, sp->unknown);
    }
    return out;
}

/* t's external_data entries as written to the output: location, offset and length name its place in
 * s->location; other entries (checksum, ...) keep their place and value; missing ones are appended. */
static Onnx__StringStringEntryProto **
ext_pairs_to_pb(SaveCtx *s, const HgTensor *t, gint64 offset, size_t *n)
{
    const char *keys[3] = {"location", "offset", "length"};
    char *vals[3] = {(char *)s->location, g_strdup_printf("%" G_GINT64_FORMAT, offset),
                     g_strdup_printf("%" G_GSIZE_FORMAT, t->nbytes)};
    g_ptr_array_add(s->allocs, vals[1]);
    g_ptr_array_add(s->allocs, vals[2]);
    gboolean seen[3] = {FALSE, FALSE, FALSE};
    guint have = t->external ? t->external->len : 0;
    Onnx__StringStringEntryProto **out = salloc(s, sizeof(*out) * (have + 3));
    *n = 0;
    for (guint i = 0; i < have; i++) {
        const HgStringPair *sp = t->external->pdata[i];
        Onnx__StringStringEntryProto *e =
            SNEW(s, Onnx__StringStringEntryProto, onnx__string_string_entry_proto__init);
        e->key = sp->key;
        e->value = sp->value;
        for (guint k = 0; k < 3; k++) {
            if (g_strcmp0(sp->key, keys[k]) == 0) {
                e->value = vals[k];
                seen[k] = TRUE;
            }
        }
        unknown_to_pb(s, &e->base, sp->unknown);
        out[(*n)++] = e;
    }
    for (guint k = 0; k < 3; k++) {
        if (seen[k])
            continue;
        Onnx__StringStringEntryProto *e =
            SNEW(s, Onnx__StringStringEntryProto, onnx__string_string_entry_proto__init);
        e->key = (char *)keys[k];
        e->value = vals[k];
        out[(*n)++] = e;
    }
    return out;
}

static Onnx__TensorShapeProto *
shape_to_pb(SaveCtx *s, const HgShape *sh)
{
    if (!sh)
        return NULL;
    Onnx__TensorShapeProto *pb = SNEW(s, Onnx__TensorShapeProto, onnx__tensor_shape_proto__init);
    pb->n_dim = sh->rank;
    pb->dim = salloc(s, sizeof(*pb->dim) * (sh->rank ? sh->rank : 1));
    for (guint i = 0; i < sh->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d =
            SNEW(s, Onnx__TensorShapeProto__Dimension, onnx__tensor_shape_proto__dimension__init);
        const HgDim *hd = &sh->dims[i];
        if (hd->has_value) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = hd->value;
        } else if (hd->param) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = hd->param;
        }
        d->denotation = hd->denotation;
        unknown_to_pb(s, &d->base, hd->unknown);
        pb->dim[i] = d;
    }
    unknown_to_pb(s, &pb->base, sh->unknown);
    return pb;
}

static Onnx__TypeProto *
type_to_pb(SaveCtx *s, const HgType *t)
{
    if (!t)
        return NULL;
    Onnx__TypeProto *pb = SNEW(s, Onnx__TypeProto, onnx__type_proto__init);
    pb->denotation = t->denotation;
    unknown_to_pb(s, &pb->base, t->unknown);
    switch (t->kind) {
    case HG_TYPE_TENSOR: {
        Onnx__TypeProto__Tensor *x = SNEW(s, Onnx__TypeProto__Tensor, onnx__type_proto__tensor__init);
        x->has_elem_type = t->has_elem_type;
        x->elem_type = t->elem_type;
        x->shape = shape_to_pb(s, t->shape);
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        pb->tensor_type = x;
        break;
    }
    case HG_TYPE_SPARSE_TENSOR: {
        Onnx__TypeProto__SparseTensor *x =
            SNEW(s, Onnx__TypeProto__SparseTensor, onnx__type_proto__sparse_tensor__init);
        x->has_elem_type = t->has_elem_type;
        x->elem_type = t->elem_type;
        x->shape = shape_to_pb(s, t->shape);
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
        pb->sparse_tensor_type = x;
        break;
    }
    case HG_TYPE_SEQUENCE: {
        Onnx__TypeProto__Sequence *x =
            SNEW(s, Onnx__TypeProto__Sequence, onnx__type_proto__sequence__init);
        x->elem_type = type_to_pb(s, t->elem);
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        pb->sequence_type = x;
        break;
    }
    case HG_TYPE_OPTIONAL: {
        Onnx__TypeProto__Optional *x =
            SNEW(s, Onnx__TypeProto__Optional, onnx__type_proto__optional__init);
        x->elem_type = type_to_pb(s, t->elem);
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        pb->optional_type = x;
        break;
    }
    case HG_TYPE_MAP: {
        Onnx__TypeProto__Map *x = SNEW(s, Onnx__TypeProto__Map, onnx__type_proto__map__init);
        x->has_key_type = t->has_elem_type;
        x->key_type = t->elem_type;
        x->value_type = type_to_pb(s, t->elem);
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        pb->map_type = x;
        break;
    }
    case HG_TYPE_OPAQUE: {
        Onnx__TypeProto__Opaque *x = SNEW(s, Onnx__TypeProto__Opaque, onnx__type_proto__opaque__init);
        x->domain = t->opaque_domain;
        x->name = t->opaque_name;
        unknown_to_pb(s, &x->base, t->inner_unknown);
        pb->value_case = ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE;
        pb->opaque_type = x;
        break;
    }
    case HG_TYPE_NONE:
        break;
    }
    return pb;
}

/* Encode raw little-endian bytes back into the typed field the dtype calls for. */
static void
tensor_typed_to_pb(SaveCtx *s, const HgTensor *t, Onnx__TensorProto *pb)
{
    const guint8 *d = t->data;
    guint bits = hg_dtype_bits(t->dtype);
    gsize n = bits ? t->nbytes * 8 / bits : 0;
    switch (t->dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_COMPLEX64:
        pb->n_float_data = t->nbytes / 4;
        pb->float_data = (float *)d; /* raw layout is the array layout on little-endian hosts */
        break;
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_COMPLEX128:
        pb->n_double_data = t->nbytes / 8;
        pb->double_data = (double *)d;
        break;
    case HG_DTYPE_INT64:
        pb->n_int64_data = n;
        pb->int64_data = (int64_t *)d;
        break;
    case HG_DTYPE_UINT64:
        pb->n_uint64_data = n;
        pb->uint64_data = (uint64_t *)d;
        break;
    case HG_DTYPE_UINT32: {
        uint64_t *v = salloc(s, sizeof(uint64_t) * (n ? n : 1));
        for (gsize i = 0; i < n; i++) {
            guint32 x;
            memcpy(&x, d + 4 * i, 4);
            v[i] = x;
        }
        pb->n_uint64_data = n;
        pb->uint64_data = v;
        break;
    }
    case HG_DTYPE_INT32:
        pb->n_int32_data = n;
        pb->int32_data = (int32_t *)d;
        break;
    default: {
        int32_t *v = salloc(s, sizeof(int32_t) * (n ? n : 1));
        for (gsize i = 0; i < n; i++) {
            switch (t->dtype) {
            case HG_DTYPE_INT16: {
                gint16 x;
                memcpy(&x, d + 2 * i, 2);
                v[i] = x;
                break;
            }
            case HG_DTYPE_UINT16:
            case HG_DTYPE_FLOAT16:
            case HG_DTYPE_BFLOAT16: {
                guint16 x;
                memcpy(&x, d + 2 * i, 2);
                v[i] = x;
                break;
            }
            case HG_DTYPE_INT8:
                v[i] = (gint8)d[i];
                break;
            default:
                v[i] = d[i];
                break;
            }
        }
        pb->n_int32_data = n;
        pb->int32_data = v;
        break;
    }
    }
}

static Onnx__TensorProto *
tensor_to_pb(SaveCtx *s, const HgTensor *t)
{
    if (!t)
        return NULL;
    Onnx__TensorProto *pb = SNEW(s, Onnx__TensorProto, onnx__tensor_proto__init);
    if (s->encoding == HG_ENCODING_PACKED_SCALARS)
        pb->base.descriptor = &hg_pb_packed_descs()->tensor;
    pb->n_dims = t->rank;
    pb->dims = (int64_t *)t->dims;
    pb->has_data_type = t->has_dtype;
    pb->data_type = t->dtype;
    pb->name = t->name;
    pb->doc_string = t->doc_string;
    pb->has_data_location = t->has_data_location;
    pb->data_location = (Onnx__TensorProto__DataLocation)t->data_location;
    const gint64 *placed = s->placed ? g_hash_table_lookup(s->placed, t) : NULL;
    gboolean inlined = !placed && s->inline_external && t->storage == HG_STORAGE_EXTERNAL;
    if (placed) {
        pb->has_data_location = TRUE;
        pb->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        pb->external_data = ext_pairs_to_pb(s, t, *placed, &pb->n_external_data);
    } else if (inlined) {
        pb->has_data_location = FALSE;
    } else {
        pb->external_data = pairs_to_pb(s, t->external, &pb->n_external_data);
    }
    pb->metadata_props = pairs_to_pb(s, t->metadata, &pb->n_metadata_props);
    unknown_to_pb(s, &pb->base, t->unknown);
    if (t->has_segment) {
        pb->segment = SNEW(s, Onnx__TensorProto__Segment, onnx__tensor_proto__segment__init);
        pb->segment->has_begin = t->has_seg_begin;
        pb->segment->begin = t->seg_begin;
        pb->segment->has_end = t->has_seg_end;
        pb->segment->end = t->seg_end;
        unknown_to_pb(s, &pb->segment->base, t->segment_unknown);
    }
    if (placed)
        return pb;
    if (inlined) {
        pb->has_raw_data = TRUE;
        pb->raw_data.len = t->nbytes;
        pb->raw_data.data = (uint8_t *)t->data;
        return pb;
    }
    switch (t->storage) {
    case HG_STORAGE_RAW:
        pb->has_raw_data = TRUE;
        pb->raw_data.len = t->nbytes;
        pb->raw_data.data = (uint8_t *)t->data;
        break;
    case HG_STORAGE_TYPED:
        tensor_typed_to_pb(s, t, pb);
        break;
    case HG_STORAGE_STRINGS:
        pb->n_string_data = t->strings ? t->strings->len : 0;
        pb->string_data = salloc(s, sizeof(ProtobufCBinaryData) * (pb->n_string_data + 1));
        for (size_t i = 0; i < pb->n_string_data; i++) {
            gsize len;
            const void *p = g_bytes_get_data(t->strings->pdata[i], &len);
            pb->string_data[i].len = len;
            pb->string_data[i].data = (uint8_t *)p;
        }
        break;
    case HG_STORAGE_EXTERNAL:
    case HG_STORAGE_NONE:
        break;
    }
    return pb;
}

static Onnx__SparseTensorProto *
sparse_to_pb(SaveCtx *s, const HgSparseTensor *sp)
{
    Onnx__SparseTensorProto *pb = SNEW(s, Onnx__SparseTensorProto, onnx__sparse_tensor_proto__init);
    if (s->encoding == HG_ENCODING_PACKED_SCALARS)
        pb->base.descriptor = &hg_pb_packed_descs()->sparse;
    pb->values = tensor_to_pb(s, sp->values);
    pb->indices = tensor_to_pb(s, sp->indices);
    pb->n_dims = sp->rank;
    pb->dims = (int64_t *)sp->dims;
    unknown_to_pb(s, &pb->base, sp->unknown);
    return pb;
}

static Onnx__GraphProto *graph_to_pb(SaveCtx *s, const HgGraph *g);

static ProtobufCBinaryData *
bytes_list_to_pb(SaveCtx *s, const GPtrArray *a, size_t *n)
{
    *n = a ? a->len : 0;
    if (!*n)
        return NULL;
    ProtobufCBinaryData *out = salloc(s, sizeof(*out) * a->len);
    for (guint i = 0; i < a->len; i++) {
        gsize len;
        const void *p = g_bytes_get_data(a->pdata[i], &len);
        out[i].len = len;
        out[i].data = (uint8_t *)p;
    }
    return out;
}

static Onnx__AttributeProto *
attr_to_pb(SaveCtx *s, const HgAttr *a)
{
    Onnx__AttributeProto *pb = SNEW(s, Onnx__AttributeProto, onnx__attribute_proto__init);
    if (s->encoding == HG_ENCODING_PACKED_SCALARS)
        pb->base.descriptor = &hg_pb_packed_descs()->attr;
    pb->name = a->name;
    pb->ref_attr_name = a->ref_attr_name;
    pb->doc_string = a->doc_string;
    pb->has_type = !!(a->has & HG_ATTR_HAS_TYPE);
    pb->type = (Onnx__AttributeProto__AttributeType)a->type;
    pb->has_f = !!(a->has & HG_ATTR_HAS_F);
    pb->f = a->f;
    pb->has_i = !!(a->has & HG_ATTR_HAS_I);
    pb->i = a->i;
    if ((pb->has_s = a->s && (a->has & HG_ATTR_HAS_S))) {
        gsize len;
        pb->s.data = (uint8_t *)g_bytes_get_data(a->s, &len);
        pb->s.len = len;
    }
    pb->t = tensor_to_pb(s, a->t);
    pb->g = a->g ? graph_to_pb(s, a->g) : NULL;
    pb->sparse_tensor = a->sparse ? sparse_to_pb(s, a->sparse) : NULL;
    pb->tp = type_to_pb(s, a->tp);
    if (a->floats) {
        pb->n_floats = a->floats->len;
        pb->floats = (float *)a->floats->data;
    }
    if (a->ints) {
        pb->n_ints = a->ints->len;
        pb->ints = (int64_t *)a->ints->data;
    }
    pb->strings = bytes_list_to_pb(s, a->strings, &pb->n_strings);
    if (a->tensors) {
        pb->n_tensors = a->tensors->len;
        pb->tensors = salloc(s, sizeof(*pb->tensors) * a->tensors->len);
        for (guint i = 0; i < a->tensors->len; i++)
            pb->tensors[i] = tensor_to_pb(s, a->tensors->pdata[i]);
    }
    if (a->graphs) {
        pb->n_graphs = a->graphs->len;
        pb->graphs = salloc(s, sizeof(*pb->graphs) * a->graphs->len);
        for (guint i = 0; i < a->graphs->len; i++)
            pb->graphs[i] = graph_to_pb(s, a->graphs->pdata[i]);
    }
    if (a->sparse_tensors) {
        pb->n_sparse_tensors = a->sparse_tensors->len;
        pb->sparse_tensors = salloc(s, sizeof(*pb->sparse_tensors) * a->sparse_tensors->len);
        for (guint i = 0; i < a->sparse_tensors->len; i++)
            pb->sparse_tensors[i] = sparse_to_pb(s, a->sparse_tensors->pdata[i]);
    }
    if (a->type_protos) {
        pb->n_type_protos = a->type_protos->len;
        pb->type_protos = salloc(s, sizeof(*pb->type_protos) * a->type_protos->len);
        for (guint i = 0; i < a->type_protos->len; i++)
            pb->type_protos[i] = type_to_pb(s, a->type_protos->pdata[i]);
    }
    unknown_to_pb(s, &pb->base, a->unknown);
    return pb;
}

static Onnx__ValueInfoProto **
decls_to_pb(SaveCtx *s, const GPtrArray *decls, size_t *n)
{
    *n = decls->len;
    Onnx__ValueInfoProto **out = salloc(s, sizeof(*out) * (decls->len + 1));
    for (guint i = 0; i < decls->len; i++) {
        const HgValueDecl *d = decls->pdata[i];
        Onnx__ValueInfoProto *pb = SNEW(s, Onnx__ValueInfoProto, onnx__value_info_proto__init);
        pb->name = d->name;
        pb->type = type_to_pb(s, d->type);
        pb->doc_string = d->doc_string;
        pb->metadata_props = pairs_to_pb(s, d->metadata, &pb->n_metadata_props);
        unknown_to_pb(s, &pb->base, d->unknown);
        out[i] = pb;
    }
    return out;
}

static char empty_name[] = "";

static Onnx__NodeProto *
node_to_pb(SaveCtx *s, const HgNode *n)
{
    Onnx__NodeProto *pb = SNEW(s, Onnx__NodeProto, onnx__node_proto__init);
    pb->n_input = n->n_inputs;
    pb->input = salloc(s, sizeof(char *) * (n->n_inputs + 1));
    for (guint i = 0; i < n->n_inputs; i++)
        pb->input[i] = n->inputs[i] ? n->inputs[i]->name : empty_name;
    pb->n_output = n->n_outputs;
    pb->output = salloc(s, sizeof(char *) * (n->n_outputs + 1));
    for (guint i = 0; i < n->n_outputs; i++)
        pb->output[i] = n->outputs[i]                             ? n->outputs[i]->name
                        : n->shadowed_names && n->shadowed_names[i] ? n->shadowed_names[i]
                                                                    : empty_name;
    pb->name = n->name;
    pb->op_type = n->op_type;
    pb->domain = n->domain;
    pb->overload = n->overload;
    pb->doc_string = n->doc_string;
    pb->metadata_props = pairs_to_pb(s, n->metadata, &pb->n_metadata_props);
    pb->n_attribute = n->attrs->len;
    pb->attribute = salloc(s, sizeof(*pb->attribute) * (n->attrs->len + 1));
    for (guint i = 0; i < n->attrs->len; i++)
        pb->attribute[i] = attr_to_pb(s, n->attrs->pdata[i]);
    unknown_to_pb(s, &pb->base, n->unknown);
    return pb;
}

static Onnx__GraphProto *
graph_to_pb(SaveCtx *s, const HgGraph *g)
{
    Onnx__GraphProto *pb = SNEW(s, Onnx__GraphProto, onnx__graph_proto__init);
    pb->node = salloc(s, sizeof(*pb->node) * (g->nodes->len + 1));
    for (guint i = 0; i < g->nodes->len; i++) {
        const HgNode *n = g->nodes->pdata[i];
        if (!(n->flags & HG_NODE_DEAD))
            pb->node[pb->n_node++] = node_to_pb(s, n);
    }
    pb->name = g->name;
    pb->doc_string = g->doc_string;
    pb->n_initializer = g->initializers->len;
    pb->initializer = salloc(s, sizeof(*pb->initializer) * (g->initializers->len + 1));
    for (guint i = 0; i < g->initializers->len; i++)
        pb->initializer[i] = tensor_to_pb(s, g->initializers->pdata[i]);
    pb->n_sparse_initializer = g->sparse_initializers->len;
    pb->sparse_initializer = salloc(s, sizeof(*pb->sparse_initializer) * (g->sparse_initializers->len + 1));
    for (guint i = 0; i < g->sparse_initializers->len; i++)
        pb->sparse_initializer[i] = sparse_to_pb(s, g->sparse_initializers->pdata[i]);
    pb->input = decls_to_pb(s, g->inputs, &pb->n_input);
    pb->output = decls_to_pb(s, g->outputs, &pb->n_output);
    pb->value_info = decls_to_pb(s, g->value_info, &pb->n_value_info);
    pb->n_quantization_annotation = g->quant_annotations->len;
    pb->quantization_annotation =
        salloc(s, sizeof(*pb->quantization_annotation) * (g->quant_annotations->len + 1));
    for (guint i = 0; i < g->quant_annotations->len; i++) {
        const HgTensorAnnotation *a = g->quant_annotations->pdata[i];
        Onnx__TensorAnnotation *qa = SNEW(s, Onnx__TensorAnnotation, onnx__tensor_annotation__init);
        qa->tensor_name = a->tensor_name;
        qa->quant_parameter_tensor_names = pairs_to_pb(s, a->pairs, &qa->n_quant_parameter_tensor_names);
        unknown_to_pb(s, &qa->base, a->unknown);
        pb->quantization_annotation[i] = qa;
    }
    pb->metadata_props = pairs_to_pb(s, g->metadata, &pb->n_metadata_props);
    unknown_to_pb(s, &pb->base, g->unknown);
    return pb;
}

static gboolean
model_to_pb(SaveCtx *s, const HgModel *m, Onnx__ModelProto *pb, GError **error)
{
    onnx__model_proto__init(pb);
    pb->has_ir_version = m->has_ir_version;
    pb->ir_version = m->ir_version;
    pb->n_opset_import = m->opsets->len;
    pb->opset_import = salloc(s, sizeof(*pb->opset_import) * (m->opsets->len + 1));
    for (guint i = 0; i < m->opsets->len; i++) {
        const HgOpset *o = m->opsets->pdata[i];
        Onnx__OperatorSetIdProto *x = SNEW(s, Onnx__OperatorSetIdProto, onnx__operator_set_id_proto__init);
        x->domain = o->domain;
        x->has_version = o->has_version;
        x->version = o->version;
        unknown_to_pb(s, &x->base, o->unknown);
        pb->opset_import[i] = x;
    }
    pb->producer_name = m->producer_name;
    pb->producer_version = m->producer_version;
    pb->domain = m->domain;
    pb->has_model_version = m->has_model_version;
    pb->model_version = m->model_version;
    pb->doc_string = m->doc_string;
    pb->graph = m->graph ? graph_to_pb(s, m->graph) : NULL;
    pb->metadata_props = pairs_to_pb(s, m->metadata, &pb->n_metadata_props);
    /* Functions and training info ride along as the bytes they were read as; protobuf-c writes them
     * again from the unpacked form, so they still pass through the schema. */
    if (m->training_info && m->training_info->len) {
        pb->n_training_info = m->training_info->len;
        pb->training_info = salloc(s, sizeof(*pb->training_info) * m->training_info->len);
        for (guint i = 0; i < m->training_info->len; i++) {
            gsize len;
            const guint8 *d = g_bytes_get_data(m->training_info->pdata[i], &len);
            pb->training_info[i] = onnx__training_info_proto__unpack(NULL, len, d);
            if (!pb->training_info[i]) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "training_info %u is malformed", i);
                return FALSE;
            }
            g_ptr_array_add(s->unpacked, pb->training_info[i]);
        }
    }
    if (m->functions && m->functions->len) {
        pb->n_functions = m->functions->len;
        pb->functions = salloc(s, sizeof(*pb->functions) * m->functions->len);
        for (guint i = 0; i < m->functions->len; i++) {
            gsize len;
            const guint8 *d = g_bytes_get_data(m->functions->pdata[i], &len);
            pb->functions[i] = onnx__function_proto__unpack(NULL, len, d);
            if (!pb->functions[i]) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "function %u is malformed", i);
                return FALSE;
            }
            g_ptr_array_add(s->unpacked, pb->functions[i]);
        }
    }
    unknown_to_pb(s, &pb->base, m->unknown);
    return TRUE;
}

static void
free_unpacked(gpointer msg)
{
    protobuf_c_message_free_unpacked(msg, NULL);
}

static void
save_ctx_init(SaveCtx *s, const HgModel *m)
{
    s->allocs = g_ptr_array_new_with_free_func(g_free);
    s->encoding = m->encoding;
    s->unpacked = g_ptr_array_new_with_free_func(free_unpacked);
}

static void
save_ctx_clear(SaveCtx *s)
{
    g_ptr_array_unref(s->allocs);
    g_ptr_array_unref(s->unpacked);
}

guint8 *
hg_model_save_bytes(HgModel *m, gsize *len, GError **error)
{
    g_return_val_if_fail(m != NULL && len != NULL, NULL);
    SaveCtx s = {0};
    save_ctx_init(&s, m);
    Onnx__ModelProto pb;
    guint8 *buf = NULL;
    if (model_to_pb(&s, m, &pb, error)) {
        *len = protobuf_c_message_get_packed_size(&pb.base);
        buf = g_malloc(*len ? *len : 1);
        protobuf_c_message_pack(&pb.base, buf);
    }
    save_ctx_clear(&s);
    return buf;
}

guint8 *
hg_tensor_save_pb(const HgTensor *t, gsize *len)
{
    g_return_val_if_fail(t != NULL && len != NULL, NULL);
    SaveCtx s = {g_ptr_array_new_with_free_func(g_free), HG_ENCODING_CANONICAL, NULL};
    HgTensor copy = *t;
    if (copy.storage != HG_STORAGE_STRINGS && copy.storage != HG_STORAGE_NONE)
        copy.storage = HG_STORAGE_RAW;
    copy.has_data_location = FALSE;
    copy.external = NULL;
    Onnx__TensorProto *pb = tensor_to_pb(&s, &copy);
    *len = protobuf_c_message_get_packed_size(&pb->base);
    guint8 *buf = g_malloc(*len ? *len : 1);
    protobuf_c_message_pack(&pb->base, buf);
    g_ptr_array_unref(s.allocs);
    return buf;
}

/* ---------------------------------------------------------------- writing files */

/* A ProtobufCBuffer that streams to a file descriptor: small pieces gather in a buffer, large ones
 * (tensor data) go straight to write(). */
typedef struct {
    ProtobufCBuffer base;
    int fd;
    guint8 *buf;
    gsize used, cap;
    int err;
    guint64 written;
    GPtrArray *sources; /* HgBlob mappings that large pieces may be copied from by the kernel */
} FdBuffer;

/* Copy len bytes at data, which lie inside a mapped file, from that file with copy_file_range: the
 * kernel moves page-cache pages, nothing is read into this process. FALSE when no source holds them
 * or the kernel cannot (the caller then writes them). */
static gboolean
fd_copy_from_source(FdBuffer *b, size_t len, const uint8_t *data)
{
    for (guint i = 0; b->sources && i < b->sources->len; i++) {
        const HgBlob *src = b->sources->pdata[i];
        gsize slen;
        const guint8 *base = hg_blob_data(src, &slen);
        if (data < base || data + len > base + slen)
            continue;
        loff_t in = hg_blob_file_offset(src) + (data - base);
        size_t left = len;
        while (left) {
            ssize_t n = copy_file_range(hg_blob_fd(src), &in, b->fd, NULL, left, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            left -= (size_t)n;
        }
        if (left == 0)
            return TRUE;
        /* Partial copies leave the file position where the data continues: write the rest. */
        hg_write_all(b->fd, data + (len - left), left, &b->err);
        return TRUE;
    }
    return FALSE;
}

static void
fd_flush(FdBuffer *b)
{
    if (b->used && !b->err)
        hg_write_all(b->fd, b->buf, b->used, &b->err);
    b->used = 0;
}

static void
fd_append(ProtobufCBuffer *base, size_t len, const uint8_t *data)
{
    FdBuffer *b = (FdBuffer *)base;
    if (b->err || !len) /* protobuf-c appends empty fields as (0, NULL) */
        return;
    b->written += len;
    if (len >= b->cap / 2) {
        fd_flush(b);
        if (!b->err && !fd_copy_from_source(b, len, data))
            hg_write_all(b->fd, data, len, &b->err);
        return;
    }
    if (b->used + len > b->cap)
        fd_flush(b);
    memcpy(b->buf + b->used, data, len);
    b->used += len;
}

/* Copy len bytes at src_off of src to dst_off of dst, without reading them into memory where the
 * kernel can do it (copy_file_range), else through a bounded buffer. */
static gboolean
copy_range(int src, gint64 src_off, int dst, gint64 dst_off, gint64 len, int *err)
{
    loff_t in = src_off, out = dst_off;
    while (len > 0) {
        ssize_t n = copy_file_range(src, &in, dst, &out, (size_t)MIN(len, (gint64)1 << 30), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len -= n;
    }
    if (len == 0)
        return TRUE;
    guint8 *buf = g_malloc(1 << 20);
    gboolean ok = TRUE;
    while (len > 0 && ok) {
        ssize_t n = pread(src, buf, (size_t)MIN(len, (gint64)1 << 20), in);
        if (n <= 0) {
            *err = n < 0 ? errno : EIO;
            ok = FALSE;
            break;
        }
        if (pwrite(dst, buf, (size_t)n, out) != n) {
            *err = errno ? errno : EIO;
            ok = FALSE;
        }
        in += n;
        out += n;
        len -= n;
    }
    g_free(buf);
    return ok;
}

/* ---------------------------------------------------------------- the output's external data */

/* Every output model that keeps data outside itself gets one data file of its own, named after it
 * (OUT.onnx -> OUT.onnx.data, ONNX's save_model convention), so that outputs never share or
 * overwrite one another's data, whatever the inputs called theirs. DataPlan says what goes there. */
typedef struct {
    GPtrArray *tensors;    /* HgTensor* written to the data file, in file order (borrowed) */
    GHashTable *offsets;   /* HgTensor* -> gint64* offset in the data file */
    const HgBlob *whole;   /* a source file copied whole (its tensors keep their offsets), or NULL */
    gint64 end;            /* the data file's size */
} DataPlan;

static void
data_plan_init(DataPlan *p)
{
    p->tensors = g_ptr_array_new();
    p->offsets = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    p->whole = NULL;
    p->end = 0;
}

static void
data_plan_clear(DataPlan *p)
{
    g_ptr_array_unref(p->tensors);
    g_hash_table_unref(p->offsets);
}

static void
data_plan_put(DataPlan *p, HgTensor *t, gint64 off)
{
    gint64 *o = g_new(gint64, 1);
    *o = off;
    g_hash_table_insert(p->offsets, t, o);
    g_ptr_array_add(p->tensors, t);
    p->end = MAX(p->end, off + (gint64)t->nbytes);
}

/* Append t at the next 64-byte boundary. */
static void
data_plan_append(DataPlan *p, HgTensor *t)
{
    data_plan_put(p, t, (p->end + 63) & ~(gint64)63);
}

static void
collect_ext_tensor(GPtrArray *out, HgTensor *t)
{
    if (t && t->storage == HG_STORAGE_EXTERNAL && !g_ptr_array_find(out, t, NULL))
        g_ptr_array_add(out, t);
}

static void
collect_ext_graph(HgGraph *g, gpointer data)
{
    GPtrArray *out = data;
    for (guint i = 0; i < g->initializers->len; i++)
        collect_ext_tensor(out, g->initializers->pdata[i]);
    for (guint i = 0; i < g->sparse_initializers->len; i++) {
        HgSparseTensor *s = g->sparse_initializers->pdata[i];
        collect_ext_tensor(out, s->values);
        collect_ext_tensor(out, s->indices);
    }
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        for (guint k = 0; k < n->attrs->len; k++) {
            HgAttr *a = n->attrs->pdata[k];
            collect_ext_tensor(out, a->t);
            for (guint j = 0; a->tensors && j < a->tensors->len; j++)
                collect_ext_tensor(out, a->tensors->pdata[j]);
        }
    }
}

/* The one mapped source file that every tensor in ext still views at its recorded offset, or NULL:
 * then the file is copied whole and stays byte-identical. Not when it holds bytes that no tensor
 * views beyond the alignment padding before each (FP32 originals that were converted, or dropped):
 * those dead bytes would go along. */
static const HgBlob *
ext_unchanged_source(const GPtrArray *ext)
{
    const HgBlob *src = NULL;
    guint64 live = 0;
    for (guint i = 0; i < ext->len; i++) {
        const HgTensor *t = ext->pdata[i];
        gsize blen;
        const guint8 *base = t->blob ? hg_blob_data(t->blob, &blen) : NULL;
        if (hg_blob_fd(t->blob) < 0 || (src && src != t->blob))
            return NULL;
        if (t->nbytes && (const guint8 *)t->data != base + t->ext_offset)
            return NULL;
        src = t->blob;
        live += t->nbytes;
    }
    gsize len = 0;
    if (src)
        hg_blob_data(src, &len);
    return src && live + 63 * (guint64)ext->len >= len ? src : NULL;
}

/* Place the tensors that are external in the IR: at their offsets when their one source file is
 * copied whole (not when the data file is the output spill), else laid out again in order, each at a
 * 64-byte boundary. */
static void
data_plan_external(DataPlan *p, HgModel *m, gboolean adopted)
{
    g_autoptr(GPtrArray) ext = g_ptr_array_new();
    if (m->graph)
        hg_graph_foreach(m->graph, collect_ext_graph, ext);
    if (!ext->len)
        return;
    p->whole = adopted ? NULL : ext_unchanged_source(ext);
    if (p->whole) {
        gsize len;
        hg_blob_data(p->whole, &len);
        p->end = (gint64)len;
    }
    for (guint i = 0; i < ext->len; i++) {
        HgTensor *t = ext->pdata[i];
        if (p->whole)
            data_plan_put(p, t, t->ext_offset);
        else
            data_plan_append(p, t);
    }
}

static void collect_movable(HgGraph *g, gpointer data);

/* When lower wrote the converted weights into the output's data file itself (hg_model_spill_to_output),
 * they stay where they are: each is placed at its offset in that file, and the rest is laid out after
 * them. Declined (-1) when the file holds too much that the model no longer reads (an eighth or more:
 * converted weights a later pass dropped), which the save would otherwise leave in it as zeros. Else
 * the output spill's descriptor, which write_data_file skips. */
static int
data_plan_adopt(DataPlan *p, HgModel *m, const char *data_target)
{
    gint64 end = 0;
    int fd = hg_model_output_spill(m, data_target, &end);
    if (fd < 0 || !m->graph)
        return -1;
    g_autoptr(GPtrArray) movable = g_ptr_array_new();
    hg_graph_foreach(m->graph, collect_movable, movable);
    g_autoptr(GPtrArray) in = g_ptr_array_new();
    gint64 live = 0;
    for (guint i = 0; i < movable->len; i++) {
        HgTensor *t = movable->pdata[i];
        if (hg_blob_fd(t->blob) == fd && !g_ptr_array_find(in, t, NULL)) {
            g_ptr_array_add(in, t);
            live += (gint64)t->nbytes;
        }
    }
    if (!in->len || live < end - end / 8)
        return -1;
    for (guint i = 0; i < in->len; i++) {
        HgTensor *t = in->pdata[i];
        gsize blen;
        const guint8 *base = hg_blob_data(t->blob, &blen);
        data_plan_put(p, t, hg_blob_file_offset(t->blob) + ((const guint8 *)t->data - base));
    }
    return fd;
}

/* Write the data file: the whole source first when there is one, then every tensor not inside it,
 * copied by the kernel from a mapped file where it lies in one. Tensors in the file adopted (a
 * descriptor, or -1) are there already. */
static int
write_data_file(const DataPlan *p, int fd, int adopted)
{
    int err = 0;
    if (p->whole) {
        gsize len;
        hg_blob_data(p->whole, &len);
        if (!copy_range(hg_blob_fd(p->whole), 0, fd, 0, (gint64)len, &err) && !err)
            err = EIO;
    }
    for (guint i = 0; i < p->tensors->len && !err; i++) {
        const HgTensor *t = p->tensors->pdata[i];
        if ((p->whole && t->blob == p->whole) || (adopted >= 0 && hg_blob_fd(t->blob) == adopted))
            continue;
        gint64 off = *(gint64 *)g_hash_table_lookup(p->offsets, t);
        gsize blen;
        const guint8 *base = t->blob ? hg_blob_data(t->blob, &blen) : NULL;
        if (hg_blob_fd(t->blob) >= 0 && t->nbytes) {
            if (!copy_range(hg_blob_fd(t->blob), hg_blob_file_offset(t->blob) + ((const guint8 *)t->data - base),
                            fd, off, (gint64)t->nbytes, &err) && !err)
                err = EIO;
            continue;
        }
        const guint8 *d = t->data;
        gsize left = t->nbytes;
        while (left && !err) {
            ssize_t n = pwrite(fd, d, MIN(left, (gsize)1 << 30), off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = n < 0 ? errno : EIO;
                break;
            }
            d += n;
            off += n;
            left -= (gsize)n;
        }
    }
    /* Trailing padding is not written; the file is as long as its last tensor's end. */
    if (!err && ftruncate(fd, p->end) != 0)
        err = errno;
    return err;
}

/* ---------------------------------------------------------------- the 2 GiB limit */

/* Protobuf cannot parse a message of 2 GiB or more (onnx.load fails; so does every reader built on
 * the reference library). A model is kept below that, less a margin, by moving its largest
 * initializers to its data file. HALFGUARD_TEST_PROTOBUF_LIMIT (bytes) lowers the limit: it exists
 * for the test suite, which checks the mechanism on a small model. */
#define PROTOBUF_LIMIT (((gint64)1 << 31) - ((gint64)64 << 20))
/* Initializers smaller than this stay in the model (onnx's convert_model_to_external_data default). */
#define EXTERNAL_MIN_BYTES 1024

static gint64
protobuf_limit(void)
{
    const char *env = g_getenv("HALFGUARD_TEST_PROTOBUF_LIMIT");
    gint64 v;
    if (env && hg_parse_count(env, &v) && v > 0 && v < PROTOBUF_LIMIT)
        return v;
    return PROTOBUF_LIMIT;
}

static void collect_movable(HgGraph *g, gpointer data);

/* When the output has a data file anyway (the input kept its weights outside, even if none of them is
 * left as it was), the initializers the conversion made (FP16 copies: held in memory or in a scratch
 * file, not viewing a file that was read) go there too, in graph order, so the model stays small;
 * those that came inside the input stay inside. all: every initializer of 1 KiB or more goes
 * (--external-data always). */
static void
data_plan_converted(DataPlan *p, HgModel *m, gboolean all)
{
    if ((!p->tensors->len && !m->external_data && !all) || !m->graph)
        return;
    g_autoptr(GPtrArray) movable = g_ptr_array_new();
    hg_graph_foreach(m->graph, collect_movable, movable);
    for (guint i = 0; i < movable->len; i++) {
        HgTensor *t = movable->pdata[i];
        if ((all || hg_blob_fd(t->blob) < 0 || hg_blob_is_spill(t->blob)) &&
            !g_hash_table_contains(p->offsets, t))
            data_plan_append(p, t);
    }
}

static void
collect_movable(HgGraph *g, gpointer data)
{
    GPtrArray *out = data;
    for (guint i = 0; i < g->initializers->len; i++) {
        HgTensor *t = g->initializers->pdata[i];
        if ((t->storage == HG_STORAGE_RAW || t->storage == HG_STORAGE_TYPED) &&
            hg_dtype_bits(t->dtype) > 0 && t->nbytes >= EXTERNAL_MIN_BYTES && t->data)
            g_ptr_array_add(out, t);
    }
}

static gint
by_size_desc(gconstpointer a, gconstpointer b)
{
    const HgTensor *x = *(HgTensor *const *)a, *y = *(HgTensor *const *)b;
    return x->nbytes < y->nbytes ? 1 : x->nbytes > y->nbytes ? -1 : 0;
}

/* Pack m into pb under s (a fresh SaveCtx) and return its serialized size, or -1 on error. */
static gint64
build_pb(SaveCtx *s, HgModel *m, Onnx__ModelProto *pb, GError **error)
{
    save_ctx_init(s, m);
    if (!model_to_pb(s, m, pb, error)) {
        save_ctx_clear(s);
        return -1;
    }
    return (gint64)protobuf_c_message_get_packed_size(&pb->base);
}

/* Build pb for m with the plan's placements; when it would pass the limit, move the largest
 * initializers into the plan until it fits. stream: the output is a stream; never: --external-data
 * never; with either no data file can be written (every tensor must be inside the model). Returns
 * the packed size, or -1 with an error (s is then cleared). */
static gint64
build_within_limit(SaveCtx *s, HgModel *m, DataPlan *plan, gboolean stream, gboolean never,
                   const char *path, Onnx__ModelProto *pb, GError **error)
{
    gint64 limit = protobuf_limit();
    gint64 size = build_pb(s, m, pb, error);
    if (size < 0 || size <= limit)
        return size;
    g_autoptr(GPtrArray) movable = g_ptr_array_new();
    if (!stream && !never && m->graph)
        hg_graph_foreach(m->graph, collect_movable, movable);
    /* Stable: equal sizes keep graph order, so the layout is the same on every run. */
    g_ptr_array_sort(movable, by_size_desc);
    guint next = 0;
    while (size > limit && next < movable->len) {
        gint64 over = size - limit;
        while (over > 0 && next < movable->len) {
            HgTensor *t = movable->pdata[next++];
            data_plan_append(plan, t);
            over -= (gint64)t->nbytes - 128; /* the reference that replaces it costs about that */
        }
        save_ctx_clear(s);
        size = build_pb(s, m, pb, error);
        if (size < 0)
            return -1;
    }
    if (size > limit) {
        save_ctx_clear(s);
        if (stream)
            g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT,
                        "%s: the model is %" G_GINT64_FORMAT " bytes as one protobuf, past the %"
                        G_GINT64_FORMAT "-byte limit that ONNX readers parse; a stream (standard "
                        "output, a FIFO, a device) cannot carry external data: write it to a file",
                        path, size, limit);
        else if (never)
            g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT,
                        "%s: the model is %" G_GINT64_FORMAT " bytes as one protobuf, past the %"
                        G_GINT64_FORMAT "-byte limit that ONNX readers parse; not written with "
                        "--external-data never", path, size, limit);
        else
            g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT,
                        "%s: the model is %" G_GINT64_FORMAT " bytes as one protobuf even with every "
                        "initializer in external data, past the %" G_GINT64_FORMAT "-byte limit that "
                        "ONNX readers parse; not written", path, size, limit);
        return -1;
    }
    return size;
}

/* Mapped files that raw initializers view: the saver copies those bytes from them. */
static void
collect_sources(HgGraph *g, gpointer data)
{
    GPtrArray *sources = data;
    for (guint i = 0; i < g->initializers->len; i++) {
        const HgTensor *t = g->initializers->pdata[i];
        if (t->storage == HG_STORAGE_RAW && hg_blob_fd(t->blob) >= 0 &&
            !g_ptr_array_find(sources, t->blob, NULL))
            g_ptr_array_add(sources, t->blob);
    }
}

void
hg_model_plan_output(HgModel *m, const char *path, HgExternalData mode)
{
    g_return_if_fail(m != NULL && path != NULL);
    if (mode == HG_EXTERNAL_ALWAYS || (mode == HG_EXTERNAL_AUTO && m->external_data))
        hg_model_spill_to_output(m, path);
}

gboolean
hg_model_save(HgModel *m, const char *path, GError **error)
{
    return hg_model_save_external(m, path, HG_EXTERNAL_AUTO, error);
}

gboolean
hg_model_save_external(HgModel *m, const char *path, HgExternalData mode, GError **error)
{
    g_return_val_if_fail(m != NULL && path != NULL, FALSE);
    g_return_val_if_fail(mode == HG_EXTERNAL_AUTO || mode == HG_EXTERNAL_ALWAYS || mode == HG_EXTERNAL_NEVER, FALSE);
    /* The model's own output is opened first: a path that must not be written fails before any file
     * is touched, and its resolved target names the data file. */
    HgOutFile *out = hg_outfile_open(path, 0, m, error);
    if (!out)
        return FALSE;
    gboolean stream = hg_outfile_is_stream(out);
    if (stream && mode == HG_EXTERNAL_ALWAYS) {
        g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT, "%s: a stream (standard output, a FIFO, a device) "
                    "cannot carry external data (--external-data always): write it to a file", path);
        hg_outfile_abort(out);
        return FALSE;
    }
    gboolean inside = stream || mode == HG_EXTERNAL_NEVER;
    g_autofree char *target_base = g_path_get_basename(hg_outfile_target(out));
    g_autofree char *target_dir = g_path_get_dirname(hg_outfile_target(out));
    g_autofree char *location = g_strconcat(target_base, ".data", NULL);
    g_autofree char *data_path = g_build_filename(target_dir, location, NULL);
    DataPlan plan;
    data_plan_init(&plan);
    int adopted = inside ? -1 : data_plan_adopt(&plan, m, data_path);
    /* Not adopted: its temporary goes before the save opens its own under the same name. */
    if (adopted < 0)
        hg_model_drop_output_data(m);
    if (!inside) {
        data_plan_external(&plan, m, adopted >= 0);
        data_plan_converted(&plan, m, mode == HG_EXTERNAL_ALWAYS);
    }

    SaveCtx s;
    Onnx__ModelProto pb;
    /* The context reads the plan while the messages are built. */
    s.placed = plan.offsets;
    s.location = location;
    s.inline_external = inside;
    gint64 size = build_within_limit(&s, m, &plan, stream, mode == HG_EXTERNAL_NEVER, path, &pb, error);
    HgOutFile *data = NULL;
    gboolean ok = size >= 0;
    if (ok && plan.tensors->len) {
        /* The data file is a regular file beside the model's target, never standard output. */
        data = adopted >= 0 ? hg_model_take_output_data(m) : NULL;
        if (!data) {
            adopted = -1;
            data = hg_outfile_open(data_path, HG_OUTFILE_SEEKABLE, NULL, error);
        }
        ok = data && hg_outfile_finish(data, write_data_file(&plan, hg_outfile_fd(data), adopted), error);
    } else {
        hg_model_drop_output_data(m);
    }
    if (ok) {
        FdBuffer b = {{fd_append}, hg_outfile_fd(out), g_malloc(1 << 20), 0, 1 << 20, 0, 0,
                      g_ptr_array_new()};
        if (m->graph)
            hg_graph_foreach(m->graph, collect_sources, b.sources);
        protobuf_c_message_pack_to_buffer(&pb.base, &b.base);
        fd_flush(&b);
        g_free(b.buf);
        g_ptr_array_unref(b.sources);
        ok = hg_outfile_finish(out, b.err, error);
    }
    if (size >= 0)
        save_ctx_clear(&s);
    data_plan_clear(&plan);
    /* Data before the model that names it: the new model never appears without its data. */
    if (ok && data) {
        ok = hg_outfile_commit(data, error);
        data = NULL;
    }
    if (ok)
        return hg_outfile_commit(out, error);
    hg_outfile_abort(data);
    hg_outfile_abort(out);
    return FALSE;
}
