/* The object-detection family: NonMaxSuppression (opsets 10, 11) and RoiAlign (opsets 10, 16), the
 * post-processing and region pooling that torchvision's detectors (SSD, SSDlite, RetinaNet, Faster
 * and Mask R-CNN) export, with their interval rules.
 *
 * Where the operators' text is vague the kernels do what ONNX Runtime's CPU kernels do (and the ONNX
 * reference implementation, which agrees with them): NonMaxSuppression computes IoU in FP32 as ONNX
 * Runtime does, so that a borderline IoU decides alike; RoiAlign computes its sampling grid in the
 * input's precision (FP32 for float, float16 and bfloat16; FP64 for double), as ONNX Runtime's
 * templated kernel does, since the number of samples per bin (a ceil) and a sample's falling outside
 * the map are discontinuous in the coordinates; its sums are FP64, rounded once. */
#include "ops/reduce.h"
#include "ops/tensor.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- NonMaxSuppression */

/* Inputs: boxes [batches, spatial, 4], scores [batches, classes, spatial], then the optional
 * max_output_boxes_per_class (int64), iou_threshold and score_threshold (float scalars or [1]).
 * Output: selected_indices int64 [selected, 3], rows (batch, class, box), batch-major, then class,
 * then the order of selection.
 *
 * Per batch and class: the boxes whose score is strictly greater than score_threshold (every box
 * when it is absent) in order of decreasing score, equal scores by increasing box index (ONNX
 * Runtime's order; NaN scores, which only an absent threshold lets in, come last, by index); a box
 * is selected unless its IoU with a box already selected for the class is strictly greater than
 * iou_threshold (default 0), until max_output_boxes_per_class are selected. An absent or
 * non-positive max_output_boxes_per_class selects nothing, as ONNX Runtime does; an iou_threshold
 * outside [0, 1] is an error there, and here.
 *
 * center_point_box 0: a box is [y1, x1, y2, x2], either pair of corners in either order (each axis
 * takes its min and max); 1: [x_center, y_center, width, height]. IoU as ONNX Runtime computes it in
 * FP32: no suppression where the boxes' intersection is empty along an axis or has no area, or the
 * union has none (IoU 0). */

typedef struct {
    float y0, x0, y1, x1, area;
} NmsBox;

typedef struct {
    float score;
    gint64 index;
} NmsCand;

/* ONNX Runtime's MaxMin: the pair ordered, lhs taken as the max when lhs >= rhs. */
static void
nms_min_max(float lhs, float rhs, float *lo, float *hi)
{
    if (lhs >= rhs) {
        *lo = rhs;
        *hi = lhs;
    } else {
        *lo = lhs;
        *hi = rhs;
    }
}

static NmsBox
nms_box(const float *b, gboolean center)
{
    NmsBox r;
    if (!center) {
        nms_min_max(b[0], b[2], &r.y0, &r.y1);
        nms_min_max(b[1], b[3], &r.x0, &r.x1);
        r.area = (r.y1 - r.y0) * (r.x1 - r.x0);
    } else {
        float hw = b[2] / 2, hh = b[3] / 2;
        r.x0 = b[0] - hw;
        r.x1 = b[0] + hw;
        r.y0 = b[1] - hh;
        r.y1 = b[1] + hh;
        r.area = b[2] * b[3];
    }
    return r;
}

/* Whether b is suppressed by the selected box a: IoU(a, b) > thr, in FP32. */
static gboolean
nms_suppresses(const NmsBox *a, const NmsBox *b, float thr)
{
    float ix0 = MAX(a->x0, b->x0), ix1 = MIN(a->x1, b->x1);
    if (ix1 <= ix0)
        return FALSE;
    float iy0 = MAX(a->y0, b->y0), iy1 = MIN(a->y1, b->y1);
    if (iy1 <= iy0)
        return FALSE;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    if (inter <= 0)
        return FALSE;
    float uni = a->area + b->area - inter;
    if (uni <= 0)
        return FALSE;
    return inter / uni > thr;
}

