/* FP16 hazards: the rules that turn intervals (and calibration statistics) into findings.
 *
 * Each rule looks at one node with the static range of its values (src/ranges.c) and, where given,
 * what calibration saw. A decision uses the smaller of the static bound and the observed absmax times
 * the margin, and records which one decided. Values reachable from a graph input without a range are
 * unbounded for lack of information, not because of the model: rules stay silent on them (the report
 * names those inputs instead) unless calibration saw them. README.md ("Hazards") explains each rule;
 * the constants below are the FP16 facts they rest on. */
#include "hazards.h"
#include "halfguard/run.h"
#include "derive.h"
#include "halfguard/feeds.h"

#include <math.h>
#include <string.h>

#include "index_exact.h"
#include "ops/array.h"
#include "ops/op.h"
#include "ranges.h"
#include "shapes.h"

#define FP16_MAX 65504.0
#define FP16_MIN_NORMAL 6.103515625e-05 /* 2^-14 */
#define FP16_FLUSH 2.98023223876953125e-08 /* 2^-25: magnitudes at or below it round to 0 */
#define FP16_MIN_SUBNORMAL 5.9604644775390625e-08 /* 2^-24: FP16's smallest nonzero magnitude */
#define FP16_EPS 4.8828125e-04            /* 2^-11: FP16's relative rounding, half an ulp */
#define EXP_LIMIT 11.090354888959125      /* log(65504): exp passes FP16's range above it */
#define SOFTMAX_SPREAD 2048.0             /* FP16 spacing reaches 2 here: logits lose their units */
#define PHASE_MAX 16.0                    /* FP16 spacing reaches 2^-6 here: angles lose 0.008 rad */
#define SPREAD_MIN_STEPS 128.0            /* FP16 steps a centred tensor's spread needs (7 bits) */
#define CUMSUM_MAX_LEN 128                /* len * 2^-11 > 1/16: worst-case relative error of the sums */
#define SMALL_NUMEL 64                    /* tensors of shape math are this small */
#define FP16_EXACT_INT 2048.0             /* FP16 holds every integer up to this */

/* FP16's spacing at magnitude x (normal x): the gap to the next value. */
static double
fp16_spacing(double x)
{
    return isfinite(x) ? ldexp(1.0, ilogb(x) - 10) : INFINITY;
}

static const struct {
    const char *name, *description;
} kinds[HG_HAZARD_N_KINDS] = {
    {"overflow", "A tensor can pass the FP16 threshold (65504): stored in FP16 it becomes inf."},
    {"internal-overflow", "An accumulator or intermediate inside one op (a reduction's sum, a sum of "
                          "squares, exp inside Softplus) can pass FP16's range while the output fits."},
    {"underflow", "A value FP16 turns to 0 or robs of its meaning: an epsilon below FP16's smallest "
                  "subnormal (6e-08) that feeds a Div, Sqrt or Reciprocal, weights that flush to zero "
                  "in FP16, activations whose every value calibration sees below FP16's normal "
                  "range (6.1e-05) (terms negligible next to what they are added to excepted), or a Log "
                  "whose input may be positive and below that range (FP16 makes it 0 and the Log -inf)."},
    {"non-finite-constant", "A constant holds inf or NaN, or values beyond FP16's range (such as "
                            "float32-min mask fills) that become inf in FP16."},
    {"division-by-zero", "A divisor whose FP16 range reaches 0 (including values that flush to 0)."},
    {"precision-loss", "The needed spread exceeds FP16's 11 bits: Softmax logits in the thousands, "
                       "the cancellation of large prefix sums, a long FP16 CumSum, the angle of a Sin "
                       "or Cos past 16, or a tensor centred by a normalization or an offset whose spread "
                       "spans fewer than 128 FP16 steps."},
    {"must-stay-fp32", "Shape arithmetic, Resize scales or integer-valued float math: FP16 would change "
                       "sizes or indices."},
    {"unranged-input", "A graph input whose values reach float arithmetic has no range (given or derived) "
                       "and no calibration data: what is computed from it is unbounded for lack of "
                       "information, so nothing about it is proven."},
};

const char *
hg_hazard_kind_name(HgHazardKind kind)
{
    return (guint)kind < HG_HAZARD_N_KINDS ? kinds[kind].name : "unknown";
}

const char *
hg_hazard_kind_description(HgHazardKind kind)
{
    return (guint)kind < HG_HAZARD_N_KINDS ? kinds[kind].description : "";
}

const char *
hg_hazard_kind_level(HgHazardKind kind)
{
    switch (kind) {
    case HG_HAZARD_UNDERFLOW:
    case HG_HAZARD_PRECISION_LOSS:
    case HG_HAZARD_UNRANGED_INPUT:
        return "warning";
    case HG_HAZARD_MUST_STAY_FP32:
        return "note";
    default:
        return "error";
    }
}

gboolean
hg_check_fail_on_parse(const char *spec, guint *mask, GError **error)
{
    static const char *const levels[] = {"error", "warning", "note"};
    g_auto(GStrv) words = g_strsplit(spec, ",", -1);
    *mask = 0;
    for (guint i = 0; words[i]; i++) {
        const char *w = g_strstrip(words[i]);
        gboolean known = FALSE;
        for (guint l = 0; l < G_N_ELEMENTS(levels); l++) {
            if (strcmp(w, levels[l]) != 0)
                continue;
            known = TRUE;
            for (int k = 0; k < HG_HAZARD_N_KINDS; k++) /* a level and every level above it */
                for (guint m = 0; m <= l; m++)
                    if (strcmp(hg_hazard_kind_level(k), levels[m]) == 0)
                        *mask |= 1u << k;
        }
        for (int k = 0; k < HG_HAZARD_N_KINDS && !known; k++)
            if (strcmp(w, hg_hazard_kind_name(k)) == 0) {
                known = TRUE;
                *mask |= 1u << k;
            }
        if (!known) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                        "--fail-on: '%s' is neither a level (error, warning, note) nor a hazard kind", w);
            return FALSE;
        }
    }
    return TRUE;
}

const char *
hg_bound_source_name(HgBoundSource source)
{
    static const char *const names[] = {"static", "calibration", "synthetic", "assumed"};
    return (guint)source < G_N_ELEMENTS(names) ? names[source] : "static";
}

int
hg_hazard_kind_from_name(const char *name)
{
    for (int k = 0; k < HG_HAZARD_N_KINDS; k++)
        if (name && strcmp(name, kinds[k].name) == 0)
            return k;
    return -1;
}

int
hg_input_range_rank(const char *name, const char *input)
{
    if (strcmp(name, input) == 0)
        return 3;
    if (strcmp(name, "*") == 0)
        return 1;
    return strpbrk(name, "*?") && g_pattern_match_simple(name, input) ? 2 : 0;
}

gboolean
hg_input_range_parse(const char *text, HgInputRangeSpec *out, GError **error)
{
    const char *eq = strrchr(text, '=');
    const char *colon = eq ? strchr(eq + 1, ':') : NULL;
    char *end1 = NULL, *end2 = NULL;
    double lo = 0, hi = 0;
    if (colon) {
        lo = g_ascii_strtod(eq + 1, &end1);
        hi = g_ascii_strtod(colon + 1, &end2);
    }
    if (!eq || eq == text || !colon || end1 != colon || end1 == eq + 1 || *end2 || end2 == colon + 1 ||
        isnan(lo) || isnan(hi) || lo > hi) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "bad input range '%s': expected NAME=LO:HI with LO <= HI (NAME may be *)", text);
        return FALSE;
    }
    out->name = g_strndup(text, (gsize)(eq - text));
    out->lo = lo;
    out->hi = hi;
    return TRUE;
}

void
hg_input_range_spec_clear(HgInputRangeSpec *spec)
{
    g_return_if_fail(spec != NULL);
    g_clear_pointer(&spec->name, g_free);
}

/* ---------------------------------------------------------------- the analysis state */

typedef struct {
    HgModel *model;
    HgStats *stats;
    double margin, threshold;
    HgAccumulateModel accumulate;
    HgShapes *shapes;
    HgRanges *ranges;
    GHashTable *open;      /* HgValue*: depends on an input without a range */
    GHashTable *fp32;      /* HgValue*: float values that feed shape math or FP32-only inputs */
    GHashTable *seen_init; /* HgValue*: initializers already checked */
    GPtrArray *hazards;
    guint64 generation;    /* the main graph's when computed: what the passes' reads are checked against */
    HgStats *probe;        /* HgCheckOptions.probe: read only to find values too small for FP16 */
    GHashTable *probe_ok;  /* HgValue*: found safe for FP16 by what the probe saw, not by a bound */
} Check;

static void
hazard_free(gpointer p)
{
    HgHazard *h = p;
    g_free(h->node);
    g_free(h->op);
    g_free(h->value);
    g_free(h->message);
    g_free(h->action);
    g_free(h->suppressed);
    g_free(h->fixed_by);
    g_free(h);
}

static void
check_free(Check *c)
{
    hg_shapes_free(c->shapes);
    hg_ranges_free(c->ranges);
    g_hash_table_unref(c->open);
    g_hash_table_unref(c->fp32);
    g_hash_table_unref(c->seen_init);
    g_hash_table_unref(c->probe_ok);
    g_free(c);
}

void
hg_check_result_free(HgCheckResult *r)
{
    if (!r)
        return;
    if (r->priv)
        check_free(r->priv);
    g_ptr_array_unref(r->hazards);
    g_ptr_array_unref(r->unranged_inputs);
    if (r->inputs)
        g_ptr_array_unref(r->inputs);
    if (r->unknown_ops)
        g_ptr_array_unref(r->unknown_ops);
    if (r->assumptions)
        g_ptr_array_unref(r->assumptions);
    g_free(r);
}

/* Does magnitude b pass the threshold? FP16 stores every |x| below 65520 as at most 65504 (half an
 * ulp of rounding), so a bound within that relative 2^-12 of the threshold (FP32 rounding slack of
 * the interval rules, say) is no overflow. */
static gboolean
exceeds(const Check *c, double b)
{
    return b > c->threshold * (1 + 0x1p-12);
}

static const HgTensorStats *
stats_of(const Check *c, const HgValue *v)
{
    return c->stats && v ? hg_stats_get(c->stats, v->name) : NULL;
}

/* What the synthetic probe saw of v (HgCheckOptions.probe), where it ran and v is a float value. */
static const HgTensorStats *
probe_of(const Check *c, const HgValue *v)
{
    const HgTensorStats *s = c->probe && v ? hg_stats_get(c->probe, v->name) : NULL;
    return s && !isnan(s->absmax) && (s->dtype == HG_DTYPE_FLOAT || s->dtype == HG_DTYPE_DOUBLE) ? s : NULL;
}

static double
absmax(const HgRange *r)
{
    return MAX(fabs(r->lo), fabs(r->hi));
}

/* A deciding magnitude for v: where calibration saw v, its absmax times the margin (capped by the
 * static bound; a value calibration saw overflow is unbounded), else the static bound. known is FALSE
 * when v is open and unobserved. */
typedef struct {
    double bound;
    HgBoundSource source;
    gboolean known;
    const HgTensorStats *stats;
} Decided;

/* Did calibration see infinities that FP16 makes? Infinities a wider type already computes (log(0)
 * in T5's relative-position buckets, say) are there in FP32 too: FP16 adds only those of finite
 * values past its range. Seen in a run that stores the tensor in FP16 or narrower, an infinity may
 * be the narrow type's own overflow. */
static gboolean
fp16_inf(const HgTensorStats *s)
{
    return s && s->n_inf && s->dtype != HG_DTYPE_FLOAT && s->dtype != HG_DTYPE_DOUBLE;
}

