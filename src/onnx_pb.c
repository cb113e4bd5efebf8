/* What the protobuf loader and saver share (onnx_pb.h): the packed-scalars encoding, and reading a
 * count. */
#include "onnx_pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- packed-scalars encoding */

static void
make_packed(ProtobufCMessageDescriptor *d, ProtobufCFieldDescriptor *f, guint cap,
            const ProtobufCMessageDescriptor *src)
{
    g_assert(src->n_fields <= cap);
    *d = *src;
    memcpy(f, src->fields, sizeof(*f) * src->n_fields);
    for (guint i = 0; i < src->n_fields; i++)
        if (f[i].label == PROTOBUF_C_LABEL_REPEATED && f[i].type != PROTOBUF_C_TYPE_MESSAGE &&
            f[i].type != PROTOBUF_C_TYPE_STRING && f[i].type != PROTOBUF_C_TYPE_BYTES)
            f[i].flags |= PROTOBUF_C_FIELD_FLAG_PACKED;
    d->fields = f;
}

const HgPackedDescs *
hg_pb_packed_descs(void)
{
    static gsize once = 0;
    static HgPackedDescs pd;
    if (g_once_init_enter(&once)) {
        make_packed(&pd.attr, pd.attr_f, G_N_ELEMENTS(pd.attr_f), &onnx__attribute_proto__descriptor);
        make_packed(&pd.tensor, pd.tensor_f, G_N_ELEMENTS(pd.tensor_f), &onnx__tensor_proto__descriptor);
        make_packed(&pd.sparse, pd.sparse_f, G_N_ELEMENTS(pd.sparse_f),
                    &onnx__sparse_tensor_proto__descriptor);
        g_once_init_leave(&once, 1);
    }
    return &pd;
}

static void repack_graph(Onnx__GraphProto *g, gboolean packed);

static void
repack_tensor(Onnx__TensorProto *t, gboolean packed)
{
    if (t)
        t->base.descriptor = packed ? &hg_pb_packed_descs()->tensor : &onnx__tensor_proto__descriptor;
}

static void
repack_sparse(Onnx__SparseTensorProto *s, gboolean packed)
{
    if (!s)
        return;
    s->base.descriptor = packed ? &hg_pb_packed_descs()->sparse : &onnx__sparse_tensor_proto__descriptor;
    repack_tensor(s->values, packed);
    repack_tensor(s->indices, packed);
}

static void
repack_graph(Onnx__GraphProto *g, gboolean packed)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_initializer; i++)
        repack_tensor(g->initializer[i], packed);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        repack_sparse(g->sparse_initializer[i], packed);
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_attribute; k++) {
            Onnx__AttributeProto *a = n->attribute[k];
            a->base.descriptor = packed ? &hg_pb_packed_descs()->attr : &onnx__attribute_proto__descriptor;
            repack_tensor(a->t, packed);
            repack_graph(a->g, packed);
            repack_sparse(a->sparse_tensor, packed);
            for (size_t j = 0; j < a->n_tensors; j++)
                repack_tensor(a->tensors[j], packed);
            for (size_t j = 0; j < a->n_graphs; j++)
                repack_graph(a->graphs[j], packed);
            for (size_t j = 0; j < a->n_sparse_tensors; j++)
                repack_sparse(a->sparse_tensors[j], packed);
        }
    }
}

/* Which encoding reproduces len bytes: the canonical one unless only the packed style does. */
HgEncoding
hg_pb_detect_encoding(Onnx__ModelProto *pb, gsize len)
{
    if (protobuf_c_message_get_packed_size(&pb->base) == len)
        return HG_ENCODING_CANONICAL;
    repack_graph(pb->graph, TRUE);
    gsize packed = protobuf_c_message_get_packed_size(&pb->base);
    repack_graph(pb->graph, FALSE);
    return packed == len ? HG_ENCODING_PACKED_SCALARS : HG_ENCODING_CANONICAL;
}

/* ---------------------------------------------------------------- reading a count */

gboolean
hg_parse_count(const char *s, gint64 *out)
{
    if (!s || !*s)
        return FALSE;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return FALSE;
    *out = v;
    return TRUE;
}
