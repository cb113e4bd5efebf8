/* The kernel vocabulary (internal): what every kernel family in this folder shares beyond the op
 * table's types (op.h) and the arrays (array.h).
 *
 * Element types. A kernel computes in one of four kinds (HgKind): FP32 (float, float16, bfloat16 and
 * the narrow integers where a family says so), FP64 (double), int64 and uint64 (the integers, which
 * wrap like C's). hg_kind_of gives a dtype's kind. Inputs come into a kind through hg_kbuf_load (the
 * array's own data when it is stored in that kind, else a converted copy); results go out through
 * hg_kbuf_out and hg_kbuf_store, rounded once into the output's element type.
 *
 * A kernel written once for every kind is a template: a .inc file written in terms of HG_T (the element
 * type), HG_SFX(name) (the instance's name: name_f32, name_f64, name_i64) and HG_T_FLOAT (1 for the
 * float kinds). Its family's .c defines HG_TEMPLATE as the file's name and includes
 * ops/instances_float.inc (the float kinds) or ops/instances_all.inc (every kind), which include the
 * template once per kind; HG_KIND_CALL(kind, name, ...) calls the instance of a kind. The integer
 * instance serves both integer kinds: its arithmetic is unsigned (HG_T guint64), which wraps without
 * undefined behaviour and gives the bits of the two's complement result. Where unsigned 64-bit
 * differs (comparisons, division, min/max), the elementwise family gives U64 a row of its own, in
 * tables indexed by HgKind. Kernels that only move elements dispatch on the element's width instead
 * (HG_WIDTH_SWITCH), so one kernel moves every type bit for bit.
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

/* ---------------------------------------------------------------- compute kinds */

typedef enum { HG_KIND_F32, HG_KIND_F64, HG_KIND_I64, HG_KIND_U64, HG_KIND_COUNT } HgKind;

/* The kind of a dtype: HG_KIND_F32 for float, float16 and bfloat16; HG_KIND_F64 for double;
 * HG_KIND_U64 for uint64; HG_KIND_I64 for the other integers and bool; HG_KIND_COUNT for types
 * without arithmetic (string, complex, float8, 4-bit). */
HgKind hg_kind_of(int dtype);
/* Bytes per element of a kind's buffers, and the dtype they are stored as. */
gsize hg_kind_size(HgKind k);
int hg_kind_dtype(HgKind k);
/* Whether arrays of dtype hold kind k's values as they are (int64 and uint64 both hold the integer
 * kinds'), so that k's results can be written into them directly. */
gboolean hg_kind_stores(HgKind k, int dtype);

/* A buffer in a compute kind: an array's own data (owned FALSE), or a copy to g_free. */
typedef struct {
    void *p;
    gboolean owned;
} HgKBuf;

/* Free b's copy, if it owns one, and empty it. */
void hg_kbuf_clear(HgKBuf *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HgKBuf, hg_kbuf_clear)

/* The elements of a in kind k: a's data when it is stored in that kind, else a converted copy
 * (integers by value; floats to integers by saturating conversion). An empty buffer for a NULL a. */
HgKBuf hg_kbuf_load(const HgArray *a, HgKind k);
/* Where results of kind k for out go: out's data when it is stored in that kind (int64 and uint64
 * are both stored as the integer kinds), else zeroed scratch for hg_kbuf_store. p is NULL when out
 * of memory. */
HgKBuf hg_kbuf_out(HgArray *out, HgKind k);
/* Where a kernel that writes y[i] only after reading x[i] puts its results for y (x's shape and
 * type): into the copy xb when loading x made one (b then owns it), else into y's own data. */
HgKBuf hg_kbuf_reuse(HgKBuf *xb, HgArray *y, HgKind k);
/* Store b (kind k, out->numel elements) into out unless it is out's own data, converting to out's
 * element type with one rounding (FP64 to float16 or bfloat16 too), then clear b. */
void hg_kbuf_store(HgArray *out, HgKBuf *b, HgKind k);
/* Store out->numel doubles into out, rounding once to float16 and bfloat16 (through a float rounded
 * to odd); other types as hg_array_store_f64. */
void hg_store_f64_once(HgArray *out, const double *src);

/* The instance of typed kernel `name` for kind k: name_f32, name_f64, or name_i64 for both integer
 * kinds. HG_KIND_CALL_FLOAT for kernels with float instances only (k is F32 or F64). */
