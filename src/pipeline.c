/* The pass driver and the three objects a conversion works with (include/halfguard/pass.h): the
 * caller's options, the analyses the driver keeps current, the result the passes report into. It runs
 * a list of passes by name after checking what each needs and must follow, verifies the graph after
 * each, checks under test that every edit moved the generation, prints the graph after a named pass
 * for --dump-after, and type-checks the result. */
#include "halfguard/halfguard.h"
#include "halfguard/text.h"

#include <string.h>

/* ---------------------------------------------------------------- the caller's options */

struct HgConvertOptions {
    HgCheckOptions check;   /* ranges (owned copy below), stats (borrowed), margin, threshold, shapes */
    GArray *ranges;         /* of HgInputRangeSpec, names owned */
    char **shapes;          /* owned copy of check.shapes */
    char **dim_max;         /* owned copy of check.dim_max */
    gboolean keep_io_types;
    char **block_ops, **block_nodes, **force_fp16_nodes;
    /* hg_convert_file's calibration: data paths (owned), interpreter threads, synthetic seed. */
    char **calib;
    int threads;
    guint64 seed;
};

static void
range_clear(gpointer p)
{
    g_free(((HgInputRangeSpec *)p)->name);
}

HgConvertOptions *
hg_convert_options_new(void)
{
    HgConvertOptions *o = g_new0(HgConvertOptions, 1);
    o->ranges = g_array_new(FALSE, TRUE, sizeof(HgInputRangeSpec));
    g_array_set_clear_func(o->ranges, range_clear);
    return o;
}

void
hg_convert_options_free(HgConvertOptions *o)
{
    if (!o)
        return;
    g_array_unref(o->ranges);
    g_strfreev(o->shapes);
    g_strfreev(o->dim_max);
    g_strfreev(o->block_ops);
    g_strfreev(o->block_nodes);
    g_strfreev(o->force_fp16_nodes);
    g_strfreev(o->calib);
    g_free(o);
}

/* Point check's borrowed fields at the owned copies (after either moved). */
static void
repoint(HgConvertOptions *o)
{
    o->check.ranges = (const HgInputRangeSpec *)(void *)o->ranges->data;
    o->check.n_ranges = o->ranges->len;
    o->check.shapes = (const char *const *)o->shapes;
    o->check.dim_max = (const char *const *)o->dim_max;
}

HgConvertOptions *
hg_convert_options_copy(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    HgConvertOptions *c = hg_convert_options_new();
    hg_convert_options_set_analysis(c, &o->check);
    c->keep_io_types = o->keep_io_types;
    c->block_ops = g_strdupv(o->block_ops);
    c->block_nodes = g_strdupv(o->block_nodes);
    c->force_fp16_nodes = g_strdupv(o->force_fp16_nodes);
    c->calib = g_strdupv(o->calib);
    c->threads = o->threads;
    c->seed = o->seed;
    return c;
}

void
hg_convert_options_add_input_range(HgConvertOptions *o, const char *name, double lo, double hi)
{
    g_return_if_fail(o != NULL && name != NULL && !(lo > hi));
    HgInputRangeSpec r = {g_strdup(name), lo, hi};
    g_array_append_val(o->ranges, r);
    repoint(o);
}

void
hg_convert_options_set_stats(HgConvertOptions *o, HgStats *stats)
{
    g_return_if_fail(o != NULL);
    o->check.stats = stats;
}

void
hg_convert_options_set_probe(HgConvertOptions *o, HgStats *probe)
{
    g_return_if_fail(o != NULL);
    o->check.probe = probe;
}

void
hg_convert_options_add_calib(HgConvertOptions *o, const char *path)
{
    g_return_if_fail(o != NULL && path != NULL);
    guint n = o->calib ? g_strv_length(o->calib) : 0;
    o->calib = g_renew(char *, o->calib, n + 2);
    o->calib[n] = g_strdup(path);
    o->calib[n + 1] = NULL;
}

