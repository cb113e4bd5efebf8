/* The matmul family: MatMul, Gemm and Einsum, with their interval rules. Products go through BLAS
 * (linalg.h's hg_gemm_*); the typed kernels are matmul.inc, instantiated for every kind. */
#include "ops/linalg.h"
#include "ir_private.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Step a multi-index idx over labels [from, to) (the last fastest), moving each of the nops offsets
 * off[q] by strides[q * pitch + label]. FALSE once it wraps around. */
static gboolean
odo_step(gint64 *idx, const gint64 *dims, guint from, guint to, guint nops, const gint64 *strides,
         guint pitch, gint64 *off)
{
    for (guint l = to; l-- > from;) {
        idx[l]++;
        for (guint q = 0; q < nops; q++)
            off[q] += strides[q * pitch + l];
        if (idx[l] < dims[l])
            return TRUE;
        for (guint q = 0; q < nops; q++)
            off[q] -= strides[q * pitch + l] * dims[l];
        idx[l] = 0;
    }
    return FALSE;
}

/* ================================================================ typed kernels */

/* Einsum's plan: labels [0, nout) are the output's in its order, then the summed ones; strides
 * holds each operand's element stride per label (0 where it broadcasts), with a pitch of
 * EIN_MAX_LABELS. */
#define EIN_MAX_LABELS (52 + HG_MAX_RANK)

typedef struct {
    guint nops, nlab, nout;
    gint64 dims[EIN_MAX_LABELS];
    gint64 *strides;
} EinPlan;

/* The typed kernels: kernel.h's templates, one instance per kind. */
#define HG_TEMPLATE "ops/matmul.inc"
#include "ops/instances_all.inc"


/* ================================================================ MatMul */

/* Broadcast of two batch dims as shape inference knows them. */
static gboolean
sym_broadcast(HgSymDim a, HgSymDim b, HgSymDim *out)
{
    if (a.v >= 0 && b.v >= 0) {
        if (a.v != b.v && a.v != 1 && b.v != 1)
            return FALSE;
        *out = a.v == 1 ? b : a;
    } else if (a.v == 1) {
        *out = b;
    } else if (b.v == 1) {
        *out = a;
    } else if (a.v >= 0) {
        *out = a; /* b must be 1 or equal */
    } else if (b.v >= 0) {
        *out = b;
    } else {
        *out = (HgSymDim){-1, hg_sym_broadcast(a.sym, b.sym)};
    }
    return TRUE;
}

/* Compute kind of MatMul, Gemm and Einsum: every numeric type but bool; both integer kinds run on
 * the integer instance (wrapping products and sums do not depend on the sign). */
static HgKind
mm_kind(int dtype)
{
    HgKind k = hg_kind_of(dtype);
    return dtype == HG_DTYPE_BOOL ? HG_KIND_COUNT : k == HG_KIND_U64 ? HG_KIND_I64 : k;
}

static gboolean
same_types(HgEvalCtx *ctx, guint n, HgKind *kind)
{
    int dtype = ctx->inputs[0]->dtype;
    for (guint i = 1; i < n; i++) {
        const HgArray *x = hg_eval_input(ctx, i);
        if (x && x->dtype != dtype) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "input %u is %s, input 0 is %s", i,
                        hg_dtype_name(x->dtype) ? hg_dtype_name(x->dtype) : "?",
                        hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "?");
            return FALSE;
        }
    }
    *kind = mm_kind(dtype);
    if (*kind == HG_KIND_COUNT) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "element type %s is not supported",
                    hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "?");
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_infer_MatMul(HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0), *b = hg_shape_input(ctx, 1);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = a ? a->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (!a || !b || a->rank < 0 || b->rank < 0)
        return TRUE;
    if (a->rank == 0 || b->rank == 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "MatMul of a scalar");
        return FALSE;
    }
    /* 1-D operands are promoted to [1, K] and [K, 1] and the added axis dropped afterwards */
    HgSymDim k_a = a->dims[a->rank - 1], k_b = b->dims[b->rank == 1 ? 0 : b->rank - 2];
    if (k_a.v >= 0 && k_b.v >= 0 && k_a.v != k_b.v) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k_a.v, k_b.v);
        return FALSE;
    }
    int ba = MAX(a->rank - 2, 0), bb = MAX(b->rank - 2, 0), rb = MAX(ba, bb);
    HgSymDim dims[HG_MAX_RANK + 2];
    for (int i = 0; i < rb; i++) {
        HgSymDim da = i < rb - ba ? hg_dim_known(1) : a->dims[i - (rb - ba)];
        HgSymDim db = i < rb - bb ? hg_dim_known(1) : b->dims[i - (rb - bb)];
        if (!sym_broadcast(da, db, &dims[i])) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                        "batch dims do not broadcast: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, da.v,
                        db.v);
            return FALSE;
        }
    }
    int r = rb;
    if (a->rank > 1)
        dims[r++] = a->dims[a->rank - 2];
    if (b->rank > 1)
        dims[r++] = b->dims[b->rank - 1];
    if (r > HG_MAX_RANK)
        return TRUE;
    hg_vshape_set(y, dtype, r, dims);
    hg_fold(ctx, hg_eval_MatMul, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* Batches of MatMul up to this many multiply-adds each run one per thread: OpenBLAS would run them
 * on one thread anyway. */
#define MATMUL_SMALL_MACS ((gint64)1 << 24)

typedef struct {
    HgKind kind;
    const void *a, *b;
    void *c;
    const gint64 *offs; /* per batch: A's and B's element offsets */
    gint64 m, n, k;
} MatJob;

static void
matmul_task(gpointer data, gint64 i, int worker)
{
    const MatJob *j = data;
    const gsize c_off = (gsize)(i * j->m * j->n) * hg_kind_size(j->kind);
    HG_KIND_CALL(j->kind, matmul_run, j->a, j->b, (char *)j->c + c_off, 1, j->offs + 2 * i, j->m, j->n, j->k);
}

gboolean
hg_eval_MatMul(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, 2) || !same_types(ctx, 2, &kind))
        return FALSE;
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (a->rank == 0 || b->rank == 0) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "MatMul of a scalar");
        return FALSE;
    }
    gint64 m = a->rank > 1 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    gint64 kb = b->dims[b->rank > 1 ? b->rank - 2 : 0], n = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    if (k != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k, kb);
        return FALSE;
    }
    guint ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, rb;
    gint64 bdims[HG_MAX_RANK + 2], ast[HG_MAX_RANK], bst[HG_MAX_RANK];
    GError *err = NULL;
    if (!hg_broadcast_shape(ba, a->dims, bb, b->dims, &rb, bdims, &err)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "batch %s", err->message);
        g_error_free(err);
        return FALSE;
    }
    hg_broadcast_strides(ba, a->dims, rb, bdims, ast);
    hg_broadcast_strides(bb, b->dims, rb, bdims, bst);
    gint64 nbatch = hg_numel(rb, bdims);
    guint r = rb;
    gint64 ydims[HG_MAX_RANK + 2];
    memcpy(ydims, bdims, sizeof(gint64) * rb);
    if (a->rank > 1)
        ydims[r++] = m;
    if (b->rank > 1)
        ydims[r++] = n;
    if (!hg_blas_fits(m, n, k, m * nbatch)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, a->dtype, r, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) ab = hg_kbuf_load(a, kind);
    g_auto(HgKBuf) bbuf = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    if (y->numel) {
        /* element offsets of each batch's A and B matrices */
        g_autofree gint64 *offs = g_new0(gint64, 2 * nbatch + 2);
        gint64 idx[HG_MAX_RANK] = {0}, off[2] = {0, 0}, st[2 * HG_MAX_RANK];
        for (guint i = 0; i < rb; i++) {
            st[i] = ast[i] * m * k;
            st[HG_MAX_RANK + i] = bst[i] * k * n;
        }
        gboolean merge = TRUE; /* A's batches back to back, B shared: one tall GEMM */
        for (gint64 i = 0; i < nbatch; i++) {
            offs[2 * i] = off[0];
            offs[2 * i + 1] = off[1];
            merge &= off[0] == i * m * k && off[1] == 0;
            odo_step(idx, bdims, 0, rb, 2, st, HG_MAX_RANK, off);
        }
        int threads = hg_eval_threads(ctx, nbatch * m * n * k);
        if (merge) {
            hg_blas_threads(threads);
            HG_KIND_CALL(kind, matmul_run, ab.p, bbuf.p, yb.p, 1, offs, m * nbatch, n, k);
        } else if (threads > 1 && nbatch >= 2 * threads && m * n * k < MATMUL_SMALL_MACS) {
            /* many small products (attention heads): one per task, each GEMM single-threaded */
            MatJob job = {kind, ab.p, bbuf.p, yb.p, offs, m, n, k};
            hg_blas_threads(1);
            hg_par_for(threads, nbatch, matmul_task, &job);
        } else {
            hg_blas_threads(threads);
            HG_KIND_CALL(kind, matmul_run, ab.p, bbuf.p, yb.p, nbatch, offs, m, n, k);
        }
    }
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_MatMul(const HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!a || a->rank < 1 || n < 0 || a->dims[a->rank - 1].v < 0)
        return -1;
    return n * a->dims[a->rank - 1].v;
}

