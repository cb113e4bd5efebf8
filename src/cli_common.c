/* The command line's shared parts: the reports every command prints, and the options, configuration
 * and calibration of the commands that analyse a model (src/cli.h). */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

gboolean cli_verbose, cli_quiet;

/* ---------------------------------------------------------------- colour */

static int colour_out = -1, colour_err = -1; /* -1: not decided yet */

static gboolean
colour_wanted(int fd)
{
    const char *no = g_getenv("NO_COLOR");
    const char *term = g_getenv("TERM");
    return isatty(fd) && !(no && *no) && g_strcmp0(term, "dumb") != 0;
}

static void
colour_decide(void)
{
    colour_out = colour_wanted(STDOUT_FILENO);
    colour_err = colour_wanted(STDERR_FILENO);
}

gboolean
cli_colour(FILE *f)
{
    if (colour_out < 0)
        colour_decide();
    return f == stdout ? colour_out : f == stderr ? colour_err : FALSE;
}

#define SGR_ERROR "\033[1;31m"
#define SGR_WARNING "\033[1;35m"
#define SGR_NOTE "\033[1;36m"
#define SGR_RESET "\033[0m"

char *
cli_colourize(FILE *f, const char *line)
{
    if (!cli_colour(f))
        return g_strdup(line);
    /* The first ": WORD:" that is a level, or a hazard kind of check's (coloured by its level). */
    static const char *const words[] = {"error", "internal error", "warning", "note"};
    const char *best = NULL, *sgr = NULL;
    gsize len = 0;
    for (const char *p = strstr(line, ": "); p && !best; p = strstr(p + 1, ": ")) {
        const char *w = p + 2;
        for (guint i = 0; i < G_N_ELEMENTS(words) && !best; i++) {
            gsize n = strlen(words[i]);
            if (strncmp(w, words[i], n) == 0 && w[n] == ':') {
                best = w, len = n;
                sgr = i < 2 ? SGR_ERROR : i == 2 ? SGR_WARNING : SGR_NOTE;
            }
        }
        for (int k = 0; k < HG_HAZARD_N_KINDS && !best; k++) {
            const char *name = hg_hazard_kind_name(k);
            gsize n = strlen(name);
            if (strncmp(w, name, n) == 0 && w[n] == ':') {
                const char *level = hg_hazard_kind_level(k);
                best = w, len = n;
                sgr = strcmp(level, "error") == 0 ? SGR_ERROR : strcmp(level, "warning") == 0 ? SGR_WARNING : SGR_NOTE;
            }
        }
    }
    if (!best)
        return g_strdup(line);
    return g_strdup_printf("%.*s%s%.*s%s%s", (int)(best - line), line, sgr, (int)len, best, SGR_RESET, best + len);
}

/* ---------------------------------------------------------------- progress */

double
cli_progress_after(void)
{
    const char *s = g_getenv("HALFGUARD_TEST_PROGRESS_AFTER");
    return s && *s ? g_ascii_strtod(s, NULL) : 1.0;
}

void
cli_progress_start(CliProgress *p, const char *what, guint total)
{
    *p = (CliProgress){isatty(STDERR_FILENO) && !cli_quiet, FALSE, g_get_monotonic_time(), total, what};
}

void
cli_progress_step(CliProgress *p, guint done, const char *item)
{
    if (!p->on || (double)(g_get_monotonic_time() - p->t0) / 1e6 < cli_progress_after())
        return;
    g_autofree char *safe = hg_escape_text(item ? item : "");
    fprintf(stderr, "\r[%u/%u] %s: %s\033[K", done, p->total, p->what, safe);
    fflush(stderr);
    p->shown = TRUE;
}

void
cli_progress_end(CliProgress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = FALSE;
}

/* How many input names one unranged-input line shows before "and N more". */
#define UNRANGED_NAMES_SHOWN 8

/* Print one line to f. Whatever a model or a file name put in it is escaped (hg_escape_text), so that a
 * name cannot forge a line of its own or send the terminal escapes. */
void G_GNUC_PRINTF(2, 3)
print_line(FILE *f, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *line = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_autofree char *safe = hg_escape_text(line);
    g_autofree char *shown = cli_colourize(f, safe);
    fprintf(f, "%s\n", shown);
}

