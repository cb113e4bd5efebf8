/* The attention family: Attention and RotaryEmbedding (opset 23), with their interval rules. The
 * typed kernel is attention.inc. */
#include "ops/linalg.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* One Attention run (see hg_eval_Attention): data in the compute type, shapes resolved. Tasks are
 * (batch, query head) pairs; query head h reads key/value head h / (hq / hkv). */
typedef struct {
    HgKind kind;                         /* F32 or F64 */
    gint64 b, hq, hkv, sq, t, sp, dk, dv; /* t = sp + the new keys: the keys attended */
    gboolean three_d, causal;
    double scale, softcap;
    int mode;                              /* qk_matmul_output_mode */
    const void *q;                         /* [b, hq, sq, dk], or [b, sq, hq * dk] when three_d */
    const void *pk, *pv;                   /* the present keys and values, [b, hkv, t, dk|dv] */
    const void *mask;                      /* an additive mask in the compute type, or NULL */
    const guint8 *bmask;                   /* a bool mask, or NULL */
    gint64 mstr[4], mlen;                  /* the mask's strides over [b, hq, sq, mlen] (0: broadcast) */
    void *y;                               /* [b, hq, sq, dv], or [b, sq, hq * dv] when three_d */
    void *qk;                              /* qk_matmul_output [b, hq, sq, t], or NULL */
    void **scratch;                        /* per worker: sq * t + 2 * dv + sq compute elements */
} AttnJob;

/* The typed kernels: kernel.h's templates, one instance per kind. */
#define HG_TEMPLATE "ops/attention.inc"
#include "ops/instances_float.inc"


/* ================================================================ RotaryEmbedding
 *
 * RoPE (opset 23): X is (batch, heads, seq, head) or (batch, seq, heads * head) with num_heads. The
 * first rotary_embedding_dim (default: all) entries of each head are taken as pairs (x1, x2), the
 * two halves or, interleaved, neighbours, and rotated by the position's angle:
 * (cos x1 - sin x2, sin x1 + cos x2), with cos and sin looked up in the caches at position_ids
 * (caches of (max_position, rd / 2)) or, without position_ids, taken as (batch, seq, rd / 2). The rest
 * of the head passes through. Computed in FP64 and rounded once. */

typedef struct {
    gboolean four_d, interleaved;
    gint64 b, h, s, d, rd;
} RopePlan;

/* Dims of X (rank 3 or 4, all known) against the attributes. FALSE with an error. */
static gboolean
rope_plan(const HgNode *node, guint rank, const gint64 *dims, RopePlan *p, GError **error)
{
    p->interleaved = hg_node_attr_int(node, "interleaved", 0) != 0;
    gint64 heads = hg_node_attr_int(node, "num_heads", 0);
    if (rank == 4) {
        p->four_d = TRUE;
        p->b = dims[0], p->h = dims[1], p->s = dims[2], p->d = dims[3];
    } else if (rank == 3) {
        if (heads <= 0 || dims[2] % heads != 0) {
            hg_op_error(error, HG_ERROR_INVALID, node,
                        "a 3-D input needs num_heads dividing its hidden size %" G_GINT64_FORMAT, dims[2]);
            return FALSE;
        }
        p->four_d = FALSE;
        p->b = dims[0], p->s = dims[1], p->h = heads, p->d = dims[2] / heads;
    } else {
        hg_op_error(error, HG_ERROR_INVALID, node, "X must have rank 3 or 4, has %u", rank);
        return FALSE;
    }
    p->rd = hg_node_attr_int(node, "rotary_embedding_dim", 0);
    if (p->rd == 0)
        p->rd = p->d;
    if (p->rd < 0 || p->rd > p->d || p->rd % 2) {
        hg_op_error(error, HG_ERROR_INVALID, node,
                    "rotary_embedding_dim %" G_GINT64_FORMAT " must be even and at most the head size %" G_GINT64_FORMAT,
                    p->rd, p->d);
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_RotaryEmbedding(HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    HgValueShape *y = hg_shape_output(ctx, 0);
    if (!x || !y)
        return TRUE;
    if (x->rank >= 0 && x->rank != 3 && x->rank != 4) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "X must have rank 3 or 4, has %d", x->rank);
        return FALSE;
    }
    if (hg_vshape_known(x)) {
        gint64 dims[HG_MAX_RANK];
        RopePlan p;
        for (int i = 0; i < x->rank; i++)
            dims[i] = x->dims[i].v;
        if (!rope_plan(ctx->node, (guint)x->rank, dims, &p, ctx->error))
            return FALSE;
    }
    hg_vshape_set(y, x->dtype, x->rank, x->dims);
    hg_fold(ctx, hg_eval_RotaryEmbedding, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* The cache row of (batch bi, position si): an index into caches of (max_position, half) through
 * position_ids, or into (batch, seq, half) caches directly (a dim of 1 broadcasts). -1 with an error
 * when out of range. */
static gint64
rope_row(HgEvalCtx *ctx, const HgArray *cos, const HgArray *pos, gint64 bi, gint64 si)
{
    if (pos) {
        gint64 pb = pos->dims[0] == 1 ? 0 : bi, ps = pos->dims[1] == 1 ? 0 : si;
        gint64 id = hg_array_get_i64(pos, pb * pos->dims[1] + ps);
        if (id < 0 || id >= cos->dims[0]) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "position id %" G_GINT64_FORMAT " is outside the caches' %" G_GINT64_FORMAT " rows", id,
                        cos->dims[0]);
            return -1;
        }
        return id;
    }
    gint64 cb = cos->dims[0] == 1 ? 0 : bi, cs = cos->dims[1] == 1 ? 0 : si;
    return cb * cos->dims[1] + cs;
}