/* ================================================================ Gemm */

gboolean
hg_infer_Gemm(HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0), *b = hg_shape_input(ctx, 1), *c = hg_shape_input(ctx, 2);
    HgValueShape *y = hg_shape_output(ctx, 0);
    int dtype = a ? a->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if ((a && a->rank >= 0 && a->rank != 2) || (b && b->rank >= 0 && b->rank != 2)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "A and B must be matrices");
        return FALSE;
    }
    if (c && c->rank > 2) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "C has rank %d, at most 2", c->rank);
        return FALSE;
    }
    if (!a || !b || a->rank < 0 || b->rank < 0)
        return TRUE;
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    HgSymDim dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
    gint64 ka = a->dims[ta ? 0 : 1].v, kb = b->dims[tb ? 1 : 0].v;
    if (ka >= 0 && kb >= 0 && ka != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, ka, kb);
        return FALSE;
    }
    for (int i = 0; c && i < c->rank; i++) {
        gint64 cv = c->dims[i].v, yv = dims[2 - c->rank + i].v;
        if (cv >= 0 && yv >= 0 && cv != 1 && cv != yv) {
            hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node, "C does not broadcast to the output");
            return FALSE;
        }
    }
    hg_vshape_set(y, dtype, 2, dims);
    hg_fold(ctx, hg_eval_Gemm, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

gboolean
hg_eval_Gemm(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, 2) || !same_types(ctx, 3, &kind))
        return FALSE;
    const HgArray *a = ctx->inputs[0], *b = ctx->inputs[1], *c = hg_eval_input(ctx, 2);
    if (a->rank != 2 || b->rank != 2 || (c && c->rank > 2)) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "A and B must be matrices and C at most one");
        return FALSE;
    }
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    double alpha = hg_node_attr_float(ctx->node, "alpha", 1.0f);
    double beta = hg_node_attr_float(ctx->node, "beta", 1.0f);
    gint64 m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
    gint64 kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (k != kb) {
        hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                    "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, k, kb);
        return FALSE;
    }
    gint64 ydims[2] = {m, n}, cst[2] = {0, 0};
    if (c) {
        for (guint i = 0; i < c->rank; i++) {
            gint64 cv = c->dims[i], yv = ydims[2 - c->rank + i];
            if (cv != 1 && cv != yv) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "C does not broadcast to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", m, n);
                return FALSE;
            }
        }
        hg_broadcast_strides(c->rank, c->dims, 2, ydims, cst);
    }
    if (!hg_blas_fits(m, n, k, 1)) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "too large for 32-bit BLAS");
        return FALSE;
    }
    /* Integers with a fractional (or huge) alpha or beta compute in FP64, as the float scaling
     * asks; whole ones stay exact. */
    if (kind == HG_KIND_I64 && (alpha != floor(alpha) || beta != floor(beta) ||
                                  fabs(alpha) > 0x1p62 || fabs(beta) > 0x1p62))
        kind = HG_KIND_F64;
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, a->dtype, 2, ydims);
    if (!y)
        return FALSE;
    g_auto(HgKBuf) ab = hg_kbuf_load(a, kind);
    g_auto(HgKBuf) bbuf = hg_kbuf_load(b, kind);
    g_auto(HgKBuf) cb = hg_kbuf_load(c && beta != 0 ? c : NULL, kind);
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    if (!yb.p)
        return hg_eval_oom(ctx);
    hg_blas_threads(ctx->threads);
    HG_KIND_CALL(kind, gemm_run, ab.p, bbuf.p, cb.p, cst, yb.p, ta, tb, m, n, k, alpha, beta);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_Gemm(const HgShapeCtx *ctx)
{
    const HgValueShape *a = hg_shape_input(ctx, 0);
    gint64 n = hg_vshape_numel(hg_shape_output(ctx, 0));
    if (!a || a->rank != 2 || n < 0)
        return -1;
    gint64 k = a->dims[hg_node_attr_int(ctx->node, "transA", 0) ? 0 : 1].v;
    return k < 0 ? -1 : n * k;
}

/* ================================================================ Einsum */

/* A parsed equation for operands of known ranks. Label ids follow ASCII ('A'-'Z' 0-25, 'a'-'z'
 * 26-51, as NumPy orders the implicit output); the broadcast dims of "..." are labels 52 + j,
 * right-aligned across the operands. */
typedef struct {
    guint nops;
    guint rank[HG_MAX_RANK * 4];
    int axis_label[HG_MAX_RANK * 4][HG_MAX_RANK];
    guint out_rank;
    int out_label[EIN_MAX_LABELS];
} Einsum;

#define EIN_MAX_OPS (HG_MAX_RANK * 4)

static int
ein_letter(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + (c - 'a');
    return -1;
}

/* Parse one term (no spaces) into labels for an operand of the given rank (rank < 0: the output,
 * whose ellipsis takes ell_rank dims). */