/* Decreasing score, then increasing index; NaN scores last. */
static int
nms_cand_cmp(const void *pa, const void *pb)
{
    const NmsCand *a = pa, *b = pb;
    gboolean na = isnan(a->score), nb = isnan(b->score);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* A scalar input's first element, or FALSE where it is absent or empty. */
static gboolean
nms_scalar(const HgEvalCtx *ctx, guint i, double *v)
{
    const HgArray *a = hg_eval_input(ctx, i);
    if (!a || a->numel < 1)
        return FALSE;
    *v = hg_array_get_f64(a, 0);
    return TRUE;
}

gboolean
hg_eval_NonMaxSuppression(HgEvalCtx *ctx)
{
    HgArray *boxes = hg_eval_need_input(ctx, 0, "boxes");
    HgArray *scores = boxes ? hg_eval_need_input(ctx, 1, "scores") : NULL;
    if (!scores || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    HgKind kb, ks;
    if (!hg_eval_need_float(ctx, boxes, &kb) || !hg_eval_need_float(ctx, scores, &ks))
        return FALSE;
    if (boxes->rank != 3 || scores->rank != 3 || boxes->dims[2] != 4 || boxes->dims[0] != scores->dims[0] ||
        boxes->dims[1] != scores->dims[2]) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "boxes must be [batches, spatial, 4] and scores [batches, classes, spatial] (have ranks %u "
                    "and %u)", boxes->rank, scores->rank);
        return FALSE;
    }
    gint64 nb = boxes->dims[0], ns = boxes->dims[1], nc = scores->dims[1];
    const HgArray *mo = hg_eval_input(ctx, 2);
    gint64 max_out = mo && mo->numel >= 1 ? MAX(hg_array_get_i64(mo, 0), 0) : 0;
    double iou = 0, score_thr = 0;
    if (nms_scalar(ctx, 3, &iou) && !(iou >= 0 && iou <= 1)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "iou_threshold %g is outside [0, 1]", iou);
        return FALSE;
    }
    gboolean filter = nms_scalar(ctx, 4, &score_thr);
    gint64 center = hg_node_attr_int(ctx->node, "center_point_box", 0);
    if (center != 0 && center != 1) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "center_point_box must be 0 or 1, is %" G_GINT64_FORMAT,
                    center);
        return FALSE;
    }
    float iou_f = (float)iou, thr_f = (float)score_thr;
    g_auto(HgKBuf) bb = hg_kbuf_load(boxes, HG_KIND_F32);
    g_auto(HgKBuf) sb = hg_kbuf_load(scores, HG_KIND_F32);
    if ((boxes->numel && !bb.p) || (scores->numel && !sb.p))
        return hg_eval_oom(ctx);
    const float *bp = bb.p, *sp = sb.p;
    /* Rows selected: at most min(max_out, spatial) per batch and class. */
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(gint64));
    NmsBox *info = g_try_new(NmsBox, ns + 1);
    NmsCand *cand = g_try_new(NmsCand, ns + 1);
    gint64 *sel = g_try_new(gint64, ns + 1);
    gboolean ok = info && cand && sel;
    for (gint64 b = 0; ok && max_out > 0 && b < nb; b++) {
        for (gint64 i = 0; i < ns; i++)
            info[i] = nms_box(bp + (b * ns + i) * 4, center == 1);
        for (gint64 c = 0; c < nc; c++) {
            const float *s = sp + (b * nc + c) * ns;
            gint64 n = 0, n_sel = 0;
            for (gint64 i = 0; i < ns; i++)
                if (!filter || s[i] > thr_f)
                    cand[n++] = (NmsCand){s[i], i};
            qsort(cand, (size_t)n, sizeof(NmsCand), nms_cand_cmp);
            for (gint64 k = 0; k < n && n_sel < max_out; k++) {
                const NmsBox *x = &info[cand[k].index];
                gboolean keep = TRUE;
                for (gint64 j = 0; j < n_sel && keep; j++)
                    keep = !nms_suppresses(&info[sel[j]], x, iou_f);
                if (!keep)
                    continue;
                sel[n_sel++] = cand[k].index;
                gint64 row[3] = {b, c, cand[k].index};
                g_array_append_vals(rows, row, 3);
            }
        }
    }
    g_free(info);
    g_free(cand);
    g_free(sel);
    if (!ok) {
        g_array_unref(rows);
        return hg_eval_oom(ctx);
    }
    gint64 dims[2] = {(gint64)rows->len / 3, 3};
    HgArray *y = hg_eval_new_output(ctx, HG_DTYPE_INT64, 2, dims);
    if (y && rows->len)
        memcpy(y->data, rows->data, rows->len * sizeof(gint64));
    g_array_unref(rows);
    if (!y)
        return FALSE;
    hg_eval_set_output(ctx, 0, y);
    return TRUE;
}

