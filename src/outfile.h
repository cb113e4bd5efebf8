/* Output files (internal): the one way the library writes a file, whatever it holds (a model, its
 * external data, JSON, a tensor). The rules, by what the path names:
 *
 *   "-"                          standard output, written directly
 *   a character device, a FIFO   opened and written directly: not atomic (a failure leaves what was
 *                                written so far)
 *   a regular file, or nothing   symbolic links resolved; a temporary ".NAME.halfguard-tmp.PID" in the
 *                                final target's own folder, renamed over the target at commit: other
 *                                processes see the old file or the new one, never a part
 *   anything else                refused, nothing written: a directory, a socket, a block device, a
 *                                symbolic link to nothing
 *
 * A file a live model was loaded from (its model file or one of its external data files) is never
 * replaced, with one exception: a model that keeps no external data may replace its own file (an
 * in-place conversion; the model's mapping keeps the old file's bytes alive after the rename).
 *
 * Temporaries are removed on SIGINT, SIGTERM and SIGHUP (a handler installed at the first temporary
 * where the signal's disposition is the default; it only unlinks, then re-raises), and the first
 * write into a folder removes the temporaries that dead processes left there (SIGKILL, a crash).
 *
 * Errors are HG_ERROR_OUTPUT with a message that starts with the path as given: "PATH: reason".
 */
#ifndef HG_OUTFILE_H
#define HG_OUTFILE_H

#include "halfguard/ir.h"

#include <sys/stat.h>

G_BEGIN_DECLS

typedef struct HgOutFile HgOutFile;

enum {
    /* The writer needs a regular file (it seeks): standard output, FIFOs and devices are refused. */
    HG_OUTFILE_SEEKABLE = 1 << 0,
};

/* Open path for writing under the rules above. self: the model being saved, which may replace its
 * own file when it keeps no external data (NULL: no such exception). Returns a handle for
 * hg_outfile_commit or hg_outfile_abort, or NULL with an HG_ERROR_OUTPUT error. */
HgOutFile *hg_outfile_open(const char *path, guint flags, const HgModel *self, GError **error);

/* The file hg_outfile_open(path) would write and hg_outfile_target name (a new string): a regular
 * file or a new one, links resolved; NULL for standard output, streams and paths it would refuse. */
char *hg_outfile_resolve(const char *path);

/* The descriptor to write to (positioned at 0 for a new file). */
int hg_outfile_fd(const HgOutFile *f);

/* TRUE for standard output, a FIFO or a character device: written in place, not seekable. */
gboolean hg_outfile_is_stream(const HgOutFile *f);

/* The file replaced or written: path with symbolic links resolved ("-" for standard output). */
const char *hg_outfile_target(const HgOutFile *f);

/* Finish writing: write_errno is the errno of a write that failed (0: none). Flushes to disk when the
 * write replaces an existing file, then closes. FALSE with an error on failure; either way f still
 * goes to hg_outfile_commit or hg_outfile_abort. */
gboolean hg_outfile_finish(HgOutFile *f, int write_errno, GError **error);

/* Finish (if not yet) and put the file in place (the rename). Frees f. On failure the temporary is
 * removed and the target is as it was. */
gboolean hg_outfile_commit(HgOutFile *f, GError **error);

/* Remove the temporary and free f (NULL is fine). A direct write stays as far as it got. */
void hg_outfile_abort(HgOutFile *f);

/* Write len bytes at data to path under the rules above. */
gboolean hg_outfile_write(const char *path, const void *data, gsize len, GError **error);

/* Write all of p to fd; FALSE with *err set to the errno on failure. */
gboolean hg_write_all(int fd, const void *p, gsize n, int *err);

/* Protect the file st describes (named name, for messages) for as long as model m lives: the model
 * file itself (model_file) or one of its external data files. The loader calls it. */
void hg_outfile_protect(const HgModel *m, const struct stat *st, const char *name, gboolean model_file);

/* Drop m's protections (hg_model_free calls it). */
void hg_outfile_forget(const HgModel *m);

G_END_DECLS

#endif