void
hg_convert_options_set_threads(HgConvertOptions *o, int threads)
{
    g_return_if_fail(o != NULL && threads >= 0);
    o->threads = threads;
}

void
hg_convert_options_set_seed(HgConvertOptions *o, guint64 seed)
{
    g_return_if_fail(o != NULL);
    o->seed = seed;
}

const char *const *
hg_convert_options_calib(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    return (const char *const *)o->calib;
}

int
hg_convert_options_threads(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, 0);
    return o->threads;
}

guint64
hg_convert_options_seed(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, 0);
    return o->seed;
}

void
hg_convert_options_set_analysis(HgConvertOptions *o, const HgCheckOptions *check)
{
    g_return_if_fail(o != NULL && check != NULL);
    g_array_set_size(o->ranges, 0);
    for (guint i = 0; i < check->n_ranges; i++) {
        HgInputRangeSpec r = {g_strdup(check->ranges[i].name), check->ranges[i].lo, check->ranges[i].hi};
        g_array_append_val(o->ranges, r);
    }
    g_strfreev(o->shapes);
    o->shapes = g_strdupv((char **)check->shapes);
    g_strfreev(o->dim_max);
    o->dim_max = g_strdupv((char **)check->dim_max);
    o->check = *check;
    repoint(o);
}

void
hg_convert_options_set_keep_io_types(HgConvertOptions *o, gboolean keep)
{
    g_return_if_fail(o != NULL);
    o->keep_io_types = keep;
}

static void
set_strv(char ***field, const char *const *v)
{
    g_strfreev(*field);
    *field = g_strdupv((char **)v);
}

void
hg_convert_options_set_block_ops(HgConvertOptions *o, const char *const *ops)
{
    g_return_if_fail(o != NULL);
    set_strv(&o->block_ops, ops);
}

void
hg_convert_options_set_block_nodes(HgConvertOptions *o, const char *const *patterns)
{
    g_return_if_fail(o != NULL);
    set_strv(&o->block_nodes, patterns);
}

void
hg_convert_options_set_force_fp16_nodes(HgConvertOptions *o, const char *const *patterns)
{
    g_return_if_fail(o != NULL);
    set_strv(&o->force_fp16_nodes, patterns);
}

const HgCheckOptions *
hg_convert_options_analysis(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    return &o->check;
}

gboolean
hg_convert_options_keep_io_types(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, FALSE);
    return o->keep_io_types;
}

const char *const *
hg_convert_options_block_ops(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    return (const char *const *)o->block_ops;
}

const char *const *
hg_convert_options_block_nodes(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    return (const char *const *)o->block_nodes;
}

const char *const *
hg_convert_options_force_fp16_nodes(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    return (const char *const *)o->force_fp16_nodes;
}

/* ---------------------------------------------------------------- the result */

static void
decision_free(gpointer p)
{
    HgDecision *d = p;
    g_free(d->node);
    g_free(d->op);
    g_free(d->reason);
    g_free(d);
}

static void
note_free(gpointer p)
{
    HgPassNote *n = p;
    g_free(n->message);
    g_free(n);
}

HgConvertResult *
hg_convert_result_new(void)
{
    HgConvertResult *r = g_new0(HgConvertResult, 1);
    r->notes = g_ptr_array_new_with_free_func(note_free);
    r->decisions = g_ptr_array_new_with_free_func(decision_free);
    return r;
}

void
hg_convert_result_free(HgConvertResult *r)
{
    if (!r)
        return;
    g_ptr_array_unref(r->notes);
    g_ptr_array_unref(r->decisions);
    if (r->inputs)
        g_ptr_array_unref(r->inputs);
    if (r->synthetic_draw)
        g_ptr_array_unref(r->synthetic_draw);
    g_free(r->symbolic_dims);
    g_free(r->symbolic_priced);
    g_free(r);
}

void
hg_pass_note(HgConvertResult *r, const char *pass, const char *fmt, ...)
{
    g_return_if_fail(r != NULL && r->notes != NULL);
    HgPassNote *n = g_new0(HgPassNote, 1);
    va_list ap;
    va_start(ap, fmt);
    n->pass = pass;
    n->message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(r->notes, n);
}

