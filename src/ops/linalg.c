/* The linalg family: Conv, ConvTranspose, AveragePool, MaxPool, GlobalAveragePool, GlobalMaxPool,
 * Gemm, MatMul and Einsum, and the transformer ops built on them: Attention and RotaryEmbedding.
 *
 * Compute kinds (kernel.h): FP32 for float, float16 and bfloat16 (rounded once when stored), FP64 for
 * double, and 64-bit integers with wrapping arithmetic for the integer MatMul, Gemm and Einsum. The
 * typed kernels are templates written once (conv.inc, pool.inc, matmul.inc, attention.inc) and
 * instantiated below per kind (name_f32, name_f64, name_i64).
 *
 * Conv runs one of three ways (conv_compute). A 1x1, stride-1, unpadded Conv is one GEMM on the
 * input as it lies. With few output channels per group, a direct kernel: vectorized, built for AVX2
 * as well and picked at run time, since im2col + GEMM would re-read each gathered element only that
 * few times. Otherwise im2col + GEMM (OpenBLAS): the input windows are gathered into a column
 * matrix a band of rows at a time, so the buffer stays a few MB whatever the image size, and the
 * bands are spread over threads, each running a single-threaded GEMM. ConvTranspose multiplies the
 * transposed weights by the input and scatters the columns back (col2im), its tasks split by blocks
 * of output channels so that no two write the same output.
 */
#include "ops/kernel.h"
#include "ir_private.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ================================================================ shared helpers */

/* Spatial rank the window kernels run on: 1-D and 2-D windows are 3-D ones with leading axes of 1. */
#define WIN_RANK 3

/* Bytes of im2col/col2im buffer one band may use: big enough for GEMM to run at full speed, small
 * enough to stay in cache. */
#define COL_BAND_BYTES ((gint64)2 << 20)

/* A sliding window over one image. `img` is the image the window reads (Conv, pools) or writes
 * (ConvTranspose); `grid` the positions it takes. Position g along axis i covers the image
 * coordinates g * s[i] - pb[i] + j * d[i] for taps j in [0, k[i]); pe[i] is the padding at the end
 * (the pools' count_include_pad needs it). */
typedef struct {
    gint64 img[WIN_RANK], grid[WIN_RANK], k[WIN_RANK], s[WIN_RANK], d[WIN_RANK], pb[WIN_RANK],
        pe[WIN_RANK];
} Win;

/* Shapes of one Conv or ConvTranspose. */
typedef struct {
    gint64 n, c, m, group;         /* batch, input channels, output channels, groups */
    Win win;                       /* Conv: img = input, grid = output; ConvTranspose: the reverse */
    gint64 img_size, grid_size, kprod;
} ConvPlan;

/* Per grid position along one axis: taps [lo, hi) land inside the image; `padded` taps (from 0) land
 * inside the padded extent [-pb, img + pe). */
typedef struct {
    gint64 lo, hi, padded;
} Taps;


/* Versions from v on; 0 (not imported) counts as the newest. */
static gboolean
opset_at_least(gint64 opset, gint64 v)
{
    return opset <= 0 || opset >= v;
}

static gint64
ceil_div(gint64 a, gint64 b)
{
    /* b > 0; rounds toward +inf for either sign of a */
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static gint64
floor_div(gint64 a, gint64 b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Grid positions g in [lo, hi) whose coordinate g * s + off falls in [0, len), clipped to [0, n). */
static void
win_range(gint64 off, gint64 s, gint64 len, gint64 n, gint64 *lo, gint64 *hi)
{
    gint64 l = off >= 0 ? 0 : ceil_div(-off, s);
    gint64 h = len - off <= 0 ? 0 : ceil_div(len - off, s);
    h = MIN(h, n);
    *lo = MIN(l, h);
    *hi = h;
}

static Taps *
win_taps(const Win *w, int axis)
{
    gint64 n = w->grid[axis], d = w->d[axis], k = w->k[axis];
    Taps *t = g_new(Taps, n + 1);
    for (gint64 g = 0; g < n; g++) {
        gint64 start = g * w->s[axis] - w->pb[axis];
        gint64 lo, hi;
        /* taps j with 0 <= start + j * d < img, and with start + j * d < img + pe */
        win_range(start, d, w->img[axis], k, &lo, &hi);
        t[g].lo = lo;
        t[g].hi = hi;
        gint64 end = w->img[axis] + w->pe[axis] - start;
        t[g].padded = end <= 0 ? 0 : MIN(k, ceil_div(end, d));
    }
    return t;
}

/* OpenBLAS's thread count, set only when it changes (setting it is not free). Asked of OpenBLAS each
 * time rather than cached, since other code may set it too. */
static void
blas_threads(int threads)
{
    if (threads > 0 && openblas_get_num_threads() != threads)
        openblas_set_num_threads(threads);
}

/* Row-major GEMM, C = alpha op(A) op(B) + beta C, one per compute type. Callers keep every size
 * within int (blas_fits). K = 0 is handled here: cblas rejects a leading dimension of 0 with a
 * message on stderr. */
static gboolean
blas_fits(gint64 a, gint64 b, gint64 c, gint64 d)
{
    return a <= G_MAXINT && b <= G_MAXINT && c <= G_MAXINT && d <= G_MAXINT;
}

#define GEMM_DEGENERATE(T, m, n, k, beta, c, ldc)                                                  \
    do {                                                                                           \
        if ((m) <= 0 || (n) <= 0)                                                                  \
            return;                                                                                \
        if ((k) <= 0) {                                                                            \
            for (gint64 i_ = 0; i_ < (m); i_++)                                                    \
                for (gint64 j_ = 0; j_ < (n); j_++)                                                \
                    (c)[i_ * (ldc) + j_] = (beta) == 0 ? (T)0 : (T)((beta) * (c)[i_ * (ldc) + j_]); \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static void
gemm_f32(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, float alpha, const float *a,
         gint64 lda, const float *b, gint64 ldb, float beta, float *c, gint64 ldc)
{
    GEMM_DEGENERATE(float, m, n, k, beta, c, ldc);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
                (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

static void
gemm_f64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, double alpha, const double *a,
         gint64 lda, const double *b, gint64 ldb, double beta, double *c, gint64 ldc)
{
    GEMM_DEGENERATE(double, m, n, k, beta, c, ldc);
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
                (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* Integers: unsigned arithmetic wraps without undefined behaviour, and its bits are those of the
 * two's complement result, so int32/int64 products wrap as they do in NumPy. */
static void
gemm_i64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, guint64 alpha, const guint64 *a,
         gint64 lda, const guint64 *b, gint64 ldb, guint64 beta, guint64 *c, gint64 ldc)
{
    for (gint64 i = 0; i < m; i++) {
        guint64 *ci = c + i * ldc;
        for (gint64 j = 0; j < n; j++)
            ci[j] = beta ? ci[j] * beta : 0;
        for (gint64 p = 0; p < k; p++) {
            guint64 av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
            if (tb) {
                for (gint64 j = 0; j < n; j++)
                    ci[j] += av * b[j * ldb + p];
            } else {
                const guint64 *bp = b + p * ldb;
                for (gint64 j = 0; j < n; j++)
                    ci[j] += av * bp[j];
            }
        }
    }
}

/* Step a multi-index idx over labels [from, to) (the last fastest), moving each of the nops offsets
 * off[q] by strides[q * pitch + label]. FALSE once it wraps around. */
static gboolean
odo_step(gint64 *idx, const gint64 *dims, guint from, guint to, guint nops, const gint64 *strides,
         guint pitch, gint64 *off)
{
    for (guint l = to; l-- > from;) {
        idx[l]++;
        for (guint q = 0; q < nops; q++)
            off[q] += strides[q * pitch + l];
        if (idx[l] < dims[l])
            return TRUE;
        for (guint q = 0; q < nops; q++)
            off[q] -= strides[q * pitch + l] * dims[l];
        idx[l] = 0;
    }
    return FALSE;
}

/* ---------------------------------------------------------------- a small parallel loop */

#define PAR_MAX_THREADS 64

/* Work below this many multiply-adds runs on the calling thread: starting threads costs more. */
#define PAR_MIN_MACS ((gint64)1 << 22)

/* Tasks [0, n) are taken one at a time off a shared counter by up to `threads` threads, the
 * caller's among them, so a core that other work slows down takes fewer of them. `worker` (below
 * the thread count) indexes per-thread scratch. */
typedef void (*ParTask)(gpointer data, gint64 task, int worker);

typedef struct {
    ParTask fn;
    gpointer data;
    gint64 n;
    gint next;
} ParJob;

typedef struct {
    ParJob *job;
    int worker;
} ParWorker;

static gpointer
par_worker(gpointer p)
{
    ParWorker *w = p;
    for (;;) {
        gint64 i = g_atomic_int_add(&w->job->next, 1);
        if (i >= w->job->n)
            break;
        w->job->fn(w->job->data, i, w->worker);
    }
    return NULL;
}

/* threads <= PAR_MAX_THREADS; n < G_MAXINT. A thread that cannot start leaves its share to the
 * others. */
static void
par_for(int threads, gint64 n, ParTask fn, gpointer data)
{
    ParJob job = {fn, data, n, 0};
    int nt = (int)MIN((gint64)CLAMP(threads, 1, PAR_MAX_THREADS), MAX(n, 1));
    ParWorker ws[PAR_MAX_THREADS];
    GThread *th[PAR_MAX_THREADS] = {NULL};
    for (int t = 0; t < nt; t++)
        ws[t] = (ParWorker){&job, t};
    for (int t = 1; t < nt; t++)
        th[t] = g_thread_try_new("hg-linalg", par_worker, &ws[t], NULL);
    par_worker(&ws[0]);
    for (int t = 1; t < nt; t++)
        if (th[t])
            g_thread_join(th[t]);
}

/* Scratch buffers kept from one call to the next, one per slot: buffers this big come from mmap, and
 * unmapping them on every call costs page faults and a TLB shootdown on every core. A slot in use
 * by another caller is skipped; past SCRATCH_KEEP_BYTES a buffer is not kept. */
#define SCRATCH_KEEP_BYTES ((gsize)64 << 20)

static GMutex scratch_lock;
static struct {
    void *p;
    gsize size;
    gboolean busy;
} scratch_pool[PAR_MAX_THREADS];

/* A buffer of at least bytes; *slot is the pool slot to give it back to, or -1 for a buffer of its
 * own. NULL when out of memory. */
static void *
scratch_get(gsize bytes, int *slot)
{
    g_mutex_lock(&scratch_lock);
    for (int i = 0; i < PAR_MAX_THREADS && bytes <= SCRATCH_KEEP_BYTES; i++) {
        if (scratch_pool[i].busy)
            continue;
        if (scratch_pool[i].size < bytes) {
            g_free(scratch_pool[i].p);
            scratch_pool[i].p = g_try_malloc(bytes);
            scratch_pool[i].size = scratch_pool[i].p ? bytes : 0;
            if (!scratch_pool[i].p)
                break;
        }
        scratch_pool[i].busy = TRUE;
        *slot = i;
        g_mutex_unlock(&scratch_lock);
        return scratch_pool[i].p;
    }
    g_mutex_unlock(&scratch_lock);
    *slot = -1;
    return g_try_malloc(bytes);
}

static void
scratch_put(void *p, int slot)
{
    if (slot < 0) {
        g_free(p);
        return;
    }
    g_mutex_lock(&scratch_lock);
    scratch_pool[slot].busy = FALSE;
    g_mutex_unlock(&scratch_lock);
}

/* One Conv or ConvTranspose run split into tasks (see conv_compute). Data pointers are in the
 * compute type; each task adds the bias to what it wrote while that is still in cache. */
typedef struct {
    HgKind kind;
    const ConvPlan *p;
    const void *x, *w, *b; /* b: the bias, or NULL */
    void *y;
    int out_dtype;         /* the output's element type: float16 and bfloat16 round before the bias */
    void **scratch;        /* one buffer per worker */
    gint64 band;           /* rows per band */
    gint64 ntasks_ng;      /* tasks per image and group */
    gint64 mblock;         /* ConvTranspose: output channels per task */
} ConvJob;

/* Output channels per group up to which Conv runs the direct kernel rather than im2col + GEMM:
 * there each gathered element would be used only that many times. Measured on the 2-core Zen
 * machines: the direct kernel is up to 3x faster at 3 to 4 channels, level at 8 to 12, slower at 16. */
#define DIRECT_MAX_M 8
/* Output channels the direct kernel computes together (held in registers). */
#define DIRECT_MB 4

static gint64
round_up(gint64 a, gint64 b)
{
    return (a + b - 1) / b * b;
}

/* ================================================================ typed kernels */

/* Einsum's plan: labels [0, nout) are the output's in its order, then the summed ones; strides
 * holds each operand's element stride per label (0 where it broadcasts), with a pitch of
 * EIN_MAX_LABELS. */
#define EIN_MAX_LABELS (52 + HG_MAX_RANK)

typedef struct {
    guint nops, nlab, nout;
    gint64 dims[EIN_MAX_LABELS];
    gint64 *strides;
} EinPlan;

/* One Attention run (see hg_eval_Attention): data in the compute type, shapes resolved. Tasks are
 * (batch, query head) pairs; query head h reads key/value head h / (hq / hkv). */
typedef struct {
    HgKind kind;                         /* F32 or F64 */
    gint64 b, hq, hkv, sq, t, sp, dk, dv; /* t = sp + the new keys: the keys attended */
    gboolean three_d, causal;
    double scale, softcap;
    int mode;                              /* qk_matmul_output_mode */
    const void *q;                         /* [b, hq, sq, dk], or [b, sq, hq * dk] when three_d */
    const void *pk, *pv;                   /* the present keys and values, [b, hkv, t, dk|dv] */
    const void *mask;                      /* an additive mask in the compute type, or NULL */
    const guint8 *bmask;                   /* a bool mask, or NULL */
    gint64 mstr[4], mlen;                  /* the mask's strides over [b, hq, sq, mlen] (0: broadcast) */
    void *y;                               /* [b, hq, sq, dv], or [b, sq, hq * dv] when three_d */
    void *qk;                              /* qk_matmul_output [b, hq, sq, t], or NULL */
    void **scratch;                        /* per worker: sq * t + 2 * dv + sq compute elements */
} AttnJob;

/* The typed kernels (kernel.h's templates): float instances of every family, integers for the
 * products. */
#define HG_T float
#define HG_SFX(name) name##_f32
#define HG_T_FLOAT 1
#include "ops/conv.inc"
#include "ops/pool.inc"
#include "ops/matmul.inc"
#include "ops/attention.inc"
#undef HG_T
#undef HG_SFX
#undef HG_T_FLOAT

#define HG_T double
#define HG_SFX(name) name##_f64
#define HG_T_FLOAT 1
#include "ops/conv.inc"
#include "ops/pool.inc"
#include "ops/matmul.inc"
#include "ops/attention.inc"
#undef HG_T
#undef HG_SFX
#undef HG_T_FLOAT

#define HG_T guint64
#define HG_SFX(name) name##_i64
#define HG_T_FLOAT 0
#include "ops/matmul.inc"
#undef HG_T
#undef HG_SFX
#undef HG_T_FLOAT

/* ================================================================ window attributes */

typedef enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID } AutoPad;

/* Attributes of Conv, ConvTranspose and the pools for nsp spatial axes, checked, with defaults. */
typedef struct {
    guint nsp;
    AutoPad auto_pad;
    gboolean has_kernel;
    gint64 kernel[HG_MAX_RANK];
    gint64 strides[HG_MAX_RANK];
    gint64 dilations[HG_MAX_RANK];
    gint64 pads[2 * HG_MAX_RANK]; /* the begins, then the ends, as ONNX writes them */
    gint64 group;
} WinAttrs;

/* An INTS attribute of n values each in [min, G_MAXINT32], or dflt everywhere when absent. */
static gboolean
ints_attr(const HgNode *node, const char *name, guint n, gint64 dflt, gint64 min, gint64 *out,
          gboolean *present, GError **error)
{
    guint len;
    const gint64 *v = hg_attr_ints(node, name, &len);
    if (present)
        *present = v != NULL;
    if (!v) {
        for (guint i = 0; i < n; i++)
            out[i] = dflt;
        return TRUE;
    }
    if (len != n) {
        hg_op_error(error, HG_ERROR_INVALID, node, "%s has %u values, expected %u", name, len, n);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        if (v[i] < min || v[i] > G_MAXINT32) {
            hg_op_error(error, HG_ERROR_INVALID, node, "%s[%u] = %" G_GINT64_FORMAT " is out of range",
                        name, i, v[i]);
            return FALSE;
        }
        out[i] = v[i];
    }
    return TRUE;
}

/* Dilations came to MaxPool at opset 10 and to AveragePool at 19: before, the attribute is not
 * theirs and is ignored. */
static gboolean
dilations_apply(const HgNode *node, gint64 opset)
{
    if (!strcmp(node->op_type, "MaxPool"))
        return opset_at_least(opset, 10);
    if (!strcmp(node->op_type, "AveragePool"))
        return opset_at_least(opset, 19);
    return TRUE;
}

static gboolean
win_attrs_parse(const HgNode *node, gint64 opset, guint nsp, WinAttrs *a, GError **error)
{
    memset(a, 0, sizeof(*a));
    a->nsp = nsp;
    g_autofree char *ap = hg_attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !*ap)
        a->auto_pad = AUTO_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        a->auto_pad = AUTO_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        a->auto_pad = AUTO_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        a->auto_pad = AUTO_PAD_VALID;
    else {
        hg_op_error(error, HG_ERROR_INVALID, node, "unknown auto_pad '%s'", ap);
        return FALSE;
    }
    gboolean dil = dilations_apply(node, opset);
    if (!ints_attr(node, "kernel_shape", nsp, 1, 1, a->kernel, &a->has_kernel, error) ||
        !ints_attr(node, "strides", nsp, 1, 1, a->strides, NULL, error) ||
        (dil && !ints_attr(node, "dilations", nsp, 1, 1, a->dilations, NULL, error)) ||
        !ints_attr(node, "pads", 2 * nsp, 0, 0, a->pads, NULL, error))
        return FALSE;
    for (guint i = 0; !dil && i < nsp; i++)
        a->dilations[i] = 1;
    a->group = hg_node_attr_int(node, "group", 1);
    if (a->group < 1 || a->group > G_MAXINT32) {
        hg_op_error(error, HG_ERROR_INVALID, node, "group %" G_GINT64_FORMAT " is out of range",
                    a->group);
        return FALSE;
    }
    return TRUE;
}

/* Output length of Conv or a pool along axis i for an input of length in, and the padding (pb, pe)
 * that auto_pad implies. ceil_mode is the pools' rounding up, where a window that would start in
 * the end padding is dropped (as PyTorch and the ONNX reference do). FALSE when the kernel does
 * not fit in the padded input. */
static gboolean
win_out_dim(const WinAttrs *a, guint i, gint64 in, gint64 kernel, gboolean ceil_mode, gint64 *pb,
            gint64 *pe, gint64 *out)
{
    gint64 s = a->strides[i], ek = (kernel - 1) * a->dilations[i] + 1;
    switch (a->auto_pad) {
    case AUTO_PAD_SAME_UPPER:
    case AUTO_PAD_SAME_LOWER: {
        *out = ceil_div(in, s);
        gint64 total = MAX(0, (*out - 1) * s + ek - in);
        *pb = a->auto_pad == AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        *pe = total - *pb;
        return TRUE;
    }
    case AUTO_PAD_VALID:
        *pb = *pe = 0;
        break;
    default:
        *pb = a->pads[i];
        *pe = a->pads[i + a->nsp];
        break;
    }
    gint64 span = in + *pb + *pe - ek;
    if (span < 0)
        return FALSE;
    *out = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
    if (ceil_mode && (*out - 1) * s >= in + *pb)
        (*out)--;
    return TRUE;
}

/* True when the window leaves the length of axis i unchanged whatever the input length. */
static gboolean
win_keeps_dim(const WinAttrs *a, guint i, gint64 kernel)
{
    if (a->strides[i] != 1)
        return FALSE;
    if (a->auto_pad == AUTO_PAD_SAME_UPPER || a->auto_pad == AUTO_PAD_SAME_LOWER)
        return TRUE;
    if (kernel < 0)
        return FALSE;
    gint64 pads = a->auto_pad == AUTO_PAD_VALID ? 0 : a->pads[i] + a->pads[i + a->nsp];
    return (kernel - 1) * a->dilations[i] == pads;
}

/* ConvTranspose along axis i: output length and begin padding. An explicit output_shape (want >= 0)
 * or SAME auto_pad fixes the length and the padding follows (the ONNX reference's floor division, so
 * a negative total puts the extra at the end); otherwise the pads give the length. */
static gboolean
convt_out_dim(const WinAttrs *a, guint i, gint64 in, gint64 kernel, gint64 out_pad, gint64 want,
              gint64 *pb, gint64 *pe, gint64 *out)
{
    gint64 s = a->strides[i], ek = (kernel - 1) * a->dilations[i] + 1;
    gint64 full = s * (in - 1) + out_pad + ek;
    gint64 target;
    if (want >= 0)
        target = want;
    else if (a->auto_pad == AUTO_PAD_SAME_UPPER || a->auto_pad == AUTO_PAD_SAME_LOWER)
        target = in * s;
    else {
        *pb = a->auto_pad == AUTO_PAD_VALID ? 0 : a->pads[i];
        *pe = a->auto_pad == AUTO_PAD_VALID ? 0 : a->pads[i + a->nsp];
        *out = full - *pb - *pe;
        return *out >= 0;
    }
    gint64 total = full - target;
    *pb = a->auto_pad == AUTO_PAD_SAME_UPPER ? floor_div(total, 2) : total - floor_div(total, 2);
    *pe = total - *pb;
    *out = target;
    return target >= 0;
}

/* output_padding and output_shape of ConvTranspose; want[i] = -1 where no output_shape is given.
 * output_shape may also be written with the batch and channel dims in front. */
static gboolean
convt_attrs(const HgNode *node, guint nsp, gint64 *out_pad, gint64 *want, GError **error)
{
    if (!ints_attr(node, "output_padding", nsp, 0, 0, out_pad, NULL, error))
        return FALSE;
    guint len;
    const gint64 *os = hg_attr_ints(node, "output_shape", &len);
    for (guint i = 0; i < nsp; i++)
        want[i] = -1;
    if (!os)
        return TRUE;
    if (len != nsp && len != nsp + 2) {
        hg_op_error(error, HG_ERROR_INVALID, node, "output_shape has %u values, expected %u", len, nsp);
        return FALSE;
    }
    for (guint i = 0; i < nsp; i++) {
        gint64 v = os[len - nsp + i];
        if (v < 0 || v > G_MAXINT32) {
            hg_op_error(error, HG_ERROR_INVALID, node, "output_shape[%u] = %" G_GINT64_FORMAT
                        " is out of range", i, v);
            return FALSE;
        }
        want[i] = v;
    }
    return TRUE;
}

static void
win_fill_axis(Win *w, guint nsp, guint i, gint64 img, gint64 grid, gint64 k, const WinAttrs *a,
              gint64 pb, gint64 pe)
{
    guint j = WIN_RANK - nsp + i;
    w->img[j] = img;
    w->grid[j] = grid;
    w->k[j] = k;
    w->s[j] = a->strides[i];
    w->d[j] = a->dilations[i];
    w->pb[j] = pb;
    w->pe[j] = pe;
}

static void
win_init(Win *w)
{
    for (int j = 0; j < WIN_RANK; j++) {
        w->img[j] = w->grid[j] = w->k[j] = w->s[j] = w->d[j] = 1;
        w->pb[j] = w->pe[j] = 0;
    }
}

static gint64
win_size(const gint64 *v)
{
    return v[0] * v[1] * v[2];
}

/* ================================================================ Conv, ConvTranspose: shapes */

/* Kernel dims of Conv/ConvTranspose: kernel_shape when given (it must agree with W), else W's
 * spatial dims; -1 where unknown. */
static gboolean
conv_kernel(const HgNode *node, const WinAttrs *a, const HgValueShape *w, gint64 *kernel,
            GError **error)
{
    for (guint i = 0; i < a->nsp; i++) {
        gint64 wk = w && w->rank == (int)a->nsp + 2 ? w->dims[2 + i].v : -1;
        if (a->has_kernel && wk >= 0 && wk != a->kernel[i]) {
            hg_op_error(error, HG_ERROR_INVALID, node, "kernel_shape[%u] = %" G_GINT64_FORMAT
                        " but W has %" G_GINT64_FORMAT, i, a->kernel[i], wk);
            return FALSE;
        }
        kernel[i] = a->has_kernel ? a->kernel[i] : wk;
    }
    return TRUE;
}

/* Shape rule of Conv and the pools: [N, C_out, spatial...]. */
static gboolean
infer_window(HgShapeCtx *ctx, gboolean is_pool, gboolean ceil_ok, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    const HgValueShape *w = is_pool ? NULL : hg_shape_input(ctx, 1);
    HgValueShape *y = hg_shape_output(ctx, 0), *ind = is_pool ? hg_shape_output(ctx, 1) : NULL;
    int dtype = x ? x->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (ind)
        ind->dtype = HG_DTYPE_INT64;
    if ((!x || x->rank < 0) && w && w->rank >= 3 && y) {
        /* the rank and the output channels follow from W alone */
        HgSymDim dims[HG_MAX_RANK];
        for (int i = 0; i < w->rank; i++)
            dims[i] = hg_dim_unknown();
        dims[1] = w->dims[0];
        hg_vshape_set(y, dtype, w->rank, dims);
    }
    if (!x || x->rank < 0)
        return TRUE;
    if (x->rank < 3) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %d, expected 3 or more",
                    x->rank);
        return FALSE;
    }
    guint nsp = (guint)x->rank - 2;
    WinAttrs a;
    if (!win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error))
        return FALSE;
    gint64 kernel[HG_MAX_RANK];
    HgSymDim dims[HG_MAX_RANK];
    dims[0] = x->dims[0];
    if (is_pool) {
        if (!a.has_kernel) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "kernel_shape is required");
            return FALSE;
        }
        memcpy(kernel, a.kernel, sizeof(kernel));
        dims[1] = x->dims[1];
    } else {
        if (w && w->rank >= 0 && w->rank != x->rank) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "W has rank %d, X has rank %d",
                        w->rank, x->rank);
            return FALSE;
        }
        if (!conv_kernel(ctx->node, &a, w, kernel, ctx->error))
            return FALSE;
        gboolean wk = w && w->rank >= 0;
        dims[1] = wk ? w->dims[0] : hg_dim_unknown();
        if (wk && w->dims[1].v >= 0 && x->dims[1].v >= 0 && x->dims[1].v != w->dims[1].v * a.group) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "X has %" G_GINT64_FORMAT " channels, W expects %" G_GINT64_FORMAT " x %"
                        G_GINT64_FORMAT " groups", x->dims[1].v, w->dims[1].v, a.group);
            return FALSE;
        }
        if (wk && w->dims[0].v >= 0 && w->dims[0].v % a.group) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "%" G_GINT64_FORMAT " output channels do not split into %" G_GINT64_FORMAT
                        " groups", w->dims[0].v, a.group);
            return FALSE;
        }
    }
    gboolean ceil_mode = ceil_ok && hg_node_attr_int(ctx->node, "ceil_mode", 0) != 0;
    for (guint i = 0; i < nsp; i++) {
        HgSymDim in = x->dims[2 + i];
        gint64 pb, pe, o;
        if (in.v >= 0 && kernel[i] >= 0) {
            if (!win_out_dim(&a, i, in.v, kernel[i], ceil_mode, &pb, &pe, &o)) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "the kernel does not fit in the padded input on spatial axis %u", i);
                return FALSE;
            }
            dims[2 + i] = hg_dim_known(o);
        } else {
            dims[2 + i] = win_keeps_dim(&a, i, kernel[i]) ? in : hg_dim_unknown();
        }
    }
    hg_vshape_set(y, dtype, x->rank, dims);
    hg_vshape_set(ind, HG_DTYPE_INT64, x->rank, dims);
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_infer_Conv(HgShapeCtx *ctx)
{
    return infer_window(ctx, FALSE, FALSE, hg_eval_Conv);
}

