/* Which hazards convert rewrites away by itself.
 *
 * A hazard that a rewriting pass removes (a decomposed LayerNorm's epsilon once fuse_layernorm keeps
 * it inside LayerNormalization, a float32-min mask fill once clamp_constants makes it -65504 (or a division's floor 2^-23), an
 * integral image once avgpool_integral makes it an AveragePool, an overflow that prescale or rescale
 * scales away, a softplus whose exp stable_softplus keeps at or below 1, shape math that fold_shapes
 * makes constant) is no reason to fail a check: the user
 * needs to do nothing about it. hg_check_mark_fixed runs the passes that come before
 * assign_precision on a copy of the model, with the same options, and after each pass that changed
 * the copy finds which of the original hazards no longer appear there. Hazards that convert handles
 * by keeping nodes FP32 stay what they are: findings.
 *
 * A hazard is the same hazard after a pass when its kind and node are (for an unnamed node: its kind,
 * op type and tensor): passes keep the names of the nodes they do not remove. So is one of the same
 * kind about the same tensor at another node: fusing a decomposed LayerNorm moves the finding that
 * its input's spread is too narrow for FP16 from the Sub that centres it to the LayerNormalization,
 * and the fusion does not make it go away.
 */
#include "halfguard/halfguard.h"

#include <string.h>

static char *
hazard_key(const HgHazard *h)
{
    if (h->node && *h->node)
        return g_strdup_printf("%d\x01%s", h->kind, h->node);
    return g_strdup_printf("%d\x01\x01%s\x01%s", h->kind, h->op ? h->op : "", h->value ? h->value : "");
}

/* The same kind about the same tensor, or NULL where the hazard names none. */
static char *
tensor_key(const HgHazard *h)
{
    return h->value && *h->value ? g_strdup_printf("%d\x02%s", h->kind, h->value) : NULL;
}

/* Mark, in r, the hazards not in now (an analysis of the rewritten copy) with pass. */
static guint
mark_gone(HgCheckResult *r, const HgCheckResult *now, const char *pass)
{
    g_autoptr(GHashTable) present = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < now->hazards->len; i++) {
        g_hash_table_add(present, hazard_key(now->hazards->pdata[i]));
        char *tk = tensor_key(now->hazards->pdata[i]);
        if (tk)
            g_hash_table_add(present, tk);
    }
    guint n = 0;
    for (guint i = 0; i < r->hazards->len; i++) {
        HgHazard *h = r->hazards->pdata[i];
        if (h->fixed_by)
            continue;
        g_autofree char *key = hazard_key(h);
        g_autofree char *tk = tensor_key(h);
        if (!g_hash_table_contains(present, key) && !(tk && g_hash_table_contains(present, tk))) {
            h->fixed_by = g_strdup(pass);
            n++;
        }
    }
    return n;
}

gboolean
hg_check_mark_fixed(HgModel *m, const HgCheckOptions *opts, HgCheckResult *r, GError **error)
{
    g_return_val_if_fail(m != NULL && opts != NULL && r != NULL, FALSE);
    if (!r->hazards->len || !m->graph)
        return TRUE;
    /* The copy, and statistics of its own: the rescaling passes record what calibration saw of
     * the tensors they scale under the new values' names. */
    gsize len = 0;
    g_autofree guint8 *bytes = hg_model_save_bytes(m, &len, error);
    if (!bytes)
        return FALSE;
    g_autoptr(HgModel) copy = hg_model_load_bytes(bytes, len, m->dir, error);
    if (!copy)
        return FALSE;
    g_clear_pointer(&bytes, g_free);
    /* The analyses copy the statistics: the rescaling passes record what calibration saw of the
     * tensors they scale under the new values' names, and the caller's stay as they are. */
    g_autoptr(HgConvertOptions) o = hg_convert_options_new();
    hg_convert_options_set_analysis(o, opts);
    g_autoptr(HgAnalyses) an = hg_analyses_new(o);
    g_autoptr(HgConvertResult) result = hg_convert_result_new();
    guint n_passes;
    const HgPassInfo *passes = hg_pass_list(&n_passes);
    gboolean ok = TRUE;
    guint pending = r->hazards->len;
    for (guint i = 0; ok && pending && i < n_passes && strcmp(passes[i].name, "assign_precision") != 0; i++) {
        const HgPassInfo *p = &passes[i];
        guint before = result->n_changed;
        ok = hg_pipeline_run_passes(copy, &p, 1, o, an, result, NULL, error);
        if (!ok)
            g_prefix_error(error, "while finding what convert fixes, pass %s: ", p->name);
        if (!ok || result->n_changed == before)
            continue;
        HgCheckResult *now = hg_analyses_get(an, copy->graph, error);
        ok = now != NULL;
        if (ok)
            pending -= mark_gone(r, now, p->name);
    }
    return ok;
}
