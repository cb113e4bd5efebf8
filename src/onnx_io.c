/* Loading and saving ONNX protobuf files: the only module that sees onnx.pb-c.h.
 *
 * Load: map the file, let protobuf-c unpack it, convert every message into the IR (stealing the large
 * raw_data buffers instead of copying them), map external data files read-only, and reject what is
 * invalid. Save: build protobuf-c messages that point into the IR (no copies), and stream them to the
 * output (src/outfile.c: a temporary file renamed over the destination, or a stream written as is).
 *
 * Lossless round trips rest on three things: the IR keeps every field and the presence of optional
 * ones; protobuf-c keeps unknown fields and writes them back; and the encoding of repeated scalars
 * (packed or not) is detected at load and repeated at save.
 */
#include "halfguard/io.h"
#include "halfguard/text.h"
#include "ir_private.h"
#include "onnx.pb-c.h"
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

#define LFS_MAGIC "version https://git-lfs.github.com/spec/"

gboolean
hg_is_lfs_pointer(const void *data, gsize len)
{
    return data && len >= sizeof(LFS_MAGIC) - 1 && memcmp(data, LFS_MAGIC, sizeof(LFS_MAGIC) - 1) == 0;
}

/* ================================================================ load */

typedef struct {
    HgModel *model;
    const char *dir;          /* folder external data is read from (NULL: refuse external data) */
    char *real_dir;           /* its realpath */
    GHashTable *ext_files;    /* location -> HgBlob of the mapped file */
    GError **error;
    HgBlob *file;             /* the mapped model file, when tensors may view it */
    GHashTable *views;        /* Onnx__TensorProto* whose raw_data points into file */
} LoadCtx;

static char *
dup0(const char *s)
{
    return s ? g_strdup(s) : NULL;
}

/* Set when an unknown field has field number 0, which protobuf forbids: protobuf-c accepts it when
 * the key is written in more than one byte, but would refuse the model it saves. Per thread, reset
 * by each load. */
static _Thread_local gboolean saw_field_zero;

static HgUnknown *
unknown_from_pb(const ProtobufCMessage *msg)
{
    if (!msg->n_unknown_fields)
        return NULL;
    for (unsigned i = 0; i < msg->n_unknown_fields; i++)
        if (msg->unknown_fields[i].tag == 0)
            saw_field_zero = TRUE;
    HgUnknown *u = g_new0(HgUnknown, 1);
    u->n = msg->n_unknown_fields;
    u->fields = g_new0(HgUnknownField, u->n);
    for (guint i = 0; i < u->n; i++) {
        const ProtobufCMessageUnknownField *f = &msg->unknown_fields[i];
        u->fields[i].tag = f->tag;
        u->fields[i].wire_type = (guint8)f->wire_type;
        u->fields[i].len = f->len;
        u->fields[i].data = g_memdup2(f->data, f->len);
    }
    return u;
}

static GPtrArray *
pairs_from_pb(size_t n, Onnx__StringStringEntryProto **pb)
{
    if (!n)
        return NULL;
    GPtrArray *a = g_ptr_array_new_full(n, hg_string_pair_free);
    for (size_t i = 0; i < n; i++) {
        HgStringPair *sp = g_new0(HgStringPair, 1);
        sp->key = dup0(pb[i]->key);
        sp->value = dup0(pb[i]->value);
        sp->unknown = unknown_from_pb(&pb[i]->base);
        g_ptr_array_add(a, sp);
    }
    return a;
}

static HgShape *
shape_from_pb(const Onnx__TensorShapeProto *pb)
{
    if (!pb)
        return NULL;
    HgShape *s = hg_shape_new((guint)pb->n_dim);
    for (size_t i = 0; i < pb->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = pb->dim[i];
        HgDim *hd = &s->dims[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            hd->has_value = TRUE;
            hd->value = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            hd->param = g_strdup(d->dim_param ? d->dim_param : "");
        }
        hd->denotation = dup0(d->denotation);
        hd->unknown = unknown_from_pb(&d->base);
    }
    s->unknown = unknown_from_pb(&pb->base);
    return s;
}

static HgType *
type_from_pb(const Onnx__TypeProto *pb)
{
    if (!pb)
        return NULL;
    HgType *t = g_new0(HgType, 1);
    t->denotation = dup0(pb->denotation);
    t->unknown = unknown_from_pb(&pb->base);
    switch (pb->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        t->kind = HG_TYPE_TENSOR;
        t->has_elem_type = pb->tensor_type->has_elem_type;
        t->elem_type = pb->tensor_type->elem_type;
        t->shape = shape_from_pb(pb->tensor_type->shape);
        t->inner_unknown = unknown_from_pb(&pb->tensor_type->base);
        break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        t->kind = HG_TYPE_SPARSE_TENSOR;
        t->has_elem_type = pb->sparse_tensor_type->has_elem_type;
        t->elem_type = pb->sparse_tensor_type->elem_type;
        t->shape = shape_from_pb(pb->sparse_tensor_type->shape);
        t->inner_unknown = unknown_from_pb(&pb->sparse_tensor_type->base);
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        t->kind = HG_TYPE_SEQUENCE;
        t->elem = type_from_pb(pb->sequence_type->elem_type);
        t->inner_unknown = unknown_from_pb(&pb->sequence_type->base);
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        t->kind = HG_TYPE_OPTIONAL;
        t->elem = type_from_pb(pb->optional_type->elem_type);
        t->inner_unknown = unknown_from_pb(&pb->optional_type->base);
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        t->kind = HG_TYPE_MAP;
        t->has_elem_type = pb->map_type->has_key_type;
        t->elem_type = pb->map_type->key_type;
        t->elem = type_from_pb(pb->map_type->value_type);
        t->inner_unknown = unknown_from_pb(&pb->map_type->base);
        break;
    case ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE:
        t->kind = HG_TYPE_OPAQUE;
        t->opaque_domain = dup0(pb->opaque_type->domain);
        t->opaque_name = dup0(pb->opaque_type->name);
        t->inner_unknown = unknown_from_pb(&pb->opaque_type->base);
        break;
    default:
        t->kind = HG_TYPE_NONE;
        break;
    }
    return t;
}

/* Resolve an external data location against the model's folder. Refuses absolute paths, "..", and
 * symlinks that lead outside the folder. */
