/* halfguard: the type check of a whole model.
 *
 * Each ONNX op version fixes which types its inputs and outputs may have, and which of them must agree:
 * a type parameter such as T binds to one type across every input and output that uses it. ONNX
 * Runtime refuses a model that breaks this ("Type parameter (T) of Optype (MatMul) bound to different
 * types"), so convert checks every model it writes against these signatures.
 */
#ifndef HALFGUARD_TYPECHECK_H
#define HALFGUARD_TYPECHECK_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

/* One violation. The strings are owned by the record. */
typedef struct {
    char *node;    /* the node's name ("" when it has none) */
    char *op;      /* its op type */
    char *output;  /* the name of its first output (NULL when it has none): names an unnamed node */
    char *param;   /* the type parameter concerned ("T"), or the literal type ("tensor(int64)") */
    /* what is wrong, "node 'NAME' (OP): type parameter T is float16 at input 0 'x' but float at
     * input 1 'y'" */
    char *message;
} HgTypeViolation;

HG_API void hg_type_violation_free(HgTypeViolation *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgTypeViolation, hg_type_violation_free)

/* Type-check every node of m's main graph and of every subgraph (If, Loop, Scan bodies) whose op has
 * a known signature at the model's opset for its domain: ONNX's default domain at opsets 1 to 23 and
 * ai.onnx.ml 1 to 5 (at a higher opset the signatures of 23, resp. 5, are used, so types that later
 * versions added are reported). For each such node:
 *   - each type parameter binds to one type across the inputs and outputs that use it (the values of a
 *     homogeneous variadic included; a heterogeneous one, as Loop's, is checked value by value);
 *   - each bound type is one the op version allows (FLOAT16 where that version has no FP16 form);
 *   - an input or output of a literal type (Reshape's tensor(int64) shape) has that type;
 *   - every value it reads or writes has a known type;
 *   - an output whose type an attribute or a body decides is declared as that type (Cast's `to`,
 *     Constant's value, an If's branches, a Loop's or Scan's body), and a Loop's or Scan's body
 *     declares its inputs as the node feeds them.
 * A value's type is its declared one (graph input, value_info, graph output, initializer); where none
 * is declared, it is inferred by the same signatures in topological order (an output whose parameter
 * an input binds gets that input's type; Cast's from `to`, Constant's from its value; If, Loop and Scan
 * outputs from their bodies). Nodes of other domains (com.microsoft, custom ops) are not checked; their
 * declared output types feed the nodes that read them.
 *
 * At most one violation per node and type parameter, in graph order. Returns a new array of
 * HgTypeViolation (empty when the model type-checks; free with g_ptr_array_unref). Never fails: a graph
 * whose order cannot be sorted is checked in file order. m is not changed. */
HG_API GPtrArray *hg_model_typecheck(HgModel *m);

/* Is every violation of after one that before already had? A violation counts as the same when it is
 * at a node of the same name (for an unnamed node: the same first output), op type and type parameter,
 * whatever its message. Returns TRUE when none is new; else FALSE with an HG_ERROR_INTERNAL error
 * whose message is the first new violation's. before and after are arrays from
 * hg_model_typecheck(). */
HG_API gboolean hg_typecheck_none_new(const GPtrArray *before, const GPtrArray *after, GError **error);

G_END_DECLS

#endif
