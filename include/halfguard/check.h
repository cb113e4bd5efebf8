/* halfguard: FP16 hazards, found by interval analysis and (optionally) calibration.
 *
 * hg_check() infers shapes and sound value intervals for a model's main graph, refines the decisions
 * with calibration statistics where given (observed range times a margin), and lists every FP16
 * hazard: the node, the kind, the bound and where it came from, and what `convert` does about it.
 * `halfguard check` prints the list as text, JSON or SARIF; README.md documents the formats.
 */
#ifndef HALFGUARD_CHECK_H
#define HALFGUARD_CHECK_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

typedef enum {
    HG_HAZARD_OVERFLOW,          /* a tensor can pass the threshold (65504) in FP16 */
    HG_HAZARD_INTERNAL_OVERFLOW, /* an accumulator or intermediate inside one op can */
    HG_HAZARD_UNDERFLOW,         /* an epsilon or divisor below FP16's normal range; weights that flush */
    HG_HAZARD_NONFINITE_CONSTANT,/* inf/NaN constants, or constants beyond the FP16 range */
    HG_HAZARD_DIVISION_BY_ZERO,  /* a divisor whose FP16 range reaches 0 */
    HG_HAZARD_PRECISION_LOSS,    /* the needed spread exceeds FP16's 11 bits */
    HG_HAZARD_MUST_STAY_FP32,    /* shape math, Resize scales, integer-valued float math */
    HG_HAZARD_UNRANGED_INPUT,    /* an input whose values reach float math has no range nor data */
    HG_HAZARD_N_KINDS
} HgHazardKind;

/* "overflow", "internal-overflow", "underflow", "non-finite-constant", "division-by-zero",
 * "precision-loss", "must-stay-fp32", "unranged-input". */
HG_API const char *hg_hazard_kind_name(HgHazardKind kind);
/* The kind named name, or -1. */
HG_API int hg_hazard_kind_from_name(const char *name);
/* One sentence describing the kind (SARIF rule help, --help). */
HG_API const char *hg_hazard_kind_description(HgHazardKind kind);
/* Its level, as SARIF has them: "error" (the model breaks: overflow, internal-overflow,
 * non-finite-constant, division-by-zero), "warning" (it degrades: underflow, precision-loss,
 * unranged-input) or "note" (must-stay-fp32). */
HG_API const char *hg_hazard_kind_level(HgHazardKind kind);
/* check --fail-on: a comma-separated list of levels (error; warning: warnings and errors; note:
 * everything) and kinds, as a mask of the kinds that fail (bit 1 << kind). FALSE with HG_ERROR_USAGE
 * naming an unknown word. */
HG_API gboolean hg_check_fail_on_parse(const char *spec, guint *mask, GError **error);

/* What a decision rests on: the static bound (sound for inputs in their ranges), calibration data
 * (observed magnitudes times the margin), synthetic data (the same, from inputs halfguard drew
 * itself: --calib-random, or convert's default for an input with neither range nor data), or nothing
 * (assumed: unbounded for lack of an input range and not observed). */
typedef enum { HG_SOURCE_STATIC, HG_SOURCE_CALIBRATION, HG_SOURCE_SYNTHETIC, HG_SOURCE_ASSUMED } HgBoundSource;

/* "static", "calibration", "synthetic", "assumed". */
HG_API const char *hg_bound_source_name(HgBoundSource source);

typedef struct {
    HgHazardKind kind;
    char *node;          /* the node's name ("" when the node has none); unranged-input: the input's */
    char *op;            /* its op type; unranged-input: "input" */
    char *value;         /* the tensor concerned (may be NULL) */
    char *message;       /* what can happen, e.g. "output may reach 2.1e+06" */
    double bound;        /* the deciding magnitude (INFINITY when unbounded; NAN when not numeric) */
    HgBoundSource source;
    /* The static interval of value, and (has_observed) what calibration saw. */
    double static_lo, static_hi;
    gboolean has_observed;
    double observed_lo, observed_hi;
    char *action;        /* what convert does about it, e.g. "keep FP32" */
    char *suppressed;    /* the configured reason when suppressed, else NULL */
    const HgNode *at;    /* the node (valid while the model is unchanged) */
    /* The pass that rewrites the hazard away when convert runs (hg_check_mark_fixed), else NULL. A
     * hazard convert fixes by itself is listed but not counted: the user has nothing to do. */
    char *fixed_by;
} HgHazard;

