/* hg_model_validate: what the loader rejects in a graph tree it has built (tensor sizes that do not
 * match their dims, then hg_graph_verify's invariants). The protobuf loader and the text parser both
 * end with it, so a model is the same model whichever form it was read from.
 */
#include "halfguard/io.h"
#include "ir_private.h"

typedef struct {
    GError **error;
    gboolean ok;
} ValidateCtx;

static gboolean
check_tensor(const HgTensor *t, const char *what, GError **error)
{
    const char *label = t->name ? t->name : what;
    if (hg_numel(t->rank, t->dims) < 0) {
        g_autofree char *ds = hg_dims_string(t->rank, t->dims);
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                    "tensor '%s': dims %s are negative or their product overflows", label, ds);
        return FALSE;
    }
    if (t->storage == HG_STORAGE_RAW || t->storage == HG_STORAGE_TYPED ||
        t->storage == HG_STORAGE_EXTERNAL) {
        gint64 want = hg_tensor_expected_bytes(t);
        if (want < 0 || (guint64)want != t->nbytes) {
            g_autofree char *ds = hg_dims_string(t->rank, t->dims);
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID,
                        "tensor '%s': holds %" G_GSIZE_FORMAT " bytes but %s %s needs %" G_GINT64_FORMAT,
                        label, t->nbytes, hg_dtype_name(t->dtype) ? hg_dtype_name(t->dtype) : "?", ds,
                        want);
            return FALSE;
        }
    }
    return TRUE;
}

static void
validate_graph(HgGraph *g, gpointer data)
{
    ValidateCtx *c = data;
    if (!c->ok)
        return;
    for (guint i = 0; i < g->initializers->len && c->ok; i++)
        c->ok = check_tensor(g->initializers->pdata[i], "initializer", c->error);
    for (guint i = 0; i < g->nodes->len && c->ok; i++) {
        HgNode *n = g->nodes->pdata[i];
        for (guint k = 0; k < n->attrs->len && c->ok; k++) {
            HgAttr *a = n->attrs->pdata[k];
            if (a->t)
                c->ok = check_tensor(a->t, a->name ? a->name : "attribute", c->error);
            for (guint j = 0; a->tensors && j < a->tensors->len && c->ok; j++)
                c->ok = check_tensor(a->tensors->pdata[j], a->name ? a->name : "attribute", c->error);
        }
    }
}

gboolean
hg_model_validate(HgModel *m, GError **error)
{
    g_return_val_if_fail(m != NULL, FALSE);
    if (!m->graph)
        return TRUE;
    ValidateCtx c = {error, TRUE};
    hg_graph_foreach(m->graph, validate_graph, &c);
    return c.ok && hg_graph_verify(m->graph, error);
}
