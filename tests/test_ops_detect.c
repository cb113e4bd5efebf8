/* Kernels, shape rules and interval rules of the object-detection family (src/ops/detect.c:
 * NonMaxSuppression, RoiAlign), checked against values worked out by hand (written here, with the
 * working in the comments). The RoiAlign cases mostly sample X = 10 y + x, which bilinear
 * interpolation reproduces exactly, so that an average is the value at the mean sampling point; the
 * others use rows with a step, where the number and place of the samples show. */
#include "opstest.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define check(a, dtype, rank, dims, want, tol) hg_check_rel_at((a), (dtype), (rank), (dims), (want), (tol), __FILE__, __LINE__)

/* Assert that a is int64 [rows, 3] holding want (rows triples). */
static void
check_sel_at(const HgArray *a, gint64 rows, const gint64 *want, const char *file, int line)
{
    hg_assert_shape_at(a, HG_DTYPE_INT64, 2, (gint64[]){rows, 3}, file, line);
    hg_assert_ints_at(a, want, rows * 3, file, line);
}

#define check_sel(a, rows, want) check_sel_at((a), (rows), (want), __FILE__, __LINE__)

/* A float scalar of shape [1], as the node tests give the thresholds. */
static HgArray *
f1(double v)
{
    return arr(HG_DTYPE_FLOAT, 1, DIMS(1), VALS(v));
}

static HgArray *
i1(gint64 v)
{
    return arr_i64(1, DIMS(1), (gint64[]){v});
}

/* ---------------------------------------------------------------- the table */

static void
test_family_rows(void **state)
{
    (void)state;
    assert_family_rows("detect", 2);
    const HgOpDef *nms = hg_op_lookup("", "NonMaxSuppression"), *ra = hg_op_lookup("", "RoiAlign");
    assert_non_null(nms);
    assert_non_null(ra);
    /* NonMaxSuppression: no scale trait (the scores meet a fixed threshold); its two thresholds are
     * parameters kept FP32 */
    assert_int_equal(nms->traits, 0);
    assert_int_equal(nms->fp32_inputs, (1u << 3) | (1u << 4));
    /* RoiAlign: 2X gives 2Y in both modes (avg is linear, max of w_i x_i with w_i >= 0 commutes with a
     * positive scale); it sums samples; rois must share X's type, so nothing is kept FP32 */
    assert_int_equal(ra->traits, HG_TRAIT_HOMOGENEOUS | HG_TRAIT_ACCUMULATES);
    assert_int_equal(ra->fp32_inputs, 0);
}

/* ---------------------------------------------------------------- NonMaxSuppression */

/* Corners [y1, x1, y2, x2] in either order. Boxes (y range, x range):
 *   0: [0, 1] x [0, 1]       score 0.9
 *   1: [1, 0.9, 0, -0.1], i.e. [0, 1] x [-0.1, 0.9]    score 0.95
 *   2: [0, 1] x [2, 3]       score 0.3
 *   3: [0, 1] x [0.5, 1.5]   score 0.8
 * Order by score: 1, 0, 3, 2. IoU(1, 0) = 0.9 / 1.1 = 0.818; IoU(1, 3) = 0.4 / 1.6 = 0.25;
 * IoU(0, 3) = 0.5 / 1.5; box 2 meets none. At iou_threshold 0.5: 1 kept, 0 suppressed by 1, 3 kept,
 * 2 kept. At 0.2: 3 is suppressed by 1 too. Reading box 1 without ordering its corners would make
 * it empty, and box 0 would be kept. */