/* ---------------------------------------------------------------- the analyses */

struct HgAnalyses {
    const HgConvertOptions *options;
    HgCheckOptions check;   /* options' check, with stats the copy below */
    HgStats *stats;         /* owned copy of the caller's statistics, or NULL */
    HgCheckResult *result;  /* of the graph at generation `generation` */
    const HgGraph *graph;
    guint64 generation;
};

HgAnalyses *
hg_analyses_new(const HgConvertOptions *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    HgAnalyses *an = g_new0(HgAnalyses, 1);
    an->options = o;
    an->check = *hg_convert_options_analysis(o);
    an->stats = an->check.stats ? hg_stats_copy(an->check.stats) : NULL;
    an->check.stats = an->stats;
    return an;
}

void
hg_analyses_free(HgAnalyses *an)
{
    if (!an)
        return;
    hg_check_result_free(an->result);
    hg_stats_unref(an->stats);
    g_free(an);
}

HgCheckResult *
hg_analyses_get(HgAnalyses *an, HgGraph *g, GError **error)
{
    g_return_val_if_fail(an != NULL && g != NULL && g->model != NULL, NULL);
    if (an->result && an->graph == g && an->generation == g->generation)
        return an->result;
    HgCheckResult *r = hg_check(g->model, &an->check, error);
    if (!r)
        return NULL;
    g_clear_pointer(&an->result, hg_check_result_free);
    an->result = r;
    an->graph = g;
    an->generation = g->generation;
    return r;
}

const HgCheckOptions *
hg_analyses_options(HgAnalyses *an)
{
    g_return_val_if_fail(an != NULL, NULL);
    return &an->check;
}

/* ---------------------------------------------------------------- the driver */

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
hg_pipeline_check_names(const HgPipelineOptions *po, GError **error)
{
    for (guint i = 0; po && po->passes && po->passes[i]; i++) {
        const char *name = po->passes[i];
        if (*name && strcmp(name, "none") != 0 && !hg_pass_find(name)) {
            g_autoptr(GString) known = known_pass_names();
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "unknown pass '%s' (known: %s, none)", name, known->str);
            return FALSE;
        }
    }
    if (po && po->dump_after && !hg_pass_find(po->dump_after)) {
        g_autoptr(GString) known = known_pass_names();
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--dump-after: unknown pass '%s' (known: %s)", po->dump_after,
                    known->str);
        return FALSE;
    }
    return TRUE;
}

/* The passes po names, checked against what each needs and must follow. */
static GPtrArray *
pass_list(HgModel *m, const HgPipelineOptions *po, GError **error)
{
    guint n_all;
    const HgPassInfo *all = hg_pass_list(&n_all);
    g_autoptr(GPtrArray) run = g_ptr_array_new();
    if (!hg_pipeline_check_names(po, error))
        return NULL;
    if (!po || !po->passes) {
        for (guint i = 0; i < n_all; i++)
            g_ptr_array_add(run, (gpointer)&all[i]);
        return g_steal_pointer(&run);
    }
    for (guint i = 0; po->passes[i]; i++) {
        const char *name = po->passes[i];
        if (strcmp(name, "none") == 0 || !*name)
            continue;
        g_ptr_array_add(run, (gpointer)hg_pass_find(name));
    }
    /* What each needs must be there when it runs: made by an earlier pass, or (the plan) carried by a
     * model read from text. And a pass listed after one it must precede is refused. */
    guint have = HG_NEEDS_ANALYSIS | (m->graph && hg_graph_has_plan(m->graph) ? HG_NEEDS_PLAN : 0);
    for (guint i = 0; i < run->len; i++) {
        const HgPassInfo *p = run->pdata[i];
        if ((p->needs & HG_NEEDS_PLAN) && !(have & HG_NEEDS_PLAN)) {
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                        "pass %s needs the precision plan, which assign_precision makes: list assign_precision "
                        "before %s (e.g. --passes assign_precision,%s)", p->name, p->name, p->name);
            return NULL;
        }
        have |= p->makes;
        for (guint a = 0; p->after && p->after[a]; a++)
            for (guint j = i + 1; j < run->len; j++)
                if (strcmp(((const HgPassInfo *)run->pdata[j])->name, p->after[a]) == 0) {
                    g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "pass %s must come after %s, not before it",
                                p->name, p->after[a]);
                    return NULL;
                }
    }
    return g_steal_pointer(&run);
}