static gboolean
ein_term(const char *t, gsize len, int rank, guint ell_rank, int *labels, guint *n_labels,
         guint max_labels, gboolean *has_ell)
{
    guint letters = 0;
    *has_ell = FALSE;
    for (gsize i = 0; i < len; i++) {
        if (t[i] == '.') {
            if (*has_ell || i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.')
                return FALSE;
            *has_ell = TRUE;
            i += 2;
        } else if (ein_letter(t[i]) >= 0) {
            letters++;
        } else {
            return FALSE;
        }
    }
    guint ne = rank < 0 ? ell_rank : 0;
    if (rank >= 0) {
        if ((guint)rank < letters || (!*has_ell && (guint)rank != letters))
            return FALSE;
        ne = (guint)rank - letters;
    }
    if (letters + ne > max_labels)
        return FALSE;
    guint n = 0;
    for (gsize i = 0; i < len; i++) {
        if (t[i] == '.') {
            /* right-aligned: this operand's ellipsis is the last ne of the ell_rank broadcast dims */
            for (guint j = 0; j < ne; j++)
                labels[n++] = 52 + (int)(ell_rank - ne + j);
            i += 2;
        } else {
            labels[n++] = ein_letter(t[i]);
        }
    }
    *n_labels = n;
    return TRUE;
}

static gboolean
ein_parse(const HgNode *node, guint nops, const int *ranks, Einsum *e, GError **error)
{
    g_autofree char *eq_raw = hg_attr_string(node, "equation", NULL);
    if (!eq_raw) {
        hg_op_error(error, HG_ERROR_INVALID, node, "the equation attribute is missing");
        return FALSE;
    }
    if (nops > EIN_MAX_OPS || nops == 0) {
        hg_op_error(error, HG_ERROR_UNSUPPORTED, node, "%u operands", nops);
        return FALSE;
    }
    /* drop whitespace */
    GString *eq = g_string_new(NULL);
    for (const char *p = eq_raw; *p; p++)
        if (!g_ascii_isspace(*p))
            g_string_append_c(eq, *p);
    g_autofree char *s = g_string_free(eq, FALSE);
    memset(e, 0, sizeof(*e));
    e->nops = nops;
    char *arrow = strstr(s, "->");
    gsize lhs_len = arrow ? (gsize)(arrow - s) : strlen(s);
    guint ell_rank = 0, count[EIN_MAX_LABELS] = {0};
    gboolean any_ell = FALSE;
    /* the ellipsis rank is the largest any operand gives it */
    const char *t = s;
    for (guint q = 0; q < nops; q++) {
        const char *end = memchr(t, ',', lhs_len - (gsize)(t - s));
        gsize len = end ? (gsize)(end - t) : lhs_len - (gsize)(t - s);
        if ((q + 1 < nops) != (end != NULL)) {
            hg_op_error(error, HG_ERROR_INVALID, node, "the equation '%s' has not %u operands", eq_raw,
                        nops);
            return FALSE;
        }
        guint letters = 0;
        gboolean ell = FALSE;
        for (gsize i = 0; i < len; i++) {
            if (ein_letter(t[i]) >= 0)
                letters++;
            else if (t[i] == '.')
                ell = TRUE;
        }
        if (ell && ranks[q] >= (int)letters)
            ell_rank = MAX(ell_rank, (guint)ranks[q] - letters);
        t = end ? end + 1 : t + len;
    }
    if (ell_rank > HG_MAX_RANK)
        goto bad;
    t = s;
    for (guint q = 0; q < nops; q++) {
        const char *end = memchr(t, ',', lhs_len - (gsize)(t - s));
        gsize len = end ? (gsize)(end - t) : lhs_len - (gsize)(t - s);
        gboolean ell;
        if (ranks[q] < 0 || ranks[q] > HG_MAX_RANK ||
            !ein_term(t, len, ranks[q], ell_rank, e->axis_label[q], &e->rank[q], HG_MAX_RANK, &ell))
            goto bad;
        any_ell |= ell;
        for (guint i = 0; i < e->rank[q]; i++)
            count[e->axis_label[q][i]]++;
        t = end ? end + 1 : t + len;
    }
    if (arrow) {
        const char *o = arrow + 2;
        gboolean ell;
        if (!ein_term(o, strlen(o), -1, ell_rank, e->out_label, &e->out_rank, EIN_MAX_LABELS, &ell))
            goto bad;
        gboolean seen[EIN_MAX_LABELS] = {FALSE};
        for (guint i = 0; i < e->out_rank; i++) {
            int l = e->out_label[i];
            if (seen[l] || !count[l]) {
                hg_op_error(error, HG_ERROR_INVALID, node,
                            "in the equation '%s', output label %u is repeated or in no input", eq_raw, i);
                return FALSE;
            }
            seen[l] = TRUE;
        }
    } else {
        /* implicit output: the broadcast dims, then the labels seen once, in ASCII order */
        for (guint j = 0; any_ell && j < ell_rank; j++)
            e->out_label[e->out_rank++] = 52 + (int)j;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1)
                e->out_label[e->out_rank++] = l;
    }
    return TRUE;
bad:
    hg_op_error(error, HG_ERROR_INVALID, node, "the equation '%s' does not fit the inputs", eq_raw);
    return FALSE;
}

/* Dims of each label (known value, or unknown) from the operands' dims, broadcasting 1s. */
static gboolean
ein_label_dims(const HgNode *node, const Einsum *e, const HgSymDim *const *opdims, HgSymDim *ldims,
               GError **error)
{
    gboolean used[EIN_MAX_LABELS] = {FALSE};
    for (int l = 0; l < EIN_MAX_LABELS; l++)
        ldims[l] = hg_dim_known(1);
    for (guint q = 0; q < e->nops; q++)
        for (guint i = 0; i < e->rank[q]; i++) {
            int l = e->axis_label[q][i];
            HgSymDim d = opdims[q][i];
            if (!used[l]) {
                ldims[l] = d;
                used[l] = TRUE;
            } else if (!sym_broadcast(ldims[l], d, &ldims[l])) {
                hg_op_error(error, HG_ERROR_INVALID, node, "operand %u axis %u has %" G_GINT64_FORMAT
                            " where the label has another length", q, i, d.v);
                return FALSE;
            }
        }
    return TRUE;
}

/* The equation parsed for operands of these shapes, and each label's dim (symbolic or unknown where
 * an operand's is); FALSE when an operand's rank is unknown or the equation does not fit them. */
static gboolean
ein_of_shapes(const HgNode *node, guint n, const HgValueShape *const *shapes, Einsum *e, HgSymDim *ldims)
{
    if (n == 0 || n > EIN_MAX_OPS)
        return FALSE;
    int ranks[EIN_MAX_OPS];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < n; q++) {
        if (!shapes[q] || shapes[q]->rank < 0)
            return FALSE;
        ranks[q] = shapes[q]->rank;
        opdims[q] = shapes[q]->dims;
    }
    return ein_parse(node, n, ranks, e, NULL) && ein_label_dims(node, e, opdims, ldims, NULL);
}

gboolean
hg_infer_Einsum(HgShapeCtx *ctx)
{
    HgValueShape *y = hg_shape_output(ctx, 0);
    const HgValueShape *x0 = hg_shape_input(ctx, 0);
    int dtype = x0 ? x0->dtype : HG_DTYPE_UNDEFINED;
    if (y)
        y->dtype = dtype;
    if (ctx->n_inputs == 0 || ctx->n_inputs > EIN_MAX_OPS)
        return TRUE;
    int ranks[EIN_MAX_OPS];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < ctx->n_inputs; q++) {
        const HgValueShape *s = hg_shape_input(ctx, q);
        if (!s || s->rank < 0)
            return TRUE;
        ranks[q] = s->rank;
        opdims[q] = s->dims;
    }
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_parse(ctx->node, ctx->n_inputs, ranks, &e, ctx->error) ||
        !ein_label_dims(ctx->node, &e, opdims, ldims, ctx->error))
        return FALSE;
    if (e.out_rank > HG_MAX_RANK)
        return TRUE;
    HgSymDim dims[HG_MAX_RANK];
    for (guint i = 0; i < e.out_rank; i++)
        dims[i] = ldims[e.out_label[i]];
    hg_vshape_set(y, dtype, (int)e.out_rank, dims);
    hg_fold(ctx, hg_eval_Einsum, HG_FOLD_SMALL_INPUTS);
    return TRUE;
}

/* Einsum as a batched GEMM when it is one: two operands where every label is batch (both operands
 * and the output), M (first and output), N (second and output) or K (both operands, summed). The
 * operands are packed into [batch, M, K] and [batch, K, N] (repeated labels and broadcasts are just
 * strides), multiplied, and the result scattered into the output's order. Returns FALSE when the
 * equation is not of that form. */
