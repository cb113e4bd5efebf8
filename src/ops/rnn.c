/* The recurrent family: LSTM, GRU and RNN (opsets 7, 14 and 22: 14 added layout, 22 bfloat16), with
 * their interval rules.
 *
 * X is [seq, batch, input] (layout 1: [batch, seq, input]); W [dirs, G*H, input], R [dirs, G*H, H]
 * and B [dirs, 2*G*H] hold the G gates of each direction (LSTM: i, o, f, c; GRU: z, r, h; RNN: one),
 * B as Wb then Rb. Y is [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]), Y_h and Y_c (and
 * initial_h, initial_c) [dirs, batch, H] (layout 1: [batch, dirs, H]). sequence_lens gives each batch
 * entry its length: steps past it are 0 in Y, and Y_h, Y_c hold the state after the entry's last
 * valid step (the reverse direction runs each entry from its own last step down to step 0, as ONNX
 * Runtime does); an entry of length 0 gives 0.
 *
 * Computed in FP32 (FP64 for double): the input projection X W^T of every step at once through BLAS,
 * then per step H_{t-1} R^T and the gates; the states stay in the compute type from step to step and
 * each output is rounded once when stored. clip bounds the input of every activation (h's input, the
 * cell state, included; the cell state itself is not clipped), as the operator's text says; ONNX
 * Runtime's CPU kernel leaves h's input unclipped, so the two differ only where |C| > clip. */
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "halfguard/check.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- attributes */

typedef enum { RNN_RNN, RNN_GRU, RNN_LSTM } RnnCell;

/* The activation functions the operators list; alpha and beta where they take them. */
typedef enum {
    ACT_RELU,
    ACT_TANH,
    ACT_SIGMOID,
    ACT_AFFINE,
    ACT_LEAKY_RELU,
    ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH,
    ACT_HARD_SIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS,
} RnnActKind;

typedef struct {
    RnnActKind kind;
    float alpha, beta;
} RnnAct;

/* Names as the operators' text spells them (matched without case, as ONNX Runtime does), whether each
 * takes alpha and beta, and their defaults: those of the ONNX operators of the same name (Affine's
 * 1 and 0 are the former experimental op's). ScaledTanh's op had none: it needs both. */
static const struct {
    const char *name;
    RnnActKind kind;
    gboolean alpha, beta;
    float da, db;
} act_names[] = {
    {"Relu", ACT_RELU, FALSE, FALSE, 0, 0},
    {"Tanh", ACT_TANH, FALSE, FALSE, 0, 0},
    {"Sigmoid", ACT_SIGMOID, FALSE, FALSE, 0, 0},
    {"Affine", ACT_AFFINE, TRUE, TRUE, 1.0f, 0.0f},
    {"LeakyRelu", ACT_LEAKY_RELU, TRUE, FALSE, 0.01f, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, TRUE, FALSE, 1.0f, 0},
    {"ScaledTanh", ACT_SCALED_TANH, TRUE, TRUE, NAN, NAN},
    {"HardSigmoid", ACT_HARD_SIGMOID, TRUE, TRUE, 0.2f, 0.5f},
    {"Elu", ACT_ELU, TRUE, FALSE, 1.0f, 0},
    {"Softsign", ACT_SOFTSIGN, FALSE, FALSE, 0, 0},
    {"Softplus", ACT_SOFTPLUS, FALSE, FALSE, 0, 0},
};

#define RNN_MAX_ACTS 6

/* A node's attributes, checked. */
typedef struct {
    RnnCell cell;
    gint64 gates;       /* G: 1 (RNN), 3 (GRU), 4 (LSTM) */
    int n_act;          /* activations per direction: 1, 2, 3 */
    int dirs;           /* 2 when bidirectional */
    gboolean reverse;   /* direction "reverse" (one direction, run backwards) */
    gint64 layout;      /* 0 or 1 (from opset 14) */
    gint64 hidden;      /* hidden_size, -1 when absent */
    gboolean clip_on;
    double clip;
    gboolean input_forget; /* LSTM */
    gboolean lbr;          /* GRU's linear_before_reset */
    RnnAct acts[RNN_MAX_ACTS]; /* n_act per direction, direction 0 first */
} RnnAttrs;

static const char *
cell_name(RnnCell c)
{
    return c == RNN_LSTM ? "LSTM" : c == RNN_GRU ? "GRU" : "RNN";
}

