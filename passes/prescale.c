/* prescale: apply a scale before the product that would overflow, not after it.
 *
 *   Scale moved in front of a MatMul (attention logits):
 *
 *     p = MatMul(q, kt)                               q2 = Mul(q, 2^-4)
 *     [p = Reshape / Transpose ... (p)]          =>   p' = MatMul(q2, kt)       [same moves]
 *     y = Mul(p, 0.0884)   (or Div(p, 11.31))         y  = Mul(p', 1.414)      (or Div(p', 1.414))
 *
 *   The scalar constant s splits into a power of two 2^e (the largest with |s| / 2^e in [1, 2)) moved
 *   onto the smaller MatMul operand, or into a constant operand's values, and a remainder left behind
 *   (none when s is a power of two: the Mul or Div goes). Scaling by 2^e and by s / 2^e are both exact,
 *   so y keeps its bits (barring overflow and underflow); the moved product is y / remainder, never
 *   larger than y. Done only where the product (or a value moved after it) is a tensor FP16 cannot
 *   hold and its deciding bound (static, or calibration with the analysis's margin) times 2^e fits
 *   under the threshold, and only where nothing else reads the unscaled product.
 *
 *   L2 normalisation pre-scaled (it is scale-invariant), and RMS normalisation likewise:
 *
 *     s = ReduceSum(Mul(x, x))                  (or Pow(x, 2); ReduceSumSquare(x); ReduceMean of
 *                                                the squares: T5's and LLaMA's RMSNorm)
 *     n = Sqrt(s)                               (or Sqrt(Add(s, eps)), Sqrt(Max(s, eps)); ReduceL2(x))
 *     y = Div(x, n)                        =>   the same with x2 = Mul(x, 2^-k) read in place of x,
 *                                               eps inside the Sqrt scaled by 2^-2k,
 *     (n may be Max(n, eps), Clip(n, eps),      eps outside it by 2^-k
 *      Add(n, eps), or Pow(., 0.5); y = Mul(x, Reciprocal(n)) or Mul(x, Div(c, n)), c constant,
 *      or Mul(x, Pow(s or Add(s, eps), -0.5));
 *      LpNormalization(x) <p = 2> alone)
 *
 *   k is the smallest that brings the sum of squares (the check's own measures: the sum, and the
 *   reduction's accumulator, count x bound) under the threshold; it is refused when it would push
 *   x's smallest nonzero magnitude (the interval's tiny, where known) below FP16's normal range.
 *   Done only where the pattern has an overflow hazard and its intermediates have no other reader.
 *
 *   A reduction whose running sum a runtime keeps in FP16 (--accumulate fp16) overflows while its
 *   output fits: x pre-scaled by 2^-k where the reduction reads it, a Mul by 2^k after it (2^2k for
 *   ReduceSumSquare); see match_reduce.
 *
 *   Scale moved in front of a whole-number power: c * Pow(x, n) takes 2^-j on x as 2^-nj (GELU's
 *   tanh form); see match_scale.
 *
 *   A gain moved into weights that flush: Mul(MatMul(x, W), g) with W below FP16's normal range gives
 *   W the 2^j that makes it normal, g keeps g / 2^j; see match_gain.
 *
 * Every value whose contents change is renamed (NAME_prescaled), and where calibration statistics
 * exist for the old name the scaled statistics are added under the new one (into the caller's table,
 * hg_analyses_options(env->analyses)->stats): the later passes decide on what the tensor now holds.
 *
 * A rewrite is made only where it costs less than the FP32 island it spares, both by
 * assign_precision's cost model (passes/precision_cost.h): the island is how much its minimum cut
 * grows when the pattern's nodes keep their hazards (the MatMul and the moves after it; the L2
 * norm's nodes) over when they are cured, the rewrite what the Mul it adds costs in FP16, less what
 * the scale it drops cost there. With --keep-io-types a small pattern at the graph's edge can be
 * cheaper as an island: it needs no Cast where the model's inputs and outputs stay FP32.
 *
 * Each rewrite, with k, the bound that called for it and the two costs, is a note; so is a pattern
 * left alone although it overflows, and why.
 */
#include "halfguard/pass.h"

#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ops/array.h"
#include "precision_cost.h"
#include "shapes.h"

#define PASS "prescale"
#define FP16_MIN_NORMAL 0x1p-14
#define MAX_K 60
#define POW_MAX_N 8

typedef struct {
    HgNode *node;
    guint index;
    int e;            /* the constant's values times 2^e */
    HgArray *scaled;  /* the new values (owned) */
} ConstEdit;

typedef struct {
    HgValue *v;
    int e;            /* v now holds its old values times 2^e */
} ValEdit;

typedef struct {
    HgNode *anchor;   /* names the new nodes */
    HgValue *x;       /* Mul(x, 2^xe) replaces x at xuses (NULL: nothing inserted) */
    int xe;
    GArray *xuses;    /* of HgUse */
    GArray *consts;   /* of ConstEdit */
    GArray *vals;     /* of ValEdit */
    HgNode *drop;     /* the Mul or Div whose remainder is 1: removed, its output moves up */
    guint drop_ci;    /* which of its inputs is the constant */
    HgValue *post;    /* written by a new Mul(post's new name, 2^post_e) (NULL: none) */
    int post_e;
    char *note;
} Plan;

typedef struct {
    HgGraph *g;
    const HgPassEnv *env;
    const HgCheckResult *res;
    const HgShapes *s;
    const HgRanges *r;
    HgStats *stats;
    double threshold;
    GHashTable *hazard_at; /* HgNode* with an overflow or internal-overflow hazard */
    GHashTable *internal;  /* HgNode* -> double*: the largest internal-overflow bound at it */
    GHashTable *in_norm;   /* HgNode* of an L2 or RMS norm match_l2 matched, made or left */
    GHashTable *taken;     /* HgNode* that a plan edits */
    GHashTable *consts;    /* "name\x01e" -> HgValue*: scaled constants already made */
    GArray *plans;         /* of Plan */
    GHashTable *cured;     /* HgNode* whose hazards the plans taken so far remove */
    double cut_now;        /* assign_precision's cut with those cured (NAN until asked) */
    GError *error;         /* the cost model's failure: the pass stops matching and fails */
} Pre;

static void
plan_clear(Plan *pl)
{
    if (pl->consts)
        for (guint i = 0; i < pl->consts->len; i++)
            g_clear_pointer(&g_array_index(pl->consts, ConstEdit, i).scaled, hg_array_unref);
    g_clear_pointer(&pl->xuses, g_array_unref);
    g_clear_pointer(&pl->consts, g_array_unref);
    g_clear_pointer(&pl->vals, g_array_unref);
    g_clear_pointer(&pl->note, g_free);
}

static void
plan_init(Plan *pl, HgNode *anchor)
{
    memset(pl, 0, sizeof *pl);
    pl->anchor = anchor;
    pl->xuses = g_array_new(FALSE, FALSE, sizeof(HgUse));
    pl->consts = g_array_new(FALSE, FALSE, sizeof(ConstEdit));
    pl->vals = g_array_new(FALSE, FALSE, sizeof(ValEdit));
}

/* ---------------------------------------------------------------- small queries */

/* What names n in notes and in the names of new nodes: its name, else its first output's. */
static const char *
node_name(const HgNode *n)
{
    if (n->name && *n->name)
        return n->name;
    return n->n_outputs && n->outputs[0] ? n->outputs[0]->name : n->op_type;
}

