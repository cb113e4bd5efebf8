/* The index family: Gather, GatherElements, GatherND, ScatterElements, ScatterND and OneHot, with
 * their interval rules.
 *
 * Shared with the other tensor families through tensor.h (plans over symbolic shapes, movers). */
#include "ops/tensor.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

/* ================================================================ Gather, GatherElements, GatherND */

/* Indices as int64 (a view when they already are); *owned says whether to g_free. */
static gint64 *
load_indices(const HgArgs *a, const HgArray *ind, gboolean *owned)
{
    if (hg_dtype_compute(ind->dtype) != HG_COMPUTE_I64 || ind->dtype == HG_DTYPE_BOOL) {
        INVALID(a, "indices of type %s", hg_dtype_name(ind->dtype));
        return NULL;
    }
    return hg_array_load_i64(ind, owned);
}

/* An index along a dim of size n: negative counts from the end; out of range is an error. */
static inline gboolean
norm_index(const HgArgs *a, gint64 *v, gint64 n)
{
    gint64 i = *v < 0 ? *v + n : *v;
    if (i < 0 || i >= n)
        return INVALID(a, "index %" G_GINT64_FORMAT " is out of range for a dim of %" G_GINT64_FORMAT, *v, n);
    *v = i;
    return TRUE;
}

static gboolean
gather_plan(const HgArgs *a, const HgSymShape *x, const HgSymShape *ind, HgSymShape *y, gint64 *axis)
{
    y->rank = -1;
    if (x->rank < 0)
        return TRUE;
    if (!hg_norm_axis(hg_node_attr_int(a->node, "axis", 0), (guint)x->rank, axis, a->node, a->error))
        return FALSE;
    if (ind->rank < 0)
        return TRUE;
    int r = x->rank + ind->rank - 1;
    if (r > HG_MAX_RANK)
        return UNSUPPORTED(a, "rank %d is above %d", r, HG_MAX_RANK);
    y->rank = 0;
    for (int i = 0; i < *axis; i++)
        y->d[y->rank++] = x->d[i];
    for (int i = 0; i < ind->rank; i++)
        y->d[y->rank++] = ind->d[i];
    for (int i = (int)*axis + 1; i < x->rank; i++)
        y->d[y->rank++] = x->d[i];
    return TRUE;
}

gboolean
hg_infer_Gather(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, ind, y;
    gint64 axis;
    hg_arg_shape(&a, 0, &x);
    hg_arg_shape(&a, 1, &ind);
    if (!gather_plan(&a, &x, &ind, &y, &axis))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Gather, HG_FOLD_STRICT);
}

#define GATHER_COPY(T)                                                                             \
    do {                                                                                           \
        T *d_ = (T *)hg_mover_data(out);                                                               \
        const T *s_ = (const T *)hg_mover_data(x);                                                     \
        for (gint64 o = 0; o < outer; o++)                                                         \
            for (gint64 j = 0; j < ni; j++) {                                                      \
                if (inner == 1)                                                                    \
                    d_[o * ni + j] = s_[o * n + idx[j]];                                           \
                else                                                                               \
                    memcpy(d_ + (o * ni + j) * inner, s_ + (o * n + idx[j]) * inner,               \
                           sizeof(T) * (gsize)inner);                                              \
            }                                                                                      \
    } while (0)

