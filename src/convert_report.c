/* What convert tells its user: the summary line, the --report JSON, the --emit-trtexec options. */
#include "halfguard/halfguard.h"
#include "halfguard/pass.h"

#include <json-glib/json-glib.h>

#include "json_util.h"
#include <math.h>
#include <string.h>

#include "ir_private.h"

/* What a pass note is about, for the summary and -v. */
typedef enum {
    NOTE_FIGURED, /* the summary's figures already say it (islands, Casts, fused LayerNorms) */
    NOTE_DONE,    /* a rewrite or an edit made */
    NOTE_LEFT,    /* a pattern left as it was */
    NOTE_ASSUMED, /* what the bounds assumed of a symbolic dim (--dim-max): no change, but said */
} NoteKind;

static NoteKind
note_kind(const HgPassNote *note)
{
    if ((g_strcmp0(note->pass, "assign_precision") == 0 && strstr(note->message, " FP32 island")) ||
        (g_strcmp0(note->pass, "lower") == 0 && !g_str_has_prefix(note->message, "converted weights kept in memory")) ||
        (g_strcmp0(note->pass, "fuse_layernorm") == 0 && g_str_has_prefix(note->message, "fused ")))
        return NOTE_FIGURED;
    if (g_str_has_prefix(note->message, "bounds assume "))
        return NOTE_ASSUMED;
    /* "left ...": a pattern a rewriting pass matched and left alone; "kept ...": unknown ops kept FP32 */
    if (g_str_has_prefix(note->message, "left ") || g_str_has_prefix(note->message, "kept "))
        return NOTE_LEFT;
    return NOTE_DONE;
}

static void
count_notes(const HgConvertResult *ctx, guint *done, guint *left)
{
    *done = *left = 0;
    for (guint k = 0; k < ctx->notes->len; k++) {
        NoteKind kind = note_kind(ctx->notes->pdata[k]);
        *done += kind == NOTE_DONE;
        *left += kind == NOTE_LEFT;
    }
}

/* The longest the summary of an unplanned run may make its list of notes. */
#define SUMMARY_NOTES_MAX 160

