/* The conv family: Conv, ConvTranspose and Col2Im, with their interval rules.
 *
 * Conv runs one of three ways (conv_compute). A 1x1, stride-1, unpadded Conv is one GEMM on the
 * input as it lies. With few output channels per group, a direct kernel: vectorized, built for AVX2
 * as well and picked at run time, since im2col + GEMM would re-read each gathered element only that
 * few times. Otherwise im2col + GEMM (OpenBLAS): the input windows are gathered into a column
 * matrix a band of rows at a time, so the buffer stays a few MB whatever the image size, and the
 * bands are spread over threads, each running a single-threaded GEMM. ConvTranspose multiplies the
 * transposed weights by the input and scatters the columns back (col2im), its tasks split by blocks
 * of output channels so that no two write the same output. The typed kernels are conv.inc.
 */
#include "ops/linalg.h"
#include "ops/tensor.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Bytes of im2col/col2im buffer one band may use: big enough for GEMM to run at full speed, small
 * enough to stay in cache. */
#define COL_BAND_BYTES ((gint64)2 << 20)

/* Shapes of one Conv or ConvTranspose. */
typedef struct {
    gint64 n, c, m, group;         /* batch, input channels, output channels, groups */
    HgWin win;                       /* Conv: img = input, grid = output; ConvTranspose: the reverse */
    gint64 img_size, grid_size, kprod;
} ConvPlan;

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

/* The typed kernels: kernel.h's templates, one instance per kind. */
#define HG_TEMPLATE "ops/conv.inc"
#include "ops/instances_float.inc"

/* ================================================================ Conv, ConvTranspose: shapes */

/* ConvTranspose along axis i: output length and begin padding. An explicit output_shape (want >= 0)
 * or SAME auto_pad fixes the length and the padding follows (the ONNX reference's floor division, so
 * a negative total puts the extra at the end); otherwise the pads give the length. */
static gboolean
convt_out_dim(const HgWinAttrs *a, guint i, gint64 in, gint64 kernel, gint64 out_pad, gint64 want,
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
    *pb = a->auto_pad == AUTO_PAD_SAME_UPPER ? hg_floor_div(total, 2) : total - hg_floor_div(total, 2);
    *pe = total - *pb;
    *out = target;
    return target >= 0;
}

/* output_padding and output_shape of ConvTranspose; want[i] = -1 where no output_shape is given.
 * output_shape may also be written with the batch and channel dims in front. */
