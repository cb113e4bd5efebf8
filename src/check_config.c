/* .halfguard.ini: the per-repository configuration that check, convert, calibrate and verify all read
 * (GKeyFile). Groups:
 *   [check]           threshold, margin
 *   [ranges GLOB]     INPUT = LO:HI (INPUT may be *) for models matching GLOB
 *   [model GLOB]      calib = DATA[;DATA...] (relative to the file's folder), dim-max = N or NAME=N[;...]
 *   [suppress NAME]   node = GLOB, kind = KIND or * (default *), model = GLOB (optional), reason = TEXT
 * Globs use g_pattern_match_simple ('*' and '?'; '*' crosses '/') on the model's path relative to the
 * file's folder. A mistake (an unknown group or key, a bad value) is an error naming the file and the
 * line: GKeyFile does not keep lines, so the loader scans the text for them itself. */
#include "halfguard/check.h"
#include "infile.h"
#include "ops/kernel.h"

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

typedef struct {
    char *glob;
    char **calib;   /* absolute paths, or NULL */
    char **dim_max; /* NAME=N specs, or NULL */
} ModelGroup;

struct HgCheckConfig {
    char *path, *dir;
    double threshold, margin;
    GPtrArray *range_groups; /* RangeGroup* */
    GPtrArray *suppressions; /* Suppression* */
    GPtrArray *model_groups; /* ModelGroup* */
    GHashTable *lines;       /* "GROUP" and "GROUP\x01KEY" -> line number (first seen) */
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

static void
model_group_free(gpointer p)
{
    ModelGroup *g = p;
    g_free(g->glob);
    g_strfreev(g->calib);
    g_strfreev(g->dim_max);
    g_free(g);
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
    g_ptr_array_unref(cfg->model_groups);
    if (cfg->lines)
        g_hash_table_unref(cfg->lines);
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

/* Where each group and key is in the text: GROUP -> line, GROUP\x01KEY -> line (the first seen). */
static GHashTable *
scan_lines(const char *text)
{
    GHashTable *lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_auto(GStrv) rows = g_strsplit(text, "\n", -1);
    g_autofree char *group = NULL;
    for (guint i = 0; rows[i]; i++) {
        g_autofree char *row = g_strstrip(g_strdup(rows[i]));
        gsize n = strlen(row);
        if (!n || row[0] == '#')
            continue;
        if (row[0] == '[' && row[n - 1] == ']') {
            g_free(group);
            group = g_strndup(row + 1, n - 2);
            if (!g_hash_table_contains(lines, group))
                g_hash_table_insert(lines, g_strdup(group), GUINT_TO_POINTER(i + 1));
            continue;
        }
        const char *eq = strchr(row, '=');
        if (!group || !eq)
            continue;
        g_autofree char *key = g_strstrip(g_strndup(row, (gsize)(eq - row)));
        g_autofree char *id = g_strdup_printf("%s\x01%s", group, key);
        if (!g_hash_table_contains(lines, id))
            g_hash_table_insert(lines, g_steal_pointer(&id), GUINT_TO_POINTER(i + 1));
    }
    return lines;
}

/* The line of group's key (key NULL: of the group itself), or 0. */
static guint
line_of(const HgCheckConfig *cfg, const char *group, const char *key)
{
    g_autofree char *id = key ? g_strdup_printf("%s\x01%s", group, key) : g_strdup(group);
    return cfg->lines ? GPOINTER_TO_UINT(g_hash_table_lookup(cfg->lines, id)) : 0;
}

static gboolean
bad(GError **error, const HgCheckConfig *cfg, const char *group, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

/* "FILE:LINE: [GROUP]: message", the line of key in group (of the group when key is NULL or unseen). */
static gboolean
bad(GError **error, const HgCheckConfig *cfg, const char *group, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    guint line = key ? line_of(cfg, group, key) : 0;
    if (!line)
        line = line_of(cfg, group, NULL);
    if (line)
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s:%u: [%s]: %s", cfg->path, line, group, msg);
    else
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "%s: [%s]: %s", cfg->path, group, msg);
    return FALSE;
}

/* Every key of group must be one of known (NULL-terminated; their list in the message). */
static gboolean
known_keys(const HgCheckConfig *cfg, GKeyFile *kf, const char *group, const char *const *known, GError **error)
{
    g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
    for (guint i = 0; keys && keys[i]; i++)
        if (!g_strv_contains(known, keys[i])) {
            g_autofree char *list = g_strjoinv(", ", (char **)known);
            return bad(error, cfg, group, keys[i], "unknown key '%s' (%s)", keys[i], list);
        }
    return TRUE;
}

/* A positive number from [check]; 0 when absent. */
static gboolean
check_number(HgCheckConfig *cfg, GKeyFile *kf, const char *key, double *out, GError **error)
{
    *out = 0;
    if (!g_key_file_has_key(kf, "check", key, NULL))
        return TRUE;
    g_autofree char *v = g_key_file_get_value(kf, "check", key, NULL);
    char *end;
    double x = g_ascii_strtod(v, &end);
    if (end == v || *end || !(x > 0) || !isfinite(x))
        return bad(error, cfg, "check", key, "%s must be a positive number, not '%s'", key, v);
    *out = x;
    return TRUE;
}

gboolean
hg_dim_max_parse(const char *spec, char **name, gint64 *value, GError **error)
{
    const char *eq = strrchr(spec, '=');
    const char *num = eq ? eq + 1 : spec;
    char *end;
    gint64 v = g_ascii_strtoll(num, &end, 10);
    if (end == num || *end || v < 1 || (eq && eq == spec)) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                    "bad dim-max '%s': expected N or NAME=N (a symbolic dim's name), N >= 1", spec);
        return FALSE;
    }
    if (name)
        *name = eq ? g_strndup(spec, (gsize)(eq - spec)) : g_strdup("*");
    if (value)
        *value = v;
    return TRUE;
}