/* Observed statistics of one tensor, from the interpreter or a stats file. */
typedef struct {
    HgDType dtype;                            /* HG_DTYPE_UNDEFINED when not known */
    double min, max, absmax, min_abs_nonzero; /* NAN when no finite (nonzero) value was seen */
    guint64 n_inf, n_nan, count;
    guint samples;
    /* How many of those samples were synthetic (hg_stats_collect_synthetic): a decision that rests on
     * statistics with synthetic samples says so (HG_SOURCE_SYNTHETIC). */
    guint synthetic;
} HgTensorStats;

/* Statistics by tensor name (opaque, reference-counted). */
typedef struct HgStats HgStats;

/* A new, empty table. */
HG_API HgStats *hg_stats_new(void);
HG_API HgStats *hg_stats_ref(HgStats *stats);
HG_API void hg_stats_unref(HgStats *stats);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgStats, hg_stats_unref)
/* The statistics of tensor name (owned by stats), or NULL when it has none. */
HG_API const HgTensorStats *hg_stats_get(const HgStats *stats, const char *name);
/* How many tensors stats covers. */
HG_API guint hg_stats_size(const HgStats *stats);

/* Run m on every data folder (hg_load_feeds layout) and collect the statistics of its float tensors. */
HG_API HgStats *hg_stats_collect(HgModel *m, const char *const *data_dirs, int threads, GError **error);
/* hg_stats_collect over samples already fitted to m (HgSample*, hg_samples_feeds). */
HG_API HgStats *hg_stats_collect_samples(HgModel *m, const GPtrArray *samples, int threads, GError **error);
/* Read a stats file: halfguard's own (`halfguard calibrate`), or Polygraphy's --save-outputs /
 * --save-inputs JSON (arrays as base64 .npy). */
HG_API HgStats *hg_stats_load(const char *path, GError **error);
/* Set the statistics of tensor name (replacing what was there). */
HG_API void hg_stats_set(HgStats *stats, const char *name, const HgTensorStats *s);
/* A deep copy of stats. */
HG_API HgStats *hg_stats_copy(HgStats *stats);
/* Fold src into dst (min of mins, max of maxes, summed counts). */
HG_API void hg_stats_merge(HgStats *dst, HgStats *src);
/* Write stats as halfguard's stats JSON. */
HG_API gboolean hg_stats_save(HgStats *stats, const char *path, GError **error);

typedef struct {
    char *name;          /* a graph input, or "*" for every input not named otherwise */
    double lo, hi;
} HgInputRangeSpec;

/* Parse "NAME=LO:HI" (LO and HI may be inf or -inf). On success out->name is a new string that the
 * caller owns: release it with hg_input_range_spec_clear (or g_free), or declare out as
 * `g_auto(HgInputRangeSpec)`. On failure out is untouched and nothing is allocated. */
HG_API gboolean hg_input_range_parse(const char *text, HgInputRangeSpec *out, GError **error);
/* Free spec's name and set it to NULL (the struct itself is the caller's). */
HG_API void hg_input_range_spec_clear(HgInputRangeSpec *spec);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HgInputRangeSpec, hg_input_range_spec_clear)
/* How well a range's NAME fits graph input `input`: 3 the same name, 2 a glob that matches it
 * ("past_*": '*' and '?'), 1 "*" (every input not named otherwise), 0 none. Of several ranges, the
 * first of the highest rank applies. */
HG_API int hg_input_range_rank(const char *name, const char *input);