static Decided
decide(const Check *c, const HgValue *v)
{
    const HgRange *r = hg_ranges_get(c->ranges, v);
    Decided d = {absmax(r), HG_SOURCE_STATIC, TRUE, stats_of(c, v)};
    gboolean inf = fp16_inf(d.stats);
    if (d.stats && (inf || !isnan(d.stats->absmax))) {
        /* Calibration decides; the static bound, being sound, caps it. */
        double o = inf ? INFINITY : d.stats->absmax * c->margin;
        d.bound = MIN(o, d.bound);
        d.source = HG_SOURCE_CALIBRATION;
    } else if (!isfinite(d.bound) && g_hash_table_contains(c->open, v)) {
        d.known = FALSE;
    }
    return d;
}

static HgHazard *
add_hazard(Check *c, HgHazardKind kind, const HgNode *n, const HgValue *v, Decided d, const char *action,
           const char *fmt, ...) G_GNUC_PRINTF(7, 8);

static HgHazard *
add_hazard(Check *c, HgHazardKind kind, const HgNode *n, const HgValue *v, Decided d, const char *action,
           const char *fmt, ...)
{
    HgHazard *h = g_new0(HgHazard, 1);
    h->kind = kind;
    h->node = g_strdup(n && n->name ? n->name : "");
    h->op = g_strdup(n ? n->op_type : "");
    h->value = v ? g_strdup(v->name) : NULL;
    va_list ap;
    va_start(ap, fmt);
    h->message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    h->bound = d.bound;
    h->source = d.source;
    /* Statistics from inputs halfguard drew itself decide like calibration, and say so. */
    if (d.source == HG_SOURCE_CALIBRATION && d.stats && d.stats->synthetic) {
        h->source = HG_SOURCE_SYNTHETIC;
        g_auto(GStrv) parts = g_strsplit(h->message, "calibration", -1);
        g_free(h->message);
        h->message = g_strjoinv("synthetic calibration", parts);
    }
    const HgRange *r = hg_ranges_get(c->ranges, v);
    h->static_lo = v ? r->lo : NAN;
    h->static_hi = v ? r->hi : NAN;
    if (d.stats && !isnan(d.stats->min)) {
        h->has_observed = TRUE;
        h->observed_lo = d.stats->n_inf ? -INFINITY : d.stats->min;
        h->observed_hi = d.stats->n_inf ? INFINITY : d.stats->max;
    }
    h->action = g_strdup(action);
    h->at = n;
    g_ptr_array_add(c->hazards, h);
    return h;
}

/* "output may reach 2.1e+06 (static); observed 8.9e+04 (calibration) > 65504" */
static char *
describe_bound(const Check *c, const char *what, const HgValue *v, Decided d, double limit)
{
    const HgRange *r = hg_ranges_get(c->ranges, v);
    GString *s = g_string_new(NULL);
    double b = absmax(r);
    if (isfinite(b))
        g_string_append_printf(s, "%s may reach %.3g (static)", what,
                               fabs(r->lo) > fabs(r->hi) ? r->lo : r->hi);
    else if (g_hash_table_contains(c->open, v))
        g_string_append_printf(s, "%s is unbounded (static: an input has no range)", what);
    else
        g_string_append_printf(s, "%s is unbounded (static)", what);
    if (fp16_inf(d.stats))
        g_string_append_printf(s, "; observed inf (calibration)");
    else if (d.stats && !isnan(d.stats->absmax)) {
        double o = fabs(d.stats->min) > fabs(d.stats->max) ? d.stats->min : d.stats->max;
        if (d.stats->absmax > limit || d.bound < d.stats->absmax * c->margin)
            g_string_append_printf(s, "; observed %.3g (calibration)", o);
        else
            g_string_append_printf(s, "; observed %.3g (calibration), %.3g with margin %g", o,
                                   d.stats->absmax * c->margin, c->margin);
    }
    g_string_append_printf(s, " > %g", limit);
    return g_string_free(s, FALSE);
}

static gboolean
is_float_value(const Check *c, const HgValue *v)
{
    if (!v)
        return FALSE;
    const HgValueShape *s = hg_shapes_get(c->shapes, v);
    return hg_dtype_is_float(s->dtype);
}

/* The value of a constant input: an initializer, or what shape inference folded. New reference. */
static HgArray *
const_value(const Check *c, const HgValue *v)
{
    if (!v)
        return NULL;
    if (v->init)
        return hg_array_from_tensor(v->init, NULL);
    const HgValueShape *s = hg_shapes_get(c->shapes, v);
    return s->value ? hg_array_ref(s->value) : NULL;
}

static gboolean
is_constant(const Check *c, const HgValue *v)
{
    return v && (v->init || hg_shapes_get(c->shapes, v)->value);
}

/* ---------------------------------------------------------------- reachability */

static void
unknown_op_free(gpointer p)
{
    HgUnknownOp *u = p;
    g_free(u->op);
    g_free(u);
}

/* Values that depend on a float graph input without a range, or on the outputs of an op without a
 * row (unknown_ops collects those ops, with the float tensors that depend on each). */
static void
mark_open(Check *c, GPtrArray *order, GPtrArray *unranged, GPtrArray *unknown_ops)
{
    /* A set of the names: a Sum of 10^5 unranged inputs must not compare 10^10 pairs. */
    g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint k = 0; k < unranged->len; k++)
        g_hash_table_add(names, unranged->pdata[k]);
    /* What depends on such an input or on an unknown op's output (tainted), and of that, what no
     * rule bounds (open: unchecked where its bound would decide). */
    g_autoptr(GHashTable) tainted = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < c->model->graph->inputs->len; i++) {
        HgValue *v = ((HgValueDecl *)c->model->graph->inputs->pdata[i])->value;
        if (g_hash_table_contains(names, v->name)) {
            g_hash_table_add(c->open, v);
            g_hash_table_add(tainted, v);
        }
    }
    /* value -> the HgUnknownOp it depends on (the first one found), for the counts. */
    g_autoptr(GHashTable) from = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        gboolean known = hg_op_for_node(n) != NULL, taints = !known;
        HgUnknownOp *u = NULL;
        for (guint k = 0; k < n->n_inputs; k++) {
            if (!n->inputs[k])
                continue;
            taints |= g_hash_table_contains(tainted, n->inputs[k]);
            if (!u)
                u = g_hash_table_lookup(from, n->inputs[k]);
        }
        if (!taints)
            continue;
        if (!known) {
            g_autofree char *name = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0
                                        ? g_strdup_printf("%s.%s", n->domain, n->op_type)
                                        : g_strdup(n->op_type);
            u = NULL;
            for (guint k = 0; k < unknown_ops->len && !u; k++)
                if (strcmp(((HgUnknownOp *)unknown_ops->pdata[k])->op, name) == 0)
                    u = unknown_ops->pdata[k];
            if (!u) {
                u = g_new0(HgUnknownOp, 1);
                u->op = g_steal_pointer(&name);
                g_ptr_array_add(unknown_ops, u);
            }
            u->nodes++;
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            if (!n->outputs[k])
                continue;
            /* A known op's output that its rule bounds whatever the tainted inputs hold (a Gather of
             * constant data at an index an unknown op computed) is checked like any other: the bound
             * holds for every value they may take. What it feeds stays tainted, so a bound lost after
             * it for lack of what the unknown op would have told (a shape) is not taken for a hazard. */
            g_hash_table_add(tainted, n->outputs[k]);
            const HgRange *r = hg_ranges_get(c->ranges, n->outputs[k]);
            gboolean bounded = known && !r->nan && isfinite(r->lo) && isfinite(r->hi);
            if (!bounded)
                g_hash_table_add(c->open, n->outputs[k]);
            if (u && !g_hash_table_contains(from, n->outputs[k])) {
                g_hash_table_insert(from, n->outputs[k], u);
                if (!bounded && is_float_value(c, n->outputs[k]))
                    u->downstream++;
            }
        }
    }
}

static gboolean
is_int_dtype(gint64 dt)
{
    return dt != HG_DTYPE_UNDEFINED && !hg_dtype_is_float((int)dt) && dt != HG_DTYPE_STRING;
}

/* Does every element of a folded float value survive FP16 unchanged? */
static gboolean
fp16_exact(const HgArray *a)
{
    for (gint64 i = 0; i < a->numel; i++) {
        double x = hg_array_get_f64(a, i);
        if (isfinite(x) && (double)hg_round_half((float)x) != x)
            return FALSE;
    }
    return TRUE;
}

/* A value FP16 cannot change: an initializer (checked as a constant), or shape math that shape
 * inference folded to values FP16 holds exactly. */
static gboolean
fixed_in_fp16(const Check *c, const HgValue *v)
{
    if (v->init)
        return TRUE;
    const HgArray *a = hg_shapes_get(c->shapes, v)->value;
    return a && fp16_exact(a);
}

/* Does v hold integers only (a Cast of an integer or bool tensor, an integer-valued constant, and
 * what sums, differences, products, selections and reshapes make of them)? */
static gboolean
integer_valued(const Check *c, const HgValue *v, int depth)
{
    if (!v || depth > 16)
        return FALSE;
    if (is_constant(c, v)) {
        g_autoptr(HgArray) a = const_value(c, v);
        for (gint64 i = 0; a && i < a->numel; i++) {
            double x = hg_array_get_f64(a, i);
            if (x != floor(x))
                return FALSE;
        }
        return a != NULL;
    }
    const HgNode *p = v->producer;
    if (!p)
        return FALSE;
    if (hg_node_is(p, "Cast")) {
        int dt = p->inputs[0] ? hg_shapes_get(c->shapes, p->inputs[0])->dtype : HG_DTYPE_UNDEFINED;
        return is_int_dtype(dt) || dt == HG_DTYPE_BOOL || integer_valued(c, p->inputs[0], depth + 1);
    }
    if (hg_node_has_traits(p, HG_TRAIT_ROUNDS_TO_INT))
        return TRUE;
    if (!(hg_node_passes_through(p) && !hg_node_is(p, "Cast")) && !hg_node_has_traits(p, HG_TRAIT_INT_CLOSED))
        return FALSE;
    gboolean any = FALSE;
    for (guint k = 0; k < p->n_inputs; k++) {
        const HgValue *x = p->inputs[k];
        gboolean data = k == 0 || hg_node_is(p, "Concat") ||
                        !(hg_node_passes_through(p) || hg_node_is(p, "CumSum"));
        if (!x || !is_float_value(c, x) || !data)
            continue; /* shapes, axes and conditions */
        if (!integer_valued(c, x, depth + 1))
            return FALSE;
        any = TRUE;
    }
    return any;
}

/* Is v float math on integers alone: every float it is computed from, through elementwise ops,
 * reshaping and selection, is a Cast of an integer tensor or a constant? (T5's relative-position
 * buckets: positions cast to float, divided, logged, scaled, cast back to an index.) */
static gboolean
from_integers(const Check *c, const HgValue *v, int depth)
{
    if (!v || depth > 16)
        return FALSE;
    if (is_constant(c, v))
        return TRUE;
    const HgNode *p = v->producer;
    if (!p)
        return FALSE;
    if (hg_node_is(p, "Cast"))
        return p->inputs[0] && (is_int_dtype(hg_shapes_get(c->shapes, p->inputs[0])->dtype) ||
                                hg_shapes_get(c->shapes, p->inputs[0])->dtype == HG_DTYPE_BOOL ||
                                from_integers(c, p->inputs[0], depth + 1));
    const HgOpDef *op = hg_op_for_node(p);
    if (!op || !(op->traits & (HG_TRAIT_ELEMENTWISE | HG_TRAIT_DATA_MOVEMENT)))
        return FALSE;
    gboolean any = FALSE;
    for (guint k = 0; k < p->n_inputs; k++) {
        const HgValue *x = p->inputs[k];
        if (!x || !is_float_value(c, x))
            continue; /* integer and bool inputs (indices, conditions) are integers already */
        if (!from_integers(c, x, depth + 1))
            return FALSE;
        any = TRUE;
    }
    return any;
}

