/* Input files read whole: regular files only, size checked before allocating (infile.h). */
#include "infile.h"

#include "halfguard/ir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

gsize
hg_infile_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return (gsize)1 << 40;
    return (gsize)pages / 2 * (gsize)size;
}

gboolean
hg_infile_read(const char *path, char **data, gsize *len, GError **error)
{
    g_return_val_if_fail(path != NULL && data != NULL && len != NULL, FALSE);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
    if (fd < 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s", g_strerror(errno));
        return FALSE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s", g_strerror(errno));
        close(fd);
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s",
                    S_ISDIR(st.st_mode) ? "is a directory, not a file"
                                        : "not a regular file (a FIFO, a device or a socket)");
        close(fd);
        return FALSE;
    }
    gsize limit = hg_infile_limit();
    if ((guint64)st.st_size > limit) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO,
                    "too large to read (%" G_GUINT64_FORMAT " bytes; the limit is half the physical "
                    "memory, %" G_GSIZE_FORMAT " bytes)", (guint64)st.st_size, limit);
        close(fd);
        return FALSE;
    }
    gsize n = (gsize)st.st_size;
    char *buf = g_try_malloc(n + 1);
    if (!buf) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "out of memory reading %" G_GSIZE_FORMAT " bytes", n);
        close(fd);
        return FALSE;
    }
    gsize got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            g_set_error(error, HG_ERROR, HG_ERROR_IO, "%s",
                        r < 0 ? g_strerror(e) : "the file shrank while it was read");
            g_free(buf);
            close(fd);
            return FALSE;
        }
        got += (gsize)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return TRUE;
}
