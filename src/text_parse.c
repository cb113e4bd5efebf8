/* Reading ONNX text into the IR: a hand-written lexer and recursive-descent parser for the syntax
 * text_dump.c writes (onnx 1.12's textual syntax plus quoted names and `#@` annotations; the header
 * comment of text_dump.c is the reference).
 *
 *   model  ::= ('<' key ':' value (',' key ':' value)* '>')? graph
 *   graph  ::= name? '(' decls? ')' '=>' '(' decls? ')' ('<' decls? '>')? '{' node* '}'
 *   decl   ::= type? name ('=' '{' values '}')?
 *   node   ::= names? '=' (id '.')* op ('<' attrs '>')? '(' names? ')' ('<' attrs '>')?
 *   attr   ::= name (':' attr-type)? '=' (value | '[' values? ']' | '@' id)
 *   value  ::= number | string | tensor-type name? '='? '{' values '}' | graph | type
 *   name   ::= identifier | "quoted"
 *
 * `#` starts a comment to the end of the line; `#@ key: value, ...` there annotates the declaration or
 * node before it (or, first in a node list, the graph). Also read, though never written: 1.12's
 * initializers in the inputs (`float[2] W = {1.0, 2.0}`), types written directly in a declaration
 * (`seq(float) S`), and an int literal where a float is declared (`alpha: float = 1`, which 1.12
 * would read as an int).
 *
 * The text is read in two steps: the parser builds a small syntax tree, then the tree is turned into
 * the IR graph by graph, defining every node output before any input is resolved, as the protobuf
 * loader does (files list nodes out of order, subgraphs read values of nodes listed after theirs).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtof_l */
#endif

#include "text_parse.h"

#include "halfguard/io.h"
#include "halfguard/text.h"
#include "elem.h"
#include "ir_private.h"
#include "ops/array.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- syntax tree */

typedef struct GraphAst GraphAst;
static void graph_ast_free(GraphAst *ga);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GraphAst, graph_ast_free)

typedef struct {
    char *name; /* NULL: omitted */
    HgLoc loc;
} Ref;

typedef struct {
    char *name;
    HgLoc loc;
    HgType *type;    /* NULL: untyped */
    HgTensor *init;  /* given with '=': an initializer (taken when the graph is built) */
    gboolean is_init;
    char *doc_string;
} Decl;

typedef struct {
    HgAttr *attr;      /* complete, except for graphs */
    GraphAst *graph;   /* GRAPH */
    GPtrArray *graphs; /* of GraphAst: GRAPHS */
} AttrAst;

typedef struct {
    HgLoc loc;
    char *op_type, *domain, *name, *overload, *doc_string;
    char *precision;          /* the plan's annotation: "fp16" or "fp32", then " (reason)" */
    GArray *outputs, *inputs; /* of Ref */
    GPtrArray *attrs;         /* of AttrAst */
} NodeAst;

struct GraphAst {
    char *name;
    char *doc_string;
    GPtrArray *inputs, *outputs, *values; /* of Decl (values: the `<...>` list) */
    GPtrArray *nodes;                     /* of NodeAst */
};

static void
ref_clear(gpointer p)
{
    g_free(((Ref *)p)->name);
}

static void
decl_free(gpointer p)
{
    Decl *d = p;
    g_free(d->name);
    hg_type_free(d->type);
    hg_tensor_free(d->init);
    g_free(d->doc_string);
    g_free(d);
}

static void
attr_ast_free(gpointer p)
{
    AttrAst *a = p;
    hg_attr_free(a->attr);
    graph_ast_free(a->graph);
    if (a->graphs)
        g_ptr_array_unref(a->graphs);
    g_free(a);
}

static void
node_ast_free(gpointer p)
{
    NodeAst *n = p;
    g_free(n->op_type);
    g_free(n->domain);
    g_free(n->name);
    g_free(n->overload);
    g_free(n->doc_string);
    g_free(n->precision);
    g_array_unref(n->outputs);
    g_array_unref(n->inputs);
    g_ptr_array_unref(n->attrs);
    g_free(n);
}

static GraphAst *
graph_ast_new(void)
{
    GraphAst *ga = g_new0(GraphAst, 1);
    ga->inputs = g_ptr_array_new_with_free_func(decl_free);
    ga->outputs = g_ptr_array_new_with_free_func(decl_free);
    ga->values = g_ptr_array_new_with_free_func(decl_free);
    ga->nodes = g_ptr_array_new_with_free_func(node_ast_free);
    return ga;
}

static void
graph_ast_free(GraphAst *ga)
{
    if (!ga)
        return;
    g_free(ga->name);
    g_free(ga->doc_string);
    g_ptr_array_unref(ga->inputs);
    g_ptr_array_unref(ga->outputs);
    g_ptr_array_unref(ga->values);
    g_ptr_array_unref(ga->nodes);
    g_free(ga);
}

/* ---------------------------------------------------------------- annotations */

enum {
    PRAGMA_NAME = 1 << 0,
    PRAGMA_DOMAIN = 1 << 1,
    PRAGMA_OVERLOAD = 1 << 2,
    PRAGMA_DOC = 1 << 3,
    PRAGMA_TYPE = 1 << 4,
    PRAGMA_PRECISION = 1 << 5,
};

typedef struct {
    char **name, **domain, **overload, **doc_string, **precision;
    HgType **type;
} PragmaTarget;

static gboolean parse_type(HgParser *p, HgType **out);

/* Annotations after an item (`#@ key: value, ...`), as many as there are. allowed: PRAGMA_* keys. */
static gboolean
parse_pragmas(HgParser *p, guint allowed, const PragmaTarget *target)
{
    static const struct {
        const char *key;
        guint bit;
    } keys[] = {
        {"name", PRAGMA_NAME},         {"domain", PRAGMA_DOMAIN}, {"overload", PRAGMA_OVERLOAD},
        {"doc_string", PRAGMA_DOC},    {"type", PRAGMA_TYPE},     {"precision", PRAGMA_PRECISION},
    };
    while (hg_parse_peek(p)->kind == TK_PRAGMA) {
        hg_parse_advance(p);
        do {
            const HgTok *kt = hg_parse_peek(p);
            if (kt->kind != TK_IDENT)
                return hg_parse_expected(p, "an annotation key");
            guint bit = 0;
            for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
                if (strcmp(kt->text, keys[i].key) == 0)
                    bit = keys[i].bit;
            if (!bit)
                return hg_parse_fail_at(p, hg_parse_loc_of(kt), "unknown annotation '%s'", kt->text);
            if (!(allowed & bit))
                return hg_parse_fail_at(p, hg_parse_loc_of(kt), "annotation '%s' does not apply here", kt->text);
            hg_parse_advance(p);
            if (!hg_parse_expect(p, ':', "':' after the annotation key"))
                return FALSE;
            char **field = bit == PRAGMA_NAME        ? target->name
                           : bit == PRAGMA_DOMAIN    ? target->domain
                           : bit == PRAGMA_OVERLOAD  ? target->overload
                           : bit == PRAGMA_DOC       ? target->doc_string
                           : bit == PRAGMA_PRECISION ? target->precision
                                                     : NULL;
            if (field ? *field != NULL : *target->type != NULL)
                return hg_parse_fail_at(p, hg_parse_loc_of(kt), "'%s' is given twice", kt->text);
            if (field) {
                if (!hg_parse_string(p, field, "a string"))
                    return FALSE;
            } else if (!parse_type(p, target->type)) {
                return FALSE;
            }
        } while (hg_parse_accept(p, ','));
        if (hg_parse_peek(p)->kind != TK_PRAGMA_END)
            return hg_parse_expected(p, "',' or the end of the annotation");
        hg_parse_advance(p);
    }
    return TRUE;
}