gint64
hg_dim_max_lookup(const char *const *specs, const char *name, gint64 dflt)
{
    const char *base, *f[HG_SYM_MAX_FACTORS];
    gint64 cap, coef;
    int nf;
    if (name && hg_sym_factors(name, &coef, f, &nf) && (nf > 1 || coef != 1)) {
        /* a product of dims (4*batch): the product of their sizes, unknown where one is */
        for (int i = 0; i < nf; i++) {
            gint64 v = hg_dim_max_lookup(specs, f[i], dflt);
            if (v < 0 || (v && coef > G_MAXINT64 / v))
                return v < 0 ? dflt : G_MAXINT64;
            coef *= v;
        }
        return coef;
    }
    if (hg_sym_min_parts(name, &base, &cap)) { /* min(S,cap): at most cap */
        gint64 v = hg_dim_max_lookup(specs, base, dflt);
        return v < 0 ? cap : MIN(v, cap);
    }
    gint64 any = dflt;
    g_autofree char *model_name = name ? hg_sym_model_name(name) : NULL; /* as the model spells it */
    for (guint i = 0; specs && specs[i]; i++) {
        g_autofree char *n = NULL;
        gint64 v;
        if (!hg_dim_max_parse(specs[i], &n, &v, NULL))
            continue;
        if (name && (strcmp(n, name) == 0 || strcmp(n, model_name) == 0))
            return v;
        if (strcmp(n, "*") == 0)
            any = v;
    }
    return any;
}

