/* assign_precision: choose FP16 or FP32 for every node that computes with floats.
 *
 *     x -> Conv -> Relu -> Pow(3) -> ReduceMean -> ...       Pow's output may reach 2e6
 *  => Conv, Relu: FP16; Pow, ReduceMean: FP32 (they read or write a tensor past 65504); the rest
 *     FP16 again where the values fit, unless the Casts at the boundaries cost more than running the
 *     nodes between in FP32.
 *
 * The hazards check finds (src/hazards.c) and that no earlier pass removed force their nodes FP32,
 * with every producer and consumer of a tensor FP16 cannot hold; --block-op and --block-node force
 * FP32, --force-fp16-node forces FP16 (a block wins). Everything else prefers FP16. The boundaries
 * come from an s-t minimum cut (igraph's push-relabel maximum flow): source = FP16, sink = FP32; a node
 * pays its FP32 cost (bytes it moves at twice the size, and its multiply-accumulates at FP32's rate)
 * when it lands on the FP32 side, and each tensor between nodes on different sides pays a Cast (a
 * small fixed cost plus reading and writing it). Forced nodes are tied to their side by infinite
 * edges. lower applies the result.
 *
 * The same cut, with the nodes a rewrite would cure let off their hazards, is a cost oracle for the
 * passes that rewrite hazards away (passes/precision_cost.h): prescale rewrites only where that beats
 * an FP32 island.
 */
#include "halfguard/pass.h"

#include <igraph/igraph.h>
#include <math.h>
#include <string.h>

#include "hazards.h"
#include "ops/array.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "precision_cost.h"

/* Costs in bytes of memory traffic: a Cast's fixed part, per element converted (read 4, write 2), per
 * FP32 multiply-accumulate over its FP16 cost (tensor cores vs FP32 units: about 0.1 byte per MAC on
 * an H100, 67 vs 990 TFLOP/s against 3.35 TB/s). The fixed part is small: TensorRT, which builds the
 * engine from the file lower writes, fuses a Cast into the pointwise kernel or the reformat beside
 * it, so what a Cast costs is mostly its traffic. It still makes the plan with fewer Casts win
 * between two that move the same bytes, and keeps a scalar from being cast for nothing. (It was 8
 * KiB: that kept MatMuls of up to about 50k MACs FP32 beside a hazard to spare one Cast, a false
 * island in small models; on the exports it changes only where a handful of small Casts go.) */
#define CAST_FIXED 1024.0
#define CAST_PER_ELEMENT 6.0
#define FP32_PER_MAC 0.1
#define UNKNOWN_NUMEL 65536 /* a tensor whose size shape inference does not know */
/* A symbolic dim (batch, sequence) that neither the model nor --shapes fixes is priced at this size
 * when a node's multiply-accumulates depend on it, unless --dim-max names a size for it: a short
 * sequence or a large batch, where FP32 compute starts to weigh against the Casts around it. The
 * summary says which dims were priced so. */
#define SYMBOLIC_DIM 128
#define FP16_BYTES 2.0

/* The first default-domain opset whose schema allows tensor(float16) for the op's float type, where
 * it is later than opset 1 (from Debian's onnx 1.12 schemas); G_MAXINT: never. Below it the node
 * stays FP32. */
static const struct {
    const char *op;
    gint64 since;
} fp16_since[] = {
    {"Affine", G_MAXINT}, {"CastLike", 15}, {"ConstantOfShape", 9}, {"Cos", 7}, {"Crop", G_MAXINT},
    {"CumSum", 14}, {"Einsum", 12}, {"Equal", 11}, {"Erf", 9}, {"Expand", 8}, {"GatherElements", 11},
    {"GatherND", 11}, {"GreaterOrEqual", 12}, {"HardSwish", 14}, {"ImageScaler", G_MAXINT},
    {"IsInf", G_MAXINT}, {"IsNaN", 9}, {"LayerNormalization", 17}, {"LessOrEqual", 12},
    {"Mish", 18}, {"Mod", 10}, {"NonMaxSuppression", G_MAXINT}, {"Range", G_MAXINT}, {"Resize", 10}, {"Round", 11},
    {"ScatterElements", 11}, {"ScatterND", 11}, {"Sign", 9}, {"Sin", 7}, {"ThresholdedRelu", 10},
    {"Trilu", 14}, {"Where", 9},
};

static gboolean
is_float(int dtype)
{
    return dtype == HG_DTYPE_FLOAT || dtype == HG_DTYPE_FLOAT16;
}

static gboolean
default_domain(const HgNode *n)
{
    return !n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0;
}

