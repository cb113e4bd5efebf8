/* The movement family: data movement (Transpose, Concat, Split, Slice, Expand, Tile, Pad,
 * DepthToSpace, SpaceToDepth, Trilu), with its interval rules.
 *
 * Shared with the other tensor families through tensor.h (plans over symbolic shapes, movers). */
#include "ops/tensor.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

/* ================================================================ Transpose */

/* perm: the attribute, reversed dims by default; it must be a permutation of the rank. */
static gboolean
transpose_perm(const HgArgs *a, int rank, gint64 *perm)
{
    guint n;
    const gint64 *p = hg_attr_ints(a->node, "perm", &n);
    if (!hg_node_attr(a->node, "perm")) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return TRUE;
    }
    if ((int)n != rank)
        return INVALID(a, "perm has %u entries for rank %d", n, rank);
    memcpy(perm, p, sizeof(gint64) * n);
    return hg_arg_norm_axes(a, perm, n, (guint)rank);
}

gboolean
hg_infer_Transpose(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    gint64 perm[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &x);
    y.rank = x.rank;
    if (x.rank >= 0) {
        if (!transpose_perm(&a, x.rank, perm))
            return FALSE;
        for (int i = 0; i < x.rank; i++)
            y.d[i] = x.d[perm[i]];
    }
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Transpose, HG_FOLD_STRICT);
}

