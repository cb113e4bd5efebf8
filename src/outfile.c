/* Output files: resolve where a path leads, refuse what must not be replaced, write a temporary beside
 * the target and rename it, clean temporaries up on a signal and after dead processes. The rules are
 * in outfile.h. */
#include "outfile.h"

#include "halfguard/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define TMP_TAG ".halfguard-tmp."

typedef enum { OUT_REPLACE, OUT_DIRECT, OUT_STDOUT } OutKind;

struct HgOutFile {
    OutKind kind;
    int fd;
    char *path;       /* as given, for messages */
    char *target;     /* the file replaced or written, links resolved */
    char *tmp;        /* OUT_REPLACE: the temporary */
    int slot;         /* its signal-cleanup slot, or -1 */
    gboolean existed; /* OUT_REPLACE: a file is replaced (flush it to disk before the rename) */
    gboolean finished;
};

static gboolean
fail(GError **error, const char *path, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
fail(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT, "%s: %s", path, msg);
    return FALSE;
}

gboolean
hg_write_all(int fd, const void *data, gsize n, int *err)
{
    const guint8 *p = data;
    while (n) {
        ssize_t w = write(fd, p, MIN(n, (gsize)1 << 30));
        if (w < 0) {
            if (errno == EINTR)
                continue;
            *err = errno;
            return FALSE;
        }
        p += w;
        n -= (gsize)w;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- temporaries and signals */

/* The temporaries of this process, for the signal handler. Fixed storage, so the handler reads no
 * memory that another thread may free; a slot is reused only after the others (round robin), so a
 * handler that read a slot as armed never sees its path rewritten under it. */
#define N_SLOTS 64
static char slot_path[N_SLOTS][PATH_MAX];
static atomic_int slot_state[N_SLOTS]; /* 0 free, 1 being filled, 2 armed */
static atomic_uint next_slot;
static atomic_int handlers_installed;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void
on_signal(int sig)
{
    /* Only async-signal-safe calls: unlink, then the default action (SA_RESETHAND restored it; the
     * signal is blocked until the handler returns, so raise() takes effect then). */
    for (int i = 0; i < N_SLOTS; i++)
        if (atomic_load(&slot_state[i]) == 2)
            unlink(slot_path[i]);
    raise(sig);
}

static void
install_handlers(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&handlers_installed, &expected, 1))
        return;
    for (guint i = 0; i < G_N_ELEMENTS(cleanup_signals); i++) {
        struct sigaction old, sa;
        /* A program that handles or ignores the signal itself keeps its choice. */
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

static int
slot_arm(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return -1;
    install_handlers();
    for (int k = 0; k < N_SLOTS; k++) {
        int i = (int)(atomic_fetch_add(&next_slot, 1) % N_SLOTS);
        int expected = 0;
        if (atomic_compare_exchange_strong(&slot_state[i], &expected, 1)) {
            strcpy(slot_path[i], path);
            atomic_store(&slot_state[i], 2);
            return i;
        }
    }
    return -1; /* more than N_SLOTS at once: this one is left to the sweep */
}

static void
slot_disarm(int i)
{
    if (i >= 0)
        atomic_store(&slot_state[i], 0);
}

static gboolean
slot_holds(const char *path)
{
    for (int i = 0; i < N_SLOTS; i++)
        if (atomic_load(&slot_state[i]) == 2 && strcmp(slot_path[i], path) == 0)
            return TRUE;
    return FALSE;
}

/* The PID in a temporary's name ".NAME.halfguard-tmp.PID" or ".NAME.halfguard-tmp.PID.K", or 0. */
static long
temp_pid(const char *name)
{
    if (name[0] != '.')
        return 0;
    const char *tag = NULL;
    for (const char *p = strstr(name, TMP_TAG); p; p = strstr(p + 1, TMP_TAG))
        tag = p;
    if (!tag)
        return 0;
    const char *s = tag + strlen(TMP_TAG);
    char *end;
    errno = 0;
    long pid = strtol(s, &end, 10);
    if (errno || end == s || pid <= 0 || !g_ascii_isdigit(*s))
        return 0;
    if (*end == '.') {
        const char *k = end + 1;
        strtol(k, &end, 10);
        if (end == k || !g_ascii_isdigit(*k))
            return 0;
    }
    return *end ? 0 : pid;
}

/* Remove the temporary name in dirfd if it belongs to nobody: a regular file that no process holds
 * locked (its writer locks it while writing). The lock is held across the unlink, so a writer that
 * takes the name meanwhile finds it busy. TRUE when it is gone. */
static gboolean
unlink_unlocked(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return FALSE;
    struct stat st;
    gboolean gone = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
                    unlinkat(dirfd, name, 0) == 0;
    close(fd);
    return gone;
}

/* Whether process pid is gone. EPERM: it lives, under another user. */
static gboolean
pid_dead(long pid)
{
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

typedef struct {
    dev_t dev;
    ino_t ino;
} FileId;

static GMutex swept_lock;
static GArray *swept; /* FileId of the folders already swept by this process */

/* Remove the temporaries that dead processes left in dir, once per folder and process. A temporary
 * goes only when its PID is dead (or is this process's but not one of its own) and nobody holds its
 * lock: a writer in another PID namespace with the same number keeps its file. */
static void
sweep(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return;
    g_mutex_lock(&swept_lock);
    if (!swept)
        swept = g_array_new(FALSE, FALSE, sizeof(FileId));
    gboolean done = FALSE;
    for (guint i = 0; i < swept->len && !done; i++) {
        const FileId *id = &g_array_index(swept, FileId, i);
        done = id->dev == st.st_dev && id->ino == st.st_ino;
    }
    if (!done) {
        FileId id = {st.st_dev, st.st_ino};
        g_array_append_val(swept, id);
    }
    g_mutex_unlock(&swept_lock);
    if (done)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_pid(e->d_name);
        if (!pid)
            continue;
        if (pid == self) {
            g_autofree char *full = g_build_filename(dir, e->d_name, NULL);
            if (slot_holds(full))
                continue;
        } else if (!pid_dead(pid)) {
            continue;
        }
        unlink_unlocked(dirfd(d), e->d_name);
    }
    closedir(d);
}

/* Read and write: a data file opened before the conversion (hg_model_spill_to_output) is mapped back
 * as lower writes weights into it. */
static int
open_new(const char *path)
{
    return open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
}

/* Remove the temporary name in dir if nobody holds it; TRUE when it is gone. */
static gboolean
remove_stale(const char *dir, const char *name)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return FALSE;
    gboolean gone = unlink_unlocked(dfd, name);
    close(dfd);
    return gone;
}

/* Create the temporary for f->target in its folder; TRUE with f->fd, f->tmp and f->slot set. */
static gboolean
create_temp(HgOutFile *f, const struct stat *old, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(f->target);
    g_autofree char *base = g_path_get_basename(f->target);
    sweep(dir);
    pid_t pid = getpid();
    for (guint k = 0; k < 100; k++) {
        char suffix[64];
        if (k)
            g_snprintf(suffix, sizeof suffix, TMP_TAG "%ld.%u", (long)pid, k);
        else
            g_snprintf(suffix, sizeof suffix, TMP_TAG "%ld", (long)pid);
        /* ".NAME" + suffix must fit in a file name: a long NAME is shortened. */
        gsize keep = MIN(strlen(base), NAME_MAX - 1 - strlen(suffix));
        g_autofree char *name = g_strdup_printf(".%.*s%s", (int)keep, base, suffix);
        g_autofree char *tmp = g_build_filename(dir, name, NULL);
        /* Armed before the file exists: a signal right after the open must find it. The name holds
         * our PID, so what the handler might remove before a failed open is no other live process's. */
        gboolean ours_already = slot_holds(tmp);
        int slot = ours_already ? -1 : slot_arm(tmp);
        int fd = ours_already ? -1 : open_new(tmp);
        int e = ours_already ? EEXIST : fd < 0 ? errno : 0;
        if (e == EEXIST && !ours_already && remove_stale(dir, name)) {
            fd = open_new(tmp); /* our PID's name, not ours: a dead process had this PID */
            e = fd < 0 ? errno : 0;
        }
        if (fd < 0)
            slot_disarm(slot);
        if (e == EEXIST)
            continue;
        if (fd < 0)
            return fail(error, f->path, "cannot create a file in %s: %s", dir, g_strerror(e));
        f->slot = slot;
        /* Held until the file is closed: the sweep of another process leaves a locked file alone. */
        flock(fd, LOCK_EX | LOCK_NB);
        if (old) {
            /* The replacement keeps the replaced file's owner and permissions where it can. */
            if (fchown(fd, old->st_uid, old->st_gid) != 0) {
                /* not permitted: the file becomes ours, as a new file would */
            }
            fchmod(fd, old->st_mode & 0777);
        }
        f->fd = fd;
        f->tmp = g_steal_pointer(&tmp);
        return TRUE;
    }
    return fail(error, f->path, "cannot create a file in %s: too many temporaries", dir);
}

/* ---------------------------------------------------------------- protected inputs */

typedef struct {
    dev_t dev;
    ino_t ino;
    const HgModel *owner;
    gboolean model_file;
    char *name;
} Source;

static GMutex sources_lock;
static GArray *sources; /* of Source */

void
hg_outfile_protect(const HgModel *m, const struct stat *st, const char *name, gboolean model_file)
{
    g_return_if_fail(m != NULL && st != NULL);
    Source s = {st->st_dev, st->st_ino, m, model_file, g_strdup(name)};
    g_mutex_lock(&sources_lock);
    if (!sources)
        sources = g_array_new(FALSE, FALSE, sizeof(Source));
    g_array_append_val(sources, s);
    g_mutex_unlock(&sources_lock);
}

void
hg_outfile_forget(const HgModel *m)
{
    g_mutex_lock(&sources_lock);
    for (guint i = 0; sources && i < sources->len;) {
        Source *s = &g_array_index(sources, Source, i);
        if (s->owner == m) {
            g_free(s->name);
            g_array_remove_index_fast(sources, i);
        } else {
            i++;
        }
    }
    g_mutex_unlock(&sources_lock);
}

/* FALSE with an error when st is a file a live model was loaded from, unless it is self's own model
 * file and self keeps no external data. */
static gboolean
check_not_input(const char *path, const struct stat *st, const HgModel *self, GError **error)
{
    g_mutex_lock(&sources_lock);
    gboolean self_has_data = FALSE;
    for (guint i = 0; self && sources && i < sources->len; i++) {
        const Source *s = &g_array_index(sources, Source, i);
        self_has_data |= s->owner == self && !s->model_file;
    }
    g_autofree char *msg = NULL;
    for (guint i = 0; sources && i < sources->len && !msg; i++) {
        const Source *s = &g_array_index(sources, Source, i);
        if (s->dev != st->st_dev || s->ino != st->st_ino)
            continue;
        if (s->owner == self && s->model_file && !self_has_data)
            continue; /* an in-place conversion of a self-contained model */
        if (s->owner == self && s->model_file)
            msg = g_strdup("is the input model, which keeps data in external files: write the result "
                           "elsewhere (only a self-contained model is converted in place)");
        else if (s->model_file)
            msg = g_strdup_printf("is the input model '%s'; not replaced", s->name);
        else
            msg = g_strdup_printf("is the external data file '%s' of an input model; not replaced",
                                  s->name);
    }
    g_mutex_unlock(&sources_lock);
    return msg ? fail(error, path, "%s", msg) : TRUE;
}

/* ---------------------------------------------------------------- opening */

static const char *
kind_name(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISFIFO(mode) ? "a FIFO"
                            : "not a regular file";
}

void
hg_outfile_abort(HgOutFile *f)
{
    if (!f)
        return;
    if (f->kind != OUT_STDOUT && f->fd >= 0)
        close(f->fd);
    if (f->tmp)
        unlink(f->tmp);
    slot_disarm(f->slot);
    g_free(f->path);
    g_free(f->target);
    g_free(f->tmp);
    g_free(f);
}

/* Open a character device or FIFO in place. */
static gboolean
open_direct(HgOutFile *f, GError **error)
{
    /* A FIFO blocks here until a reader opens it, as it does for the shell's '>'. */
    int fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return fail(error, f->path, "cannot open: %s", g_strerror(errno));
    if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        close(fd);
        return fail(error, f->path, "changed while it was opened; nothing written");
    }
    f->kind = OUT_DIRECT;
    f->fd = fd;
    f->target = g_strdup(f->path);
    return TRUE;
}

