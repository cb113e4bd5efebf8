/* halfguard: the graph IR.
 *
 * This one header is the data model. A model (HgModel) owns one main graph (HgGraph). A graph owns its
 * nodes (HgNode), the values they read and write (HgValue), and the tensors of its initializers and
 * attributes (HgTensor). Subgraphs of If/Loop/Scan are HgGraphs owned by a graph-valued attribute of
 * their node; a subgraph may read values of the graphs that enclose it (outer-scope references).
 *
 * Everything the ONNX file holds that halfguard does not reason about (doc strings, metadata, unknown
 * protobuf fields, functions, training info) rides along on the objects below so that saving an
 * unchanged model gives back the same bytes. Protobuf types never appear here: only the loader and
 * the saver (src/onnx_load.c, src/onnx_save.c and src/onnx_pb.c) know them.
 *
 * Ownership: the model owns every graph, the graph owns every node, value, tensor and string attached
 * to it. Pointers returned by accessors are borrowed and live as long as the graph, unless a function
 * says otherwise. Strings are NUL-terminated UTF-8; NULL means "absent in the file", which is not the
 * same as "".
 */
#ifndef HALFGUARD_IR_H
#define HALFGUARD_IR_H

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define HG_API __attribute__((visibility("default")))

/* ---------------------------------------------------------------- errors */

#define HG_ERROR (hg_error_quark())
HG_API GQuark hg_error_quark(void);

typedef enum {
    HG_ERROR_IO,          /* the file could not be read or written */
    HG_ERROR_PARSE,       /* not a valid ONNX protobuf, or not valid ONNX text */
    HG_ERROR_LFS,         /* a Git LFS pointer file instead of a model */
    HG_ERROR_INVALID,     /* a structurally invalid model: undefined value, cycle, duplicate, ... */
    HG_ERROR_UNSUPPORTED, /* valid ONNX that halfguard cannot handle */
    HG_ERROR_USAGE,       /* bad arguments */
    HG_ERROR_OUTPUT,      /* an output that cannot or must not be written: "PATH: reason" */
    HG_ERROR_INTERNAL,    /* halfguard broke a guarantee of its own (a bug): convert's type check */
} HgErrorCode;

/* ---------------------------------------------------------------- element types */

/* The numbers are ONNX's TensorProto.DataType, so they convert by cast. */
typedef enum {
    HG_DTYPE_UNDEFINED = 0,
    HG_DTYPE_FLOAT = 1,
    HG_DTYPE_UINT8 = 2,
    HG_DTYPE_INT8 = 3,
    HG_DTYPE_UINT16 = 4,
    HG_DTYPE_INT16 = 5,
    HG_DTYPE_INT32 = 6,
    HG_DTYPE_INT64 = 7,
    HG_DTYPE_STRING = 8,
    HG_DTYPE_BOOL = 9,
    HG_DTYPE_FLOAT16 = 10,
    HG_DTYPE_DOUBLE = 11,
    HG_DTYPE_UINT32 = 12,
    HG_DTYPE_UINT64 = 13,
    HG_DTYPE_COMPLEX64 = 14,
    HG_DTYPE_COMPLEX128 = 15,
    HG_DTYPE_BFLOAT16 = 16,
    HG_DTYPE_FLOAT8E4M3FN = 17,
    HG_DTYPE_FLOAT8E4M3FNUZ = 18,
    HG_DTYPE_FLOAT8E5M2 = 19,
    HG_DTYPE_FLOAT8E5M2FNUZ = 20,
    HG_DTYPE_UINT4 = 21,
    HG_DTYPE_INT4 = 22,
    HG_DTYPE_COUNT
} HgDType;

/* ONNX text name ("float", "int64", "float16", ...) or NULL for an unknown number. */
HG_API const char *hg_dtype_name(HgDType dtype);
/* Inverse of hg_dtype_name(); HG_DTYPE_UNDEFINED when the name is unknown. */
HG_API HgDType hg_dtype_from_name(const char *name);
/* Size of one element in bits (4 for int4, 0 for string and undefined). */
HG_API guint hg_dtype_bits(HgDType dtype);
HG_API gboolean hg_dtype_is_float(HgDType dtype);
/* Signed and unsigned integers of 8 to 64 bits (not bool). */
HG_API gboolean hg_dtype_is_int(HgDType dtype);