static gboolean
ein_as_gemm(HgKind kind, const EinPlan *p, const void *a, const void *b, void *out, gboolean *oom_out)
{
    int cls[EIN_MAX_LABELS]; /* 0 batch, 1 M, 2 N, 3 K */
    guint nl[4] = {0};
    for (guint l = 0; l < p->nlab; l++) {
        /* a label an operand broadcasts along (stride 0) is one it does not vary along */
        gboolean ia = p->strides[l] != 0, ib = p->strides[EIN_MAX_LABELS + l] != 0, io = l < p->nout;
        if (p->dims[l] == 1)
            cls[l] = io ? 0 : 3; /* a length-1 label fits any class */
        else if (ia && ib)
            cls[l] = io ? 0 : 3;
        else if (ia && io)
            cls[l] = 1;
        else if (ib && io)
            cls[l] = 2;
        else
            return FALSE; /* summed in one operand only, or broadcast in both */
        nl[cls[l]]++;
    }
    /* label lists per class and their products */
    gint64 size[4] = {1, 1, 1, 1};
    guint order[4][EIN_MAX_LABELS];
    guint fill[4] = {0};
    for (guint l = 0; l < p->nlab; l++) {
        order[cls[l]][fill[cls[l]]++] = l;
        size[cls[l]] *= p->dims[l];
    }
    if (!hg_blas_fits(size[1], size[2], size[3], 1))
        return FALSE;
    /* packed layouts: A [batch, M, K], B [batch, K, N], C [batch, M, N] */
    static const int a_cls[3] = {0, 1, 3}, b_cls[3] = {0, 3, 2}, c_cls[3] = {0, 1, 2};
    const int *layouts[3] = {a_cls, b_cls, c_cls};
    gint64 ldims[3][EIN_MAX_LABELS], src_st[3][EIN_MAX_LABELS], dst_st[3][EIN_MAX_LABELS];
    guint lcount[3] = {0};
    for (int t = 0; t < 3; t++) {
        for (int c = 0; c < 3; c++)
            for (guint i = 0; i < nl[layouts[t][c]]; i++) {
                guint l = order[layouts[t][c]][i];
                ldims[t][lcount[t]] = p->dims[l];
                /* operand strides for A and B; the output's (contiguous, output order) for C */
                src_st[t][lcount[t]] = t < 2 ? p->strides[t * EIN_MAX_LABELS + l] : 0;
                if (t == 2) {
                    gint64 st = 1;
                    for (guint o = p->nout; o-- > l + 1;)
                        st *= p->dims[o];
                    src_st[t][lcount[t]] = st;
                }
                lcount[t]++;
            }
        gint64 st = 1;
        for (guint i = lcount[t]; i-- > 0;) {
            dst_st[t][i] = st;
            st *= ldims[t][i];
        }
    }
    gsize es = hg_kind_size(kind);
    g_autofree void *pa = g_try_malloc((gsize)(size[0] * size[1] * size[3]) * es + 8);
    g_autofree void *pb = g_try_malloc((gsize)(size[0] * size[3] * size[2]) * es + 8);
    g_autofree void *pc = g_try_malloc((gsize)(size[0] * size[1] * size[2]) * es + 8);
    if (!pa || !pb || !pc) {
        *oom_out = TRUE;
        return TRUE;
    }
    HG_KIND_CALL(kind, strided_copy, a, pa, lcount[0], ldims[0], src_st[0], dst_st[0]);
    HG_KIND_CALL(kind, strided_copy, b, pb, lcount[1], ldims[1], src_st[1], dst_st[1]);
    g_autofree gint64 *offs = g_new(gint64, 2 * size[0] + 2);
    for (gint64 i = 0; i < size[0]; i++) {
        offs[2 * i] = i * size[1] * size[3];
        offs[2 * i + 1] = i * size[3] * size[2];
    }
    HG_KIND_CALL(kind, matmul_run, pa, pb, pc, size[0], offs, size[1], size[2], size[3]);
    /* scatter: C is contiguous in its own order, the output strided */
    HG_KIND_CALL(kind, strided_copy, pc, out, lcount[2], ldims[2], dst_st[2], src_st[2]);
    return TRUE;
}

gboolean
hg_eval_Einsum(HgEvalCtx *ctx)
{
    HgKind kind;
    if (!hg_eval_need(ctx, ctx->n_inputs))
        return FALSE;
    guint nops = ctx->n_inputs;
    if (nops == 0 || nops > EIN_MAX_OPS) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "%u operands", nops);
        return FALSE;
    }
    if (!same_types(ctx, nops, &kind))
        return FALSE;
    int ranks[EIN_MAX_OPS];
    HgSymDim sd[EIN_MAX_OPS][HG_MAX_RANK];
    const HgSymDim *opdims[EIN_MAX_OPS];
    for (guint q = 0; q < nops; q++) {
        ranks[q] = (int)ctx->inputs[q]->rank;
        for (guint i = 0; i < ctx->inputs[q]->rank; i++)
            sd[q][i] = hg_dim_known(ctx->inputs[q]->dims[i]);
        opdims[q] = sd[q];
    }
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_parse(ctx->node, nops, ranks, &e, ctx->error) ||
        !ein_label_dims(ctx->node, &e, opdims, ldims, ctx->error))
        return FALSE;
    if (e.out_rank > HG_MAX_RANK) {
        hg_op_error(ctx->error, HG_ERROR_UNSUPPORTED, ctx->node, "output rank %u", e.out_rank);
        return FALSE;
    }
    /* the plan's label order: the output's, then every other label used */
    int lab_of[EIN_MAX_LABELS];
    gboolean in_plan[EIN_MAX_LABELS] = {FALSE};
    EinPlan p = {nops, 0, e.out_rank, {0}, NULL};
    gint64 ydims[HG_MAX_RANK];
    for (guint i = 0; i < e.out_rank; i++) {
        lab_of[p.nlab] = e.out_label[i];
        in_plan[e.out_label[i]] = TRUE;
        ydims[i] = ldims[e.out_label[i]].v;
        p.dims[p.nlab++] = ydims[i];
    }
    for (guint q = 0; q < nops; q++)
        for (guint i = 0; i < e.rank[q]; i++) {
            int l = e.axis_label[q][i];
            if (!in_plan[l]) {
                in_plan[l] = TRUE;
                lab_of[p.nlab] = l;
                p.dims[p.nlab++] = ldims[l].v;
            }
        }
    /* each operand's stride per plan label: repeated labels (diagonals) add, broadcasts are 0 */
    g_autofree gint64 *strides = g_new0(gint64, (gsize)nops * EIN_MAX_LABELS);
    p.strides = strides;
    for (guint q = 0; q < nops; q++) {
        const HgArray *x = ctx->inputs[q];
        gint64 st[HG_MAX_RANK];
        hg_strides(x->rank, x->dims, st);
        for (guint i = 0; i < x->rank; i++) {
            guint pl = 0;
            while (lab_of[pl] != e.axis_label[q][i])
                pl++;
            if (x->dims[i] != p.dims[pl] && x->dims[i] != 1) {
                hg_op_error(ctx->error, HG_ERROR_INVALID, ctx->node,
                            "operand %u axis %u: a diagonal over unequal lengths", q, i);
                return FALSE;
            }
            if (x->dims[i] != 1)
                strides[q * EIN_MAX_LABELS + pl] += st[i];
        }
    }
    g_autoptr(HgArray) y = hg_eval_new_output(ctx, ctx->inputs[0]->dtype, e.out_rank, ydims);
    if (!y)
        return FALSE;
    g_autofree HgKBuf *bufs = g_new0(HgKBuf, nops);
    g_autofree const void **datas = g_new0(const void *, nops);
    for (guint q = 0; q < nops; q++) {
        bufs[q] = hg_kbuf_load(ctx->inputs[q], kind);
        datas[q] = bufs[q].p;
    }
    g_auto(HgKBuf) yb = hg_kbuf_out(y, kind);
    gboolean failed = !yb.p, done = FALSE;
    gint64 total = hg_numel(p.nlab, p.dims);
    if (!failed && y->numel && total > 0) {
        hg_blas_threads(ctx->threads);
        if (nops == 2)
            done = ein_as_gemm(kind, &p, datas[0], datas[1], yb.p, &failed);
        if (!done)
            HG_KIND_CALL(kind, einsum_naive, datas, &p, yb.p);
    }
    for (guint q = 0; q < nops; q++)
        hg_kbuf_clear(&bufs[q]);
    if (failed)
        return hg_eval_oom(ctx);
    hg_kbuf_store(y, &yb, kind);
    ctx->outputs[0] = g_steal_pointer(&y);
    return TRUE;
}

