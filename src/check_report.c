/* check's reports: compiler-style text, halfguard's JSON, SARIF 2.1.0 (README.md documents each). */
#include "halfguard/check.h"
#include "halfguard/halfguard.h"

#include <json-glib/json-glib.h>

#include "json_util.h"
#include <math.h>
#include <string.h>

guint
hg_check_result_count(const HgCheckResult *r)
{
    return hg_check_result_count_kinds(r, ~0u);
}

guint
hg_check_result_count_kinds(const HgCheckResult *r, guint kinds)
{
    guint n = 0;
    for (guint i = 0; r && i < r->hazards->len; i++) {
        const HgHazard *h = r->hazards->pdata[i];
        n += !h->suppressed && !h->fixed_by && (kinds >> h->kind & 1u);
    }
    return n;
}

/* What convert does about h, for the text line. */
static const char *
convert_mark(const HgHazard *h)
{
    if (h->fixed_by)
        return NULL; /* "[fixed by convert: PASS]" */
    return h->kind == HG_HAZARD_UNRANGED_INPUT ? NULL : "convert keeps it FP32";
}

/* h's message with each quoted name blanked: what identical hazards share. */
static char *
blank_names(const char *message)
{
    GString *s = g_string_new(NULL);
    for (const char *p = message; *p; p++) {
        /* A name opens after a space or a bracket (not FP16's) and closes before one or the end. */
        const char *close = NULL;
        if (*p == '\'' && (p == message || strchr(" ([", p[-1])))
            for (const char *q = strchr(p + 1, '\''); q && !close; q = strchr(q + 1, '\''))
                if (!q[1] || strchr(" ,;:)]", q[1]))
                    close = q;
        if (!close) {
            g_string_append_c(s, *p);
            continue;
        }
        g_string_append(s, "''");
        p = close;
    }
    return g_string_free(s, FALSE);
}

static char *
group_key(const HgHazard *h)
{
    g_autofree char *blank = blank_names(h->message);
    return g_strdup_printf("%d\x01%s\x01%s\x01%s\x01%s", h->kind, h->op ? h->op : "", blank,
                           h->fixed_by ? h->fixed_by : "", h->suppressed ? h->suppressed : "");
}

/* How many names a grouped line shows before "and N more". */
#define GROUP_NAMES 3

char *
hg_check_format_text(const HgCheckFile *files, guint n, guint flags)
{
    GString *s = g_string_new(NULL);
    for (guint f = 0; f < n; f++) {
        const HgCheckResult *r = files[f].result;
        guint nh = r ? r->hazards->len : 0;
        /* Groups, in the order of their first hazard: the members' indices. */
        g_autoptr(GHashTable) groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                             (GDestroyNotify)g_array_unref);
        g_autofree GArray **member_of = g_new0(GArray *, nh + 1);
        for (guint i = 0; (flags & HG_CHECK_GROUP) && i < nh; i++) {
            char *key = group_key(r->hazards->pdata[i]);
            GArray *members = g_hash_table_lookup(groups, key);
            if (!members) {
                members = g_array_new(FALSE, FALSE, sizeof(guint));
                g_hash_table_insert(groups, key, members);
            } else {
                g_free(key);
            }
            g_array_append_val(members, i);
            member_of[i] = members;
        }
        for (guint i = 0; i < nh; i++) {
            const HgHazard *h = r->hazards->pdata[i];
            if ((h->suppressed && !(flags & HG_CHECK_SHOW_SUPPRESSED)) ||
                (h->fixed_by && !(flags & HG_CHECK_SHOW_FIXED)))
                continue;
            GArray *members = member_of[i];
            if (members && g_array_index(members, guint, 0) != i)
                continue; /* said on its group's line */
            g_autoptr(GString) line = g_string_new(NULL);
            gboolean input = h->kind == HG_HAZARD_UNRANGED_INPUT;
            if (members && members->len > 1) {
                g_string_append_printf(line, "%s: %u × %s ", files[f].file, members->len, input ? "input" : "node");
                for (guint k = 0; k < members->len && k < GROUP_NAMES; k++)
                    g_string_append_printf(line, "%s'%s'", k ? ", " : "",
                                           ((const HgHazard *)r->hazards->pdata[g_array_index(members, guint, k)])->node);
                if (members->len > GROUP_NAMES)
                    g_string_append_printf(line, " and %u more", members->len - GROUP_NAMES);
                if (!input)
                    g_string_append_printf(line, " (%s)", h->op);
                g_string_append_printf(line, ": %s: %s (as at '%s')", hg_hazard_kind_name(h->kind), h->message, h->node);
            } else if (input) {
                g_string_append_printf(line, "%s: input '%s': %s: %s", files[f].file, h->node,
                                       hg_hazard_kind_name(h->kind), h->message);
            } else {
                g_string_append_printf(line, "%s: node '%s' (%s): %s: %s", files[f].file, h->node, h->op,
                                       hg_hazard_kind_name(h->kind), h->message);
            }
            if (h->suppressed)
                g_string_append_printf(line, " [suppressed: %s]", h->suppressed);
            if (h->fixed_by)
                g_string_append_printf(line, " [fixed by convert: %s]", h->fixed_by);
            else if (convert_mark(h) && !h->suppressed)
                g_string_append_printf(line, " [%s]", convert_mark(h));
            /* One hazard, one line, whatever the names hold. */
            g_autofree char *safe = hg_escape_text(line->str);
            g_string_append(s, safe);
            g_string_append_c(s, '\n');
        }
    }
    return g_string_free(s, FALSE);
}