gboolean
hg_precision_keeps_types(const HgNode *n)
{
    if (!default_domain(n) || !hg_op_for_node(n))
        return TRUE;
    for (guint i = 0; i < n->attrs->len; i++) {
        const HgAttr *a = n->attrs->pdata[i];
        if (a->g || (a->graphs && a->graphs->len))
            return TRUE; /* If, Loop, Scan: their bodies are not lowered */
    }
    return hg_node_attr(n, "dtype") || (strcmp(n->op_type, "Cast") != 0 && hg_node_attr(n, "to"));
}

/* Why n cannot run in FP16 at this opset, or NULL. */
static const char *
no_fp16_form(const HgNode *n, gint64 opset)
{
    if (!default_domain(n) || !hg_op_for_node(n))
        return "an op halfguard does not know: its element types stay, Casts around it";
    for (guint i = 0; i < G_N_ELEMENTS(fp16_since); i++)
        if (strcmp(n->op_type, fp16_since[i].op) == 0 && opset < fp16_since[i].since)
            return "no FP16 form at this opset";
    /* Ops whose output type an attribute names, other than those lower retargets; control flow. */
    if (hg_precision_keeps_types(n))
        return hg_node_attr(n, "dtype") || hg_node_attr(n, "to") ? "its output type is an attribute"
                                                                  : "its subgraphs keep their types";
    return NULL;
}

typedef struct {
    HgNode *node;
    double fp32_cost;
    const char *forced32; /* reason, or NULL */
    const char *forced16;
    gint64 macs;          /* with symbolic dims priced (SYMBOLIC_DIM) where macs_unknown */
    gboolean macs_unknown;
} Cand;

gint64
hg_precision_numel(const HgShapes *shapes, const HgValue *v)
{
    gint64 n = v ? hg_vshape_numel(hg_shapes_get(shapes, v)) : -1;
    return n >= 0 ? n : UNKNOWN_NUMEL;
}

double
hg_precision_fp16_node_cost(double elems_read, double elems_written)
{
    return CAST_FIXED + FP16_BYTES * (elems_read + elems_written);
}

gboolean
hg_precision_rewrite_pays(double rewrite, double island)
{
    return rewrite <= 0 || rewrite < island || (island > 0 && rewrite < island + CAST_FIXED);
}

/* s with every unknown dim at its priced size, its symbolic names added to syms ("unnamed" for a
 * dim no name follows). */
static void
price_shape(HgValueShape *s, const char *const *dim_max, GPtrArray *syms)
{
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i].v >= 0)
            continue;
        const char *f[HG_SYM_MAX_FACTORS];
        gint64 coef, cap;
        int nf = 0;
        if (!s->dims[i].sym || !hg_sym_factors(s->dims[i].sym, &coef, f, &nf))
            f[0] = g_intern_static_string("unnamed"), nf = 1;
        /* listed by the dims it is made of: 4*batch by batch, min(S,C) (priced by S's size) by S */
        for (int k = 0; k < nf; k++) {
            const char *name = f[k];
            hg_sym_min_parts(name, &name, &cap);
            if (!g_ptr_array_find(syms, name, NULL))
                g_ptr_array_add(syms, (gpointer)name);
        }
        s->dims[i].v = hg_dim_max_lookup(dim_max, s->dims[i].sym, SYMBOLIC_DIM);
    }
}

/* n's multiply-accumulates. Where they depend on dims shape inference does not know, *unknown is
 * set, the names of those dims are added to syms (interned strings), and the count is the one with
 * each such dim at its priced size (0 when even that is unknown: an unknown rank). */
static gint64
node_macs(const HgShapes *shapes, HgNode *n, gint64 opset, const char *const *dim_max, gboolean *unknown,
          GPtrArray *syms)
{
    const HgOpDef *op = hg_op_for_node(n);
    *unknown = FALSE;
    if (!op || !op->cost)
        return 0;
    g_autofree const HgValueShape **ins = g_new0(const HgValueShape *, n->n_inputs + 1);
    g_autofree HgValueShape **outs = g_new0(HgValueShape *, n->n_outputs + 1);
    for (guint k = 0; k < n->n_inputs; k++)
        ins[k] = n->inputs[k] ? hg_shapes_get(shapes, n->inputs[k]) : NULL;
    for (guint k = 0; k < n->n_outputs; k++)
        outs[k] = n->outputs[k] ? (HgValueShape *)hg_shapes_get(shapes, n->outputs[k]) : NULL;
    HgShapeCtx sc = {n, opset, n->n_inputs, ins, n->n_outputs, outs, NULL};
    gint64 c = op->cost(&sc);
    if (c >= 0)
        return c;
    /* Copies of the shapes (their values borrowed, not owned) with the unknown dims priced. */
    *unknown = TRUE;
    g_autofree HgValueShape *pi = g_new0(HgValueShape, n->n_inputs + 1);
    g_autofree HgValueShape *po = g_new0(HgValueShape, n->n_outputs + 1);
    for (guint k = 0; k < n->n_inputs; k++)
        if (ins[k]) {
            pi[k] = *ins[k];
            price_shape(&pi[k], dim_max, syms);
            ins[k] = &pi[k];
        }
    for (guint k = 0; k < n->n_outputs; k++)
        if (outs[k]) {
            po[k] = *outs[k];
            price_shape(&po[k], dim_max, syms);
            outs[k] = &po[k];
        }
    c = op->cost(&sc);
    return MAX(c, 0);
}

