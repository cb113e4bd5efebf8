/* Tensor files: TensorProto (.pb, the ONNX test-data layout) and NumPy .npy (format 1.0-3.0, C order,
 * little-endian). */
#include "halfguard/io.h"
#include "halfguard/run.h"
#include "ir_private.h"
#include "infile.h"
#include "outfile.h"

#include <string.h>

static const struct {
    const char *descr; /* without the byte-order character */
    int dtype;
} npy_types[] = {
    {"f4", HG_DTYPE_FLOAT},  {"f2", HG_DTYPE_FLOAT16}, {"f8", HG_DTYPE_DOUBLE}, {"i1", HG_DTYPE_INT8},
    {"u1", HG_DTYPE_UINT8},  {"i2", HG_DTYPE_INT16},   {"u2", HG_DTYPE_UINT16}, {"i4", HG_DTYPE_INT32},
    {"u4", HG_DTYPE_UINT32}, {"i8", HG_DTYPE_INT64},   {"u8", HG_DTYPE_UINT64}, {"b1", HG_DTYPE_BOOL},
};

static int
npy_dtype(const char *descr)
{
    /* '<' little-endian, '|' not applicable (1-byte types), '=' native (little here). */
    if (!descr[0] || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
        return HG_DTYPE_UNDEFINED;
    for (guint i = 0; i < G_N_ELEMENTS(npy_types); i++)
        if (strcmp(descr + 1, npy_types[i].descr) == 0)
            return npy_types[i].dtype;
    return HG_DTYPE_UNDEFINED;
}

/* The value of key in the header dict, e.g. 'descr': '<f4' -> "<f4" (quotes stripped) or
 * 'shape': (1, 3) -> "(1, 3)". Returns a new string or NULL. */
static char *
header_value(const char *h, const char *key)
{
    g_autofree char *k = g_strdup_printf("'%s':", key);
    const char *p = strstr(h, k);
    if (!p)
        return NULL;
    p += strlen(k);
    while (*p == ' ')
        p++;
    const char *end;
    if (*p == '\'') {
        end = strchr(p + 1, '\'');
        return end ? g_strndup(p + 1, (gsize)(end - p - 1)) : NULL;
    }
    if (*p == '(') {
        end = strchr(p, ')');
        return end ? g_strndup(p, (gsize)(end - p + 1)) : NULL;
    }
    end = p + strcspn(p, ",}");
    return g_strndup(p, (gsize)(end - p));
}

HgTensor *
hg_npy_parse(const guint8 *d, gsize len, const char *name, GError **error)
{
    if (len < 10 || memcmp(d, "\x93NUMPY", 6) != 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not a .npy file");
        return NULL;
    }
    guint major = d[6];
    gsize hlen, off;
    if (major == 1) {
        hlen = d[8] | (gsize)d[9] << 8;
        off = 10;
    } else if ((major == 2 || major == 3) && len >= 12) {
        hlen = d[8] | (gsize)d[9] << 8 | (gsize)d[10] << 16 | (gsize)d[11] << 24;
        off = 12;
    } else {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, ".npy format version %u is not supported", major);
        return NULL;
    }
    if (hlen > len - off) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "truncated .npy header");
        return NULL;
    }
    g_autofree char *h = g_strndup((const char *)d + off, hlen);
    g_autofree char *descr = header_value(h, "descr");
    g_autofree char *fortran = header_value(h, "fortran_order");
    g_autofree char *shape = header_value(h, "shape");
    int dtype = descr ? npy_dtype(descr) : HG_DTYPE_UNDEFINED;
    if (dtype == HG_DTYPE_UNDEFINED) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, ".npy element type '%s' is not supported",
                    descr ? descr : "?");
        return NULL;
    }
    if (!fortran || strcmp(fortran, "False") != 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "Fortran-ordered .npy arrays are not supported");
        return NULL;
    }
    if (!shape || shape[0] != '(') {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, ".npy header has no shape");
        return NULL;
    }
    gint64 dims[32];
    guint rank = 0;
    for (const char *p = shape + 1; *p && *p != ')';) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        gint64 v = g_ascii_strtoll(p, &end, 10);
        if (end == p || v < 0 || rank == G_N_ELEMENTS(dims)) {
            g_set_error(error, HG_ERROR, HG_ERROR_PARSE, ".npy shape '%s' is malformed", shape);
            return NULL;
        }
        dims[rank++] = v;
        p = end;
    }
    /* The shape is measured against the bytes there before anything is allocated: a header that
     * claims 2^40 elements must not make us ask for them. */
    HgTensor probe = {.has_dtype = TRUE, .dtype = dtype, .rank = rank, .dims = dims};
    gint64 need = hg_tensor_expected_bytes(&probe);
    if (need < 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, ".npy shape %s is too large", shape);
        return NULL;
    }
    gsize body = len - off - hlen;
    if ((guint64)body < (guint64)need) {
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, ".npy data holds %" G_GSIZE_FORMAT
                    " bytes, its shape %s needs %" G_GINT64_FORMAT, body, shape, need);
        return NULL;
    }
    HgTensor *t = hg_tensor_try_new(name, dtype, rank, dims);
    if (!t) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, ".npy shape %s: out of memory", shape);
        return NULL;
    }
    if (t->nbytes)
        memcpy(hg_tensor_data_mut(t), d + off + hlen, t->nbytes);
    return t;
}