static void
test_nms_corners(void **state)
{
    (void)state;
    const double boxes[] = {0, 0, 1, 1, 1, 0.9, 0, -0.1, 0, 2, 1, 3, 0, 0.5, 1, 1.5};
    Node n = node_new("NonMaxSuppression", "b,s,m,i,t", "y");
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 4), boxes),
                   arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), VALS(0.9, 0.95, 0.3, 0.8)), i1(10), f1(0.5), f1(0));
    check_sel(r.out[0], 3, INTS(0, 0, 1, 0, 0, 3, 0, 0, 2));
    result_free(&r);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 4), boxes),
            arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), VALS(0.9, 0.95, 0.3, 0.8)), i1(10), f1(0.2), f1(0));
    check_sel(r.out[0], 2, INTS(0, 0, 1, 0, 0, 2));
    result_free(&r);
    /* max_output_boxes_per_class 2 stops after two selections (1 and 3) */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 4), boxes),
            arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), VALS(0.9, 0.95, 0.3, 0.8)), i1(2), f1(0.5), f1(0));
    check_sel(r.out[0], 2, INTS(0, 0, 1, 0, 0, 3));
    result_free(&r);
    /* IoU exactly the threshold does not suppress: [0, 1] x [0, 1] and [0, 1] x [0, 0.5] have
     * IoU 0.5 / 1 = 0.5 */
    r = RUN(&n, 10, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4), VALS(0, 0, 1, 1, 0, 0, 1, 0.5)),
            arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.8)), i1(5), f1(0.5), f1(0));
    check_sel(r.out[0], 2, INTS(0, 0, 0, 0, 0, 1));
    result_free(&r);
    /* boxes that only touch (intersection of no area) never suppress, even at iou_threshold 0 */
    r = RUN(&n, 10, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4), VALS(0, 0, 1, 1, 0, 1, 1, 2)),
            arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.8)), i1(5), f1(0), f1(0));
    check_sel(r.out[0], 2, INTS(0, 0, 0, 0, 0, 1));
    result_free(&r);
    node_free(&n);
}

/* center_point_box 1: [x_center, y_center, width, height]. Box 0 [1, 1, 2, 2] is x [0, 2], y [0, 2]
 * (area 4), box 1 [0.5, 1, 1, 2] is x [0, 1], y [0, 2] (area 2): intersection 2, union 4 + 2 - 2,
 * IoU 0.5 > 0.4, box 1 suppressed. Read as corners the two only touch (box 0 y [1, 2], x [1, 2];
 * box 1 y [0.5, 1], x [1, 2]): nothing suppressed. */
static void
test_nms_center(void **state)
{
    (void)state;
    const double boxes[] = {1, 1, 2, 2, 0.5, 1, 1, 2};
    Node n = node_new("NonMaxSuppression", "b,s,m,i", "y");
    attr_i(n.node, "center_point_box", 1);
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4), boxes),
                   arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.8)), i1(3), f1(0.4));
    check_sel(r.out[0], 1, INTS(0, 0, 0));
    result_free(&r);
    /* the same at iou_threshold 0.5: IoU 0.5 is not more than it, both stay */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4), boxes), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.8)),
            i1(3), f1(0.5));
    check_sel(r.out[0], 2, INTS(0, 0, 0, 0, 0, 1));
    result_free(&r);
    node_free(&n);
    /* the corner form of the same numbers keeps both */
    n = node_new("NonMaxSuppression", "b,s,m,i", "y");
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4), boxes), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.8)),
            i1(3), f1(0.4));
    check_sel(r.out[0], 2, INTS(0, 0, 0, 0, 0, 1));
    result_free(&r);
    node_free(&n);
}

/* score_threshold keeps scores strictly above it (0.5 itself is out); without it every box is a
 * candidate. Equal scores go by box index; identical boxes of equal score keep the lowest index. */