static char *
resolve_location(LoadCtx *c, const char *tensor, const char *loc)
{
    if (!c->dir) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data '%s' but the model was not loaded from a file",
                    tensor, loc);
        return NULL;
    }
    if (!*loc || g_path_is_absolute(loc)) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data location '%s' is not a relative path", tensor, loc);
        return NULL;
    }
    g_auto(GStrv) parts = g_strsplit_set(loc, "/\\", -1);
    for (guint i = 0; parts[i]; i++) {
        if (strcmp(parts[i], "..") == 0) {
            g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                        "tensor '%s': external data location '%s' leaves the model's folder", tensor,
                        loc);
            return NULL;
        }
    }
    g_autofree char *path = g_build_filename(c->dir, loc, NULL);
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_IO, "tensor '%s': external data '%s': %s", tensor,
                    loc, g_strerror(errno));
        return NULL;
    }
    if (!c->real_dir) {
        char rd[PATH_MAX];
        if (!realpath(c->dir, rd)) {
            g_set_error(c->error, HG_ERROR, HG_ERROR_IO, "%s: %s", c->dir, g_strerror(errno));
            return NULL;
        }
        c->real_dir = g_strdup(rd);
    }
    gsize n = strlen(c->real_dir);
    if (strncmp(real, c->real_dir, n) != 0 || (real[n] != '/' && strcmp(c->real_dir, "/") != 0)) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data '%s' is a link that leaves the model's folder",
                    tensor, loc);
        return NULL;
    }
    return g_steal_pointer(&path);
}

static HgBlob *
map_external(LoadCtx *c, const char *tensor, const char *loc)
{
    if (!c->dir || !c->ext_files) {
        g_free(resolve_location(c, tensor, loc)); /* sets the error */
        return NULL;
    }
    HgBlob *b = g_hash_table_lookup(c->ext_files, loc);
    if (b)
        return b;
    g_autofree char *path = resolve_location(c, tensor, loc);
    if (!path)
        return NULL;
    /* O_NONBLOCK: a FIFO planted in the folder must not hang the load; only regular files map. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_IO, "tensor '%s': external data '%s': %s", tensor,
                    loc, g_strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data '%s' is not a regular file", tensor, loc);
        close(fd);
        return NULL;
    }
    void *addr = NULL;
    if (st.st_size > 0) {
        addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            g_set_error(c->error, HG_ERROR, HG_ERROR_IO, "tensor '%s': cannot map '%s': %s", tensor,
                        loc, g_strerror(errno));
            close(fd);
            return NULL;
        }
    }
    b = hg_blob_new_mapped(addr, (gsize)st.st_size, fd);
    g_hash_table_insert(c->ext_files, g_strdup(loc), b);
    hg_outfile_protect(c->model, &st, loc, FALSE);
    return b;
}

static gboolean
parse_i64(const char *s, gint64 *out)
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

static gboolean
tensor_external_from_pb(LoadCtx *c, HgTensor *t, const char *label)
{
    gboolean has_off = FALSE, has_len = FALSE;
    t->ext_offset = 0;
    for (guint i = 0; t->external && i < t->external->len; i++) {
        const HgStringPair *sp = t->external->pdata[i];
        if (g_strcmp0(sp->key, "location") == 0) {
            g_free(t->ext_location);
            t->ext_location = g_strdup(sp->value ? sp->value : "");
        } else if (g_strcmp0(sp->key, "offset") == 0) {
            if (!parse_i64(sp->value, &t->ext_offset)) {
                g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                            "tensor '%s': external data offset '%s' is not a number", label,
                            sp->value ? sp->value : "");
                return FALSE;
            }
            has_off = TRUE;
        } else if (g_strcmp0(sp->key, "length") == 0) {
            if (!parse_i64(sp->value, &t->ext_length)) {
                g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                            "tensor '%s': external data length '%s' is not a number", label,
                            sp->value ? sp->value : "");
                return FALSE;
            }
            has_len = TRUE;
        }
    }
    (void)has_off;
    if (!t->ext_location) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data without a location", label);
        return FALSE;
    }
    HgBlob *file = map_external(c, label, t->ext_location);
    if (!file)
        return FALSE;
    gsize flen;
    const guint8 *base = hg_blob_data(file, &flen);
    gint64 want = hg_tensor_expected_bytes(t);
    gint64 len = has_len ? t->ext_length : (gint64)flen - t->ext_offset;
    if (t->ext_offset > (gint64)flen || len < 0 || len > (gint64)flen - t->ext_offset) {
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data (offset %" G_GINT64_FORMAT ", length %" G_GINT64_FORMAT
                    ") lies beyond the end of '%s' (%" G_GSIZE_FORMAT " bytes)",
                    label, t->ext_offset, len, t->ext_location, flen);
        return FALSE;
    }
    if (want >= 0 && len != want) {
        g_autofree char *ds = hg_dims_string(t->rank, t->dims);
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': external data holds %" G_GINT64_FORMAT " bytes but %s %s needs %"
                    G_GINT64_FORMAT, label, len, hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?",
                    ds, want);
        return FALSE;
    }
    t->storage = HG_STORAGE_EXTERNAL;
    t->blob = hg_blob_ref(file);
    t->data = base ? base + t->ext_offset : NULL;
    t->nbytes = (gsize)len;
    return TRUE;
}

/* Decode the typed repeated fields into raw little-endian bytes. */
static gboolean
tensor_typed_from_pb(LoadCtx *c, HgTensor *t, const Onnx__TensorProto *pb, const char *label,
                     gint64 numel)
{
    size_t have = 0, per = 1;
    guint bits = hg_dtype_bits(t->dtype);
    switch (t->dtype) {
    case HG_DTYPE_FLOAT:
        have = pb->n_float_data;
        break;
    case HG_DTYPE_COMPLEX64:
        have = pb->n_float_data, per = 2;
        break;
    case HG_DTYPE_DOUBLE:
        have = pb->n_double_data;
        break;
    case HG_DTYPE_COMPLEX128:
        have = pb->n_double_data, per = 2;
        break;
    case HG_DTYPE_INT64:
        have = pb->n_int64_data;
        break;
    case HG_DTYPE_UINT32:
    case HG_DTYPE_UINT64:
        have = pb->n_uint64_data;
        break;
    case HG_DTYPE_INT32:
    case HG_DTYPE_INT16:
    case HG_DTYPE_UINT16:
    case HG_DTYPE_INT8:
    case HG_DTYPE_UINT8:
    case HG_DTYPE_BOOL:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16:
    case HG_DTYPE_FLOAT8E4M3FN:
    case HG_DTYPE_FLOAT8E4M3FNUZ:
    case HG_DTYPE_FLOAT8E5M2:
    case HG_DTYPE_FLOAT8E5M2FNUZ:
        have = pb->n_int32_data;
        break;
    default:
        g_set_error(c->error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                    "tensor '%s': %s data in typed fields is not supported", label,
                    hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "unknown");
        return FALSE;
    }
    if ((guint64)have != (guint64)numel * per) {
        g_autofree char *ds = hg_dims_string(t->rank, t->dims);
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': holds %" G_GSIZE_FORMAT " values but %s %s needs %" G_GINT64_FORMAT,
                    label, (gsize)have, hg_dtype_name(t->dtype), ds, numel * (gint64)per);
        return FALSE;
    }
    gsize nbytes = (gsize)numel * bits / 8;
    guint8 *out = g_malloc(nbytes ? nbytes : 1);
    for (size_t i = 0; i < have; i++) {
        switch (t->dtype) {
        case HG_DTYPE_FLOAT:
        case HG_DTYPE_COMPLEX64:
            memcpy(out + 4 * i, &pb->float_data[i], 4);
            break;
        case HG_DTYPE_DOUBLE:
        case HG_DTYPE_COMPLEX128:
            memcpy(out + 8 * i, &pb->double_data[i], 8);
            break;
        case HG_DTYPE_INT64:
            memcpy(out + 8 * i, &pb->int64_data[i], 8);
            break;
        case HG_DTYPE_UINT64:
            memcpy(out + 8 * i, &pb->uint64_data[i], 8);
            break;
        case HG_DTYPE_UINT32: {
            guint32 v = (guint32)pb->uint64_data[i];
            memcpy(out + 4 * i, &v, 4);
            break;
        }
        case HG_DTYPE_INT32:
            memcpy(out + 4 * i, &pb->int32_data[i], 4);
            break;
        case HG_DTYPE_INT16:
        case HG_DTYPE_UINT16:
        case HG_DTYPE_FLOAT16:
        case HG_DTYPE_BFLOAT16: {
            guint16 v = (guint16)pb->int32_data[i];
            memcpy(out + 2 * i, &v, 2);
            break;
        }
        default:
            out[i] = (guint8)pb->int32_data[i];
            break;
        }
    }
    t->storage = HG_STORAGE_TYPED;
    t->blob = hg_blob_new_take(out, nbytes);
    t->data = out;
    t->nbytes = nbytes;
    return TRUE;
}