gint64
hg_cost_Einsum(const HgShapeCtx *ctx)
{
    for (guint q = 0; q < ctx->n_inputs; q++)
        if (!hg_vshape_known(hg_shape_input(ctx, q)))
            return -1;
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (!ein_of_shapes(ctx->node, ctx->n_inputs, ctx->inputs, &e, ldims))
        return -1;
    gboolean used[EIN_MAX_LABELS] = {FALSE};
    gint64 n = 1;
    for (guint q = 0; q < e.nops; q++)
        for (guint i = 0; i < e.rank[q]; i++)
            if (!used[e.axis_label[q][i]]) {
                used[e.axis_label[q][i]] = TRUE;
                n *= ldims[e.axis_label[q][i]].v;
            }
    return n;
}

/* ---------------------------------------------------------------- interval rules */

/* out = alpha * (sum of k products of a and b) + cterm; a linear bound through the constant side
 * when one is constant (cv, its vectors by id; x the range of the other side). */
static void
range_matmul_core(HgRangeCtx *ctx, const HgRange *a, const HgRange *b, const HgRange *x,
                  const HgArray *cv, HgVecId id,
                  const gint64 *p, gint64 nvec, gint64 k, double alpha, double clo, double chi,
                  gboolean nan)
{
    double lo, hi, mag;
    if (cv && id) {
        g_autofree double *sp = g_new(double, nvec + 1);
        g_autofree double *sn = g_new(double, nvec + 1);
        if (!hg_weight_sums(cv, nvec, id, p, sp, sn))
            return;
        hg_weight_bound(nvec, sp, sn, x->lo, x->hi, NULL, 0, 0, &lo, &hi, &mag);
    } else {
        double plo, phi;
        hg_range_prod(a->lo, a->hi, b->lo, b->hi, &plo, &phi);
        lo = hg_bound_mul((double)k, plo);
        hi = hg_bound_mul((double)k, phi);
        mag = hg_bound_mul((double)k, hg_mag(plo, phi));
    }
    if (k == 0)
        lo = hi = mag = 0;
    double l2, h2;
    hg_range_prod(lo, hi, alpha, alpha, &l2, &h2);
    mag = hg_bound_mul(mag, fabs(alpha)) + hg_mag(clo, chi);
    hg_range_set_linear(ctx, hg_bound_add(l2, clo, -INFINITY), hg_bound_add(h2, chi, INFINITY), mag, k, nan);
}

static void range_matmul(HgRangeCtx *ctx, const HgRange *a, const HgRange *b, const HgValueShape *as,
                         const HgValueShape *bs, gint64 k);
static void range_meet(HgRange *r, const HgRange *b);
static void range_norm(HgRangeCtx *ctx, const HgRange *a, const HgValueShape *ws, gboolean tb, double alpha,
                       const HgArray *c, double clo, double chi);

/* Where the contracted length is symbolic, the FP32 rounding slack of the convex bound below needs a
 * length: its --dim-max, else HG_ASSUMED_LEN (2^20, a million positions: one attention matrix that
 * long would hold 2^40 scores), reported (hg_range_len_bound). */

/* Whether two dims are known to be the same length: both known and equal, or the same symbol. */
static gboolean
same_length(HgSymDim a, HgSymDim b)
{
    return a.v >= 0 ? a.v == b.v : a.sym && a.sym == b.sym;
}

/* Whether every element of v is 0, by its range (a zero constant's is exactly [0, 0]). */
static gboolean
all_zero(const HgRangeCtx *ctx, const HgValue *v)
{
    const HgRange *r = v && ctx->range_of ? ctx->range_of(ctx->range_data, v) : NULL;
    return r && !r->nan && r->lo == 0 && r->hi == 0;
}

/* Whether v is a Softmax over the axis that becomes axis `axis` of v (of rank `rank`), through
 * Cast, Dropout (inference), Transpose and Reshapes that keep that axis whole, and Where(c, 0, P) or
 * Where(c, P, 0) (0 by its range) with P of v's rank and length along the axis (the exporters'
 * attention zeroes the rows a mask empties: Where(IsNaN(P), 0, P)). Such a row is nonnegative and
 * sums to at most one: its products with V lie where range_convex says, between 0 and V's extremes. */
static gboolean
is_softmax_over(const HgRangeCtx *ctx, const HgValue *v, int axis, int rank)
{
    for (int depth = 0; v && v->producer && depth < 16; depth++) {
        const HgNode *p = v->producer;
        if (!strcmp(p->op_type, "Where") && p->n_inputs == 3 && p->inputs[1] && p->inputs[2] &&
            (!p->domain || !*p->domain || !strcmp(p->domain, "ai.onnx"))) {
            int keep = all_zero(ctx, p->inputs[1]) ? 2 : all_zero(ctx, p->inputs[2]) ? 1 : 0;
            const HgValueShape *os = ctx->shape_of(ctx->shape_data, v);
            const HgValueShape *ks = keep ? ctx->shape_of(ctx->shape_data, p->inputs[keep]) : NULL;
            if (!ks || !os || ks->rank != rank || os->rank != rank)
                return FALSE;
            /* P is not broadcast along the axis (a row of ones would sum past one): the same length,
             * or a condition computed from P itself (IsNaN(P): the output has P's shape, the zero a
             * scalar) */
            const HgValue *cv = p->inputs[0];
            const HgNode *cn = cv ? cv->producer : NULL;
            const HgValueShape *zs = ctx->shape_of(ctx->shape_data, p->inputs[3 - keep]);
            gboolean same = same_length(ks->dims[axis], os->dims[axis]);
            gboolean own = cn && !strcmp(cn->op_type, "IsNaN") && cn->n_inputs == 1 &&
                           cn->inputs[0] == p->inputs[keep] && zs && hg_vshape_known(zs) &&
                           hg_vshape_numel(zs) == 1;
            if (!same && !own)
                return FALSE;
            v = p->inputs[keep];
            continue;
        }
        const HgValueShape *ps = p->n_inputs && p->inputs[0] ? ctx->shape_of(ctx->shape_data, p->inputs[0]) : NULL;
        if (p->domain && *p->domain && strcmp(p->domain, "ai.onnx"))
            return FALSE;
        if (!strcmp(p->op_type, "Softmax")) {
            gint64 ax;
            gboolean old = ctx->opset < 13;
            return ps && ps->rank == rank &&
                   hg_norm_axis(hg_node_attr_int(p, "axis", old ? 1 : -1), (guint)rank, &ax, NULL, NULL) &&
                   ax == axis && (!old || axis == rank - 1);
        }
        if (!strcmp(p->op_type, "Cast") || (!strcmp(p->op_type, "Dropout") && p->n_inputs < 3)) {
            /* Cast keeps the values up to rounding (the caller's slack); Dropout without
             * training_mode is the identity */
        } else if (!strcmp(p->op_type, "Transpose")) {
            guint np = 0;
            const gint64 *perm = hg_attr_ints(p, "perm", &np);
            if (!ps || ps->rank != rank)
                return FALSE;
            axis = perm ? (np == (guint)rank ? (int)perm[axis] : -1) : rank - 1 - axis;
            if (axis < 0 || axis >= rank)
                return FALSE;
        } else if (!strcmp(p->op_type, "Reshape")) {
            /* the last axis, the same length (known, or the same symbolic dim) before and after */
            const HgValueShape *os = ctx->shape_of(ctx->shape_data, v);
            if (!ps || !os || ps->rank < 1 || os->rank != rank || axis != rank - 1)
                return FALSE;
            if (!same_length(ps->dims[ps->rank - 1], os->dims[rank - 1]))
                return FALSE;
            rank = ps->rank;
            axis = rank - 1;
        } else {
            return FALSE;
        }
        if (!p->n_inputs)
            return FALSE;
        v = p->inputs[0];
    }
    return FALSE;
}