gboolean
hg_eval_Transpose(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    gint64 perm[HG_MAX_RANK], st[HG_MAX_RANK], dims[HG_MAX_RANK];
    if (!transpose_perm(&a, (int)x->rank, perm))
        return FALSE;
    hg_strides(x->rank, x->dims, st);
    for (guint i = 0; i < x->rank; i++)
        dims[i] = x->dims[perm[i]];
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    HgBox b = {x->rank, {0}, {0}, {0}};
    hg_strides(x->rank, dims, b.ds);
    for (guint i = 0; i < x->rank; i++) {
        b.dims[i] = dims[i];
        b.ss[i] = st[perm[i]];
    }
    hg_box_copy(hg_mover_data(out), hg_mover_data(x), &b, hg_mover_size(x->dtype));
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ Concat, Split */

gboolean
hg_infer_Concat(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape y = {-1, {{0, NULL}}};
    int dtype = HG_DTYPE_UNDEFINED;
    gint64 axis = hg_node_attr_int(ctx->node, "axis", 0);
    for (guint i = 0; i < ctx->n_inputs; i++) {
        HgSymShape x;
        hg_arg_shape(&a, i, &x);
        if (dtype == HG_DTYPE_UNDEFINED)
            dtype = hg_arg_dtype(&a, i);
        if (x.rank < 0)
            continue;
        if (y.rank < 0) {
            y = x;
            if (!hg_norm_axis(axis, (guint)x.rank, &axis, ctx->node, ctx->error))
                return FALSE;
            continue;
        }
        if (x.rank != y.rank)
            return INVALID(&a, "inputs have ranks %d and %d", y.rank, x.rank);
        for (int k = 0; k < x.rank; k++) {
            if (k == axis) {
                y.d[k] = y.d[k].v >= 0 && x.d[k].v >= 0 ? hg_dim_known(y.d[k].v + x.d[k].v) : hg_dim_unknown();
            } else if (y.d[k].v < 0 && x.d[k].v >= 0) {
                y.d[k] = x.d[k];
            } else if (y.d[k].v >= 0 && x.d[k].v >= 0 && y.d[k].v != x.d[k].v) {
                return INVALID(&a, "input %u has dim %d = %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT,
                               i, k, x.d[k].v, y.d[k].v);
            }
        }
    }
    /* The concatenated axis is known only if every input's was. */
    for (guint i = 0; i < ctx->n_inputs && y.rank >= 0; i++) {
        HgSymShape x;
        hg_arg_shape(&a, i, &x);
        if (x.rank < 0)
            y.d[axis] = hg_dim_unknown();
    }
    hg_vshape_set_sym(hg_shape_output(ctx, 0), dtype, &y);
    return hg_fold(ctx, hg_eval_Concat, HG_FOLD_STRICT);
}

gboolean
hg_eval_Concat(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x0 = ctx->inputs[0];
    gint64 axis, dims[HG_MAX_RANK];
    if (!hg_norm_axis(hg_node_attr_int(ctx->node, "axis", 0), x0->rank, &axis, ctx->node, ctx->error))
        return FALSE;
    memcpy(dims, x0->dims, sizeof(gint64) * x0->rank);
    dims[axis] = 0;
    for (guint i = 0; i < ctx->n_inputs; i++) {
        const HgArray *x = ctx->inputs[i];
        if (!x)
            return INVALID(&a, "input %u is missing", i);
        if (x->rank != x0->rank || x->dtype != x0->dtype)
            return INVALID(&a, "input %u differs in rank or type from input 0", i);
        for (guint k = 0; k < x->rank; k++)
            if ((gint64)k != axis && x->dims[k] != x0->dims[k])
                return INVALID(&a, "input %u has dim %u = %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT,
                               i, k, x->dims[k], x0->dims[k]);
        dims[axis] += x->dims[axis];
    }
    HgArray *out = hg_mover_new(&a, x0->dtype, x0->rank, dims);
    if (!out)
        return FALSE;
    gsize es = hg_mover_size(x0->dtype);
    gint64 outer = hg_numel((guint)axis, dims), inner = hg_numel(x0->rank - (guint)axis - 1, dims + axis + 1);
    gint64 out_row = dims[axis] * inner, off = 0;
    char *d = hg_mover_data(out);
    for (guint i = 0; i < ctx->n_inputs; i++) {
        const HgArray *x = ctx->inputs[i];
        const char *s = hg_mover_data(x);
        gint64 row = x->dims[axis] * inner;
        if (row)
            for (gint64 o = 0; o < outer; o++)
                memcpy(d + (gsize)(o * out_row + off) * es, s + (gsize)(o * row) * es, (gsize)row * es);
        off += row;
    }
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* Split sizes along axis: the split input (13+) or attribute (before 13), else num_outputs (18) chunks
 * of ceil(D / n) with a smaller last one, else equal parts for the outputs there are. */
static int
split_plan(const HgArgs *a, const HgSymShape *x, guint n_out, gint64 *axis, gint64 *sizes)
{
    g_autofree gint64 *split = NULL;
    guint n;
    if (n_out == 0) {
        INVALID(a, "no outputs");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (!hg_norm_axis(hg_node_attr_int(a->node, "axis", 0), (guint)x->rank, axis, a->node, a->error))
        return PLAN_ERR;
    gint64 dim = x->d[*axis].v;
    HgPState ps = hg_arg_ints(a, 1, "split", &split, &n);
    if (ps == P_UNKNOWN)
        return PLAN_UNKNOWN;
    if (ps == P_KNOWN && n > 0) {
        gint64 sum = 0;
        if (n != n_out) {
            INVALID(a, "split has %u entries for %u outputs", n, n_out);
            return PLAN_ERR;
        }
        for (guint i = 0; i < n; i++) {
            if (split[i] < 0 || split[i] > G_MAXINT64 - sum) {
                INVALID(a, "split[%u] is %" G_GINT64_FORMAT, i, split[i]);
                return PLAN_ERR;
            }
            sizes[i] = split[i];
            sum += split[i];
        }
        if (dim >= 0 && sum != dim) {
            INVALID(a, "split sums to %" G_GINT64_FORMAT ", the axis has %" G_GINT64_FORMAT, sum, dim);
            return PLAN_ERR;
        }
        return PLAN_OK;
    }
    gint64 parts = hg_node_attr_int(a->node, "num_outputs", n_out);
    if (parts != (gint64)n_out) {
        INVALID(a, "num_outputs is %" G_GINT64_FORMAT " for %u outputs", parts, n_out);
        return PLAN_ERR;
    }
    if (dim < 0)
        return PLAN_UNKNOWN;
    gint64 chunk = dim / parts + (dim % parts != 0);
    for (guint i = 0; i < n_out; i++)
        sizes[i] = CLAMP(dim - (gint64)i * chunk, 0, chunk);
    return PLAN_OK;
}

gboolean
hg_infer_Split(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x;
    gint64 axis = 0;
    g_autofree gint64 *sizes = g_new0(gint64, ctx->n_outputs + 1);
    hg_arg_shape(&a, 0, &x);
    int st = split_plan(&a, &x, ctx->n_outputs, &axis, sizes);
    if (st == PLAN_ERR)
        return FALSE;
    for (guint k = 0; k < ctx->n_outputs; k++) {
        HgSymShape y = x;
        if (x.rank >= 0)
            y.d[axis] = st == PLAN_OK ? hg_dim_known(sizes[k]) : hg_dim_unknown();
        hg_vshape_set_sym(hg_shape_output(ctx, k), hg_arg_dtype(&a, 0), &y);
    }
    return hg_fold(ctx, hg_eval_Split, HG_FOLD_STRICT);
}

gboolean
hg_eval_Split(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs;
    gint64 axis = 0;
    g_autofree gint64 *sizes = g_new0(gint64, ctx->n_outputs + 1);
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, split_plan(&a, &xs, ctx->n_outputs, &axis, sizes)))
        return FALSE;
    gsize es = hg_mover_size(x->dtype);
    gint64 outer = hg_numel((guint)axis, x->dims), inner = hg_numel(x->rank - (guint)axis - 1, x->dims + axis + 1);
    gint64 in_row = x->dims[axis] * inner, off = 0;
    const char *s = hg_mover_data(x);
    for (guint k = 0; k < ctx->n_outputs; k++) {
        gint64 dims[HG_MAX_RANK];
        memcpy(dims, x->dims, sizeof(gint64) * x->rank);
        dims[axis] = sizes[k];
        HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
        if (!out) {
            for (guint j = 0; j < k; j++)
                g_clear_pointer(&ctx->outputs[j], hg_array_unref);
            return FALSE;
        }
        char *d = hg_mover_data(out);
        gint64 row = sizes[k] * inner;
        if (row)
            for (gint64 o = 0; o < outer; o++)
                memcpy(d + (gsize)(o * row) * es, s + (gsize)(o * in_row + off) * es, (gsize)row * es);
        off += row;
        ctx->outputs[k] = hg_mover_done(out);
    }
    return TRUE;
}

/* ================================================================ Slice */

/* Ends known only in part (shape inference's HgPartial), the rest known: x[0:S] along an axis of
 * static length c is min(S, c) (hg_dim_min) and along an axis named S is that axis; an end known by
 * value on a static axis gives its count; anything else an unknown dim. FALSE (y untouched) when the
 * ends are not known even in part or disagree with the starts in length. */
static gboolean
slice_named_ends(const HgArgs *a, const HgSymShape *x, HgSymShape *y, const gint64 *starts, guint ns,
                 const gint64 *axes, guint na, const gint64 *steps, guint nt)
{
    g_autofree gint64 *ends = NULL;
    guint ne;
    guint32 known;
    const char *syms[HG_MAX_RANK] = {NULL};
    if (!hg_arg_ints_partial(a, 2, &ends, &ne, &known, syms) || ne != ns || ns > (guint)x->rank ||
        (axes && na != ns) || (steps && nt != ns))
        return FALSE;
    HgSymShape out = *x;
    for (guint i = 0; i < ns; i++) {
        gint64 ax = axes ? axes[i] : (gint64)i;
        if (ax < 0)
            ax += x->rank;
        if (ax < 0 || ax >= x->rank)
            return FALSE;
        HgSymDim d = x->d[ax];
        gint64 st = steps ? steps[i] : 1, s = starts[i];
        if (!(known >> i & 1)) {
            const char *sym = syms[i];
            if (st != 1 || s != 0 || !sym)
                out.d[ax] = hg_dim_unknown();
            else if (d.v >= 0)
                out.d[ax] = d.v ? hg_dim_min((HgSymDim){-1, sym}, d.v) : d;
            else
                out.d[ax] = hg_sym_broadcast(d.sym, sym) == sym ? d : hg_dim_unknown();
            continue;
        }
        gint64 e = ends[i];
        if (d.v < 0 || st != 1) {
            out.d[ax] = hg_dim_unknown();
            continue;
        }
        if (s < 0)
            s += d.v;
        if (e < 0)
            e += d.v;
        s = CLAMP(s, 0, d.v);
        e = CLAMP(e, 0, d.v);
        out.d[ax] = hg_dim_known(e > s ? e - s : 0);
    }
    *y = out;
    return TRUE;
}

/* Slice: starts/ends/axes as attributes before opset 10, inputs (with steps) from 10. Negative
 * starts/ends count from the end; then starts clamp to [0, d] and ends to [0, d] for positive steps,
 * to [0, d-1] and [-1, d-1] for negative ones. */
static int
slice_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y, gint64 *start, gint64 *step)
{
    g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
    guint ns, ne, na, nt;
    *y = *x;
    for (int i = 0; i < HG_MAX_RANK; i++) {
        start[i] = 0;
        step[i] = 1;
    }
    HgPState ps = hg_arg_ints(a, 1, "starts", &starts, &ns);
    HgPState pe = hg_arg_ints(a, 2, "ends", &ends, &ne);
    HgPState pa = hg_arg_ints(a, 3, "axes", &axes, &na);
    HgPState pt = hg_arg_ints(a, 4, NULL, &steps, &nt);
    if (ps == P_ABSENT || pe == P_ABSENT) {
        INVALID(a, "starts and ends are required");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (ps == P_KNOWN && pe == P_UNKNOWN && pa != P_UNKNOWN && pt != P_UNKNOWN &&
        slice_named_ends(a, x, y, starts, ns, pa == P_KNOWN ? axes : NULL, na, pt == P_KNOWN ? steps : NULL, nt))
        return PLAN_UNKNOWN;
    if (ps == P_UNKNOWN || pe == P_UNKNOWN || pa == P_UNKNOWN || pt == P_UNKNOWN) {
        /* the sliced axes lose their dims when they are known; the others keep theirs */
        guint n = pa == P_KNOWN ? na : ps == P_KNOWN ? ns : pe == P_KNOWN ? ne : G_MAXUINT;
        if (pa == P_UNKNOWN || n == G_MAXUINT) {
            hg_sym_unknown_dims(y, x->rank);
            return PLAN_UNKNOWN;
        }
        for (guint i = 0; i < n; i++) {
            gint64 ax = pa == P_KNOWN ? axes[i] : (gint64)i;
            if (ax < 0)
                ax += x->rank;
            if (ax >= 0 && ax < x->rank)
                y->d[ax] = hg_dim_unknown();
        }
        return PLAN_UNKNOWN;
    }
    if (ne != ns || (pa == P_KNOWN && na != ns) || (pt == P_KNOWN && nt != ns) || ns > (guint)x->rank) {
        INVALID(a, "starts, ends, axes and steps disagree in length");
        return PLAN_ERR;
    }
    if (pa != P_KNOWN) {
        axes = g_new(gint64, ns + 1);
        for (guint i = 0; i < ns; i++)
            axes[i] = i;
    }
    if (!hg_arg_norm_axes(a, axes, ns, (guint)x->rank))
        return PLAN_ERR;
    gboolean known = TRUE;
    for (guint i = 0; i < ns; i++) {
        gint64 ax = axes[i], d = x->d[ax].v, st = pt == P_KNOWN ? steps[i] : 1;
        gint64 s = starts[i], e = ends[i];
        if (st == 0) {
            INVALID(a, "step is 0");
            return PLAN_ERR;
        }
        step[ax] = st;
        if (d < 0) {
            /* x[0:INT_MAX] and x[::-1] keep the (unknown) dim */
            gboolean whole = (st == 1 && s == 0 && e >= G_MAXINT32) ||
                             (st == -1 && s == -1 && e <= G_MININT32);
            y->d[ax] = whole ? x->d[ax] : hg_dim_unknown();
            known = FALSE;
            continue;
        }
        if (s < 0)
            s += d;
        if (e < 0)
            e += d;
        gint64 count;
        if (st > 0) {
            s = CLAMP(s, 0, d);
            e = CLAMP(e, 0, d);
            count = e > s ? (e - s - 1) / st + 1 : 0;
        } else {
            s = CLAMP(s, 0, d - 1);
            e = CLAMP(e, -1, d - 1);
            gint64 back = st == G_MININT64 ? G_MAXINT64 : -st;
            count = s > e ? (s - e - 1) / back + 1 : 0;
        }
        start[ax] = count ? s : 0;
        y->d[ax] = hg_dim_known(count);
    }
    return known && hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Slice(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    gint64 start[HG_MAX_RANK], step[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &x);
    if (slice_plan(&a, &x, &y, start, step) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Slice, HG_FOLD_STRICT);
}

gboolean
hg_eval_Slice(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    gint64 start[HG_MAX_RANK], step[HG_MAX_RANK], st[HG_MAX_RANK], dims[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, slice_plan(&a, &xs, &y, start, step)))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    gsize es = hg_mover_size(x->dtype);
    HgBox b = {x->rank, {0}, {0}, {0}};
    gint64 off = 0;
    hg_strides(x->rank, x->dims, st);
    hg_strides(x->rank, dims, b.ds);
    for (guint i = 0; i < x->rank; i++) {
        b.dims[i] = dims[i];
        b.ss[i] = st[i] * step[i];
        off += start[i] * st[i];
    }
    if (out->numel)
        hg_box_copy(hg_mover_data(out), (const char *)hg_mover_data(x) + (gsize)off * es, &b, es);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ Expand, Tile */

/* Expand broadcasts both ways: a 1 in shape keeps the input's dim. */
static int
expand_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y)
{
    g_autofree gint64 *shape = NULL;
    guint n;
    guint32 known = ~0u;
    const char *syms[HG_MAX_RANK] = {NULL};
    y->rank = -1;
    HgPState ps = hg_arg_ints(a, 1, NULL, &shape, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no shape input");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (ps == P_UNKNOWN && !hg_arg_ints_partial(a, 1, &shape, &n, &known, syms)) {
        /* No entry known, but the shape's own length is: the rank is, and every dim of x past 1
         * (the shape's entry there must be 1 or that dim) */
        HgSymShape ss;
        hg_arg_shape(a, 1, &ss);
        if (ss.rank != 1 || ss.d[0].v < 0 || ss.d[0].v > HG_MAX_RANK)
            return PLAN_UNKNOWN;
        guint len = (guint)ss.d[0].v, r = MAX((guint)x->rank, len);
        y->rank = (int)r;
        for (guint i = 0; i < r; i++) {
            HgSymDim xa = i < r - (guint)x->rank ? hg_dim_known(1) : x->d[i - (r - (guint)x->rank)];
            y->d[i] = xa.v > 1 ? xa : (HgSymDim){-1, NULL};
        }
        return PLAN_UNKNOWN;
    }
    guint r = MAX((guint)x->rank, n);
    if (r > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", r, HG_MAX_RANK);
        return PLAN_ERR;
    }
    y->rank = (int)r;
    for (guint i = 0; i < r; i++) {
        HgSymDim xa = i < r - (guint)x->rank ? hg_dim_known(1) : x->d[i - (r - (guint)x->rank)];
        gint64 b = i < r - n ? 1 : shape[i - (r - n)];
        if (i >= r - n && !(known >> (i - (r - n)) & 1)) {
            /* an entry known only by name: 1 keeps x's dim, anything else must match it */
            const char *sym = syms[i - (r - n)];
            y->d[i] = (xa.v >= 0 && xa.v != 1) || (xa.v < 0 && xa.sym == sym) ? xa : (HgSymDim){-1, sym};
            continue;
        }
        if (b < 0) {
            INVALID(a, "shape has %" G_GINT64_FORMAT, b);
            return PLAN_ERR;
        }
        if (b == 1)
            y->d[i] = xa;
        else if (xa.v < 0 || xa.v == 1 || xa.v == b)
            y->d[i] = hg_dim_known(b);
        else {
            INVALID(a, "dim %" G_GINT64_FORMAT " does not broadcast to %" G_GINT64_FORMAT, xa.v, b);
            return PLAN_ERR;
        }
    }
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Expand(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    hg_arg_shape(&a, 0, &x);
    if (expand_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Expand, HG_FOLD_STRICT);
}

gboolean
hg_eval_Expand(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    gint64 dims[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, expand_plan(&a, &xs, &y)))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    HgBox b = {(guint)y.rank, {0}, {0}, {0}};
    memcpy(b.dims, dims, sizeof(gint64) * (gsize)y.rank);
    hg_strides((guint)y.rank, dims, b.ds);
    hg_broadcast_strides(x->rank, x->dims, (guint)y.rank, dims, b.ss);
    hg_box_copy(hg_mover_data(out), hg_mover_data(x), &b, hg_mover_size(x->dtype));
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

static int
tile_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y, gint64 *reps)
{
    g_autofree gint64 *r = NULL;
    guint n;
    HgPState ps = hg_arg_ints(a, 1, NULL, &r, &n);
    *y = *x;
    if (ps == P_ABSENT) {
        INVALID(a, "no repeats input");
        return PLAN_ERR;
    }
    if (x->rank < 0) {
        hg_sym_rank_from_param(a, 1, 0, y);
        return PLAN_UNKNOWN;
    }
    if (ps == P_UNKNOWN) {
        /* repeats known in part: an entry of 1 keeps the dim, one known only by name multiplies it
         * (hg_dim_mul: a dim of 1 becomes that dim, 4 becomes 4*name) */
        guint32 known;
        const char *syms[HG_MAX_RANK] = {NULL};
        hg_sym_unknown_dims(y, x->rank);
        if (hg_arg_ints_partial(a, 1, &r, &n, &known, syms) && n == (guint)x->rank)
            for (guint i = 0; i < n; i++) {
                if (known >> i & 1 && r[i] == 1)
                    y->d[i] = x->d[i];
                else if (known >> i & 1 && r[i] >= 0 && x->d[i].v >= 0 && x->d[i].v <= G_MAXINT64 / MAX(r[i], 1))
                    y->d[i] = hg_dim_known(x->d[i].v * r[i]);
                else if (!(known >> i & 1) && syms[i] && (x->d[i].v >= 0 || x->d[i].sym))
                    y->d[i] = hg_dim_mul(x->d[i], (HgSymDim){-1, syms[i]});
            }
        return PLAN_UNKNOWN;
    }
    if (n != (guint)x->rank) {
        INVALID(a, "repeats has %u entries for rank %d", n, x->rank);
        return PLAN_ERR;
    }
    for (guint i = 0; i < n; i++) {
        gint64 d = x->d[i].v;
        if (r[i] < 0) {
            INVALID(a, "repeats[%u] is %" G_GINT64_FORMAT, i, r[i]);
            return PLAN_ERR;
        }
        reps[i] = r[i];
        if (r[i] == 1)
            continue;
        if (r[i] == 0 || d == 0)
            y->d[i] = hg_dim_known(0);
        else if (d < 0)
            y->d[i] = hg_dim_unknown();
        else if (d > G_MAXINT64 / r[i]) {
            INVALID(a, "tiled dim overflows");
            return PLAN_ERR;
        } else
            y->d[i] = hg_dim_known(d * r[i]);
    }
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Tile(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    gint64 reps[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &x);
    if (tile_plan(&a, &x, &y, reps) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Tile, HG_FOLD_STRICT);
}

gboolean
hg_eval_Tile(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    gint64 reps[HG_MAX_RANK], dims[HG_MAX_RANK], ods[HG_MAX_RANK], xst[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, tile_plan(&a, &xs, &y, reps)))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    /* The output as (repeat, dim) pairs: the repeat reads the same source (stride 0). */
    HgBox b = {2 * x->rank, {0}, {0}, {0}};
    hg_strides(x->rank, dims, ods);
    hg_strides(x->rank, x->dims, xst);
    for (guint i = 0; i < x->rank; i++) {
        b.dims[2 * i] = reps[i];
        b.dims[2 * i + 1] = x->dims[i];
        b.ds[2 * i] = x->dims[i] * ods[i];
        b.ds[2 * i + 1] = ods[i];
        b.ss[2 * i] = 0;
        b.ss[2 * i + 1] = xst[i];
    }
    hg_box_copy(hg_mover_data(out), hg_mover_data(x), &b, hg_mover_size(x->dtype));
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ Pad */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct {
    int mode;
    gint64 begin[HG_MAX_RANK], end[HG_MAX_RANK];
} PadPlan;

/* Pad: pads (and value) as attributes before opset 11, inputs from 11; axes input from 18. pads is
 * [x1_begin, x2_begin, ..., x1_end, x2_end, ...]; negative pads crop. */
static int
pad_plan(const HgArgs *a, const HgSymShape *x, HgSymShape *y, PadPlan *p)
{
    g_autofree gint64 *pads = NULL, *axes = NULL;
    g_autofree char *mode = hg_attr_string(a->node, "mode", "constant");
    guint np, na;
    *y = *x;
    memset(p, 0, sizeof(*p));
    if (!strcmp(mode, "constant"))
        p->mode = PAD_CONSTANT;
    else if (!strcmp(mode, "reflect"))
        p->mode = PAD_REFLECT;
    else if (!strcmp(mode, "edge"))
        p->mode = PAD_EDGE;
    else if (!strcmp(mode, "wrap"))
        p->mode = PAD_WRAP;
    else {
        UNSUPPORTED(a, "mode '%s'", mode);
        return PLAN_ERR;
    }
    HgPState pp = hg_arg_ints(a, 1, "pads", &pads, &np);
    if (pp == P_ABSENT)
        pp = hg_arg_ints(a, HG_NO_INPUT, "paddings", &pads, &np); /* Pad-1 */
    HgPState pa = hg_arg_ints(a, 3, NULL, &axes, &na);
    if (pp == P_ABSENT) {
        INVALID(a, "no pads");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (pp == P_UNKNOWN || pa == P_UNKNOWN) {
        hg_sym_unknown_dims(y, x->rank);
        return PLAN_UNKNOWN;
    }
    if (pa != P_KNOWN) {
        na = (guint)x->rank;
        axes = g_new(gint64, na + 1);
        for (guint i = 0; i < na; i++)
            axes[i] = i;
    }
    if (np != 2 * na) {
        INVALID(a, "pads has %u entries for %u axes", np, na);
        return PLAN_ERR;
    }
    if (!hg_arg_norm_axes(a, axes, na, (guint)x->rank))
        return PLAN_ERR;
    for (guint j = 0; j < na; j++) {
        p->begin[axes[j]] = pads[j];
        p->end[axes[j]] = pads[j + na];
    }
    for (int i = 0; i < x->rank; i++) {
        gint64 d = x->d[i].v, b = p->begin[i], e = p->end[i];
        if (b == 0 && e == 0)
            continue;
        if (d < 0) {
            y->d[i] = hg_dim_unknown();
            continue;
        }
        if (ABS(b) > G_MAXINT32 * (gint64)64 || ABS(e) > G_MAXINT32 * (gint64)64 || d + b + e < 0) {
            INVALID(a, "pads %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " do not fit dim %" G_GINT64_FORMAT,
                    b, e, d);
            return PLAN_ERR;
        }
        if (d == 0 && p->mode != PAD_CONSTANT && (b > 0 || e > 0)) {
            INVALID(a, "cannot %s-pad an empty axis", mode);
            return PLAN_ERR;
        }
        y->d[i] = hg_dim_known(d + b + e);
    }
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Pad(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    PadPlan p;
    hg_arg_shape(&a, 0, &x);
    if (pad_plan(&a, &x, &y, &p) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Pad, HG_FOLD_STRICT);
}

/* Where output index o of an axis reads from, per mode; -1 for the constant border. */
static gint64
pad_source(int mode, gint64 o, gint64 begin, gint64 n)
{
    gint64 v = o - begin;
    if (v >= 0 && v < n)
        return v;
    switch (mode) {
    case PAD_EDGE:
        return v < 0 ? 0 : n - 1;
    case PAD_REFLECT: {
        if (n == 1)
            return 0;
        gint64 period = 2 * (n - 1);
        v %= period;
        if (v < 0)
            v += period;
        return v < n ? v : period - v;
    }
    case PAD_WRAP:
        v %= n;
        return v < 0 ? v + n : v;
    default:
        return -1;
    }
}

gboolean
hg_eval_Pad(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    PadPlan p;
    gint64 dims[HG_MAX_RANK];
    gint64 *maps[HG_MAX_RANK] = {NULL};
    guint8 fill[16];
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, pad_plan(&a, &xs, &y, &p)))
        return FALSE;
    hg_sym_dims(&y, dims);
    const HgArray *cv = hg_arg_present(&a, 2) ? ctx->inputs[2] : NULL;
    hg_scalar_bytes(cv, hg_node_attr_float(ctx->node, "value", 0.0f), x->dtype, fill);
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    for (guint i = 0; i < x->rank; i++) {
        maps[i] = g_new(gint64, dims[i] + 1);
        for (gint64 o = 0; o < dims[i]; o++)
            maps[i][o] = pad_source(p.mode, o, p.begin[i], x->dims[i]);
    }
    hg_table_gather(hg_mover_data(out), hg_mover_data(x), x->rank, dims, x->dims, maps, fill, hg_mover_size(x->dtype));
    for (guint i = 0; i < x->rank; i++)
        g_free(maps[i]);
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ================================================================ DepthToSpace, SpaceToDepth */

/* Both are a reshape to 6-D, a transpose and a reshape back: one box each. */
static gboolean
d2s_plan(const HgArgs *a, gboolean to_space, const HgSymShape *x, HgSymShape *y, gint64 *bs)
{
    *bs = hg_node_attr_int(a->node, "blocksize", 0);
    y->rank = -1;
    if (*bs <= 0 || *bs > G_MAXINT32)
        return INVALID(a, "blocksize %" G_GINT64_FORMAT, *bs);
    if (x->rank < 0)
        return TRUE;
    if (x->rank != 4)
        return INVALID(a, "input has rank %d, not 4", x->rank);
    gint64 b = *bs, c = x->d[1].v, h = x->d[2].v, w = x->d[3].v;
    y->rank = 4;
    y->d[0] = x->d[0];
    if (to_space) {
        if (c >= 0 && c % (b * b))
            return INVALID(a, "channels %" G_GINT64_FORMAT " are not a multiple of blocksize^2", c);
        y->d[1] = c >= 0 ? hg_dim_known(c / (b * b)) : hg_dim_unknown();
        y->d[2] = h >= 0 ? hg_dim_known(h * b) : hg_dim_unknown();
        y->d[3] = w >= 0 ? hg_dim_known(w * b) : hg_dim_unknown();
    } else {
        if ((h >= 0 && h % b) || (w >= 0 && w % b))
            return INVALID(a, "height and width must be multiples of blocksize");
        y->d[1] = c >= 0 ? hg_dim_known(c * b * b) : hg_dim_unknown();
        y->d[2] = h >= 0 ? hg_dim_known(h / b) : hg_dim_unknown();
        y->d[3] = w >= 0 ? hg_dim_known(w / b) : hg_dim_unknown();
    }
    return TRUE;
}

static gboolean
d2s_eval(HgEvalCtx *ctx, gboolean to_space)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    gint64 bs, dims[4];
    hg_arg_shape(&a, 0, &xs);
    if (!d2s_plan(&a, to_space, &xs, &y, &bs))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, 4, dims);
    if (!out)
        return FALSE;
    gint64 n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3], b = bs;
    gint64 sn = c * h * w;
    HgBox box = {6, {0}, {0}, {0}};
    if (to_space) {
        /* output viewed as [N, C', H, b1, W, b2]; the input as [N, b1, b2, C', H, W] (DCR) or
         * [N, C', b1, b2, H, W] (CRD) */
        g_autofree char *mode = hg_attr_string(ctx->node, "mode", "DCR");
        gint64 cc = c / (b * b), sc, sb1, sb2;
        if (!strcmp(mode, "CRD")) {
            sc = b * b * h * w;
            sb1 = b * h * w;
            sb2 = h * w;
        } else if (!strcmp(mode, "DCR")) {
            sb1 = b * cc * h * w;
            sb2 = cc * h * w;
            sc = h * w;
        } else {
            hg_mover_drop(out);
            return UNSUPPORTED(&a, "mode '%s'", mode);
        }
        gint64 d6[6] = {n, cc, h, b, w, b}, s6[6] = {sn, sc, w, sb1, 1, sb2};
        memcpy(box.dims, d6, sizeof(d6));
        memcpy(box.ss, s6, sizeof(s6));
    } else {
        /* output viewed as [N, b1, b2, C, H', W']; the input as [N, C, H', b1, W', b2] */
        gint64 hh = h / b, ww = w / b;
        gint64 d6[6] = {n, b, b, c, hh, ww}, s6[6] = {sn, w, 1, h * w, b * w, b};
        memcpy(box.dims, d6, sizeof(d6));
        memcpy(box.ss, s6, sizeof(s6));
    }
    hg_strides(6, box.dims, box.ds);
    hg_box_copy(hg_mover_data(out), hg_mover_data(x), &box, hg_mover_size(x->dtype));
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

gboolean
hg_infer_DepthToSpace(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    gint64 bs;
    hg_arg_shape(&a, 0, &x);
    if (!d2s_plan(&a, TRUE, &x, &y, &bs))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_DepthToSpace, HG_FOLD_STRICT);
}