static gboolean
load_model_group(HgCheckConfig *cfg, GKeyFile *kf, const char *group, GError **error)
{
    static const char *const known[] = {"calib", "dim-max", NULL};
    ModelGroup *mg = g_new0(ModelGroup, 1);
    mg->glob = g_strdup(group + strlen("model "));
    g_ptr_array_add(cfg->model_groups, mg);
    if (!known_keys(cfg, kf, group, known, error))
        return FALSE;
    g_auto(GStrv) calib = g_key_file_get_string_list(kf, group, "calib", NULL, NULL);
    if (calib) {
        GPtrArray *paths = g_ptr_array_new();
        for (guint i = 0; calib[i]; i++) {
            g_strstrip(calib[i]);
            if (!*calib[i])
                continue;
            g_ptr_array_add(paths, g_path_is_absolute(calib[i]) ? g_strdup(calib[i])
                                                                : g_build_filename(cfg->dir, calib[i], NULL));
        }
        g_ptr_array_add(paths, NULL);
        mg->calib = (char **)g_ptr_array_free(paths, FALSE);
        if (!mg->calib[0])
            return bad(error, cfg, group, "calib", "calib names no data (calib = DIR, FILE.npz or FILE.json)");
    }
    g_auto(GStrv) dims = g_key_file_get_string_list(kf, group, "dim-max", NULL, NULL);
    if (dims) {
        GPtrArray *specs = g_ptr_array_new();
        for (guint i = 0; dims[i]; i++) {
            g_strstrip(dims[i]);
            g_autoptr(GError) e = NULL;
            if (!hg_dim_max_parse(dims[i], NULL, NULL, &e)) {
                g_ptr_array_add(specs, NULL);
                g_strfreev((char **)g_ptr_array_free(specs, FALSE));
                return bad(error, cfg, group, "dim-max", "%s", e->message);
            }
            g_ptr_array_add(specs, g_strdup(dims[i]));
        }
        g_ptr_array_add(specs, NULL);
        mg->dim_max = (char **)g_ptr_array_free(specs, FALSE);
    }
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
            return bad(error, cfg, group, keys[i], "%s", e->message);
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
    static const char *const known[] = {"node", "kind", "model", "reason", NULL};
    if (!known_keys(cfg, kf, group, known, error))
        return FALSE;
    if (!s->reason || !*g_strstrip(s->reason))
        return bad(error, cfg, group, "reason", "a suppression needs a reason (reason = ...)");
    if (!s->node || !*s->node)
        return bad(error, cfg, group, "node", "a suppression needs a node pattern (node = GLOB)");
    s->kind = !kind || strcmp(kind, "*") == 0 ? -1 : hg_hazard_kind_from_name(kind);
    if (kind && strcmp(kind, "*") != 0 && s->kind < 0)
        return bad(error, cfg, group, "kind", "unknown hazard kind '%s'", kind);
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
    if (!hg_infile_read(path, &text, &len, error)) {
        g_prefix_error(error, "%s: ", path);
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
    cfg->model_groups = g_ptr_array_new_with_free_func(model_group_free);
    cfg->lines = scan_lines(text);
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (guint i = 0; groups[i]; i++) {
        const char *gname = groups[i];
        static const char *const check_keys[] = {"threshold", "margin", NULL};
        gboolean ok;
        if (strcmp(gname, "check") == 0) {
            ok = known_keys(cfg, kf, gname, check_keys, error) &&
                 check_number(cfg, kf, "threshold", &cfg->threshold, error) &&
                 check_number(cfg, kf, "margin", &cfg->margin, error);
        } else if (g_str_has_prefix(gname, "ranges ")) {
            ok = load_ranges(cfg, kf, gname, error);
        } else if (g_str_has_prefix(gname, "model ")) {
            ok = load_model_group(cfg, kf, gname, error);
        } else if (g_str_has_prefix(gname, "suppress ")) {
            ok = load_suppression(cfg, kf, gname, error);
        } else {
            ok = bad(error, cfg, gname, NULL, "unknown group (check, ranges GLOB, model GLOB, suppress NAME)");
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
        /* One that is not a regular file (a FIFO, a folder) is found too, and refused when read:
         * skipping it would check with another configuration than the repository's. */
        if (g_file_test(cand, G_FILE_TEST_EXISTS)) {
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

/* The first [model GLOB] group matching model_path that sets key (its value), or NULL. */
static char **
model_value(const HgCheckConfig *cfg, const char *model_path, gboolean calib)
{
    g_autofree char *rel = relative(cfg, model_path);
    for (guint i = 0; i < cfg->model_groups->len; i++) {
        const ModelGroup *mg = cfg->model_groups->pdata[i];
        char **v = calib ? mg->calib : mg->dim_max;
        if (v && g_pattern_match_simple(mg->glob, rel))
            return g_strdupv(v);
    }
    return NULL;
}

char **
hg_check_config_calib(const HgCheckConfig *cfg, const char *model_path)
{
    g_return_val_if_fail(cfg != NULL && model_path != NULL, NULL);
    return model_value(cfg, model_path, TRUE);
}

char **
hg_check_config_dim_max(const HgCheckConfig *cfg, const char *model_path)
{
    g_return_val_if_fail(cfg != NULL && model_path != NULL, NULL);
    return model_value(cfg, model_path, FALSE);
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