/* Print "FILE: message" for a failed model, the way compilers do. An output's error names the output
 * itself. */
void
report_error(const char *file, const GError *error)
{
    g_autofree char *msg = NULL;
    if (g_error_matches(error, HG_ERROR, HG_ERROR_OUTPUT))
        msg = g_strdup(error->message);
    else
        msg = g_strdup_printf("%s: %s", file ? file : "halfguard", error->message);
    g_autofree char *safe = hg_escape_text(msg);
    if (cli_colour(stderr))
        fprintf(stderr, SGR_ERROR "%s" SGR_RESET "\n", safe);
    else
        fprintf(stderr, "%s\n", safe);
}

/* Where s has a quoted name at p ('NAME' after a space or a bracket, before one or the end; not the
 * apostrophe of FP16's), its closing quote; else NULL. */
static const char *
quoted_at(const char *s, const char *p)
{
    if (*p != '\'' || (p != s && !strchr(" ([", p[-1])))
        return NULL;
    for (const char *q = strchr(p + 1, '\''); q; q = strchr(q + 1, '\''))
        if (!q[1] || strchr(" ,;:)]", q[1]))
            return q;
    return NULL;
}

/* s with each quoted name blanked: what identical messages share. New string. */
static char *
blank_quoted(const char *s)
{
    GString *out = g_string_new(NULL);
    for (const char *p = s; *p; p++) {
        const char *close = quoted_at(s, p);
        g_string_append(out, close ? "''" : (char[]){*p, 0});
        if (close)
            p = close;
    }
    return g_string_free(out, FALSE);
}

/* The first name quoted in s, or "". New string. */
static char *
first_quoted(const char *s)
{
    for (const char *p = s; *p; p++) {
        const char *close = quoted_at(s, p);
        if (close)
            return g_strndup(p + 1, (gsize)(close - p - 1));
    }
    return g_strdup("");
}

/* Print what the loader accepted but flagged, and (shapes non-NULL: check, convert) the nodes whose
 * shape rule found their inputs inconsistent. */
void
report_warnings(const char *file, HgModel *m, const HgCheckOptions *co)
{
    if (cli_quiet)
        return;
    /* Identical warnings (the same words but for the names quoted in them) are one line, unless -v:
     * gpt2_past has 48 values defined twice. */
    guint n = m->warnings->len;
    g_autofree char **keys = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
        keys[i] = blank_quoted(m->warnings->pdata[i]);
    g_autofree gboolean *said = g_new0(gboolean, n + 1);
    for (guint i = 0; i < n; i++) {
        if (said[i])
            continue;
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        for (guint k = i; k < n && !cli_verbose; k++)
            if (!said[k] && strcmp(keys[k], keys[i]) == 0) {
                said[k] = TRUE;
                g_ptr_array_add(names, first_quoted(m->warnings->pdata[k]));
            }
        if (names->len <= 1) {
            print_line(stderr, "%s: warning: %s", file, (const char *)m->warnings->pdata[i]);
            continue;
        }
        g_autoptr(GString) also = g_string_new(NULL);
        for (guint k = 1; k < names->len && k <= 3; k++)
            g_string_append_printf(also, "%s'%s'", k > 1 ? ", " : "", (const char *)names->pdata[k]);
        if (names->len > 4)
            g_string_append_printf(also, " and %u more", names->len - 4);
        print_line(stderr, "%s: warning: %u × %s (also %s)", file, names->len,
                   (const char *)m->warnings->pdata[i], also->str);
    }
    for (guint i = 0; i < n; i++)
        g_free(keys[i]);
    g_autoptr(GPtrArray) shape = co ? hg_check_shape_warnings(m, co->shapes, NULL) : NULL;
    for (guint i = 0; shape && i < shape->len; i++)
        print_line(stderr, "%s: warning: %s", file, (const char *)shape->pdata[i]);
}

