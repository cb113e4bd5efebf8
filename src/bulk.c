/* convert over many models: which models, and where their outputs go (bulk.h). */
#include "bulk.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void
bulk_item_free(gpointer p)
{
    BulkItem *it = p;
    if (!it)
        return;
    g_free(it->path);
    g_free(it->rel);
    g_free(it->output);
    g_free(it);
}

/* What the walk and the list are building. */
typedef struct {
    GPtrArray *items;    /* BulkItem*; rel holds the absolute (lexical) path until the root is known */
    GHashTable *seen;    /* absolute paths taken */
    GPtrArray *anchors;  /* char*: absolute folders every rel must be under */
    char *skip_real;     /* realpath of the folder not to enter, or NULL */
    gboolean walk;       /* walk folders (else take them as named) */
} Collect;

static void
collect_add(Collect *c, const char *path)
{
    char *abs = g_canonicalize_filename(path, NULL);
    if (!g_hash_table_add(c->seen, abs))
        return;
    BulkItem *it = g_new0(BulkItem, 1);
    it->path = g_strdup(path);
    it->rel = g_strdup(abs);
    g_ptr_array_add(c->items, it);
}

static gboolean
has_onnx_suffix(const char *name)
{
    gsize n = strlen(name);
    return n > 5 && g_ascii_strcasecmp(name + n - 5, ".onnx") == 0;
}

/* Is real (a resolved path) root_real itself or below it? */
static gboolean
is_under(const char *real, const char *root_real)
{
    gsize n = strlen(root_real);
    if (strcmp(root_real, "/") == 0)
        return TRUE;
    return strncmp(real, root_real, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

static int
cmp_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walk folder dir (shown as dir) below root_real; visited holds the resolved folders entered. */
static gboolean
walk(Collect *c, const char *dir, const char *root_real, GHashTable *visited, GError **error)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: cannot read the folder: %s", dir,
                    g_strerror(e));
        return FALSE;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            g_ptr_array_add(names, g_strdup(de->d_name));
    closedir(d);
    g_ptr_array_sort(names, cmp_names);
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        g_autofree char *path = g_build_filename(dir, name, NULL);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        gboolean link = S_ISLNK(st.st_mode);
        g_autofree char *real = NULL;
        if (link) {
            char buf[PATH_MAX];
            if (!realpath(path, buf) || stat(buf, &st) != 0)
                continue; /* dangling */
            real = g_strdup(buf);
            if (!is_under(real, root_real)) {
                if (S_ISDIR(st.st_mode) || has_onnx_suffix(name))
                    fprintf(stderr, "%s: note: symbolic link out of %s, not followed\n", path, root_real);
                continue;
            }
        }
        if (S_ISDIR(st.st_mode)) {
            if (!real) {
                char buf[PATH_MAX];
                if (!realpath(path, buf))
                    continue;
                real = g_strdup(buf);
            }
            if ((c->skip_real && strcmp(real, c->skip_real) == 0) || !g_hash_table_add(visited, g_strdup(real)))
                continue; /* the output folder, or a folder already walked (a link back up) */
            if (!walk(c, path, root_real, visited, error))
                return FALSE;
        } else if (S_ISREG(st.st_mode) && has_onnx_suffix(name)) {
            collect_add(c, path);
        }
    }
    return TRUE;
}

/* Add what arg names: a folder walked, anything else as it is. */
static gboolean
collect_arg(Collect *c, const char *arg, GError **error)
{
    struct stat st;
    g_autofree char *abs = g_canonicalize_filename(arg, NULL);
    if (c->walk && stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        char buf[PATH_MAX];
        if (!realpath(arg, buf)) {
            int e = errno;
            g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", arg, g_strerror(e));
            return FALSE;
        }
        g_autoptr(GHashTable) visited = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_add(visited, g_strdup(buf));
        g_ptr_array_add(c->anchors, g_steal_pointer(&abs));
        return walk(c, arg, buf, visited, error);
    }
    g_ptr_array_add(c->anchors, g_path_get_dirname(abs));
    collect_add(c, arg);
    return TRUE;
}

/* The lines of a --from list. */
static char **
read_list(const char *from, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (strcmp(from, "-") == 0) {
        g_autoptr(GString) s = g_string_new(NULL);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
            g_string_append_len(s, buf, (gssize)n);
        if (ferror(stdin)) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO, "--from -: cannot read standard input");
            return NULL;
        }
        len = s->len;
        text = g_string_free(g_steal_pointer(&s), FALSE);
    } else if (!g_file_get_contents(from, &text, &len, error)) {
        g_prefix_error(error, "--from: ");
        return NULL;
    }
    if (memchr(text, '\0', len)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "--from %s: a NUL byte; give one path a line",
                    from);
        return NULL;
    }
    return g_strsplit(text, "\n", -1);
}

/* The deepest folder above or at every anchor (absolute, lexical paths). */
static char *
common_root(const GPtrArray *anchors)
{
    char *root = g_strdup(anchors->pdata[0]);
    for (guint i = 1; i < anchors->len; i++) {
        const char *a = anchors->pdata[i];
        while (!is_under(a, root)) {
            char *up = g_path_get_dirname(root);
            g_free(root);
            root = up;
        }
    }
    return root;
}

GPtrArray *
bulk_collect(char **args, int n, const char *from, const char *skip_dir, gboolean walk, GError **error)
{
    Collect c = {g_ptr_array_new_with_free_func(bulk_item_free),
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL), g_ptr_array_new_with_free_func(g_free),
                 NULL, walk};
    char buf[PATH_MAX];
    if (skip_dir && realpath(skip_dir, buf))
        c.skip_real = g_strdup(buf);
    gboolean ok = TRUE;
    for (int i = 0; ok && i < n; i++)
        ok = collect_arg(&c, args[i], error);
    g_auto(GStrv) lines = ok && from ? read_list(from, error) : NULL;
    ok = ok && (!from || lines);
    for (guint i = 0; ok && lines && lines[i]; i++) {
        char *line = lines[i];
        gsize len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        if (*line && *line != '#')
            ok = collect_arg(&c, line, error);
    }
    if (ok && c.items->len) {
        g_autofree char *root = common_root(c.anchors);
        gsize rn = strcmp(root, "/") == 0 ? 0 : strlen(root);
        for (guint i = 0; i < c.items->len; i++) {
            BulkItem *it = c.items->pdata[i];
            char *rel = g_strdup(it->rel + rn + 1);
            g_free(it->rel);
            it->rel = rel;
        }
    }
    g_hash_table_unref(c.seen);
    g_ptr_array_unref(c.anchors);
    g_free(c.skip_real);
    if (!ok)
        g_clear_pointer(&c.items, g_ptr_array_unref);
    return c.items;
}