gboolean
hg_infer_ConvTranspose(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *w = hg_shape_input(ctx, 1);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = x ? x->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (!x || x->rank < 0)
        return TRUE;
    if (x->rank < 3) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %d, expected 3 or more",
                    x->rank);
        return FALSE;
    }
    guint nsp = (guint)x->rank - 2;
    WinAttrs a;
    gint64 kernel[HG_MAX_RANK], out_pad[HG_MAX_RANK], want[HG_MAX_RANK];
    if (!win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error) ||
        !convt_attrs(ctx->node, nsp, out_pad, want, ctx->error))
        return FALSE;
    if (w && w->rank >= 0 && w->rank != x->rank) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "W has rank %d, X has rank %d", w->rank,
                    x->rank);
        return FALSE;
    }
    if (!conv_kernel(ctx->node, &a, w, kernel, ctx->error))
        return FALSE;
    gboolean wk = w && w->rank >= 0;
    if (wk && w->dims[0].v >= 0 && x->dims[1].v >= 0 && x->dims[1].v != w->dims[0].v) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "X has %" G_GINT64_FORMAT " channels, W has %" G_GINT64_FORMAT, x->dims[1].v,
                    w->dims[0].v);
        return FALSE;
    }
    if (x->dims[1].v >= 0 && x->dims[1].v % a.group) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "%" G_GINT64_FORMAT " channels do not split into %" G_GINT64_FORMAT " groups",
                    x->dims[1].v, a.group);
        return FALSE;
    }
    HgSymDim dims[HG_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = wk && w->dims[1].v >= 0 ? hg_dim_known(w->dims[1].v * a.group) : hg_dim_unknown();
    for (guint i = 0; i < nsp; i++) {
        gint64 in = x->dims[2 + i].v, pb, pe, o;
        if (want[i] >= 0) {
            dims[2 + i] = hg_dim_known(want[i]);
        } else if (in >= 0 && kernel[i] >= 0) {
            if (!convt_out_dim(&a, i, in, kernel[i], out_pad[i], -1, &pb, &pe, &o)) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "the pads exceed the output on spatial axis %u", i);
                return FALSE;
            }
            dims[2 + i] = hg_dim_known(o);
        } else {
            dims[2 + i] = hg_dim_unknown();
        }
    }
    hg_vshape_set(y, dtype, x->rank, dims);
    hg_fold(ctx, hg_eval_ConvTranspose, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* ================================================================ Conv, ConvTranspose: kernels */

/* Rows (positions of the two outer grid axes) per im2col band for kdim column rows. */
static gint64
band_rows(gint64 kdim, gint64 row_len, gint64 rows, gsize esize)
{
    gint64 per_row = MAX(1, kdim * row_len * (gint64)esize);
    return MAX(1, MIN(rows, COL_BAND_BYTES / per_row));
}

/* Threads a kernel may use: ctx->threads, or every processor when unset (as OpenBLAS does). */
static int
eval_threads(const HgEvalCtx *ctx, gint64 macs)
{
    int t = ctx->threads > 0 ? ctx->threads : (int)g_get_num_processors();
    return macs < PAR_MIN_MACS ? 1 : CLAMP(t, 1, PAR_MAX_THREADS);
}

static gboolean
is_pointwise(const Win *w)
{
    gboolean pw = TRUE;
    for (int j = 0; j < WIN_RANK; j++)
        pw &= w->k[j] == 1 && w->s[j] == 1 && w->pb[j] == 0 && w->img[j] == w->grid[j];
    return pw;
}

static void
conv_band_task(gpointer data, gint64 task, int worker)
{
    ConvJob *j = data;
    HG_KIND_CALL_FLOAT(j->kind, conv_band, j, j->scratch[worker], task);
}

static void
conv_direct_task(gpointer data, gint64 task, int worker)
{
    ConvJob *j = data;
    HG_KIND_CALL_FLOAT(j->kind, conv_direct, j, j->scratch[worker], task);
}

static void
convt_task(gpointer data, gint64 task, int worker)
{
    ConvJob *j = data;
    HG_KIND_CALL_FLOAT(j->kind, convt_task, j, j->scratch[worker], task);
}

/* Run a job's tasks with a scratch buffer of `bytes` per worker. With fewer tasks than threads the
 * tasks run one after the other and GEMM gets the threads; otherwise every worker runs
 * single-threaded GEMMs on its own tasks. FALSE when out of memory. */
static gboolean
conv_run_job(ConvJob *job, int threads, gsize bytes, ParTask fn)
{
    gint64 ntasks = job->p->n * job->p->group * job->ntasks_ng;
    int workers = ntasks >= threads ? threads : 1;
    blas_threads(workers > 1 ? 1 : threads);
    void *scratch[PAR_MAX_THREADS] = {NULL};
    int slots[PAR_MAX_THREADS];
    gboolean ok = TRUE;
    for (int t = 0; t < workers && ok; t++)
        ok = (scratch[t] = scratch_get(bytes + 64, &slots[t])) != NULL;
    job->scratch = scratch;
    if (ok)
        par_for(workers, ntasks, fn, job);
    for (int t = 0; t < workers; t++)
        if (scratch[t])
            scratch_put(scratch[t], slots[t]);
    job->scratch = NULL;
    return ok;
}

/* Conv, one of three ways. A pointwise Conv is one GEMM per image and group. With few output
 * channels per group, unit width stride and 1-D/2-D input, the direct kernel: the im2col matrix
 * would be re-read only that few times per element, so GEMM would wait on memory. Otherwise bands
 * of im2col rows, each worker gathering its own bands (the gather runs in parallel too). */
static gboolean
conv_compute(HgEvalCtx *ctx, ConvJob job)
{
    const ConvPlan *p = job.p;
    const Win *win = &p->win;
    const gint64 cg = p->c / p->group, mg = p->m / p->group, kdim = cg * p->kprod;
    const HgKind kind = job.kind;
    const gsize es = hg_kind_size(kind);
    int threads = eval_threads(ctx, p->n * p->m * p->grid_size * kdim);
    if (is_pointwise(win)) {
        blas_threads(threads);
        HG_KIND_CALL_FLOAT(kind, conv_pointwise, &job);
        return TRUE;
    }
    if (mg <= DIRECT_MAX_M && win->s[2] == 1 && win->k[0] == 1 && win->img[0] == 1 &&
        win->grid[0] == 1 && win->grid[2] >= 32 / (gint64)es) {
        const gint64 rows = win->grid[1];
        const gint64 nblk = ceil_div(mg, DIRECT_MB), vl = 32 / (gint64)es;
        g_autofree void *wpack = g_try_malloc((gsize)(p->group * nblk * kdim * DIRECT_MB) * es + 8);
        if (!wpack)
            return FALSE;
        HG_KIND_CALL_FLOAT(kind, direct_pack, p, job.w, wpack);
        /* several chunks per thread, so a slow core hands work over */
        job.w = wpack;
        job.band = MAX(1, ceil_div(rows, 8 * threads));
        job.ntasks_ng = ceil_div(rows, job.band);
        gint64 nin = (job.band - 1) * win->s[1] + (win->k[1] - 1) * win->d[1] + 1;
        gint64 iwp = round_up(win->grid[2], 2 * vl) + (win->k[2] - 1) * win->d[2];
        return conv_run_job(&job, MAX(threads, 1), (gsize)(cg * nin * iwp) * es, conv_direct_task);
    }
    const gint64 rows = win->grid[0] * win->grid[1];
    job.band = band_rows(kdim, win->grid[2], rows, es);
    /* enough bands to keep every thread busy */
    if (p->n * p->group * ceil_div(rows, job.band) < 4 * threads)
        job.band = MAX(1, MIN(job.band, ceil_div(rows * p->n * p->group, 4 * threads)));
    job.ntasks_ng = ceil_div(rows, job.band);
    return conv_run_job(&job, threads, (gsize)(kdim * job.band * win->grid[2]) * es, conv_band_task);
}

/* ConvTranspose: tasks are (image, group, block of output channels), so that the col2im scatters of
 * different tasks never touch the same output. */
static gboolean
convt_compute(HgEvalCtx *ctx, ConvJob job)
{
    const ConvPlan *p = job.p;
    const Win *win = &p->win;
    const gint64 mg = p->m / p->group;
    const gsize es = hg_kind_size(job.kind);
    int threads = eval_threads(ctx, p->n * p->c * p->grid_size * mg * p->kprod);
    /* a 1x1 ConvTranspose takes the same path: its one band is the whole image, and col2im copies */
    job.ntasks_ng = 1;
    job.mblock = mg;
    if (p->n * p->group < 2 * threads) {
        job.ntasks_ng = MIN(mg, ceil_div(2 * threads, p->n * p->group));
        job.mblock = ceil_div(mg, job.ntasks_ng);
        job.ntasks_ng = ceil_div(mg, job.mblock);
    }
    const gint64 rows = win->grid[0] * win->grid[1], kcol = job.mblock * p->kprod;
    job.band = band_rows(kcol, win->grid[2], rows, es);
    return conv_run_job(&job, threads, (gsize)(kcol * job.band * win->grid[2]) * es, convt_task);
}

/* Checks shared by Conv and ConvTranspose; fills the float compute type. */
static gboolean
conv_inputs(HgEvalCtx *ctx, HgKind *kind, guint *nsp)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    const HgArray *x = ctx->inputs[0], *w = ctx->inputs[1];
    *kind = hg_kind_of(x->dtype);
    if ((*kind != HG_KIND_F32 && *kind != HG_KIND_F64) || !hg_dtype_is_float(x->dtype)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                    hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?");
        return FALSE;
    }
    if (x->rank < 3 || w->rank != x->rank) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "X has rank %u and W rank %u; both need the same rank, 3 or more", x->rank, w->rank);
        return FALSE;
    }
    *nsp = x->rank - 2;
    if (*nsp > WIN_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u spatial axes (at most %d)", *nsp,
                    WIN_RANK);
        return FALSE;
    }
    for (guint i = 2; i < w->rank; i++)
        if (w->dims[i] < 1) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "W has an empty kernel axis");
            return FALSE;
        }
    return TRUE;
}