HgOutFile *
hg_outfile_open(const char *path, guint flags, const HgModel *self, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    HgOutFile *f = g_new0(HgOutFile, 1);
    f->fd = -1;
    f->slot = -1;
    f->path = g_strdup(path);
    gboolean seekable = (flags & HG_OUTFILE_SEEKABLE) != 0;
    gboolean ok = FALSE;
    struct stat st;
    if (strcmp(path, "-") == 0) {
        if (seekable) {
            fail(error, path, "standard output cannot take this output (it needs a file)");
        } else {
            f->kind = OUT_STDOUT;
            f->fd = STDOUT_FILENO;
            f->target = g_strdup("-");
            ok = TRUE;
        }
    } else if (!*path) {
        fail(error, path, "is not a file name");
    } else if (stat(path, &st) == 0) {
        /* What the path leads to, through any symbolic links. */
        if ((S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) && seekable)
            fail(error, path, "is %s; this output must be a regular file", kind_name(st.st_mode));
        else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
            ok = open_direct(f, error);
        else if (S_ISDIR(st.st_mode))
            fail(error, path, "is a directory, not a file");
        else if (!S_ISREG(st.st_mode))
            fail(error, path, "is %s; an output must be a regular file (replaced), a character device "
                 "or a FIFO (written to)", kind_name(st.st_mode));
        else if (check_not_input(path, &st, self, error)) {
            char *real = realpath(path, NULL);
            if (!real) {
                fail(error, path, "%s", g_strerror(errno));
            } else {
                f->target = g_strdup(real);
                free(real);
                f->existed = TRUE;
                ok = create_temp(f, &st, error);
            }
        }
    } else if (errno == ENOENT) {
        struct stat lst;
        g_autofree char *dir = g_path_get_dirname(path);
        g_autofree char *base = g_path_get_basename(path);
        char *real_dir = NULL;
        if (g_str_has_suffix(path, "/")) {
            fail(error, path, "is not a file name");
        } else if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            char to[PATH_MAX];
            ssize_t n = readlink(path, to, sizeof to - 1);
            to[n > 0 ? n : 0] = '\0';
            fail(error, path, "is a symbolic link to '%s', which does not exist; not written through",
                 to);
        } else if (!(real_dir = realpath(dir, NULL))) {
            fail(error, path, "cannot create a file in %s: %s", dir, g_strerror(errno));
        } else {
            f->target = g_build_filename(real_dir, base, NULL);
            free(real_dir);
            ok = create_temp(f, NULL, error);
        }
    } else {
        fail(error, path, "%s", g_strerror(errno));
    }
    if (!ok) {
        hg_outfile_abort(f);
        return NULL;
    }
    return f;
}