static HgTensor *
tensor_from_pb(LoadCtx *c, Onnx__TensorProto *pb, const char *what)
{
    g_autoptr(GString) label = g_string_new(pb->name ? pb->name : what);
    HgTensor *t = g_new0(HgTensor, 1);
    t->name = dup0(pb->name);
    t->has_dtype = pb->has_data_type;
    t->dtype = pb->data_type;
    t->rank = (guint)pb->n_dims;
    t->dims = g_new0(gint64, pb->n_dims ? pb->n_dims : 1);
    if (pb->n_dims)
        memcpy(t->dims, pb->dims, sizeof(gint64) * pb->n_dims);
    t->doc_string = dup0(pb->doc_string);
    t->metadata = pairs_from_pb(pb->n_metadata_props, pb->metadata_props);
    t->external = pairs_from_pb(pb->n_external_data, pb->external_data);
    t->has_data_location = pb->has_data_location;
    t->data_location = pb->data_location;
    t->unknown = unknown_from_pb(&pb->base);
    if (pb->segment) {
        t->has_segment = TRUE;
        t->has_seg_begin = pb->segment->has_begin;
        t->seg_begin = pb->segment->begin;
        t->has_seg_end = pb->segment->has_end;
        t->seg_end = pb->segment->end;
        t->segment_unknown = unknown_from_pb(&pb->segment->base);
    }

    gint64 numel = hg_numel(t->rank, t->dims);
    if (numel < 0) {
        g_autofree char *ds = hg_dims_string(t->rank, t->dims);
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': dims %s are negative or their product overflows", label->str, ds);
        goto fail;
    }
    if (t->has_dtype && t->dtype != HG_DTYPE_STRING && t->dtype != HG_DTYPE_UNDEFINED &&
        hg_tensor_expected_bytes(t) < 0) {
        g_autofree char *ds = hg_dims_string(t->rank, t->dims);
        g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': dims %s need more bytes than can be addressed", label->str, ds);
        goto fail;
    }

    if (pb->has_data_location && pb->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (!tensor_external_from_pb(c, t, label->str))
            goto fail;
    } else if (pb->has_raw_data) {
        gint64 want = hg_tensor_expected_bytes(t);
        if (want >= 0 && (guint64)want != pb->raw_data.len) {
            g_autofree char *ds = hg_dims_string(t->rank, t->dims);
            g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                        "tensor '%s': raw_data holds %" G_GSIZE_FORMAT " bytes but %s %s needs %"
                        G_GINT64_FORMAT, label->str, (gsize)pb->raw_data.len,
                        hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?", ds, want);
            goto fail;
        }
        /* Large initializers view the mapped file (see strip_payloads); the others steal
         * protobuf-c's copy (allocated with malloc, as g_malloc is). Either way the bytes exist once
         * in memory, not twice. */
        t->storage = HG_STORAGE_RAW;
        t->nbytes = pb->raw_data.len;
        if (c->views && g_hash_table_contains(c->views, pb))
            t->blob = hg_blob_ref(c->file);
        else
            t->blob = hg_blob_new_take(pb->raw_data.data, pb->raw_data.len);
        t->data = pb->raw_data.data;
        pb->raw_data.data = NULL;
        pb->raw_data.len = 0;
        pb->has_raw_data = 0;
    } else if (pb->n_string_data) {
        if ((guint64)pb->n_string_data != (guint64)numel) {
            g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                        "tensor '%s': holds %" G_GSIZE_FORMAT " strings but its shape needs %"
                        G_GINT64_FORMAT, label->str, (gsize)pb->n_string_data, numel);
            goto fail;
        }
        t->storage = HG_STORAGE_STRINGS;
        t->strings = g_ptr_array_new_full(pb->n_string_data, (GDestroyNotify)g_bytes_unref);
        for (size_t i = 0; i < pb->n_string_data; i++)
            g_ptr_array_add(t->strings, g_bytes_new(pb->string_data[i].data, pb->string_data[i].len));
    } else if (pb->n_float_data || pb->n_int32_data || pb->n_int64_data || pb->n_double_data ||
               pb->n_uint64_data) {
        if (!tensor_typed_from_pb(c, t, pb, label->str, numel))
            goto fail;
    } else {
        /* No data at all: an empty tensor, or one whose shape alone matters. */
        t->storage = HG_STORAGE_NONE;
        if (numel > 0 && t->dtype != HG_DTYPE_STRING && t->dtype != HG_DTYPE_UNDEFINED) {
            g_autofree char *ds = hg_dims_string(t->rank, t->dims);
            g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                        "tensor '%s': holds no data but %s %s needs %" G_GINT64_FORMAT " values",
                        label->str, hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?", ds,
                        numel);
            goto fail;
        }
    }
    return t;