gboolean
hg_eval_Gather(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    HgSymShape xs, is, y;
    gint64 axis, dims[HG_MAX_RANK];
    gboolean owned;
    hg_arg_shape(&a, 0, &xs);
    hg_arg_shape(&a, 1, &is);
    if (!gather_plan(&a, &xs, &is, &y, &axis))
        return FALSE;
    gint64 *raw = load_indices(&a, ind, &owned);
    if (!raw)
        return FALSE;
    gint64 n = x->dims[axis], ni = ind->numel;
    g_autofree gint64 *idx = g_new(gint64, ni + 1);
    gboolean ok = TRUE;
    for (gint64 j = 0; j < ni && ok; j++) {
        idx[j] = raw[j];
        ok = norm_index(&a, &idx[j], n);
    }
    if (owned)
        g_free(raw);
    if (!ok)
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    gint64 outer = hg_numel((guint)axis, x->dims), inner = hg_numel(x->rank - (guint)axis - 1, x->dims + axis + 1);
    if (out->numel)
        HG_WIDTH_SWITCH(hg_mover_size(x->dtype), GATHER_COPY);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* GatherElements and ScatterElements: indices (and updates) have the data's rank; along the other
 * axes the index coordinates address the data directly, so they must fit. */
static gboolean
elements_check(const HgArgs *a, const HgArray *x, const HgArray *ind, gint64 *axis)
{
    if (!hg_norm_axis(hg_node_attr_int(a->node, "axis", 0), x->rank, axis, a->node, a->error))
        return FALSE;
    if (ind->rank != x->rank)
        return INVALID(a, "indices have rank %u, data %u", ind->rank, x->rank);
    for (guint k = 0; k < x->rank; k++)
        if ((gint64)k != *axis && ind->dims[k] > x->dims[k])
            return INVALID(a, "indices dim %u is %" G_GINT64_FORMAT ", data has %" G_GINT64_FORMAT, k,
                           ind->dims[k], x->dims[k]);
    return TRUE;
}

/* Flat data offsets addressed by each index of an elements op: its coordinates with axis replaced
 * by the index value. NULL with an error for an index out of range. */
static gint64 *
elements_offsets(const HgArgs *a, const HgArray *x, const HgArray *ind, gint64 axis)
{
    gboolean owned;
    gint64 *raw = load_indices(a, ind, &owned);
    if (!raw)
        return NULL;
    gint64 xs[HG_MAX_RANK], zero[HG_MAX_RANK] = {0}, c[HG_MAX_RANK] = {0}, base = 0, dummy = 0;
    hg_strides(x->rank, x->dims, xs);
    gint64 sa = xs[axis], n = x->dims[axis];
    xs[axis] = 0;
    gint64 *offs = g_new(gint64, ind->numel + 1);
    for (gint64 p = 0; p < ind->numel; p++) {
        gint64 v = raw[p];
        if (!norm_index(a, &v, n)) {
            g_free(offs);
            offs = NULL;
            break;
        }
        offs[p] = base + v * sa;
        hg_odometer_step(ind->rank, ind->dims, xs, zero, c, &base, &dummy);
    }
    if (owned)
        g_free(raw);
    return offs;
}

#define TAKE(T)                                                                                    \
    do {                                                                                           \
        T *d_ = (T *)hg_mover_data(out);                                                               \
        const T *s_ = (const T *)hg_mover_data(x);                                                     \
        for (gint64 p = 0; p < out->numel; p++)                                                    \
            d_[p] = s_[offs[p]];                                                                   \
    } while (0)

gboolean
hg_infer_GatherElements(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, ind;
    hg_arg_shape(&a, 0, &x);
    hg_arg_shape(&a, 1, &ind);
    if (x.rank >= 0 && ind.rank >= 0 && x.rank != ind.rank)
        return INVALID(&a, "indices have rank %d, data %d", ind.rank, x.rank);
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &ind);
    return hg_fold(ctx, hg_eval_GatherElements, HG_FOLD_STRICT);
}