static void
test_nms_scores_ties(void **state)
{
    (void)state;
    /* three disjoint boxes */
    const double apart[] = {0, 0, 1, 1, 0, 2, 1, 3, 0, 4, 1, 5};
    Node n = node_new("NonMaxSuppression", "b,s,m,i,t", "y");
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 4), apart),
                   arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 3), VALS(0.5, 0.4, 0.6)), i1(10), f1(0.5), f1(0.5));
    check_sel(r.out[0], 1, INTS(0, 0, 2));
    result_free(&r);
    /* ties among disjoint boxes: index order */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 4), apart),
            arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 3), VALS(0.7, 0.9, 0.7)), i1(10), f1(0.5), f1(0.1));
    check_sel(r.out[0], 3, INTS(0, 0, 1, 0, 0, 0, 0, 0, 2));
    result_free(&r);
    node_free(&n);
    /* no score_threshold: all three, by score */
    n = node_new("NonMaxSuppression", "b,s,m,i", "y");
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 4), apart), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 3), VALS(0.5, 0.4, 0.6)),
            i1(10), f1(0.5));
    check_sel(r.out[0], 3, INTS(0, 0, 2, 0, 0, 0, 0, 0, 1));
    result_free(&r);
    /* three identical boxes of equal score: the first wins, the others are suppressed (IoU 1) */
    const double same[] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 4), same), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 3), VALS(0.3, 0.3, 0.3)),
            i1(10), f1(0.5));
    check_sel(r.out[0], 1, INTS(0, 0, 0));
    result_free(&r);
    node_free(&n);
}

/* max_output_boxes_per_class absent, 0 or negative selects nothing ([0, 3]); an iou_threshold
 * outside [0, 1] is an error; so are boxes and scores that disagree. */
static void
test_nms_limits(void **state)
{
    (void)state;
    const double one[] = {0, 0, 1, 1};
    Node n = node_new("NonMaxSuppression", "b,s", "y");
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 1), VALS(0.9)));
    check_sel(r.out[0], 0, NULL);
    result_free(&r);
    node_free(&n);
    n = node_new("NonMaxSuppression", "b,s,m,i,t", "y");
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 1), VALS(0.9)), i1(0),
            f1(0.5), f1(0));
    check_sel(r.out[0], 0, NULL);
    result_free(&r);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 1), VALS(0.9)), i1(-3),
            f1(0.5), f1(0));
    check_sel(r.out[0], 0, NULL);
    result_free(&r);
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 1), VALS(0.9)), i1(1),
            f1(0.5), f1(0));
    check_sel(r.out[0], 1, INTS(0, 0, 0));
    result_free(&r);
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "iou_threshold", arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 1), VALS(0.9)), i1(1), f1(1.5), f1(0));
    RUN_FAILS(&n, 11, HG_ERROR_INVALID, "spatial", arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 4), one),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 1, 2), VALS(0.9, 0.1)), i1(1), f1(0.5), f1(0));
    node_free(&n);
}

/* Two batches and two classes: rows batch-major, then class, then selection order. Batch 0's two
 * boxes are disjoint, batch 1's identical (so each class of batch 1 keeps one):
 *   batch 0 class 0 scores [0.1, 0.9] -> 1, 0;   class 1 [0.8, 0.2] -> 0, 1
 *   batch 1 class 0 [0.3, 0.4] -> 1;            class 1 [0.6, 0.5] -> 0 */
static void
test_nms_batches_classes(void **state)
{
    (void)state;
    const double boxes[] = {0, 0, 1, 1, 0, 2, 1, 3, 0, 0, 1, 1, 0, 0, 1, 1};
    const double scores[] = {0.1, 0.9, 0.8, 0.2, 0.3, 0.4, 0.6, 0.5};
    Node n = node_new("NonMaxSuppression", "b,s,m,i,t", "y");
    Result r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 4), boxes), arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), scores),
                   i1(2), f1(0.5), f1(0));
    check_sel(r.out[0], 6, INTS(0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0));
    result_free(&r);
    /* at most one per class */
    r = RUN(&n, 11, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 4), boxes), arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 2), scores), i1(1),
            f1(0.5), f1(0));
    check_sel(r.out[0], 4, INTS(0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0));
    result_free(&r);
    node_free(&n);
}