/* Where the range of a graph input comes from (hg_check, HgCheckResult.inputs). */
typedef enum {
    HG_INPUT_RANGE_GIVEN,    /* the caller's: --input-range or .halfguard.ini */
    HG_INPUT_RANGE_DERIVED,  /* follows from the model: an integer input that only indexes Gathers
                                takes [0, rows - 1] of the smallest table; a bool input [0, 1] */
    HG_INPUT_RANGE_UNNEEDED, /* no range needed: every value the input reaches saturates (Sigmoid,
                                Tanh) or is read for its shape alone, so no range changes a bound */
    HG_INPUT_RANGE_NONE,     /* none: the input is unbounded */
} HgInputRangeSource;

/* What the analysis knows of one graph input. */
typedef struct {
    char *name;
    HgDType dtype;           /* its element type (HG_DTYPE_UNDEFINED when unknown) */
    HgInputRangeSource source;
    double lo, hi;           /* GIVEN or DERIVED: the range; otherwise -inf and inf */
    char *why;               /* DERIVED or UNNEEDED: the reason ("indexes Gather 'emb' (20 rows)") */
    /* NONE: its values reach float arithmetic (a float input; an integer one that a Cast or another
     * op turns into floats), so what is computed from it is unbounded for lack of its range. */
    gboolean reaches_float;
} HgInputInfo;

/* "given", "derived", "unneeded", "none". */
HG_API const char *hg_input_range_source_name(HgInputRangeSource source);
HG_API void hg_input_info_free(HgInputInfo *info);

typedef struct HgCheckOptions HgCheckOptions;

/* What hg_check will know of each graph input of m to feed (its ranges from opts, else derived from
 * the model), without the rest of the analysis: for a caller that must decide what data to give it.
 * New array of HgInputInfo* (free function set), or NULL with HG_ERROR_USAGE for a bad shape pin. */
HG_API GPtrArray *hg_check_inputs(HgModel *m, const HgCheckOptions *opts, GError **error);

struct HgCheckOptions {
    const HgInputRangeSpec *ranges; /* n_ranges entries */
    guint n_ranges;
    HgStats *stats;                 /* may be NULL: static analysis only */
    double margin;                  /* observed absmax is multiplied by this; 0 = default (2) */
    double threshold;               /* overflow threshold; 0 = default (65504) */
    const char *const *shapes;      /* NAME:DIMS pins as for --shapes (NULL-terminated, may be NULL) */
    /* The accumulation model (`--accumulate`): HG_CHECK_ACCUMULATE_TARGETS (0, the default) says FP16
     * nodes keep running sums in FP32 except where the op table says otherwise (CumSum), as TensorRT,
     * ONNX Runtime CUDA and PyTorch do; HG_CHECK_ACCUMULATE_FP16 says every accumulating op (reductions,
     * matrix products, pools, norms) sums in FP16, for runtimes that really do. */
    int accumulate;
    /* The size synthetic inputs give a symbolic dim that --shapes does not pin: "NAME=N" for the dims
     * called NAME, "N" (or "*=N") for the others (NULL-terminated, may be NULL: 1). */
    const char *const *dim_max;
    /* Statistics of synthetic inputs drawn in the ranges (hg_stats_collect_synthetic), read only to
     * find activations too small for FP16 where `stats` has nothing on them: a static bound says how
     * large a value may be, never how small it is. They never loosen an overflow decision. May be NULL;
     * `halfguard convert` and hg_convert_file draw HG_PROBE_SAMPLES sets when they have no statistics. */
    HgStats *probe;
};

/* The underflow probe (HgCheckOptions.probe): how many synthetic input sets it draws, the cap on its
 * runs' live tensors (HgRunOptions.max_memory), and the largest weights it runs (a run reads every
 * weight: past this the probe would cost more than the rest of a conversion, which streams them). A
 * probe that would need more does not run. */
#define HG_PROBE_SAMPLES 2
#define HG_PROBE_MAX_MEMORY ((guint64)256 << 20)
#define HG_PROBE_MAX_WEIGHTS ((guint64)256 << 20)
/* ... and the most multiply-accumulates one of its runs may take, counted at the shapes known before
 * it runs (about a second of the interpreter on two cores). */