gboolean
hg_eval_GatherElements(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    gint64 axis;
    if (!elements_check(&a, x, ind, &axis))
        return FALSE;
    g_autofree gint64 *offs = elements_offsets(&a, x, ind, axis);
    if (!offs)
        return FALSE;
    HgArray *out = hg_mover_new(&a, x->dtype, ind->rank, ind->dims);
    if (!out)
        return FALSE;
    HG_WIDTH_SWITCH(hg_mover_size(x->dtype), TAKE);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* GatherND: indices [..., k] address slices data[b..., i1, ..., ik, ...] after b batch dims. */
static gboolean
gathernd_plan(const HgArgs *a, const HgSymShape *x, const HgSymShape *ind, HgSymShape *y, gint64 *kp)
{
    gint64 b = hg_node_attr_int(a->node, "batch_dims", 0);
    y->rank = -1;
    if (x->rank < 0 || ind->rank < 0)
        return TRUE;
    if (ind->rank < 1 || b < 0 || b >= MIN(x->rank, ind->rank))
        return INVALID(a, "batch_dims %" G_GINT64_FORMAT " does not fit ranks %d and %d", b, x->rank,
                       ind->rank);
    gint64 k = ind->d[ind->rank - 1].v;
    if (k < 0)
        return TRUE;
    if (k < 1 || k > x->rank - b)
        return INVALID(a, "index tuples of %" G_GINT64_FORMAT " for data of rank %d", k, x->rank);
    int r = ind->rank - 1 + x->rank - (int)b - (int)k;
    if (r > HG_MAX_RANK)
        return UNSUPPORTED(a, "rank %d is above %d", r, HG_MAX_RANK);
    for (int i = 0; i < b; i++)
        if (x->d[i].v >= 0 && ind->d[i].v >= 0 && x->d[i].v != ind->d[i].v)
            return INVALID(a, "batch dim %d differs between data and indices", i);
    y->rank = 0;
    for (int i = 0; i < ind->rank - 1; i++)
        y->d[y->rank++] = ind->d[i];
    for (int i = (int)(b + k); i < x->rank; i++)
        y->d[y->rank++] = x->d[i];
    *kp = k;
    return TRUE;
}

gboolean
hg_infer_GatherND(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, ind, y;
    gint64 k;
    hg_arg_shape(&a, 0, &x);
    hg_arg_shape(&a, 1, &ind);
    if (!gathernd_plan(&a, &x, &ind, &y, &k))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_GatherND, HG_FOLD_STRICT);
}

/* Data offsets (in elements) of the slices that n_tuples index tuples of k coordinates address, in
 * data of the given dims from dim `first` on (each batch is one block of `block` elements). */
static gint64 *
nd_offsets(const HgArgs *a, const gint64 *idx, gint64 n_batches, gint64 per_batch, gint64 k,
           const gint64 *dims, gint64 slice, gint64 block)
{
    gint64 cs[HG_MAX_RANK];
    gint64 s = slice;
    for (gint64 j = k; j-- > 0;) {
        cs[j] = s;
        s *= dims[j];
    }
    gint64 *offs = g_new(gint64, n_batches * per_batch + 1);
    for (gint64 bi = 0; bi < n_batches; bi++) {
        for (gint64 t = 0; t < per_batch; t++) {
            const gint64 *tuple = idx + (bi * per_batch + t) * k;
            gint64 off = bi * block;
            for (gint64 j = 0; j < k; j++) {
                gint64 v = tuple[j];
                if (!norm_index(a, &v, dims[j])) {
                    g_free(offs);
                    return NULL;
                }
                off += v * cs[j];
            }
            offs[bi * per_batch + t] = off;
        }
    }
    return offs;
}

gboolean
hg_eval_GatherND(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    HgSymShape xs, is, y;
    gint64 k = 0, dims[HG_MAX_RANK];
    gboolean owned;
    hg_arg_shape(&a, 0, &xs);
    hg_arg_shape(&a, 1, &is);
    if (!gathernd_plan(&a, &xs, &is, &y, &k))
        return FALSE;
    guint b = (guint)hg_node_attr_int(ctx->node, "batch_dims", 0);
    gint64 *raw = load_indices(&a, ind, &owned);
    if (!raw)
        return FALSE;
    gint64 nb = hg_numel(b, x->dims);
    gint64 per = nb ? ind->numel / k / nb : 0;
    gint64 slice = hg_numel(x->rank - b - (guint)k, x->dims + b + k);
    gint64 block = hg_numel(x->rank - b, x->dims + b);
    g_autofree gint64 *offs = nd_offsets(&a, raw, nb, per, k, x->dims + b, slice, block);
    if (owned)
        g_free(raw);
    if (!offs)
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    gsize es = hg_mover_size(x->dtype);
    char *d = hg_mover_data(out);
    const char *s = hg_mover_data(x);
    for (gint64 t = 0; t < nb * per && slice; t++)
        memcpy(d + (gsize)(t * slice) * es, s + (gsize)offs[t] * es, (gsize)slice * es);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ ScatterElements, ScatterND */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* The reduction attribute: add/mul from opset 16, max/min from 18. */
static int
scatter_reduction(const HgArgs *a)
{
    g_autofree char *r = hg_attr_string(a->node, "reduction", "none");
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < (int)G_N_ELEMENTS(names); i++)
        if (!strcmp(r, names[i]))
            return i;
    UNSUPPORTED(a, "reduction '%s'", r);
    return -1;
}