/* ---------------------------------------------------------------- small records that ride along */

/* A protobuf field the schema does not know, kept as its raw encoding. */
typedef struct {
    guint32 tag;
    guint8 wire_type;
    gsize len;
    guint8 *data;
} HgUnknownField;

/* Unknown fields of one message, in file order (NULL when there are none). */
typedef struct {
    guint n;
    HgUnknownField *fields;
} HgUnknown;

/* metadata_props / external_data entries: key and value may each be absent (NULL). */
typedef struct {
    char *key;
    char *value;
    HgUnknown *unknown;
} HgStringPair;

/* A blob of bytes held by reference: an mmapped file or a heap buffer. Tensors that view into a blob
 * hold a reference, so the mapping outlives the loader. */
typedef struct HgBlob HgBlob;
HG_API HgBlob *hg_blob_ref(HgBlob *blob);
HG_API void hg_blob_unref(HgBlob *blob);

/* ---------------------------------------------------------------- types and shapes */

/* One dimension: a known value, a symbolic name, or neither (unknown). */
typedef struct {
    gboolean has_value;
    gint64 value;
    char *param;      /* symbolic name, or NULL */
    char *denotation; /* NULL when absent */
    HgUnknown *unknown;
} HgDim;

typedef struct {
    guint rank;
    HgDim *dims;
    HgUnknown *unknown;
} HgShape;

typedef enum {
    HG_TYPE_NONE = 0, /* TypeProto with no value set */
    HG_TYPE_TENSOR,
    HG_TYPE_SEQUENCE,
    HG_TYPE_MAP,
    HG_TYPE_OPTIONAL,
    HG_TYPE_SPARSE_TENSOR,
    HG_TYPE_OPAQUE,
} HgTypeKind;

/* A value's type (ONNX TypeProto). For tensors, elem_type and shape (NULL = rank unknown). */
typedef struct HgType HgType;
struct HgType {
    HgTypeKind kind;
    gboolean has_elem_type;
    HgDType elem_type; /* for tensor / sparse tensor; the key type for map */
    HgShape *shape;  /* tensor / sparse tensor: NULL when the shape is absent */
    HgType *elem;    /* sequence / optional element; map value */
    char *denotation;
    char *opaque_domain, *opaque_name;
    HgUnknown *unknown;      /* of TypeProto */
    HgUnknown *inner_unknown; /* of the Tensor / Sequence / ... submessage */
};

HG_API HgType *hg_type_new_tensor(HgDType elem_type, guint rank, const gint64 *dims);
HG_API HgType *hg_type_copy(const HgType *t);
HG_API void hg_type_free(HgType *t);
HG_API gboolean hg_type_equal(const HgType *a, const HgType *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgType, hg_type_free)

/* ---------------------------------------------------------------- tensors */

typedef enum {
    HG_STORAGE_NONE,     /* no data fields at all */
    HG_STORAGE_RAW,      /* raw_data */
    HG_STORAGE_TYPED,    /* float_data / int32_data / int64_data / double_data / uint64_data */
    HG_STORAGE_STRINGS,  /* string_data */
    HG_STORAGE_EXTERNAL, /* external file: location / offset / length */
} HgStorage;

/* A constant tensor. Data is kept in ONNX's raw little-endian layout whatever the storage form; the
 * saver writes it back in the form it came in (storage), unless a pass changes storage. */