/* What calibration saw of the chain's root: its own statistics, or (an integer root has none) those
 * of a float Cast of it in the chain, which holds the same numbers. */
static const HgTensorStats *
root_stats(const Check *c, const HgIndexChain *ch)
{
    const HgTensorStats *s = stats_of(c, ch->source);
    for (guint i = 0; !s && i < ch->nodes->len; i++) {
        const HgNode *n = ch->nodes->pdata[i];
        if (hg_node_is(n, "Cast") && n->inputs[0] == ch->source && is_float_value(c, n->outputs[0]))
            s = stats_of(c, n->outputs[0]);
    }
    return s;
}

/* Is the float math that v (read by a Cast to integer type `to`) holds exact in FP16 for every integer
 * its root can hold? The root's static range decides, narrowed by what calibration saw (its
 * magnitudes times the margin, its signs as seen). For shape math (tensors as small as shapes are),
 * sizes at deployment may differ from the samples' by more than any margin: there the narrowed range
 * still covers every integer to 2048, FP16's exact integers (FP32 shape math costs nothing, but an
 * FP32 island is an island). */
static gboolean
index_math_exact(const Check *c, const HgValue *v, int to)
{
    HgIndexChain ch;
    hg_index_chain_init(&ch, c->shapes, hg_model_opset(c->model, ""));
    ch.result = v;
    g_autoptr(GPtrArray) roots = hg_index_chain_roots(&ch);
    gboolean ok = FALSE;
    /* The deepest root whose range can be tried and proves the chain exact. */
    for (guint i = 0; i < roots->len && !ok; i++) {
        if (!hg_index_chain_build(&ch, roots->pdata[i]))
            continue;
        const HgRange *r = hg_ranges_get(c->ranges, ch.source);
        double lo = r->lo, hi = r->hi;
        gint64 numel = hg_vshape_numel(hg_shapes_get(c->shapes, v));
        gboolean small = numel >= 0 && numel <= SMALL_NUMEL;
        const HgTensorStats *s = root_stats(c, &ch);
        if (s && !s->n_nan && !s->n_inf && !isnan(s->min)) {
            double slo = s->min < 0 ? s->min * c->margin : s->min / c->margin;
            double shi = s->max > 0 ? s->max * c->margin : s->max / c->margin;
            if (small) {
                slo = MIN(slo, -FP16_EXACT_INT);
                shi = MAX(shi, FP16_EXACT_INT);
            }
            lo = MAX(lo, slo);
            hi = MIN(hi, shi);
        }
        ok = hg_index_chain_exact(&ch, lo, hi, to);
    }

    hg_index_chain_clear(&ch);
    return ok;
}

/* Float values that decide sizes or indices and that FP16 could change: inputs the op table keeps
 * FP32 (Resize scales, ...) and inputs of Casts to integers, computed at run time or folded to values
 * FP16 does not hold (2049 becomes 2048), followed back through their producers while the tensors
 * stay as small as shape math is (or come from integers). */
static void
mark_fp32(Check *c, GPtrArray *order)
{
    GPtrArray *work = g_ptr_array_new();
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        const HgOpDef *op = hg_op_for_node(n);
        for (guint k = 0; k < n->n_inputs; k++) {
            HgValue *v = n->inputs[k];
            if (!v || !is_float_value(c, v) || fixed_in_fp16(c, v))
                continue;
            gint64 to = hg_node_is(n, "Cast") ? hg_node_attr_int(n, "to", 0) : HG_DTYPE_UNDEFINED;
            gboolean sink = (op && k < 32 && (op->fp32_inputs >> k & 1)) ||
                            (is_int_dtype(to) && to != HG_DTYPE_BOOL && !index_math_exact(c, v, (int)to));
            if (sink)
                g_ptr_array_add(work, v);
        }
    }
    while (work->len) {
        HgValue *v = g_ptr_array_steal_index(work, work->len - 1);
        if (g_hash_table_contains(c->fp32, v) || !v->producer || fixed_in_fp16(c, v))
            continue;
        const HgValueShape *s = hg_shapes_get(c->shapes, v);
        gint64 numel = hg_vshape_numel(s);
        HgNode *p = v->producer;
        gboolean from_int = hg_node_is(p, "Cast") && p->inputs[0] &&
                            is_int_dtype(hg_shapes_get(c->shapes, p->inputs[0])->dtype);
        if (!(numel >= 0 && numel <= SMALL_NUMEL) && !from_int && !from_integers(c, v, 0))
            continue;
        g_hash_table_add(c->fp32, v);
        for (guint k = 0; k < p->n_inputs; k++)
            if (p->inputs[k] && is_float_value(c, p->inputs[k]) && !fixed_in_fp16(c, p->inputs[k]))
                g_ptr_array_add(work, p->inputs[k]);
    }
    g_ptr_array_unref(work);
}

/* ---------------------------------------------------------------- rules */

static const char *const KEEP_FP32 = "keep the node FP32 (assign_precision)";

/* Constants: inf, NaN, magnitudes past FP16's range; nonzero values that flush to zero. */
static void
check_constant(Check *c, const HgNode *at, const HgValue *v, const HgScan *s, gboolean report_flush)
{
    const HgRange *r = &s->range;
    gint64 n_out = s->n_nonfinite + s->n_big;
    const char *what = v->init ? "initializer" : "constant";
    if (n_out) {
        double worst = r->nan ? NAN : fabs(r->lo) > fabs(r->hi) ? r->lo : r->hi;
        Decided d = {fabs(worst), HG_SOURCE_STATIC, TRUE, NULL};
        add_hazard(c, HG_HAZARD_NONFINITE_CONSTANT, at, v, d,
                   "clamp to +-65504 where the use is an additive mask (clamp_constants); else keep "
                   "the consumer FP32",
                   "%s '%s' holds %" G_GINT64_FORMAT " value%s beyond FP16's range (%s %.3g)", what,
                   v->name, n_out, n_out == 1 ? "" : "s", r->nan ? "NaN;" : "e.g.", worst);
    }
    /* A few stray tiny weights lose nothing that matters; a tensor that largely flushes does,
     * unless what flushes is negligible next to its largest weights (every flushing value is below
     * 2^-25, so that takes a tensor whose largest magnitude is below 2^-14: all of it tiny). */
    double top = MAX(fabs(r->lo), fabs(r->hi));
    if (report_flush && s->n_flush && s->n_flush * 10 >= s->n_nonzero && FP16_FLUSH > top * FP16_EPS) {
        Decided t = {r->tiny, HG_SOURCE_STATIC, TRUE, NULL};
        add_hazard(c, HG_HAZARD_UNDERFLOW, at, v, t, "keep the consumer FP32 (assign_precision)",
                   "%s '%s': %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " nonzero values (smallest "
                   "%.3g) flush to zero in FP16", what, v->name, s->n_flush, s->n_nonzero, r->tiny);
    }
}

/* The constant magnitude of a value all of whose elements are nonzero and below FP16's normal range
 * (an epsilon), or 0. */
static double
tiny_constant(const Check *c, const HgValue *v)
{
    const HgValueShape *s = hg_shapes_get(c->shapes, v);
    gint64 numel = v->init ? hg_tensor_numel(v->init) : s->value ? s->value->numel : -1;
    if (!hg_dtype_is_float(s->dtype) || numel <= 0 || numel > SMALL_NUMEL)
        return 0;
    g_autoptr(HgArray) a = const_value(c, v);
    if (!a)
        return 0;
    double m = 0;
    for (gint64 i = 0; i < a->numel; i++) {
        double x = fabs(hg_array_get_f64(a, i));
        if (x == 0 || x >= FP16_MIN_NORMAL)
            return 0;
        m = MAX(m, x);
    }
    return m;
}

/* Does v flow (through Cast, Identity, reshaping) into a divisor, Sqrt, Reciprocal or a negative
 * power? depth bounds the walk. */
static const HgNode *
feeds_division(const HgValue *v, int depth)
{
    if (!v || depth > 4)
        return NULL;
    for (guint u = 0; u < v->uses->len; u++) {
        HgUse *use = &g_array_index(v->uses, HgUse, u);
        HgNode *n = use->node;
        if (hg_node_is(n, "Sqrt") || hg_node_is(n, "Reciprocal") || (hg_node_is(n, "Div") && use->index == 1) ||
            (hg_node_is(n, "Pow") && use->index == 0) || hg_node_is(n, "Log"))
            return n;
        if (hg_node_is(n, "Cast") || hg_node_is(n, "Identity") || hg_node_is(n, "Reshape") || hg_node_is(n, "Unsqueeze") ||
            hg_node_is(n, "Squeeze")) {
            const HgNode *r = feeds_division(n->outputs[0], depth + 1);
            if (r)
                return r;
        }
    }
    return NULL;
}

/* The smallest magnitude v can have, from its range (0 when it can be 0). */
static double
min_magnitude(const HgRange *r)
{
    if (r->lo > 0)
        return MAX(r->tiny, r->lo);
    if (r->hi < 0)
        return MAX(r->tiny, -r->hi);
    return 0;
}

/* An Add of a tiny constant whose sum ends in a division: the epsilon of a decomposed norm. It is a
 * hazard when FP16 takes its meaning: below 2^-24 it becomes 0 or twice itself (1e-12 becomes 0,
 * and var + eps can be 0 before the Sqrt). A subnormal epsilon such as RMSNorm's 1e-5 is stored
 * within 0.3% and GPUs keep subnormals; and an epsilon negligible next to what it is added to (below
 * FP16's rounding of the other operand's smallest magnitude) sets nothing either way. */
static void
check_epsilon(Check *c, const HgNode *n)
{
    if (!(hg_node_is(n, "Add") || hg_node_is(n, "Sum")) || !n->outputs[0])
        return;
    for (guint k = 0; k < n->n_inputs; k++) {
        double eps = n->inputs[k] ? tiny_constant(c, n->inputs[k]) : 0;
        const HgNode *div = eps > 0 && eps < FP16_MIN_SUBNORMAL ? feeds_division(n->outputs[0], 0) : NULL;
        if (!div)
            continue;
        double other = INFINITY;
        for (guint j = 0; j < n->n_inputs; j++)
            if (j != k && n->inputs[j])
                other = MIN(other, min_magnitude(hg_ranges_get(c->ranges, n->inputs[j])));
        if (isfinite(other) && eps <= other * FP16_EPS)
            continue;
        Decided d = {eps, HG_SOURCE_STATIC, TRUE, NULL};
        add_hazard(c, HG_HAZARD_UNDERFLOW, n, n->inputs[k], d,
                   "keep the epsilon inside a fused LayerNormalization (fuse_layernorm), else keep FP32",
                   "epsilon %.3g is below FP16's smallest subnormal (6e-08): it becomes %s before %s "
                   "'%s'", eps, eps <= FP16_FLUSH ? "0" : "6e-08", div->op_type, div->name ? div->name : "");
        return;
    }
}

/* Is n 0 where its input is (a root, a copy, an absolute value)? */
static gboolean
keeps_zero(const HgNode *n)
{
    return hg_node_is(n, "Sqrt") || hg_node_is(n, "Cast") || hg_node_is(n, "Identity") || hg_node_is(n, "Reshape") ||
           hg_node_is(n, "Abs");
}

/* Can v be 0 once stored in FP16? Its range reaches 0 or values that flush, or it is a root or copy
 * of a sum whose epsilon flushes to 0 and whose other operand can be 0 (var + 1e-12 in FP16). */
static gboolean
fp16_can_be_zero(const Check *c, const HgValue *v, int depth)
{
    if (min_magnitude(hg_ranges_get(c->ranges, v)) <= FP16_FLUSH)
        return TRUE;
    const HgNode *p = v->producer;
    if (!p || depth > 4)
        return FALSE;
    if (keeps_zero(p))
        return p->inputs[0] && fp16_can_be_zero(c, p->inputs[0], depth + 1);
    if (hg_node_is(p, "Add") && p->n_inputs == 2 && p->inputs[0] && p->inputs[1]) {
        for (guint k = 0; k < 2; k++) {
            double eps = tiny_constant(c, p->inputs[k]);
            if (eps > 0 && eps <= FP16_FLUSH && fp16_can_be_zero(c, p->inputs[1 - k], depth + 1))
                return TRUE;
        }
    }
    return FALSE;
}

/* Log reads its input's relative precision at every scale: FP16 keeps 11 bits of a value only down to
 * 2^-14, fewer below, and makes 0 of what is under 2^-25, where Log gives -inf for a value FP32 holds
 * (log of a Softmax's or a Sigmoid's small probabilities, of a mel energy floored at 1e-10). The
 * smallest positive value the input may take: calibration's smallest nonzero magnitude (over the
 * margin), else a positive static lower bound, else (the range reaches 0, where FP32 gives -inf too)
 * what the synthetic probe saw, else the static bound itself. */
static void
check_log(Check *c, const HgNode *n)
{
    if (!hg_node_is(n, "Log") || n->n_inputs < 1 || !n->inputs[0] || !n->outputs[0])
        return;
    const HgValue *x = n->inputs[0];
    if (!is_float_value(c, x) || is_constant(c, x) || g_hash_table_contains(c->fp32, x))
        return;
    const HgRange *r = hg_ranges_get(c->ranges, x);
    if (!(r->hi > 0) || r->lo >= FP16_MIN_NORMAL)
        return;
    const HgTensorStats *s = stats_of(c, x), *p = s ? NULL : probe_of(c, x);
    Decided d = {MAX(r->lo, 0), HG_SOURCE_STATIC, TRUE, s};
    if (s) {
        if (isnan(s->min_abs_nonzero) || !(s->max > 0) || s->min_abs_nonzero / c->margin >= FP16_MIN_NORMAL)
            return;
        d.bound = s->min_abs_nonzero;
        d.source = HG_SOURCE_CALIBRATION;
    } else if (r->lo <= 0 && p && !isnan(p->min)) {
        if (isnan(p->min_abs_nonzero) || !(p->max > 0) || p->min_abs_nonzero / c->margin >= FP16_MIN_NORMAL) {
            g_hash_table_add(c->probe_ok, (gpointer)x);
            return;
        }
        d = (Decided){p->min_abs_nonzero, HG_SOURCE_SYNTHETIC, TRUE, p};
    } else if (r->lo <= 0 && g_hash_table_contains(c->open, x)) {
        return;
    }
    add_hazard(c, HG_HAZARD_UNDERFLOW, n, x, d, "keep the Log and what makes its input FP32 (assign_precision)",
               "Log reads '%s', which may be as small as %.3g (%s): FP16 keeps fewer than 11 bits of it "
               "below 6.1e-05 and makes 0 of it under 3e-08, where Log gives -inf", x->name, d.bound,
               d.source == HG_SOURCE_CALIBRATION ? "calibration"
               : d.source == HG_SOURCE_SYNTHETIC ? "synthetic probe, inputs drawn in their ranges"
                                                 : "static bound");
}

/* The tensor a node centres (takes away what its values share), or NULL: the input of a
 * LayerNormalization, GroupNormalization or InstanceNormalization (the mean of each row or group),
 * x of Sub(x, ReduceMean(x)) (a LayerNorm written out), or of a Sub or Add of a constant whose result
 * the static bounds show smaller than that input by 16 or more (an offset removed: (x - 1000) / 0.1). */
static const HgValue *
centred_input(const Check *c, const HgNode *n)
{
    if (hg_node_is(n, "LayerNormalization") || hg_node_is(n, "GroupNormalization") ||
        hg_node_is(n, "InstanceNormalization"))
        return n->n_inputs ? n->inputs[0] : NULL;
    if (!(hg_node_is(n, "Sub") || hg_node_is(n, "Add")) || n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1] ||
        !n->outputs[0])
        return NULL;
    const HgNode *mean = n->inputs[1]->producer;
    if (hg_node_is(n, "Sub") && mean && hg_node_is(mean, "ReduceMean") && mean->n_inputs >= 1 &&
        mean->inputs[0] == n->inputs[0])
        return n->inputs[0];
    for (guint k = 0; k < 2; k++) {
        const HgValue *x = n->inputs[k];
        if (!is_constant(c, n->inputs[1 - k]) || is_constant(c, x))
            continue;
        const HgRange *rx = hg_ranges_get(c->ranges, x), *ry = hg_ranges_get(c->ranges, n->outputs[0]);
        if (hg_range_bounded(ry) && absmax(ry) * 16 <= absmax(rx))
            return x;
    }
    return NULL;
}