fail:
    hg_tensor_free(t);
    return NULL;
}

static HgSparseTensor *
sparse_from_pb(LoadCtx *c, Onnx__SparseTensorProto *pb)
{
    HgSparseTensor *s = g_new0(HgSparseTensor, 1);
    s->rank = (guint)pb->n_dims;
    s->dims = g_new0(gint64, pb->n_dims ? pb->n_dims : 1);
    if (pb->n_dims)
        memcpy(s->dims, pb->dims, sizeof(gint64) * pb->n_dims);
    s->unknown = unknown_from_pb(&pb->base);
    if (pb->values && !(s->values = tensor_from_pb(c, pb->values, "sparse values")))
        goto fail;
    if (pb->indices && !(s->indices = tensor_from_pb(c, pb->indices, "sparse indices")))
        goto fail;
    return s;
fail:
    hg_sparse_tensor_free(s);
    return NULL;
}

static HgGraph *graph_from_pb(LoadCtx *c, Onnx__GraphProto *pb, HgGraph *parent);

static HgAttr *
attr_from_pb(LoadCtx *c, Onnx__AttributeProto *pb, HgGraph *g)
{
    HgAttr *a = g_new0(HgAttr, 1);
    a->name = dup0(pb->name);
    a->ref_attr_name = dup0(pb->ref_attr_name);
    a->doc_string = dup0(pb->doc_string);
    a->type = (HgAttrType)pb->type;
    a->has = (pb->has_type ? HG_ATTR_HAS_TYPE : 0) | (pb->has_f ? HG_ATTR_HAS_F : 0) |
             (pb->has_i ? HG_ATTR_HAS_I : 0) | (pb->has_s ? HG_ATTR_HAS_S : 0);
    a->f = pb->f;
    a->i = pb->i;
    if (pb->has_s)
        a->s = g_bytes_new(pb->s.data, pb->s.len);
    a->unknown = unknown_from_pb(&pb->base);
    if (pb->t && !(a->t = tensor_from_pb(c, pb->t, a->name ? a->name : "attribute")))
        goto fail;
    if (pb->g && !(a->g = graph_from_pb(c, pb->g, g)))
        goto fail;
    if (pb->sparse_tensor && !(a->sparse = sparse_from_pb(c, pb->sparse_tensor)))
        goto fail;
    a->tp = type_from_pb(pb->tp);
    if (pb->n_floats) {
        a->floats = g_array_sized_new(FALSE, FALSE, sizeof(float), (guint)pb->n_floats);
        g_array_append_vals(a->floats, pb->floats, (guint)pb->n_floats);
    }
    if (pb->n_ints) {
        a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), (guint)pb->n_ints);
        g_array_append_vals(a->ints, pb->ints, (guint)pb->n_ints);
    }
    if (pb->n_strings) {
        a->strings = g_ptr_array_new_full(pb->n_strings, (GDestroyNotify)g_bytes_unref);
        for (size_t i = 0; i < pb->n_strings; i++)
            g_ptr_array_add(a->strings, g_bytes_new(pb->strings[i].data, pb->strings[i].len));
    }
    if (pb->n_tensors) {
        a->tensors = g_ptr_array_new_full(pb->n_tensors, (GDestroyNotify)hg_tensor_free);
        for (size_t i = 0; i < pb->n_tensors; i++) {
            HgTensor *t = tensor_from_pb(c, pb->tensors[i], a->name ? a->name : "attribute");
            if (!t)
                goto fail;
            g_ptr_array_add(a->tensors, t);
        }
    }
    if (pb->n_graphs) {
        a->graphs = g_ptr_array_new_full(pb->n_graphs, (GDestroyNotify)hg_graph_free);
        for (size_t i = 0; i < pb->n_graphs; i++) {
            HgGraph *sg = graph_from_pb(c, pb->graphs[i], g);
            if (!sg)
                goto fail;
            g_ptr_array_add(a->graphs, sg);
        }
    }
    if (pb->n_sparse_tensors) {
        a->sparse_tensors =
            g_ptr_array_new_full(pb->n_sparse_tensors, (GDestroyNotify)hg_sparse_tensor_free);
        for (size_t i = 0; i < pb->n_sparse_tensors; i++) {
            HgSparseTensor *s = sparse_from_pb(c, pb->sparse_tensors[i]);
            if (!s)
                goto fail;
            g_ptr_array_add(a->sparse_tensors, s);
        }
    }
    if (pb->n_type_protos) {
        a->type_protos = g_ptr_array_new_full(pb->n_type_protos, (GDestroyNotify)hg_type_free);
        for (size_t i = 0; i < pb->n_type_protos; i++)
            g_ptr_array_add(a->type_protos, type_from_pb(pb->type_protos[i]));
    }
    return a;
fail:
    hg_attr_free(a);
    return NULL;
}

static HgValueDecl *
decl_from_pb(HgGraph *g, GPtrArray *list, HgValue *v, Onnx__ValueInfoProto *pb)
{
    HgValueDecl *d;
    HgType *t = type_from_pb(pb->type);
    if (list == g->inputs)
        d = hg_graph_add_input(g, v, t);
    else if (list == g->outputs)
        d = hg_graph_add_output(g, v, t);
    else
        d = hg_graph_add_value_info(g, v, t);
    hg_type_free(t);
    g_free(d->name);
    d->name = dup0(pb->name);
    d->doc_string = dup0(pb->doc_string);
    d->metadata = pairs_from_pb(pb->n_metadata_props, pb->metadata_props);
    d->unknown = unknown_from_pb(&pb->base);
    return d;
}

static const char *
pb_node_label(const Onnx__NodeProto *n)
{
    return n->name ? n->name : "";
}

static gboolean
is_constant_pb(const Onnx__NodeProto *np)
{
    return np->n_input == 0 && g_strcmp0(np->op_type, "Constant") == 0 &&
           (!np->domain || !*np->domain || strcmp(np->domain, "ai.onnx") == 0);
}

static gboolean
is_constant_node(const HgNode *n)
{
    return n->n_inputs == 0 && g_strcmp0(n->op_type, "Constant") == 0 &&
           (!n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0);
}