/* ---------------------------------------------------------------- types */

static gboolean
is_type_keyword(const char *s)
{
    return strcmp(s, "seq") == 0 || strcmp(s, "map") == 0 || strcmp(s, "optional") == 0 ||
           strcmp(s, "sparse_tensor") == 0 || strcmp(s, "opaque") == 0;
}

/* An element type name: a dtype, or "undefined" (a tensor type without one). */
static gboolean
elem_type_of(const HgTok *t, int *dtype)
{
    if (t->kind != TK_IDENT)
        return FALSE;
    if (strcmp(t->text, "undefined") == 0) {
        *dtype = HG_DTYPE_UNDEFINED;
        return TRUE;
    }
    *dtype = hg_dtype_from_name(t->text);
    return *dtype != HG_DTYPE_UNDEFINED;
}

/* Whether a type starts here (in a declaration, before the name). */
static gboolean
next_is_type(const HgParser *p)
{
    int dtype;
    const HgTok *t = hg_parse_peek(p);
    if (elem_type_of(t, &dtype))
        return TRUE;
    return t->kind == TK_IDENT && is_type_keyword(t->text) && hg_parse_is_punct(hg_parse_peek_at(p, 1), '(');
}

static void
dim_clear(gpointer p)
{
    g_free(((HgDim *)p)->param);
}

/* elem-type ('[' dims? ']')?: "float" is a scalar, "float[]" has no shape. */
static gboolean
parse_tensor_type(HgParser *p, HgType **out, HgTypeKind kind)
{
    int dtype;
    const HgTok *t = hg_parse_peek(p);
    if (!elem_type_of(t, &dtype))
        return hg_parse_expected(p, "an element type (float, int64, ...)");
    hg_parse_advance(p);
    /* Dims as the file had them: exporters write -1 for unknown, so negative values are kept. */
    g_autoptr(GArray) dims = g_array_new(FALSE, TRUE, sizeof(HgDim));
    g_array_set_clear_func(dims, dim_clear);
    gboolean has_shape = TRUE;
    if (hg_parse_accept(p, '[')) {
        if (hg_parse_accept(p, ']')) {
            has_shape = FALSE;
        } else {
            do {
                const HgTok *d = hg_parse_peek(p);
                HgDim dim = {0};
                if (hg_parse_accept(p, '?')) {
                } else if (d->kind == TK_IDENT || d->kind == TK_STRING) {
                    if (!hg_parse_name(p, &dim.param, "a dimension"))
                        return FALSE;
                } else if (d->kind == TK_INT) {
                    if (!hg_parse_int(p, &dim.value, "a dimension"))
                        return FALSE;
                    dim.has_value = TRUE;
                } else {
                    return hg_parse_expected(p, "a dimension (a number, a name or '?')");
                }
                g_array_append_val(dims, dim);
            } while (hg_parse_accept(p, ','));
            if (!hg_parse_expect(p, ']', "',' or ']' after the dimensions"))
                return FALSE;
        }
    }
    HgType *type = hg_type_new_tensor(dtype, 0, NULL);
    type->kind = kind;
    type->has_elem_type = dtype != HG_DTYPE_UNDEFINED;
    hg_shape_free(type->shape);
    type->shape = NULL;
    if (has_shape) {
        type->shape = hg_shape_new(dims->len);
        /* The names move to the shape; the array's copies must not be freed. */
        if (dims->len)
            memcpy(type->shape->dims, dims->data, dims->len * sizeof(HgDim));
        g_array_set_clear_func(dims, NULL);
    }
    *out = type;
    return TRUE;
}

static gboolean parse_type_inner(HgParser *p, HgType **out);

/* Enter a nested graph or type; FALSE (with an error) when too deep. */
static gboolean
enter(HgParser *p)
{
    if (p->depth >= HG_PARSE_MAX_DEPTH)
        return hg_parse_fail_at(p, hg_parse_loc_of(hg_parse_peek(p)), "nested more than %d levels deep", HG_PARSE_MAX_DEPTH);
    p->depth++;
    return TRUE;
}

/* A type: tensor type, seq(T), optional(T), map(K, T), sparse_tensor(T), opaque(d, n) or none. */
static gboolean
parse_type(HgParser *p, HgType **out)
{
    *out = NULL;
    if (!enter(p))
        return FALSE;
    gboolean ok = parse_type_inner(p, out);
    p->depth--;
    return ok;
}

static gboolean
parse_type_inner(HgParser *p, HgType **out)
{
    const HgTok *t = hg_parse_peek(p);
    *out = NULL;
    if (t->kind != TK_IDENT)
        return hg_parse_expected(p, "a type");
    if (hg_parse_is_word(t, "none")) {
        hg_parse_advance(p);
        *out = g_new0(HgType, 1);
        return TRUE;
    }
    if (!is_type_keyword(t->text))
        return parse_tensor_type(p, out, HG_TYPE_TENSOR);
    g_autofree char *word = g_strdup(hg_parse_advance(p)->text);
    if (!hg_parse_expect(p, '(', "'(' after the type keyword"))
        return FALSE;
    HgType *type = NULL;
    if (strcmp(word, "sparse_tensor") == 0) {
        if (!parse_tensor_type(p, &type, HG_TYPE_SPARSE_TENSOR))
            return FALSE;
    } else if (strcmp(word, "opaque") == 0) {
        type = g_new0(HgType, 1);
        type->kind = HG_TYPE_OPAQUE;
        if (!hg_parse_is_punct(hg_parse_peek(p), ')')) {
            if (!hg_parse_name(p, &type->opaque_domain, "the opaque type's domain") ||
                (hg_parse_accept(p, ',') && !hg_parse_name(p, &type->opaque_name, "the opaque type's name"))) {
                hg_type_free(type);
                return FALSE;
            }
        }
    } else {
        type = g_new0(HgType, 1);
        type->kind = strcmp(word, "seq") == 0        ? HG_TYPE_SEQUENCE
                     : strcmp(word, "optional") == 0 ? HG_TYPE_OPTIONAL
                                                     : HG_TYPE_MAP;
        if (type->kind == HG_TYPE_MAP) {
            int key;
            if (!elem_type_of(hg_parse_peek(p), &key)) {
                hg_type_free(type);
                return hg_parse_expected(p, "the map's key type");
            }
            hg_parse_advance(p);
            type->has_elem_type = key != HG_DTYPE_UNDEFINED;
            type->elem_type = key;
            if (!hg_parse_expect(p, ',', "',' after the map's key type")) {
                hg_type_free(type);
                return FALSE;
            }
        }
        if (!hg_parse_is_punct(hg_parse_peek(p), ')') && !parse_type(p, &type->elem)) {
            hg_type_free(type);
            return FALSE;
        }
    }
    if (!hg_parse_expect(p, ')', "')' to close the type")) {
        hg_type_free(type);
        return FALSE;
    }
    *out = type;
    return TRUE;
}