static gboolean
conv_kernel_of(HgEvalCtx *ctx, const WinAttrs *a, const HgArray *w, gint64 *kernel)
{
    for (guint i = 0; i < a->nsp; i++) {
        kernel[i] = w->dims[2 + i];
        if (a->has_kernel && a->kernel[i] != kernel[i]) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "kernel_shape[%u] = %" G_GINT64_FORMAT
                        " but W has %" G_GINT64_FORMAT, i, a->kernel[i], kernel[i]);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
hg_eval_Conv(HgEvalCtx *ctx)
{
    HgKind kind;
    guint nsp;
    if (!conv_inputs(ctx, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0], *w = ctx->inputs[1], *b = hg_eval_input(ctx, 2);
    WinAttrs a;
    gint64 kernel[HG_MAX_RANK];
    if (!win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error) || !conv_kernel_of(ctx, &a, w, kernel))
        return FALSE;
    ConvPlan p = {x->dims[0], x->dims[1], w->dims[0], a.group, {{0}}, 0, 0, 0};
    if (p.c != w->dims[1] * p.group || p.m % p.group) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "X has %" G_GINT64_FORMAT " channels and W is %" G_GINT64_FORMAT " x %"
                    G_GINT64_FORMAT " in %" G_GINT64_FORMAT " groups", p.c, p.m, w->dims[1], p.group);
        return FALSE;
    }
    if (b && b->numel != p.m) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "B has %" G_GINT64_FORMAT
                    " elements for %" G_GINT64_FORMAT " output channels", b->numel, p.m);
        return FALSE;
    }
    gint64 ydims[HG_MAX_RANK] = {p.n, p.m};
    win_init(&p.win);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!win_out_dim(&a, i, x->dims[2 + i], kernel[i], FALSE, &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the kernel does not fit in the padded input on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        win_fill_axis(&p.win, nsp, i, x->dims[2 + i], o, kernel[i], &a, pb, pe);
    }
    p.img_size = win_size(p.win.img);
    p.grid_size = win_size(p.win.grid);
    p.kprod = win_size(p.win.k);
    gint64 kdim = p.c / p.group * p.kprod;
    if (!blas_fits(kdim, p.grid_size, p.img_size, p.m)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) wb = hg_kbuf_load(w, kind);
    g_auto(HgKBuf) bb = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    ConvJob job = {kind, &p, xb.p, wb.p, bb.p, yb.p, y->dtype, NULL, 0, 0, 0};
    if (y->numel && !conv_compute(ctx, job))
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gboolean
hg_eval_ConvTranspose(HgEvalCtx *ctx)
{
    HgKind kind;
    guint nsp;
    if (!conv_inputs(ctx, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0], *w = ctx->inputs[1], *b = hg_eval_input(ctx, 2);
    WinAttrs a;
    gint64 kernel[HG_MAX_RANK], out_pad[HG_MAX_RANK], want[HG_MAX_RANK];
    if (!win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error) ||
        !convt_attrs(ctx->node, nsp, out_pad, want, ctx->error) || !conv_kernel_of(ctx, &a, w, kernel))
        return FALSE;
    ConvPlan p = {x->dims[0], x->dims[1], w->dims[1] * a.group, a.group, {{0}}, 0, 0, 0};
    if (p.c != w->dims[0] || p.c % p.group) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "X has %" G_GINT64_FORMAT " channels, W %" G_GINT64_FORMAT " in %" G_GINT64_FORMAT
                    " groups", p.c, w->dims[0], p.group);
        return FALSE;
    }
    if (b && b->numel != p.m) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "B has %" G_GINT64_FORMAT
                    " elements for %" G_GINT64_FORMAT " output channels", b->numel, p.m);
        return FALSE;
    }
    gint64 ydims[HG_MAX_RANK] = {p.n, p.m};
    win_init(&p.win);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!convt_out_dim(&a, i, x->dims[2 + i], kernel[i], out_pad[i], want[i], &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the pads exceed the output on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        /* the output is the image the window writes, the input the grid of positions */
        win_fill_axis(&p.win, nsp, i, o, x->dims[2 + i], kernel[i], &a, pb, pe);
    }
    p.img_size = win_size(p.win.img);
    p.grid_size = win_size(p.win.grid);
    p.kprod = win_size(p.win.k);
    gint64 kcol = p.m / p.group * p.kprod;
    if (!blas_fits(kcol, p.grid_size, p.img_size, p.c)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) wb = hg_kbuf_load(w, kind);
    g_auto(HgKBuf) bb = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    ConvJob job = {kind, &p, xb.p, wb.p, bb.p, yb.p, y->dtype, NULL, 0, 0, 0};
    if (y->numel && !convt_compute(ctx, job))
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

/* Kernel dims times the product of W's dims after the first: the MACs per output (Conv) or per input
 * (ConvTranspose) element. */
static gint64
w_tail_numel(const HgValueShape *w)
{
    if (!hg_vshape_known(w) || w->rank < 1)
        return -1;
    gint64 n = 1;
    for (int i = 1; i < w->rank; i++)
        n *= w->dims[i].v;
    return n;
}

gint64
hg_cost_Conv(const HgShapeCtx *ctx)
{
    gint64 per = w_tail_numel(hg_shape_input(ctx, 1)), n = hg_vshape_numel(hg_shape_output(ctx, 0));
    return per < 0 || n < 0 ? -1 : per * n;
}

gint64
hg_cost_ConvTranspose(const HgShapeCtx *ctx)
{
    gint64 per = w_tail_numel(hg_shape_input(ctx, 1)), n = hg_vshape_numel(hg_shape_input(ctx, 0));
    return per < 0 || n < 0 ? -1 : per * n;
}

/* ================================================================ pools */

/* Pools compute in FP32, FP64 for double and the wide integers (exact there). */
static HgKind
pool_kind(int dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_BFLOAT16:
    case HG_DTYPE_INT8:
    case HG_DTYPE_UINT8:
    case HG_DTYPE_INT16:
    case HG_DTYPE_UINT16:
        return HG_KIND_F32;
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_INT32:
    case HG_DTYPE_UINT32:
    case HG_DTYPE_INT64:
    case HG_DTYPE_UINT64:
        return HG_KIND_F64;
    default:
        return HG_KIND_COUNT;
    }
}

static gboolean
pool_input(HgEvalCtx *ctx, gboolean ints_ok, guint min_rank, HgKind *kind, guint *nsp)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    *kind = pool_kind(x->dtype);
    if (*kind == HG_KIND_COUNT || (!ints_ok && !hg_dtype_is_float(x->dtype))) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                    hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?");
        return FALSE;
    }
    if (x->rank < min_rank) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %u, expected %u or more",
                    x->rank, min_rank);
        return FALSE;
    }
    *nsp = x->rank - 2;
    return TRUE;
}

/* Window geometry of a pool; ydims gets the output shape. */
static gboolean
pool_plan(HgEvalCtx *ctx, const HgArray *x, guint nsp, Win *w, gint64 *ydims)
{
    if (nsp > WIN_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u spatial axes (at most %d)", nsp,
                    WIN_RANK);
        return FALSE;
    }
    WinAttrs a;
    if (!win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error))
        return FALSE;
    if (!a.has_kernel) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "kernel_shape is required");
        return FALSE;
    }
    gboolean ceil_mode =
        opset_at_least(ctx->opset, 10) && hg_node_attr_int(ctx->node, "ceil_mode", 0) != 0;
    ydims[0] = x->dims[0];
    ydims[1] = x->dims[1];
    win_init(w);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!win_out_dim(&a, i, x->dims[2 + i], a.kernel[i], ceil_mode, &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the kernel does not fit in the padded input on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        win_fill_axis(w, nsp, i, x->dims[2 + i], o, a.kernel[i], &a, pb, pe);
    }
    return TRUE;
}

static gboolean
eval_pool(HgEvalCtx *ctx, gboolean is_max)
{
    HgKind kind;
    guint nsp;
    if (!pool_input(ctx, is_max, 3, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    Win w;
    gint64 ydims[HG_MAX_RANK];
    if (!pool_plan(ctx, x, nsp, &w, ydims))
        return FALSE;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    g_autoptr(HgArray) ind = NULL;
    if (!y)
        return FALSE;
    if (is_max && hg_eval_wants(ctx, 1)) {
        ind = hg_eval_new_output(ctx, HG_DTYPE_INT64, x->rank, ydims);
        if (!ind)
            return FALSE;
    }
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    if (y->numel) {
        Taps *taps[WIN_RANK];
        for (int j = 0; j < WIN_RANK; j++)
            taps[j] = win_taps(&w, j);
        gint64 planes = x->dims[0] * x->dims[1];
        if (is_max) {
            gboolean col_major = hg_node_attr_int(ctx->node, "storage_order", 0) != 0;
            HG_KIND_CALL_FLOAT(kind, maxpool, xb.p, yb.p, ind ? ind->data : NULL, planes, &w,
                        (const Taps *const *)taps, col_major);
        } else {
            gboolean incl = hg_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
            HG_KIND_CALL_FLOAT(kind, avgpool, xb.p, yb.p, planes, &w, (const Taps *const *)taps, incl);
        }
        for (int j = 0; j < WIN_RANK; j++)
            g_free(taps[j]);
    }
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    if (ind)
        ctx->outputs[1] = g_steal_pointer(&ind);
    return TRUE;
}

gboolean
hg_infer_AveragePool(HgShapeCtx *ctx)
{
    return infer_window(ctx, TRUE, opset_at_least(ctx->opset, 10), hg_eval_AveragePool);
}

gboolean
hg_infer_MaxPool(HgShapeCtx *ctx)
{
    return infer_window(ctx, TRUE, opset_at_least(ctx->opset, 10), hg_eval_MaxPool);
}

gboolean
hg_eval_AveragePool(HgEvalCtx *ctx)
{
    return eval_pool(ctx, FALSE);
}

gboolean
hg_eval_MaxPool(HgEvalCtx *ctx)
{
    return eval_pool(ctx, TRUE);
}

static gint64
pool_cost(const HgShapeCtx *ctx)
{
    guint len;
    const gint64 *k = hg_attr_ints(ctx->node, "kernel_shape", &len);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!k || n < 0)
        return -1;
    for (guint i = 0; i < len; i++)
        n *= MAX(k[i], 0);
    return n;
}

gint64
hg_cost_AveragePool(const HgShapeCtx *ctx)
{
    return pool_cost(ctx);
}

gint64
hg_cost_MaxPool(const HgShapeCtx *ctx)
{
    return pool_cost(ctx);
}

/* Global pools: [N, C, 1, ...] (an input of rank 2 has no spatial axes and passes through). */
static gboolean
infer_global_pool(HgShapeCtx *ctx, HgEvalFunc eval)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_output(ctx, 0);
    if (y)
        y->dtype = x ? x->dtype : HG_DTYPE_UNDEFINED;
    if (!x || x->rank < 0)
        return TRUE;
    if (x->rank < 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %d, expected 2 or more",
                    x->rank);
        return FALSE;
    }
    HgSymDim dims[HG_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        dims[i] = hg_dim_known(1);
    hg_vshape_set(y, x->dtype, x->rank, dims);
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

static gboolean
eval_global_pool(HgEvalCtx *ctx, gboolean is_max)
{
    HgKind kind;
    guint nsp;
    if (!pool_input(ctx, FALSE, 2, &kind, &nsp))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    gint64 ydims[HG_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (guint i = 0; i < nsp; i++)
        ydims[2 + i] = 1;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, x->rank, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    gint64 size = y->numel ? x->numel / y->numel : 0;
    HG_KIND_CALL_FLOAT(kind, global_pool, xb.p, yb.p, y->numel, size, is_max);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gboolean
hg_infer_GlobalAveragePool(HgShapeCtx *ctx)
{
    return infer_global_pool(ctx, hg_eval_GlobalAveragePool);
}

gboolean
hg_infer_GlobalMaxPool(HgShapeCtx *ctx)
{
    return infer_global_pool(ctx, hg_eval_GlobalMaxPool);
}

gboolean
hg_eval_GlobalAveragePool(HgEvalCtx *ctx)
{
    return eval_global_pool(ctx, FALSE);
}

gboolean
hg_eval_GlobalMaxPool(HgEvalCtx *ctx)
{
    return eval_global_pool(ctx, TRUE);
}

gint64
hg_cost_GlobalAveragePool(const HgShapeCtx *ctx)
{
    return hg_vshape_numel(hg_shape_input(ctx, 0));
}

gint64
hg_cost_GlobalMaxPool(const HgShapeCtx *ctx)
{
    return hg_vshape_numel(hg_shape_input(ctx, 0));
}

/* ================================================================ MatMul */

/* Broadcast of two batch dims as shape inference knows them. */
static gboolean
sym_broadcast(HgSymDim a, HgSymDim b, HgSymDim *out)
{
    if (a.v >= 0 && b.v >= 0) {
        if (a.v != b.v && a.v != 1 && b.v != 1)
            return FALSE;
        *out = a.v == 1 ? b : a;
    } else if (a.v == 1) {
        *out = b;
    } else if (b.v == 1) {
        *out = a;
    } else if (a.v >= 0) {
        *out = a; /* b must be 1 or equal */
    } else if (b.v >= 0) {
        *out = b;
    } else {
        *out = a.sym && a.sym == b.sym ? a : hg_dim_unknown();
    }
    return TRUE;
}

/* Compute kind of MatMul, Gemm and Einsum: every numeric type but bool; both integer kinds run on
 * the integer instance (wrapping products and sums do not depend on the sign). */
static HgKind
mm_kind(int dtype)
{
    HgKind k = hg_kind_of(dtype);
    return dtype == HG_DTYPE_BOOL ? HG_KIND_COUNT : k == HG_KIND_U64 ? HG_KIND_I64 : k;
}

static gboolean
same_types(HgEvalCtx *ctx, guint n, HgKind *kind)
{
    int dtype = ctx->inputs[0]->dtype;
    for (guint i = 1; i < n; i++) {
        const HgArray *x = hg_eval_input(ctx, i);
        if (x && x->dtype != dtype) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input %u is %s, input 0 is %s", i,
                        hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?",
                        hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "?");
            return FALSE;
        }
    }
    *kind = mm_kind(dtype);
    if (*kind == HG_KIND_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                    hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "?");
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_MatMul(HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0), *b = hg_shape_input(ctx, 1);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = a ? a->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (!a || !b || a->rank < 0 || b->rank < 0)
        return TRUE;
    if (a->rank == 0 || b->rank == 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "MatMul of a scalar");
        return FALSE;
    }
    /* 1-D operands are promoted to [1, K] and [K, 1] and the added axis dropped afterwards */
    HgSymDim k_a = a->dims[a->rank - 1], k_b = b->dims[b->rank == 1 ? 0 : b->rank - 2];
    if (k_a.v >= 0 && k_b.v >= 0 && k_a.v != k_b.v) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k_a.v, k_b.v);
        return FALSE;
    }
    int ba = MAX(a->rank - 2, 0), bb = MAX(b->rank - 2, 0), rb = MAX(ba, bb);
    HgSymDim dims[HG_MAX_RANK + 2];
    for (int i = 0; i < rb; i++) {
        HgSymDim da = i < rb - ba ? hg_dim_known(1) : a->dims[i - (rb - ba)];
        HgSymDim db = i < rb - bb ? hg_dim_known(1) : b->dims[i - (rb - bb)];
        if (!sym_broadcast(da, db, &dims[i])) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "batch dims do not broadcast: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, da.v,
                        db.v);
            return FALSE;
        }
    }
    int r = rb;
    if (a->rank > 1)
        dims[r++] = a->dims[a->rank - 2];
    if (b->rank > 1)
        dims[r++] = b->dims[b->rank - 1];
    if (r > HG_MAX_RANK)
        return TRUE;
    hg_vshape_set(y, dtype, r, dims);
    hg_fold(ctx, hg_eval_MatMul, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* Batches of MatMul up to this many multiply-adds each run one per thread: OpenBLAS would run them
 * on one thread anyway. */
#define MATMUL_SMALL_MACS ((gint64)1 << 24)

typedef struct {
    HgKind kind;
    const void *a, *b;
    void *c;
    const gint64 *offs; /* per batch: A's and B's element offsets */
    gint64 m, n, k;
} MatJob;

static void
matmul_task(gpointer data, gint64 i, int worker)
{
    const MatJob *j = data;
    const gsize c_off = (gsize)(i * j->m * j->n) * hg_kind_size(j->kind);
    HG_KIND_CALL(j->kind, matmul_run, j->a, j->b, (char *)j->c + c_off, 1, j->offs + 2 * i, j->m, j->n, j->k);
}

gboolean
hg_eval_MatMul(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, 2) || !same_types(ctx, 2, &kind))
        return FALSE;
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (a->rank == 0 || b->rank == 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "MatMul of a scalar");
        return FALSE;
    }
    gint64 m = a->rank > 1 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    gint64 kb = b->dims[b->rank > 1 ? b->rank - 2 : 0], n = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    if (k != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k, kb);
        return FALSE;
    }
    guint ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, rb;
    gint64 bdims[HG_MAX_RANK + 2], ast[HG_MAX_RANK], bst[HG_MAX_RANK];
    GError *err = NULL;
    if (!hg_broadcast_shape(ba, a->dims, bb, b->dims, &rb, bdims, &err)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "batch %s", err->message);
        g_error_free(err);
        return FALSE;
    }
    hg_broadcast_strides(ba, a->dims, rb, bdims, ast);
    hg_broadcast_strides(bb, b->dims, rb, bdims, bst);
    gint64 nbatch = hg_numel(rb, bdims);
    guint r = rb;
    gint64 ydims[HG_MAX_RANK + 2];
    memcpy(ydims, bdims, sizeof(gint64) * rb);
    if (a->rank > 1)
        ydims[r++] = m;
    if (b->rank > 1)
        ydims[r++] = n;
    if (!blas_fits(m, n, k, m * nbatch)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, a->dtype, r, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) ab = hg_kbuf_load(a, kind);
    g_auto(HgKBuf) bbuf = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    if (y->numel) {
        /* element offsets of each batch's A and B matrices */
        g_autofree gint64 *offs = g_new0(gint64, 2 * nbatch + 2);
        gint64 idx[HG_MAX_RANK] = {0}, off[2] = {0, 0}, st[2 * HG_MAX_RANK];
        for (guint i = 0; i < rb; i++) {
            st[i] = ast[i] * m * k;
            st[HG_MAX_RANK + i] = bst[i] * k * n;
        }
        gboolean merge = TRUE; /* A's batches back to back, B shared: one tall GEMM */
        for (gint64 i = 0; i < nbatch; i++) {
            offs[2 * i] = off[0];
            offs[2 * i + 1] = off[1];
            merge &= off[0] == i * m * k && off[1] == 0;
            odo_step(idx, bdims, 0, rb, 2, st, HG_MAX_RANK, off);
        }
        int threads = eval_threads(ctx, nbatch * m * n * k);
        if (merge) {
            blas_threads(threads);
            HG_KIND_CALL(kind, matmul_run, ab.p, bbuf.p, yb.p, 1, offs, m * nbatch, n, k);
        } else if (threads > 1 && nbatch >= 2 * threads && m * n * k < MATMUL_SMALL_MACS) {
            /* many small products (attention heads): one per task, each GEMM single-threaded */
            MatJob job = {kind, ab.p, bbuf.p, yb.p, offs, m, n, k};
            blas_threads(1);
            par_for(threads, nbatch, matmul_task, &job);
        } else {
            blas_threads(threads);
            HG_KIND_CALL(kind, matmul_run, ab.p, bbuf.p, yb.p, nbatch, offs, m, n, k);
        }
    }
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_MatMul(const HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!a || a->rank < 1 || n < 0 || a->dims[a->rank - 1].v < 0)
        return -1;
    return n * a->dims[a->rank - 1].v;
}

