/* .halfguard.ini: check's per-repository configuration (GKeyFile). Groups:
 *   [check]           threshold, margin
 *   [ranges GLOB]     INPUT = LO:HI (INPUT may be *) for models matching GLOB
 *   [suppress NAME]   node = GLOB, kind = KIND or * (default *), model = GLOB (optional), reason = TEXT
 * Globs use g_pattern_match_simple ('*' and '?'; '*' crosses '/') on the model's path relative to the
 * file's folder. */
#include "halfguard/check.h"

#include <math.h>
#include <string.h>

#define CONFIG_NAME ".halfguard.ini"

typedef struct {
    char *glob;
    GArray *ranges; /* HgInputRangeSpec */
} RangeGroup;

typedef struct {
    char *name, *node, *model, *reason;
    int kind; /* -1: every kind */
} Suppression;

struct HgCheckConfig {
    char *path, *dir;
    double threshold, margin;
    GPtrArray *range_groups; /* RangeGroup* */
    GPtrArray *suppressions; /* Suppression* */
};

static void
spec_clear(gpointer p)
{
    g_free(((HgInputRangeSpec *)p)->name);
}

static void
range_group_free(gpointer p)
{
    RangeGroup *g = p;
    g_free(g->glob);
    g_array_unref(g->ranges);
    g_free(g);
}

static void
suppression_free(gpointer p)
{
    Suppression *s = p;
    g_free(s->name);
    g_free(s->node);
    g_free(s->model);
    g_free(s->reason);
    g_free(s);
}

void
hg_check_config_free(HgCheckConfig *cfg)
{
    if (!cfg)
        return;
    g_free(cfg->path);
    g_free(cfg->dir);
    g_ptr_array_unref(cfg->range_groups);
    g_ptr_array_unref(cfg->suppressions);
    g_free(cfg);
}

const char *
hg_check_config_path(const HgCheckConfig *cfg)
{
    return cfg->path;
}

double
hg_check_config_threshold(const HgCheckConfig *cfg)
{
    return cfg->threshold;
}

double
hg_check_config_margin(const HgCheckConfig *cfg)
{
    return cfg->margin;
}

static gboolean
bad(GError **error, const char *path, const char *group, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean
bad(GError **error, const char *path, const char *group, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: [%s]: %s", path, group, msg);
    return FALSE;
}

/* A positive number from [check]; 0 when absent. */
static gboolean
check_number(GKeyFile *kf, const char *path, const char *key, double *out, GError **error)
{
    *out = 0;
    if (!g_key_file_has_key(kf, "check", key, NULL))
        return TRUE;
    g_autofree char *v = g_key_file_get_value(kf, "check", key, NULL);
    char *end;
    double x = g_ascii_strtod(v, &end);
    if (end == v || *end || !(x > 0) || !isfinite(x))
        return bad(error, path, "check", "%s must be a positive number, not '%s'", key, v);
    *out = x;
    return TRUE;
}

static gboolean
load_ranges(HgCheckConfig *cfg, GKeyFile *kf, const char *group, GError **error)
{
    RangeGroup *rg = g_new0(RangeGroup, 1);
    rg->glob = g_strdup(group + strlen("ranges "));
    rg->ranges = g_array_new(FALSE, TRUE, sizeof(HgInputRangeSpec));
    g_array_set_clear_func(rg->ranges, spec_clear);
    g_ptr_array_add(cfg->range_groups, rg);
    g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
    for (guint i = 0; keys && keys[i]; i++) {
        g_autofree char *v = g_key_file_get_value(kf, group, keys[i], NULL);
        g_autofree char *text = g_strdup_printf("%s=%s", keys[i], v);
        HgInputRangeSpec spec;
        g_autoptr(GError) e = NULL;
        if (!hg_input_range_parse(text, &spec, &e))
            return bad(error, cfg->path, group, "%s", e->message);
        g_array_append_val(rg->ranges, spec);
    }
    return TRUE;
}

static gboolean
load_suppression(HgCheckConfig *cfg, GKeyFile *kf, const char *group, GError **error)
{
    Suppression *s = g_new0(Suppression, 1);
    s->name = g_strdup(group + strlen("suppress "));
    s->node = g_key_file_get_value(kf, group, "node", NULL);
    s->model = g_key_file_get_value(kf, group, "model", NULL);
    s->reason = g_key_file_get_string(kf, group, "reason", NULL);
    g_autofree char *kind = g_key_file_get_value(kf, group, "kind", NULL);
    g_ptr_array_add(cfg->suppressions, s);
    g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
    for (guint i = 0; keys && keys[i]; i++)
        if (strcmp(keys[i], "node") && strcmp(keys[i], "model") && strcmp(keys[i], "reason") &&
            strcmp(keys[i], "kind"))
            return bad(error, cfg->path, group, "unknown key '%s' (node, kind, model, reason)", keys[i]);
    if (!s->reason || !*g_strstrip(s->reason))
        return bad(error, cfg->path, group, "a suppression needs a reason (reason = ...)");
    if (!s->node || !*s->node)
        return bad(error, cfg->path, group, "a suppression needs a node pattern (node = GLOB)");
    s->kind = !kind || strcmp(kind, "*") == 0 ? -1 : hg_hazard_kind_from_name(kind);
    if (kind && strcmp(kind, "*") != 0 && s->kind < 0)
        return bad(error, cfg->path, group, "unknown hazard kind '%s'", kind);
    return TRUE;
}

HgCheckConfig *
hg_check_config_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) e = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, &e)) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s: %s", path, e->message);
        return NULL;
    }
    /* GKeyFile stops at a NUL byte: binary garbage read as an empty file would check with no
     * configuration at all. A configuration is UTF-8 text or an error. */
    if (memchr(text, 0, len) || !g_utf8_validate(text, (gssize)len, NULL)) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: not a configuration file: %s", path,
                    memchr(text, 0, len) ? "it contains a NUL byte" : "it is not UTF-8 text");
        return NULL;
    }
    if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &e)) {
        g_set_error(error, HG_ERROR, e->domain == G_FILE_ERROR ? HG_ERROR_IO : HG_ERROR_USAGE, "%s: %s",
                    path, e->message);
        return NULL;
    }
    g_autoptr(HgCheckConfig) cfg = g_new0(HgCheckConfig, 1);
    cfg->path = g_strdup(path);
    g_autofree char *abs = g_canonicalize_filename(path, NULL);
    cfg->dir = g_path_get_dirname(abs);
    cfg->range_groups = g_ptr_array_new_with_free_func(range_group_free);
    cfg->suppressions = g_ptr_array_new_with_free_func(suppression_free);
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (guint i = 0; groups[i]; i++) {
        const char *gname = groups[i];
        gboolean ok;
        if (strcmp(gname, "check") == 0) {
            ok = check_number(kf, path, "threshold", &cfg->threshold, error) &&
                 check_number(kf, path, "margin", &cfg->margin, error);
        } else if (g_str_has_prefix(gname, "ranges ")) {
            ok = load_ranges(cfg, kf, gname, error);
        } else if (g_str_has_prefix(gname, "suppress ")) {
            ok = load_suppression(cfg, kf, gname, error);
        } else {
            ok = bad(error, path, gname, "unknown group (check, ranges GLOB, suppress NAME)");
        }
        if (!ok)
            return NULL;
    }
    return g_steal_pointer(&cfg);
}