/* Is input k of n a float tensor that n computes with (not an input the op keeps FP32)? */
static gboolean
float_input(const HgShapes *shapes, const HgNode *n, guint k)
{
    const HgOpDef *op = hg_op_for_node(n);
    const HgValue *v = n->inputs[k];
    if (!v || !is_float(hg_shapes_get(shapes, v)->dtype))
        return FALSE;
    return !(op && k < 32 && (op->fp32_inputs >> k & 1));
}

static gboolean
regex_any(const char *const *patterns, const char *name, GError **error, gboolean *bad)
{
    for (guint i = 0; patterns && patterns[i]; i++) {
        g_autoptr(GRegex) re = g_regex_new(patterns[i], 0, 0, error);
        if (!re) {
            *bad = TRUE;
            return FALSE;
        }
        if (g_regex_match(re, name ? name : "", 0, NULL))
            return TRUE;
    }
    return FALSE;
}

static gboolean
strv_has(const char *const *list, const char *s)
{
    for (guint i = 0; list && list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return TRUE;
    return FALSE;
}

/* A Cast to a float type: it converts whatever it reads, so what precision its input has costs
 * nothing. A Cast to an integer or bool type computes with its input and runs where that lives (in
 * TensorRT a Cast layer marked FP16 converts its input to half first). */
static gboolean
is_float_cast(const HgShapes *shapes, const HgNode *n)
{
    if (strcmp(n->op_type, "Cast") != 0 || !default_domain(n))
        return FALSE;
    return n->n_outputs && n->outputs[0] && is_float(hg_shapes_get(shapes, n->outputs[0])->dtype);
}

/* The candidates of one cut: nodes with a float input they compute with or a float output, in
 * topological order, each with its cost and what forces its side. */
typedef struct {
    GArray *cands;      /* of Cand */
    GHashTable *index;  /* HgNode* -> candidate index + 1 */
    GPtrArray *syms;    /* the symbolic dims the MACs of some candidate depend on (interned) */
} Cands;

static void
cands_clear(Cands *cs)
{
    g_clear_pointer(&cs->cands, g_array_unref);
    g_clear_pointer(&cs->index, g_hash_table_unref);
    g_clear_pointer(&cs->syms, g_ptr_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Cands, cands_clear)

static guint
cand_of(const Cands *cs, const HgNode *n)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(cs->index, n));
}

static gboolean
in_set(GHashTable *set, gconstpointer n)
{
    return set && n && g_hash_table_contains(set, n);
}

/* Does v, a tensor FP16 cannot hold or not, force n (its producer or a reader) FP32? Not where a
 * rewrite cures n, nor where it cures v's producer (it scales v). */
static gboolean
unsafe_for(const HgCheckResult *res, GHashTable *cured, const HgValue *v, const HgNode *n)
{
    if (in_set(cured, n) || (v && in_set(cured, v->producer)))
        return FALSE;
    return hg_check_value_unsafe(res, v);
}

/* ReduceMean -> Add(epsilon) -> Sqrt, the statistics of a decomposed LayerNorm or RMSNorm: ONNX
 * Runtime's LayerNormFusion and SimplifiedLayerNormFusion (CPU and CUDA, at its default optimization
 * level) read the epsilon only from an FP32 constant and take 1e-5 for any other. An FP16 Add of
 * 1e-6 would run as 1e-5 there: rel-L2 0.12 on Gemma 2's logits, where its activations are small
 * beside the epsilon. In FP32 the pattern has Casts in it, ONNX Runtime leaves it as written, and the
 * tensors are one value per row. Where the epsilon is 1e-5 (as FP32) the fusion's default is right,
 * and where the mean is large beside both epsilons (below) the difference is lost in FP16's rounding. */