gboolean
hg_eval_RotaryEmbedding(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    const HgArray *x = ctx->inputs[0], *cos = ctx->inputs[1], *sin = ctx->inputs[2];
    const HgArray *pos = hg_eval_input(ctx, 3);
    RopePlan p;
    if (!rope_plan(ctx->node, x->rank, x->dims, &p, ctx->error))
        return FALSE;
    for (int i = 0; i < 3; i++) {
        HgKind c = hg_kind_of(ctx->inputs[i]->dtype);
        if (c != HG_KIND_F32 && c != HG_KIND_F64) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "input %d of type %s is not supported", i,
                        hg_dtype_name(ctx->inputs[i]->dtype));
            return FALSE;
        }
    }
    gint64 half = p.rd / 2;
    gboolean same = cos->rank == sin->rank;
    for (guint i = 0; same && i < cos->rank; i++)
        same = cos->dims[i] == sin->dims[i];
    guint want_rank = pos ? 2 : 3;
    gboolean ok = same && cos->rank == want_rank && cos->dims[want_rank - 1] == half;
    if (ok && pos)
        ok = pos->rank == 2 && (pos->dims[0] == p.b || pos->dims[0] == 1) && (pos->dims[1] == p.s || pos->dims[1] == 1) &&
             hg_dtype_compute(pos->dtype) == HG_COMPUTE_I64;
    else if (ok)
        ok = (cos->dims[0] == p.b || cos->dims[0] == 1) && (cos->dims[1] == p.s || cos->dims[1] == 1);
    if (!ok) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "the caches must both be %s with a last dim of %" G_GINT64_FORMAT " (rotary dim / 2)%s",
                    pos ? "(max_position, half)" : "(batch, seq, half)", half,
                    pos ? ", position_ids int64 (batch, seq)" : "");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output_uninit(ctx, x->dtype, x->rank, x->dims);
    if (!y)
        return FALSE;
    gboolean own_x, own_c, own_s;
    double *xd = hg_array_load_f64(x, &own_x), *cd = hg_array_load_f64(cos, &own_c), *sd = hg_array_load_f64(sin, &own_s);
    g_autofree double *yd = g_new(double, x->numel + 1);
    gboolean good = TRUE;
    for (gint64 bi = 0; bi < p.b && good; bi++)
        for (gint64 si = 0; si < p.s && good; si++) {
            gint64 row = rope_row(ctx, cos, pos, bi, si);
            if (row < 0) {
                good = FALSE;
                break;
            }
            const double *c = cd + row * half, *s = sd + row * half;
            for (gint64 hi = 0; hi < p.h; hi++) {
                gint64 off = p.four_d ? ((bi * p.h + hi) * p.s + si) * p.d : ((bi * p.s + si) * p.h + hi) * p.d;
                const double *xr = xd + off;
                double *yr = yd + off;
                for (gint64 i = 0; i < half; i++) {
                    gint64 i1 = p.interleaved ? 2 * i : i, i2 = p.interleaved ? 2 * i + 1 : i + half;
                    double x1 = xr[i1], x2 = xr[i2];
                    yr[i1] = c[i] * x1 - s[i] * x2;
                    yr[i2] = s[i] * x1 + c[i] * x2;
                }
                for (gint64 i = p.rd; i < p.d; i++)
                    yr[i] = xr[i];
            }
        }
    if (good)
        hg_array_store_f64(y, yd);
    if (own_x)
        g_free(xd);
    if (own_c)
        g_free(cd);
    if (own_s)
        g_free(sd);
    if (!good)
        return FALSE;
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

/* Four multiplies and two adds per pair: two multiply-adds per element. */
gint64
hg_cost_RotaryEmbedding(const HgShapeCtx *ctx)
{
    const HgValueShape *x = hg_shape_input(ctx, 0);
    gint64 n = x ? hg_vshape_numel(x) : -1;
    return n < 0 ? -1 : 2 * n;
}

/* ================================================================ Attention
 *
 * Scaled dot-product attention (opset 23): Q (batch, q_heads, q_seq, head) and K, V (batch,
 * kv_heads, kv_seq, head | v_head), or the 3-D forms (batch, seq, heads * head) with q_num_heads
 * and kv_num_heads. past_key and past_value (4-D) are concatenated in front of K and V along the
 * sequence and returned as present_key / present_value. Query head h attends with key/value head
 * h / (q_heads / kv_heads) (grouped-query attention). Scores scale Q K^T (scale defaults to
 * 1/sqrt(head)), then softcap, then the bias: an additive mask (bool: false is -inf) broadcast to
 * (batch, q_heads, q_seq, total), -inf past a shorter mask's last dim (as the reference pads it), and
 * with is_causal -inf where key j > query i + past_seq. Softmax per query row, then times V.
 * qk_matmul_output is the scaled product (mode 0), after softcap (1), after the bias (2) or the
 * softmax (3). FP32 compute (FP64 for double), every output rounded once; softmax_precision is
 * satisfied by that (FP32 or wider). */