/* A tensor whose values all lie on one side of 0 and spread over fewer than SPREAD_MIN_STEPS of
 * FP16's spacing at their magnitude, read by a node that takes their common part away: what is left
 * is the spread, of which FP16 keeps those few steps (a LayerNorm over inputs of 5 +- 0.05 comes out
 * 2.4% off; a year near 2024 has a spacing of 2). The spread is calibration's observed one, else the
 * static range's. */
static void
check_spread(Check *c, const HgNode *n)
{
    const HgValue *x = centred_input(c, n);
    if (!x || !is_float_value(c, x) || is_constant(c, x) || g_hash_table_contains(c->fp32, x))
        return;
    const HgTensorStats *s = stats_of(c, x);
    const HgRange *r = hg_ranges_get(c->ranges, x);
    gboolean seen = s && !isnan(s->min) && !s->n_inf;
    double lo = seen ? s->min : r->lo, hi = seen ? s->max : r->hi;
    if (!isfinite(lo) || !isfinite(hi) || !(lo > 0 || hi < 0) || !(hi > lo))
        return;
    double top = MAX(fabs(lo), fabs(hi)), spacing = fp16_spacing(top), steps = (hi - lo) / spacing;
    if (steps >= SPREAD_MIN_STEPS || top < FP16_MIN_NORMAL)
        return;
    Decided d = {top, seen ? HG_SOURCE_CALIBRATION : HG_SOURCE_STATIC, TRUE, s};
    add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, x, d,
               "keep what stores the tensor FP32 up to the node that centres it (assign_precision)",
               "'%s' lies in [%.6g, %.6g] (%s), %.3g apart: FP16's spacing there is %g, so %s keeps %.0f "
               "steps of what is left once the common part is taken away", x->name, lo, hi,
               seen ? "calibration" : "static", hi - lo, spacing, n->op_type, steps);
}

static void
check_divisor(Check *c, const HgNode *n)
{
    const HgValue *d = NULL;
    if (hg_node_is(n, "Div") && n->n_inputs > 1)
        d = n->inputs[1];
    else if (hg_node_is(n, "Reciprocal"))
        d = n->inputs[0];
    if (!d || !is_float_value(c, d))
        return;
    const HgRange *r = hg_ranges_get(c->ranges, d);
    double m = min_magnitude(r);
    const HgTensorStats *s = stats_of(c, d);
    Decided dec = {m, HG_SOURCE_STATIC, TRUE, s};
    if (!fp16_can_be_zero(c, d, 0))
        return;
    if (s && !isnan(s->min)) {
        gboolean crosses = s->min <= 0 && s->max >= 0;
        double om = crosses ? 0 : MIN(fabs(s->min), fabs(s->max));
        if (!isnan(s->min_abs_nonzero))
            om = crosses ? 0 : MAX(om, s->min_abs_nonzero);
        if (om / c->margin > FP16_FLUSH)
            return;
        dec.bound = om;
        dec.source = HG_SOURCE_CALIBRATION;
    } else if (g_hash_table_contains(c->open, d)) {
        return;
    }
    if (is_constant(c, d) && m > 0)
        return; /* a tiny constant divisor: reported as underflow */
    add_hazard(c, HG_HAZARD_DIVISION_BY_ZERO, n, d, dec, KEEP_FP32,
               "divisor '%s' may be 0 in FP16 (static range [%.3g, %.3g]%s%s)", d->name, r->lo, r->hi,
               m > FP16_FLUSH ? ", once an epsilon flushes to 0" : "",
               dec.source == HG_SOURCE_CALIBRATION ? ", observed reaching 0" : "");
}

/* Elements reduced into one output by a reduction node (its first input's shape and axes), or -1. */
static gint64
reduced_count(const Check *c, const HgNode *n)
{
    const HgValueShape *s = hg_shapes_get(c->shapes, n->inputs[0]);
    if (s->rank < 0)
        return -1;
    gboolean all[HG_MAX_RANK] = {0};
    guint len = 0;
    const gint64 *axes = hg_attr_ints(n, "axes", &len);
    g_autoptr(HgArray) axes_in = !axes && n->n_inputs > 1 ? const_value(c, n->inputs[1]) : NULL;
    if (!axes && n->n_inputs > 1 && n->inputs[1] && !axes_in)
        return -1;
    guint n_axes = axes ? len : axes_in ? (guint)axes_in->numel : 0;
    if (!n_axes && hg_node_attr_int(n, "noop_with_empty_axes", 0))
        return 1;
    for (guint i = 0; i < n_axes; i++) {
        gint64 a = axes ? axes[i] : (gint64)hg_array_get_f64(axes_in, i);
        if (a < 0)
            a += s->rank;
        if (a < 0 || a >= s->rank)
            return -1;
        all[a] = TRUE;
    }
    gint64 count = 1;
    for (int d = 0; d < s->rank; d++) {
        if (n_axes && !all[d])
            continue;
        if (s->dims[d].v < 0)
            return -1;
        count *= s->dims[d].v;
    }
    return count;
}

/* Product of the dims of x from axis `from` to `to` (exclusive), or -1 when one is unknown. */
static gint64
dims_product(const Check *c, const HgValue *x, gint64 from, gint64 to)
{
    const HgValueShape *s = hg_shapes_get(c->shapes, x);
    if (s->rank < 0)
        return -1;
    if (from < 0)
        from += s->rank;
    if (to < 0)
        to += s->rank;
    if (from < 0 || to > s->rank || from > to)
        return -1;
    gint64 count = 1;
    for (gint64 d = from; d < to; d++) {
        if (s->dims[d].v < 0)
            return -1;
        count *= s->dims[d].v;
    }
    return count;
}

/* The terms summed into one element of n's running sum, for the ops whose internal sum the rule
 * below bounds (*square: the terms are squares of the input; *exps: exponentials at most 1); 0 for
 * ops it leaves to other rules, -1 when unknown. */
static gint64
accumulated_terms(const Check *c, const HgNode *n, gboolean *square, gboolean *exps)
{
    const HgValue *x = n->inputs[0];
    const HgValueShape *s = hg_shapes_get(c->shapes, x);
    *square = hg_node_is(n, "ReduceL2") || hg_node_is(n, "LpNormalization") ||
              hg_node_is(n, "LayerNormalization") || hg_node_is(n, "InstanceNormalization");
    *exps = hg_node_is(n, "Softmax") || hg_node_is(n, "LogSoftmax");
    if (hg_node_is(n, "ReduceSum") || hg_node_is(n, "ReduceMean") || hg_node_is(n, "ReduceL1") ||
        hg_node_is(n, "ReduceL2"))
        return reduced_count(c, n);
    if (hg_node_is(n, "LpNormalization")) {
        if (hg_node_attr_int(n, "p", 2) != 2)
            return 0;
        gint64 axis = hg_node_attr_int(n, "axis", -1);
        return s->rank < 0 ? -1 : dims_product(c, x, axis < 0 ? axis + s->rank : axis,
                                               (axis < 0 ? axis + s->rank : axis) + 1);
    }
    if (hg_node_is(n, "GlobalAveragePool") || hg_node_is(n, "InstanceNormalization"))
        return dims_product(c, x, 2, s->rank);
    if (hg_node_is(n, "AveragePool")) {
        guint len = 0;
        const gint64 *k = hg_attr_ints(n, "kernel_shape", &len);
        gint64 count = k ? 1 : -1;
        for (guint i = 0; k && i < len; i++)
            count = k[i] > 0 ? count * k[i] : -1;
        return count;
    }
    if (hg_node_is(n, "LayerNormalization"))
        return dims_product(c, x, hg_node_attr_int(n, "axis", -1), s->rank);
    if (*exps) {
        gint64 opset = hg_model_opset(c->model, "");
        gint64 axis = hg_node_attr_int(n, "axis", opset >= 13 ? -1 : 1);
        if (s->rank < 0)
            return -1;
        if (axis < 0)
            axis += s->rank;
        /* From opset 13 on over one axis; before, over the flattened trailing axes. */
        return dims_product(c, x, axis, opset >= 13 ? axis + 1 : s->rank);
    }
    /* ReduceSumSquare and CumSum write their sums (the overflow and precision rules bound them);
     * a matrix product's or convolution's partial sums are bounded by sum |w||x|, the static bound
     * of its output that the overflow rule checks. */
    return 0;
}

