/* Soundness of the interval rules against the interpreter, driven by the op table: for every ONNX
 * node test whose ops are all in the table, the test's inputs are run as given and then replaced,
 * eight times, by random values drawn from random intervals of several kinds (three times as wide as
 * the test's values; symmetric; positive; negative; narrow; straddling zero; tiny; huge), each
 * magnitude log-uniform, endpoints and zeros included. Each time the graph inputs' ranges are
 * declared as the interval the inputs were drawn from, ranges are inferred, and every value the
 * interpreter computes must lie inside its value's static range (NaN only where the range allows it;
 * nonzero magnitudes at least `tiny`). Zero violations are allowed.
 *
 * Then the op table is walked: every row must have had values checked, or be listed in not_tested
 * below with the reason; a listed row that was checked after all fails too (the list stays true).
 * With --min-values N, fewer values checked in all fails.
 *
 * Usage: ranges_sound [--verbose] [--min-values N] DIR...   (test folders, or folders of them; one
 * that does not exist is skipped with a note, as the shared corpus is where a clone has none) */
#include "halfguard/halfguard.h"
#include "testwalk.h"
#include "ops/array.h"
#include "halfguard/text.h"
#include "ops/op.h"
#include "ranges.h"
#include "shapes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    gboolean verbose;
    guint folders, folders_bad, skipped, extra_bad;
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