/* One note for the hazards convert rewrites away by itself, by pass and kind. */
void
report_fixed(const char *file, const HgCheckResult *r, gboolean shown)
{
    if (cli_quiet)
        return;
    g_autoptr(GString) what = g_string_new(NULL);
    guint total = 0;
    g_autoptr(GHashTable) counted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < r->hazards->len; i++) {
        const HgHazard *h = r->hazards->pdata[i];
        if (!h->fixed_by || h->suppressed)
            continue;
        total++;
        g_autofree char *key = g_strdup_printf("%s\x01%s", h->fixed_by, hg_hazard_kind_name(h->kind));
        if (!g_hash_table_add(counted, g_strdup(key)))
            continue;
        guint n = 0;
        for (guint k = i; k < r->hazards->len; k++) {
            const HgHazard *o = r->hazards->pdata[k];
            n += o->fixed_by && !o->suppressed && o->kind == h->kind && strcmp(o->fixed_by, h->fixed_by) == 0;
        }
        g_string_append_printf(what, "%s%s: %u %s", what->len ? ", " : "", h->fixed_by, n,
                               hg_hazard_kind_name(h->kind));
    }
    if (total)
        print_line(stderr, "%s: note: %u hazard%s that convert rewrites away by itself (%s) %s not counted%s",
                file, total, total == 1 ? "" : "s", what->str, total == 1 ? "is" : "are",
                shown ? "" : "; --show-fixed lists them");
}

/* One note per op the analysis has no row for, and one per length it assumed for a symbolic dim. */
void
report_unknown_ops(const char *file, const HgCheckResult *r)
{
    if (cli_quiet)
        return;
    for (guint i = 0; r->unknown_ops && i < r->unknown_ops->len; i++) {
        g_autofree char *note = hg_check_unknown_op_note(r->unknown_ops->pdata[i]);
        print_line(stderr, "%s: note: %s", file, note);
    }
    for (guint i = 0; r->assumptions && i < r->assumptions->len; i++)
        print_line(stderr, "%s: note: bounds assume %s", file, (const char *)r->assumptions->pdata[i]);
}

/* One note per input whose range the model itself gives (derived) or that needs none. */
void
report_derived(const char *file, const GPtrArray *inputs)
{
    if (cli_quiet)
        return;
    for (guint i = 0; inputs && i < inputs->len; i++) {
        const HgInputInfo *in = inputs->pdata[i];
        const char *dt = hg_dtype_name(in->dtype) ? hg_dtype_name(in->dtype) : "?";
        if (in->source == HG_INPUT_RANGE_DERIVED)
            print_line(stderr, "%s: note: input '%s' (%s): range [%g, %g] derived: %s", file, in->name, dt,
                    in->lo, in->hi, in->why);
        else if (in->source == HG_INPUT_RANGE_UNNEEDED)
            print_line(stderr, "%s: note: input '%s' (%s) needs no range: %s", file, in->name, dt, in->why);
    }
}

/* Parse a subcommand's options. On --help prints and returns FALSE with *exit_code 0. */
/* " (did you mean --NAME?)" for the first unknown long option of args that, with '_' for '-' and
 * case ignored (AutoCast's --keep_io_types, Polygraphy's spellings), is an option of entries; or NULL. */
static char *
option_hint(const GOptionEntry *entries, char **args)
{
    for (guint i = 1; args && args[i]; i++) {
        if (!g_str_has_prefix(args[i], "--") || !args[i][2])
            continue;
        g_autofree char *word = g_strndup(args[i] + 2, strcspn(args[i] + 2, "="));
        g_strdelimit(word, "_", '-');
        for (const GOptionEntry *e = entries; e->long_name; e++)
            if (g_ascii_strcasecmp(word, e->long_name) == 0 && strncmp(args[i] + 2, e->long_name, strlen(word)) != 0)
                return g_strdup_printf(" (did you mean --%s?)", e->long_name);
    }
    return NULL;
}