/* MatMul(P, V) where each row of P is a softmax over the contracted axis: every output is a convex
 * combination of V's rows, inside V's range whatever the length n. Rounding: the computed row of P
 * sums to at most s = (1 + u) / (1 - gamma_n) (the FP32 sum of its exps is low by at most gamma_n =
 * n u / (1 - n u)), times 1 + 2^-7 plus n 2^-25 should P be stored in a 16-bit float; the product's
 * own accumulation is hg_range_set_linear's. n symbolic: its --dim-max, else HG_ASSUMED_LEN. */
static gboolean
range_convex(HgRangeCtx *ctx, const HgRange *p, const HgRange *v, gint64 n)
{
    const HgValueShape *as = ctx->shapes[0];
    if (!ctx->shape_of || !ctx->node || !ctx->node->inputs[0] || !hg_range_bounded(v) || as->rank < 2 ||
        !is_softmax_over(ctx, ctx->node->inputs[0], as->rank - 1, as->rank))
        return FALSE;
    gint64 len = n >= 0 ? n : hg_range_len_bound(ctx, as, as->rank - 1, as->rank);
    double nu = (double)len * 0x1p-24, gamma = nu / (1 - nu);
    /* a 16-bit P also rounds each tiny entry up by at most FP16's half subnormal step */
    double s = (1 + 0x1p-24) / (1 - gamma) * (1 + 0x1p-7) + (double)len * 0x1p-25;
    double lo = v->lo >= 0 ? 0 : v->lo * s, hi = v->hi <= 0 ? 0 : v->hi * s;
    hg_range_set_linear(ctx, lo, hi, s * hg_mag(v->lo, v->hi), len, p->nan || v->nan);
    return TRUE;
}

/* Both r and b bound the same values: keep what both allow. */
static void
range_meet(HgRange *r, const HgRange *b)
{
    r->lo = MAX(r->lo, b->lo);
    r->hi = MIN(r->hi, b->hi);
    r->tiny = MAX(r->tiny, b->tiny);
    r->nan = r->nan && b->nan;
}

/* v's initializer, looking through Identity nodes (the TorchScript exporter shares a parameter that
 * two modules hold, and a layer norm's weight of ones, through an Identity of one initializer), or
 * NULL. */
static const HgTensor *
init_of(const HgValue *v)
{
    for (int depth = 0; v && depth < 8; depth++) {
        if (v->init)
            return v->is_input ? NULL : v->init;
        const HgNode *p = v->producer;
        if (!p || strcmp(p->op_type, "Identity") || (p->domain && *p->domain && strcmp(p->domain, "ai.onnx")) ||
            p->n_inputs != 1)
            return NULL;
        v = p->inputs[0];
    }
    return NULL;
}

/* The L2 norm of a constant vector (FALSE when not finite), or of one of n values in [lo, hi]. */
static double
l2_of(const HgValue *v, const HgRange *r, gint64 n)
{
    const HgTensor *t = init_of(v);
    g_autoptr(HgArray) a = t ? hg_array_view_tensor(t, NULL) : NULL;
    if (!a)
        return n < 0 ? INFINITY : sqrt((double)n) * hg_mag(r->lo, r->hi);
    double ss = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double x = hg_array_get_f64(a, i);
        ss += x * x;
    }
    return isfinite(ss) ? sqrt(ss) * (1 + 0x1p-40) : INFINITY;
}

/* A bound on the L2 norm of every row (along the last axis) of v, when v is a LayerNormalization's
 * or an RMSNormalization's output (through Cast, Identity, Dropout and Reshapes that keep the last
 * axis whole); INFINITY otherwise. Each normalized group z has sum z^2 <= n (its squares over n
 * times their mean, plus eps), so by Cauchy-Schwarz a group of gamma z + beta has norm at most
 * sqrt(n) max|gamma| + ||beta||, and a row, part of one group, no more. Slack: the kernel's sums
 * (n 2^-23 relative, as norm_zbound allows for z) and each 16-bit store (2^-10 and a subnormal step
 * per element). */
static double
row_l2_bound(const HgRangeCtx *ctx, const HgValue *v)
{
    double stores = 1, steps = 0, scale = 1;
    for (int depth = 0; v && v->producer && depth < 16; depth++) {
        const HgNode *p = v->producer;
        if ((p->domain && *p->domain && strcmp(p->domain, "ai.onnx")) || !p->n_inputs || !p->inputs[0])
            return INFINITY;
        const HgValueShape *ps = ctx->shape_of(ctx->shape_data, p->inputs[0]);
        const HgValueShape *os = ctx->shape_of(ctx->shape_data, v);
        if (os->dtype != HG_DTYPE_FLOAT && os->dtype != HG_DTYPE_DOUBLE) {
            stores *= 1 + 0x1p-10;
            steps++; /* and a subnormal step per element, below */
        }
        /* decomposed norms (RMSNorm, LayerNorm's quotient, F.normalize) */
        double nb = hg_norm_row_l2(ctx, v);
        if (isfinite(nb) && os->rank >= 1 && os->dims[os->rank - 1].v >= 1) {
            double len = (double)os->dims[os->rank - 1].v;
            return scale * (nb * (1 + 0x1p-22) * stores + (steps + 1) * sqrt(len) * 0x1p-24);
        }
        /* times a constant scale (gamma of a decomposed RMSNorm): at most its largest magnitude */
        if (!strcmp(p->op_type, "Mul") && p->n_inputs == 2 && p->inputs[1]) {
            int ci = init_of(p->inputs[0]) ? 0 : init_of(p->inputs[1]) ? 1 : -1;
            const HgRange *cr = ci >= 0 ? ctx->range_of(ctx->range_data, p->inputs[ci]) : NULL;
            const HgValueShape *xs = ci >= 0 ? ctx->shape_of(ctx->shape_data, p->inputs[1 - ci]) : NULL;
            if (!cr || !hg_range_bounded(cr) || cr->nan || !xs || xs->rank != os->rank || os->rank < 1 ||
                xs->dims[xs->rank - 1].v < 0 || xs->dims[xs->rank - 1].v != os->dims[os->rank - 1].v)
                return INFINITY;
            scale *= hg_mag(cr->lo, cr->hi) * (1 + 0x1p-23);
            v = p->inputs[1 - ci];
            continue;
        }
        gboolean layer = !strcmp(p->op_type, "LayerNormalization");
        if (layer || !strcmp(p->op_type, "RMSNormalization")) {
            gint64 axis, n = 1;
            if (ps->rank < 1 || v != p->outputs[0] || os->rank != ps->rank ||
                !hg_norm_axis(hg_node_attr_int(p, "axis", -1), (guint)ps->rank, &axis, NULL, NULL))
                return INFINITY;
            /* Y's dims: X's, with the scale's where X's are unknown (hg_infer_LayerNormalization) */
            for (int i = (int)axis; i < os->rank; i++)
                n = n < 0 || os->dims[i].v < 0 ? -1 : n * os->dims[i].v;
            const HgValue *g = p->n_inputs > 1 ? p->inputs[1] : NULL, *b = layer && p->n_inputs > 2 ? p->inputs[2] : NULL;
            if (n < 0 || !g)
                return INFINITY;
            const HgRange *gr = ctx->range_of(ctx->range_data, g);
            if (!hg_range_bounded(gr))
                return INFINITY;
            double bn = 0;
            if (b) {
                const HgRange *br = ctx->range_of(ctx->range_data, b);
                bn = hg_range_bounded(br) ? l2_of(b, br, hg_vshape_numel(ctx->shape_of(ctx->shape_data, b))) : INFINITY;
            }
            double z = sqrt((double)n) * (1 + 0x1p-16 + (double)n * 0x1p-23);
            return scale * ((z * hg_mag(gr->lo, gr->hi) + bn) * (1 + 0x1p-22) * stores +
                            (steps + 1) * sqrt((double)n) * 0x1p-24);
        }
        if (!strcmp(p->op_type, "Reshape")) {
            if (ps->rank < 1 || os->rank < 1 || ps->dims[ps->rank - 1].v < 0 ||
                ps->dims[ps->rank - 1].v != os->dims[os->rank - 1].v)
                return INFINITY;
        } else if (strcmp(p->op_type, "Cast") && strcmp(p->op_type, "Identity") &&
                   !(!strcmp(p->op_type, "Dropout") && p->n_inputs < 3)) {
            return INFINITY;
        }
        v = p->inputs[0];
    }
    return INFINITY;
}


