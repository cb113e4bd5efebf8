/* The text form of a model: ONNX's textual syntax, as onnx.parser (onnx 1.12) reads it.
 *
 *   <
 *     ir_version: 8,
 *     opset_import: ["" : 17]
 *   >
 *   main (float[N,3] X, float[3] "input.1") => (float[N,3] Y)
 *   <
 *     float[3] W = {0.5, 1.0, 2.0},
 *     # float[64,64] big: 4096 values, min -0.5, max 0.5, mean 0.001
 *     float[N,3] T
 *   >
 *   {
 *     T = Mul(X, "input.1")
 *     Y = Add(T, W)  #@ name: "add_0", precision: "fp32 (overflow)"
 *   }
 *
 * What onnx 1.12 reads is written as it reads it: the header, the signature, initializers and
 * value_info in the `<...>` list after the outputs, nodes as `outs = domain.Op <attrs> (ins)` (inputs
 * first when an attribute is a graph, which 1.12 also accepts). Where 1.12 has no syntax, the dump
 * still writes something that this library's parser (text_parse.c) reads back to the same graph:
 *
 * - Names that are not C identifiers ("input.1", "0", "") and names that are type keywords are
 *   quoted, as later ONNX versions allow ("quotable-id"); 1.12 rejects them.
 * - An omitted input or output is left blank (`Op(a, , c)`, which 1.12 reads as ""), except in the
 *   first position, which 1.12 cannot leave blank: there it is written `""`.
 * - Annotations: a comment starting with `#@` (1.12 skips every `#` comment to the end of the line)
 *   carries `key: value` pairs for the item before it: a node (name, domain, overload, doc_string), a
 *   declaration (type, doc_string), or, first in a node list, the graph (doc_string).
 * - Types 1.12 cannot read in a declaration (seq, map, optional, sparse_tensor, opaque, missing
 *   element type) go to a `#@ type:` annotation of an untyped declaration.
 * - Float literals always have a decimal point or an exponent (1.12 reads `1` as an int) and are the
 *   shortest decimal that reads back to the same bits, except that whole numbers below 1e16 are
 *   written out (65504.0, not 6.55e+04). inf and NaN are `inf`, `-inf`, `nan`, `-nan` (the canonical
 *   quiet NaN of the type) or `nan0x7fc00001` (any other NaN: its bits in hex). 1.12 reads none of
 *   these, nor subnormals (its std::stof throws on them).
 * - Strings escape `"`, `\` and control bytes (`\n`, `\t`, `\r`, `\xHH`); bytes that are not UTF-8 are
 *   written `\xHH`. 1.12 has no escapes: strings that need one do not read back the same there.
 * - Attributes whose value does not say their type carry it: `axes: ints = []`, `a: float = @b`,
 *   `type: type_proto = seq(float)`. 1.12 rejects the first and the last.
 * - Tensors of float16, bfloat16, complex, float8 and 4-bit types are written like the others
 *   (`float16[2] {0.5, 1.0}`), which 1.12 rejects ("Unhandled type").
 * - An initializer with more elements than the limit is replaced by a comment with its type and
 *   statistics; a tensor attribute keeps its type with `{}` for values and the statistics in a
 *   comment line above its node. Such a dump does not read back.
 *
 * A node name, domain or doc string that is "" is written like an absent one. Not written: functions,
 * training info, metadata of graphs, nodes and values, denotations, sparse tensors, quantization
 * annotations, tensor storage forms and doc strings, and nodes marked dead.
 *
 * Layout: the header one key per line; a declaration list on the line of its graph when it fits in
 * 100 columns and needs no annotation, else one declaration per line; one node per line, except a node
 * with graph attributes, which lists its attributes one per line after its inputs; two spaces of
 * indent per level.
 *
 * The output depends only on the model, so it is the form golden tests compare.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtof_l */
#endif

#include "halfguard/text.h"
#include "elem.h"
#include "ops/array.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ELEMENTS 64
/* A declaration list that would end past this column is written one declaration per line. */
#define SIGNATURE_WIDTH 100

typedef struct {
    GString *out;
    gint64 max_elements;
} Dump;

static void dump_graph(Dump *d, GString *o, const HgGraph *g, guint indent);

/* ---------------------------------------------------------------- numbers */

/* The conversions are shared with text_parse.c (elem.h, and ops/array.h for float16 and bfloat16):
 * the dump checks that what it writes reads back through the very same code. */

static void
append_nan(GString *o, guint64 bits, int dtype, guint width_bits)
{
    if (bits == hg_canonical_nan(dtype, FALSE))
        g_string_append(o, "nan");
    else if (bits == hg_canonical_nan(dtype, TRUE))
        g_string_append(o, "-nan");
    else
        g_string_append_printf(o, "nan0x%0*" G_GINT64_MODIFIER "x", (int)(width_bits / 4), bits);
}

/* Append the decimal buf (the shortest form of v), adding ".0" when it would otherwise read as an
 * integer. Whole numbers below 1e16 are written out in full: 65504.0 says more than 6.55e+04. */
static void
append_decimal(GString *o, char *buf, gsize size, double v)
{
    if (strstr(buf, "e+") && v > -1e16 && v < 1e16 && v == (double)(gint64)v)
        g_ascii_formatd(buf, (int)size, "%.0f", v);
    g_string_append(o, buf);
    if (!strpbrk(buf, ".eE"))
        g_string_append(o, ".0");
}

