/* What the tensor families (shape.c, movement.c, index.c, resize.c) share: symbolic shapes, the
 * inputs of either context (HgArgs), the movers, and the interval rules' helpers. tensor.h says how
 * they fit together.
 */
#include "ops/tensor.h"
#include "ir_private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---------------------------------------------------------------- symbolic shapes */

void
hg_sym_unknown_dims(HgSymShape *s, int rank)
{
    s->rank = rank;
    for (int i = 0; i < rank; i++)
        s->d[i] = hg_dim_unknown();
}

void
hg_sym_from_dims(HgSymShape *s, guint rank, const gint64 *dims)
{
    s->rank = (int)rank;
    for (guint i = 0; i < rank; i++)
        s->d[i] = hg_dim_known(dims[i]);
}

gboolean
hg_sym_known(const HgSymShape *s)
{
    if (s->rank < 0)
        return FALSE;
    for (int i = 0; i < s->rank; i++)
        if (s->d[i].v < 0)
            return FALSE;
    return TRUE;
}

void
hg_sym_dims(const HgSymShape *s, gint64 *dims)
{
    for (int i = 0; i < s->rank; i++)
        dims[i] = s->d[i].v;
}

/* Product of dims [from, to): known when all are (or one is 0); the dim itself when it is the only
 * factor other than 1s, so Flatten of [N, C] keeps N's name; a product name (hg_dim_mul) when every
 * unknown dim is named. */
HgSymDim
hg_sym_prod(const HgSymShape *s, int from, int to)
{
    gint64 p = 1;
    int unknown = -1, n_unknown = 0;
    gboolean zero = FALSE;
    for (int i = from; i < to; i++) {
        if (s->d[i].v < 0) {
            unknown = i;
            n_unknown++;
        } else if (s->d[i].v == 0) {
            zero = TRUE;
        } else if (p > G_MAXINT64 / s->d[i].v) {
            return hg_dim_unknown();
        } else {
            p *= s->d[i].v;
        }
    }
    if (zero)
        return hg_dim_known(0);
    if (n_unknown == 0)
        return hg_dim_known(p);
    if (n_unknown == 1 && p == 1)
        return s->d[unknown];
    /* a product of named dims keeps their names: [batch, seq] flattened is batch*seq */
    HgSymDim r = hg_dim_known(p);
    for (int i = from; i < to && (r.v >= 0 || r.sym); i++)
        if (s->d[i].v < 0)
            r = s->d[i].sym ? hg_dim_mul(r, s->d[i]) : hg_dim_unknown();
    return r;
}

/* ---------------------------------------------------------------- inputs of either context */

/* Fill y with rank taken from the length of a 1-D parameter input when only that is known. */
void
hg_sym_rank_from_param(const HgArgs *a, guint index, int extra, HgSymShape *y)
{
    HgSymShape s;
    hg_arg_shape(a, index, &s);
    y->rank = -1;
    if (s.rank == 1 && s.d[0].v >= 0 && s.d[0].v + extra >= 0 && s.d[0].v + extra <= HG_MAX_RANK)
        hg_sym_unknown_dims(y, (int)(s.d[0].v + extra));
}

HgArgs
hg_args_infer(const HgShapeCtx *c)
{
    HgArgs a = {c->node, c->opset, c->n_inputs, c->inputs, NULL, c->error};
    return a;
}

HgArgs
hg_args_eval(const HgEvalCtx *c)
{
    HgArgs a = {c->node, c->opset, c->n_inputs, NULL, c->inputs, c->error};
    return a;
}

gboolean
hg_arg_present(const HgArgs *a, guint i)
{
    if (i >= a->n_inputs)
        return FALSE;
    return a->arrays ? a->arrays[i] != NULL : a->shapes[i] != NULL;
}

/* The value of input i when known (always during evaluation), else NULL. */
const HgArray *
hg_arg_value(const HgArgs *a, guint i)
{
    if (!hg_arg_present(a, i))
        return NULL;
    return a->arrays ? a->arrays[i] : a->shapes[i]->value;
}