static HgGraph *
graph_from_pb(LoadCtx *c, Onnx__GraphProto *pb, HgGraph *parent)
{
    HgGraph *g = hg_graph_new(c->model, parent);
    GError **error = c->error;
    g_autofree HgValue **none = NULL; /* declared before any goto, for the cleanup */
    size_t max_in = 0;
    g->name = dup0(pb->name);
    g->doc_string = dup0(pb->doc_string);
    g->metadata = pairs_from_pb(pb->n_metadata_props, pb->metadata_props);
    g->unknown = unknown_from_pb(&pb->base);

    for (size_t i = 0; i < pb->n_input; i++) {
        const char *name = pb->input[i]->name ? pb->input[i]->name : "";
        HgValue *v = g_hash_table_lookup(g->values, name);
        if (v) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "graph input '%s' is listed twice", name);
            goto fail;
        }
        v = hg_graph_new_value(g, name, error);
        decl_from_pb(g, g->inputs, v, pb->input[i]);
    }
    for (size_t i = 0; i < pb->n_initializer; i++) {
        Onnx__TensorProto *tp = pb->initializer[i];
        const char *name = tp->name ? tp->name : "";
        HgValue *v = g_hash_table_lookup(g->values, name);
        if (v && (v->init || !v->is_input)) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "initializer '%s' is defined twice", name);
            goto fail;
        }
        HgTensor *t = tensor_from_pb(c, tp, "initializer");
        if (!t)
            goto fail;
        if (!v)
            v = hg_graph_new_value(g, name, error);
        hg_graph_add_initializer(g, v, t);
    }
    for (size_t i = 0; i < pb->n_sparse_initializer; i++) {
        HgSparseTensor *s = sparse_from_pb(c, pb->sparse_initializer[i]);
        if (!s)
            goto fail;
        g_ptr_array_add(g->sparse_initializers, s);
        const char *name = s->values && s->values->name ? s->values->name : "";
        HgValue *v = g_hash_table_lookup(g->values, name);
        if (v && (v->init || v->sparse_init || !v->is_input)) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "sparse initializer '%s' is defined twice",
                        name);
            goto fail;
        }
        if (!v)
            v = hg_graph_new_value(g, name, error);
        v->sparse_init = s;
    }

    /* Define every node output before resolving any input: files list nodes out of order. */
    for (size_t i = 0; i < pb->n_node; i++)
        max_in = MAX(max_in, pb->node[i]->n_input);
    none = g_new0(HgValue *, max_in + 1);
    for (size_t i = 0; i < pb->n_node; i++) {
        Onnx__NodeProto *np = pb->node[i];
        g_autofree HgValue **outs = g_new0(HgValue *, np->n_output + 1);
        for (size_t k = 0; k < np->n_output; k++) {
            const char *name = np->output[k];
            if (!name || !*name)
                continue;
            HgValue *prev = g_hash_table_lookup(g->values, name);
            if (prev && prev->producer && is_constant_node(prev->producer) &&
                is_constant_pb(np)) {
                /* Two Constant nodes define one name. ONNX Runtime accepts it and uses the later
                 * one; so do we, keeping the earlier node (output slot dropped) for a lossless save. */
                HgNode *old = prev->producer;
                guint slot = prev->producer_index;
                if (!old->shadowed_names)
                    old->shadowed_names = g_new0(char *, old->n_outputs);
                old->shadowed_names[slot] = g_strdup(name);
                old->outputs[slot] = NULL;
                prev->producer = NULL;
                g_ptr_array_add(c->model->warnings,
                                g_strdup_printf("value '%s' is defined by two Constant nodes; the "
                                                "later one (in file order) is used, as ONNX Runtime "
                                                "does", name));
                outs[k] = prev;
                continue;
            }
            if (prev) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                            "node '%s' (%s): output '%s' is defined twice (also %s)", pb_node_label(np),
                            np->op_type ? np->op_type : "", name,
                            prev->producer ? "by another node"
                            : prev->init   ? "as an initializer"
                                           : "as a graph input");
                goto fail;
            }
            outs[k] = hg_graph_new_value(g, name, error);
        }
        HgNode *n = hg_graph_add_node(g, np->op_type ? np->op_type : "", NULL, NULL,
                                      (guint)np->n_input, none, (guint)np->n_output, outs);
        /* Presence matters for a lossless save, so copy the raw fields. */
        g_free(n->op_type);
        n->op_type = dup0(np->op_type);
        n->name = dup0(np->name);
        n->domain = dup0(np->domain);
        n->overload = dup0(np->overload);
        n->doc_string = dup0(np->doc_string);
        n->metadata = pairs_from_pb(np->n_metadata_props, np->metadata_props);
        n->unknown = unknown_from_pb(&np->base);
    }
    for (size_t i = 0; i < pb->n_node; i++) {
        Onnx__NodeProto *np = pb->node[i];
        HgNode *n = g->nodes->pdata[i];
        for (size_t k = 0; k < np->n_attribute; k++) {
            HgAttr *a = attr_from_pb(c, np->attribute[k], g);
            if (!a)
                goto fail;
            hg_node_add_attr(n, a);
        }
        for (size_t k = 0; k < np->n_input; k++) {
            const char *name = np->input[k];
            if (!name || !*name)
                continue;
            HgValue *v = hg_graph_lookup(g, name);
            if (!v) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                            "node '%s' (%s): input '%s' is used but never defined", pb_node_label(np),
                            np->op_type ? np->op_type : "", name);
                goto fail;
            }
            hg_node_set_input(n, (guint)k, v);
        }
    }
    for (size_t i = 0; i < pb->n_value_info; i++) {
        const char *name = pb->value_info[i]->name ? pb->value_info[i]->name : "";
        HgValue *v = hg_graph_lookup(g, name);
        /* A value_info entry for a name nothing defines is kept (lossless) but means nothing. */
        if (!v)
            v = hg_graph_new_value(g, name, error);
        decl_from_pb(g, g->value_info, v, pb->value_info[i]);
    }
    for (size_t i = 0; i < pb->n_output; i++) {
        const char *name = pb->output[i]->name ? pb->output[i]->name : "";
        HgValue *v = hg_graph_lookup(g, name);
        if (!v) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "graph output '%s' is never defined",
                        name);
            goto fail;
        }
        decl_from_pb(g, g->outputs, v, pb->output[i]);
    }
    for (size_t i = 0; i < pb->n_quantization_annotation; i++) {
        Onnx__TensorAnnotation *qa = pb->quantization_annotation[i];
        HgTensorAnnotation *a = g_new0(HgTensorAnnotation, 1);
        a->tensor_name = dup0(qa->tensor_name);
        a->pairs = pairs_from_pb(qa->n_quant_parameter_tensor_names, qa->quant_parameter_tensor_names);
        a->unknown = unknown_from_pb(&qa->base);
        g_ptr_array_add(g->quant_annotations, a);
    }
    return g;
fail:
    hg_graph_free(g);
    return NULL;
}

static GBytes *
pack_message(const ProtobufCMessage *msg)
{
    gsize n = protobuf_c_message_get_packed_size(msg);
    guint8 *buf = g_malloc(n ? n : 1);
    protobuf_c_message_pack(msg, buf);
    return g_bytes_new_take(buf, n);
}