/* A bound on the L2 norm of every vector along axis `axis` of v (of rank `rank`) when v is
 * x W (+ c) with W a constant matrix and x's rows bounded by row_l2_bound, through Cast, Identity,
 * Transpose, and Reshapes that split each row of x W into blocks (attention heads: [.., D] into
 * [.., H, D / H]): ||x W_h|| <= ||W_h||_F ||x|| for each block h of W's columns, plus the block's
 * ||c_h||; the largest over the blocks. INFINITY otherwise. Slack: the product's FP32 sums (K + 2)
 * 2^-23 relative, the Add's rounding, and each 16-bit store. */
static double
block_l2_bound(const HgRangeCtx *ctx, const HgValue *v, int axis, int rank)
{
    gint64 blk = -1;
    double stores = 1, steps = 0;
    const HgValue *bias = NULL;
    for (int depth = 0; v && v->producer && depth < 16; depth++) {
        const HgNode *p = v->producer;
        if ((p->domain && *p->domain && strcmp(p->domain, "ai.onnx")) || !p->n_inputs || !p->inputs[0])
            return INFINITY;
        const HgValueShape *os = ctx->shape_of(ctx->shape_data, v);
        const HgValueShape *ps = ctx->shape_of(ctx->shape_data, p->inputs[0]);
        if (os->rank != rank)
            return INFINITY;
        /* rows normalized along this very axis (F.normalize's cosine attention: Q and K of norm 1) */
        if (axis == rank - 1 && blk < 0 && !bias) {
            double nb = hg_norm_row_l2(ctx, v);
            if (isfinite(nb) && os->dims[rank - 1].v >= 1)
                return nb * stores + steps * sqrt((double)os->dims[rank - 1].v) * 0x1p-24;
        }
        if (os->dtype != HG_DTYPE_FLOAT && os->dtype != HG_DTYPE_DOUBLE) {
            stores *= 1 + 0x1p-10;
            steps++;
        }
        if (!strcmp(p->op_type, "Transpose")) {
            guint np = 0;
            const gint64 *perm = hg_attr_ints(p, "perm", &np);
            axis = perm ? (np == (guint)rank ? (int)perm[axis] : -1) : rank - 1 - axis;
            if (axis < 0 || axis >= rank)
                return INFINITY;
        } else if (!strcmp(p->op_type, "Reshape")) {
            /* rows of d elements inside rows of D, d | D: each a block of one row */
            gint64 d = os->rank >= 1 ? os->dims[os->rank - 1].v : -1, dd = ps->rank >= 1 ? ps->dims[ps->rank - 1].v : -1;
            if (axis != rank - 1 || d <= 0 || dd <= 0 || dd % d || (blk > 0 && d % blk))
                return INFINITY;
            if (blk < 0)
                blk = d;
            rank = ps->rank;
            axis = rank - 1;
        } else if (!strcmp(p->op_type, "Add") && !bias && p->n_inputs == 2 && axis == rank - 1) {
            /* x W + c, c a constant of the row's length (or broadcast to it) */
            int ci = init_of(p->inputs[1]) ? 1 : init_of(p->inputs[0]) ? 0 : -1;
            if (ci < 0 || !p->inputs[1 - ci])
                return INFINITY;
            bias = p->inputs[ci];
            v = p->inputs[1 - ci];
            continue;
        } else if (!strcmp(p->op_type, "MatMul") && axis == rank - 1 && p->n_inputs == 2 && init_of(p->inputs[1])) {
            g_autoptr(HgArray) w = hg_array_view_tensor(init_of(p->inputs[1]), NULL);
            g_autoptr(HgArray) c = bias ? hg_array_view_tensor(init_of(bias), NULL) : NULL;
            double R = row_l2_bound(ctx, p->inputs[0]);
            if (!w || w->rank != 2 || !isfinite(R) || (bias && !c))
                return INFINITY;
            gint64 kk = w->dims[0], nn = w->dims[1];
            if (blk < 0)
                blk = nn;
            if (nn % blk || (c && c->numel != nn && c->numel != 1))
                return INFINITY;
            double best = 0;
            /* ||W_h||_F^2 is the sum of its columns' squares (the analysis's own, kept with the file) */
            g_autofree double *sq = g_new(double, nn);
            hg_weight_col_squares(w, kk, nn, FALSE, sq);
            for (gint64 h = 0; h < nn / blk; h++) {
                double ws = 0, cs = 0;
                for (gint64 j = h * blk; j < (h + 1) * blk; j++)
                    ws += sq[j];
                for (gint64 j = h * blk; c && j < (h + 1) * blk; j++) {
                    double x = hg_array_get_f64(c, c->numel == 1 ? 0 : j);
                    cs += x * x;
                }
                double b = (sqrt(ws) * R * (1 + (double)(kk + 2) * 0x1p-23) + sqrt(cs)) * (1 + 0x1p-22);
                best = MAX(best, b);
            }
            hg_array_release(w);
            return isfinite(best) ? best * stores + steps * sqrt((double)blk) * 0x1p-24 : INFINITY;
        } else if (strcmp(p->op_type, "Cast") && strcmp(p->op_type, "Identity")) {
            return INFINITY;
        }
        v = p->inputs[0];
    }
    return INFINITY;
}

/* x W (+ C) with W a constant matrix and every row of x of L2 norm at most R (row_l2_bound): output
 * column j is alpha <w_j, x> + beta c_j, at most |alpha| ||w_j|| R from beta c_j (Cauchy-Schwarz).
 * Narrows what ctx->outputs[0] already holds. tb: W is [N, K] (Gemm's transB); c: Gemm's C as
 * constants per column (NULL: [clo, chi] for every column). */
static void
range_norm(HgRangeCtx *ctx, const HgRange *a, const HgValueShape *ws, gboolean tb, double alpha,
           const HgArray *c, double clo, double chi)
{
    const HgArray *w = ctx->values[1];
    if (!ctx->shape_of || !ctx->range_of || !ctx->node || !ctx->node->inputs[0] || !w || !hg_vshape_known(ws) ||
        ws->rank != 2 || w->numel != hg_vshape_numel(ws) || !isfinite(alpha))
        return;
    double R = row_l2_bound(ctx, ctx->node->inputs[0]);
    if (!isfinite(R))
        return;
    gint64 kk = ws->dims[tb ? 1 : 0].v, nn = ws->dims[tb ? 0 : 1].v;
    if (c && c->numel != nn && c->numel != 1)
        return;
    double lo = INFINITY, hi = -INFINITY, mag = 0;
    g_autofree double *sq = g_new(double, nn);
    hg_weight_col_squares(w, kk, nn, tb, sq);
    hg_array_release(w);
    for (gint64 j = 0; j < nn; j++) {
        double half = fabs(alpha) * sqrt(sq[j]) * (1 + 0x1p-40) * R;
        double cj_lo = c ? hg_array_get_f64(c, c->numel == 1 ? 0 : j) : clo, cj_hi = c ? cj_lo : chi;
        lo = MIN(lo, cj_lo - half);
        hi = MAX(hi, cj_hi + half);
        mag = MAX(mag, half + MAX(fabs(cj_lo), fabs(cj_hi)));
    }
    if (!(lo <= hi) || !isfinite(mag))
        return;
    HgRange before = *ctx->outputs[0];
    hg_range_set_linear(ctx, lo, hi, mag, kk, a->nan);
    range_meet(ctx->outputs[0], &before);
}

