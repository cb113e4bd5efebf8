/* The interval analysis from the other side (issue 12): a search over inputs inside the declared
 * ranges tries to push tensors past their static bounds. It must never succeed: every value of every
 * run is checked against its static range, as tests/ranges_model.c does for one sample, and one outside
 * fails the run. What it reports is how close it gets, per tensor max|x| / max(|lo|, |hi|): the
 * tightness seen from below, where bench/tightness.py sees it from random samples.
 *
 * The search: R random restarts (uniform inside the ranges, or every element at one end of its range,
 * the corners where a linear map is largest, or a mix), then, for each of K target tensors (below), a
 * (1+1) evolutionary ascent from the restart that did best for it: a random set of input elements
 * (its size adapted, larger after a success) is moved to an end of its range or to a random point
 * inside, and the move is kept when the tensor's max|x| does not drop. Where the target and an input
 * are both NCHW, three moves in four stay in the input window under the target's largest element
 * (its receptive field, by proportion of the spatial dims), where a move can change it.
 * Gradient-free: it sees only the interpreter's outputs. Integer inputs move among the integers of
 * their range; inputs without a range keep the sample's values. The shapes are the sample's, pinned,
 * so the bounds are the tightest the analysis gives.
 *
 * Usage: adversarial [--evals N] [--restarts R] [--targets K] [--target NAME]... [--output NAME]...
 *                    [--seed S] MODEL DATA_DIR NAME=LO:HI...
 * (N: runs in all, restarts included; DATA_DIR gives the shapes, the element types and the values of
 * unranged inputs; --target names a tensor to push, else the K bounded tensors with the largest static
 * bounds are pushed, the ones FP16 decisions turn on; --output runs the model up to those values only.)
 * Exit 1 when any value leaves its range, 2 on bad input. */
#include "halfguard/halfguard.h"
#include "ops/array.h"
#include "ops/op.h"
#include "ranges.h"
#include "shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    HgTensor *t;     /* the feed, rewritten before each run */
    double *x;       /* its current values */
    gint64 n;
    double lo, hi;   /* the range its values move in */
    gboolean moves;  /* has a range and a numeric type */
    gboolean integer;
} Feed;

typedef struct {
    const HgRanges *ranges;
    const char *const *outputs;
    GHashTable *index;  /* HgValue* -> index + 1 */
    GPtrArray *values;  /* index -> HgValue* */
    GArray *amax;       /* this run's max|x| per index */
    GArray *argmax;     /* gint64: where this run's max|x| is, per index */
    GArray *dims;       /* Dims: each value's shape (rank 4 or less kept) */
    guint64 checked, violations;
} Run;

typedef struct {
    guint rank;
    gint64 d[4];
} Dims;

static gboolean
observe(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    Run *r = data;
    if (!v->producer || !hg_dtype_is_float(t->dtype))
        return TRUE;
    const HgRange *rg = hg_ranges_get(r->ranges, v);
    guint i = GPOINTER_TO_UINT(g_hash_table_lookup(r->index, v));
    if (!i) {
        g_ptr_array_add(r->values, (gpointer)v);
        double zero = 0;
        gint64 none = 0;
        Dims dm = {MIN(t->rank, 4), {0}};
        for (guint k = 0; k < dm.rank; k++)
            dm.d[k] = t->dims[k];
        g_array_append_val(r->amax, zero);
        g_array_append_val(r->argmax, none);
        g_array_append_val(r->dims, dm);
        i = r->values->len;
        g_hash_table_insert(r->index, (gpointer)v, GUINT_TO_POINTER(i));
    }
    HgArray view = {1, t->dtype, t->rank, {0}, hg_tensor_numel(t), (void *)t->data, FALSE, NULL, NULL, NULL};
    double amax = 0;
    gint64 arg = 0;
    for (gint64 k = 0; k < view.numel; k++) {
        double x = hg_array_get_f64(&view, k);
        gboolean ok = isnan(x) ? rg->nan : (x >= rg->lo && x <= rg->hi && (x == 0 || fabs(x) >= rg->tiny));
        r->checked++;
        if (!ok && r->violations++ < 5)
            printf("VIOLATION '%s' (%s): %.9g outside [%.9g, %.9g] (tiny %.3g)\n", v->name, v->producer->op_type,
                   x, rg->lo, rg->hi, rg->tiny);
        if (isfinite(x) && fabs(x) > amax)
            amax = fabs(x), arg = k;
    }
    g_array_index(r->amax, double, i - 1) = amax;
    g_array_index(r->argmax, gint64, i - 1) = arg;
    return TRUE;
}

