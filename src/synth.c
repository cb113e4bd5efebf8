/* Synthetic inputs: seeded samples inside the declared input ranges, for the passes that must see
 * what values a model really reaches before they trust a static bound (rescale's probe), and for
 * statistics gathered without calibration data.
 *
 * Each feed gets its declared element type and shape; a dim the model leaves symbolic takes the
 * --shapes pin, else its dim-max (by the dim's name, else the "*" one), else 1. The ranges are the caller's, else those the model implies (src/derive.c: token
 * ids index their table). Values, from GLib's Mersenne Twister seeded with `seed` (the same bytes on
 * every machine):
 *   - a float input with a range: uniform in [lo, hi] (an infinite end is clipped to +-1e4);
 *   - a float input without one: uniform in [-HG_SYNTH_FLOAT_BOUND, HG_SYNTH_FLOAT_BOUND], 64: a
 *     decision on it then keeps FP32 what reaches 512 at unit scale, as AutoCast's default does
 *     (README.md, "Synthetic calibration");
 *   - an integer input with a range: uniform over the integers in it; without one: 0 or 1 (a mask's
 *     values, and a valid index into every table of two rows or more);
 *   - bool: 0 or 1 with equal odds.
 */
#include "halfguard/check.h"
#include "halfguard/run.h"

#include <math.h>
#include <string.h>

#include "derive.h"
#include "shapes.h"

static double
clip_end(double x)
{
    return isinf(x) ? (x > 0 ? 1e4 : -1e4) : x;
}

/* One feed: decl's type, dims from the declaration or the pins (else 1), values drawn from rng. */
static HgTensor *
synth_one(const HgValueDecl *d, const HgShapePin *pins, guint n_pins, const char *const *dim_max,
          const HgInputInfo *info, GRand *rng, GError **error)
{
    const HgType *ty = d->type;
    const char *name = d->value->name;
    if (!ty || ty->kind != HG_TYPE_TENSOR || !ty->has_elem_type || !ty->shape ||
        ty->shape->rank > HG_MAX_RANK) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                    "input '%s': no declared tensor type and shape to draw synthetic values for", name);
        return NULL;
    }
    const HgShapePin *pin = NULL;
    for (guint i = 0; i < n_pins && !pin; i++)
        if (strcmp(pins[i].name, name) == 0)
            pin = &pins[i];
    for (guint i = 0; i < n_pins && !pin; i++)
        if (strcmp(pins[i].name, "*") == 0 && pins[i].rank == ty->shape->rank)
            pin = &pins[i];
    if (pin && pin->rank != ty->shape->rank)
        pin = NULL;
    gint64 dims[HG_MAX_RANK];
    for (guint k = 0; k < ty->shape->rank; k++) {
        const HgDim *dm = &ty->shape->dims[k];
        dims[k] = dm->has_value ? dm->value : pin ? pin->dims[k] : hg_dim_max_lookup(dim_max, dm->param, 1);
    }
    int dtype = ty->elem_type;
    int gen = hg_dtype_is_float(dtype) ? HG_DTYPE_FLOAT : dtype;
    if (gen != HG_DTYPE_FLOAT && gen != HG_DTYPE_BOOL && gen != HG_DTYPE_INT64 && gen != HG_DTYPE_INT32 &&
        gen != HG_DTYPE_INT16 && gen != HG_DTYPE_INT8 && gen != HG_DTYPE_UINT8) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "input '%s': no synthetic values for %s", name,
                    hg_dtype_name(dtype) ? hg_dtype_name(dtype) : "this element type");
        return NULL;
    }
    g_autoptr(HgTensor) t = hg_tensor_new(name, gen, ty->shape->rank, dims);
    if (!t) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "input '%s': its shape is too large", name);
        return NULL;
    }
    gint64 n = hg_tensor_numel(t);
    gboolean ranged = info && (info->source == HG_INPUT_RANGE_GIVEN || info->source == HG_INPUT_RANGE_DERIVED);
    const HgInputInfo *r = ranged ? info : NULL;
    void *data = n ? hg_tensor_data_mut(t) : NULL;
    if (gen == HG_DTYPE_FLOAT) {
        double lo = r ? clip_end(r->lo) : -HG_SYNTH_FLOAT_BOUND, hi = r ? clip_end(r->hi) : HG_SYNTH_FLOAT_BOUND;
        float *f = data;
        for (gint64 i = 0; i < n; i++)
            f[i] = (float)(lo + (hi - lo) * g_rand_double(rng));
    } else if (gen == HG_DTYPE_BOOL) {
        guint8 *b = data;
        for (gint64 i = 0; i < n; i++)
            b[i] = g_rand_boolean(rng) ? 1 : 0;
    } else {
        double lo = r ? ceil(clip_end(r->lo)) : 0, hi = r ? floor(clip_end(r->hi)) : 1;
        if (hi < lo)
            hi = lo;
        for (gint64 i = 0; i < n; i++) {
            gint64 v = (gint64)(lo + floor((hi - lo + 1) * g_rand_double(rng)));
            v = MIN(v, (gint64)hi);
            switch (gen) {
            case HG_DTYPE_INT64: ((gint64 *)data)[i] = v; break;
            case HG_DTYPE_INT32: ((gint32 *)data)[i] = (gint32)CLAMP(v, G_MININT32, G_MAXINT32); break;
            case HG_DTYPE_INT16: ((gint16 *)data)[i] = (gint16)CLAMP(v, G_MININT16, G_MAXINT16); break;
            case HG_DTYPE_INT8: ((gint8 *)data)[i] = (gint8)CLAMP(v, G_MININT8, G_MAXINT8); break;
            default: ((guint8 *)data)[i] = (guint8)CLAMP(v, 0, G_MAXUINT8); break;
            }
        }
    }
    if (gen != dtype)
        return hg_tensor_convert(t, dtype, error);
    return g_steal_pointer(&t);
}

