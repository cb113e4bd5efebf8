/* What the command line's files share (src/main.c: the commands and main; src/cli_common.c: the
 * reports every command prints and the options of the commands that analyse a model). Not part of
 * the library. */
#ifndef HG_CLI_H
#define HG_CLI_H

#include "halfguard/halfguard.h"

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_FINDINGS = 1, EXIT_ERROR = 2 };

typedef int (*CmdFunc)(int argc, char **argv);

typedef struct {
    const char *name;
    CmdFunc run;
    const char *args;    /* parameter string shown in usage */
    const char *summary; /* one line for the command list */
    const char *description;
} Command;

/* The command called name (main.c's table). */
const Command *find_command(const char *name);

/* ---------------------------------------------------------------- ranges and calibration */
/* The options the commands that analyse a model share (check, convert; calibrate and verify take the
 * input ones): input ranges, calibration and its margin, the threshold, the dims of symbolic inputs,
 * synthetic inputs, and the configuration (.halfguard.ini), which all four read alike. */
typedef struct {
    char **ranges, **calib, **stats, **shapes, **dim_max;
    double margin, threshold; /* 0: the configuration's (check), else the default */
    char *accumulate;         /* --accumulate: "targets" (NULL) or "fp16" */
    int accumulate_model;     /* HG_CHECK_ACCUMULATE_*, parsed from accumulate */
    GArray *specs;            /* --input-range, parsed (HgInputRangeSpec) */
    HgStats *file_stats;      /* --stats files merged, or NULL */
    GPtrArray *samples;       /* --calib, opened (HgSamples*) */
    int calib_random;         /* --calib-random N (calibrate, verify: --random N); -1 when not given */
    gint64 seed;              /* --seed */
    int threads;              /* --threads: the interpreter's, for calibration (0: all cores) */
    char *config;             /* --config FILE */
    gboolean no_config;       /* --no-config */
    HgCheckConfig *fixed;     /* --config, loaded */
    GHashTable *found;        /* path of a .halfguard.ini found above a model -> it (NULL: invalid) */
} Analysis;

/* An Analysis before its options are parsed. */
#define ANALYSIS_INIT {.calib_random = -1}

/* The inputs: ranges, symbolic dims, and the size synthetic inputs give symbolic dims. */
#define INPUT_ENTRIES(a)                                                                           \
    {"input-range", 'r', 0, G_OPTION_ARG_STRING_ARRAY, &(a).ranges,                                \
     "Values of graph input NAME lie in [LO, HI] (repeatable; NAME may be a glob, * every other one)", \
     "NAME=LO:HI"},                                                                                \
    {"shapes", 0, 0, G_OPTION_ARG_STRING_ARRAY, &(a).shapes,                                       \
     "Dims of a symbolic input, e.g. input:1x3x512x512 (repeatable; * for every input)",           \
     "NAME:DIMS"},                                                                                 \
    {"dim-max", 0, 0, G_OPTION_ARG_STRING_ARRAY, &(a).dim_max,                                     \
     "Size synthetic inputs give the symbolic dims called NAME (N alone: every other one; default " \
     "1), e.g. seq_len=512 (repeatable)", "NAME=N"}

/* .halfguard.ini: the nearest one above each model, another, or none. */
#define CONFIG_ENTRIES(a)                                                                          \
    {"config", 'c', 0, G_OPTION_ARG_FILENAME, &(a).config,                                         \
     "Use FILE instead of the nearest .halfguard.ini", "FILE"},                                    \
    {"no-config", 0, 0, G_OPTION_ARG_NONE, &(a).no_config, "Ignore .halfguard.ini files", NULL}

#define ANALYSIS_ENTRIES(a)                                                                        \
    INPUT_ENTRIES(a),                                                                              \
    CONFIG_ENTRIES(a),                                                                             \
    {"calib", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &(a).calib,                                       \
     "Run the model on these inputs and decide with what it sees: a folder of input_K.pb or "      \
     "NAME.npy (or of such folders), an .npz, or Polygraphy --save-inputs JSON (repeatable)",      \
     "DATA"},                                                                                      \
    {"stats", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &(a).stats,                                       \
     "Statistics from 'halfguard calibrate' or Polygraphy --save-outputs JSON (repeatable)",      \
     "FILE"},                                                                                      \
    {"margin", 0, 0, G_OPTION_ARG_DOUBLE, &(a).margin,                                             \
     "Multiply observed magnitudes by M before deciding (default 2)", "M"},                        \
    {"threshold", 0, 0, G_OPTION_ARG_DOUBLE, &(a).threshold,                                       \
     "Magnitude a tensor must stay under in FP16 (default 65504)", "T"},                           \
    {"accumulate", 0, 0, G_OPTION_ARG_STRING, &(a).accumulate,                                     \
     "Where FP16 nodes keep running sums: targets (FP32, but CumSum; the default: TensorRT, ONNX " \
     "Runtime CUDA, PyTorch) or fp16 (every reduction, for runtimes that do)",                    \
     "targets|fp16"},                                                                              \
    {"calib-random", 0, 0, G_OPTION_ARG_INT, &(a).calib_random,                                    \
     "Also run N synthetic input sets, drawn in the input ranges (a float input without one: "     \
     "uniform in [-64, 64]); what rests on them is marked synthetic", "N"},                       \
    {"seed", 0, 0, G_OPTION_ARG_INT64, &(a).seed, "Seed of the synthetic inputs (default 0)", "S"}, \
    {"threads", 't', 0, G_OPTION_ARG_INT, &(a).threads,                                            \
     "Threads for the interpreter's calibration runs (default: all cores)", "N"}

