/* The op table's scale and value traits are true of the kernels, on every ONNX node test of one
 * table op (passes read these columns instead of lists of op names, so a wrong bit is a wrong
 * rewrite):
 *
 *   HOMOGENEOUS    data times 2 (input 0; every float input of a JOINT op) gives outputs times 2;
 *                  linear ops only without a bias (Conv(2x, W, b) is not 2 Conv(x, W, b));
 *   SCALE_INVARIANT data times 2 gives the same output 0 (a normalization with its epsilon times 4);
 *   REARRANGES     every output value is one of input 0's values (outputs of its type);
 *   ROUNDS_TO_INT  every finite output is an integer;
 *   INT_CLOSED     float inputs rounded to integers give integer outputs.
 *
 * Powers of two scale exactly in binary floating point, so "times 2" is compared with a relative
 * slack of 2^-20 only for kernels that sum in another order (BLAS). Each trait must have been checked
 * on at least one row, and each row that has it and has a node test is checked.
 *
 * Usage: traits_true DIR...   (folders of node tests; an absent one is skipped) */
#include "halfguard/halfguard.h"
#include "testwalk.h"
#include "ops/array.h"
#include "ops/op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    guint checked[16], failed, folders;
} Stats;

static const struct {
    guint trait;
    const char *name;
} TRAITS[] = {
    {HG_TRAIT_HOMOGENEOUS, "HOMOGENEOUS"},   {HG_TRAIT_SCALE_INVARIANT, "SCALE_INVARIANT"},
    {HG_TRAIT_REARRANGES, "REARRANGES"},     {HG_TRAIT_ROUNDS_TO_INT, "ROUNDS_TO_INT"},
    {HG_TRAIT_INT_CLOSED, "INT_CLOSED"},
};

/* Is input k of n data (the value a scale is applied to: input 0, every input of a JOINT op; for
 * rounding, every input)? */
static gboolean
is_data(const HgOpDef *op, guint k, int how)
{
    return k == 0 || (op->traits & HG_TRAIT_JOINT) || how == 0;
}

/* ins with each float data input transformed: times 2 (how = 2) or rounded (how = 0). */
static GPtrArray *
transform(const HgNode *n, const HgOpDef *op, GPtrArray *ins, GPtrArray *feeds, int how)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint k = 0; k < ins->len; k++) {
        const HgTensor *t = ins->pdata[k];
        const HgValue *v = ((HgValueDecl *)feeds->pdata[k])->value;
        gboolean data = FALSE;
        for (guint i = 0; i < n->n_inputs; i++)
            data |= n->inputs[i] == v && is_data(op, i, how);
        g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
        if (!data || !a || !hg_dtype_is_float(a->dtype) || a->dtype == HG_DTYPE_BFLOAT16) {
            g_ptr_array_add(out, hg_tensor_copy(t));
            continue;
        }
        g_autoptr(HgArray) b = hg_array_copy(a);
        for (gint64 i = 0; i < b->numel; i++) {
            double x = hg_array_get_f64(a, i), y = how == 2 ? 2 * x : nearbyint(x);
            if (b->dtype == HG_DTYPE_FLOAT)
                ((float *)b->data)[i] = (float)y;
            else if (b->dtype == HG_DTYPE_FLOAT16)
                ((guint16 *)b->data)[i] = hg_float_to_half((float)y);
            else
                ((double *)b->data)[i] = y;
        }
        g_ptr_array_add(out, hg_array_to_tensor(b, t->name));
    }
    return out;
}

static GPtrArray *
run(HgModel *m, GPtrArray *ins)
{
    HgRunOptions opts = {1, NULL, NULL, NULL};
    return hg_run(m, ins, &opts, NULL);
}

static gboolean
close_to(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= fabs(b) * ldexp(1.0, -20) + 1e-300;
}

static void
fail(Stats *st, const char *test, const char *trait, const char *why)
{
    printf("FAIL %s: %s: %s\n", test, trait, why);
    st->failed++;
}

/* Compare the float outputs of a and b: b = scale * a (scale 2 or 1). */
static void
compare_scaled(Stats *st, const char *test, const char *trait, GPtrArray *a, GPtrArray *b, double scale,
               guint n_out)
{
    for (guint o = 0; o < MIN(a->len, n_out); o++) {
        g_autoptr(HgArray) x = hg_array_from_tensor(a->pdata[o], NULL);
        g_autoptr(HgArray) y = hg_array_from_tensor(b->pdata[o], NULL);
        if (!x || !y || !hg_dtype_is_float(x->dtype))
            continue;
        for (gint64 i = 0; i < x->numel; i++) {
            double want = scale * hg_array_get_f64(x, i), got = hg_array_get_f64(y, i);
            if (!close_to(got, want)) {
                g_autofree char *why = g_strdup_printf("output %u element %" G_GINT64_FORMAT ": %.9g, want %.9g",
                                                       o, i, got, want);
                fail(st, test, trait, why);
                return;
            }
        }
    }
}