/* Running sums that stay in FP16 (the accumulation model: hg_op_accumulates_fp16; on the targets no
 * reduction does, with --accumulate fp16 every one does), and exp inside Softplus and
 * ReduceLogSumExp. */
static void
check_internal(Check *c, const HgNode *n)
{
    const HgValue *x = n->n_inputs ? n->inputs[0] : NULL;
    if (!x || !is_float_value(c, x))
        return;
    Decided d = decide(c, x);
    if (!d.known)
        return;
    if (hg_node_is(n, "Softplus") || hg_node_is(n, "ReduceLogSumExp")) {
        const HgRange *r = hg_ranges_get(c->ranges, x);
        double hi = r->hi;
        if (d.source == HG_SOURCE_CALIBRATION)
            hi = MIN(hi, d.stats->max >= 0 ? d.stats->max * c->margin : d.stats->max);
        if (hi > EXP_LIMIT) {
            d.bound = hi;
            add_hazard(c, HG_HAZARD_INTERNAL_OVERFLOW, n, x, d, KEEP_FP32,
                       "exp of its input may reach exp(%.3g) > 65504 (inputs above 11.09 overflow)", hi);
        }
        return;
    }
    /* LpNormalization has no row; it sums like ReduceL2. */
    gboolean fp16 = hg_node_is(n, "LpNormalization")
                        ? c->accumulate == HG_ACCUMULATE_FP16
                        : hg_op_accumulates_fp16(hg_op_for_node(n), c->accumulate);
    gboolean square, exps;
    gint64 count = fp16 ? accumulated_terms(c, n, &square, &exps) : 0;
    if (count == 0 || count == 1)
        return;
    double term = exps ? 1.0 : square ? d.bound * d.bound : d.bound;
    if (square && (hg_node_is(n, "LayerNormalization") || hg_node_is(n, "InstanceNormalization")))
        term *= 4; /* squared deviations from the mean: |x - mean| <= 2 max|x| */
    double acc = count < 0 ? INFINITY : (double)count * term;
    if (!exceeds(c, acc))
        return;
    /* The output overflowing is the overflow rule's finding. */
    Decided out = decide(c, n->outputs[0]);
    if (exceeds(c, out.bound))
        return;
    d.bound = acc;
    g_autofree char *terms = count < 0 ? g_strdup("an unknown number of")
                                       : g_strdup_printf("%" G_GINT64_FORMAT, count);
    add_hazard(c, HG_HAZARD_INTERNAL_OVERFLOW, n, x, d,
               "keep the node FP32 (assign_precision): this runtime accumulates it in FP16",
               "its FP16 running sum of %s %s (inputs up to %.3g, %s) may reach %.3g > %g", terms,
               exps ? "exponentials" : square ? "squares" : "terms", decide(c, x).bound,
               d.source == HG_SOURCE_CALIBRATION ? "calibration with margin" : "static", acc,
               c->threshold);
}

/* The CumSum whose prefix sums v is made of (through slicing, reshaping, Cast, and sums and
 * differences of such pieces, all of one CumSum), or NULL. */
static const HgNode *
cumsum_source(const HgValue *v, int depth)
{
    if (!v || !v->producer || depth > 8)
        return NULL;
    const HgNode *p = v->producer;
    if (hg_node_is(p, "CumSum"))
        return p;
    if (hg_node_is(p, "Slice") || hg_node_is(p, "Pad") || hg_node_is(p, "Cast") || hg_node_is(p, "Identity") ||
        hg_node_is(p, "Reshape") || hg_node_is(p, "Transpose") || hg_node_is(p, "Gather") || hg_node_is(p, "Squeeze") ||
        hg_node_is(p, "Unsqueeze"))
        return cumsum_source(p->inputs[0], depth + 1);
    if ((hg_node_is(p, "Add") || hg_node_is(p, "Sub")) && p->n_inputs == 2) {
        const HgNode *a = cumsum_source(p->inputs[0], depth + 1);
        return a && a == cumsum_source(p->inputs[1], depth + 1) ? a : NULL;
    }
    return NULL;
}

static void
check_precision(Check *c, const HgNode *n)
{
    /* An angle FP16 holds to its spacing, |x| 2^-11: below PHASE_MAX the phase of Sin and Cos is off by
     * at most 0.004 rad (4 pi, or 2 pi with calibration's margin of 2, stays there), past it by more,
     * and past 2048 positions themselves skip (rotary embeddings over long
     * sequences: HF computes them in FP32 with autocast off; diffusion timestep embeddings). */
    if ((hg_node_is(n, "Sin") || hg_node_is(n, "Cos")) && n->n_inputs >= 1 && n->inputs[0] &&
        is_float_value(c, n->inputs[0]) && !is_constant(c, n->inputs[0])) {
        const HgValue *x = n->inputs[0];
        Decided d = decide(c, x);
        if (!d.known || d.bound <= PHASE_MAX)
            return;
        add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, x, d,
                   "keep the angle FP32 from where it is formed (rotary embeddings are computed in FP32)",
                   "its angle may reach %.3g (%s): FP16's spacing there is %g, so the phase is off by up "
                   "to %g rad", d.bound, d.source == HG_SOURCE_CALIBRATION ? "calibration with margin" : "static",
                   fp16_spacing(d.bound), fp16_spacing(d.bound) / 2);
        return;
    }
    if ((hg_node_is(n, "Softmax") || hg_node_is(n, "LogSoftmax")) && n->inputs[0]) {
        const HgValue *x = n->inputs[0];
        const HgRange *r = hg_ranges_get(c->ranges, x);
        const HgTensorStats *s = stats_of(c, x);
        /* Only the largest logits matter; a mask's large negative fill does not. */
        double top = r->hi >= 0 ? r->hi : -r->hi;
        Decided d = {top, HG_SOURCE_STATIC, TRUE, s};
        if (s && !isnan(s->max)) {
            d.bound = MIN(top, (s->max >= 0 ? s->max : -s->max) * c->margin);
            d.source = HG_SOURCE_CALIBRATION;
        } else if (!isfinite(top) && g_hash_table_contains(c->open, x)) {
            return;
        }
        if (d.bound > SOFTMAX_SPREAD && !isfinite(d.bound))
            add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, x, d, KEEP_FP32,
                       "logits are unbounded (static): FP16 keeps 11 bits of them");
        else if (d.bound > SOFTMAX_SPREAD && d.source == HG_SOURCE_CALIBRATION)
            add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, x, d, KEEP_FP32,
                       "logits observed up to %.3g (calibration; %.3g with margin %g): FP16's spacing "
                       "there is %g, so differences below it are lost", s->max, d.bound, c->margin,
                       fp16_spacing(d.bound));
        else if (d.bound > SOFTMAX_SPREAD)
            add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, x, d, KEEP_FP32,
                       "logits may reach %.3g (static): FP16's spacing there is %g, so differences "
                       "below it are lost", d.bound, fp16_spacing(d.bound));
        return;
    }
    if (hg_node_is(n, "CumSum") && n->inputs[0] && is_float_value(c, n->inputs[0])) {
        const HgValueShape *s = hg_shapes_get(c->shapes, n->inputs[0]);
        g_autoptr(HgArray) ax = n->n_inputs > 1 ? const_value(c, n->inputs[1]) : NULL;
        gint64 len = -1;
        if (ax && ax->numel == 1 && s->rank > 0) {
            gint64 a = (gint64)hg_array_get_f64(ax, 0);
            if (a < 0)
                a += s->rank;
            if (a >= 0 && a < s->rank)
                len = s->dims[a].v;
        }
        Decided out = decide(c, n->outputs[0]);
        gboolean big = out.known && out.bound > SOFTMAX_SPREAD;
        if (len >= 0 && len <= CUMSUM_MAX_LEN && !big)
            return;
        /* Integers add exactly in FP16 while the sums stay within 2048 (its 11 bits): a running count
         * of a mask (DETR's positions, position ids) loses nothing, however long the axis. */
        if (out.known && !big && integer_valued(c, n->inputs[0], 0))
            return;
        if (len >= 0 && len <= CUMSUM_MAX_LEN) {
            add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, n->outputs[0], out,
                       "keep the CumSum FP32, or rewrite an integral image to AveragePool",
                       "an FP16 CumSum rounds every partial sum: its sums may reach %.3g (%s), where "
                       "FP16's spacing is %g", out.bound,
                       out.source == HG_SOURCE_CALIBRATION ? "calibration with margin" : "static",
                       fp16_spacing(out.bound));
            return;
        }
        Decided d = {len < 0 ? INFINITY : (double)len, HG_SOURCE_STATIC, TRUE, NULL};
        g_autofree char *count = len < 0 ? g_strdup("an unknown number of")
                                         : g_strdup_printf("%" G_GINT64_FORMAT, len);
        g_autofree char *err = len < 0 ? g_strdup("unbounded")
                                       : g_strdup_printf("%.2g", (double)len / 2048.0);
        add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, n->outputs[0], d,
                   "keep the CumSum FP32, or rewrite an integral image to AveragePool",
                   "an FP16 CumSum rounds every partial sum: over %s elements the worst-case relative "
                   "error is %s (a running sum of ones stops counting at 2048)", count, err);
        return;
    }
    if (hg_node_is(n, "Sub") && n->n_inputs == 2) {
        const HgNode *a = cumsum_source(n->inputs[0], 0), *b = cumsum_source(n->inputs[1], 0);
        if (!a || a != b || !a->outputs[0])
            return;
        Decided d = decide(c, a->outputs[0]);
        if (!d.known || d.bound <= SOFTMAX_SPREAD)
            return;
        add_hazard(c, HG_HAZARD_PRECISION_LOSS, n, n->outputs[0], d,
                   "keep the prefix sums FP32 from the CumSum on, or rewrite an integral image to "
                   "AveragePool",
                   "cancels two prefix sums of CumSum '%s' that may reach %.3g (%s): the difference "
                   "keeps only what FP16's 11 bits leave of them", a->name ? a->name : "", d.bound,
                   d.source == HG_SOURCE_CALIBRATION ? "calibration with margin" : "static");
    }
}

gboolean
hg_node_passes_through(const HgNode *n)
{
    /* one output of input 0's elements (not Split), a Concat of its inputs', or a Cast of them */
    return (n->n_outputs == 1 && hg_node_has_traits(n, HG_TRAIT_REARRANGES)) ||
           hg_node_has_traits(n, HG_TRAIT_JOINT | HG_TRAIT_DATA_MOVEMENT) || hg_node_is(n, "Cast");
}