/* Shape: [unknown, 3] int64. Interval: [0, the largest of batches, classes and spatial - 1]. */
static void
test_nms_shape_range(void **state)
{
    (void)state;
    g_autoptr(GError) error = NULL;
    HgValueShape *in[2], *out[1];
    Node n = node_new("NonMaxSuppression", "b,s", "y");
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 5, 4));
    in[1] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 7, 5));
    assert_true(infer_vs(&n, 11, 2, in, 1, out, &error));
    hg_assert_vshape_at(out[0], HG_DTYPE_INT64, 2, DIMS(-1, 3), __FILE__, __LINE__);
    vs_free(out[0]);
    /* boxes of rank 2 are an error */
    in[0] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(5, 4));
    in[1] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 7, 5));
    assert_false(infer_vs(&n, 11, 2, in, 1, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "rank 3");
    g_clear_error(&error);
    vs_free(out[0]);

    const HgOpDef *d = hg_op_for_node(n.node);
    HgValueShape *b = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 5, 4)), *s = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 7, 5));
    HgValueShape *su = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 7, -1)), *bu = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, -1, 4));
    HgValueShape os;
    vs_set(&os, HG_DTYPE_INT64, 2, DIMS(-1, 3), NULL);
    HgRange any = hg_range_any(), y;
    const HgRange *ip[2] = {&any, &any};
    const HgValueShape *op[1] = {&os};
    const HgArray *vp[2] = {0};
    HgRange *outp[1] = {&y};
    /* classes 7 is the largest: [0, 6] */
    const HgValueShape *sp[2] = {b, s};
    HgRangeCtx ctx = {n.node, 11, 2, ip, sp, vp, 1, op, outp};
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == 0 && y.hi == 6 && !y.nan);
    /* spatial unknown in scores but known in boxes (they must agree): still [0, 6] */
    sp[1] = su;
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == 0 && y.hi == 6 && !y.nan);
    /* spatial known nowhere: unbounded above */
    sp[0] = bu;
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == 0 && isinf(y.hi) && !y.nan);
    vs_free(b);
    vs_free(s);
    vs_free(su);
    vs_free(bu);
    node_free(&n);
}

/* ---------------------------------------------------------------- RoiAlign */

/* X [1, 1, 4, 4] holding 10 y + x. */
static HgArray *
ramp(int dtype)
{
    double v[16];
    for (int i = 0; i < 16; i++)
        v[i] = 10 * (i / 4) + i % 4;
    return arr(dtype, 4, DIMS(1, 1, 4, 4), v);
}

static Node
roi_node(const char *ctm, const char *mode, gint64 oh, gint64 ow, gint64 ratio)
{
    Node n = node_new("RoiAlign", "x,rois,bi", "y");
    if (ctm)
        attr_s(n.node, "coordinate_transformation_mode", ctm);
    if (mode)
        attr_s(n.node, "mode", mode);
    attr_i(n.node, "output_height", oh);
    attr_i(n.node, "output_width", ow);
    attr_i(n.node, "sampling_ratio", ratio);
    return n;
}

/* The roi (x1, y1, x2, y2) = (0.5, 0.5, 2.5, 2.5) on 10 y + x, one 2x2-sampled bin:
 *   half_pixel: the roi is [0, 2] on both axes, samples at 0.5 and 1.5: mean point (1, 1), 11;
 *   output_half_pixel (and opset 10, which has no attribute): [0.5, 2.5], samples at 1 and 2:
 *   mean point (1.5, 1.5), 16.5.
 * Output 2x2 in half_pixel: bins of 1, samples at 0.25 and 0.75 of each: their centres (0.5, 0.5),
 * (0.5, 1.5), (1.5, 0.5), (1.5, 1.5): 5.5, 6.5, 15.5, 16.5. In float16 and double too. */