/* [selected, 3] int64, the count known only at run time. */
gboolean
hg_infer_NonMaxSuppression(HgShapeCtx *ctx)
{
    const HgValueShape *boxes = hg_shape_input(ctx, 0), *scores = hg_shape_input(ctx, 1);
    if ((boxes && boxes->rank >= 0 && boxes->rank != 3) || (scores && scores->rank >= 0 && scores->rank != 3)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "boxes and scores must have rank 3 (have %d and %d)",
                    boxes ? boxes->rank : -1, scores ? scores->rank : -1);
        return FALSE;
    }
    if (boxes && boxes->rank == 3 && boxes->dims[2].v >= 0 && boxes->dims[2].v != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "boxes' last dim must be 4, is %" G_GINT64_FORMAT,
                    boxes->dims[2].v);
        return FALSE;
    }
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!y)
        return TRUE;
    HgSymDim dims[2] = {hg_dim_unknown(), hg_dim_known(3)};
    hg_vshape_set(y, HG_DTYPE_INT64, 2, dims);
    return TRUE;
}

/* One pass over the scores per batch and class (the pairwise IoUs depend on the values). */
gint64
hg_cost_NonMaxSuppression(const HgShapeCtx *ctx)
{
    return hg_shape_input_numel(ctx, 1);
}

/* The dim of a rank-3 input, -1 when unknown. */
static gint64
nms_dim(const HgValueShape *s, int axis)
{
    return s && s->rank == 3 ? hg_shape_dim(s, axis) : -1;
}

/* Column 0 holds batch indices, in [0, batches - 1]; column 1 class indices, in [0, classes - 1];
 * column 2 box indices, in [0, spatial - 1]. One interval for the tensor: [0, the largest of the
 * three - 1], unbounded above where one is not known (the kernel checks that boxes and scores agree
 * on batches and spatial, so either input's dim will do). */
void
hg_range_NonMaxSuppression(HgRangeCtx *ctx)
{
    HgRange *y = hg_range_output(ctx, 0);
    if (!y)
        return;
    const HgValueShape *boxes = hg_range_shape(ctx, 0), *scores = hg_range_shape(ctx, 1);
    gint64 nb = MAX(nms_dim(boxes, 0), nms_dim(scores, 0));
    gint64 ns = MAX(nms_dim(boxes, 1), nms_dim(scores, 2));
    gint64 nc = nms_dim(scores, 1);
    gboolean known = nb >= 0 && ns >= 0 && nc >= 0;
    double hi = known ? (double)MAX(MAX(nb, ns), MAX(nc, 1)) - 1 : INFINITY;
    *y = hg_range_make(0, hi, 1, FALSE);
}

/* ---------------------------------------------------------------- RoiAlign */

/* Inputs: X [N, C, H, W], rois [num_rois, 4] as (x1, y1, x2, y2) in the input image's coordinates,
 * batch_indices [num_rois] (int64, each in [0, N)). Output Y [num_rois, C, output_height,
 * output_width].
 *
 * A roi scaled by spatial_scale (less 0.5 with coordinate_transformation_mode "half_pixel", opset
 * 16's default; "output_half_pixel", and opset 10, take it as it is but widen a roi to at least 1x1)
 * is cut into output_height x output_width bins; each bin samples a grid of sampling_ratio^2 points
 * (sampling_ratio 0: ceil(bin height) x ceil(bin width)) at the centres of its cells. A point more
 * than one pixel outside the map (y < -1, y > H, x < -1, x > W) has every weight 0; one inside is
 * clamped to the map (below 0 to 0, past the last row or column to it) and read by bilinear
 * interpolation from its four neighbours. mode "avg" averages the grid's interpolated values; mode
 * "max" takes, as ONNX Runtime and the ONNX reference do, the largest of the four weighted
 * neighbours w_i * x_i over every point of the grid (not the largest interpolation). */