#define SCATTER_LOOP(T, OP)                                                                        \
    for (gint64 i_ = 0; i_ < n; i_++)                                                              \
        for (gint64 s_ = 0; s_ < slice; s_++) {                                                    \
            T *p_ = &o[offs[i_] + s_];                                                             \
            T v_ = u[i_ * slice + s_];                                                             \
            OP;                                                                                    \
        }

#define SCATTER_FLOAT(T)                                                                           \
    do {                                                                                           \
        switch (red) {                                                                             \
        case RED_ADD: SCATTER_LOOP(T, *p_ += v_); break;                                           \
        case RED_MUL: SCATTER_LOOP(T, *p_ *= v_); break;                                           \
        case RED_MAX: SCATTER_LOOP(T, *p_ = (v_ > *p_ || isnan(v_)) ? v_ : *p_); break;            \
        default: SCATTER_LOOP(T, *p_ = (v_ < *p_ || isnan(v_)) ? v_ : *p_); break;                 \
        }                                                                                          \
    } while (0)

#define SCATTER_RAW(T)                                                                             \
    do {                                                                                           \
        T *o = (T *)hg_mover_data(out);                                                                \
        const T *u = (const T *)hg_mover_data(upd);                                                    \
        SCATTER_LOOP(T, *p_ = v_);                                                                 \
    } while (0)

/* Apply n update slices of `slice` elements at offs into out (a copy of the data). Without a reduction
 * the elements move raw; reductions compute in FP32/FP64/int64 and round once on store. */
static gboolean
scatter_apply(const HgArgs *a, HgArray *out, const HgArray *upd, const gint64 *offs, gint64 n, gint64 slice,
              int red)
{
    if (red == RED_NONE) {
        HG_WIDTH_SWITCH(hg_mover_size(out->dtype), SCATTER_RAW);
        return TRUE;
    }
    /* uint64 computes as int64, as the other integers do */
    HgKind k = hg_kind_of(out->dtype);
    if (k == HG_KIND_COUNT)
        return UNSUPPORTED(a, "reduction on %s", hg_dtype_name(out->dtype));
    if (k == HG_KIND_U64)
        k = HG_KIND_I64;
    HgKBuf ob = hg_kbuf_load(out, k);
    g_auto(HgKBuf) ub = hg_kbuf_load(upd, k);
    if (k == HG_KIND_F32) {
        float *o = ob.p;
        const float *u = ub.p;
        SCATTER_FLOAT(float);
    } else if (k == HG_KIND_F64) {
        double *o = ob.p;
        const double *u = ub.p;
        SCATTER_FLOAT(double);
    } else {
        gint64 *o = ob.p;
        const gint64 *u = ub.p;
        /* through unsigned: wraps like the narrow types instead of overflowing */
        switch (red) {
        case RED_ADD: SCATTER_LOOP(gint64, *p_ = (gint64)((guint64)*p_ + (guint64)v_)); break;
        case RED_MUL: SCATTER_LOOP(gint64, *p_ = (gint64)((guint64)*p_ * (guint64)v_)); break;
        case RED_MAX: SCATTER_LOOP(gint64, *p_ = MAX(*p_, v_)); break;
        default: SCATTER_LOOP(gint64, *p_ = MIN(*p_, v_)); break;
        }
    }
    hg_kbuf_store(out, &ob, k);
    return TRUE;
}

/* The output starts as a copy of the data. */
static HgArray *
scatter_output(const HgArgs *a, const HgArray *x, const HgArray *upd)
{
    if (upd->dtype != x->dtype) {
        INVALID(a, "updates are %s, data %s", hg_dtype_name(upd->dtype), hg_dtype_name(x->dtype));
        return NULL;
    }
    HgArray *out = hg_mover_new(a, x->dtype, x->rank, x->dims);
    if (out && out->numel)
        memcpy(hg_mover_data(out), hg_mover_data(x), (gsize)x->numel * hg_mover_size(x->dtype));
    return out;
}

static gboolean
scatter_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x;
    hg_arg_shape(&a, 0, &x);
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &x);
    return hg_fold(ctx, eval, HG_FOLD_STRICT);
}

gboolean
hg_infer_ScatterElements(HgShapeCtx *ctx)
{
    return scatter_infer(ctx, hg_eval_ScatterElements);
}