typedef struct HgTensor {
    char *name;          /* NULL when absent */
    gboolean has_dtype;
    HgDType dtype;
    guint rank;
    gint64 *dims;
    HgStorage storage;
    const void *data;    /* nbytes of raw data; owned through blob */
    gsize nbytes;
    HgBlob *blob;        /* keeps data alive (heap or mmapped file) */
    GPtrArray *strings;  /* of GBytes, for HG_STORAGE_STRINGS */
    /* external data as it appeared: every key/value entry in order */
    GPtrArray *external; /* of HgStringPair, or NULL */
    char *ext_location;  /* parsed from external: relative path */
    gint64 ext_offset, ext_length;
    gboolean has_data_location;
    int data_location;
    gboolean has_segment;
    gint64 seg_begin, seg_end;
    gboolean has_seg_begin, has_seg_end;
    char *doc_string;
    GPtrArray *metadata; /* of HgStringPair, or NULL */
    HgUnknown *unknown;
    HgUnknown *segment_unknown;
} HgTensor;

/* A new tensor with owned, zero-filled data of the right size; storage RAW (STRINGS, of empty
 * strings, for HG_DTYPE_STRING). NULL on overflow or a dtype without a fixed size. */
HG_API HgTensor *hg_tensor_new(const char *name, HgDType dtype, guint rank, const gint64 *dims);
/* hg_tensor_new for sizes that come from data (a file's header, a model's computation): NULL also
 * when the memory cannot be had, instead of aborting. */
HG_API HgTensor *hg_tensor_try_new(const char *name, HgDType dtype, guint rank, const gint64 *dims);
HG_API HgTensor *hg_tensor_copy(const HgTensor *t);
HG_API void hg_tensor_free(HgTensor *t);
/* Number of elements (1 for a scalar), or -1 when it overflows. */
HG_API gint64 hg_tensor_numel(const HgTensor *t);
/* Writable data, never NULL: copies viewed (or absent) data into an owned buffer first (copy on
 * write). */
HG_API void *hg_tensor_data_mut(HgTensor *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgTensor, hg_tensor_free)

typedef struct {
    HgTensor *values;  /* NULL when absent */
    HgTensor *indices; /* NULL when absent */
    guint rank;
    gint64 *dims;
    HgUnknown *unknown;
} HgSparseTensor;

HG_API void hg_sparse_tensor_free(HgSparseTensor *s);

/* ---------------------------------------------------------------- attributes */

/* ONNX AttributeProto.AttributeType numbers. */
typedef enum {
    HG_ATTR_UNDEFINED = 0,
    HG_ATTR_FLOAT = 1,
    HG_ATTR_INT = 2,
    HG_ATTR_STRING = 3,
    HG_ATTR_TENSOR = 4,
    HG_ATTR_GRAPH = 5,
    HG_ATTR_FLOATS = 6,
    HG_ATTR_INTS = 7,
    HG_ATTR_STRINGS = 8,
    HG_ATTR_TENSORS = 9,
    HG_ATTR_GRAPHS = 10,
    HG_ATTR_SPARSE_TENSOR = 11,
    HG_ATTR_SPARSE_TENSORS = 12,
    HG_ATTR_TYPE_PROTO = 13,
    HG_ATTR_TYPE_PROTOS = 14,
} HgAttrType;

typedef struct HgGraph HgGraph;
typedef struct HgNode HgNode;
typedef struct HgValue HgValue;
typedef struct HgModel HgModel;

/* Which optional scalar fields the file set (an exporter may set f=0 on an INT attribute). */
enum {
    HG_ATTR_HAS_TYPE = 1 << 0,
    HG_ATTR_HAS_F = 1 << 1,
    HG_ATTR_HAS_I = 1 << 2,
    HG_ATTR_HAS_S = 1 << 3,
};

typedef struct {
    char *name;
    char *ref_attr_name;
    char *doc_string;
    HgAttrType type;
    guint has;         /* HG_ATTR_HAS_* */
    float f;
    gint64 i;
    GBytes *s;         /* NULL unless HG_ATTR_HAS_S */
    HgTensor *t;
    HgGraph *g;        /* owned subgraph */
    HgSparseTensor *sparse;
    HgType *tp;
    GArray *floats;    /* of float, NULL when empty */
    GArray *ints;      /* of gint64, NULL when empty */
    GPtrArray *strings; /* of GBytes */
    GPtrArray *tensors; /* of HgTensor */
    GPtrArray *graphs;  /* of HgGraph, owned */
    GPtrArray *sparse_tensors; /* of HgSparseTensor */
    GPtrArray *type_protos;    /* of HgType */
    HgUnknown *unknown;
} HgAttr;