gboolean
parse_options(const Command *cmd, GOptionEntry *entries, int *argc, char ***argv, int *exit_code)
{
    g_autofree char *prgname = g_strdup_printf("halfguard %s", cmd->name);
    g_set_prgname(prgname);
    g_autoptr(GOptionContext) ctx = g_option_context_new(cmd->args);
    g_option_context_set_summary(ctx, cmd->summary);
    g_option_context_set_description(ctx, cmd->description);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    /* The words given, for a suggestion: parsing reorders argv. */
    g_auto(GStrv) given = g_strdupv(*argv);
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        g_autofree char *hint = error->code == G_OPTION_ERROR_UNKNOWN_OPTION ? option_hint(entries, given) : NULL;
        fprintf(stderr, "halfguard %s: %s%s\nTry 'halfguard help %s'.\n", cmd->name, error->message,
                hint ? hint : "", cmd->name);
        *exit_code = EXIT_ERROR;
        return FALSE;
    }
    colour_decide(); /* here, before convert's workers fork with pipes for stderr */
    return TRUE;
}






/* Does stats hold data of the caller's (not synthetic) for input `name`? */
static gboolean
has_real_data(HgStats *stats, const char *name)
{
    const HgTensorStats *s = stats ? hg_stats_get(stats, name) : NULL;
    return s && s->samples > s->synthetic;
}

/* Inputs of m (HgInputInfo*) whose values reach float math with neither a range nor data in stats
 * (covered: --calib data gave every input its values). */
static GPtrArray *
inputs_without_data(HgModel *m, const HgCheckOptions *co, HgStats *stats, gboolean covered, GError **error)
{
    g_autoptr(GPtrArray) infos = hg_check_inputs(m, co, error);
    if (!infos)
        return NULL;
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hg_input_info_free);
    gsize n = 0;
    g_autofree gpointer *all = g_ptr_array_steal(infos, &n); /* one pass: 10^5 inputs, no memmove each */
    for (gsize i = 0; i < n; i++) {
        HgInputInfo *in = all[i];
        if (in->source == HG_INPUT_RANGE_NONE && in->reaches_float && !covered && !has_real_data(stats, in->name))
            g_ptr_array_add(out, in);
        else
            hg_input_info_free(in);
    }
    return out;
}


void
synthetic_clear(Synthetic *syn)
{
    g_clear_pointer(&syn->failed, g_free);
}

static void
range_spec_clear(gpointer p)
{
    g_free(((HgInputRangeSpec *)p)->name);
}

/* The configuration that applies to model_path: --config's, none with --no-config, else the nearest
 * .halfguard.ini at or above its folder (each file loaded once). *cfg is NULL when none applies. FALSE
 * with the file's error (once; later models it applies to say it was reported). */
static gboolean
config_for(Analysis *a, const char *model_path, const HgCheckConfig **cfg, GError **error)
{
    *cfg = a->fixed;
    if (a->fixed || a->no_config)
        return TRUE;
    g_autofree char *cpath = hg_check_config_find(model_path);
    if (!cpath)
        return TRUE;
    if (!a->found)
        a->found = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)hg_check_config_free);
    gpointer hit = NULL;
    if (g_hash_table_lookup_extended(a->found, cpath, NULL, &hit)) {
        if (!hit)
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: invalid configuration (reported above)", cpath);
        *cfg = hit;
        return hit != NULL;
    }
    HgCheckConfig *loaded = hg_check_config_load(cpath, error);
    g_hash_table_insert(a->found, g_strdup(cpath), loaded);
    *cfg = loaded;
    return loaded != NULL;
}

/* Append to ranges what cfg gives model_path, but for inputs m does not have: a [ranges *] group
 * names the inputs of many models. (A name nothing matches leaves its input unranged, and the
 * unranged-input finding names that input, so a typo does not go unseen.) */
static void
config_ranges(const HgCheckConfig *cfg, const char *model_path, HgModel *m, GArray *ranges)
{
    guint given = ranges->len;
    hg_check_config_ranges(cfg, model_path, ranges);
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    for (guint i = given; i < ranges->len; i++) {
        const char *name = g_array_index(ranges, HgInputRangeSpec, i).name;
        gboolean known = strcmp(name, "*") == 0;
        for (guint k = 0; k < feeds->len && !known; k++)
            known = hg_input_range_rank(name, ((HgValueDecl *)feeds->pdata[k])->value->name) > 0;
        if (!known)
            g_array_remove_index(ranges, i--);
    }
}