/* ---------------------------------------------------------------- packed-scalars encoding */

/* Old writers (PyTorch 0.2's, for one) packed every repeated scalar, including those ONNX declares
 * unpacked. Variant descriptors, identical but for the packed flag, let protobuf-c write that style. */
typedef struct {
    ProtobufCMessageDescriptor attr, tensor, sparse;
    ProtobufCFieldDescriptor attr_f[32], tensor_f[32], sparse_f[8];
} PackedDescs;

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

static const PackedDescs *
packed_descs(void)
{
    static gsize once = 0;
    static PackedDescs pd;
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
        t->base.descriptor = packed ? &packed_descs()->tensor : &onnx__tensor_proto__descriptor;
}

static void
repack_sparse(Onnx__SparseTensorProto *s, gboolean packed)
{
    if (!s)
        return;
    s->base.descriptor = packed ? &packed_descs()->sparse : &onnx__sparse_tensor_proto__descriptor;
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
            a->base.descriptor = packed ? &packed_descs()->attr : &onnx__attribute_proto__descriptor;
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
static HgEncoding
detect_encoding(Onnx__ModelProto *pb, gsize len)
{
    if (protobuf_c_message_get_packed_size(&pb->base) == len)
        return HG_ENCODING_CANONICAL;
    repack_graph(pb->graph, TRUE);
    gsize packed = protobuf_c_message_get_packed_size(&pb->base);
    repack_graph(pb->graph, FALSE);
    return packed == len ? HG_ENCODING_PACKED_SCALARS : HG_ENCODING_CANONICAL;
}

/* ---------------------------------------------------------------- load entry points */

static HgModel *
model_from_pb(LoadCtx *c, Onnx__ModelProto *pb)
{
    HgModel *m = c->model;
    m->has_ir_version = pb->has_ir_version;
    m->ir_version = pb->ir_version;
    for (size_t i = 0; i < pb->n_opset_import; i++) {
        HgOpset *o = g_new0(HgOpset, 1);
        o->domain = dup0(pb->opset_import[i]->domain);
        o->has_version = pb->opset_import[i]->has_version;
        o->version = pb->opset_import[i]->version;
        o->unknown = unknown_from_pb(&pb->opset_import[i]->base);
        g_ptr_array_add(m->opsets, o);
    }
    m->producer_name = dup0(pb->producer_name);
    m->producer_version = dup0(pb->producer_version);
    m->domain = dup0(pb->domain);
    m->has_model_version = pb->has_model_version;
    m->model_version = pb->model_version;
    m->doc_string = dup0(pb->doc_string);
    m->metadata = pairs_from_pb(pb->n_metadata_props, pb->metadata_props);
    m->unknown = unknown_from_pb(&pb->base);
    if (pb->n_training_info) {
        m->training_info = g_ptr_array_new_full(pb->n_training_info, (GDestroyNotify)g_bytes_unref);
        for (size_t i = 0; i < pb->n_training_info; i++)
            g_ptr_array_add(m->training_info, pack_message(&pb->training_info[i]->base));
    }
    if (pb->n_functions) {
        m->functions = g_ptr_array_new_full(pb->n_functions, (GDestroyNotify)g_bytes_unref);
        for (size_t i = 0; i < pb->n_functions; i++)
            g_ptr_array_add(m->functions, pack_message(&pb->functions[i]->base));
    }
    if (pb->graph && !(m->graph = graph_from_pb(c, pb->graph, NULL)))
        return NULL;
    return m;
}

/* ---------------------------------------------------------------- zero-copy weights */

/* protobuf-c copies every bytes field it unpacks. For a model of large embedded weights that doubles
 * the memory and costs a second per GiB, so the loader first finds the raw_data payloads of the main
 * graph's large initializers in the mapped file (ModelProto.graph = 7 -> GraphProto.initializer = 5
 * -> TensorProto.raw_data = 9), unpacks a copy of the model with those payloads cut out, and points
 * the tensors at the mapping. Anything unusual (a repeated graph field, groups, a malformed prefix)
 * makes it give up and unpack the file as it is. */
#define VIEW_MIN_BYTES 4096

typedef struct {
    gsize off, len;
} Span;

static gboolean
wire_varint(const guint8 *d, gsize len, gsize *pos, guint64 *v)
{
    guint64 r = 0;
    for (guint shift = 0; shift < 64 && *pos < len; shift += 7) {
        guint8 b = d[(*pos)++];
        r |= (guint64)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return TRUE;
        }
    }
    return FALSE;
}

