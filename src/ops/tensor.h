/* The tensor families (internal): shape arithmetic and views (shape.c), data movement
 * (movement.c), indexing (index.c), Resize/Upsample and GridSample (resize.c), and what they share,
 * defined in tensor.c.
 *
 * Data movement copies raw elements by their size, so an FP16 tensor moves bit for bit and one kernel
 * serves every dtype; string tensors move their GBytes pointers the same way (8-byte elements) and
 * take references at the end (hg_mover_new / hg_mover_done). Arithmetic happens only in Resize's
 * linear and cubic modes (FP32, or FP64 for double, rounded once on store), in GridSample (FP64 sums,
 * rounded once) and in Scatter reductions.
 *
 * Shape rules and kernels share one "plan" per op where parameters come from inputs (Slice, Reshape,
 * Pad, Split, Resize...): the plan works on symbolic shapes (HgSymShape) and on parameters that may
 * be unknown during shape inference (HgArgs), so what the interpreter computes and what inference
 * predicts are one piece of code. Inference folds an op (evaluates it) when every input value is
 * known and the outputs are small (hg_fold): that is how Shape -> Gather -> Concat -> Reshape chains
 * become constants.
 */
#ifndef HG_OPS_TENSOR_H
#define HG_OPS_TENSOR_H

#include "ops/kernel.h"

G_BEGIN_DECLS

/* Boxes for strided copies: Tile doubles the rank (repeat, dim) pairs. */
#define HG_MAX_BOX (2 * HG_MAX_RANK)
/* No input holds the parameter (hg_arg_ints). */
#define HG_NO_INPUT G_MAXUINT

/* ---------------------------------------------------------------- symbolic shapes */

/* What a plan knows of a shape: rank -1 when unknown, dims with v < 0 when unknown (sym may name it). */
typedef struct {
    int rank;
    HgSymDim d[HG_MAX_RANK];
} HgSymShape;

/* rank dims, every one unknown. */
void hg_sym_unknown_dims(HgSymShape *s, int rank);
void hg_sym_from_dims(HgSymShape *s, guint rank, const gint64 *dims);
/* Rank and every dim known. */
gboolean hg_sym_known(const HgSymShape *s);
void hg_sym_dims(const HgSymShape *s, gint64 *dims);
/* Product of dims [from, to): known when all are (or one is 0); the dim itself when it is the only
 * factor other than 1s, so Flatten of [N, C] keeps N's name; a product name ("batch*seq",
 * hg_dim_mul) when every unknown dim is named. */
HgSymDim hg_sym_prod(const HgSymShape *s, int from, int to);
/* o (when not NULL) takes dtype and s. */
void hg_vshape_set_sym(HgValueShape *o, int dtype, const HgSymShape *s);

/* ---------------------------------------------------------------- inputs of either context */

/* The inputs of a node as both shape inference and evaluation see them, so that one plan function
 * serves both: during inference an input may be present with an unknown value. */
typedef struct {
    const HgNode *node;
    gint64 opset;
    guint n_inputs;
    const HgValueShape *const *shapes; /* inference */
    HgArray *const *arrays;            /* evaluation */
    GError **error;
} HgArgs;

HgArgs hg_args_infer(const HgShapeCtx *c);
HgArgs hg_args_eval(const HgEvalCtx *c);
/* The same over an interval rule's context, its constant inputs as values. shapes: free with
 * hg_args_range_free. */
HgArgs hg_args_range(const HgRangeCtx *c, HgValueShape **shapes);
void hg_args_range_free(HgArgs *a, HgValueShape *shapes);

gboolean hg_arg_present(const HgArgs *a, guint i);
/* The value of input i when known (always during evaluation), else NULL. */
const HgArray *hg_arg_value(const HgArgs *a, guint i);
int hg_arg_dtype(const HgArgs *a, guint i);
void hg_arg_shape(const HgArgs *a, guint i, HgSymShape *s);
/* Fill y with rank taken from the length of the 1-D parameter input `index` (plus extra) when only
 * that is known; rank -1 otherwise. */
void hg_sym_rank_from_param(const HgArgs *a, guint index, int extra, HgSymShape *y);