void
model_setup_clear(ModelSetup *ms)
{
    g_clear_pointer(&ms->ranges, g_array_unref);
    g_clear_pointer(&ms->dim_max, g_strfreev);
    g_clear_pointer(&ms->samples, g_ptr_array_unref);
}

/* Fill ms for model m (read from path): options on the command line win over the configuration's.
 * FALSE with an error: an invalid configuration, or calibration data of the configuration's that
 * cannot be read. */
gboolean
model_setup(Analysis *a, HgModel *m, const char *path, ModelSetup *ms, GError **error)
{
    if (!config_for(a, path, &ms->cfg, error))
        return FALSE;
    ms->ranges = g_array_new(FALSE, TRUE, sizeof(HgInputRangeSpec));
    g_array_set_clear_func(ms->ranges, range_spec_clear);
    for (guint i = 0; a->specs && i < a->specs->len; i++) {
        const HgInputRangeSpec *s = &g_array_index(a->specs, HgInputRangeSpec, i);
        HgInputRangeSpec copy = {g_strdup(s->name), s->lo, s->hi};
        g_array_append_val(ms->ranges, copy);
    }
    if (ms->cfg)
        config_ranges(ms->cfg, path, m, ms->ranges);
    ms->dim_max = a->dim_max ? g_strdupv(a->dim_max) : ms->cfg ? hg_check_config_dim_max(ms->cfg, path) : NULL;
    ms->samples = g_ptr_array_new_with_free_func((GDestroyNotify)hg_samples_free);
    g_auto(GStrv) calib = !(a->samples && a->samples->len) && ms->cfg ? hg_check_config_calib(ms->cfg, path) : NULL;
    for (guint i = 0; calib && calib[i]; i++) {
        HgSamples *smp = hg_samples_open(calib[i], error);
        if (!smp) {
            g_prefix_error(error, "calib of %s: ", hg_check_config_path(ms->cfg));
            return FALSE;
        }
        g_ptr_array_add(ms->samples, smp);
    }
    if (!calib)
        for (guint i = 0; a->samples && i < a->samples->len; i++)
            g_ptr_array_add(ms->samples, hg_samples_ref(a->samples->pdata[i]));
    double margin = a->margin > 0 ? a->margin : ms->cfg ? hg_check_config_margin(ms->cfg) : 0;
    double threshold = a->threshold > 0 ? a->threshold : ms->cfg ? hg_check_config_threshold(ms->cfg) : 0;
    ms->co = (HgCheckOptions){(HgInputRangeSpec *)(void *)ms->ranges->data, ms->ranges->len, NULL, margin,
                              threshold, (const char *const *)a->shapes, a->accumulate_model,
                              (const char *const *)ms->dim_max};
    return TRUE;
}

/* Merge one sample's statistics into *st (taking part; the first becomes *st). A NULL part (its run
 * failed) drops *st: FALSE. */
static gboolean
stats_absorb(HgStats **st, HgStats *part)
{
    if (!part) {
        g_clear_pointer(st, hg_stats_unref);
        return FALSE;
    }
    if (*st) {
        hg_stats_merge(*st, part);
        hg_stats_unref(part);
    } else {
        *st = part;
    }
    return TRUE;
}

/* hg_stats_collect_samples, one sample at a time, with a progress line (one sample's statistics
 * merged into the first's: the same table). */
HgStats *
cli_collect_samples(HgModel *m, const GPtrArray *samples, int threads, GError **error)
{
    CliProgress p;
    cli_progress_start(&p, "calibrating on sample", samples->len);
    if (!p.on || samples->len <= 1)
        return hg_stats_collect_samples(m, samples, threads, error);
    HgStats *st = NULL;
    for (guint i = 0; i < samples->len; i++) {
        const HgSample *smp = samples->pdata[i];
        cli_progress_step(&p, i, smp->label);
        g_autoptr(GPtrArray) one = g_ptr_array_new();
        g_ptr_array_add(one, (gpointer)smp);
        HgStats *part = hg_stats_collect_samples(m, one, threads, error);
        if (!stats_absorb(&st, part))
            break;
    }
    cli_progress_end(&p);
    return st;
}