char *
hg_check_config_find(const char *model_path)
{
    g_autofree char *abs = g_canonicalize_filename(model_path, NULL);
    char *dir = g_path_get_dirname(abs);
    for (;;) {
        char *cand = g_build_filename(dir, CONFIG_NAME, NULL);
        if (g_file_test(cand, G_FILE_TEST_IS_REGULAR)) {
            g_free(dir);
            return cand;
        }
        g_free(cand);
        char *up = g_path_get_dirname(dir);
        if (strcmp(up, dir) == 0) {
            g_free(up);
            g_free(dir);
            return NULL;
        }
        g_free(dir);
        dir = up;
    }
}

/* model_path relative to the configuration's folder (absolute when outside it). */
static char *
relative(const HgCheckConfig *cfg, const char *model_path)
{
    g_autofree char *abs = g_canonicalize_filename(model_path, NULL);
    gsize n = strlen(cfg->dir);
    if (strncmp(abs, cfg->dir, n) == 0 && abs[n] == '/')
        return g_strdup(abs + n + 1);
    if (strcmp(cfg->dir, "/") == 0)
        return g_strdup(abs + 1);
    return g_steal_pointer(&abs);
}

void
hg_check_config_ranges(const HgCheckConfig *cfg, const char *model_path, GArray *ranges)
{
    g_autofree char *rel = relative(cfg, model_path);
    for (guint i = 0; i < cfg->range_groups->len; i++) {
        RangeGroup *rg = cfg->range_groups->pdata[i];
        if (!g_pattern_match_simple(rg->glob, rel))
            continue;
        for (guint k = 0; k < rg->ranges->len; k++) {
            const HgInputRangeSpec *s = &g_array_index(rg->ranges, HgInputRangeSpec, k);
            gboolean have = FALSE;
            for (guint j = 0; j < ranges->len && !have; j++)
                have = strcmp(g_array_index(ranges, HgInputRangeSpec, j).name, s->name) == 0;
            if (!have) {
                HgInputRangeSpec copy = {g_strdup(s->name), s->lo, s->hi};
                g_array_append_val(ranges, copy);
            }
        }
    }
}

void
hg_check_config_suppress(const HgCheckConfig *cfg, const char *model_path, HgCheckResult *r)
{
    g_autofree char *rel = relative(cfg, model_path);
    for (guint i = 0; i < r->hazards->len; i++) {
        HgHazard *h = r->hazards->pdata[i];
        for (guint k = 0; k < cfg->suppressions->len && !h->suppressed; k++) {
            const Suppression *s = cfg->suppressions->pdata[k];
            if ((s->kind < 0 || s->kind == (int)h->kind) &&
                (!s->model || g_pattern_match_simple(s->model, rel)) &&
                g_pattern_match_simple(s->node, h->node))
                h->suppressed = g_strdup(s->reason);
        }
    }
}
