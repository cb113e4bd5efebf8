/* Soundness and tightness of the interval analysis on one real model: the graph inputs' ranges are
 * declared, the model runs on inputs inside them, and every float value must lie inside its static
 * range. Prints the violations and, per tensor, static bound / observed absmax (median, 90th
 * percentile and worst). Every value's dims must also be what shape inference said: known dims
 * equal, and each symbolic name one size throughout the run (products such as 4*batch and
 * min(S,c) prefixes computed from their parts); a dim that differs fails the run as a violation
 * does.
 *
 * Usage: ranges_model [--symbolic] [--tsv FILE] MODEL DATA_DIR NAME=LO:HI...   (DATA_DIR as for
 * `halfguard run`; NAME may be *; the inputs' shapes pin the symbolic dims, except with --symbolic,
 * where the analysis sees the model's own shapes as `check` does without --shapes; --tsv writes one
 * line per float tensor: name, op, static lo, static hi, observed absmax) */
#include "halfguard/halfguard.h"
#include "ops/array.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "ranges.h"
#include "shapes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const HgRanges *ranges;
    const HgShapes *shapes;
    GHashTable *bound;   /* symbolic dim name (interned) -> its size in this run (GINT_TO_POINTER + 1) */
    guint64 dims, shape_errors;
    guint64 values, violations;
    GArray *ratios; /* static bound / observed absmax, per tensor */
    guint unbounded;
    FILE *tsv;
} Check;

/* HALFGUARD_RANGES_DEBUG=1: name the op of each unbounded tensor whose inputs are all bounded (where
 * a rule gives up), with its input ranges. */
static void
debug_unbounded(const Check *c, const HgValue *v)
{
    static int on = -1;
    if (on < 0)
        on = g_getenv("HALFGUARD_RANGES_DEBUG") != NULL;
    const HgNode *n = v->producer;
    if (!on)
        return;
    for (guint k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && !hg_range_bounded(hg_ranges_get(c->ranges, n->inputs[k])))
            return;
    fprintf(stderr, "unbounded '%s' (%s):", v->name, n->op_type);
    for (guint k = 0; k < n->n_inputs; k++) {
        const HgRange *r = n->inputs[k] ? hg_ranges_get(c->ranges, n->inputs[k]) : NULL;
        if (r)
            fprintf(stderr, " [%.4g, %.4g]%s", r->lo, r->hi, r->nan ? "nan" : "");
        else
            fprintf(stderr, " -");
    }
    fprintf(stderr, "\n");
}

/* The size the name sym stands for in this run: a dim's own name as first seen, min(S,c) and
 * products (4*batch) computed from their parts; -1 where a part is not seen yet. */
static gint64
sym_size(Check *c, const char *sym, gint64 seen)
{
    gint64 coef, cap;
    const char *f[HG_SYM_MAX_FACTORS], *base;
    int nf;
    if (hg_sym_factors(sym, &coef, f, &nf) && (nf > 1 || coef != 1)) {
        for (int i = 0; i < nf; i++) {
            gint64 x = sym_size(c, f[i], -1);
            if (x < 0)
                return -1;
            coef *= x;
        }
        return coef;
    }
    if (hg_sym_min_parts(sym, &base, &cap)) {
        gint64 x = sym_size(c, base, -1);
        return x < 0 ? -1 : MIN(x, cap);
    }
    gpointer b = g_hash_table_lookup(c->bound, sym);
    if (b)
        return GPOINTER_TO_INT(b) - 1;
    if (seen >= 0 && seen < G_MAXINT)
        g_hash_table_insert(c->bound, (gpointer)sym, GINT_TO_POINTER((int)seen + 1));
    return seen;
}

/* What shape inference said of v against the tensor the run made: every known dim equal, every
 * named dim the same size wherever that name appears (products and min(S,c) included). */
static void
check_shape(Check *c, const HgValue *v, const HgTensor *t)
{
    const HgValueShape *vs = hg_shapes_get(c->shapes, v);
    if (vs->rank < 0)
        return;
    gboolean bad = vs->rank != (int)t->rank;
    for (int i = 0; !bad && i < vs->rank; i++) {
        gint64 want = vs->dims[i].v >= 0 ? vs->dims[i].v
                      : vs->dims[i].sym ? sym_size(c, vs->dims[i].sym, t->dims[i]) /* names are interned */
                                        : -1;
        c->dims += want >= 0;
        bad = want >= 0 && want != t->dims[i];
    }
    if (bad && c->shape_errors++ < 5) {
        printf("SHAPE '%s' (%s): inferred [", v->name, v->producer ? v->producer->op_type : "input");
        for (int i = 0; i < vs->rank; i++) {
            if (vs->dims[i].v >= 0)
                printf("%s%" G_GINT64_FORMAT, i ? ", " : "", vs->dims[i].v);
            else
                printf("%s%s", i ? ", " : "", vs->dims[i].sym ? vs->dims[i].sym : "?");
        }
        printf("], ran with [");
        for (guint i = 0; i < t->rank; i++)
            printf("%s%" G_GINT64_FORMAT, i ? ", " : "", t->dims[i]);
        printf("]\n");
    }
}