static void
put_varint(GByteArray *out, guint64 v)
{
    guint8 b[10];
    guint n = 0;
    do {
        b[n++] = (guint8)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    g_byte_array_append(out, b, n);
}

/* One field at *pos: its number, wire type and the extent of its value. */
static gboolean
wire_field(const guint8 *d, gsize len, gsize *pos, guint32 *field, guint *wt, gsize *vstart,
           gsize *vlen)
{
    guint64 key, v;
    if (!wire_varint(d, len, pos, &key))
        return FALSE;
    *field = (guint32)(key >> 3);
    *wt = key & 7;
    *vstart = *pos;
    switch (*wt) {
    case 0:
        if (!wire_varint(d, len, pos, &v))
            return FALSE;
        break;
    case 1:
        *pos += 8;
        break;
    case 5:
        *pos += 4;
        break;
    case 2:
        if (!wire_varint(d, len, pos, &v) || v > len - *pos)
            return FALSE;
        *vstart = *pos;
        *pos += v;
        break;
    default: /* groups: not in ONNX */
        return FALSE;
    }
    if (*pos > len)
        return FALSE;
    *vlen = *pos - *vstart;
    return TRUE;
}

/* Rewrite one TensorProto: a large raw_data becomes empty and its span (absolute) is recorded. */
static gboolean
strip_tensor(const guint8 *base, gsize off, gsize len, GByteArray *out, Span *span)
{
    const guint8 *d = base + off;
    gsize pos = 0;
    gboolean seen = FALSE;
    while (pos < len) {
        gsize fstart = pos, vstart, vlen;
        guint32 field;
        guint wt;
        if (!wire_field(d, len, &pos, &field, &wt, &vstart, &vlen))
            return FALSE;
        if (field == 9 && wt == 2) {
            if (seen)
                return FALSE; /* protobuf keeps the last one; keep it simple and give up */
            seen = TRUE;
            if (vlen >= VIEW_MIN_BYTES) {
                span->off = off + vstart;
                span->len = vlen;
                put_varint(out, (9 << 3) | 2);
                put_varint(out, 0);
                continue;
            }
        }
        g_byte_array_append(out, d + fstart, (guint)(pos - fstart));
    }
    return TRUE;
}

static gboolean
strip_graph(const guint8 *base, gsize off, gsize len, GByteArray *out, GArray *spans)
{
    const guint8 *d = base + off;
    gsize pos = 0;
    while (pos < len) {
        gsize fstart = pos, vstart, vlen;
        guint32 field;
        guint wt;
        if (!wire_field(d, len, &pos, &field, &wt, &vstart, &vlen))
            return FALSE;
        if (field == 5 && wt == 2) {
            g_autoptr(GByteArray) t = g_byte_array_new();
            Span sp = {0, 0};
            if (!strip_tensor(base, off + vstart, vlen, t, &sp))
                return FALSE;
            g_array_append_val(spans, sp);
            put_varint(out, (5 << 3) | 2);
            put_varint(out, t->len);
            g_byte_array_append(out, t->data, t->len);
            continue;
        }
        g_byte_array_append(out, d + fstart, (guint)(pos - fstart));
    }
    return TRUE;
}

/* The model with large initializer payloads cut out (NULL when there is nothing to gain or the
 * layout is unusual); spans[i] locates initializer i's payload in d (len 0: not cut). */
static GByteArray *
strip_payloads(const guint8 *d, gsize len, GArray *spans)
{
    GByteArray *out = g_byte_array_new();
    gsize pos = 0;
    gboolean seen_graph = FALSE;
    gsize cut = 0;
    while (pos < len) {
        gsize fstart = pos, vstart, vlen;
        guint32 field;
        guint wt;
        if (!wire_field(d, len, &pos, &field, &wt, &vstart, &vlen))
            goto give_up;
        if (field == 7 && wt == 2) {
            if (seen_graph)
                goto give_up;
            seen_graph = TRUE;
            g_autoptr(GByteArray) gr = g_byte_array_new();
            if (!strip_graph(d, vstart, vlen, gr, spans))
                goto give_up;
            put_varint(out, (7 << 3) | 2);
            put_varint(out, gr->len);
            g_byte_array_append(out, gr->data, gr->len);
            continue;
        }
        g_byte_array_append(out, d + fstart, (guint)(pos - fstart));
    }
    for (guint i = 0; i < spans->len; i++)
        cut += g_array_index(spans, Span, i).len;
    if (cut)
        return out;
give_up:
    g_byte_array_unref(out);
    g_array_set_size(spans, 0);
    return NULL;
}

/* protobuf-c unpacks a string field into a C string, so "x\0evil" would become "x": another name, and
 * another model than the file holds. Every string field (names, op types, domains, keys, doc
 * strings; bytes fields such as attribute values may hold any byte) is checked on the wire first,
 * walking the messages the schema nests with a stack of our own. What is malformed is left to
 * protobuf-c to refuse. */
static gboolean
check_strings(const guint8 *d, gsize len, GError **error)
{
    typedef struct {
        const ProtobufCMessageDescriptor *desc;
        gsize pos, end;
    } Frame;
    g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(Frame));
    Frame top = {&onnx__model_proto__descriptor, 0, len};
    g_array_append_val(stack, top);
    while (stack->len) {
        Frame *f = &g_array_index(stack, Frame, stack->len - 1);
        if (f->pos >= f->end) {
            g_array_set_size(stack, stack->len - 1);
            continue;
        }
        guint32 field;
        guint wt;
        gsize vstart, vlen;
        if (!wire_field(d, f->end, &f->pos, &field, &wt, &vstart, &vlen))
            return TRUE;
        if (wt != 2)
            continue;
        const ProtobufCMessageDescriptor *desc = f->desc;
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, field);
        if (!fd)
            continue;
        if (fd->type == PROTOBUF_C_TYPE_STRING && memchr(d + vstart, 0, vlen)) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                        "not a valid ONNX model: a string (%s.%s) contains a NUL byte", desc->short_name,
                        fd->name);
            return FALSE;
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            Frame inner = {fd->descriptor, vstart, vstart + vlen};
            g_array_append_val(stack, inner); /* f is stale from here */
        }
    }
    return TRUE;
}

/* Load from bytes; with file set (the mapping of data), large initializers view it. */
static HgModel *
load_model(const guint8 *data, gsize len, const char *dir, HgBlob *file, GError **error)
{
    if (hg_is_lfs_pointer(data, len)) {
        g_set_error(error, HG_ERROR, HG_ERROR_LFS, "Git LFS pointer, not a model: run git lfs pull");
        return NULL;
    }
    if (len == 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "empty file, not an ONNX model");
        return NULL;
    }
    if (!check_strings(data, len, error))
        return NULL;
    g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(Span));
    g_autoptr(GByteArray) stripped = file ? strip_payloads(data, len, spans) : NULL;
    Onnx__ModelProto *pb = stripped ? onnx__model_proto__unpack(NULL, stripped->len, stripped->data)
                                    : onnx__model_proto__unpack(NULL, len, data);
    if (!pb) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE,
                    "not an ONNX model: the protobuf is truncated or malformed");
        return NULL;
    }
    if (!pb->graph) {
        onnx__model_proto__free_unpacked(pb, NULL);
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not an ONNX model: it has no graph");
        return NULL;
    }
    g_autoptr(GHashTable) views = g_hash_table_new(NULL, NULL);
    if (stripped) {
        for (guint i = 0; i < spans->len && i < pb->graph->n_initializer; i++) {
            Span sp = g_array_index(spans, Span, i);
            if (!sp.len)
                continue;
            Onnx__TensorProto *t = pb->graph->initializer[i];
            g_free(t->raw_data.data);
            t->has_raw_data = TRUE;
            t->raw_data.data = (uint8_t *)data + sp.off;
            t->raw_data.len = sp.len;
            g_hash_table_add(views, t);
        }
    }
    HgEncoding enc = detect_encoding(pb, len);
    LoadCtx c = {hg_model_new(), dir, NULL,
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)hg_blob_unref),
                 error, file, views};
    c.model->encoding = enc;
    c.model->dir = g_strdup(dir);
    saw_field_zero = FALSE;
    HgModel *m = model_from_pb(&c, pb);
    if (m && saw_field_zero) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE,
                    "not an ONNX model: the protobuf is malformed (a field numbered 0)");
        m = NULL;
    }
    /* The viewed payloads belong to the mapping, not to protobuf-c. */
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, views);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        Onnx__TensorProto *t = key;
        t->raw_data.data = NULL;
        t->raw_data.len = 0;
        t->has_raw_data = FALSE;
    }
    onnx__model_proto__free_unpacked(pb, NULL);
    g_hash_table_unref(c.ext_files);
    g_free(c.real_dir);
    if (!m || !hg_model_validate(m, error)) {
        hg_model_free(c.model);
        return NULL;
    }
    return m;
}

