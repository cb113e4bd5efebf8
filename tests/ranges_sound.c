/* Soundness of the interval rules against the interpreter: for every ONNX node test whose ops are all
 * in the op table, the test's inputs are run twice: as given, and replaced by random values spread
 * over an interval three times as wide. Each time the graph inputs' ranges are declared as the
 * interval the inputs were drawn from, ranges are inferred, and every value the interpreter computes
 * must lie inside its value's static range (NaN only where the range allows it; nonzero magnitudes
 * at least `tiny`). Zero violations are allowed.
 *
 * Usage: ranges_sound [--verbose] DIR...   (test folders, or folders of them; one that does not
 * exist is skipped with a note, as the shared corpus is where a clone has none) */
#include "halfguard/halfguard.h"
#include "testwalk.h"
#include "ops/array.h"
#include "ops/op.h"
#include "ranges.h"
#include "shapes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    gboolean verbose;
    guint folders, folders_bad, skipped;
    guint64 values_checked, violations;
    GHashTable *by_op; /* op name -> guint64* [checked, violations] */
} Stats;

typedef struct {
    Stats *st;
    const HgRanges *ranges;
    const char *test;
    guint bad;
} Check;

static guint64 *
op_counts(Stats *st, const char *op)
{
    guint64 *c = g_hash_table_lookup(st->by_op, op);
    if (!c) {
        c = g_new0(guint64, 2);
        g_hash_table_insert(st->by_op, g_strdup(op), c);
    }
    return c;
}

static gboolean
check_value(const HgValue *v, const HgTensor *t, gpointer data, GError **error)
{
    Check *c = data;
    if (!v->producer || hg_dtype_compute(t->dtype) == HG_COMPUTE_NONE || t->strings)
        return TRUE;
    const HgRange *r = hg_ranges_get(c->ranges, v);
    HgArray view = {1, t->dtype, t->rank, {0}, hg_tensor_numel(t), (void *)t->data, FALSE, NULL, NULL, NULL};
    guint64 *counts = op_counts(c->st, v->producer->op_type);
    for (gint64 i = 0; i < view.numel; i++) {
        double x = hg_array_get_f64(&view, i);
        gboolean ok = isnan(x) ? r->nan : (x >= r->lo && x <= r->hi && (x == 0 || fabs(x) >= r->tiny));
        counts[0]++;
        c->st->values_checked++;
        if (ok)
            continue;
        counts[1]++;
        c->st->violations++;
        if (c->bad++ < 3)
            printf("VIOLATION %s: '%s' (%s) value %.9g at %" G_GINT64_FORMAT
                   " outside [%.9g, %.9g] (tiny %.3g, nan %s)\n",
                   c->test, v->name, v->producer->op_type, x, i, r->lo, r->hi, r->tiny,
                   r->nan ? "yes" : "no");
    }
    return TRUE;
}