/* ---------------------------------------------------------------- values and nodes */

/* A use of a value: input `index` of `node`. Uses from nodes of subgraphs are included (node->graph
 * is then a subgraph). */
typedef struct {
    HgNode *node;
    guint index;
} HgUse;

/* One declaration of a value in graph.input / graph.output / graph.value_info. A value may be
 * declared in several of these lists, each with its own type record. */
typedef struct {
    HgValue *value;
    char *name;         /* as written (may differ from value->name only for dangling outputs) */
    HgType *type;       /* NULL when the ValueInfoProto has no type */
    char *doc_string;
    GPtrArray *metadata; /* of HgStringPair */
    HgUnknown *unknown;
} HgValueDecl;

struct HgValue {
    char *name;
    HgGraph *graph;      /* the graph that defines it */
    HgNode *producer;    /* NULL for graph inputs and initializers */
    guint producer_index; /* output slot of producer */
    HgTensor *init;      /* the initializer, if this value is one */
    HgSparseTensor *sparse_init; /* the sparse initializer, if this value is one */
    gboolean is_input;   /* declared in graph.input */
    HgValueDecl *input_decl; /* that declaration (graph inputs are never removed); NULL if declared twice */
    gboolean is_output;  /* declared in graph.output */
    guint nested_outputs; /* output declarations of nested graphs that pass this value through */
    GArray *uses;        /* of HgUse */
    /* The best declared type: graph input, else value_info, else graph output, else the
     * initializer's (owned by the value, kept in step with the declarations by
     * hg_value_set_elem_type). */
    HgType *type;
    gpointer user;       /* scratch for analyses; not owned */
};

enum {
    HG_NODE_DEAD = 1 << 0,
    HG_NODE_PLACED_CAST = 1 << 1, /* a Cast the lower pass placed (what the summary counts) */
};

/* The precision plan, kept in the IR: what a node computes in. assign_precision sets it for every node
 * that computes with floats (a pass before it may set FP32 to keep a node there); lower reads it. UNSET
 * nodes count as FP16. The text form shows it (`#@ precision: "fp32 (overflow)"`) and reads it back;
 * ONNX files do not hold it. */
typedef enum { HG_PRECISION_UNSET = 0, HG_PRECISION_FP16, HG_PRECISION_FP32 } HgPrecision;

struct HgNode {
    char *name;          /* NULL when absent */
    char *op_type;
    char *domain;        /* NULL when absent; "" and "ai.onnx" both mean the default domain */
    char *overload;
    guint n_inputs, n_outputs;
    HgValue **inputs;    /* NULL entries are omitted optional inputs ("") */
    HgValue **outputs;   /* NULL entries are omitted optional outputs */
    GPtrArray *attrs;    /* of HgAttr, in file order */
    char *doc_string;
    GPtrArray *metadata; /* of HgStringPair */
    HgUnknown *unknown;
    HgGraph *graph;
    guint flags;
    guint order;         /* position in graph->nodes */
    HgPrecision precision;  /* the plan (hg_node_set_precision) */
    char *precision_reason; /* why, or NULL */
    /* Output names written back for slots whose value was dropped at load: a Constant whose output a
     * later Constant of the same name redefines (ONNX Runtime lets the later one win, and so do we).
     * NULL, or n_outputs entries (NULL where the slot was not dropped). */
    char **shadowed_names;
    gpointer user;       /* scratch for analyses; not owned */
};

/* Quantization annotation entries pass through unchanged. */
typedef struct {
    char *tensor_name;
    GPtrArray *pairs;    /* of HgStringPair */
    HgUnknown *unknown;
} HgTensorAnnotation;

