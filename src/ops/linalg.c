/* What the linear-algebra families (conv.c, pool.c, matmul.c, attention.c) share: sliding windows
 * and their attributes, BLAS, a parallel loop, scratch buffers, and the interval machinery of linear
 * ops. linalg.h says how they fit together.
 */
#include "ops/linalg.h"
#include "ir_private.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---------------------------------------------------------------- windows */

HgTaps *
hg_win_taps(const HgWin *w, int axis)
{
    gint64 n = w->grid[axis], d = w->d[axis], k = w->k[axis];
    HgTaps *t = g_new(HgTaps, n + 1);
    for (gint64 g = 0; g < n; g++) {
        gint64 start = g * w->s[axis] - w->pb[axis];
        gint64 lo, hi;
        /* taps j with 0 <= start + j * d < img, and with start + j * d < img + pe */
        hg_win_range(start, d, w->img[axis], k, &lo, &hi);
        t[g].lo = lo;
        t[g].hi = hi;
        gint64 end = w->img[axis] + w->pe[axis] - start;
        t[g].padded = end <= 0 ? 0 : MIN(k, hg_ceil_div(end, d));
    }
    return t;
}

/* ---------------------------------------------------------------- BLAS */

/* OpenBLAS's thread count, set only when it changes (setting it is not free). Asked of OpenBLAS each
 * time rather than cached, since other code may set it too. */
void
hg_blas_threads(int threads)
{
    /* One setting at a time: runs in several threads (hg_run is reentrant) may each ask. (pthread's
     * mutex, which helgrind sees, as in interp.c.) */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (threads > 0 && openblas_get_num_threads() != threads)
        openblas_set_num_threads(threads);
    pthread_mutex_unlock(&lock);
}

/* Row-major GEMM, C = alpha op(A) op(B) + beta C, one per compute type. Callers keep every size
 * within int (hg_blas_fits). K = 0 is handled here: cblas rejects a leading dimension of 0 with a
 * message on stderr. */
gboolean
hg_blas_fits(gint64 a, gint64 b, gint64 c, gint64 d)
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

