/* The tensor family: shape arithmetic (Shape, Size, Range, ConstantOfShape, Reshape, Squeeze...), data
 * movement (Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace...), indexing (Gather*,
 * Scatter*), Resize/Upsample and GridSample.
 *
 * Data movement copies raw elements by their size (hg_dtype_size), so an FP16 tensor moves bit for
 * bit and one kernel serves every dtype; string tensors move their GBytes pointers the same way (8-byte
 * elements) and take references at the end (out_new / out_done). Arithmetic happens only in Resize's
 * linear and cubic modes (FP32, or FP64 for double, rounded once on store), in GridSample (FP64 sums,
 * rounded once) and in Scatter reductions.
 *
 * Shape rules and kernels share one "plan" per op where parameters come from inputs (Slice, Reshape,
 * Pad, Split, Resize...): the plan works on symbolic shapes (SymShape) and on parameters that may be
 * unknown during shape inference, so what the interpreter computes and what inference predicts are one
 * piece of code. Inference folds an op (evaluates it) when every input value is known and the outputs
 * are small: that is how Shape -> Gather -> Concat -> Reshape chains become constants.
 */
#include "ops/kernel.h"
#include "ir_private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Boxes for strided copies: Tile doubles the rank (repeat, dim) pairs. */
#define MAX_BOX (2 * HG_MAX_RANK)
#define NO_INPUT G_MAXUINT

/* ---------------------------------------------------------------- symbolic shapes */

/* What a plan knows of a shape: rank -1 when unknown, dims with v < 0 when unknown (sym may name it). */
typedef struct {
    int rank;
    HgSymDim d[HG_MAX_RANK];
} SymShape;

static void
sym_unknown_dims(SymShape *s, int rank)
{
    s->rank = rank;
    for (int i = 0; i < rank; i++)
        s->d[i] = hg_dim_unknown();
}

static void
sym_from_dims(SymShape *s, guint rank, const gint64 *dims)
{
    s->rank = (int)rank;
    for (guint i = 0; i < rank; i++)
        s->d[i] = hg_dim_known(dims[i]);
}

static gboolean
sym_known(const SymShape *s)
{
    if (s->rank < 0)
        return FALSE;
    for (int i = 0; i < s->rank; i++)
        if (s->d[i].v < 0)
            return FALSE;
    return TRUE;
}

static void
sym_dims(const SymShape *s, gint64 *dims)
{
    for (int i = 0; i < s->rank; i++)
        dims[i] = s->d[i].v;
}

/* Product of dims [from, to): known when all are (or one is 0); the dim itself when it is the only
 * factor other than 1s, so Flatten of [N, C] keeps N's name. */
static HgSymDim
sym_prod(const SymShape *s, int from, int to)
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
    return hg_dim_unknown();
}

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
} Args;

static Args
args_infer(const HgShapeCtx *c)
{
    Args a = {c->node, c->opset, c->n_inputs, c->inputs, NULL, c->error};
    return a;
}

static Args
args_eval(const HgEvalCtx *c)
{
    Args a = {c->node, c->opset, c->n_inputs, NULL, c->inputs, c->error};
    return a;
}

static gboolean
arg_present(const Args *a, guint i)
{
    if (i >= a->n_inputs)
        return FALSE;
    return a->arrays ? a->arrays[i] != NULL : a->shapes[i] != NULL;
}

/* The value of input i when known (always during evaluation), else NULL. */
static const HgArray *
arg_value(const Args *a, guint i)
{
    if (!arg_present(a, i))
        return NULL;
    return a->arrays ? a->arrays[i] : a->shapes[i]->value;
}

static int
arg_dtype(const Args *a, guint i)
{
    if (!arg_present(a, i))
        return HG_DTYPE_UNDEFINED;
    return a->arrays ? a->arrays[i]->dtype : a->shapes[i]->dtype;
}

static void
arg_shape(const Args *a, guint i, SymShape *s)
{
    s->rank = -1;
    if (!arg_present(a, i))
        return;
    if (a->arrays) {
        sym_from_dims(s, a->arrays[i]->rank, a->arrays[i]->dims);
        return;
    }
    const HgValueShape *v = a->shapes[i];
    if (v->rank < 0 || v->rank > HG_MAX_RANK)
        return;
    s->rank = v->rank;
    for (int k = 0; k < v->rank; k++)
        s->d[k] = v->dims[k];
}