#define HG_PROBE_MAX_MACS 1e10

#define HG_CHECK_ACCUMULATE_TARGETS 0
#define HG_CHECK_ACCUMULATE_FP16 1

/* The bound of the default distribution of a float input that has no range: synthetic inputs draw it
 * uniformly from [-HG_SYNTH_FLOAT_BOUND, HG_SYNTH_FLOAT_BOUND] (README.md, "Synthetic calibration",
 * says why 64). */
#define HG_SYNTH_FLOAT_BOUND 64.0
/* How many synthetic input sets convert draws when an input has neither a range nor data. */
#define HG_SYNTH_DEFAULT_SAMPLES 4

/* Seeded synthetic feeds for m (hg_run_feeds order), drawn inside the ranges of opts (opts->ranges
 * and opts->shapes are read; opts may be NULL), else the ranges the model implies (hg_check's
 * derived ones): a float input uniform in its range (uniform in [-HG_SYNTH_FLOAT_BOUND,
 * HG_SYNTH_FLOAT_BOUND] without one), an integer input uniform over the integers of its range (0 or 1
 * without one), bool 0 or 1; a symbolic dim takes its --shapes pin, else 1. The same seed gives the
 * same values on every machine. NULL with HG_ERROR_UNSUPPORTED for an input without a declared tensor
 * type and shape, or of an element type it cannot draw (strings). */
HG_API GPtrArray *hg_synth_feeds(HgModel *m, const HgCheckOptions *opts, guint64 seed, GError **error);
/* What hg_synth_feeds draws for an input (info from hg_check_inputs): "uniform in [-64, 64]", "the
 * integers of [0, 19]", "0 or 1". New string. */
HG_API char *hg_synth_describe(const HgInputInfo *info);
/* hg_stats_collect over `samples` synthetic feed sets (seeds seed, seed + 1, ...); every entry counts
 * its samples as synthetic. Where the model cannot run with its unpinned symbolic dims at 1 (an
 * HG_ERROR_INVALID from a kernel: a strided audio front end longer than the input, a Gather of the
 * second step), the sets are drawn again with those dims at 128, then 1024. */
HG_API HgStats *hg_stats_collect_synthetic(HgModel *m, const HgCheckOptions *opts, guint samples,
                                           guint64 seed, int threads, GError **error);
/* The underflow probe for HgCheckOptions.probe: hg_stats_collect_synthetic of HG_PROBE_SAMPLES sets,
 * each run capped at HG_PROBE_MAX_MEMORY of live tensors, for a model of at most HG_PROBE_MAX_WEIGHTS of
 * weights whose runs take at most HG_PROBE_MAX_MACS (else NULL with an error that says which limit). */
HG_API HgStats *hg_stats_collect_probe(HgModel *m, const HgCheckOptions *opts, guint64 seed, int threads,
                                       GError **error);
/* How far m's float outputs move when only its float inputs are rounded to FP16: one synthetic input
 * set (seed), run as drawn and rounded, under the probe's memory cap, compared as verify compares
 * (src/verify.c). *rel is the largest relative L2 distance over the outputs (0 when rounding changes
 * no input), *output (new string, may be NULL) the output's name. Past verify's default tolerance, no
 * conversion that rounds the inputs can agree with FP32: FP32 itself is that sensitive. FALSE with
 * an error when it cannot run. */
HG_API gboolean hg_verify_input_sensitivity(HgModel *m, const HgCheckOptions *opts, guint64 seed, int threads,
                                            double *rel, char **output, GError **error);

/* An op halfguard has no row for (another domain, or an op newer than its table), as found in one
 * model: convert keeps its nodes FP32 with Casts around them; its outputs are unbounded for lack of a
 * rule, and what is computed from them is not checked, as for an input without a range. */
typedef struct {
    char *op;            /* "Gelu", or "domain.Op" outside the default domain */
    guint nodes;         /* nodes of that op in the main graph */
    guint downstream;    /* float tensors computed from their outputs that no rule bounds (theirs
                          * included): not checked */
} HgUnknownOp;

