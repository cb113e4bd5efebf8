/* Loading ONNX protobuf files. With onnx_save.c and onnx_pb.c, the only code that sees onnx.pb-c.h.
 *
 * Map the file, let protobuf-c unpack it, convert every message into the IR (stealing the large
 * raw_data buffers instead of copying them), map external data files read-only, and reject what is
 * invalid (validate.c). A name ending in .onnxtxt goes to the text parser instead.
 *
 * Lossless round trips rest on three things: the IR keeps every field and the presence of optional
 * ones; protobuf-c keeps unknown fields and writes them back; and the encoding of repeated scalars
 * (packed or not) is detected here (onnx_pb.c) and repeated at save.
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

static HgUnknown *
unknown_from_pb(const ProtobufCMessage *msg)
{
    if (!msg->n_unknown_fields)
        return NULL;
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
            if (!hg_parse_count(sp->value, &t->ext_offset)) {
                g_set_error(c->error, HG_ERROR, HG_ERROR_INVALID,
                            "tensor '%s': external data offset '%s' is not a number", label,
                            sp->value ? sp->value : "");
                return FALSE;
            }
            has_off = TRUE;
        } else if (g_strcmp0(sp->key, "length") == 0) {
            if (!hg_parse_count(sp->value, &t->ext_length)) {
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

/* Three things are checked on the wire, walking the messages the schema nests with a stack of our own,
 * before protobuf-c unpacks anything:
 * - protobuf-c unpacks a string field into a C string, so "x\0evil" would become "x": another name,
 *   and another model than the file holds. Every string field (names, op types, domains, keys, doc
 *   strings; bytes fields such as attribute values may hold any byte) must be free of NUL.
 * - no field is numbered 0 (protobuf-c keeps a padded key of 0 and cannot read back what it saves);
 * - protobuf-c recurses once per nested message: 10,000 nested If bodies overflowed the stack. Graphs
 *   may nest HG_MAX_GRAPH_DEPTH deep and types HG_MAX_TYPE_DEPTH; the stack here stays that small.
 * A message that is malformed at its own level is left to protobuf-c to refuse (it scans a message's
 * fields before it unpacks any of them); its siblings are still walked. */
static gboolean
check_wire(const guint8 *d, gsize len, GError **error)
{
    typedef struct {
        const ProtobufCMessageDescriptor *desc;
        gsize pos, end;
    } Frame;
    g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(Frame));
    Frame top = {&onnx__model_proto__descriptor, 0, len};
    g_array_append_val(stack, top);
    guint graphs = 0, types = 0; /* GraphProto and TypeProto frames on the stack */
    while (stack->len) {
        Frame *f = &g_array_index(stack, Frame, stack->len - 1);
        guint32 field;
        guint wt;
        gsize vstart, vlen;
        if (f->pos >= f->end || !wire_field(d, f->end, &f->pos, &field, &wt, &vstart, &vlen)) {
            graphs -= f->desc == &onnx__graph_proto__descriptor;
            types -= f->desc == &onnx__type_proto__descriptor;
            g_array_set_size(stack, stack->len - 1);
            continue;
        }
        if (field == 0) {
            /* No message has a field 0. protobuf-c refuses it in a one-byte key but keeps it as an
             * unknown field when the key is padded ("81 00"), and then cannot read back what it
             * wrote: a model that loads must save. */
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE,
                        "not an ONNX model: the protobuf is malformed (a field numbered 0, in %s)",
                        f->desc->short_name);
            return FALSE;
        }
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
            graphs += inner.desc == &onnx__graph_proto__descriptor;
            types += inner.desc == &onnx__type_proto__descriptor;
            if (graphs > HG_MAX_GRAPH_DEPTH || types > HG_MAX_TYPE_DEPTH) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                            "not a valid ONNX model: %s nested more than %d levels deep (%s.%s)",
                            graphs > HG_MAX_GRAPH_DEPTH ? "graphs" : "types",
                            graphs > HG_MAX_GRAPH_DEPTH ? HG_MAX_GRAPH_DEPTH : HG_MAX_TYPE_DEPTH,
                            desc->short_name, fd->name);
                return FALSE;
            }
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
    if (!check_wire(data, len, error))
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
    HgEncoding enc = hg_pb_detect_encoding(pb, len);
    LoadCtx c = {hg_model_new(), dir, NULL,
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)hg_blob_unref),
                 error, file, views};
    c.model->encoding = enc;
    c.model->dir = g_strdup(dir);
    HgModel *m = model_from_pb(&c, pb);
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
    if (m)
        m->external_data = g_hash_table_size(c.ext_files) > 0;
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
