/* The op table (internal): one row per ONNX default-domain op with its shape rule, eval kernel, cost
 * and traits. The rows are in ops.def (an X-macro); kernels live by family in this folder, in the file
 * the row's family names (elementwise.c, shape.c, movement.c, index.c, resize.c, conv.c, pool.c,
 * matmul.c, attention.c, reduce.c, order.c, softmax.c, norm.c, rnn.c, detect.c, signal.c, legacy.c), with what
 * families share in kernel.h (and tensor.h, linalg.h, reduce.h for the families of each group). An op without a row is opaque: unknown
 * shape, no kernel, and running it is an error that names it.
 *
 * Opset versions: one row covers every version from 7 to 23 (or from the op's first, for the newer
 * ones: Gelu 20, RMSNormalization 23...); where the semantics changed (attributes
 * that became inputs, new attributes, changed defaults) the functions look at ctx->opset.
 */
#ifndef HG_OPS_OP_H
#define HG_OPS_OP_H

#include "halfguard/ir.h"
#include "ops/array.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- shapes */

/* One dimension as shape inference knows it: v >= 0 is known; v < 0 is unknown, and sym (an interned
 * string, g_intern_string) names it when the model or --shapes gave it a name. */
typedef struct {
    gint64 v;
    const char *sym;
} HgSymDim;

/* What shape inference knows of the entries of a scalar or a short vector of integers whose value
 * it does not know as a whole (src/shape_partial.c): shape math on symbolic dims, such as
 * Concat(Shape(x)[0:1], [-1, 12, 64]) = [batch, -1, 12, 64]. n entries (0: nothing known); bit i of
 * known says v[i] is entry i; an unknown entry that equals a symbolic dim has its name in sym[i]. */
typedef struct {
    int n;
    guint32 known;
    gint64 v[HG_MAX_RANK];
    const char *sym[HG_MAX_RANK];
} HgPartial;

/* What shape inference knows of one value. */
typedef struct {
    int dtype;                     /* HG_DTYPE_UNDEFINED when unknown */
    int rank;                      /* -1 when unknown */
    HgSymDim dims[HG_MAX_RANK];
    HgArray *value;                /* the constant value when known (owned), e.g. folded shape math */
    HgPartial part;                /* the known entries where value is not known (n 0: none) */
} HgValueShape;

typedef struct {
    const HgNode *node;
    gint64 opset;                  /* the default-domain opset of the model */
    guint n_inputs;
    const HgValueShape *const *inputs; /* NULL entries for omitted optional inputs */
    guint n_outputs;
    HgValueShape **outputs;        /* start unknown (dtype UNDEFINED, rank -1, value NULL) */
    GError **error;
} HgShapeCtx;

/* Fill ctx->outputs with what can be inferred. Return FALSE with an HG_ERROR_INVALID error only when the
 * inputs are inconsistent (shapes that do not broadcast, an axis out of range); unknown inputs are not
 * an error: leave outputs unknown. */
typedef gboolean (*HgInferFunc)(HgShapeCtx *ctx);

/* Multiply-accumulates the op performs, from known shapes; -1 when unknown. */
typedef gint64 (*HgCostFunc)(const HgShapeCtx *ctx);

/* ---------------------------------------------------------------- evaluation */

typedef struct {
    const HgNode *node;
    gint64 opset;
    guint n_inputs;
    HgArray *const *inputs;        /* NULL entries for omitted optional inputs */
    guint n_outputs;
    HgArray **outputs;             /* the kernel stores new references; unused outputs may be left NULL */
    int threads;                   /* threads the kernel may use (BLAS) */
    GError **error;
} HgEvalCtx;

/* Compute the outputs. FP16/BF16 inputs are read as FP32 and outputs rounded once when stored (see
 * array.h), unless the op's accumulation note says otherwise. Return FALSE with an error on inputs it
 * cannot handle (HG_ERROR_INVALID for bad shapes or values, HG_ERROR_UNSUPPORTED for a legal case that
 * is not implemented, naming it). */
typedef gboolean (*HgEvalFunc)(HgEvalCtx *ctx);

/* ---------------------------------------------------------------- value ranges */

/* A sound enclosure of the values a tensor can hold, over every input allowed by the input ranges:
 * every non-NaN element x has lo <= x <= hi (an infinite bound means unbounded, and then x may be
 * that infinity); every nonzero |x| >= tiny (0 when no bound is known: what underflow analysis
 * needs); nan says whether NaN can appear. Integer tensors use the same form. */
typedef struct {
    double lo, hi;
    double tiny;
    gboolean nan;
} HgRange;