HgModel *
hg_model_load_bytes(const void *data, gsize len, const char *dir, GError **error)
{
    g_return_val_if_fail(data != NULL || len == 0, NULL);
    return load_model(data, len, dir, NULL, error);
}

static gboolean
has_suffix_ci(const char *s, const char *suffix)
{
    gsize n = strlen(s), k = strlen(suffix);
    return n >= k && g_ascii_strcasecmp(s + n - k, suffix) == 0;
}

HgModel *
hg_model_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not hang us */
    if (fd < 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s", g_strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s", g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s",
                    S_ISDIR(st.st_mode) ? "is a directory, not a model" : "not a regular file");
        return NULL;
    }
    gsize len = (gsize)st.st_size;
    void *data = NULL;
    if (len) {
        data = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            int e = errno;
            close(fd);
            g_set_error(error, HG_ERROR, HG_ERROR_IO, "cannot map the file: %s", g_strerror(e));
            return NULL;
        }
        madvise(data, len, MADV_SEQUENTIAL);
    }
    g_autofree char *dir = g_path_get_dirname(path);
    /* Tensors that view the file keep the mapping alive after this returns. */
    HgBlob *file = data ? hg_blob_new_mapped(data, len, fd) : NULL;
    if (!file)
        close(fd);
    HgModel *m;
    if (has_suffix_ci(path, ".onnxtxt") && !hg_is_lfs_pointer(data, len)) {
        m = hg_model_parse_text(data ? data : "", len, error);
        if (m) {
            g_free(m->dir);
            m->dir = g_strdup(dir);
        }
    } else {
        m = load_model(data ? data : (const guint8 *)"", len, dir, file, error);
    }
    hg_blob_unref(file);
    if (m)
        hg_outfile_protect(m, &st, path, TRUE);
    return m;
}

HgTensor *
hg_tensor_load_pb(const void *data, gsize len, GError **error)
{
    g_return_val_if_fail(data != NULL || len == 0, NULL);
    Onnx__TensorProto *pb = onnx__tensor_proto__unpack(NULL, len, data);
    if (!pb) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not a TensorProto: truncated or malformed");
        return NULL;
    }
    LoadCtx c = {NULL, NULL, NULL, NULL, error, NULL, NULL};
    HgTensor *t = tensor_from_pb(&c, pb, "tensor");
    onnx__tensor_proto__free_unpacked(pb, NULL);
    if (t && t->storage == HG_STORAGE_EXTERNAL) {
        hg_tensor_free(t);
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "a tensor file with external data");
        return NULL;
    }
    return t;
}

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
        pb->base.descriptor = &packed_descs()->tensor;
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
        pb->base.descriptor = &packed_descs()->sparse;
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
        pb->base.descriptor = &packed_descs()->attr;
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
        loff_t in = data - base;
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
    if (b->err)
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
 * then the file is copied whole and stays byte-identical. Not when those tensors hold less than half
 * of it (the rest converted, or dropped): the dead bytes would go along. */
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
    return src && live * 2 >= len ? src : NULL;
}

/* Place the tensors that are external in the IR: at their offsets when their one source file is
 * copied whole, else laid out again in order, each at a 64-byte boundary. */
static void
data_plan_external(DataPlan *p, HgModel *m)
{
    g_autoptr(GPtrArray) ext = g_ptr_array_new();
    if (m->graph)
        hg_graph_foreach(m->graph, collect_ext_graph, ext);
    if (!ext->len)
        return;
    p->whole = ext_unchanged_source(ext);
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

/* Write the data file: the whole source first when there is one, then every tensor not inside it,
 * copied by the kernel from a mapped file where it lies in one. */
static int
write_data_file(const DataPlan *p, int fd)
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
        if (p->whole && t->blob == p->whole)
            continue;
        gint64 off = *(gint64 *)g_hash_table_lookup(p->offsets, t);
        gsize blen;
        const guint8 *base = t->blob ? hg_blob_data(t->blob, &blen) : NULL;
        if (hg_blob_fd(t->blob) >= 0 && t->nbytes) {
            if (!copy_range(hg_blob_fd(t->blob), (const guint8 *)t->data - base, fd, off,
                            (gint64)t->nbytes, &err) && !err)
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
    if (env && parse_i64(env, &v) && v > 0 && v < PROTOBUF_LIMIT)
        return v;
    return PROTOBUF_LIMIT;
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
 * initializers into the plan until it fits. stream: no data file can be written (every tensor must
 * be inside the model). Returns the packed size, or -1 with an error (s is then cleared). */
static gint64
build_within_limit(SaveCtx *s, HgModel *m, DataPlan *plan, gboolean stream, const char *path,
                   Onnx__ModelProto *pb, GError **error)
{
    gint64 limit = protobuf_limit();
    gint64 size = build_pb(s, m, pb, error);
    if (size < 0 || size <= limit)
        return size;
    g_autoptr(GPtrArray) movable = g_ptr_array_new();
    if (!stream && m->graph)
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

gboolean
hg_model_save(HgModel *m, const char *path, GError **error)
{
    g_return_val_if_fail(m != NULL && path != NULL, FALSE);
    /* The model's own output is opened first: a path that must not be written fails before any file
     * is touched, and its resolved target names the data file. */
    HgOutFile *out = hg_outfile_open(path, 0, m, error);
    if (!out)
        return FALSE;
    gboolean stream = hg_outfile_is_stream(out);
    g_autofree char *target_base = g_path_get_basename(hg_outfile_target(out));
    g_autofree char *target_dir = g_path_get_dirname(hg_outfile_target(out));
    g_autofree char *location = g_strconcat(target_base, ".data", NULL);
    DataPlan plan;
    data_plan_init(&plan);
    if (!stream)
        data_plan_external(&plan, m);

    SaveCtx s;
    Onnx__ModelProto pb;
    /* The context reads the plan while the messages are built. */
    s.placed = plan.offsets;
    s.location = location;
    s.inline_external = stream;
    gint64 size = build_within_limit(&s, m, &plan, stream, path, &pb, error);
    HgOutFile *data = NULL;
    gboolean ok = size >= 0;
    if (ok && plan.tensors->len) {
        /* The data file is a regular file beside the model's target, never standard output. */
        g_autofree char *data_path = g_build_filename(target_dir, location, NULL);
        data = hg_outfile_open(data_path, HG_OUTFILE_SEEKABLE, NULL, error);
        ok = data && hg_outfile_finish(data, write_data_file(&plan, hg_outfile_fd(data)), error);
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