static int
dtype_of(const Pre *p, const HgValue *v)
{
    return hg_shapes_get(p->s, v)->dtype;
}

static gint64
numel_of(const Pre *p, const HgValue *v)
{
    const HgValueShape *vs = hg_shapes_get(p->s, v);
    if (vs->rank < 0)
        return -1;
    gint64 n = 1;
    for (int i = 0; i < vs->rank; i++) {
        if (vs->dims[i].v < 0)
            return -1;
        n *= vs->dims[i].v;
    }
    return n;
}

/* v holds an intermediate that the pattern may change: one reader, in this graph, not an output. */
static gboolean
private_value(const HgValue *v, const HgNode *reader)
{
    if (!v || v->is_output || v->is_input || v->init || v->nested_outputs || v->uses->len != 1)
        return FALSE;
    const HgUse *u = &g_array_index(v->uses, HgUse, 0);
    return u->node == reader && u->node->graph == v->graph;
}

/* The values of constant v (an initializer that is not an input, or a Constant's output), owned; NULL
 * when v is not a float constant. */
static HgArray *
const_array(const Pre *p, const HgValue *v)
{
    if (!v || v->is_input)
        return NULL;
    HgArray *a = NULL;
    if (v->init) {
        a = hg_array_from_tensor(v->init, NULL);
    } else if (hg_node_is(v->producer, "Constant")) {
        const HgAttr *at = hg_node_attr(v->producer, "value");
        a = at && at->t ? hg_array_from_tensor(at->t, NULL) : NULL;
    } else {
        const HgArray *c = hg_shapes_get(p->s, v)->value;
        a = c ? hg_array_ref((HgArray *)c) : NULL;
    }
    if (a && !hg_dtype_is_float(a->dtype))
        g_clear_pointer(&a, hg_array_unref);
    return a;
}

/* a times 2^e in a's dtype, or NULL when some value would not come out exact (overflow or
 * underflow in that dtype). */
static HgArray *
scaled_exact(const HgArray *a, int e)
{
    HgArray *out = hg_array_new(a->dtype, a->rank, a->dims, NULL);
    if (!out)
        return NULL;
    g_autofree double *buf = g_new(double, a->numel + 1);
    for (gint64 i = 0; i < a->numel; i++)
        buf[i] = ldexp(hg_array_get_f64(a, i), e);
    hg_array_store_f64(out, buf);
    for (gint64 i = 0; i < a->numel; i++) {
        double v = hg_array_get_f64(out, i);
        if (!(v == buf[i] || (isnan(v) && isnan(buf[i])))) {
            hg_array_unref(out);
            return NULL;
        }
    }
    return out;
}

static gboolean
fits(const Pre *p, double b)
{
    return b <= p->threshold;
}

static gboolean
hazard_at(const Pre *p, const HgNode *n)
{
    return n && g_hash_table_contains(p->hazard_at, n);
}

static gboolean
any_taken(const Pre *p, HgNode *const *nodes, guint n)
{
    for (guint i = 0; i < n; i++)
        if (nodes[i] && g_hash_table_contains(p->taken, nodes[i]))
            return TRUE;
    return FALSE;
}

static void
take_plan(Pre *p, Plan *pl, HgNode *const *nodes, guint n)
{
    for (guint i = 0; i < n; i++)
        if (nodes[i])
            g_hash_table_add(p->taken, nodes[i]);
    g_array_append_val(p->plans, *pl);
}

static void
add_val(Plan *pl, HgValue *v, int e)
{
    ValEdit ve = {v, e};
    g_array_append_val(pl->vals, ve);
}

static void
add_xuse(Plan *pl, HgNode *n, guint index)
{
    HgUse u = {n, index};
    g_array_append_val(pl->xuses, u);
}

/* Constant input `index` of n, scaled by 2^e, joins the plan; FALSE when it cannot be scaled
 * exactly. */
static gboolean
add_const(const Pre *p, Plan *pl, HgNode *n, guint index, int e)
{
    g_autoptr(HgArray) a = const_array(p, n->inputs[index]);
    HgArray *sc = a ? scaled_exact(a, e) : NULL;
    if (!sc)
        return FALSE;
    ConstEdit ce = {n, index, e, sc};
    g_array_append_val(pl->consts, ce);
    return TRUE;
}

/* Is the plan cheaper than leaving the nodes it cures (cure, n_cure) to an FP32 island? Both cuts
 * are assign_precision's (passes/precision_cost.h) on the analysis as it stands: the plans are all
 * made before any is applied, each counting the nodes the ones before it cure. The rewrite pays for
 * the node it adds (the Mul on x) in FP16 and gets back what the node it drops (a scale whose
 * remainder is 1) cost there; hg_precision_rewrite_pays decides (one that adds nothing on balance is
 * made, whatever the island costs).
 * Either way the figures go into a note: the rewrite's own, or one saying what was left, named by
 * `what` (e.g. "Mul 's' after MatMul 'm'"). FALSE also when the cost model fails (p->error). */
static gboolean
cheaper_than_island(Pre *p, Plan *pl, HgNode *const *cure, guint n_cure, const char *what)
{
    if (p->error)
        return FALSE;
    if (isnan(p->cut_now) &&
        !hg_precision_cut_cost(p->g, p->env, p->res, p->cured, &p->cut_now, &p->error))
        return FALSE;
    g_autoptr(GHashTable) cured = g_hash_table_new(NULL, NULL);
    GHashTableIter it;
    gpointer n;
    g_hash_table_iter_init(&it, p->cured);
    while (g_hash_table_iter_next(&it, &n, NULL))
        g_hash_table_add(cured, n);
    for (guint i = 0; i < n_cure; i++)
        if (cure[i])
            g_hash_table_add(cured, cure[i]);
    double cut_cured;
    if (!hg_precision_cut_cost(p->g, p->env, p->res, cured, &cut_cured, &p->error))
        return FALSE;
    double rewrite = 0;
    if (pl->x) {
        double nx = (double)hg_precision_numel(p->s, pl->x);
        rewrite += hg_precision_fp16_node_cost(nx + 1, nx);
    }
    if (pl->post) {
        double ny = (double)hg_precision_numel(p->s, pl->post);
        rewrite += hg_precision_fp16_node_cost(ny + 1, ny);
    }
    if (pl->drop) {
        double ny = (double)hg_precision_numel(p->s, pl->drop->outputs[0]);
        double nc = (double)hg_precision_numel(p->s, pl->drop->inputs[pl->drop_ci]);
        rewrite -= hg_precision_fp16_node_cost(ny + nc, ny);
    }
    /* What the island costs over the cured graph; the flows carry rounding noise near 0. */
    double island = p->cut_now - cut_cured;
    if (island < 1e-9 * MAX(p->cut_now, 1.0))
        island = 0;
    if (!hg_precision_rewrite_pays(rewrite, island)) {
        hg_pass_note(p->env->result, PASS, "left %s in FP32: the island costs %.3g, the rewrite %.3g", what,
                     island, rewrite);
        return FALSE;
    }
    char *note = g_strdup_printf("%s (rewrite costs %.3g against %.3g for an FP32 island)", pl->note,
                                 rewrite, island);
    g_free(pl->note);
    pl->note = note;
    for (guint i = 0; i < n_cure; i++)
        if (cure[i])
            g_hash_table_add(p->cured, cure[i]);
    p->cut_now = cut_cured;
    return TRUE;
}

/* ---------------------------------------------------------------- the scale moved before a MatMul */

