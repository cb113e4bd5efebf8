/* The linear-algebra families (internal): convolutions (conv.c), pools (pool.c), matrix products
 * (matmul.c: MatMul, Gemm, Einsum), attention (attention.c: Attention, RotaryEmbedding), and what
 * they share, defined in linalg.c: sliding windows, BLAS, a parallel loop, scratch buffers and the
 * interval machinery of linear ops.
 *
 * Compute kinds (kernel.h): FP32 for float, float16 and bfloat16 (rounded once when stored), FP64 for
 * double, and 64-bit integers with wrapping arithmetic for the integer MatMul, Gemm and Einsum. Each
 * family's typed kernels are a template (conv.inc, pool.inc, matmul.inc, attention.inc) that its .c
 * instantiates per kind; their GEMM is hg_gemm_f32, hg_gemm_f64 or hg_gemm_i64.
 */
#ifndef HG_OPS_LINALG_H
#define HG_OPS_LINALG_H

#include "ops/kernel.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- small arithmetic */

/* Versions from v on; 0 (not imported) counts as the newest. */
static inline gboolean
hg_opset_at_least(gint64 opset, gint64 v)
{
    return opset <= 0 || opset >= v;
}

/* b > 0; rounds toward +inf for either sign of a. */
static inline gint64
hg_ceil_div(gint64 a, gint64 b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static inline gint64
hg_floor_div(gint64 a, gint64 b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* ---------------------------------------------------------------- windows */

/* Spatial rank the window kernels run on: 1-D and 2-D windows are 3-D ones with leading axes of 1. */
#define HG_WIN_RANK 3

/* A sliding window over one image. `img` is the image the window reads (Conv, pools) or writes
 * (ConvTranspose); `grid` the positions it takes. Position g along axis i covers the image
 * coordinates g * s[i] - pb[i] + j * d[i] for taps j in [0, k[i]); pe[i] is the padding at the end
 * (the pools' count_include_pad needs it). */
typedef struct {
    gint64 img[HG_WIN_RANK], grid[HG_WIN_RANK], k[HG_WIN_RANK], s[HG_WIN_RANK], d[HG_WIN_RANK],
        pb[HG_WIN_RANK], pe[HG_WIN_RANK];
} HgWin;

/* Per grid position along one axis: taps [lo, hi) land inside the image; `padded` taps (from 0) land
 * inside the padded extent [-pb, img + pe). */
typedef struct {
    gint64 lo, hi, padded;
} HgTaps;

/* Grid positions g in [lo, hi) whose coordinate g * s + off falls in [0, len), clipped to [0, n). */
static inline void
hg_win_range(gint64 off, gint64 s, gint64 len, gint64 n, gint64 *lo, gint64 *hi)
{
    gint64 l = off >= 0 ? 0 : hg_ceil_div(-off, s);
    gint64 h = len - off <= 0 ? 0 : hg_ceil_div(len - off, s);
    h = MIN(h, n);
    *lo = MIN(l, h);
    *hi = h;
}

/* The taps of every grid position along axis (a new array of grid[axis] entries, g_free). */
HgTaps *hg_win_taps(const HgWin *w, int axis);
void hg_win_init(HgWin *w);
/* The product of a window's three extents. */
gint64 hg_win_size(const gint64 *v);

typedef enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID } HgAutoPad;

/* A pool's smallest window extent along its axes, from kernel_shape and dilations; 0 without
 * kernel_shape. (pool.c; the per-channel rules of ranges_chan.c use it too.) */
gint64 hg_pool_window_extent(const HgNode *node);

/* Attributes of Conv, ConvTranspose and the pools for nsp spatial axes, checked, with defaults. */
typedef struct {
    guint nsp;
    HgAutoPad auto_pad;
    gboolean has_kernel;
    gint64 kernel[HG_MAX_RANK];
    gint64 strides[HG_MAX_RANK];
    gint64 dilations[HG_MAX_RANK];
    gint64 pads[2 * HG_MAX_RANK]; /* the begins, then the ends, as ONNX writes them */
    gint64 group;
} HgWinAttrs;

/* An INTS attribute of n values each in [min, G_MAXINT32], or dflt everywhere when absent. */
gboolean hg_ints_attr(const HgNode *node, const char *name, guint n, gint64 dflt, gint64 min, gint64 *out,
                      gboolean *present, GError **error);
gboolean hg_win_attrs_parse(const HgNode *node, gint64 opset, guint nsp, HgWinAttrs *a, GError **error);
/* Output length of Conv or a pool along axis i for an input of length in, and the padding (pb, pe)
 * that auto_pad implies. ceil_mode is the pools' rounding up, where a window that would start in
 * the end padding is dropped (as PyTorch and the ONNX reference do). FALSE when the kernel does
 * not fit in the padded input. */
gboolean hg_win_out_dim(const HgWinAttrs *a, guint i, gint64 in, gint64 kernel, gboolean ceil_mode, gint64 *pb,
                        gint64 *pe, gint64 *out);
void hg_win_fill_axis(HgWin *w, guint nsp, guint i, gint64 img, gint64 grid, gint64 k, const HgWinAttrs *a,
                      gint64 pb, gint64 pe);
/* Kernel dims of Conv/ConvTranspose: kernel_shape when given (it must agree with W), else W's
 * spatial dims; -1 where unknown. */
gboolean hg_conv_kernel(const HgNode *node, const HgWinAttrs *a, const HgValueShape *w, gint64 *kernel,
                        GError **error);
/* What the shape rules of Conv, ConvTranspose and the pools check first: X of rank 3 or more, the
 * window attributes (*a), the kernel dims (a pool's kernel_shape; for a convolution, W's rank and
 * hg_conv_kernel). 1 to go on, 0 when X's rank is unknown (nothing more to infer), -1 with an error. */
int hg_infer_window_start(HgShapeCtx *ctx, const HgValueShape *x, const HgValueShape *w, gboolean is_pool,
                          HgWinAttrs *a, gint64 *kernel);
/* Shape rule of Conv and the pools: [N, C_out, spatial...]; folds with eval. */
gboolean hg_infer_window(HgShapeCtx *ctx, gboolean is_pool, gboolean ceil_ok, HgEvalFunc eval);

/* ---------------------------------------------------------------- BLAS, threads, scratch */

/* OpenBLAS's thread count, set only when it changes. */
void hg_blas_threads(int threads);
/* Every size within int, as cblas takes them. */
gboolean hg_blas_fits(gint64 a, gint64 b, gint64 c, gint64 d);
/* Row-major GEMM, C = alpha op(A) op(B) + beta C, one per compute kind (the integer one wraps).
 * Callers keep every size within int (hg_blas_fits); K = 0 is handled. */
void hg_gemm_f32(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, float alpha, const float *a,
                 gint64 lda, const float *b, gint64 ldb, float beta, float *c, gint64 ldc);
void hg_gemm_f64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, double alpha, const double *a,
                 gint64 lda, const double *b, gint64 ldb, double beta, double *c, gint64 ldc);