static gboolean
norm_epsilon_add(const HgNode *n, const HgCheckResult *res, const HgCheckOptions *opts)
{
    if (!default_domain(n) || strcmp(n->op_type, "Add") || n->n_inputs != 2 || n->n_outputs != 1 || !n->outputs[0])
        return FALSE;
    const HgValue *y = n->outputs[0];
    if (!y->uses->len)
        return FALSE;
    for (guint u = 0; u < y->uses->len; u++) {
        const HgNode *r = g_array_index(y->uses, HgUse, u).node;
        if (!default_domain(r) || strcmp(r->op_type, "Sqrt"))
            return FALSE;
    }
    for (guint k = 0; k < 2; k++) {
        const HgValue *x = n->inputs[1 - k], *e = n->inputs[k];
        /* the epsilon: a one-element float constant, as shape inference holds constants' values */
        const HgArray *ev = e && !e->is_input ? hg_shapes_get(hg_check_shapes(res), e)->value : NULL;
        if (!x || !x->producer || !default_domain(x->producer) || strcmp(x->producer->op_type, "ReduceMean") ||
            !ev || ev->numel != 1 || !hg_dtype_is_float(ev->dtype))
            continue;
        double eps = hg_array_get_f64(ev, 0);
        if ((float)eps == 1e-5f)
            return FALSE;
        /* 1 / sqrt(m + 1e-5) against 1 / sqrt(m + eps) differs by |1e-5 - eps| / 2m relative at most:
         * under FP16's rounding (2^-11) where the mean m is never below |1e-5 - eps| 2^10, by its
         * static bound or by calibration (its smallest value over the margin): a trained model's
         * statistics, far above either epsilon, need nothing. */
        double m = hg_ranges_get(hg_check_ranges(res), x)->lo;
        const HgTensorStats *st = opts && opts->stats ? hg_stats_get(opts->stats, x->name) : NULL;
        if (st && !isnan(st->min))
            m = MAX(m, st->min / (opts->margin > 0 ? opts->margin : 2.0));
        return !(m > 0 && fabs(1e-5 - eps) <= ldexp(m, -10));
    }
    return FALSE;
}

/* Build the candidates of g and mark what forces them: hazards of res (but those at nodes in cured),
 * tensors FP16 cannot hold, opsets without an FP16 form, FP32 in the plan already, the overrides. */