#define HG_KIND_CALL(k, name, ...)                                                                 \
    ((k) == HG_KIND_F32   ? name##_f32(__VA_ARGS__)                                                \
     : (k) == HG_KIND_F64 ? name##_f64(__VA_ARGS__)                                                \
                          : name##_i64(__VA_ARGS__))
#define HG_KIND_CALL_FLOAT(k, name, ...)                                                           \
    ((k) == HG_KIND_F32 ? name##_f32(__VA_ARGS__) : name##_f64(__VA_ARGS__))

/* ---------------------------------------------------------------- moving elements */

/* The element type of complex128, for movers. */
typedef struct {
    guint64 lo, hi;
} HgElem16;

/* Expand the statement macro M(T) with T an unsigned type of es bytes (1, 2, 4, 8; HgElem16 for
 * anything else): one kernel body with typed loads and stores for every element width. */
#define HG_WIDTH_SWITCH(es, M)                                                                     \
    do {                                                                                           \
        switch (es) {                                                                              \
        case 1: M(guint8); break;                                                                  \
        case 2: M(guint16); break;                                                                 \
        case 4: M(guint32); break;                                                                 \
        case 8: M(guint64); break;                                                                 \
        default: M(HgElem16); break;                                                               \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- kernels' checks */

/* TRUE when inputs 0..n-1 are present and the node has an output; else HG_ERROR_INVALID. */
gboolean hg_eval_need(HgEvalCtx *ctx, guint n);
/* Whether the node asks for output i (an omitted output need not be computed). */
gboolean hg_eval_wants(const HgEvalCtx *ctx, guint i);
/* HG_ERROR_UNSUPPORTED "element type T is not supported"; returns FALSE. */
gboolean hg_eval_unsupported(HgEvalCtx *ctx, int dtype);
/* "out of memory" for the node; returns FALSE. */
gboolean hg_eval_oom(HgEvalCtx *ctx);

/* ---------------------------------------------------------------- shape rules' helpers */

/* A known dim, and an unknown one without a name. */
HgSymDim hg_dim_known(gint64 v);
HgSymDim hg_dim_unknown(void);
/* min(d, cap) for cap >= 1: x[0:S] of an axis of static length cap, where S is a dim named by
 * shape inference (Shape(y)[i]). Known when d is; unknown without a name when d has none; else
 * named "min(S,cap)" (min(S, c) capped again keeps the smaller cap). hg_sym_min_parts reads such a
 * name back. */
HgSymDim hg_dim_min(HgSymDim d, gint64 cap);
/* The name a model's own dim_param goes by: itself, unless it holds a character the names below
 * give meaning to ('*', '(', ')', ',', '"') or starts with a digit; then it is quoted ("4*batch" in
 * double quotes, a quote in it doubled), so that a model that calls a dim "4*batch" says nothing
 * about "batch", and the parsers below read it as one name. hg_sym_model_name gives the model's
 * name back (newly allocated). */
const char *hg_sym_from_model(const char *param);
char *hg_sym_model_name(const char *sym);
/* Products of dims shape inference knows by name: "4*batch", "batch*heads" (a whole number first
 * when not 1, then the names in strcmp order, each one a name or a min(S,c), joined by '*').
 * hg_sym_factors splits such a name (any name: one factor, coefficient 1) into a coefficient and at
 * most HG_SYM_MAX_FACTORS interned names; FALSE when it has more. hg_sym_product makes the name
 * back (NULL for no names, where the coefficient alone is the dim, and for more than
 * HG_SYM_MAX_FACTORS, which have no name). hg_dim_mul multiplies two dims. */
#define HG_SYM_MAX_FACTORS 8
gboolean hg_sym_factors(const char *sym, gint64 *coef, const char **names, int *n);
const char *hg_sym_product(gint64 coef, const char **names, int n);
HgSymDim hg_dim_mul(HgSymDim a, HgSymDim b);
/* Take the names take[0..k) out of the multiset from[0..*n) (interned names; order not kept);
 * FALSE, with from partly taken, when one is not there. */
gboolean hg_sym_factors_take(const char **from, int *n, const char *const *take, int k);
/* TRUE when sym is a name hg_dim_min made: *base is S's interned name, *cap the cap. */
gboolean hg_sym_min_parts(const char *sym, const char **base, gint64 *cap);
/* The name of the dim that two unknown dims named a and b broadcast to (or NULL when it is not
 * known): a when the names are equal, and S when one is S and the other min(S, c). In every
 * execution where they broadcast, min(S, c) is S or 1 (c >= 1), or S is 1 and then so is min(S, c). */
const char *hg_sym_broadcast(const char *a, const char *b);
/* o (when not NULL) takes dtype, rank and dims. */
void hg_vshape_set(HgValueShape *o, int dtype, int rank, const HgSymDim *dims);

/* ---------------------------------------------------------------- interval rules' helpers */

/* Input i's range, or NULL when the input is omitted (or i is past the node's inputs). */
const HgRange *hg_range_input(const HgRangeCtx *ctx, guint i);

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