static gboolean
moves_values(const HgNode *n)
{
    /* the scale is a scalar: it commutes with any rearrangement of the values */
    return n->n_inputs >= 1 && n->n_outputs == 1 && n->outputs[0] && hg_node_has_traits(n, HG_TRAIT_REARRANGES);
}

/* How many values of constant a FP16 would newly hold below its normal range once scaled by 2^e. */
static gint64
newly_subnormal(const HgArray *a, int e)
{
    gint64 c = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double v = fabs(hg_array_get_f64(a, i));
        if (v >= FP16_MIN_NORMAL && ldexp(v, e) < FP16_MIN_NORMAL)
            c++;
    }
    return c;
}

static void
describe_bound(GString *s, double b, gboolean calibrated)
{
    g_string_append_printf(s, "%.3g (%s)", b, calibrated ? "calibration with margin" : "static");
}

/* The exponent of n where n is Pow(x, c) with c a constant scalar (or one shape inference knows),
 * else NAN. */
static double
pow_const(const Pre *p, const HgNode *n)
{
    if (!n || !hg_node_is(n, "Pow") || n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1])
        return NAN;
    g_autoptr(HgArray) c = const_array(p, n->inputs[1]);
    const HgArray *a = c ? c : hg_shapes_get(p->s, n->inputs[1])->value;
    return a && a->numel == 1 ? hg_array_get_f64(a, 0) : NAN;
}

/* n's exponent where n is Pow(x, c) with c a constant whole number from 2 to POW_MAX_N and x a float
 * tensor, else 0. */
static int
pow_exponent(const Pre *p, const HgNode *n)
{
    double e = pow_const(p, n);
    if (isnan(e) || !hg_dtype_is_float(dtype_of(p, n->inputs[0])))
        return 0;
    return e == floor(e) && e >= 2 && e <= POW_MAX_N ? (int)e : 0;
}

/* Up from a through the nodes that only move values (at most 8) to the node that computed them:
 * the values from that node's output to a, in order (owned), with the node in *top; NULL when the
 * walk is longer. */
static GPtrArray *
moves_up(HgValue *a, HgNode **top)
{
    GPtrArray *chain = g_ptr_array_new();
    HgValue *v = a;
    while (v->producer && moves_values(v->producer)) {
        g_ptr_array_insert(chain, 0, v);
        v = v->producer->inputs[0];
        if (chain->len > 8) {
            g_ptr_array_unref(chain);
            return NULL;
        }
    }
    g_ptr_array_insert(chain, 0, v);
    *top = v->producer;
    return chain;
}

/* The nodes a rewrite of chain (moves_up's) cures: the one that computed it and each move after it
 * (owned, chain->len of them). */
static HgNode **
chain_nodes(GPtrArray *chain, HgNode *top)
{
    HgNode **cure = g_new0(HgNode *, chain->len);
    cure[0] = top;
    for (guint i = 1; i < chain->len; i++)
        cure[i] = ((HgValue *)chain->pdata[i])->producer;
    return cure;
}

/* The first value of chain (moves_up's) that something besides the next node on the way to end
 * reads, or NULL when none: a rewrite may then change them all. */
static const HgValue *
chain_shared(GPtrArray *chain, const HgNode *end)
{
    for (guint i = 0; i < chain->len; i++) {
        const HgValue *w = chain->pdata[i];
        const HgNode *next = i + 1 < chain->len ? ((HgValue *)chain->pdata[i + 1])->producer : end;
        if (!private_value(w, next))
            return w;
    }
    return NULL;
}

/* Smallest and largest nonzero magnitudes of a (0 and 0 when every value is 0). */
static void
magnitudes(const HgArray *a, double *lo, double *hi)
{
    *lo = INFINITY, *hi = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double v = fabs(hg_array_get_f64(a, i));
        if (v > 0) {
            *lo = MIN(*lo, v);
            *hi = MAX(*hi, v);
        }
    }
    if (*hi == 0)
        *lo = 0;
}

/* Weights that flush in FP16 before a gain: y = Mul(MatMul(x, W), g) with W's values below FP16's
 * normal range (an underflow hazard at the MatMul) and g >= 2 a scalar constant. 2^j of the gain moves
 * into W, the smallest j that makes W's every nonzero value an FP16 normal; j may pass g's own
 * exponent, as long as the remainder g / 2^j is an FP16 normal itself:
 *
 *     p = MatMul(x, W)                         p' = MatMul(x, W * 2^j)
 *     y = Mul(p, g)                       =>   y  = Mul(p', g * 2^-j)
 *
 * Both constants are scaled exactly (powers of two, in FP32), so y keeps its bits. Done only where W
 * times 2^j and the product's bound times 2^j stay under the threshold, and nothing else reads the
 * product. */
static void
match_gain(Pre *p, HgNode *sn, guint ci, double cv, HgValue *a)
{
    HgNode *mm = NULL;
    g_autoptr(GPtrArray) chain = moves_up(a, &mm);
    if (!chain || !hg_node_is(mm, "MatMul") || mm->n_inputs != 2 || !mm->inputs[0] || !mm->inputs[1])
        return;
    gboolean flushes = FALSE;
    for (guint i = 0; i < p->res->hazards->len && !flushes; i++) {
        const HgHazard *h = p->res->hazards->pdata[i];
        flushes = h->at == mm && h->kind == HG_HAZARD_UNDERFLOW;
    }
    if (!flushes)
        return;
    int k = -1;
    g_autoptr(HgArray) w = NULL;
    for (guint i = 0; i < 2 && k < 0; i++) {
        g_clear_pointer(&w, hg_array_unref);
        w = const_array(p, mm->inputs[i]);
        if (w)
            k = (int)i;
    }
    double lo, hi;
    if (k < 0 || (magnitudes(w, &lo, &hi), lo == 0) || lo >= FP16_MIN_NORMAL)
        return;
    int j = (int)ceil(log2(FP16_MIN_NORMAL / lo));
    while (ldexp(lo, j) < FP16_MIN_NORMAL)
        j++;
    double b = 0, rem = ldexp(cv, -j);
    for (guint i = 0; i < chain->len; i++)
        b = MAX(b, hg_check_value_bound(p->res, chain->pdata[i], NULL));
    g_autofree char *what = g_strdup_printf("Mul '%s' after MatMul '%s'", node_name(sn), node_name(mm));
    const char *why = j > MAX_K                       ? "is past 2^60"
                      : !fits(p, ldexp(hi, j))          ? "would push the largest weight past the threshold"
                      : !fits(p, ldexp(b, j))           ? "would push the product past the threshold"
                      : !(fabs(rem) >= FP16_MIN_NORMAL) ? "would leave the gain's remainder below FP16's normal range"
                      : !fits(p, fabs(rem))             ? "would leave the gain's remainder past the threshold"
                                                        : NULL;
    if (why) {
        hg_pass_note(p->env->result, PASS, "left %s in place: its weights '%s' flush in FP16 (smallest %.3g), and "
                     "the 2^%d that would make them normal %s (gain %.6g, remainder %.3g; product %.3g, largest "
                     "weight %.3g)", what, mm->inputs[k]->name, lo, j, why, cv, rem, b, hi);
        return;
    }
    if (chain_shared(chain, sn))
        return;
    HgNode *nodes[2] = {sn, mm};
    if (any_taken(p, nodes, 2))
        return;
    Plan pl;
    plan_init(&pl, sn);
    if (!add_const(p, &pl, mm, (guint)k, j) || !add_const(p, &pl, sn, ci, -j)) {
        plan_clear(&pl);
        return;
    }
    for (guint i = 0; i < chain->len; i++)
        add_val(&pl, chain->pdata[i], j);
    pl.note = g_strdup_printf("moved 2^%d of Mul '%s' (x %.6g = 2^%d x %.6g, the remainder left behind) into "
                              "the weights '%s' of MatMul '%s', k=%d: they flush in FP16 (smallest %.3g) and "
                              "are normal x 2^%d; the product may reach %.3g", j, node_name(sn), cv, j, rem,
                              mm->inputs[k]->name, node_name(mm), j, lo, j, ldexp(b, j));
    g_autofree HgNode **cure = chain_nodes(chain, mm);
    if (!cheaper_than_island(p, &pl, cure, chain->len, what)) {
        plan_clear(&pl);
        return;
    }
    take_plan(p, &pl, nodes, 2);
}