static double
bound_of(const Run *r, guint i)
{
    const HgRange *rg = hg_ranges_get(r->ranges, r->values->pdata[i]);
    return MAX(fabs(rg->lo), fabs(rg->hi));
}

/* One run on the feeds' current values; FALSE when the interpreter fails. */
static gboolean
evaluate(HgModel *m, GPtrArray *tensors, Feed *feeds, guint nf, Run *r, guint64 *evals)
{
    for (guint k = 0; k < nf; k++) {
        if (!feeds[k].moves)
            continue;
        HgTensor *t = feeds[k].t;
        HgArray view = {1, t->dtype, t->rank, {0}, feeds[k].n, hg_tensor_data_mut(t), FALSE, NULL, NULL, NULL};
        if (feeds[k].integer) {
            g_autofree gint64 *iv = g_new(gint64, feeds[k].n);
            for (gint64 j = 0; j < feeds[k].n; j++)
                iv[j] = (gint64)feeds[k].x[j];
            hg_array_store_i64(&view, iv);
        } else {
            hg_array_store_f64(&view, feeds[k].x);
        }
    }
    for (guint i = 0; i < r->amax->len; i++)
        g_array_index(r->amax, double, i) = 0;
    g_autoptr(GError) error = NULL;
    HgRunOptions opts = {1, observe, r, r->outputs, 0};
    g_autoptr(GPtrArray) outs = hg_run(m, tensors, &opts, &error);
    (*evals)++;
    if (!outs)
        fprintf(stderr, "run failed: %s\n", error->message);
    return outs != NULL;
}

static double
draw(GRand *rng, const Feed *f, int mode)
{
    double x = mode == 0 ? g_rand_double_range(rng, f->lo, f->hi)
               : mode == 1 ? (g_rand_boolean(rng) ? f->lo : f->hi)
                           : (g_rand_int_range(rng, 0, 3) == 0 ? g_rand_double_range(rng, f->lo, f->hi)
                                                               : g_rand_boolean(rng) ? f->lo : f->hi);
    if (f->integer)
        x = CLAMP(floor(x + 0.5), ceil(f->lo), floor(f->hi));
    return x;
}

static void
save(Feed *feeds, guint nf, double **into)
{
    for (guint k = 0; k < nf; k++)
        if (feeds[k].moves)
            memcpy(into[k], feeds[k].x, sizeof(double) * feeds[k].n);
}

static void
restore(Feed *feeds, guint nf, double **from)
{
    for (guint k = 0; k < nf; k++)
        if (feeds[k].moves)
            memcpy(feeds[k].x, from[k], sizeof(double) * feeds[k].n);
}

static double **
snap_new(Feed *feeds, guint nf)
{
    double **s = g_new0(double *, nf);
    for (guint k = 0; k < nf; k++)
        s[k] = g_new(double, feeds[k].n);
    save(feeds, nf, s);
    return s;
}

static void
snap_free(double **s, guint nf)
{
    for (guint k = 0; k < nf; k++)
        g_free(s[k]);
    g_free(s);
}