typedef struct {
    const HgNode *node;
    gint64 opset;
    guint n_inputs;
    const HgRange *const *inputs;           /* NULL for omitted inputs */
    const HgValueShape *const *shapes;      /* shape inference's view of each input (NULL: omitted) */
    const HgArray *const *values;           /* the values of constant inputs (initializers, folded
                                               shape math, Constant outputs), NULL when not constant */
    guint n_outputs;
    const HgValueShape *const *out_shapes;  /* what shape inference knows of the outputs */
    HgRange **outputs;                      /* start as "anything" (unbounded, NaN possible): narrow */
    /* The range of any value computed before this node (for rules that recognise a pattern through
     * producers), or NULL when the caller has none to offer. */
    const HgRange *(*range_of)(gconstpointer data, const HgValue *v);
    gconstpointer range_data;
    /* What shape inference knows of any value (for the same rules), or NULL. */
    const HgValueShape *(*shape_of)(gconstpointer data, const HgValue *v);
    gconstpointer shape_data;
    /* --dim-max specs (NULL-terminated, may be NULL), and where to note each length assumed for
     * symbolic dims (char*; NULL: not noted): see hg_range_len_bound. */
    const char *const *dim_max;
    GPtrArray *assumed;
} HgRangeCtx;

/* Where a rule needs only an upper bound on how many elements dims [from, to) of s hold (the terms of
 * a rounding slack): known dims as they are, a symbolic one at its --dim-max; where a symbolic dim has
 * none (or the rank is unknown), HG_ASSUMED_LEN for the lot. Every symbolic dim counted is noted in
 * ctx->assumed, so the assumption is reported. */
#define HG_ASSUMED_LEN ((gint64)1 << 20)
gint64 hg_range_len_bound(const HgRangeCtx *ctx, const HgValueShape *s, int from, int to);
/* A bound on the L2 norm of every row (last axis) of y when y normalizes its rows: F.normalize's
 * x / max(||x||, eps) (1), or an RMSNorm or decomposed LayerNorm quotient x / s, x * Reciprocal(s),
 * x * Div(c, s) with s = Sqrt(mean over the last axis of the squares + eps) (sqrt(n), times |c|);
 * INFINITY otherwise. Rounding included. */
double hg_norm_row_l2(const HgRangeCtx *ctx, const HgValue *y);

/* The interval rule of an op: narrow ctx->outputs from the inputs' ranges. Must be sound: a bound
 * that a real input inside the input ranges can cross is a bug (tests/ranges_sound.c checks the
 * rules against the interpreter). Leaving an output untouched is always sound. The driver widens
 * every finite bound outward by a relative 2^-20 afterwards, for FP32 rounding inside kernels. Each
 * op's rule is hg_range_<Op> in its family file (the elementwise family's in elementwise_range.c). */
typedef void (*HgRangeFunc)(HgRangeCtx *ctx);

/* Range helpers for rules. */
/* Bound arithmetic: x + y where inf - inf gives dflt (that side stays unbounded); x * y where 0
 * times an infinite bound counts as 0 (the NaN cases are the nan flag's job). */
double hg_bound_add(double x, double y, double dflt);
double hg_bound_mul(double x, double y);
HgRange hg_range_any(void);                                  /* unbounded, NaN possible */
HgRange hg_range_exact(double lo, double hi);                /* [lo, hi], no NaN, tiny 0 */
HgRange hg_range_of_array(const HgArray *a);                 /* exact, from the values */

/* What one pass over an array's values finds: its exact range, and the counts FP16 hazards need. */
typedef struct {
    HgRange range;
    gint64 n_nonfinite; /* inf or NaN */
    gint64 n_big;       /* finite, |x| > 65504: inf in FP16 */
    gint64 n_flush;     /* 0 < |x| <= 2^-25: 0 in FP16 */
    gint64 n_nonzero;   /* finite, nonzero, |x| <= 65504 */
} HgScan;
HgScan hg_scan_array(const HgArray *a);
/* The FLOAT scan of hg_scan_array over n floats at p (unaligned allowed), without its recount of
 * values past FP16's range (done only when range.nan or the range passes +-65504); and the scan of
 * two consecutive parts from theirs (acc the first, and then the whole). */
void hg_scan_f32_bytes(const guint8 *p, gint64 n, HgScan *out);
void hg_scan_merge(HgScan *acc, const HgScan *part);
gboolean hg_range_bounded(const HgRange *r);                 /* both bounds finite */

/* Interval arithmetic on the extended reals, for rules. Each takes ranges by value and returns the
 * range of the exact (real) result over every pair of values inside them, infinite values included:
 * a bound never comes out NaN (0 * inf counts as 0 and inf - inf as unbounded there), and `nan` is set
 * where the operation itself can make NaN from non-NaN operands (inf - inf, 0 * inf, 0 / 0, inf / inf)
 * or an operand can be NaN. Results are exact real bounds: rounding to the output's element type is
 * hg_range_fit's job (and the driver's FP32 widening). */
