/* convert over many models (the CLI's, not the library's): the list of models from files, folders
 * and --from lists, where each one's output goes under -O, and the order they are reported in. */
#ifndef HG_BULK_H
#define HG_BULK_H

#include <glib.h>

G_BEGIN_DECLS

/* One model to convert. */
typedef struct {
    char *path;   /* as found: an argument, a line of --from, or a folder argument joined with the
                   * path below it */
    char *rel;    /* its path relative to the root (bulk_collect): where -O puts its output */
    char *output; /* where its output goes (the caller's to fill), or NULL */
} BulkItem;

void bulk_item_free(gpointer p);

/* The models that args (n of them) and the lines of the --from file `from` (NULL: none; "-":
 * standard input; empty lines and lines starting with '#' are skipped) name, in the order given,
 * each named once. With walk, a folder is walked for *.onnx files in byte order of their names, at
 * every depth; a symbolic link is followed only where it leads to a file or folder inside the folder
 * walked, and skip_dir (NULL: none; the output folder) is not entered. Anything else is taken as
 * named (a missing file fails when it is converted).
 *
 * Each item's rel is its path relative to the root: the folder given when the only argument is
 * one folder, else the deepest folder that holds every file named and every folder given. Two
 * items never share a rel. NULL with an error when --from cannot be read or a folder cannot be
 * walked. Notes (symbolic links not followed) go to stderr. */
GPtrArray *bulk_collect(char **args, int n, const char *from, const char *skip_dir, gboolean walk,
                        GError **error);

G_END_DECLS

#endif
