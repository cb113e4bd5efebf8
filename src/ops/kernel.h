/* The kernel vocabulary (internal): what every kernel family in this folder shares beyond the op
 * table's types (op.h) and the arrays (array.h).
 *
 * Constant folding. Shape inference folds a node (runs its kernel on the constant values of its
 * inputs) when the outputs are small, so that shape subgraphs (Shape -> Gather -> Concat -> Reshape)
 * become constants; the interpreter folds every node whose inputs are all constants once, when it
 * plans a model. Both go through hg_eval_constants; shape rules call hg_fold.
 */
#ifndef HG_OPS_KERNEL_H
#define HG_OPS_KERNEL_H

#include "ops/op.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- constant folding */

/* Outputs of at most this many elements are folded during shape inference. */
#define HG_FOLD_MAX_OUTPUT 1024
/* With HG_FOLD_SMALL_INPUTS, inputs of at most this many elements each. */
#define HG_FOLD_MAX_INPUT 65536

typedef enum {
    /* Fold only when every input is small: ops whose work grows with their inputs rather than their
     * outputs (reductions, matrix products, convolutions), whose shape rules should stay cheap. */
    HG_FOLD_SMALL_INPUTS = 1 << 0,
    /* A kernel's HG_ERROR_INVALID is the shape rule's error (a Gather index out of range, a Reshape
     * that does not fit): ops whose kernels check what the shape rule could not see. Without it
     * any kernel error just leaves the values unknown, for the interpreter to report. */
    HG_FOLD_STRICT = 1 << 1,
} HgFoldFlags;

/* Run eval on node with the given constant inputs (NULL for omitted ones) on one thread. Returns TRUE
 * with outputs[0..n_outputs) holding new references (NULL where the kernel left an output unset), or
 * FALSE with every slot NULL and error set. */
gboolean hg_eval_constants(const HgNode *node, gint64 opset, HgEvalFunc eval, guint n_inputs,
                           HgArray *const *inputs, guint n_outputs, HgArray **outputs, GError **error);

/* Shape inference's folding: when every present input of ctx has a known value (and, with
 * HG_FOLD_SMALL_INPUTS, each has at most HG_FOLD_MAX_INPUT elements) and every output slot's shape
 * is known with at most HG_FOLD_MAX_OUTPUT elements, run eval (NULL: the kernel of the node's op)
 * and give each output whose rank and element type agree with what the rule inferred (an unknown
 * element type agrees with any) its value, dims and element type. Call it after filling the outputs'
 * shapes. Returns FALSE only with HG_FOLD_STRICT, on a kernel's HG_ERROR_INVALID (propagated). */
gboolean hg_fold(HgShapeCtx *ctx, HgEvalFunc eval, HgFoldFlags flags);

G_END_DECLS

#endif