static gboolean
rnn_attrs(const HgNode *node, gint64 opset, RnnCell cell, RnnAttrs *a, GError **error)
{
    memset(a, 0, sizeof *a);
    a->cell = cell;
    a->gates = cell == RNN_LSTM ? 4 : cell == RNN_GRU ? 3 : 1;
    a->n_act = cell == RNN_LSTM ? 3 : cell == RNN_GRU ? 2 : 1;
    g_autofree char *dir = hg_attr_string(node, "direction", "forward");
    if (!strcmp(dir, "bidirectional")) {
        a->dirs = 2;
    } else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
        a->dirs = 1;
        a->reverse = dir[0] == 'r';
    } else {
        hg_op_error(error, HG_ERROR_INVALID, node, "direction '%s' is not forward, reverse or bidirectional", dir);
        return FALSE;
    }
    a->layout = hg_opset_at_least(opset, 14) ? hg_node_attr_int(node, "layout", 0) : 0;
    if (a->layout != 0 && a->layout != 1) {
        hg_op_error(error, HG_ERROR_INVALID, node, "layout %" G_GINT64_FORMAT " is not 0 or 1", a->layout);
        return FALSE;
    }
    const HgAttr *hs = hg_node_attr(node, "hidden_size");
    a->hidden = hs ? hs->i : -1;
    if (hs && (hs->i < 1 || hs->i > G_MAXINT32)) {
        hg_op_error(error, HG_ERROR_INVALID, node, "hidden_size %" G_GINT64_FORMAT " is not positive", hs->i);
        return FALSE;
    }
    const HgAttr *clip = hg_node_attr(node, "clip");
    if (clip) {
        a->clip_on = TRUE;
        a->clip = clip->f;
        if (!(clip->f >= 0)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "clip %g is not a threshold >= 0", (double)clip->f);
            return FALSE;
        }
    }
    a->input_forget = cell == RNN_LSTM && hg_node_attr_int(node, "input_forget", 0) != 0;
    a->lbr = cell == RNN_GRU && hg_node_attr_int(node, "linear_before_reset", 0) != 0;
    /* activations: n_act per direction, or n_act for both directions of a bidirectional node */
    static const RnnActKind dflt[3][3] = {{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
    const RnnActKind *def = dflt[a->n_act - 1];
    const HgAttr *names = hg_node_attr(node, "activations");
    guint n = names && names->strings ? names->strings->len : 0;
    int want = a->n_act * a->dirs;
    if (n && (int)n != want && (int)n != a->n_act) {
        hg_op_error(error, HG_ERROR_INVALID, node, "activations lists %u functions, %s takes %d (%d per direction)",
                    n, cell_name(cell), want, a->n_act);
        return FALSE;
    }
    guint na = 0, nb = 0, ia = 0, ib = 0;
    const float *alphas = hg_attr_floats(node, "activation_alpha", &na);
    const float *betas = hg_attr_floats(node, "activation_beta", &nb);
    for (int k = 0; k < want; k++) {
        RnnAct *act = &a->acts[k];
        if (!n) {
            act->kind = def[k % a->n_act];
            continue;
        }
        if ((guint)k >= n) { /* one list for both directions */
            *act = a->acts[k - a->n_act];
            continue;
        }
        gsize len;
        const char *s = g_bytes_get_data(names->strings->pdata[k], &len);
        g_autofree char *name = g_strndup(s ? s : "", len);
        guint e = 0;
        while (e < G_N_ELEMENTS(act_names) && g_ascii_strcasecmp(act_names[e].name, name))
            e++;
        if (e == G_N_ELEMENTS(act_names)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "activation '%s' is not one the %s operator lists", name,
                        cell_name(cell));
            return FALSE;
        }
        act->kind = act_names[e].kind;
        act->alpha = act_names[e].alpha && ia < na ? alphas[ia++] : act_names[e].da;
        act->beta = act_names[e].beta && ib < nb ? betas[ib++] : act_names[e].db;
        if (isnan(act->alpha) || isnan(act->beta)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "activation %s needs its alpha and beta (activation_alpha, "
                        "activation_beta)", act_names[e].name);
            return FALSE;
        }
    }
    return TRUE;
}

/* ---------------------------------------------------------------- the kernel */

/* One node's run, in the terms of the typed kernel. */
typedef struct {
    RnnCell cell;
    gint64 S, B, I, H, G;
    int dirs;
    gint64 layout;
    gboolean clip_on;
    double clip;
    gboolean input_forget, lbr;
    const gint64 *lens; /* B lengths in [0, S] */
    gint64 max_len;
} RnnPlan;

/* Where the state of batch entry b of direction d starts in initial_h, initial_c, Y_h and Y_c. */
static inline gint64
rnn_state_off(const RnnPlan *p, int d, gint64 b)
{
    return (p->layout ? b * p->dirs + d : d * p->B + b) * p->H;
}

/* The row of X (and of X W^T) of step t of entry b. */
static inline gint64
rnn_x_row(const RnnPlan *p, gint64 t, gint64 b)
{
    return p->layout ? b * p->S + t : t * p->B + b;
}

/* Where Y's hidden vector of step t, direction d, entry b starts. */
static inline gint64
rnn_y_off(const RnnPlan *p, int d, gint64 t, gint64 b)
{
    return (p->layout ? (b * p->S + t) * p->dirs + d : (t * p->dirs + d) * p->B + b) * p->H;
}