typedef struct {
    gboolean max_mode;
    gboolean half_pixel;
    gint64 out_h, out_w, ratio;
    float scale;
} RoiAttrs;

static gboolean
roi_attrs(const HgNode *n, gint64 opset, RoiAttrs *at, GError **error)
{
    g_autofree char *mode = hg_attr_string(n, "mode", "avg");
    g_autofree char *ctm = hg_attr_string(n, "coordinate_transformation_mode",
                                          opset >= 16 ? "half_pixel" : "output_half_pixel");
    at->out_h = hg_node_attr_int(n, "output_height", 1);
    at->out_w = hg_node_attr_int(n, "output_width", 1);
    at->ratio = hg_node_attr_int(n, "sampling_ratio", 0);
    at->scale = hg_node_attr_float(n, "spatial_scale", 1.0f);
    if (g_ascii_strcasecmp(mode, "avg") != 0 && g_ascii_strcasecmp(mode, "max") != 0) {
        hg_op_error(error, HG_ERROR_INVALID, n, "mode must be \"avg\" or \"max\", is \"%s\"", mode);
        return FALSE;
    }
    at->max_mode = g_ascii_strcasecmp(mode, "max") == 0;
    if (opset < 16)
        at->half_pixel = FALSE; /* opset 10 has no such attribute: the legacy geometry */
    else if (strcmp(ctm, "half_pixel") == 0 || strcmp(ctm, "output_half_pixel") == 0)
        at->half_pixel = strcmp(ctm, "half_pixel") == 0;
    else {
        hg_op_error(error, HG_ERROR_INVALID, n,
                    "coordinate_transformation_mode must be \"half_pixel\" or \"output_half_pixel\", is \"%s\"", ctm);
        return FALSE;
    }
    if (at->out_h < 1 || at->out_w < 1 || at->ratio < 0) {
        hg_op_error(error, HG_ERROR_INVALID, n,
                    "output_height and output_width must be at least 1 and sampling_ratio at least 0 (are %" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")", at->out_h, at->out_w, at->ratio);
        return FALSE;
    }
    return TRUE;
}

/* One sampling point: the offsets of its four neighbours in a channel's map and their weights (all 0
 * for a point outside the map). */
typedef struct {
    gint64 pos[4];
    double w[4];
} RoiSample;

/* The sampling points of one roi: more than this many is refused rather than run (a roi of absurd
 * size under sampling_ratio 0). */
#define ROI_MAX_SAMPLES ((gint64)1 << 22)

/* x rounded to the geometry's precision: FP32 (f32) or FP64. Each step of ONNX Runtime's arithmetic
 * in float is one such rounding of the exact result of float operands, which double holds exactly
 * (or within a rounding that the second one absorbs: 53 >= 2 * 24 + 2 bits). */
static inline double
roi_rnd(gboolean f32, double x)
{
    return f32 ? (double)(float)x : x;
}

/* The grid of a roi along one axis: sampling_ratio, or ceil(bin size); -1 when it is too large (or
 * not a number: a roi of infinite size). A NaN bin size gives none (every sample NaN, outside). */
static gint64
roi_grid(gint64 ratio, double bin)
{
    if (ratio > 0)
        return ratio;
    if (isnan(bin))
        return 0;
    double g = ceil(bin);
    if (g > (double)ROI_MAX_SAMPLES)
        return -1;
    return g > 0 ? (gint64)g : 0;
}

/* One axis of a sampling point inside the map (t in [-1, len]): t clamped to [0, len - 1], its low
 * and high neighbours, and the high one's weight l = t - low and the low one's h = 1 - l, each
 * rounded as ONNX Runtime rounds them. */
static void
roi_axis(gboolean f32, double t, gint64 len, gint64 *low, gint64 *high, double *l, double *h)
{
    if (t <= 0)
        t = 0;
    *low = (gint64)t;
    if (*low >= len - 1) {
        *high = *low = len - 1;
        t = (double)*low;
    } else {
        *high = *low + 1;
    }
    *l = roi_rnd(f32, t - (double)*low);
    *h = roi_rnd(f32, 1.0 - *l);
}

