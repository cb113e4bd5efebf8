/* What the protobuf loader (onnx_load.c) and saver (onnx_save.c) share (internal). With them, the
 * only code that sees onnx.pb-c.h. */
#ifndef HALFGUARD_ONNX_PB_H
#define HALFGUARD_ONNX_PB_H

#include "halfguard/ir.h"
#include "onnx.pb-c.h"

G_BEGIN_DECLS

/* Old writers (PyTorch 0.2's, for one) packed every repeated scalar, including those ONNX declares
 * unpacked. Variant descriptors, identical but for the packed flag, let protobuf-c write that style. */
typedef struct {
    ProtobufCMessageDescriptor attr, tensor, sparse;
    ProtobufCFieldDescriptor attr_f[32], tensor_f[32], sparse_f[8];
} HgPackedDescs;

/* The packed variants of the descriptors (made once). */
const HgPackedDescs *hg_pb_packed_descs(void);
/* Which encoding reproduces len bytes: the canonical one unless only the packed style does. */
HgEncoding hg_pb_detect_encoding(Onnx__ModelProto *pb, gsize len);

/* A non-negative decimal integer filling s (an external data offset or length, a size limit). */
gboolean hg_parse_count(const char *s, gint64 *out);

G_END_DECLS

#endif