/* Scratch elements one direction takes: X W^T, H R^T, H, C, r (.) H and the biases. */
static gint64
rnn_scratch_len(const RnnPlan *p)
{
    gint64 gh = p->G * p->H;
    return p->S * p->B * gh + p->B * gh + 3 * p->B * p->H + gh + 1;
}

/* The activations, as the operators' text defines them; a NaN stays NaN, and Softsign of an infinity
 * is its sign. */
#define DEFINE_RNN_ACT(SUF, T, EXP, EXPM1, TANH, LOG1P, FABS)                                      \
    static inline T rnn_act_##SUF(const RnnAct *a, T x)                                            \
    {                                                                                              \
        const T al = (T)a->alpha, be = (T)a->beta;                                                 \
        switch (a->kind) {                                                                         \
        case ACT_RELU: return x < 0 ? 0 : x;                                                       \
        case ACT_TANH: return TANH(x);                                                             \
        case ACT_SIGMOID: return 1 / (1 + EXP(-x));                                                \
        case ACT_AFFINE: return al * x + be;                                                       \
        case ACT_LEAKY_RELU: return x < 0 ? al * x : x;                                            \
        case ACT_THRESHOLDED_RELU: return x < al ? 0 : x;                                          \
        case ACT_SCALED_TANH: return al * TANH(be * x);                                            \
        case ACT_HARD_SIGMOID: {                                                                   \
            T v = al * x + be;                                                                     \
            return v < 0 ? 0 : v > 1 ? 1 : v;                                                      \
        }                                                                                          \
        case ACT_ELU: return x < 0 ? al * EXPM1(x) : x;                                            \
        case ACT_SOFTSIGN: return isinf(x) ? (x > 0 ? 1 : -1) : x / (1 + FABS(x));                 \
        case ACT_SOFTPLUS: return x > 0 ? x + LOG1P(EXP(-x)) : LOG1P(EXP(x));                      \
        }                                                                                          \
        return x;                                                                                  \
    }

DEFINE_RNN_ACT(f32, float, expf, expm1f, tanhf, log1pf, fabsf)
DEFINE_RNN_ACT(f64, double, exp, expm1, tanh, log1p, fabs)

/* The typed kernels: kernel.h's templates, one instance per float kind. */
#define HG_TEMPLATE "ops/rnn.inc"
#include "ops/instances_float.inc"

/* Input i when present, with dims; NULL (and TRUE) when omitted. FALSE with HG_ERROR_INVALID when its
 * shape is not rank dims (-1: any) or its type is not X's (sequence_lens: an integer). */
static gboolean
rnn_input(HgEvalCtx *ctx, guint i, const char *what, int dtype, guint rank, const gint64 *dims, HgArray **out)
{
    HgArray *a = hg_eval_input(ctx, i);
    *out = NULL;
    if (!a)
        return TRUE;
    if (!hg_eval_need_input(ctx, i, what))
        return FALSE;
    gboolean ok = a->rank == rank;
    for (guint k = 0; ok && k < rank; k++)
        ok = dims[k] < 0 || a->dims[k] == dims[k];
    if (!ok) {
        GString *want = g_string_new(NULL), *got = g_string_new(NULL);
        for (guint k = 0; k < rank; k++) {
            if (dims[k] < 0)
                g_string_append_printf(want, "%s?", k ? ", " : "");
            else
                g_string_append_printf(want, "%s%" G_GINT64_FORMAT, k ? ", " : "", dims[k]);
        }
        for (guint k = 0; k < a->rank; k++)
            g_string_append_printf(got, "%s%" G_GINT64_FORMAT, k ? ", " : "", a->dims[k]);
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s has shape [%s], expected [%s]", what, got->str,
                    want->str);
        g_string_free(want, TRUE);
        g_string_free(got, TRUE);
        return FALSE;
    }
    gboolean int_wanted = dtype == HG_DTYPE_INT32;
    if (int_wanted ? hg_dtype_compute(a->dtype) != HG_COMPUTE_I64 : a->dtype != dtype) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s is %s, expected %s", what,
                    hg_dtype_name(a->dtype) ? hg_dtype_name(a->dtype) : "?",
                    int_wanted ? "an integer" : hg_dtype_name(dtype));
        return FALSE;
    }
    *out = a;
    return TRUE;
}