/* Does every path from v end where a value past FP16's range on the side of sign (-1: large
 * negative, +1: large positive) weighs what +-65504 does (hg_node_saturates): a maximum, softmax or
 * exp ignores a large negative (exp(-65504 - max) = 0 as exp(-3.4e38 - max) is), a minimum a large
 * positive, and Sigmoid
 * and Tanh saturate both ways (sigmoid(65504) = 1 exactly, in FP32 too)? On the way: reshaping and
 * selection (a Where's branches, the data of Gather, GatherElements and GatherND), an Add (a mask added
 * to a finite logit keeps its side), Sub (the subtrahend's side swaps) and Neg (which swaps it too). */
gboolean
hg_node_saturates(const HgNode *n, int sign)
{
    const HgOpDef *op = hg_op_for_node(n);
    if (hg_node_is(n, "Sigmoid") || hg_node_is(n, "Tanh") || (op && (op->traits & HG_TRAIT_SHAPE_ONLY)))
        return TRUE; /* saturating, or reading the shape alone */
    /* Exp: exp(-65504 + s) and exp(-3.4e38 + s) are both 0 (a running maximum's -1e38 start, as RWKV
     * and streaming softmaxes write it, read through exp(state - max)) */
    if (sign < 0)
        return hg_node_is(n, "Softmax") || hg_node_is(n, "LogSoftmax") || hg_node_is(n, "ReduceMax") ||
               hg_node_is(n, "Max") || hg_node_is(n, "ArgMax") || hg_node_is(n, "MaxPool") ||
               hg_node_is(n, "GlobalMaxPool") || hg_node_is(n, "Exp");
    return hg_node_is(n, "ReduceMin") || hg_node_is(n, "Min") || hg_node_is(n, "ArgMin");
}

static gboolean
ends_in_saturation(const HgValue *v, int sign, int depth)
{
    if (!v || v->is_output || !v->uses->len || depth > 8)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        if (hg_node_saturates(n, sign))
            continue;
        gboolean select = (hg_node_passes_through(n) && use->index == 0) ||
                          (hg_node_is(n, "Where") && use->index > 0) ||
                          ((hg_node_is(n, "Gather") || hg_node_is(n, "GatherElements") ||
                            hg_node_is(n, "GatherND")) && use->index == 0);
        if ((select || hg_node_is(n, "Add")) && ends_in_saturation(n->outputs[0], sign, depth + 1))
            continue;
        if (hg_node_is(n, "Neg") && ends_in_saturation(n->outputs[0], -sign, depth + 1))
            continue;
        if (hg_node_is(n, "Sub") && ends_in_saturation(n->outputs[0], use->index == 1 ? -sign : sign, depth + 1))
            continue;
        return FALSE;
    }
    return TRUE;
}

gboolean
hg_value_ends_in_max(const HgValue *v)
{
    return ends_in_saturation(v, -1, 0);
}

gboolean
hg_value_ends_in_saturation(const HgValue *v, int sign)
{
    return ends_in_saturation(v, sign < 0 ? -1 : 1, 0);
}

/* A value that overflows only on a side where every path from it saturates (masked logits into a
 * softmax, an anchor fill into a Sigmoid). */
static gboolean
benign_overflow(const Check *c, const HgValue *v, Decided d)
{
    const HgRange *r = hg_ranges_get(c->ranges, v);
    double hi = r->hi, lo = r->lo;
    if (d.source == HG_SOURCE_CALIBRATION && d.stats && !isnan(d.stats->max)) {
        hi = MIN(hi, d.stats->max >= 0 ? d.stats->max * c->margin : d.stats->max);
        lo = MAX(lo, d.stats->min <= 0 ? d.stats->min * c->margin : d.stats->min);
    }
    gboolean up = exceeds(c, hi), down = exceeds(c, -lo);
    return (!up || ends_in_saturation(v, 1, 0)) && (!down || ends_in_saturation(v, -1, 0));
}

/* Output overflow, reported where it starts: no float input already passes the threshold. */
static void
check_overflow(Check *c, const HgNode *n)
{
    for (guint k = 0; k < n->n_inputs; k++) {
        HgValue *v = n->inputs[k];
        if (v && is_float_value(c, v)) {
            Decided d = decide(c, v);
            if (d.known && exceeds(c, d.bound))
                return;
        }
    }
    for (guint k = 0; k < n->n_outputs; k++) {
        HgValue *v = n->outputs[k];
        if (!v || !is_float_value(c, v) || is_constant(c, v) || g_hash_table_contains(c->fp32, v))
            continue;
        Decided d = decide(c, v);
        if (!d.known || !exceeds(c, d.bound) || benign_overflow(c, v, d))
            continue;
        g_autofree char *msg = describe_bound(c, "output", v, d, c->threshold);
        add_hazard(c, HG_HAZARD_OVERFLOW, n, v, d, KEEP_FP32, "%s", msg);
        return;
    }
}

/* Does FP16's loss on the tiny values of v (an absolute error of at most 2^-25 each) vanish in
 * what reads them? Every reader is one of: an Add or Sub whose other operand calibration (or the
 * synthetic probe) saw at 2^-10 or more, or whose bound is that large (the sum's own FP16 rounding
 * already drops what v loses: a layer-scaled residual branch); an Add or Sub whose sum is itself read
 * only so (a tiny bias added first); a Softmax or LogSoftmax (an absolute error e in a logit moves
 * each probability by a factor of at most e^2e: attention logits near 1e-5, as a random-init DETR
 * decoder's and ConvBERT's span-based kernels give, leave the probabilities to within 2^-23); an op
 * that only moves values (a layer scale's Transpose back to the residual's layout), recursively; or
 * one that reads only v's shape. */
static gboolean
tiny_harmless(const Check *c, const HgValue *v, int depth)
{
    if (!v || v->is_output || v->nested_outputs || !v->uses->len || depth > 8)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        const HgOpDef *op = hg_op_for_node(n);
        if (op && (op->traits & HG_TRAIT_SHAPE_ONLY))
            continue;
        if (hg_node_passes_through(n) && use->index == 0 && n->n_outputs == 1) {
            if (!tiny_harmless(c, n->outputs[0], depth + 1))
                return FALSE;
            continue;
        }
        if ((hg_node_is(n, "Softmax") || hg_node_is(n, "LogSoftmax")) && use->index == 0)
            continue;
        if (!(hg_node_is(n, "Add") || hg_node_is(n, "Sub")) || n->n_inputs != 2 || use->index > 1)
            return FALSE;
        const HgValue *o = n->inputs[1 - use->index];
        const HgTensorStats *os = stats_of(c, o);
        if (!os)
            os = probe_of(c, o);
        /* what calibration (or the synthetic probe) saw of the other operand; without it, what its
         * static bound allows: an addend whose bound is under 2^-14 changes a sum of normal size by less
         * than FP16's step */
        double big = os && !isnan(os->absmax) ? os->absmax : o ? absmax(hg_ranges_get(c->ranges, o)) : 0;
        if (!(big >= 0x1p-10) && !(n->n_outputs == 1 && tiny_harmless(c, n->outputs[0], depth + 1)))
            return FALSE;
    }
    return TRUE;
}

/* Activations FP16 cannot resolve: the largest magnitude calibration saw in computed value v when
 * every value of it lies below FP16's normal range (2^-14) and some is not 0, NAN otherwise. Stored in
 * FP16 such a tensor keeps fewer than 11 bits of each value (an absolute step of 2^-24), and what lies
 * at or under 2^-25 becomes 0: a random-init depth head whose outputs are all near 1e-8 comes out all
 * zeros. Ranges alone cannot show it: a bound says how large a value may be, not how small it is (and
 * one under 2^-14 is what a layer scale of 1e-6 gives a residual branch, which is harmless, below).
 * Passed over where what reads v drops what FP16 loses of it (tiny_harmless): a sum with values of
 * normal size (the layer-scaled branch), a softmax. */
static double
tiny_absmax(const Check *c, const HgValue *v, HgBoundSource *source)
{
    if (!v || !is_float_value(c, v) || is_constant(c, v) || g_hash_table_contains(c->fp32, v))
        return NAN;
    const HgTensorStats *s = stats_of(c, v);
    double a;
    HgBoundSource src = HG_SOURCE_CALIBRATION;
    if (s) {
        /* seen stored narrower, what calibration shows is that type's own rounding */
        if (isnan(s->absmax) || (s->dtype != HG_DTYPE_FLOAT && s->dtype != HG_DTYPE_DOUBLE))
            return NAN;
        a = s->absmax;
    } else {
        /* Without data the static bound can still show it: values that may be at most a bound under
         * 2^-14 are all that small (weights of 1e-10, as a random-init SAM encoder has, make such
         * activations; a bound of 0 is a tensor of zeros, which FP16 holds). */
        const HgRange *r = hg_ranges_get(c->ranges, v);
        a = r->nan ? NAN : absmax(r);
        src = HG_SOURCE_STATIC;
        /* Else what the synthetic probe saw (HgCheckOptions.probe): a bound cannot say how small values
         * are, and a random-init DPT's fusion convolutions, all near 1e-5 for inputs in range, came out
         * of a conversion from ranges alone as zeros. */
        const HgTensorStats *p = probe_of(c, v);
        if (!(a > 0 && a < FP16_MIN_NORMAL) && p) {
            a = p->absmax;
            src = HG_SOURCE_SYNTHETIC;
        }
    }
    if (!(a > 0 && a < FP16_MIN_NORMAL))
        return NAN;
    if (source)
        *source = src;
    return tiny_harmless(c, v, 0) ? NAN : a;
}

/* Activations too small for FP16, reported where they start: no float input of n is one already. */
static void
check_tiny(Check *c, const HgNode *n)
{
    for (guint k = 0; k < n->n_inputs; k++)
        if (!isnan(tiny_absmax(c, n->inputs[k], NULL)))
            return;
    for (guint k = 0; k < n->n_outputs; k++) {
        HgValue *v = n->outputs[k];
        HgBoundSource src = HG_SOURCE_STATIC;
        double a = tiny_absmax(c, v, &src);
        if (isnan(a))
            continue;
        Decided d = {a, src, TRUE, src == HG_SOURCE_SYNTHETIC ? probe_of(c, v) : stats_of(c, v)};
        add_hazard(c, HG_HAZARD_UNDERFLOW, n, v, d, KEEP_FP32,
                   "output '%s' reaches at most %.3g (%s), below FP16's normal range (6.1e-05): "
                   "stored in FP16 it keeps fewer than 11 bits, and what is under 3e-08 becomes 0",
                   v->name, a, src == HG_SOURCE_STATIC      ? "static bound"
                               : src == HG_SOURCE_SYNTHETIC ? "synthetic probe, inputs drawn in their ranges"
                                                            : "calibration");
        return;
    }
}

/* The smallest magnitude of initializer v when none of its values is 0 (nor NaN), else 0. */
static double
const_min_magnitude(const Check *c, const HgValue *v)
{
    const HgScan *sc = v && v->init && !v->is_input ? hg_ranges_scan(c->ranges, v) : NULL;
    if (!sc || sc->n_nonfinite || sc->n_nonzero + sc->n_big != hg_tensor_numel(v->init))
        return 0;
    return sc->range.tiny;
}

/* Do weights v that flush to zero in FP16 lose nothing FP16 would keep, wherever they are read? Each
 * reader is a linear op whose product (bounded by its output's static interval, bias included: with
 * the bias's magnitude added back) lands on a constant bias none of whose values is smaller than
 * 2^11 times that bound: a Gemm's, Conv's or ConvTranspose's own bias, or for a MatMul the constant
 * of every Add that reads it. FP16's rounding of that sum already moves it by half an ulp of the
 * bias, at least the whole product: a layer decayed to 1e-9 next to biases of 1e-2. */