typedef struct {
    GPtrArray *hazards;          /* HgHazard*, in topological order of their nodes */
    GPtrArray *unranged_inputs;  /* char*: inputs with no range (HG_INPUT_RANGE_NONE), bool and
                                    string inputs excepted */
    gpointer priv;               /* the analysis, for the passes (src/hazards.h) */
    GPtrArray *unknown_ops;      /* HgUnknownOp*, by first appearance in topological order */
    GPtrArray *inputs;           /* HgInputInfo*: every graph input to feed, in feed order */
    GPtrArray *assumptions;      /* char*: what the interval analysis assumed of symbolic dims where a
                                    bound needs a length (their --dim-max, else at most 2^20) */
} HgCheckResult;

/* Find the hazards of m. NULL with an HG_ERROR on a bad option (unknown input name in ranges, bad
 * shape pin) or an invalid model. The result borrows opts->stats, which must outlive it. */
HG_API HgCheckResult *hg_check(HgModel *m, const HgCheckOptions *opts, GError **error);
HG_API void hg_check_result_free(HgCheckResult *r);
/* Find which hazards of r (hg_check of m with opts) convert rewrites away by itself, and set their
 * fixed_by to the pass: runs the passes before assign_precision on a copy of m (m is unchanged) and
 * analyses the copy after each pass that changed it. Does nothing when r has no hazards. FALSE with
 * an HG_ERROR when a pass fails on the copy. */
HG_API gboolean hg_check_mark_fixed(HgModel *m, const HgCheckOptions *opts, HgCheckResult *r,
                                    GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgCheckResult, hg_check_result_free)

/* What shape inference (with the --shapes pins) found wrong in m: one message per node whose shape rule
 * found its inputs inconsistent ("shape inference: node 'N' (Op): ..."); the analysis leaves that
 * node's outputs unknown and goes on. A new array of strings; NULL with an error where shape inference
 * cannot run at all (a cycle, a bad pin). */
HG_API GPtrArray *hg_check_shape_warnings(HgModel *m, const char *const *shapes, GError **error);

/* A per-repository configuration (.halfguard.ini, GKeyFile; README.md documents it), read alike by
 * check, convert, calibrate and verify: the threshold and margin, input ranges per model glob,
 * calibration data and dim-max per model glob, and suppressions by node-name glob and kind, each
 * with a reason. Globs are matched against the model's path relative to the file's folder. */
typedef struct HgCheckConfig HgCheckConfig;

/* Load path; NULL with HG_ERROR_USAGE naming the file and line of a mistake ("FILE:LINE: [GROUP]:
 * ...": an unknown group or key, a suppression without a reason, an unknown kind, a bad range, number
 * or dim-max). */
HG_API HgCheckConfig *hg_check_config_load(const char *path, GError **error);
/* The nearest .halfguard.ini at or above the folder of model_path, or NULL (no error) when none. */
HG_API char *hg_check_config_find(const char *model_path);
HG_API void hg_check_config_free(HgCheckConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgCheckConfig, hg_check_config_free)
HG_API const char *hg_check_config_path(const HgCheckConfig *cfg);
/* [check] threshold and margin, or 0 when the file does not set them. */
HG_API double hg_check_config_threshold(const HgCheckConfig *cfg);
HG_API double hg_check_config_margin(const HgCheckConfig *cfg);
/* Append to ranges (GArray of HgInputRangeSpec, names owned by the array's clear func, e.g.
 * g_array_set_clear_func(ranges, (GDestroyNotify)hg_input_range_spec_clear)) the ranges of
 * every [ranges GLOB] group matching model_path, skipping names already present. */
HG_API void hg_check_config_ranges(const HgCheckConfig *cfg, const char *model_path, GArray *ranges);
/* The calibration data the first [model GLOB] group matching model_path gives (calib = ...; paths made
 * absolute against the file's folder), or NULL. New NULL-terminated array. */