static gboolean
rnn_eval(HgEvalCtx *ctx, RnnCell cell)
{
    RnnAttrs at;
    if (!rnn_attrs(ctx->node, ctx->opset, cell, &at, ctx->error))
        return FALSE;
    HgArray *x = hg_eval_need_input(ctx, 0, "X");
    HgArray *w = x ? hg_eval_need_input(ctx, 1, "W") : NULL;
    HgArray *r = w ? hg_eval_need_input(ctx, 2, "R") : NULL;
    if (!r)
        return FALSE;
    HgKind k = hg_kind_of(x->dtype);
    if (k != HG_KIND_F32 && k != HG_KIND_F64)
        return hg_eval_unsupported(ctx, x->dtype);
    if (x->rank != 3 || w->rank != 3 || r->rank != 3) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X, W and R must have rank 3 (have %u, %u and %u)",
                    x->rank, w->rank, r->rank);
        return FALSE;
    }
    RnnPlan p = {cell, 0, 0, 0, 0, at.gates, at.dirs, at.layout, at.clip_on, at.clip, at.input_forget, at.lbr, NULL, 0};
    p.S = x->dims[at.layout ? 1 : 0];
    p.B = x->dims[at.layout ? 0 : 1];
    p.I = x->dims[2];
    p.H = at.hidden >= 0 ? at.hidden : r->dims[2];
    gint64 gh = p.G * p.H, dirs = at.dirs;
    HgArray *bias, *lens, *h0, *c0 = NULL, *peep = NULL;
    gint64 state[3] = {at.layout ? p.B : dirs, at.layout ? dirs : p.B, p.H};
    if (!rnn_input(ctx, 1, "W", x->dtype, 3, (gint64[]){dirs, gh, p.I}, &w) ||
        !rnn_input(ctx, 2, "R", x->dtype, 3, (gint64[]){dirs, gh, p.H}, &r) ||
        !rnn_input(ctx, 3, "B", x->dtype, 2, (gint64[]){dirs, 2 * gh}, &bias) ||
        !rnn_input(ctx, 4, "sequence_lens", HG_DTYPE_INT32, 1, (gint64[]){p.B}, &lens) ||
        !rnn_input(ctx, 5, "initial_h", x->dtype, 3, state, &h0) ||
        (cell == RNN_LSTM && (!rnn_input(ctx, 6, "initial_c", x->dtype, 3, state, &c0) ||
                              !rnn_input(ctx, 7, "P", x->dtype, 2, (gint64[]){dirs, 3 * p.H}, &peep))))
        return FALSE;
    if (!hg_blas_fits(p.S * p.B, gh, p.I, p.H) || !hg_blas_fits(p.S * p.B * gh, 1, 1, 1)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "sizes past the BLAS's int are not supported");
        return FALSE;
    }
    g_autofree gint64 *len = g_new(gint64, p.B + 1);
    for (gint64 b = 0; b < p.B; b++) {
        len[b] = lens ? hg_array_get_i64(lens, b) : p.S;
        if (len[b] < 0 || len[b] > p.S) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "sequence_lens[%" G_GINT64_FORMAT "] = %" G_GINT64_FORMAT " is outside [0, %" G_GINT64_FORMAT "]",
                        b, len[b], p.S);
            return FALSE;
        }
        p.max_len = MAX(p.max_len, len[b]);
    }
    p.lens = len;
    gint64 ydims[4] = {p.S, dirs, p.B, p.H};
    if (at.layout) {
        ydims[0] = p.B;
        ydims[1] = p.S;
        ydims[2] = dirs;
    }
    g_autoptr(HgArray) y = NULL;
    g_autoptr(HgArray) yh = NULL;
    g_autoptr(HgArray) yc = NULL;
    if (hg_eval_wants(ctx, 0) && !(y = hg_eval_new_output(ctx, x->dtype, 4, ydims)))
        return FALSE;
    if (hg_eval_wants(ctx, 1) && !(yh = hg_eval_new_output(ctx, x->dtype, 3, state)))
        return FALSE;
    if (cell == RNN_LSTM && hg_eval_wants(ctx, 2) && !(yc = hg_eval_new_output(ctx, x->dtype, 3, state)))
        return FALSE;
    g_auto(HgKBuf) xb = hg_kbuf_load(x, k);
    g_auto(HgKBuf) wb = hg_kbuf_load(w, k);
    g_auto(HgKBuf) rb = hg_kbuf_load(r, k);
    g_auto(HgKBuf) bb = hg_kbuf_load(bias, k);
    g_auto(HgKBuf) hb = hg_kbuf_load(h0, k);
    g_auto(HgKBuf) cb = hg_kbuf_load(c0, k);
    g_auto(HgKBuf) pb = hg_kbuf_load(peep, k);
    HgKBuf yb = y ? hg_kbuf_out(y, k) : (HgKBuf){NULL, FALSE};
    HgKBuf yhb = yh ? hg_kbuf_out(yh, k) : (HgKBuf){NULL, FALSE};
    HgKBuf ycb = yc ? hg_kbuf_out(yc, k) : (HgKBuf){NULL, FALSE};
    gsize es = hg_kind_size(k);
    void *scratch = g_try_malloc((gsize)rnn_scratch_len(&p) * es);
    /* every buffer there, unless its array is absent or empty */