/* hg_stats_collect_synthetic, one sample (seed) at a time, with a progress line. */
HgStats *
cli_collect_synthetic(HgModel *m, const HgCheckOptions *co, guint n, guint64 seed, int threads, GError **error)
{
    CliProgress p;
    cli_progress_start(&p, "calibrating on synthetic sample", n);
    if (!p.on || n <= 1)
        return hg_stats_collect_synthetic(m, co, n, seed, threads, error);
    HgStats *st = NULL;
    for (guint i = 0; i < n; i++) {
        g_autofree char *label = g_strdup_printf("seed %" G_GUINT64_FORMAT, seed + i);
        cli_progress_step(&p, i, label);
        HgStats *part = hg_stats_collect_synthetic(m, co, 1, seed + i, threads, error);
        if (!stats_absorb(&st, part))
            break;
    }
    cli_progress_end(&p);
    return st;
}

/* Statistics for one model with its setup ms: --stats files (merged once by the caller), runs on
 * its calibration data, and synthetic samples: --calib-random N, or for convert (by_default)
 * DEFAULT samples when an input whose values reach float math has neither a range nor data. convert
 * with --calib-random 0 refuses such an input instead. Returns the table to use (file_stats itself,
 * a new table in *owned, or NULL), FALSE on error. */
gboolean
model_stats(HgModel *m, const Analysis *a, const ModelSetup *ms, gboolean by_default, HgStats **use,
            HgStats **owned, Synthetic *syn, GError **error)
{
    const HgCheckOptions *co = &ms->co;
    *owned = NULL;
    *use = a->file_stats;
    memset(syn, 0, sizeof *syn);
    if (ms->samples->len) {
        g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
        for (guint i = 0; i < ms->samples->len; i++) {
            g_autoptr(GPtrArray) part = hg_samples_feeds(ms->samples->pdata[i], m, TRUE, error);
            if (!part)
                return FALSE;
            while (part->len)
                g_ptr_array_add(all, g_ptr_array_steal_index(part, 0));
        }
        *owned = cli_collect_samples(m, all, a->threads, error);
        if (!*owned)
            return FALSE;
        if (a->file_stats)
            hg_stats_merge(*owned, a->file_stats);
        *use = *owned;
    }
    guint n = a->calib_random > 0 ? (guint)a->calib_random : 0;
    if (by_default && a->calib_random <= 0) {
        g_autoptr(GPtrArray) bare = inputs_without_data(m, co, *use, ms->samples->len > 0, error);
        if (!bare)
            return FALSE;
        if (bare->len && a->calib_random == 0) {
            g_autoptr(GString) names = g_string_new(NULL);
            for (guint i = 0; i < bare->len && i < UNRANGED_NAMES_SHOWN; i++)
                g_string_append_printf(names, "%s'%s'", i ? ", " : "", ((HgInputInfo *)bare->pdata[i])->name);
            if (bare->len > UNRANGED_NAMES_SHOWN)
                g_string_append_printf(names, " and %u more", bare->len - UNRANGED_NAMES_SHOWN);
            g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                        "input%s %s ha%s no range and no data, and --calib-random 0 forbids synthetic data: "
                        "give -r NAME=LO:HI, --calib DATA, or a [ranges] group in .halfguard.ini",
                        bare->len > 1 ? "s" : "", names->str, bare->len > 1 ? "ve" : "s");
            return FALSE;
        }
        if (bare->len) {
            n = HG_SYNTH_DEFAULT_SAMPLES;
            syn->by_default = TRUE;
        }
    }
    if (!n)
        return TRUE;
    g_autoptr(GError) e = NULL;
    g_autoptr(HgStats) synth = cli_collect_synthetic(m, co, n, (guint64)a->seed, a->threads, &e);
    if (!synth) {
        /* convert's own choice failing is no error: it goes on, and says what its decisions then
         * rest on. What the user asked for failing is. */
        if (!syn->by_default) {
            g_propagate_prefixed_error(error, g_steal_pointer(&e), "--calib-random: ");
            return FALSE;
        }
        syn->failed = g_strdup(e->message);
        return TRUE;
    }
    syn->samples = n;
    if (!*use) {
        *owned = g_steal_pointer(&synth);
    } else {
        if (!*owned)
            *owned = hg_stats_copy(*use);
        hg_stats_merge(*owned, synth);
    }
    *use = *owned;
    return TRUE;
}

