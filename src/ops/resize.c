/* The resize family: Resize, Upsample and GridSample, with their interval rules.
 *
 * Shared with the other tensor families through tensor.h (plans over symbolic shapes, movers). */
#include "ops/tensor.h"
#include "ir_private.h"

#include <math.h>
#include <string.h>

/* ================================================================ Resize, Upsample
 *
 * Every output index maps to a source coordinate (coordinate_transformation_mode); nearest rounds it
 * (nearest_mode) and moves raw elements through hg_table_gather; linear and cubic weigh neighbours
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
static HgPState
float_list(const HgArgs *a, guint index, const char *attr, double **vals, guint *n)
{
    *vals = NULL;
    *n = 0;
    if (index != HG_NO_INPUT && hg_arg_present(a, index)) {
        const HgArray *v = hg_arg_value(a, index);
        if (!v) {
            HgSymShape s;
            hg_arg_shape(a, index, &s);
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
resize_plan(const HgArgs *a, gboolean upsample, const HgSymShape *x, HgSymShape *y, ResizePlan *p)
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
    HgPState pscales, psizes = P_ABSENT, proi = P_ABSENT;

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
        psizes = hg_arg_ints(a, 3, NULL, &sizes, &nz);
        if (psizes == P_KNOWN && nz == 0)
            psizes = P_ABSENT;
        if (psizes == P_UNKNOWN) {
            HgSymShape s;
            hg_arg_shape(a, 3, &s);
            if (s.rank == 1 && s.d[0].v == 0)
                psizes = P_ABSENT;
        }
        if (p->coord == CT_TF_CROP_AND_RESIZE)
            proi = float_list(a, 1, NULL, &roi, &nr);
    }
    if (x->rank < 0) {
        /* sizes for every axis say the output shape even so */
        if (psizes == P_KNOWN && pol == 0 && !hg_node_attr(node, "axes") && nz <= HG_MAX_RANK) {
            hg_sym_from_dims(y, nz, sizes);
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
        if (!hg_arg_norm_axes(a, axes, na, rank))
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
    return hg_sym_known(y) ? PLAN_OK : PLAN_UNKNOWN;
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
taps_build(const HgArgs *a, const ResizePlan *p, int ax, gint64 in, gint64 out, Taps *t)
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
resize_interpolate(const HgArgs *a, const ResizePlan *p, const void *src, void *dst, gboolean f64,
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
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0];
    HgSymShape xs, y;
    ResizePlan p;
    gint64 dims[HG_MAX_RANK];
    hg_arg_shape(&a, 0, &xs);
    if (!hg_plan_done(&a, resize_plan(&a, upsample, &xs, &y, &p)))
        return FALSE;
    hg_sym_dims(&y, dims);
    HgKind ct = hg_kind_of(x->dtype);
    if (p.mode != RS_NEAREST && (ct == HG_KIND_COUNT || x->dtype == HG_DTYPE_BOOL))
        return UNSUPPORTED(&a, "%s interpolation of %s", p.mode == RS_LINEAR ? "linear" : "cubic",
                           hg_dtype_name(x->dtype));
    HgArray *out = hg_mover_new(&a, x->dtype, x->rank, dims);
    if (!out)
        return FALSE;
    if (out->numel == 0) {
        ctx->outputs[0] = hg_mover_done(out);
        return TRUE;
    }
    if (p.mode == RS_NEAREST) {
        gint64 *maps[HG_MAX_RANK] = {NULL};
        guint8 fill[16];
        HgArray *ev = hg_array_new(HG_DTYPE_DOUBLE, 0, NULL, NULL);
        memcpy(ev->data, &p.extrapolation, sizeof(double));
        hg_scalar_bytes(ev, 0, x->dtype, fill);
        hg_array_unref(ev);
        for (guint i = 0; i < x->rank; i++)
            maps[i] = nearest_map(&p, (int)i, x->dims[i], dims[i]);
        hg_table_gather(hg_mover_data(out), hg_mover_data(x), x->rank, dims, x->dims, maps, fill, hg_mover_size(x->dtype));
        for (guint i = 0; i < x->rank; i++)
            g_free(maps[i]);
        ctx->outputs[0] = hg_mover_done(out);
        return TRUE;
    }
    gboolean f64 = ct == HG_KIND_F64, owned;
    gboolean direct = x->dtype == (f64 ? HG_DTYPE_DOUBLE : HG_DTYPE_FLOAT);
    void *in = f64 ? (void *)hg_array_load_f64(x, &owned) : (void *)hg_array_load_f32(x, &owned);
    void *buf = resize_interpolate(&a, &p, in, direct ? out->data : NULL, f64, x->rank, x->dims, dims);
    if (owned)
        g_free(in);
    if (!buf) {
        hg_mover_drop(out);
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
    ctx->outputs[0] = hg_mover_done(out);
    return TRUE;
}

static gboolean
resize_infer(HgShapeCtx *ctx, gboolean upsample, HgEvalFunc eval)
{
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, y;
    ResizePlan p;
    hg_arg_shape(&a, 0, &x);
    if (resize_plan(&a, upsample, &x, &y, &p) == PLAN_ERR)
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
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

/* Resize's and Upsample's cost: an output element takes 1 tap per axis for nearest, 2 for linear, 4
 * for cubic on each axis that changes size (or may: a dim not known on both sides). -1 while the
 * output's size is unknown. */
static gint64
resize_cost(const HgShapeCtx *ctx)
{
    const HgValueShape *x = ctx->n_inputs ? ctx->inputs[0] : NULL, *y = ctx->n_outputs ? ctx->outputs[0] : NULL;
    gint64 n = y ? hg_vshape_numel(y) : -1;
    if (n < 0)
        return -1;
    g_autofree char *mode = hg_attr_string(ctx->node, "mode", "nearest");
    int taps = !strcmp(mode, "linear") || !strcmp(mode, "bilinear") ? 2 : !strcmp(mode, "cubic") ? 4 : 1;
    for (int i = 0; taps > 1 && i < y->rank; i++)
        if (!(x && x->rank == y->rank && x->dims[i].v >= 0 && x->dims[i].v == y->dims[i].v))
            n *= taps;
    return n;
}

gint64
hg_cost_Resize(const HgShapeCtx *ctx)
{
    return resize_cost(ctx);
}

gint64
hg_cost_Upsample(const HgShapeCtx *ctx)
{
    return resize_cost(ctx);
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
gs_plan(const HgArgs *a, GsPlan *p)
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
gs_shape(const HgArgs *a, const HgSymShape *x, const HgSymShape *g, HgSymShape *y)
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
    hg_sym_unknown_dims(y, rank);
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
    HgArgs a = hg_args_infer(ctx);
    HgSymShape x, g, y;
    GsPlan p;
    hg_arg_shape(&a, 0, &x);
    hg_arg_shape(&a, 1, &g);
    if (!gs_plan(&a, &p) || !gs_shape(&a, &x, &g, &y))
        return FALSE;
    hg_vshape_set_sym(hg_shape_output(ctx, 0), hg_arg_dtype(&a, 0), &y);
    return hg_fold(ctx, hg_eval_GridSample, HG_FOLD_STRICT);
}

gboolean
hg_eval_GridSample(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 2))
        return FALSE;
    HgArgs a = hg_args_eval(ctx);
    const HgArray *x = ctx->inputs[0], *grid = ctx->inputs[1];
    HgSymShape xs, gs, ys;
    GsPlan p;
    hg_arg_shape(&a, 0, &xs);
    hg_arg_shape(&a, 1, &gs);
    if (!gs_plan(&a, &p) || !gs_shape(&a, &xs, &gs, &ys))
        return FALSE;
    HgKind ct = hg_kind_of(x->dtype), cg = hg_kind_of(grid->dtype);
    if ((ct != HG_KIND_F32 && ct != HG_KIND_F64) || (cg != HG_KIND_F32 && cg != HG_KIND_F64))
        return UNSUPPORTED(&a, "X of type %s with a grid of type %s", hg_dtype_name(x->dtype),
                           hg_dtype_name(grid->dtype));
    guint rank = x->rank, r = rank - 2;
    gint64 dims[HG_MAX_RANK];
    hg_sym_dims(&ys, dims);
    HgArray *out = hg_mover_new(&a, x->dtype, rank, dims);
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
    ctx->outputs[0] = hg_mover_done(out);
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
    HgArgs a = hg_args_infer(ctx);
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

/* ---------------------------------------------------------------- interval rules */

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
    const HgRange *x = hg_range_input(ctx, 0);
    if (!x || !ctx->n_outputs)
        return;
    HgValueShape *shapes;
    HgArgs a = hg_args_range(ctx, &shapes);
    HgSymShape xs, ys;
    ResizePlan p;
    hg_arg_shape(&a, 0, &xs);
    int st = resize_plan(&a, upsample, &xs, &ys, &p);
    HgRange r = *x;
    gboolean done = FALSE, interpolates = FALSE;
    if (st == PLAN_OK && hg_sym_known(&xs)) {
        gint64 in_dims[HG_MAX_RANK], out_dims[HG_MAX_RANK];
        hg_sym_dims(&xs, in_dims);
        hg_sym_dims(&ys, out_dims);
        if (p.mode == RS_NEAREST) {
            gboolean extra = FALSE;
            for (int ax = 0; ax < xs.rank && p.coord == CT_TF_CROP_AND_RESIZE; ax++) {
                g_autofree gint64 *m = nearest_map(&p, ax, in_dims[ax], out_dims[ax]);
                for (gint64 o = 0; o < out_dims[ax]; o++)
                    extra |= m[o] < 0;
            }
            if (extra)
                r = hg_range_with(r, p.extrapolation);
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
                r = hg_range_with(r, extra);
            if (strcmp(mode, "nearest")) {
                interpolates = TRUE;
                /* weights sum to 1 unless renormalized, where they may all be 0 */
                if (hg_node_attr_int(ctx->node, "antialias", 0) ||
                    hg_node_attr_int(ctx->node, "exclude_outside", 0))
                    r = hg_range_with(r, 0);
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
                    r = hg_range_with(r, extra);
                r.tiny = 0;
                r.nan = x->nan || !hg_range_bounded(x);
            }
        }
    }
    hg_args_range_free(&a, shapes);
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
    const HgRange *g = hg_range_input(ctx, 1);
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
    const HgRange *x = hg_range_input(ctx, 0), *g = hg_range_input(ctx, 1);
    if (!x || !ctx->n_outputs || !ctx->outputs[0] || !(x->lo <= x->hi))
        return;
    HgArgs a = {ctx->node, ctx->opset, 0, NULL, NULL, NULL};
    GsPlan p;
    int dt = ctx->shapes[0] ? ctx->shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    if (!hg_dtype_is_float(dt) || !gs_plan(&a, &p))
        return;
    HgRange r = *x;
    if (p.pad == GS_ZEROS && !gs_taps_inside(ctx, &p))
        r = hg_range_with(r, 0);
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

void
hg_range_Upsample(HgRangeCtx *ctx)
{
    resize_range(ctx, TRUE);
}