static gboolean
build_cands(HgGraph *g, const HgPassEnv *env, const HgCheckResult *res, GHashTable *cured, Cands *cs,
            GError **error)
{
    const HgShapes *shapes = hg_check_shapes(res);
    gint64 opset = hg_model_opset(g->model, "");
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return FALSE;

    cs->cands = g_array_new(FALSE, TRUE, sizeof(Cand));
    cs->index = g_hash_table_new(NULL, NULL);
    cs->syms = g_ptr_array_new();
    const HgCheckOptions *check = hg_convert_options_analysis(env->options);
    const char *const *dim_max = check ? check->dim_max : NULL;
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        gboolean any = FALSE;
        double bytes = 0;
        for (guint k = 0; k < n->n_inputs; k++)
            if (float_input(shapes, n, k)) {
                any = TRUE;
                bytes += 2.0 * (double)hg_precision_numel(shapes, n->inputs[k]);
            }
        for (guint k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && is_float(hg_shapes_get(shapes, n->outputs[k])->dtype)) {
                any = TRUE;
                bytes += 2.0 * (double)hg_precision_numel(shapes, n->outputs[k]);
            }
        if (!any)
            continue;
        Cand c = {n, 0, NULL, NULL, 0, FALSE};
        c.macs = node_macs(shapes, n, opset, dim_max, &c.macs_unknown, cs->syms);
        c.fp32_cost = 1.0 + bytes + FP32_PER_MAC * (double)c.macs;
        c.forced32 = no_fp16_form(n, opset);
        if (!c.forced32 && norm_epsilon_add(n, res, check))
            c.forced32 = "ONNX Runtime's norm fusions would read its FP16 epsilon as 1e-5";
        /* A pass before this one may have set FP32 in the plan to keep a node there. */
        if (!c.forced32 && n->precision == HG_PRECISION_FP32)
            c.forced32 = n->precision_reason ? g_intern_string(n->precision_reason) : "kept FP32 by an earlier pass";
        g_array_append_val(cs->cands, c);
        g_hash_table_insert(cs->index, n, GUINT_TO_POINTER(cs->cands->len));
    }

    /* Hazards no pass removed (nor a rewrite would), with the nodes they span. */
    for (guint i = 0; i < res->hazards->len; i++) {
        const HgHazard *h = res->hazards->pdata[i];
        if (in_set(cured, h->at))
            continue;
        g_autoptr(GPtrArray) span = g_ptr_array_new();
        g_ptr_array_add(span, (gpointer)h->at);
        hg_check_hazard_span(res, h, span);
        for (guint k = 0; k < span->len; k++) {
            guint ci = cand_of(cs, span->pdata[k]);
            Cand *c = ci ? &g_array_index(cs->cands, Cand, ci - 1) : NULL;
            if (c && !c->forced32)
                c->forced32 = hg_hazard_kind_name(h->kind);
        }
    }
    /* Tensors FP16 cannot hold, and tensors too small for it (calibration saw them all below
     * 2^-14): their producers and consumers stay FP32, so they are computed and stored there. */
    for (guint i = 0; i < cs->cands->len; i++) {
        Cand *c = &g_array_index(cs->cands, Cand, i);
        for (guint k = 0; k < c->node->n_outputs && !c->forced32; k++)
            c->forced32 = unsafe_for(res, cured, c->node->outputs[k], c->node) ? "writes a tensor FP16 cannot hold"
                          : hg_check_value_tiny(res, c->node->outputs[k]) ? "writes a tensor too small for FP16"
                                                                          : NULL;
        for (guint k = 0; k < c->node->n_inputs && !c->forced32; k++) {
            const HgValue *x = c->node->inputs[k];
            if (float_input(shapes, c->node, k) && !is_float_cast(shapes, c->node))
                c->forced32 = unsafe_for(res, cured, x, c->node) ? "reads a tensor FP16 cannot hold"
                              : hg_check_value_tiny(res, x)   ? "reads a tensor too small for FP16"
                                                              : NULL;
        }
    }
    /* A value of unknown element type written by a node (an op halfguard does not know, with no
     * declared type): its readers keep the types they had, or their type constraints could break. */
    for (guint i = 0; i < cs->cands->len; i++) {
        Cand *c = &g_array_index(cs->cands, Cand, i);
        for (guint k = 0; k < c->node->n_inputs && !c->forced32; k++) {
            const HgValue *x = c->node->inputs[k];
            if (x && x->producer && hg_shapes_get(shapes, x)->dtype == HG_DTYPE_UNDEFINED &&
                !is_float_cast(shapes, c->node))
                c->forced32 = "reads a value of unknown element type";
        }
    }
    /* The user's overrides. */
    for (guint i = 0; i < cs->cands->len; i++) {
        Cand *c = &g_array_index(cs->cands, Cand, i);
        gboolean bad = FALSE;
        g_autoptr(GError) re_error = NULL;
        if (strv_has(hg_convert_options_block_ops(env->options), c->node->op_type))
            c->forced32 = "--block-op";
        else if (regex_any(hg_convert_options_block_nodes(env->options), c->node->name, &re_error, &bad))
            c->forced32 = "--block-node";
        else if (!bad && regex_any(hg_convert_options_force_fp16_nodes(env->options), c->node->name, &re_error, &bad) &&
                 !no_fp16_form(c->node, opset))
            c->forced16 = "--force-fp16-node";
        if (bad) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "bad node-name pattern: %s", re_error->message);
            return FALSE;
        }
        if (c->forced16)
            c->forced32 = NULL;
    }
    return TRUE;
}

/* The s-t minimum cut over the candidates: *flow receives its value; fp16 (cs->cands->len entries,
 * may be NULL) whether each candidate lands on the FP16 side. */
static gboolean
min_cut(const HgPassEnv *env, const HgShapes *shapes, const Cands *cs, double *flow_out, gboolean *fp16,
        GError **error)
{
    /* The flow network: 0 = source (FP16), 1 = sink (FP32), candidate i = i + 2. Infinite edges are
     * built as -1 and become one more than every finite capacity together. */
    const double inf = -1;
    g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(igraph_integer_t));
    g_autoptr(GArray) caps = g_array_new(FALSE, FALSE, sizeof(double));