/* ---------------------------------------------------------------- tensor constants */

static gboolean
store_int(HgParser *p, const HgTok *t, HgTensor *tensor, guint8 *data, gint64 i)
{
    gint64 lo, hi;
    switch (tensor->dtype) {
    case HG_DTYPE_INT8:
        lo = G_MININT8, hi = G_MAXINT8;
        break;
    case HG_DTYPE_UINT8:
        lo = 0, hi = G_MAXUINT8;
        break;
    case HG_DTYPE_INT16:
        lo = G_MININT16, hi = G_MAXINT16;
        break;
    case HG_DTYPE_UINT16:
        lo = 0, hi = G_MAXUINT16;
        break;
    case HG_DTYPE_INT32:
        lo = G_MININT32, hi = G_MAXINT32;
        break;
    case HG_DTYPE_UINT32:
        lo = 0, hi = G_MAXUINT32;
        break;
    case HG_DTYPE_BOOL:
        lo = 0, hi = 1;
        break;
    case HG_DTYPE_INT4:
        lo = -8, hi = 7;
        break;
    case HG_DTYPE_UINT4:
        lo = 0, hi = 15;
        break;
    default:
        lo = G_MININT64, hi = G_MAXINT64;
        break;
    }
    if (t->kind != TK_INT)
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected an integer for %s", hg_dtype_name(tensor->dtype));
    if (tensor->dtype == HG_DTYPE_UINT64) {
        guint64 u;
        if (!g_ascii_string_to_unsigned(t->text, 10, 0, G_MAXUINT64, &u, NULL))
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s is out of range for uint64", t->text);
        memcpy(data + 8 * i, &u, 8);
        return TRUE;
    }
    gint64 v;
    if (!g_ascii_string_to_signed(t->text, 10, lo, hi, &v, NULL))
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s is out of range for %s", t->text, hg_dtype_name(tensor->dtype));
    switch (tensor->dtype) {
    case HG_DTYPE_INT8:
    case HG_DTYPE_UINT8:
    case HG_DTYPE_BOOL:
        data[i] = (guint8)v;
        break;
    case HG_DTYPE_INT16:
    case HG_DTYPE_UINT16: {
        guint16 w = (guint16)v;
        memcpy(data + 2 * i, &w, 2);
        break;
    }
    case HG_DTYPE_INT32:
    case HG_DTYPE_UINT32: {
        guint32 w = (guint32)v;
        memcpy(data + 4 * i, &w, 4);
        break;
    }
    case HG_DTYPE_INT4:
    case HG_DTYPE_UINT4: {
        guint shift = 4 * (guint)(i % 2);
        data[i / 2] = (guint8)((data[i / 2] & ~(0xfu << shift)) | (((guint)v & 0xfu) << shift));
        break;
    }
    default:
        memcpy(data + 8 * i, &v, 8);
        break;
    }
    return TRUE;
}

/* Value k of the list (complex types take two per element) into data. */
static gboolean
store_value(HgParser *p, const HgTok *t, HgTensor *tensor, guint8 *data, gint64 k)
{
    int dtype = tensor->dtype;
    if (!hg_dtype_is_float(dtype) && !hg_f8_format(dtype) && dtype != HG_DTYPE_COMPLEX64 &&
        dtype != HG_DTYPE_COMPLEX128)
        return store_int(p, t, tensor, data, k);
    if (!hg_parse_is_float_token(t))
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected a number for %s", hg_dtype_name(dtype));
    guint64 bits;
    if (!hg_parse_float_bits(p, t, dtype, &bits))
        return FALSE;
    guint width = dtype == HG_DTYPE_COMPLEX64 ? 32 : dtype == HG_DTYPE_COMPLEX128 ? 64 : hg_dtype_bits(dtype);
    if (width == 64) {
        memcpy(data + 8 * k, &bits, 8);
    } else if (width == 32) {
        guint32 w = (guint32)bits;
        memcpy(data + 4 * k, &w, 4);
    } else if (width == 16) {
        guint16 w = (guint16)bits;
        memcpy(data + 2 * k, &w, 2);
    } else {
        data[k] = (guint8)bits;
    }
    return TRUE;
}

/* '{' values '}' for a tensor of the given type (numeric dims) called name (may be NULL). */
static gboolean
parse_tensor_data(HgParser *p, const HgType *type, HgLoc type_loc, const char *name, HgTensor **out)
{
    if (type->kind != HG_TYPE_TENSOR || !type->has_elem_type)
        return hg_parse_fail_at(p, type_loc, "a constant needs a tensor type with an element type");
    if (!type->shape)
        return hg_parse_fail_at(p, type_loc, "a constant needs a shape ('float[2]', or 'float' for a scalar)");
    int dtype = type->elem_type;
    if (!hg_dtype_name(dtype))
        return hg_parse_fail_at(p, type_loc, "unknown element type %d", dtype);
    guint rank = type->shape->rank;
    g_autofree gint64 *dims = g_new0(gint64, rank ? rank : 1);
    for (guint i = 0; i < rank; i++) {
        if (!type->shape->dims[i].has_value)
            return hg_parse_fail_at(p, type_loc, "a constant needs numeric dimensions");
        dims[i] = type->shape->dims[i].value;
    }
    gint64 numel = hg_numel(rank, dims);
    gint64 per = dtype == HG_DTYPE_COMPLEX64 || dtype == HG_DTYPE_COMPLEX128 ? 2 : 1;
    if (numel < 0 || numel > G_MAXINT64 / 2)
        return hg_parse_fail_at(p, type_loc, "the constant's dimensions are negative or too large");

    HgLoc open = hg_parse_loc_of(hg_parse_peek(p));
    if (!hg_parse_expect(p, '{', "'{' and the values"))
        return FALSE;
    g_autoptr(GPtrArray) vals = g_ptr_array_new();
    if (!hg_parse_accept(p, '}')) {
        do {
            const HgTok *t = hg_parse_peek(p);
            if (t->kind != TK_INT && t->kind != TK_FLOAT && t->kind != TK_STRING && t->kind != TK_IDENT)
                return hg_parse_expected(p, "a value");
            g_ptr_array_add(vals, (gpointer)hg_parse_advance(p));
        } while (hg_parse_accept(p, ','));
        if (!hg_parse_expect(p, '}', "',' or '}' after the values"))
            return FALSE;
    }
    if ((gint64)vals->len != numel * per)
        return hg_parse_fail_at(p, open, "%s has %" G_GINT64_FORMAT " values, %u given", name ? name : "the constant",
                       numel * per, vals->len);

    HgTensor *t = NULL;
    if (dtype == HG_DTYPE_STRING) {
        t = g_new0(HgTensor, 1);
        t->name = g_strdup(name);
        t->has_dtype = TRUE;
        t->dtype = dtype;
        t->rank = rank;
        t->dims = g_new0(gint64, rank ? rank : 1);
        if (rank)
            memcpy(t->dims, dims, sizeof(gint64) * rank);
        t->storage = HG_STORAGE_STRINGS;
        t->strings = g_ptr_array_new_full(vals->len, (GDestroyNotify)g_bytes_unref);
        for (guint i = 0; i < vals->len; i++) {
            const HgTok *v = vals->pdata[i];
            if (v->kind != TK_STRING) {
                hg_tensor_free(t);
                return hg_parse_fail_at(p, hg_parse_loc_of(v), "expected a string");
            }
            g_ptr_array_add(t->strings, g_bytes_new(v->text, v->len));
        }
    } else {
        /* hg_tensor_new wants a dims pointer even for a scalar. */
        t = hg_tensor_new(name, dtype, rank, dims);
        if (!t)
            return hg_parse_fail_at(p, type_loc, "the constant is too large");
        guint8 *data = hg_tensor_data_mut(t);
        for (guint i = 0; i < vals->len; i++) {
            if (!store_value(p, vals->pdata[i], t, data, i)) {
                hg_tensor_free(t);
                return FALSE;
            }
        }
    }
    *out = t;
    return TRUE;
}