void
hg_range_MatMul(HgRangeCtx *ctx)
{
    const HgRange *a = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *b = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgValueShape *as = a ? ctx->shapes[0] : NULL, *bs = b ? ctx->shapes[1] : NULL;
    if (!a || !b || !as || !bs || as->rank < 1 || bs->rank < 1)
        return;
    gint64 k = as->dims[as->rank - 1].v;
    if (k < 0)
        k = bs->dims[bs->rank == 1 ? 0 : bs->rank - 2].v;
    /* Both bounds are sound: keep what both allow. */
    HgRange convex;
    gboolean has_convex = range_convex(ctx, a, b, k);
    if (has_convex)
        convex = *ctx->outputs[0];
    if (k >= 0)
        range_matmul(ctx, a, b, as, bs, k);
    if (has_convex)
        range_meet(ctx->outputs[0], &convex);
    if (k >= 0 && bs->rank == 2)
        range_norm(ctx, a, bs, FALSE, 1, NULL, 0, 0);
    /* Q K^T: each output is <q, k> <= ||q|| ||k|| */
    if (k >= 0 && ctx->shape_of && ctx->node && ctx->node->inputs[0] && ctx->node->inputs[1] &&
        as->rank >= 2 && bs->rank >= 2) {
        double na = block_l2_bound(ctx, ctx->node->inputs[0], as->rank - 1, as->rank);
        double nb = isfinite(na) ? block_l2_bound(ctx, ctx->node->inputs[1], bs->rank - 2, bs->rank) : INFINITY;
        if (isfinite(nb)) {
            HgRange before = *ctx->outputs[0];
            hg_range_set_linear(ctx, -na * nb, na * nb, na * nb, k, a->nan || b->nan);
            range_meet(ctx->outputs[0], &before);
        }
    }
}

/* The interval bound of MatMul as a sum of k products. */
static void
range_matmul(HgRangeCtx *ctx, const HgRange *a, const HgRange *b, const HgValueShape *as,
             const HgValueShape *bs, gint64 k)
{
    gboolean nan = a->nan || b->nan || !hg_range_bounded(a) || !hg_range_bounded(b);
    const HgArray *av = ctx->values[0], *bv = ctx->values[1];
    gint64 p[2], nvec = 0;
    HgVecId id = NULL;
    const HgArray *cv = NULL;
    if (bv && hg_vshape_known(bs) && bv->numel == hg_vshape_numel(bs)) {
        p[0] = k;
        p[1] = bs->rank == 1 ? 1 : bs->dims[bs->rank - 1].v;
        cv = bv, id = hg_vec_matmul_b;
        nvec = p[0] * p[1] != 0 ? bv->numel / p[0] : 0;
    } else if (av && hg_vshape_known(as) && av->numel == hg_vshape_numel(as)) {
        p[0] = k;
        cv = av, id = hg_vec_row;
        nvec = k ? av->numel / k : 0;
    }
    range_matmul_core(ctx, a, b, cv == bv ? a : b, cv, id, p, nvec, k, 1, 0, 0, nan);
}

void
hg_range_Gemm(HgRangeCtx *ctx)
{
    const HgRange *a = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
    const HgRange *b = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
    const HgRange *c = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
    const HgValueShape *as = a ? ctx->shapes[0] : NULL, *bs = b ? ctx->shapes[1] : NULL;
    if (!a || !b || !as || !bs || as->rank != 2 || bs->rank != 2)
        return;
    gboolean ta = hg_node_attr_int(ctx->node, "transA", 0) != 0;
    gboolean tb = hg_node_attr_int(ctx->node, "transB", 0) != 0;
    double alpha = hg_node_attr_float(ctx->node, "alpha", 1.0f);
    double beta = hg_node_attr_float(ctx->node, "beta", 1.0f);
    if (hg_int_max(hg_range_out_dtype(ctx)) > 0 && (alpha != trunc(alpha) || beta != trunc(beta)))
        return; /* integer Gemm truncates alpha and beta */
    gint64 k = as->dims[ta ? 0 : 1].v;
    if (k < 0)
        k = bs->dims[tb ? 1 : 0].v;
    if (k < 0)
        return;
    gboolean nan = a->nan || b->nan || !hg_range_bounded(a) || !hg_range_bounded(b) || !isfinite(alpha);
    double clo = 0, chi = 0;
    if (c) {
        nan = nan || hg_range_bad(c) || !isfinite(beta);
        hg_range_prod(c->lo, c->hi, beta, beta, &clo, &chi);
    }
    const HgArray *bv = ctx->values[1];
    gint64 p[2] = {k, 0}, nvec = 0;
    HgVecId id = NULL;
    if (bv && hg_vshape_known(bs) && bv->numel == hg_vshape_numel(bs)) {
        nvec = bs->dims[tb ? 0 : 1].v;
        p[1] = nvec;
        id = tb ? hg_vec_row : hg_vec_col;
    }
    range_matmul_core(ctx, a, b, a, id ? bv : NULL, id, p, nvec, k, alpha, clo, chi, nan);
    /* rows of A (not transposed) of bounded norm; C per column when constant */
    const HgArray *cv = c ? ctx->values[2] : NULL;
    if (cv && cv->rank > 1 && cv->dims[0] != 1)
        cv = NULL; /* per row too: [clo, chi] */
    if (!ta && (!c || !hg_range_bad(c)) && isfinite(beta)) {
        g_autoptr(HgArray) cs = NULL;
        if (cv && beta != 1) {
            cs = hg_array_new(HG_DTYPE_DOUBLE, cv->rank, cv->dims, NULL);
            for (gint64 i = 0; cs && i < cv->numel; i++)
                ((double *)cs->data)[i] = beta * hg_array_get_f64(cv, i);
        }
        range_norm(ctx, a, bs, tb, alpha, cs ? cs : cv, clo, chi);
    }
}

/* Einsum: each output element sums `terms` products of one element of each operand, terms the
 * product of the contracted labels' lengths (those of no output axis): only they need be known, a
 * symbolic batch or sequence elsewhere is no matter. */
void
hg_range_Einsum(HgRangeCtx *ctx)
{
    Einsum e;
    HgSymDim ldims[EIN_MAX_LABELS];
    if (ctx->n_outputs == 0 || !ein_of_shapes(ctx->node, ctx->n_inputs, ctx->shapes, &e, ldims))
        return;
    gboolean kept[EIN_MAX_LABELS] = {FALSE}, seen[EIN_MAX_LABELS] = {FALSE};
    for (guint i = 0; i < e.out_rank; i++)
        kept[e.out_label[i]] = TRUE;
    gint64 terms = 1;
    for (guint q = 0; q < e.nops; q++)
        for (guint i = 0; i < e.rank[q]; i++) {
            int l = e.axis_label[q][i];
            if (kept[l] || seen[l])
                continue;
            seen[l] = TRUE;
            if (ldims[l].v < 0 || (terms > 0 && ldims[l].v > G_MAXINT64 / terms))
                return;
            terms *= ldims[l].v;
        }
    double lo = 1, hi = 1, mag = 1;
    gboolean nan = FALSE;
    for (guint q = 0; q < ctx->n_inputs; q++) {
        const HgRange *r = ctx->inputs[q];
        if (!r)
            return;
        nan = nan || r->nan || !hg_range_bounded(r);
        hg_range_prod(lo, hi, r->lo, r->hi, &lo, &hi);
        mag = hg_bound_mul(mag, hg_mag(r->lo, r->hi));
    }
    /* the product of several operands also rounds: fold that into the k of the error bound */
    if (terms == 0)
        lo = hi = mag = 0;
    hg_range_set_linear(ctx, hg_bound_mul((double)terms, lo), hg_bound_mul((double)terms, hi), hg_bound_mul((double)terms, mag),
                     terms + ctx->n_inputs, nan);
}
