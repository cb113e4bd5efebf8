/* convert over many models: which models, and where their outputs go (bulk.h). */
#include "bulk.h"

#include "cli.h"
#include "halfguard/halfguard.h"

#include <json-glib/json-glib.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- running */

void
bulk_record_clear(BulkRecord *rec)
{
    g_clear_pointer(&rec->message, g_free);
}

guint
bulk_default_jobs(void)
{
    return MAX(1u, g_get_num_processors());
}

/* The peak resident set since peak_reset: the kernel's high-water mark, which writing 5 to
 * clear_refs resets (Linux 4.0); where it cannot be reset, the process's peak. */
static void
peak_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "5", 1) < 0) {
            /* the process's own peak is what is left */
        }
        close(fd);
    }
}

static guint64
peak_read(void)
{
    g_autofree char *status = NULL;
    if (g_file_get_contents("/proc/self/status", &status, NULL, NULL)) {
        const char *hwm = strstr(status, "\nVmHWM:");
        if (hwm)
            return g_ascii_strtoull(hwm + 7, NULL, 10) * 1024u;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (guint64)ru.ru_maxrss * 1024u;
}

/* Convert one item here, timing it. */
static void
convert_here(BulkItem *it, BulkRecord *rec, BulkConvertFunc convert, gpointer data)
{
    peak_reset();
    gint64 t0 = g_get_monotonic_time();
    convert(it, rec, data);
    rec->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
    rec->peak_bytes = peak_read();
}

/* A record as a child process hands it back: the fixed part, then the message's bytes. */
typedef struct {
    gint32 status, figures, stop;
    gint64 macs, macs_fp16, weight_bytes, weight_bytes_fp16;
    guint32 islands, casts, hazards, message_len;
    double seconds;
    guint64 peak_bytes;
} Wire;

static void
wire_write(int fd, const BulkRecord *rec)
{
    gsize mlen = rec->message ? strlen(rec->message) : 0;
    Wire w = {(gint32)rec->status, rec->figures, rec->stop, rec->macs, rec->macs_fp16, rec->weight_bytes,
              rec->weight_bytes_fp16, rec->islands, rec->casts, rec->hazards, (guint32)mlen, rec->seconds,
              rec->peak_bytes};
    g_autoptr(GByteArray) buf = g_byte_array_new();
    g_byte_array_append(buf, (const guint8 *)&w, sizeof w);
    if (mlen)
        g_byte_array_append(buf, (const guint8 *)rec->message, (guint)mlen);
    gsize off = 0;
    while (off < buf->len) {
        ssize_t n = write(fd, buf->data + off, buf->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (gsize)n;
    }
}

/* Read exactly n bytes from the pipe fd; FALSE at its end (the worker died) or on an error. */
static gboolean
read_exact(int fd, void *p, gsize n)
{
    gsize off = 0;
    while (off < n) {
        ssize_t k = read(fd, (char *)p + off, n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return FALSE;
        off += (gsize)k;
    }
    return TRUE;
}

/* A record from a worker's pipe. */
static gboolean
wire_read(int fd, BulkRecord *rec)
{
    Wire w;
    if (!read_exact(fd, &w, sizeof w))
        return FALSE;
    g_autofree char *message = w.message_len ? g_malloc(w.message_len + 1) : NULL;
    if (message && !read_exact(fd, message, w.message_len))
        return FALSE;
    if (message)
        message[w.message_len] = '\0';
    *rec = (BulkRecord){(BulkStatus)w.status, g_steal_pointer(&message), w.figures, w.macs, w.macs_fp16,
                        w.weight_bytes, w.weight_bytes_fp16, w.islands, w.casts, w.hazards, w.seconds,
                        w.peak_bytes, w.stop};
    return TRUE;
}

/* One model: converted (or failed) and waiting for its turn to be reported. */
typedef struct {
    gboolean done;
    BulkRecord record;
    GBytes *out_text, *err_text; /* what its conversion printed */
} Slot;

/* A worker: a child process that converts the models it is sent, one at a time. Its standard
 * output and error are memfds shared with this process, emptied before each model. */
typedef struct {
    pid_t pid;      /* 0: not running */
    int to, from;   /* model indices to it (guint32; a socket), records from it (a pipe) */
    int out, err;   /* its standard output and error */
    gint64 current; /* the model it converts, or -1 */
} Worker;

static void
close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void
worker_close(Worker *w)
{
    close_fd(&w->to);
    close_fd(&w->from);
    close_fd(&w->out);
    close_fd(&w->err);
}

/* The workers running, for the signal handler. */
static Worker *live_workers;
static guint live_n;

static void
pass_signal_on(int sig)
{
    for (guint i = 0; i < live_n; i++)
        if (live_workers[i].pid > 0)
            kill(live_workers[i].pid, sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int passed_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void
copy_out(GBytes *b, FILE *f)
{
    gsize len = 0;
    const void *p = b ? g_bytes_get_data(b, &len) : NULL;
    if (len)
        fwrite(p, 1, len, f);
    fflush(f);
}

/* Everything in the file fd refers to, from its start. */
static GBytes *
read_all(int fd)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[65536];
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, chunk, sizeof chunk, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g_byte_array_append(buf, chunk, (guint)n);
        off += n;
    }
    return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

/* What a worker printed, then "FILE: message". */
static GBytes *
error_text(GBytes *printed, const BulkItem *it, const char *message)
{
    g_autoptr(GByteArray) b = g_byte_array_new();
    gsize len = 0;
    const guint8 *p = printed ? g_bytes_get_data(printed, &len) : NULL;
    if (len)
        g_byte_array_append(b, p, (guint)len);
    g_autofree char *line = g_strdup_printf("%s: %s\n", it->path, message);
    g_byte_array_append(b, (const guint8 *)line, (guint)strlen(line));
    return g_byte_array_free_to_bytes(g_steal_pointer(&b));
}

/* The body of a worker: convert each index read from `to`, hand back its record on `from`. */
static G_NORETURN void
worker_main(Worker *w, GPtrArray *items, BulkConvertFunc convert, gpointer data)
{
    guint32 index;
    /* The tests' way to kill a worker in the middle of a model: one whose path ends so. */
    const char *crash = g_getenv("HALFGUARD_TEST_CRASH");
    while (read_exact(w->to, &index, sizeof index) && index < items->len) {
        if (crash && *crash && g_str_has_suffix(((BulkItem *)items->pdata[index])->path, crash)) {
            fputs("about to be killed\n", stderr);
            fflush(stderr);
            kill(getpid(), SIGKILL);
        }
        BulkRecord rec = {0};
        convert_here(items->pdata[index], &rec, convert, data);
        fflush(stdout);
        fflush(stderr);
        wire_write(w->from, &rec);
        bulk_record_clear(&rec);
    }
    _exit(0);
}

/* Start worker k of all (n of them). FALSE with errno when it cannot be started. */
static gboolean
worker_start(Worker *all, guint n, guint k, GPtrArray *items, BulkConvertFunc convert, gpointer data)
{
    Worker *w = &all[k];
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    w->out = memfd_create("halfguard-stdout", MFD_CLOEXEC);
    w->err = memfd_create("halfguard-stderr", MFD_CLOEXEC);
    /* to: a socket, so that sending to a worker that has died fails instead of raising SIGPIPE */
    if (w->out < 0 || w->err < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to) != 0 ||
        pipe2(from, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            close_fd(&to[i]);
            close_fd(&from[i]);
        }
        worker_close(w);
        errno = e;
        return FALSE;
    }
    fflush(stdout);
    fflush(stderr);
    sigset_t block, old;
    sigfillset(&block);
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
        for (guint i = 0; i < G_N_ELEMENTS(passed_signals); i++)
            signal(passed_signals[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        for (guint i = 0; i < n; i++) /* the other workers' pipes: they must see their ends */
            if (i != k)
                worker_close(&all[i]);
        close(to[1]);
        close(from[0]);
        dup2(w->out, STDOUT_FILENO);
        dup2(w->err, STDERR_FILENO);
        w->to = to[0];
        w->from = from[1];
        worker_main(w, items, convert, data);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(to[0]);
    close(from[1]);
    w->to = to[1];
    w->from = from[0];
    if (pid < 0) {
        worker_close(w);
        errno = e;
        return FALSE;
    }
    w->pid = pid;
    w->current = -1;
    return TRUE;
}

/* Send model index to idle worker w, its outputs emptied first. */
static gboolean
worker_send(Worker *w, guint index)
{
    /* The worker's descriptors share these files' offsets: back to 0 for its next lines. */
    if (ftruncate(w->out, 0) != 0 || ftruncate(w->err, 0) != 0 || lseek(w->out, 0, SEEK_SET) != 0 ||
        lseek(w->err, 0, SEEK_SET) != 0)
        return FALSE;
    guint32 i = index;
    if (send(w->to, &i, sizeof i, MSG_NOSIGNAL) != (ssize_t)sizeof i)
        return FALSE;
    w->current = index;
    return TRUE;
}

/* The end of worker w: its pipes closed, the process reaped. Returns the wait status (0 when it was
 * not running). */
static int
worker_stop(Worker *w)
{
    int st = 0;
    worker_close(w);
    if (w->pid > 0)
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
        }
    w->pid = 0;
    return st;
}

/* Worker w has a record ready, or has died: fill the slot of the model it was converting. */
static void
worker_collect(Worker *w, Slot *slot, const BulkItem *it)
{
    BulkRecord rec = {0};
    gboolean ok = wire_read(w->from, &rec);
    g_autoptr(GBytes) out = read_all(w->out);
    g_autoptr(GBytes) err = read_all(w->err);
    slot->done = TRUE;
    slot->out_text = g_steal_pointer(&out);
    w->current = -1;
    if (ok) {
        slot->record = rec;
        slot->err_text = g_steal_pointer(&err);
        return;
    }
    bulk_record_clear(&rec);
    int st = worker_stop(w);
    slot->record = (BulkRecord){BULK_ERROR, NULL};
    slot->record.message = WIFSIGNALED(st) ? g_strdup_printf("its conversion crashed: signal %d (%s)",
                                                             WTERMSIG(st), g_strsignal(WTERMSIG(st)))
                                           : g_strdup_printf("its conversion ended with exit status %d",
                                                             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    slot->err_text = error_text(err, it, slot->record.message);
}

/* The progress line on a terminal: models done of all, the one started last, the time left. */
typedef struct {
    gboolean on;
    guint total;
    gint64 t0;
    gboolean shown; /* a line is on the terminal */
} Progress;

static void
progress_clear(Progress *p)
{
    if (p->on && p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = FALSE;
}

static void
progress_show(Progress *p, guint done, const char *current)
{
    double elapsed = (double)(g_get_monotonic_time() - p->t0) / 1e6;
    if (!p->on || done >= p->total || elapsed < cli_progress_after()) /* quick work shows none */
        return;
    g_autofree char *eta = done ? g_strdup_printf(", about %.0f s left", elapsed / done * (p->total - done))
                                : g_strdup("");
    fprintf(stderr, "\r[%u/%u%s] %s\033[K", done, p->total, eta, current ? current : "");
    fflush(stderr);
    p->shown = TRUE;
}

void
bulk_run(GPtrArray *items, guint jobs, BulkConvertFunc convert, BulkDoneFunc done, gpointer data)
{
    guint n = items->len;
    Progress progress = {n > 1 && isatty(STDERR_FILENO) && !cli_quiet, n, g_get_monotonic_time(), FALSE};
    /* On a terminal even one job converts in a worker: its lines are held, so the progress line
     * can stay below them. */
    if ((jobs <= 1 && !progress.on) || n <= 1) {
        for (guint i = 0; i < n; i++) {
            BulkRecord rec = {0};
            convert_here(items->pdata[i], &rec, convert, data);
            done(i, items->pdata[i], &rec, data);
            gboolean stop = rec.stop;
            bulk_record_clear(&rec);
            if (stop)
                break;
        }
        return;
    }
    jobs = MAX(1u, MIN(jobs, n));
    g_autofree Slot *slots = g_new0(Slot, n);
    g_autofree Worker *workers = g_new0(Worker, jobs);
    g_autofree struct pollfd *fds = g_new0(struct pollfd, jobs);
    for (guint k = 0; k < jobs; k++)
        workers[k] = (Worker){0, -1, -1, -1, -1, -1};
    live_workers = workers;
    live_n = jobs;
    struct sigaction old[G_N_ELEMENTS(passed_signals)];
    for (guint i = 0; i < G_N_ELEMENTS(passed_signals); i++) {
        struct sigaction sa = {0};
        sa.sa_handler = pass_signal_on;
        sigemptyset(&sa.sa_mask);
        sigaction(passed_signals[i], NULL, &old[i]);
        if (old[i].sa_handler == SIG_DFL)
            sigaction(passed_signals[i], &sa, NULL);
    }
    /* A model's printed lines are held until every model before it has gone out. */
    guint next = 0, reported = 0, limit = n, shown_at = G_MAXUINT;
    while (reported < limit) {
        for (guint k = 0; k < jobs && next < limit; k++) {
            Worker *w = &workers[k];
            if (w->pid && w->current >= 0)
                continue;
            if (!w->pid && !worker_start(workers, jobs, k, items, convert, data)) {
                int e = errno;
                Slot *slot = &slots[next];
                slot->done = TRUE;
                slot->record = (BulkRecord){BULK_ERROR, NULL};
                slot->record.message = g_strdup_printf("cannot start its conversion: %s", g_strerror(e));
                slot->err_text = error_text(NULL, items->pdata[next], slot->record.message);
                next++;
                continue;
            }
            if (!worker_send(w, next)) {
                worker_stop(w); /* started again at the next turn */
                continue;
            }
            next++;
        }
        gboolean shown = reported < limit && slots[reported].done;
        if (shown)
            progress_clear(&progress);
        while (reported < limit && slots[reported].done) {
            Slot *slot = &slots[reported];
            copy_out(slot->out_text, stdout);
            copy_out(slot->err_text, stderr);
            g_clear_pointer(&slot->out_text, g_bytes_unref);
            g_clear_pointer(&slot->err_text, g_bytes_unref);
            done(reported, items->pdata[reported], &slot->record, data);
            if (slot->record.stop)
                limit = next; /* those started are waited for; none is started after them */
            bulk_record_clear(&slot->record);
            reported++;
        }
        /* once per model finished, and at the start: a model finished while an earlier one still runs
         * counts, though its lines wait for that one */
        guint finished = reported;
        for (guint i = reported; i < next; i++)
            finished += slots[i].done;
        if (finished != shown_at) {
            progress_clear(&progress); /* each line replaced whole, as a terminal's reader expects */
            progress_show(&progress, finished, next ? ((BulkItem *)items->pdata[next - 1])->path : NULL);
            shown_at = finished;
        }
        nfds_t nf = 0;
        for (guint k = 0; k < jobs; k++)
            if (workers[k].pid && workers[k].current >= 0)
                fds[nf++] = (struct pollfd){workers[k].from, POLLIN, 0};
        if (!nf)
            continue;
        if (poll(fds, nf, -1) < 0)
            continue; /* EINTR */
        for (nfds_t f = 0; f < nf; f++) {
            if (!fds[f].revents)
                continue;
            for (guint k = 0; k < jobs; k++)
                if (workers[k].pid && workers[k].from == fds[f].fd && workers[k].current >= 0) {
                    guint index = (guint)workers[k].current;
                    worker_collect(&workers[k], &slots[index], items->pdata[index]);
                    break;
                }
        }
    }
    for (guint k = 0; k < jobs; k++)
        worker_stop(&workers[k]); /* the end of its pipe ends it */
    for (guint i = 0; i < G_N_ELEMENTS(passed_signals); i++)
        if (old[i].sa_handler == SIG_DFL)
            sigaction(passed_signals[i], &old[i], NULL);
    live_workers = NULL;
    live_n = 0;
}

/* ---------------------------------------------------------------- --results */

static const char *const status_names[] = {"converted", "unchanged", "skipped", "error"};

/* One member of a --results line: a string (invalid UTF-8 replaced) or null. */
static void
add_string(JsonBuilder *b, const char *key, const char *s)
{
    json_builder_set_member_name(b, key);
    if (s) {
        g_autofree char *valid = g_utf8_make_valid(s, -1);
        json_builder_add_string_value(b, valid);
    } else {
        json_builder_add_null_value(b);
    }
}

/* A number, or null when not known (or not finite: JSON has no inf or NaN). */
static void
add_number(JsonBuilder *b, const char *key, gboolean known, double v)
{
    json_builder_set_member_name(b, key);
    if (known && isfinite(v))
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void
add_int(JsonBuilder *b, const char *key, gboolean known, gint64 v)
{
    json_builder_set_member_name(b, key);
    if (known)
        json_builder_add_int_value(b, v);
    else
        json_builder_add_null_value(b);
}

char *
bulk_result_line(const BulkItem *it, const BulkRecord *rec)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    gboolean written = rec->status == BULK_CONVERTED || rec->status == BULK_UNCHANGED;
    gboolean f = rec->figures;
    json_builder_begin_object(b);
    add_string(b, "file", it->path);
    add_string(b, "output", written ? it->output : NULL);
    add_string(b, "status", status_names[rec->status]);
    add_string(b, "message", rec->message);
    add_number(b, "fp16_macs_share", f && rec->macs > 0, (double)rec->macs_fp16 / (double)rec->macs);
    add_number(b, "fp16_weight_bytes_share", f && rec->weight_bytes > 0,
               (double)rec->weight_bytes_fp16 / (double)rec->weight_bytes);
    add_int(b, "macs", f && rec->macs > 0, rec->macs); /* 0: unknown (symbolic dims) */
    add_int(b, "macs_fp16", f && rec->macs > 0, rec->macs_fp16);
    add_int(b, "weight_bytes", f, rec->weight_bytes);
    add_int(b, "weight_bytes_fp16", f, rec->weight_bytes_fp16);
    add_int(b, "islands", f, rec->islands);
    add_int(b, "casts", f, rec->casts);
    add_int(b, "hazards", f, rec->hazards);
    add_number(b, "seconds", TRUE, rec->seconds);
    add_int(b, "peak_bytes", TRUE, (gint64)rec->peak_bytes);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root); /* not pretty: one line */
    g_autofree char *text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}

gboolean
bulk_same_bytes(const char *a, const char *b)
{
    struct stat sa, sb;
    /* stat first: opening a FIFO to read would wait for a writer */
    if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0 || stat(a, &sa) != 0 || stat(b, &sb) != 0 ||
        !S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode) || sa.st_size != sb.st_size)
        return FALSE;
    int fa = open(a, O_RDONLY | O_CLOEXEC | O_NONBLOCK), fb = open(b, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    gboolean same = fa >= 0 && fb >= 0 && fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0 && S_ISREG(sa.st_mode) &&
                    S_ISREG(sb.st_mode) && sa.st_size == sb.st_size;
    static char ba[65536], bb[65536]; /* each process converts one model at a time */
    while (same) {
        ssize_t na = read(fa, ba, sizeof ba), nb = na > 0 ? read(fb, bb, (size_t)na) : 0;
        if (na <= 0)
            break;
        same = nb == na && memcmp(ba, bb, (size_t)na) == 0;
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return same;
}

/* ---------------------------------------------------------------- --shard */

gboolean
bulk_shard_parse(const char *spec, guint *i, guint *n, GError **error)
{
    guint64 a = 0, b = 0;
    g_auto(GStrv) parts = g_strsplit(spec, "/", -1);
    if (g_strv_length(parts) != 2 || !g_ascii_string_to_unsigned(parts[0], 10, 1, G_MAXUINT, &a, NULL) ||
        !g_ascii_string_to_unsigned(parts[1], 10, 1, G_MAXUINT, &b, NULL) || a > b) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--shard takes I/N with 1 <= I <= N (e.g. 2/8), not '%s'", spec);
        return FALSE;
    }
    *i = (guint)a;
    *n = (guint)b;
    return TRUE;
}

void
bulk_shard(GPtrArray *items, guint i, guint n)
{
    guint kept = 0;
    for (guint k = 0; k < items->len; k++) {
        if (k % n == i - 1) {
            gpointer p = items->pdata[kept];
            items->pdata[kept++] = items->pdata[k];
            items->pdata[k] = p;
        }
    }
    g_ptr_array_set_size(items, kept);
}

/* ---------------------------------------------------------------- --skip-existing */

char *
bulk_options_hash(const GOptionEntry *entries, const char *const *skip, const char *version)
{
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    g_autoptr(GString) s = g_string_new(NULL);
    g_string_append_printf(s, "halfguard %s\n", version);
    for (const GOptionEntry *e = entries; e->long_name; e++) {
        if (!e->arg_data || (skip && g_strv_contains(skip, e->long_name)))
            continue;
        switch (e->arg) {
        case G_OPTION_ARG_NONE:
            if (*(gboolean *)e->arg_data)
                g_string_append_printf(s, "--%s\n", e->long_name);
            break;
        case G_OPTION_ARG_STRING:
        case G_OPTION_ARG_FILENAME:
            if (*(char **)e->arg_data)
                g_string_append_printf(s, "--%s=%s\n", e->long_name, *(char **)e->arg_data);
            break;
        case G_OPTION_ARG_STRING_ARRAY:
        case G_OPTION_ARG_FILENAME_ARRAY:
            for (char **v = *(char ***)e->arg_data; v && *v; v++)
                g_string_append_printf(s, "--%s=%s\n", e->long_name, *v);
            break;
        case G_OPTION_ARG_INT:
            g_string_append_printf(s, "--%s=%d\n", e->long_name, *(int *)e->arg_data);
            break;
        case G_OPTION_ARG_INT64:
            g_string_append_printf(s, "--%s=%" G_GINT64_FORMAT "\n", e->long_name, *(gint64 *)e->arg_data);
            break;
        case G_OPTION_ARG_DOUBLE: {
            char buf[G_ASCII_DTOSTR_BUF_SIZE];
            g_string_append_printf(s, "--%s=%s\n", e->long_name,
                                   g_ascii_dtostr(buf, sizeof buf, *(double *)e->arg_data));
            break;
        }
        default:
            g_string_append_printf(s, "--%s=?\n", e->long_name); /* no such option in convert */
            break;
        }
    }
    g_checksum_update(sum, (const guchar *)s->str, (gssize)s->len);
    return g_strdup(g_checksum_get_string(sum));
}

gboolean
bulk_output_newer(const char *in, const char *out)
{
    struct stat si, so;
    if (stat(in, &si) != 0 || stat(out, &so) != 0 || !S_ISREG(so.st_mode))
        return FALSE;
    return so.st_mtim.tv_sec > si.st_mtim.tv_sec ||
           (so.st_mtim.tv_sec == si.st_mtim.tv_sec && so.st_mtim.tv_nsec > si.st_mtim.tv_nsec);
}

/* The options hash in m's metadata_props, or NULL. */
static const char *
model_options(const HgModel *m)
{
    for (guint i = 0; m->metadata && i < m->metadata->len; i++) {
        const HgStringPair *p = m->metadata->pdata[i];
        if (g_strcmp0(p->key, BULK_OPTIONS_KEY) == 0)
            return p->value;
    }
    return NULL;
}

gboolean
bulk_up_to_date(const char *in, const char *out, const char *hash)
{
    if (!bulk_output_newer(in, out))
        return FALSE;
    g_autoptr(HgModel) m = hg_model_load(out, NULL);
    return m && g_strcmp0(model_options(m), hash) == 0;
}

static void
pair_free(gpointer p)
{
    HgStringPair *sp = p;
    g_free(sp->key);
    g_free(sp->value);
    g_free(sp);
}

void
bulk_model_set_options(HgModel *m, const char *hash)
{
    for (guint i = 0; m->metadata && i < m->metadata->len; i++) {
        HgStringPair *p = m->metadata->pdata[i];
        if (g_strcmp0(p->key, BULK_OPTIONS_KEY) == 0) {
            g_free(p->value);
            p->value = g_strdup(hash);
            return;
        }
    }
    if (!m->metadata)
        m->metadata = g_ptr_array_new_with_free_func(pair_free);
    HgStringPair *p = g_new0(HgStringPair, 1);
    p->key = g_strdup(BULK_OPTIONS_KEY);
    p->value = g_strdup(hash);
    g_ptr_array_add(m->metadata, p);
}

gboolean
bulk_model_is_file(HgModel *m, const char *path)
{
    gsize len = 0;
    g_autofree guint8 *bytes = hg_model_save_bytes(m, &len, NULL);
    g_autoptr(GMappedFile) f = bytes ? g_mapped_file_new(path, FALSE, NULL) : NULL;
    return f && g_mapped_file_get_length(f) == len &&
           (len == 0 || memcmp(g_mapped_file_get_contents(f), bytes, len) == 0);
}