/* ================================================================ Gemm */

gboolean
hg_infer_Gemm(HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0), *b = hg_shape_input(ctx, 1), *c = hg_shape_input(ctx, 2);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = a ? a->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if ((a && a->rank >= 0 && a->rank != 2) || (b && b->rank >= 0 && b->rank != 2)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "A and B must be matrices");
        return FALSE;
    }
    if (c && c->rank > 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "C has rank %d, at most 2", c->rank);
        return FALSE;
    }
    if (!a || !b || a->rank < 0 || b->rank < 0)
        return TRUE;
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    HgSymDim dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
    gint64 ka = a->dims[ta ? 0 : 1].v, kb = b->dims[tb ? 1 : 0].v;
    if (ka >= 0 && kb >= 0 && ka != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, ka, kb);
        return FALSE;
    }
    for (int i = 0; c && i < c->rank; i++) {
        gint64 cv = c->dims[i].v, yv = dims[2 - c->rank + i].v;
        if (cv >= 0 && yv >= 0 && cv != 1 && cv != yv) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "C does not broadcast to the output");
            return FALSE;
        }
    }
    hg_vshape_set(y, dtype, 2, dims);
    hg_fold(ctx, hg_eval_Gemm, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_eval_Gemm(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, 2) || !same_types(ctx, 3, &kind))
        return FALSE;
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1], *c = hg_eval_input(ctx, 2);
    if (a->rank != 2 || b->rank != 2 || (c && c->rank > 2)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "A and B must be matrices and C at most one");
        return FALSE;
    }
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    double alpha = hg_node_attr_float(ctx->node, "alpha", 1.0f);
    double beta = hg_node_attr_float(ctx->node, "beta", 1.0f);
    gint64 m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
    gint64 kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (k != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k, kb);
        return FALSE;
    }
    gint64 ydims[2] = {m, n}, cst[2] = {0, 0};
    if (c) {
        for (guint i = 0; i < c->rank; i++) {
            gint64 cv = c->dims[i], yv = ydims[2 - c->rank + i];
            if (cv != 1 && cv != yv) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "C does not broadcast to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", m, n);
                return FALSE;
            }
        }
        hg_broadcast_strides(c->rank, c->dims, 2, ydims, cst);
    }
    if (!blas_fits(m, n, k, 1)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    /* Integers with a fractional (or huge) alpha or beta compute in FP64, as the float scaling
     * asks; whole ones stay exact. */
    if (kind == HG_KIND_I64 && (alpha != floor(alpha) || beta != floor(beta) ||
                                  fabs(alpha) > 0x1p62 || fabs(beta) > 0x1p62))
        kind = HG_KIND_F64;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, a->dtype, 2, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) ab = hg_kbuf_load(a, kind);
    g_auto(HgKBuf) bbuf = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) cb = hg_kbuf_load(c && beta != 0 ? c : NULL, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    blas_threads(ctx->threads);
    HG_KIND_CALL(kind, gemm_run, ab.p, bbuf.p, cb.p, cst, yb.p, ta, tb, m, n, k, alpha, beta);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_Gemm(const HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!a || a->rank != 2 || n < 0)
        return -1;
    gint64 k = a->dims[hg_node_attr_int(ctx->node, "transA", 0) ? 0 : 1].v;
    return k < 0 ? -1 : n * k;
}

/* ================================================================ Einsum */

/* A parsed equation for operands of known ranks. Label ids follow ASCII ('A'-'Z' 0-25, 'a'-'z'
 * 26-51, as NumPy orders the implicit output); the broadcast dims of "..." are labels 52 + j,
 * right-aligned across the operands. */
typedef struct {
    guint nops;
    guint rank[HG_MAX_RANK * 4];
    int axis_label[HG_MAX_RANK * 4][HG_MAX_RANK];
    guint out_rank;
    int out_label[EIN_MAX_LABELS];
} Einsum;

#define EIN_MAX_OPS (HG_MAX_RANK * 4)

static int
ein_letter(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + (c - 'a');
    return -1;
}

/* Parse one term (no spaces) into labels for an operand of the given rank (rank < 0: the output,
 * whose ellipsis takes ell_rank dims). */
static gboolean
ein_term(const char *t, gsize len, int rank, guint ell_rank, int *labels, guint *n_labels,
         guint max_labels, gboolean *has_ell)
{
    guint letters = 0;
    *has_ell = FALSE;
    for (gsize i = 0; i < len; i++) {
        if (t[i] == '.') {
            if (*has_ell || i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.')
                return FALSE;
            *has_ell = TRUE;
            i += 2;
        } else if (ein_letter(t[i]) >= 0) {
            letters++;
        } else {
            return FALSE;
        }
    }
    guint ne = rank < 0 ? ell_rank : 0;
    if (rank >= 0) {
        if ((guint)rank < letters || (!*has_ell && (guint)rank != letters))
            return FALSE;
        ne = (guint)rank - letters;
    }
    if (letters + ne > max_labels)
        return FALSE;
    guint n = 0;
    for (gsize i = 0; i < len; i++) {
        if (t[i] == '.') {
            /* right-aligned: this operand's ellipsis is the last ne of the ell_rank broadcast dims */
            for (guint j = 0; j < ne; j++)
                labels[n++] = 52 + (int)(ell_rank - ne + j);
            i += 2;
        } else {
            labels[n++] = ein_letter(t[i]);
        }
    }
    *n_labels = n;
    return TRUE;
}

static gboolean
ein_parse(const HgNode *node, guint nops, const int *ranks, Einsum *e, GError **error)
{
    g_autofree char *eq_raw = hg_attr_string(node, "equation", NULL);
    if (!eq_raw) {
        hg_op_error(error, HG_ERROR_INVALID, node, "the equation attribute is missing");
        return FALSE;
    }
    if (nops > EIN_MAX_OPS || nops == 0) {
        hg_op_error(error, HG_ERROR_UNSUPPORTED, node, "%u operands", nops);
        return FALSE;
    }
    /* drop whitespace */
    GString *eq = g_string_new(NULL);
    for (const char *p = eq_raw; *p; p++)
        if (!g_ascii_isspace(*p))
            g_string_append_c(eq, *p);
    g_autofree char *s = g_string_free(eq, FALSE);
    memset(e, 0, sizeof(*e));
    e->nops = nops;
    char *arrow = strstr(s, "->");
    gsize lhs_len = arrow ? (gsize)(arrow - s) : strlen(s);
    guint ell_rank = 0, count[EIN_MAX_LABELS] = {0};
    gboolean any_ell = FALSE;
    /* the ellipsis rank is the largest any operand gives it */
    const char *t = s;
    for (guint q = 0; q < nops; q++) {
        const char *end = memchr(t, ',', lhs_len - (gsize)(t - s));
        gsize len = end ? (gsize)(end - t) : lhs_len - (gsize)(t - s);
        if ((q + 1 < nops) != (end != NULL)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "the equation '%s' has not %u operands", eq_raw,
                        nops);
            return FALSE;
        }
        guint letters = 0;
        gboolean ell = FALSE;
        for (gsize i = 0; i < len; i++) {
            if (ein_letter(t[i]) >= 0)
                letters++;
            else if (t[i] == '.')
                ell = TRUE;
        }
        if (ell && ranks[q] >= (int)letters)
            ell_rank = MAX(ell_rank, (guint)ranks[q] - letters);
        t = end ? end + 1 : t + len;
    }
    if (ell_rank > HG_MAX_RANK)
        goto bad;
    t = s;
    for (guint q = 0; q < nops; q++) {
        const char *end = memchr(t, ',', lhs_len - (gsize)(t - s));
        gsize len = end ? (gsize)(end - t) : lhs_len - (gsize)(t - s);
        gboolean ell;
        if (ranks[q] < 0 || ranks[q] > HG_MAX_RANK ||
            !ein_term(t, len, ranks[q], ell_rank, e->axis_label[q], &e->rank[q], HG_MAX_RANK, &ell))
            goto bad;
        any_ell |= ell;
        for (guint i = 0; i < e->rank[q]; i++)
            count[e->axis_label[q][i]]++;
        t = end ? end + 1 : t + len;
    }
    if (arrow) {
        const char *o = arrow + 2;
        gboolean ell;
        if (!ein_term(o, strlen(o), -1, ell_rank, e->out_label, &e->out_rank, EIN_MAX_LABELS, &ell))
            goto bad;
        gboolean seen[EIN_MAX_LABELS] = {FALSE};
        for (guint i = 0; i < e->out_rank; i++) {
            int l = e->out_label[i];
            if (seen[l] || !count[l]) {
                hg_op_error(error, HG_ERROR_INVALID, node,
                            "in the equation '%s', output label %u is repeated or in no input", eq_raw, i);
                return FALSE;
            }
            seen[l] = TRUE;
        }
    } else {
        /* implicit output: the broadcast dims, then the labels seen once, in ASCII order */
        for (guint j = 0; any_ell && j < ell_rank; j++)
            e->out_label[e->out_rank++] = 52 + (int)j;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1)
                e->out_label[e->out_rank++] = l;
    }
    return TRUE;
bad:
    hg_op_error(error, HG_ERROR_INVALID, node, "the equation '%s' does not fit the inputs", eq_raw);
    return FALSE;
}

/* Dims of each label (known value, or unknown) from the operands' dims, broadcasting 1s. */
static gboolean
ein_label_dims(const HgNode *node, const Einsum *e, const HgSymDim *const *opdims, HgSymDim *ldims,
               GError **error)
{
    gboolean used[EIN_MAX_LABELS] = {FALSE};
    for (int l = 0; l < EIN_MAX_LABELS; l++)
        ldims[l] = hg_dim_known(1);
    for (guint q = 0; q < e->nops; q++)
        for (guint i = 0; i < e->rank[q]; i++) {
            int l = e->axis_label[q][i];
            HgSymDim d = opdims[q][i];
            if (!used[l]) {
                ldims[l] = d;
                used[l] = TRUE;
            } else if (!sym_broadcast(ldims[l], d, &ldims[l])) {
                hg_op_error(error, HG_ERROR_INVALID, node, "operand %u axis %u has %" G_GINT64_FORMAT
                            " where the label has another length", q, i, d.v);
                return FALSE;
            }
        }
    return TRUE;
}