#define ATTN_Q 0
#define ATTN_K 1
#define ATTN_V 2
#define ATTN_MASK 3
#define ATTN_PAST_K 4
#define ATTN_PAST_V 5
#define ATTN_NONPAD 6

/* The sizes of one Attention node, each known (v >= 0) or not. */
typedef struct {
    gboolean ranked, three_d, past;
    HgSymDim b, hq, hkv, sq, skv, sp, t, dk, dv;
} AttnDims;

/* a and b name one size: the known one (or the named one); FALSE when both are known and differ. */
static gboolean
dim_merge(HgSymDim a, HgSymDim b, HgSymDim *out)
{
    if (a.v >= 0 && b.v >= 0 && a.v != b.v)
        return FALSE;
    *out = a.v >= 0 ? a : b.v >= 0 ? b : a.sym ? a : b;
    return TRUE;
}

/* The dim of a hidden size h split into n heads: h / n when both are known. */
static HgSymDim
dim_split(HgSymDim h, gint64 n)
{
    return h.v >= 0 && n > 0 ? hg_dim_known(h.v / n) : hg_dim_unknown();
}

static gboolean attn_fail(GError **error, const HgNode *node, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
attn_fail(GError **error, const HgNode *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    hg_op_error(error, HG_ERROR_INVALID, node, "%s", msg);
    return FALSE;
}

/* The sizes from the shapes of Q, K, V and the past (NULL: omitted), checked where known. */
static gboolean
attn_dims(const HgNode *node, const HgValueShape *q, const HgValueShape *k, const HgValueShape *v,
          const HgValueShape *pk, const HgValueShape *pv, AttnDims *d, GError **error)
{
    memset(d, 0, sizeof *d);
    d->b = d->hq = d->hkv = d->sq = d->skv = d->sp = d->t = d->dk = d->dv = hg_dim_unknown();
    if ((pk == NULL) != (pv == NULL))
        return attn_fail(error, node, "past_key and past_value must be given together");
    d->past = pk != NULL;
    if (!q || !k || !v || q->rank < 0 || k->rank < 0 || v->rank < 0)
        return TRUE;
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return attn_fail(error, node, "Q, K and V must all be 3-D or all 4-D, have ranks %d, %d, %d", q->rank,
                         k->rank, v->rank);
    d->ranked = TRUE;
    d->three_d = q->rank == 3;
    gboolean ok = dim_merge(q->dims[0], k->dims[0], &d->b) && dim_merge(d->b, v->dims[0], &d->b);
    if (!ok)
        return attn_fail(error, node, "Q, K and V have different batch sizes");
    if (d->three_d) {
        gint64 nq = hg_node_attr_int(node, "q_num_heads", 0), nkv = hg_node_attr_int(node, "kv_num_heads", 0);
        if (nq <= 0 || nkv <= 0)
            return attn_fail(error, node, "3-D inputs need q_num_heads and kv_num_heads");
        if ((q->dims[2].v >= 0 && q->dims[2].v % nq) || (k->dims[2].v >= 0 && k->dims[2].v % nkv) ||
            (v->dims[2].v >= 0 && v->dims[2].v % nkv))
            return attn_fail(error, node, "the hidden sizes are not multiples of the head counts");
        d->hq = hg_dim_known(nq);
        d->hkv = hg_dim_known(nkv);
        d->sq = q->dims[1];
        ok = dim_merge(k->dims[1], v->dims[1], &d->skv) &&
             dim_merge(dim_split(q->dims[2], nq), dim_split(k->dims[2], nkv), &d->dk);
        d->dv = dim_split(v->dims[2], nkv);
    } else {
        d->hq = q->dims[1];
        d->sq = q->dims[2];
        ok = dim_merge(k->dims[1], v->dims[1], &d->hkv) && dim_merge(k->dims[2], v->dims[2], &d->skv) &&
             dim_merge(q->dims[3], k->dims[3], &d->dk);
        d->dv = v->dims[3];
    }
    if (!ok)
        return attn_fail(error, node, "the head counts, sequence lengths or head sizes of Q, K and V disagree");
    if (d->hq.v >= 0 && d->hkv.v >= 0 && (d->hkv.v == 0 || d->hq.v % d->hkv.v))
        return attn_fail(error, node, "%" G_GINT64_FORMAT " query heads are not a multiple of %" G_GINT64_FORMAT
                         " key/value heads", d->hq.v, d->hkv.v);
    d->sp = hg_dim_known(0);
    if (d->past) {
        if (pk->rank >= 0 && pv->rank >= 0) {
            if (pk->rank != 4 || pv->rank != 4)
                return attn_fail(error, node, "past_key and past_value must be 4-D");
            ok = dim_merge(pk->dims[0], d->b, &d->b) && dim_merge(pv->dims[0], d->b, &d->b) &&
                 dim_merge(pk->dims[1], d->hkv, &d->hkv) && dim_merge(pv->dims[1], d->hkv, &d->hkv) &&
                 dim_merge(pk->dims[2], pv->dims[2], &d->sp) && dim_merge(pk->dims[3], d->dk, &d->dk) &&
                 dim_merge(pv->dims[3], d->dv, &d->dv);
            if (!ok)
                return attn_fail(error, node, "past_key or past_value does not match K and V");
        } else {
            d->sp = hg_dim_unknown();
        }
    }
    d->t = d->sp.v >= 0 && d->skv.v >= 0 ? hg_dim_known(d->sp.v + d->skv.v) : d->sp.v == 0 ? d->skv : hg_dim_unknown();
    return TRUE;
}

static gboolean
attn_attrs(const HgNode *node, int *mode, GError **error)
{
    *mode = (int)hg_node_attr_int(node, "qk_matmul_output_mode", 0);
    if (*mode < 0 || *mode > 3)
        return attn_fail(error, node, "qk_matmul_output_mode %d is not 0 to 3", *mode);
    return TRUE;
}

gboolean
hg_infer_Attention(HgShapeCtx *ctx)
{
    AttnDims d;
    int mode;
    if (!attn_attrs(ctx->node, &mode, ctx->error) ||
        !attn_dims(ctx->node, hg_shape_input(ctx, ATTN_Q), hg_shape_input(ctx, ATTN_K), hg_shape_input(ctx, ATTN_V),
                   hg_shape_input(ctx, ATTN_PAST_K), hg_shape_input(ctx, ATTN_PAST_V), &d, ctx->error))
        return FALSE;
    const HgValueShape *q = hg_shape_input(ctx, ATTN_Q), *k = hg_shape_input(ctx, ATTN_K);
    const HgValueShape *v = hg_shape_input(ctx, ATTN_V);
    HgValueShape *y = hg_shape_output(ctx, 0), *pk = hg_shape_output(ctx, 1), *pv = hg_shape_output(ctx, 2);
    HgValueShape *qk = hg_shape_output(ctx, 3);
    if (y && q)
        y->dtype = q->dtype;
    if (pk && k)
        pk->dtype = k->dtype;
    if (pv && v)
        pv->dtype = v->dtype;
    if (qk && q)
        qk->dtype = q->dtype;
    if (!d.ranked)
        return TRUE;
    HgSymDim ydims[4] = {d.b, d.hq, d.sq, d.dv};
    if (d.three_d) {
        ydims[1] = d.sq;
        ydims[2] = d.dv.v >= 0 ? hg_dim_known(d.hq.v * d.dv.v) : hg_dim_unknown();
    }
    hg_vshape_set(y, y ? y->dtype : HG_DTYPE_UNDEFINED, d.three_d ? 3 : 4, ydims);
    HgSymDim kdims[4] = {d.b, d.hkv, d.t, d.dk}, vdims[4] = {d.b, d.hkv, d.t, d.dv}, sdims[4] = {d.b, d.hq, d.sq, d.t};
    hg_vshape_set(pk, pk ? pk->dtype : HG_DTYPE_UNDEFINED, 4, kdims);
    hg_vshape_set(pv, pv ? pv->dtype : HG_DTYPE_UNDEFINED, 4, vdims);
    hg_vshape_set(qk, qk ? qk->dtype : HG_DTYPE_UNDEFINED, 4, sdims);
    return TRUE;
}

static void
attn_task(gpointer data, gint64 task, int worker)
{
    const AttnJob *j = data;
    HG_KIND_CALL_FLOAT(j->kind, attn_head, j, task, j->scratch[worker]);
}

/* The present keys (or values) in the compute type, [b, hkv, t, d]: each head's past rows, then its
 * new ones (from a 3-D input, row s of head g at (s * hkv + g) * d). */
static void *
attn_present(const void *past, const void *x, gboolean three_d, gint64 b, gint64 hkv, gint64 sp, gint64 skv,
             gint64 d, gsize es)
{
    gint64 t = sp + skv;
    char *out = g_try_malloc((gsize)(b * hkv * t * d + 1) * es);
    if (!out)
        return NULL;
    for (gint64 n = 0; n < b; n++)
        for (gint64 g = 0; g < hkv; g++) {
            char *dst = out + (gsize)((n * hkv + g) * t * d) * es;
            if (sp)
                memcpy(dst, (const char *)past + (gsize)((n * hkv + g) * sp * d) * es, (gsize)(sp * d) * es);
            for (gint64 s = 0; s < skv; s++) {
                gint64 src = three_d ? ((n * skv + s) * hkv + g) * d : ((n * hkv + g) * skv + s) * d;
                memcpy(dst + (gsize)((sp + s) * d) * es, (const char *)x + (gsize)src * es, (gsize)d * es);
            }
        }
    return out;
}

gboolean
hg_eval_Attention(HgEvalCtx *ctx)
{
    if (!hg_eval_need(ctx, 3))
        return FALSE;
    if (hg_eval_input(ctx, ATTN_NONPAD)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "nonpad_kv_seqlen (opset 24) is not supported");
        return FALSE;
    }
    const HgArray *q = ctx->inputs[ATTN_Q], *k = ctx->inputs[ATTN_K], *v = ctx->inputs[ATTN_V];
    const HgArray *mask = hg_eval_input(ctx, ATTN_MASK), *past_k = hg_eval_input(ctx, ATTN_PAST_K);
    const HgArray *past_v = hg_eval_input(ctx, ATTN_PAST_V);
    HgKind kind = hg_kind_of(q->dtype);
    const HgArray *fl[5] = {q, k, v, past_k, past_v};
    for (int i = 0; i < 5; i++) {
        HgKind c = fl[i] ? hg_kind_of(fl[i]->dtype) : HG_KIND_F32;
        if (c != HG_KIND_F32 && c != HG_KIND_F64) {
            hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "an input of type %s is not supported",
                        hg_dtype_name(fl[i]->dtype) ? hg_dtype_name(fl[i]->dtype) : "?");
            return FALSE;
        }
    }
    if (mask && mask->dtype != HG_DTYPE_BOOL && hg_kind_of(mask->dtype) == HG_KIND_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "attn_mask of type %s is not supported",
                    hg_dtype_name(mask->dtype) ? hg_dtype_name(mask->dtype) : "?");
        return FALSE;
    }
    int mode;
    if (!attn_attrs(ctx->node, &mode, ctx->error))
        return FALSE;
    HgValueShape s[5];
    const HgArray *arrs[5] = {q, k, v, past_k, past_v};
    memset(s, 0, sizeof s);
    for (int i = 0; i < 5; i++) {
        hg_vshape_unknown(&s[i]);
        if (arrs[i])
            hg_vshape_set_known(&s[i], arrs[i]->dtype, arrs[i]->rank, arrs[i]->dims);
    }
    AttnDims d;
    if (!attn_dims(ctx->node, &s[0], &s[1], &s[2], past_k ? &s[3] : NULL, past_v ? &s[4] : NULL, &d, ctx->error))
        return FALSE;
    gint64 b = d.b.v, hq = d.hq.v, hkv = d.hkv.v, sq = d.sq.v, skv = d.skv.v, sp = d.sp.v, t = d.t.v;
    gint64 dk = d.dk.v, dv = d.dv.v;
    HgAttr *sa = hg_node_attr(ctx->node, "scale");
    AttnJob j = {
        .kind = kind, .b = b, .hq = hq, .hkv = hkv, .sq = sq, .t = t, .sp = sp, .dk = dk, .dv = dv,
        .three_d = d.three_d, .causal = hg_node_attr_int(ctx->node, "is_causal", 0) != 0,
        .scale = sa && sa->type == HG_ATTR_FLOAT ? sa->f : 1 / sqrt((double)dk),
        .softcap = hg_node_attr_float(ctx->node, "softcap", 0), .mode = mode,
    };
    /* the mask, right-aligned against [b, hq, sq, mlen]: a shorter last dim than t is padded with
     * -inf (false) as the reference does; a last dim of 1 broadcasts */
    if (mask) {
        gint64 target[4] = {b, hq, sq, mask->rank ? mask->dims[mask->rank - 1] : 1};
        gboolean ok = mask->rank <= 4 && target[3] <= t;
        if (ok && target[3] == 1)
            target[3] = t;
        for (guint i = 0; ok && i < mask->rank; i++) {
            gint64 m = mask->dims[mask->rank - 1 - i], want = target[3 - i];
            ok = m == want || m == 1;
        }
        if (!ok) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "attn_mask does not broadcast to (batch, q_heads, q_seq, total_seq) = (%" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")", b, hq, sq, t);
            return FALSE;
        }
        j.mlen = target[3];
        hg_broadcast_strides(mask->rank, mask->dims, 4, target, j.mstr);
    }
    gint64 ydims[4] = {b, hq, sq, dv};
    if (d.three_d) {
        ydims[1] = sq;
        ydims[2] = hq * dv;
    }
    gint64 kdims[4] = {b, hkv, t, dk}, vdims[4] = {b, hkv, t, dv}, qkdims[4] = {b, hq, sq, t};
    if (!hg_blas_fits(sq, t, MAX(dk, dv), hq * MAX(dk, dv))) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, q->dtype, d.three_d ? 3 : 4, ydims);
    g_autoptr(HgArray) pko = hg_eval_wants(ctx, 1) ? hg_eval_new_output(ctx, k->dtype, 4, kdims) : NULL;
    g_autoptr(HgArray) pvo = hg_eval_wants(ctx, 2) ? hg_eval_new_output(ctx, v->dtype, 4, vdims) : NULL;
    g_autoptr(HgArray) qko = hg_eval_wants(ctx, 3) ? hg_eval_new_output(ctx, q->dtype, 4, qkdims) : NULL;
    if (!y || (hg_eval_wants(ctx, 1) && !pko) || (hg_eval_wants(ctx, 2) && !pvo) || (hg_eval_wants(ctx, 3) && !qko))
        return FALSE;
    gsize es = hg_kind_size(kind);
    g_auto(HgKBuf) qb = hg_kbuf_load(q, kind);
    g_auto(HgKBuf) kb = hg_kbuf_load(k, kind);
    g_auto(HgKBuf) vb = hg_kbuf_load(v, kind);
    g_auto(HgKBuf) pkb = hg_kbuf_load(past_k, kind);
    g_auto(HgKBuf) pvb = hg_kbuf_load(past_v, kind);
    g_auto(HgKBuf) mb = mask && mask->dtype != HG_DTYPE_BOOL ? hg_kbuf_load(mask, kind) : (HgKBuf){NULL, FALSE};
    g_autofree void *pk = attn_present(pkb.p, kb.p, d.three_d, b, hkv, sp, skv, dk, es);
    g_autofree void *pv = attn_present(pvb.p, vb.p, d.three_d, b, hkv, sp, skv, dv, es);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    g_auto(HgKBuf) qkb = qko ? hg_kbuf_out(qko, kind) : (HgKBuf){NULL, FALSE};
    if (!pk || !pv || !yb.p || (qko && !qkb.p))
        return hg_eval_oom(ctx);
    j.q = qb.p;
    j.pk = pk;
    j.pv = pv;
    j.mask = mb.p;
    j.bmask = mask && mask->dtype == HG_DTYPE_BOOL ? mask->data : NULL;
    j.y = yb.p;
    j.qk = qkb.p;
    /* heads in parallel, each GEMM on one thread; one head alone lets BLAS use the threads */
    gint64 tasks = b * hq, per = sq * t + 2 * dv + sq + 1;
    int threads = hg_eval_threads(ctx, tasks * sq * t * (dk + dv));
    int workers = tasks >= 2 ? (int)MIN((gint64)threads, tasks) : 1;
    void *scratch[HG_PAR_MAX_THREADS] = {NULL};
    gboolean ok = TRUE;
    for (int w = 0; w < workers && ok; w++)
        ok = (scratch[w] = g_try_malloc((gsize)per * es)) != NULL;
    j.scratch = scratch;
    if (ok && tasks > 0) {
        hg_blas_threads(workers > 1 ? 1 : threads);
        hg_par_for(workers, tasks, attn_task, &j);
    }
    for (int w = 0; w < workers; w++)
        g_free(scratch[w]);
    if (!ok)
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    if (qko)
        hg_kbuf_store(qko, &qkb, kind);
    HgKBuf pkl = {pk, FALSE}, pvl = {pv, FALSE};
    if (pko)
        hg_kbuf_store(pko, &pkl, kind);
    if (pvo)
        hg_kbuf_store(pvo, &pvl, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    if (pko)
        ctx->outputs[1] = g_steal_pointer(&pko);
    if (pvo)
        ctx->outputs[2] = g_steal_pointer(&pvo);
    if (qko)
        ctx->outputs[3] = g_steal_pointer(&qko);
    return TRUE;
}