struct HgGraph {
    HgModel *model;
    HgGraph *parent;      /* enclosing graph, NULL for the main graph */
    HgNode *parent_node;  /* node whose attribute owns this graph */
    char *name;
    char *doc_string;
    GPtrArray *nodes;     /* of HgNode, in file order; dead nodes are removed by hg_graph_compact */
    GPtrArray *inputs;    /* of HgValueDecl */
    GPtrArray *outputs;   /* of HgValueDecl */
    GPtrArray *value_info; /* of HgValueDecl */
    GPtrArray *initializers; /* of HgTensor, file order (value->init points here) */
    GPtrArray *sparse_initializers; /* of HgSparseTensor */
    GPtrArray *quant_annotations;   /* of HgTensorAnnotation */
    GPtrArray *metadata;  /* of HgStringPair */
    HgUnknown *unknown;
    GHashTable *values;   /* name -> HgValue (defined in this graph) */
    GPtrArray *outer_refs; /* of HgValue: values of enclosing graphs read here or in nested graphs */
    guint64 generation;   /* bumped by every mutation; analyses stamp their results with it */
};

typedef struct {
    char *domain;         /* NULL when absent */
    gboolean has_version;
    gint64 version;
    HgUnknown *unknown;
} HgOpset;

/* How the file encoded repeated scalars. Some old writers packed fields that ONNX declares
 * unpacked (attribute ints/floats, tensor dims); the saver repeats the style it found. */
typedef enum {
    HG_ENCODING_CANONICAL = 0,
    HG_ENCODING_PACKED_SCALARS = 1,
} HgEncoding;

struct HgModel {
    gboolean has_ir_version;
    gint64 ir_version;
    GPtrArray *opsets;    /* of HgOpset */
    char *producer_name, *producer_version, *domain, *doc_string;
    gboolean has_model_version;
    gint64 model_version;
    HgGraph *graph;       /* NULL when the file has none */
    GPtrArray *metadata;  /* of HgStringPair */
    GPtrArray *training_info; /* of GBytes: serialized TrainingInfoProto, passed through */
    GPtrArray *functions;     /* of GBytes: serialized FunctionProto, passed through */
    HgUnknown *unknown;
    HgEncoding encoding;
    char *dir;            /* folder of the file it was loaded from (external data), or NULL */
    GHashTable *names;    /* private: every value and node name in use, built on first need */
    GPtrArray *warnings;  /* of char*: what the loader accepted but the user should hear about */
    gpointer run_plan;    /* private: the interpreter's compiled plan (immutable, counted, replaced
                           * under a lock: threads may run one model at once), freed with run_plan_free */
    GDestroyNotify run_plan_free;
    gboolean external_data; /* the file it was loaded from kept tensors in external data */
    gpointer spill;         /* private: the scratch file large new weights are written to, or NULL */
};

/* ---------------------------------------------------------------- model */

HG_API HgModel *hg_model_new(void);
HG_API void hg_model_free(HgModel *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgModel, hg_model_free)

/* Version of the default-domain opset ("" or "ai.onnx"), or 0 when not imported. */
HG_API gint64 hg_model_opset(const HgModel *m, const char *domain);
/* Set (or add) the opset import for domain. */
HG_API void hg_model_set_opset(HgModel *m, const char *domain, gint64 version);

/* ---------------------------------------------------------------- graph building and editing */

/* A new empty graph owned by model m; parent is the enclosing graph for subgraphs (NULL for main). */
HG_API HgGraph *hg_graph_new(HgModel *m, HgGraph *parent);
HG_API void hg_graph_free(HgGraph *g);

/* The value called name, visible from g: defined in g or in an enclosing graph. NULL if none. */
HG_API HgValue *hg_graph_lookup(HgGraph *g, const char *name);

/* A new value defined in g. Fails (NULL, error set) if name is already defined in g (a subgraph may
 * shadow a name of an enclosing graph, as some exporters write). The caller then makes it an input,
 * an initializer, or a node output. */