static void
check_folder(const char *dir, gpointer data)
{
    Stats *st = data;
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    g_autofree char *test = g_path_get_basename(dir);
    g_autoptr(HgModel) m = hg_model_load(model, NULL);
    if (!m || m->graph->nodes->len != 1 || !hg_test_in_scope(m->graph))
        return;
    HgNode *n = m->graph->nodes->pdata[0];
    const HgOpDef *op = hg_op_for_node(n);
    if (!op)
        return;
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    g_autoptr(GPtrArray) ins = hg_test_load_inputs(m, dir);
    g_autoptr(GPtrArray) base = ins ? run(m, ins) : NULL;
    if (!base)
        return;
    st->folders++;
    for (guint t = 0; t < G_N_ELEMENTS(TRAITS); t++) {
        guint trait = TRAITS[t].trait;
        const char *name = TRAITS[t].name;
        if (!(op->traits & trait))
            continue;
        if (trait == HG_TRAIT_HOMOGENEOUS || trait == HG_TRAIT_SCALE_INVARIANT) {
            if ((op->traits & HG_TRAIT_LINEAR) && n->n_inputs > 2)
                continue; /* a bias: not homogeneous in the data alone */
            if (op->traits & HG_TRAIT_EPS_NORM)
                hg_node_set_attr_float(n, "epsilon", 4 * hg_node_attr_float(n, "epsilon", 1e-5f));
            g_autoptr(GPtrArray) twice = transform(n, op, ins, feeds, 2);
            g_autoptr(GPtrArray) out = run(m, twice);
            if (op->traits & HG_TRAIT_EPS_NORM)
                hg_node_set_attr_float(n, "epsilon", hg_node_attr_float(n, "epsilon", 1e-5f) / 4);
            if (!out)
                continue;
            /* a normalization's other outputs (mean, inverse deviation) are statistics, not data */
            compare_scaled(st, test, name, base, out, trait == HG_TRAIT_HOMOGENEOUS ? 2 : 1,
                           trait == HG_TRAIT_SCALE_INVARIANT ? 1 : base->len);
        } else if (trait == HG_TRAIT_REARRANGES) {
            g_autoptr(HgArray) x = hg_array_from_tensor(ins->pdata[0], NULL);
            if (!x)
                continue;
            g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash, g_int64_equal);
            g_autofree gint64 *keys = g_new(gint64, x->numel);
            for (gint64 i = 0; i < x->numel; i++) {
                double v = hg_array_get_f64(x, i);
                memcpy(&keys[i], &v, sizeof v);
                g_hash_table_add(seen, &keys[i]);
            }
            for (guint o = 0; o < base->len; o++) {
                g_autoptr(HgArray) y = hg_array_from_tensor(base->pdata[o], NULL);
                if (y && y->dtype != x->dtype)
                    continue; /* Dropout's mask */
                for (gint64 i = 0; y && i < y->numel; i++) {
                    double v = hg_array_get_f64(y, i);
                    gint64 key;
                    memcpy(&key, &v, sizeof v);
                    if (!g_hash_table_contains(seen, &key)) {
                        g_autofree char *why = g_strdup_printf("output %u holds %.9g, not a value of input 0", o, v);
                        fail(st, test, name, why);
                        break;
                    }
                }
            }
        } else {
            g_autoptr(GPtrArray) rounded = trait == HG_TRAIT_INT_CLOSED ? transform(n, op, ins, feeds, 0) : NULL;
            g_autoptr(GPtrArray) out = rounded ? run(m, rounded) : g_ptr_array_ref(base);
            for (guint o = 0; out && o < out->len; o++) {
                g_autoptr(HgArray) y = hg_array_from_tensor(out->pdata[o], NULL);
                for (gint64 i = 0; y && hg_dtype_is_float(y->dtype) && i < y->numel; i++) {
                    double v = hg_array_get_f64(y, i);
                    if (isfinite(v) && v != floor(v)) {
                        g_autofree char *why = g_strdup_printf("output %u holds %.9g, not an integer", o, v);
                        fail(st, test, name, why);
                        break;
                    }
                }
            }
        }
        st->checked[t]++;
    }
}

int
main(int argc, char **argv)
{
    Stats st = {0};
    for (int i = 1; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            printf("note: %s is absent, skipped\n", argv[i]);
            continue;
        }
        hg_test_walk(argv[i], check_folder, &st);
    }
    if (!st.folders) {
        printf("no node tests found: skipped\n");
        return 77;
    }
    for (guint t = 0; t < G_N_ELEMENTS(TRAITS); t++) {
        printf("%-16s %u node tests\n", TRAITS[t].name, st.checked[t]);
        if (!st.checked[t]) {
            printf("FAIL %s: no node test checked it\n", TRAITS[t].name);
            st.failed++;
        }
    }
    printf("%u single-op node tests, %u failures\n", st.folders, st.failed);
    return st.failed ? 1 : 0;
}