/* Encode f as a value of a float type of at most 32 bits (the bits, in the low end). */
static guint32
encode_small(float f, int dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT16:
        return hg_float_to_half(f);
    case HG_DTYPE_BFLOAT16:
        return hg_float_to_bf16(f);
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_COMPLEX64:
        return hg_float_bits(f);
    default:
        return hg_float_to_f8(f, hg_f8_format(dtype));
    }
}

/* A float type of at most 32 bits: the shortest decimal that text_parse.c (strtof, then rounding to
 * the type) reads back to the same bits. */
static void
append_small_float(GString *o, guint32 bits, int dtype, float value)
{
    if (isnan(value)) {
        append_nan(o, bits, dtype, hg_dtype_bits(dtype));
        return;
    }
    if (isinf(value)) {
        g_string_append(o, value < 0 ? "-inf" : "inf");
        return;
    }
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int p = 1; p <= 9; p++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", p);
        g_ascii_formatd(buf, sizeof buf, fmt, (double)value);
        float back = strtof_l(buf, NULL, hg_c_locale());
        if (encode_small(back, dtype) == bits)
            break;
    }
    /* p = 9 always reads back: every value of these types is a float. */
    append_decimal(o, buf, sizeof buf, value);
}

static void
append_f32(GString *o, float f)
{
    append_small_float(o, hg_float_bits(f), HG_DTYPE_FLOAT, f);
}