gboolean
hg_infer_Einsum(HgShapeCtx *ctx)
{
    HgValueShape *y = hg_shape_output(ctx, 0);
    const HgValueShape *x0 = hg_shape_input(ctx, 0);
    int dtype = x0 ? x0->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (ctx->n_inputs == 0 || ctx->n_inputs > EIN_MAX_OPS)
        return TRUE;
    int ranks[EIN_MAX_OPS];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < ctx->n_inputs; q++) {
        const HgValueShape *s = hg_shape_input(ctx, q);
        if (!s || s->rank < 0)
            return TRUE;
        ranks[q] = s->rank;
        opdims[q] = s->dims;
    }
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_parse(ctx->node, ctx->n_inputs, ranks, &e, ctx->error) ||
        !ein_label_dims(ctx->node, &e, opdims, ldims, ctx->error))
        return FALSE;
    if (e.out_rank > HG_MAX_RANK)
        return TRUE;
    HgSymDim dims[HG_MAX_RANK];
    for (guint i = 0; i < e.out_rank; i++)
        dims[i] = ldims[e.out_label[i]];
    hg_vshape_set(y, dtype, (int)e.out_rank, dims);
    hg_fold(ctx, hg_eval_Einsum, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* Einsum as a batched GEMM when it is one: two operands where every label is batch (both operands
 * and the output), M (first and output), N (second and output) or K (both operands, summed). The
 * operands are packed into [batch, M, K] and [batch, K, N] (repeated labels and broadcasts are just
 * strides), multiplied, and the result scattered into the output's order. Returns FALSE when the
 * equation is not of that form. */
static gboolean
ein_as_gemm(HgKind kind, const EinPlan *p, const void *a, const void *b, void *out, gboolean *oom_out)
{
    int cls[EIN_MAX_LABELS]; /* 0 batch, 1 M, 2 N, 3 K */
    guint nl[4] = {0};
    for (guint l = 0; l < p->nlab; l++) {
        /* a label an operand broadcasts along (stride 0) is one it does not vary along */
        gboolean ia = p->strides[l] != 0, ib = p->strides[EIN_MAX_LABELS + l] != 0, io = l < p->nout;
        if (p->dims[l] == 1)
            cls[l] = io ? 0 : 3; /* a length-1 label fits any class */
        else if (ia && ib)
            cls[l] = io ? 0 : 3;
        else if (ia && io)
            cls[l] = 1;
        else if (ib && io)
            cls[l] = 2;
        else
            return FALSE; /* summed in one operand only, or broadcast in both */
        nl[cls[l]]++;
    }
    /* label lists per class and their products */
    gint64 size[4] = {1, 1, 1, 1};
    guint order[4][EIN_MAX_LABELS];
    guint fill[4] = {0};
    for (guint l = 0; l < p->nlab; l++) {
        order[cls[l]][fill[cls[l]]++] = l;
        size[cls[l]] *= p->dims[l];
    }
    if (!blas_fits(size[1], size[2], size[3], 1))
        return FALSE;
    /* packed layouts: A [batch, M, K], B [batch, K, N], C [batch, M, N] */
    static const int a_cls[3] = {0, 1, 3}, b_cls[3] = {0, 3, 2}, c_cls[3] = {0, 1, 2};
    const int *layouts[3] = {a_cls, b_cls, c_cls};
    gint64 ldims[3][EIN_MAX_LABELS], src_st[3][EIN_MAX_LABELS], dst_st[3][EIN_MAX_LABELS];
    guint lcount[3] = {0};
    for (int t = 0; t < 3; t++) {
        for (int c = 0; c < 3; c++)
            for (guint i = 0; i < nl[layouts[t][c]]; i++) {
                guint l = order[layouts[t][c]][i];
                ldims[t][lcount[t]] = p->dims[l];
                /* operand strides for A and B; the output's (contiguous, output order) for C */
                src_st[t][lcount[t]] = t < 2 ? p->strides[t * EIN_MAX_LABELS + l] : 0;
                if (t == 2) {
                    gint64 st = 1;
                    for (guint o = p->nout; o-- > l + 1;)
                        st *= p->dims[o];
                    src_st[t][lcount[t]] = st;
                }
                lcount[t]++;
            }
        gint64 st = 1;
        for (guint i = lcount[t]; i-- > 0;) {
            dst_st[t][i] = st;
            st *= ldims[t][i];
        }
    }
    gsize es = hg_kind_size(kind);
    g_autofree void *pa = g_try_malloc((gsize)(size[0] * size[1] * size[3]) * es + 8);
    g_autofree void *pb = g_try_malloc((gsize)(size[0] * size[3] * size[2]) * es + 8);
    g_autofree void *pc = g_try_malloc((gsize)(size[0] * size[1] * size[2]) * es + 8);
    if (!pa || !pb || !pc) {
        *oom_out = TRUE;
        return TRUE;
    }
    HG_KIND_CALL(kind, strided_copy, a, pa, lcount[0], ldims[0], src_st[0], dst_st[0]);
    HG_KIND_CALL(kind, strided_copy, b, pb, lcount[1], ldims[1], src_st[1], dst_st[1]);
    g_autofree gint64 *offs = g_new(gint64, 2 * size[0] + 2);
    for (gint64 i = 0; i < size[0]; i++) {
        offs[2 * i] = i * size[1] * size[3];
        offs[2 * i + 1] = i * size[3] * size[2];
    }
    HG_KIND_CALL(kind, matmul_run, pa, pb, pc, size[0], offs, size[1], size[2], size[3]);
    /* scatter: C is contiguous in its own order, the output strided */
    HG_KIND_CALL(kind, strided_copy, pc, out, lcount[2], ldims[2], dst_st[2], src_st[2]);
    return TRUE;
}

gboolean
hg_eval_Einsum(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, ctx->n_inputs))
        return FALSE;
    guint nops = ctx->n_inputs;
    if (nops == 0 || nops > EIN_MAX_OPS) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u operands", nops);
        return FALSE;
    }
    if (!same_types(ctx, nops, &kind))
        return FALSE;
    int ranks[EIN_MAX_OPS];
    HgSymDim sd[EIN_MAX_OPS][HG_MAX_RANK];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < nops; q++) {
        ranks[q] = (int)ctx->inputs[q]->rank;
        for (guint i = 0; i < ctx->inputs[q]->rank; i++)
            sd[q][i] = hg_dim_known(ctx->inputs[q]->dims[i]);
        opdims[q] = sd[q];
    }
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_parse(ctx->node, nops, ranks, &e, ctx->error) ||
        !ein_label_dims(ctx->node, &e, opdims, ldims, ctx->error))
        return FALSE;
    if (e.out_rank > HG_MAX_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "output rank %u", e.out_rank);
        return FALSE;
    }
    /* the plan's label order: the output's, then every other label used */
    int lab_of[EIN_MAX_LABELS];
    gboolean in_plan[EIN_MAX_LABELS] = {FALSE};
    EinPlan p = {nops, 0, e.out_rank, {0}, NULL};
    gint64 ydims[HG_MAX_RANK];
    for (guint i = 0; i < e.out_rank; i++) {
        lab_of[p.nlab] = e.out_label[i];
        in_plan[e.out_label[i]] = TRUE;
        ydims[i] = ldims[e.out_label[i]].v;
        p.dims[p.nlab++] = ydims[i];
    }
    for (guint q = 0; q < nops; q++)
        for (guint i = 0; i < e.rank[q]; i++) {
            int l = e.axis_label[q][i];
            if (!in_plan[l]) {
                in_plan[l] = TRUE;
                lab_of[p.nlab] = l;
                p.dims[p.nlab++] = ldims[l].v;
            }
        }
    /* each operand's stride per plan label: repeated labels (diagonals) add, broadcasts are 0 */
    g_autofree gint64 *strides = g_new0(gint64, (gsize)nops * EIN_MAX_LABELS);
    p.strides = strides;
    for (guint q = 0; q < nops; q++) {
        const HgArray *x = ctx->inputs[q];
        gint64 st[HG_MAX_RANK];
        hg_strides(x->rank, x->dims, st);
        for (guint i = 0; i < x->rank; i++) {
            guint pl = 0;
            while (lab_of[pl] != e.axis_label[q][i])
                pl++;
            if (x->dims[i] != p.dims[pl] && x->dims[i] != 1) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "operand %u axis %u: a diagonal over unequal lengths", q, i);
                return FALSE;
            }
            if (x->dims[i] != 1)
                strides[q * EIN_MAX_LABELS + pl] += st[i];
        }
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, ctx->inputs[0]->dtype, e.out_rank, ydims);
    if (!y)
        return FALSE;
    g_autofree HgKBuf *bufs = g_new0(HgKBuf, nops);
    g_autofree const void **datas = g_new0(const void *, nops);
    for (guint q = 0; q < nops; q++) {
        bufs[q] = hg_kbuf_load(ctx->inputs[q], kind);
        datas[q] = bufs[q].p;
    }
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    gboolean failed = !yb.p, done = FALSE;
    gint64 total = hg_numel(p.nlab, p.dims);
    if (!failed && y->numel && total > 0) {
        blas_threads(ctx->threads);
        if (nops == 2)
            done = ein_as_gemm(kind, &p, datas[0], datas[1], yb.p, &failed);
        if (!done)
            HG_KIND_CALL(kind, einsum_naive, datas, &p, yb.p);
    }
    for (guint q = 0; q < nops; q++)
        hg_kbuf_clear(&bufs[q]);
    if (failed)
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_Einsum(const HgShapeCtx *ctx)
{
    if (ctx->n_inputs == 0 || ctx->n_inputs > EIN_MAX_OPS)
        return -1;
    int ranks[EIN_MAX_OPS];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < ctx->n_inputs; q++) {
        const HgValueShape *s = hg_shape_input(ctx, q);
        if (!hg_vshape_known(s))
            return -1;
        ranks[q] = s->rank;
        opdims[q] = s->dims;
    }
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_parse(ctx->node, ctx->n_inputs, ranks, &e, NULL) ||
        !ein_label_dims(ctx->node, &e, opdims, ldims, NULL))
        return -1;
    gboolean used[EIN_MAX_LABELS] = {FALSE};
    gint64 n = 1;
    for (guint q = 0; q < e.nops; q++)
        for (guint i = 0; i < e.rank[q]; i++)
            if (!used[e.axis_label[q][i]]) {
                used[e.axis_label[q][i]] = TRUE;
                n *= ldims[e.axis_label[q][i]].v;
            }
    return n;
}

/* ================================================================ RotaryEmbedding
 *
 * RoPE (opset 23): X is (batch, heads, seq, head) or (batch, seq, heads * head) with num_heads. The
 * first rotary_embedding_dim (default: all) entries of each head are taken as pairs (x1, x2), the
 * two halves or, interleaved, neighbours, and rotated by the position's angle:
 * (cos x1 - sin x2, sin x1 + cos x2), with cos and sin looked up in the caches at position_ids
 * (caches of (max_position, rd / 2)) or, without position_ids, taken as (batch, seq, rd / 2). The rest
 * of the head passes through. Computed in FP64 and rounded once. */

typedef struct {
    gboolean four_d, interleaved;
    gint64 b, h, s, d, rd;
} RopePlan;

/* Dims of X (rank 3 or 4, all known) against the attributes. FALSE with an error. */
static gboolean
rope_plan(const HgNode *node, guint rank, const gint64 *dims, RopePlan *p, GError **error)
{
    p->interleaved = hg_node_attr_int(node, "interleaved", 0) != 0;
    gint64 heads = hg_node_attr_int(node, "num_heads", 0);
    if (rank == 4) {
        p->four_d = TRUE;
        p->b = dims[0], p->h = dims[1], p->s = dims[2], p->d = dims[3];
    } else if (rank == 3) {
        if (heads <= 0 || dims[2] % heads != 0) {
            hg_op_error(error, HG_ERROR_INVALID, node,
                        "a 3-D input needs num_heads dividing its hidden size %" G_GINT64_FORMAT, dims[2]);
            return FALSE;
        }
        p->four_d = FALSE;
        p->b = dims[0], p->s = dims[1], p->h = heads, p->d = dims[2] / heads;
    } else {
        hg_op_error(error, HG_ERROR_INVALID, node, "X must have rank 3 or 4, has %u", rank);
        return FALSE;
    }
    p->rd = hg_node_attr_int(node, "rotary_embedding_dim", 0);
    if (p->rd == 0)
        p->rd = p->d;
    if (p->rd < 0 || p->rd > p->d || p->rd % 2) {
        hg_op_error(error, HG_ERROR_INVALID, node,
                    "rotary_embedding_dim %" G_GINT64_FORMAT " must be even and at most the head size %" G_GINT64_FORMAT,
                    p->rd, p->d);
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_RotaryEmbedding(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_output(ctx, 0);
    if (!x || !y)
        return TRUE;
    if (x->rank >= 0 && x->rank != 3 && x->rank != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X must have rank 3 or 4, has %d", x->rank);
        return FALSE;
    }
    if (hg_vshape_known(x)) {
        gint64 dims[HG_MAX_RANK];
        RopePlan p;
        for (int i = 0; i < x->rank; i++)
            dims[i] = x->dims[i].v;
        if (!rope_plan(ctx->node, (guint)x->rank, dims, &p, ctx->error))
            return FALSE;
    }
    hg_vshape_set(y, x->dtype, x->rank, x->dims);
    hg_fold(ctx, hg_eval_RotaryEmbedding, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* The cache row of (batch bi, position si): an index into caches of (max_position, half) through
 * position_ids, or into (batch, seq, half) caches directly (a dim of 1 broadcasts). -1 with an error
 * when out of range. */
static gint64
rope_row(HgEvalCtx *ctx, const HgArray *cos, const HgArray *pos, gint64 bi, gint64 si)
{
    if (pos) {
        gint64 pb = pos->dims[0] == 1 ? 0 : bi, ps = pos->dims[1] == 1 ? 0 : si;
        gint64 id = hg_array_get_i64(pos, pb * pos->dims[1] + ps);
        if (id < 0 || id >= cos->dims[0]) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "position id %" G_GINT64_FORMAT " is outside the caches' %" G_GINT64_FORMAT " rows", id,
                        cos->dims[0]);
            return -1;
        }
        return id;
    }
    gint64 cb = cos->dims[0] == 1 ? 0 : bi, cs = cos->dims[1] == 1 ? 0 : si;
    return cb * cos->dims[1] + cs;
}

gboolean
hg_eval_RotaryEmbedding(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    const HgArray *x = ctx->inputs[0], *cos = ctx->inputs[1], *sin = ctx->inputs[2];
    const HgArray *pos = hg_eval_input(ctx, 3);
    RopePlan p;
    if (!rope_plan(ctx->node, x->rank, x->dims, &p, ctx->error))
        return FALSE;
    for (int i = 0; i < 3; i++) {
        HgKind c = hg_kind_of(ctx->inputs[i]->dtype);
        if (c != HG_KIND_F32 && c != HG_KIND_F64) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "input %d of type %s is not supported", i,
                        hg_dtype_name(ctx->inputs[i]->dtype));
            return FALSE;
        }
    }
    gint64 half = p.rd / 2;
    gboolean same = cos->rank == sin->rank;
    for (guint i = 0; same && i < cos->rank; i++)
        same = cos->dims[i] == sin->dims[i];
    guint want_rank = pos ? 2 : 3;
    gboolean ok = same && cos->rank == want_rank && cos->dims[want_rank - 1] == half;
    if (ok && pos)
        ok = pos->rank == 2 && (pos->dims[0] == p.b || pos->dims[0] == 1) && (pos->dims[1] == p.s || pos->dims[1] == 1) &&
             hg_dtype_compute(pos->dtype) == HG_COMPUTE_I64;
    else if (ok)
        ok = (cos->dims[0] == p.b || cos->dims[0] == 1) && (cos->dims[1] == p.s || cos->dims[1] == 1);
    if (!ok) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "the caches must both be %s with a last dim of %" G_GINT64_FORMAT " (rotary dim / 2)%s",
                    pos ? "(max_position, half)" : "(batch, seq, half)", half,
                    pos ? ", position_ids int64 (batch, seq)" : "");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output_uninit(ctx, x->dtype, x->rank, x->dims);
    if (!y)
        return FALSE;
    gboolean own_x, own_c, own_s;
    double *xd = hg_array_load_f64(x, &own_x), *cd = hg_array_load_f64(cos, &own_c), *sd = hg_array_load_f64(sin, &own_s);
    g_autofree double *yd = g_new(double, x->numel + 1);
    gboolean good = TRUE;
    for (gint64 bi = 0; bi < p.b && good; bi++)
        for (gint64 si = 0; si < p.s && good; si++) {
            gint64 row = rope_row(ctx, cos, pos, bi, si);
            if (row < 0) {
                good = FALSE;
                break;
            }
            const double *c = cd + row * half, *s = sd + row * half;
            for (gint64 hi = 0; hi < p.h; hi++) {
                gint64 off = p.four_d ? ((bi * p.h + hi) * p.s + si) * p.d : ((bi * p.s + si) * p.h + hi) * p.d;
                const double *xr = xd + off;
                double *yr = yd + off;
                for (gint64 i = 0; i < half; i++) {
                    gint64 i1 = p.interleaved ? 2 * i : i, i2 = p.interleaved ? 2 * i + 1 : i + half;
                    double x1 = xr[i1], x2 = xr[i2];
                    yr[i1] = c[i] * x1 - s[i] * x2;
                    yr[i2] = s[i] * x1 + c[i] * x2;
                }
                for (gint64 i = p.rd; i < p.d; i++)
                    yr[i] = xr[i];
            }
        }
    if (good)
        hg_array_store_f64(y, yd);
    if (own_x)
        g_free(xd);
    if (own_c)
        g_free(cd);
    if (own_s)
        g_free(sd);
    if (!good)
        return FALSE;
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

/* Four multiplies and two adds per pair: two multiply-adds per element. */
gint64
hg_cost_RotaryEmbedding(const HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    gint64 n = x ? hg_vshape_numel(x) : -1;
    return n < 0 ? -1 : 2 * n;
}

/* ================================================================ Attention
 *
 * Scaled dot-product attention (opset 23): Q (batch, q_heads, q_seq, head) and K, V (batch,
 * kv_heads, kv_seq, head | v_head), or the 3-D forms (batch, seq, heads * head) with q_num_heads
 * and kv_num_heads. past_key and past_value (4-D) are concatenated in front of K and V along the
 * sequence and returned as present_key / present_value. Query head h attends with key/value head
 * h / (q_heads / kv_heads) (grouped-query attention). Scores scale Q K^T (scale defaults to
 * 1/sqrt(head)), then softcap, then the bias: an additive mask (bool: false is -inf) broadcast to
 * (batch, q_heads, q_seq, total), -inf past a shorter mask's last dim (as the reference pads it), and
 * with is_causal -inf where key j > query i + past_seq. Softmax per query row, then times V.
 * qk_matmul_output is the scaled product (mode 0), after softcap (1), after the bias (2) or the
 * softmax (3). FP32 compute (FP64 for double), every output rounded once; softmax_precision is
 * satisfied by that (FP32 or wider). */

#define ATTN_Q 0
#define ATTN_K 1
#define ATTN_V 2
#define ATTN_MASK 3
#define ATTN_PAST_K 4
#define ATTN_PAST_V 5
#define ATTN_NONPAD 6

/* The sizes of one Attention node, each known (v >= 0) or not. */
typedef struct {
    gboolean ranked, three_d, past;
    HgSymDim b, hq, hkv, sq, skv, sp, t, dk, dv;
} AttnDims;

/* a and b name one size: the known one (or the named one); FALSE when both are known and differ. */
static gboolean
dim_merge(HgSymDim a, HgSymDim b, HgSymDim *out)
{
    if (a.v >= 0 && b.v >= 0 && a.v != b.v)
        return FALSE;
    *out = a.v >= 0 ? a : b.v >= 0 ? b : a.sym ? a : b;
    return TRUE;
}

/* The dim of a hidden size h split into n heads: h / n when both are known. */
static HgSymDim
dim_split(HgSymDim h, gint64 n)
{
    return h.v >= 0 && n > 0 ? hg_dim_known(h.v / n) : hg_dim_unknown();
}