gboolean
hg_eval_DepthToSpace(HgEvalCtx *ctx)
{
    return d2s_eval(ctx, TRUE);
}

gboolean
hg_infer_SpaceToDepth(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    gint64 bs;
    hg_arg_shape(&a, 0, &x);
    if (!d2s_plan(&a, FALSE, &x, &y, &bs))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_SpaceToDepth, HG_FOLD_STRICT);
}

gboolean
hg_eval_SpaceToDepth(HgEvalCtx *ctx)
{
    return d2s_eval(ctx, FALSE);
}

/* ================================================================ Trilu */

gboolean
hg_infer_Trilu(HgShapeCtx *ctx)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x;
    hg_arg_shape(&a, 0, &x);
    if (x.rank >= 0 && x.rank < 2)
        return INVALID(&a, "input has rank %d, needs at least 2", x.rank);
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &x);
    return hg_fold(ctx, hg_eval_Trilu, HG_FOLD_STRICT);
}

/* Keep the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix; zero the rest. */
gboolean
hg_eval_Trilu(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    if (x->rank < 2)
        return INVALID(&a, "input has rank %u, needs at least 2", x->rank);
    gint64 k = 0;
    if (hg_arg_present(&a, 1)) {
        if (ctx->inputs[1]->numel != 1)
            return INVALID(&a, "k must be a scalar");
        k = hg_array_get_i64(ctx->inputs[1], 0);
    }
    gboolean upper = hg_node_attr_int(ctx->node, "upper", 1) != 0;
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, x->dims);
    if (!out)
        return FALSE;
    gsize es = hg_mover_size(x->dtype);
    gint64 rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    gint64 mats = rows > 0 && cols > 0 ? x->numel / (rows * cols) : 0;
    k = CLAMP(k, -rows - 1, cols + 1);
    const char *s = hg_mover_data(x);
    char *d = hg_mover_data(out); /* zero-filled: zero is 0 bits for every numeric type */
    for (gint64 m = 0; m < mats; m++) {
        for (gint64 i = 0; i < rows; i++) {
            gint64 lo = upper ? CLAMP(i + k, 0, cols) : 0, hi = upper ? cols : CLAMP(i + k + 1, 0, cols);
            gsize off = (gsize)((m * rows + i) * cols + lo) * es;
            if (hi > lo)
                memcpy(d + off, s + off, (gsize)(hi - lo) * es);
        }
    }
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

