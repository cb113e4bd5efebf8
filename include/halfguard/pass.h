/* halfguard: passes and the pipeline that runs them.
 *
 * Each pass is one file in passes/ with one entry point of type HgPassFunc. passes/registry.c lists
 * them in default order with one line of help; the pipeline runs a list of them by name, verifies the
 * graph after each, and can print the graph after a named pass.
 */
#ifndef HALFGUARD_PASS_H
#define HALFGUARD_PASS_H

#include <halfguard/check.h>
#include <halfguard/ir.h>

G_BEGIN_DECLS

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
} HgDecision;

typedef struct {
    GPtrArray *notes;   /* of HgPassNote, appended by passes */
    guint n_changed;    /* graph edits, summed over passes */
    /* Dims for symbolic graph inputs, "NAME:1x3x512x512" each ("*" matches every input of that
     * rank whose dims are not all known); NULL-terminated, may be NULL. Set by the caller. */
    const char *const *shapes;
    /* What the passes that need value ranges read (clamp_constants, assign_precision): input ranges,
     * calibration statistics, margin and threshold, as for check. May be NULL: no input ranges. */
    const HgCheckOptions *check;
    /* assign_precision's overrides (NULL-terminated lists, may be NULL): op types and node-name
     * regular expressions (GRegex) kept FP32, and node-name regular expressions made FP16. */
    const char *const *block_ops;
    const char *const *block_nodes;
    const char *const *force_fp16_nodes;
    gboolean keep_io_types;  /* graph inputs and outputs keep their element types */
    /* Nodes an earlier pass wants kept FP32 (HgNode* set, NULL when none): a LayerNorm left unfused
     * because the opset cannot be raised. assign_precision honours it. */
    GHashTable *keep_fp32;
    /* Set by assign_precision, read by lower: the HgNode* that stay FP32 (every other node with
     * float values runs in FP16). NULL until assign_precision has run. */
    GHashTable *fp32_nodes;
    GPtrArray *decisions;    /* of HgDecision, one per node with float values (assign_precision) */
    /* The hazard analysis of the main graph under check (hg_pass_ctx_analysis), and the graph
     * generation it was computed for. */
    HgCheckResult *analysis;
    guint64 analysis_generation;
    /* Figures for convert's summary line, set by the passes. */
    guint n_fused_layernorm, n_casts, n_fp32_islands, n_fp32_nodes;
    gint64 macs_total, macs_fp16, weight_bytes_total, weight_bytes_fp16;
} HgPassCtx;

typedef gboolean (*HgPassFunc)(HgGraph *g, HgPassCtx *ctx, GError **error);

typedef struct {
    const char *name;
    HgPassFunc run;
    const char *help;
} HgPassInfo;

/* The registered passes in default order; *n receives their count. */
HG_API const HgPassInfo *hg_pass_list(guint *n);
/* The pass called name, or NULL. */
HG_API const HgPassInfo *hg_pass_find(const char *name);

/* Record a note from pass `pass` (printf-style). */
HG_API void hg_pass_note(HgPassCtx *ctx, const char *pass, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

typedef struct {
    /* Pass names to run in order; NULL runs the default list, an empty list (or "none") runs none. */
    const char *const *passes;
    /* Print the graph's text form to dump_to after the pass called dump_after (NULL: never). */
    const char *dump_after;
    GString *dump_to;
} HgPipelineOptions;

/* Run the passes on m's main graph, verifying the graph after each, then type-check the model
 * (hg_model_typecheck). Returns FALSE with an HG_ERROR when a pass fails or a name is unknown
 * (HG_ERROR_USAGE), or with HG_ERROR_INTERNAL naming the node when the passes left a type violation
 * that the input did not already have (m is then not fit to save). ctx collects the notes. */
HG_API gboolean hg_pipeline_run(HgModel *m, const HgPipelineOptions *opts, HgPassCtx *ctx,
                                GError **error);

/* convert's one-line summary, e.g. "fused 25 LayerNorm; 3 FP32 islands (12 nodes, 0.4% of MACs);
 * 14 Casts; FP16: 99.6% of MACs, 98% of weight bytes" (the pass notes when no precision was
 * assigned). */
HG_API char *hg_pass_ctx_summary(const HgPassCtx *ctx);
/* Every decision with its reason and interval, the pass notes and the figures, as JSON (README:
 * "convert --report"). */
HG_API gboolean hg_pass_ctx_write_report(const HgPassCtx *ctx, const char *model, const char *path,
                                         GError **error);
/* trtexec options for TensorRT 10 and older (weak typing) that pin the FP32 nodes:
 * "--precisionConstraints=obey --layerPrecisions=NAME:fp32,..." (NULL when every node is FP16). */
HG_API char *hg_pass_ctx_trtexec(const HgPassCtx *ctx);

/* The hazard analysis (hg_check with ctx->check) of g, computed once and shared by the passes until
 * one of them changes the graph. Owned by ctx: valid until the next call after a change, or
 * hg_pass_ctx_clear. NULL with an error when the analysis fails. */
HG_API HgCheckResult *hg_pass_ctx_analysis(HgPassCtx *ctx, HgGraph *g, GError **error);

HG_API void hg_pass_ctx_init(HgPassCtx *ctx);
HG_API void hg_pass_ctx_clear(HgPassCtx *ctx);

G_END_DECLS

#endif
