/* halfguard: passes and the pipeline that runs them.
 *
 * Each pass is one file in passes/ with one entry point of type HgPassFunc. passes/registry.c lists
 * them in default order with one line of help; the pipeline runs a list of them by name, verifies the
 * graph after each, and can print the graph after a named pass.
 */
#ifndef HALFGUARD_PASS_H
#define HALFGUARD_PASS_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

/* What a pass did, for the one-line summary and the report. */
typedef struct {
    const char *pass;
    char *message; /* owned */
} HgPassNote;

typedef struct {
    GPtrArray *notes;   /* of HgPassNote, appended by passes */
    guint n_changed;    /* graph edits, summed over passes */
    /* Dims for symbolic graph inputs, "NAME:1x3x512x512" each ("*" matches every input of that
     * rank whose dims are not all known); NULL-terminated, may be NULL. Set by the caller. */
    const char *const *shapes;
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

/* Run the passes on m's main graph, verifying the graph after each. Returns FALSE with an HG_ERROR
 * when a pass fails or a name is unknown (HG_ERROR_USAGE); ctx collects the notes. */
HG_API gboolean hg_pipeline_run(HgModel *m, const HgPipelineOptions *opts, HgPassCtx *ctx,
                                GError **error);

HG_API void hg_pass_ctx_init(HgPassCtx *ctx);
HG_API void hg_pass_ctx_clear(HgPassCtx *ctx);

G_END_DECLS

#endif