static void
match_scale(Pre *p, HgNode *sn)
{
    gboolean div = hg_node_is(sn, "Div");
    if (!(div || hg_node_is(sn, "Mul")) || sn->n_inputs != 2 || !sn->inputs[0] || !sn->inputs[1] ||
        sn->n_outputs != 1 || !sn->outputs[0])
        return;
    /* the constant scalar and the value it scales */
    guint ci = 1;
    g_autoptr(HgArray) c = const_array(p, sn->inputs[1]);
    if ((!c || c->numel != 1) && !div) {
        g_clear_pointer(&c, hg_array_unref);
        ci = 0;
        c = const_array(p, sn->inputs[0]);
    }
    if (!c || c->numel != 1)
        return;
    HgValue *a = sn->inputs[1 - ci];
    const HgValueShape *as = hg_shapes_get(p->s, a);
    if (!hg_dtype_is_float(as->dtype) || as->dtype != c->dtype || (c->rank > 0 && (as->rank < 0 ||
        (int)c->rank > as->rank)))
        return;
    double cv = hg_array_get_f64(c, 0);
    if (!isfinite(cv) || cv == 0)
        return;
    /* |scale| = m * 2^ex with m in [0.5, 1): the moved power is 2^(ex-1) for a Mul (the remainder in
     * [1, 2)); for a Div by c = m * 2^ex, 2^-(ex-1) (the remainder divisor in [1, 2)). */
    int ex;
    frexp(cv, &ex);
    int e = div ? -(ex - 1) : ex - 1;
    if (e > 0 && !div) {
        match_gain(p, sn, ci, cv, a);
        return;
    }
    if (e >= 0)
        return; /* a scale of 1 or more: moving it would not shrink the product */

    /* up through the moves to the MatMul; every value on the way read only by the next node */
    HgNode *mm = NULL;
    g_autoptr(GPtrArray) chain = moves_up(a, &mm);
    if (!chain)
        return;
    int pow_n = pow_exponent(p, mm);
    if (!pow_n && (!hg_node_is(mm, "MatMul") || mm->n_inputs != 2 || !mm->inputs[0] || !mm->inputs[1]))
        return;

    /* Does it overflow, and does the moved power cure it? */
    gboolean unsafe = hazard_at(p, mm), calibrated = FALSE;
    double b = 0;
    for (guint i = 0; i < chain->len; i++) {
        HgValue *w = chain->pdata[i];
        gboolean cal;
        double bw = hg_check_value_bound(p->res, w, &cal);
        unsafe |= hg_check_value_unsafe(p->res, w);
        if (bw > b) {
            b = bw;
            calibrated = cal;
        }
    }
    if (!unsafe)
        return;
    /* every value from the product to the scale must have this path as its only reader */
    const HgValue *shared = chain_shared(chain, sn);
    if (shared) {
        hg_pass_note(p->env->result, PASS, "left %s '%s' after %s '%s' in place: '%s' (the unscaled product) "
                     "has other readers", sn->op_type, node_name(sn), mm->op_type, node_name(mm), shared->name);
        return;
    }
    /* A power x^n takes 2^-j on x as 2^-nj: the smallest j that brings it under the threshold, whatever
     * the constant's own exponent (the remainder left behind may then exceed 1; what it writes has its
     * own bound, and a hazard there is not cured). Refused where 2^-j would push x's smallest nonzero
     * magnitude, where known, below FP16's normal range. */
    int pow_j = 0;
    if (pow_n) {
        for (pow_j = 1; pow_n * pow_j <= MAX_K && !fits(p, ldexp(b, -pow_n * pow_j)); pow_j++)
            ;
        double tiny = hg_ranges_get(p->r, mm->inputs[0])->tiny;
        if (pow_n * pow_j > MAX_K || !isfinite(b) ||
            (tiny >= FP16_MIN_NORMAL && ldexp(tiny, -pow_j) < FP16_MIN_NORMAL)) {
            hg_pass_note(p->env->result, PASS, "left %s '%s' after Pow '%s' in place: its power may reach %.3g, "
                         "and no 2^-j on its base brings it under %g while keeping the base's smallest "
                         "magnitude (%.3g) normal", sn->op_type, node_name(sn), node_name(mm), b, p->threshold,
                         tiny);
            return;
        }
        e = -pow_n * pow_j;
    }
    if (!fits(p, ldexp(b, e))) {
        hg_pass_note(p->env->result, PASS, "left %s '%s' after MatMul '%s' in place: its product may reach %.3g, "
                     "and the 2^%d it could move would not bring it under %g", sn->op_type,
                     node_name(sn), node_name(mm), b, e, p->threshold);
        return;
    }
    HgNode *nodes[2] = {sn, mm};
    if (any_taken(p, nodes, 2))
        return;

    Plan pl;
    plan_init(&pl, sn);
    if (pow_n) {
        pl.x = mm->inputs[0];
        pl.xe = -pow_j;
        add_xuse(&pl, mm, 0);
    }
    /* Where the power goes: a constant operand takes it into its values (free at run time) unless
     * that pushes some of them below FP16's normal range; else the smaller operand (by elements)
     * gets a Mul. */
    int target = pow_n ? 0 : -1;
    gboolean into_const = FALSE;
    for (guint k = 0; k < 2 && target < 0; k++) {
        g_autoptr(HgArray) w = const_array(p, mm->inputs[k]);
        if (w && newly_subnormal(w, e) == 0 && add_const(p, &pl, mm, k, e)) {
            target = (int)k;
            into_const = TRUE;
        }
    }
    if (target < 0) {
        gint64 n0 = numel_of(p, mm->inputs[0]), n1 = numel_of(p, mm->inputs[1]);
        target = n1 >= 0 && (n0 < 0 || n1 < n0) ? 1 : 0;
        if (!hg_dtype_is_float(dtype_of(p, mm->inputs[target]))) {
            plan_clear(&pl);
            return;
        }
        pl.x = mm->inputs[target];
        pl.xe = e;
        add_xuse(&pl, mm, (guint)target);
    }
    /* the remainder stays behind, or the node goes when it is 1 */
    double rem = ldexp(cv, div ? e : -e);
    /* a power's remainder is not in [1, 2): it must itself be an FP16 normal */
    if (pow_n && !(fabs(rem) >= FP16_MIN_NORMAL && fits(p, fabs(rem)))) {
        hg_pass_note(p->env->result, PASS, "left %s '%s' after Pow '%s' in place: the constant left behind, "
                     "%.3g, would not be an FP16 normal", sn->op_type, node_name(sn), node_name(mm), rem);
        plan_clear(&pl);
        return;
    }
    if (rem == 1.0) {
        pl.drop = sn;
        pl.drop_ci = ci;
        for (guint i = 0; i + 1 < chain->len; i++)
            add_val(&pl, chain->pdata[i], e);
    } else {
        if (!add_const(p, &pl, sn, ci, div ? e : -e)) {
            plan_clear(&pl);
            return;
        }
        for (guint i = 0; i < chain->len; i++)
            add_val(&pl, chain->pdata[i], e);
    }
    g_autoptr(GString) note = g_string_new(NULL);
    g_string_append_printf(note, "moved 2^%d of %s '%s' (%s %.6g", e, sn->op_type, node_name(sn),
                           div ? "/" : "x", cv);
    if (rem != 1.0)
        g_string_append_printf(note, " = 2^%d x %.6g, the remainder left behind", div ? -e : e, rem);
    if (pow_n)
        g_string_append_printf(note, ") before Pow '%s' (exponent %d), onto its base '%s' as 2^-%d, k=%d: the "
                               "power may reach ", node_name(mm), pow_n, mm->inputs[0]->name, pow_j, -e);
    else
        g_string_append_printf(note, ") before MatMul '%s', onto %s '%s', k=%d: the product may reach ",
                               node_name(mm), into_const ? "the constant" : "operand",
                               mm->inputs[target]->name, -e);
    describe_bound(note, b, calibrated);
    g_string_append_printf(note, " > %g before the scale, %.3g after", p->threshold, ldexp(b, e));
    pl.note = g_string_free(g_steal_pointer(&note), FALSE);
    /* The rewrite cures the MatMul and the nodes that move its product to the scale. */
    g_autofree HgNode **cure = chain_nodes(chain, mm);
    g_autofree char *what = g_strdup_printf("%s '%s' after %s '%s'", sn->op_type, node_name(sn), mm->op_type,
                                            node_name(mm));
    if (!cheaper_than_island(p, &pl, cure, chain->len, what)) {
        plan_clear(&pl);
        return;
    }
    take_plan(p, &pl, nodes, 2);
}