gboolean
hg_eval_ScatterElements(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
    gint64 axis;
    int red = scatter_reduction(&a);
    if (red < 0 || !elements_check(&a, x, ind, &axis))
        return FALSE;
    if (upd->rank != ind->rank || memcmp(upd->dims, ind->dims, sizeof(gint64) * ind->rank))
        return INVALID(&a, "updates and indices differ in shape");
    g_autofree gint64 *offs = elements_offsets(&a, x, ind, axis);
    if (!offs)
        return FALSE;
    HgArray *out = scatter_output(&a, x, upd);
    if (!out)
        return FALSE;
    if (!scatter_apply(&a, out, upd, offs, ind->numel, 1, red)) {
        hg_mover_drop(out);
        return FALSE;
    }
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

gboolean
hg_infer_ScatterND(HgShapeCtx *ctx)
{
    return scatter_infer(ctx, hg_eval_ScatterND);
}

gboolean
hg_eval_ScatterND(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
    int red = scatter_reduction(&a);
    gboolean owned;
    if (red < 0)
        return FALSE;
    if (ind->rank < 1)
        return INVALID(&a, "indices must have rank >= 1");
    gint64 k = ind->dims[ind->rank - 1];
    if (k < 1 || k > (gint64)x->rank)
        return INVALID(&a, "index tuples of %" G_GINT64_FORMAT " for data of rank %u", k, x->rank);
    /* updates: indices.shape[:-1] + data.shape[k:] */
    guint ur = ind->rank - 1 + x->rank - (guint)k;
    gboolean ok = upd->rank == ur;
    for (guint i = 0; ok && i < ur; i++)
        ok = upd->dims[i] == (i < ind->rank - 1 ? ind->dims[i] : x->dims[k + i - (ind->rank - 1)]);
    if (!ok)
        return INVALID(&a, "updates do not have shape indices.shape[:-1] + data.shape[k:]");
    gint64 *raw = load_indices(&a, ind, &owned);
    if (!raw)
        return FALSE;
    gint64 n = hg_numel(ind->rank - 1, ind->dims);
    gint64 slice = hg_numel(x->rank - (guint)k, x->dims + k);
    g_autofree gint64 *offs = nd_offsets(&a, raw, 1, n, k, x->dims, slice, 0);
    if (owned)
        g_free(raw);
    if (!offs)
        return FALSE;
    HgArray *out = scatter_output(&a, x, upd);
    if (!out)
        return FALSE;
    if (!scatter_apply(&a, out, upd, offs, n, slice, red)) {
        hg_mover_drop(out);
        return FALSE;
    }
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ OneHot */

/* Depth as a count: a scalar or one-element tensor of any numeric type, a float truncated toward zero
 * (ONNX Runtime reads 3.9 as 3). Below 1 is an error, as in ONNX Runtime ("Depth is negative", 0
 * included). *depth -1 with *sym the name of a symbolic dim, or NULL, when not known. */
static gboolean
onehot_depth(const HgArgs *a, gint64 *depth, const char **sym)
{
    *depth = -1;
    *sym = NULL;
    const HgArray *d = hg_arg_value(a, 1);
    if (!d) {
        /* shape math that inference follows entry by entry: Shape(x)[k] */
        g_autofree gint64 *vals = NULL;
        const char *syms[HG_MAX_RANK];
        guint n;
        guint32 known;
        if (hg_arg_present(a, 1) && hg_arg_ints_partial(a, 1, &vals, &n, &known, syms) && n == 1) {
            if (known & 1u)
                *depth = vals[0] >= 1 ? vals[0] : -1;
            else
                *sym = syms[0];
        }
        return TRUE;
    }
    if (d->numel != 1 || d->strings)
        return INVALID(a, "depth has %" G_GINT64_FORMAT " elements, needs one number", d->numel);
    double v = trunc(hg_array_get_f64(d, 0));
    if (!(v >= 1))
        return INVALID(a, "depth %g, needs at least 1", v);
    if (v > (double)G_MAXINT32 * 1024)
        return UNSUPPORTED(a, "depth %g is too large", v);
    *depth = (gint64)v;
    return TRUE;
}

/* The output's shape: the indices' with a dim of depth inserted at axis (in [-r-1, r], negative
 * counting from the output's rank r + 1). */
static gboolean
onehot_plan(const HgArgs *a, HgSymShape *y, gint64 *axis, gint64 *depth)
{
    HgSymShape ind;
    const char *sym;
    y->rank = -1;
    hg_arg_shape(a, 0, &ind);
    if (!onehot_depth(a, depth, &sym))
        return FALSE;
    if (ind.rank < 0)
        return TRUE;
    if (ind.rank + 1 > HG_MAX_RANK)
        return UNSUPPORTED(a, "rank %d is above %d", ind.rank + 1, HG_MAX_RANK);
    if (!hg_norm_axis(hg_node_attr_int(a->node, "axis", -1), (guint)ind.rank + 1, axis, a->node, a->error))
        return FALSE;
    y->rank = 0;
    for (int i = 0; i < *axis; i++)
        y->d[y->rank++] = ind.d[i];
    y->d[y->rank++] = (HgSymDim){*depth, *depth >= 0 ? NULL : sym};
    for (int i = (int)*axis; i < ind.rank; i++)
        y->d[y->rank++] = ind.d[i];
    return TRUE;
}

gboolean
hg_infer_OneHot(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape y;
    gint64 axis, depth;
    if (!onehot_plan(&a, &y, &axis, &depth))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 2), &y);
    return hg_fold(ctx, hg_eval_OneHot, HG_FOLD_STRICT);
}

