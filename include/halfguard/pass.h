/* halfguard: passes, the objects they work with, and the pipeline that runs them.
 *
 * A conversion has three objects, each with one owner:
 *  - HgConvertOptions: what the caller asks for (ranges, calibration, overrides, --keep-io-types).
 *    Opaque; the caller builds it with the setters and owns it; the passes only read it.
 *  - HgAnalyses: shapes, ranges and hazards of the graph (one hg_check), owned by the pipeline driver
 *    and rebuilt when the graph's generation moves; its own copy of the calibration statistics, which
 *    the rewriting passes update for the tensors they scale.
 *  - HgConvertResult: what the passes report (notes, the decisions, the summary's figures), owned by
 *    the caller once hg_convert returns it.
 * The precision plan itself lives in the IR (HgNode.precision): assign_precision writes it, lower reads
 * it, and the text form shows it.
 *
 * Each pass is one file in passes/ with one entry point of type HgPassFunc; passes/registry.c lists
 * them in default order with what each needs and which must come before it.
 */
#ifndef HALFGUARD_PASS_H
#define HALFGUARD_PASS_H

#include <halfguard/check.h>
#include <halfguard/ir.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------- the caller's options */

typedef struct HgConvertOptions HgConvertOptions;

/* New options: no input ranges, no calibration, default margin and threshold, no overrides. */
HG_API HgConvertOptions *hg_convert_options_new(void);
HG_API void hg_convert_options_free(HgConvertOptions *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgConvertOptions, hg_convert_options_free)
/* What the analysis reads, as for hg_check: the ranges and shape pins are copied; the statistics are
 * borrowed (they must outlive the conversion) and never changed. */
HG_API void hg_convert_options_set_analysis(HgConvertOptions *o, const HgCheckOptions *check);
/* Graph inputs and outputs keep their element types (and names); Casts go inside. */
HG_API void hg_convert_options_set_keep_io_types(HgConvertOptions *o, gboolean keep);
/* assign_precision's overrides (NULL-terminated, copied; NULL clears): op types and node-name
 * regular expressions (GRegex) kept FP32, node-name regular expressions run in FP16. */
HG_API void hg_convert_options_set_block_ops(HgConvertOptions *o, const char *const *ops);
HG_API void hg_convert_options_set_block_nodes(HgConvertOptions *o, const char *const *patterns);
HG_API void hg_convert_options_set_force_fp16_nodes(HgConvertOptions *o, const char *const *patterns);
/* A deep copy of o (the statistics stay borrowed). */
HG_API HgConvertOptions *hg_convert_options_copy(const HgConvertOptions *o);
/* Values of graph input name (a glob: '*' and '?'; "*" alone: every input not named otherwise) lie in
 * [lo, hi] (-INFINITY and INFINITY allowed; lo <= hi), as `-r NAME=LO:HI`. Appended; name is copied. */
HG_API void hg_convert_options_add_input_range(HgConvertOptions *o, const char *name, double lo, double hi);
/* Calibration statistics the analysis reads (borrowed: they must outlive the conversion; NULL: none). */
HG_API void hg_convert_options_set_stats(HgConvertOptions *o, HgStats *stats);
/* The underflow probe's statistics (HgCheckOptions.probe; borrowed, NULL: none). hg_convert_file draws
 * one itself when the conversion has no statistics and o carries none. */
HG_API void hg_convert_options_set_probe(HgConvertOptions *o, HgStats *probe);
/* For hg_convert_file: calibration data as for `--calib` (a folder of input_K.pb or NAME.npy, or of
 * such folders; an .npz; Polygraphy --save-inputs JSON). Appended; path is copied. */
HG_API void hg_convert_options_add_calib(HgConvertOptions *o, const char *path);
/* For hg_convert_file: the interpreter's threads for calibration (0, the default: all cores). */
HG_API void hg_convert_options_set_threads(HgConvertOptions *o, int threads);
/* For hg_convert_file: the seed of the synthetic inputs drawn for an input with neither range nor
 * data (default 0, as `convert --seed`). */
HG_API void hg_convert_options_set_seed(HgConvertOptions *o, guint64 seed);

/* The getters the passes use. The pointers are o's. */
HG_API const HgCheckOptions *hg_convert_options_analysis(const HgConvertOptions *o);
HG_API gboolean hg_convert_options_keep_io_types(const HgConvertOptions *o);
HG_API const char *const *hg_convert_options_block_ops(const HgConvertOptions *o);
HG_API const char *const *hg_convert_options_block_nodes(const HgConvertOptions *o);
HG_API const char *const *hg_convert_options_force_fp16_nodes(const HgConvertOptions *o);
HG_API const char *const *hg_convert_options_calib(const HgConvertOptions *o);
HG_API int hg_convert_options_threads(const HgConvertOptions *o);
HG_API guint64 hg_convert_options_seed(const HgConvertOptions *o);