void
hg_gemm_f32(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, float alpha, const float *a,
         gint64 lda, const float *b, gint64 ldb, float beta, float *c, gint64 ldc)
{
    GEMM_DEGENERATE(float, m, n, k, beta, c, ldc);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
                (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

void
hg_gemm_f64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, double alpha, const double *a,
         gint64 lda, const double *b, gint64 ldb, double beta, double *c, gint64 ldc)
{
    GEMM_DEGENERATE(double, m, n, k, beta, c, ldc);
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
                (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* Integers: unsigned arithmetic wraps without undefined behaviour, and its bits are those of the
 * two's complement result, so int32/int64 products wrap as they do in NumPy. */
void
hg_gemm_i64(gboolean ta, gboolean tb, gint64 m, gint64 n, gint64 k, guint64 alpha, const guint64 *a,
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

/* ---------------------------------------------------------------- a small parallel loop */

/* Work below this many multiply-adds runs on the calling thread: starting threads costs more. */
#define PAR_MIN_MACS ((gint64)1 << 22)

typedef struct {
    HgParTask fn;
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

/* threads <= HG_PAR_MAX_THREADS; n < G_MAXINT. A thread that cannot start leaves its share to the
 * others. */
void
hg_par_for(int threads, gint64 n, HgParTask fn, gpointer data)
{
    ParJob job = {fn, data, n, 0};
    int nt = (int)MIN((gint64)CLAMP(threads, 1, HG_PAR_MAX_THREADS), MAX(n, 1));
    ParWorker ws[HG_PAR_MAX_THREADS];
    GThread *th[HG_PAR_MAX_THREADS] = {NULL};
    for (int t = 0; t < nt; t++)
        ws[t] = (ParWorker){&job, t};
    for (int t = 1; t < nt; t++)
        th[t] = g_thread_try_new("hg-linalg", par_worker, &ws[t], NULL);
    par_worker(&ws[0]);
    for (int t = 1; t < nt; t++)
        if (th[t])
            g_thread_join(th[t]);
}

/* Threads a kernel may use: ctx->threads, or every processor when unset (as OpenBLAS does). */
int
hg_eval_threads(const HgEvalCtx *ctx, gint64 macs)
{
    int t = ctx->threads > 0 ? ctx->threads : (int)g_get_num_processors();
    return macs < PAR_MIN_MACS ? 1 : CLAMP(t, 1, HG_PAR_MAX_THREADS);
}

/* ---------------------------------------------------------------- scratch buffers */

/* Scratch buffers kept from one call to the next, one per slot: buffers this big come from mmap, and
 * unmapping them on every call costs page faults and a TLB shootdown on every core. A slot in use
 * by another caller is skipped; past SCRATCH_KEEP_BYTES a buffer is not kept. */
#define SCRATCH_KEEP_BYTES ((gsize)64 << 20)

static GMutex scratch_lock;
static struct {
    void *p;
    gsize size;
    gboolean busy;
} scratch_pool[HG_PAR_MAX_THREADS];

/* A buffer of at least bytes; *slot is the pool slot to give it back to, or -1 for a buffer of its
 * own. NULL when out of memory. */
void *
hg_scratch_get(gsize bytes, int *slot)
{
    g_mutex_lock(&scratch_lock);
    for (int i = 0; i < HG_PAR_MAX_THREADS && bytes <= SCRATCH_KEEP_BYTES; i++) {
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

void
hg_scratch_put(void *p, int slot)
{
    if (slot < 0) {
        g_free(p);
        return;
    }
    g_mutex_lock(&scratch_lock);
    scratch_pool[slot].busy = FALSE;
    g_mutex_unlock(&scratch_lock);
}

/* ---------------------------------------------------------------- window attributes */

/* An INTS attribute of n values each in [min, G_MAXINT32], or dflt everywhere when absent. */
gboolean
hg_ints_attr(const HgNode *node, const char *name, guint n, gint64 dflt, gint64 min, gint64 *out,
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
        return hg_opset_at_least(opset, 10);
    if (!strcmp(node->op_type, "AveragePool"))
        return hg_opset_at_least(opset, 19);
    return TRUE;
}

gboolean
hg_win_attrs_parse(const HgNode *node, gint64 opset, guint nsp, HgWinAttrs *a, GError **error)
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
    if (!hg_ints_attr(node, "kernel_shape", nsp, 1, 1, a->kernel, &a->has_kernel, error) ||
        !hg_ints_attr(node, "strides", nsp, 1, 1, a->strides, NULL, error) ||
        (dil && !hg_ints_attr(node, "dilations", nsp, 1, 1, a->dilations, NULL, error)) ||
        !hg_ints_attr(node, "pads", 2 * nsp, 0, 0, a->pads, NULL, error))
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
gboolean
hg_win_out_dim(const HgWinAttrs *a, guint i, gint64 in, gint64 kernel, gboolean ceil_mode, gint64 *pb,
            gint64 *pe, gint64 *out)
{
    gint64 s = a->strides[i], ek = (kernel - 1) * a->dilations[i] + 1;
    switch (a->auto_pad) {
    case AUTO_PAD_SAME_UPPER:
    case AUTO_PAD_SAME_LOWER: {
        *out = hg_ceil_div(in, s);
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
    *out = (ceil_mode ? hg_ceil_div(span, s) : span / s) + 1;
    if (ceil_mode && (*out - 1) * s >= in + *pb)
        (*out)--;
    return TRUE;
}

/* True when the window leaves the length of axis i unchanged whatever the input length. */
static gboolean
win_keeps_dim(const HgWinAttrs *a, guint i, gint64 kernel)
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

void
hg_win_fill_axis(HgWin *w, guint nsp, guint i, gint64 img, gint64 grid, gint64 k, const HgWinAttrs *a,
              gint64 pb, gint64 pe)
{
    guint j = HG_WIN_RANK - nsp + i;
    w->img[j] = img;
    w->grid[j] = grid;
    w->k[j] = k;
    w->s[j] = a->strides[i];
    w->d[j] = a->dilations[i];
    w->pb[j] = pb;
    w->pe[j] = pe;
}

void
hg_win_init(HgWin *w)
{
    for (int j = 0; j < HG_WIN_RANK; j++) {
        w->img[j] = w->grid[j] = w->k[j] = w->s[j] = w->d[j] = 1;
        w->pb[j] = w->pe[j] = 0;
    }
}

gint64
hg_win_size(const gint64 *v)
{
    return v[0] * v[1] * v[2];
}

/* ---------------------------------------------------------------- the shape rule of Conv and the pools */

/* Kernel dims of Conv/ConvTranspose: kernel_shape when given (it must agree with W), else W's
 * spatial dims; -1 where unknown. */
gboolean
hg_conv_kernel(const HgNode *node, const HgWinAttrs *a, const HgValueShape *w, gint64 *kernel,
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

int
hg_infer_window_start(HgShapeCtx *ctx, const HgValueShape *x, const HgValueShape *w, gboolean is_pool,
                      HgWinAttrs *a, gint64 *kernel)
{
    if (!x || x->rank < 0)
        return 0;
    if (x->rank < 3) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X has rank %d, expected 3 or more",
                    x->rank);
        return -1;
    }
    if (!hg_win_attrs_parse(ctx->node, ctx->opset, (guint)x->rank - 2, a, ctx->error))
        return -1;
    if (is_pool) {
        if (!a->has_kernel) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "kernel_shape is required");
            return -1;
        }
        memcpy(kernel, a->kernel, sizeof(gint64) * HG_MAX_RANK);
        return 1;
    }
    if (w && w->rank >= 0 && w->rank != x->rank) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "W has rank %d, X has rank %d", w->rank,
                    x->rank);
        return -1;
    }
    return hg_conv_kernel(ctx->node, a, w, kernel, ctx->error) ? 1 : -1;
}

/* Shape rule of Conv and the pools: [N, C_out, spatial...]. */
gboolean
hg_infer_window(HgShapeCtx *ctx, gboolean is_pool, gboolean ceil_ok, HgEvalFunc eval)
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
    HgWinAttrs a;
    gint64 kernel[HG_MAX_RANK];
    int st = hg_infer_window_start(ctx, x, w, is_pool, &a, kernel);
    if (st <= 0)
        return st == 0;
    guint nsp = (guint)x->rank - 2;
    HgSymDim dims[HG_MAX_RANK];
    dims[0] = x->dims[0];
    if (is_pool) {
        dims[1] = x->dims[1];
    } else {
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
            if (!hg_win_out_dim(&a, i, in.v, kernel[i], ceil_mode, &pb, &pe, &o)) {
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

/* ---------------------------------------------------------------- interval rules
 * Linear ops bound each output as a sum of products. With constant weights the bound is exact per
 * output channel (or column): split the channel's weights into their positive sum sp and negative
 * sum sn, then out is in [sp*lo + sn*hi, sp*hi + sn*lo] + bias. Without, each of K terms lies in the
 * product interval. Accumulation rounds: the bounds are widened by an absolute K-term rounding error
 * of the sum of magnitudes (the driver's relative widening cannot cover cancellation). */

/* The product of two intervals. */
void
hg_range_prod(double alo, double ahi, double blo, double bhi, double *lo, double *hi)
{
    double p[4] = {hg_bound_mul(alo, blo), hg_bound_mul(alo, bhi), hg_bound_mul(ahi, blo), hg_bound_mul(ahi, bhi)};
    *lo = *hi = p[0];
    for (int i = 1; i < 4; i++) {
        *lo = MIN(*lo, p[i]);
        *hi = MAX(*hi, p[i]);
    }
}

double
hg_mag(double lo, double hi)
{
    return MAX(fabs(lo), fabs(hi));
}

int
hg_range_out_dtype(const HgRangeCtx *ctx)
{
    const HgValueShape *o = ctx->n_outputs ? ctx->out_shapes[0] : NULL;
    if (o && o->dtype != HG_DTYPE_UNDEFINED)
        return o->dtype;
    return ctx->n_inputs && ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
}

/* Largest value the integer dtype holds exactly (wrapping beyond), or 0 for others. */
double
hg_int_max(int dtype)
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

/* Store the bound [lo, hi] of output 0 (see linalg.h). */
void
hg_range_set_linear(HgRangeCtx *ctx, double lo, double hi, double mag, gint64 k, gboolean nan)
{
    int dtype = hg_range_out_dtype(ctx);
    HgRange *o = ctx->outputs[0];
    if (!o)
        return;
    double imax = hg_int_max(dtype);
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
    if (isnan(lo) || isnan(hi) || isnan(mag)) {
        *o = hg_range_any();
        return;
    }
    const gboolean overflow = !(mag * 1.01 < fmax);
    if (overflow || !isfinite(lo) || !isfinite(hi)) {
        /* an overflowing partial sum becomes inf, and inf - inf NaN */
        o->lo = overflow ? -INFINITY : lo;
        o->hi = overflow ? INFINITY : hi;
        o->tiny = 0;
        o->nan = TRUE;
        return;
    }
    /* A NaN an input may hold (nan) stays a flag beside the bounds: a NaN term makes its sum NaN, so
     * every output that is not NaN summed non-NaN terms, which the finite bounds cover. */
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
    o->nan = nan;
}

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
 * columns at a time (memcpy loads and stores: neither the weights nor the sums need alignment). The
 * sums are added to what sp and sn (and sq) hold: the caller zeroes them, or passes the sums of the
 * rows before these.
 * sq (batch 1 only, or NULL): each column's sum of squares as well, added in row order as
 * hg_weight_col_squares adds them, so the two agree to the bit. */
__attribute__((target_clones("avx2", "default"))) static gboolean
col_sums_f32(const guint8 *p, gint64 batch, gint64 rows, gint64 cols, double *sp, double *sn, double *sq)
{
    const V4d zero = {0}, half = zero + 0.5;
    const V4l magnitude = {G_MAXINT64, G_MAXINT64, G_MAXINT64, G_MAXINT64};
    V4d bad = zero;
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
                if (sq) {
                    V4d q;
                    memcpy(&q, sq + c, sizeof q);
                    V4d xx = x * x;
                    q += xx;
                    memcpy(sq + c, &q, sizeof q);
                }
            }
            for (; c < cols; c++) {
                float f;
                memcpy(&f, row + 4 * c, 4);
                double x = f, px = (x + fabs(x)) * 0.5;
                bp[c] += px;
                bn[c] += x - px;
                bad[0] += x * 0;
                if (sq)
                    sq[c] += x * x;
            }
        }
    }
    return !isnan(bad[0] + bad[1] + bad[2] + bad[3]);
}

/* The fast paths of hg_weight_sums over FP32 weights: the sums, and where the weights map a file and
 * are large, kept with it (hg_weight_prescan's facts) for the next analysis. -1: no fast path for
 * this layout; else ok. */
static int
weight_sums_f32(const HgArray *w, gint64 nvec, HgVecId id, const gint64 *p, double *sp, double *sn)
{
    guint kind;
    gint64 key[3];
    if ((id == hg_vec_conv || id == hg_vec_row) && p[0] > 0 && p[0] * nvec == w->numel) {
        kind = HG_FACT_ROW_SUMS, key[0] = nvec, key[1] = p[0], key[2] = 0;
    } else if (id == hg_vec_matmul_b && p[0] > 0 && p[1] > 0 && w->numel % (p[0] * p[1]) == 0 &&
               nvec == w->numel / p[0]) {
        kind = HG_FACT_COL_SUMS, key[0] = w->numel / (p[0] * p[1]), key[1] = p[0], key[2] = p[1];
    } else if (id == hg_vec_col && p[1] > 0 && nvec == p[1] && w->numel % p[1] == 0) {
        kind = HG_FACT_COL_SUMS, key[0] = 1, key[1] = w->numel / p[1], key[2] = p[1];
    } else {
        return -1;
    }
    gsize bytes = (gsize)w->numel * 4, vb = (gsize)nvec * sizeof(double);
    /* A large weight of one matrix in a mapped file: read once by hg_weight_prescan (if no analysis
     * has yet), which keeps the sums as a fact: sp, sn, then ok. */
    if (w->blob && bytes >= HG_FACT_MIN_BYTES && (kind == HG_FACT_ROW_SUMS || key[0] == 1)) {
        gboolean rows = kind == HG_FACT_ROW_SUMS;
        hg_weight_prescan(w, rows, rows ? nvec : key[1], rows ? p[0] : key[2]);
        g_autofree guint8 *fact = g_malloc(2 * vb + 1);
        if (hg_blob_fact_get(w->blob, w->data, bytes, kind, key, 3, fact, 2 * vb + 1)) {
            memcpy(sp, fact, vb);
            memcpy(sn, fact + vb, vb);
            return fact[2 * vb];
        }
    }
    if (kind == HG_FACT_COL_SUMS)
        for (gint64 v = 0; v < nvec; v++)
            sp[v] = sn[v] = 0;
    gboolean ok = kind == HG_FACT_ROW_SUMS ? row_sums_f32(w->data, nvec, p[0], sp, sn)
                                           : col_sums_f32(w->data, key[0], key[1], key[2], sp, sn, NULL);
    hg_array_release(w);
    return ok;
}

/* sq[j] = the sum of the squares of column j of w, [kk, nn] (tb: [nn, kk], column j is row j), in
 * double, added in row order. The rows are walked in memory order, so a column of a row-major
 * matrix is not read with a stride of nn; each column's sum is still added in the same order, so
 * the sums are the same to the bit. FP32 weights are read where they lie (unaligned views too). */
static void
col_squares(const HgArray *w, gint64 kk, gint64 nn, gboolean tb, double *sq)
{
    const guint8 *p = w->data;
    gboolean f32 = w->dtype == HG_DTYPE_FLOAT;
    for (gint64 j = 0; j < nn; j++)
        sq[j] = 0;
    if (tb) {
        for (gint64 j = 0; j < nn; j++)
            for (gint64 q = 0; q < kk; q++) {
                float f;
                double x = f32 ? (memcpy(&f, p + 4 * (j * kk + q), 4), (double)f) : hg_array_get_f64(w, j * kk + q);
                sq[j] += x * x;
            }
        return;
    }
    for (gint64 q = 0; q < kk; q++) {
        if (f32) {
            const guint8 *row = p + 4 * q * nn;
            for (gint64 j = 0; j < nn; j++) {
                float f;
                memcpy(&f, row + 4 * j, 4);
                sq[j] += (double)f * f;
            }
        } else {
            for (gint64 j = 0; j < nn; j++) {
                double x = hg_array_get_f64(w, q * nn + j);
                sq[j] += x * x;
            }
        }
    }
}

void
hg_weight_prescan(const HgArray *w, gboolean by_rows, gint64 rows, gint64 cols)
{
    gsize bytes = (gsize)w->numel * 4;
    if (w->dtype != HG_DTYPE_FLOAT || !w->blob || bytes < HG_FACT_MIN_BYTES || rows <= 0 || cols <= 0 ||
        rows * cols != w->numel)
        return;
    gint64 key[3] = {by_rows ? rows : 1, by_rows ? cols : rows, by_rows ? 0 : cols};
    guint kind = by_rows ? HG_FACT_ROW_SUMS : HG_FACT_COL_SUMS;
    if (hg_blob_fact_has(w->blob, w->data, bytes, kind, key, 3))
        return; /* read by an earlier analysis */
    gint64 nvec = by_rows ? rows : cols;
    gsize vb = (gsize)nvec * sizeof(double);
    /* a chunk of rows of about 256 KiB: read once, scanned and summed while in cache */
    gint64 step = MAX(1, ((gint64)256 << 10) / (cols * 4));
    g_autofree guint8 *fact = g_malloc(2 * vb + 1);
    double *sp = (double *)(void *)fact, *sn = sp + nvec; /* g_malloc aligns for double */
    g_autofree double *sq = by_rows ? NULL : g_new0(double, cols);
    memset(fact, 0, 2 * vb);
    HgScan scan = {0}, part;
    gboolean ok = TRUE;
    const guint8 *p = w->data;
    for (gint64 r = 0; r < rows; r += step) {
        gint64 n = MIN(step, rows - r);
        const guint8 *chunk = p + 4 * r * cols;
        hg_scan_f32_bytes(chunk, n * cols, r ? &part : &scan);
        if (r)
            hg_scan_merge(&scan, &part);
        if (by_rows)
            ok &= row_sums_f32(chunk, n, cols, sp + r, sn + r);
        else
            ok &= col_sums_f32(chunk, 1, n, cols, sp, sn, sq);
        /* its pages leave the process now, not at the end of the weight (two threads, 64 MiB each) */
        hg_blob_release(w->blob, chunk, (gsize)(n * cols * 4));
    }
    /* What hg_scan_array would say, but for its recount past +-65504: that case is left to it. */
    if (!scan.range.nan && scan.range.lo >= -65504 && scan.range.hi <= 65504)
        hg_blob_fact_put(w->blob, w->data, bytes, HG_FACT_SCAN, NULL, 0, &scan, sizeof scan);
    fact[2 * vb] = (guint8)ok;
    hg_blob_fact_put(w->blob, w->data, bytes, kind, key, 3, fact, 2 * vb + 1);
    if (!by_rows && ok) {
        gint64 qk[3] = {rows, cols, 0};
        hg_blob_fact_put(w->blob, w->data, bytes, HG_FACT_COL_SQUARES, qk, 3, sq, (gsize)cols * sizeof(double));
    }
    hg_array_release(w);
}

void
hg_weight_col_squares(const HgArray *w, gint64 kk, gint64 nn, gboolean tb, double *sq)
{
    gsize bytes = (gsize)w->numel * hg_dtype_size(w->dtype);
    gint64 key[3] = {kk, nn, tb};
    gboolean keep = w->blob && bytes >= HG_FACT_MIN_BYTES;
    if (keep && hg_blob_fact_get(w->blob, w->data, bytes, HG_FACT_COL_SQUARES, key, 3, sq, (gsize)nn * sizeof(double)))
        return;
    col_squares(w, kk, nn, tb, sq);
    if (keep)
        hg_blob_fact_put(w->blob, w->data, bytes, HG_FACT_COL_SQUARES, key, 3, sq, (gsize)nn * sizeof(double));
}

gboolean
hg_weight_sums(const HgArray *w, gint64 nvec, HgVecId id, const gint64 *p, double *sp, double *sn)
{
    if (w->dtype == HG_DTYPE_FLOAT && nvec > 0) {
        int ok = weight_sums_f32(w, nvec, id, p, sp, sn);
        if (ok >= 0)
            return ok;
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
void
hg_weight_bound(gint64 nvec, const double *sp, const double *sn, double xlo, double xhi,
             const HgArray *bias, double blo0, double bhi0, double *lo, double *hi, double *mag)
{
    *lo = INFINITY, *hi = -INFINITY, *mag = 0;
    const double xm = hg_mag(xlo, xhi);
    for (gint64 v = 0; v < nvec; v++) {
        double blo = blo0, bhi = bhi0;
        if (bias) {
            blo = bhi = hg_array_get_f64(bias, v % bias->numel);
        }
        double l = hg_bound_add(hg_bound_add(hg_bound_mul(sp[v], xlo), hg_bound_mul(sn[v], xhi), -INFINITY), blo, -INFINITY);
        double h = hg_bound_add(hg_bound_add(hg_bound_mul(sp[v], xhi), hg_bound_mul(sn[v], xlo), INFINITY), bhi, INFINITY);
        *lo = MIN(*lo, l);
        *hi = MAX(*hi, h);
        *mag = MAX(*mag, hg_bound_mul(sp[v] - sn[v], xm) + hg_mag(blo, bhi));
    }
    if (nvec == 0)
        *lo = *hi = 0;
}

gboolean
hg_range_bad(const HgRange *r)
{
    return !r || r->nan || !hg_range_bounded(r);
}

/* Whether a Conv or pool pads: explicit pads or a SAME auto_pad. */
gboolean
hg_win_pads(const HgNode *node, gint64 *max_pad)
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

gint64
hg_vec_conv(gint64 i, const gint64 *p)
{
    return i / p[0];
}

/* MatMul with constant B: p = {K, N}, vector = batch * N + column. Constant A: vector = row. */
gint64
hg_vec_matmul_b(gint64 i, const gint64 *p)
{
    return (i / (p[0] * p[1])) * p[1] + i % p[1];
}

gint64
hg_vec_row(gint64 i, const gint64 *p)
{
    return i / p[0];
}

gint64
hg_vec_col(gint64 i, const gint64 *p)
{
    return i % p[1];
}