static void
test_roialign_modes(void **state)
{
    (void)state;
    Node n = roi_node(NULL, NULL, 1, 1, 2);
    Result r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
                   arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(11), 1e-6);
    result_free(&r);
    r = RUN(&n, 10, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(16.5), 1e-6);
    result_free(&r);
    node_free(&n);
    n = roi_node("output_half_pixel", NULL, 1, 1, 2);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(16.5), 1e-6);
    result_free(&r);
    node_free(&n);
    n = roi_node("half_pixel", "avg", 2, 2, 2);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 2, 2), VALS(5.5, 6.5, 15.5, 16.5), 1e-6);
    result_free(&r);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT16), arr(HG_DTYPE_FLOAT16, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT16, 4, DIMS(1, 1, 2, 2), VALS(5.5, 6.5, 15.5, 16.5), 1e-6);
    result_free(&r);
    r = RUN(&n, 16, ramp(HG_DTYPE_DOUBLE), arr(HG_DTYPE_DOUBLE, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_DOUBLE, 4, DIMS(1, 1, 2, 2), VALS(5.5, 6.5, 15.5, 16.5), 1e-12);
    result_free(&r);
    /* a bad mode, a bad coordinate mode */
    node_free(&n);
    n = roi_node("half_pixel", "median", 1, 1, 2);
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "mode", ramp(HG_DTYPE_FLOAT),
              arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)), arr_i64(1, DIMS(1), INTS(0)));
    node_free(&n);
    n = roi_node("align_corners", NULL, 1, 1, 2);
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "coordinate_transformation_mode", ramp(HG_DTYPE_FLOAT),
              arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)), arr_i64(1, DIMS(1), INTS(0)));
    node_free(&n);
}

/* X [1, 1, 1, 4] = [0, 0, 4, 8] (one row: every y clamps to it). The roi (0.5, 0.5, 3.5, 1.5) in
 * half_pixel is x [0, 3], y [0, 1], one bin:
 *   sampling_ratio 0: ceil(3) = 3 points along x at 0.5, 1.5, 2.5 (one along y):
 *     interpolations 0, 2, 6: avg 8/3;
 *     max, as ONNX Runtime and the reference take it (the largest w_i x_i): at 0.5 max(0.5*0, 0.5*0)
 *     = 0, at 1.5 max(0.5*0, 0.5*4) = 2, at 2.5 max(0.5*4, 0.5*8) = 4: 4 (the largest
 *     interpolation would be 6);
 *   sampling_ratio 2: x at 0.75 and 2.25 (and y at 0.25, 0.75, both row 0): interpolations 0 and
 *     4 + 0.25 * 4 = 5: avg 2.5; max: max(0.75*4, 0.25*8) = 3 at 2.25: 3. */
static void
test_roialign_sampling(void **state)
{
    (void)state;
    const double row[] = {0, 0, 4, 8};
    const double roi[] = {0.5, 0.5, 3.5, 1.5};
    const struct {
        const char *mode;
        gint64 ratio;
        double want;
    } cases[] = {{"avg", 0, 8.0 / 3}, {"max", 0, 4}, {"avg", 2, 2.5}, {"max", 2, 3}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        Node n = roi_node("half_pixel", cases[i].mode, 1, 1, cases[i].ratio);
        Result r = RUN(&n, 16, arr(HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 4), row), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), roi),
                       arr_i64(1, DIMS(1), INTS(0)));
        check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(cases[i].want), 1e-6);
        result_free(&r);
        node_free(&n);
    }
}

/* A roi reaching past the map, on 10 y + x in half_pixel: (2.5, 0.5, 6.5, 1.5) is x [2, 6], y [0, 1];
 * output 1x2, bins 2 wide, sampling_ratio 2:
 *   bin 0: x at 2.5 (inside: 10 y + 2.5) and 3.5 (in (W - 1, W]: clamped to column 3, 10 y + 3),
 *     y at 0.25 and 0.75 (mean 0.5): 5 + (2.5 + 3) / 2 = 7.75;
 *   bin 1: x at 4.5 and 5.5, past W = 4: every weight 0, so 0.
 * A roi of no size: output_half_pixel widens it to 1x1 ((1, 1, 1, 1) samples 1.25 and 1.75: 16.5);
 * half_pixel keeps it a point (0.5, 0.5): 5.5 with sampling_ratio 2, and no samples at all (0) with
 * sampling_ratio 0 (ceil(0) = 0 points). */