/* The values of X's element i (stored in kind FP32 or FP64). */
static inline double
roi_x(const void *x, gboolean f64, gint64 i)
{
    return f64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

static inline double
roi_max2(double a, double b)
{
    return a < b ? b : a; /* std::max: a NaN first stays, a NaN second is passed over */
}

gboolean
hg_eval_RoiAlign(HgEvalCtx *ctx)
{
    RoiAttrs at;
    if (!roi_attrs(ctx->node, ctx->opset, &at, ctx->error))
        return FALSE;
    HgArray *x = hg_eval_need_input(ctx, 0, "X");
    HgArray *rois = x ? hg_eval_need_input(ctx, 1, "rois") : NULL;
    HgArray *bi = rois ? hg_eval_need_input(ctx, 2, "batch_indices") : NULL;
    if (!bi || !hg_eval_need_outputs(ctx, 1))
        return FALSE;
    HgKind k;
    if (!hg_eval_need_float(ctx, x, &k))
        return FALSE;
    if (!hg_dtype_is_float(rois->dtype))
        return hg_eval_unsupported(ctx, rois->dtype);
    if (!hg_dtype_is_int(bi->dtype))
        return hg_eval_unsupported(ctx, bi->dtype);
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0]) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "X must be [N, C, H, W], rois [num_rois, 4] and batch_indices [num_rois] (have ranks %u, %u and %u)",
                    x->rank, rois->rank, bi->rank);
        return FALSE;
    }
    gint64 nr = rois->dims[0], nb = x->dims[0], nch = x->dims[1], hh = x->dims[2], ww = x->dims[3];
    for (gint64 r = 0; r < nr; r++) {
        gint64 b = hg_array_get_i64(bi, r);
        if (b < 0 || b >= nb) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "batch_indices[%" G_GINT64_FORMAT "] = %" G_GINT64_FORMAT " is outside [0, %" G_GINT64_FORMAT ")", r,
                        b, nb);
            return FALSE;
        }
    }
    gint64 dims[4] = {nr, nch, at.out_h, at.out_w};
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, x->dtype, 4, dims);
    if (!y)
        return FALSE;
    gboolean f32 = k == HG_KIND_F32, f64 = !f32;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, k);
    double *out = g_try_new0(double, y->numel + 1);
    if ((x->numel && !xb.p) || !out) {
        g_free(out);
        return hg_eval_oom(ctx);
    }
    gint64 plane = hh * ww, bins = at.out_h * at.out_w;
    double off = at.half_pixel ? 0.5 : 0.0;
    gboolean ok = TRUE;
    GArray *samples = g_array_new(FALSE, FALSE, sizeof(RoiSample));
    for (gint64 r = 0; ok && r < nr && plane > 0; r++) {
        double c[4];
        for (int i = 0; i < 4; i++)
            c[i] = roi_rnd(f32, roi_rnd(f32, hg_array_get_f64(rois, r * 4 + i) * (double)at.scale) - off);
        double rw = roi_rnd(f32, c[2] - c[0]), rh = roi_rnd(f32, c[3] - c[1]);
        if (!at.half_pixel) { /* std::max(w, 1): a NaN width stays NaN */
            rw = rw < 1.0 ? 1.0 : rw;
            rh = rh < 1.0 ? 1.0 : rh;
        }
        double bin_h = roi_rnd(f32, rh / (double)at.out_h), bin_w = roi_rnd(f32, rw / (double)at.out_w);
        gint64 gh = roi_grid(at.ratio, bin_h), gw = roi_grid(at.ratio, bin_w);
        if (gh < 0 || gw < 0 || (gh && gw && gh * gw > ROI_MAX_SAMPLES / bins)) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node,
                        "roi %" G_GINT64_FORMAT " would take more than %" G_GINT64_FORMAT " sampling points", r,
                        ROI_MAX_SAMPLES);
            ok = FALSE;
            break;
        }
        double count = (double)MAX(gh * gw, 1);
        g_array_set_size(samples, (guint)(bins * gh * gw));
        RoiSample *s = (RoiSample *)(void *)samples->data;
        for (gint64 ph = 0; ph < at.out_h; ph++)
            for (gint64 pw = 0; pw < at.out_w; pw++)
                for (gint64 iy = 0; iy < gh; iy++) {
                    double yy = roi_rnd(f32, roi_rnd(f32, c[1] + roi_rnd(f32, (double)ph * bin_h)) +
                                                 roi_rnd(f32, roi_rnd(f32, ((double)iy + 0.5) * bin_h) / (double)gh));
                    for (gint64 ix = 0; ix < gw; ix++, s++) {
                        double xx = roi_rnd(f32, roi_rnd(f32, c[0] + roi_rnd(f32, (double)pw * bin_w)) +
                                                     roi_rnd(f32, roi_rnd(f32, ((double)ix + 0.5) * bin_w) / (double)gw));
                        gint64 y0, y1, x0, x1;
                        double ly, hy, lx, hx;
                        *s = (RoiSample){{0, 0, 0, 0}, {0, 0, 0, 0}};
                        /* both axes checked before either is clamped, as ONNX Runtime does */
                        if (!(yy >= -1.0 && yy <= (double)hh && xx >= -1.0 && xx <= (double)ww))
                            continue;
                        roi_axis(f32, yy, hh, &y0, &y1, &ly, &hy);
                        roi_axis(f32, xx, ww, &x0, &x1, &lx, &hx);
                        s->pos[0] = y0 * ww + x0;
                        s->pos[1] = y0 * ww + x1;
                        s->pos[2] = y1 * ww + x0;
                        s->pos[3] = y1 * ww + x1;
                        s->w[0] = roi_rnd(f32, hy * hx);
                        s->w[1] = roi_rnd(f32, hy * lx);
                        s->w[2] = roi_rnd(f32, ly * hx);
                        s->w[3] = roi_rnd(f32, ly * lx);
                    }
                }
        gint64 b = hg_array_get_i64(bi, r);
        for (gint64 ch = 0; ch < nch; ch++) {
            gint64 base = (b * nch + ch) * plane;
            double *o = out + (r * nch + ch) * bins;
            const RoiSample *t = (const RoiSample *)(const void *)samples->data;
            for (gint64 bin = 0; bin < bins; bin++) {
                double v = 0;
                for (gint64 q = 0; q < gh * gw; q++, t++) {
                    /* each product exact in FP64 (FP32 operands); ONNX Runtime rounds each to float,
                     * which the max commutes with */
                    double p0 = t->w[0] * roi_x(xb.p, f64, base + t->pos[0]);
                    double p1 = t->w[1] * roi_x(xb.p, f64, base + t->pos[1]);
                    double p2 = t->w[2] * roi_x(xb.p, f64, base + t->pos[2]);
                    double p3 = t->w[3] * roi_x(xb.p, f64, base + t->pos[3]);
                    if (!at.max_mode)
                        v += p0 + p1 + p2 + p3;
                    else {
                        double m = roi_max2(roi_max2(roi_max2(p0, p1), p2), p3);
                        v = q == 0 ? m : roi_max2(v, m);
                    }
                }
                o[bin] = at.max_mode ? v : v / count;
            }
        }
    }
    g_array_unref(samples);
    if (ok)
        hg_store_f64_once(y, out);
    g_free(out);
    if (!ok)
        return FALSE;
    hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    return TRUE;
}