/* tensor-type name? '='? '{' values '}' (a tensor attribute value). */
static gboolean
parse_tensor_constant(HgParser *p, HgTensor **out)
{
    HgLoc at = hg_parse_loc_of(hg_parse_peek(p));
    HgType *type = NULL;
    if (!parse_tensor_type(p, &type, HG_TYPE_TENSOR))
        return FALSE;
    g_autofree char *name = NULL;
    const HgTok *t = hg_parse_peek(p);
    gboolean ok = !((t->kind == TK_IDENT || t->kind == TK_STRING) &&
                    !hg_parse_name(p, &name, "the tensor's name"));
    hg_parse_accept(p, '=');
    ok = ok && parse_tensor_data(p, type, at, name, out);
    hg_type_free(type);
    return ok;
}


/* ---------------------------------------------------------------- graphs */

static gboolean parse_graph(HgParser *p, gboolean main_graph, GraphAst **out);

/* Annotations of a declaration: its type (one 1.12 cannot read) and doc string. */
static gboolean
parse_decl_pragmas(HgParser *p, Decl *d)
{
    HgType *pragma_type = NULL;
    PragmaTarget target = {.doc_string = &d->doc_string, .type = &pragma_type};
    if (!parse_pragmas(p, PRAGMA_TYPE | PRAGMA_DOC, &target)) {
        hg_type_free(pragma_type);
        return FALSE;
    }
    if (!pragma_type)
        return TRUE;
    if (d->type || d->is_init) {
        hg_type_free(pragma_type);
        return hg_parse_fail_at(p, d->loc, "'%s' has a type and a type annotation", d->name);
    }
    d->type = pragma_type;
    return TRUE;
}

/* type? name ('=' '{' values '}')?, then its annotations (before and after the comma). */
static gboolean
parse_decl(HgParser *p, GPtrArray *list, gboolean allow_init)
{
    Decl *d = g_new0(Decl, 1);
    g_ptr_array_add(list, d);
    HgLoc type_loc = hg_parse_loc_of(hg_parse_peek(p));
    if (next_is_type(p) && !parse_type(p, &d->type))
        return FALSE;
    d->loc = hg_parse_loc_of(hg_parse_peek(p));
    if (!hg_parse_name(p, &d->name, d->type ? "a name after the type" : "a type or a name"))
        return FALSE;
    if (!d->name)
        d->name = g_strdup("");
    if (allow_init && hg_parse_accept(p, '=')) {
        if (!d->type)
            return hg_parse_fail_at(p, d->loc, "initializer '%s' needs a type", d->name);
        if (!parse_tensor_data(p, d->type, type_loc, d->name, &d->init))
            return FALSE;
        d->is_init = TRUE;
    }
    return parse_decl_pragmas(p, d);
}

/* open decls? close, where decls are comma-separated and annotations may follow each comma. */
static gboolean
parse_decls(HgParser *p, char open, char close, GPtrArray *list, gboolean allow_init, const char *what)
{
    g_autofree char *want = g_strdup_printf("'%c' and the %s", open, what);
    if (!hg_parse_expect(p, open, want))
        return FALSE;
    if (hg_parse_accept(p, close))
        return TRUE;
    for (;;) {
        if (!parse_decl(p, list, allow_init))
            return FALSE;
        if (!hg_parse_accept(p, ','))
            break;
        if (!parse_decl_pragmas(p, list->pdata[list->len - 1]))
            return FALSE;
    }
    g_autofree char *end = g_strdup_printf("',' or '%c' after the %s", close, what);
    return hg_parse_expect(p, close, end);
}

/* names? up to (not including) the token that ends the list: blank or "" entries are omitted. */
static gboolean
parse_refs(HgParser *p, GArray *refs, char end, const char *what)
{
    if (hg_parse_is_punct(hg_parse_peek(p), end))
        return TRUE;
    do {
        Ref r = {NULL, hg_parse_loc_of(hg_parse_peek(p))};
        const HgTok *t = hg_parse_peek(p);
        if (!(hg_parse_is_punct(t, ',') || hg_parse_is_punct(t, end)) && !hg_parse_name(p, &r.name, what))
            return FALSE;
        g_array_append_val(refs, r);
    } while (hg_parse_accept(p, ','));
    return TRUE;
}

/* ---------------------------------------------------------------- attributes */

static const struct {
    const char *name;
    HgAttrType type;
} attr_types[] = {
    {"float", HG_ATTR_FLOAT},
    {"int", HG_ATTR_INT},
    {"string", HG_ATTR_STRING},
    {"tensor", HG_ATTR_TENSOR},
    {"graph", HG_ATTR_GRAPH},
    {"floats", HG_ATTR_FLOATS},
    {"ints", HG_ATTR_INTS},
    {"strings", HG_ATTR_STRINGS},
    {"tensors", HG_ATTR_TENSORS},
    {"graphs", HG_ATTR_GRAPHS},
    {"sparse_tensor", HG_ATTR_SPARSE_TENSOR},
    {"sparse_tensors", HG_ATTR_SPARSE_TENSORS},
    {"type_proto", HG_ATTR_TYPE_PROTO},
    {"type_protos", HG_ATTR_TYPE_PROTOS},
};

static const char *
attr_type_name(HgAttrType t)
{
    for (guint i = 0; i < G_N_ELEMENTS(attr_types); i++)
        if (attr_types[i].type == t)
            return attr_types[i].name;
    return "undefined";
}