/* What model_stats did about synthetic data, for the notes. */
typedef struct {
    guint samples;    /* synthetic samples run (0: none) */
    gboolean by_default; /* convert drew them because an input had neither range nor data */
    char *failed;     /* why convert's default synthetic data could not be drawn, or NULL */
} Synthetic;


/* What the analysis of one model reads: the command line's options, then its configuration's. */
typedef struct {
    const HgCheckConfig *cfg; /* the configuration that applies, or NULL */
    GArray *ranges;           /* HgInputRangeSpec: the command line's, then the configuration's */
    char **dim_max;           /* the command line's, else the configuration's */
    GPtrArray *samples;       /* HgSamples*: --calib's, else the configuration's calib */
    HgCheckOptions co;        /* over the above (stats NULL) */
} ModelSetup;

/* ---------------------------------------------------------------- how much to say, and how */
/* -v and -q (convert, check, calibrate, verify): -v says what the summary leaves out, -q prints only
 * errors (and the documents a command was asked for). Exit statuses do not change. */
extern gboolean cli_verbose, cli_quiet;
#define OUTPUT_ENTRIES                                                                             \
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &cli_verbose,                                           \
     "Say more: each FP32 island and why, each rewrite and each pattern left alone", NULL},       \
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &cli_quiet,                                               \
     "Print only errors (and the JSON or SARIF asked for); the exit status is the same", NULL}

/* Whether lines to f (stdout or stderr) are coloured: a terminal, and NO_COLOR unset or empty
 * (no-color.org), TERM not "dumb". Decided when the options are parsed, before any worker forks. */
gboolean cli_colour(FILE *f);
/* line with the words "warning:", "note:" and "error:" (and check's hazard kinds, by level) coloured
 * for f; line itself when f is not coloured. New string. */
char *cli_colourize(FILE *f, const char *line);

/* A progress line on stderr, "[done/total] what: item", only on a terminal, not with -q, and only
 * once the work has taken about a second (HALFGUARD_TEST_PROGRESS_AFTER=SECONDS changes that, for
 * the tests); erased by cli_progress_end. */
typedef struct {
    gboolean on, shown;
    gint64 t0;
    guint total;
    const char *what;
} CliProgress;
void cli_progress_start(CliProgress *p, const char *what, guint total);
void cli_progress_step(CliProgress *p, guint done, const char *item);
void cli_progress_end(CliProgress *p);
/* Seconds of work before a progress line shows. */
double cli_progress_after(void);
/* hg_stats_collect_samples and hg_stats_collect_synthetic, with that progress line. */
HgStats *cli_collect_samples(HgModel *m, const GPtrArray *samples, int threads, GError **error);
HgStats *cli_collect_synthetic(HgModel *m, const HgCheckOptions *co, guint n, guint64 seed, int threads,
                               GError **error);

/* Print one line to f. Whatever a model or a file name put in it is escaped (hg_escape_text), so that a
 * name cannot forge a line of its own or send the terminal escapes. */
void print_line(FILE *f, const char *format, ...) G_GNUC_PRINTF(2, 3);
void report_error(const char *file, const GError *error);
void report_warnings(const char *file, HgModel *m, const HgCheckOptions *co);
void report_fixed(const char *file, const HgCheckResult *r, gboolean shown);
void report_unknown_ops(const char *file, const HgCheckResult *r);
void report_derived(const char *file, const GPtrArray *inputs);
gboolean parse_options(const Command *cmd, GOptionEntry *entries, int *argc, char ***argv, int *exit_code);
void synthetic_clear(Synthetic *syn);
void model_setup_clear(ModelSetup *ms);
gboolean model_setup(Analysis *a, HgModel *m, const char *path, ModelSetup *ms, GError **error);
gboolean model_stats(HgModel *m, const Analysis *a, const ModelSetup *ms, gboolean by_default, HgStats **use, HgStats **owned, Synthetic *syn, GError **error);
void report_unranged(const char *file, const GPtrArray *inputs, HgStats *stats, gboolean covered, const Synthetic *syn, gint64 seed, const char *config);
gboolean analysis_prepare(Analysis *a, const Command *cmd);
void analysis_clear(Analysis *a);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Synthetic, synthetic_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ModelSetup, model_setup_clear)

#endif