static gboolean
flush_absorbed(const Check *c, const HgValue *v)
{
    if (!v->uses->len)
        return FALSE;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgUse *use = &g_array_index(v->uses, HgUse, u);
        const HgNode *n = use->node;
        const HgValue *y = n->n_outputs ? n->outputs[0] : NULL;
        gboolean mm = hg_node_is(n, "MatMul") && use->index < 2;
        gboolean lin = (hg_node_is(n, "Conv") || hg_node_is(n, "ConvTranspose") ||
                        (hg_node_is(n, "Gemm") && hg_node_attr_float(n, "beta", 1.0f) == 1.0f)) && use->index == 1;
        if (!y || !(mm || lin))
            return FALSE;
        const HgRange *r = hg_ranges_get(c->ranges, y);
        double bound = MAX(fabs(r->lo), fabs(r->hi));
        if (r->nan || !isfinite(bound))
            return FALSE;
        if (lin) {
            const HgValue *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
            double m = const_min_magnitude(c, b);
            const HgScan *sc = m > 0 ? hg_ranges_scan(c->ranges, b) : NULL;
            if (!sc || bound + MAX(fabs(sc->range.lo), fabs(sc->range.hi)) > m * FP16_EPS)
                return FALSE;
            continue;
        }
        if (y->is_output || y->nested_outputs || !y->uses->len)
            return FALSE;
        for (guint j = 0; j < y->uses->len; j++) {
            const HgUse *a = &g_array_index(y->uses, HgUse, j);
            if (!hg_node_is(a->node, "Add") || a->node->n_inputs != 2 || a->index > 1)
                return FALSE;
            double m = const_min_magnitude(c, a->node->inputs[1 - a->index]);
            if (!(m > 0 && bound <= m * FP16_EPS))
                return FALSE;
        }
    }
    return TRUE;
}

static void
check_node(Check *c, const HgNode *n)
{
    const HgOpDef *op = hg_op_for_node(n);
    guint before = c->hazards->len;
    /* Constants feeding the node (inputs the op keeps FP32 excepted), once each. */
    for (guint k = 0; k < n->n_inputs; k++) {
        HgValue *v = n->inputs[k];
        if (!v || !v->init || g_hash_table_contains(c->seen_init, v) ||
            (op && k < 32 && (op->fp32_inputs >> k & 1)))
            continue;
        g_hash_table_add(c->seen_init, v);
        const HgScan *scan = hg_ranges_scan(c->ranges, v);
        /* Normalizations compute their statistics internally (FP32 in TensorRT and ONNX Runtime). */
        gboolean norm = hg_node_is(n, "BatchNormalization") || hg_node_is(n, "InstanceNormalization") ||
                        hg_node_is(n, "LayerNormalization") || hg_node_is(n, "GroupNormalization") ||
                        hg_node_is(n, "RMSNormalization");
        /* An addend that flushes changes the sum by at most 2^-25, less than FP16's rounding of
         * the sum itself: a bias folded from BatchNorm at 1e-10 loses nothing. */
        gboolean addend = ((hg_node_is(n, "Conv") || hg_node_is(n, "ConvTranspose") || hg_node_is(n, "Gemm")) &&
                           k == 2) ||
                          hg_node_is(n, "Add") || hg_node_is(n, "Sub") || hg_node_is(n, "Sum");
        if (scan && hg_dtype_is_float(v->init->dtype))
            check_constant(c, n, v, scan, !norm && !addend && tiny_constant(c, v) == 0 &&
                           !(scan->n_flush && flush_absorbed(c, v)));
    }
    if ((hg_node_is(n, "Constant") || hg_node_is(n, "ConstantOfShape")) && n->outputs[0]) {
        HgAttr *at = hg_node_attr(n, "value");
        g_autoptr(HgArray) a = at && at->t ? hg_array_from_tensor(at->t, NULL) : NULL;
        HgScan scan = hg_scan_array(a);
        if (a && hg_dtype_is_float(a->dtype))
            check_constant(c, n, n->outputs[0], &scan, FALSE);
    }
    if (hg_node_is(n, "Pad") && n->outputs[0] && hg_node_attr(n, "value")) { /* Pad before opset 11 */
        float fill = hg_node_attr_float(n, "value", 0);
        g_autoptr(HgArray) a = hg_array_new_scalar_f32(HG_DTYPE_FLOAT, fill);
        HgScan scan = hg_scan_array(a);
        check_constant(c, n, n->outputs[0], &scan, FALSE);
    }
    check_epsilon(c, n);
    check_divisor(c, n);
    check_log(c, n);
    check_spread(c, n);
    check_precision(c, n);
    check_internal(c, n);
    for (guint k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && g_hash_table_contains(c->fp32, n->outputs[k])) {
            Decided d = decide(c, n->outputs[k]);
            add_hazard(c, HG_HAZARD_MUST_STAY_FP32, n, n->outputs[k], d,
                       "keep the node FP32 (lower keeps shape math FP32)",
                       "computes '%s', which decides a size, an index or a Resize scale",
                       n->outputs[k]->name);
            return;
        }
    /* A node already reported for a division by zero or a constant needs no second finding for its
     * output. */
    for (guint i = before; i < c->hazards->len; i++) {
        HgHazardKind k = ((HgHazard *)c->hazards->pdata[i])->kind;
        if (k == HG_HAZARD_DIVISION_BY_ZERO || k == HG_HAZARD_NONFINITE_CONSTANT)
            return;
    }
    if (!hg_node_is(n, "Constant") && !hg_node_is(n, "ConstantOfShape")) {
        check_overflow(c, n);
        check_tiny(c, n);
    }
}

/* An input without a range whose values reach float math, unless the caller's data covers it: what is
 * computed from it is unbounded for lack of information, which is a finding of its own (the rules
 * above stay silent on it). Synthetic statistics show something, and say so, but prove nothing. */
static void
check_unranged(Check *c, const HgInputInfo *in, const HgValue *v)
{
    if (in->source != HG_INPUT_RANGE_NONE || !in->reaches_float)
        return;
    const HgTensorStats *s = stats_of(c, v);
    if (s && s->samples > s->synthetic)
        return;
    const char *dt = hg_dtype_name(in->dtype) ? hg_dtype_name(in->dtype) : "?";
    Decided d = {INFINITY, s ? HG_SOURCE_CALIBRATION : HG_SOURCE_ASSUMED, TRUE, s};
    g_autofree char *draw = s ? hg_synth_describe(in) : NULL;
    HgHazard *h = add_hazard(
        c, HG_HAZARD_UNRANGED_INPUT, NULL, v, d,
        "convert draws synthetic inputs for it (labelled synthetic) unless given a range or data",
        "%s input with no range%s%s%s: give --input-range '%s=LO:HI', data (--calib), or "
        "'%s = LO:HI' in a [ranges GLOB] group of .halfguard.ini", dt,
        draw ? " and no data; synthetic inputs drew it " : ": what is computed from it is unbounded for "
                                                          "lack of it and goes unchecked",
        draw ? draw : "", draw ? ", and what rests on them is marked synthetic" : "", v->name, v->name);
    g_free(h->node);
    h->node = g_strdup(v->name);
    g_free(h->op);
    h->op = g_strdup("input");
}

/* ---------------------------------------------------------------- driver */

HgCheckResult *
hg_check(HgModel *m, const HgCheckOptions *opts, GError **error)
{
    g_return_val_if_fail(m != NULL && opts != NULL, NULL);
    HgGraph *g = m->graph;
    /* Input ranges and shape pins, checked against the graph's inputs. */
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    for (guint i = 0; i < opts->n_ranges; i++) {
        gboolean found = strcmp(opts->ranges[i].name, "*") == 0;
        for (guint k = 0; k < feeds->len && !found; k++)
            found = hg_input_range_rank(opts->ranges[i].name, ((HgValueDecl *)feeds->pdata[k])->value->name) > 0;
        if (!found) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--input-range: the model has no input '%s'",
                        opts->ranges[i].name);
            return NULL;
        }
    }
    g_autoptr(HgShapes) shapes = hg_shapes_infer_specs(g, opts->shapes, error);
    if (!shapes)
        return NULL;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return NULL;
    /* Each input's range: the caller's, else what the model implies (src/derive.c). */
    GPtrArray *inputs = hg_derive_inputs(m, shapes, opts->ranges, opts->n_ranges);
    g_autofree HgInputRange *ir = g_new0(HgInputRange, inputs->len + 1);
    guint n_ir = 0;
    HgCheckResult *res = g_new0(HgCheckResult, 1);
    res->hazards = g_ptr_array_new_with_free_func(hazard_free);
    res->unranged_inputs = g_ptr_array_new_with_free_func(g_free);
    res->inputs = inputs;
    for (guint k = 0; k < inputs->len; k++) {
        const HgInputInfo *in = inputs->pdata[k];
        if (in->source == HG_INPUT_RANGE_GIVEN || in->source == HG_INPUT_RANGE_DERIVED)
            ir[n_ir++] = (HgInputRange){in->name, hg_range_exact(in->lo, in->hi)};
        else if (in->source == HG_INPUT_RANGE_NONE && in->dtype != HG_DTYPE_STRING)
            g_ptr_array_add(res->unranged_inputs, g_strdup(in->name));
    }
    Check *c = g_new0(Check, 1);
    *c = (Check){m, opts->stats, opts->margin > 0 ? opts->margin : HG_DEFAULT_MARGIN,
                 opts->threshold > 0 ? opts->threshold : HG_DEFAULT_THRESHOLD,
                 opts->accumulate == HG_CHECK_ACCUMULATE_FP16 ? HG_ACCUMULATE_FP16 : HG_ACCUMULATE_TARGETS,
                 g_steal_pointer(&shapes),
                 NULL, g_hash_table_new(NULL, NULL), g_hash_table_new(NULL, NULL),
                 g_hash_table_new(NULL, NULL), res->hazards};
    c->probe = opts->probe;
    c->probe_ok = g_hash_table_new(NULL, NULL);
    c->ranges = hg_ranges_infer_dims(g, c->shapes, ir, n_ir, opts->dim_max);
    res->assumptions = g_ptr_array_new_with_free_func(g_free);
    for (guint k = 0; k < c->ranges->assumed->len; k++)
        g_ptr_array_add(res->assumptions, g_strdup(c->ranges->assumed->pdata[k]));
    res->unknown_ops = g_ptr_array_new_with_free_func(unknown_op_free);
    mark_open(c, order, res->unranged_inputs, res->unknown_ops);
    mark_fp32(c, order);
    c->generation = g->generation;
    for (guint k = 0; k < inputs->len; k++)
        check_unranged(c, inputs->pdata[k], ((HgValueDecl *)feeds->pdata[k])->value);
    for (guint i = 0; i < order->len; i++)
        check_node(c, order->pdata[i]);
    res->priv = c;
    return res;
}

/* ---------------------------------------------------------------- for the passes */

/* The analysis of r, asserted current: a pass that changed the graph and reads an analysis of before
 * fails here, in debug builds and tests, instead of deciding on stale facts. */
static const Check *
current(const HgCheckResult *r)
{
    const Check *c = r->priv;
    g_assert(c->model->graph->generation == c->generation);
    return c;
}

const HgShapes *
hg_check_shapes(const HgCheckResult *r)
{
    return current(r)->shapes;
}

const HgRanges *
hg_check_ranges(const HgCheckResult *r)
{
    return current(r)->ranges;
}

double
hg_check_value_bound(const HgCheckResult *r, const HgValue *v, gboolean *calibrated)
{
    const Check *c = current(r);
    Decided d = decide(c, v);
    if (calibrated)
        *calibrated = d.source == HG_SOURCE_CALIBRATION && d.bound < absmax(hg_ranges_get(c->ranges, v));
    return isnan(d.bound) ? INFINITY : d.bound;
}