void hg_gemm_i64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, guint64 alpha, const guint64 *a,
                 gint64 lda, const guint64 *b, gint64 ldb, guint64 beta, guint64 *c, gint64 ldc);

#define HG_PAR_MAX_THREADS 64

/* Tasks [0, n) are taken one at a time off a shared counter by up to `threads` threads, the
 * caller's among them, so a core that other work slows down takes fewer of them. `worker` (below
 * the thread count) indexes per-thread scratch. */
typedef void (*HgParTask)(gpointer data, gint64 task, int worker);
/* threads <= HG_PAR_MAX_THREADS; n < G_MAXINT. A thread that cannot start leaves its share to the
 * others. */
void hg_par_for(int threads, gint64 n, HgParTask fn, gpointer data);
/* Threads a kernel of macs multiply-adds may use: ctx->threads, or every processor when unset (as
 * OpenBLAS does); 1 below the size where starting threads costs more. */
int hg_eval_threads(const HgEvalCtx *ctx, gint64 macs);

/* A buffer of at least bytes, kept from one call to the next; *slot is what to give it back with.
 * NULL when out of memory. */
void *hg_scratch_get(gsize bytes, int *slot);
void hg_scratch_put(void *p, int slot);

/* ---------------------------------------------------------------- interval rules of linear ops
 * Linear ops bound each output as a sum of products. With constant weights the bound is exact per
 * output channel (or column): split the channel's weights into their positive sum sp and negative
 * sum sn, then out is in [sp*lo + sn*hi, sp*hi + sn*lo] + bias. Without, each of K terms lies in the
 * product interval. Accumulation rounds: the bounds are widened by an absolute K-term rounding error
 * of the sum of magnitudes (the driver's relative widening cannot cover cancellation). */