/* The scalar kind of a list kind (INTS -> INT), or the kind itself. */
static HgAttrType
element_kind(HgAttrType t)
{
    switch (t) {
    case HG_ATTR_FLOATS:
        return HG_ATTR_FLOAT;
    case HG_ATTR_INTS:
        return HG_ATTR_INT;
    case HG_ATTR_STRINGS:
        return HG_ATTR_STRING;
    case HG_ATTR_TENSORS:
        return HG_ATTR_TENSOR;
    case HG_ATTR_GRAPHS:
        return HG_ATTR_GRAPH;
    case HG_ATTR_SPARSE_TENSORS:
        return HG_ATTR_SPARSE_TENSOR;
    case HG_ATTR_TYPE_PROTOS:
        return HG_ATTR_TYPE_PROTO;
    default:
        return t;
    }
}

static HgAttrType
list_kind(HgAttrType t)
{
    switch (t) {
    case HG_ATTR_FLOAT:
        return HG_ATTR_FLOATS;
    case HG_ATTR_INT:
        return HG_ATTR_INTS;
    case HG_ATTR_STRING:
        return HG_ATTR_STRINGS;
    case HG_ATTR_TENSOR:
        return HG_ATTR_TENSORS;
    case HG_ATTR_GRAPH:
        return HG_ATTR_GRAPHS;
    case HG_ATTR_TYPE_PROTO:
        return HG_ATTR_TYPE_PROTOS;
    case HG_ATTR_SPARSE_TENSOR:
        return HG_ATTR_SPARSE_TENSORS;
    default:
        return HG_ATTR_UNDEFINED;
    }
}

/* One attribute value. */
typedef struct {
    HgAttrType kind;
    HgLoc loc;
    float f;
    gint64 i;
    GBytes *s;
    HgTensor *t;
    GraphAst *g;
    HgType *tp;
} Value;

static void
value_clear(Value *v)
{
    if (v->s)
        g_bytes_unref(v->s);
    hg_tensor_free(v->t);
    graph_ast_free(v->g);
    hg_type_free(v->tp);
    memset(v, 0, sizeof *v);
}

/* A single value; want is the annotated element kind (UNDEFINED when not annotated). */
static gboolean
parse_value(HgParser *p, HgAttrType want, Value *v)
{
    const HgTok *t = hg_parse_peek(p);
    v->loc = hg_parse_loc_of(t);
    int dtype;
    if (want == HG_ATTR_TYPE_PROTO) {
        v->kind = HG_ATTR_TYPE_PROTO;
        return parse_type(p, &v->tp);
    }
    if (want == HG_ATTR_SPARSE_TENSOR)
        return hg_parse_fail_at(p, v->loc, "sparse tensor attributes have no text form");
    if ((t->kind == TK_IDENT || t->kind == TK_STRING) && hg_parse_is_punct(hg_parse_peek_at(p, 1), '(') &&
        !(t->kind == TK_IDENT && elem_type_of(t, &dtype))) {
        v->kind = HG_ATTR_GRAPH;
        return parse_graph(p, FALSE, &v->g);
    }
    if (elem_type_of(t, &dtype)) {
        v->kind = HG_ATTR_TENSOR;
        return parse_tensor_constant(p, &v->t);
    }
    if (t->kind == TK_STRING) {
        v->kind = HG_ATTR_STRING;
        v->s = g_bytes_new(t->text, t->len);
        hg_parse_advance(p);
        return TRUE;
    }
    if (t->kind == TK_INT && want != HG_ATTR_FLOAT) {
        v->kind = HG_ATTR_INT;
        return hg_parse_int(p, &v->i, "an integer");
    }
    if (hg_parse_is_float_token(t)) {
        guint64 bits;
        if (!hg_parse_float_bits(p, t, HG_DTYPE_FLOAT, &bits))
            return FALSE;
        guint32 b32 = (guint32)bits;
        memcpy(&v->f, &b32, 4);
        v->kind = HG_ATTR_FLOAT;
        hg_parse_advance(p);
        return TRUE;
    }
    return hg_parse_expected(p, "an attribute value");
}

/* Check a value against the annotated kind (an int literal reads as a float where a float is
 * wanted). */
static gboolean
value_fits(HgParser *p, const char *attr, HgAttrType want, const Value *v)
{
    if (want == HG_ATTR_UNDEFINED || want == v->kind)
        return TRUE;
    return hg_parse_fail_at(p, v->loc, "attribute '%s' is declared %s but this value is %s", attr,
                   attr_type_name(want), attr_type_name(v->kind));
}

