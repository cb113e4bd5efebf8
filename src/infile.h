/* Input files read whole (internal): tensor files (.pb, .npy), calibration data (.npz, Polygraphy
 * JSON), statistics JSON and .halfguard.ini. Models are mapped by the loader, which has rules of its own.
 *
 * Only a regular file is read (a symbolic link is followed to one): a FIFO would block, a device such
 * as /dev/zero (which git can store a link to) never ends, and a directory is not data. Its size must
 * be at most hg_infile_limit(), checked before anything is allocated.
 *
 * Errors are HG_ERROR_IO. The message does not repeat the path: callers print "PATH: message".
 */
#ifndef HG_INFILE_H
#define HG_INFILE_H

#include <glib.h>

G_BEGIN_DECLS

/* The largest file read whole: half the physical memory (1 TiB where that is unknown). */
gsize hg_infile_limit(void);

/* The bytes of the regular file at path, NUL-terminated (g_free *data), and their count in *len.
 * FALSE with an error when it cannot be opened, is not a regular file, is over the limit or cannot
 * be read whole. */
gboolean hg_infile_read(const char *path, char **data, gsize *len, GError **error);

G_END_DECLS

#endif
