/* Shape inference (internal): element types, static shapes with symbolic dims kept by name, and the
 * values of small constant tensors (so shape arithmetic such as Shape -> Gather -> Concat -> Reshape
 * folds to constants). Results are a side table keyed by HgValue and stamped with the graph's
 * generation; ops without a table row are opaque (unknown outputs).
 */
#ifndef HG_SHAPES_H
#define HG_SHAPES_H

#include "halfguard/ir.h"
#include "ops/op.h"

G_BEGIN_DECLS

typedef struct {
    HgGraph *graph;
    guint64 generation;   /* graph->generation when computed */
    GHashTable *shapes;   /* HgValue* -> HgValueShape* (owned) */
    GPtrArray *warnings;  /* of char*: nodes whose inputs were inconsistent */
} HgShapes;

/* Pins for symbolic inputs: "NAME:1x3x512x512" (NAME may be "*" for every input whose dims are all
 * symbolic or unknown of the same rank). */
typedef struct {
    char *name;
    guint rank;
    gint64 dims[HG_MAX_RANK];
} HgShapePin;

/* Parse "NAME:DxDxD" into pin. FALSE with HG_ERROR_USAGE on a malformed spec. */
gboolean hg_shape_pin_parse(const char *spec, HgShapePin *pin, GError **error);

/* Infer shapes over g's main graph (subgraphs are opaque to this version). pins may be NULL. */
HgShapes *hg_shapes_infer(HgGraph *g, const HgShapePin *pins, guint n_pins, GError **error);
/* The same with the pins given as "NAME:DIMS" specs (NULL-terminated, may be NULL): the --shapes of
 * the command line. FALSE-like NULL with HG_ERROR_USAGE on a malformed spec. */
HgShapes *hg_shapes_infer_specs(HgGraph *g, const char *const *specs, GError **error);
void hg_shapes_free(HgShapes *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgShapes, hg_shapes_free)

/* What is known of v (never NULL for values of the graph: unknown entries have rank -1). */
const HgValueShape *hg_shapes_get(const HgShapes *s, const HgValue *v);

/* v's element type: inferred, else declared (HG_DTYPE_UNDEFINED when neither knows). */
int hg_shapes_dtype(const HgShapes *s, const HgValue *v);

/* Fill out->part (or out->value, when every entry is known) from the known entries of node's
 * inputs, where the node's shape rule left the value unknown: Shape, Gather, Slice, Concat, Cast,
 * Identity, Unsqueeze, Squeeze, ReduceProd and integer Add, Sub, Mul, Div (src/shape_partial.c). */
void hg_partial_infer(const HgNode *node, gint64 opset, const HgValueShape *const *ins, guint n_inputs,
                      HgValueShape *out);

/* The shape of a declared type as an HgValueShape (dims by value or symbol). */
void hg_vshape_from_type(HgValueShape *out, const HgType *t);

G_END_DECLS

#endif