/* ---------------------------------------------------------------- L2 normalisation */

/* A Max, Add or Clip (its min, and max if given) with a constant operand beside w: the other
 * value, with the constants' inputs in *k0, *k1 (-1 when none). NULL when n is not one. */
static HgValue *
eps_op(const Pre *p, const HgNode *n, int *k0, int *k1)
{
    *k0 = *k1 = -1;
    if ((hg_node_is(n, "Max") || hg_node_is(n, "Add")) && n->n_inputs == 2 && n->inputs[0] && n->inputs[1]) {
        for (int k = 0; k < 2; k++) {
            g_autoptr(HgArray) c = const_array(p, n->inputs[k]);
            if (c) {
                *k0 = k;
                return n->inputs[1 - k];
            }
        }
        return NULL;
    }
    if (hg_node_is(n, "Clip") && n->n_inputs >= 2 && n->inputs[0] && n->inputs[1] &&
        !hg_node_attr(n, "min") && !hg_node_attr(n, "max")) {
        g_autoptr(HgArray) lo = const_array(p, n->inputs[1]);
        if (!lo)
            return NULL;
        *k0 = 1;
        if (n->n_inputs > 2 && n->inputs[2]) {
            g_autoptr(HgArray) hi = const_array(p, n->inputs[2]);
            if (!hi)
                return NULL;
            *k1 = 2;
        }
        return n->inputs[0];
    }
    return NULL;
}

static gint64
ratio(gint64 a, gint64 b)
{
    return a > 0 && b > 0 && a % b == 0 ? a / b : -1;
}

/* The pieces of one L2 normalisation, as matched from its end. */
typedef struct {
    HgValue *x;
    HgNode *sq, *reduce;         /* Mul(x,x) or Pow(x,2) (or NULL); the reduction */
    HgValue *sq_v, *sum_v;       /* the squares, the sum of squares (NULL for ReduceL2) */
    gint64 count;                /* elements per sum (-1: unknown) */
    HgNode *nodes[12];
    guint n_nodes;
} L2;

static void
l2_add_node(L2 *m, HgNode *n)
{
    if (m->n_nodes < G_N_ELEMENTS(m->nodes))
        m->nodes[m->n_nodes++] = n;
}

/* Up to two eps ops (Max, Clip or Add with a constant) before *w, each scaling with 2^e: added to the
 * plan, *w and *reader moved past them. FALSE when a value on the way is read elsewhere. */
static gboolean
skip_eps_ops(Pre *p, Plan *pl, L2 *m, HgValue **w, HgNode **reader, int e)
{
    int k0, k1;
    for (int depth = 0; depth < 2; depth++) {
        HgNode *n = (*w)->producer;
        HgValue *in = n ? eps_op(p, n, &k0, &k1) : NULL;
        if (!in)
            break;
        if (!private_value(*w, *reader))
            return FALSE;
        add_val(pl, *w, e);
        ConstEdit ce = {n, (guint)k0, e, NULL};
        g_array_append_val(pl->consts, ce);
        if (k1 >= 0) {
            ConstEdit c2 = {n, (guint)k1, e, NULL};
            g_array_append_val(pl->consts, c2);
        }
        l2_add_node(m, n);
        *reader = n;
        *w = in;
    }
    return TRUE;
}

/* Is n a Pow by the constant e? */
static gboolean
pow_of(const Pre *p, const HgNode *n, double e)
{
    return pow_const(p, n) == e;
}

static gboolean match_squares(Pre *p, Plan *pl, L2 *m, HgValue *w, HgNode *reader);

/* Match the norm that w holds (after any eps outside the Sqrt); fills the plan with the edits. */
static gboolean
match_norm(Pre *p, Plan *pl, L2 *m, HgValue *w, HgNode *reader)
{
    /* outside the square root: Max(n, eps), Clip(n, eps), Add(n, eps) scale with 2^-k */
    if (!skip_eps_ops(p, pl, m, &w, &reader, -1))
        return FALSE;
    HgNode *nn = w->producer;
    if (!private_value(w, reader))
        return FALSE;
    if (hg_node_is(nn, "ReduceL2") && nn->inputs[0]) {
        add_val(pl, w, -1);
        m->x = nn->inputs[0];
        m->reduce = nn;
        add_xuse(pl, nn, 0);
        l2_add_node(m, nn);
        m->count = ratio(numel_of(p, m->x), numel_of(p, w));
        return TRUE;
    }
    if (!(hg_node_is(nn, "Sqrt") || pow_of(p, nn, 0.5)) || !nn->inputs[0])
        return FALSE;
    add_val(pl, w, -1);
    l2_add_node(m, nn);
    return match_squares(p, pl, m, nn->inputs[0], nn);
}