/* Y [num_rois, C, output_height, output_width] in X's type: num_rois from rois (or batch_indices),
 * C from X, the dims named as theirs are. */
gboolean
hg_infer_RoiAlign(HgShapeCtx *ctx)
{
    RoiAttrs at;
    if (!roi_attrs(ctx->node, ctx->opset, &at, ctx->error))
        return FALSE;
    const HgValueShape *x = hg_shape_input(ctx, 0), *rois = hg_shape_input(ctx, 1), *bi = hg_shape_input(ctx, 2);
    if ((x && x->rank >= 0 && x->rank != 4) || (rois && rois->rank >= 0 && rois->rank != 2) ||
        (bi && bi->rank >= 0 && bi->rank != 1)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X, rois and batch_indices must have ranks 4, 2 and 1 (have %d, %d and %d)",
                    x ? x->rank : -1, rois ? rois->rank : -1, bi ? bi->rank : -1);
        return FALSE;
    }
    if (rois && rois->rank == 2 && rois->dims[1].v >= 0 && rois->dims[1].v != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "rois' last dim must be 4, is %" G_GINT64_FORMAT,
                    rois->dims[1].v);
        return FALSE;
    }
    HgValueShape *y = hg_shape_wanted(ctx, 0);
    if (!y)
        return TRUE;
    HgSymDim n = rois && rois->rank == 2 ? rois->dims[0] : hg_dim_unknown();
    if (n.v < 0 && !n.sym && bi && bi->rank == 1)
        n = bi->dims[0];
    HgSymDim c = x && x->rank == 4 ? x->dims[1] : hg_dim_unknown();
    HgSymDim dims[4] = {n, c, hg_dim_known(at.out_h), hg_dim_known(at.out_w)};
    hg_vshape_set(y, x ? x->dtype : HG_DTYPE_UNDEFINED, 4, dims);
    return TRUE;
}