#define EDGE(a, b, cap)                                                                            \
    do {                                                                                           \
        igraph_integer_t e_[2] = {(a), (b)};                                                       \
        double c_ = (cap);                                                                         \
        g_array_append_vals(edges, e_, 2);                                                         \
        g_array_append_val(caps, c_);                                                              \
    } while (0)
    for (guint i = 0; i < cs->cands->len; i++) {
        Cand *c = &g_array_index(cs->cands, Cand, i);
        igraph_integer_t v = (igraph_integer_t)i + 2;
        EDGE(0, v, c->forced16 ? inf : c->fp32_cost);
        if (c->forced32)
            EDGE(v, 1, inf);
        for (guint k = 0; k < c->node->n_inputs; k++) {
            HgValue *x = c->node->inputs[k];
            /* Initializers are converted for each reader (lower), so they cost no Cast; a tensor
             * whose value is known but that a node computes (a Constant) gets one like any other. */
            if (!float_input(shapes, c->node, k) || x->init || is_float_cast(shapes, c->node))
                continue;
            /* A Cast per consumer at worst; lower shares one among the consumers on a side. */
            double cast = CAST_FIXED + CAST_PER_ELEMENT * (double)hg_precision_numel(shapes, x);
            guint pi = x->producer ? cand_of(cs, x->producer) : 0;
            if (pi) {
                EDGE((igraph_integer_t)pi + 1, v, cast);
                EDGE(v, (igraph_integer_t)pi + 1, cast);
            } else if (x->is_input) {
                /* A graph input keeps FP32 with --keep-io-types, else becomes FP16. */
                if (hg_convert_options_keep_io_types(env->options))
                    EDGE(v, 1, cast);
                else
                    EDGE(0, v, cast);
            }
        }
        for (guint k = 0; hg_convert_options_keep_io_types(env->options) && k < c->node->n_outputs; k++) {
            HgValue *y = c->node->outputs[k];
            if (y && y->is_output && is_float(hg_shapes_get(shapes, y)->dtype))
                EDGE(v, 1, CAST_FIXED + CAST_PER_ELEMENT * (double)hg_precision_numel(shapes, y));
        }
    }
#undef EDGE
    double total = 1;
    for (guint i = 0; i < caps->len; i++)
        total += MAX(g_array_index(caps, double, i), 0);
    for (guint i = 0; i < caps->len; i++)
        if (g_array_index(caps, double, i) < 0)
            g_array_index(caps, double, i) = total;
    /* igraph's default error handler aborts; the library must return an error instead. */
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_t graph;
    igraph_vector_int_t ev;
    igraph_vector_t cv;
    igraph_vector_int_view(&ev, (igraph_integer_t *)(void *)edges->data, edges->len);
    igraph_vector_view(&cv, (double *)(void *)caps->data, caps->len);
    igraph_vector_int_t side16;
    igraph_vector_int_init(&side16, 0);
    igraph_real_t flow = 0;
    igraph_integer_t n_vertices = (igraph_integer_t)cs->cands->len + 2;
    gboolean ok = igraph_create(&graph, &ev, n_vertices, IGRAPH_DIRECTED) == IGRAPH_SUCCESS;
    ok = ok && igraph_maxflow(&graph, &flow, NULL, NULL, &side16, NULL, 0, 1, &cv, NULL) == IGRAPH_SUCCESS;
    if (ok)
        igraph_destroy(&graph);
    if (!ok) {
        igraph_vector_int_destroy(&side16);
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "assign_precision: the minimum cut failed");
        return FALSE;
    }
    for (igraph_integer_t i = 0; fp16 && i < igraph_vector_int_size(&side16); i++) {
        igraph_integer_t v = VECTOR(side16)[i];
        if (v >= 2)
            fp16[v - 2] = TRUE;
    }
    igraph_vector_int_destroy(&side16);
    *flow_out = flow;
    return TRUE;
}

gboolean
hg_precision_cut_cost(HgGraph *g, const HgPassEnv *env, const HgCheckResult *res, GHashTable *cured,
                      double *cost, GError **error)
{
    g_return_val_if_fail(g != NULL && g->model != NULL && env != NULL && res != NULL && cost != NULL,
                         FALSE);
    g_auto(Cands) cs = {0};
    if (!build_cands(g, env, res, cured, &cs, error))
        return FALSE;
    return min_cut(env, hg_check_shapes(res), &cs, cost, NULL, error);
}

/* The weakest source among the bounds of n's float values: what its decision rests on. */
static HgBoundSource
node_source(const HgCheckResult *res, const HgShapes *shapes, const HgNode *n)
{
    static const int weight[] = {[HG_SOURCE_STATIC] = 0, [HG_SOURCE_CALIBRATION] = 1,
                                 [HG_SOURCE_SYNTHETIC] = 2, [HG_SOURCE_ASSUMED] = 3};
    HgBoundSource worst = HG_SOURCE_STATIC;
    for (guint side = 0; side < 2; side++) {
        guint count = side ? n->n_outputs : n->n_inputs;
        for (guint k = 0; k < count; k++) {
            const HgValue *v = side ? n->outputs[k] : n->inputs[k];
            if (!v || v->init || !is_float(hg_shapes_get(shapes, v)->dtype))
                continue;
            HgBoundSource s = hg_check_value_source(res, v);
            if (weight[s] > weight[worst])
                worst = s;
        }
    }
    return worst;
}