static gboolean fail(const Args *a, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Record an error for the node and return FALSE. */
static gboolean
fail(const Args *a, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    hg_op_error(a->error, code, a->node, "%s", msg);
    return FALSE;
}

#define INVALID(a, ...) fail((a), HG_ERROR_INVALID, __VA_ARGS__)
#define UNSUPPORTED(a, ...) fail((a), HG_ERROR_UNSUPPORTED, __VA_ARGS__)

typedef enum { P_ABSENT, P_UNKNOWN, P_KNOWN } PState;

/* An int list given by input `index` (newer opsets) or attribute `attr` (older ones). The input wins
 * when present, so a model that mixes the forms still runs. *vals is g_free'd by the caller. */
static PState
int_list(const Args *a, guint index, const char *attr, gint64 **vals, guint *n)
{
    *vals = NULL;
    *n = 0;
    if (index != NO_INPUT && arg_present(a, index)) {
        const HgArray *v = arg_value(a, index);
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

/* Normalize axes against rank (negative count from the end); repeated axes are an error. */
static gboolean
norm_axes(const Args *a, gint64 *axes, guint n, guint rank)
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

static void
set_out(HgValueShape *o, int dtype, const SymShape *s)
{
    hg_vshape_set(o, dtype, s->rank, s->d);
}

/* ---------------------------------------------------------------- raw elements */

/* Bytes per element as the movers see it: GBytes pointers for strings. */
static gsize
elem_size(int dtype)
{
    return dtype == HG_DTYPE_STRING ? sizeof(gpointer) : hg_dtype_size(dtype);
}

static void *
elem_data(const HgArray *a)
{
    return a->strings ? (void *)a->strings->pdata : a->data;
}

/* A new output for a mover. String outputs start with NULL slots that the kernel fills with borrowed
 * pointers; out_done() then takes a reference on each (and makes NULL slots empty strings). */
static HgArray *
out_new(const Args *a, int dtype, guint rank, const gint64 *dims)
{
    GError *err = NULL;
    HgArray *o = hg_array_new(dtype, rank, dims, &err);
    if (!o) {
        fail(a, err->code, "%s", err->message);
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

static HgArray *
out_done(HgArray *o)
{
    if (o && o->strings)
        for (guint i = 0; i < o->strings->len; i++)
            o->strings->pdata[i] = o->strings->pdata[i] ? g_bytes_ref(o->strings->pdata[i])
                                                        : g_bytes_new(NULL, 0);
    return o;
}

static void
out_drop(HgArray *o)
{
    hg_array_unref(out_done(o));
}

/* A strided box copy: dst[i] = src[i] over dims, with per-dim strides in elements for each side (0
 * broadcasts, negative walks backwards). Transpose, Slice, Expand, Tile and DepthToSpace are boxes. */
typedef struct {
    guint rank;
    gint64 dims[MAX_BOX];
    gint64 ds[MAX_BOX], ss[MAX_BOX];
} Box;

/* Drop unit dims and merge neighbours that are contiguous on both sides, so inner loops run long. */
static void
box_simplify(Box *b)
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

/* Walk an odometer over dims [0, n): advance idx and the two offsets by one step. */
static inline void
odometer_step(guint n, const gint64 *dims, const gint64 *ds, const gint64 *ss, gint64 *idx,
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

/* A box whose innermost destination dim reads with a stride while another dim j reads contiguously
 * (NCHW <-> NHWC and every other transpose): copy 2-D tiles of (j, last) for each index of the rest. */
static void
box_transpose(void *dst, const void *src, const Box *b, guint j, gsize es)
{
    guint r = b->rank, no = 0;
    gint64 od[MAX_BOX], ods[MAX_BOX], oss[MAX_BOX], idx[MAX_BOX] = {0};
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
        odometer_step(no, od, ods, oss, idx, &doff, &soff);
    }
}

static void
box_copy(void *dst, const void *src, const Box *box, gsize es)
{
    Box b = *box;
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
    gint64 outer = 1, idx[MAX_BOX] = {0}, doff = 0, soff = 0;
    for (guint i = 0; i + 1 < r; i++)
        outer *= b.dims[i];
    for (gint64 o = 0; o < outer; o++) {
        HG_WIDTH_SWITCH(es, ROW_COPY);
        odometer_step(r - 1, b.dims, b.ds, b.ss, idx, &doff, &soff);
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
static void
table_gather(void *dst, const void *src, guint rank, const gint64 *out_dims, const gint64 *in_dims,
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
static void
scalar_bytes(const HgArray *v, double dflt, int dtype, void *buf)
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
static HgArray *
i64_array(guint rank, const gint64 *dims, const gint64 *vals)
{
    HgArray *a = hg_array_new(HG_DTYPE_INT64, rank, dims, NULL);
    if (a && a->numel)
        memcpy(a->data, vals, sizeof(gint64) * (gsize)a->numel);
    return a;
}


/* ================================================================ Shape, Size */

/* The [start, end) dims that Shape reports: opset 15 attributes, negative from the end, clamped. */
static void
shape_range(const HgNode *n, gint64 rank, gint64 *start, gint64 *end)
{
    gint64 s = hg_node_attr_int(n, "start", 0), e = hg_node_attr_int(n, "end", rank);
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = CLAMP(s, 0, rank);
    e = CLAMP(e, 0, rank);
    *start = s;
    *end = MAX(e, s);
}

gboolean
hg_infer_Shape(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!o)
        return TRUE;
    if (x.rank < 0) {
        sym_unknown_dims(&y, 1);
        set_out(o, HG_DTYPE_INT64, &y);
        return TRUE;
    }
    gint64 s, e, vals[HG_MAX_RANK];
    shape_range(ctx->node, x.rank, &s, &e);
    y.rank = 1;
    y.d[0] = hg_dim_known(e - s);
    set_out(o, HG_DTYPE_INT64, &y);
    for (gint64 i = s; i < e; i++) {
        if (x.d[i].v < 0)
            return TRUE;
        vals[i - s] = x.d[i].v;
    }
    gint64 n = e - s;
    o->value = i64_array(1, &n, vals);
    return TRUE;
}

gboolean
hg_eval_Shape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    const HgArray *x = ctx->inputs[0];
    gint64 s, e;
    shape_range(ctx->node, x->rank, &s, &e);
    gint64 n = e - s;
    ctx->outputs[0] = i64_array(1, &n, x->dims + s);
    return TRUE;
}

gboolean
hg_infer_Size(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    SymShape x, y = {0};
    arg_shape(&a, 0, &x);
    if (!o)
        return TRUE;
    set_out(o, HG_DTYPE_INT64, &y);
    HgSymDim n = x.rank >= 0 ? sym_prod(&x, 0, x.rank) : hg_dim_unknown();
    if (n.v >= 0)
        o->value = i64_array(0, NULL, &n.v);
    return TRUE;
}

gboolean
hg_eval_Size(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    ctx->outputs[0] = i64_array(0, NULL, &ctx->inputs[0]->numel);
    return TRUE;
}

/* ================================================================ Constant */

/* The constant a Constant node holds, from whichever value* attribute it has. NULL with an error when
 * it has none, or only sparse_value (not supported). */
static HgArray *
constant_value(const Args *a)
{
    const HgNode *n = a->node;
    HgAttr *at;
    GError *err = NULL;
    HgArray *v = NULL;
    if ((at = hg_node_attr(n, "value")) && at->t) {
        v = hg_array_from_tensor(at->t, &err);
        if (!v) {
            fail(a, err->code, "%s", err->message);
            g_error_free(err);
        }
        return v;
    }
    if ((at = hg_node_attr(n, "value_float"))) {
        float f = at->f;
        v = hg_array_new(HG_DTYPE_FLOAT, 0, NULL, NULL);
        memcpy(v->data, &f, sizeof(f));
        return v;
    }
    if ((at = hg_node_attr(n, "value_int"))) {
        return i64_array(0, NULL, &at->i);
    }
    if ((at = hg_node_attr(n, "value_floats"))) {
        gint64 len = at->floats ? at->floats->len : 0;
        v = hg_array_new(HG_DTYPE_FLOAT, 1, &len, NULL);
        if (len)
            memcpy(v->data, at->floats->data, sizeof(float) * (gsize)len);
        return v;
    }
    if ((at = hg_node_attr(n, "value_ints"))) {
        gint64 len = at->ints ? at->ints->len : 0;
        v = hg_array_new(HG_DTYPE_INT64, 1, &len, NULL);
        if (len)
            memcpy(v->data, at->ints->data, sizeof(gint64) * (gsize)len);
        return v;
    }
    if ((at = hg_node_attr(n, "value_string"))) {
        v = hg_array_new(HG_DTYPE_STRING, 0, NULL, NULL);
        if (at->s) {
            g_bytes_unref(v->strings->pdata[0]);
            v->strings->pdata[0] = g_bytes_ref(at->s);
        }
        return v;
    }
    if ((at = hg_node_attr(n, "value_strings"))) {
        gint64 len = at->strings ? at->strings->len : 0;
        v = hg_array_new(HG_DTYPE_STRING, 1, &len, NULL);
        for (gint64 i = 0; i < len; i++) {
            g_bytes_unref(v->strings->pdata[i]);
            v->strings->pdata[i] = g_bytes_ref(at->strings->pdata[i]);
        }
        return v;
    }
    if (hg_node_attr(n, "sparse_value")) {
        UNSUPPORTED(a, "sparse_value constants are not supported");
        return NULL;
    }
    INVALID(a, "no value attribute");
    return NULL;
}

gboolean
hg_infer_Constant(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    HgValueShape *o = hg_shape_output(ctx, 0);
    GError *err = NULL;
    a.error = &err;
    HgArray *v = constant_value(&a);
    if (!v) {
        if (err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_error_free(err);
        return TRUE;
    }
    if (!o) {
        hg_array_unref(v);
        return TRUE;
    }
    SymShape s;
    sym_from_dims(&s, v->rank, v->dims);
    set_out(o, v->dtype, &s);
    /* A view of the attribute's tensor: keeping it costs nothing, whatever its size. */
    if (o->value)
        hg_array_unref(o->value);
    o->value = v;
    return TRUE;
}

gboolean
hg_eval_Constant(HgEvalCtx *ctx)
{
    Args a = args_eval(ctx);
    HgArray *v = constant_value(&a);
    if (!v)
        return FALSE;
    ctx->outputs[0] = v;
    return TRUE;
}

/* ================================================================ ConstantOfShape */

/* The fill value: the 'value' attribute (a one-element tensor), float 0 by default. */
static HgArray *
cos_value(const Args *a)
{
    HgAttr *at = hg_node_attr(a->node, "value");
    if (!at || !at->t)
        return hg_array_new(HG_DTYPE_FLOAT, 0, NULL, NULL);
    GError *err = NULL;
    HgArray *v = hg_array_from_tensor(at->t, &err);
    if (!v) {
        fail(a, err->code, "%s", err->message);
        g_error_free(err);
        return NULL;
    }
    if (v->numel != 1 || v->strings) {
        hg_array_unref(v);
        INVALID(a, "value must hold one number");
        return NULL;
    }
    return v;
}

/* The output dims from the shape input: 1 known, 0 unknown (rank filled when the input's length is
 * known), -1 error. */
static int
cos_plan(const Args *a, SymShape *out)
{
    g_autofree gint64 *dims = NULL;
    guint n;
    out->rank = -1;
    PState ps = int_list(a, 0, NULL, &dims, &n);
    if (ps != P_KNOWN) {
        SymShape s;
        arg_shape(a, 0, &s);
        if (s.rank == 1 && s.d[0].v >= 0 && s.d[0].v <= HG_MAX_RANK)
            sym_unknown_dims(out, (int)s.d[0].v);
        return 0;
    }
    if (n > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", n, HG_MAX_RANK);
        return -1;
    }
    for (guint i = 0; i < n; i++) {
        if (dims[i] < 0) {
            INVALID(a, "negative dim %" G_GINT64_FORMAT, dims[i]);
            return -1;
        }
    }
    sym_from_dims(out, n, dims);
    return 1;
}

gboolean
hg_infer_ConstantOfShape(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    GError *err = NULL;
    a.error = &err;
    g_autoptr(HgArray) v = cos_value(&a);
    SymShape y;
    int st = v ? cos_plan(&a, &y) : -1;
    if (st < 0) {
        if (err->code == HG_ERROR_INVALID) {
            g_propagate_error(ctx->error, err);
            return FALSE;
        }
        g_error_free(err);
        return TRUE;
    }
    set_out(hg_shape_output(ctx, 0), v->dtype, &y);
    return st > 0 ? hg_fold(ctx, hg_eval_ConstantOfShape, HG_FOLD_STRICT) : TRUE;
}

#define FILL(T)                                                                                    \
    do {                                                                                           \
        T *d_ = (T *)out->data, v_;                                                                \
        memcpy(&v_, v->data, sizeof(T));                                                           \
        for (gint64 i_ = 0; i_ < out->numel; i_++)                                                 \
            d_[i_] = v_;                                                                           \
    } while (0)

gboolean
hg_eval_ConstantOfShape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    g_autoptr(HgArray) v = cos_value(&a);
    SymShape y;
    int st = v ? cos_plan(&a, &y) : -1;
    if (st == 0)
        return INVALID(&a, "the shape input is not readable");
    if (st < 0)
        return FALSE;
    gint64 dims[HG_MAX_RANK];
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, v->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    HG_WIDTH_SWITCH(elem_size(v->dtype), FILL);
    ctx->outputs[0] = out;
    return TRUE;
}

/* ================================================================ Range */

/* Elements Range produces: max(ceil((limit - start) / delta), 0), exact for integers. */
static gboolean
range_count(const Args *a, const HgArray *start, const HgArray *limit, const HgArray *delta,
            gint64 *count)
{
    if (start->numel != 1 || limit->numel != 1 || delta->numel != 1)
        return INVALID(a, "start, limit and delta must be scalars");
    if (hg_dtype_compute(start->dtype) == HG_COMPUTE_I64) {
        gint64 s = hg_array_get_i64(start, 0), l = hg_array_get_i64(limit, 0);
        gint64 d = hg_array_get_i64(delta, 0);
        if (d == 0)
            return INVALID(a, "delta is 0");
        /* unsigned differences: limit - start may not fit in int64 */
        if (d > 0)
            *count = l > s ? (gint64)(((guint64)l - (guint64)s - 1) / (guint64)d + 1) : 0;
        else
            *count = s > l ? (gint64)(((guint64)s - (guint64)l - 1) / (0 - (guint64)d) + 1) : 0;
        return TRUE;
    }
    double s = hg_array_get_f64(start, 0), l = hg_array_get_f64(limit, 0);
    double d = hg_array_get_f64(delta, 0);
    double c = ceil((l - s) / d);
    if (d == 0 || !isfinite(c))
        return INVALID(a, "start, limit and delta give no finite count");
    *count = c > 0 ? (c < 9e18 ? (gint64)c : G_MAXINT64) : 0;
    return TRUE;
}

gboolean
hg_infer_Range(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape y;
    const HgArray *s = arg_value(&a, 0), *l = arg_value(&a, 1), *d = arg_value(&a, 2);
    sym_unknown_dims(&y, 1);
    if (s && l && d) {
        gint64 n;
        if (!range_count(&a, s, l, d, &n))
            return FALSE;
        y.d[0] = hg_dim_known(n);
    }
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Range, HG_FOLD_STRICT);
}

gboolean
hg_eval_Range(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *s = ctx->inputs[0], *l = ctx->inputs[1], *d = ctx->inputs[2];
    gint64 n;
    if (!range_count(&a, s, l, d, &n))
        return FALSE;
    HgArray *out = out_new(&a, s->dtype, 1, &n);
    if (!out)
        return FALSE;
    switch (hg_dtype_compute(s->dtype)) {
    case HG_COMPUTE_I64: {
        g_autofree gint64 *v = g_try_new(gint64, n + 1);
        if (!v) {
            out_drop(out);
            return INVALID(&a, "out of memory for %" G_GINT64_FORMAT " elements", n);
        }
        guint64 s0 = (guint64)hg_array_get_i64(s, 0), d0 = (guint64)hg_array_get_i64(d, 0);
        for (gint64 i = 0; i < n; i++) /* wraps like the narrow type would, without overflow UB */
            v[i] = (gint64)(s0 + (guint64)i * d0);
        hg_array_store_i64(out, v);
        break;
    }
    case HG_COMPUTE_F32:
    case HG_COMPUTE_F64: {
        g_autofree double *v = g_try_new(double, n + 1);
        if (!v) {
            out_drop(out);
            return INVALID(&a, "out of memory for %" G_GINT64_FORMAT " elements", n);
        }
        double s0 = hg_array_get_f64(s, 0), d0 = hg_array_get_f64(d, 0);
        for (gint64 i = 0; i < n; i++)
            v[i] = s0 + (double)i * d0;
        hg_array_store_f64(out, v);
        break;
    }
    default:
        out_drop(out);
        return UNSUPPORTED(&a, "Range of %s", hg_dtype_name(s->dtype));
    }
    ctx->outputs[0] = out;
    return TRUE;
}

/* ================================================================ views: Reshape, Flatten, Squeeze,
 * Unsqueeze. The output shares the input's data (hg_array_reshape_view). */

/* What a plan found: PLAN_OK means every output dim and every kernel parameter is known. */
enum { PLAN_ERR = -1, PLAN_UNKNOWN = 0, PLAN_OK = 1 };

/* Whether evaluation may go on with a plan: with every input known a plan is complete, but should one
 * still miss something, say so rather than fail without an error. */
static gboolean
plan_done(const Args *a, int st)
{
    if (st == PLAN_UNKNOWN)
        return INVALID(a, "the inputs do not determine the output shape");
    return st == PLAN_OK;
}

/* Fill y with rank taken from the length of a 1-D parameter input when only that is known. */
static void
rank_from_param(const Args *a, guint index, int extra, SymShape *y)
{
    SymShape s;
    arg_shape(a, index, &s);
    y->rank = -1;
    if (s.rank == 1 && s.d[0].v >= 0 && s.d[0].v + extra >= 0 && s.d[0].v + extra <= HG_MAX_RANK)
        sym_unknown_dims(y, (int)(s.d[0].v + extra));
}

static HgArray *
view_output(const Args *a, HgArray *x, const SymShape *y)
{
    gint64 dims[HG_MAX_RANK];
    sym_dims(y, dims);
    GError *err = NULL;
    HgArray *v = hg_array_reshape_view(x, (guint)y->rank, dims, &err);
    if (!v) {
        fail(a, HG_ERROR_INVALID, "%s", err->message);
        g_error_free(err);
    }
    return v;
}

static gboolean
mul_ok(gint64 *p, gint64 v)
{
    if (v && *p > G_MAXINT64 / v)
        return FALSE;
    *p *= v;
    return TRUE;
}

/* Reshape's output: 0 copies the input dim (unless allowzero, opset 14), -1 takes what is left. The
 * -1 is found even with unknown input dims when those dims are the copied ones: [B, 12, 64] with
 * [0, -1] gives [B, 768]. */
static int
reshape_plan(const Args *a, const SymShape *x, SymShape *y)
{
    g_autofree gint64 *req = NULL;
    guint n;
    y->rank = -1;
    PState ps = int_list(a, 1, "shape", &req, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no shape input");
        return PLAN_ERR;
    }
    if (ps == P_UNKNOWN) {
        rank_from_param(a, 1, 0, y);
        return PLAN_UNKNOWN;
    }
    if (n > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", n, HG_MAX_RANK);
        return PLAN_ERR;
    }
    gboolean allowzero = hg_node_attr_int(a->node, "allowzero", 0) != 0, has_zero = FALSE;
    gboolean copied[HG_MAX_RANK] = {FALSE};
    int neg = -1;
    y->rank = (int)n;
    for (guint i = 0; i < n; i++) {
        gint64 v = req[i];
        if (v == 0 && !allowzero) {
            if (x->rank >= 0 && (int)i >= x->rank) {
                INVALID(a, "shape[%u] is 0 (copy) but the input has rank %d", i, x->rank);
                return PLAN_ERR;
            }
            y->d[i] = x->rank >= 0 ? x->d[i] : hg_dim_unknown();
            copied[i] = TRUE;
        } else if (v == -1) {
            if (neg >= 0) {
                INVALID(a, "shape has more than one -1");
                return PLAN_ERR;
            }
            neg = (int)i;
            y->d[i] = hg_dim_unknown();
        } else if (v < 0) {
            INVALID(a, "shape[%u] is %" G_GINT64_FORMAT, i, v);
            return PLAN_ERR;
        } else {
            has_zero |= v == 0;
            y->d[i] = hg_dim_known(v);
        }
    }
    if (allowzero && has_zero && neg >= 0) {
        INVALID(a, "allowzero with both 0 and -1 in shape");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
    /* Products over the dims that are not copied: the copied ones cancel. */
    gint64 pin = 1, pout = 1;
    gboolean in_known = TRUE, out_known = TRUE;
    for (int i = 0; i < x->rank; i++) {
        if (i < (int)n && copied[i])
            continue;
        if (x->d[i].v < 0 || !mul_ok(&pin, x->d[i].v))
            in_known = FALSE;
    }
    for (guint i = 0; i < n; i++) {
        if ((int)i == neg || copied[i])
            continue;
        if (y->d[i].v < 0 || !mul_ok(&pout, y->d[i].v))
            out_known = FALSE;
    }
    if (in_known && out_known) {
        if (neg >= 0) {
            if (pout == 0) {
                if (pin != 0) {
                    INVALID(a, "cannot infer -1 of a reshape to zero elements");
                    return PLAN_ERR;
                }
                y->d[neg] = hg_dim_known(0);
            } else if (pin % pout) {
                INVALID(a, "cannot reshape %" G_GINT64_FORMAT " elements into a multiple of %" G_GINT64_FORMAT,
                        pin, pout);
                return PLAN_ERR;
            } else {
                y->d[neg] = hg_dim_known(pin / pout);
            }
        } else if (pin != pout) {
            INVALID(a, "cannot reshape %" G_GINT64_FORMAT " elements into %" G_GINT64_FORMAT, pin, pout);
            return PLAN_ERR;
        }
    }
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Reshape(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (reshape_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Reshape, HG_FOLD_STRICT);
}

gboolean
hg_eval_Reshape(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!plan_done(&a, reshape_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

static gboolean
flatten_plan(const Args *a, const SymShape *x, SymShape *y)
{
    gint64 axis = hg_node_attr_int(a->node, "axis", 1);
    sym_unknown_dims(y, 2);
    if (x->rank < 0)
        return TRUE;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return INVALID(a, "axis %" G_GINT64_FORMAT " is out of range for rank %d",
                       hg_node_attr_int(a->node, "axis", 1), x->rank);
    y->d[0] = sym_prod(x, 0, (int)axis);
    y->d[1] = sym_prod(x, (int)axis, x->rank);
    return TRUE;
}

gboolean
hg_infer_Flatten(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!flatten_plan(&a, &x, &y))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Flatten, HG_FOLD_STRICT);
}

gboolean
hg_eval_Flatten(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!flatten_plan(&a, &x, &y))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* Squeeze: axes from the attribute (before 13) or input 1; without axes every dim of size 1 goes. */
static int
squeeze_plan(const Args *a, const SymShape *x, SymShape *y)
{
    g_autofree gint64 *axes = NULL;
    guint n;
    y->rank = -1;
    PState ps = int_list(a, 1, "axes", &axes, &n);
    if (ps == P_UNKNOWN) {
        SymShape s;
        arg_shape(a, 1, &s);
        if (x->rank >= 0 && s.rank == 1 && s.d[0].v >= 0 && s.d[0].v <= x->rank)
            sym_unknown_dims(y, x->rank - (int)s.d[0].v);
        return PLAN_UNKNOWN;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    gboolean drop[HG_MAX_RANK] = {FALSE};
    if (ps == P_ABSENT) {
        for (int i = 0; i < x->rank; i++) {
            if (x->d[i].v < 0)
                return PLAN_UNKNOWN;
            drop[i] = x->d[i].v == 1;
        }
    } else {
        if (!norm_axes(a, axes, n, (guint)x->rank))
            return PLAN_ERR;
        for (guint i = 0; i < n; i++) {
            gint64 d = x->d[axes[i]].v;
            if (d >= 0 && d != 1) {
                INVALID(a, "cannot squeeze axis %" G_GINT64_FORMAT " of size %" G_GINT64_FORMAT, axes[i], d);
                return PLAN_ERR;
            }
            drop[axes[i]] = TRUE;
        }
    }
    y->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            y->d[y->rank++] = x->d[i];
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Squeeze(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (squeeze_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Squeeze, HG_FOLD_STRICT);
}

gboolean
hg_eval_Squeeze(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!plan_done(&a, squeeze_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* Unsqueeze: axes (attribute before 13, input from 13) name positions in the output. */
static int
unsqueeze_plan(const Args *a, const SymShape *x, SymShape *y)
{
    g_autofree gint64 *axes = NULL;
    guint n;
    y->rank = -1;
    PState ps = int_list(a, 1, "axes", &axes, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no axes");
        return PLAN_ERR;
    }
    if (ps == P_UNKNOWN) {
        if (x->rank >= 0)
            rank_from_param(a, 1, x->rank, y);
        return PLAN_UNKNOWN;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    guint r = (guint)x->rank + n;
    if (r > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", r, HG_MAX_RANK);
        return PLAN_ERR;
    }
    if (!norm_axes(a, axes, n, r))
        return PLAN_ERR;
    gboolean one[HG_MAX_RANK] = {FALSE};
    for (guint i = 0; i < n; i++)
        one[axes[i]] = TRUE;
    y->rank = (int)r;
    for (guint i = 0, k = 0; i < r; i++)
        y->d[i] = one[i] ? hg_dim_known(1) : x->d[k++];
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Unsqueeze(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (unsqueeze_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Unsqueeze, HG_FOLD_STRICT);
}

gboolean
hg_eval_Unsqueeze(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (!plan_done(&a, unsqueeze_plan(&a, &x, &y)))
        return FALSE;
    return (ctx->outputs[0] = view_output(&a, ctx->inputs[0], &y)) != NULL;
}

/* ================================================================ Transpose */

/* perm: the attribute, reversed dims by default; it must be a permutation of the rank. */
static gboolean
transpose_perm(const Args *a, int rank, gint64 *perm)
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
    return norm_axes(a, perm, n, (guint)rank);
}

gboolean
hg_infer_Transpose(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    gint64 perm[HG_MAX_RANK];
    arg_shape(&a, 0, &x);
    y.rank = x.rank;
    if (x.rank >= 0) {
        if (!transpose_perm(&a, x.rank, perm))
            return FALSE;
        for (int i = 0; i < x.rank; i++)
            y.d[i] = x.d[perm[i]];
    }
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Transpose, HG_FOLD_STRICT);
}

gboolean
hg_eval_Transpose(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    gint64 perm[HG_MAX_RANK], st[HG_MAX_RANK], dims[HG_MAX_RANK];
    if (!transpose_perm(&a, (int)x->rank, perm))
        return FALSE;
    hg_strides(x->rank, x->dims, st);
    for (guint i = 0; i < x->rank; i++)
        dims[i] = x->dims[perm[i]];
    HgArray *out = out_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    Box b = {x->rank, {0}, {0}, {0}};
    hg_strides(x->rank, dims, b.ds);
    for (guint i = 0; i < x->rank; i++) {
        b.dims[i] = dims[i];
        b.ss[i] = st[perm[i]];
    }
    box_copy(elem_data(out), elem_data(x), &b, elem_size(x->dtype));
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ Concat, Split */

gboolean
hg_infer_Concat(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape y = {-1, {{0, NULL}}};
    int dtype = HG_DTYPE_UNDEFINED;
    gint64 axis = hg_node_attr_int(ctx->node, "axis", 0);
    for (guint i = 0; i < ctx->n_inputs; i++) {
        SymShape x;
        arg_shape(&a, i, &x);
        if (dtype == HG_DTYPE_UNDEFINED)
            dtype = arg_dtype(&a, i);
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
        SymShape x;
        arg_shape(&a, i, &x);
        if (x.rank < 0)
            y.d[axis] = hg_dim_unknown();
    }
    set_out(hg_shape_output(ctx, 0), dtype, &y);
    return hg_fold(ctx, hg_eval_Concat, HG_FOLD_STRICT);
}

gboolean
hg_eval_Concat(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
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
    HgArray *out = out_new(&a, x0->dtype, x0->rank, dims);
    if (!out)
        return FALSE;
    gsize es = elem_size(x0->dtype);
    gint64 outer = hg_numel((guint)axis, dims), inner = hg_numel(x0->rank - (guint)axis - 1, dims + axis + 1);
    gint64 out_row = dims[axis] * inner, off = 0;
    char *d = elem_data(out);
    for (guint i = 0; i < ctx->n_inputs; i++) {
        const HgArray *x = ctx->inputs[i];
        const char *s = elem_data(x);
        gint64 row = x->dims[axis] * inner;
        if (row)
            for (gint64 o = 0; o < outer; o++)
                memcpy(d + (gsize)(o * out_row + off) * es, s + (gsize)(o * row) * es, (gsize)row * es);
        off += row;
    }
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* Split sizes along axis: the split input (13+) or attribute (before 13), else num_outputs (18) chunks
 * of ceil(D / n) with a smaller last one, else equal parts for the outputs there are. */
static int
split_plan(const Args *a, const SymShape *x, guint n_out, gint64 *axis, gint64 *sizes)
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
    PState ps = int_list(a, 1, "split", &split, &n);
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
    Args a = args_infer(ctx);
    SymShape x;
    gint64 axis = 0;
    g_autofree gint64 *sizes = g_new0(gint64, ctx->n_outputs + 1);
    arg_shape(&a, 0, &x);
    int st = split_plan(&a, &x, ctx->n_outputs, &axis, sizes);
    if (st == PLAN_ERR)
        return FALSE;
    for (guint k = 0; k < ctx->n_outputs; k++) {
        SymShape y = x;
        if (x.rank >= 0)
            y.d[axis] = st == PLAN_OK ? hg_dim_known(sizes[k]) : hg_dim_unknown();
        set_out(hg_shape_output(ctx, k), arg_dtype(&a, 0), &y);
    }
    return hg_fold(ctx, hg_eval_Split, HG_FOLD_STRICT);
}

gboolean
hg_eval_Split(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs;
    gint64 axis = 0;
    g_autofree gint64 *sizes = g_new0(gint64, ctx->n_outputs + 1);
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, split_plan(&a, &xs, ctx->n_outputs, &axis, sizes)))
        return FALSE;
    gsize es = elem_size(x->dtype);
    gint64 outer = hg_numel((guint)axis, x->dims), inner = hg_numel(x->rank - (guint)axis - 1, x->dims + axis + 1);
    gint64 in_row = x->dims[axis] * inner, off = 0;
    const char *s = elem_data(x);
    for (guint k = 0; k < ctx->n_outputs; k++) {
        gint64 dims[HG_MAX_RANK];
        memcpy(dims, x->dims, sizeof(gint64) * x->rank);
        dims[axis] = sizes[k];
        HgArray *out = out_new(&a, x->dtype, x->rank, dims);
        if (!out) {
            for (guint j = 0; j < k; j++)
                g_clear_pointer(&ctx->outputs[j], hg_array_unref);
            return FALSE;
        }
        char *d = elem_data(out);
        gint64 row = sizes[k] * inner;
        if (row)
            for (gint64 o = 0; o < outer; o++)
                memcpy(d + (gsize)(o * row) * es, s + (gsize)(o * in_row + off) * es, (gsize)row * es);
        off += row;
        ctx->outputs[k] = out_done(out);
    }
    return TRUE;
}

/* ================================================================ Slice */

/* Slice: starts/ends/axes as attributes before opset 10, inputs (with steps) from 10. Negative
 * starts/ends count from the end; then starts clamp to [0, d] and ends to [0, d] for positive steps,
 * to [0, d-1] and [-1, d-1] for negative ones. */
static int
slice_plan(const Args *a, const SymShape *x, SymShape *y, gint64 *start, gint64 *step)
{
    g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
    guint ns, ne, na, nt;
    *y = *x;
    for (int i = 0; i < HG_MAX_RANK; i++) {
        start[i] = 0;
        step[i] = 1;
    }
    PState ps = int_list(a, 1, "starts", &starts, &ns);
    PState pe = int_list(a, 2, "ends", &ends, &ne);
    PState pa = int_list(a, 3, "axes", &axes, &na);
    PState pt = int_list(a, 4, NULL, &steps, &nt);
    if (ps == P_ABSENT || pe == P_ABSENT) {
        INVALID(a, "starts and ends are required");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (ps == P_UNKNOWN || pe == P_UNKNOWN || pa == P_UNKNOWN || pt == P_UNKNOWN) {
        /* the sliced axes lose their dims when they are known; the others keep theirs */
        guint n = pa == P_KNOWN ? na : ps == P_KNOWN ? ns : pe == P_KNOWN ? ne : G_MAXUINT;
        if (pa == P_UNKNOWN || n == G_MAXUINT) {
            sym_unknown_dims(y, x->rank);
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
    if (!norm_axes(a, axes, ns, (guint)x->rank))
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
    return known && sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Slice(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    gint64 start[HG_MAX_RANK], step[HG_MAX_RANK];
    arg_shape(&a, 0, &x);
    if (slice_plan(&a, &x, &y, start, step) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Slice, HG_FOLD_STRICT);
}

gboolean
hg_eval_Slice(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    gint64 start[HG_MAX_RANK], step[HG_MAX_RANK], st[HG_MAX_RANK], dims[HG_MAX_RANK];
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, slice_plan(&a, &xs, &y, start, step)))
        return FALSE;
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    gsize es = elem_size(x->dtype);
    Box b = {x->rank, {0}, {0}, {0}};
    gint64 off = 0;
    hg_strides(x->rank, x->dims, st);
    hg_strides(x->rank, dims, b.ds);
    for (guint i = 0; i < x->rank; i++) {
        b.dims[i] = dims[i];
        b.ss[i] = st[i] * step[i];
        off += start[i] * st[i];
    }
    if (out->numel)
        box_copy(elem_data(out), (const char *)elem_data(x) + (gsize)off * es, &b, es);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ Expand, Tile */

/* Expand broadcasts both ways: a 1 in shape keeps the input's dim. */
static int
expand_plan(const Args *a, const SymShape *x, SymShape *y)
{
    g_autofree gint64 *shape = NULL;
    guint n;
    y->rank = -1;
    PState ps = int_list(a, 1, NULL, &shape, &n);
    if (ps == P_ABSENT) {
        INVALID(a, "no shape input");
        return PLAN_ERR;
    }
    if (ps == P_UNKNOWN || x->rank < 0)
        return PLAN_UNKNOWN;
    guint r = MAX((guint)x->rank, n);
    if (r > HG_MAX_RANK) {
        UNSUPPORTED(a, "rank %u is above %d", r, HG_MAX_RANK);
        return PLAN_ERR;
    }
    y->rank = (int)r;
    for (guint i = 0; i < r; i++) {
        HgSymDim xa = i < r - (guint)x->rank ? hg_dim_known(1) : x->d[i - (r - (guint)x->rank)];
        gint64 b = i < r - n ? 1 : shape[i - (r - n)];
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
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Expand(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    arg_shape(&a, 0, &x);
    if (expand_plan(&a, &x, &y) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Expand, HG_FOLD_STRICT);
}

gboolean
hg_eval_Expand(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    gint64 dims[HG_MAX_RANK];
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, expand_plan(&a, &xs, &y)))
        return FALSE;
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    Box b = {(guint)y.rank, {0}, {0}, {0}};
    memcpy(b.dims, dims, sizeof(gint64) * (gsize)y.rank);
    hg_strides((guint)y.rank, dims, b.ds);
    hg_broadcast_strides(x->rank, x->dims, (guint)y.rank, dims, b.ss);
    box_copy(elem_data(out), elem_data(x), &b, elem_size(x->dtype));
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

static int
tile_plan(const Args *a, const SymShape *x, SymShape *y, gint64 *reps)
{
    g_autofree gint64 *r = NULL;
    guint n;
    PState ps = int_list(a, 1, NULL, &r, &n);
    *y = *x;
    if (ps == P_ABSENT) {
        INVALID(a, "no repeats input");
        return PLAN_ERR;
    }
    if (x->rank < 0) {
        rank_from_param(a, 1, 0, y);
        return PLAN_UNKNOWN;
    }
    if (ps == P_UNKNOWN) {
        sym_unknown_dims(y, x->rank);
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
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Tile(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    gint64 reps[HG_MAX_RANK];
    arg_shape(&a, 0, &x);
    if (tile_plan(&a, &x, &y, reps) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Tile, HG_FOLD_STRICT);
}

gboolean
hg_eval_Tile(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    gint64 reps[HG_MAX_RANK], dims[HG_MAX_RANK], ods[HG_MAX_RANK], xst[HG_MAX_RANK];
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, tile_plan(&a, &xs, &y, reps)))
        return FALSE;
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    /* The output as (repeat, dim) pairs: the repeat reads the same source (stride 0). */
    Box b = {2 * x->rank, {0}, {0}, {0}};
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
    box_copy(elem_data(out), elem_data(x), &b, elem_size(x->dtype));
    ctx->outputs[0] = out_done(out);
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
pad_plan(const Args *a, const SymShape *x, SymShape *y, PadPlan *p)
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
    PState pp = int_list(a, 1, "pads", &pads, &np);
    if (pp == P_ABSENT)
        pp = int_list(a, NO_INPUT, "paddings", &pads, &np); /* Pad-1 */
    PState pa = int_list(a, 3, NULL, &axes, &na);
    if (pp == P_ABSENT) {
        INVALID(a, "no pads");
        return PLAN_ERR;
    }
    if (x->rank < 0)
        return PLAN_UNKNOWN;
    if (pp == P_UNKNOWN || pa == P_UNKNOWN) {
        sym_unknown_dims(y, x->rank);
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
    if (!norm_axes(a, axes, na, (guint)x->rank))
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
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

gboolean
hg_infer_Pad(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    PadPlan p;
    arg_shape(&a, 0, &x);
    if (pad_plan(&a, &x, &y, &p) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
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
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    PadPlan p;
    gint64 dims[HG_MAX_RANK];
    gint64 *maps[HG_MAX_RANK] = {NULL};
    guint8 fill[16];
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, pad_plan(&a, &xs, &y, &p)))
        return FALSE;
    sym_dims(&y, dims);
    const HgArray *cv = arg_present(&a, 2) ? ctx->inputs[2] : NULL;
    scalar_bytes(cv, hg_node_attr_float(ctx->node, "value", 0.0f), x->dtype, fill);
    HgArray *out = out_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    for (guint i = 0; i < x->rank; i++) {
        maps[i] = g_new(gint64, dims[i] + 1);
        for (gint64 o = 0; o < dims[i]; o++)
            maps[i][o] = pad_source(p.mode, o, p.begin[i], x->dims[i]);
    }
    table_gather(elem_data(out), elem_data(x), x->rank, dims, x->dims, maps, fill, elem_size(x->dtype));
    for (guint i = 0; i < x->rank; i++)
        g_free(maps[i]);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ DepthToSpace, SpaceToDepth */

/* Both are a reshape to 6-D, a transpose and a reshape back: one Box each. */
static gboolean
d2s_plan(const Args *a, gboolean to_space, const SymShape *x, SymShape *y, gint64 *bs)
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
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    gint64 bs, dims[4];
    arg_shape(&a, 0, &xs);
    if (!d2s_plan(&a, to_space, &xs, &y, &bs))
        return FALSE;
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, 4, dims);
    if (!out)
        return FALSE;
    gint64 n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3], b = bs;
    gint64 sn = c * h * w;
    Box box = {6, {0}, {0}, {0}};
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
            out_drop(out);
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
    box_copy(elem_data(out), elem_data(x), &box, elem_size(x->dtype));
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

gboolean
hg_infer_DepthToSpace(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    gint64 bs;
    arg_shape(&a, 0, &x);
    if (!d2s_plan(&a, TRUE, &x, &y, &bs))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
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
    Args a = args_infer(ctx);
    SymShape x, y;
    gint64 bs;
    arg_shape(&a, 0, &x);
    if (!d2s_plan(&a, FALSE, &x, &y, &bs))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
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
    Args a = args_infer(ctx);
    SymShape x;
    arg_shape(&a, 0, &x);
    if (x.rank >= 0 && x.rank < 2)
        return INVALID(&a, "input has rank %d, needs at least 2", x.rank);
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &x);
    return hg_fold(ctx, hg_eval_Trilu, HG_FOLD_STRICT);
}

/* Keep the upper (j - i >= k) or lower (j - i <= k) triangle of every matrix; zero the rest. */
gboolean
hg_eval_Trilu(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    if (x->rank < 2)
        return INVALID(&a, "input has rank %u, needs at least 2", x->rank);
    gint64 k = 0;
    if (arg_present(&a, 1)) {
        if (ctx->inputs[1]->numel != 1)
            return INVALID(&a, "k must be a scalar");
        k = hg_array_get_i64(ctx->inputs[1], 0);
    }
    gboolean upper = hg_node_attr_int(ctx->node, "upper", 1) != 0;
    HgArray *out = out_new(&a, x->dtype, x->rank, x->dims);
    if (!out)
        return FALSE;
    gsize es = elem_size(x->dtype);
    gint64 rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    gint64 mats = rows > 0 && cols > 0 ? x->numel / (rows * cols) : 0;
    k = CLAMP(k, -rows - 1, cols + 1);
    const char *s = elem_data(x);
    char *d = elem_data(out); /* zero-filled: zero is 0 bits for every numeric type */
    for (gint64 m = 0; m < mats; m++) {
        for (gint64 i = 0; i < rows; i++) {
            gint64 lo = upper ? CLAMP(i + k, 0, cols) : 0, hi = upper ? cols : CLAMP(i + k + 1, 0, cols);
            gsize off = (gsize)((m * rows + i) * cols + lo) * es;
            if (hi > lo)
                memcpy(d + off, s + off, (gsize)(hi - lo) * es);
        }
    }
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ Gather, GatherElements, GatherND */

/* Indices as int64 (a view when they already are); *owned says whether to g_free. */
static gint64 *
load_indices(const Args *a, const HgArray *ind, gboolean *owned)
{
    if (hg_dtype_compute(ind->dtype) != HG_COMPUTE_I64 || ind->dtype == HG_DTYPE_BOOL) {
        INVALID(a, "indices of type %s", hg_dtype_name(ind->dtype));
        return NULL;
    }
    return hg_array_load_i64(ind, owned);
}

/* An index along a dim of size n: negative counts from the end; out of range is an error. */
static inline gboolean
norm_index(const Args *a, gint64 *v, gint64 n)
{
    gint64 i = *v < 0 ? *v + n : *v;
    if (i < 0 || i >= n)
        return INVALID(a, "index %" G_GINT64_FORMAT " is out of range for a dim of %" G_GINT64_FORMAT, *v, n);
    *v = i;
    return TRUE;
}

static gboolean
gather_plan(const Args *a, const SymShape *x, const SymShape *ind, SymShape *y, gint64 *axis)
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
    Args a = args_infer(ctx);
    SymShape x, ind, y;
    gint64 axis;
    arg_shape(&a, 0, &x);
    arg_shape(&a, 1, &ind);
    if (!gather_plan(&a, &x, &ind, &y, &axis))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_Gather, HG_FOLD_STRICT);
}

#define GATHER_COPY(T)                                                                             \
    do {                                                                                           \
        T *d_ = (T *)elem_data(out);                                                               \
        const T *s_ = (const T *)elem_data(x);                                                     \
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
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    SymShape xs, is, y;
    gint64 axis, dims[HG_MAX_RANK];
    gboolean owned;
    arg_shape(&a, 0, &xs);
    arg_shape(&a, 1, &is);
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
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    gint64 outer = hg_numel((guint)axis, x->dims), inner = hg_numel(x->rank - (guint)axis - 1, x->dims + axis + 1);
    if (out->numel)
        HG_WIDTH_SWITCH(elem_size(x->dtype), GATHER_COPY);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* GatherElements and ScatterElements: indices (and updates) have the data's rank; along the other
 * axes the index coordinates address the data directly, so they must fit. */
static gboolean
elements_check(const Args *a, const HgArray *x, const HgArray *ind, gint64 *axis)
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
elements_offsets(const Args *a, const HgArray *x, const HgArray *ind, gint64 axis)
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
        odometer_step(ind->rank, ind->dims, xs, zero, c, &base, &dummy);
    }
    if (owned)
        g_free(raw);
    return offs;
}

#define TAKE(T)                                                                                    \
    do {                                                                                           \
        T *d_ = (T *)elem_data(out);                                                               \
        const T *s_ = (const T *)elem_data(x);                                                     \
        for (gint64 p = 0; p < out->numel; p++)                                                    \
            d_[p] = s_[offs[p]];                                                                   \
    } while (0)

gboolean
hg_infer_GatherElements(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, ind;
    arg_shape(&a, 0, &x);
    arg_shape(&a, 1, &ind);
    if (x.rank >= 0 && ind.rank >= 0 && x.rank != ind.rank)
        return INVALID(&a, "indices have rank %d, data %d", ind.rank, x.rank);
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &ind);
    return hg_fold(ctx, hg_eval_GatherElements, HG_FOLD_STRICT);
}

gboolean
hg_eval_GatherElements(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    gint64 axis;
    if (!elements_check(&a, x, ind, &axis))
        return FALSE;
    g_autofree gint64 *offs = elements_offsets(&a, x, ind, axis);
    if (!offs)
        return FALSE;
    HgArray *out = out_new(&a, x->dtype, ind->rank, ind->dims);
    if (!out)
        return FALSE;
    HG_WIDTH_SWITCH(elem_size(x->dtype), TAKE);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* GatherND: indices [..., k] address slices data[b..., i1, ..., ik, ...] after b batch dims. */
static gboolean
gathernd_plan(const Args *a, const SymShape *x, const SymShape *ind, SymShape *y, gint64 *kp)
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
    Args a = args_infer(ctx);
    SymShape x, ind, y;
    gint64 k;
    arg_shape(&a, 0, &x);
    arg_shape(&a, 1, &ind);
    if (!gathernd_plan(&a, &x, &ind, &y, &k))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_GatherND, HG_FOLD_STRICT);
}

/* Data offsets (in elements) of the slices that n_tuples index tuples of k coordinates address, in
 * data of the given dims from dim `first` on (each batch is one block of `block` elements). */
static gint64 *
nd_offsets(const Args *a, const gint64 *idx, gint64 n_batches, gint64 per_batch, gint64 k,
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
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *ind = ctx->inputs[1];
    SymShape xs, is, y;
    gint64 k = 0, dims[HG_MAX_RANK];
    gboolean owned;
    arg_shape(&a, 0, &xs);
    arg_shape(&a, 1, &is);
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
    sym_dims(&y, dims);
    HgArray *out = out_new(&a, x->dtype, (guint)y.rank, dims);
    if (!out)
        return FALSE;
    gsize es = elem_size(x->dtype);
    char *d = elem_data(out);
    const char *s = elem_data(x);
    for (gint64 t = 0; t < nb * per && slice; t++)
        memcpy(d + (gsize)(t * slice) * es, s + (gsize)offs[t] * es, (gsize)slice * es);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ ScatterElements, ScatterND */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* The reduction attribute: add/mul from opset 16, max/min from 18. */
static int
scatter_reduction(const Args *a)
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
        T *o = (T *)elem_data(out);                                                                \
        const T *u = (const T *)elem_data(upd);                                                    \
        SCATTER_LOOP(T, *p_ = v_);                                                                 \
    } while (0)

/* Apply n update slices of `slice` elements at offs into out (a copy of the data). Without a reduction
 * the elements move raw; reductions compute in FP32/FP64/int64 and round once on store. */
static gboolean
scatter_apply(const Args *a, HgArray *out, const HgArray *upd, const gint64 *offs, gint64 n, gint64 slice,
              int red)
{
    if (red == RED_NONE) {
        HG_WIDTH_SWITCH(elem_size(out->dtype), SCATTER_RAW);
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
scatter_output(const Args *a, const HgArray *x, const HgArray *upd)
{
    if (upd->dtype != x->dtype) {
        INVALID(a, "updates are %s, data %s", hg_dtype_name(upd->dtype), hg_dtype_name(x->dtype));
        return NULL;
    }
    HgArray *out = out_new(a, x->dtype, x->rank, x->dims);
    if (out && out->numel)
        memcpy(elem_data(out), elem_data(x), (gsize)x->numel * elem_size(x->dtype));
    return out;
}

static gboolean
scatter_infer(HgShapeCtx *ctx, HgEvalFunc eval)
{
    Args a = args_infer(ctx);
    SymShape x;
    arg_shape(&a, 0, &x);
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &x);
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
    Args a = args_eval(ctx);
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
        out_drop(out);
        return FALSE;
    }
    ctx->outputs[0] = out_done(out);
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
    Args a = args_eval(ctx);
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
        out_drop(out);
        return FALSE;
    }
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* ================================================================ Resize, Upsample
 *
 * Every output index maps to a source coordinate (coordinate_transformation_mode); nearest rounds it
 * (nearest_mode) and moves raw elements through table_gather; linear and cubic weigh neighbours
 * floor(x)-n/2+1 ... floor(x)+n/2 (taken as x-1 when x is whole, as the ONNX reference does, and
 * clamped to the edge), one separable pass per resized axis in FP32 (FP64 for double), rounded once on
 * store. Opset 10 Resize and Upsample use asymmetric coordinates, and for nearest floor when upsampling
 * and ceil when downsampling (what ONNX Runtime does for them). */

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum {
    CT_HALF_PIXEL,
    CT_HALF_PIXEL_SYMMETRIC,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_HALF_PIXEL_FOR_NN,
    CT_TF_CROP_AND_RESIZE,
};
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_LEGACY };

typedef struct {
    int mode, coord, nearest;
    double cubic_a;
    gboolean exclude_outside, antialias;
    double extrapolation;
    double scale[HG_MAX_RANK];
    double roi_start[HG_MAX_RANK], roi_end[HG_MAX_RANK];
} ResizePlan;

/* Index of s among names, or -1. */
static int
name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* A float list from input `index` (an empty tensor counts as absent, as Resize's scales do) or from
 * attribute attr. *vals: g_free. */
static PState
float_list(const Args *a, guint index, const char *attr, double **vals, guint *n)
{
    *vals = NULL;
    *n = 0;
    if (index != NO_INPUT && arg_present(a, index)) {
        const HgArray *v = arg_value(a, index);
        if (!v) {
            SymShape s;
            arg_shape(a, index, &s);
            return s.rank == 1 && s.d[0].v == 0 ? P_ABSENT : P_UNKNOWN;
        }
        if (v->numel == 0)
            return P_ABSENT;
        if (v->strings || v->numel > (1 << 20))
            return P_UNKNOWN;
        *vals = g_new(double, v->numel + 1);
        for (gint64 i = 0; i < v->numel; i++)
            (*vals)[i] = hg_array_get_f64(v, i);
        *n = (guint)v->numel;
        return P_KNOWN;
    }
    guint len;
    const float *f = attr ? hg_attr_floats(a->node, attr, &len) : NULL;
    if (!f)
        return P_ABSENT;
    *vals = g_new(double, len + 1);
    for (guint i = 0; i < len; i++)
        (*vals)[i] = f[i];
    *n = len;
    return P_KNOWN;
}

static int
resize_plan(const Args *a, gboolean upsample, const SymShape *x, SymShape *y, ResizePlan *p)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                         "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                         "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    const HgNode *node = a->node;
    gboolean legacy = upsample || a->opset < 11;
    g_autofree char *mode = hg_attr_string(node, "mode", "nearest");
    g_autofree char *coord = hg_attr_string(node, "coordinate_transformation_mode", "half_pixel");
    g_autofree char *nearest = hg_attr_string(node, "nearest_mode", "round_prefer_floor");
    g_autofree char *policy = hg_attr_string(node, "keep_aspect_ratio_policy", "stretch");
    g_autofree double *scales = NULL, *roi = NULL;
    g_autofree gint64 *sizes = NULL, *axes = NULL;
    guint ns = 0, nz = 0, nr = 0, na = 0;
    PState pscales, psizes = P_ABSENT, proi = P_ABSENT;

    memset(p, 0, sizeof(*p));
    *y = *x;
    p->mode = name_index(mode, modes, 3);
    if (p->mode < 0 && !strcmp(mode, "bilinear")) /* Upsample-7 spelling */
        p->mode = RS_LINEAR;
    p->coord = legacy ? CT_ASYMMETRIC : name_index(coord, coords, G_N_ELEMENTS(coords));
    p->nearest = legacy ? NM_LEGACY : name_index(nearest, nearests, G_N_ELEMENTS(nearests));
    int pol = legacy ? 0 : name_index(policy, policies, G_N_ELEMENTS(policies));
    if (p->mode < 0 || p->coord < 0 || p->nearest < 0 || pol < 0) {
        UNSUPPORTED(a, "mode '%s', coordinate_transformation_mode '%s', nearest_mode '%s' or "
                       "keep_aspect_ratio_policy '%s'", mode, coord, nearest, policy);
        return PLAN_ERR;
    }
    p->cubic_a = hg_node_attr_float(node, "cubic_coeff_a", -0.75f);
    p->exclude_outside = hg_node_attr_int(node, "exclude_outside", 0) != 0;
    p->antialias = hg_node_attr_int(node, "antialias", 0) != 0 && p->mode != RS_NEAREST;
    p->extrapolation = hg_node_attr_float(node, "extrapolation_value", 0.0f);
    for (int i = 0; i < HG_MAX_RANK; i++) {
        p->scale[i] = 1;
        p->roi_start[i] = 0;
        p->roi_end[i] = 1;
    }

    if (upsample)
        pscales = float_list(a, 1, "scales", &scales, &ns);
    else if (legacy)
        pscales = float_list(a, 1, NULL, &scales, &ns);
    else {
        pscales = float_list(a, 2, NULL, &scales, &ns);
        psizes = int_list(a, 3, NULL, &sizes, &nz);
        if (psizes == P_KNOWN && nz == 0)
            psizes = P_ABSENT;
        if (psizes == P_UNKNOWN) {
            SymShape s;
            arg_shape(a, 3, &s);
            if (s.rank == 1 && s.d[0].v == 0)
                psizes = P_ABSENT;
        }
        if (p->coord == CT_TF_CROP_AND_RESIZE)
            proi = float_list(a, 1, NULL, &roi, &nr);
    }
    if (x->rank < 0) {
        /* sizes for every axis say the output shape even so */
        if (psizes == P_KNOWN && pol == 0 && !hg_node_attr(node, "axes") && nz <= HG_MAX_RANK) {
            sym_from_dims(y, nz, sizes);
            for (guint i = 0; i < nz; i++)
                if (sizes[i] < 0)
                    y->d[i] = hg_dim_unknown();
        }
        return PLAN_UNKNOWN;
    }
    guint rank = (guint)x->rank;
    if (!legacy && hg_node_attr(node, "axes")) {
        const gint64 *ax = hg_attr_ints(node, "axes", &na);
        axes = g_new(gint64, na + 1);
        if (na)
            memcpy(axes, ax, sizeof(gint64) * na);
        if (!norm_axes(a, axes, na, rank))
            return PLAN_ERR;
    } else {
        na = rank;
        axes = g_new(gint64, na + 1);
        for (guint i = 0; i < na; i++)
            axes[i] = i;
    }

    if (psizes == P_KNOWN) {
        if (nz != na) {
            INVALID(a, "sizes has %u entries for %u axes", nz, na);
            return PLAN_ERR;
        }
        double keep = pol == 1 ? G_MAXDOUBLE : 0;
        for (guint j = 0; j < na; j++) {
            gint64 in = x->d[axes[j]].v;
            if (sizes[j] < 0) {
                INVALID(a, "sizes[%u] is %" G_GINT64_FORMAT, j, sizes[j]);
                return PLAN_ERR;
            }
            if (pol && in > 0)
                keep = pol == 1 ? MIN(keep, (double)sizes[j] / (double)in)
                                : MAX(keep, (double)sizes[j] / (double)in);
            else if (pol)
                keep = -1;
        }
        for (guint j = 0; j < na; j++) {
            gint64 ax = axes[j], in = x->d[ax].v;
            if (pol == 0) {
                y->d[ax] = hg_dim_known(sizes[j]);
                p->scale[ax] = in > 0 ? (double)sizes[j] / (double)in : 1;
            } else if (keep >= 0 && in >= 0) {
                y->d[ax] = hg_dim_known((gint64)floor(keep * (double)in + 0.5));
                p->scale[ax] = keep;
            } else {
                y->d[ax] = hg_dim_unknown();
            }
        }
    } else if (pscales == P_KNOWN) {
        if (ns != na) {
            INVALID(a, "scales has %u entries for %u axes", ns, na);
            return PLAN_ERR;
        }
        for (guint j = 0; j < na; j++) {
            gint64 ax = axes[j], in = x->d[ax].v;
            double o = floor((double)in * scales[j]);
            if (!(scales[j] > 0) || !(o < 4e18)) {
                INVALID(a, "scale %g", scales[j]);
                return PLAN_ERR;
            }
            p->scale[ax] = scales[j];
            if (in >= 0)
                y->d[ax] = hg_dim_known((gint64)o);
            else if (scales[j] != 1)
                y->d[ax] = hg_dim_unknown();
        }
    } else if (pscales == P_UNKNOWN || psizes == P_UNKNOWN) {
        for (guint j = 0; j < na; j++)
            y->d[axes[j]] = hg_dim_unknown();
        return PLAN_UNKNOWN;
    } else {
        INVALID(a, "needs scales or sizes");
        return PLAN_ERR;
    }

    if (proi == P_KNOWN) {
        if (nr != 2 * na) {
            INVALID(a, "roi has %u entries for %u axes", nr, na);
            return PLAN_ERR;
        }
        for (guint j = 0; j < na; j++) {
            p->roi_start[axes[j]] = roi[j];
            p->roi_end[axes[j]] = roi[j + na];
        }
    }
    for (guint i = 0; i < rank; i++) {
        if (x->d[i].v == 0 && y->d[i].v > 0) {
            INVALID(a, "cannot resize an empty axis to %" G_GINT64_FORMAT, y->d[i].v);
            return PLAN_ERR;
        }
    }
    if (p->coord == CT_TF_CROP_AND_RESIZE && proi == P_ABSENT) {
        INVALID(a, "tf_crop_and_resize needs roi");
        return PLAN_ERR;
    }
    if (proi == P_UNKNOWN)
        return PLAN_UNKNOWN;
    return sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
}

/* The source coordinate of output index o along an axis (in: input length, out: output length). */
static double
resize_coord(const ResizePlan *p, int ax, double o, gint64 in, gint64 out)
{
    double s = p->scale[ax], fin = (double)in;
    switch (p->coord) {
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / (s * fin), center = fin / 2;
        return center * (1 - adjustment) + (o + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL:
        return out > 1 ? (o + 0.5) / s - 0.5 : 0;
    case CT_ALIGN_CORNERS: {
        /* the ONNX reference divides by scale * in - 1, not by the floored output length (its
         * align_corners test data depends on it); tf_crop_and_resize does the same */
        double ow = s * fin;
        return ow == 1 ? 0 : o * (fin - 1) / (ow - 1);
    }
    case CT_ASYMMETRIC:
        return o / s;
    case CT_TF_HALF_PIXEL_FOR_NN:
        return (o + 0.5) / s;
    case CT_TF_CROP_AND_RESIZE: {
        double rs = p->roi_start[ax], re = p->roi_end[ax], ow = s * fin;
        if (ow == 1)
            return (re - rs) * (fin - 1) / 2 + rs * (fin - 1);
        return o * (re - rs) * (fin - 1) / (ow - 1) + rs * (fin - 1);
    }
    default:
        return (o + 0.5) / s - 0.5;
    }
}

static gboolean
resize_outside(const ResizePlan *p, double x, gint64 in)
{
    return p->coord == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
}

/* Nearest source index along axis ax for every output index; -1 where tf_crop_and_resize
 * extrapolates. g_free. */
static gint64 *
nearest_map(const ResizePlan *p, int ax, gint64 in, gint64 out)
{
    gint64 *m = g_new(gint64, out + 1);
    for (gint64 o = 0; o < out; o++) {
        double x = resize_coord(p, ax, (double)o, in, out), r;
        if (resize_outside(p, x, in)) {
            m[o] = -1;
            continue;
        }
        switch (p->nearest) {
        case NM_ROUND_PREFER_CEIL: r = floor(x + 0.5); break;
        case NM_FLOOR: r = floor(x); break;
        case NM_CEIL: r = ceil(x); break;
        case NM_LEGACY: r = p->scale[ax] < 1 ? ceil(x) : floor(x); break;
        default: r = ceil(x - 0.5); break;
        }
        m[o] = (gint64)CLAMP(r, 0, (double)(in - 1));
    }
    return m;
}

static double
cubic_kernel(double x, double a)
{
    x = fabs(x);
    if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

/* Interpolation taps of one axis: for output index o, source indices idx[o*n ...] (clamped to the
 * edge) with weights w[o*n ...]; extra[o] marks tf_crop_and_resize extrapolation. */
typedef struct {
    gint64 n;
    gint64 *idx;
    double *w;
    gboolean *extra;
} Taps;

static void
taps_clear(Taps *t)
{
    g_free(t->idx);
    g_free(t->w);
    g_free(t->extra);
}

static gboolean
taps_build(const Args *a, const ResizePlan *p, int ax, gint64 in, gint64 out, Taps *t)
{
    double s = MIN(p->scale[ax], 1.0), support = p->mode == RS_CUBIC ? 2 : 1;
    /* antialias widens the kernel by 1/scale when downsampling */
    gint64 start = p->antialias ? (gint64)floor(-support / s) + 1 : 1 - (gint64)support;
    t->n = 2 - 2 * start;
    if (t->n > 4096)
        return UNSUPPORTED(a, "antialiased downsampling by %g", s);
    t->idx = g_new(gint64, out * t->n + 1);
    t->w = g_new(double, out * t->n + 1);
    t->extra = g_new0(gboolean, out + 1);
    for (gint64 o = 0; o < out; o++) {
        double x = resize_coord(p, ax, (double)o, in, out);
        gint64 *idx = t->idx + o * t->n;
        double *w = t->w + o * t->n, sum = 0;
        if (resize_outside(p, x, in)) {
            t->extra[o] = TRUE;
            for (gint64 j = 0; j < t->n; j++) {
                idx[j] = 0;
                w[j] = 0;
            }
            continue;
        }
        double xf = floor(x), ratio = x - xf;
        if (ratio == 0) {
            xf -= 1;
            ratio = 1;
        }
        for (gint64 j = 0; j < t->n; j++) {
            double d = (double)(start + j) - ratio; /* neighbour minus x */
            double v;
            if (p->mode == RS_LINEAR)
                v = MAX(0.0, 1 - fabs(p->antialias ? d * s : d));
            else
                v = cubic_kernel(p->antialias ? d * s : d, p->cubic_a);
            gint64 src = (gint64)xf + start + j;
            if (p->exclude_outside && (src < 0 || src >= in))
                v = 0;
            w[j] = v;
            sum += v;
            idx[j] = CLAMP(src, 0, in - 1);
        }
        if ((p->antialias || p->exclude_outside) && sum != 0)
            for (gint64 j = 0; j < t->n; j++)
                w[j] /= sum;
    }
    return TRUE;
}

/* Whether the taps copy the input through unchanged (an axis that is not resized). */
static gboolean
taps_identity(const Taps *t, gint64 in, gint64 out)
{
    if (in != out)
        return FALSE;
    for (gint64 o = 0; o < out; o++) {
        double own = 0;
        if (t->extra[o])
            return FALSE;
        for (gint64 j = 0; j < t->n; j++) {
            double w = t->w[o * t->n + j];
            if (t->idx[o * t->n + j] == o)
                own += w;
            else if (w != 0)
                return FALSE;
        }
        if (own != 1)
            return FALSE;
    }
    return TRUE;
}

/* One separable pass: src [outer, in, inner] -> dst [outer, out, inner], weights w as T. Inner rows
 * are contiguous so the row loop vectorizes; the last axis (inner == 1) sums its taps directly. */
#define RESIZE_TAPS(T, N)                                                                          \
    for (gint64 o = 0; o < out; o++) {                                                             \
        const gint64 *ix = t->idx + o * (N);                                                       \
        const T *wo = w + o * (N);                                                                 \
        T acc = 0;                                                                                 \
        for (gint64 j = 0; j < (N); j++)                                                           \
            acc += wo[j] * s[ix[j]];                                                               \
        d[o] = t->extra[o] ? extra : acc;                                                          \
    }

#define RESIZE_PASS(T)                                                                             \
    static void resize_pass_##T(const T *src, T *dst, gint64 outer, gint64 in, gint64 out,         \
                                gint64 inner, const Taps *t, const T *w, T extra)                  \
    {                                                                                              \
        gint64 n = t->n;                                                                           \
        if (inner == 1) {                                                                          \
            for (gint64 b = 0; b < outer; b++) {                                                   \
                const T *s = src + b * in;                                                         \
                T *d = dst + b * out;                                                              \
                /* constant tap counts (linear, cubic) unroll */                                   \
                if (n == 2) {                                                                      \
                    RESIZE_TAPS(T, 2)                                                              \
                } else if (n == 4) {                                                               \
                    RESIZE_TAPS(T, 4)                                                              \
                } else {                                                                           \
                    RESIZE_TAPS(T, n)                                                              \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (gint64 b = 0; b < outer; b++)                                                         \
            for (gint64 o = 0; o < out; o++) {                                                     \
                T *restrict d = dst + (b * out + o) * inner;                                       \
                T init = t->extra[o] ? extra : 0;                                                  \
                for (gint64 e = 0; e < inner; e++)                                                 \
                    d[e] = init;                                                                   \
                if (t->extra[o])                                                                   \
                    continue;                                                                      \
                for (gint64 j = 0; j < n; j++) {                                                   \
                    T wj = w[o * n + j];                                                           \
                    const T *restrict s = src + (b * in + t->idx[o * n + j]) * inner;              \
                    if (wj == 0)                                                                   \
                        continue;                                                                  \
                    for (gint64 e = 0; e < inner; e++)                                             \
                        d[e] += wj * s[e];                                                         \
                }                                                                                  \
            }                                                                                      \
    }
RESIZE_PASS(float)
RESIZE_PASS(double)

/* Run the passes of every resized axis, reading src (in dims in, FP32 or FP64 by f64; never written).
 * The last pass writes into dst when it is given (an output already of the compute type) and the
 * result is dst; otherwise into a new buffer that is returned (g_free). NULL with an error. */
static void *
resize_interpolate(const Args *a, const ResizePlan *p, const void *src, void *dst, gboolean f64,
                   guint rank, const gint64 *in_dims, const gint64 *out_dims)
{
    gsize es = f64 ? sizeof(double) : sizeof(float);
    Taps taps[HG_MAX_RANK] = {{0}};
    guint order[HG_MAX_RANK], n_active = 0;
    int last = -1;
    gint64 cur[HG_MAX_RANK];
    void *buf = NULL, *result = NULL; /* buf: what we own, NULL while src is still the input */
    gboolean active[HG_MAX_RANK] = {FALSE};
    memcpy(cur, in_dims, sizeof(gint64) * rank);
    for (guint ax = 0; ax < rank; ax++) {
        if (!taps_build(a, p, (int)ax, in_dims[ax], out_dims[ax], &taps[ax]))
            goto done;
        active[ax] = !taps_identity(&taps[ax], in_dims[ax], out_dims[ax]);
    }
    /* The passes commute (up to FP32 rounding): shrink first, then the innermost axis, whose pass
     * gathers element by element, while the data is smallest, then the row passes that grow it. */
    for (guint ax = 0; ax < rank; ax++)
        if (active[ax] && out_dims[ax] < in_dims[ax])
            order[n_active++] = ax;
    if (rank && active[rank - 1] && out_dims[rank - 1] >= in_dims[rank - 1])
        order[n_active++] = rank - 1;
    for (guint ax = 0; ax + 1 < rank; ax++)
        if (active[ax] && out_dims[ax] >= in_dims[ax])
            order[n_active++] = ax;
    if (n_active)
        last = (int)order[n_active - 1];
    for (guint k = 0; k < n_active; k++) {
        guint ax = order[k];
        const Taps *t = &taps[ax];
        gint64 outer = hg_numel(ax, cur), inner = hg_numel(rank - ax - 1, cur + ax + 1);
        gint64 total = outer * out_dims[ax] * inner, nw = out_dims[ax] * t->n;
        void *next = (int)ax == last && dst ? dst : g_try_malloc((gsize)(total + 1) * es);
        g_autofree void *w = g_try_malloc((gsize)(nw + 1) * es);
        if (!next || !w) {
            INVALID(a, "out of memory for %" G_GINT64_FORMAT " elements", total);
            goto done;
        }
        if (f64) {
            memcpy(w, t->w, sizeof(double) * (gsize)nw);
            resize_pass_double(src, next, outer, cur[ax], out_dims[ax], inner, t, w, p->extrapolation);
        } else {
            for (gint64 i = 0; i < nw; i++)
                ((float *)w)[i] = (float)t->w[i];
            resize_pass_float(src, next, outer, cur[ax], out_dims[ax], inner, t, w, (float)p->extrapolation);
        }
        g_free(buf);
        buf = next == dst ? NULL : next;
        src = next;
        cur[ax] = out_dims[ax];
    }
    if (last < 0) /* nothing to resize: a copy */
        result = dst ? memcpy(dst, src, (gsize)hg_numel(rank, cur) * es)
                     : g_memdup2(src, (gsize)hg_numel(rank, cur) * es);
    else
        result = dst ? dst : g_steal_pointer(&buf);
done:
    for (guint ax = 0; ax < rank; ax++)
        taps_clear(&taps[ax]);
    g_free(buf);
    return result;
}

static gboolean
resize_eval(HgEvalCtx *ctx, gboolean upsample)
{
    if (!hg_eval_need(ctx, 1))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    SymShape xs, y;
    ResizePlan p;
    gint64 dims[HG_MAX_RANK];
    arg_shape(&a, 0, &xs);
    if (!plan_done(&a, resize_plan(&a, upsample, &xs, &y, &p)))
        return FALSE;
    sym_dims(&y, dims);
    HgKind ct = hg_kind_of(x->dtype);
    if (p.mode != RS_NEAREST && (ct == HG_KIND_COUNT || x->dtype == HG_DTYPE_BOOL))
        return UNSUPPORTED(&a, "%s interpolation of %s", p.mode == RS_LINEAR ? "linear" : "cubic",
                           hg_dtype_name(x->dtype));
    HgArray *out = out_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    if (out->numel == 0) {
        ctx->outputs[0] = out_done(out);
        return TRUE;
    }
    if (p.mode == RS_NEAREST) {
        gint64 *maps[HG_MAX_RANK] = {NULL};
        guint8 fill[16];
        HgArray *ev = hg_array_new(HG_DTYPE_DOUBLE, 0, NULL, NULL);
        memcpy(ev->data, &p.extrapolation, sizeof(double));
        scalar_bytes(ev, 0, x->dtype, fill);
        hg_array_unref(ev);
        for (guint i = 0; i < x->rank; i++)
            maps[i] = nearest_map(&p, (int)i, x->dims[i], dims[i]);
        table_gather(elem_data(out), elem_data(x), x->rank, dims, x->dims, maps, fill, elem_size(x->dtype));
        for (guint i = 0; i < x->rank; i++)
            g_free(maps[i]);
        ctx->outputs[0] = out_done(out);
        return TRUE;
    }
    gboolean f64 = ct == HG_KIND_F64, owned;
    gboolean direct = x->dtype == (f64 ? HG_DTYPE_DOUBLE : HG_DTYPE_FLOAT);
    void *in = f64 ? (void *)hg_array_load_f64(x, &owned) : (void *)hg_array_load_f32(x, &owned);
    void *buf = resize_interpolate(&a, &p, in, direct ? out->data : NULL, f64, x->rank, x->dims, dims);
    if (owned)
        g_free(in);
    if (!buf) {
        out_drop(out);
        return FALSE;
    }
    if (direct) {
        /* already in place */
    } else if (f64) {
        hg_array_store_f64(out, buf);
    } else {
        float *v = buf;
        if (ct == HG_KIND_I64 || ct == HG_KIND_U64) /* integer images round to nearest, not toward zero */
            for (gint64 i = 0; i < out->numel; i++)
                v[i] = rintf(v[i]);
        hg_array_store_f32(out, v);
    }
    if (!direct)
        g_free(buf);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

static gboolean
resize_infer(HgShapeCtx *ctx, gboolean upsample, HgEvalFunc eval)
{
    Args a = args_infer(ctx);
    SymShape x, y;
    ResizePlan p;
    arg_shape(&a, 0, &x);
    if (resize_plan(&a, upsample, &x, &y, &p) == PLAN_ERR)
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, eval, HG_FOLD_STRICT);
}

gboolean
hg_infer_Resize(HgShapeCtx *ctx)
{
    return resize_infer(ctx, FALSE, hg_eval_Resize);
}

gboolean
hg_eval_Resize(HgEvalCtx *ctx)
{
    return resize_eval(ctx, FALSE);
}

gboolean
hg_infer_Upsample(HgShapeCtx *ctx)
{
    return resize_infer(ctx, TRUE, hg_eval_Upsample);
}

gboolean
hg_eval_Upsample(HgEvalCtx *ctx)
{
    return resize_eval(ctx, TRUE);
}

/* ================================================================ GridSample
 *
 * Y[n, c, o] samples X[n, c] at the point grid[n, o, :], whose r coordinates are normalized to
 * [-1, 1] and listed innermost axis first (x = width, then height, depth). Per axis a coordinate is
 * denormalized (align_corners: -1 and 1 are the centres of the end pixels, else their outer edges),
 * rounded half to even for nearest, then, when it falls outside the borders ([0, d-1], or
 * [-0.5, d-0.5] without align_corners), clamped (border) or reflected (reflection) into them. Taps
 * around it (1 for nearest, 2 for linear, 4 for cubic: Keys' kernel with a = -0.75) read X, a tap
 * outside the image reading 0 (zeros), the end pixel (border) or its reflection. N-linear and
 * N-cubic are the tensor products of the 1-D weights. Opset 16 is 4-D only, with the modes named
 * bilinear, nearest and bicubic; from 20 any rank, named linear, nearest and cubic. Coordinates are
 * denormalized in FP64 and rounded to FP32 (as the reference does for FP32 grids), weights and sums
 * are FP64, the result rounded once. A NaN coordinate, or an infinite one under reflection, gives
 * NaN; an infinite one under zeros padding reads zeros. */

typedef enum { GS_LINEAR, GS_NEAREST, GS_CUBIC } GsMode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } GsPad;

typedef struct {
    GsMode mode;
    GsPad pad;
    gboolean align;
} GsPlan;

/* Keys' cubic convolution coefficient, as the reference and PyTorch use it. */
#define GS_CUBIC_A (-0.75)

/* The attributes, checked against the opset's names. FALSE with an error on anything else. */
static gboolean
gs_plan(const Args *a, GsPlan *p)
{
    gboolean v20 = a->opset >= 20;
    g_autofree char *mode = hg_attr_string(a->node, "mode", v20 ? "linear" : "bilinear");
    g_autofree char *pad = hg_attr_string(a->node, "padding_mode", "zeros");
    if (!strcmp(mode, "nearest"))
        p->mode = GS_NEAREST;
    else if (!strcmp(mode, v20 ? "linear" : "bilinear"))
        p->mode = GS_LINEAR;
    else if (!strcmp(mode, v20 ? "cubic" : "bicubic"))
        p->mode = GS_CUBIC;
    else
        return INVALID(a, "mode '%s' is not one of %s", mode,
                       v20 ? "linear, nearest, cubic" : "bilinear, nearest, bicubic (before opset 20)");
    if (!strcmp(pad, "zeros"))
        p->pad = GS_ZEROS;
    else if (!strcmp(pad, "border"))
        p->pad = GS_BORDER;
    else if (!strcmp(pad, "reflection"))
        p->pad = GS_REFLECTION;
    else
        return INVALID(a, "padding_mode '%s' is not one of zeros, border, reflection", pad);
    p->align = hg_node_attr_int(a->node, "align_corners", 0) != 0;
    return TRUE;
}

/* Output shape (N, C, D1_out, ..., Dr_out) from X (N, C, D1, ..., Dr) and grid (N, D1_out, ...,
 * Dr_out, r); checks what is known. */
static gboolean
gs_shape(const Args *a, const SymShape *x, const SymShape *g, SymShape *y)
{
    y->rank = -1;
    int rank = x->rank >= 0 ? x->rank : g->rank;
    if (rank < 0)
        return TRUE;
    if (rank < 3)
        return INVALID(a, "X and grid need rank 3 or more, have %d", rank);
    if (x->rank >= 0 && g->rank >= 0 && x->rank != g->rank)
        return INVALID(a, "X has rank %d and grid rank %d; they must be equal", x->rank, g->rank);
    if (a->opset < 20 && rank != 4)
        return INVALID(a, "before opset 20 X must be 4-D, has rank %d", rank);
    if (g->rank >= 0 && g->d[rank - 1].v >= 0 && g->d[rank - 1].v != rank - 2)
        return INVALID(a, "grid's last dim is %" G_GINT64_FORMAT ", expected %d (X's spatial rank)",
                       g->d[rank - 1].v, rank - 2);
    if (x->rank >= 0 && g->rank >= 0 && x->d[0].v >= 0 && g->d[0].v >= 0 && x->d[0].v != g->d[0].v)
        return INVALID(a, "X has batch %" G_GINT64_FORMAT " and grid %" G_GINT64_FORMAT, x->d[0].v, g->d[0].v);
    sym_unknown_dims(y, rank);
    /* the batch: a known size from either, else a named one */
    HgSymDim nx = x->rank >= 0 ? x->d[0] : hg_dim_unknown(), ng = g->rank >= 0 ? g->d[0] : hg_dim_unknown();
    y->d[0] = nx.v >= 0 ? nx : ng.v >= 0 ? ng : nx.sym ? nx : ng;
    if (x->rank >= 0)
        y->d[1] = x->d[1];
    for (int i = 2; g->rank >= 0 && i < rank; i++)
        y->d[i] = g->d[i - 1];
    return TRUE;
}

/* The denormalized coordinate of g along an axis of length d. */
static double
gs_denorm(double g, gint64 d, gboolean align)
{
    return align ? (g + 1) / 2 * (double)(d - 1) : ((g + 1) * (double)d - 1) / 2;
}

/* Reflect x into [lo, hi] off its nearer border, again and again as the spec describes; an empty
 * span (one pixel with align_corners) is its only point. */
static double
gs_reflect(double x, double lo, double hi)
{
    double span = hi - lo;
    if (!(span > 0))
        return lo;
    if (x >= lo && x <= hi)
        return x;
    double dx = x < lo ? lo - x : x - hi;
    double k = floor(dx / span), rest = dx - k * span;
    gboolean even = fmod(k, 2) == 0;
    if (x < lo)
        return even ? lo + rest : hi - rest;
    return even ? hi - rest : lo + rest;
}

/* Where tap i along an axis of length d reads: an index in [0, d), or -1 for a zero. */
static gint64
gs_tap(gint64 i, gint64 d, const GsPlan *p, double lo, double hi)
{
    switch (p->pad) {
    case GS_ZEROS: return i >= 0 && i < d ? i : -1;
    case GS_BORDER: return CLAMP(i, 0, d - 1);
    default: return CLAMP((gint64)gs_reflect((double)i, lo, hi), 0, d - 1);
    }
}

/* The 1-D taps of one coordinate: up to 4 (index, weight) pairs. FALSE when the coordinate is NaN
 * (or infinite after the padding rule): the sample is NaN. */
typedef struct {
    int n;
    gint64 idx[4];
    double w[4];
} GsTaps;

static gboolean
gs_taps(double g, gint64 d, const GsPlan *p, gboolean f32, GsTaps *t)
{
    double lo = p->align ? 0 : -0.5, hi = p->align ? (double)(d - 1) : (double)d - 0.5;
    double x = gs_denorm(g, d, p->align);
    if (f32)
        x = (float)x;
    if (p->mode == GS_NEAREST)
        x = nearbyint(x);
    if (x < lo || x > hi) {
        if (p->pad == GS_BORDER)
            x = CLAMP(x, 0, (double)(d - 1));
        else if (p->pad == GS_REFLECTION)
            x = gs_reflect(x, lo, hi);
    }
    /* far outside (infinity included) every tap reads a zero under zeros padding: keep the index
     * arithmetic small; border has clamped, and reflection leaves only NaN */
    if (isnan(x) || (p->pad != GS_ZEROS && isinf(x)))
        return FALSE;
    x = CLAMP(x, -8, (double)d + 8);
    double x0 = floor(x), f = x - x0;
    gint64 i0 = (gint64)x0;
    if (p->mode == GS_NEAREST) {
        t->n = 1;
        t->idx[0] = gs_tap((gint64)x, d, p, lo, hi);
        t->w[0] = 1;
    } else if (p->mode == GS_LINEAR) {
        t->n = 2;
        t->w[0] = 1 - f;
        t->w[1] = f;
        for (int k = 0; k < 2; k++)
            t->idx[k] = gs_tap(i0 + k, d, p, lo, hi);
    } else {
        const double A = GS_CUBIC_A;
        double s = f + 1, u = 1 - f, v = 2 - f;
        t->n = 4;
        t->w[0] = ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
        t->w[1] = ((A + 2) * f - (A + 3)) * f * f + 1;
        t->w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
        t->w[3] = ((A * v - 5 * A) * v + 8 * A) * v - 4 * A;
        for (int k = 0; k < 4; k++)
            t->idx[k] = gs_tap(i0 - 1 + k, d, p, lo, hi);
    }
    return TRUE;
}

gboolean
hg_infer_GridSample(HgShapeCtx *ctx)
{
    Args a = args_infer(ctx);
    SymShape x, g, y;
    GsPlan p;
    arg_shape(&a, 0, &x);
    arg_shape(&a, 1, &g);
    if (!gs_plan(&a, &p) || !gs_shape(&a, &x, &g, &y))
        return FALSE;
    set_out(hg_shape_output(ctx, 0), arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_GridSample, HG_FOLD_STRICT);
}

gboolean
hg_eval_GridSample(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    Args a = args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *grid = ctx->inputs[1];
    SymShape xs, gs, ys;
    GsPlan p;
    arg_shape(&a, 0, &xs);
    arg_shape(&a, 1, &gs);
    if (!gs_plan(&a, &p) || !gs_shape(&a, &xs, &gs, &ys))
        return FALSE;
    HgKind ct = hg_kind_of(x->dtype), cg = hg_kind_of(grid->dtype);
    if ((ct != HG_KIND_F32 && ct != HG_KIND_F64) || (cg != HG_KIND_F32 && cg != HG_KIND_F64))
        return UNSUPPORTED(&a, "X of type %s with a grid of type %s", hg_dtype_name(x->dtype),
                           hg_dtype_name(grid->dtype));
    guint rank = x->rank, r = rank - 2;
    gint64 dims[HG_MAX_RANK];
    sym_dims(&ys, dims);
    HgArray *out = out_new(&a, x->dtype, rank, dims);
    if (!out)
        return FALSE;
    gint64 nb = dims[0], nc = dims[1], npos = hg_numel(r, dims + 2), plane = hg_numel(r, x->dims + 2);
    gboolean own_x, own_g;
    double *xd = hg_array_load_f64(x, &own_x), *gd = hg_array_load_f64(grid, &own_g);
    g_autofree double *yd = g_new(double, out->numel + 1);
    gint64 xstr[HG_MAX_RANK];
    hg_strides(r, x->dims + 2, xstr);
    int ncomb = 1;
    for (guint i = 0; i < r; i++)
        ncomb *= p.mode == GS_NEAREST ? 1 : p.mode == GS_LINEAR ? 2 : 4;
    g_autofree gint64 *off = g_new(gint64, ncomb);
    g_autofree double *wt = g_new(double, ncomb);
    for (gint64 n = 0; n < nb; n++) {
        for (gint64 o = 0; o < npos; o++) {
            const double *gp = gd + (n * npos + o) * r;
            GsTaps t[HG_MAX_RANK];
            gboolean finite = TRUE;
            /* axis i (outermost first) takes the grid's coordinate r-1-i */
            for (guint i = 0; i < r && finite; i++)
                finite = gs_taps(gp[r - 1 - i], x->dims[2 + i], &p, grid->dtype != HG_DTYPE_DOUBLE, &t[i]);
            /* the tensor product of the axes' taps: one offset and weight per combination, -1 where
             * any axis reads a zero */
            int m = 0;
            for (int k = 0; finite && k < ncomb; k++) {
                int rest = k;
                gint64 e = 0;
                double w = 1;
                for (int i = (int)r - 1; i >= 0; i--) {
                    int j = rest % t[i].n;
                    rest /= t[i].n;
                    if (t[i].idx[j] < 0 || e < 0)
                        e = -1;
                    else
                        e += t[i].idx[j] * xstr[i];
                    w *= t[i].w[j];
                }
                if (e >= 0 && w != 0) {
                    off[m] = e;
                    wt[m++] = w;
                }
            }
            for (gint64 c = 0; c < nc; c++) {
                const double *xp = xd + (n * nc + c) * plane;
                double v = finite ? 0 : NAN;
                for (int k = 0; k < m; k++)
                    v += wt[k] * xp[off[k]];
                yd[(n * nc + c) * npos + o] = v;
            }
        }
    }
    if (own_x)
        g_free(xd);
    if (own_g)
        g_free(gd);
    hg_array_store_f64(out, yd);
    ctx->outputs[0] = out_done(out);
    return TRUE;
}

/* Taps per output element times its elements. */
gint64
hg_cost_GridSample(const HgShapeCtx *ctx)
{
    const HgValueShape *y = ctx->n_outputs ? ctx->outputs[0] : NULL;
    gint64 n = y ? hg_vshape_numel(y) : -1;
    if (n < 0 || y->rank < 3)
        return -1;
    Args a = args_infer(ctx);
    GsPlan p;
    GError *err = NULL;
    a.error = &err;
    if (!gs_plan(&a, &p)) {
        g_clear_error(&err);
        return -1;
    }
    for (int i = 2; i < y->rank; i++)
        n *= p.mode == GS_NEAREST ? 1 : p.mode == GS_LINEAR ? 2 : 4;
    return n;
}

/* ---------------------------------------------------------------- interval rules
 * Data movement keeps its input's range; ops that add values (pads, fills, extrapolation) take the
 * union with them; Resize bounds its interpolation with the actual kernel weights. */

/* Input i's range, or NULL when omitted. */
static const HgRange *
rin(const HgRangeCtx *c, guint i)
{
    return i < c->n_inputs ? c->inputs[i] : NULL;
}

static HgRange
runion(HgRange a, HgRange b)
{
    HgRange r = {MIN(a.lo, b.lo), MAX(a.hi, b.hi), MIN(a.tiny, b.tiny), a.nan || b.nan};
    return r;
}

/* The union of r with the single value v. */
static HgRange
runion_point(HgRange r, double v)
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
static void
range_move(HgRangeCtx *c)
{
    const HgRange *x = rin(c, 0);
    if (!x)
        return;
    for (guint k = 0; k < c->n_outputs; k++)
        *c->outputs[k] = *x;
}

/* Args over the range context, with constant inputs as values. shapes: g_free. */
static Args
args_range(const HgRangeCtx *c, HgValueShape **shapes)
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
    Args a = {c->node, c->opset, c->n_inputs, ptrs, NULL, NULL};
    return a;
}

static void
args_range_free(Args *a, HgValueShape *shapes)
{
    g_free((gpointer)a->shapes);
    g_free(shapes);
}

void
hg_range_Concat(HgRangeCtx *ctx)
{
    gboolean any = FALSE;
    HgRange r = {INFINITY, -INFINITY, INFINITY, FALSE};
    for (guint i = 0; i < ctx->n_inputs; i++) {
        if (!ctx->inputs[i])
            continue;
        r = runion(r, *ctx->inputs[i]);
        any = TRUE;
    }
    if (any && ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_Constant(HgRangeCtx *ctx)
{
    Args a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    HgArray *v = constant_value(&a);
    if (!v)
        return;
    if (ctx->n_outputs)
        *ctx->outputs[0] = hg_range_of_array(v);
    hg_array_unref(v);
}

void
hg_range_ConstantOfShape(HgRangeCtx *ctx)
{
    Args a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    HgArray *v = cos_value(&a);
    if (!v)
        return;
    if (ctx->n_outputs)
        *ctx->outputs[0] = hg_range_of_array(v);
    hg_array_unref(v);
}

void
hg_range_DepthToSpace(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Expand(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Flatten(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Gather(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_GatherElements(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_GatherND(HgRangeCtx *ctx)
{
    range_move(ctx);
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
    const HgRange *x = rin(ctx, 0);
    if (!x || !ctx->n_outputs)
        return;
    g_autofree char *mode = hg_attr_string(ctx->node, "mode", "constant");
    HgRange r = *x;
    if (!strcmp(mode, "constant")) {
        if (!pads_something(ctx)) {
            *ctx->outputs[0] = r;
            return;
        }
        const HgRange *v = rin(ctx, 2);
        HgAttr *value = hg_node_attr(ctx->node, "value"); /* Pad before opset 11 */
        if (v)
            r = runion(r, *v);
        else
            r = runion_point(r, 0);
        if (value)
            r = runion_point(r, value->f);
    } else if (strcmp(mode, "reflect") && strcmp(mode, "edge") && strcmp(mode, "wrap")) {
        return;
    }
    *ctx->outputs[0] = r;
}

/* Range's elements lie between start and limit: [start, limit) counting up, (limit, start] down. */
void
hg_range_Range(HgRangeCtx *ctx)
{
    const HgRange *s = rin(ctx, 0), *l = rin(ctx, 1), *d = rin(ctx, 2);
    if (!s || !l || !d || !ctx->n_outputs)
        return;
    HgRange r = runion(*s, *l);
    /* a count rounded up by floating point can add one element a rounding error past limit */
    double slack = (MAX(fabs(r.lo), fabs(r.hi)) + MAX(fabs(d->lo), fabs(d->hi))) * 1e-6;
    r.lo -= slack;
    r.hi += slack;
    r.tiny = 0;
    r.nan = s->nan || l->nan || d->nan;
    *ctx->outputs[0] = r;
}

void
hg_range_Reshape(HgRangeCtx *ctx)
{
    range_move(ctx);
}

/* Pass [lo, hi] through one axis's taps: out = sum w_j x_j, so out >= sum(w+) lo - sum(|w-|) hi
 * and symmetrically. Extrapolated outputs take the extrapolation value. */
static void
taps_bound(const Taps *t, gint64 out, double extra, double *lo, double *hi)
{
    double nlo = INFINITY, nhi = -INFINITY;
    for (gint64 o = 0; o < out; o++) {
        if (t->extra[o]) {
            nlo = MIN(nlo, extra);
            nhi = MAX(nhi, extra);
            continue;
        }
        double sp = 0, sn = 0;
        for (gint64 j = 0; j < t->n; j++) {
            double w = t->w[o * t->n + j];
            if (w > 0)
                sp += w;
            else
                sn -= w;
        }
        /* 0 * inf counts as 0 here: the NaN it makes in the kernel is flagged by the caller */
        double l = (sp > 0 ? sp * *lo : 0) - (sn > 0 ? sn * *hi : 0);
        double h = (sp > 0 ? sp * *hi : 0) - (sn > 0 ? sn * *lo : 0);
        if (isnan(l))
            l = -INFINITY;
        if (isnan(h))
            h = INFINITY;
        nlo = MIN(nlo, l);
        nhi = MAX(nhi, h);
    }
    if (nlo <= nhi) {
        *lo = nlo;
        *hi = nhi;
    }
}

static void
resize_range(HgRangeCtx *ctx, gboolean upsample)
{
    const HgRange *x = rin(ctx, 0);
    if (!x || !ctx->n_outputs)
        return;
    HgValueShape *shapes;
    Args a = args_range(ctx, &shapes);
    SymShape xs, ys;
    ResizePlan p;
    arg_shape(&a, 0, &xs);
    int st = resize_plan(&a, upsample, &xs, &ys, &p);
    HgRange r = *x;
    gboolean done = FALSE, interpolates = FALSE;
    if (st == PLAN_OK && sym_known(&xs)) {
        gint64 in_dims[HG_MAX_RANK], out_dims[HG_MAX_RANK];
        sym_dims(&xs, in_dims);
        sym_dims(&ys, out_dims);
        if (p.mode == RS_NEAREST) {
            gboolean extra = FALSE;
            for (int ax = 0; ax < xs.rank && p.coord == CT_TF_CROP_AND_RESIZE; ax++) {
                g_autofree gint64 *m = nearest_map(&p, ax, in_dims[ax], out_dims[ax]);
                for (gint64 o = 0; o < out_dims[ax]; o++)
                    extra |= m[o] < 0;
            }
            if (extra)
                r = runion_point(r, p.extrapolation);
            done = TRUE;
        } else {
            double lo = x->lo, hi = x->hi;
            gboolean extra = FALSE;
            done = interpolates = TRUE;
            for (int ax = 0; ax < xs.rank; ax++) {
                Taps t = {0};
                if (out_dims[ax] == 0 || in_dims[ax] == 0 || out_dims[ax] > (1 << 24) ||
                    !taps_build(&a, &p, ax, in_dims[ax], out_dims[ax], &t)) {
                    taps_clear(&t);
                    done = FALSE;
                    break;
                }
                if (!taps_identity(&t, in_dims[ax], out_dims[ax])) {
                    for (gint64 o = 0; o < out_dims[ax]; o++)
                        extra |= t.extra[o];
                    taps_bound(&t, out_dims[ax], p.extrapolation, &lo, &hi);
                }
                taps_clear(&t);
            }
            if (done) {
                r.lo = lo;
                r.hi = hi;
                r.tiny = 0;
                /* inf * 0 and inf - inf inside the weighted sums */
                r.nan = x->nan || !hg_range_bounded(x);
                if (extra && isnan(p.extrapolation))
                    r.nan = TRUE;
            }
        }
    } else if (st != PLAN_ERR) {
        /* without the plan: nearest copies (or extrapolates), linear averages with weights >= 0
         * (which may all be 0 when renormalized, giving 0); cubic overshoots by a bounded amount */
        g_autofree char *mode = hg_attr_string(ctx->node, "mode", "nearest");
        g_autofree char *coord = hg_attr_string(ctx->node, "coordinate_transformation_mode", "half_pixel");
        HgAttr *ev = hg_node_attr(ctx->node, "extrapolation_value");
        double extra = ev ? ev->f : 0;
        if (!strcmp(mode, "nearest") || !strcmp(mode, "linear") || !strcmp(mode, "bilinear") ||
            !strcmp(mode, "trilinear")) {
            if (!strcmp(coord, "tf_crop_and_resize") && !upsample && ctx->opset >= 11)
                r = runion_point(r, extra);
            if (strcmp(mode, "nearest")) {
                interpolates = TRUE;
                /* weights sum to 1 unless renormalized, where they may all be 0 */
                if (hg_node_attr_int(ctx->node, "antialias", 0) ||
                    hg_node_attr_int(ctx->node, "exclude_outside", 0))
                    r = runion_point(r, 0);
                r.tiny = 0;
                r.nan = x->nan || !hg_range_bounded(x);
            }
            done = TRUE;
        } else if (!strcmp(mode, "cubic") && ctx->shapes[0] && ctx->shapes[0]->rank >= 0 &&
                   !hg_node_attr_int(ctx->node, "exclude_outside", 0) &&
                   !hg_node_attr_int(ctx->node, "antialias", 0)) {
            /* Keys' cubic kernel sums to 1 over the 4 taps at distances 1+r, r, 1-r, 2-r (r in
             * (0, 1]); for a <= 0 the inner taps are >= 0 and the outer ones a (d-1)(d-2)^2 <= 0,
             * summing to a r (1-r) >= a/4. So one axis maps [lo, hi] into lo - s (hi-lo) ..
             * hi + s (hi-lo) with s = -a/4 (0.1875 for a = -0.75); apply it once per axis. */
            double ka = hg_node_attr_float(ctx->node, "cubic_coeff_a", -0.75f), sn = -ka / 4;
            if (ka <= 0) {
                interpolates = done = TRUE;
                for (int ax = 0; ax < ctx->shapes[0]->rank && sn > 0; ax++) {
                    double w = r.hi - r.lo;
                    r.lo -= sn * w;
                    r.hi += sn * w;
                }
                if (!strcmp(coord, "tf_crop_and_resize"))
                    r = runion_point(r, extra);
                r.tiny = 0;
                r.nan = x->nan || !hg_range_bounded(x);
            }
        }
    }
    args_range_free(&a, shapes);
    if (!done)
        return;
    if (!hg_dtype_is_float(ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED) && interpolates) {
        /* integer results round */
        r.lo = floor(r.lo);
        r.hi = ceil(r.hi);
    }
    *ctx->outputs[0] = r;
}

void
hg_range_Resize(HgRangeCtx *ctx)
{
    resize_range(ctx, FALSE);
}

/* Whether every tap of every sample lands inside X along every axis (so zeros padding adds no 0):
 * the grid's range, denormalized per axis, keeps nearest's rounding in [0, d-1], linear's two taps
 * in [0, d-1] (at x = d-1 the second has weight 0) and cubic's four too (x in [1, d-2], the outer
 * weights 0 at integers), with room for the FP32 rounding of the coordinate. */
static gboolean
gs_taps_inside(const HgRangeCtx *ctx, const GsPlan *p)
{
    const HgValueShape *xs = ctx->shapes[0];
    const HgRange *g = rin(ctx, 1);
    if (!xs || xs->rank < 3 || !g || g->nan || !hg_range_bounded(g))
        return FALSE;
    for (int i = 2; i < xs->rank; i++) {
        gint64 d = xs->dims[i].v;
        if (d < 1)
            return FALSE;
        double lo = gs_denorm(g->lo, d, p->align), hi = gs_denorm(g->hi, d, p->align);
        double m = 4 * 0x1p-23 * ((double)d + 2);
        double need_lo = p->mode == GS_NEAREST ? -0.5 : p->mode == GS_LINEAR ? 0 : 1;
        double need_hi = p->mode == GS_NEAREST ? (double)d - 0.5 : p->mode == GS_LINEAR ? (double)(d - 1) : (double)(d - 2);
        gboolean strict = p->mode == GS_NEAREST; /* a half rounds to even, maybe outward */
        if (strict ? !(lo - m > need_lo && hi + m < need_hi) : !(lo - m >= need_lo && hi + m <= need_hi))
            return FALSE;
    }
    return TRUE;
}

/* GridSample: nearest and linear take convex combinations of X's values, and of 0 where zeros
 * padding reads outside (unless the grid's range keeps every tap inside); cubic's Keys weights sum
 * to 1 with negative ones no lower than a/4 = -0.1875 per axis, so each axis widens the hull by
 * 0.1875 of its width on both sides (see resize_range), and the result rounds once into the output
 * type. NaN comes from NaN inputs, from inf * 0 weights, and from infinite coordinates reflected. */
void
hg_range_GridSample(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0), *g = rin(ctx, 1);
    if (!x || !ctx->n_outputs || !ctx->outputs[0] || !(x->lo <= x->hi))
        return;
    Args a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    GsPlan p;
    int dt = ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    if (!hg_dtype_is_float(dt) || !gs_plan(&a, &p))
        return;
    HgRange r = *x;
    if (p.pad == GS_ZEROS && !gs_taps_inside(ctx, &p))
        r = runion_point(r, 0);
    gboolean grid_bad = !g || g->nan || (p.pad == GS_REFLECTION && !hg_range_bounded(g));
    r.nan = r.nan || grid_bad;
    if (p.mode != GS_NEAREST) {
        r.tiny = 0;
        r.nan = r.nan || !hg_range_bounded(x);
    }
    if (p.mode == GS_CUBIC) {
        const HgValueShape *xs = ctx->shapes[0];
        if (!xs || xs->rank < 3)
            return;
        double s = -GS_CUBIC_A / 4;
        for (int i = 2; i < xs->rank; i++) {
            double w = r.hi - r.lo;
            r.lo -= s * w;
            r.hi += s * w;
        }
        /* FP64 sums: a relative 2^-50 for 4^r terms, far inside the driver's widening; the stored
         * value rounds once */
        r = hg_range_fit(r, dt);
    }
    *ctx->outputs[0] = r;
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
    const HgRange *x = rin(ctx, 0), *u = rin(ctx, 2);
    if (!x || !u || !ctx->n_outputs)
        return;
    Args a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    int red = scatter_reduction(&a);
    int dtype = ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    gboolean is_float = hg_dtype_is_float(dtype);
    HgRange r = runion(*x, *u);
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

/* Shape's elements are dims (a slice of them from opset 15): each within the largest known dim. */
void
hg_range_Shape(HgRangeCtx *ctx)
{
    const HgValueShape *x = ctx->n_inputs ? ctx->shapes[0] : NULL;
    HgRange r = hg_range_exact(0, INFINITY);
    r.tiny = 1;
    if (x && x->rank >= 0) {
        double m = 0;
        for (int i = 0; i < x->rank; i++)
            m = x->dims[i].v < 0 ? INFINITY : MAX(m, (double)x->dims[i].v);
        r.hi = m;
    }
    if (ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_Size(HgRangeCtx *ctx)
{
    const HgValueShape *x = ctx->n_inputs ? ctx->shapes[0] : NULL;
    HgRange r = hg_range_exact(0, INFINITY);
    r.tiny = 1;
    if (x && x->rank >= 0) {
        double n = 1;
        for (int i = 0; i < x->rank; i++)
            n *= x->dims[i].v < 0 ? INFINITY : (double)x->dims[i].v;
        r.hi = isnan(n) ? INFINITY : n;
    }
    if (ctx->n_outputs)
        *ctx->outputs[0] = r;
}

void
hg_range_Slice(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_SpaceToDepth(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Split(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Squeeze(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Tile(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Transpose(HgRangeCtx *ctx)
{
    range_move(ctx);
}

/* Trilu zeroes the other triangle. */
void
hg_range_Trilu(HgRangeCtx *ctx)
{
    const HgRange *x = rin(ctx, 0);
    if (x && ctx->n_outputs)
        *ctx->outputs[0] = runion_point(*x, 0);
}

void
hg_range_Unsqueeze(HgRangeCtx *ctx)
{
    range_move(ctx);
}

void
hg_range_Upsample(HgRangeCtx *ctx)
{
    resize_range(ctx, TRUE);
}