static gboolean attn_fail(GError **error, const HgNode *node, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
attn_fail(GError **error, const HgNode *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    hg_op_error(error, HG_ERROR_INVALID, node, "%s", msg);
    return FALSE;
}

/* The sizes from the shapes of Q, K, V and the past (NULL: omitted), checked where known. */
static gboolean
attn_dims(const HgNode *node, const HgValueShape *q, const HgValueShape *k, const HgValueShape *v,
          const HgValueShape *pk, const HgValueShape *pv, AttnDims *d, GError **error)
{
    memset(d, 0, sizeof *d);
    d->b = d->hq = d->hkv = d->sq = d->skv = d->sp = d->t = d->dk = d->dv = hg_dim_unknown();
    if ((pk == NULL) != (pv == NULL))
        return attn_fail(error, node, "past_key and past_value must be given together");
    d->past = pk != NULL;
    if (!q || !k || !v || q->rank < 0 || k->rank < 0 || v->rank < 0)
        return TRUE;
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return attn_fail(error, node, "Q, K and V must all be 3-D or all 4-D, have ranks %d, %d, %d", q->rank,
                         k->rank, v->rank);
    d->ranked = TRUE;
    d->three_d = q->rank == 3;
    gboolean ok = dim_merge(q->dims[0], k->dims[0], &d->b) && dim_merge(d->b, v->dims[0], &d->b);
    if (!ok)
        return attn_fail(error, node, "Q, K and V have different batch sizes");
    if (d->three_d) {
        gint64 nq = hg_node_attr_int(node, "q_num_heads", 0), nkv = hg_node_attr_int(node, "kv_num_heads", 0);
        if (nq <= 0 || nkv <= 0)
            return attn_fail(error, node, "3-D inputs need q_num_heads and kv_num_heads");
        if ((q->dims[2].v >= 0 && q->dims[2].v % nq) || (k->dims[2].v >= 0 && k->dims[2].v % nkv) ||
            (v->dims[2].v >= 0 && v->dims[2].v % nkv))
            return attn_fail(error, node, "the hidden sizes are not multiples of the head counts");
        d->hq = hg_dim_known(nq);
        d->hkv = hg_dim_known(nkv);
        d->sq = q->dims[1];
        ok = dim_merge(k->dims[1], v->dims[1], &d->skv) &&
             dim_merge(dim_split(q->dims[2], nq), dim_split(k->dims[2], nkv), &d->dk);
        d->dv = dim_split(v->dims[2], nkv);
    } else {
        d->hq = q->dims[1];
        d->sq = q->dims[2];
        ok = dim_merge(k->dims[1], v->dims[1], &d->hkv) && dim_merge(k->dims[2], v->dims[2], &d->skv) &&
             dim_merge(q->dims[3], k->dims[3], &d->dk);
        d->dv = v->dims[3];
    }
    if (!ok)
        return attn_fail(error, node, "the head counts, sequence lengths or head sizes of Q, K and V disagree");
    if (d->hq.v >= 0 && d->hkv.v >= 0 && (d->hkv.v == 0 || d->hq.v % d->hkv.v))
        return attn_fail(error, node, "%" G_GINT64_FORMAT " query heads are not a multiple of %" G_GINT64_FORMAT
                         " key/value heads", d->hq.v, d->hkv.v);
    d->sp = hg_dim_known(0);
    if (d->past) {
        if (pk->rank >= 0 && pv->rank >= 0) {
            if (pk->rank != 4 || pv->rank != 4)
                return attn_fail(error, node, "past_key and past_value must be 4-D");
            ok = dim_merge(pk->dims[0], d->b, &d->b) && dim_merge(pv->dims[0], d->b, &d->b) &&
                 dim_merge(pk->dims[1], d->hkv, &d->hkv) && dim_merge(pv->dims[1], d->hkv, &d->hkv) &&
                 dim_merge(pk->dims[2], pv->dims[2], &d->sp) && dim_merge(pk->dims[3], d->dk, &d->dk) &&
                 dim_merge(pv->dims[3], d->dv, &d->dv);
            if (!ok)
                return attn_fail(error, node, "past_key or past_value does not match K and V");
        } else {
            d->sp = hg_dim_unknown();
        }
    }
    d->t = d->sp.v >= 0 && d->skv.v >= 0 ? hg_dim_known(d->sp.v + d->skv.v) : d->sp.v == 0 ? d->skv : hg_dim_unknown();
    return TRUE;
}

static gboolean
attn_attrs(const HgNode *node, int *mode, GError **error)
{
    *mode = (int)hg_node_attr_int(node, "qk_matmul_output_mode", 0);
    if (*mode < 0 || *mode > 3)
        return attn_fail(error, node, "qk_matmul_output_mode %d is not 0 to 3", *mode);
    return TRUE;
}

gboolean
hg_infer_Attention(HgShapeCtx *ctx)
{
    AttnDims d;
    int mode;
    if (!attn_attrs(ctx->node, &mode, ctx->error) ||
        !attn_dims(ctx->node, hg_shape_input(ctx, ATTN_Q), hg_shape_input(ctx, ATTN_K), hg_shape_input(ctx, ATTN_V),
                   hg_shape_input(ctx, ATTN_PAST_K), hg_shape_input(ctx, ATTN_PAST_V), &d, ctx->error))
        return FALSE;
    const HgValueShape *q = hg_shape_input(ctx, ATTN_Q), *k = hg_shape_input(ctx, ATTN_K);
    const HgValueShape *v = hg_shape_input(ctx, ATTN_V);
    HgValueShape *y = hg_shape_output(ctx, 0), *pk = hg_shape_output(ctx, 1), *pv = hg_shape_output(ctx, 2);
    HgValueShape *qk = hg_shape_output(ctx, 3);
    if (y && q)
        y->dtype = q->dtype;
    if (pk && k)
        pk->dtype = k->dtype;
    if (pv && v)
        pv->dtype = v->dtype;
    if (qk && q)
        qk->dtype = q->dtype;
    if (!d.ranked)
        return TRUE;
    HgSymDim ydims[4] = {d.b, d.hq, d.sq, d.dv};
    if (d.three_d) {
        ydims[1] = d.sq;
        ydims[2] = d.dv.v >= 0 ? hg_dim_known(d.hq.v * d.dv.v) : hg_dim_unknown();
    }
    hg_vshape_set(y, y ? y->dtype : HG_DTYPE_UNDEFINED, d.three_d ? 3 : 4, ydims);
    HgSymDim kdims[4] = {d.b, d.hkv, d.t, d.dk}, vdims[4] = {d.b, d.hkv, d.t, d.dv}, sdims[4] = {d.b, d.hq, d.sq, d.t};
    hg_vshape_set(pk, pk ? pk->dtype : HG_DTYPE_UNDEFINED, 4, kdims);
    hg_vshape_set(pv, pv ? pv->dtype : HG_DTYPE_UNDEFINED, 4, vdims);
    hg_vshape_set(qk, qk ? qk->dtype : HG_DTYPE_UNDEFINED, 4, sdims);
    return TRUE;
}

static void
attn_task(gpointer data, gint64 task, int worker)
{
    const AttnJob *j = data;
    HG_KIND_CALL_FLOAT(j->kind, attn_head, j, task, j->scratch[worker]);
}

/* The present keys (or values) in the compute type, [b, hkv, t, d]: each head's past rows, then its
 * new ones (from a 3-D input, row s of head g at (s * hkv + g) * d). */
static void *
attn_present(const void *past, const void *x, gboolean three_d, gint64 b, gint64 hkv, gint64 sp, gint64 skv,
             gint64 d, gsize es)
{
    gint64 t = sp + skv;
    char *out = g_try_malloc((gsize)(b * hkv * t * d + 1) * es);
    if (!out)
        return NULL;
    for (gint64 n = 0; n < b; n++)
        for (gint64 g = 0; g < hkv; g++) {
            char *dst = out + (gsize)((n * hkv + g) * t * d) * es;
            if (sp)
                memcpy(dst, (const char *)past + (gsize)((n * hkv + g) * sp * d) * es, (gsize)(sp * d) * es);
            for (gint64 s = 0; s < skv; s++) {
                gint64 src = three_d ? ((n * skv + s) * hkv + g) * d : ((n * hkv + g) * skv + s) * d;
                memcpy(dst + (gsize)((sp + s) * d) * es, (const char *)x + (gsize)src * es, (gsize)d * es);
            }
        }
    return out;
}

gboolean
hg_eval_Attention(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    if (hg_eval_input(ctx, ATTN_NONPAD)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "nonpad_kv_seqlen (opset 24) is not supported");
        return FALSE;
    }
    const HgArray *q = ctx->inputs[ATTN_Q], *k = ctx->inputs[ATTN_K], *v = ctx->inputs[ATTN_V];
    const HgArray *mask = hg_eval_input(ctx, ATTN_MASK), *past_k = hg_eval_input(ctx, ATTN_PAST_K);
    const HgArray *past_v = hg_eval_input(ctx, ATTN_PAST_V);
    HgKind kind = hg_kind_of(q->dtype);
    const HgArray *fl[5] = {q, k, v, past_k, past_v};
    for (int i = 0; i < 5; i++) {
        HgKind c = fl[i] ? hg_kind_of(fl[i]->dtype) : HG_KIND_F32;
        if (c != HG_KIND_F32 && c != HG_KIND_F64) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "an input of type %s is not supported",
                        hg_dtype_name(fl[i]->dtype) ? hg_dtype_name(fl[i]->dtype) : "?");
            return FALSE;
        }
    }
    if (mask && mask->dtype != HG_DTYPE_BOOL && hg_kind_of(mask->dtype) == HG_KIND_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "attn_mask of type %s is not supported",
                    hg_dtype_name(mask->dtype) ? hg_dtype_name(mask->dtype) : "?");
        return FALSE;
    }
    int mode;
    if (!attn_attrs(ctx->node, &mode, ctx->error))
        return FALSE;
    HgValueShape s[5];
    const HgArray *arrs[5] = {q, k, v, past_k, past_v};
    memset(s, 0, sizeof s);
    for (int i = 0; i < 5; i++) {
        hg_vshape_unknown(&s[i]);
        if (arrs[i])
            hg_vshape_set_known(&s[i], arrs[i]->dtype, arrs[i]->rank, arrs[i]->dims);
    }
    AttnDims d;
    if (!attn_dims(ctx->node, &s[0], &s[1], &s[2], past_k ? &s[3] : NULL, past_v ? &s[4] : NULL, &d, ctx->error))
        return FALSE;
    gint64 b = d.b.v, hq = d.hq.v, hkv = d.hkv.v, sq = d.sq.v, skv = d.skv.v, sp = d.sp.v, t = d.t.v;
    gint64 dk = d.dk.v, dv = d.dv.v;
    HgAttr *sa = hg_node_attr(ctx->node, "scale");
    AttnJob j = {
        .kind = kind, .b = b, .hq = hq, .hkv = hkv, .sq = sq, .t = t, .sp = sp, .dk = dk, .dv = dv,
        .three_d = d.three_d, .causal = hg_node_attr_int(ctx->node, "is_causal", 0) != 0,
        .scale = sa && sa->type == HG_ATTR_FLOAT ? sa->f : 1 / sqrt((double)dk),
        .softcap = hg_node_attr_float(ctx->node, "softcap", 0), .mode = mode,
    };
    /* the mask, right-aligned against [b, hq, sq, mlen]: a shorter last dim than t is padded with
     * -inf (false) as the reference does; a last dim of 1 broadcasts */
    if (mask) {
        gint64 target[4] = {b, hq, sq, mask->rank ? mask->dims[mask->rank - 1] : 1};
        gboolean ok = mask->rank <= 4 && target[3] <= t;
        if (ok && target[3] == 1)
            target[3] = t;
        for (guint i = 0; ok && i < mask->rank; i++) {
            gint64 m = mask->dims[mask->rank - 1 - i], want = target[3 - i];
            ok = m == want || m == 1;
        }
        if (!ok) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "attn_mask does not broadcast to (batch, q_heads, q_seq, total_seq) = (%" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")", b, hq, sq, t);
            return FALSE;
        }
        j.mlen = target[3];
        hg_broadcast_strides(mask->rank, mask->dims, 4, target, j.mstr);
    }
    gint64 ydims[4] = {b, hq, sq, dv};
    if (d.three_d) {
        ydims[1] = sq;
        ydims[2] = hq * dv;
    }
    gint64 kdims[4] = {b, hkv, t, dk}, vdims[4] = {b, hkv, t, dv}, qkdims[4] = {b, hq, sq, t};
    if (!blas_fits(sq, t, MAX(dk, dv), hq * MAX(dk, dv))) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, q->dtype, d.three_d ? 3 : 4, ydims);
    g_autoptr(HgArray) pko = hg_eval_wants(ctx, 1) ? hg_eval_new_output(ctx, k->dtype, 4, kdims) : NULL;
    g_autoptr(HgArray) pvo = hg_eval_wants(ctx, 2) ? hg_eval_new_output(ctx, v->dtype, 4, vdims) : NULL;
    g_autoptr(HgArray) qko = hg_eval_wants(ctx, 3) ? hg_eval_new_output(ctx, q->dtype, 4, qkdims) : NULL;
    if (!y || (hg_eval_wants(ctx, 1) && !pko) || (hg_eval_wants(ctx, 2) && !pvo) || (hg_eval_wants(ctx, 3) && !qko))
        return FALSE;
    gsize es = hg_kind_size(kind);
    g_auto(HgKBuf) qb = hg_kbuf_load(q, kind);
    g_auto(HgKBuf) kb = hg_kbuf_load(k, kind);
    g_auto(HgKBuf) vb = hg_kbuf_load(v, kind);
    g_auto(HgKBuf) pkb = hg_kbuf_load(past_k, kind);
    g_auto(HgKBuf) pvb = hg_kbuf_load(past_v, kind);
    g_auto(HgKBuf) mb = mask && mask->dtype != HG_DTYPE_BOOL ? hg_kbuf_load(mask, kind) : (HgKBuf){NULL, FALSE};
    g_autofree void *pk = attn_present(pkb.p, kb.p, d.three_d, b, hkv, sp, skv, dk, es);
    g_autofree void *pv = attn_present(pvb.p, vb.p, d.three_d, b, hkv, sp, skv, dv, es);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    g_auto(HgKBuf) qkb = qko ? hg_kbuf_out(qko, kind) : (HgKBuf){NULL, FALSE};
    if (!pk || !pv || !yb.p || (qko && !qkb.p))
        return hg_eval_oom(ctx);
    j.q = qb.p;
    j.pk = pk;
    j.pv = pv;
    j.mask = mb.p;
    j.bmask = mask && mask->dtype == HG_DTYPE_BOOL ? mask->data : NULL;
    j.y = yb.p;
    j.qk = qkb.p;
    /* heads in parallel, each GEMM on one thread; one head alone lets BLAS use the threads */
    gint64 tasks = b * hq, per = sq * t + 2 * dv + sq + 1;
    int threads = eval_threads(ctx, tasks * sq * t * (dk + dv));
    int workers = tasks >= 2 ? (int)MIN((gint64)threads, tasks) : 1;
    void *scratch[PAR_MAX_THREADS] = {NULL};
    gboolean ok = TRUE;
    for (int w = 0; w < workers && ok; w++)
        ok = (scratch[w] = g_try_malloc((gsize)per * es)) != NULL;
    j.scratch = scratch;
    if (ok && tasks > 0) {
        blas_threads(workers > 1 ? 1 : threads);
        par_for(workers, tasks, attn_task, &j);
    }
    for (int w = 0; w < workers; w++)
        g_free(scratch[w]);
    if (!ok)
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    if (qko)
        hg_kbuf_store(qko, &qkb, kind);
    HgKBuf pkl = {pk, FALSE}, pvl = {pv, FALSE};
    if (pko)
        hg_kbuf_store(pko, &pkl, kind);
    if (pvo)
        hg_kbuf_store(pvo, &pvl, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    if (pko)
        ctx->outputs[1] = g_steal_pointer(&pko);
    if (pvo)
        ctx->outputs[2] = g_steal_pointer(&pvo);
    if (qko)
        ctx->outputs[3] = g_steal_pointer(&qko);
    return TRUE;
}

/* The two products: q_seq x total x (head + v_head) multiply-adds per (batch, query head). */
gint64
hg_cost_Attention(const HgShapeCtx *ctx)
{
    AttnDims d;
    if (!attn_dims(ctx->node, hg_shape_input(ctx, ATTN_Q), hg_shape_input(ctx, ATTN_K), hg_shape_input(ctx, ATTN_V),
                   hg_shape_input(ctx, ATTN_PAST_K), hg_shape_input(ctx, ATTN_PAST_V), &d, NULL) ||
        !d.ranked)
        return -1;
    HgSymDim f[6] = {d.b, d.hq, d.sq, d.t, d.dk, d.dv};
    for (int i = 0; i < 6; i++)
        if (f[i].v < 0)
            return -1;
    return d.b.v * d.hq.v * d.sq.v * d.t.v * (d.dk.v + d.dv.v);
}

/* ---------------------------------------------------------------- interval rules
 * Linear ops bound each output as a sum of products. With constant weights the bound is exact per
 * output channel (or column): split the channel's weights into their positive sum sp and negative
 * sum sn, then out is in [sp*lo + sn*hi, sp*hi + sn*lo] + bias. Without, each of K terms lies in the
 * product interval. Accumulation rounds: the bounds are widened by an absolute K-term rounding error
 * of the sum of magnitudes (the driver's relative widening cannot cover cancellation). */

/* The product of two intervals. */
static void
rprod(double alo, double ahi, double blo, double bhi, double *lo, double *hi)
{
    double p[4] = {hg_bound_mul(alo, blo), hg_bound_mul(alo, bhi), hg_bound_mul(ahi, blo), hg_bound_mul(ahi, bhi)};
    *lo = *hi = p[0];
    for (int i = 1; i < 4; i++) {
        *lo = MIN(*lo, p[i]);
        *hi = MAX(*hi, p[i]);
    }
}

static double
rmag(double lo, double hi)
{
    return MAX(fabs(lo), fabs(hi));
}

static int
range_dtype(const HgRangeCtx *ctx)
{
    const HgValueShape *o = ctx->n_outputs ? ctx->out_shapes[0] : NULL;
    if (o && o->dtype != HG_DTYPE_UNDEFINED)
        return o->dtype;
    return ctx->n_inputs && ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
}

/* Largest value the integer dtype holds exactly (wrapping beyond), or 0 for others. */
static double
int_max(int dtype)
{
    switch (dtype) {
    case HG_DTYPE_INT8: return 127;
    case HG_DTYPE_UINT8: return 255;
    case HG_DTYPE_INT16: return 32767;
    case HG_DTYPE_UINT16: return 65535;
    case HG_DTYPE_INT32: return 2147483647.0;
    case HG_DTYPE_UINT32: return 4294967295.0;
    case HG_DTYPE_INT64: return 9007199254740992.0; /* what a double bound still tells apart */
    case HG_DTYPE_UINT64: return 9007199254740992.0;
    default: return 0;
    }
}

/* Store the bound [lo, hi] of output 0 of dtype `dtype`. mag bounds the magnitude of every partial
 * sum of the k terms the kernel accumulates (FP32 for the float types but double); nan says whether
 * an input can bring NaN or infinity in. Integers wrap: a bound that may not fit stays unbounded. */
static void
range_set_linear(HgRangeCtx *ctx, double lo, double hi, double mag, gint64 k, gboolean nan)
{
    int dtype = range_dtype(ctx);
    HgRange *o = ctx->outputs[0];
    if (!o)
        return;
    double imax = int_max(dtype);
    if (imax > 0) {
        if (isfinite(mag) && mag <= imax && lo >= -imax - 1 && hi <= imax && !nan) {
            if (dtype == HG_DTYPE_UINT8 || dtype == HG_DTYPE_UINT16 || dtype == HG_DTYPE_UINT32 ||
                dtype == HG_DTYPE_UINT64)
                lo = MAX(lo, 0);
            *o = hg_range_exact(ceil(lo - 1e-9), floor(hi + 1e-9));
        }
        return;
    }
    if (!hg_dtype_is_float(dtype))
        return;
    const gboolean dbl = dtype == HG_DTYPE_DOUBLE;
    const double fmax = dbl ? DBL_MAX : FLT_MAX;
    if (nan || !isfinite(mag) || mag * 1.01 >= fmax || !isfinite(lo) || !isfinite(hi)) {
        /* an overflowing partial sum becomes inf, and inf - inf NaN */
        o->lo = nan || !(mag * 1.01 < fmax) ? -INFINITY : lo;
        o->hi = nan || !(mag * 1.01 < fmax) ? INFINITY : hi;
        o->tiny = 0;
        o->nan = TRUE;
        return;
    }
    const double u = dbl ? 0x1p-53 : 0x1p-24;
    double err = (double)(MAX(k, 0) + 2) * 2 * u * mag;
    lo -= err;
    hi += err;
    /* the stored element rounds once more: FP16 and BF16 by far more than the driver widens */
    double rel = 0, step = 0, big = fmax;
    if (dtype == HG_DTYPE_FLOAT16) {
        rel = 0x1p-10, step = 0x1p-24, big = 65504;
    } else if (dtype == HG_DTYPE_BFLOAT16) {
        rel = 0x1p-7, step = 0x1p-133, big = 3.38e38;
    } else if (dtype != HG_DTYPE_FLOAT && !dbl) {
        return; /* float8 and others: leave unbounded */
    }
    /* and a kernel may round a partial result to the storage type before adding the bias */
    lo -= fabs(lo) * rel + step + mag * rel;
    hi += fabs(hi) * rel + step + mag * rel;
    *o = hg_range_exact(lo > -big ? lo : -INFINITY, hi < big ? hi : INFINITY);
}