#define RNN_HAS(a, buf) (!(a) || !(a)->numel || (buf).p)
    gboolean ok = scratch && RNN_HAS(y, yb) && RNN_HAS(yh, yhb) && RNN_HAS(yc, ycb) && RNN_HAS(x, xb) &&
                  RNN_HAS(w, wb) && RNN_HAS(r, rb) && RNN_HAS(bias, bb) && RNN_HAS(h0, hb) && RNN_HAS(c0, cb) &&
                  RNN_HAS(peep, pb);
#undef RNN_HAS
    if (ok) {
        hg_blas_threads(hg_eval_threads(ctx, p.S * p.B * gh * (p.I + p.H)));
        for (int d = 0; d < at.dirs; d++) {
            gboolean reverse = d == 1 || at.reverse;
            const char *wp = (const char *)wb.p + (gsize)(d * gh * p.I) * es;
            const char *rp = (const char *)rb.p + (gsize)(d * gh * p.H) * es;
            const char *bp = bias ? (const char *)bb.p + (gsize)(d * 2 * gh) * es : NULL;
            const char *pp = peep ? (const char *)pb.p + (gsize)(d * 3 * p.H) * es : NULL;
            const RnnAct *acts = &at.acts[d * at.n_act];
            if (k == HG_KIND_F32)
                rnn_direction_f32(&p, d, reverse, acts, xb.p, (const float *)wp, (const float *)rp, (const float *)bp,
                                  hb.p, cb.p, (const float *)pp, yb.p, yhb.p, ycb.p, scratch);
            else
                rnn_direction_f64(&p, d, reverse, acts, xb.p, (const double *)wp, (const double *)rp,
                                  (const double *)bp, hb.p, cb.p, (const double *)pp, yb.p, yhb.p, ycb.p, scratch);
        }
    }
    g_free(scratch);
    if (!ok) {
        hg_kbuf_clear(&yb);
        hg_kbuf_clear(&yhb);
        hg_kbuf_clear(&ycb);
        return hg_eval_oom(ctx);
    }
    if (y)
        hg_kbuf_store(y, &yb, k);
    if (yh)
        hg_kbuf_store(yh, &yhb, k);
    if (yc)
        hg_kbuf_store(yc, &ycb, k);
    if (y)
        hg_eval_set_output(ctx, 0, g_steal_pointer(&y));
    if (yh)
        hg_eval_set_output(ctx, 1, g_steal_pointer(&yh));
    if (yc)
        hg_eval_set_output(ctx, 2, g_steal_pointer(&yc));
    return TRUE;
}

gboolean
hg_eval_LSTM(HgEvalCtx *ctx)
{
    return rnn_eval(ctx, RNN_LSTM);
}

gboolean
hg_eval_GRU(HgEvalCtx *ctx)
{
    return rnn_eval(ctx, RNN_GRU);
}

gboolean
hg_eval_RNN(HgEvalCtx *ctx)
{
    return rnn_eval(ctx, RNN_RNN);
}

/* ---------------------------------------------------------------- shapes and cost */

/* Y [seq, dirs, batch, H] and Y_h, Y_c [dirs, batch, H] (layout 1: [batch, seq, dirs, H] and
 * [batch, dirs, H]), the dims named as X's are; H from hidden_size, else from R. */