/* ---------------------------------------------------------------- interval rules */

void
hg_range_Concat(HgRangeCtx *ctx)
{
    gboolean any = FALSE;
    HgRange r = {INFINITY, -INFINITY, INFINITY, FALSE};
    for (guint i = 0; i < ctx->n_inputs; i++) {
        if (!ctx->inputs[i])
            continue;
        r = hg_range_union(r, *ctx->inputs[i]);
        any = TRUE;
    }
    if (any && ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_DepthToSpace(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_Expand(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

/* Whether Pad may add elements: FALSE only when every pad (the attribute before opset 11, else
 * constant input 1) is known to be <= 0. Legacy converters emit Pad with zero pads and a -FLT_MAX
 * value in front of MaxPool. */
static gboolean
pads_something(const HgRangeCtx *ctx)
{
    guint len = 0;
    const gint64 *pads = hg_attr_ints(ctx->node, "pads", &len);
    const HgArray *pv = ctx->n_inputs > 1 && ctx->values ? ctx->values[1] : NULL;
    if (!pads && pv && pv->dtype == HG_DTYPE_INT64) {
        for (gint64 i = 0; i < pv->numel; i++)
            if (hg_array_get_f64(pv, i) > 0)
                return TRUE;
        return FALSE;
    }
    if (!pads || ctx->n_inputs > 1)
        return TRUE;
    for (guint i = 0; i < len; i++)
        if (pads[i] > 0)
            return TRUE;
    return FALSE;
}

/* Constant mode adds the pad value (input 2 from opset 11, else the 'value' attribute, 0 by
 * default); reflect, edge and wrap only copy input elements. */
void
hg_range_Pad(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    if (!x || !ctx->n_outputs)
        return;
    g_autofree char *mode = hg_attr_string(ctx->node, "mode", "constant");
    HgRange r = *x;
    if (!strcmp(mode, "constant")) {
        if (!pads_something(ctx)) {
            *ctx->outputs[0] = r;
            return;
        }
        const HgRange *v = hg_range_input(ctx, 2);
        HgAttr *value = hg_node_attr(ctx->node, "value"); /* Pad before opset 11 */
        if (v)
            r = hg_range_union(r, *v);
        else
            r = hg_range_with(r, 0);
        if (value)
            r = hg_range_with(r, value->f);
    } else if (strcmp(mode, "reflect") && strcmp(mode, "edge") && strcmp(mode, "wrap")) {
        return;
    }
    *ctx->outputs[0] = r;
}

void
hg_range_Slice(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_SpaceToDepth(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_Split(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_Tile(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

void
hg_range_Transpose(HgRangeCtx *ctx)
{
    hg_range_move(ctx);
}

/* Trilu zeroes the other triangle. */
void
hg_range_Trilu(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    if (x && ctx->n_outputs)
        *ctx->outputs[0] = hg_range_with(*x, 0);
}