int
main(int argc, char **argv)
{
    guint64 max_evals = 60;
    guint restarts = 12, n_targets = 3;
    guint32 seed = 1;
    g_autoptr(GPtrArray) named = g_ptr_array_new(), outputs = g_ptr_array_new();
    while (argc > 2 && g_str_has_prefix(argv[1], "--")) {
        if (!strcmp(argv[1], "--evals"))
            max_evals = g_ascii_strtoull(argv[2], NULL, 10);
        else if (!strcmp(argv[1], "--restarts"))
            restarts = (guint)g_ascii_strtoull(argv[2], NULL, 10);
        else if (!strcmp(argv[1], "--targets"))
            n_targets = (guint)g_ascii_strtoull(argv[2], NULL, 10);
        else if (!strcmp(argv[1], "--target"))
            g_ptr_array_add(named, argv[2]);
        else if (!strcmp(argv[1], "--output"))
            g_ptr_array_add(outputs, argv[2]);
        else if (!strcmp(argv[1], "--seed"))
            seed = (guint32)g_ascii_strtoull(argv[2], NULL, 10);
        else
            break;
        argv += 2, argc -= 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: adversarial [--evals N] [--restarts R] [--targets K] [--target NAME]... "
                        "[--output NAME]... [--seed S] MODEL DATA_DIR NAME=LO:HI...\n");
        return 2;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_load(argv[1], &error);
    g_autoptr(GPtrArray) tensors = m ? hg_load_feeds(m, argv[2], &error) : NULL;
    if (!tensors) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    g_autoptr(GPtrArray) decls = hg_run_feeds(m);
    g_autofree HgShapePin *pins = g_new0(HgShapePin, decls->len + 1);
    for (guint k = 0; k < decls->len; k++) {
        const HgTensor *t = tensors->pdata[k];
        pins[k].name = ((HgValueDecl *)decls->pdata[k])->value->name;
        pins[k].rank = MIN(t->rank, HG_MAX_RANK);
        memcpy(pins[k].dims, t->dims, sizeof(gint64) * pins[k].rank);
    }
    g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, pins, decls->len, &error);
    if (!shapes) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    g_autofree HgInputRange *ir = g_new0(HgInputRange, argc);
    guint n_ir = 0;
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        double lo, hi;
        if (!eq || sscanf(eq + 1, "%lf:%lf", &lo, &hi) != 2 || !(lo <= hi)) {
            fprintf(stderr, "adversarial: bad range '%s'\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        ir[n_ir].name = argv[i];
        ir[n_ir++].range = hg_range_exact(lo, hi);
    }
    g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, ir, n_ir);

    guint nf = tensors->len;
    g_autofree Feed *feeds = g_new0(Feed, nf);
    for (guint k = 0; k < nf; k++) {
        Feed *f = &feeds[k];
        f->t = tensors->pdata[k];
        f->n = hg_tensor_numel(f->t);
        f->x = g_new(double, MAX(f->n, 1));
        HgArray view = {1, f->t->dtype, f->t->rank, {0}, f->n, (void *)f->t->data, FALSE, NULL, NULL, NULL};
        for (gint64 j = 0; j < f->n; j++)
            f->x[j] = hg_array_get_f64(&view, j);
        const HgRange *rg = hg_ranges_get(ranges, ((HgValueDecl *)decls->pdata[k])->value);
        f->integer = hg_dtype_is_int(f->t->dtype);
        f->moves = f->n > 0 && hg_range_bounded(rg) && (hg_dtype_is_float(f->t->dtype) || f->integer) &&
                   (!f->integer || ceil(rg->lo) <= floor(rg->hi));
        f->lo = rg->lo, f->hi = rg->hi;
    }

    g_ptr_array_add(outputs, NULL);
    Run r = {ranges, outputs->len > 1 ? (const char *const *)outputs->pdata : NULL, g_hash_table_new(NULL, NULL),
             g_ptr_array_new(), g_array_new(FALSE, FALSE, sizeof(double)), g_array_new(FALSE, FALSE, sizeof(gint64)),
             g_array_new(FALSE, FALSE, sizeof(Dims)), 0, 0};
    g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
    guint64 evals = 0;
    int rc = 0;
    /* The sample itself first, then the restarts. */
    GArray *best_random = g_array_new(FALSE, TRUE, sizeof(double)); /* max|x| over the restarts */
    GArray *best_at = g_array_new(FALSE, TRUE, sizeof(guint));      /* the restart that gave it */
    GArray *best_arg = g_array_new(FALSE, TRUE, sizeof(gint64));    /* and where */
    GPtrArray *starts = g_ptr_array_new();                           /* each restart's inputs */
    for (guint s = 0; s <= restarts && evals < max_evals; s++) {
        if (s > 0)
            for (guint k = 0; k < nf; k++)
                for (gint64 j = 0; feeds[k].moves && j < feeds[k].n; j++)
                    feeds[k].x[j] = draw(rng, &feeds[k], s % 3);
        if (!evaluate(m, tensors, feeds, nf, &r, &evals)) {
            rc = 2;
            break;
        }
        g_ptr_array_add(starts, snap_new(feeds, nf));
        g_array_set_size(best_random, r.amax->len);
        g_array_set_size(best_at, r.amax->len);
        g_array_set_size(best_arg, r.amax->len);
        for (guint i = 0; i < r.amax->len; i++)
            if (g_array_index(r.amax, double, i) > g_array_index(best_random, double, i)) {
                g_array_index(best_random, double, i) = g_array_index(r.amax, double, i);
                g_array_index(best_at, guint, i) = s;
                g_array_index(best_arg, gint64, i) = g_array_index(r.argmax, gint64, i);
            }
    }
    if (rc)
        n_targets = 0;
    /* Targets: those named, else the bounded tensors with the largest bounds, short of tensors the
     * restarts already took to their bound (an input's copy, a Relu of it: nothing to find there). */
    guint nv = best_random->len;
    g_autofree double *ratio = g_new0(double, nv + 1);
    g_autofree guint *order = g_new0(guint, nv + 1);
    guint n_order = 0, n_bounded = 0;
    for (guint i = 0; i < nv; i++) {
        double b = bound_of(&r, i);
        n_bounded += isfinite(b);
        ratio[i] = isfinite(b) && b > 0 ? g_array_index(best_random, double, i) / b : 0;
        if (ratio[i] > 0 && ratio[i] < 0.999)
            order[n_order++] = i;
    }
    if (named->len) {
        n_order = 0;
        for (guint i = 0; i < nv; i++)
            for (guint k = 0; k < named->len; k++)
                if (!strcmp(((HgValue *)r.values->pdata[i])->name, named->pdata[k]) && isfinite(bound_of(&r, i)))
                    order[n_order++] = i;
        n_targets = n_order;
    }
    for (guint a = 0; a < n_order; a++) /* partial selection sort: the top K */
        for (guint b = a + 1; b < n_order && a < n_targets; b++)
            if (bound_of(&r, order[b]) > bound_of(&r, order[a])) {
                guint t = order[a];
                order[a] = order[b], order[b] = t;
            }
    n_targets = MIN(n_targets, n_order);
    guint64 per_target = n_targets ? (max_evals > evals ? (max_evals - evals) / n_targets : 0) : 0;
    double closest = 0;
    const char *closest_name = "-";
    for (guint i = 0; i < nv; i++)
        if (ratio[i] < 0.999 && ratio[i] > closest)
            closest = ratio[i], closest_name = ((HgValue *)r.values->pdata[i])->name;
    printf("%s: %u float tensors, %u bounded; random restarts (%" G_GUINT64_FORMAT " runs): closest %.4g of "
           "its bound at '%s'\n", argv[1], nv, n_bounded, evals, closest, closest_name);
    gint64 total_moving = 0;
    for (guint k = 0; k < nf; k++)
        total_moving += feeds[k].moves ? feeds[k].n : 0;
    for (guint t = 0; t < n_targets && total_moving > 0; t++) {
        guint ti = order[t];
        double b = bound_of(&r, ti), cur = g_array_index(best_random, double, ti);
        restore(feeds, nf, starts->pdata[g_array_index(best_at, guint, ti)]);
        double **keep = snap_new(feeds, nf);
        double rate = 0.05, local_rate = 0.2;
        /* An NCHW target and an NCHW input: most moves go to the input pixels under the target's
         * largest element (its receptive field, by proportion of the spatial dims), where a move
         * can change it. */
        const Dims *td = &g_array_index(r.dims, Dims, ti);
        guint k4 = nf;
        for (guint k = 0; k < nf && td->rank == 4; k++)
            if (feeds[k].moves && feeds[k].t->rank == 4 && k4 == nf)
                k4 = k;
        gint64 arg = g_array_index(best_arg, gint64, ti);
        gint64 radius = k4 < nf ? MAX(1, feeds[k4].t->dims[2] / MAX(td->d[2], 1)) * 2 + 1 : 0;
        for (guint64 e = 0; e < per_target; e++) {
            gboolean local = k4 < nf && g_rand_int_range(rng, 0, 4) != 0;
            if (local) {
                const gint64 *fd = feeds[k4].t->dims;
                gint64 h = (arg / td->d[3]) % td->d[2], w = arg % td->d[3], n = arg / (td->d[1] * td->d[2] * td->d[3]);
                gint64 hc = (gint64)(((double)h + 0.5) * (double)fd[2] / (double)td->d[2]);
                gint64 wc = (gint64)(((double)w + 0.5) * (double)fd[3] / (double)td->d[3]);
                gint64 area = (2 * radius + 1) * (2 * radius + 1) * fd[1];
                gint64 moves = MAX(1, (gint64)(local_rate * (double)area));
                for (gint64 q = 0; q < moves; q++) {
                    gint64 dh = g_rand_int_range(rng, -(gint32)radius, (gint32)radius + 1);
                    gint64 dw = g_rand_int_range(rng, -(gint32)radius, (gint32)radius + 1);
                    gint64 hh = CLAMP(hc + dh, 0, fd[2] - 1), ww = CLAMP(wc + dw, 0, fd[3] - 1);
                    gint64 cc = g_rand_int_range(rng, 0, (gint32)fd[1]), nn = n < fd[0] ? n : 0;
                    gint64 j = ((nn * fd[1] + cc) * fd[2] + hh) * fd[3] + ww;
                    feeds[k4].x[j] = draw(rng, &feeds[k4], 1);
                }
            } else {
                gint64 moves = MAX(1, (gint64)(rate * (double)total_moving));
                for (gint64 q = 0; q < moves; q++) {
                    gint64 j = g_rand_int_range(rng, 0, (gint32)MIN(total_moving, G_MAXINT32));
                    guint k = 0;
                    while (!feeds[k].moves || j >= feeds[k].n) {
                        j -= feeds[k].moves ? feeds[k].n : 0;
                        k++;
                    }
                    feeds[k].x[j] = draw(rng, &feeds[k], 2);
                }
            }
            if (!evaluate(m, tensors, feeds, nf, &r, &evals)) {
                rc = 2;
                break;
            }
            double now = g_array_index(r.amax, double, ti);
            if (now >= cur) {
                if (now > cur) {
                    if (local)
                        local_rate = MIN(1.0, local_rate * 1.5);
                    else
                        rate = MIN(0.5, rate * 1.5);
                }
                cur = now;
                arg = g_array_index(r.argmax, gint64, ti);
                save(feeds, nf, keep);
            } else {
                if (local)
                    local_rate = MAX(0.01, local_rate * 0.8);
                else
                    rate = MAX(1.0 / (double)total_moving, rate * 0.8);
                restore(feeds, nf, keep);
            }
        }
        snap_free(keep, nf);
        printf("  target '%s' (%s): bound %.6g; random max %.6g (%.4g of the bound), ascent %.6g (%.4g), "
               "x%.3g\n", ((HgValue *)r.values->pdata[ti])->name,
               ((HgValue *)r.values->pdata[ti])->producer->op_type, b, g_array_index(best_random, double, ti),
               ratio[ti], cur, cur / b, cur / g_array_index(best_random, double, ti));
    }
    printf("  %" G_GUINT64_FORMAT " runs, %" G_GUINT64_FORMAT " values checked, %" G_GUINT64_FORMAT
           " outside their static ranges\n", evals, r.checked, r.violations);
    rc = r.violations ? 1 : rc;
    for (guint i = 0; i < starts->len; i++)
        snap_free(starts->pdata[i], nf);
    g_ptr_array_unref(starts);
    g_array_unref(best_at);
    g_array_unref(best_arg);
    g_array_unref(best_random);
    for (guint k = 0; k < nf; k++)
        g_free(feeds[k].x);
    g_hash_table_unref(r.index);
    g_ptr_array_unref(r.values);
    g_array_unref(r.amax);
    g_array_unref(r.argmax);
    g_array_unref(r.dims);
    return rc;
}