char *
hg_outfile_resolve(const char *path)
{
    g_return_val_if_fail(path != NULL, NULL);
    struct stat st, lst;
    if (!*path || strcmp(path, "-") == 0 || g_str_has_suffix(path, "/"))
        return NULL;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return NULL;
        char *real = realpath(path, NULL);
        char *r = real ? g_strdup(real) : NULL;
        free(real);
        return r;
    }
    if (errno != ENOENT || (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)))
        return NULL;
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    char *real_dir = realpath(dir, NULL);
    char *r = real_dir ? g_build_filename(real_dir, base, NULL) : NULL;
    free(real_dir);
    return r;
}

int
hg_outfile_fd(const HgOutFile *f)
{
    return f->fd;
}

gboolean
hg_outfile_is_stream(const HgOutFile *f)
{
    return f->kind != OUT_REPLACE;
}

const char *
hg_outfile_target(const HgOutFile *f)
{
    return f->target;
}

gboolean
hg_outfile_finish(HgOutFile *f, int write_errno, GError **error)
{
    if (f->finished)
        return TRUE;
    f->finished = TRUE;
    int err = write_errno;
    if (f->kind == OUT_REPLACE) {
        /* The rename makes the write atomic for every process. Flushing to disk first matters only
         * when the rename replaces a file, which a crash must not leave empty (ext4's delayed
         * allocation); GLib's g_file_set_contents follows the same rule, and a new file skips the
         * cost. */
        if (!err && f->existed && fsync(f->fd) != 0 && errno != EINVAL)
            err = errno;
    }
    if (f->kind != OUT_STDOUT && close(f->fd) != 0 && !err)
        err = errno;
    f->fd = -1;
    if (err)
        return fail(error, f->path, "cannot write: %s", g_strerror(err));
    return TRUE;
}

gboolean
hg_outfile_commit(HgOutFile *f, GError **error)
{
    gboolean ok = hg_outfile_finish(f, 0, error);
    if (ok && f->kind == OUT_REPLACE) {
        if (rename(f->tmp, f->target) == 0)
            g_clear_pointer(&f->tmp, g_free);
        else
            ok = fail(error, f->path, "cannot replace %s: %s", f->target, g_strerror(errno));
    }
    hg_outfile_abort(f); /* the temporary is gone when renamed */
    return ok;
}

gboolean
hg_outfile_write(const char *path, const void *data, gsize len, GError **error)
{
    HgOutFile *f = hg_outfile_open(path, 0, NULL, error);
    if (!f)
        return FALSE;
    int err = 0;
    hg_write_all(f->fd, data, len, &err);
    if (!hg_outfile_finish(f, err, error)) {
        hg_outfile_abort(f);
        return FALSE;
    }
    return hg_outfile_commit(f, error);
}

gboolean
hg_write_file(const char *path, const void *data, gsize len, GError **error)
{
    return hg_outfile_write(path, data, len, error);
}