static void
append_f64(GString *o, double v)
{
    guint64 bits;
    memcpy(&bits, &v, sizeof bits);
    if (isnan(v)) {
        append_nan(o, bits, HG_DTYPE_DOUBLE, 64);
        return;
    }
    if (isinf(v)) {
        g_string_append(o, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int p = 1; p <= 17; p++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", p);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        double back = strtod_l(buf, NULL, hg_c_locale());
        if (memcmp(&back, &v, sizeof v) == 0)
            break;
    }
    append_decimal(o, buf, sizeof buf, v);
}

/* A statistic in a summary: short, not meant to read back. */
static void
append_stat(GString *o, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (isnan(v))
        g_string_append(o, "nan");
    else if (isinf(v))
        g_string_append(o, v < 0 ? "-inf" : "inf");
    else
        g_string_append(o, g_ascii_formatd(buf, sizeof buf, "%.6g", v));
}

/* ---------------------------------------------------------------- names and strings */

static gboolean
is_identifier(const char *s)
{
    if (!s || !(g_ascii_isalpha(*s) || *s == '_'))
        return FALSE;
    for (s++; *s; s++)
        if (!(g_ascii_isalnum(*s) || *s == '_'))
            return FALSE;
    return TRUE;
}

/* Words that start a type: a declaration named like this would read as a type. */
static gboolean
is_type_word(const char *s)
{
    static const char *const words[] = {"seq", "map", "optional", "sparse_tensor", "opaque",
                                        "undefined"};
    for (guint i = 0; i < G_N_ELEMENTS(words); i++)
        if (strcmp(s, words[i]) == 0)
            return TRUE;
    return hg_dtype_from_name(s) != HG_DTYPE_UNDEFINED;
}

static void
append_quoted(GString *o, const char *s, gsize len)
{
    gboolean utf8 = g_utf8_validate_len(s, len, NULL);
    g_string_append_c(o, '"');
    for (gsize i = 0; i < len; i++) {
        guchar c = (guchar)s[i];
        switch (c) {
        case '"':
            g_string_append(o, "\\\"");
            break;
        case '\\':
            g_string_append(o, "\\\\");
            break;
        case '\n':
            g_string_append(o, "\\n");
            break;
        case '\t':
            g_string_append(o, "\\t");
            break;
        case '\r':
            g_string_append(o, "\\r");
            break;
        default:
            if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
                g_string_append_printf(o, "\\x%02x", c);
            else
                g_string_append_c(o, (char)c);
        }
    }
    g_string_append_c(o, '"');
}

static void
append_str(GString *o, const char *s)
{
    append_quoted(o, s ? s : "", s ? strlen(s) : 0);
}

static void
append_bytes(GString *o, GBytes *b)
{
    gsize len = 0;
    const char *data = b ? g_bytes_get_data(b, &len) : NULL;
    append_quoted(o, data ? data : "", len);
}

/* A value, graph or tensor name: bare when it is an identifier that cannot read as a type. */
static void
append_name(GString *o, const char *name)
{
    if (is_identifier(name) && !is_type_word(name))
        g_string_append(o, name);
    else
        append_str(o, name);
}

static void
append_indent(GString *o, guint indent)
{
    for (guint i = 0; i < indent; i++)
        g_string_append(o, "  ");
}

/* ---------------------------------------------------------------- types */

static void
append_tensor_type(GString *o, const HgType *t)
{
    const char *name = t->has_elem_type ? hg_dtype_name(t->elem_type) : NULL;
    g_string_append(o, name ? name : "undefined");
    if (!t->shape) {
        g_string_append(o, "[]");
        return;
    }
    if (t->shape->rank == 0)
        return;
    g_string_append_c(o, '[');
    for (guint i = 0; i < t->shape->rank; i++) {
        const HgDim *dim = &t->shape->dims[i];
        if (i)
            g_string_append_c(o, ',');
        if (dim->has_value)
            g_string_append_printf(o, "%" G_GINT64_FORMAT, dim->value);
        else if (dim->param && is_identifier(dim->param))
            g_string_append(o, dim->param);
        else if (dim->param)
            append_str(o, dim->param);
        else
            g_string_append_c(o, '?');
    }
    g_string_append_c(o, ']');
}

static void
append_type(GString *o, const HgType *t)
{
    if (!t) /* an absent element type of a seq / optional / map */
        return;
    switch (t->kind) {
    case HG_TYPE_TENSOR:
        append_tensor_type(o, t);
        break;
    case HG_TYPE_SPARSE_TENSOR:
        g_string_append(o, "sparse_tensor(");
        append_tensor_type(o, t);
        g_string_append_c(o, ')');
        break;
    case HG_TYPE_SEQUENCE:
        g_string_append(o, "seq(");
        append_type(o, t->elem);
        g_string_append_c(o, ')');
        break;
    case HG_TYPE_OPTIONAL:
        g_string_append(o, "optional(");
        append_type(o, t->elem);
        g_string_append_c(o, ')');
        break;
    case HG_TYPE_MAP: {
        const char *key = t->has_elem_type ? hg_dtype_name(t->elem_type) : NULL;
        g_string_append_printf(o, "map(%s, ", key ? key : "undefined");
        append_type(o, t->elem);
        g_string_append_c(o, ')');
        break;
    }
    case HG_TYPE_OPAQUE:
        g_string_append(o, "opaque(");
        append_str(o, t->opaque_domain);
        g_string_append(o, ", ");
        append_str(o, t->opaque_name);
        g_string_append_c(o, ')');
        break;
    case HG_TYPE_NONE:
        g_string_append(o, "none");
        break;
    }
}

/* Whether 1.12 reads this type in a declaration: a tensor type with a known element type. */
static gboolean
type_is_plain(const HgType *t)
{
    return t->kind == HG_TYPE_TENSOR && t->has_elem_type && hg_dtype_name(t->elem_type) != NULL;
}

/* ---------------------------------------------------------------- tensors */

/* Whether t's data can be read: present and as long as dtype and dims call for. */
static gboolean
tensor_readable(const HgTensor *t, gint64 numel)
{
    if (numel < 0 || !t->has_dtype)
        return FALSE;
    if (t->dtype == HG_DTYPE_STRING)
        return numel == 0 || (t->strings && (gint64)t->strings->len == numel);
    guint bits = hg_dtype_bits(t->dtype);
    if (bits == 0 || numel > G_MAXINT64 / bits)
        return FALSE;
    gint64 want = (numel * bits + 7) / 8;
    return want == 0 || (t->data && (guint64)t->nbytes >= (guint64)want);
}

/* Element i of a numeric tensor, as a double (complex: the real part). */
static double
tensor_element(const HgTensor *t, gint64 i)
{
    const guint8 *p = t->data;
    switch (t->dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_COMPLEX64: {
        float v;
        memcpy(&v, p + (t->dtype == HG_DTYPE_FLOAT ? 4 : 8) * i, 4);
        return v;
    }
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_COMPLEX128: {
        double v;
        memcpy(&v, p + (t->dtype == HG_DTYPE_DOUBLE ? 8 : 16) * i, 8);
        return v;
    }
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16: {
        guint16 v;
        memcpy(&v, p + 2 * i, 2);
        return t->dtype == HG_DTYPE_FLOAT16 ? hg_half_to_float(v) : hg_bf16_to_float(v);
    }
    case HG_DTYPE_FLOAT8E4M3FN:
    case HG_DTYPE_FLOAT8E4M3FNUZ:
    case HG_DTYPE_FLOAT8E5M2:
    case HG_DTYPE_FLOAT8E5M2FNUZ:
        return hg_f8_to_float(p[i], hg_f8_format(t->dtype));
    case HG_DTYPE_INT8:
        return (gint8)p[i];
    case HG_DTYPE_UINT8:
    case HG_DTYPE_BOOL:
        return p[i];
    case HG_DTYPE_INT16: {
        gint16 v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case HG_DTYPE_UINT16: {
        guint16 v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case HG_DTYPE_INT32: {
        gint32 v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case HG_DTYPE_UINT32: {
        guint32 v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case HG_DTYPE_INT64: {
        gint64 v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    case HG_DTYPE_UINT64: {
        guint64 v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    case HG_DTYPE_UINT4:
    case HG_DTYPE_INT4: {
        guint nib = (p[i / 2] >> (4 * (i % 2))) & 0xfu;
        return t->dtype == HG_DTYPE_INT4 && nib >= 8 ? (double)nib - 16 : (double)nib;
    }
    default:
        return NAN;
    }
}

/* Element i, exactly, as the parser reads it back. */
static void
append_element(GString *o, const HgTensor *t, gint64 i)
{
    const guint8 *p = t->data;
    switch (t->dtype) {
    case HG_DTYPE_STRING:
        append_bytes(o, t->strings->pdata[i]);
        break;
    case HG_DTYPE_FLOAT: {
        float v;
        memcpy(&v, p + 4 * i, 4);
        append_f32(o, v);
        break;
    }
    case HG_DTYPE_COMPLEX64: {
        float re, im;
        memcpy(&re, p + 8 * i, 4);
        memcpy(&im, p + 8 * i + 4, 4);
        append_f32(o, re);
        g_string_append(o, ", ");
        append_f32(o, im);
        break;
    }
    case HG_DTYPE_DOUBLE: {
        double v;
        memcpy(&v, p + 8 * i, 8);
        append_f64(o, v);
        break;
    }
    case HG_DTYPE_COMPLEX128: {
        double re, im;
        memcpy(&re, p + 16 * i, 8);
        memcpy(&im, p + 16 * i + 8, 8);
        append_f64(o, re);
        g_string_append(o, ", ");
        append_f64(o, im);
        break;
    }
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16: {
        guint16 v;
        memcpy(&v, p + 2 * i, 2);
        append_small_float(o, v, t->dtype, (float)tensor_element(t, i));
        break;
    }
    case HG_DTYPE_FLOAT8E4M3FN:
    case HG_DTYPE_FLOAT8E4M3FNUZ:
    case HG_DTYPE_FLOAT8E5M2:
    case HG_DTYPE_FLOAT8E5M2FNUZ:
        append_small_float(o, p[i], t->dtype, (float)tensor_element(t, i));
        break;
    case HG_DTYPE_INT64: {
        gint64 v;
        memcpy(&v, p + 8 * i, 8);
        g_string_append_printf(o, "%" G_GINT64_FORMAT, v);
        break;
    }
    case HG_DTYPE_UINT64: {
        guint64 v;
        memcpy(&v, p + 8 * i, 8);
        g_string_append_printf(o, "%" G_GUINT64_FORMAT, v);
        break;
    }
    default: /* the smaller integers and bool are exact in a double */
        g_string_append_printf(o, "%" G_GINT64_FORMAT, (gint64)tensor_element(t, i));
        break;
    }
}

/* "4096 values, min -0.5, max 0.5, mean 0.001" (NaN is left out of the statistics and counted). */
static void
append_summary(GString *o, const HgTensor *t, gint64 numel)
{
    if (!tensor_readable(t, numel)) {
        g_string_append(o, "data not available");
        return;
    }
    if (t->dtype == HG_DTYPE_STRING) {
        g_string_append_printf(o, "%" G_GINT64_FORMAT " strings", numel);
        return;
    }
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    gint64 nans = 0;
    for (gint64 i = 0; i < numel; i++) {
        double v = tensor_element(t, i);
        if (isnan(v)) {
            nans++;
            continue;
        }
        lo = MIN(lo, v);
        hi = MAX(hi, v);
        sum += v;
    }
    g_string_append_printf(o, "%" G_GINT64_FORMAT " values", numel);
    if (numel > nans) {
        g_string_append(o, ", min ");
        append_stat(o, lo);
        g_string_append(o, ", max ");
        append_stat(o, hi);
        g_string_append(o, ", mean ");
        append_stat(o, sum / (double)(numel - nans));
    }
    if (nans)
        g_string_append_printf(o, ", nan %" G_GINT64_FORMAT, nans);
}

static void
append_tensor_type_of(GString *o, const HgTensor *t)
{
    const char *name = t->has_dtype ? hg_dtype_name(t->dtype) : NULL;
    g_string_append(o, name ? name : "undefined");
    if (t->rank == 0)
        return;
    g_string_append_c(o, '[');
    for (guint i = 0; i < t->rank; i++)
        g_string_append_printf(o, "%s%" G_GINT64_FORMAT, i ? "," : "", t->dims[i]);
    g_string_append_c(o, ']');
}

/* Whether t is written in full (else it is summarised). */
static gboolean
tensor_in_full(const Dump *d, const HgTensor *t)
{
    gint64 numel = hg_tensor_numel(t);
    return numel >= 0 && numel <= d->max_elements && tensor_readable(t, numel);
}

static void
append_tensor_values(GString *o, const HgTensor *t)
{
    gint64 numel = hg_tensor_numel(t);
    g_string_append_c(o, '{');
    for (gint64 i = 0; i < numel; i++) {
        if (i)
            g_string_append(o, ", ");
        append_element(o, t, i);
    }
    g_string_append_c(o, '}');
}

/* ---------------------------------------------------------------- attributes */

/* The attribute's kind: its type, or for files that left the type out, the field that is set. */
static HgAttrType
attr_kind(const HgAttr *a)
{
    if (a->type != HG_ATTR_UNDEFINED)
        return a->type;
    if (a->g)
        return HG_ATTR_GRAPH;
    if (a->t)
        return HG_ATTR_TENSOR;
    if (a->graphs && a->graphs->len)
        return HG_ATTR_GRAPHS;
    if (a->tensors && a->tensors->len)
        return HG_ATTR_TENSORS;
    if (a->floats && a->floats->len)
        return HG_ATTR_FLOATS;
    if (a->ints && a->ints->len)
        return HG_ATTR_INTS;
    if (a->strings && a->strings->len)
        return HG_ATTR_STRINGS;
    if (a->tp)
        return HG_ATTR_TYPE_PROTO;
    if (a->has & HG_ATTR_HAS_S)
        return HG_ATTR_STRING;
    if (a->has & HG_ATTR_HAS_F)
        return HG_ATTR_FLOAT;
    return HG_ATTR_INT;
}

static const char *
attr_type_name(HgAttrType t)
{
    switch (t) {
    case HG_ATTR_FLOAT:
        return "float";
    case HG_ATTR_INT:
        return "int";
    case HG_ATTR_STRING:
        return "string";
    case HG_ATTR_TENSOR:
        return "tensor";
    case HG_ATTR_GRAPH:
        return "graph";
    case HG_ATTR_FLOATS:
        return "floats";
    case HG_ATTR_INTS:
        return "ints";
    case HG_ATTR_STRINGS:
        return "strings";
    case HG_ATTR_TENSORS:
        return "tensors";
    case HG_ATTR_GRAPHS:
        return "graphs";
    case HG_ATTR_SPARSE_TENSOR:
        return "sparse_tensor";
    case HG_ATTR_SPARSE_TENSORS:
        return "sparse_tensors";
    case HG_ATTR_TYPE_PROTO:
        return "type_proto";
    case HG_ATTR_TYPE_PROTOS:
        return "type_protos";
    default:
        return "undefined";
    }
}

static guint
list_len(const HgAttr *a, HgAttrType kind)
{
    const GArray *ga = kind == HG_ATTR_FLOATS ? a->floats : kind == HG_ATTR_INTS ? a->ints : NULL;
    const GPtrArray *pa = kind == HG_ATTR_STRINGS    ? a->strings
                          : kind == HG_ATTR_TENSORS  ? a->tensors
                          : kind == HG_ATTR_GRAPHS   ? a->graphs
                          : kind == HG_ATTR_TYPE_PROTOS ? a->type_protos
                                                        : NULL;
    return ga ? ga->len : pa ? pa->len : 0;
}

/* A tensor value "float[2] name {1.0, 2.0}"; summarised ones get "{}" and a comment in *notes. */
static void
append_tensor_attr(Dump *d, GString *o, const HgTensor *t, const char *attr, GString *notes,
                   guint indent)
{
    append_tensor_type_of(o, t);
    if (t->name && *t->name) {
        g_string_append_c(o, ' ');
        append_name(o, t->name);
    }
    g_string_append_c(o, ' ');
    if (tensor_in_full(d, t)) {
        append_tensor_values(o, t);
        return;
    }
    g_string_append(o, "{}");
    append_indent(notes, indent);
    g_string_append_printf(notes, "# %s: ", attr);
    append_tensor_type_of(notes, t);
    g_string_append(notes, " not shown: ");
    append_summary(notes, t, hg_tensor_numel(t));
    g_string_append_c(notes, '\n');
}

/* One attribute "name = value". Graph values span lines at indent. */
static void
append_attr(Dump *d, GString *o, const HgAttr *a, GString *notes, guint indent)
{
    HgAttrType kind = attr_kind(a);
    const char *name = a->name ? a->name : "";
    /* Attribute names are never types, so only non-identifiers need quotes. */
    if (is_identifier(name))
        g_string_append(o, name);
    else
        append_str(o, name);
    if (a->ref_attr_name) {
        g_string_append_printf(o, ": %s = @", attr_type_name(kind));
        if (is_identifier(a->ref_attr_name))
            g_string_append(o, a->ref_attr_name);
        else
            append_str(o, a->ref_attr_name);
        return;
    }
    gboolean is_list = kind == HG_ATTR_FLOATS || kind == HG_ATTR_INTS || kind == HG_ATTR_STRINGS ||
                       kind == HG_ATTR_TENSORS || kind == HG_ATTR_GRAPHS;
    /* Typed where the value alone does not say the type. */
    if ((is_list && list_len(a, kind) == 0) || kind == HG_ATTR_TYPE_PROTO ||
        kind == HG_ATTR_TYPE_PROTOS)
        g_string_append_printf(o, ": %s", attr_type_name(kind));
    g_string_append(o, " = ");
    switch (kind) {
    case HG_ATTR_FLOAT:
        append_f32(o, a->f);
        break;
    case HG_ATTR_INT:
        g_string_append_printf(o, "%" G_GINT64_FORMAT, a->i);
        break;
    case HG_ATTR_STRING:
        append_bytes(o, a->s);
        break;
    case HG_ATTR_TENSOR:
        if (a->t)
            append_tensor_attr(d, o, a->t, name, notes, indent);
        else
            g_string_append(o, "undefined {}");
        break;
    case HG_ATTR_GRAPH:
        if (a->g)
            dump_graph(d, o, a->g, indent);
        break;
    case HG_ATTR_TYPE_PROTO:
        append_type(o, a->tp);
        break;
    case HG_ATTR_SPARSE_TENSOR:
    case HG_ATTR_SPARSE_TENSORS:
        /* No text form; the parser rejects this. */
        g_string_append(o, "{}");
        break;
    default: {
        guint n = list_len(a, kind);
        g_string_append_c(o, '[');
        for (guint i = 0; i < n; i++) {
            if (i)
                g_string_append(o, ", ");
            switch (kind) {
            case HG_ATTR_FLOATS:
                append_f32(o, g_array_index(a->floats, float, i));
                break;
            case HG_ATTR_INTS:
                g_string_append_printf(o, "%" G_GINT64_FORMAT, g_array_index(a->ints, gint64, i));
                break;
            case HG_ATTR_STRINGS:
                append_bytes(o, a->strings->pdata[i]);
                break;
            case HG_ATTR_TENSORS:
                append_tensor_attr(d, o, a->tensors->pdata[i], name, notes, indent);
                break;
            case HG_ATTR_GRAPHS:
                dump_graph(d, o, a->graphs->pdata[i], indent);
                break;
            case HG_ATTR_TYPE_PROTOS:
                append_type(o, a->type_protos->pdata[i]);
                break;
            default:
                break;
            }
        }
        g_string_append_c(o, ']');
        break;
    }
    }
}

/* ---------------------------------------------------------------- nodes */

/* "a, , c": blank for an omitted value, except first, where 1.12 needs a name: "". A blank last
 * value leaves "a," (1.12 reads the empty name after the comma). */
static void
append_value_list(GString *o, HgValue *const *vals, guint n)
{
    for (guint i = 0; i < n; i++) {
        if (i)
            g_string_append(o, ", ");
        if (vals[i])
            append_name(o, vals[i]->name);
        else if (i == 0)
            g_string_append(o, "\"\"");
    }
    if (n > 1 && !vals[n - 1])
        g_string_truncate(o, o->len - 1);
}

/* Append one "key: value" of an annotation. */
static void
pragma_key(GString *p, const char *key)
{
    g_string_append(p, p->len ? ", " : "");
    g_string_append_printf(p, "%s: ", key);
}

static gboolean
is_qualified_identifier(const char *s)
{
    g_auto(GStrv) parts = g_strsplit(s, ".", -1);
    for (guint i = 0; parts[i]; i++)
        if (!is_identifier(parts[i]))
            return FALSE;
    return TRUE;
}

static gboolean
node_has_graph_attr(const HgNode *n)
{
    for (guint i = 0; i < n->attrs->len; i++) {
        HgAttrType k = attr_kind(n->attrs->pdata[i]);
        if (k == HG_ATTR_GRAPH || k == HG_ATTR_GRAPHS)
            return TRUE;
    }
    return FALSE;
}

static void
dump_node(Dump *d, GString *o, const HgNode *n, guint indent)
{
    g_autoptr(GString) line = g_string_new(NULL);
    g_autoptr(GString) notes = g_string_new(NULL);
    g_autoptr(GString) pragma = g_string_new(NULL);

    append_indent(line, indent);
    append_value_list(line, n->outputs, n->n_outputs);
    g_string_append(line, n->n_outputs ? " = " : "= ");

    const char *domain = n->domain && *n->domain ? n->domain : NULL;
    gboolean op_ident = is_identifier(n->op_type);
    if (domain && op_ident && is_qualified_identifier(domain)) {
        g_string_append_printf(line, "%s.", domain);
    } else if (domain) {
        pragma_key(pragma, "domain");
        append_str(pragma, domain);
    }
    if (op_ident)
        g_string_append(line, n->op_type);
    else
        append_str(line, n->op_type);

    gboolean with_graphs = node_has_graph_attr(n);
    if (with_graphs) {
        /* Inputs first: they would otherwise trail the subgraphs' closing lines. */
        g_string_append(line, " (");
        append_value_list(line, n->inputs, n->n_inputs);
        g_string_append(line, ") <\n");
        for (guint i = 0; i < n->attrs->len; i++) {
            append_indent(line, indent + 1);
            append_attr(d, line, n->attrs->pdata[i], notes, indent + 1);
            g_string_append(line, i + 1 < n->attrs->len ? ",\n" : "\n");
        }
        append_indent(line, indent);
        g_string_append_c(line, '>');
    } else {
        if (n->attrs->len) {
            g_string_append(line, " <");
            for (guint i = 0; i < n->attrs->len; i++) {
                if (i)
                    g_string_append(line, ", ");
                append_attr(d, line, n->attrs->pdata[i], notes, indent);
            }
            g_string_append(line, "> ");
        }
        g_string_append_c(line, '(');
        append_value_list(line, n->inputs, n->n_inputs);
        g_string_append_c(line, ')');
    }

    if (n->name && *n->name) {
        pragma_key(pragma, "name");
        append_str(pragma, n->name);
    }
    if (n->overload && *n->overload) {
        pragma_key(pragma, "overload");
        append_str(pragma, n->overload);
    }
    if (n->doc_string && *n->doc_string) {
        pragma_key(pragma, "doc_string");
        append_str(pragma, n->doc_string);
    }
    if (n->precision != HG_PRECISION_UNSET) {
        /* The plan: "fp16" or "fp32", and the reason in parentheses. */
        g_autofree char *plan = g_strdup_printf("%s%s%s%s", n->precision == HG_PRECISION_FP32 ? "fp32" : "fp16",
                                                n->precision_reason ? " (" : "",
                                                n->precision_reason ? n->precision_reason : "",
                                                n->precision_reason ? ")" : "");
        pragma_key(pragma, "precision");
        append_str(pragma, plan);
    }
    g_string_append_len(o, notes->str, (gssize)notes->len);
    g_string_append_len(o, line->str, (gssize)line->len);
    if (pragma->len)
        g_string_append_printf(o, "  #@ %s", pragma->str);
    g_string_append_c(o, '\n');
}

/* ---------------------------------------------------------------- graphs */

/* A declaration "type name", and its annotation (type 1.12 cannot read, doc string) in *pragma. */
static void
append_decl(GString *o, GString *pragma, const HgValueDecl *decl)
{
    g_string_truncate(pragma, 0);
    if (decl->type && type_is_plain(decl->type)) {
        append_type(o, decl->type);
        g_string_append_c(o, ' ');
    } else if (decl->type) {
        pragma_key(pragma, "type");
        append_type(pragma, decl->type);
    }
    append_name(o, decl->name ? decl->name : (decl->value ? decl->value->name : ""));
    if (decl->doc_string && *decl->doc_string) {
        pragma_key(pragma, "doc_string");
        append_str(pragma, decl->doc_string);
    }
}

/* "(a, b)" on one line; NULL when a declaration needs an annotation (a comment ends the line). */
static char *
decls_one_line(const GPtrArray *decls)
{
    g_autoptr(GString) o = g_string_new("(");
    g_autoptr(GString) pragma = g_string_new(NULL);
    for (guint i = 0; i < decls->len; i++) {
        if (i)
            g_string_append(o, ", ");
        append_decl(o, pragma, decls->pdata[i]);
        if (pragma->len)
            return NULL;
    }
    g_string_append_c(o, ')');
    return g_string_free(g_steal_pointer(&o), FALSE);
}

static void
append_decls_multiline(GString *o, const GPtrArray *decls, guint indent)
{
    g_autoptr(GString) pragma = g_string_new(NULL);
    if (!decls->len) {
        g_string_append(o, "()");
        return;
    }
    g_string_append(o, "(\n");
    for (guint i = 0; i < decls->len; i++) {
        append_indent(o, indent + 1);
        append_decl(o, pragma, decls->pdata[i]);
        if (i + 1 < decls->len)
            g_string_append_c(o, ',');
        if (pragma->len)
            g_string_append_printf(o, "  #@ %s", pragma->str);
        g_string_append_c(o, '\n');
    }
    append_indent(o, indent);
    g_string_append_c(o, ')');
}

/* A declaration list on the current line when it fits and needs no annotation, else one per line. */
static void
append_decls(GString *o, const GPtrArray *decls, guint indent)
{
    g_autofree char *one = decls_one_line(decls);
    gsize col = 0;
    while (col < o->len && o->str[o->len - 1 - col] != '\n')
        col++;
    if (one && col + strlen(one) <= SIGNATURE_WIDTH)
        g_string_append(o, one);
    else
        append_decls_multiline(o, decls, indent);
}

/* Whether the graph has a `<...>` list: initializers (also summarised or sparse ones) or value_info. */
static gboolean
has_value_list(const HgGraph *g)
{
    return g->initializers->len || g->sparse_initializers->len || g->value_info->len;
}

/* One entry of the `<...>` list: a comment (a summary) takes no comma; an annotation goes after the
 * comma, since it runs to the end of the line. */
typedef struct {
    GString *text, *pragma;
    gboolean comment;
} Entry;

static void
entry_clear(gpointer p)
{
    Entry *e = p;
    g_string_free(e->text, TRUE);
    g_string_free(e->pragma, TRUE);
}

static Entry *
entry_add(GArray *entries, gboolean comment)
{
    Entry e = {g_string_new(NULL), g_string_new(NULL), comment};
    g_array_append_val(entries, e);
    return &g_array_index(entries, Entry, entries->len - 1);
}

static void
dump_value_list(Dump *d, GString *o, const HgGraph *g, guint indent)
{
    g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(Entry));
    g_array_set_clear_func(entries, entry_clear);

    for (guint i = 0; i < g->initializers->len; i++) {
        const HgTensor *t = g->initializers->pdata[i];
        gboolean full = tensor_in_full(d, t);
        GString *e = entry_add(entries, !full)->text;
        if (!full)
            g_string_append(e, "# ");
        append_tensor_type_of(e, t);
        g_string_append_c(e, ' ');
        append_name(e, t->name ? t->name : "");
        if (full) {
            g_string_append(e, " = ");
            append_tensor_values(e, t);
        } else {
            g_string_append(e, ": ");
            append_summary(e, t, hg_tensor_numel(t));
        }
    }
    for (guint i = 0; i < g->sparse_initializers->len; i++) {
        const HgSparseTensor *s = g->sparse_initializers->pdata[i];
        GString *e = entry_add(entries, TRUE)->text;
        g_string_append(e, "# sparse initializer ");
        append_name(e, s->values && s->values->name ? s->values->name : "");
        g_string_append(e, ": not shown");
    }
    for (guint i = 0; i < g->value_info->len; i++) {
        Entry *e = entry_add(entries, FALSE);
        append_decl(e->text, e->pragma, g->value_info->pdata[i]);
    }

    guint last = G_MAXUINT;
    for (guint i = 0; i < entries->len; i++)
        if (!g_array_index(entries, Entry, i).comment)
            last = i;

    append_indent(o, indent);
    g_string_append(o, "<\n");
    for (guint i = 0; i < entries->len; i++) {
        const Entry *e = &g_array_index(entries, Entry, i);
        append_indent(o, indent + 1);
        g_string_append_len(o, e->text->str, (gssize)e->text->len);
        if (!e->comment && i != last)
            g_string_append_c(o, ',');
        if (e->pragma->len)
            g_string_append_printf(o, "  #@ %s", e->pragma->str);
        g_string_append_c(o, '\n');
    }
    append_indent(o, indent);
    g_string_append(o, ">\n");
}

/* A graph: "name (inputs) => (outputs)", the `<...>` list, and "{ nodes }". The first line continues
 * the current one; the rest is indented by indent levels, the closing brace at indent. */
static void
dump_graph(Dump *d, GString *o, const HgGraph *g, guint indent)
{
    /* 1.12 reads a main graph without a name; a subgraph attribute needs one to be seen as a graph. */
    if (g->name && *g->name)
        append_name(o, g->name);
    else if (g->parent)
        g_string_append(o, "\"\"");

    if (g->name && *g->name)
        g_string_append_c(o, ' ');
    append_decls(o, g->inputs, indent);
    g_string_append(o, " => ");
    append_decls(o, g->outputs, indent);

    if (has_value_list(g)) {
        g_string_append_c(o, '\n');
        dump_value_list(d, o, g, indent);
        append_indent(o, indent);
        g_string_append(o, "{\n");
    } else {
        g_string_append(o, " {\n");
    }
    if (g->doc_string && *g->doc_string) {
        append_indent(o, indent + 1);
        g_string_append(o, "#@ doc_string: ");
        append_str(o, g->doc_string);
        g_string_append_c(o, '\n');
    }
    for (guint i = 0; i < g->nodes->len; i++) {
        const HgNode *n = g->nodes->pdata[i];
        if (!(n->flags & HG_NODE_DEAD))
            dump_node(d, o, n, indent + 1);
    }
    append_indent(o, indent);
    g_string_append_c(o, '}');
}

/* ---------------------------------------------------------------- model */

static void
header_key(GString *o, gboolean *first, const char *key)
{
    g_string_append(o, *first ? "<\n  " : ",\n  ");
    g_string_append_printf(o, "%s: ", key);
    *first = FALSE;
}

static void
dump_header(Dump *d, const HgModel *m)
{
    GString *o = d->out;
    gboolean first = TRUE;
    if (m->has_ir_version) {
        header_key(o, &first, "ir_version");
        g_string_append_printf(o, "%" G_GINT64_FORMAT, m->ir_version);
    }
    if (m->opsets->len) {
        header_key(o, &first, "opset_import");
        g_string_append_c(o, '[');
        for (guint i = 0; i < m->opsets->len; i++) {
            const HgOpset *op = m->opsets->pdata[i];
            if (i)
                g_string_append(o, ", ");
            append_str(o, op->domain);
            g_string_append_printf(o, " : %" G_GINT64_FORMAT, op->has_version ? op->version : 0);
        }
        g_string_append_c(o, ']');
    }
    const struct {
        const char *key, *value;
    } strs[] = {
        {"producer_name", m->producer_name},
        {"producer_version", m->producer_version},
        {"domain", m->domain},
    };
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++) {
        if (!strs[i].value)
            continue;
        header_key(o, &first, strs[i].key);
        append_str(o, strs[i].value);
    }
    if (m->has_model_version) {
        header_key(o, &first, "model_version");
        g_string_append_printf(o, "%" G_GINT64_FORMAT, m->model_version);
    }
    if (m->doc_string) {
        header_key(o, &first, "doc_string");
        append_str(o, m->doc_string);
    }
    if (m->metadata && m->metadata->len) {
        header_key(o, &first, "metadata_props");
        g_string_append_c(o, '[');
        for (guint i = 0; i < m->metadata->len; i++) {
            const HgStringPair *sp = m->metadata->pdata[i];
            if (i)
                g_string_append(o, ", ");
            append_str(o, sp->key);
            g_string_append(o, " : ");
            append_str(o, sp->value);
        }
        g_string_append_c(o, ']');
    }
    if (!first)
        g_string_append(o, "\n>\n");
}

/* The text of m (see the top of this file), newly allocated: g_free it. opts may be NULL (a limit
 * of 64 elements for tensors written in full). Never fails: what has no text form is left out or
 * summarised in a comment. */
char *
hg_model_to_text(HgModel *m, const HgTextOptions *opts)
{
    g_return_val_if_fail(m != NULL, NULL);
    Dump d = {g_string_new(NULL), DEFAULT_MAX_ELEMENTS};
    if (opts && opts->max_elements > 0)
        d.max_elements = opts->max_elements;
    dump_header(&d, m);
    if (m->graph) {
        dump_graph(&d, d.out, m->graph, 0);
        g_string_append_c(d.out, '\n');
    }
    if (m->functions && m->functions->len)
        g_string_append_printf(d.out, "# %u functions not shown\n", m->functions->len);
    if (m->training_info && m->training_info->len)
        g_string_append_printf(d.out, "# training info not shown\n");
    return g_string_free(d.out, FALSE);
}