/* Match the sum of squares w under the square root, read by reader (the Sqrt, or Pow(., -0.5)). */
static gboolean
match_squares(Pre *p, Plan *pl, L2 *m, HgValue *w, HgNode *reader)
{
    /* inside: Add(s, eps), Max(s, eps), Clip(s, eps) scale with 2^-2k */
    if (!skip_eps_ops(p, pl, m, &w, &reader, -2))
        return FALSE;
    HgNode *rs = w->producer;
    if (!private_value(w, reader) || !rs || !rs->inputs[0])
        return FALSE;
    m->reduce = rs;
    m->sum_v = w;
    l2_add_node(m, rs);
    add_val(pl, w, -2);
    if (hg_node_is(rs, "ReduceSumSquare")) {
        m->x = rs->inputs[0];
        add_xuse(pl, rs, 0);
        m->count = ratio(numel_of(p, m->x), numel_of(p, w));
        return TRUE;
    }
    if (!hg_node_is(rs, "ReduceSum") && !hg_node_is(rs, "ReduceMean"))
        return FALSE;
    HgValue *sq = rs->inputs[0];
    HgNode *sn = sq->producer;
    if (!private_value(sq, rs) || !sn || sn->n_inputs != 2 || !sn->inputs[0] || !sn->inputs[1])
        return FALSE;
    if (hg_node_is(sn, "Mul") && sn->inputs[0] == sn->inputs[1]) {
        add_xuse(pl, sn, 0);
        add_xuse(pl, sn, 1);
    } else if (pow_of(p, sn, 2.0)) {
        add_xuse(pl, sn, 0);
    } else {
        return FALSE;
    }
    m->x = sn->inputs[0];
    m->sq = sn;
    m->sq_v = sq;
    l2_add_node(m, sn);
    add_val(pl, sq, -2);
    m->count = ratio(numel_of(p, sq), numel_of(p, w));
    return TRUE;
}

static void
match_l2(Pre *p, HgNode *d)
{
    Plan pl;
    L2 m = {0};
    m.count = -1;
    plan_init(&pl, d);
    gboolean ok = FALSE;
    HgValue *x = NULL;
    if (hg_node_is(d, "LpNormalization") && hg_node_attr_int(d, "p", 2) == 2 && d->n_inputs == 1 && d->inputs[0]) {
        x = m.x = d->inputs[0];
        m.reduce = d;
        add_xuse(&pl, d, 0);
        const HgValueShape *xs = hg_shapes_get(p->s, x);
        gint64 axis = hg_node_attr_int(d, "axis", -1);
        if (xs->rank > 0 && axis < 0)
            axis += xs->rank;
        if (xs->rank > 0 && axis >= 0 && axis < xs->rank)
            m.count = xs->dims[axis].v;
        ok = TRUE;
    } else if (hg_node_is(d, "Div") && d->n_inputs == 2 && d->inputs[0] && d->inputs[1]) {
        x = d->inputs[0];
        add_xuse(&pl, d, 0);
        ok = match_norm(p, &pl, &m, d->inputs[1], d);
    } else if (hg_node_is(d, "Mul") && d->n_inputs == 2 && d->inputs[0] && d->inputs[1]) {
        for (guint k = 0; k < 2 && !ok; k++) {
            HgNode *rc = d->inputs[k]->producer;
            /* Reciprocal(n), or Div(c, n) with a constant c (TorchScript's rsqrt), or Pow(s, -0.5)
             * of the sum of squares itself: all scale by 2^k */
            gboolean recip = hg_node_is(rc, "Reciprocal") && rc->inputs[0];
            gboolean rsqrt = !recip && pow_of(p, rc, -0.5) && rc->inputs[0];
            g_autoptr(HgArray) num = !recip && !rsqrt && hg_node_is(rc, "Div") && rc->n_inputs == 2 && rc->inputs[1]
                                         ? const_array(p, rc->inputs[0])
                                         : NULL;
            if ((!recip && !rsqrt && !num) || !private_value(d->inputs[k], d))
                continue;
            HgValue *nv = recip || rsqrt ? rc->inputs[0] : rc->inputs[1];
            g_array_set_size(pl.xuses, 0);
            g_array_set_size(pl.vals, 0);
            g_array_set_size(pl.consts, 0);
            m.n_nodes = 0;
            x = d->inputs[1 - k];
            add_xuse(&pl, d, 1 - k);
            add_val(&pl, d->inputs[k], 1);
            l2_add_node(&m, rc);
            ok = rsqrt ? match_squares(p, &pl, &m, rc->inputs[0], rc) : match_norm(p, &pl, &m, nv, rc);
        }
    }
    if (!ok || !x || m.x != x || !hg_dtype_is_float(dtype_of(p, x))) {
        plan_clear(&pl);
        return;
    }
    l2_add_node(&m, d);
    for (guint i = 0; i < m.n_nodes; i++)
        g_hash_table_add(p->in_norm, m.nodes[i]);
    /* Does it overflow? An overflow hazard at one of its nodes, or a value FP16 cannot hold. */
    gboolean unsafe = FALSE;
    for (guint i = 0; i < m.n_nodes; i++)
        unsafe |= hazard_at(p, m.nodes[i]) && (m.nodes[i] != d || d == m.reduce);
    for (guint i = 0; i < pl.vals->len; i++)
        unsafe |= hg_check_value_unsafe(p->res, g_array_index(pl.vals, ValEdit, i).v);
    if (!unsafe || any_taken(p, m.nodes, m.n_nodes)) {
        plan_clear(&pl);
        return;
    }
    /* The sum of squares, by the measures the check uses: the sum itself, the squares, and, where
     * the reduction keeps its running sum in FP16 (the accumulation model), the accumulator
     * (elements x the largest square). */
    HgAccumulateModel model = hg_analyses_options(p->env->analyses)->accumulate == HG_CHECK_ACCUMULATE_FP16
                                  ? HG_ACCUMULATE_FP16
                                  : HG_ACCUMULATE_TARGETS;
    gboolean acc16 = hg_op_for_node(m.reduce) ? hg_op_accumulates_fp16(hg_op_for_node(m.reduce), model)
                                              : model == HG_ACCUMULATE_FP16;
    gboolean cal = FALSE, c1;
    double need = 0, bx = hg_check_value_bound(p->res, x, &c1);
    if (m.sum_v) {
        double b = hg_check_value_bound(p->res, m.sum_v, &c1);
        if (b > need) {
            need = b;
            cal = c1;
        }
    }
    if (m.sq_v) {
        double b = hg_check_value_bound(p->res, m.sq_v, &c1);
        b = m.count > 0 && acc16 ? b * (double)m.count : b;
        if (b > need) {
            need = b;
            cal = c1;
        }
    } else if (acc16 && m.count > 0 && bx * bx * (double)m.count > need) {
        need = bx * bx * (double)m.count;
        hg_check_value_bound(p->res, x, &cal);
    }
    const char *what = m.reduce == d ? "LpNormalization" : hg_node_is(m.reduce, "ReduceMean") ? "RMS norm" : "L2 norm";
    if (isfinite(need) && fits(p, need)) {
        /* Nothing in the sum of squares overflows (the reduction accumulates in FP32): what made the
         * pattern unsafe is elsewhere (a divisor that reaches 0, say), not for pre-scaling to cure. */
        plan_clear(&pl);
        return;
    }
    if (!isfinite(need)) {
        hg_pass_note(p->env->result, PASS, "left %s at %s '%s' alone: its sum of squares has no finite bound",
                     what, d->op_type, node_name(d));
        plan_clear(&pl);
        return;
    }
    int k = 1;
    while (k < MAX_K && !fits(p, ldexp(need, -2 * k)))
        k++;
    double tiny = hg_ranges_get(p->r, x)->tiny;
    if (!fits(p, ldexp(need, -2 * k))) {
        hg_pass_note(p->env->result, PASS, "left %s at %s '%s' alone: its sum of squares may reach %.3g, beyond "
                     "what 2^-%d can bring under %g", what, d->op_type, node_name(d), need, MAX_K,
                     p->threshold);
        plan_clear(&pl);
        return;
    }
    if (tiny >= FP16_MIN_NORMAL && ldexp(tiny, -k) < FP16_MIN_NORMAL) {
        hg_pass_note(p->env->result, PASS, "left %s at %s '%s' alone: pre-scaling by 2^-%d would push x's smallest "
                     "magnitude %.3g below FP16's normal range", what, d->op_type, node_name(d), k, tiny);
        plan_clear(&pl);
        return;
    }
    /* Scale the plan: x by 2^-k, each value and eps by its power of 2^-k. */
    pl.x = x;
    pl.xe = -k;
    for (guint i = 0; i < pl.vals->len; i++)
        g_array_index(pl.vals, ValEdit, i).e *= k;
    for (guint i = 0; i < pl.consts->len; i++) {
        ConstEdit *ce = &g_array_index(pl.consts, ConstEdit, i);
        ce->e *= k;
        g_autoptr(HgArray) a = const_array(p, ce->node->inputs[ce->index]);
        ce->scaled = a ? scaled_exact(a, ce->e) : NULL;
        if (!ce->scaled) {
            hg_pass_note(p->env->result, PASS, "left %s at %s '%s' alone: its epsilon cannot be scaled by 2^%d "
                         "exactly", what, d->op_type, node_name(d), ce->e);
            plan_clear(&pl);
            return;
        }
    }
    g_autoptr(GString) note = g_string_new(NULL);
    g_string_append_printf(note, "pre-scaled '%s' by 2^-%d into the %s at %s '%s', k=%d: the sum of squares "
                           "may reach ", x->name, k, what, d->op_type, node_name(d), k);
    describe_bound(note, need, cal);
    g_string_append_printf(note, " > %g, %.3g after", p->threshold, ldexp(need, -2 * k));
    for (guint i = 0; i < pl.consts->len; i++) {
        const ConstEdit *ce = &g_array_index(pl.consts, ConstEdit, i);
        g_string_append_printf(note, "; epsilon '%s' of %s '%s' scaled by 2^%d",
                               ce->node->inputs[ce->index]->name, ce->node->op_type, node_name(ce->node),
                               ce->e);
    }
    if (tiny > 0)
        g_string_append_printf(note, "; x's smallest magnitude %.3g becomes %.3g", tiny, ldexp(tiny, -k));
    pl.note = g_string_free(g_steal_pointer(&note), FALSE);
    g_autofree char *where = g_strdup_printf("%s at %s '%s'", what, d->op_type, node_name(d));
    if (!cheaper_than_island(p, &pl, m.nodes, m.n_nodes, where)) {
        plan_clear(&pl);
        return;
    }
    take_plan(p, &pl, m.nodes, m.n_nodes);
}