HgRange hg_range_neg(HgRange a);
HgRange hg_range_add(HgRange a, HgRange b);
HgRange hg_range_sub(HgRange a, HgRange b);
HgRange hg_range_mul(HgRange a, HgRange b);
/* x * sigmoid(x) in double; the range of x * sigmoid(a x) = silu(a x) / a over x (bounded, not NaN;
 * a > 0; else anything) with the roundings of values stored in dtype; and which input of Mul node n
 * is x in x * Sigmoid(x) or x * Sigmoid(a x), a a positive scalar constant (*a set), or -1
 * (elementwise_range.c). */
double hg_silu(double x);
HgRange hg_range_silu(HgRange x, double a, int dtype);
int hg_silu_operand(const HgNode *n, double *a);
/* x when n is Mul(x, x) or Pow(x, 2) (the exponent one element, an initializer or a Constant's),
 * else NULL. */
const HgValue *hg_square_base(const HgNode *n);
/* 1 / b: unbounded both ways when b reaches 0 (1 / -0 is -inf). */
HgRange hg_range_recip(HgRange b);
/* a / b, as a * (1 / b). */
HgRange hg_range_div(HgRange a, HgRange b);
/* The hull of two ranges: every value of either (tiny the smaller, nan either). */
HgRange hg_range_union(HgRange a, HgRange b);
/* f applied to the endpoints of x, for f monotone on [x.lo, x.hi] (increasing or decreasing) and
 * defined at the endpoints, infinities included (exp(-inf) = 0). An endpoint where f gives NaN leaves
 * that side unbounded and sets nan. tiny comes out 0; nan is x's. */
HgRange hg_range_monotone(HgRange x, double (*f)(double), gboolean increasing);
/* r as values stored in dtype come out: floats past the type's largest finite value become infinite
 * (FP32 and narrower overflow), 16-bit floats widen by their rounding and lose tiny below their normal
 * range; integer types wrap, so a range past the type's limits becomes the whole type; integers hold
 * no NaN, and their nonzero values have magnitude >= 1. An unknown or non-numeric dtype gives
 * hg_range_any(). */
HgRange hg_range_fit(HgRange r, int dtype);

/* ---------------------------------------------------------------- traits */

enum {
    HG_TRAIT_ELEMENTWISE = 1 << 0,     /* out[i] depends on in[i] only (after broadcasting) */
    /* positively homogeneous: f(a x) = a f(x) for a > 0, x its data (input 0, or every float input
     * of a JOINT op; weights, shapes and indices fixed). rescale carries a scale through these. */
    HG_TRAIT_HOMOGENEOUS = 1 << 1,
    HG_TRAIT_SCALE_INVARIANT = 1 << 2, /* f(a x) = f(x) for a > 0 (normalizations, ArgMax) */
    HG_TRAIT_SHAPE_ONLY = 1 << 3,      /* output depends on input shapes, not values (Shape, Size) */
    HG_TRAIT_DATA_MOVEMENT = 1 << 4,   /* moves or selects elements without arithmetic */
    HG_TRAIT_LINEAR = 1 << 5,          /* linear in its first input (Conv, MatMul, Gemm...) */
    /* The accumulation model. ACCUMULATES: each output element sums many terms (reductions, matrix
     * products, convolutions, pools, softmax and norm statistics, CumSum). ACCUM_FP16: on the
     * targets (TensorRT, ONNX Runtime CUDA, PyTorch) an FP16 node of this op keeps its running sum
     * in FP16, rounding each partial sum (CumSum); every other accumulating op keeps it in FP32 and
     * rounds once. hg_op_accumulates_fp16 reads these; every internal-overflow rule asks it. */
    HG_TRAIT_ACCUMULATES = 1 << 6,
    HG_TRAIT_ACCUM_FP16 = 1 << 7,
    /* Every float input is data, to be scaled alike (Add, Max, Concat): homogeneous only jointly. */
    HG_TRAIT_JOINT = 1 << 8,
    /* The outputs are elements of input 0, rearranged, repeated or a subset: no new values (Reshape,
     * Slice, Expand, Gather's data). */
    HG_TRAIT_REARRANGES = 1 << 9,
    /* A normalization: scale-invariant up to its epsilon attribute (default 1e-5), which x * a
     * matches with epsilon * a^2. */
    HG_TRAIT_EPS_NORM = 1 << 10,
    /* Integers in its data give integers out (sums, products, selections, Relu, CumSum). */
    HG_TRAIT_INT_CLOSED = 1 << 11,
    /* Its outputs are integers whatever its input (Floor, Ceil, Round). */
    HG_TRAIT_ROUNDS_TO_INT = 1 << 12,
};