char *
hg_synth_describe(const HgInputInfo *info)
{
    g_return_val_if_fail(info != NULL, NULL);
    gboolean ranged = info->source == HG_INPUT_RANGE_GIVEN || info->source == HG_INPUT_RANGE_DERIVED;
    if (info->dtype == HG_DTYPE_BOOL)
        return g_strdup("0 or 1");
    if (hg_dtype_is_float(info->dtype))
        return ranged ? g_strdup_printf("uniform in [%g, %g]", clip_end(info->lo), clip_end(info->hi))
                      : g_strdup_printf("uniform in [%g, %g]", -HG_SYNTH_FLOAT_BOUND, HG_SYNTH_FLOAT_BOUND);
    if (!ranged)
        return g_strdup("0 or 1");
    double lo = ceil(clip_end(info->lo)), hi = MAX(lo, floor(clip_end(info->hi)));
    return g_strdup_printf("the integers of [%g, %g]", lo, hi);
}

GPtrArray *
hg_synth_feeds(HgModel *m, const HgCheckOptions *opts, guint64 seed, GError **error)
{
    g_return_val_if_fail(m != NULL && m->graph != NULL, NULL);
    g_autoptr(GPtrArray) decls = hg_run_feeds(m);
    /* The ranges: the caller's, else those the model implies (token ids index their table). */
    g_autoptr(HgShapes) shapes = hg_shapes_infer_specs(m->graph, opts ? opts->shapes : NULL, error);
    if (!shapes)
        return NULL;
    g_autoptr(GPtrArray) infos = hg_derive_inputs(m, shapes, opts ? opts->ranges : NULL, opts ? opts->n_ranges : 0);
    g_autoptr(GArray) pins = g_array_new(FALSE, TRUE, sizeof(HgShapePin));
    for (guint i = 0; opts && opts->shapes && opts->shapes[i]; i++) {
        HgShapePin p;
        if (!hg_shape_pin_parse(opts->shapes[i], &p, error)) {
            for (guint k = 0; k < pins->len; k++)
                g_free(g_array_index(pins, HgShapePin, k).name);
            return NULL;
        }
        g_array_append_val(pins, p);
    }
    /* One generator per input, seeded from the seed and the input's position, so adding an input
     * does not change the others' values. */
    GPtrArray *feeds = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint i = 0; i < decls->len && feeds; i++) {
        guint32 key[3] = {(guint32)seed, (guint32)(seed >> 32), i};
        g_autoptr(GRand) rng = g_rand_new_with_seed_array(key, 3);
        HgTensor *t = synth_one(decls->pdata[i], (const HgShapePin *)(void *)pins->data, pins->len,
                                opts ? opts->dim_max : NULL, infos->pdata[i], rng, error);
        if (!t)
            g_clear_pointer(&feeds, g_ptr_array_unref);
        else
            g_ptr_array_add(feeds, t);
    }
    for (guint k = 0; k < pins->len; k++)
        g_free(g_array_index(pins, HgShapePin, k).name);
    return feeds;
}