static guint64
rng_next(guint64 *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Replace float inputs by uniform values over [lo - w, hi + w] (w = hi - lo, at least 1), and
 * return that interval as the declared range. Integer inputs (indices, shapes) stay as they are. */
static HgRange
spread(HgTensor *t, guint64 *seed)
{
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    HgRange r = hg_range_of_array(a);
    if (!a || !hg_dtype_is_float(t->dtype) || !hg_range_bounded(&r))
        return r;
    double w = MAX(r.hi - r.lo, 1.0);
    double lo = r.lo - w, hi = r.hi + w;
    g_autoptr(HgArray) b = hg_array_copy(a);
    double *v = g_new(double, b->numel + 1);
    for (gint64 i = 0; i < b->numel; i++)
        v[i] = lo + (hi - lo) * ((double)(rng_next(seed) >> 11) / 9007199254740992.0);
    hg_array_store_f64(b, v);
    g_free(v);
    if (t->nbytes)
        memcpy(hg_tensor_data_mut(t), b->data, t->nbytes);
    HgRange out = {lo, hi, 0, FALSE};
    return out;
}

/* Inputs that are parameters rather than data (Resize scales, Dropout's ratio: the table's FP32
 * inputs) keep their values: random ones would be invalid, not a harder test. */
static gboolean
feeds_parameter(const HgValue *v)
{
    for (guint j = 0; j < v->uses->len; j++) {
        const HgUse *u = &g_array_index(v->uses, HgUse, j);
        const HgOpDef *op = hg_op_for_node(u->node);
        if (op && u->index < 32 && (op->fp32_inputs & (1u << u->index)))
            return TRUE;
    }
    return FALSE;
}

static void
run_folder(const char *dir, Stats *st)
{
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    g_autofree char *name = g_path_get_basename(dir);
    g_autoptr(HgModel) m = hg_model_load(model, NULL);
    if (!m || !hg_test_in_scope(m->graph))
        return;
    g_autofree char *set = g_build_filename(dir, "test_data_set_0", NULL);
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint k = 0; k < feeds->len; k++) {
        g_autofree char *p = g_strdup_printf("%s/input_%u.pb", set, k);
        HgTensor *t = hg_tensor_load_file(p, NULL);
        if (!t)
            break;
        g_ptr_array_add(ins, t);
    }
    if (ins->len != feeds->len) {
        st->skipped++;
        return;
    }
    st->folders++;
    guint bad_before = 0;
    guint64 seed = g_str_hash(name) | 1;
    for (int variant = 0; variant < 2; variant++) {
        g_autofree HgInputRange *ir = g_new0(HgInputRange, feeds->len + 1);
        for (guint k = 0; k < feeds->len; k++) {
            HgTensor *t = ins->pdata[k];
            ir[k].name = ((HgValueDecl *)feeds->pdata[k])->value->name;
            if (variant == 0) {
                g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
                ir[k].range = a ? hg_range_of_array(a) : hg_range_any();
            } else if (feeds_parameter(((HgValueDecl *)feeds->pdata[k])->value)) {
                g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
                ir[k].range = a ? hg_range_of_array(a) : hg_range_any();
            } else {
                ir[k].range = spread(t, &seed);
            }
        }
        g_autoptr(HgShapes) shapes = hg_shapes_infer(m->graph, NULL, 0, NULL);
        if (!shapes)
            break;
        g_autoptr(HgRanges) ranges = hg_ranges_infer(m->graph, shapes, ir, feeds->len);
        Check c = {st, ranges, name, 0};
        HgRunOptions opts = {1, check_value, &c, NULL};
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) outs = hg_run(m, ins, &opts, &error);
        if (!outs && st->verbose)
            printf("note %s: %s\n", name, error->message);
        bad_before += c.bad;
    }
    if (bad_before)
        st->folders_bad++;
}

static void
walk_folder(const char *dir, gpointer data)
{
    run_folder(dir, data);
}

int
main(int argc, char **argv)
{
    Stats st = {0};
    st.by_op = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--verbose") == 0) {
        st.verbose = TRUE;
        first = 2;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: ranges_sound [--verbose] DIR...\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            printf("note: %s is absent, skipped\n", argv[i]);
            continue;
        }
        hg_test_walk(argv[i], walk_folder, &st);
    }
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, st.by_op);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        guint64 *c = v;
        if (c[1] || st.verbose)
            printf("%-24s %10" G_GUINT64_FORMAT " values, %" G_GUINT64_FORMAT " outside their range\n",
                   (const char *)k, c[0], c[1]);
    }
    printf("%u test folders (%u skipped: missing data), %" G_GUINT64_FORMAT " values checked, %"
           G_GUINT64_FORMAT " violations\n", st.folders, st.skipped, st.values_checked, st.violations);
    printf("%u passed, %u failed\n", st.folders - st.folders_bad, st.folders_bad);
    g_hash_table_unref(st.by_op);
    return st.violations || !st.folders ? 1 : 0;
}