/* Record an error for the node and return FALSE. */
gboolean hg_arg_fail(const HgArgs *a, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
#define INVALID(a, ...) hg_arg_fail((a), HG_ERROR_INVALID, __VA_ARGS__)
#define UNSUPPORTED(a, ...) hg_arg_fail((a), HG_ERROR_UNSUPPORTED, __VA_ARGS__)

/* Whether a parameter is there, and known. */
typedef enum { P_ABSENT, P_UNKNOWN, P_KNOWN } HgPState;

/* An int list given by input `index` (newer opsets) or attribute `attr` (older ones). The input wins
 * when present, so a model that mixes the forms still runs. *vals is g_free'd by the caller. */
HgPState hg_arg_ints(const HgArgs *a, guint index, const char *attr, gint64 **vals, guint *n);
/* The entries of the int list input `index` that inference knows where hg_arg_ints found it
 * unknown (HgValueShape.part): *vals (g_free'd by the caller) and *n as hg_arg_ints's, bit i of
 * *known for each known entry, syms[i] (HG_MAX_RANK slots) the name of an unknown entry that is a
 * symbolic dim. FALSE (nothing set) when not even the length is known. */
gboolean hg_arg_ints_partial(const HgArgs *a, guint index, gint64 **vals, guint *n, guint32 *known,
                             const char **syms);
/* Normalize axes against rank (negative count from the end); repeated axes are an error. */
gboolean hg_arg_norm_axes(const HgArgs *a, gint64 *axes, guint n, guint rank);

/* What a plan found: PLAN_OK means every output dim and every kernel parameter is known. */
enum { PLAN_ERR = -1, PLAN_UNKNOWN = 0, PLAN_OK = 1 };

/* Whether evaluation may go on with a plan: with every input known a plan is complete, but should one
 * still miss something, say so rather than fail without an error. */
gboolean hg_plan_done(const HgArgs *a, int st);

/* ---------------------------------------------------------------- raw elements */

/* Bytes per element as the movers see it: GBytes pointers for strings. */
gsize hg_mover_size(int dtype);
void *hg_mover_data(const HgArray *a);
/* A new output for a mover. String outputs start with NULL slots that the kernel fills with borrowed
 * pointers; hg_mover_done() then takes a reference on each (and makes NULL slots empty strings). */
HgArray *hg_mover_new(const HgArgs *a, int dtype, guint rank, const gint64 *dims);
HgArray *hg_mover_done(HgArray *o);
/* hg_mover_done, then unref: drop an output on an error path. */
void hg_mover_drop(HgArray *o);

/* A strided box copy: dst[i] = src[i] over dims, with per-dim strides in elements for each side (0
 * broadcasts, negative walks backwards). Transpose, Slice, Expand, Tile and DepthToSpace are boxes. */
typedef struct {
    guint rank;
    gint64 dims[HG_MAX_BOX];
    gint64 ds[HG_MAX_BOX], ss[HG_MAX_BOX];
} HgBox;

/* Walk an odometer over dims [0, n): advance idx and the two offsets by one step. */
static inline void
hg_odometer_step(guint n, const gint64 *dims, const gint64 *ds, const gint64 *ss, gint64 *idx,
                 gint64 *doff, gint64 *soff)
{
    for (guint k = n; k-- > 0;) {
        *doff += ds[k];
        *soff += ss[k];
        if (++idx[k] < dims[k])
            return;
        *doff -= ds[k] * dims[k];
        *soff -= ss[k] * dims[k];
        idx[k] = 0;
    }
}

/* Copy a box of elements of es bytes. */
void hg_box_copy(void *dst, const void *src, const HgBox *box, gsize es);
/* out[o_0, ..., o_r-1] = in[map_0[o_0], ..., map_r-1[o_r-1]], or *fill where an entry is -1. One loop
 * for every Pad mode (the maps reflect, clamp or wrap) and for nearest Resize (the maps round). */
void hg_table_gather(void *dst, const void *src, guint rank, const gint64 *out_dims, const gint64 *in_dims,
                     gint64 *const *maps, const void *fill, gsize es);
/* One element of a scalar-ish array converted to dtype's raw bytes (buf of 16). Same dtype copies
 * bits; otherwise integers go through int64 and floats through double. */
void hg_scalar_bytes(const HgArray *v, double dflt, int dtype, void *buf);
/* A new int64 array of the given shape holding vals. */
HgArray *hg_i64_array(guint rank, const gint64 *dims, const gint64 *vals);

/* ---------------------------------------------------------------- interval rules */

/* The union of r with the single value v. */
HgRange hg_range_with(HgRange r, double v);
/* Every output takes input 0's range exactly. */
void hg_range_move(HgRangeCtx *c);

G_END_DECLS

#endif