static gboolean
check_value(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    Check *c = data;
    check_shape(c, v, t);
    if (!v->producer || !hg_dtype_is_float(t->dtype))
        return TRUE;
    const HgRange *r = hg_ranges_get(c->ranges, v);
    HgArray view = {1, t->dtype, t->rank, {0}, hg_tensor_numel(t), (void *)t->data, FALSE, NULL, NULL, NULL};
    double amax = 0;
    for (gint64 i = 0; i < view.numel; i++) {
        double x = hg_array_get_f64(&view, i);
        gboolean ok = isnan(x) ? r->nan : (x >= r->lo && x <= r->hi && (x == 0 || fabs(x) >= r->tiny));
        c->values++;
        if (!ok && c->violations++ < 5)
            printf("VIOLATION '%s' (%s): %.9g outside [%.9g, %.9g] (tiny %.3g)\n", v->name,
                   v->producer->op_type, x, r->lo, r->hi, r->tiny);
        if (isfinite(x))
            amax = MAX(amax, fabs(x));
    }
    if (g_strcmp0(g_getenv("HALFGUARD_RANGES_DEBUG"), "all") == 0)
        fprintf(stderr, "range '%s' (%s): [%.4g, %.4g] tiny %.3g%s, observed absmax %.4g\n", v->name,
                v->producer->op_type, r->lo, r->hi, r->tiny, r->nan ? " nan" : "", amax);
    if (c->tsv)
        fprintf(c->tsv, "%s\t%s\t%.9g\t%.9g\t%.9g\n", v->name, v->producer->op_type, r->lo, r->hi, amax);
    if (!hg_range_bounded(r)) {
        c->unbounded++;
        debug_unbounded(c, v);
    }
    else if (amax > 0) {
        double q = MAX(fabs(r->lo), fabs(r->hi)) / amax;
        g_array_append_val(c->ratios, q);
    }
    return TRUE;
}

static int
cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    gboolean symbolic = FALSE;
    const char *tsv_path = NULL;
    while (argc > 1 && g_str_has_prefix(argv[1], "--")) {
        if (!strcmp(argv[1], "--symbolic"))
            symbolic = TRUE;
        else if (!strcmp(argv[1], "--tsv") && argc > 2)
            tsv_path = argv[2], argv++, argc--;
        else
            break;
        argv++, argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: ranges_model [--symbolic] [--tsv FILE] MODEL DATA_DIR NAME=LO:HI...\n");
        return 2;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_load(argv[1], &error);
    g_autoptr(GPtrArray) feeds = m ? hg_load_feeds(m, argv[2], &error) : NULL;
    if (!feeds) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    g_autoptr(GPtrArray) decls = hg_run_feeds(m);
    g_autofree HgShapePin *pins = g_new0(HgShapePin, decls->len + 1);
    for (guint k = 0; k < decls->len; k++) {
        const HgTensor *t = feeds->pdata[k];
        pins[k].name = ((HgValueDecl *)decls->pdata[k])->value->name;
        pins[k].rank = MIN(t->rank, HG_MAX_RANK);
        memcpy(pins[k].dims, t->dims, sizeof(gint64) * pins[k].rank);
    }
    g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, symbolic ? NULL : pins, symbolic ? 0 : decls->len,
                                                 &error);
    if (!shapes) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    g_autofree HgInputRange *ir = g_new0(HgInputRange, argc);
    guint n = 0;
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        double lo, hi;
        if (!eq || sscanf(eq + 1, "%lf:%lf", &lo, &hi) != 2) {
            fprintf(stderr, "ranges_model: bad range '%s'\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        ir[n].name = argv[i];
        ir[n++].range = hg_range_exact(lo, hi);
    }
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, ir, n);
    Check c = {ranges, shapes, g_hash_table_new(NULL, NULL), 0, 0, 0, 0, g_array_new(FALSE, FALSE, sizeof(double)),
               0, NULL};
    if (tsv_path && !(c.tsv = fopen(tsv_path, "w"))) {
        fprintf(stderr, "%s: cannot write\n", tsv_path);
        return 2;
    }
    HgRunOptions opts = {0, check_value, &c, NULL};
    g_autoptr(GPtrArray) outs = hg_run(m, feeds, &opts, &error);
    g_array_sort(c.ratios, cmp_double);
    double median = c.ratios->len ? g_array_index(c.ratios, double, c.ratios->len / 2) : 0;
    double p90 = c.ratios->len ? g_array_index(c.ratios, double, c.ratios->len * 9 / 10) : 0;
    double worst = c.ratios->len ? g_array_index(c.ratios, double, c.ratios->len - 1) : 0;
    if (c.tsv)
        fclose(c.tsv);
    printf("%s: %" G_GUINT64_FORMAT " values, %" G_GUINT64_FORMAT " violations; %u tensors bounded "
           "(bound/absmax median %.3g, p90 %.3g, worst %.3g), %u unbounded; %" G_GUINT64_FORMAT " dims as "
           "inferred, %" G_GUINT64_FORMAT " not%s%s\n", argv[1], c.values, c.violations, c.ratios->len, median, p90,
           worst, c.unbounded, c.dims, c.shape_errors, outs ? "" : "; run stopped: ", outs ? "" : error->message);
    g_array_unref(c.ratios);
    g_hash_table_unref(c.bound);
    return c.violations || c.shape_errors ? 1 : 0;
}
