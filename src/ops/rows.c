/* FP32 rows for the softmax and norm families (reduce.h): streaming FP16 and BF16 data through a
 * row of FP32 scratch, and vectorized sums, maxima and exp-sums over a row. */
#include "ops/reduce.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Row streaming for F32 kernels over a float array x and its like-typed output y: FLOAT rows are
 * used in place; other rows are converted into scratch (n + 1 floats, NULL for FLOAT) and the kernel
 * writes its result over them, which hg_row_put then stores. */
float *
hg_row_scratch(const HgArray *x, gint64 n)
{
    return x->dtype == HG_DTYPE_FLOAT ? NULL : g_new(float, n + 1);
}

const float *
hg_row_get(const HgArray *x, gint64 off, gint64 n, float *scratch)
{
    if (!scratch)
        return (const float *)x->data + off;
    hg_array_load_span_f32(x, off, n, scratch);
    return scratch;
}

float *
hg_row_out(HgArray *y, gint64 off, float *scratch)
{
    return scratch ? scratch : (float *)y->data + off;
}

void
hg_row_put(HgArray *y, gint64 off, gint64 n, float *scratch)
{
    if (scratch)
        hg_array_store_span_f32(y, off, n, scratch);
}

/* Sum of n floats, and of squared deviations from m: eight FP32 lanes (vectorized by gcc) over blocks
 * of 4096, the block sums added in double so long rows lose no more than short ones. */
#define LANE_BLOCK 4096

double
hg_sum_f32(const float *x, gint64 n)
{
    double total = 0;
    for (gint64 b = 0; b < n; b += LANE_BLOCK) {
        gint64 e = MIN(n, b + LANE_BLOCK), j = b;
        float lane[8] = {0};
        for (; j + 8 <= e; j += 8)
            for (int k = 0; k < 8; k++)
                lane[k] += x[j + k];
        float s = 0;
        for (; j < e; j++)
            s += x[j];
        for (int k = 0; k < 8; k++)
            s += lane[k];
        total += s;
    }
    return total;
}

double
hg_sumsq_dev_f32(const float *x, gint64 n, float m)
{
    double total = 0;
    for (gint64 b = 0; b < n; b += LANE_BLOCK) {
        gint64 e = MIN(n, b + LANE_BLOCK), j = b;
        float lane[8] = {0};
        for (; j + 8 <= e; j += 8)
            for (int k = 0; k < 8; k++) {
                float d = x[j + k] - m;
                lane[k] += d * d;
            }
        float s = 0;
        for (; j < e; j++) {
            float d = x[j] - m;
            s += d * d;
        }
        for (int k = 0; k < 8; k++)
            s += lane[k];
        total += s;
    }
    return total;
}

double
hg_sum_f64(const double *x, gint64 n)
{
    double lane[4] = {0}, s = 0;
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            lane[k] += x[j + k];
    for (; j < n; j++)
        s += x[j];
    return s + lane[0] + lane[1] + lane[2] + lane[3];
}

double
hg_sumsq_dev_f64(const double *x, gint64 n, double m)
{
    double lane[4] = {0}, s = 0;
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            lane[k] += (x[j + k] - m) * (x[j + k] - m);
    for (; j < n; j++)
        s += (x[j] - m) * (x[j] - m);
    return s + lane[0] + lane[1] + lane[2] + lane[3];
}

/* Largest of n > 0 floats; NaN wins (as numpy's max). */
float
hg_max_f32(const float *x, gint64 n)
{
    float m = x[0];
    gint64 j = 0;
    if (n >= 8) {
        v4f lane = v4_load(x);
        for (j = 4; j + 4 <= n; j += 4) {
            v4f v = v4_load(x + j);
            lane = v4_sel((v > lane) | (v != v), v, lane);
        }
        for (int k = 0; k < 4; k++)
            m = lane[k] > m || isnan(lane[k]) ? lane[k] : m;
    }
    for (; j < n; j++)
        m = x[j] > m || isnan(x[j]) ? x[j] : m;
    return m;
}

/* Fill y[j] = exp(x[j] - m) (when y) and return their sum; x - m <= 0 for the max m. */
float
hg_sum_exp_f32(const float *x, float *y, gint64 n, float m)
{
    v4f acc = v4_splat(0);
    gint64 j = 0;
    for (; j + 4 <= n; j += 4) {
        v4f e = v4_exp_neg(v4_load(x + j) - m);
        acc += e;
        if (y)
            v4_store(y + j, e);
    }
    float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    if (j < n) {
        float pad[4];
        for (int k = 0; k < 4; k++)
            pad[k] = j + k < n ? x[j + k] - m : -INFINITY;
        v4f e = v4_exp_neg(v4_load(pad));
        for (int k = 0; j + k < n; k++) {
            s += e[k];
            if (y)
                y[j + k] = e[k];
        }
    }
    return s;
}

/* y[j] = x[j] * a + b (y may be x) */
void
hg_scale_shift_f32(const float *x, float *y, gint64 n, float a, float b)
{
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, v4_load(x + j) * a + b);
    for (; j < n; j++)
        y[j] = x[j] * a + b;
}

/* y[j] = (x[j] - m) * a + b (y may be x): normalization with known statistics, the mean taken off
 * first so that a large mean does not cancel the digits of x */
void
hg_center_scale_f32(const float *x, float *y, gint64 n, float m, float a, float b)
{
    gint64 j = 0;
    for (; j + 4 <= n; j += 4)
        v4_store(y + j, (v4_load(x + j) - m) * a + b);
    for (; j < n; j++)
        y[j] = (x[j] - m) * a + b;
}
