/* What convert tells its user: the summary line, the --report JSON, the --emit-trtexec options. */
#include "halfguard/pass.h"

#include <json-glib/json-glib.h>

#include "json_util.h"
#include <math.h>
#include <string.h>

#include "ir_private.h"

/* Notes of passes the figures do not already cover (cleanup, fold_shapes, clamp_constants, ...). */
static void
append_notes(GString *s, const HgConvertResult *ctx, gboolean skip_figured)
{
    for (guint k = 0; k < ctx->notes->len; k++) {
        const HgPassNote *note = ctx->notes->pdata[k];
        gboolean figured = (g_strcmp0(note->pass, "assign_precision") == 0 &&
                            strstr(note->message, " FP32 island")) ||
                           g_strcmp0(note->pass, "lower") == 0 ||
                           (g_strcmp0(note->pass, "fuse_layernorm") == 0 &&
                            g_str_has_prefix(note->message, "fused "));
        if (skip_figured && figured)
            continue;
        g_string_append_printf(s, "%s%s", s->len ? "; " : "", note->message);
    }
}

/* A conversion whose decisions rest on synthetic data or on nothing says so, naming the inputs that
 * had neither range nor data. */
static void
append_sources(GString *s, const HgConvertResult *ctx)
{
    guint n = ctx->decisions ? ctx->decisions->len : 0;
    if (ctx->n_synthetic) {
        g_autoptr(GString) names = g_string_new(NULL);
        for (guint i = 0; ctx->inputs && i < ctx->inputs->len; i++) {
            const HgInputInfo *in = ctx->inputs->pdata[i];
            if (in->source == HG_INPUT_RANGE_NONE && ctx->synthetic_draw->pdata[i])
                g_string_append_printf(names, "%s'%s'", names->len ? ", " : "", in->name);
        }
        g_string_append_printf(s, "; %u of %u decisions rest on synthetic data%s%s%s", ctx->n_synthetic, n,
                               names->len ? " (no range or data for " : "", names->str, names->len ? ")" : "");
    }
    if (ctx->n_assumed)
        g_string_append_printf(s, "; %u of %u decisions rest on no data at all (assumed: unbounded for lack of "
                               "an input range or an op's rule)", ctx->n_assumed, n);
}

char *
hg_convert_result_summary(const HgConvertResult *ctx)
{
    GString *s = g_string_new(NULL);
    if (!ctx->planned) {
        append_notes(s, ctx, FALSE);
        if (!s->len)
            g_string_append(s, "no changes");
        return g_string_free(s, FALSE);
    }
    if (ctx->n_fused_layernorm)
        g_string_append_printf(s, "fused %u LayerNorm; ", ctx->n_fused_layernorm);
    double macs32 = (double)(ctx->macs_total - ctx->macs_fp16);
    double pct32 = ctx->macs_total ? 100.0 * macs32 / (double)ctx->macs_total : 0;
    double pct16 = ctx->macs_total ? 100.0 * (double)ctx->macs_fp16 / (double)ctx->macs_total : 100;
    double wpct = ctx->weight_bytes_total
                      ? 100.0 * (double)ctx->weight_bytes_fp16 / (double)ctx->weight_bytes_total
                      : 100;
    if (ctx->n_macs_unknown) {
        /* A share of the known MACs alone would mislead: the unknown ones are the matrix products. */
        double ppct = ctx->macs_priced_total
                          ? 100.0 * (double)ctx->macs_priced_fp16 / (double)ctx->macs_priced_total
                          : 100;
        g_string_append_printf(s, "%u FP32 island%s (%u node%s); %u Cast%s; FP16: %.3g%% of weight bytes; "
                               "MACs unknown (symbolic dims: %s): FP16 runs %.4g%% of them at %s",
                               ctx->n_fp32_islands, ctx->n_fp32_islands == 1 ? "" : "s", ctx->n_fp32_nodes,
                               ctx->n_fp32_nodes == 1 ? "" : "s", ctx->n_casts, ctx->n_casts == 1 ? "" : "s",
                               wpct, ctx->symbolic_dims ? ctx->symbolic_dims : "unnamed", ppct,
                               ctx->symbolic_priced ? ctx->symbolic_priced : "their priced sizes");
    } else if (ctx->macs_total)
        g_string_append_printf(s, "%u FP32 island%s (%u node%s, %.3g%% of MACs); %u Cast%s; FP16: %.4g%% of "
                               "MACs, %.3g%% of weight bytes", ctx->n_fp32_islands,
                               ctx->n_fp32_islands == 1 ? "" : "s", ctx->n_fp32_nodes,
                               ctx->n_fp32_nodes == 1 ? "" : "s", pct32, ctx->n_casts,
                               ctx->n_casts == 1 ? "" : "s", pct16, wpct);
    else /* no node multiplies or adds: shape math, data movement */
        g_string_append_printf(s, "%u FP32 island%s (%u node%s); %u Cast%s; FP16: %.3g%% of weight bytes "
                               "(no MACs)", ctx->n_fp32_islands,
                               ctx->n_fp32_islands == 1 ? "" : "s", ctx->n_fp32_nodes,
                               ctx->n_fp32_nodes == 1 ? "" : "s", ctx->n_casts, ctx->n_casts == 1 ? "" : "s",
                               wpct);
    append_notes(s, ctx, TRUE);
    append_sources(s, ctx);
    return g_string_free(s, FALSE);
}