/* The inputs as res saw them, and what synthetic inputs drew for those whose statistics are synthetic. */
static void
record_inputs(HgConvertResult *result, const HgCheckResult *res, const HgCheckOptions *opts)
{
    g_clear_pointer(&result->inputs, g_ptr_array_unref);
    g_clear_pointer(&result->synthetic_draw, g_ptr_array_unref);
    result->inputs = g_ptr_array_new_with_free_func((GDestroyNotify)hg_input_info_free);
    result->synthetic_draw = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; res->inputs && i < res->inputs->len; i++) {
        const HgInputInfo *in = res->inputs->pdata[i];
        HgInputInfo *copy = g_memdup2(in, sizeof *in);
        copy->name = g_strdup(in->name);
        copy->why = g_strdup(in->why);
        g_ptr_array_add(result->inputs, copy);
        const HgTensorStats *st = opts->stats ? hg_stats_get(opts->stats, in->name) : NULL;
        g_ptr_array_add(result->synthetic_draw, st && st->synthetic ? hg_synth_describe(in) : NULL);
    }
}

gboolean
hg_pass_assign_precision(HgGraph *g, const HgPassEnv *env, GError **error)
{
    HgCheckResult *res = hg_analyses_get(env->analyses, g, error);
    if (!res)
        return FALSE;
    const HgShapes *shapes = hg_check_shapes(res);
    const HgRanges *ranges = hg_check_ranges(res);
    g_auto(Cands) cs = {0};
    if (!build_cands(g, env, res, NULL, &cs, error))
        return FALSE;
    GArray *cands = cs.cands;
    g_autofree gboolean *fp16 = g_new0(gboolean, cands->len + 2);
    double flow;
    if (!min_cut(env, shapes, &cs, &flow, fp16, error))
        return FALSE;

    /* The result, and the figures of the summary line. */
    /* The plan goes into the IR; fp32 is its FP32 side, for the islands below. */
    g_autoptr(GHashTable) fp32 = g_hash_table_new(NULL, NULL);
    env->result->planned = TRUE;
    env->result->macs_total = env->result->macs_fp16 = 0;
    env->result->macs_priced_total = env->result->macs_priced_fp16 = 0;
    env->result->n_macs_unknown = 0;
    g_clear_pointer(&env->result->symbolic_dims, g_free);
    g_clear_pointer(&env->result->symbolic_priced, g_free);
    if (cs.syms->len) {
        const HgCheckOptions *check = hg_convert_options_analysis(env->options);
        g_autoptr(GString) names = g_string_new(NULL), priced = g_string_new(NULL);
        for (guint i = 0; i < cs.syms->len; i++) {
            const char *name = cs.syms->pdata[i];
            gint64 size = hg_dim_max_lookup(check ? check->dim_max : NULL, strcmp(name, "unnamed") ? name : NULL,
                                            SYMBOLIC_DIM);
            g_string_append_printf(names, "%s%s", i ? ", " : "", name);
            g_string_append_printf(priced, "%s%s=%" G_GINT64_FORMAT, i ? ", " : "", name, size);
        }
        env->result->symbolic_dims = g_string_free(g_steal_pointer(&names), FALSE);
        env->result->symbolic_priced = g_string_free(g_steal_pointer(&priced), FALSE);
    }
    env->result->n_synthetic = env->result->n_assumed = 0;
    record_inputs(env->result, res, hg_analyses_options(env->analyses));
    /* Read from the analysis before the plan goes into the IR (which moves the generation). */
    g_autofree HgBoundSource *sources = g_new0(HgBoundSource, cands->len + 1);
    for (guint i = 0; i < cands->len; i++)
        sources[i] = node_source(res, shapes, g_array_index(cands, Cand, i).node);
    for (guint i = 0; i < cands->len; i++) {
        Cand *c = &g_array_index(cands, Cand, i);
        HgDecision *d = g_new0(HgDecision, 1);
        d->node = g_strdup(c->node->name ? c->node->name : "");
        d->op = g_strdup(c->node->op_type);
        d->fp32 = !fp16[i];
        d->reason = g_strdup(c->forced32 ? c->forced32
                             : c->forced16 ? c->forced16
                             : d->fp32 ? "cheaper in FP32 than the Casts around it (minimum cut)"
                                       : "prefers FP16");
        d->macs = c->macs_unknown ? -1 : c->macs;
        d->source = sources[i];
        env->result->n_synthetic += d->source == HG_SOURCE_SYNTHETIC;
        env->result->n_assumed += d->source == HG_SOURCE_ASSUMED;
        d->lo = d->hi = NAN;
        for (guint k = 0; k < c->node->n_outputs; k++)
            if (c->node->outputs[k] && is_float(hg_shapes_get(shapes, c->node->outputs[k])->dtype)) {
                const HgRange *r = hg_ranges_get(ranges, c->node->outputs[k]);
                d->lo = r->lo;
                d->hi = r->hi;
                break;
            }
        g_ptr_array_add(env->result->decisions, d);
        hg_node_set_precision(c->node, d->fp32 ? HG_PRECISION_FP32 : HG_PRECISION_FP16, d->reason);
        env->result->n_macs_unknown += c->macs_unknown;
        env->result->macs_total += c->macs_unknown ? 0 : c->macs;
        env->result->macs_priced_total += c->macs;
        if (d->fp32) {
            g_hash_table_add(fp32, c->node);
        } else {
            env->result->macs_fp16 += c->macs_unknown ? 0 : c->macs;
            env->result->macs_priced_fp16 += c->macs;
        }
    }
    /* Islands: FP32 nodes connected through tensors, numbered in the decisions' order (so that the
     * numbers, and convert -v's list, are the same on every run). */
    guint n32 = g_hash_table_size(fp32), islands = 0;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    g_autoptr(GHashTable) decision_of = g_hash_table_new(NULL, NULL);
    guint first = env->result->decisions->len - cands->len;
    for (guint i = 0; i < cands->len; i++)
        g_hash_table_insert(decision_of, g_array_index(cands, Cand, i).node,
                            env->result->decisions->pdata[first + i]);
    for (guint i = 0; i < cands->len; i++) {
        HgNode *start = g_array_index(cands, Cand, i).node;
        if (!g_hash_table_contains(fp32, start) || g_hash_table_contains(seen, start))
            continue;
        islands++;
        g_ptr_array_add(stack, start);
        g_hash_table_add(seen, start);
        while (stack->len) {
            HgNode *n = g_ptr_array_steal_index(stack, stack->len - 1);
            ((HgDecision *)g_hash_table_lookup(decision_of, n))->island = islands;
            for (guint k = 0; k < n->n_inputs; k++) {
                HgNode *p = n->inputs[k] ? n->inputs[k]->producer : NULL;
                if (p && g_hash_table_contains(fp32, p) && g_hash_table_add(seen, p))
                    g_ptr_array_add(stack, p);
            }
            for (guint k = 0; k < n->n_outputs; k++)
                for (guint u = 0; n->outputs[k] && u < n->outputs[k]->uses->len; u++) {
                    HgNode *w = g_array_index(n->outputs[k]->uses, HgUse, u).node;
                    if (g_hash_table_contains(fp32, w) && g_hash_table_add(seen, w))
                        g_ptr_array_add(stack, w);
                }
        }
    }
    env->result->n_fp32_nodes = n32;
    env->result->n_fp32_islands = islands;
    if (res->unknown_ops && res->unknown_ops->len) {
        g_autoptr(GString) ops = g_string_new(NULL);
        guint nodes = 0;
        for (guint i = 0; i < res->unknown_ops->len; i++) {
            const HgUnknownOp *u = res->unknown_ops->pdata[i];
            g_string_append_printf(ops, "%s'%s'", i ? ", " : "", u->op);
            nodes += u->nodes;
        }
        hg_pass_note(env->result, "assign_precision",
                     "kept %u node%s of op%s halfguard does not know (%s) FP32 with Casts around %s; what "
                     "is computed from %s is not bounded", nodes, nodes == 1 ? "" : "s",
                     res->unknown_ops->len == 1 ? "" : "s", ops->str, nodes == 1 ? "it" : "them",
                     nodes == 1 ? "it" : "them");
    }
    /* What the bounds behind these decisions assumed of symbolic dims (--dim-max, or 2^20). */
    for (guint i = 0; res->assumptions && i < res->assumptions->len; i++)
        hg_pass_note(env->result, "assign_precision", "bounds assume %s",
                     (const char *)res->assumptions->pdata[i]);
    hg_pass_note(env->result, "assign_precision", "%u FP32 island%s (%u node%s)", islands, islands == 1 ? "" : "s",
                 n32, n32 == 1 ? "" : "s");
    return TRUE;
}