char *
hg_check_summary(const HgCheckFile *files, guint n)
{
    guint open[HG_HAZARD_N_KINDS] = {0}, fixed[HG_HAZARD_N_KINDS] = {0};
    guint total = 0, suppressed = 0, models = 0;
    for (guint f = 0; f < n; f++) {
        const HgCheckResult *r = files[f].result;
        gboolean any = FALSE;
        for (guint i = 0; r && i < r->hazards->len; i++) {
            const HgHazard *h = r->hazards->pdata[i];
            if (h->suppressed) {
                suppressed++;
                continue;
            }
            (h->fixed_by ? fixed : open)[h->kind]++;
            total++;
            any = TRUE;
        }
        models += any;
    }
    if (!total && !suppressed)
        return NULL;
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%u hazard%s", total, total == 1 ? "" : "s");
    if (n > 1)
        g_string_append_printf(s, " in %u of %u models", models, n);
    const char *sep = ": ";
    for (int k = 0; k < HG_HAZARD_N_KINDS; k++)
        if (open[k]) {
            g_string_append_printf(s, "%s%u %s", sep, open[k], hg_hazard_kind_name(k));
            sep = ", ";
        }
    for (int k = 0; k < HG_HAZARD_N_KINDS; k++)
        if (fixed[k]) {
            g_string_append_printf(s, "%s%u %s (convert fixes %s)", sep, fixed[k], hg_hazard_kind_name(k),
                                   fixed[k] == 1 ? "it" : "them");
            sep = ", ";
        }
    if (suppressed)
        g_string_append_printf(s, "; %u suppressed", suppressed);
    return g_string_free(s, FALSE);
}

static const char *const status_names[] = {"clean", "hazards", "skipped", "error"};



static void
add_range(JsonBuilder *b, const char *key, gboolean present, double lo, double hi)
{
    json_builder_set_member_name(b, key);
    if (!present) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    hg_json_add_num(b, "lo", lo);
    hg_json_add_num(b, "hi", hi);
    json_builder_end_object(b);
}


static void
hazard_fields(JsonBuilder *b, const HgHazard *h)
{
    hg_json_add_str(b, "node", h->node);
    hg_json_add_str(b, "op", h->op);
    hg_json_add_str(b, "kind", hg_hazard_kind_name(h->kind));
    hg_json_add_str(b, "value", h->value);
    hg_json_add_str(b, "message", h->message);
    hg_json_add_num(b, "bound", h->bound);
    hg_json_add_str(b, "source", hg_bound_source_name(h->source));
    add_range(b, "static", h->value != NULL, h->static_lo, h->static_hi);
    add_range(b, "observed", h->has_observed, h->observed_lo, h->observed_hi);
    hg_json_add_str(b, "action", h->action);
}