/* The two products: q_seq x total x (head + v_head) multiply-adds per (batch, query head). */
gint64
hg_cost_Attention(const HgShapeCtx *ctx)
{
    AttnDims d;
    if (!attn_dims(ctx->node, hg_shape_input(ctx, ATTN_Q), hg_shape_input(ctx, ATTN_K), hg_shape_input(ctx, ATTN_V),
                   hg_shape_input(ctx, ATTN_PAST_K), hg_shape_input(ctx, ATTN_PAST_V), &d, NULL) ||
        !d.ranked)
        return -1;
    HgSymDim f[6] = {d.b, d.hq, d.sq, d.t, d.dk, d.dv};
    for (int i = 0; i < 6; i++)
        if (f[i].v < 0)
            return -1;
    return d.b.v * d.hq.v * d.sq.v * d.t.v * (d.dk.v + d.dv.v);
}

/* ---------------------------------------------------------------- interval rules */

/* Attention. Y: each row is a convex combination of the attended rows of V (and the past values),
 * clamped by the kernel into their hull, or 0 for a row that every key is masked from (possible only
 * with a bool mask that can be false, a float mask that can be -inf, or no keys at all). Present
 * key/value: the union of the past and the new. qk_matmul_output: the scaled product lies in
 * scale * head * (Q x K) (interval products, plus the GEMM's rounding); softcap maps it into
 * c tanh(S / c); mode 2 adds the bias (-inf where causal, bool or padded masks can exclude keys);
 * mode 3 is a softmax, in [0, 1]. NaN: from NaN inputs, inf * 0 and inf - inf in the products (an
 * unbounded Q, K or V), +inf scores (an overflowing product, a mask reaching +inf). */