/* Per-vector positive and negative sums of a constant weight array: element i belongs to vector
 * id(i). Returns FALSE when a weight is not finite. */
typedef gint64 (*VecId)(gint64 i, const gint64 *p);

static gint64 conv_id(gint64 i, const gint64 *p);
static gint64 row_id(gint64 i, const gint64 *p);
static gint64 col_id(gint64 i, const gint64 *p);
static gint64 matmul_b_id(gint64 i, const gint64 *p);

typedef double V4d __attribute__((vector_size(32)));
typedef gint64 V4l __attribute__((vector_size(32)));
typedef float V4f __attribute__((vector_size(16)));

/* FP32 weights in rows of len (unaligned views allowed: memcpy loads), vector v = row v: each row's
 * sums with four lanes (x + |x|) / 2 and x minus that, exact in double. */
__attribute__((target_clones("avx2", "default"))) static gboolean
row_sums_f32(const guint8 *p, gint64 nvec, gint64 len, double *sp, double *sn)
{
    const V4d zero = {0}, half = zero + 0.5;
    const V4l magnitude = {G_MAXINT64, G_MAXINT64, G_MAXINT64, G_MAXINT64};
    V4d bad = zero;
    for (gint64 v = 0; v < nvec; v++) {
        const guint8 *row = p + 4 * v * len;
        V4d pos = zero, neg = zero;
        gint64 i = 0;
        for (; i + 4 <= len; i += 4) {
            V4f f;
            memcpy(&f, row + 4 * i, sizeof f);
            V4d x = __builtin_convertvector(f, V4d);
            V4d px = (x + (V4d)((V4l)x & magnitude)) * half;
            pos += px;
            neg += x - px;
            bad += x * zero;
        }
        double sp1 = pos[0] + pos[1] + pos[2] + pos[3], sn1 = neg[0] + neg[1] + neg[2] + neg[3];
        for (; i < len; i++) {
            float f;
            memcpy(&f, row + 4 * i, 4);
            if (!isfinite(f))
                return FALSE;
            if (f > 0)
                sp1 += f;
            else
                sn1 += f;
        }
        sp[v] = sp1;
        sn[v] = sn1;
    }
    return !isnan(bad[0] + bad[1] + bad[2] + bad[3]);
}

/* FP32 weights [batch, rows, cols], vector = batch * cols + column: elementwise across columns, four
 * columns at a time (memcpy loads and stores: neither the weights nor the sums need alignment). */
__attribute__((target_clones("avx2", "default"))) static gboolean
col_sums_f32(const guint8 *p, gint64 batch, gint64 rows, gint64 cols, double *sp, double *sn)
{
    const V4d zero = {0}, half = zero + 0.5;
    const V4l magnitude = {G_MAXINT64, G_MAXINT64, G_MAXINT64, G_MAXINT64};
    V4d bad = zero;
    for (gint64 v = 0; v < batch * cols; v++)
        sp[v] = sn[v] = 0;
    for (gint64 b = 0; b < batch; b++) {
        double *bp = sp + b * cols, *bn = sn + b * cols;
        for (gint64 r = 0; r < rows; r++) {
            const guint8 *row = p + 4 * ((b * rows + r) * cols);
            gint64 c = 0;
            for (; c + 4 <= cols; c += 4) {
                V4f f;
                V4d pos, neg;
                memcpy(&f, row + 4 * c, sizeof f);
                memcpy(&pos, bp + c, sizeof pos);
                memcpy(&neg, bn + c, sizeof neg);
                V4d x = __builtin_convertvector(f, V4d);
                V4d px = (x + (V4d)((V4l)x & magnitude)) * half;
                pos += px;
                neg += x - px;
                bad += x * zero;
                memcpy(bp + c, &pos, sizeof pos);
                memcpy(bn + c, &neg, sizeof neg);
            }
            for (; c < cols; c++) {
                float f;
                memcpy(&f, row + 4 * c, 4);
                double x = f, px = (x + fabs(x)) * 0.5;
                bp[c] += px;
                bn[c] += x - px;
                bad[0] += x * 0;
            }
        }
    }
    return !isnan(bad[0] + bad[1] + bad[2] + bad[3]);
}

static gboolean
weight_sums(const HgArray *w, gint64 nvec, VecId id, const gint64 *p, double *sp, double *sn)
{
    if (w->dtype == HG_DTYPE_FLOAT && nvec > 0) {
        if ((id == conv_id || id == row_id) && p[0] > 0 && p[0] * nvec == w->numel)
            return row_sums_f32(w->data, nvec, p[0], sp, sn);
        if (id == matmul_b_id && p[0] > 0 && p[1] > 0 && w->numel % (p[0] * p[1]) == 0 &&
            nvec == w->numel / p[0])
            return col_sums_f32(w->data, w->numel / (p[0] * p[1]), p[0], p[1], sp, sn);
        if (id == col_id && p[1] > 0 && nvec == p[1] && w->numel % p[1] == 0)
            return col_sums_f32(w->data, 1, w->numel / p[1], p[1], sp, sn);
    }
    for (gint64 v = 0; v < nvec; v++)
        sp[v] = sn[v] = 0;
    for (gint64 i = 0; i < w->numel; i++) {
        double x = hg_array_get_f64(w, i);
        if (!isfinite(x))
            return FALSE;
        gint64 v = id(i, p);
        if (v < 0 || v >= nvec)
            return FALSE;
        if (x > 0)
            sp[v] += x;
        else
            sn[v] += x;
    }
    return TRUE;
}

/* out_v = sum of w*x with x in [xlo, xhi] over vector v's weights, plus a bias in [blo_v, bhi_v]
 * (bias NULL: the range [blo0, bhi0] for every vector); the union over vectors, and the largest
 * partial-sum magnitude. */
static void
weight_bound(gint64 nvec, const double *sp, const double *sn, double xlo, double xhi,
             const HgArray *bias, double blo0, double bhi0, double *lo, double *hi, double *mag)
{
    *lo = INFINITY, *hi = -INFINITY, *mag = 0;
    const double xm = rmag(xlo, xhi);
    for (gint64 v = 0; v < nvec; v++) {
        double blo = blo0, bhi = bhi0;
        if (bias) {
            blo = bhi = hg_array_get_f64(bias, v % bias->numel);
        }
        double l = hg_bound_add(hg_bound_add(hg_bound_mul(sp[v], xlo), hg_bound_mul(sn[v], xhi), -INFINITY), blo, -INFINITY);
        double h = hg_bound_add(hg_bound_add(hg_bound_mul(sp[v], xhi), hg_bound_mul(sn[v], xlo), INFINITY), bhi, INFINITY);
        *lo = MIN(*lo, l);
        *hi = MAX(*hi, h);
        *mag = MAX(*mag, hg_bound_mul(sp[v] - sn[v], xm) + rmag(blo, bhi));
    }
    if (nvec == 0)
        *lo = *hi = 0;
}

static gboolean
range_bad(const HgRange *r)
{
    return !r || r->nan || !hg_range_bounded(r);
}

/* Whether a Conv or pool pads: explicit pads or a SAME auto_pad. */
static gboolean
win_pads(const HgNode *node, gint64 *max_pad)
{
    g_autofree char *ap = hg_attr_string(node, "auto_pad", "NOTSET");
    guint len = 0;
    const gint64 *pads = hg_attr_ints(node, "pads", &len);
    gboolean any = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    *max_pad = 0;
    if (!strcmp(ap, "VALID"))
        return FALSE;
    for (guint i = 0; pads && i < len; i++) {
        any = any || pads[i] != 0;
        *max_pad = MAX(*max_pad, pads[i]);
    }
    return any;
}

static gint64
conv_id(gint64 i, const gint64 *p)
{
    return i / p[0];
}

/* ConvTranspose W [C, M/g, k...]: p = {kprod, M/g, C/g}. */
static gint64
convt_id(gint64 i, const gint64 *p)
{
    gint64 ic = i / (p[1] * p[0]);
    return (ic / p[2]) * p[1] + (i / p[0]) % p[1];
}

/* Conv (transpose FALSE) and ConvTranspose: every output is a sum over some of the taps of w*x plus
 * the channel's bias; taps in padding (or, for ConvTranspose, taps that do not reach the position)
 * contribute 0, so x's range takes 0 in when they can happen. */
static void
range_conv(HgRangeCtx *ctx, gboolean transpose)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *w = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgRange *b = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
    const HgValueShape *ws = ctx->n_inputs > 1 ? ctx->shapes[1] : NULL;
    if (!x || !w || !ws || !hg_vshape_known(ws) || ws->rank < 2)
        return;
    gint64 max_pad;
    double xlo = x->lo, xhi = x->hi;
    if (transpose || win_pads(ctx->node, &max_pad)) {
        xlo = MIN(xlo, 0);
        xhi = MAX(xhi, 0);
    }
    gint64 group = hg_node_attr_int(ctx->node, "group", 1);
    gint64 k = w_tail_numel(ws); /* taps per output (Conv) or per input (ConvTranspose) */
    if (group < 1 || k < 0)
        return;
    gboolean nan = x->nan || range_bad(w) || (b && range_bad(b)) || !hg_range_bounded(x);
    const HgArray *wv = ctx->values[1];
    const HgArray *bv = ctx->n_inputs > 2 ? ctx->values[2] : NULL;
    double lo, hi, mag;
    if (transpose) {
        /* up to C/group input channels times the kernel's taps reach one output */
        gint64 c = ws->dims[0].v, mg = ws->dims[1].v;
        if (c % group || mg <= 0)
            return;
        k = (c / group) * (k / mg);
    }
    if (wv) {
        gint64 nvec, p[3];
        VecId id;
        if (!transpose) {
            nvec = ws->dims[0].v;
            p[0] = nvec ? wv->numel / nvec : 1;
            id = conv_id;
        } else {
            gint64 c = ws->dims[0].v, mg = ws->dims[1].v;
            if (c % group)
                return;
            nvec = mg * group;
            p[1] = mg, p[2] = c / group;
            p[0] = c * mg != 0 ? wv->numel / (c * mg) : 1;
            if (p[2] == 0)
                return;
            id = convt_id;
        }
        if (bv && bv->numel != nvec)
            return;
        g_autofree double *sp = g_new(double, nvec + 1);
        g_autofree double *sn = g_new(double, nvec + 1);
        if (!weight_sums(wv, nvec, id, p, sp, sn))
            return;
        weight_bound(nvec, sp, sn, xlo, xhi, bv, b ? b->lo : 0, b ? b->hi : 0, &lo, &hi, &mag);
    } else {
        double plo, phi;
        rprod(xlo, xhi, w->lo, w->hi, &plo, &phi);
        /* k terms, any of which may be missing (0) for ConvTranspose */
        if (transpose)
            plo = MIN(plo, 0), phi = MAX(phi, 0);
        double blo = b ? b->lo : 0, bhi = b ? b->hi : 0;
        lo = hg_bound_add(hg_bound_mul((double)k, plo), blo, -INFINITY);
        hi = hg_bound_add(hg_bound_mul((double)k, phi), bhi, INFINITY);
        mag = hg_bound_mul((double)k, rmag(plo, phi)) + rmag(blo, bhi);
    }
    range_set_linear(ctx, lo, hi, mag, k, nan);
}

void
hg_range_Conv(HgRangeCtx *ctx)
{
    range_conv(ctx, FALSE);
}

void
hg_range_ConvTranspose(HgRangeCtx *ctx)
{
    range_conv(ctx, TRUE);
}

/* MatMul with constant B: p = {K, N}, vector = batch * N + column. Constant A: vector = row. */
static gint64
matmul_b_id(gint64 i, const gint64 *p)
{
    return (i / (p[0] * p[1])) * p[1] + i % p[1];
}

static gint64
row_id(gint64 i, const gint64 *p)
{
    return i / p[0];
}

static gint64
col_id(gint64 i, const gint64 *p)
{
    return i % p[1];
}

/* out = alpha * (sum of k products of a and b) + cterm; a linear bound through the constant side
 * when one is constant (cv, its vectors by id; x the range of the other side). */
static void
range_matmul_core(HgRangeCtx *ctx, const HgRange *a, const HgRange *b, const HgRange *x,
                  const HgArray *cv, VecId id,
                  const gint64 *p, gint64 nvec, gint64 k, double alpha, double clo, double chi,
                  gboolean nan)
{
    double lo, hi, mag;
    if (cv && id) {
        g_autofree double *sp = g_new(double, nvec + 1);
        g_autofree double *sn = g_new(double, nvec + 1);
        if (!weight_sums(cv, nvec, id, p, sp, sn))
            return;
        weight_bound(nvec, sp, sn, x->lo, x->hi, NULL, 0, 0, &lo, &hi, &mag);
    } else {
        double plo, phi;
        rprod(a->lo, a->hi, b->lo, b->hi, &plo, &phi);
        lo = hg_bound_mul((double)k, plo);
        hi = hg_bound_mul((double)k, phi);
        mag = hg_bound_mul((double)k, rmag(plo, phi));
    }
    if (k == 0)
        lo = hi = mag = 0;
    double l2, h2;
    rprod(lo, hi, alpha, alpha, &l2, &h2);
    mag = hg_bound_mul(mag, fabs(alpha)) + rmag(clo, chi);
    range_set_linear(ctx, hg_bound_add(l2, clo, -INFINITY), hg_bound_add(h2, chi, INFINITY), mag, k, nan);
}

void
hg_range_MatMul(HgRangeCtx *ctx)
{
    const HgRange *a = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *b = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgValueShape *as = a ? ctx->shapes[0] : NULL, *bs = b ? ctx->shapes[1] : NULL;
    if (!a || !b || !as || !bs || as->rank < 1 || bs->rank < 1)
        return;
    gint64 k = as->dims[as->rank - 1].v;
    if (k < 0)
        k = bs->dims[bs->rank == 1 ? 0 : bs->rank - 2].v;
    if (k < 0)
        return;
    gboolean nan = a->nan || b->nan || !hg_range_bounded(a) || !hg_range_bounded(b);
    const HgArray *av = ctx->values[0], *bv = ctx->values[1];
    gint64 p[2], nvec = 0;
    VecId id = NULL;
    const HgArray *cv = NULL;
    if (bv && hg_vshape_known(bs) && bv->numel == hg_vshape_numel(bs)) {
        p[0] = k;
        p[1] = bs->rank == 1 ? 1 : bs->dims[bs->rank - 1].v;
        cv = bv, id = matmul_b_id;
        nvec = p[0] * p[1] != 0 ? bv->numel / p[0] : 0;
    } else if (av && hg_vshape_known(as) && av->numel == hg_vshape_numel(as)) {
        p[0] = k;
        cv = av, id = row_id;
        nvec = k ? av->numel / k : 0;
    }
    range_matmul_core(ctx, a, b, cv == bv ? a : b, cv, id, p, nvec, k, 1, 0, 0, nan);
}

void
hg_range_Gemm(HgRangeCtx *ctx)
{
    const HgRange *a = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *b = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgRange *c = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
    const HgValueShape *as = a ? ctx->shapes[0] : NULL, *bs = b ? ctx->shapes[1] : NULL;
    if (!a || !b || !as || !bs || as->rank != 2 || bs->rank != 2)
        return;
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    double alpha = hg_node_attr_float(ctx->node, "alpha", 1.0f);
    double beta = hg_node_attr_float(ctx->node, "beta", 1.0f);
    if (int_max(range_dtype(ctx)) > 0 && (alpha != trunc(alpha) || beta != trunc(beta)))
        return; /* integer Gemm truncates alpha and beta */
    gint64 k = as->dims[ta ? 0 : 1].v;
    if (k < 0)
        k = bs->dims[tb ? 1 : 0].v;
    if (k < 0)
        return;
    gboolean nan = a->nan || b->nan || !hg_range_bounded(a) || !hg_range_bounded(b) || !isfinite(alpha);
    double clo = 0, chi = 0;
    if (c) {
        nan = nan || range_bad(c) || !isfinite(beta);
        rprod(c->lo, c->hi, beta, beta, &clo, &chi);
    }
    const HgArray *bv = ctx->values[1];
    gint64 p[2] = {k, 0}, nvec = 0;
    VecId id = NULL;
    if (bv && hg_vshape_known(bs) && bv->numel == hg_vshape_numel(bs)) {
        nvec = bs->dims[tb ? 0 : 1].v;
        p[1] = nvec;
        id = tb ? row_id : col_id;
    }
    range_matmul_core(ctx, a, b, a, id ? bv : NULL, id, p, nvec, k, alpha, clo, chi, nan);
}

/* Einsum: each output element sums `terms` products of one element of each operand. */
void
hg_range_Einsum(HgRangeCtx *ctx)
{
    if (ctx->n_inputs == 0 || ctx->n_outputs == 0 || !ctx->out_shapes[0])
        return;
    HgShapeCtx sc = {ctx->node, ctx->opset, ctx->n_inputs, ctx->shapes, 0, NULL, NULL};
    gint64 all = hg_cost_Einsum(&sc), nout = hg_vshape_numel(ctx->out_shapes[0]);
    if (all < 0 || nout < 0)
        return;
    gint64 terms = nout ? all / nout : 0;
    double lo = 1, hi = 1, mag = 1;
    gboolean nan = FALSE;
    for (guint q = 0; q < ctx->n_inputs; q++) {
        const HgRange *r = ctx->inputs[q];
        if (!r)
            return;
        nan = nan || r->nan || !hg_range_bounded(r);
        rprod(lo, hi, r->lo, r->hi, &lo, &hi);
        mag = hg_bound_mul(mag, rmag(r->lo, r->hi));
    }
    /* the product of several operands also rounds: fold that into the k of the error bound */
    if (terms == 0)
        lo = hi = mag = 0;
    range_set_linear(ctx, hg_bound_mul((double)terms, lo), hg_bound_mul((double)terms, hi), hg_bound_mul((double)terms, mag),
                     terms + ctx->n_inputs, nan);
}

/* ---------------------------------------------------------------- pools */