/* ---------------------------------------------------------------- rewriting */

/* Statistics of old_name scaled by 2^e, added for new_name. */
static void
carry_stats(Pre *p, const char *old_name, const char *new_name, int e)
{
    const HgTensorStats *st = p->stats ? hg_stats_get(p->stats, old_name) : NULL;
    if (!st)
        return;
    HgTensorStats n = *st;
    n.min = ldexp(st->min, e);
    n.max = ldexp(st->max, e);
    n.absmax = ldexp(st->absmax, e);
    n.min_abs_nonzero = ldexp(st->min_abs_nonzero, e);
    hg_stats_set(p->stats, new_name, &n);
}

static HgValue *
new_value(HgGraph *g, const char *base)
{
    g_autofree char *name = hg_graph_unique_name(g, base);
    HgValue *v = hg_graph_new_value(g, name, NULL);
    g_assert(v);
    return v;
}

/* An initializer holding a (copied) under a name built from base. */
static HgValue *
new_initializer(HgGraph *g, const char *base, const HgArray *a)
{
    return hg_graph_new_initializer(g, base, hg_array_to_tensor(a, NULL));
}

/* A constant nothing reads any more goes: its Constant node, or its initializer. */
static void
rename_scaled(Pre *p, HgValue *v, int e)
{
    g_autofree char *base = g_strdup_printf("%s_prescaled", v->name);
    g_autofree char *name = hg_graph_unique_name(p->g, base);
    carry_stats(p, v->name, name, e);
    gboolean ok = hg_value_rename(v, name, NULL);
    g_assert(ok);
}

/* The power 2^e as a scalar of dtype (one per dtype and power). */
static HgValue *
power_const(Pre *p, int dtype, int e)
{
    g_autofree char *key = g_strdup_printf("\x02%d\x01%d", dtype, e);
    HgValue *v = g_hash_table_lookup(p->consts, key);
    if (v)
        return v;
    g_autoptr(HgArray) a = hg_array_new(dtype, 0, NULL, NULL);
    g_assert(a);
    double d = ldexp(1.0, e);
    hg_array_store_f64(a, &d);
    g_autofree char *base = g_strdup_printf("prescale_2_%s%d", e < 0 ? "m" : "", abs(e));
    v = new_initializer(p->g, base, a);
    g_hash_table_insert(p->consts, g_steal_pointer(&key), v);
    return v;
}

/* The constant v times 2^e (one per constant and power). */
static HgValue *
scaled_const(Pre *p, HgValue *v, int e, const HgArray *a)
{
    g_autofree char *key = g_strdup_printf("%s\x01%d", v->name, e);
    HgValue *w = g_hash_table_lookup(p->consts, key);
    if (w)
        return w;
    g_autofree char *base = g_strdup_printf("%s_prescaled", v->name);
    w = new_initializer(p->g, base, a);
    g_hash_table_insert(p->consts, g_steal_pointer(&key), w);
    return w;
}

static void
apply(Pre *p, Plan *pl)
{
    HgGraph *g = p->g;
    if (pl->x) {
        HgNode *first = NULL;
        for (guint i = 0; i < pl->xuses->len; i++) {
            HgNode *n = g_array_index(pl->xuses, HgUse, i).node;
            if (!first || n->order < first->order)
                first = n;
        }
        g_autofree char *xbase = g_strdup_printf("%s_prescaled", pl->x->name);
        HgValue *x2 = new_value(g, xbase);
        carry_stats(p, pl->x->name, x2->name, pl->xe);
        HgValue *ins[2] = {pl->x, power_const(p, dtype_of(p, pl->x), pl->xe)};
        g_autofree char *nbase = g_strdup_printf("%s_prescale", node_name(pl->anchor));
        g_autofree char *nname = hg_graph_unique_name(g, nbase);
        HgNode *mul = hg_graph_add_node(g, "Mul", NULL, nname, 2, ins, 1, &x2);
        hg_graph_move_node_before(g, mul, first);
        for (guint i = 0; i < pl->xuses->len; i++) {
            HgUse u = g_array_index(pl->xuses, HgUse, i);
            hg_node_set_input(u.node, u.index, x2);
        }
    }
    for (guint i = 0; i < pl->consts->len; i++) {
        ConstEdit *ce = &g_array_index(pl->consts, ConstEdit, i);
        HgValue *old = ce->node->inputs[ce->index];
        hg_node_set_input(ce->node, ce->index, scaled_const(p, old, ce->e, ce->scaled));
        hg_value_drop_if_unused(g, old);
    }
    for (guint i = 0; i < pl->vals->len; i++) {
        ValEdit *ve = &g_array_index(pl->vals, ValEdit, i);
        rename_scaled(p, ve->v, ve->e);
    }
    if (pl->post) {
        /* The producer writes a new value; a Mul by 2^post_e writes the old one (its name kept). */
        HgValue *y = pl->post;
        HgNode *prod = y->producer;
        int dt = dtype_of(p, y);
        g_autofree char *nbase = g_strdup_printf("%s_prescale_undo", node_name(pl->anchor));
        g_autofree char *ybase = g_strdup_printf("%s_prescaled", y->name);
        HgValue *y2 = new_value(g, ybase);
        carry_stats(p, y->name, y2->name, -pl->post_e);
        hg_node_set_output(prod, y->producer_index, y2);
        HgValue *ins[2] = {y2, power_const(p, dt, pl->post_e)};
        g_autofree char *nname = hg_graph_unique_name(g, nbase);
        hg_graph_add_node(g, "Mul", NULL, nname, 2, ins, 1, &y);
    }
    if (pl->drop) {
        /* The remainder is 1: the node that wrote the scale's input writes its output instead. */
        HgNode *sn = pl->drop;
        HgValue *y = sn->outputs[0], *a = sn->inputs[1 - pl->drop_ci], *c = sn->inputs[pl->drop_ci];
        HgNode *last = a->producer;
        guint slot = a->producer_index;
        hg_node_remove(sn);
        hg_value_drop_if_unused(g, c);
        last->outputs[slot] = y;
        y->producer = last;
        y->producer_index = slot;
        a->producer = NULL;
        for (guint i = g->value_info->len; i-- > 0;)
            if (((HgValueDecl *)g->value_info->pdata[i])->value == a)
                g_ptr_array_remove_index(g->value_info, i);
        hg_graph_touch(g);
    }
    hg_pass_note(p->env->result, PASS, "%s", pl->note);
    p->env->result->n_changed++;
}