static void
test_roialign_outside(void **state)
{
    (void)state;
    Node n = roi_node("half_pixel", "avg", 1, 2, 2);
    Result r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(2.5, 0.5, 6.5, 1.5)),
                   arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 2), VALS(7.75, 0), 1e-6);
    result_free(&r);
    node_free(&n);
    /* max mode: bin 0's largest w_i x_i: at (0.75, 3.5) clamped to column 3 the weights are
     * (0.25, 0, 0.75, 0) on rows 0 and 1: max(0.25 * 3, 0.75 * 13) = 9.75; bin 1 is 0 */
    n = roi_node("half_pixel", "max", 1, 2, 2);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(2.5, 0.5, 6.5, 1.5)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 2), VALS(9.75, 0), 1e-6);
    result_free(&r);
    node_free(&n);
    n = roi_node("output_half_pixel", "avg", 1, 1, 2);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(1, 1, 1, 1)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(16.5), 1e-6);
    result_free(&r);
    node_free(&n);
    n = roi_node("half_pixel", "avg", 1, 1, 2);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(1, 1, 1, 1)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(5.5), 1e-6);
    result_free(&r);
    node_free(&n);
    n = roi_node("half_pixel", "avg", 1, 1, 0);
    r = RUN(&n, 16, ramp(HG_DTYPE_FLOAT), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(1, 1, 1, 1)),
            arr_i64(1, DIMS(1), INTS(0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(0), 0);
    result_free(&r);
    node_free(&n);
}

/* batch_indices pick the image, per roi, and every channel is pooled alike: X [2, 2, 4, 4] holding
 * 100 b + 50 c + 10 y + x; the first roi (0.5, 0.5, 2.5, 2.5) on image 1 and the second, the same
 * box, on image 0, one 2x2-sampled bin in half_pixel (11 on the ramp): [111, 161, 11, 61]. An index
 * past the batch is an error. */
static void
test_roialign_batches(void **state)
{
    (void)state;
    double v[64];
    for (int i = 0; i < 64; i++)
        v[i] = 100 * (i / 32) + 50 * (i / 16 % 2) + 10 * (i / 4 % 4) + i % 4;
    Node n = roi_node("half_pixel", "avg", 1, 1, 2);
    Result r = RUN(&n, 16, arr(HG_DTYPE_FLOAT, 4, DIMS(2, 2, 4, 4), v),
                   arr(HG_DTYPE_FLOAT, 2, DIMS(2, 4), VALS(0.5, 0.5, 2.5, 2.5, 0.5, 0.5, 2.5, 2.5)),
                   arr_i64(1, DIMS(2), INTS(1, 0)));
    check(r.out[0], HG_DTYPE_FLOAT, 4, DIMS(2, 2, 1, 1), VALS(111, 161, 11, 61), 1e-6);
    result_free(&r);
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "batch_indices", arr(HG_DTYPE_FLOAT, 4, DIMS(2, 2, 4, 4), v),
              arr(HG_DTYPE_FLOAT, 2, DIMS(1, 4), VALS(0.5, 0.5, 2.5, 2.5)), arr_i64(1, DIMS(1), INTS(2)));
    RUN_FAILS(&n, 16, HG_ERROR_INVALID, "rois", arr(HG_DTYPE_FLOAT, 4, DIMS(2, 2, 4, 4), v),
              arr(HG_DTYPE_FLOAT, 2, DIMS(1, 3), VALS(0.5, 0.5, 2.5)), arr_i64(1, DIMS(1), INTS(0)));
    node_free(&n);
}

/* Shape: [num_rois, C, output_height, output_width], names kept; the interval [min(lo, 0),
 * max(hi, 0)], NaN only from X. */