/* The model as text, what an edit check compares: every node, attribute and declaration, and each
 * tensor's values or, past 64 elements, their count, extremes and mean (printing them all would make
 * the suite's conversions several times slower). */
static char *
edit_text(HgModel *m)
{
    return hg_model_to_text(m, NULL);
}

gboolean
hg_pipeline_run_passes(HgModel *m, const HgPassInfo *const *passes, guint n, const HgConvertOptions *o,
                       HgAnalyses *an, HgConvertResult *result, const HgPipelineOptions *po, GError **error)
{
    g_return_val_if_fail(m != NULL && (passes != NULL || n == 0) && o != NULL && result != NULL, FALSE);
    if (!m->graph)
        return TRUE;
    g_autoptr(HgAnalyses) own = an ? NULL : hg_analyses_new(o);
    HgPassEnv env = {o, an ? an : own, result};
    /* Under test (HALFGUARD_CHECK_EDITS), each pass must move the generation when it changes the graph:
     * the analyses trust it. The text form says whether it changed. */
    gboolean check_edits = g_getenv("HALFGUARD_CHECK_EDITS") != NULL;
    for (guint i = 0; i < n; i++) {
        const HgPassInfo *p = passes[i];
        guint64 generation = m->graph->generation;
        g_autofree char *before = check_edits ? edit_text(m) : NULL;
        if (!p->run(m->graph, &env, error))
            return FALSE;
        if (!hg_graph_verify(m->graph, error)) {
            g_prefix_error(error, "after pass %s: ", p->name);
            return FALSE;
        }
        if (check_edits && m->graph->generation == generation) {
            g_autofree char *after = edit_text(m);
            if (strcmp(before, after) != 0) {
                g_set_error(error, HG_ERROR, HG_ERROR_INTERNAL,
                            "internal error: pass %s changed the graph without moving its generation "
                            "(an edit that bypassed the IR's verbs)", p->name);
                return FALSE;
            }
        }
        if (po && po->dump_after && po->dump_to && strcmp(po->dump_after, p->name) == 0) {
            g_autofree char *text = hg_model_to_text(m, NULL);
            g_string_append(po->dump_to, text);
        }
    }
    return TRUE;
}

HgConvertResult *
hg_convert(HgModel *m, const HgConvertOptions *o, const HgPipelineOptions *po, GError **error)
{
    g_return_val_if_fail(m != NULL && o != NULL, NULL);
    g_autoptr(GPtrArray) run = pass_list(m, po, error);
    if (!run)
        return NULL;
    g_autoptr(HgConvertResult) result = hg_convert_result_new();
    if (!m->graph)
        return g_steal_pointer(&result);
    /* The written model always type-checks: what the input already broke (an op below the opset that
     * introduced it, which ONNX Runtime accepts) may stay, anything the passes break is our bug. */
    g_autoptr(GPtrArray) before = run->len ? hg_model_typecheck(m) : NULL;
    if (!hg_pipeline_run_passes(m, (const HgPassInfo *const *)run->pdata, run->len, o, NULL, result, po, error))
        return NULL;
    if (before) {
        g_autoptr(GPtrArray) after = hg_model_typecheck(m);
        if (!hg_typecheck_none_new(before, after, error)) {
            g_prefix_error(error, "internal error: the converted model does not type-check: ");
            return NULL;
        }
    }
    return g_steal_pointer(&result);
}