static gboolean
rnn_infer(HgShapeCtx *ctx, RnnCell cell, HgEvalFunc eval)
{
    RnnAttrs at;
    if (!rnn_attrs(ctx->node, ctx->opset, cell, &at, ctx->error))
        return FALSE;
    const HgValueShape *x = hg_shape_input(ctx, 0), *w = hg_shape_input(ctx, 1), *r = hg_shape_input(ctx, 2);
    const HgValueShape *lens = hg_shape_input(ctx, 4);
    if (!x)
        return TRUE;
    const HgValueShape *in[3] = {x, w, r};
    for (int i = 0; i < 3; i++)
        if (in[i] && in[i]->rank >= 0 && in[i]->rank != 3) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s must have rank 3, has %d", i == 0 ? "X" : i == 1 ? "W" : "R",
                        in[i]->rank);
            return FALSE;
        }
    for (int i = 1; i < 3; i++)
        if (in[i] && in[i]->rank == 3 && in[i]->dims[0].v >= 0 && in[i]->dims[0].v != at.dirs) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "%s holds %" G_GINT64_FORMAT " directions, direction says %d",
                        i == 1 ? "W" : "R", in[i]->dims[0].v, at.dirs);
            return FALSE;
        }
    HgSymDim hid = at.hidden >= 0 ? hg_dim_known(at.hidden) : r && r->rank == 3 ? r->dims[2] : hg_dim_unknown();
    if (at.hidden >= 0 && r && r->rank == 3 && r->dims[2].v >= 0 && r->dims[2].v != at.hidden) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "R's last dim is %" G_GINT64_FORMAT ", hidden_size %" G_GINT64_FORMAT,
                    r->dims[2].v, at.hidden);
        return FALSE;
    }
    HgSymDim seq = hg_dim_unknown(), batch = hg_dim_unknown(), dirs = hg_dim_known(at.dirs);
    if (x->rank == 3) {
        seq = x->dims[at.layout ? 1 : 0];
        batch = x->dims[at.layout ? 0 : 1];
    }
    if (batch.v < 0 && !batch.sym && lens && lens->rank == 1)
        batch = lens->dims[0];
    HgSymDim ydims[4] = {seq, dirs, batch, hid}, sdims[3] = {dirs, batch, hid};
    if (at.layout) {
        ydims[0] = batch;
        ydims[1] = seq;
        ydims[2] = dirs;
        sdims[0] = batch;
        sdims[1] = dirs;
    }
    hg_vshape_set(hg_shape_wanted(ctx, 0), x->dtype, 4, ydims);
    hg_vshape_set(hg_shape_wanted(ctx, 1), x->dtype, 3, sdims);
    if (cell == RNN_LSTM)
        hg_vshape_set(hg_shape_wanted(ctx, 2), x->dtype, 3, sdims);
    hg_fold(ctx, eval, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_infer_LSTM(HgShapeCtx *ctx)
{
    return rnn_infer(ctx, RNN_LSTM, hg_eval_LSTM);
}

gboolean
hg_infer_GRU(HgShapeCtx *ctx)
{
    return rnn_infer(ctx, RNN_GRU, hg_eval_GRU);
}

gboolean
hg_infer_RNN(HgShapeCtx *ctx)
{
    return rnn_infer(ctx, RNN_RNN, hg_eval_RNN);
}

/* The products X W^T and H R^T of every step and direction: dirs * seq * batch * G * H * (input + H). */
static gint64
rnn_cost(const HgShapeCtx *ctx, RnnCell cell)
{
    RnnAttrs at;
    const HgValueShape *x = hg_shape_input(ctx, 0), *r = hg_shape_input(ctx, 2);
    if (!rnn_attrs(ctx->node, ctx->opset, cell, &at, NULL) || !x || x->rank != 3)
        return -1;
    gint64 h = at.hidden >= 0 ? at.hidden : r && r->rank == 3 ? r->dims[2].v : -1;
    gint64 s = x->dims[0].v, b = x->dims[1].v, i = x->dims[2].v;
    if (h < 0 || s < 0 || b < 0 || i < 0)
        return -1;
    return at.dirs * s * b * at.gates * h * (i + h);
}

gint64
hg_cost_LSTM(const HgShapeCtx *ctx)
{
    return rnn_cost(ctx, RNN_LSTM);
}

gint64
hg_cost_GRU(const HgShapeCtx *ctx)
{
    return rnn_cost(ctx, RNN_GRU);
}

gint64
hg_cost_RNN(const HgShapeCtx *ctx)
{
    return rnn_cost(ctx, RNN_RNN);
}

/* ---------------------------------------------------------------- interval rules
 *
 * The gates squash: with sigmoid-like gate functions (outputs in [0, 1]) an LSTM's h = o * h(C) lies
 * in the product of the gate's range and h's; its cell state moves at most by g's range per step,
 * C_t = f C_{t-1} + i c_t with f, i in [0, 1] (so |C| <= |initial_c| + seq with tanh); a GRU's
 * H_t = (1 - z) h_t + z H_{t-1} is a convex combination of the candidate h_t and the previous state
 * (the kernel keeps the rounded one inside the pair too), so H stays in the hull of g's range and
 * initial_h; an RNN's H is f of something. Each activation's range is taken over the whole line, or
 * over [-clip, clip] with clip. Outputs hold 0 too (steps past a length, entries of length 0).
 *
 * NaN: only from a NaN or an infinity inside a gate's sum. The inputs bounded, every term of a gate's
 * pre-activation is bounded by its inputs' magnitudes and the states' bounds; while the sum of those
 * magnitudes stays well inside FP32, no partial sum overflows and nothing makes NaN. A state with no
 * bound (Relu without clip) or an unknown input or hidden size sets the flag. */

/* The range of activation a over inputs [lo, hi] (infinite ends allowed), FP32 rounding included;
 * FALSE when not known (a parameter that makes inf * 0). Each function is monotone between its kinks
 * (0, and ThresholdedRelu's alpha), so the ends and the kinks inside bound it. */
static gboolean
act_range(const RnnAct *a, double lo, double hi, double *olo, double *ohi)
{
    double pts[5], vals[5];
    int n = 0;
    pts[n++] = lo;
    pts[n++] = hi;
    if (lo < 0 && hi > 0)
        pts[n++] = 0;
    double rlo = INFINITY, rhi = -INFINITY;
    if (a->kind == ACT_THRESHOLDED_RELU && lo < a->alpha && a->alpha <= hi) {
        /* 0 just below alpha, alpha itself at it */
        rlo = MIN(rlo, MIN(0, a->alpha));
        rhi = MAX(rhi, MAX(0, a->alpha));
    }
    if (!isfinite(a->alpha) || !isfinite(a->beta))
        return FALSE;
    for (int i = 0; i < n; i++) {
        vals[i] = rnn_act_f64(a, pts[i]);
        if (isnan(vals[i]))
            return FALSE;
        double v = vals[i];
        /* FP32 evaluation at a finite point: a few ulps of the terms it adds */
        double slack = isfinite(pts[i]) && isfinite(v)
                           ? 8 * HG_ULP32 * (fabs(v) + fabs(a->alpha * pts[i]) + fabs(a->beta))
                           : 0;
        rlo = MIN(rlo, v - slack);
        rhi = MAX(rhi, v + slack);
    }
    /* the squashing functions never leave their asymptotes' interval in FP32 either */
    switch (a->kind) {
    case ACT_SIGMOID:
        rlo = MAX(rlo, 0);
        rhi = MIN(rhi, 1);
        break;
    case ACT_HARD_SIGMOID:
        rlo = MAX(rlo, 0);
        rhi = MIN(rhi, 1);
        break;
    case ACT_TANH:
    case ACT_SOFTSIGN:
        rlo = MAX(rlo, -1);
        rhi = MIN(rhi, 1);
        break;
    default:
        break;
    }
    *olo = rlo;
    *ohi = rhi;
    return TRUE;
}

/* The largest magnitude of a present input, 0 for an omitted one. */
static double
in_mag(const HgRange *r)
{
    return r ? hg_range_mag(r) : 0;
}

/* The sequence length of X where known, or its --dim-max (noted); -1 otherwise. */
static gint64
rnn_seq_bound(HgRangeCtx *ctx, const RnnAttrs *at)
{
    const HgValueShape *xs = hg_range_shape(ctx, 0);
    if (!xs || xs->rank != 3)
        return -1;
    int axis = at->layout ? 1 : 0;
    if (xs->dims[axis].v >= 0)
        return xs->dims[axis].v;
    if (hg_dim_max_lookup(ctx->dim_max, xs->dims[axis].sym, -1) > 0)
        return hg_range_len_bound(ctx, xs, axis, axis + 1);
    return -1;
}

static void
rnn_range(HgRangeCtx *ctx, RnnCell cell)
{
    RnnAttrs at;
    if (!rnn_attrs(ctx->node, ctx->opset, cell, &at, NULL))
        return;
    const HgRange *x = hg_range_input(ctx, 0), *w = hg_range_input(ctx, 1), *r = hg_range_input(ctx, 2);
    const HgRange *b = hg_range_input(ctx, 3), *h0 = hg_range_input(ctx, 5);
    const HgRange *c0 = cell == RNN_LSTM ? hg_range_input(ctx, 6) : NULL;
    const HgRange *pp = cell == RNN_LSTM ? hg_range_input(ctx, 7) : NULL;
    const HgRange *floats[7] = {x, w, r, b, h0, c0, pp};
    if (!hg_range_nonempty(x) || !hg_range_nonempty(w) || !hg_range_nonempty(r))
        return;
    gboolean nan = FALSE;
    for (int i = 0; i < 7; i++)
        if (floats[i] && (!hg_range_nonempty(floats[i]) || floats[i]->nan || !hg_range_bounded(floats[i])))
            nan = TRUE;
    double in_lo = at.clip_on ? -at.clip : -INFINITY, in_hi = at.clip_on ? at.clip : INFINITY;
    gint64 T = rnn_seq_bound(ctx, &at);
    /* the output ranges, as the union over directions; c: LSTM's cell state */
    double ylo = 0, yhi = 0, clo = 0, chi = 0, gate_mag = 0;
    gboolean ybound = TRUE, cbound = cell == RNN_LSTM;
    double h0lo = h0 ? h0->lo : 0, h0hi = h0 ? h0->hi : 0, c0lo = c0 ? c0->lo : 0, c0hi = c0 ? c0->hi : 0;
    for (int d = 0; d < at.dirs; d++) {
        const RnnAct *acts = &at.acts[d * at.n_act];
        double flo, fhi, glo, ghi;
        gboolean fok = act_range(&acts[0], in_lo, in_hi, &flo, &fhi);
        gboolean unit = fok && flo >= 0 && fhi <= 1; /* gates in [0, 1] */
        gate_mag = MAX(gate_mag, fok ? MAX(fabs(flo), fabs(fhi)) : INFINITY);
        if (cell == RNN_RNN) {
            if (fok) {
                ylo = MIN(ylo, flo);
                yhi = MAX(yhi, fhi);
            } else {
                ybound = FALSE;
            }
            continue;
        }
        gboolean gok = act_range(&acts[1], in_lo, in_hi, &glo, &ghi);
        if (cell == RNN_GRU) {
            if (unit && gok) {
                ylo = MIN(ylo, MIN(glo, h0lo));
                yhi = MAX(yhi, MAX(ghi, h0hi));
            } else {
                ybound = FALSE;
            }
            continue;
        }
        /* LSTM: C_t = f C_{t-1} + i c_t with f, i in [0, 1] moves by [min(0, glo), max(0, ghi)] a
         * step from the hull of 0 and initial_c. A step that adds nothing to one side leaves it where
         * it was (rounding is monotone); one that does rounds once more, which (1 + 2^-22)^T covers. */
        double dlo = -INFINITY, dhi = INFINITY;
        if (unit && gok) {
            double grow = T >= 0 ? exp((double)T * 0x1p-22) : INFINITY;
            double lo_step = MIN(0, glo), hi_step = MAX(0, ghi);
            dlo = lo_step == 0 ? MIN(0, c0lo) : T >= 0 ? (MIN(0, c0lo) + (double)T * lo_step) * grow : -INFINITY;
            dhi = hi_step == 0 ? MAX(0, c0hi) : T >= 0 ? (MAX(0, c0hi) + (double)T * hi_step) * grow : INFINITY;
        } else {
            cbound = FALSE;
        }
        clo = MIN(clo, dlo);
        chi = MAX(chi, dhi);
        /* h's input: the cell state, clipped (both hold 0, so the meet is not empty) */
        double hin_lo = at.clip_on ? MAX(dlo, -at.clip) : dlo, hin_hi = at.clip_on ? MIN(dhi, at.clip) : dhi;
        double hlo, hhi;
        if (fok && act_range(&acts[2], hin_lo, hin_hi, &hlo, &hhi)) {
            HgRange o = hg_range_mul(hg_range_make(flo, fhi, 0, FALSE), hg_range_make(hlo, hhi, 0, FALSE));
            hg_range_slack(&o, 2 * HG_ULP32 * hg_range_mag(&o));
            ylo = MIN(ylo, o.lo);
            yhi = MAX(yhi, o.hi);
        } else {
            ybound = FALSE;
        }
    }
    if (!ybound) {
        ylo = -INFINITY;
        yhi = INFINITY;
    }
    if (!cbound) {
        clo = -INFINITY;
        chi = INFINITY;
    }
    /* Overflow inside the gates' sums: bound every pre-activation's terms. The states the products
     * read: H in Y's range or initial_h, C in Y_c's or initial_c (where the length is unknown, the
     * peepholes take a sequence of at most 2^40 steps: X would not fit in memory). */
    const HgValueShape *xs = hg_range_shape(ctx, 0), *rs = hg_range_shape(ctx, 2);
    gint64 isz = xs && xs->rank == 3 ? xs->dims[2].v : -1;
    gint64 hsz = at.hidden >= 0 ? at.hidden : rs && rs->rank == 3 ? rs->dims[2].v : -1;
    double hmag = MAX(MAX(fabs(ylo), fabs(yhi)), in_mag(h0));
    double cmag = MAX(MAX(fabs(clo), fabs(chi)), in_mag(c0));
    if (cell == RNN_LSTM && !cbound)
        nan = TRUE; /* a cell state that may grow past FP32 */
    if (cell == RNN_LSTM && !isfinite(cmag)) {
        double glo, ghi, g = 0;
        for (int d = 0; d < at.dirs; d++)
            if (act_range(&at.acts[d * at.n_act + 1], in_lo, in_hi, &glo, &ghi))
                g = MAX(g, MAX(fabs(glo), fabs(ghi)));
        cmag = (in_mag(c0) + 0x1p40 * g) * 2;
    }
    if (!nan) {
        double pre = INFINITY;
        if (isz >= 0 && hsz >= 0 && isz + hsz < ((gint64)1 << 22) && isfinite(hmag)) {
            double rec = (double)hsz * hmag * in_mag(r);
            pre = (double)isz * in_mag(x) * in_mag(w) + (2 * in_mag(b) + rec) * MAX(1, gate_mag) +
                  (pp ? in_mag(pp) * cmag : 0);
        }
        nan = !(pre < FLT_MAX / 4);
    }
    HgRange out[3] = {hg_range_make(ylo, yhi, 0, nan), hg_range_make(ylo, yhi, 0, nan), hg_range_make(clo, chi, 0, nan)};
    for (guint k = 0; k < (cell == RNN_LSTM ? 3u : 2u); k++) {
        HgRange *o = hg_range_output(ctx, k);
        if (!o)
            continue;
        hg_range_finish(&out[k], hg_range_output_dtype(ctx, k));
        *o = out[k];
    }
}

void
hg_range_LSTM(HgRangeCtx *ctx)
{
    rnn_range(ctx, RNN_LSTM);
}

void
hg_range_GRU(HgRangeCtx *ctx)
{
    rnn_range(ctx, RNN_GRU);
}

void
hg_range_RNN(HgRangeCtx *ctx)
{
    rnn_range(ctx, RNN_RNN);
}