/* How to give inputs a range (name: the one input, when not several): the option, and the .halfguard.ini group
 * that would apply (config: the file that applies to model_path, or NULL for one beside the model).
 * New string. */
static char *
range_fix(const char *name, gboolean several, const char *model_path, const char *config)
{
    g_autofree char *abs = g_canonicalize_filename(model_path, NULL);
    g_autofree char *dir = config ? g_path_get_dirname(config) : g_path_get_dirname(abs);
    g_autofree char *cdir = g_canonicalize_filename(dir, NULL);
    gsize n = strlen(cdir);
    const char *rel = strncmp(abs, cdir, n) == 0 && abs[n] == '/' ? abs + n + 1 : abs;
    g_autofree char *ini = config ? g_strdup(config) : g_build_filename(dir, ".halfguard.ini", NULL);
    if (several)
        return g_strdup_printf("-r 'NAME=LO:HI' for each (or --calib DATA), or 'NAME = LO:HI' lines under "
                               "[ranges %s] in %s", rel, ini);
    return g_strdup_printf("-r '%s=LO:HI' (or --calib DATA), or '%s = LO:HI' under [ranges %s] in %s", name,
                           name, rel, ini);
}

/* The notes on every input whose values reach float math without a range: what was assumed for it
 * (what synthetic inputs drew), and what fixes it; inputs with the same element type and the same
 * assumption share one line. covered: --calib data gave every input its values. */
void
report_unranged(const char *file, const GPtrArray *inputs, HgStats *stats, gboolean covered,
                const Synthetic *syn, gint64 seed, const char *config)
{
    if (cli_quiet)
        return;
    guint n = inputs ? inputs->len : 0;
    g_autofree gboolean *done = g_new0(gboolean, n + 1);
    for (guint i = 0; i < n; i++) {
        const HgInputInfo *in = inputs->pdata[i];
        if (done[i] || in->source != HG_INPUT_RANGE_NONE || !in->reaches_float)
            continue;
        gboolean data = covered || has_real_data(stats, in->name);
        g_autofree char *draw = !data && syn->samples ? hg_synth_describe(in) : NULL;
        g_autoptr(GString) names = g_string_new(NULL);
        guint count = 0;
        for (guint k = i; k < n; k++) {
            const HgInputInfo *o = inputs->pdata[k];
            if (done[k] || o->source != HG_INPUT_RANGE_NONE || !o->reaches_float || o->dtype != in->dtype ||
                (covered || has_real_data(stats, o->name)) != data)
                continue;
            g_autofree char *odraw = !data && syn->samples ? hg_synth_describe(o) : NULL;
            if (g_strcmp0(odraw, draw) != 0)
                continue;
            done[k] = TRUE;
            /* A model with 10^5 inputs gets one line, not a megabyte: the first few, then a count. */
            if (count < UNRANGED_NAMES_SHOWN)
                g_string_append_printf(names, "%s'%s'", count ? ", " : "", o->name);
            count++;
        }
        if (count > UNRANGED_NAMES_SHOWN)
            g_string_append_printf(names, " and %u more", count - UNRANGED_NAMES_SHOWN);
        const char *dt = hg_dtype_name(in->dtype) ? hg_dtype_name(in->dtype) : "?";
        g_autofree char *fix = range_fix(in->name, count > 1, file, config);
        const char *s = count > 1 ? "s" : "", *has = count > 1 ? "have" : "has";
        if (data)
            print_line(stderr, "%s: note: input%s %s (%s) %s no range: decided on the calibration data's "
                    "observations; fix: %s", file, s, names->str, dt, has, fix);
        else if (draw)
            print_line(stderr, "%s: warning: input%s %s (%s) %s no range and no data: assumed %s (%u synthetic "
                    "sample%s, seed %" G_GINT64_FORMAT "%s); what rests on %s is marked synthetic; fix: %s",
                    file, s, names->str, dt, has, draw, syn->samples, syn->samples == 1 ? "" : "s", seed,
                    syn->by_default ? ", convert's default" : "", count > 1 ? "them" : "it", fix);
        else
            print_line(stderr, "%s: %s: input%s %s (%s) %s no range and no data: nothing is assumed, so what is "
                    "computed from %s goes unchecked%s%s; fix: %s", file, syn->failed ? "warning" : "note", s,
                    names->str, dt, has, count > 1 ? "them" : "it",
                    syn->failed ? ", and no synthetic data could be drawn: " : "", syn->failed ? syn->failed : "",
                    fix);
    }
}

