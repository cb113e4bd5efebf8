/* hg_convert_file: load, calibrate, convert and save in one call, so that a program using the library
 * never assembles HgCheckOptions, statistics and passes itself. It does what `halfguard convert IN -o
 * OUT --no-config` does for one model; tests/test_pkgconfig.sh checks that the two write the same
 * bytes. (The command line keeps its own path: it reads .halfguard.ini, prints notes between the steps,
 * and converts many models at once.) */
#include "halfguard/halfguard.h"

#include <string.h>

/* Does stats hold data of the caller's (not synthetic) for input `name`? */
static gboolean
has_real_data(HgStats *stats, const char *name)
{
    const HgTensorStats *s = stats ? hg_stats_get(stats, name) : NULL;
    return s && s->samples > s->synthetic;
}

/* The statistics to convert m with: o's --calib data run (and o's own statistics merged in), then
 * synthetic samples when an input reaching float math has neither range nor data, as convert's
 * default. *out is NULL when there are none; FALSE with an error. */
static gboolean
collect(HgModel *m, const HgConvertOptions *o, HgStats **out, GError **error)
{
    const HgCheckOptions *co = hg_convert_options_analysis(o);
    const char *const *calib = hg_convert_options_calib(o);
    g_autoptr(HgStats) owned = NULL;
    HgStats *use = co->stats;
    *out = NULL;
    if (calib && calib[0]) {
        g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
        for (guint i = 0; calib[i]; i++) {
            g_autoptr(HgSamples) smp = hg_samples_open(calib[i], error);
            g_autoptr(GPtrArray) part = smp ? hg_samples_feeds(smp, m, TRUE, error) : NULL;
            if (!part)
                return FALSE;
            while (part->len)
                g_ptr_array_add(all, g_ptr_array_steal_index(part, 0));
        }
        owned = hg_stats_collect_samples(m, all, hg_convert_options_threads(o), error);
        if (!owned)
            return FALSE;
        if (co->stats)
            hg_stats_merge(owned, co->stats);
        use = owned;
    } else {
        /* --calib data covers every input; without it, an input may have nothing to go by. */
        g_autoptr(GPtrArray) infos = hg_check_inputs(m, co, error);
        if (!infos)
            return FALSE;
        gboolean bare = FALSE;
        for (guint i = 0; i < infos->len && !bare; i++) {
            const HgInputInfo *in = infos->pdata[i];
            bare = in->source == HG_INPUT_RANGE_NONE && in->reaches_float && !has_real_data(use, in->name);
        }
        if (bare) {
            /* As convert: synthetic data that cannot be drawn is no error; the decisions then rest on
             * nothing, and the result says so (HgConvertResult.n_assumed). */
            g_autoptr(HgStats) synth = hg_stats_collect_synthetic(m, co, HG_SYNTH_DEFAULT_SAMPLES,
                                                                  hg_convert_options_seed(o),
                                                                  hg_convert_options_threads(o), NULL);
            if (synth && use) {
                owned = hg_stats_copy(use);
                hg_stats_merge(owned, synth);
            } else if (synth) {
                owned = g_steal_pointer(&synth);
            }
            if (owned)
                use = owned;
        }
    }
    *out = use == owned ? g_steal_pointer(&owned) : use ? hg_stats_ref(use) : NULL;
    return TRUE;
}

gboolean
hg_convert_file(const char *in, const char *out, const HgConvertOptions *o, HgConvertResult **result_out,
                GError **error)
{
    g_return_val_if_fail(in != NULL && out != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (result_out)
        *result_out = NULL;
    g_autoptr(HgConvertOptions) defaults = o ? NULL : hg_convert_options_new();
    if (!o)
        o = defaults;
    g_autoptr(GError) e = NULL;
    g_autoptr(HgModel) m = hg_model_load(in, &e);
    g_autoptr(HgStats) stats = NULL;
    if (!m || !collect(m, o, &stats, &e)) {
        g_propagate_prefixed_error(error, g_steal_pointer(&e), "%s: ", in);
        return FALSE;
    }
    g_autoptr(HgConvertOptions) run = hg_convert_options_copy(o);
    hg_convert_options_set_stats(run, stats);
    /* As convert: without statistics, the underflow probe (HgCheckOptions.probe); none where the model
     * cannot run. */
    g_autoptr(HgStats) probe = NULL;
    if (!stats && !hg_convert_options_analysis(o)->probe && m->graph) {
        probe = hg_stats_collect_probe(m, hg_convert_options_analysis(o), hg_convert_options_seed(o),
                                       hg_convert_options_threads(o), NULL);
        hg_convert_options_set_probe(run, probe);
    }
    /* The output keeps a data file: lower writes the converted weights into it directly. */
    hg_model_plan_output(m, out, HG_EXTERNAL_AUTO);
    g_autoptr(HgConvertResult) result = hg_convert(m, run, NULL, &e);
    if (!result) {
        if (e->code != HG_ERROR_USAGE)
            g_prefix_error(&e, "%s: ", in);
        g_propagate_error(error, g_steal_pointer(&e));
        return FALSE;
    }
    if (!hg_model_save(m, out, error))
        return FALSE;
    if (result_out)
        *result_out = g_steal_pointer(&result);
    return TRUE;
}