static gboolean
convt_attrs(const HgNode *node, guint nsp, gint64 *out_pad, gint64 *want, GError **error)
{
    if (!hg_ints_attr(node, "output_padding", nsp, 0, 0, out_pad, NULL, error))
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

gboolean
hg_infer_Conv(HgShapeCtx *ctx)
{
    return hg_infer_window(ctx, FALSE, FALSE, hg_eval_Conv);
}

gboolean
hg_infer_ConvTranspose(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0), *w = hg_shape_input(ctx, 1);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = x ? x->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    HgWinAttrs a;
    gint64 kernel[HG_MAX_RANK], out_pad[HG_MAX_RANK], want[HG_MAX_RANK];
    int st = hg_infer_window_start(ctx, x, w, FALSE, &a, kernel);
    if (st <= 0)
        return st == 0;
    guint nsp = (guint)x->rank - 2;
    if (!convt_attrs(ctx->node, nsp, out_pad, want, ctx->error))
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

static gboolean
is_pointwise(const HgWin *w)
{
    gboolean pw = TRUE;
    for (int j = 0; j < HG_WIN_RANK; j++)
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
conv_run_job(ConvJob *job, int threads, gsize bytes, HgParTask fn)
{
    gint64 ntasks = job->p->n * job->p->group * job->ntasks_ng;
    int workers = ntasks >= threads ? threads : 1;
    hg_blas_threads(workers > 1 ? 1 : threads);
    void *scratch[HG_PAR_MAX_THREADS] = {NULL};
    int slots[HG_PAR_MAX_THREADS];
    gboolean ok = TRUE;
    for (int t = 0; t < workers && ok; t++)
        ok = (scratch[t] = hg_scratch_get(bytes + 64, &slots[t])) != NULL;
    job->scratch = scratch;
    if (ok)
        hg_par_for(workers, ntasks, fn, job);
    for (int t = 0; t < workers; t++)
        if (scratch[t])
            hg_scratch_put(scratch[t], slots[t]);
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
    const HgWin *win = &p->win;
    const gint64 cg = p->c / p->group, mg = p->m / p->group, kdim = cg * p->kprod;
    const HgKind kind = job.kind;
    const gsize es = hg_kind_size(kind);
    int threads = hg_eval_threads(ctx, p->n * p->m * p->grid_size * kdim);
    if (is_pointwise(win)) {
        hg_blas_threads(threads);
        HG_KIND_CALL_FLOAT(kind, conv_pointwise, &job);
        return TRUE;
    }
    if (mg <= DIRECT_MAX_M && win->s[2] == 1 && win->k[0] == 1 && win->img[0] == 1 &&
        win->grid[0] == 1 && win->grid[2] >= 32 / (gint64)es) {
        const gint64 rows = win->grid[1];
        const gint64 nblk = hg_ceil_div(mg, DIRECT_MB), vl = 32 / (gint64)es;
        g_autofree void *wpack = g_try_malloc((gsize)(p->group * nblk * kdim * DIRECT_MB) * es + 8);
        if (!wpack)
            return FALSE;
        HG_KIND_CALL_FLOAT(kind, direct_pack, p, job.w, wpack);
        /* several chunks per thread, so a slow core hands work over */
        job.w = wpack;
        job.band = MAX(1, hg_ceil_div(rows, 8 * threads));
        job.ntasks_ng = hg_ceil_div(rows, job.band);
        gint64 nin = (job.band - 1) * win->s[1] + (win->k[1] - 1) * win->d[1] + 1;
        gint64 iwp = round_up(win->grid[2], 2 * vl) + (win->k[2] - 1) * win->d[2];
        return conv_run_job(&job, MAX(threads, 1), (gsize)(cg * nin * iwp) * es, conv_direct_task);
    }
    const gint64 rows = win->grid[0] * win->grid[1];
    job.band = band_rows(kdim, win->grid[2], rows, es);
    /* enough bands to keep every thread busy */
    if (p->n * p->group * hg_ceil_div(rows, job.band) < 4 * threads)
        job.band = MAX(1, MIN(job.band, hg_ceil_div(rows * p->n * p->group, 4 * threads)));
    job.ntasks_ng = hg_ceil_div(rows, job.band);
    return conv_run_job(&job, threads, (gsize)(kdim * job.band * win->grid[2]) * es, conv_band_task);
}

/* ConvTranspose: tasks are (image, group, block of output channels), so that the col2im scatters of
 * different tasks never touch the same output. */
static gboolean
convt_compute(HgEvalCtx *ctx, ConvJob job)
{
    const ConvPlan *p = job.p;
    const HgWin *win = &p->win;
    const gint64 mg = p->m / p->group;
    const gsize es = hg_kind_size(job.kind);
    int threads = hg_eval_threads(ctx, p->n * p->c * p->grid_size * mg * p->kprod);
    /* a 1x1 ConvTranspose takes the same path: its one band is the whole image, and col2im copies */
    job.ntasks_ng = 1;
    job.mblock = mg;
    if (p->n * p->group < 2 * threads) {
        job.ntasks_ng = MIN(mg, hg_ceil_div(2 * threads, p->n * p->group));
        job.mblock = hg_ceil_div(mg, job.ntasks_ng);
        job.ntasks_ng = hg_ceil_div(mg, job.mblock);
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
    if (*nsp > HG_WIN_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u spatial axes (at most %d)", *nsp,
                    HG_WIN_RANK);
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
conv_kernel_of(HgEvalCtx *ctx, const HgWinAttrs *a, const HgArray *w, gint64 *kernel)
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
    HgWinAttrs a;
    gint64 kernel[HG_MAX_RANK];
    if (!hg_win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error) || !conv_kernel_of(ctx, &a, w, kernel))
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
    hg_win_init(&p.win);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!hg_win_out_dim(&a, i, x->dims[2 + i], kernel[i], FALSE, &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the kernel does not fit in the padded input on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        hg_win_fill_axis(&p.win, nsp, i, x->dims[2 + i], o, kernel[i], &a, pb, pe);
    }
    p.img_size = hg_win_size(p.win.img);
    p.grid_size = hg_win_size(p.win.grid);
    p.kprod = hg_win_size(p.win.k);
    gint64 kdim = p.c / p.group * p.kprod;
    if (!hg_blas_fits(kdim, p.grid_size, p.img_size, p.m)) {
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
    HgWinAttrs a;
    gint64 kernel[HG_MAX_RANK], out_pad[HG_MAX_RANK], want[HG_MAX_RANK];
    if (!hg_win_attrs_parse(ctx->node, ctx->opset, nsp, &a, ctx->error) ||
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
    hg_win_init(&p.win);
    for (guint i = 0; i < nsp; i++) {
        gint64 pb, pe, o;
        if (!convt_out_dim(&a, i, x->dims[2 + i], kernel[i], out_pad[i], want[i], &pb, &pe, &o)) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "the pads exceed the output on spatial axis %u", i);
            return FALSE;
        }
        ydims[2 + i] = o;
        /* the output is the image the window writes, the input the grid of positions */
        hg_win_fill_axis(&p.win, nsp, i, o, x->dims[2 + i], kernel[i], &a, pb, pe);
    }
    p.img_size = hg_win_size(p.win.img);
    p.grid_size = hg_win_size(p.win.grid);
    p.kprod = hg_win_size(p.win.k);
    gint64 kcol = p.m / p.group * p.kprod;
    if (!hg_blas_fits(kcol, p.grid_size, p.img_size, p.c)) {
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

/* ---------------------------------------------------------------- interval rules */

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
    if (transpose || hg_win_pads(ctx->node, &max_pad)) {
        xlo = MIN(xlo, 0);
        xhi = MAX(xhi, 0);
    }
    gint64 group = hg_node_attr_int(ctx->node, "group", 1);
    gint64 k = w_tail_numel(ws); /* taps per output (Conv) or per input (ConvTranspose) */
    if (group < 1 || k < 0)
        return;
    gboolean nan = x->nan || hg_range_bad(w) || (b && hg_range_bad(b)) || !hg_range_bounded(x);
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
        HgVecId id;
        if (!transpose) {
            nvec = ws->dims[0].v;
            p[0] = nvec ? wv->numel / nvec : 1;
            id = hg_vec_conv;
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
        if (!hg_weight_sums(wv, nvec, id, p, sp, sn))
            return;
        hg_weight_bound(nvec, sp, sn, xlo, xhi, bv, b ? b->lo : 0, b ? b->hi : 0, &lo, &hi, &mag);
    } else {
        double plo, phi;
        hg_range_prod(xlo, xhi, w->lo, w->hi, &plo, &phi);
        /* k terms, any of which may be missing (0) for ConvTranspose */
        if (transpose)
            plo = MIN(plo, 0), phi = MAX(phi, 0);
        double blo = b ? b->lo : 0, bhi = b ? b->hi : 0;
        lo = hg_bound_add(hg_bound_mul((double)k, plo), blo, -INFINITY);
        hi = hg_bound_add(hg_bound_mul((double)k, phi), bhi, INFINITY);
        mag = hg_bound_mul((double)k, hg_mag(plo, phi)) + hg_mag(blo, bhi);
    }
    hg_range_set_linear(ctx, lo, hi, mag, k, nan);
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

/* ================================================================ Col2Im */

/* Col2Im (opset 18; torch.nn.functional.fold): input [N, C * K, L] with K = prod(block_shape) and L
 * the number of blocks, image_shape and block_shape int64 inputs of one entry per spatial axis,
 * attributes dilations, pads ([x1_begin, x2_begin, ..., x1_end, ...]) and strides. Output [N, C,
 * image_shape...]: for kernel index k (row-major over block_shape) and block l (row-major over the
 * blocks along each axis, n_d = (image_d + pb_d + pe_d - dil_d * (block_d - 1) - 1) / s_d + 1 of
 * them), input[n, c * K + k, l] is added at position b_d * s_d - pb_d + k_d * dil_d along each axis
 * where that falls inside the image (the adjoint of Im2Col: overlapping blocks sum). One plan serves
 * shape inference, the kernel and the interval rule. */
typedef struct {
    guint nsp;
    gint64 image[HG_MAX_RANK], block[HG_MAX_RANK], nblk[HG_MAX_RANK];
    gint64 s[HG_MAX_RANK], d[HG_MAX_RANK], pb[HG_MAX_RANK], pe[HG_MAX_RANK];
    gint64 kprod, lprod; /* -1 until known */
} Col2ImPlan;

/* The attributes for nsp axes: strides and dilations >= 1, pads >= 0 (hg_ints_attr caps each at
 * G_MAXINT32). */
static gboolean
col2im_attrs(const HgArgs *a, guint nsp, Col2ImPlan *p)
{
    gint64 pads[2 * HG_MAX_RANK];
    if (!hg_ints_attr(a->node, "strides", nsp, 1, 1, p->s, NULL, a->error) ||
        !hg_ints_attr(a->node, "dilations", nsp, 1, 1, p->d, NULL, a->error) ||
        !hg_ints_attr(a->node, "pads", 2 * nsp, 0, 0, pads, NULL, a->error))
        return FALSE;
    for (guint i = 0; i < nsp; i++) {
        p->pb[i] = pads[i];
        p->pe[i] = pads[nsp + i];
    }
    return TRUE;
}

/* A known 1-D list of spatial sizes (image_shape or block_shape): 1 to HG_MAX_RANK - 2 entries, each
 * in [1, G_MAXINT32]. */
static gboolean
col2im_sizes(const HgArgs *a, const char *what, const gint64 *v, guint n)
{
    if (n < 1 || n > HG_MAX_RANK - 2)
        return INVALID(a, "%s has %u entries (1 to %d spatial axes)", what, n, HG_MAX_RANK - 2);
    for (guint i = 0; i < n; i++)
        if (v[i] < 1 || v[i] > G_MAXINT32)
            return INVALID(a, "%s[%u] = %" G_GINT64_FORMAT " is out of range", what, i, v[i]);
    return TRUE;
}

static int
col2im_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y, Col2ImPlan *p)
{
    g_autofree gint64 *img = NULL, *blk = NULL;
    guint ni = 0, nb = 0;
    memset(p, 0, sizeof(*p));
    p->kprod = p->lprod = -1;
    HgPState pi = hg_arg_ints(a, 1, NULL, &img, &ni);
    HgPState pk = hg_arg_ints(a, 2, NULL, &blk, &nb);
    y->rank = -1;
    if (pi == P_ABSENT || pk == P_ABSENT) {
        INVALID(a, "needs the image_shape and block_shape inputs");
        return PLAN_ERR;
    }
    if (x->rank >= 0 && x->rank != 3) {
        INVALID(a, "input has rank %d, expected 3 ([N, C * prod(block_shape), L])", x->rank);
        return PLAN_ERR;
    }
    if ((pi == P_KNOWN && !col2im_sizes(a, "image_shape", img, ni)) ||
        (pk == P_KNOWN && !col2im_sizes(a, "block_shape", blk, nb)))
        return PLAN_ERR;
    if (pi == P_KNOWN && pk == P_KNOWN && ni != nb) {
        INVALID(a, "image_shape has %u entries, block_shape %u", ni, nb);
        return PLAN_ERR;
    }
    /* The output's rank: 2 + the spatial axes, from whichever list is known, else from the length
     * of image_shape when only that is known. */
    if (pi == P_KNOWN || pk == P_KNOWN) {
        p->nsp = pi == P_KNOWN ? ni : nb;
        hg_sym_unknown_dims(y, (int)p->nsp + 2);
        if (!col2im_attrs(a, p->nsp, p))
            return PLAN_ERR;
    } else {
        hg_sym_rank_from_param(a, 1, 2, y);
        if (y->rank < 3)
            return PLAN_UNKNOWN;
        p->nsp = (guint)y->rank - 2;
    }
    if (x->rank == 3)
        y->d[0] = x->d[0];
    if (pk == P_KNOWN) {
        p->kprod = 1;
        for (guint i = 0; i < nb; i++) {
            p->block[i] = blk[i];
            p->kprod *= blk[i];
            if (p->kprod > G_MAXINT32) {
                INVALID(a, "prod(block_shape) is too large");
                return PLAN_ERR;
            }
        }
        if (x->rank == 3 && x->d[1].v >= 0) {
            if (x->d[1].v % p->kprod) {
                INVALID(a, "input dim 1 (%" G_GINT64_FORMAT ") is not a multiple of prod(block_shape) (%"
                        G_GINT64_FORMAT ")", x->d[1].v, p->kprod);
                return PLAN_ERR;
            }
            y->d[1] = hg_dim_known(x->d[1].v / p->kprod);
        } else if (x->rank == 3 && p->kprod == 1) {
            y->d[1] = x->d[1];
        }
    }
    if (pi == P_KNOWN) {
        for (guint i = 0; i < ni; i++) {
            p->image[i] = img[i];
            y->d[2 + i] = hg_dim_known(img[i]);
        }
    } else {
        /* image_shape known in part (shape math): the entries known are the output's dims */
        guint32 known;
        const char *syms[HG_MAX_RANK] = {NULL};
        g_autofree gint64 *part = NULL;
        guint np;
        if (hg_arg_ints_partial(a, 1, &part, &np, &known, syms) && np == p->nsp)
            for (guint i = 0; i < np; i++) {
                if (known >> i & 1 && part[i] >= 1)
                    y->d[2 + i] = hg_dim_known(part[i]);
                else if (!(known >> i & 1) && syms[i])
                    y->d[2 + i] = (HgSymDim){-1, syms[i]};
            }
    }
    if (pi != P_KNOWN || pk != P_KNOWN)
        return PLAN_UNKNOWN;
    /* The blocks along each axis; L must be their product. */
    p->lprod = 1;
    for (guint i = 0; i < p->nsp; i++) {
        gint64 span = p->image[i] + p->pb[i] + p->pe[i] - p->d[i] * (p->block[i] - 1) - 1;
        if (span < 0) {
            INVALID(a, "block_shape[%u] = %" G_GINT64_FORMAT " (dilation %" G_GINT64_FORMAT
                    ") does not fit in the padded image of %" G_GINT64_FORMAT, i, p->block[i], p->d[i],
                    p->image[i] + p->pb[i] + p->pe[i]);
            return PLAN_ERR;
        }
        p->nblk[i] = span / p->s[i] + 1;
        if (p->nblk[i] > G_MAXINT32 / MAX(p->lprod, 1)) {
            INVALID(a, "too many blocks");
            return PLAN_ERR;
        }
        p->lprod *= p->nblk[i];
    }
    if (x->rank == 3 && x->d[2].v >= 0 && x->d[2].v != p->lprod) {
        GString *b = g_string_new(NULL);
        for (guint i = 0; i < p->nsp; i++)
            g_string_append_printf(b, "%s%" G_GINT64_FORMAT, i ? " x " : "", p->nblk[i]);
        INVALID(a, "input dim 2 (L = %" G_GINT64_FORMAT ") is not the number of blocks, %s = %" G_GINT64_FORMAT,
                x->d[2].v, b->str, p->lprod);
        g_string_free(b, TRUE);
        return PLAN_ERR;
    }
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Col2Im(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    Col2ImPlan p;
    hg_arg_shape(&a, 0, &x);
    if (col2im_plan(&a, &x, &y, &p) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Col2Im, HG_FOLD_SMALL_INPUTS);
}

/* FP64 sums rounded once into the output's type (float, float16, bfloat16, double): each output
 * element sums at most a few terms (see the interval rule), so the order does not matter beyond
 * that one rounding. */
gboolean
hg_eval_Col2Im(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    if (!hg_dtype_is_float(x->dtype) || hg_kind_of(x->dtype) == HG_KIND_COUNT)
        return hg_eval_unsupported(ctx, x->dtype);
    HgSymShape xs, ys;
    Col2ImPlan p;
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, col2im_plan(&a, &xs, &ys, &p)))
        return FALSE;
    gint64 dims[HG_MAX_RANK];
    hg_sym_dims(&ys, dims);
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, (guint)ys.rank, dims);
    if (!y)
        return FALSE;
    gint64 img = 1;
    for (guint i = 0; i < p.nsp; i++)
        img *= p.image[i];
    gint64 planes = dims[0] * dims[1], K = p.kprod, L = p.lprod;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, HG_KIND_F64);
    g_autofree double *acc = g_try_new0(double, MAX(planes * img, 1));
    if ((x->numel && !xb.p) || !acc)
        return hg_eval_oom(ctx);
    const double *xd = xb.p;
    for (gint64 pl = 0; pl < planes; pl++) {
        double *out = acc + pl * img;
        gint64 kidx[HG_MAX_RANK] = {0};
        for (gint64 k = 0; k < K; k++) {
            const double *row = xd + (pl * K + k) * L;
            gint64 bidx[HG_MAX_RANK] = {0};
            for (gint64 l = 0; l < L; l++) {
                gint64 off = 0;
                guint i = 0;
                for (; i < p.nsp; i++) {
                    gint64 pos = bidx[i] * p.s[i] - p.pb[i] + kidx[i] * p.d[i];
                    if (pos < 0 || pos >= p.image[i])
                        break;
                    off = off * p.image[i] + pos;
                }
                if (i == p.nsp)
                    out[off] += row[l];
                for (guint j = p.nsp; j-- > 0;) {
                    if (++bidx[j] < p.nblk[j])
                        break;
                    bidx[j] = 0;
                }
            }
            for (guint j = p.nsp; j-- > 0;) {
                if (++kidx[j] < p.block[j])
                    break;
                kidx[j] = 0;
            }
        }
    }
    hg_store_f64_once(y, acc);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

/* One add per input element. */
gint64
hg_cost_Col2Im(const HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    return x ? hg_vshape_numel(x) : -1;
}

static gint64
gcd64(gint64 a, gint64 b)
{
    while (b) {
        gint64 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* How many terms reach one output position along axis i: *lo the fewest and *hi the most over the
 * positions. A term (k, b) lands at p = b * s - pb + k * dil. For a fixed p, k * dil = p + pb - b * s,
 * so k * dil is congruent to p + pb modulo s: with g = gcd(s, dil) the solutions k form one residue
 * class modulo s / g (or none), which holds at most ceil(block / (s / g)) of the block's indices
 * [0, block); and two terms with the same b land at different p (dil >= 1), so at most n_blocks as
 * well. That is the bound when the image is not known (*lo 0: some position may get nothing). When
 * it is, the positions are counted one by one (block times image steps, while that stays small). */
static void
col2im_axis_counts(const Col2ImPlan *p, guint i, gboolean image_known, gint64 *lo, gint64 *hi)
{
    gint64 s = p->s[i], dil = p->d[i], blk = p->block[i];
    gint64 per = s / gcd64(s, dil);
    *lo = 0;
    *hi = (blk + per - 1) / per;
    if (!image_known)
        return;
    *hi = MIN(*hi, p->nblk[i]);
    if (p->image[i] * blk > (gint64)1 << 24)
        return;
    gint64 cmin = G_MAXINT64, cmax = 0;
    for (gint64 pos = 0; pos < p->image[i]; pos++) {
        gint64 c = 0;
        for (gint64 k = 0; k < blk; k++) {
            gint64 t = pos + p->pb[i] - k * dil; /* = b * s */
            c += t >= 0 && t % s == 0 && t / s < p->nblk[i];
        }
        cmin = MIN(cmin, c);
        cmax = MAX(cmax, c);
    }
    *lo = cmin;
    *hi = cmax;
}

/* Each output element sums m of input 0's elements (each one of them at most once), with m between
 * the products over the axes of the fewest and the most terms per position (col2im_axis_counts: the
 * terms reaching a position are the product of those reaching its coordinate along each axis), so
 * it lies in [min(m_lo * lo, M * lo), max(m_lo * hi, M * hi)]: a sum of m values in [lo, hi] lies in
 * [m * lo, m * hi], and both ends are monotone in m. With M <= 1 every output is an element of the
 * input or 0 (an element when m_lo = 1), stored unchanged; with more, the sums round like a linear
 * op's (hg_range_set_linear: inf - inf may make NaN, an FP32 partial sum past FLT_MAX inf). Without
 * block_shape nothing is known. */
void
hg_range_Col2Im(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *o = ctx->n_outputs ? ctx->outputs[0] : NULL;
    if (!x || !o)
        return;
    HgValueShape *shapes = NULL;
    HgArgs a = hg_args_range(ctx, &shapes);
    GError *err = NULL;
    a.error = &err;
    HgSymShape xs, ys;
    Col2ImPlan p;
    hg_arg_shape(&a, 0, &xs);
    int st = col2im_plan(&a, &xs, &ys, &p);
    hg_args_range_free(&a, shapes);
    g_clear_error(&err);
    if (st == PLAN_ERR || p.kprod < 0)
        return;
    gboolean image_known = p.lprod >= 0;
    gint64 mlo = 1, mhi = 1;
    for (guint i = 0; i < p.nsp; i++) {
        gint64 lo, hi;
        col2im_axis_counts(&p, i, image_known, &lo, &hi);
        mlo *= lo;
        mhi *= hi; /* <= prod(block_shape) <= G_MAXINT32 */
    }
    if (mhi <= 1) {
        HgRange r = mhi == 0 ? hg_range_exact(0, 0) : mlo >= 1 ? *x : hg_range_with(*x, 0);
        *o = hg_range_fit(r, hg_range_out_dtype(ctx));
        return;
    }
    double lo = MIN(hg_bound_mul((double)mlo, x->lo), hg_bound_mul((double)mhi, x->lo));
    double hi = MAX(hg_bound_mul((double)mlo, x->hi), hg_bound_mul((double)mhi, x->hi));
    double mag = hg_bound_mul((double)mhi, hg_mag(x->lo, x->hi));
    hg_range_set_linear(ctx, lo, hi, mag, mhi, x->nan);
}