/* Where index v puts on_value along the depth axis, or -1 for a row of off_value: negative indices
 * count from the end, those outside [-depth, depth - 1] miss. Every index is compared as a number, as
 * ONNX Runtime (and onnx's reference implementation) compare it: a float index that is not an integer
 * (1.7) matches no position, where ONNX's text says indices are cast to int64 (which would truncate
 * 1.7 to 1); NaN misses. Indices of 2^53 and beyond, rounded in double, stay out of range. */
static inline gint64
onehot_position(double v, gint64 depth)
{
    if (!(v >= -(double)depth && v < (double)depth) || v != floor(v))
        return -1;
    return v < 0 ? (gint64)v + depth : (gint64)v;
}

#define ONEHOT_FILL(T)                                                                             \
    do {                                                                                           \
        T *d_ = (T *)hg_mover_data(out);                                                           \
        T off_, on_;                                                                               \
        memcpy(&off_, (const guint8 *)hg_mover_data(vals), sizeof(T));                             \
        memcpy(&on_, (const guint8 *)hg_mover_data(vals) + sizeof(T), sizeof(T));                  \
        for (gint64 i_ = 0; i_ < out->numel; i_++)                                                 \
            d_[i_] = off_;                                                                         \
        for (gint64 o_ = 0; o_ < outer; o_++)                                                      \
            for (gint64 k_ = 0; k_ < inner; k_++) {                                                \
                gint64 p_ = onehot_position(hg_array_get_f64(ind, o_ * inner + k_), depth);        \
                if (p_ >= 0)                                                                       \
                    d_[(o_ * depth + p_) * inner + k_] = on_;                                      \
            }                                                                                      \
    } while (0)