int
hg_arg_dtype(const HgArgs *a, guint i)
{
    if (!hg_arg_present(a, i))
        return HG_DTYPE_UNDEFINED;
    return a->arrays ? a->arrays[i]->dtype : a->shapes[i]->dtype;
}

void
hg_arg_shape(const HgArgs *a, guint i, HgSymShape *s)
{
    s->rank = -1;
    if (!hg_arg_present(a, i))
        return;
    if (a->arrays) {
        hg_sym_from_dims(s, a->arrays[i]->rank, a->arrays[i]->dims);
        return;
    }
    const HgValueShape *v = a->shapes[i];
    if (v->rank < 0 || v->rank > HG_MAX_RANK)
        return;
    s->rank = v->rank;
    for (int k = 0; k < v->rank; k++)
        s->d[k] = v->dims[k];
}

/* Record an error for the node and return FALSE. */
gboolean
hg_arg_fail(const HgArgs *a, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    hg_op_error(a->error, code, a->node, "%s", msg);
    return FALSE;
}

/* An int list given by input `index` (newer opsets) or attribute `attr` (older ones). The input wins
 * when present, so a model that mixes the forms still runs. *vals is g_free'd by the caller. */
HgPState
hg_arg_ints(const HgArgs *a, guint index, const char *attr, gint64 **vals, guint *n)
{
    *vals = NULL;
    *n = 0;
    if (index != HG_NO_INPUT && hg_arg_present(a, index)) {
        const HgArray *v = hg_arg_value(a, index);
        /* parameter lists are short (a rank, a count of outputs); a huge one is not read */
        if (!v || v->strings || v->numel > (1 << 20))
            return P_UNKNOWN;
        *vals = g_new(gint64, v->numel + 1);
        for (gint64 i = 0; i < v->numel; i++)
            (*vals)[i] = hg_array_get_i64(v, i);
        *n = (guint)v->numel;
        return P_KNOWN;
    }
    if (attr && hg_node_attr(a->node, attr)) {
        guint len;
        const gint64 *p = hg_attr_ints(a->node, attr, &len);
        *vals = g_new(gint64, len + 1);
        if (len)
            memcpy(*vals, p, sizeof(gint64) * len);
        *n = len;
        return P_KNOWN;
    }
    return P_ABSENT;
}

gboolean
hg_arg_ints_partial(const HgArgs *a, guint index, gint64 **vals, guint *n, guint32 *known, const char **syms)
{
    const HgPartial *p = a->shapes && index < a->n_inputs && a->shapes[index] ? &a->shapes[index]->part : NULL;
    if (!p || p->n <= 0 || p->n > HG_MAX_RANK)
        return FALSE;
    g_free(*vals);
    *vals = g_memdup2(p->v, sizeof(gint64) * (gsize)p->n);
    *n = (guint)p->n;
    *known = p->known;
    for (int i = 0; i < p->n; i++)
        syms[i] = p->sym[i];
    return TRUE;
}