/* ---------------------------------------------------------------- what the passes report */

/* What a pass did, for the one-line summary and the report. */
typedef struct {
    const char *pass;
    char *message; /* owned */
} HgPassNote;

/* One precision decision of assign_precision, for convert --report. */
typedef struct {
    char *node, *op;
    gboolean fp32;
    char *reason;        /* why: "prefers FP16", a hazard, an override, the cut */
    double lo, hi;       /* the static range of the node's first float output (NAN when none) */
    gint64 macs;         /* multiply-accumulates (-1 when unknown) */
    /* What the decision rests on: the weakest source among the bounds of the node's float inputs and
     * outputs (assumed, then synthetic, then calibration, then static). */
    HgBoundSource source;
    /* The FP32 island the node belongs to, numbered from 1 in the decisions' order; 0 for FP16. */
    guint island;
} HgDecision;

typedef struct {
    GPtrArray *notes;        /* of HgPassNote, appended by passes */
    guint n_changed;         /* graph edits, summed over passes */
    GPtrArray *decisions;    /* of HgDecision, one per node with float values (assign_precision) */
    gboolean planned;        /* assign_precision ran */
    /* Figures for convert's summary line. */
    guint n_fused_layernorm, n_casts, n_fp32_islands, n_fp32_nodes;
    gint64 macs_total, macs_fp16, weight_bytes_total, weight_bytes_fp16;
    /* Nodes whose multiply-accumulates depend on dims that neither the model nor --shapes fixes
     * (macs_total and macs_fp16 leave them out), the names of those dims ("batch, seq"; NULL when
     * none; owned), the sizes the minimum cut prices them at ("batch=128, seq=128": 128, or
     * --dim-max's; owned), and the MACs of every node with each such dim at that size. */
    guint n_macs_unknown;
    char *symbolic_dims, *symbolic_priced;
    gint64 macs_priced_total, macs_priced_fp16;
    /* Decisions that rest on synthetic data, and on nothing (HgDecision.source): the summary names
     * them, so a conversion built on guesses never reads as proven. */
    guint n_synthetic, n_assumed;
    /* The graph inputs as the plan's analysis saw them (HgInputInfo*, feed order), with what
     * synthetic inputs drew for those without data (synthetic_draw, NULL where the statistics of the
     * input are not synthetic). Filled by assign_precision. */
    GPtrArray *inputs;
    GPtrArray *synthetic_draw; /* char*, parallel to inputs */
} HgConvertResult;

HG_API HgConvertResult *hg_convert_result_new(void);
HG_API void hg_convert_result_free(HgConvertResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgConvertResult, hg_convert_result_free)
/* Record a note from pass `pass` (printf-style). */
HG_API void hg_pass_note(HgConvertResult *r, const char *pass, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* convert's one-line summary, at most about 200 characters: counts and shares, e.g. "fused 25
 * LayerNorm; 3 FP32 islands (12 nodes, 0.4% of MACs); 14 Casts; FP16: 99.6% of MACs, 98% of weight
 * bytes; 5 nodes FP32 for hazards" (when no precision was assigned, what the passes did, cut short).
 * New string. */
HG_API char *hg_convert_result_summary(const HgConvertResult *r);
/* What the summary leaves out, for people (convert -v): each FP32 island with a few of its nodes and
 * why it stayed FP32, each rewrite made and each pattern left alone, identical items grouped
 * ("24 x ..."). Lines ending in '\n', each starting with prefix; "" when there is nothing to say.
 * New string. */
HG_API char *hg_convert_result_details(const HgConvertResult *r, const char *prefix);
/* Every decision with its reason and interval, the pass notes and the figures, as JSON (README:
 * "convert --report"). */
HG_API gboolean hg_convert_result_write_report(const HgConvertResult *r, const char *model, const char *path,
                                               GError **error);
/* trtexec options for TensorRT 10 and older (weak typing) that pin the FP32 nodes:
 * "--precisionConstraints=obey --layerPrecisions=NAME:fp32,..." (NULL when every node is FP16). */
HG_API char *hg_convert_result_trtexec(const HgConvertResult *r);

/* ---------------------------------------------------------------- the analyses */

typedef struct HgAnalyses HgAnalyses;

/* New analyses for conversions with options o (borrowed: it must outlive them): a copy of o's
 * statistics, nothing computed yet. hg_convert makes its own; callers that drive passes themselves
 * (hg_pipeline_run_passes) may share one between runs. */
HG_API HgAnalyses *hg_analyses_new(const HgConvertOptions *o);
HG_API void hg_analyses_free(HgAnalyses *an);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgAnalyses, hg_analyses_free)

/* The hazard analysis (hg_check with the options' ranges and the analyses' statistics) of g as it is
 * now: computed on first need and again whenever g's generation has moved since. Owned by an: valid
 * until g changes. NULL with an error when the analysis fails. */