gboolean
hg_eval_OneHot(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *ind = ctx->inputs[0], *vals = ctx->inputs[2];
    if (hg_dtype_compute(ind->dtype) == HG_COMPUTE_NONE || ind->strings)
        return hg_eval_unsupported(ctx, ind->dtype);
    if (vals->numel != 2)
        return INVALID(&a, "values has %" G_GINT64_FORMAT " elements, needs 2 ([off, on])", vals->numel);
    if (hg_mover_size(vals->dtype) == 0)
        return hg_eval_unsupported(ctx, vals->dtype);
    HgSymShape y;
    gint64 axis, depth, dims[HG_MAX_RANK];
    if (!onehot_plan(&a, &y, &axis, &depth))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, vals->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    /* out[o, p, k] over the indices' dims before the axis (o) and from it (k) */
    gint64 outer = hg_numel((guint)axis, ind->dims), inner = hg_numel(ind->rank - (guint)axis, ind->dims + axis);
    if (out->numel)
        HG_WIDTH_SWITCH(hg_mover_size(vals->dtype), ONEHOT_FILL);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ---------------------------------------------------------------- interval rules */

void
hg_range_Gather(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_GatherElements(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_GatherND(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

/* How many update elements can land on one output element: at most the number of updates (for
 * ScatterElements, the updates' extent along the axis). -1 when unknown. */
static double
scatter_hits(const HgRangeCtx *ctx, gboolean elements)
{
    const HgValueShape *u = ctx->n_inputs > 2 ? ctx->shapes[2] : NULL;
    if (!u || u->rank < 0)
        return -1;
    if (elements) {
        gint64 axis = hg_node_attr_int(ctx->node, "axis", 0);
        if (axis < 0)
            axis += u->rank;
        if (axis >= 0 && axis < u->rank && u->dims[axis].v >= 0)
            return (double)u->dims[axis].v;
    }
    double n = 1;
    for (int i = 0; i < u->rank; i++) {
        if (u->dims[i].v < 0)
            return -1;
        n *= (double)u->dims[i].v;
    }
    return n;
}

static void
scatter_range(HgRangeCtx *ctx, gboolean elements)
{
    const HgRange *x = hg_range_input(ctx, 0), *u = hg_range_input(ctx, 2);
    if (!x || !u || !ctx->n_outputs)
        return;
    HgArgs a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    int red = scatter_reduction(&a);
    int dtype = ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    gboolean is_float = hg_dtype_is_float(dtype);
    HgRange r = hg_range_union(*x, *u);
    double n = scatter_hits(ctx, elements);
    switch (red) {
    case RED_NONE:
    case RED_MAX:
    case RED_MIN:
        /* max(data, updates...) and min(...) stay inside the union */
        break;
    case RED_ADD: {
        if (n < 0)
            return;
        r.lo = x->lo + (u->lo < 0 ? n * u->lo : 0);
        r.hi = x->hi + (u->hi > 0 ? n * u->hi : 0);
        /* n roundings of FP32 partial sums */
        double slack = (MAX(fabs(x->lo), fabs(x->hi)) + n * MAX(fabs(u->lo), fabs(u->hi))) * n * 1.2e-7;
        r.lo -= slack;
        r.hi += slack;
        r.tiny = 0;
        r.nan = x->nan || u->nan || !hg_range_bounded(x) || !hg_range_bounded(u);
        break;
    }
    case RED_MUL: {
        if (n < 0)
            return;
        double m = MAX(fabs(u->lo), fabs(u->hi)), b = MAX(fabs(x->lo), fabs(x->hi)) * pow(MAX(1.0, m), n);
        b *= 1 + n * 1.2e-7; /* n roundings of the product */
        if (isnan(b))
            b = INFINITY;
        gboolean keep_sign = u->lo >= 0;
        r.lo = keep_sign && x->lo >= 0 ? 0 : -b;
        r.hi = keep_sign && x->hi <= 0 ? 0 : b;
        r.tiny = 0;
        r.nan = x->nan || u->nan || !isfinite(b) || b > 3e38;
        break;
    }
    default:
        return;
    }
    /* integer reductions wrap: keep the bound only where no sum or product can leave int32 */
    if (!is_float && red != RED_NONE && red != RED_MAX && red != RED_MIN &&
        !(fabs(r.lo) < 2147483647.0 && fabs(r.hi) < 2147483647.0 &&
          (dtype == HG_DTYPE_INT32 || dtype == HG_DTYPE_INT64)))
        return;
    *ctx->outputs[0] = r;
}

void
hg_range_ScatterElements(HgRangeCtx *ctx)
{
    scatter_range(ctx, TRUE);
}

void
hg_range_ScatterND(HgRangeCtx *ctx)
{
    scatter_range(ctx, FALSE);
}

/* OneHot writes only its two values: their exact hull when values is a constant, else values' range
 * (off_value is always possible, on_value wherever an index hits, so the hull is as narrow as a
 * simple rule gets). Same element type in and out, so no rounding. */
void
hg_range_OneHot(HgRangeCtx *ctx)
{
    const HgRange *v = hg_range_input(ctx, 2);
    const HgArray *c = ctx->n_inputs > 2 ? ctx->values[2] : NULL;
    if (!ctx->n_outputs)
        return;
    if (c && c->numel > 0 && !c->strings)
        *ctx->outputs[0] = hg_range_of_array(c);
    else if (v)
        *ctx->outputs[0] = *v;
}