/* Normalize axes against rank (negative count from the end); repeated axes are an error. */
gboolean
hg_arg_norm_axes(const HgArgs *a, gint64 *axes, guint n, guint rank)
{
    guint seen = 0;
    for (guint i = 0; i < n; i++) {
        gint64 ax;
        if (!hg_norm_axis(axes[i], rank, &ax, a->node, a->error))
            return FALSE;
        if (seen & (1u << ax))
            return INVALID(a, "axis %" G_GINT64_FORMAT " is repeated", axes[i]);
        seen |= 1u << ax;
        axes[i] = ax;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- inference helpers */

void
hg_vshape_set_sym(HgValueShape *o, int dtype, const HgSymShape *s)
{
    hg_vshape_set(o, dtype, s->rank, s->d);
}

/* ---------------------------------------------------------------- raw elements */

/* Bytes per element as the movers see it: GBytes pointers for strings. */
gsize
hg_mover_size(int dtype)
{
    return dtype == HG_DTYPE_STRING ? sizeof(gpointer) : hg_dtype_size(dtype);
}

void *
hg_mover_data(const HgArray *a)
{
    return a->strings ? (void *)a->strings->pdata : a->data;
}

/* A new output for a mover. String outputs start with NULL slots that the kernel fills with borrowed
 * pointers; hg_mover_done() then takes a reference on each (and makes NULL slots empty strings). */
HgArray *
hg_mover_new(const HgArgs *a, int dtype, guint rank, const gint64 *dims)
{
    GError *err = NULL;
    HgArray *o = hg_array_new(dtype, rank, dims, &err);
    if (!o) {
        hg_arg_fail(a, err->code, "%s", err->message);
        g_error_free(err);
        return NULL;
    }
    if (o->strings) {
        for (guint i = 0; i < o->strings->len; i++) {
            g_bytes_unref(o->strings->pdata[i]);
            o->strings->pdata[i] = NULL;
        }
    }
    return o;
}

HgArray *
hg_mover_done(HgArray *o)
{
    if (o && o->strings)
        for (guint i = 0; i < o->strings->len; i++)
            o->strings->pdata[i] = o->strings->pdata[i] ? g_bytes_ref(o->strings->pdata[i])
                                                        : g_bytes_new(NULL, 0);
    return o;
}

void
hg_mover_drop(HgArray *o)
{
    hg_array_unref(hg_mover_done(o));
}

/* Drop unit dims and merge neighbours that are contiguous on both sides, so inner loops run long. */
static void
box_simplify(HgBox *b)
{
    guint r = 0;
    for (guint i = 0; i < b->rank; i++) {
        if (b->dims[i] == 1)
            continue;
        if (r > 0 && b->ds[r - 1] == b->ds[i] * b->dims[i] && b->ss[r - 1] == b->ss[i] * b->dims[i]) {
            b->dims[r - 1] *= b->dims[i];
            b->ds[r - 1] = b->ds[i];
            b->ss[r - 1] = b->ss[i];
            continue;
        }
        b->dims[r] = b->dims[i];
        b->ds[r] = b->ds[i];
        b->ss[r] = b->ss[i];
        r++;
    }
    b->rank = r;
}

#define ROW_COPY(T)                                                                                \
    do {                                                                                           \
        T *d_ = (T *)dst + doff;                                                                   \
        const T *s_ = (const T *)src + soff;                                                       \
        if (dsi == 1 && ssi == 1) {                                                                \
            memcpy(d_, s_, sizeof(T) * (gsize)n);                                                  \
        } else if (dsi == 1 && ssi == 0) {                                                         \
            T v_ = *s_;                                                                            \
            for (gint64 i_ = 0; i_ < n; i_++)                                                      \
                d_[i_] = v_;                                                                       \
        } else if (dsi == 1) {                                                                     \
            for (gint64 i_ = 0; i_ < n; i_++)                                                      \
                d_[i_] = s_[i_ * ssi];                                                             \
        } else {                                                                                   \
            for (gint64 i_ = 0; i_ < n; i_++)                                                      \
                d_[i_ * dsi] = s_[i_ * ssi];                                                       \
        }                                                                                          \
    } while (0)

/* Tiles of a transposing copy: both the strided reads and the contiguous writes stay in cache. */
#define TILE 32
#define TILE_COPY(T)                                                                               \
    do {                                                                                           \
        T *d_ = (T *)dst + doff;                                                                   \
        const T *s_ = (const T *)src + soff;                                                       \
        for (gint64 a0 = 0; a0 < na; a0 += TILE)                                                   \
            for (gint64 b0 = 0; b0 < nb; b0 += TILE) {                                             \
                gint64 ae = MIN(a0 + TILE, na), be = MIN(b0 + TILE, nb);                           \
                for (gint64 a_ = a0; a_ < ae; a_++)                                                \
                    for (gint64 b_ = b0; b_ < be; b_++)                                            \
                        d_[a_ * dsa + b_] = s_[a_ + b_ * ssb];                                     \
            }                                                                                      \
    } while (0)

/* A box whose innermost destination dim reads with a stride while another dim j reads contiguously
 * (NCHW <-> NHWC and every other transpose): copy 2-D tiles of (j, last) for each index of the rest. */
static void
box_transpose(void *dst, const void *src, const HgBox *b, guint j, gsize es)
{
    guint r = b->rank, no = 0;
    gint64 od[HG_MAX_BOX], ods[HG_MAX_BOX], oss[HG_MAX_BOX], idx[HG_MAX_BOX] = {0};
    gint64 outer = 1;
    for (guint i = 0; i + 1 < r; i++) {
        if (i == j)
            continue;
        od[no] = b->dims[i];
        ods[no] = b->ds[i];
        oss[no] = b->ss[i];
        outer *= b->dims[i];
        no++;
    }
    gint64 na = b->dims[j], dsa = b->ds[j];
    gint64 nb = b->dims[r - 1], ssb = b->ss[r - 1];
    gint64 doff = 0, soff = 0;
    for (gint64 o = 0; o < outer; o++) {
        HG_WIDTH_SWITCH(es, TILE_COPY);
        hg_odometer_step(no, od, ods, oss, idx, &doff, &soff);
    }
}

void
hg_box_copy(void *dst, const void *src, const HgBox *box, gsize es)
{
    HgBox b = *box;
    for (guint i = 0; i < b.rank; i++)
        if (b.dims[i] == 0)
            return;
    box_simplify(&b);
    if (b.rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    guint r = b.rank;
    if (r >= 2 && b.ds[r - 1] == 1 && b.ss[r - 1] != 1 && b.ss[r - 1] != 0) {
        for (guint j = 0; j + 1 < r; j++) {
            if (b.ss[j] == 1 && b.ds[j] != 0) {
                box_transpose(dst, src, &b, j, es);
                return;
            }
        }
    }
    gint64 n = b.dims[r - 1], dsi = b.ds[r - 1], ssi = b.ss[r - 1];
    gint64 outer = 1, idx[HG_MAX_BOX] = {0}, doff = 0, soff = 0;
    for (guint i = 0; i + 1 < r; i++)
        outer *= b.dims[i];
    for (gint64 o = 0; o < outer; o++) {
        HG_WIDTH_SWITCH(es, ROW_COPY);
        hg_odometer_step(r - 1, b.dims, b.ds, b.ss, idx, &doff, &soff);
    }
}

#define GATHER_ROW(T)                                                                              \
    do {                                                                                           \
        T *d_ = (T *)dst + row * n;                                                                \
        const T *s_ = (const T *)src + base;                                                       \
        T f_;                                                                                      \
        memcpy(&f_, fill, sizeof(T));                                                              \
        if (same) {                                                                                \
            memcpy(d_, d_ - n, sizeof(T) * (gsize)n);                                              \
        } else if (!valid) {                                                                       \
            for (gint64 i_ = 0; i_ < n; i_++)                                                      \
                d_[i_] = f_;                                                                       \
        } else {                                                                                   \
            for (gint64 i_ = 0; i_ < n; i_++)                                                      \
                d_[i_] = last[i_] < 0 ? f_ : s_[last[i_]];                                         \
        }                                                                                          \
    } while (0)

/* out[o_0, ..., o_r-1] = in[map_0[o_0], ..., map_r-1[o_r-1]], or *fill where an entry is -1. One loop
 * for every Pad mode (the maps reflect, clamp or wrap) and for nearest Resize (the maps round). A row
 * that reads the same source row as the one before is copied from it (nearest upsampling). */
void
hg_table_gather(void *dst, const void *src, guint rank, const gint64 *out_dims, const gint64 *in_dims,
             gint64 *const *maps, const void *fill, gsize es)
{
    gint64 total = 1;
    for (guint k = 0; k < rank; k++)
        total *= out_dims[k];
    if (total == 0)
        return;
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    gint64 st[HG_MAX_RANK], idx[HG_MAX_RANK] = {0};
    hg_strides(rank, in_dims, st);
    gint64 n = out_dims[rank - 1], rows = total / n;
    const gint64 *last = maps[rank - 1];
    gint64 prev_base = -2;
    gboolean prev_valid = FALSE;
    for (gint64 row = 0; row < rows; row++) {
        gint64 base = 0;
        gboolean valid = TRUE;
        for (guint k = 0; k + 1 < rank; k++) {
            gint64 v = maps[k][idx[k]];
            if (v < 0)
                valid = FALSE;
            else
                base += v * st[k];
        }
        if (!valid)
            base = 0;
        gboolean same = row > 0 && valid == prev_valid && base == prev_base;
        HG_WIDTH_SWITCH(es, GATHER_ROW);
        prev_base = base;
        prev_valid = valid;
        for (guint k = rank - 1; k-- > 0;) {
            if (++idx[k] < out_dims[k])
                break;
            idx[k] = 0;
        }
    }
}

/* One element of a scalar-ish array converted to dtype's raw bytes (buf of 16). Same dtype copies bits;
 * otherwise integers go through int64 and floats through double. */
void
hg_scalar_bytes(const HgArray *v, double dflt, int dtype, void *buf)
{
    memset(buf, 0, 16);
    if (dtype == HG_DTYPE_STRING)
        return;
    if (v && v->numel > 0 && v->dtype == dtype && !v->strings) {
        memcpy(buf, v->data, hg_dtype_size(dtype));
        return;
    }
    HgArray *t = hg_array_new(dtype, 0, NULL, NULL);
    if (!t)
        return;
    if (v && v->numel > 0 && !v->strings && hg_dtype_compute(dtype) == HG_COMPUTE_I64 &&
        hg_dtype_compute(v->dtype) == HG_COMPUTE_I64) {
        gint64 x = hg_array_get_i64(v, 0);
        hg_array_store_i64(t, &x);
    } else {
        double x = v && v->numel > 0 && !v->strings ? hg_array_get_f64(v, 0) : dflt;
        hg_array_store_f64(t, &x);
    }
    memcpy(buf, t->data, hg_dtype_size(dtype));
    hg_array_unref(t);
}

/* A new int64 array of n values. */
HgArray *
hg_i64_array(guint rank, const gint64 *dims, const gint64 *vals)
{
    HgArray *a = hg_array_new(HG_DTYPE_INT64, rank, dims, NULL);
    if (a && a->numel)
        memcpy(a->data, vals, sizeof(gint64) * (gsize)a->numel);
    return a;
}

/* ---------------------------------------------------------------- plans */

/* Whether evaluation may go on with a plan: with every input known a plan is complete, but should one
 * still miss something, say so rather than fail without an error. */
gboolean
hg_plan_done(const HgArgs *a, int st)
{
    if (st == PLAN_UNKNOWN)
        return INVALID(a, "the inputs do not determine the output shape");
    return st == PLAN_OK;
}

/* ---------------------------------------------------------------- interval rules
 * Data movement keeps its input's range; ops that add values (pads, fills, extrapolation) take the
 * union with them; Resize bounds its interpolation with the actual kernel weights. */

/* The union of r with the single value v. */
HgRange
hg_range_with(HgRange r, double v)
{
    if (isnan(v)) {
        r.nan = TRUE;
        return r;
    }
    r.lo = MIN(r.lo, v);
    r.hi = MAX(r.hi, v);
    if (v != 0)
        r.tiny = MIN(r.tiny, fabs(v));
    return r;
}

/* Every output takes input 0's range exactly. */
void
hg_range_move(HgRangeCtx *c)
{
    const HgRange *x = hg_range_input(c, 0);
    if (!x)
        return;
    for (guint k = 0; k < c->n_outputs; k++)
        *c->outputs[k] = *x;
}

/* HgArgs over the range context, with constant inputs as values. shapes: g_free. */
HgArgs
hg_args_range(const HgRangeCtx *c, HgValueShape **shapes)
{
    *shapes = g_new0(HgValueShape, c->n_inputs + 1);
    const HgValueShape **ptrs = g_new0(const HgValueShape *, c->n_inputs + 1);
    for (guint i = 0; i < c->n_inputs; i++) {
        if (!c->shapes[i])
            continue;
        (*shapes)[i] = *c->shapes[i];
        if (c->values[i])
            (*shapes)[i].value = (HgArray *)c->values[i];
        ptrs[i] = &(*shapes)[i];
    }
    /* ptrs lives after the shapes: one block to free */
    HgArgs a = {c->node, c->opset, c->n_inputs, ptrs, NULL, NULL};
    return a;
}

void
hg_args_range_free(HgArgs *a, HgValueShape *shapes)
{
    g_free((gpointer)a->shapes);
    g_free(shapes);
}