HG_API HgValue *hg_graph_new_value(HgGraph *g, const char *name, GError **error);

/* A name not used anywhere in the model, built from base ("base", "base_1", "base_2", ...).
 * Returns a newly allocated string. */
HG_API char *hg_graph_unique_name(HgGraph *g, const char *base);

/* Declare v in graph.input / graph.output / graph.value_info with a copy of type (may be NULL). */
HG_API HgValueDecl *hg_graph_add_input(HgGraph *g, HgValue *v, const HgType *type);
HG_API HgValueDecl *hg_graph_add_output(HgGraph *g, HgValue *v, const HgType *type);
HG_API HgValueDecl *hg_graph_add_value_info(HgGraph *g, HgValue *v, const HgType *type);

/* Make tensor t (ownership taken) the initializer of value v, appended to graph.initializer. */
HG_API void hg_graph_add_initializer(HgGraph *g, HgValue *v, HgTensor *t);

/* A new initializer holding t (ownership taken) under a name not used in the model, built from base
 * (hg_graph_unique_name; t takes the name too): the value it defines. */
HG_API HgValue *hg_graph_new_initializer(HgGraph *g, const char *base, HgTensor *t);

/* A new node appended to g->nodes. Inputs may contain NULL (omitted optional input); outputs are
 * values already created with hg_graph_new_value (NULL for an omitted output). Names are copied. */
HG_API HgNode *hg_graph_add_node(HgGraph *g, const char *op_type, const char *domain, const char *name,
                                 guint n_inputs, HgValue *const *inputs, guint n_outputs,
                                 HgValue *const *outputs);

/* Replace input i of node n by v (which may be NULL), keeping use lists in step. */
HG_API void hg_node_set_input(HgNode *n, guint i, HgValue *v);
/* Make v (a value of n's graph that no node writes, or NULL) output i of n; the value it replaces
 * loses its producer. */
HG_API void hg_node_set_output(HgNode *n, guint i, HgValue *v);
/* Change n's op type and domain (NULL: the default domain). Its inputs, outputs and attributes stay. */
HG_API void hg_node_set_op(HgNode *n, const char *op_type, const char *domain);
/* Add attribute a (ownership taken), replacing one of the same name in place. */
HG_API void hg_node_set_attr(HgNode *n, HgAttr *a);
/* The same for an INT, FLOAT or TENSOR attribute (the tensor's ownership taken); returns it. */
HG_API HgAttr *hg_node_set_attr_int(HgNode *n, const char *name, gint64 value);
HG_API HgAttr *hg_node_set_attr_float(HgNode *n, const char *name, float value);
HG_API HgAttr *hg_node_set_attr_tensor(HgNode *n, const char *name, HgTensor *t);
/* Remove the attribute called name; FALSE when n has none. */
HG_API gboolean hg_node_remove_attr(HgNode *n, const char *name);
/* Set n's place in the precision plan and why (copied; may be NULL). */
HG_API void hg_node_set_precision(HgNode *n, HgPrecision precision, const char *reason);
/* Does any node of g carry a precision (is there a plan)? */
HG_API gboolean hg_graph_has_plan(const HgGraph *g);
/* Is n of the default domain ("", absent or "ai.onnx")? FALSE for NULL. */
HG_API gboolean hg_node_default_domain(const HgNode *n);
/* Make t (ownership taken) v's initializer: in the place of the one v has (freed), else appended.
 * t takes v's name; v's element type follows t's. v must not be a node output. */
HG_API void hg_value_set_initializer(HgValue *v, HgTensor *t);
/* Drop v's initializer (freed); v stays, with its declarations. */
HG_API void hg_value_remove_initializer(HgValue *v);
/* Append an attribute (ownership taken). */
HG_API void hg_node_add_attr(HgNode *n, HgAttr *a);
/* The attribute called name, or NULL. */
HG_API HgAttr *hg_node_attr(const HgNode *n, const char *name);
/* Typed getters with a default for a missing attribute. */
HG_API gint64 hg_node_attr_int(const HgNode *n, const char *name, gint64 dflt);
HG_API float hg_node_attr_float(const HgNode *n, const char *name, float dflt);