char *
hg_convert_result_summary(const HgConvertResult *ctx)
{
    GString *s = g_string_new(NULL);
    guint done, left;
    count_notes(ctx, &done, &left);
    if (!ctx->planned) {
        /* What the passes did, while it stays short; -v has the rest. */
        guint shown = 0, n = 0;
        for (guint k = 0; k < ctx->notes->len; k++) {
            const HgPassNote *note = ctx->notes->pdata[k];
            if (note_kind(note) == NOTE_FIGURED && g_strcmp0(note->pass, "fuse_layernorm") != 0)
                continue;
            n++;
            if (s->len + strlen(note->message) + 2 > SUMMARY_NOTES_MAX)
                continue;
            g_string_append_printf(s, "%s%s", s->len ? "; " : "", note->message);
            shown++;
        }
        if (shown < n)
            g_string_append_printf(s, "%s%u more change%s (-v lists them)", s->len ? "; and " : "", n - shown,
                                   n - shown == 1 ? "" : "s");
        if (!s->len)
            g_string_append(s, "no changes");
        return g_string_free(s, FALSE);
    }
    if (ctx->n_fused_layernorm)
        g_string_append_printf(s, "fused %u LayerNorm%s; ", ctx->n_fused_layernorm,
                               ctx->n_fused_layernorm == 1 ? "" : "s");
    double macs32 = (double)(ctx->macs_total - ctx->macs_fp16);
    double pct32 = ctx->macs_total ? 100.0 * macs32 / (double)ctx->macs_total : 0;
    double pct16 = ctx->macs_total ? 100.0 * (double)ctx->macs_fp16 / (double)ctx->macs_total : 100;
    double wpct = ctx->weight_bytes_total
                      ? 100.0 * (double)ctx->weight_bytes_fp16 / (double)ctx->weight_bytes_total
                      : 100;
    g_string_append_printf(s, "%u FP32 island%s (%u node%s", ctx->n_fp32_islands, ctx->n_fp32_islands == 1 ? "" : "s",
                           ctx->n_fp32_nodes, ctx->n_fp32_nodes == 1 ? "" : "s");
    if (!ctx->n_macs_unknown && ctx->macs_total)
        g_string_append_printf(s, ", %.3g%% of MACs", pct32);
    g_string_append_printf(s, "); %u Cast%s; FP16: ", ctx->n_casts, ctx->n_casts == 1 ? "" : "s");
    if (ctx->n_macs_unknown) {
        /* A share of the known MACs alone would mislead: the unknown ones are the matrix products. So
         * the share is of every node's, with the symbolic dims at the sizes the cut priced them at. */
        double ppct = ctx->macs_priced_total
                          ? 100.0 * (double)ctx->macs_priced_fp16 / (double)ctx->macs_priced_total
                          : 100;
        const char *priced = ctx->symbolic_priced ? ctx->symbolic_priced : "";
        if (*priced && strlen(priced) <= 40)
            g_string_append_printf(s, "%.4g%% of MACs at %s, ", ppct, priced);
        else
            g_string_append_printf(s, "%.4g%% of MACs at the symbolic dims' priced sizes, ", ppct);
        g_string_append_printf(s, "%.3g%% of weight bytes", wpct);
    } else if (ctx->macs_total) {
        g_string_append_printf(s, "%.4g%% of MACs, %.3g%% of weight bytes", pct16, wpct);
    } else { /* no node multiplies or adds: shape math, data movement */
        g_string_append_printf(s, "%.3g%% of weight bytes (no MACs)", wpct);
    }
    guint hazards = 0;
    for (guint i = 0; ctx->decisions && i < ctx->decisions->len; i++) {
        const HgDecision *d = ctx->decisions->pdata[i];
        hazards += d->fp32 && d->reason && hg_hazard_kind_from_name(d->reason) >= 0;
    }
    if (hazards)
        g_string_append_printf(s, "; %u node%s FP32 for hazards", hazards, hazards == 1 ? "" : "s");
    if (done)
        g_string_append_printf(s, "; %u other change%s", done, done == 1 ? "" : "s");
    if (left)
        g_string_append_printf(s, "; %u pattern%s left as %s", left, left == 1 ? "" : "s", left == 1 ? "it was" : "they were");
    guint n = ctx->decisions ? ctx->decisions->len : 0;
    if (ctx->n_synthetic)
        g_string_append_printf(s, "; %u of %u decisions rest on synthetic data", ctx->n_synthetic, n);
    if (ctx->n_assumed)
        g_string_append_printf(s, "; %u of %u on no data", ctx->n_assumed, n);
    return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------- convert -v */

/* How many names a grouped item lists before "and N more". */
#define NAMES_SHOWN 3

/* names as "'a', 'b', 'c' and 21 more". */
static void
append_names(GString *s, GPtrArray *names)
{
    for (guint i = 0; i < names->len && i < NAMES_SHOWN; i++) {
        g_autofree char *safe = hg_escape_text(names->pdata[i]);
        g_string_append_printf(s, "%s'%s'", i ? ", " : "", safe);
    }
    if (names->len > NAMES_SHOWN)
        g_string_append_printf(s, " and %u more", names->len - NAMES_SHOWN);
}

/* A decision's reason in plain words (a hazard kind says what FP16 would do). */
static const char *
plain_reason(const char *reason)
{
    static const struct {
        const char *kind, *words;
    } hazards[] = {
        {"overflow", "its values can pass FP16's largest, 65504 (overflow)"},
        {"internal-overflow", "a sum inside it can pass FP16's range (internal overflow)"},
        {"underflow", "an epsilon, weights or activations it needs become 0 or lose their bits in FP16 (underflow)"},
        {"non-finite-constant", "it holds a constant FP16 cannot hold: inf, NaN or past 65504"},
        {"division-by-zero", "its divisor can reach 0 in FP16 (division by zero)"},
        {"precision-loss", "FP16's 11 bits are too few for it (precision loss)"},
        {"must-stay-fp32", "it computes sizes or indices, which FP16 would change"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(hazards); i++)
        if (g_strcmp0(reason, hazards[i].kind) == 0)
            return hazards[i].words;
    if (g_strcmp0(reason, "cheaper in FP32 than the Casts around it (minimum cut)") == 0)
        return "cheaper in FP32 than the Casts around it";
    if (g_strcmp0(reason, "--block-op") == 0)
        return "kept FP32 by --block-op";
    if (g_strcmp0(reason, "--block-node") == 0)
        return "kept FP32 by --block-node";
    return reason ? reason : "";
}

typedef struct {
    char *key;        /* what makes two items identical */
    char *text;       /* what is printed for several of them ("24 x TEXT (at NAMES)") */
    char *alone;      /* what is printed for one */
    GPtrArray *names; /* the first name of each (char*) */
} Group;

static void
group_free(gpointer p)
{
    Group *g = p;
    g_free(g->key);
    g_free(g->text);
    g_free(g->alone);
    g_ptr_array_unref(g->names);
    g_free(g);
}

/* Add an item to groups (in first-seen order; index maps key -> Group). Takes key, text and alone
 * (the forms for several and for one). */
static void
group_add(GPtrArray *groups, GHashTable *index, char *key, char *text, char *alone, const char *name)
{
    Group *g = g_hash_table_lookup(index, key);
    if (!g) {
        g = g_new0(Group, 1);
        g->key = key;
        g->text = text;
        g->alone = alone;
        g->names = g_ptr_array_new_with_free_func(g_free);
        g_hash_table_insert(index, g->key, g);
        g_ptr_array_add(groups, g);
    } else {
        g_free(key);
        g_free(text);
        g_free(alone);
    }
    if (name)
        g_ptr_array_add(g->names, g_strdup(name));
}

/* One FP32 island (decisions island of ctx): its description, the same for identical islands
 * (their ops and reasons, node for node), into text; its node names into names. */
static void
describe_island(const HgConvertResult *ctx, guint island, GString *key, GString *text, GString *several,
                GPtrArray *names)
{
    g_autoptr(GPtrArray) ops = g_ptr_array_new();
    g_autoptr(GPtrArray) reasons = g_ptr_array_new();
    gint64 macs = 0;
    gboolean unknown = FALSE;
    for (guint i = 0; i < ctx->decisions->len; i++) {
        const HgDecision *d = ctx->decisions->pdata[i];
        if (d->island != island)
            continue;
        g_ptr_array_add(names, *d->node ? d->node : d->op);
        g_string_append_printf(key, "%s\x01%s\x02", d->op, d->reason ? d->reason : "");
        if (!g_ptr_array_find_with_equal_func(ops, d->op, g_str_equal, NULL))
            g_ptr_array_add(ops, d->op);
        const char *why = plain_reason(d->reason);
        if (!g_ptr_array_find_with_equal_func(reasons, why, g_str_equal, NULL))
            g_ptr_array_add(reasons, (gpointer)why);
        unknown |= d->macs < 0;
        macs += MAX(d->macs, 0);
    }
    g_string_append_printf(text, "%u node%s (", names->len, names->len == 1 ? "" : "s");
    for (guint i = 0; i < ops->len; i++) {
        g_autofree char *safe = hg_escape_text(ops->pdata[i]);
        g_string_append_printf(text, "%s%s", i ? ", " : "", safe);
    }
    g_string_append(text, ")");
    g_string_assign(several, text->str);
    if (!unknown && !ctx->n_macs_unknown && ctx->macs_total && macs) {
        g_string_append_printf(text, ", %.3g%% of MACs", 100.0 * (double)macs / (double)ctx->macs_total);
        g_string_append_printf(several, ", %.3g%% of MACs each", 100.0 * (double)macs / (double)ctx->macs_total);
    }
    g_string_append(text, ": ");
    g_string_append(several, ": ");
    for (guint i = 0; i < reasons->len; i++) {
        g_autofree char *safe = hg_escape_text(reasons->pdata[i]);
        g_string_append_printf(text, "%s%s", i ? "; " : "", safe);
        g_string_append_printf(several, "%s%s", i ? "; " : "", safe);
    }
}

/* A pass note for people: the scale exponent k is the pass's own word ("2^-19" says it). Escaped. */
static char *
plain_words(const char *message)
{
    g_autofree char *safe = hg_escape_text(message);
    static const char *const rules[][2] = {
        {"\\(k = [0-9]+: ", "("},
        {"\\bk = ([0-9]+) comes from", "2^-\\1 comes from"},
    };
    char *text = g_strdup(safe);
    for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
        g_autoptr(GRegex) re = g_regex_new(rules[i][0], 0, 0, NULL);
        char *next = re ? g_regex_replace(re, text, -1, 0, rules[i][1], 0, NULL) : NULL;
        if (next) {
            g_free(text);
            text = next;
        }
    }
    return text;
}

/* A note's form for grouping: the message with each quoted name blanked; *first: its first name. */
static char *
note_key(const char *plain, char **first)
{
    GString *key = g_string_new(NULL);
    *first = NULL;
    for (const char *p = plain; *p; p++) {
        /* A name opens after a space or a bracket (not FP16's) and closes before one or the end. */
        const char *close = NULL;
        if (*p == '\'' && (p == plain || strchr(" ([", p[-1])))
            for (const char *q = strchr(p + 1, '\''); q && !close; q = strchr(q + 1, '\''))
                if (!q[1] || strchr(" ,;:)]", q[1]))
                    close = q;
        if (!close) {
            g_string_append_c(key, *p);
            continue;
        }
        if (!*first)
            *first = g_strndup(p + 1, (gsize)(close - p - 1));
        g_string_append(key, "'…'");
        p = close;
    }
    return g_string_free(key, FALSE);
}

static void
print_groups(GString *s, const char *prefix, const char *title, GPtrArray *groups)
{
    if (!groups->len)
        return;
    g_string_append_printf(s, "%s%s:\n", prefix, title);
    for (guint i = 0; i < groups->len; i++) {
        const Group *g = groups->pdata[i];
        if (g->names->len <= 1) {
            g_string_append_printf(s, "%s  %s\n", prefix, g->alone);
            continue;
        }
        g_string_append_printf(s, "%s  %u × %s (at ", prefix, g->names->len, g->text);
        append_names(s, g->names);
        g_string_append(s, ")\n");
    }
}

char *
hg_convert_result_details(const HgConvertResult *ctx, const char *prefix)
{
    g_return_val_if_fail(ctx != NULL, NULL);
    prefix = prefix ? prefix : "";
    GString *s = g_string_new(NULL);
    /* The FP32 islands, identical ones (the same ops and reasons, node for node) grouped. */
    g_autoptr(GPtrArray) islands = g_ptr_array_new_with_free_func(group_free);
    g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint k = 1; ctx->decisions && k <= ctx->n_fp32_islands; k++) {
        g_autoptr(GString) key = g_string_new(NULL), text = g_string_new(NULL), several = g_string_new(NULL);
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        describe_island(ctx, k, key, text, several, names);
        if (!names->len)
            continue;
        /* One island lists its nodes; several alike list the first node of each. */
        g_autoptr(GString) alone = g_string_new(text->str);
        g_string_append(alone, " [");
        append_names(alone, names);
        g_string_append(alone, "]");
        group_add(islands, index, g_strdup(key->str), g_strdup(several->str), g_string_free(g_steal_pointer(&alone), FALSE),
                  names->pdata[0]);
    }
    print_groups(s, prefix, "FP32 islands (nodes, and why they stay FP32)", islands);
    /* Rewrites and edits made, then patterns left as they were, then what the bounds assumed,
     * identical ones grouped. */
    static const char *const titles[] = {[NOTE_DONE] = "rewrites and other changes",
                                         [NOTE_LEFT] = "patterns left as they were",
                                         [NOTE_ASSUMED] = "what the bounds assume"};
    for (int want = NOTE_DONE; want <= NOTE_ASSUMED; want++) {
        g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(group_free);
        g_autoptr(GHashTable) by_key = g_hash_table_new(g_str_hash, g_str_equal);
        for (guint k = 0; k < ctx->notes->len; k++) {
            const HgPassNote *note = ctx->notes->pdata[k];
            if ((int)note_kind(note) != want)
                continue;
            char *plain = plain_words(note->message);
            g_autofree char *first = NULL;
            char *blanked = note_key(plain, &first);
            char *key = g_strdup_printf("%s\x01%s", note->pass, blanked);
            group_add(groups, by_key, key, blanked, plain, first ? first : "");
        }
        print_groups(s, prefix, titles[want], groups);
    }
    guint n = ctx->decisions ? ctx->decisions->len : 0;
    if (ctx->n_synthetic) {
        g_autoptr(GString) names = g_string_new(NULL);
        for (guint i = 0; ctx->inputs && i < ctx->inputs->len; i++) {
            const HgInputInfo *in = ctx->inputs->pdata[i];
            if (in->source == HG_INPUT_RANGE_NONE && ctx->synthetic_draw->pdata[i])
            {
                g_autofree char *safe = hg_escape_text(in->name);
                g_string_append_printf(names, "%s'%s'", names->len ? ", " : "", safe);
            }
        }
        g_string_append_printf(s, "%s%u of %u decisions rest on synthetic data%s%s%s\n", prefix, ctx->n_synthetic, n,
                               names->len ? " (no range or data for " : " (inputs drawn in their ranges)", names->str,
                               names->len ? ")" : "");
    }
    if (ctx->n_assumed)
        g_string_append_printf(s, "%s%u of %u decisions rest on no data at all (assumed: unbounded for lack of an "
                               "input range or an op's rule)\n", prefix, ctx->n_assumed, n);
    if (ctx->n_macs_unknown && ctx->symbolic_dims) {
        g_autofree char *dims = hg_escape_text(ctx->symbolic_dims);
        g_autofree char *priced = hg_escape_text(ctx->symbolic_priced ? ctx->symbolic_priced : "their priced sizes");
        g_string_append_printf(s, "%sMACs of %u node%s depend on symbolic dims (%s): the shares count them at %s\n",
                               prefix, ctx->n_macs_unknown, ctx->n_macs_unknown == 1 ? "" : "s", dims, priced);
    }
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