/* The product of two intervals. */
void hg_range_prod(double alo, double ahi, double blo, double bhi, double *lo, double *hi);
/* The largest magnitude in [lo, hi]. */
double hg_mag(double lo, double hi);
/* Output 0's element type (else input 0's). */
int hg_range_out_dtype(const HgRangeCtx *ctx);
/* Largest value the integer dtype holds exactly (wrapping beyond), or 0 for others. */
double hg_int_max(int dtype);
/* Store the bound [lo, hi] of output 0. mag bounds the magnitude of every partial sum of the k terms
 * the kernel accumulates (FP32 for the float types but double); nan says whether an input can bring
 * NaN (or infinity) in: the output keeps the flag beside finite bounds, which only infinite lo, hi or
 * mag (an unbounded input, an overflowing sum) make infinite. Integers wrap: a bound that may not fit
 * stays unbounded. */
void hg_range_set_linear(HgRangeCtx *ctx, double lo, double hi, double mag, gint64 k, gboolean nan);
/* A range that is missing, may hold NaN or is unbounded. */
gboolean hg_range_bad(const HgRange *r);
/* Whether a Conv or pool pads: explicit pads or a SAME auto_pad (*max_pad: the largest pad). */
gboolean hg_win_pads(const HgNode *node, gint64 *max_pad);

/* Which vector (output channel, row, column) element i of a constant weight array belongs to. */
typedef gint64 (*HgVecId)(gint64 i, const gint64 *p);
/* Conv W [M, ...]: p = {taps per output channel}. */
gint64 hg_vec_conv(gint64 i, const gint64 *p);
/* MatMul with constant B: p = {K, N}, vector = batch * N + column. */
gint64 hg_vec_matmul_b(gint64 i, const gint64 *p);
/* Rows of p[0] elements; columns of p[1]. */
gint64 hg_vec_row(gint64 i, const gint64 *p);
gint64 hg_vec_col(gint64 i, const gint64 *p);
/* Per-vector positive and negative sums of a constant weight array: element i belongs to vector
 * id(i). FALSE when a weight is not finite. */
gboolean hg_weight_sums(const HgArray *w, gint64 nvec, HgVecId id, const gint64 *p, double *sp, double *sn);
/* sq[j] = the sum of the squares of column j of w, [kk, nn] (tb: [nn, kk], column j is row j), in
 * double, added in row order; kept with a mapped file's weights for the next analysis. */
void hg_weight_col_squares(const HgArray *w, gint64 kk, gint64 nn, gboolean tb, double *sq);
/* One pass over a large FP32 weight w viewed in a mapped file, [rows, cols]: its scan
 * (hg_scan_array), and its row sums (by_rows: a Conv's or transB Gemm's filters) or its column sums
 * and squares (a MatMul's B), kept as the facts hg_scan_array, hg_weight_sums and
 * hg_weight_col_squares look for, to the bit what they would compute. Does nothing for other
 * weights. Thread-safe. */
void hg_weight_prescan(const HgArray *w, gboolean by_rows, gint64 rows, gint64 cols);
/* out_v = sum of w*x with x in [xlo, xhi] over vector v's weights, plus a bias in [blo_v, bhi_v]
 * (bias NULL: the range [blo0, bhi0] for every vector); the union over vectors, and the largest
 * partial-sum magnitude. */
void hg_weight_bound(gint64 nvec, const double *sp, const double *sn, double xlo, double xhi,
                     const HgArray *bias, double blo0, double bhi0, double *lo, double *hi, double *mag);

G_END_DECLS

#endif
