/* The pass driver: runs a list of passes by name, verifies the graph after each, and prints the graph
 * after a named pass for --dump-after. */
#include "halfguard/halfguard.h"
#include "halfguard/text.h"

#include <string.h>

static void
decision_free(gpointer p)
{
    HgDecision *d = p;
    g_free(d->node);
    g_free(d->op);
    g_free(d->reason);
    g_free(d);
}

void
hg_pass_ctx_init(HgPassCtx *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->notes = g_ptr_array_new();
    ctx->decisions = g_ptr_array_new_with_free_func(decision_free);
}

void
hg_pass_ctx_clear(HgPassCtx *ctx)
{
    if (!ctx->notes)
        return;
    for (guint i = 0; i < ctx->notes->len; i++) {
        HgPassNote *n = ctx->notes->pdata[i];
        g_free(n->message);
        g_free(n);
    }
    g_ptr_array_unref(ctx->notes);
    ctx->notes = NULL;
    g_clear_pointer(&ctx->decisions, g_ptr_array_unref);
    g_clear_pointer(&ctx->fp32_nodes, g_hash_table_unref);
    g_clear_pointer(&ctx->keep_fp32, g_hash_table_unref);
    g_clear_pointer(&ctx->analysis, hg_check_result_free);
}

HgCheckResult *
hg_pass_ctx_analysis(HgPassCtx *ctx, HgGraph *g, GError **error)
{
    g_return_val_if_fail(ctx != NULL && g != NULL && g->model != NULL, NULL);
    if (ctx->analysis && ctx->analysis_generation == g->generation)
        return ctx->analysis;
    HgCheckOptions none = {0};
    HgCheckResult *r = hg_check(g->model, ctx->check ? ctx->check : &none, error);
    if (!r)
        return NULL;
    g_clear_pointer(&ctx->analysis, hg_check_result_free);
    ctx->analysis = r;
    ctx->analysis_generation = g->generation;
    return r;
}

void
hg_pass_note(HgPassCtx *ctx, const char *pass, const char *fmt, ...)
{
    g_return_if_fail(ctx != NULL && ctx->notes != NULL);
    HgPassNote *n = g_new0(HgPassNote, 1);
    va_list ap;
    va_start(ap, fmt);
    n->pass = pass;
    n->message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(ctx->notes, n);
}

static GString *
known_pass_names(void)
{
    guint n;
    const HgPassInfo *p = hg_pass_list(&n);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", p[i].name);
    return s;
}

gboolean
hg_pipeline_run(HgModel *m, const HgPipelineOptions *opts, HgPassCtx *ctx, GError **error)
{
    g_return_val_if_fail(m != NULL && opts != NULL && ctx != NULL, FALSE);
    guint n_all;
    const HgPassInfo *all = hg_pass_list(&n_all);
    g_autoptr(GPtrArray) run = g_ptr_array_new();
    if (!opts->passes) {
        for (guint i = 0; i < n_all; i++)
            g_ptr_array_add(run, (gpointer)&all[i]);
    } else {
        for (guint i = 0; opts->passes[i]; i++) {
            const char *name = opts->passes[i];
            if (strcmp(name, "none") == 0 || !*name)
                continue;
            const HgPassInfo *p = hg_pass_find(name);
            if (!p) {
                g_autoptr(GString) known = known_pass_names();
                g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "unknown pass '%s' (known: %s, none)",
                            name, known->str);
                return FALSE;
            }
            g_ptr_array_add(run, (gpointer)p);
        }
    }
    if (opts->dump_after && !hg_pass_find(opts->dump_after)) {
        g_autoptr(GString) known = known_pass_names();
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--dump-after: unknown pass '%s' (known: %s)",
                    opts->dump_after, known->str);
        return FALSE;
    }
    if (!m->graph)
        return TRUE;
    /* The written model always type-checks: what the input already broke (an op below the opset that
     * introduced it, which ONNX Runtime accepts) may stay, anything the passes break is our bug. */
    g_autoptr(GPtrArray) before = run->len ? hg_model_typecheck(m) : NULL;
    for (guint i = 0; i < run->len; i++) {
        const HgPassInfo *p = run->pdata[i];
        if (!p->run(m->graph, ctx, error))
            return FALSE;
        if (!hg_graph_verify(m->graph, error)) {
            g_prefix_error(error, "after pass %s: ", p->name);
            return FALSE;
        }
        if (opts->dump_after && opts->dump_to && strcmp(opts->dump_after, p->name) == 0) {
            g_autofree char *text = hg_model_to_text(m, NULL);
            g_string_append(opts->dump_to, text);
        }
    }
    if (before) {
        g_autoptr(GPtrArray) after = hg_model_typecheck(m);
        if (!hg_typecheck_none_new(before, after, error)) {
            g_prefix_error(error, "internal error: the converted model does not type-check: ");
            return FALSE;
        }
    }
    return TRUE;
}