void
hg_range_Attention(HgRangeCtx *ctx)
{
    const HgRange *q = hg_range_input(ctx, ATTN_Q), *k = hg_range_input(ctx, ATTN_K), *v = hg_range_input(ctx, ATTN_V);
    const HgRange *mask = hg_range_input(ctx, ATTN_MASK), *pk = hg_range_input(ctx, ATTN_PAST_K), *pv = hg_range_input(ctx, ATTN_PAST_V);
    if (!q || !k || !v || hg_range_input(ctx, ATTN_NONPAD))
        return;
    AttnDims d;
    int mode;
    if (!attn_attrs(ctx->node, &mode, NULL) ||
        !attn_dims(ctx->node, ctx->shapes[ATTN_Q], ctx->shapes[ATTN_K], ctx->shapes[ATTN_V],
                   pk ? ctx->shapes[ATTN_PAST_K] : NULL, pv ? ctx->shapes[ATTN_PAST_V] : NULL, &d, NULL))
        return;
    HgRange kall = pk ? hg_range_union(*k, *pk) : *k, vall = pv ? hg_range_union(*v, *pv) : *v;
    int mdt = mask && ctx->shapes[ATTN_MASK] ? ctx->shapes[ATTN_MASK]->dtype : HG_DTYPE_UNDEFINED;
    gboolean bool_mask = mdt == HG_DTYPE_BOOL;
    /* can a mask exclude a key (bias -inf)? can a row lose every key? */
    gboolean excludes = mask && (bool_mask ? mask->lo <= 0 : mask->lo == -INFINITY);
    gboolean causal = ctx->node && hg_node_attr_int(ctx->node, "is_causal", 0) != 0;
    gboolean empty_row = excludes || d.t.v <= 0;
    /* the scores: scale * head * (q k), the products' range, when the sizes are known */
    double scale = NAN, softcap = ctx->node ? hg_node_attr_float(ctx->node, "softcap", 0) : 0;
    HgAttr *sa = ctx->node ? hg_node_attr(ctx->node, "scale") : NULL;
    if (d.dk.v > 0)
        scale = sa && sa->type == HG_ATTR_FLOAT ? fabs((double)sa->f) : 1 / sqrt((double)d.dk.v);
    double plo, phi;
    hg_range_prod(q->lo, q->hi, kall.lo, kall.hi, &plo, &phi);
    gboolean scores_known = d.dk.v > 0 && isfinite(scale) && hg_range_bounded(q) && hg_range_bounded(&kall);
    double dk = (double)d.dk.v, mag = scores_known ? scale * dk * hg_mag(plo, phi) : INFINITY;
    gboolean overflow = !(mag * 1.01 < FLT_MAX); /* a score that may reach inf */
    gboolean nan = q->nan || k->nan || v->nan || (pk && pk->nan) || (pv && pv->nan) || (mask && mask->nan) ||
                   !hg_range_bounded(q) || !hg_range_bounded(&kall) || !hg_range_bounded(&vall) ||
                   (mask && !bool_mask && mask->hi == INFINITY) || (softcap == 0 && overflow);
    int ydt = ctx->n_outputs && ctx->out_shapes[0] ? ctx->out_shapes[0]->dtype : HG_DTYPE_UNDEFINED;
    if (ctx->n_outputs > 0 && ctx->outputs[0] && vall.lo <= vall.hi) {
        HgRange y = hg_range_exact(vall.lo, vall.hi);
        if (empty_row)
            y = hg_range_union(y, hg_range_exact(0, 0));
        y.tiny = 0;
        y.nan = nan;
        /* values of V's own type stay in its hull when stored; a narrower Y rounds once more */
        int vdt = ctx->shapes[ATTN_V] ? ctx->shapes[ATTN_V]->dtype : HG_DTYPE_UNDEFINED;
        *ctx->outputs[0] = vdt == ydt && ydt != HG_DTYPE_UNDEFINED ? y : hg_range_fit(y, ydt);
    }
    if (ctx->n_outputs > 1 && ctx->outputs[1] && kall.lo <= kall.hi)
        *ctx->outputs[1] = kall;
    if (ctx->n_outputs > 2 && ctx->outputs[2] && vall.lo <= vall.hi)
        *ctx->outputs[2] = vall;
    if (ctx->n_outputs < 4 || !ctx->outputs[3])
        return;
    int sdt = ctx->out_shapes[3] ? ctx->out_shapes[3]->dtype : HG_DTYPE_UNDEFINED;
    HgRange s;
    if (mode == 3) {
        s = hg_range_exact(0, 1);
        s.nan = nan;
        *ctx->outputs[3] = hg_range_fit(s, sdt);
        return;
    }
    if (!scores_known || overflow)
        return;
    /* FP32 products and a head-long sum (FP64 for double), then times the scale */
    double err = (dk + 2) * 2 * 0x1p-24 * mag;
    s = hg_range_exact(scale * dk * MIN(plo, 0) - err, scale * dk * MAX(phi, 0) + err);
    if (plo > 0)
        s.lo = scale * dk * plo - err;
    if (phi < 0)
        s.hi = scale * dk * phi + err;
    s.nan = q->nan || k->nan || (pk && pk->nan);
    if (mode >= 1 && softcap > 0) {
        double c = softcap;
        s.lo = c * tanh(s.lo / c) - 4 * 0x1p-24 * c;
        s.hi = c * tanh(s.hi / c) + 4 * 0x1p-24 * c;
    }
    if (mode == 2) {
        HgRange bias = hg_range_exact(0, 0);
        if (mask && !bool_mask)
            bias = hg_range_exact(mask->lo, mask->hi);
        /* -inf where a key is excluded: causally, by a bool mask, or past a mask shorter than the keys */
        const HgValueShape *ms = mask ? ctx->shapes[ATTN_MASK] : NULL;
        gboolean padded = mask && (!ms || ms->rank < 1 || d.t.v < 0 || ms->dims[ms->rank - 1].v != d.t.v);
        if (causal || bool_mask || padded)
            bias.lo = -INFINITY;
        bias.nan = mask && mask->nan;
        s = hg_range_add(s, bias);
    }
    s.tiny = 0;
    *ctx->outputs[3] = hg_range_fit(s, sdt);
}