static void
range_copy_input(HgRangeCtx *ctx, double lo, double hi, gboolean nan)
{
    if (!ctx->n_outputs || !ctx->outputs[0])
        return;
    *ctx->outputs[0] = hg_range_exact(lo, hi);
    ctx->outputs[0]->nan = nan;
}

/* The largest window extent along any axis, from kernel_shape and dilations. */
static gint64
win_extent_min(const HgNode *node)
{
    guint nk = 0, nd = 0;
    const gint64 *ks = hg_attr_ints(node, "kernel_shape", &nk);
    const gint64 *ds = hg_attr_ints(node, "dilations", &nd);
    gint64 m = G_MAXINT64;
    for (guint i = 0; ks && i < nk; i++)
        m = MIN(m, (ks[i] - 1) * (ds && i < nd ? MAX(ds[i], 1) : 1) + 1);
    return ks ? m : 0;
}

/* Whether every element of v is >= 0 by construction: Relu's output, or a Concat, MaxPool or
 * reshaping of such values (a few levels deep). */
static gboolean
nonneg_by_construction(const HgValue *v, int depth)
{
    const HgNode *n = v ? v->producer : NULL;
    if (!n || depth > 4 || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
        return FALSE;
    if (!strcmp(n->op_type, "Relu"))
        return TRUE;
    gboolean all = !strcmp(n->op_type, "Concat");
    if (!all && strcmp(n->op_type, "MaxPool") && strcmp(n->op_type, "Reshape") && strcmp(n->op_type, "Flatten"))
        return FALSE;
    for (guint i = 0; i < (all ? n->n_inputs : MIN(n->n_inputs, 1)); i++)
        if (!nonneg_by_construction(n->inputs[i], depth + 1))
            return FALSE;
    return n->n_inputs > 0;
}

/* Legacy converters put a Pad of -FLT_MAX in front of a MaxPool without pads of its own, so the
 * padded tensor's range reaches -FLT_MAX although no window is pad only. Whether that is the case
 * for the Pad that makes x (shape xs): pads only on spatial axes, each smaller than the window
 * (contiguous windows, no ceil_mode), so every window holds an element of the Pad's input; and that
 * input is nonnegative by construction. Then the output is >= 0. */
static gboolean
pad_windows_nonneg(const HgRangeCtx *ctx, const HgValueShape *xs)
{
    const HgNode *pn = ctx->node->n_inputs && ctx->node->inputs[0] ? ctx->node->inputs[0]->producer : NULL;
    if (!pn || strcmp(pn->op_type, "Pad") || (pn->domain && *pn->domain && strcmp(pn->domain, "ai.onnx")) ||
        pn->n_inputs != 1 || !xs || xs->rank < 3 || !nonneg_by_construction(pn->inputs[0], 0))
        return FALSE;
    gint64 max_pad;
    guint np = 0, nk = 0, nd = 0;
    const gint64 *pads = hg_attr_ints(pn, "pads", &np); /* before opset 11; later ones are inputs */
    const gint64 *ks = hg_attr_ints(ctx->node, "kernel_shape", &nk);
    const gint64 *ds = hg_attr_ints(ctx->node, "dilations", &nd);
    if (!pads || np != 2 * (guint)xs->rank || !ks || nk != (guint)xs->rank - 2 ||
        win_pads(ctx->node, &max_pad) || hg_node_attr_int(ctx->node, "ceil_mode", 0))
        return FALSE;
    for (guint i = 0; i < nd; i++)
        if (ds[i] != 1)
            return FALSE;
    for (int a = 0; a < xs->rank; a++) {
        gint64 pb = pads[a], pe = pads[a + xs->rank], k = a >= 2 ? ks[a - 2] : 1;
        if (pb < 0 || pe < 0 || pb >= k || pe >= k || (a < 2 && (pb || pe)) || xs->dims[a].v <= pb + pe)
            return FALSE;
    }
    return TRUE;
}

void
hg_range_MaxPool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (!x)
        return;
    gint64 max_pad;
    gboolean pads = win_pads(ctx->node, &max_pad);
    /* a window wholly in the padding (pads at least the window) yields the -inf the padding holds */
    double lo = pads && max_pad >= win_extent_min(ctx->node) ? -INFINITY : x->lo;
    if (ctx->node && lo < 0 && pad_windows_nonneg(ctx, ctx->shapes[0]))
        lo = 0;
    range_copy_input(ctx, lo, x->hi, x->nan);
    if (ctx->n_outputs > 1 && ctx->outputs[1] && ctx->shapes[0]) {
        gint64 n = hg_vshape_numel(ctx->shapes[0]);
        if (n > 0)
            *ctx->outputs[1] = hg_range_exact(0, (double)(n - 1));
    }
}

void
hg_range_GlobalMaxPool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (x)
        range_copy_input(ctx, x->lo, x->hi, x->nan);
}

/* Averages of n values in [lo, hi]: in [lo, hi] up to the FP32 sum's rounding. */
static void
range_average(HgRangeCtx *ctx, double lo, double hi, gboolean nan, gint64 n)
{
    if (!isfinite(lo) || !isfinite(hi))
        nan = TRUE; /* inf - inf */
    range_set_linear(ctx, lo, hi, rmag(lo, hi), n + 1, nan);
    if (ctx->outputs[0] && nan)
        ctx->outputs[0]->nan = TRUE;
    if (ctx->outputs[0] && !isfinite(lo))
        ctx->outputs[0]->lo = -INFINITY;
    if (ctx->outputs[0] && !isfinite(hi))
        ctx->outputs[0]->hi = INFINITY;
}

void
hg_range_AveragePool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    if (!x)
        return;
    gint64 max_pad;
    gboolean pads = win_pads(ctx->node, &max_pad);
    gboolean ceil_mode = opset_at_least(ctx->opset, 10) && hg_node_attr_int(ctx->node, "ceil_mode", 0);
    gboolean incl = hg_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
    double lo = x->lo, hi = x->hi;
    gboolean nan = x->nan;
    gint64 ext = win_extent_min(ctx->node);
    if ((pads || ceil_mode) && (incl || max_pad >= ext)) {
        lo = MIN(lo, 0);
        hi = MAX(hi, 0);
    }
    if (max_pad >= ext && ext > 0)
        nan = TRUE; /* a window of padding only: 0/0 when the pads are not counted */
    guint nk = 0;
    const gint64 *ks = hg_attr_ints(ctx->node, "kernel_shape", &nk);
    gint64 n = 1;
    for (guint i = 0; ks && i < nk; i++)
        n *= MAX(ks[i], 1);
    if (!ks)
        return;
    range_average(ctx, lo, hi, nan, n);
}

void
hg_range_GlobalAveragePool(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgValueShape *s = x ? ctx->shapes[0] : NULL;
    if (!x || !s || !hg_vshape_known(s))
        return;
    gint64 n = 1;
    for (int i = 2; i < s->rank; i++)
        n *= s->dims[i].v;
    range_average(ctx, x->lo, x->hi, x->nan, n);
}



/* Input i's range, or NULL when omitted. */
static const HgRange *
attn_in(const HgRangeCtx *ctx, guint i)
{
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

/* Attention. Y: each row is a convex combination of the attended rows of V (and the past values),
 * clamped by the kernel into their hull, or 0 for a row that every key is masked from (possible only
 * with a bool mask that can be false, a float mask that can be -inf, or no keys at all). Present
 * key/value: the union of the past and the new. qk_matmul_output: the scaled product lies in
 * scale * head * (Q x K) (interval products, plus the GEMM's rounding); softcap maps it into
 * c tanh(S / c); mode 2 adds the bias (-inf where causal, bool or padded masks can exclude keys);
 * mode 3 is a softmax, in [0, 1]. NaN: from NaN inputs, inf * 0 and inf - inf in the products (an
 * unbounded Q, K or V), +inf scores (an overflowing product, a mask reaching +inf). */
void
hg_range_Attention(HgRangeCtx *ctx)
{
    const HgRange *q = attn_in(ctx, ATTN_Q), *k = attn_in(ctx, ATTN_K), *v = attn_in(ctx, ATTN_V);
    const HgRange *mask = attn_in(ctx, ATTN_MASK), *pk = attn_in(ctx, ATTN_PAST_K), *pv = attn_in(ctx, ATTN_PAST_V);
    if (!q || !k || !v || attn_in(ctx, ATTN_NONPAD))
        return;
    AttnDims d;
    int mode;
    if (!attn_attrs(ctx->node, &mode, NULL) ||
        !attn_dims(ctx->node, ctx->shapes[ATTN_Q], ctx->shapes[ATTN_K], ctx->shapes[ATTN_V],
                   pk ? ctx->shapes[ATTN_PAST_K] : NULL, pv ? ctx->shapes[ATTN_PAST_V] : NULL, &d, NULL))
        return;
    HgRange kall = pk ? hg_range_union(*k, *pk) : *k, vall = pv ? hg_range_union(*v, *pv) : *v;
    int mdt = mask && ctx->shapes[ATTN_MASK] ? ctx->shapes[ATTN_MASK]->dtype : HG_DTYPE_UNDEFINED;
    gboolean bool_mask = mdt == HG_DTYPE_BOOL;
    /* can a mask exclude a key (bias -inf)? can a row lose every key? */
    gboolean excludes = mask && (bool_mask ? mask->lo <= 0 : mask->lo == -INFINITY);
    gboolean causal = ctx->node && hg_node_attr_int(ctx->node, "is_causal", 0) != 0;
    gboolean empty_row = excludes || d.t.v <= 0;
    /* the scores: scale * head * (q k), the products' range, when the sizes are known */
    double scale = NAN, softcap = ctx->node ? hg_node_attr_float(ctx->node, "softcap", 0) : 0;
    HgAttr *sa = ctx->node ? hg_node_attr(ctx->node, "scale") : NULL;
    if (d.dk.v > 0)
        scale = sa && sa->type == HG_ATTR_FLOAT ? fabs((double)sa->f) : 1 / sqrt((double)d.dk.v);
    double plo, phi;
    rprod(q->lo, q->hi, kall.lo, kall.hi, &plo, &phi);
    gboolean scores_known = d.dk.v > 0 && isfinite(scale) && hg_range_bounded(q) && hg_range_bounded(&kall);
    double dk = (double)d.dk.v, mag = scores_known ? scale * dk * rmag(plo, phi) : INFINITY;
    gboolean overflow = !(mag * 1.01 < FLT_MAX); /* a score that may reach inf */
    gboolean nan = q->nan || k->nan || v->nan || (pk && pk->nan) || (pv && pv->nan) || (mask && mask->nan) ||
                   !hg_range_bounded(q) || !hg_range_bounded(&kall) || !hg_range_bounded(&vall) ||
                   (mask && !bool_mask && mask->hi == INFINITY) || (softcap == 0 && overflow);
    int ydt = ctx->n_outputs && ctx->out_shapes[0] ? ctx->out_shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    if (ctx->n_outputs > 0 && ctx->outputs[0] && vall.lo <= vall.hi) {
        HgRange y = hg_range_exact(vall.lo, vall.hi);
        if (empty_row)
            y = hg_range_union(y, hg_range_exact(0, 0));
        y.tiny = 0;
        y.nan = nan;
        /* values of V's own type stay in its hull when stored; a narrower Y rounds once more */
        int vdt = ctx->shapes[ATTN_V] ? ctx->shapes[ATTN_V]->dtype : HG_DTYPE_UNDEFINED;
        *ctx->outputs[0] = vdt == ydt && ydt != HG_DTYPE_UNDEFINED ? y : hg_range_fit(y, ydt);
    }
    if (ctx->n_outputs > 1 && ctx->outputs[1] && kall.lo <= kall.hi)
        *ctx->outputs[1] = kall;
    if (ctx->n_outputs > 2 && ctx->outputs[2] && vall.lo <= vall.hi)
        *ctx->outputs[2] = vall;
    if (ctx->n_outputs < 4 || !ctx->outputs[3])
        return;
    int sdt = ctx->out_shapes[3] ? ctx->out_shapes[3]->dtype : HG_DTYPE_UNDEFINED;
    HgRange s;
    if (mode == 3) {
        s = hg_range_exact(0, 1);
        s.nan = nan;
        *ctx->outputs[3] = hg_range_fit(s, sdt);
        return;
    }
    if (!scores_known || overflow)
        return;
    /* FP32 products and a head-long sum (FP64 for double), then times the scale */
    double err = (dk + 2) * 2 * 0x1p-24 * mag;
    s = hg_range_exact(scale * dk * MIN(plo, 0) - err, scale * dk * MAX(phi, 0) + err);
    if (plo > 0)
        s.lo = scale * dk * plo - err;
    if (phi < 0)
        s.hi = scale * dk * phi + err;
    s.nan = q->nan || k->nan || (pk && pk->nan);
    if (mode >= 1 && softcap > 0) {
        double c = softcap;
        s.lo = c * tanh(s.lo / c) - 4 * 0x1p-24 * c;
        s.hi = c * tanh(s.hi / c) + 4 * 0x1p-24 * c;
    }
    if (mode == 2) {
        HgRange bias = hg_range_exact(0, 0);
        if (mask && !bool_mask)
            bias = hg_range_exact(mask->lo, mask->hi);
        /* -inf where a key is excluded: causally, by a bool mask, or past a mask shorter than the keys */
        const HgValueShape *ms = mask ? ctx->shapes[ATTN_MASK] : NULL;
        gboolean padded = mask && (!ms || ms->rank < 1 || d.t.v < 0 || ms->dims[ms->rank - 1].v != d.t.v);
        if (causal || bool_mask || padded)
            bias.lo = -INFINITY;
        bias.nan = mask && mask->nan;
        s = hg_range_add(s, bias);
    }
    s.tiny = 0;
    *ctx->outputs[3] = hg_range_fit(s, sdt);
}

/* The value a cache is computed from when it is op(t), op Cos or Sin, seen through Casts: the
 * caches' pairs then lie on the unit circle (up to the roundings), whatever t is. */
static const HgValue *
trig_source(const HgValue *v, const char *op, int *casts)
{
    *casts = 0;
    while (v && v->producer && hg_node_is(v->producer, "Cast") && v->producer->n_inputs == 1 && *casts < 4) {
        v = v->producer->inputs[0];
        (*casts)++;
    }
    return v && v->producer && hg_node_is(v->producer, op) && v->producer->n_inputs == 1 ? v->producer->inputs[0]
                                                                                          : NULL;
}

/* RotaryEmbedding: y1 = c x1 - s x2, y2 = s x1 + c x2 with x1, x2 anywhere in X's range. For each
 * (c, s) pair the extremes are at X's ends, so constant caches give the exact union over their
 * pairs; otherwise the caches' ranges combine by interval arithmetic. When c^2 + s^2 <= R^2 is
 * known (constant caches, or Cos and Sin of the same value) the rotation also keeps |y| <=
 * R sqrt(x1^2 + x2^2) <= R sqrt(2) max|x|. The unrotated tail of each head passes X through.
 * FP64 arithmetic, rounded once into the output type. */
void
hg_range_RotaryEmbedding(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *c = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgRange *s = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
    HgRange *y = ctx->n_outputs ? ctx->outputs[0] : NULL;
    const HgValueShape *xs = x ? ctx->shapes[0] : NULL;
    if (!x || !c || !s || !y || !(x->lo <= x->hi) || !(c->lo <= c->hi) || !(s->lo <= s->hi))
        return;
    int dt = range_dtype(ctx);
    if (!hg_dtype_is_float(dt))
        return;
    const HgArray *cv = ctx->values[1], *sv = ctx->values[2];
    HgRange r;
    double r2 = INFINITY; /* a bound on c^2 + s^2 over the pairs */
    if (cv && sv && cv->numel == sv->numel && cv->numel > 0 && cv->numel <= (1 << 24)) {
        r = hg_range_exact(INFINITY, -INFINITY);
        r2 = 0;
        for (gint64 i = 0; i < cv->numel; i++) {
            HgRange ci = hg_range_exact(hg_array_get_f64(cv, i), hg_array_get_f64(cv, i));
            HgRange si = hg_range_exact(hg_array_get_f64(sv, i), hg_array_get_f64(sv, i));
            if (isnan(ci.lo) || isnan(si.lo)) {
                r = hg_range_any();
                r2 = INFINITY;
                break;
            }
            HgRange cx = hg_range_mul(ci, *x), sx = hg_range_mul(si, *x);
            r = hg_range_union(r, hg_range_union(hg_range_sub(cx, sx), hg_range_add(sx, cx)));
            r2 = MAX(r2, ci.lo * ci.lo + si.lo * si.lo);
        }
    } else {
        HgRange cx = hg_range_mul(*c, *x), sx = hg_range_mul(*s, *x);
        r = hg_range_union(hg_range_sub(cx, sx), hg_range_add(sx, cx));
        int kc, ks;
        const HgValue *tc = ctx->node && ctx->node->n_inputs > 2 ? trig_source(ctx->node->inputs[1], "Cos", &kc) : NULL;
        const HgValue *ts = tc ? trig_source(ctx->node->inputs[2], "Sin", &ks) : NULL;
        if (tc && tc == ts) {
            /* each cache rounded up to twice (its Cos/Sin and a Cast), FP16 at worst */
            double e = 1 + (kc + ks + 2) * 0x1p-11;
            r2 = e * e;
        }
    }
    if (isfinite(r2) && hg_range_bounded(x)) {
        double m = sqrt(r2) * G_SQRT2 * MAX(fabs(x->lo), fabs(x->hi)) * (1 + 0x1p-40);
        r.lo = MAX(r.lo, -m);
        r.hi = MIN(r.hi, m);
    }
    r.nan = r.nan || x->nan || c->nan || s->nan;
    /* the tail that is not rotated: unless rotary_embedding_dim is known to cover the head */
    gint64 rd = ctx->node ? hg_node_attr_int(ctx->node, "rotary_embedding_dim", 0) : 0;
    gint64 d = -1;
    if (xs && xs->rank == 4)
        d = xs->dims[3].v;
    else if (xs && xs->rank == 3 && xs->dims[2].v >= 0 && ctx->node && hg_node_attr_int(ctx->node, "num_heads", 0) > 0)
        d = xs->dims[2].v / hg_node_attr_int(ctx->node, "num_heads", 0);
    if (rd != 0 && rd != d)
        r = hg_range_union(r, *x);
    r.tiny = 0;
    *y = hg_range_fit(r, dt);
}