HG_API char **hg_check_config_calib(const HgCheckConfig *cfg, const char *model_path);
/* The dim-max specs ("N" or "NAME=N") of the first [model GLOB] group matching model_path that sets
 * them, or NULL. New NULL-terminated array. */
HG_API char **hg_check_config_dim_max(const HgCheckConfig *cfg, const char *model_path);
/* Parse a dim-max spec: "N" (every symbolic dim; *name "*") or "NAME=N", N >= 1. name (may be NULL)
 * receives a new string. FALSE with HG_ERROR_USAGE. */
HG_API gboolean hg_dim_max_parse(const char *spec, char **name, gint64 *value, GError **error);
/* The size dim-max specs (NULL-terminated, may be NULL; bad ones skipped) give the symbolic dim
 * called name (NULL: unnamed): its NAME=N, else the N for every dim, else dflt. A name that shape
 * inference gives a prefix of an axis, "min(S,C)" (x[0:S] of an axis of length C), gets S's size
 * capped at C, and C where S's is below 0; a product of dims ("4*batch", "batch*seq") the product of
 * their sizes (dflt where one is below 0). */
HG_API gint64 hg_dim_max_lookup(const char *const *specs, const char *name, gint64 dflt);
/* Mark the hazards of r that a [suppress] group matching model_path covers (HgHazard.suppressed). */
HG_API void hg_check_config_suppress(const HgCheckConfig *cfg, const char *model_path, HgCheckResult *r);

/* The outcome of checking one file, for the report formats. */
typedef enum { HG_CHECK_CLEAN, HG_CHECK_HAZARDS, HG_CHECK_SKIPPED, HG_CHECK_ERROR } HgCheckStatus;

typedef struct {
    const char *file;
    HgCheckStatus status;
    const char *message;        /* why skipped, or the error; else NULL */
    const HgCheckResult *result; /* NULL unless CLEAN or HAZARDS */
} HgCheckFile;

/* The note for an op without a row ("op 'X' (2 nodes) is unknown to halfguard: ..."). New string. */
HG_API char *hg_check_unknown_op_note(const HgUnknownOp *u);
/* Hazards of r that count: neither suppressed nor fixed by convert. */
HG_API guint hg_check_result_count(const HgCheckResult *r);
/* The same, of the kinds in the mask (bit 1 << kind: hg_check_fail_on_parse's). */
HG_API guint hg_check_result_count_kinds(const HgCheckResult *r, guint kinds);
/* What hg_check_format_text lists besides the hazards that count (flags, or-ed). */
#define HG_CHECK_SHOW_SUPPRESSED 1u
#define HG_CHECK_SHOW_FIXED 2u
/* Identical hazards of one file (the same kind, op, message but for the names in it, and marks) are
 * one line, "FILE: 24 × node 'a', 'b', 'c' and 21 more (Add): KIND: MESSAGE (as at 'a')". */
#define HG_CHECK_GROUP 4u
/* Compiler-style lines, one per hazard that counts; the suppressed and the fixed ones too, marked,
 * as flags say (TRUE is HG_CHECK_SHOW_SUPPRESSED). Each line says what convert does about it:
 * "[fixed by convert: PASS]" (a rewrite removes it) or "[convert keeps it FP32]"; an unranged input's
 * message says how to give the range. */
HG_API char *hg_check_format_text(const HgCheckFile *files, guint n, guint flags);
/* One line for people, by kind: "12 hazards: 10 underflow (convert fixes them), 2 overflow" (the
 * hazards convert fixes by itself are counted apart; suppressed ones are not counted, but said);
 * NULL when there is no hazard at all. New string. */
HG_API char *hg_check_summary(const HgCheckFile *files, guint n);
/* The JSON report (README.md, "check --format json"). */
HG_API char *hg_check_format_json(const HgCheckFile *files, guint n);
/* A SARIF 2.1.0 log: one rule per hazard kind, one result per hazard. */
HG_API char *hg_check_format_sarif(const HgCheckFile *files, guint n);

#define HG_DEFAULT_MARGIN 2.0
#define HG_DEFAULT_THRESHOLD 65504.0

G_END_DECLS

#endif