/* name (':' type)? '=' value. */
static gboolean
parse_attr(HgParser *p, GPtrArray *attrs)
{
    HgLoc at = hg_parse_loc_of(hg_parse_peek(p));
    g_autofree char *name = NULL;
    if (!hg_parse_name(p, &name, "an attribute name"))
        return FALSE;
    if (!name)
        name = g_strdup("");
    HgAttrType declared = HG_ATTR_UNDEFINED;
    if (hg_parse_accept(p, ':')) {
        const HgTok *t = hg_parse_peek(p);
        for (guint i = 0; t->kind == TK_IDENT && i < G_N_ELEMENTS(attr_types); i++)
            if (strcmp(t->text, attr_types[i].name) == 0)
                declared = attr_types[i].type;
        if (declared == HG_ATTR_UNDEFINED)
            return hg_parse_expected(p, "an attribute type (int, float, string, ints, ...)");
        hg_parse_advance(p);
    }
    if (!hg_parse_expect(p, '=', "'=' after the attribute name"))
        return FALSE;

    AttrAst *aa = g_new0(AttrAst, 1);
    g_ptr_array_add(attrs, aa);

    if (hg_parse_accept(p, '@')) {
        g_autofree char *ref = NULL;
        if (!hg_parse_name(p, &ref, "the name of the referenced attribute"))
            return FALSE;
        aa->attr = hg_attr_new(name, declared);
        /* A reference carries no value: only the type (if any) is set. */
        aa->attr->has = declared ? HG_ATTR_HAS_TYPE : 0;
        if (aa->attr->s) {
            g_bytes_unref(aa->attr->s);
            aa->attr->s = NULL;
        }
        aa->attr->ref_attr_name = g_steal_pointer(&ref);
        return TRUE;
    }

    if (!hg_parse_accept(p, '[')) {
        if (declared != HG_ATTR_UNDEFINED && list_kind(declared) == HG_ATTR_UNDEFINED &&
            declared != HG_ATTR_SPARSE_TENSOR)
            return hg_parse_fail_at(p, at, "attribute '%s' is declared %s: its value is a list in '[...]'", name,
                           attr_type_name(declared));
        Value v = {0};
        if (!parse_value(p, declared, &v) || !value_fits(p, name, declared, &v)) {
            value_clear(&v);
            return FALSE;
        }
        HgAttr *a = aa->attr = hg_attr_new(name, v.kind);
        switch (v.kind) {
        case HG_ATTR_FLOAT:
            a->f = v.f;
            break;
        case HG_ATTR_INT:
            a->i = v.i;
            break;
        case HG_ATTR_STRING:
            g_bytes_unref(a->s);
            a->s = g_steal_pointer(&v.s);
            break;
        case HG_ATTR_TENSOR:
            a->t = g_steal_pointer(&v.t);
            break;
        case HG_ATTR_GRAPH:
            aa->graph = g_steal_pointer(&v.g);
            break;
        default:
            a->tp = g_steal_pointer(&v.tp);
            break;
        }
        value_clear(&v);
        return TRUE;
    }

    /* A list: the elements' kind, or the annotation, says which list. */
    HgAttrType want = declared ? element_kind(declared) : HG_ATTR_UNDEFINED;
    if (declared && want == declared)
        return hg_parse_fail_at(p, at, "attribute '%s' is declared %s, which is not a list", name,
                       attr_type_name(declared));
    g_autoptr(GArray) vals = g_array_new(FALSE, TRUE, sizeof(Value));
    g_array_set_clear_func(vals, (GDestroyNotify)value_clear);
    gboolean any_float = FALSE;
    if (!hg_parse_accept(p, ']')) {
        do {
            Value v = {0};
            if (!parse_value(p, want, &v)) {
                value_clear(&v);
                return FALSE;
            }
            any_float |= v.kind == HG_ATTR_FLOAT;
            g_array_append_val(vals, v);
        } while (hg_parse_accept(p, ','));
        if (!hg_parse_expect(p, ']', "',' or ']' after the list"))
            return FALSE;
    }
    HgAttrType elem = want;
    if (!elem && vals->len)
        elem = any_float ? HG_ATTR_FLOAT : g_array_index(vals, Value, 0).kind;
    if (!elem)
        return hg_parse_fail_at(p, at, "an empty list needs a type: '%s: ints = []'", name);
    for (guint i = 0; i < vals->len; i++) {
        Value *v = &g_array_index(vals, Value, i);
        if (elem == HG_ATTR_FLOAT && v->kind == HG_ATTR_INT) {
            v->kind = HG_ATTR_FLOAT;
            v->f = (float)v->i;
        }
        if (!value_fits(p, name, elem, v))
            return FALSE;
    }
    HgAttr *a = aa->attr = hg_attr_new(name, list_kind(elem));
    if (!vals->len)
        return TRUE;
    switch (elem) {
    case HG_ATTR_FLOAT:
        a->floats = g_array_sized_new(FALSE, FALSE, sizeof(float), vals->len);
        for (guint i = 0; i < vals->len; i++)
            g_array_append_val(a->floats, g_array_index(vals, Value, i).f);
        break;
    case HG_ATTR_INT:
        a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), vals->len);
        for (guint i = 0; i < vals->len; i++)
            g_array_append_val(a->ints, g_array_index(vals, Value, i).i);
        break;
    case HG_ATTR_STRING:
        a->strings = g_ptr_array_new_full(vals->len, (GDestroyNotify)g_bytes_unref);
        for (guint i = 0; i < vals->len; i++)
            g_ptr_array_add(a->strings, g_steal_pointer(&g_array_index(vals, Value, i).s));
        break;
    case HG_ATTR_TENSOR:
        a->tensors = g_ptr_array_new_full(vals->len, (GDestroyNotify)hg_tensor_free);
        for (guint i = 0; i < vals->len; i++)
            g_ptr_array_add(a->tensors, g_steal_pointer(&g_array_index(vals, Value, i).t));
        break;
    case HG_ATTR_GRAPH:
        aa->graphs = g_ptr_array_new_full(vals->len, (GDestroyNotify)graph_ast_free);
        for (guint i = 0; i < vals->len; i++)
            g_ptr_array_add(aa->graphs, g_steal_pointer(&g_array_index(vals, Value, i).g));
        break;
    default:
        a->type_protos = g_ptr_array_new_full(vals->len, (GDestroyNotify)hg_type_free);
        for (guint i = 0; i < vals->len; i++)
            g_ptr_array_add(a->type_protos, g_steal_pointer(&g_array_index(vals, Value, i).tp));
        break;
    }
    return TRUE;
}

/* '<' attr (',' attr)* '>' */
static gboolean
parse_attrs(HgParser *p, GPtrArray *attrs)
{
    if (!hg_parse_expect(p, '<', "'<'"))
        return FALSE;
    do {
        if (!parse_attr(p, attrs))
            return FALSE;
    } while (hg_parse_accept(p, ','));
    return hg_parse_expect(p, '>', "',' or '>' after the attribute");
}

/* ---------------------------------------------------------------- nodes */

static gboolean
parse_node(HgParser *p, GPtrArray *nodes)
{
    NodeAst *n = g_new0(NodeAst, 1);
    n->outputs = g_array_new(FALSE, FALSE, sizeof(Ref));
    n->inputs = g_array_new(FALSE, FALSE, sizeof(Ref));
    g_array_set_clear_func(n->outputs, ref_clear);
    g_array_set_clear_func(n->inputs, ref_clear);
    n->attrs = g_ptr_array_new_with_free_func(attr_ast_free);
    n->loc = hg_parse_loc_of(hg_parse_peek(p));
    g_ptr_array_add(nodes, n);

    if (!parse_refs(p, n->outputs, '=', "an output name") ||
        !hg_parse_expect(p, '=', "'=' after the node's outputs"))
        return FALSE;

    /* domain.Op: every identifier but the last names the domain. */
    const HgTok *t = hg_parse_peek(p);
    if (t->kind == TK_STRING) {
        if (!hg_parse_string(p, &n->op_type, "an operator"))
            return FALSE;
    } else {
        g_autoptr(GString) domain = g_string_new(NULL);
        for (;;) {
            t = hg_parse_peek(p);
            if (t->kind != TK_IDENT)
                return hg_parse_expected(p, "an operator name");
            hg_parse_advance(p);
            if (!hg_parse_accept(p, '.')) {
                n->op_type = g_strdup(t->text);
                break;
            }
            g_string_append_printf(domain, "%s%s", domain->len ? "." : "", t->text);
        }
        if (domain->len)
            n->domain = g_string_free(g_steal_pointer(&domain), FALSE);
    }

    /* Attributes before or after the inputs, as 1.12 allows. */
    gboolean attrs_first = hg_parse_is_punct(hg_parse_peek(p), '<');
    if (attrs_first && !parse_attrs(p, n->attrs))
        return FALSE;
    if (!hg_parse_expect(p, '(', "'(' and the node's inputs") || !parse_refs(p, n->inputs, ')', "an input name") ||
        !hg_parse_expect(p, ')', "',' or ')' after the node's inputs"))
        return FALSE;
    if (!attrs_first && hg_parse_is_punct(hg_parse_peek(p), '<') && !parse_attrs(p, n->attrs))
        return FALSE;

    /* The annotation gives the domain only where the op cannot be written qualified. */
    g_autofree char *domain = NULL;
    PragmaTarget target = {.name = &n->name, .domain = &domain, .overload = &n->overload,
                           .doc_string = &n->doc_string, .precision = &n->precision};
    if (!parse_pragmas(p, PRAGMA_NAME | PRAGMA_DOMAIN | PRAGMA_OVERLOAD | PRAGMA_DOC | PRAGMA_PRECISION,
                       &target))
        return FALSE;
    if (n->precision && !g_str_has_prefix(n->precision, "fp16") && !g_str_has_prefix(n->precision, "fp32"))
        return hg_parse_fail_at(p, n->loc, "precision '%s': expected \"fp16\" or \"fp32\", then an optional "
                       "\" (reason)\"", n->precision);
    if (domain && n->domain)
        return hg_parse_fail_at(p, n->loc, "the node's domain is given twice");
    if (domain)
        n->domain = g_steal_pointer(&domain);
    return TRUE;
}