HgBoundSource
hg_check_value_source(const HgCheckResult *r, const HgValue *v)
{
    const Check *c = current(r);
    Decided d = decide(c, v);
    if (!d.known)
        return HG_SOURCE_ASSUMED;
    if (d.source == HG_SOURCE_CALIBRATION && d.bound < absmax(hg_ranges_get(c->ranges, v)))
        return d.stats && d.stats->synthetic ? HG_SOURCE_SYNTHETIC : HG_SOURCE_CALIBRATION;
    /* too small for FP16, or found safe, by what the synthetic probe saw */
    if (g_hash_table_contains(c->probe_ok, v))
        return HG_SOURCE_SYNTHETIC;
    HgBoundSource tiny = HG_SOURCE_STATIC;
    if (!isnan(tiny_absmax(c, v, &tiny)) && tiny == HG_SOURCE_SYNTHETIC)
        return HG_SOURCE_SYNTHETIC;
    return HG_SOURCE_STATIC;
}

gboolean
hg_check_value_unsafe(const HgCheckResult *r, const HgValue *v)
{
    const Check *c = current(r);
    if (!v || !is_float_value(c, v))
        return FALSE;
    if (g_hash_table_contains(c->fp32, v))
        return TRUE;
    const HgScan *scan = v->init ? hg_ranges_scan(c->ranges, v) : NULL;
    if (scan)
        return scan->n_nonfinite + scan->n_big > 0;
    Decided d = decide(c, v);
    return d.known && exceeds(c, d.bound) && !benign_overflow(c, v, d);
}

gboolean
hg_check_value_saturates(const HgCheckResult *r, const HgValue *v)
{
    const Check *c = current(r);
    if (!v || !is_float_value(c, v) || v->init || g_hash_table_contains(c->fp32, v))
        return FALSE;
    Decided d = decide(c, v);
    return d.known && exceeds(c, d.bound) && benign_overflow(c, v, d);
}

gboolean
hg_check_value_tiny(const HgCheckResult *r, const HgValue *v)
{
    return !isnan(tiny_absmax(current(r), v, NULL));
}

/* The producers along fp16_can_be_zero's path, and on through what makes a divisor small but not 0 in
 * FP32 that FP16 makes 0: a sum or mean of squares (an L2 norm written out, Sqrt(ReduceSum(x * x)))
 * down to the squares, which flush first (x = 1e-4 squares to 1e-8, 0 in FP16). Keeping the Div and
 * the Sqrt FP32 alone divides by the same 0. */
static void
zero_span(const Check *c, const HgValue *v, int depth, GPtrArray *nodes)
{
    const HgNode *p = v ? v->producer : NULL;
    if (!p || depth > 4)
        return;
    if (keeps_zero(p) || hg_node_is(p, "ReduceSum") || hg_node_is(p, "ReduceMean")) {
        g_ptr_array_add(nodes, (gpointer)p);
        zero_span(c, p->inputs[0], depth + 1, nodes);
    } else if (hg_square_base(p) || hg_node_is(p, "ReduceSumSquare") || hg_node_is(p, "ReduceL2")) {
        g_ptr_array_add(nodes, (gpointer)p);
    } else if (hg_node_is(p, "Add") && p->n_inputs == 2) {
        for (guint k = 0; k < 2; k++)
            if (p->inputs[k] && tiny_constant(c, p->inputs[k]) > 0)
                g_ptr_array_add(nodes, (gpointer)p);
    }
}

/* The readers of v, a tensor that may pass limit, and on through every reader whose own output may
 * pass it too: a running count past 2048 (positions counted with a CumSum of a mask, as BLOOM's
 * ALiBi counts them) loses its odd integers wherever it is stored in FP16, so each node that reads it must read it
 * in FP32, down to those whose results are small again (the product by ALiBi's slopes). */
static void
large_readers(const Check *c, const HgValue *v, double limit, int depth, GPtrArray *nodes)
{
    if (!v || depth > 16)
        return;
    for (guint u = 0; u < v->uses->len; u++) {
        const HgNode *r = g_array_index(v->uses, HgUse, u).node;
        if (g_ptr_array_find(nodes, r, NULL))
            continue;
        g_ptr_array_add(nodes, (gpointer)r);
        for (guint k = 0; k < r->n_outputs; k++) {
            const HgValue *o = r->outputs[k];
            if (!o || !is_float_value(c, o))
                continue;
            Decided d = decide(c, o);
            if (!d.known || d.bound > limit)
                large_readers(c, o, limit, depth + 1, nodes);
        }
    }
}

/* What stores a Log's small input: v's producer, and through what only moves values (Cast,
 * reshaping, Concat: hg_node_passes_through), a Neg, or a floor or complement by constants (an Add of
 * a positive constant, Clip or Max by a constant, a constant minus it: 1 - sigmoid(x), which FP16
 * makes 0 once sigmoid(x) rounds to 1) the producers before it, down to the node that makes the small
 * values (a Softmax, a Sigmoid, an Exp, a division). */
static void
log_span(const Check *c, const HgValue *v, int depth, GPtrArray *nodes)
{
    const HgNode *p = v ? v->producer : NULL;
    if (!p || depth > 8 || is_constant(c, v) || !is_float_value(c, v) || g_ptr_array_find(nodes, p, NULL))
        return;
    g_ptr_array_add(nodes, (gpointer)p);
    guint consts = 0;
    for (guint k = 0; k < p->n_inputs; k++)
        consts += !p->inputs[k] || is_constant(c, p->inputs[k]);
    gboolean by_constants = (hg_node_is(p, "Add") || hg_node_is(p, "Sub") || hg_node_is(p, "Clip") ||
                             hg_node_is(p, "Max")) && consts + 1 == p->n_inputs;
    if (hg_node_passes_through(p) || hg_node_is(p, "Neg") || by_constants)
        for (guint k = 0; k < p->n_inputs; k++)
            log_span(c, p->inputs[k], depth + 1, nodes); /* constants and shape inputs stop at once */
}

/* The nodes of cumsum_source's path from v back to the CumSum (included), and above it the Pads,
 * Casts and CumSums that build the integral image. */
static void
cumsum_span(const HgValue *v, int depth, GPtrArray *nodes)
{
    const HgNode *p = v ? v->producer : NULL;
    if (!p || depth > 8 || !cumsum_source(v, 0))
        return;
    g_ptr_array_add(nodes, (gpointer)p);
    if (hg_node_is(p, "CumSum")) {
        for (const HgNode *q = p->inputs[0] ? p->inputs[0]->producer : NULL;
             q && (hg_node_is(q, "CumSum") || hg_node_is(q, "Pad") || hg_node_is(q, "Cast")) && depth < 16;
             q = q->inputs[0] ? q->inputs[0]->producer : NULL, depth++)
            g_ptr_array_add(nodes, (gpointer)q);
        return;
    }
    for (guint k = 0; k < MIN(p->n_inputs, 2u); k++)
        if (k == 0 || hg_node_is(p, "Add") || hg_node_is(p, "Sub"))
            cumsum_span(p->inputs[k], depth + 1, nodes);
}

/* What stores a centred tensor: v's producer, and back through copies (Cast, Identity, reshaping) to
 * the node that computes it; nothing for a graph input, which an FP32 reader reads as it is. */
static void
spread_span(const Check *c, const HgValue *v, int depth, GPtrArray *nodes)
{
    const HgNode *p = v ? v->producer : NULL;
    if (!p || depth > 8 || is_constant(c, v) || g_ptr_array_find(nodes, p, NULL))
        return;
    g_ptr_array_add(nodes, (gpointer)p);
    if (hg_node_passes_through(p) && p->n_inputs >= 1)
        spread_span(c, p->inputs[0], depth + 1, nodes);
}

/* The nodes that compute a large tensor: v's producer, and back through its float inputs as long as
 * the tensor may pass limit (statically, or as calibration saw it); at_product stops at the product
 * that forms it (MatMul, Gemm, Einsum), whose inputs are left to the cut.
 *
 * A Softmax's logits past SOFTMAX_SPREAD lose their units wherever they are stored in FP16, before
 * the Softmax as much as inside it (a scale after the product does not help: FP16's precision is
 * relative), so every tensor that large between Q K^T and the Softmax must be FP32. A Sin's or Cos's
 * angle past PHASE_MAX loses its phase likewise, and so do the tensors that form it, products
 * included (the positions cast to float, their product by the frequencies). */
static void
large_span(const Check *c, const HgValue *v, double limit, gboolean at_product, int depth, GPtrArray *nodes)
{
    const HgNode *p = v ? v->producer : NULL;
    if (!p || depth > 16 || !is_float_value(c, v) || is_constant(c, v) || g_ptr_array_find(nodes, p, NULL))
        return;
    Decided d = decide(c, v);
    if (d.known && d.bound <= limit)
        return;
    g_ptr_array_add(nodes, (gpointer)p);
    if (at_product && (hg_node_is(p, "MatMul") || hg_node_is(p, "Gemm") || hg_node_is(p, "Einsum")))
        return;
    for (guint k = 0; k < p->n_inputs; k++)
        large_span(c, p->inputs[k], limit, at_product, depth + 1, nodes);
}

void
hg_check_hazard_span(const HgCheckResult *r, const HgHazard *h, GPtrArray *nodes)
{
    const Check *c = current(r);
    const HgNode *n = h->at;
    const HgValue *centred;
    if (!n)
        return;
    if (h->kind == HG_HAZARD_DIVISION_BY_ZERO) {
        const HgValue *d = hg_node_is(n, "Div") && n->n_inputs > 1 ? n->inputs[1] : n->inputs[0];
        zero_span(c, d, 0, nodes);
    } else if (h->kind == HG_HAZARD_PRECISION_LOSS && (hg_node_is(n, "Sin") || hg_node_is(n, "Cos"))) {
        large_span(c, n->inputs[0], PHASE_MAX, FALSE, 0, nodes);
    } else if (h->kind == HG_HAZARD_PRECISION_LOSS && (centred = centred_input(c, n))) {
        spread_span(c, centred, 0, nodes);
    } else if (h->kind == HG_HAZARD_UNDERFLOW && hg_node_is(n, "Log")) {
        log_span(c, n->inputs[0], 0, nodes);
    } else if (h->kind == HG_HAZARD_PRECISION_LOSS && (hg_node_is(n, "Softmax") || hg_node_is(n, "LogSoftmax"))) {
        large_span(c, n->inputs[0], SOFTMAX_SPREAD, TRUE, 0, nodes);
    } else if (h->kind == HG_HAZARD_PRECISION_LOSS && hg_node_is(n, "CumSum") && n->outputs[0] && n->inputs[0] &&
               integer_valued(c, n->inputs[0], 0)) {
        /* a count past 2048 (float sums' precision is the cancelling Sub's finding, cumsum_span) */
        Decided d = decide(c, n->outputs[0]);
        if (!d.known || d.bound > FP16_EXACT_INT)
            large_readers(c, n->outputs[0], FP16_EXACT_INT, 0, nodes);
    } else if (h->kind == HG_HAZARD_PRECISION_LOSS && hg_node_is(n, "Sub")) {
        cumsum_span(n->inputs[0], 0, nodes);
        cumsum_span(n->inputs[1], 0, nodes);
        /* Down to the division by the area: the rest of the box sum, one reader at a time. */
        const HgValue *v = n->outputs[0];
        for (int depth = 0; v && v->uses->len == 1 && !v->is_output && depth < 8; depth++) {
            const HgUse *u = &g_array_index(v->uses, HgUse, 0);
            const HgNode *m = u->node;
            gboolean scale = (hg_node_is(m, "Div") || hg_node_is(m, "Mul")) && m->n_inputs == 2 &&
                             is_constant(c, m->inputs[1 - u->index]);
            if (!(scale || hg_node_is(m, "Add") || hg_node_is(m, "Sub") || hg_node_is(m, "Neg") || hg_node_is(m, "Cast")))
                break;
            g_ptr_array_add(nodes, (gpointer)m);
            if (scale)
                break;
            v = m->outputs[0];
        }
    }
}