/* Parse the shared options after the command's own: the ranges (a mistake is a usage error with the
 * command's hint) and the --stats files merged. FALSE after printing the problem. */
gboolean
analysis_prepare(Analysis *a, const Command *cmd)
{
    g_autoptr(GError) error = NULL;
    a->specs = g_array_new(FALSE, TRUE, sizeof(HgInputRangeSpec));
    g_array_set_clear_func(a->specs, range_spec_clear);
    const char *usage =
        a->margin < 0 || a->threshold < 0 ? "--margin and --threshold must be positive" : NULL;
    if (!usage && a->threads < 0)
        usage = "--threads takes a count, 1 or more (0: all cores)";
    if (!usage && a->calib_random < -1)
        usage = "--calib-random and --random take a count, 0 or more";
    if (!usage && a->config && a->no_config)
        usage = "give --config or --no-config, not both";
    for (guint i = 0; !usage && a->dim_max && a->dim_max[i]; i++)
        if (!hg_dim_max_parse(a->dim_max[i], NULL, NULL, &error))
            usage = error->message;
    if (!usage && a->accumulate && strcmp(a->accumulate, "targets") != 0 && strcmp(a->accumulate, "fp16") != 0)
        usage = "--accumulate must be targets or fp16";
    a->accumulate_model = a->accumulate && strcmp(a->accumulate, "fp16") == 0 ? HG_CHECK_ACCUMULATE_FP16
                                                                                : HG_CHECK_ACCUMULATE_TARGETS;
    for (guint i = 0; !usage && a->ranges && a->ranges[i]; i++) {
        HgInputRangeSpec spec;
        if (!hg_input_range_parse(a->ranges[i], &spec, &error))
            usage = error->message;
        else
            g_array_append_val(a->specs, spec);
    }
    if (usage) {
        fprintf(stderr, "halfguard %s: %s\nTry 'halfguard help %s'.\n", cmd->name, usage, cmd->name);
        return FALSE;
    }
    if (a->config && !(a->fixed = hg_check_config_load(a->config, &error))) {
        report_error(NULL, error);
        return FALSE;
    }
    /* The calibration files are read (and a malformed one refused) before any model is. */
    a->samples = g_ptr_array_new_with_free_func((GDestroyNotify)hg_samples_free);
    for (guint i = 0; a->calib && a->calib[i]; i++) {
        HgSamples *smp = hg_samples_open(a->calib[i], &error);
        if (!smp) {
            print_line(stderr, "%s", error->message); /* it names the file */
            return FALSE;
        }
        g_ptr_array_add(a->samples, smp);
    }
    for (guint i = 0; a->stats && a->stats[i]; i++) {
        HgStats *st = hg_stats_load(a->stats[i], &error);
        if (!st) {
            print_line(stderr, "%s", error->message); /* it names the file */
            return FALSE;
        }
        if (a->file_stats) {
            hg_stats_merge(a->file_stats, st);
            hg_stats_unref(st);
        } else {
            a->file_stats = st;
        }
    }
    return TRUE;
}

void
analysis_clear(Analysis *a)
{
    g_strfreev(a->ranges);
    g_strfreev(a->calib);
    g_strfreev(a->stats);
    g_strfreev(a->shapes);
    g_strfreev(a->dim_max);
    g_free(a->accumulate);
    g_free(a->config);
    g_clear_pointer(&a->fixed, hg_check_config_free);
    g_clear_pointer(&a->found, g_hash_table_unref);
    g_clear_pointer(&a->specs, g_array_unref);
    g_clear_pointer(&a->samples, g_ptr_array_unref);
    g_clear_pointer(&a->file_stats, hg_stats_unref);
}