static void
test_roialign_shape_range(void **state)
{
    (void)state;
    g_autoptr(GError) error = NULL;
    HgValueShape *in[3], *out[1];
    Node n = roi_node(NULL, NULL, 7, 5, 2);
    in[0] = g_new(HgValueShape, 1);
    vs_set(in[0], HG_DTYPE_FLOAT16, 4, DIMS(-1, 256, -1, -1), (const char *const[]){"N", NULL, "H", "W"});
    in[1] = g_new(HgValueShape, 1);
    vs_set(in[1], HG_DTYPE_FLOAT16, 2, DIMS(-1, 4), (const char *const[]){"R", NULL});
    in[2] = vs_new(HG_DTYPE_INT64, 1, DIMS(-1));
    assert_true(infer_vs(&n, 16, 3, in, 1, out, &error));
    hg_assert_vshape_at(out[0], HG_DTYPE_FLOAT16, 4, DIMS(-1, 256, 7, 5), __FILE__, __LINE__);
    assert_ptr_equal(out[0]->dims[0].sym, g_intern_string("R"));
    vs_free(out[0]);
    /* num_rois from batch_indices where rois' is not known */
    in[0] = vs_new(HG_DTYPE_FLOAT, 4, DIMS(1, 3, 8, 8));
    in[1] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(-1, 4));
    in[2] = vs_new(HG_DTYPE_INT64, 1, DIMS(6));
    assert_true(infer_vs(&n, 16, 3, in, 1, out, &error));
    hg_assert_vshape_at(out[0], HG_DTYPE_FLOAT, 4, DIMS(6, 3, 7, 5), __FILE__, __LINE__);
    vs_free(out[0]);
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(3, 8, 8));
    in[1] = vs_new(HG_DTYPE_FLOAT, 2, DIMS(-1, 4));
    in[2] = vs_new(HG_DTYPE_INT64, 1, DIMS(6));
    assert_false(infer_vs(&n, 16, 3, in, 1, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "ranks 4, 2 and 1");
    g_clear_error(&error);
    vs_free(out[0]);

    const HgOpDef *d = hg_op_for_node(n.node);
    HgValueShape os;
    vs_set(&os, HG_DTYPE_FLOAT, 4, DIMS(6, 3, 7, 5), NULL);
    HgRange xr, rr = hg_range_any(), br = hg_range_exact(0, 0), y;
    const HgRange *ip[3] = {&xr, &rr, &br};
    const HgValueShape *sp[3] = {0}, *op[1] = {&os};
    const HgArray *vp[3] = {0};
    HgRange *outp[1] = {&y};
    HgRangeCtx ctx = {n.node, 16, 3, ip, sp, vp, 1, op, outp};
    /* positive X: [0, hi] (samples outside the map give 0); rois of any value make no NaN */
    xr = hg_range_exact(2, 5);
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == 0 && y.hi == 5 && !y.nan && y.tiny == 0);
    xr = hg_range_exact(-3, -1);
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == -3 && y.hi == 0 && !y.nan);
    /* X unbounded: 0 * inf can make NaN */
    xr = hg_range_exact(-1, INFINITY);
    y = hg_range_any();
    d->range(&ctx);
    assert_true(y.lo == -1 && isinf(y.hi) && y.nan);
    node_free(&n);
}

HG_TEST_MAIN("ops_detect",
             cmocka_unit_test(test_family_rows),
             cmocka_unit_test(test_nms_corners),
             cmocka_unit_test(test_nms_center),
             cmocka_unit_test(test_nms_scores_ties),
             cmocka_unit_test(test_nms_limits),
             cmocka_unit_test(test_nms_batches_classes),
             cmocka_unit_test(test_nms_shape_range),
             cmocka_unit_test(test_roialign_modes),
             cmocka_unit_test(test_roialign_sampling),
             cmocka_unit_test(test_roialign_outside),
             cmocka_unit_test(test_roialign_batches),
             cmocka_unit_test(test_roialign_shape_range))