/* The value a cache is computed from when it is op(t), op Cos or Sin, seen through Casts: the
 * caches' pairs then lie on the unit circle (up to the roundings), whatever t is. */
static const HgValue *
trig_source(const HgValue *v, const char *op, int *casts)
{
    *casts = 0;
    while (v && v->producer && hg_node_is(v->producer, "Cast") && v->producer->n_inputs == 1 && *casts < 4) {
        v = v->producer->inputs[0];
        (*casts)++;
    }
    return v && v->producer && hg_node_is(v->producer, op) && v->producer->n_inputs == 1 ? v->producer->inputs[0]
                                                                                          : NULL;
}

/* RotaryEmbedding: y1 = c x1 - s x2, y2 = s x1 + c x2 with x1, x2 anywhere in X's range. For each
 * (c, s) pair the extremes are at X's ends, so constant caches give the exact union over their
 * pairs; otherwise the caches' ranges combine by interval arithmetic. When c^2 + s^2 <= R^2 is
 * known (constant caches, or Cos and Sin of the same value) the rotation also keeps |y| <=
 * R sqrt(x1^2 + x2^2) <= R sqrt(2) max|x|. The unrotated tail of each head passes X through.
 * FP64 arithmetic, rounded once into the output type. */
void
hg_range_RotaryEmbedding(HgRangeCtx *ctx)
{
    const HgRange *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *c = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgRange *s = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
    HgRange *y = ctx->n_outputs ? ctx->outputs[0] : NULL;
    const HgValueShape *xs = x ? ctx->shapes[0] : NULL;
    if (!x || !c || !s || !y || !(x->lo <= x->hi) || !(c->lo <= c->hi) || !(s->lo <= s->hi))
        return;
    int dt = hg_range_out_dtype(ctx);
    if (!hg_dtype_is_float(dt))
        return;
    const HgArray *cv = ctx->values[1], *sv = ctx->values[2];
    HgRange r;
    double r2 = INFINITY; /* a bound on c^2 + s^2 over the pairs */
    if (cv && sv && cv->numel == sv->numel && cv->numel > 0 && cv->numel <= (1 << 24)) {
        r = hg_range_exact(INFINITY, -INFINITY);
        r2 = 0;
        for (gint64 i = 0; i < cv->numel; i++) {
            HgRange ci = hg_range_exact(hg_array_get_f64(cv, i), hg_array_get_f64(cv, i));
            HgRange si = hg_range_exact(hg_array_get_f64(sv, i), hg_array_get_f64(sv, i));
            if (isnan(ci.lo) || isnan(si.lo)) {
                r = hg_range_any();
                r2 = INFINITY;
                break;
            }
            HgRange cx = hg_range_mul(ci, *x), sx = hg_range_mul(si, *x);
            r = hg_range_union(r, hg_range_union(hg_range_sub(cx, sx), hg_range_add(sx, cx)));
            r2 = MAX(r2, ci.lo * ci.lo + si.lo * si.lo);
        }
    } else {
        HgRange cx = hg_range_mul(*c, *x), sx = hg_range_mul(*s, *x);
        r = hg_range_union(hg_range_sub(cx, sx), hg_range_add(sx, cx));
        int kc, ks;
        const HgValue *tc = ctx->node && ctx->node->n_inputs > 2 ? trig_source(ctx->node->inputs[1], "Cos", &kc) : NULL;
        const HgValue *ts = tc ? trig_source(ctx->node->inputs[2], "Sin", &ks) : NULL;
        if (tc && tc == ts) {
            /* each cache rounded up to twice (its Cos/Sin and a Cast), FP16 at worst */
            double e = 1 + (kc + ks + 2) * 0x1p-11;
            r2 = e * e;
        }
    }
    if (isfinite(r2) && hg_range_bounded(x)) {
        double m = sqrt(r2) * G_SQRT2 * MAX(fabs(x->lo), fabs(x->hi)) * (1 + 0x1p-40);
        r.lo = MAX(r.lo, -m);
        r.hi = MIN(r.hi, m);
    }
    r.nan = r.nan || x->nan || c->nan || s->nan;
    /* the tail that is not rotated: unless rotary_embedding_dim is known to cover the head */
    gint64 rd = ctx->node ? hg_node_attr_int(ctx->node, "rotary_embedding_dim", 0) : 0;
    gint64 d = -1;
    if (xs && xs->rank == 4)
        d = xs->dims[3].v;
    else if (xs && xs->rank == 3 && xs->dims[2].v >= 0 && ctx->node && hg_node_attr_int(ctx->node, "num_heads", 0) > 0)
        d = xs->dims[2].v / hg_node_attr_int(ctx->node, "num_heads", 0);
    if (rd != 0 && rd != d)
        r = hg_range_union(r, *x);
    r.tiny = 0;
    *y = hg_range_fit(r, dt);
}