/* ---------------------------------------------------------------- a reduction's FP16 running sum */

/* A ReduceSum, ReduceMean, ReduceL2 or ReduceSumSquare whose running sum, kept in FP16 (--accumulate
 * fp16), may pass the threshold while its output fits (the check's internal-overflow, of bound acc):
 * x pre-scaled by the smallest 2^-k that brings the running sum under the threshold (its squares by
 * 2^-2k for L2 and SumSquare), the result scaled back after the reduction (2^k; 2^2k for SumSquare).
 * Powers of two, so the FP32 result keeps its bits. Refused where 2^-k would push x's smallest known
 * magnitude below FP16's normal range. */
static void
match_reduce(Pre *p, HgNode *n)
{
    const double *acc = g_hash_table_lookup(p->internal, n);
    gboolean sq = hg_node_is(n, "ReduceL2") || hg_node_is(n, "ReduceSumSquare");
    if (!acc || g_hash_table_contains(p->in_norm, n) ||
        !(sq || hg_node_is(n, "ReduceSum") || hg_node_is(n, "ReduceMean")) || n->n_inputs < 1 ||
        !n->inputs[0] || n->n_outputs != 1 || !n->outputs[0] || !hg_dtype_is_float(dtype_of(p, n->inputs[0])) ||
        any_taken(p, &n, 1))
        return;
    int a = sq ? 2 : 1, o = hg_node_is(n, "ReduceSumSquare") ? 2 : 1;
    HgValue *x = n->inputs[0];
    int k = 1;
    while (a * k <= MAX_K && !fits(p, ldexp(*acc, -a * k)))
        k++;
    double tiny = hg_ranges_get(p->r, x)->tiny;
    if (!isfinite(*acc) || a * k > MAX_K || (tiny >= FP16_MIN_NORMAL && ldexp(tiny, -k) < FP16_MIN_NORMAL)) {
        hg_pass_note(p->env->result, PASS, "left %s '%s' alone: its running sum may reach %.3g, and no 2^-k on "
                     "its input brings it under %g while keeping the input's smallest magnitude (%.3g) normal",
                     n->op_type, node_name(n), *acc, p->threshold, tiny);
        return;
    }
    Plan pl;
    plan_init(&pl, n);
    pl.x = x;
    pl.xe = -k;
    add_xuse(&pl, n, 0);
    pl.post = n->outputs[0];
    pl.post_e = o * k;
    pl.note = g_strdup_printf("pre-scaled '%s' by 2^-%d into %s '%s', undone after it by 2^%d, k=%d: its FP16 "
                              "running sum may reach %.3g > %g, %.3g after", x->name, k, n->op_type, node_name(n),
                              o * k, k, *acc, p->threshold, ldexp(*acc, -a * k));
    g_autofree char *what = g_strdup_printf("%s '%s'", n->op_type, node_name(n));
    if (!cheaper_than_island(p, &pl, &n, 1, what)) {
        plan_clear(&pl);
        return;
    }
    take_plan(p, &pl, &n, 1);
}

gboolean
hg_pass_prescale(HgGraph *g, const HgPassEnv *env, GError **error)
{
    if (g->parent || !g->model)
        return TRUE;
    const HgCheckOptions *co = hg_analyses_options(env->analyses);
    HgCheckResult *res = hg_analyses_get(env->analyses, g, error);
    if (!res)
        return FALSE;
    Pre p = {
        .g = g,
        .env = env,
        .res = res,
        .s = hg_check_shapes(res),
        .r = hg_check_ranges(res),
        .stats = co->stats,
        .threshold = co->threshold > 0 ? co->threshold : HG_DEFAULT_THRESHOLD,
        .hazard_at = g_hash_table_new(NULL, NULL),
        .internal = g_hash_table_new_full(NULL, NULL, NULL, g_free),
        .in_norm = g_hash_table_new(NULL, NULL),
        .taken = g_hash_table_new(NULL, NULL),
        .consts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
        .plans = g_array_new(FALSE, TRUE, sizeof(Plan)),
        .cured = g_hash_table_new(NULL, NULL),
        .cut_now = NAN,
    };
    for (guint i = 0; i < res->hazards->len; i++) {
        const HgHazard *h = res->hazards->pdata[i];
        if (h->at && (h->kind == HG_HAZARD_OVERFLOW || h->kind == HG_HAZARD_INTERNAL_OVERFLOW))
            g_hash_table_add(p.hazard_at, (gpointer)h->at);
        if (h->at && h->kind == HG_HAZARD_INTERNAL_OVERFLOW && !isnan(h->bound)) {
            double *b = g_hash_table_lookup(p.internal, h->at);
            if (!b)
                g_hash_table_insert(p.internal, (gpointer)h->at, b = g_new0(double, 1));
            *b = MAX(*b, h->bound);
        }
    }
    guint n_nodes = g->nodes->len;
    for (guint i = 0; i < n_nodes && !p.error; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (n->flags & HG_NODE_DEAD)
            continue;
        match_scale(&p, n);
        match_l2(&p, n);
    }
    /* then the reductions that no norm above took in */
    for (guint i = 0; i < n_nodes && !p.error; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (!(n->flags & HG_NODE_DEAD))
            match_reduce(&p, n);
    }
    for (guint i = 0; i < p.plans->len && !p.error; i++)
        apply(&p, &g_array_index(p.plans, Plan, i));
    gboolean changed = p.plans->len > 0 && !p.error;
    for (guint i = 0; i < p.plans->len; i++)
        plan_clear(&g_array_index(p.plans, Plan, i));
    g_array_unref(p.plans);
    g_hash_table_unref(p.consts);
    g_hash_table_unref(p.taken);
    g_hash_table_unref(p.hazard_at);
    g_hash_table_unref(p.internal);
    g_hash_table_unref(p.in_norm);
    g_hash_table_unref(p.cured);
    if (p.error) {
        g_propagate_error(error, p.error);
        return FALSE;
    }
    if (!changed)
        return TRUE;
    hg_graph_compact(g);
    return hg_graph_sort(g, error);
}