char *
hg_check_format_json(const HgCheckFile *files, guint n)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint total = 0;
    for (guint f = 0; f < n; f++)
        total += hg_check_result_count(files[f].result);
    json_builder_begin_object(b);
    hg_json_add_str(b, "format", "halfguard-check");
    json_builder_set_member_name(b, "version");
    json_builder_add_int_value(b, 1);
    json_builder_set_member_name(b, "hazards");
    json_builder_add_int_value(b, total);
    json_builder_set_member_name(b, "models");
    json_builder_begin_array(b);
    for (guint f = 0; f < n; f++) {
        const HgCheckResult *r = files[f].result;
        json_builder_begin_object(b);
        hg_json_add_str(b, "file", files[f].file);
        hg_json_add_str(b, "status", status_names[files[f].status]);
        if (files[f].message)
            hg_json_add_str(b, "message", files[f].message);
        json_builder_set_member_name(b, "unranged_inputs");
        json_builder_begin_array(b);
        for (guint i = 0; r && i < r->unranged_inputs->len; i++)
            json_builder_add_string_value(b, r->unranged_inputs->pdata[i]);
        json_builder_end_array(b);
        json_builder_set_member_name(b, "inputs");
        json_builder_begin_array(b);
        for (guint i = 0; r && r->inputs && i < r->inputs->len; i++) {
            const HgInputInfo *in = r->inputs->pdata[i];
            gboolean ranged = in->source == HG_INPUT_RANGE_GIVEN || in->source == HG_INPUT_RANGE_DERIVED;
            json_builder_begin_object(b);
            hg_json_add_str(b, "name", in->name);
            hg_json_add_str(b, "dtype", hg_dtype_name(in->dtype));
            hg_json_add_str(b, "source", hg_input_range_source_name(in->source));
            add_range(b, "range", ranged, in->lo, in->hi);
            hg_json_add_str(b, "why", in->why);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "unknown_ops");
        json_builder_begin_array(b);
        for (guint i = 0; r && r->unknown_ops && i < r->unknown_ops->len; i++) {
            const HgUnknownOp *u = r->unknown_ops->pdata[i];
            json_builder_begin_object(b);
            hg_json_add_str(b, "op", u->op);
            hg_json_add_int(b, "nodes", u->nodes);
            hg_json_add_int(b, "downstream", u->downstream);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "hazards");
        json_builder_begin_array(b);
        for (guint i = 0; r && i < r->hazards->len; i++) {
            const HgHazard *h = r->hazards->pdata[i];
            json_builder_begin_object(b);
            hazard_fields(b, h);
            hg_json_add_str(b, "suppressed", h->suppressed);
            hg_json_add_str(b, "fixed_by", h->fixed_by);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return hg_json_to_text(b);
}

/* "member": {"text": text}, SARIF's message form. */
static void
text_member(JsonBuilder *b, const char *member, const char *text)
{
    json_builder_set_member_name(b, member);
    json_builder_begin_object(b);
    hg_json_add_str(b, "text", text);
    json_builder_end_object(b);
}

/* What to do about each kind: SARIF's help, as text and Markdown (the README's "check" section says
 * more). */
static const char *const HELP[HG_HAZARD_N_KINDS] = {
    [HG_HAZARD_OVERFLOW] = "Run `halfguard convert`: it rescales the region when the values allow, else "
                           "keeps the node FP32 with Casts around it. With calibration data (`--calib`) "
                           "the bound is what the data shows times the margin, often far below the static one.",
    [HG_HAZARD_INTERNAL_OVERFLOW] = "`halfguard convert` keeps the op FP32 (or rewrites an L2 norm or a "
                                    "Softplus that it recognises); give calibration data if the static "
                                    "bound is loose.",
    [HG_HAZARD_UNDERFLOW] = "`halfguard convert` keeps the epsilon's consumer FP32, or fuses a decomposed "
                            "LayerNorm into LayerNormalization, which computes in FP32; activations "
                            "too small for FP16 are computed and stored in FP32.",
    [HG_HAZARD_NONFINITE_CONSTANT] = "`halfguard convert` clamps float32-min mask fills to -65504 where "
                                     "the use is an additive mask or a saturating op; otherwise the "
                                     "consumer stays FP32.",
    [HG_HAZARD_DIVISION_BY_ZERO] = "Add an epsilon to the divisor, or keep the Div FP32 (`halfguard "
                                   "convert` does).",
    [HG_HAZARD_PRECISION_LOSS] = "`halfguard convert` keeps the node FP32 (an integral image can become an "
                                 "AveragePool); scale the logits down before the Softmax to avoid it.",
    [HG_HAZARD_MUST_STAY_FP32] = "Nothing to do: `halfguard convert` keeps shape and index math FP32; it "
                                 "costs no MACs.",
    [HG_HAZARD_UNRANGED_INPUT] = "Give the input's range: `-r 'NAME=LO:HI'`, a `[ranges]` line in "
                                 "`.halfguard.ini` (`halfguard inspect MODEL --ini` writes a skeleton), "
                                 "or calibration data (`--calib`).",
};

static void
sarif_rules(JsonBuilder *b)
{
    json_builder_set_member_name(b, "rules");
    json_builder_begin_array(b);
    for (int k = 0; k < HG_HAZARD_N_KINDS; k++) {
        json_builder_begin_object(b);
        hg_json_add_str(b, "id", hg_hazard_kind_name(k));
        text_member(b, "shortDescription", hg_hazard_kind_description(k));
        text_member(b, "fullDescription", hg_hazard_kind_description(k));
        json_builder_set_member_name(b, "help");
        json_builder_begin_object(b);
        g_autofree char *plain = g_strdelimit(g_strdup(HELP[k]), "`", '\'');
        hg_json_add_str(b, "text", plain);
        g_autofree char *md = g_strdup_printf("**%s**: %s\n\n%s", hg_hazard_kind_name(k),
                                              hg_hazard_kind_description(k), HELP[k]);
        hg_json_add_str(b, "markdown", md);
        json_builder_end_object(b);
        json_builder_set_member_name(b, "defaultConfiguration");
        json_builder_begin_object(b);
        hg_json_add_str(b, "level", hg_hazard_kind_level(k));
        json_builder_end_object(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* "physicalLocation": {"artifactLocation": {"uri": uri}}, a member of the open location object; a
 * relative path is relative to %SRCROOT% (the repository, for code scanning). */
static void
physical_location(JsonBuilder *b, const char *uri)
{
    json_builder_set_member_name(b, "physicalLocation");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "artifactLocation");
    json_builder_begin_object(b);
    hg_json_add_str(b, "uri", uri);
    if (uri[0] != '/')
        hg_json_add_str(b, "uriBaseId", "%SRCROOT%");
    json_builder_end_object(b);
    json_builder_end_object(b);
}

/* A fingerprint that stays while the finding does: the rule, the file and the node (or input), not
 * the message, whose numbers move with the weights. */
static char *
fingerprint(const char *file, const HgHazard *h)
{
    g_autoptr(GChecksum) c = g_checksum_new(G_CHECKSUM_SHA256);
    const char *parts[] = {hg_hazard_kind_name(h->kind), file, h->node ? h->node : ""};
    for (guint i = 0; i < G_N_ELEMENTS(parts); i++)
        g_checksum_update(c, (const guchar *)parts[i], (gssize)strlen(parts[i]) + 1);
    return g_strdup(g_checksum_get_string(c));
}

static void
sarif_result(JsonBuilder *b, const char *file, const char *uri, const HgHazard *h)
{
    json_builder_begin_object(b);
    hg_json_add_str(b, "ruleId", hg_hazard_kind_name(h->kind));
    json_builder_set_member_name(b, "ruleIndex");
    json_builder_add_int_value(b, h->kind);
    /* A hazard convert rewrites away is a note: nothing for the user to do. */
    hg_json_add_str(b, "level", h->fixed_by ? "note" : hg_hazard_kind_level(h->kind));
    json_builder_set_member_name(b, "message");
    json_builder_begin_object(b);
    gboolean input = h->kind == HG_HAZARD_UNRANGED_INPUT;
    g_autofree char *text = input ? g_strdup_printf("input '%s': %s", h->node, h->message)
                                  : g_strdup_printf("node '%s' (%s): %s", h->node, h->op, h->message);
    hg_json_add_str(b, "text", text);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "locations");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    physical_location(b, uri);
    json_builder_set_member_name(b, "logicalLocations");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    hg_json_add_str(b, "name", h->node);
    hg_json_add_str(b, "kind", input ? "parameter" : "function");
    g_autofree char *fqn = g_strdup_printf("%s::%s", file, h->node);
    hg_json_add_str(b, "fullyQualifiedName", fqn);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "partialFingerprints");
    json_builder_begin_object(b);
    g_autofree char *fp = fingerprint(file, h);
    hg_json_add_str(b, "halfguardFinding/v1", fp);
    json_builder_end_object(b);
    if (h->suppressed) {
        json_builder_set_member_name(b, "suppressions");
        json_builder_begin_array(b);
        json_builder_begin_object(b);
        hg_json_add_str(b, "kind", "external");
        hg_json_add_str(b, "justification", h->suppressed);
        json_builder_end_object(b);
        json_builder_end_array(b);
    }
    json_builder_set_member_name(b, "properties");
    json_builder_begin_object(b);
    hazard_fields(b, h);
    hg_json_add_str(b, "fixedBy", h->fixed_by);
    json_builder_end_object(b);
    json_builder_end_object(b);
}

/* One toolExecutionNotification: a message at a level, located at the model. */
static void
notification(JsonBuilder *b, const char *level, const char *text, const char *uri)
{
    json_builder_begin_object(b);
    hg_json_add_str(b, "level", level);
    text_member(b, "message", text);
    json_builder_set_member_name(b, "locations");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    physical_location(b, uri);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_end_object(b);
}

char *
hg_check_unknown_op_note(const HgUnknownOp *u)
{
    g_return_val_if_fail(u != NULL, NULL);
    gboolean one = u->nodes == 1;
    gboolean control = !strcmp(u->op, "If") || !strcmp(u->op, "Loop") || !strcmp(u->op, "Scan");
    g_autofree char *rest = u->downstream
        ? g_strdup_printf("the %u float tensor%s computed from %s output%s that no rule bounds %s not checked",
                          u->downstream, u->downstream == 1 ? "" : "s", one ? "its" : "their", one ? "" : "s",
                          u->downstream == 1 ? "is" : "are")
        : g_strdup_printf("what is computed from %s output%s is bounded by the rules after %s, and checked",
                          one ? "its" : "their", one ? "" : "s", one ? "it" : "them");
    return g_strdup_printf("op '%s' (%u node%s) is %s: convert keeps %s FP32 with Casts around %s; %s", u->op,
                           u->nodes, one ? "" : "s",
                           control ? "control flow, whose bodies halfguard does not bound" : "unknown to halfguard",
                           one ? "it" : "them", one ? "it" : "them", rest);
}

char *
hg_check_format_sarif(const HgCheckFile *files, guint n)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    hg_json_add_str(b, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    hg_json_add_str(b, "version", "2.1.0");
    json_builder_set_member_name(b, "runs");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "tool");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "driver");
    json_builder_begin_object(b);
    hg_json_add_str(b, "name", "halfguard");
    hg_json_add_str(b, "version", hg_version());
    sarif_rules(b);
    json_builder_end_object(b);
    json_builder_end_object(b);
    /* Files that were skipped or failed are notifications of the invocation. */
    gboolean ok = TRUE;
    for (guint f = 0; f < n; f++)
        ok &= files[f].status != HG_CHECK_ERROR;
    json_builder_set_member_name(b, "invocations");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "executionSuccessful");
    json_builder_add_boolean_value(b, ok);
    json_builder_set_member_name(b, "toolExecutionNotifications");
    json_builder_begin_array(b);
    for (guint f = 0; f < n; f++) {
        g_autofree char *uri = g_uri_escape_string(files[f].file, G_URI_RESERVED_CHARS_ALLOWED_IN_PATH, TRUE);
        if (files[f].message)
            notification(b, files[f].status == HG_CHECK_ERROR ? "error" : "note", files[f].message, uri);
        const HgCheckResult *r = files[f].result;
        for (guint i = 0; r && r->unknown_ops && i < r->unknown_ops->len; i++) {
            g_autofree char *text = hg_check_unknown_op_note(r->unknown_ops->pdata[i]);
            notification(b, "note", text, uri);
        }
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "results");
    json_builder_begin_array(b);
    for (guint f = 0; f < n; f++) {
        const HgCheckResult *r = files[f].result;
        g_autofree char *uri = g_uri_escape_string(files[f].file, G_URI_RESERVED_CHARS_ALLOWED_IN_PATH, TRUE);
        for (guint i = 0; r && i < r->hazards->len; i++)
            sarif_result(b, files[f].file, uri, r->hazards->pdata[i]);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_end_object(b);
    return hg_json_to_text(b);
}