static JsonNode *
interval_end(double x)
{
    return isfinite(x) ? json_node_init_double(json_node_alloc(), x) : json_node_init_null(json_node_alloc());
}

gboolean
hg_convert_result_write_report(const HgConvertResult *ctx, const char *model, const char *path, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    hg_json_add_str(b, "format", "halfguard-convert-report");
    hg_json_add_int(b, "version", 1);
    hg_json_add_str(b, "model", model);
    g_autofree char *summary = hg_convert_result_summary(ctx);
    hg_json_add_str(b, "summary", summary);
    json_builder_set_member_name(b, "passes");
    json_builder_begin_array(b);
    for (guint i = 0; i < ctx->notes->len; i++) {
        const HgPassNote *n = ctx->notes->pdata[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "pass", n->pass);
        hg_json_add_str(b, "message", n->message);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "figures");
    json_builder_begin_object(b);
    hg_json_add_int(b, "fused_layernorm", ctx->n_fused_layernorm);
    hg_json_add_int(b, "fp32_islands", ctx->n_fp32_islands);
    hg_json_add_int(b, "fp32_nodes", ctx->n_fp32_nodes);
    hg_json_add_int(b, "casts", ctx->n_casts);
    hg_json_add_int(b, "macs", ctx->macs_total);
    hg_json_add_int(b, "macs_fp16", ctx->macs_fp16);
    hg_json_add_int(b, "macs_unknown_nodes", ctx->n_macs_unknown);
    hg_json_add_str(b, "symbolic_dims", ctx->symbolic_dims);
    hg_json_add_str(b, "symbolic_priced", ctx->symbolic_priced);
    hg_json_add_int(b, "macs_priced", ctx->macs_priced_total);
    hg_json_add_int(b, "macs_priced_fp16", ctx->macs_priced_fp16);
    hg_json_add_int(b, "weight_bytes", ctx->weight_bytes_total);
    hg_json_add_int(b, "weight_bytes_fp16", ctx->weight_bytes_fp16);
    hg_json_add_int(b, "decisions_synthetic", ctx->n_synthetic);
    hg_json_add_int(b, "decisions_assumed", ctx->n_assumed);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "inputs");
    json_builder_begin_array(b);
    for (guint i = 0; ctx->inputs && i < ctx->inputs->len; i++) {
        const HgInputInfo *in = ctx->inputs->pdata[i];
        gboolean ranged = in->source == HG_INPUT_RANGE_GIVEN || in->source == HG_INPUT_RANGE_DERIVED;
        json_builder_begin_object(b);
        hg_json_add_str(b, "name", in->name);
        hg_json_add_str(b, "dtype", hg_dtype_name(in->dtype));
        hg_json_add_str(b, "source", hg_input_range_source_name(in->source));
        json_builder_set_member_name(b, "range");
        if (ranged) {
            json_builder_begin_array(b);
            json_builder_add_value(b, interval_end(in->lo));
            json_builder_add_value(b, interval_end(in->hi));
            json_builder_end_array(b);
        } else {
            json_builder_add_null_value(b);
        }
        hg_json_add_str(b, "why", in->why);
        hg_json_add_str(b, "synthetic", ctx->synthetic_draw->pdata[i]);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "decisions");
    json_builder_begin_array(b);
    for (guint i = 0; ctx->decisions && i < ctx->decisions->len; i++) {
        const HgDecision *d = ctx->decisions->pdata[i];
        json_builder_begin_object(b);
        hg_json_add_str(b, "node", d->node);
        hg_json_add_str(b, "op", d->op);
        hg_json_add_str(b, "precision", d->fp32 ? "fp32" : "fp16");
        hg_json_add_str(b, "reason", d->reason);
        json_builder_set_member_name(b, "interval");
        json_builder_begin_array(b);
        json_builder_add_value(b, interval_end(d->lo));
        json_builder_add_value(b, interval_end(d->hi));
        json_builder_end_array(b);
        hg_json_add_num(b, "macs", d->macs >= 0 ? (double)d->macs : NAN);
        hg_json_add_str(b, "source", hg_bound_source_name(d->source));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return hg_json_save(b, path, error);
}

char *
hg_convert_result_trtexec(const HgConvertResult *ctx)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (guint i = 0; ctx->decisions && i < ctx->decisions->len; i++) {
        const HgDecision *d = ctx->decisions->pdata[i];
        if (d->fp32 && *d->node)
            g_string_append_printf(s, "%s%s:fp32", s->len ? "," : "", d->node);
    }
    if (!s->len)
        return NULL;
    return g_strdup_printf("--precisionConstraints=obey --layerPrecisions=%s", s->str);
}