HG_API HgCheckResult *hg_analyses_get(HgAnalyses *an, HgGraph *g, GError **error);
/* The options the analysis runs with: the caller's, with the analyses' own statistics (NULL when the
 * caller gave none). A pass that scales a tensor calibration saw records what it holds now there, under
 * the new value's name (hg_stats_set). */
HG_API const HgCheckOptions *hg_analyses_options(HgAnalyses *an);

/* ---------------------------------------------------------------- passes */

/* What a pass is given: the caller's options, the driver's analyses, the result to report into. */
typedef struct {
    const HgConvertOptions *options;
    HgAnalyses *analyses;
    HgConvertResult *result;
} HgPassEnv;

typedef gboolean (*HgPassFunc)(HgGraph *g, const HgPassEnv *env, GError **error);

/* What a pass reads that another must have made (HgPassInfo.needs, .makes). Shapes, ranges and hazards
 * the analyses compute on demand; the plan only assign_precision makes (or a model read from text that
 * carries one). */
enum {
    HG_NEEDS_ANALYSIS = 1 << 0, /* shapes, ranges, hazards (always available: computed on demand) */
    HG_NEEDS_PLAN = 1 << 1,     /* the precision plan in the IR */
};

typedef struct {
    const char *name;
    HgPassFunc run;
    const char *help;
    guint needs;              /* HG_NEEDS_*: what the pass reads */
    guint makes;              /* HG_NEEDS_*: what it leaves for later passes */
    /* Passes that must come before this one when both run (the plan is made after every rewrite: a
     * rewrite after assign_precision would leave its nodes out of the plan). NULL-terminated. */
    const char *const *after;
} HgPassInfo;

/* The registered passes in default order; *n receives their count. */
HG_API const HgPassInfo *hg_pass_list(guint *n);
/* The pass called name, or NULL. */
HG_API const HgPassInfo *hg_pass_find(const char *name);

/* ---------------------------------------------------------------- the pipeline */

typedef struct {
    /* Pass names to run in order; NULL runs the default list, an empty list (or "none") runs none. */
    const char *const *passes;
    /* Print the graph's text form to dump_to after the pass called dump_after (NULL: never). */
    const char *dump_after;
    GString *dump_to;
} HgPipelineOptions;

/* Whether every pass po names (and its dump_after) is a pass halfguard has: FALSE with HG_ERROR_USAGE
 * naming the first that is not, and the passes there are. What does not depend on a model, checked
 * before any is loaded (hg_convert checks it again, with what does). */
HG_API gboolean hg_pipeline_check_names(const HgPipelineOptions *po, GError **error);

/* Convert m in place: run the passes (po may be NULL: all, in default order) with the options o, verify
 * the graph after each, then type-check the model (hg_model_typecheck). Returns the result (free with
 * hg_convert_result_free), or NULL with an HG_ERROR: HG_ERROR_USAGE for an unknown pass, or a list whose
 * passes miss what they need or come in an order that cannot work (`lower` without the plan); what a
 * pass reports; HG_ERROR_INTERNAL naming the node when the passes left a type violation the input did
 * not already have (m is then not fit to save) or, where the environment sets HALFGUARD_CHECK_EDITS
 * (the test suite does), when a pass changed the graph without moving its generation. */
HG_API HgConvertResult *hg_convert(HgModel *m, const HgConvertOptions *o, const HgPipelineOptions *po,
                                   GError **error);

/* Convert the model in file `in` and save it to `out`, in one call, as `halfguard convert IN -o OUT
 * --no-config` does with the same options (the same bytes): load; calibrate on o's --calib data (with
 * o's threads), adding o's statistics; when an input whose values reach float math still has neither
 * a range nor data, run HG_SYNTH_DEFAULT_SAMPLES synthetic input sets (o's seed) as convert does;
 * run every pass (hg_convert); save through the library's one writer (a temporary renamed over out,
 * so out is never half-written; "-" is standard output). o may be NULL (the defaults). TRUE on
 * success, with the result in *result_out when result_out is not NULL (free with
 * hg_convert_result_free). FALSE with an HG_ERROR: the model's or the data's error prefixed with the
 * file's name ("in.onnx: ..."), what hg_convert reports, or HG_ERROR_OUTPUT naming out. */
HG_API gboolean hg_convert_file(const char *in, const char *out, const HgConvertOptions *o,
                                HgConvertResult **result_out, GError **error);

/* Run the given passes, in this order, as hg_convert does but without checking their needs and order
 * or type-checking the result (for tests, and for hg_check_mark_fixed, which analyses between passes).
 * an may be NULL (then a new one is used and dropped); result receives the notes and figures. */
HG_API gboolean hg_pipeline_run_passes(HgModel *m, const HgPassInfo *const *passes, guint n,
                                       const HgConvertOptions *o, HgAnalyses *an, HgConvertResult *result,
                                       const HgPipelineOptions *po, GError **error);

G_END_DECLS

#endif