static gboolean parse_graph_inner(HgParser *p, gboolean main_graph, GraphAst **out);

/* name? '(' inputs ')' '=>' '(' outputs ')' ('<' values '>')? '{' nodes '}' */
static gboolean
parse_graph(HgParser *p, gboolean main_graph, GraphAst **out)
{
    if (!enter(p))
        return FALSE;
    gboolean ok = parse_graph_inner(p, main_graph, out);
    p->depth--;
    return ok;
}

static gboolean
parse_graph_inner(HgParser *p, gboolean main_graph, GraphAst **out)
{
    g_autoptr(GraphAst) ga = graph_ast_new();
    const HgTok *t = hg_parse_peek(p);
    if (t->kind == TK_IDENT || t->kind == TK_STRING) {
        if (!hg_parse_name(p, &ga->name, "the graph's name"))
            return FALSE;
    } else if (!main_graph || !hg_parse_is_punct(t, '(')) {
        return hg_parse_expected(p, main_graph ? "a graph" : "the graph's name");
    }
    if (!parse_decls(p, '(', ')', ga->inputs, TRUE, "graph inputs"))
        return FALSE;
    if (hg_parse_peek(p)->kind != TK_ARROW)
        return hg_parse_expected(p, "'=>' after the graph inputs");
    hg_parse_advance(p);
    if (!parse_decls(p, '(', ')', ga->outputs, FALSE, "graph outputs"))
        return FALSE;
    if (hg_parse_is_punct(hg_parse_peek(p), '<') && !parse_decls(p, '<', '>', ga->values, TRUE, "initializers and value_info"))
        return FALSE;
    if (!hg_parse_expect(p, '{', "'{' and the graph's nodes"))
        return FALSE;
    PragmaTarget target = {.doc_string = &ga->doc_string};
    if (!parse_pragmas(p, PRAGMA_DOC, &target))
        return FALSE;
    while (!hg_parse_accept(p, '}')) {
        if (hg_parse_peek(p)->kind == TK_EOF)
            return hg_parse_expected(p, "'}' to close the graph");
        if (!parse_node(p, ga->nodes))
            return FALSE;
    }
    *out = g_steal_pointer(&ga);
    return TRUE;
}

/* ---------------------------------------------------------------- model header */

static gboolean
parse_header(HgParser *p, HgModel *m)
{
    if (!hg_parse_accept(p, '<'))
        return TRUE;
    if (hg_parse_accept(p, '>'))
        return TRUE;
    do {
        const HgTok *k = hg_parse_peek(p);
        if (k->kind != TK_IDENT)
            return hg_parse_expected(p, "a model key (ir_version, opset_import, ...)");
        g_autofree char *key = g_strdup(hg_parse_advance(p)->text);
        if (!hg_parse_expect(p, ':', "':' after the key"))
            return FALSE;
        if (strcmp(key, "ir_version") == 0) {
            if (!hg_parse_int(p, &m->ir_version, "the IR version"))
                return FALSE;
            m->has_ir_version = TRUE;
        } else if (strcmp(key, "model_version") == 0) {
            if (!hg_parse_int(p, &m->model_version, "the model version"))
                return FALSE;
            m->has_model_version = TRUE;
        } else if (strcmp(key, "opset_import") == 0 || strcmp(key, "metadata_props") == 0) {
            gboolean opsets = key[0] == 'o';
            if (!hg_parse_expect(p, '[', "'['"))
                return FALSE;
            if (hg_parse_accept(p, ']'))
                continue;
            do {
                g_autofree char *name = NULL;
                if (!hg_parse_string(p, &name, opsets ? "a domain string (\"\" for ONNX)" : "a key string") ||
                    !hg_parse_expect(p, ':', "':'"))
                    return FALSE;
                if (opsets) {
                    gint64 version;
                    if (!hg_parse_int(p, &version, "the opset version"))
                        return FALSE;
                    /* Appended as written: hg_model_set_opset would merge "" and "ai.onnx". */
                    HgOpset *o = g_new0(HgOpset, 1);
                    o->domain = g_steal_pointer(&name);
                    o->has_version = TRUE;
                    o->version = version;
                    g_ptr_array_add(m->opsets, o);
                } else {
                    HgStringPair *sp = g_new0(HgStringPair, 1);
                    sp->key = g_steal_pointer(&name);
                    if (!m->metadata)
                        m->metadata = g_ptr_array_new_with_free_func(hg_string_pair_free);
                    g_ptr_array_add(m->metadata, sp);
                    if (!hg_parse_string(p, &sp->value, "a value string"))
                        return FALSE;
                }
            } while (hg_parse_accept(p, ','));
            if (!hg_parse_expect(p, ']', "',' or ']'"))
                return FALSE;
        } else {
            char **field = strcmp(key, "producer_name") == 0      ? &m->producer_name
                           : strcmp(key, "producer_version") == 0 ? &m->producer_version
                           : strcmp(key, "domain") == 0           ? &m->domain
                           : strcmp(key, "doc_string") == 0       ? &m->doc_string
                                                                  : NULL;
            if (!field)
                return hg_parse_fail_at(p, hg_parse_loc_of(k), "unknown model key '%s'", key);
            g_free(*field);
            *field = NULL;
            if (!hg_parse_string(p, field, "a string"))
                return FALSE;
        }
    } while (hg_parse_accept(p, ','));
    return hg_parse_expect(p, '>', "',' or '>' after the model keys");
}

/* ---------------------------------------------------------------- building the IR */

static HgGraph *build_graph(HgParser *p, GraphAst *ga, HgGraph *parent);

static HgValueDecl *
declare(HgGraph *g, GPtrArray *list, HgValue *v, Decl *d)
{
    HgValueDecl *vd = list == g->inputs    ? hg_graph_add_input(g, v, d->type)
                      : list == g->outputs ? hg_graph_add_output(g, v, d->type)
                                           : hg_graph_add_value_info(g, v, d->type);
    g_free(vd->name);
    vd->name = g_strdup(d->name);
    vd->doc_string = g_strdup(d->doc_string);
    return vd;
}

static gboolean
build_attr(HgParser *p, HgGraph *g, AttrAst *aa, HgAttr **out)
{
    HgAttr *a = g_steal_pointer(&aa->attr);
    if (aa->graph && !(a->g = build_graph(p, aa->graph, g))) {
        hg_attr_free(a);
        return FALSE;
    }
    if (aa->graphs) {
        a->graphs = g_ptr_array_new_full(aa->graphs->len, (GDestroyNotify)hg_graph_free);
        for (guint i = 0; i < aa->graphs->len; i++) {
            HgGraph *sg = build_graph(p, aa->graphs->pdata[i], g);
            if (!sg) {
                hg_attr_free(a);
                return FALSE;
            }
            g_ptr_array_add(a->graphs, sg);
        }
    }
    *out = a;
    return TRUE;
}