static double
rng_unit(guint64 *s)
{
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* 10^u for u uniform in [a, b]. */
static double
rng_log(guint64 *s, double a, double b)
{
    return pow(10.0, a + (b - a) * rng_unit(s));
}

#define N_KINDS 8

/* An interval of kind `kind` (0: the test's values' range three times as wide, 1: symmetric, 2:
 * positive, 3: negative, 4: narrow around a point, 5: straddling zero unevenly, 6: tiny (FP16's
 * subnormal range and below), 7: huge (past FP16's range)). */
static HgRange
random_interval(int kind, const HgRange *given, guint64 *seed)
{
    double a, b;
    switch (kind) {
    case 0: {
        double w = MAX(given->hi - given->lo, 1.0);
        return (HgRange){given->lo - w, given->hi + w, 0, FALSE};
    }
    case 1: a = rng_log(seed, -3, 3); return (HgRange){-a, a, 0, FALSE};
    case 2: a = rng_log(seed, -4, 2); return (HgRange){a, a * rng_log(seed, 0, 3), 0, FALSE};
    case 3: a = rng_log(seed, -4, 2); return (HgRange){-a * rng_log(seed, 0, 3), -a, 0, FALSE};
    case 4: a = (rng_unit(seed) < 0.5 ? -1 : 1) * rng_log(seed, -2, 2); b = fabs(a) * rng_log(seed, -6, -2);
        return (HgRange){a - b, a + b, 0, FALSE};
    case 5: return (HgRange){-rng_log(seed, -3, 1), rng_log(seed, 0, 3), 0, FALSE};
    case 6: a = rng_log(seed, -10, -5); return (HgRange){-a, a, 0, FALSE};
    default: a = rng_log(seed, 4.5, 6); return (HgRange){-a, a * rng_log(seed, -1, 0), 0, FALSE};
    }
}

/* Replace a float input by values over an interval of kind `kind` (uniform; one in 16 an endpoint,
 * and zeros where the interval holds 0), and return the interval as the declared range. Integer
 * inputs (indices, shapes) stay as they are. */
static HgRange
spread(HgTensor *t, int kind, guint64 *seed)
{
    g_autoptr(HgArray) a = hg_array_from_tensor(t, NULL);
    HgRange r = hg_range_of_array(a);
    if (!a || !hg_dtype_is_float(t->dtype) || !hg_range_bounded(&r))
        return r;
    HgRange out = random_interval(kind, &r, seed);
    g_autoptr(HgArray) b = hg_array_copy(a);
    double *v = g_new(double, b->numel + 1);
    for (gint64 i = 0; i < b->numel; i++) {
        guint64 pick = rng_next(seed) & 15;
        v[i] = pick == 0 ? out.lo : pick == 1 ? out.hi : pick == 2 && out.lo <= 0 && out.hi >= 0 ? 0
             : out.lo + (out.hi - out.lo) * rng_unit(seed);
    }
    hg_array_store_f64(b, v);
    g_free(v);
    /* the declared range must hold what was stored (a double rounded to the tensor's type) */
    out = hg_range_union(out, hg_range_of_array(b));
    if (t->nbytes)
        memcpy(hg_tensor_data_mut(t), b->data, t->nbytes);
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

static guint run_model(HgModel *m, GPtrArray *ins, const char *name, Stats *st);

static void
run_folder(const char *dir, Stats *st)
{
    g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
    g_autofree char *name = g_path_get_basename(dir);
    g_autoptr(HgModel) m = hg_model_load(model, NULL);
    if (!m || !hg_test_in_scope(m->graph))
        return;
    g_autoptr(GPtrArray) ins = hg_test_load_inputs(m, dir);
    if (!ins) {
        st->skipped++;
        return;
    }
    run_model(m, ins, name, st);
}

/* Run m on ins as given and on one random variant of each kind, checking every computed value; the
 * number of runs the interpreter refused (a node test may hold inputs it rejects). */
static guint
run_model(HgModel *m, GPtrArray *ins, const char *name, Stats *st)
{
    guint refused = 0;
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    st->folders++;
    guint bad_before = 0;
    guint64 seed = g_str_hash(name) | 1;
    /* the inputs as given, then one variant of each random kind */
    g_autoptr(GPtrArray) given = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint k = 0; k < ins->len; k++)
        g_ptr_array_add(given, hg_tensor_copy(ins->pdata[k]));
    for (int variant = 0; variant <= N_KINDS; variant++) {
        for (guint k = 0; variant > 0 && k < ins->len; k++) {
            hg_tensor_free(ins->pdata[k]);
            ins->pdata[k] = hg_tensor_copy(given->pdata[k]);
        }
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
                ir[k].range = spread(t, variant - 1, &seed);
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
        refused += !outs;
        if (!outs && st->verbose)
            printf("note %s: %s\n", name, error->message);
        bad_before += c.bad;
    }
    if (bad_before)
        st->folders_bad++;
    return refused;
}

static void
walk_folder(const char *dir, gpointer data)
{
    run_folder(dir, data);
}

/* Node tests of our own for rows no ONNX node test reaches (ops of opset 23, the legacy
 * experimental ops): the same runs, from inputs drawn uniformly over [-1, 1]. */
static const struct {
    const char *name, *text;
} extra_tests[] = {
    {"extra_mish", "<ir_version: 8, opset_import: [\"\" : 18]>\n"
                   "g (float[2,3,4] x) => (float[2,3,4] y) { y = Mish(x) }\n"},
    {"extra_rotary_embedding",
     "<ir_version: 10, opset_import: [\"\" : 23]>\n"
     "g (float[1,2,3,8] x, float[4,4] c, float[4,4] s) => (float[1,2,3,8] y)\n"
     "<int64[1,3] p = {0, 2, 3}> { y = RotaryEmbedding(x, c, s, p) }\n"},
    {"extra_rotary_embedding_interleaved",
     "<ir_version: 10, opset_import: [\"\" : 23]>\n"
     "g (float[1,3,16] x, float[1,3,2] c, float[1,3,2] s) => (float[1,3,16] y)\n"
     "{ y = RotaryEmbedding <interleaved = 1, num_heads = 2, rotary_embedding_dim = 4> (x, c, s) }\n"},
    {"extra_affine", "<ir_version: 3, opset_import: [\"\" : 7]>\n"
                     "g (float[2,3] x) => (float[2,3] y) { y = Affine <alpha = -2.5, beta = 0.75> (x) }\n"},
    {"extra_image_scaler",
     "<ir_version: 3, opset_import: [\"\" : 7]>\n"
     "g (float[1,2,3,3] x) => (float[1,2,3,3] y) { y = ImageScaler <scale = 3.0, bias = [1.5, -4.0]> (x) }\n"},
    {"extra_crop", "<ir_version: 3, opset_import: [\"\" : 7]>\n"
                   "g (float[1,2,5,5] x) => (float[1,2,2,3] y) { y = Crop <border = [1, 2, 1, 1]> (x) }\n"},
    /* Rows whose ONNX node tests are only in the shared corpus (onnx 1.22), so that a clone without
     * it still checks every row. */
    {"extra_gelu", "<ir_version: 9, opset_import: [\"\" : 20]>\n"
                   "g (float[2,3,4] x) => (float[2,3,4] y, float[2,3,4] z)\n"
                   "{ y = Gelu(x)\n z = Gelu <approximate = \"tanh\"> (x) }\n"},
    {"extra_rms_normalization",
     "<ir_version: 10, opset_import: [\"\" : 23]>\n"
     "g (float[2,3,4] x, float[4] s) => (float[2,3,4] y) { y = RMSNormalization <epsilon = 1e-5> (x, s) }\n"},
    {"extra_attention",
     "<ir_version: 10, opset_import: [\"\" : 23]>\n"
     "g (float[1,2,3,4] q, float[1,2,5,4] k, float[1,2,5,4] v) => (float[1,2,3,4] y) { y = Attention(q, k, v) }\n"},
    /* The recurrent ops beyond their node tests' forms: both directions with lengths (one of them 0),
     * peepholes, clip, input_forget, linear_before_reset, layout 1, and activations with kinks and
     * parameters. */
    {"extra_lstm_bidirectional_peepholes",
     "<ir_version: 8, opset_import: [\"\" : 14]>\n"
     "g (float[4,2,3] x, float[2,16,3] w, float[2,16,4] r, float[2,32] b, float[2,2,4] h0, float[2,2,4] c0,\n"
     "   float[2,12] p) => (float[4,2,2,4] y, float[2,2,4] yh, float[2,2,4] yc)\n"
     "<int32[2] lens = {4, 2}>\n"
     "{ y, yh, yc = LSTM <hidden_size = 4, direction = \"bidirectional\"> (x, w, r, b, lens, h0, c0, p) }\n"},
    {"extra_lstm_clip_forget_layout1",
     "<ir_version: 8, opset_import: [\"\" : 14]>\n"
     "g (float[2,4,3] x, float[1,16,3] w, float[1,16,4] r, float[2,1,4] c0) => (float[2,4,1,4] y, float[2,1,4] yh,\n"
     "   float[2,1,4] yc)\n"
     "<int32[2] lens = {3, 4}>\n"
     "{ y, yh, yc = LSTM <hidden_size = 4, layout = 1, direction = \"reverse\", input_forget = 1, clip = 0.5,\n"
     "  activations = [\"HardSigmoid\", \"Softsign\", \"Relu\"], activation_alpha = [0.3], activation_beta = [0.4]>\n"
     "  (x, w, r, , lens, , c0) }\n"},
    {"extra_gru_bidirectional_lbr",
     "<ir_version: 8, opset_import: [\"\" : 14]>\n"
     "g (float[3,2,3] x, float[2,12,3] w, float[2,12,4] r, float[2,24] b, float[2,2,4] h0)\n"
     "   => (float[3,2,2,4] y, float[2,2,4] yh)\n"
     "<int32[2] lens = {3, 0}>\n"
     "{ y, yh = GRU <hidden_size = 4, direction = \"bidirectional\", linear_before_reset = 1> (x, w, r, b, lens, h0) }\n"},
    {"extra_gru_clip_layout1",
     "<ir_version: 8, opset_import: [\"\" : 14]>\n"
     "g (float[2,3,3] x, float[1,12,3] w, float[1,12,4] r, float[2,1,4] h0) => (float[2,3,1,4] y, float[2,1,4] yh)\n"
     "{ y, yh = GRU <hidden_size = 4, layout = 1, direction = \"reverse\", clip = 1.5,\n"
     "  activations = [\"Sigmoid\", \"Elu\"]> (x, w, r, , , h0) }\n"},
    {"extra_rnn_leaky_scaled_tanh",
     "<ir_version: 3, opset_import: [\"\" : 7]>\n"
     "g (float[3,2,3] x, float[2,4,3] w, float[2,4,4] r, float[2,8] b) => (float[3,2,2,4] y, float[2,2,4] yh)\n"
     "{ y, yh = RNN <hidden_size = 4, direction = \"bidirectional\", clip = 3.0,\n"
     "  activations = [\"LeakyRelu\", \"ScaledTanh\"], activation_alpha = [0.1, 2.0], activation_beta = [0.5]>\n"
     "  (x, w, r, b) }\n"},
    {"extra_rnn_thresholded_softplus",
     "<ir_version: 8, opset_import: [\"\" : 14]>\n"
     "g (float[3,2,3] x, float[2,4,3] w, float[2,4,4] r) => (float[3,2,2,4] y, float[2,2,4] yh)\n"
     "{ y, yh = RNN <hidden_size = 4, direction = \"bidirectional\", clip = 2.0,\n"
     "  activations = [\"ThresholdedRelu\", \"Softplus\"], activation_alpha = [0.5]> (x, w, r) }\n"},
    /* The detection ops beyond their node tests' forms: center-point boxes over two batches and three
     * classes; RoiAlign's max mode, adaptive sampling and both coordinate modes, with rois reaching
     * past the map (constants: random rois under adaptive sampling could ask for any number of
     * points). */
    {"extra_nms_center_point",
     "<ir_version: 6, opset_import: [\"\" : 11]>\n"
     "g (float[2,8,4] b, float[2,3,8] s) => (int64[n,3] y)\n"
     "<int64[1] m = {3}, float[1] iou = {0.4}, float[1] t = {-0.5}>\n"
     "{ y = NonMaxSuppression <center_point_box = 1> (b, s, m, iou, t) }\n"},
    {"extra_roialign_max_adaptive",
     "<ir_version: 8, opset_import: [\"\" : 16]>\n"
     "g (float[2,3,6,5] x) => (float[4,3,2,3] y)\n"
     "<float[4,4] rois = {0, 0, 9, 11, -4, -2, 3, 5, 6, 8, 14, 16, 2, 2, 2, 2}, int64[4] bi = {0, 1, 1, 0}>\n"
     "{ y = RoiAlign <mode = \"max\", output_height = 2, output_width = 3, sampling_ratio = 0, spatial_scale = 0.5,\n"
     "  coordinate_transformation_mode = \"output_half_pixel\"> (x, rois, bi) }\n"},
    {"extra_roialign_avg_adaptive",
     "<ir_version: 8, opset_import: [\"\" : 16]>\n"
     "g (float[2,3,6,5] x) => (float[4,3,3,2] y)\n"
     "<float[4,4] rois = {0, 0, 9, 11, -4, -2, 3, 5, 6, 8, 14, 16, 2, 2, 2, 2}, int64[4] bi = {1, 0, 1, 0}>\n"
     "{ y = RoiAlign <output_height = 3, output_width = 2, spatial_scale = 0.5> (x, rois, bi) }\n"},
    {"extra_roialign_legacy",
     "<ir_version: 5, opset_import: [\"\" : 10]>\n"
     "g (float[1,2,6,5] x, float[3,4] rois) => (float[3,2,2,2] y)\n"
     "<int64[3] bi = {0, 0, 0}>\n"
     "{ y = RoiAlign <mode = \"max\", output_height = 2, output_width = 2, sampling_ratio = 2> (x, rois, bi) }\n"},
};

static void
run_extra_tests(Stats *st)
{
    for (guint i = 0; i < G_N_ELEMENTS(extra_tests); i++) {
        const char *text = extra_tests[i].text;
        g_autoptr(GError) error = NULL;
        g_autoptr(HgModel) m = hg_model_parse_text(text, strlen(text), &error);
        g_autoptr(HgShapes) shapes = m ? hg_shapes_infer(m->graph, NULL, 0, &error) : NULL;
        if (!shapes) {
            printf("FAIL %s: %s\n", extra_tests[i].name, error ? error->message : "no shapes");
            st->folders++;
            st->folders_bad++;
            continue;
        }
        g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
        g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
        guint64 seed = g_str_hash(extra_tests[i].name) | 1;
        for (guint k = 0; k < feeds->len; k++) {
            const HgValueShape *vs = hg_shapes_get(shapes, ((HgValueDecl *)feeds->pdata[k])->value);
            gint64 dims[HG_MAX_RANK];
            g_assert(vs->rank >= 0);
            for (int d = 0; d < vs->rank; d++)
                dims[d] = vs->dims[d].v;
            g_autoptr(HgArray) a = hg_array_new(vs->dtype, (guint)vs->rank, dims, NULL);
            g_assert(a);
            g_autofree double *v = g_new(double, a->numel + 1);
            for (gint64 j = 0; j < a->numel; j++)
                v[j] = 2 * rng_unit(&seed) - 1;
            hg_array_store_f64(a, v);
            g_ptr_array_add(ins, hg_array_to_tensor(a, ((HgValueDecl *)feeds->pdata[k])->value->name));
        }
        if (run_model(m, ins, extra_tests[i].name, st)) {
            printf("FAIL %s: the interpreter refused it (--verbose says why)\n", extra_tests[i].name);
            st->folders_bad++;
            st->extra_bad++;
        }
    }
}

/* Rows of the op table no test reaches, and why (none today: the list ends at the NULL). */
static const struct {
    const char *op, *why;
} not_tested[] = {
    {NULL, NULL},
};

/* Every row checked or listed with its reason, and no listed row checked; the count of failures. */
static guint
check_table(const Stats *st)
{
    guint bad = 0, rows = 0, listed = 0;
    for (int id = 1; id < HG_OP_COUNT; id++) {
        const HgOpDef *op = hg_op_by_id((HgOpId)id);
        if (!op)
            continue;
        rows++;
        const guint64 *c = g_hash_table_lookup(st->by_op, op->name);
        const char *why = NULL;
        for (guint i = 0; not_tested[i].op && !why; i++)
            if (strcmp(not_tested[i].op, op->name) == 0)
                why = not_tested[i].why;
        if (why)
            listed++;
        if (c && c[0] && why) {
            printf("FAIL op %s: listed as not tested (%s), yet %" G_GUINT64_FORMAT " values were checked\n",
                   op->name, why, c[0]);
            bad++;
        } else if (!(c && c[0]) && !why) {
            printf("FAIL op %s: no value of it was checked, and not_tested gives no reason\n", op->name);
            bad++;
        }
    }
    printf("op table: %u rows, %u checked, %u not tested with a written reason, %u failing\n", rows,
           rows - listed - bad, listed, bad);
    return bad;
}

int
main(int argc, char **argv)
{
    Stats st = {0};
    st.by_op = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    int first = 1;
    guint64 min_values = 0;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--verbose") == 0)
            st.verbose = TRUE;
        else if (strcmp(argv[first], "--min-values") == 0 && first + 1 < argc)
            min_values = g_ascii_strtoull(argv[++first], NULL, 10);
        else
            break;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: ranges_sound [--verbose] [--min-values N] DIR...\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            printf("note: %s is absent, skipped\n", argv[i]);
            continue;
        }
        hg_test_walk(argv[i], walk_folder, &st);
    }
    run_extra_tests(&st);
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
    guint table_bad = check_table(&st);
    gboolean few = st.values_checked < min_values;
    if (few)
        printf("FAIL %" G_GUINT64_FORMAT " values checked, fewer than --min-values %" G_GUINT64_FORMAT "\n",
               st.values_checked, min_values);
    printf("%u passed, %u failed\n", st.folders - st.folders_bad, st.folders_bad);
    g_hash_table_unref(st.by_op);
    return st.violations || !st.folders || table_bad || few || st.extra_bad ? 1 : 0;
}