/* Four multiply-adds per sampling point: num_rois * C * output_height * output_width * grid * 4,
 * the grid sampling_ratio^2, or at least one point per bin under sampling_ratio 0 (its size depends
 * on the rois' values). */
gint64
hg_cost_RoiAlign(const HgShapeCtx *ctx)
{
    RoiAttrs at;
    const HgValueShape *x = hg_shape_input(ctx, 0), *rois = hg_shape_input(ctx, 1);
    if (!roi_attrs(ctx->node, ctx->opset, &at, NULL) || !x || x->rank != 4 || !rois || rois->rank != 2)
        return -1;
    gint64 n = rois->dims[0].v, c = x->dims[1].v;
    if (n < 0 || c < 0)
        return -1;
    gint64 grid = at.ratio > 0 ? at.ratio * at.ratio : 1;
    return n * c * at.out_h * at.out_w * grid * 4;
}

/* Every output is a function of X's values through weights in [0, 1]:
 *
 * - avg: the mean over the bin's grid of samples. A sample inside the map is a bilinear
 *   interpolation, w1 x1 + w2 x2 + w3 x3 + w4 x4 with the weights (1-ly)(1-lx), (1-ly)lx, ly(1-lx),
 *   ly lx >= 0 summing to 1, so it lies in [lo, hi]; a sample outside has every weight 0 and gives
 *   0. The mean of values in [lo, hi] and zeros lies in [min(lo, 0), max(hi, 0)]; a bin without
 *   samples (sampling_ratio 0 and a roi of no height or width) gives 0 too.
 * - max: the largest of w_i x_i over the grid, each w_i in [0, 1], so each product lies between 0
 *   and x_i: in [min(lo, 0), max(hi, 0)] again.
 *
 * So Y lies in the hull of X's range and 0, whatever the rois and batch indices. The weights are
 * rounded in FP32 (1 - ly can round up to 1 while ly > 0, so the four sum to 1 plus a few ulps): a
 * relative excess of a few 2^-24, inside the driver's 2^-20; the FP64 sum rounds once into Y's type
 * (hg_range_fit: FP16's rounding, and FP32's overflow to inf past its range). tiny is 0: weights make
 * any small magnitude. NaN: from a NaN in X, or an infinite x_i under a weight of 0 (0 * inf) or
 * beside an infinity of the other sign (inf - inf); the rois cannot make one (a sample whose
 * coordinate is NaN or infinite lies outside the map). */
void
hg_range_RoiAlign(HgRangeCtx *ctx)
{
    const HgRange *x = hg_range_input(ctx, 0);
    HgRange *y = hg_range_output(ctx, 0);
    if (!x || !y || !(x->lo <= x->hi))
        return;
    HgRange r = hg_range_with(*x, 0);
    r.tiny = 0;
    r.nan = x->nan || !hg_range_bounded(x);
    *y = hg_range_fit(r, hg_range_output_dtype(ctx, 0));
}
