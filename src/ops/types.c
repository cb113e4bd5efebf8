/* The op type-signature table (types.def, generated) and its lookups. */
#include "ops/types.h"

#include <string.h>

#include "ops/types.def"

static const char *
norm_domain(const char *domain)
{
    return !domain || strcmp(domain, "ai.onnx") == 0 ? "" : domain;
}

static int
cmp_key(const HgOpSchema *s, const char *domain, const char *name)
{
    int c = strcmp(s->domain, domain);
    return c ? c : strcmp(s->name, name);
}

/* Index of the first row of (domain, name), or -1. The table is sorted by domain, name (as strcmp
 * orders them) and version. */
static gssize
first_row(const char *domain, const char *name)
{
    gsize lo = 0, hi = G_N_ELEMENTS(schema_table);
    while (lo < hi) {
        gsize mid = lo + (hi - lo) / 2;
        if (cmp_key(&schema_table[mid], domain, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < G_N_ELEMENTS(schema_table) && cmp_key(&schema_table[lo], domain, name) == 0 ? (gssize)lo : -1;
}

const HgOpSchema *
hg_op_schema(const char *domain, const char *op_type, gint64 opset)
{
    g_return_val_if_fail(op_type != NULL, NULL);
    domain = norm_domain(domain);
    gssize i = first_row(domain, op_type);
    if (i < 0)
        return NULL;
    const HgOpSchema *best = NULL;
    for (gsize k = (gsize)i; k < G_N_ELEMENTS(schema_table); k++) {
        const HgOpSchema *s = &schema_table[k];
        if (cmp_key(s, domain, op_type) != 0 || s->since > opset)
            break;
        best = s;
    }
    return best && !best->deprecated ? best : NULL;
}

const HgOpSchema *
hg_op_schema_nearest(const char *domain, const char *op_type, gint64 opset)
{
    g_return_val_if_fail(op_type != NULL, NULL);
    domain = norm_domain(domain);
    gssize i = first_row(domain, op_type);
    const HgOpSchema *below = NULL, *above = NULL;
    for (gsize k = i < 0 ? G_N_ELEMENTS(schema_table) : (gsize)i; k < G_N_ELEMENTS(schema_table); k++) {
        const HgOpSchema *s = &schema_table[k];
        if (cmp_key(s, domain, op_type) != 0)
            break;
        if (s->deprecated)
            continue;
        if (s->since <= opset)
            below = s;
        else if (!above)
            above = s;
    }
    return below ? below : above;
}

static const HgSigFormal *
formal_at(const HgSigFormal *formals, guint n, guint i)
{
    if (i < n)
        return &formals[i];
    if (n && formals[n - 1].option == HG_SIG_VARIADIC)
        return &formals[n - 1];
    return NULL;
}

const HgSigFormal *
hg_op_schema_input(const HgOpSchema *s, guint i)
{
    g_return_val_if_fail(s != NULL, NULL);
    return formal_at(s->inputs, s->n_inputs, i);
}

const HgSigFormal *
hg_op_schema_output(const HgOpSchema *s, guint i)
{
    g_return_val_if_fail(s != NULL, NULL);
    return formal_at(s->outputs, s->n_outputs, i);
}

gboolean
hg_type_set_has_tensor(const HgTypeSet *set, int dtype)
{
    return dtype > 0 && dtype < 32 && (set->tensor >> dtype & 1);
}

gboolean
hg_op_schema_binds(const HgOpSchema *s, guint out, guint in)
{
    g_return_val_if_fail(s != NULL, FALSE);
    const HgSigFormal *o = hg_op_schema_output(s, out), *i = hg_op_schema_input(s, in);
    return o && i && !o->heterogeneous && !i->heterogeneous && o->param == i->param &&
           !s->params[o->param].literal;
}

int
hg_op_schema_output_dtype(const HgOpSchema *s, guint out, guint n_inputs, const int *in_dtypes)
{
    g_return_val_if_fail(s != NULL, HG_DTYPE_UNDEFINED);
    const HgSigFormal *f = hg_op_schema_output(s, out);
    if (!f || f->heterogeneous)
        return HG_DTYPE_UNDEFINED;
    /* A literal, or a parameter of one type (Shape's T1, Equal's bool): that type, when it is a
     * tensor's. */
    const HgTypeSet *set = &s->params[f->param].allowed;
    guint32 t = set->tensor;
    if (t && !(t & (t - 1)) && !set->seq && !set->other)
        return g_bit_nth_lsf(t, -1);
    for (guint i = 0; i < n_inputs; i++)
        if (in_dtypes[i] != HG_DTYPE_UNDEFINED && hg_op_schema_binds(s, out, i))
            return in_dtypes[i];
    return HG_DTYPE_UNDEFINED;
}