/* Which accumulation the runtime uses: the targets' (HG_ACCUMULATE_TARGETS: FP16 only where the op
 * table says ACCUM_FP16), or FP16 for every accumulating op (HG_ACCUMULATE_FP16: runtimes that really
 * do, `--accumulate fp16`). The numbers are HgCheckOptions.accumulate's. */
typedef enum { HG_ACCUMULATE_TARGETS = 0, HG_ACCUMULATE_FP16 = 1 } HgAccumulateModel;

/* ---------------------------------------------------------------- the table */

typedef enum {
    HG_OP_OPAQUE = 0,
#define HG_OP(name, family, infer, eval, cost, traits, fp32_inputs, accum) HG_OP_##name,
#include "ops/ops.def"
#undef HG_OP
    HG_OP_COUNT
} HgOpId;

typedef struct {
    HgOpId id;
    const char *name;
    const char *family;            /* the kernel file */
    HgInferFunc infer;
    HgEvalFunc eval;
    HgCostFunc cost;
    guint traits;
    guint32 fp32_inputs;           /* bit i: input i must stay FP32 (scales, shapes, indices) */
    const char *accumulation;      /* how FP16 is computed, for docs and the report */
    HgRangeFunc range;             /* the interval rule, hg_range_<Op> */
} HgOpDef;

/* The row for (domain, op_type), or NULL when the op is opaque (other domains, ops not in the table). */
const HgOpDef *hg_op_lookup(const char *domain, const char *op_type);
const HgOpDef *hg_op_by_id(HgOpId id);
const HgOpDef *hg_op_for_node(const HgNode *node);
/* Does node's row carry every trait in traits? FALSE for an opaque op. */
gboolean hg_node_has_traits(const HgNode *node, guint traits);
/* Does an FP16 node of op keep a running sum in FP16 under model? FALSE for ops that do not
 * accumulate, and for a NULL op. */
gboolean hg_op_accumulates_fp16(const HgOpDef *op, HgAccumulateModel model);

/* Declarations of every table function. */
#define HG_OP(name, family, infer, eval, cost, traits, fp32_inputs, accum)                          \
    gboolean infer(HgShapeCtx *ctx);                                                               \
    gboolean eval(HgEvalCtx *ctx);                                                                 \
    gint64 cost(const HgShapeCtx *ctx);                                                            \
    void hg_range_##name(HgRangeCtx *ctx);
#include "ops/ops.def"
#undef HG_OP

/* ---------------------------------------------------------------- helpers for kernels */

/* Attribute access with defaults (NULL/0 when absent). */
const gint64 *hg_attr_ints(const HgNode *n, const char *name, guint *len);
const float *hg_attr_floats(const HgNode *n, const char *name, guint *len);
/* A string attribute copied into a NUL-terminated buffer (g_free), or g_strdup(dflt). */
char *hg_attr_string(const HgNode *n, const char *name, const char *dflt);

/* Normalize axis (may be negative) for a tensor of rank r; FALSE with HG_ERROR_INVALID when out of
 * range. */
gboolean hg_norm_axis(gint64 axis, guint rank, gint64 *out, const HgNode *n, GError **error);

/* Set an error for ctx's node: "node 'name' (Op): message". */
void hg_op_error(GError **error, int code, const HgNode *n, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Input i's shape record, or NULL when i is past the node's inputs or the input is omitted. */
const HgValueShape *hg_shape_input(const HgShapeCtx *ctx, guint i);
/* Output i's shape record to fill, or NULL when i is past ctx->n_outputs (or the slot is NULL). */
HgValueShape *hg_shape_output(const HgShapeCtx *ctx, guint i);
/* Input i's array, or NULL when i is past the node's inputs or the input is omitted. */
HgArray *hg_eval_input(const HgEvalCtx *ctx, guint i);
/* A new array for an output of ctx's node, as hg_array_new (zero-filled); NULL with the error set on
 * ctx->error and prefixed with the node ("node 'name' (Op): ..."). */
HgArray *hg_eval_new_output(HgEvalCtx *ctx, int dtype, guint rank, const gint64 *dims);
/* The same through hg_array_new_uninit, for a kernel that writes every element. */
HgArray *hg_eval_new_output_uninit(HgEvalCtx *ctx, int dtype, guint rank, const gint64 *dims);

/* Shape-inference helpers. */
void hg_vshape_unknown(HgValueShape *s);
void hg_vshape_set_known(HgValueShape *s, int dtype, guint rank, const gint64 *dims);
gboolean hg_vshape_known(const HgValueShape *s); /* rank known and every dim known */
gint64 hg_vshape_numel(const HgValueShape *s);   /* -1 unless every dim is known */

G_END_DECLS

#endif