static gboolean
build_nodes(HgParser *p, GraphAst *ga, HgGraph *g)
{
    guint max_in = 0;
    for (guint i = 0; i < ga->nodes->len; i++)
        max_in = MAX(max_in, ((NodeAst *)ga->nodes->pdata[i])->inputs->len);
    g_autofree HgValue **none = g_new0(HgValue *, max_in + 1);

    /* Every output first: a node may read a value that a later node defines (and the graph's order
     * is checked after), and subgraphs may read outer values defined after their node. */
    for (guint i = 0; i < ga->nodes->len; i++) {
        NodeAst *na = ga->nodes->pdata[i];
        g_autofree HgValue **outs = g_new0(HgValue *, na->outputs->len + 1);
        for (guint k = 0; k < na->outputs->len; k++) {
            Ref *r = &g_array_index(na->outputs, Ref, k);
            if (!r->name)
                continue;
            HgValue *prev = g_hash_table_lookup(g->values, r->name);
            if (prev)
                return hg_parse_fail_at(p, r->loc, "'%s' is defined twice (also %s)", r->name,
                               prev->producer ? "by another node"
                               : prev->init   ? "as an initializer"
                                              : "as a graph input");
            outs[k] = hg_graph_new_value(g, r->name, NULL);
        }
        HgNode *n = hg_graph_add_node(g, na->op_type, na->domain, na->name, na->inputs->len, none,
                                      na->outputs->len, outs);
        n->overload = g_strdup(na->overload);
        n->doc_string = g_strdup(na->doc_string);
        if (na->precision) {
            /* "fp32 (reason)": the reason is what the parentheses hold. */
            const char *open = strchr(na->precision, '(');
            g_autofree char *reason = open ? g_strndup(open + 1, strlen(open + 1) - (g_str_has_suffix(open, ")") ? 1 : 0))
                                           : NULL;
            hg_node_set_precision(n, g_str_has_prefix(na->precision, "fp32") ? HG_PRECISION_FP32 : HG_PRECISION_FP16,
                                  reason);
        }
    }
    for (guint i = 0; i < ga->nodes->len; i++) {
        NodeAst *na = ga->nodes->pdata[i];
        HgNode *n = g->nodes->pdata[i];
        for (guint k = 0; k < na->attrs->len; k++) {
            HgAttr *a;
            if (!build_attr(p, g, na->attrs->pdata[k], &a))
                return FALSE;
            hg_node_add_attr(n, a);
        }
        for (guint k = 0; k < na->inputs->len; k++) {
            Ref *r = &g_array_index(na->inputs, Ref, k);
            if (!r->name)
                continue;
            HgValue *v = hg_graph_lookup(g, r->name);
            if (!v)
                return hg_parse_fail_at(p, r->loc, "'%s' is not defined", r->name);
            hg_node_set_input(n, k, v); /* also records outer-scope references */
        }
    }
    return TRUE;
}

/* Turn one graph of the syntax tree into an IR graph (parent: the enclosing graph, or NULL). */
static HgGraph *
build_graph(HgParser *p, GraphAst *ga, HgGraph *parent)
{
    HgGraph *g = hg_graph_new(p->model, parent);
    g->name = g_strdup(ga->name);
    g->doc_string = g_strdup(ga->doc_string);

    for (guint i = 0; i < ga->inputs->len; i++) {
        Decl *d = ga->inputs->pdata[i];
        if (g_hash_table_contains(g->values, d->name)) {
            hg_parse_fail_at(p, d->loc, "graph input '%s' is listed twice", d->name);
            goto fail;
        }
        HgValue *v = hg_graph_new_value(g, d->name, NULL);
        declare(g, g->inputs, v, d);
    }
    /* Initializers: those written in the inputs (1.12's "input = value") first, then the `<...>`. */
    for (guint pass = 0; pass < 2; pass++) {
        GPtrArray *list = pass == 0 ? ga->inputs : ga->values;
        for (guint i = 0; i < list->len; i++) {
            Decl *d = list->pdata[i];
            if (!d->is_init)
                continue;
            HgValue *v = g_hash_table_lookup(g->values, d->name);
            if (v && (v->init || !v->is_input)) {
                hg_parse_fail_at(p, d->loc, "initializer '%s' is defined twice", d->name);
                goto fail;
            }
            if (!v)
                v = hg_graph_new_value(g, d->name, NULL);
            HgTensor *t = g_steal_pointer(&d->init);
            t->doc_string = g_strdup(d->doc_string);
            hg_graph_add_initializer(g, v, t);
        }
    }
    if (!build_nodes(p, ga, g))
        goto fail;
    for (guint i = 0; i < ga->values->len; i++) {
        Decl *d = ga->values->pdata[i];
        if (d->is_init)
            continue;
        HgValue *v = hg_graph_lookup(g, d->name);
        /* A value_info entry for a name nothing defines is kept (as the loader does). */
        if (!v)
            v = hg_graph_new_value(g, d->name, NULL);
        declare(g, g->value_info, v, d);
    }
    for (guint i = 0; i < ga->outputs->len; i++) {
        Decl *d = ga->outputs->pdata[i];
        HgValue *v = hg_graph_lookup(g, d->name);
        if (!v) {
            hg_parse_fail_at(p, d->loc, "graph output '%s' is not defined", d->name);
            goto fail;
        }
        declare(g, g->outputs, v, d);
    }
    return g;
fail:
    hg_graph_free(g);
    return NULL;
}

/* ---------------------------------------------------------------- entry point */

/* Parse len bytes of text (no NUL needed) into a new model, or NULL with HG_ERROR_PARSE ("line L,
 * column C: ...", columns counting characters) for bad syntax and undefined or doubly defined
 * names, or with the loader's error (HG_ERROR_INVALID) when hg_model_validate or hg_graph_verify
 * rejects the graph (a cycle, a tensor of the wrong size). The caller frees the model. */
HgModel *
hg_model_parse_text(const char *text, gsize len, GError **error)
{
    g_return_val_if_fail(text != NULL || len == 0, NULL);
    HgParser p = {0};
    p.toks = g_array_new(FALSE, TRUE, sizeof(HgTok));
    g_array_set_clear_func(p.toks, hg_tok_clear);
    g_autoptr(HgModel) m = hg_model_new();
    p.model = m;
    g_autoptr(GraphAst) ga = NULL;

    gboolean ok = hg_lex(&p, text ? text : "", len) && parse_header(&p, m) && parse_graph(&p, TRUE, &ga);
    if (ok && hg_parse_peek(&p)->kind != TK_EOF)
        ok = hg_parse_expected(&p, "the end of the text (functions are not supported)");
    if (ok && !(m->graph = build_graph(&p, ga, NULL)))
        ok = FALSE;
    g_array_unref(p.toks);
    if (!ok) {
        g_propagate_error(error, p.error);
        return NULL;
    }
    /* What the loader checks, and the IR's own invariants (a cycle, for one). */
    if (!hg_model_validate(m, error) || !hg_graph_verify(m->graph, error))
        return NULL;
    return g_steal_pointer(&m);
}