HgTensor *
hg_tensor_load_file(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!hg_infile_read(path, &data, &len, error))
        return NULL;
    if (g_str_has_suffix(path, ".npy")) {
        g_autofree char *base = g_path_get_basename(path);
        base[strlen(base) - 4] = '\0';
        return hg_npy_parse((const guint8 *)data, len, base, error);
    }
    return hg_tensor_load_pb(data, len, error);
}

static const char *
npy_descr(int dtype)
{
    for (guint i = 0; i < G_N_ELEMENTS(npy_types); i++)
        if (npy_types[i].dtype == dtype)
            return npy_types[i].descr;
    return NULL;
}

gboolean
hg_tensor_save_npy(const HgTensor *t, const char *path, GError **error)
{
    const char *descr = npy_descr(t->dtype);
    if (!descr || !t->data) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "%s tensors cannot be written as .npy",
                    hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "this");
        return FALSE;
    }
    GString *h = g_string_new(NULL);
    g_string_append_printf(h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                           hg_dtype_bits(t->dtype) == 8 ? '|' : '<', descr);
    for (guint i = 0; i < t->rank; i++)
        g_string_append_printf(h, "%" G_GINT64_FORMAT "%s", t->dims[i], t->rank == 1 ? "," : (i + 1 < t->rank ? ", " : ""));
    g_string_append(h, "), }");
    /* Pad with spaces so the data starts at a multiple of 64, ending the header with a newline. */
    while ((10 + h->len + 1) % 64)
        g_string_append_c(h, ' ');
    g_string_append_c(h, '\n');
    GString *out = g_string_sized_new(10 + h->len + t->nbytes);
    g_string_append_len(out, "\x93NUMPY\x01\x00", 8);
    g_string_append_c(out, (char)(h->len & 0xff));
    g_string_append_c(out, (char)(h->len >> 8));
    g_string_append_len(out, h->str, (gssize)h->len);
    g_string_append_len(out, t->data, (gssize)t->nbytes);
    gboolean ok = hg_outfile_write(path, out->str, out->len, error);
    g_string_free(h, TRUE);
    g_string_free(out, TRUE);
    return ok;
}

gboolean
hg_tensor_save_pb_file(const HgTensor *t, const char *path, GError **error)
{
    gsize len;
    g_autofree guint8 *buf = hg_tensor_save_pb(t, &len);
    return hg_outfile_write(path, buf, len, error);
}