HG_API HgAttr *hg_attr_new(const char *name, HgAttrType type);
HG_API void hg_attr_free(HgAttr *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgAttr, hg_attr_free)

/* Mark n dead and drop it from the use lists of its inputs. Its outputs lose their producer: the
 * caller must leave them unused or define them again (as an initializer, say); hg_graph_verify()
 * reports a value that is read but no longer defined. hg_graph_compact() removes dead nodes. */
HG_API void hg_node_remove(HgNode *n);
/* Remove constant v of g when nothing reads it (and it is no graph input or output, nor read by a
 * subgraph): its Constant node, or its initializer. Anything else is left as it is; NULL is allowed. */
HG_API void hg_value_drop_if_unused(HgGraph *g, HgValue *v);
/* Remove dead nodes and values that nothing defines or uses any more; renumbers node->order. */
HG_API void hg_graph_compact(HgGraph *g);

/* Is n a live node of the default domain ("" or "ai.onnx") with this op type? FALSE for NULL. */
HG_API gboolean hg_node_is(const HgNode *n, const char *op_type);

/* Move n (a node of g) to just before anchor in g->nodes, keeping node->order in step (a rewrite
 * places its new nodes where the replaced ones were, so a sorted file stays sorted). */
HG_API void hg_graph_move_node_before(HgGraph *g, HgNode *n, HgNode *anchor);
/* Remove the nodes of the set (HgNode* keys) whose outputs nothing reads, again and again while
 * removals leave more unread (a rewritten pattern's leftovers; those read elsewhere stay). Returns
 * how many went. */
HG_API guint hg_nodes_remove_unread(GHashTable *nodes);

/* Replace every use of old by new (node inputs in g and its subgraphs, and graph outputs: the output
 * declaration then names new). */
HG_API void hg_value_replace_uses(HgValue *old_v, HgValue *new_v);

/* Give v a new name (unique in its graph: FALSE with HG_ERROR_INVALID otherwise), in its declarations
 * and initializer too. */
HG_API gboolean hg_value_rename(HgValue *v, const char *name, GError **error);

/* Set the element type of v in its type and in every declaration of it. */
HG_API void hg_value_set_elem_type(HgValue *v, HgDType dtype);
/* The element type v's best declaration gives (HG_DTYPE_UNDEFINED when none says, or not a tensor). */
HG_API int hg_value_elem_type(const HgValue *v);

/* Note a mutation: analyses computed for an older generation are stale. Every editing function
 * here calls it; code that edits the structs' fields directly must call it too, and the pipeline
 * fails a pass that changed the graph without moving its generation (HALFGUARD_CHECK_EDITS). */
HG_API void hg_graph_touch(HgGraph *g);

/* ---------------------------------------------------------------- order and invariants */

/* The live nodes of g in a topological order (each node after the producers of its inputs, including
 * values read by its subgraphs). The file's order is kept where it already is topological.
 * Returns a new array (free with g_ptr_array_unref) or NULL with HG_ERROR_INVALID on a cycle. */
HG_API GPtrArray *hg_graph_topo_order(HgGraph *g, GError **error);

/* Reorder g->nodes topologically (a no-op when the file order already is). */
HG_API gboolean hg_graph_sort(HgGraph *g, GError **error);

/* Check the invariants of g and its subgraphs: one definition per value, every input defined (in g,
 * an initializer, a graph input, or an outer scope), producer and use lists consistent, no cycle.
 * Returns FALSE with HG_ERROR_INVALID naming the first broken invariant. */
HG_API gboolean hg_graph_verify(HgGraph *g, GError **error);

/* Call fn on g and each of its subgraphs, depth first, parents before children. */
typedef void (*HgGraphFunc)(HgGraph *g, gpointer data);
HG_API void hg_graph_foreach(HgGraph *g, HgGraphFunc fn, gpointer data);

G_END_DECLS

#endif
