/* The graph IR: construction and editing. Its order and invariants are ir_verify.c. */
#include "halfguard/ir.h"
#include "ir_private.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

G_DEFINE_QUARK(halfguard-error-quark, hg_error)

/* ---------------------------------------------------------------- blobs */

struct HgBlob {
    gint refcount;
    void *data;
    gsize len;
    gboolean mapped;
    int fd;     /* the mapped file, open: copies read the same inode even after a rename */
    HgBlob *file;      /* hg_blob_new_mapped_at: the blob whose fd this maps (a reference) */
    gint64 file_offset; /* where data starts in the file */
    gboolean scratch;  /* maps a scratch file */
    GHashTable *facts; /* of a file's own blob: hg_blob_fact_get/put (FactKey -> GBytes), or NULL */
    gboolean keep_bytes; /* of a file's own blob: a spill that becomes an output; never punched */
};

HgBlob *
hg_blob_new_take(void *data, gsize len)
{
    HgBlob *b = g_new0(HgBlob, 1);
    b->refcount = 1;
    b->data = data;
    b->len = len;
    b->fd = -1;
    return b;
}

HgBlob *
hg_blob_new_mapped(void *addr, gsize len, int fd)
{
    HgBlob *b = hg_blob_new_take(addr, len);
    b->mapped = TRUE;
    b->fd = fd;
    return b;
}

HgBlob *
hg_blob_new_mapped_at(void *addr, gsize len, HgBlob *file, gint64 offset, gboolean scratch)
{
    HgBlob *b = hg_blob_new_take(addr, len);
    b->mapped = TRUE;
    b->file = hg_blob_ref(file);
    b->file_offset = offset;
    b->scratch = scratch;
    return b;
}

int
hg_blob_fd(const HgBlob *b)
{
    return b && b->mapped ? (b->file ? b->file->fd : b->fd) : -1;
}

gint64
hg_blob_file_offset(const HgBlob *b)
{
    return b ? b->file_offset : 0;
}

gboolean
hg_blob_is_spill(const HgBlob *b)
{
    return b && b->scratch;
}

void
hg_blob_release(const HgBlob *b, const void *p, gsize len)
{
    if (!b || !b->mapped || !b->len || !p)
        return;
    guintptr page = (guintptr)sysconf(_SC_PAGESIZE);
    guintptr lo = MAX((guintptr)p, (guintptr)b->data), hi = MIN((guintptr)p + len, (guintptr)b->data + b->len);
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    /* Only whole pages inside [p, p + len): a page shared with bytes still in use elsewhere stays.
     * The mapping is read-only and never written, so a later read finds the file's bytes again. */
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void
hg_tensor_release(const HgTensor *t)
{
    if (t && t->data && t->nbytes)
        hg_blob_release(t->blob, t->data, t->nbytes);
}

/* ---------------------------------------------------------------- scratch files */

struct HgSpill {
    gint refcount;
    HgBlob *file; /* its open file (no mapping of its own) */
    gint64 end;   /* bytes written so far */
};

/* What m->spill holds: the scratch file, and the output's data file opened early
 * (hg_model_spill_to_output), into which lower writes the weights it converts. */
typedef struct {
    HgSpill *scratch;
    HgSpill *out;      /* the output data file's own inode, or NULL */
    HgOutFile *of;     /* its temporary, until a save takes it or the model is freed */
    char *data_target; /* the data file's final path, as the save computes it */
    gboolean taken;    /* a save took it: nothing more goes into it */
} Spills;

static Spills *
spills_of(HgModel *m)
{
    if (!m->spill)
        m->spill = g_new0(Spills, 1);
    return m->spill;
}

static void
spills_free(Spills *sp)
{
    if (!sp)
        return;
    hg_outfile_abort(sp->of);
    hg_spill_unref(sp->out);
    hg_spill_unref(sp->scratch);
    g_free(sp->data_target);
    g_free(sp);
}

/* A spill over the open file fd (owned). keep: the file becomes an output, so no byte of it is ever
 * punched out. */
static HgSpill *
spill_over(int fd, gboolean keep)
{
    HgSpill *s = g_new0(HgSpill, 1);
    s->refcount = 1;
    s->file = hg_blob_new_mapped(NULL, 0, fd);
    s->file->keep_bytes = keep;
    return s;
}

HgSpill *
hg_spill_new(GError **error)
{
    char *path = NULL;
    GError *e = NULL;
    int fd = g_file_open_tmp("halfguard-XXXXXX.scratch", &path, &e);
    if (fd < 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "scratch file in %s: %s", g_get_tmp_dir(), e->message);
        g_error_free(e);
        return NULL;
    }
    /* Unlinked at once: nothing is left behind, whatever ends the process. */
    unlink(path);
    g_free(path);
    return spill_over(fd, FALSE);
}

void
hg_spill_unref(HgSpill *s)
{
    if (!s || !g_atomic_int_dec_and_test(&s->refcount))
        return;
    hg_blob_unref(s->file);
    g_free(s);
}

HgBlob *
hg_spill_put(HgSpill *s, gsize len, void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data),
               gpointer data, GError **error)
{
    g_return_val_if_fail(s != NULL && len > 0 && fill != NULL, NULL);
    gint64 page = sysconf(_SC_PAGESIZE);
    gint64 off = (s->end + page - 1) / page * page; /* mmap maps from page boundaries */
    int fd = s->file->fd;
    enum { PIECE = 1 << 20 };
    g_autofree guint8 *buf = g_malloc(MIN(len, (gsize)PIECE));
    for (gsize from = 0; from < len;) {
        gsize count = MIN(len - from, (gsize)PIECE);
        fill(buf, from, count, data);
        gsize done = 0;
        while (done < count) {
            ssize_t n = pwrite(fd, buf + done, count - done, off + (gint64)(from + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                g_set_error(error, HG_ERROR, HG_ERROR_IO, "scratch file in %s: %s", g_get_tmp_dir(),
                            g_strerror(n < 0 ? errno : ENOSPC));
                return NULL;
            }
            done += (gsize)n;
        }
        from += count;
    }
    void *addr = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
    if (addr == MAP_FAILED) {
        g_set_error(error, HG_ERROR, HG_ERROR_IO, "scratch file in %s: cannot map: %s", g_get_tmp_dir(),
                    g_strerror(errno));
        return NULL;
    }
    s->end = off + (gint64)len;
    return hg_blob_new_mapped_at(addr, len, s->file, off, TRUE);
}

const void *
hg_blob_data(const HgBlob *b, gsize *len)
{
    if (len)
        *len = b->len;
    return b->data;
}

HgBlob *
hg_blob_ref(HgBlob *blob)
{
    g_return_val_if_fail(blob != NULL, NULL);
    g_atomic_int_inc(&blob->refcount);
    return blob;
}

void
hg_blob_unref(HgBlob *blob)
{
    if (!blob || !g_atomic_int_dec_and_test(&blob->refcount))
        return;
    if (blob->mapped) {
        if (blob->len)
            munmap(blob->data, blob->len);
        /* Bytes of the scratch file that nothing maps any more: dropped now, so that the kernel
         * does not write them back to disk while the conversion goes on. */
        if (blob->scratch && blob->file && !blob->file->keep_bytes && blob->len)
            (void)fallocate(blob->file->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, blob->file_offset,
                            (off_t)blob->len);
    } else {
        g_free(blob->data);
    }
    if (blob->fd >= 0)
        close(blob->fd);
    hg_blob_unref(blob->file);
    if (blob->facts)
        g_hash_table_destroy(blob->facts);
    g_free(blob);
}

/* ---------------------------------------------------------------- facts about mapped bytes */

typedef struct {
    gint64 off;   /* where the bytes start in the file */
    guint64 len;
    guint kind;
    gint64 p[HG_FACT_PARAMS];
} FactKey;

static guint
fact_hash(gconstpointer k)
{
    const FactKey *f = k;
    guint h = g_int64_hash(&f->off) * 31u + (guint)f->len * 17u + f->kind;
    for (int i = 0; i < HG_FACT_PARAMS; i++)
        h = h * 31u + (guint)f->p[i];
    return h;
}

static gboolean
fact_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(FactKey)) == 0;
}

/* One lock for every file's table: a lookup is a hash probe, next to a pass over megabytes. A pthread
 * mutex, not GMutex: GLib's futex-based GMutex is invisible to helgrind (see interp.c). */
static pthread_mutex_t facts_lock = PTHREAD_MUTEX_INITIALIZER;

/* The blob that owns the file b's bytes lie in, and the key of [data, data + len) there; NULL when
 * b is not a mapping of a file (heap bytes may change; a file we mapped read-only does not). */
static HgBlob *
fact_key(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np, FactKey *key)
{
    if (!b || !b->mapped || !data || (const guint8 *)data < (const guint8 *)b->data ||
        (const guint8 *)data + len > (const guint8 *)b->data + b->len || np > HG_FACT_PARAMS)
        return NULL;
    memset(key, 0, sizeof *key);
    key->off = (b->file ? b->file_offset : 0) + ((const guint8 *)data - (const guint8 *)b->data);
    key->len = len;
    key->kind = kind;
    for (guint i = 0; i < np; i++)
        key->p[i] = p[i];
    return b->file ? b->file : (HgBlob *)b;
}

gboolean
hg_blob_fact_get(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np,
                 void *out, gsize out_len)
{
    FactKey key;
    HgBlob *root = fact_key(b, data, len, kind, p, np, &key);
    if (!root)
        return FALSE;
    gboolean found = FALSE;
    pthread_mutex_lock(&facts_lock);
    GBytes *v = root->facts ? g_hash_table_lookup(root->facts, &key) : NULL;
    if (v && g_bytes_get_size(v) == out_len) {
        memcpy(out, g_bytes_get_data(v, NULL), out_len);
        found = TRUE;
    }
    pthread_mutex_unlock(&facts_lock);
    return found;
}

gboolean
hg_blob_fact_has(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np)
{
    FactKey key;
    HgBlob *root = fact_key(b, data, len, kind, p, np, &key);
    if (!root)
        return FALSE;
    pthread_mutex_lock(&facts_lock);
    gboolean found = root->facts && g_hash_table_contains(root->facts, &key);
    pthread_mutex_unlock(&facts_lock);
    return found;
}

void
hg_blob_fact_put(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np,
                 const void *val, gsize val_len)
{
    FactKey key;
    HgBlob *root = fact_key(b, data, len, kind, p, np, &key);
    if (!root)
        return;
    pthread_mutex_lock(&facts_lock);
    if (!root->facts)
        root->facts = g_hash_table_new_full(fact_hash, fact_equal, g_free, (GDestroyNotify)g_bytes_unref);
    g_hash_table_replace(root->facts, g_memdup2(&key, sizeof key), g_bytes_new(val, val_len));
    pthread_mutex_unlock(&facts_lock);
}

void
hg_model_spill_to_output(HgModel *m, const char *out_path)
{
    g_return_if_fail(m != NULL && out_path != NULL);
    Spills *sp = spills_of(m);
    if (sp->out || sp->taken)
        return;
    g_autofree char *target = hg_outfile_resolve(out_path);
    if (!target)
        return;
    g_autofree char *data_target = g_strconcat(target, ".data", NULL);
    /* Refused (an input's own data file, not a regular file): the save says why, or copies. */
    HgOutFile *of = hg_outfile_open(data_target, HG_OUTFILE_SEEKABLE, NULL, NULL);
    if (!of)
        return;
    int fd = dup(hg_outfile_fd(of));
    if (fd < 0) {
        hg_outfile_abort(of);
        return;
    }
    sp->out = spill_over(fd, TRUE);
    sp->of = of;
    sp->data_target = g_steal_pointer(&data_target);
}

int
hg_model_output_spill(const HgModel *m, const char *data_target, gint64 *end)
{
    const Spills *sp = m->spill;
    if (!sp || !sp->out || !sp->of || sp->taken || strcmp(sp->data_target, data_target) != 0)
        return -1;
    *end = sp->out->end;
    return sp->out->file->fd;
}

HgOutFile *
hg_model_take_output_data(HgModel *m)
{
    Spills *sp = m->spill;
    if (!sp || !sp->of)
        return NULL;
    sp->taken = TRUE;
    return g_steal_pointer(&sp->of);
}

void
hg_model_drop_output_data(HgModel *m)
{
    Spills *sp = m->spill;
    if (sp && sp->of) {
        /* The tensors in it keep their mapping (the spill's own descriptor); only the name goes. */
        hg_outfile_abort(g_steal_pointer(&sp->of));
        sp->taken = TRUE;
    }
}

gsize
hg_spill_min(void)
{
    const char *env = g_getenv("HALFGUARD_TEST_SCRATCH_MIN");
    guint64 v;
    if (env && g_ascii_string_to_unsigned(env, 10, 1, HG_SPILL_MIN, &v, NULL))
        return (gsize)v;
    return HG_SPILL_MIN;
}

/* A tensor's name, type and dims, with no storage yet. */
static HgTensor *
tensor_header(const char *name, HgDType dtype, guint rank, const gint64 *dims)
{
    HgTensor *t = g_new0(HgTensor, 1);
    t->name = g_strdup(name);
    t->has_dtype = TRUE;
    t->dtype = dtype;
    t->rank = rank;
    t->dims = g_new0(gint64, rank ? rank : 1);
    if (rank)
        memcpy(t->dims, dims, sizeof(gint64) * rank);
    return t;
}

static HgTensor *new_spilled(HgModel *m, gboolean output, const char *name, HgDType dtype, guint rank,
                             const gint64 *dims, void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data),
                             gpointer data, GError **error);

HgTensor *
hg_tensor_new_spilled(HgModel *m, const char *name, HgDType dtype, guint rank, const gint64 *dims,
                      void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data), gpointer data,
                      GError **error)
{
    return new_spilled(m, FALSE, name, dtype, rank, dims, fill, data, error);
}

HgTensor *
hg_tensor_new_spilled_output(HgModel *m, const char *name, HgDType dtype, guint rank, const gint64 *dims,
                             void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data),
                             gpointer data, GError **error)
{
    return new_spilled(m, TRUE, name, dtype, rank, dims, fill, data, error);
}

static HgTensor *
new_spilled(HgModel *m, gboolean output, const char *name, HgDType dtype, guint rank, const gint64 *dims,
            void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data), gpointer data, GError **error)
{
    g_return_val_if_fail(m != NULL && fill != NULL && dtype != HG_DTYPE_STRING, NULL);
    HgTensor *t = tensor_header(name, dtype, rank, dims);
    t->storage = HG_STORAGE_RAW;
    gint64 nbytes = hg_tensor_expected_bytes(t);
    if (nbytes <= 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "tensor '%s': no bytes to spill", name ? name : "");
        hg_tensor_free(t);
        return NULL;
    }
    Spills *sp = spills_of(m);
    HgSpill *into = output && sp->out && !sp->taken ? sp->out : NULL;
    if (!into) {
        if (!sp->scratch)
            sp->scratch = hg_spill_new(error);
        into = sp->scratch;
    }
    HgBlob *b = into ? hg_spill_put(into, (gsize)nbytes, fill, data, error) : NULL;
    if (!b) {
        hg_tensor_free(t);
        return NULL;
    }
    t->nbytes = (gsize)nbytes;
    t->blob = b;
    t->data = hg_blob_data(b, NULL);
    return t;
}

/* ---------------------------------------------------------------- small records */

void
hg_unknown_free(HgUnknown *u)
{
    if (!u)
        return;
    for (guint i = 0; i < u->n; i++)
        g_free(u->fields[i].data);
    g_free(u->fields);
    g_free(u);
}

HgUnknown *
hg_unknown_copy(const HgUnknown *u)
{
    if (!u)
        return NULL;
    HgUnknown *c = g_new0(HgUnknown, 1);
    c->n = u->n;
    c->fields = g_new0(HgUnknownField, u->n);
    for (guint i = 0; i < u->n; i++) {
        c->fields[i] = u->fields[i];
        c->fields[i].data = g_memdup2(u->fields[i].data, u->fields[i].len);
    }
    return c;
}

void
hg_string_pair_free(gpointer p)
{
    HgStringPair *sp = p;
    if (!sp)
        return;
    g_free(sp->key);
    g_free(sp->value);
    hg_unknown_free(sp->unknown);
    g_free(sp);
}

static GPtrArray *
string_pairs_copy(const GPtrArray *a)
{
    if (!a)
        return NULL;
    GPtrArray *c = g_ptr_array_new_full(a->len, hg_string_pair_free);
    for (guint i = 0; i < a->len; i++) {
        const HgStringPair *sp = a->pdata[i];
        HgStringPair *n = g_new0(HgStringPair, 1);
        n->key = g_strdup(sp->key);
        n->value = g_strdup(sp->value);
        n->unknown = hg_unknown_copy(sp->unknown);
        g_ptr_array_add(c, n);
    }
    return c;
}

/* ---------------------------------------------------------------- types */

HgShape *
hg_shape_new(guint rank)
{
    HgShape *s = g_new0(HgShape, 1);
    s->rank = rank;
    s->dims = g_new0(HgDim, rank ? rank : 1);
    return s;
}

void
hg_shape_free(HgShape *s)
{
    if (!s)
        return;
    for (guint i = 0; i < s->rank; i++) {
        g_free(s->dims[i].param);
        g_free(s->dims[i].denotation);
        hg_unknown_free(s->dims[i].unknown);
    }
    g_free(s->dims);
    hg_unknown_free(s->unknown);
    g_free(s);
}

static HgShape *
shape_copy(const HgShape *s)
{
    if (!s)
        return NULL;
    HgShape *c = hg_shape_new(s->rank);
    for (guint i = 0; i < s->rank; i++) {
        c->dims[i] = s->dims[i];
        c->dims[i].param = g_strdup(s->dims[i].param);
        c->dims[i].denotation = g_strdup(s->dims[i].denotation);
        c->dims[i].unknown = hg_unknown_copy(s->dims[i].unknown);
    }
    c->unknown = hg_unknown_copy(s->unknown);
    return c;
}

HgType *
hg_type_new_tensor(HgDType elem_type, guint rank, const gint64 *dims)
{
    HgType *t = g_new0(HgType, 1);
    t->kind = HG_TYPE_TENSOR;
    t->has_elem_type = TRUE;
    t->elem_type = elem_type;
    if (dims || rank == 0) {
        t->shape = hg_shape_new(rank);
        for (guint i = 0; i < rank; i++) {
            if (dims[i] >= 0) {
                t->shape->dims[i].has_value = TRUE;
                t->shape->dims[i].value = dims[i];
            }
        }
    }
    return t;
}

HgType *
hg_type_copy(const HgType *t)
{
    if (!t)
        return NULL;
    HgType *c = g_new0(HgType, 1);
    *c = *t;
    c->shape = shape_copy(t->shape);
    c->elem = hg_type_copy(t->elem);
    c->denotation = g_strdup(t->denotation);
    c->opaque_domain = g_strdup(t->opaque_domain);
    c->opaque_name = g_strdup(t->opaque_name);
    c->unknown = hg_unknown_copy(t->unknown);
    c->inner_unknown = hg_unknown_copy(t->inner_unknown);
    return c;
}

void
hg_type_free(HgType *t)
{
    if (!t)
        return;
    hg_shape_free(t->shape);
    hg_type_free(t->elem);
    g_free(t->denotation);
    g_free(t->opaque_domain);
    g_free(t->opaque_name);
    hg_unknown_free(t->unknown);
    hg_unknown_free(t->inner_unknown);
    g_free(t);
}

static gboolean
str_equal0(const char *a, const char *b)
{
    return g_strcmp0(a, b) == 0;
}

gboolean
hg_type_equal(const HgType *a, const HgType *b)
{
    if (a == b)
        return TRUE;
    if (!a || !b)
        return FALSE;
    if (a->kind != b->kind || a->has_elem_type != b->has_elem_type || a->elem_type != b->elem_type)
        return FALSE;
    if (!str_equal0(a->denotation, b->denotation) || !str_equal0(a->opaque_domain, b->opaque_domain) ||
        !str_equal0(a->opaque_name, b->opaque_name))
        return FALSE;
    if (!a->shape != !b->shape)
        return FALSE;
    if (a->shape) {
        if (a->shape->rank != b->shape->rank)
            return FALSE;
        for (guint i = 0; i < a->shape->rank; i++) {
            const HgDim *x = &a->shape->dims[i], *y = &b->shape->dims[i];
            if (x->has_value != y->has_value || (x->has_value && x->value != y->value) ||
                !str_equal0(x->param, y->param) || !str_equal0(x->denotation, y->denotation))
                return FALSE;
        }
    }
    return hg_type_equal(a->elem, b->elem);
}

/* ---------------------------------------------------------------- tensors */

gint64
hg_numel(guint rank, const gint64 *dims)
{
    gint64 n = 1;
    for (guint i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return -1;
        if (dims[i] != 0 && n > G_MAXINT64 / dims[i])
            return -1;
        n *= dims[i];
    }
    return n;
}

char *
hg_dims_string(guint rank, const gint64 *dims)
{
    GString *s = g_string_new("[");
    for (guint i = 0; i < rank; i++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "", dims[i]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

gint64
hg_tensor_numel(const HgTensor *t)
{
    g_return_val_if_fail(t != NULL, -1);
    return hg_numel(t->rank, t->dims);
}

gint64
hg_tensor_expected_bytes(const HgTensor *t)
{
    gint64 n = hg_tensor_numel(t);
    guint bits = hg_dtype_bits(t->dtype);
    if (n < 0 || bits == 0)
        return -1;
    if (n > G_MAXINT64 / bits)
        return -1;
    return (n * bits + 7) / 8;
}

static HgTensor *
tensor_new(const char *name, HgDType dtype, guint rank, const gint64 *dims, gboolean try)
{
    HgTensor *t = tensor_header(name, dtype, rank, dims);
    if (dtype == HG_DTYPE_STRING) {
        gint64 n = hg_numel(rank, t->dims);
        if (n < 0 || n > G_MAXUINT32) {
            hg_tensor_free(t);
            return NULL;
        }
        t->storage = HG_STORAGE_STRINGS;
        t->strings = g_ptr_array_new_full((guint)n, (GDestroyNotify)g_bytes_unref);
        for (gint64 i = 0; i < n; i++)
            g_ptr_array_add(t->strings, g_bytes_new(NULL, 0));
        return t;
    }
    gint64 nbytes = hg_tensor_expected_bytes(t);
    if (nbytes < 0 || (guint64)nbytes > G_MAXSIZE / 2) {
        hg_tensor_free(t);
        return NULL;
    }
    t->storage = HG_STORAGE_RAW;
    t->nbytes = (gsize)nbytes;
    void *data = try ? g_try_malloc0(t->nbytes ? t->nbytes : 1) : g_malloc0(t->nbytes ? t->nbytes : 1);
    if (!data) {
        hg_tensor_free(t);
        return NULL;
    }
    t->blob = hg_blob_new_take(data, t->nbytes);
    t->data = data;
    return t;
}

HgTensor *
hg_tensor_new(const char *name, HgDType dtype, guint rank, const gint64 *dims)
{
    return tensor_new(name, dtype, rank, dims, FALSE);
}

HgTensor *
hg_tensor_try_new(const char *name, HgDType dtype, guint rank, const gint64 *dims)
{
    return tensor_new(name, dtype, rank, dims, TRUE);
}

HgTensor *
hg_tensor_copy(const HgTensor *t)
{
    if (!t)
        return NULL;
    HgTensor *c = g_new0(HgTensor, 1);
    *c = *t;
    c->name = g_strdup(t->name);
    c->dims = g_memdup2(t->dims, sizeof(gint64) * (t->rank ? t->rank : 1));
    if (t->blob)
        c->blob = hg_blob_ref(t->blob);
    if (t->strings) {
        c->strings = g_ptr_array_new_full(t->strings->len, (GDestroyNotify)g_bytes_unref);
        for (guint i = 0; i < t->strings->len; i++)
            g_ptr_array_add(c->strings, g_bytes_ref(t->strings->pdata[i]));
    }
    c->external = string_pairs_copy(t->external);
    c->ext_location = g_strdup(t->ext_location);
    c->doc_string = g_strdup(t->doc_string);
    c->metadata = string_pairs_copy(t->metadata);
    c->unknown = hg_unknown_copy(t->unknown);
    c->segment_unknown = hg_unknown_copy(t->segment_unknown);
    return c;
}

void
hg_tensor_free(HgTensor *t)
{
    if (!t)
        return;
    g_free(t->name);
    g_free(t->dims);
    hg_blob_unref(t->blob);
    if (t->strings)
        g_ptr_array_unref(t->strings);
    if (t->external)
        g_ptr_array_unref(t->external);
    g_free(t->ext_location);
    g_free(t->doc_string);
    if (t->metadata)
        g_ptr_array_unref(t->metadata);
    hg_unknown_free(t->unknown);
    hg_unknown_free(t->segment_unknown);
    g_free(t);
}

void *
hg_tensor_data_mut(HgTensor *t)
{
    g_return_val_if_fail(t != NULL, NULL);
    /* A view (mapped file, shared blob) is copied once; afterwards the tensor owns its bytes and is
     * written back embedded unless the caller keeps it external. */
    if (!t->blob || !t->data || t->blob->mapped || g_atomic_int_get(&t->blob->refcount) > 1 ||
        t->data != t->blob->data) {
        void *copy = g_malloc(t->nbytes ? t->nbytes : 1);
        if (t->nbytes)
            memcpy(copy, t->data, t->nbytes);
        hg_blob_unref(t->blob);
        t->blob = hg_blob_new_take(copy, t->nbytes);
        t->data = copy;
    }
    return (void *)t->data;
}

void
hg_sparse_tensor_free(HgSparseTensor *s)
{
    if (!s)
        return;
    hg_tensor_free(s->values);
    hg_tensor_free(s->indices);
    g_free(s->dims);
    hg_unknown_free(s->unknown);
    g_free(s);
}

/* ---------------------------------------------------------------- attributes */

HgAttr *
hg_attr_new(const char *name, HgAttrType type)
{
    HgAttr *a = g_new0(HgAttr, 1);
    a->name = g_strdup(name);
    a->type = type;
    a->has = HG_ATTR_HAS_TYPE;
    switch (type) {
    case HG_ATTR_FLOAT:
        a->has |= HG_ATTR_HAS_F;
        break;
    case HG_ATTR_INT:
        a->has |= HG_ATTR_HAS_I;
        break;
    case HG_ATTR_STRING:
        a->has |= HG_ATTR_HAS_S;
        a->s = g_bytes_new(NULL, 0);
        break;
    default:
        break;
    }
    return a;
}

void
hg_attr_free(HgAttr *a)
{
    if (!a)
        return;
    g_free(a->name);
    g_free(a->ref_attr_name);
    g_free(a->doc_string);
    if (a->s)
        g_bytes_unref(a->s);
    hg_tensor_free(a->t);
    hg_graph_free(a->g);
    hg_sparse_tensor_free(a->sparse);
    hg_type_free(a->tp);
    if (a->floats)
        g_array_unref(a->floats);
    if (a->ints)
        g_array_unref(a->ints);
    if (a->strings)
        g_ptr_array_unref(a->strings);
    if (a->tensors)
        g_ptr_array_unref(a->tensors);
    if (a->graphs)
        g_ptr_array_unref(a->graphs);
    if (a->sparse_tensors)
        g_ptr_array_unref(a->sparse_tensors);
    if (a->type_protos)
        g_ptr_array_unref(a->type_protos);
    hg_unknown_free(a->unknown);
    g_free(a);
}

/* ---------------------------------------------------------------- model */

static void
opset_free(gpointer p)
{
    HgOpset *o = p;
    g_free(o->domain);
    hg_unknown_free(o->unknown);
    g_free(o);
}

HgModel *
hg_model_new(void)
{
    HgModel *m = g_new0(HgModel, 1);
    m->opsets = g_ptr_array_new_with_free_func(opset_free);
    m->warnings = g_ptr_array_new_with_free_func(g_free);
    return m;
}

void
hg_model_free(HgModel *m)
{
    if (!m)
        return;
    hg_outfile_forget(m);
    g_ptr_array_unref(m->opsets);
    g_free(m->producer_name);
    g_free(m->producer_version);
    g_free(m->domain);
    g_free(m->doc_string);
    hg_graph_free(m->graph);
    if (m->metadata)
        g_ptr_array_unref(m->metadata);
    if (m->training_info)
        g_ptr_array_unref(m->training_info);
    if (m->functions)
        g_ptr_array_unref(m->functions);
    hg_unknown_free(m->unknown);
    g_free(m->dir);
    g_ptr_array_unref(m->warnings);
    if (m->run_plan && m->run_plan_free)
        m->run_plan_free(m->run_plan);
    if (m->names)
        g_hash_table_unref(m->names);
    spills_free(m->spill);
    g_free(m);
}

static gboolean
is_default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

gint64
hg_model_opset(const HgModel *m, const char *domain)
{
    g_return_val_if_fail(m != NULL, 0);
    gboolean want_default = is_default_domain(domain);
    for (guint i = 0; i < m->opsets->len; i++) {
        const HgOpset *o = m->opsets->pdata[i];
        if (want_default ? is_default_domain(o->domain) : g_strcmp0(o->domain, domain) == 0)
            return o->version;
    }
    return 0;
}

void
hg_model_set_opset(HgModel *m, const char *domain, gint64 version)
{
    g_return_if_fail(m != NULL);
    gboolean want_default = is_default_domain(domain);
    for (guint i = 0; i < m->opsets->len; i++) {
        HgOpset *o = m->opsets->pdata[i];
        if (want_default ? is_default_domain(o->domain) : g_strcmp0(o->domain, domain) == 0) {
            o->version = version;
            o->has_version = TRUE;
            return;
        }
    }
    HgOpset *o = g_new0(HgOpset, 1);
    o->domain = g_strdup(domain ? domain : "");
    o->version = version;
    o->has_version = TRUE;
    g_ptr_array_add(m->opsets, o);
}

/* ---------------------------------------------------------------- graph */

static void
value_free(gpointer p)
{
    HgValue *v = p;
    g_free(v->name);
    g_array_unref(v->uses);
    hg_type_free(v->type);
    g_free(v);
}

static void
decl_free(gpointer p)
{
    HgValueDecl *d = p;
    g_free(d->name);
    hg_type_free(d->type);
    g_free(d->doc_string);
    if (d->metadata)
        g_ptr_array_unref(d->metadata);
    hg_unknown_free(d->unknown);
    g_free(d);
}

static void
node_free(gpointer p)
{
    HgNode *n = p;
    g_free(n->name);
    g_free(n->op_type);
    g_free(n->domain);
    g_free(n->overload);
    g_free(n->inputs);
    g_free(n->outputs);
    if (n->shadowed_names) {
        for (guint i = 0; i < n->n_outputs; i++)
            g_free(n->shadowed_names[i]);
        g_free(n->shadowed_names);
    }
    g_ptr_array_unref(n->attrs);
    g_free(n->doc_string);
    g_free(n->precision_reason);
    if (n->metadata)
        g_ptr_array_unref(n->metadata);
    hg_unknown_free(n->unknown);
    g_free(n);
}

static void
annotation_free(gpointer p)
{
    HgTensorAnnotation *a = p;
    g_free(a->tensor_name);
    if (a->pairs)
        g_ptr_array_unref(a->pairs);
    hg_unknown_free(a->unknown);
    g_free(a);
}

HgGraph *
hg_graph_new(HgModel *m, HgGraph *parent)
{
    HgGraph *g = g_new0(HgGraph, 1);
    g->model = m;
    g->parent = parent;
    g->nodes = g_ptr_array_new_with_free_func(node_free);
    g->inputs = g_ptr_array_new_with_free_func(decl_free);
    g->outputs = g_ptr_array_new_with_free_func(decl_free);
    g->value_info = g_ptr_array_new_with_free_func(decl_free);
    g->initializers = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    g->sparse_initializers = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sparse_tensor_free);
    g->quant_annotations = g_ptr_array_new_with_free_func(annotation_free);
    g->values = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, value_free);
    g->outer_refs = g_ptr_array_new();
    return g;
}

void
hg_graph_free(HgGraph *g)
{
    if (!g)
        return;
    /* Nodes first: their attributes own subgraphs that point at our values. */
    g_ptr_array_unref(g->nodes);
    g_ptr_array_unref(g->inputs);
    g_ptr_array_unref(g->outputs);
    g_ptr_array_unref(g->value_info);
    g_ptr_array_unref(g->initializers);
    g_ptr_array_unref(g->sparse_initializers);
    g_ptr_array_unref(g->quant_annotations);
    if (g->metadata)
        g_ptr_array_unref(g->metadata);
    g_hash_table_unref(g->values);
    g_ptr_array_unref(g->outer_refs);
    hg_unknown_free(g->unknown);
    g_free(g->name);
    g_free(g->doc_string);
    g_free(g);
}

void
hg_graph_touch(HgGraph *g)
{
    for (; g; g = g->parent)
        g->generation++;
}

HgValue *
hg_graph_lookup(HgGraph *g, const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    for (; g; g = g->parent) {
        HgValue *v = g_hash_table_lookup(g->values, name);
        if (v)
            return v;
    }
    return NULL;
}

static void
name_set_add(HgModel *m, const char *name)
{
    if (m && m->names && name)
        g_hash_table_add(m->names, g_strdup(name));
}

HgValue *
hg_graph_new_value(HgGraph *g, const char *name, GError **error)
{
    g_return_val_if_fail(g != NULL && name != NULL, NULL);
    if (g_hash_table_contains(g->values, name)) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "value '%s' is defined twice", name);
        return NULL;
    }
    HgValue *v = g_new0(HgValue, 1);
    v->name = g_strdup(name);
    v->graph = g;
    v->uses = g_array_new(FALSE, FALSE, sizeof(HgUse));
    g_hash_table_insert(g->values, v->name, v);
    name_set_add(g->model, name);
    hg_graph_touch(g);
    return v;
}

static void
collect_names(HgGraph *g, gpointer data)
{
    GHashTable *set = data;
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, g->values);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_hash_table_add(set, g_strdup(key));
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (n->name)
            g_hash_table_add(set, g_strdup(n->name));
    }
}

char *
hg_graph_unique_name(HgGraph *g, const char *base)
{
    g_return_val_if_fail(g != NULL && base != NULL, NULL);
    HgModel *m = g->model;
    HgGraph *top = g;
    while (top->parent)
        top = top->parent;
    GHashTable *set = m ? m->names : NULL;
    g_autoptr(GHashTable) local = NULL;
    if (!set) {
        /* Built once per model and kept in step by hg_graph_new_value / hg_graph_add_node. */
        local = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        hg_graph_foreach(top, collect_names, local);
        if (m)
            set = m->names = g_steal_pointer(&local);
        else
            set = local;
    }
    char *name = g_strdup(base);
    for (guint k = 1; g_hash_table_contains(set, name); k++) {
        g_free(name);
        name = g_strdup_printf("%s_%u", base, k);
    }
    g_hash_table_add(set, g_strdup(name));
    return name;
}

static HgValueDecl *
add_decl(GPtrArray *list, HgValue *v, const HgType *type)
{
    HgValueDecl *d = g_new0(HgValueDecl, 1);
    d->value = v;
    d->name = g_strdup(v->name);
    d->type = hg_type_copy(type);
    g_ptr_array_add(list, d);
    if (!v->type && type)
        v->type = hg_type_copy(type);
    return d;
}

HgValueDecl *
hg_graph_add_input(HgGraph *g, HgValue *v, const HgType *type)
{
    g_return_val_if_fail(g != NULL && v != NULL, NULL);
    gboolean again = v->is_input;
    v->is_input = TRUE;
    /* The graph input is the most authoritative declaration. */
    if (type) {
        hg_type_free(v->type);
        v->type = NULL;
    }
    hg_graph_touch(g);
    HgValueDecl *d = add_decl(g->inputs, v, type);
    v->input_decl = again ? NULL : d; /* declared twice: the lists are searched instead */
    return d;
}

HgValueDecl *
hg_graph_add_output(HgGraph *g, HgValue *v, const HgType *type)
{
    g_return_val_if_fail(g != NULL && v != NULL, NULL);
    /* A subgraph may pass an outer value straight through as its output; the flag is about the
     * value's own graph. */
    if (v->graph == g) {
        v->is_output = TRUE;
    } else {
        v->nested_outputs++;
        hg_graph_note_outer_ref(g, v);
    }
    hg_graph_touch(g);
    return add_decl(g->outputs, v, type);
}

HgValueDecl *
hg_graph_add_value_info(HgGraph *g, HgValue *v, const HgType *type)
{
    g_return_val_if_fail(g != NULL && v != NULL, NULL);
    hg_graph_touch(g);
    return add_decl(g->value_info, v, type);
}

void
hg_graph_add_initializer(HgGraph *g, HgValue *v, HgTensor *t)
{
    g_return_if_fail(g != NULL && v != NULL && t != NULL);
    v->init = t;
    if (!t->name)
        t->name = g_strdup(v->name);
    g_ptr_array_add(g->initializers, t);
    if (!v->type)
        v->type = hg_type_new_tensor(t->dtype, t->rank, t->dims);
    hg_graph_touch(g);
}

HgValue *
hg_graph_new_initializer(HgGraph *g, const char *base, HgTensor *t)
{
    g_return_val_if_fail(g != NULL && base != NULL && t != NULL, NULL);
    g_autofree char *name = hg_graph_unique_name(g, base);
    HgValue *v = hg_graph_new_value(g, name, NULL);
    g_assert(v); /* a name used nowhere in the model is free in g */
    g_free(t->name);
    t->name = g_strdup(name);
    hg_graph_add_initializer(g, v, t);
    return v;
}

void
hg_value_set_initializer(HgValue *v, HgTensor *t)
{
    g_return_if_fail(v != NULL && t != NULL && v->producer == NULL);
    HgGraph *g = v->graph;
    if (t->name && g_strcmp0(t->name, v->name) != 0) {
        g_free(t->name);
        t->name = NULL;
    }
    if (!t->name)
        t->name = g_strdup(v->name);
    guint i;
    if (v->init && g_ptr_array_find(g->initializers, v->init, &i)) {
        hg_tensor_free(v->init);
        g->initializers->pdata[i] = t;
    } else {
        g_ptr_array_add(g->initializers, t);
    }
    v->init = t;
    if (!v->type)
        v->type = hg_type_new_tensor(t->dtype, t->rank, t->dims);
    else
        hg_value_set_elem_type(v, t->dtype);
    hg_graph_touch(g);
}

void
hg_value_remove_initializer(HgValue *v)
{
    g_return_if_fail(v != NULL);
    guint i;
    if (v->init && g_ptr_array_find(v->graph->initializers, v->init, &i))
        g_ptr_array_remove_index(v->graph->initializers, i); /* the array frees it */
    v->init = NULL;
    hg_graph_touch(v->graph);
}

static void
use_add(HgValue *v, HgNode *n, guint i)
{
    HgUse u = {n, i};
    g_array_append_val(v->uses, u);
}

static void
use_remove(HgValue *v, HgNode *n, guint i)
{
    /* From the back, and without keeping order (nothing depends on it): removing the consumers of a
     * value read by 10^5 nodes stays linear. */
    for (guint k = v->uses->len; k-- > 0;) {
        HgUse *u = &g_array_index(v->uses, HgUse, k);
        if (u->node == n && u->index == i) {
            g_array_remove_index_fast(v->uses, k);
            return;
        }
    }
    g_warn_if_reached();
}

HgNode *
hg_graph_add_node(HgGraph *g, const char *op_type, const char *domain, const char *name,
                  guint n_inputs, HgValue *const *inputs, guint n_outputs, HgValue *const *outputs)
{
    g_return_val_if_fail(g != NULL && op_type != NULL, NULL);
    HgNode *n = g_new0(HgNode, 1);
    n->op_type = g_strdup(op_type);
    n->domain = g_strdup(domain);
    n->name = g_strdup(name);
    n->graph = g;
    n->attrs = g_ptr_array_new_with_free_func((GDestroyNotify)hg_attr_free);
    n->n_inputs = n_inputs;
    n->inputs = g_new0(HgValue *, n_inputs ? n_inputs : 1);
    n->n_outputs = n_outputs;
    n->outputs = g_new0(HgValue *, n_outputs ? n_outputs : 1);
    for (guint i = 0; i < n_inputs; i++) {
        n->inputs[i] = inputs[i];
        if (inputs[i]) {
            use_add(inputs[i], n, i);
            if (inputs[i]->graph != g)
                hg_graph_note_outer_ref(g, inputs[i]);
        }
    }
    for (guint i = 0; i < n_outputs; i++) {
        HgValue *v = outputs[i];
        n->outputs[i] = v;
        if (v) {
            g_warn_if_fail(v->producer == NULL && v->graph == g);
            v->producer = n;
            v->producer_index = i;
        }
    }
    n->order = g->nodes->len;
    g_ptr_array_add(g->nodes, n);
    name_set_add(g->model, name);
    hg_graph_touch(g);
    return n;
}

void
hg_graph_note_outer_ref(HgGraph *g, HgValue *v)
{
    /* Every graph between the reader and the definer sees v as an outer reference. */
    for (HgGraph *s = g; s && s != v->graph; s = s->parent)
        if (!g_ptr_array_find(s->outer_refs, v, NULL))
            g_ptr_array_add(s->outer_refs, v);
}

void
hg_node_set_input(HgNode *n, guint i, HgValue *v)
{
    g_return_if_fail(n != NULL && i < n->n_inputs);
    if (n->inputs[i] == v)
        return;
    if (n->inputs[i])
        use_remove(n->inputs[i], n, i);
    n->inputs[i] = v;
    if (v) {
        use_add(v, n, i);
        if (v->graph != n->graph)
            hg_graph_note_outer_ref(n->graph, v);
    }
    hg_graph_touch(n->graph);
}

void
hg_node_set_output(HgNode *n, guint i, HgValue *v)
{
    g_return_if_fail(n != NULL && i < n->n_outputs);
    g_return_if_fail(v == NULL || (v->producer == NULL && v->graph == n->graph));
    if (n->outputs[i] == v)
        return;
    if (n->outputs[i]) {
        n->outputs[i]->producer = NULL;
        n->outputs[i]->producer_index = 0;
    }
    n->outputs[i] = v;
    if (v) {
        v->producer = n;
        v->producer_index = i;
    }
    hg_graph_touch(n->graph);
}

void
hg_node_set_op(HgNode *n, const char *op_type, const char *domain)
{
    g_return_if_fail(n != NULL && op_type != NULL);
    g_free(n->op_type);
    n->op_type = g_strdup(op_type);
    if (g_strcmp0(n->domain, domain) != 0) {
        g_free(n->domain);
        n->domain = g_strdup(domain);
    }
    hg_graph_touch(n->graph);
}

void
hg_node_set_attr(HgNode *n, HgAttr *a)
{
    g_return_if_fail(n != NULL && a != NULL && a->name != NULL);
    for (guint i = 0; i < n->attrs->len; i++) {
        HgAttr *old = n->attrs->pdata[i];
        if (g_strcmp0(old->name, a->name) == 0) {
            hg_attr_free(old);
            n->attrs->pdata[i] = a;
            if (a->g)
                a->g->parent_node = n;
            hg_graph_touch(n->graph);
            return;
        }
    }
    hg_node_add_attr(n, a);
}

HgAttr *
hg_node_set_attr_int(HgNode *n, const char *name, gint64 value)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INT);
    a->i = value;
    a->has |= HG_ATTR_HAS_I;
    hg_node_set_attr(n, a);
    return a;
}

HgAttr *
hg_node_set_attr_float(HgNode *n, const char *name, float value)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_FLOAT);
    a->f = value;
    a->has |= HG_ATTR_HAS_F;
    hg_node_set_attr(n, a);
    return a;
}

HgAttr *
hg_node_set_attr_tensor(HgNode *n, const char *name, HgTensor *t)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_TENSOR);
    a->t = t;
    hg_node_set_attr(n, a);
    return a;
}

gboolean
hg_node_remove_attr(HgNode *n, const char *name)
{
    g_return_val_if_fail(n != NULL && name != NULL, FALSE);
    for (guint i = 0; i < n->attrs->len; i++)
        if (g_strcmp0(((HgAttr *)n->attrs->pdata[i])->name, name) == 0) {
            g_ptr_array_remove_index(n->attrs, i);
            hg_graph_touch(n->graph);
            return TRUE;
        }
    return FALSE;
}

void
hg_node_set_precision(HgNode *n, HgPrecision precision, const char *reason)
{
    g_return_if_fail(n != NULL);
    if (n->precision == precision && g_strcmp0(n->precision_reason, reason) == 0)
        return;
    n->precision = precision;
    g_free(n->precision_reason);
    n->precision_reason = g_strdup(reason);
    hg_graph_touch(n->graph);
}

gboolean
hg_graph_has_plan(const HgGraph *g)
{
    g_return_val_if_fail(g != NULL, FALSE);
    for (guint i = 0; i < g->nodes->len; i++)
        if (((const HgNode *)g->nodes->pdata[i])->precision != HG_PRECISION_UNSET)
            return TRUE;
    return FALSE;
}

gboolean
hg_node_default_domain(const HgNode *n)
{
    return n && (!n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0);
}

void
hg_node_add_attr(HgNode *n, HgAttr *a)
{
    g_return_if_fail(n != NULL && a != NULL);
    g_ptr_array_add(n->attrs, a);
    if (a->g)
        a->g->parent_node = n;
    if (a->graphs)
        for (guint i = 0; i < a->graphs->len; i++)
            ((HgGraph *)a->graphs->pdata[i])->parent_node = n;
    hg_graph_touch(n->graph);
}

HgAttr *
hg_node_attr(const HgNode *n, const char *name)
{
    g_return_val_if_fail(n != NULL && name != NULL, NULL);
    for (guint i = 0; i < n->attrs->len; i++) {
        HgAttr *a = n->attrs->pdata[i];
        if (g_strcmp0(a->name, name) == 0)
            return a;
    }
    return NULL;
}

gint64
hg_node_attr_int(const HgNode *n, const char *name, gint64 dflt)
{
    HgAttr *a = hg_node_attr(n, name);
    return a && a->type == HG_ATTR_INT ? a->i : dflt;
}

float
hg_node_attr_float(const HgNode *n, const char *name, float dflt)
{
    HgAttr *a = hg_node_attr(n, name);
    return a && a->type == HG_ATTR_FLOAT ? a->f : dflt;
}

/* Uses by nodes of subgraphs are registered on the outer value too; drop those of a dying node's
 * subgraphs so no use list points at freed nodes. */
static void
drop_subgraph_uses(HgGraph *sub, gpointer data)
{
    (void)data;
    for (guint i = 0; i < sub->nodes->len; i++) {
        HgNode *n = sub->nodes->pdata[i];
        for (guint k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] && n->inputs[k]->graph != sub) {
                use_remove(n->inputs[k], n, k);
                n->inputs[k] = NULL;
            }
    }
}

void
hg_node_for_each_subgraph(HgNode *n, HgGraphFunc fn, gpointer data)
{
    for (guint i = 0; i < n->attrs->len; i++) {
        HgAttr *a = n->attrs->pdata[i];
        if (a->g)
            fn(a->g, data);
        if (a->graphs)
            for (guint k = 0; k < a->graphs->len; k++)
                fn(a->graphs->pdata[k], data);
    }
}

static void
foreach_recurse(HgGraph *g, gpointer data)
{
    hg_graph_foreach(g, drop_subgraph_uses, data);
}

void
hg_node_remove(HgNode *n)
{
    g_return_if_fail(n != NULL);
    if (n->flags & HG_NODE_DEAD)
        return;
    for (guint i = 0; i < n->n_inputs; i++)
        if (n->inputs[i]) {
            use_remove(n->inputs[i], n, i);
            n->inputs[i] = NULL;
        }
    hg_node_for_each_subgraph(n, foreach_recurse, NULL);
    for (guint i = 0; i < n->n_outputs; i++) {
        HgValue *v = n->outputs[i];
        if (v)
            v->producer = NULL;
    }
    n->flags |= HG_NODE_DEAD;
    hg_graph_touch(n->graph);
}

void
hg_value_drop_if_unused(HgGraph *g, HgValue *v)
{
    if (!v || v->uses->len || v->is_output || v->is_input || v->nested_outputs)
        return;
    if (hg_node_is(v->producer, "Constant")) {
        hg_node_remove(v->producer);
    } else if (v->init) {
        guint i;
        if (g_ptr_array_find(g->initializers, v->init, &i)) {
            v->init = NULL;
            g_ptr_array_remove_index(g->initializers, i);
        }
    }
}

static void
collect_declared(HgGraph *sub, gpointer data)
{
    for (guint i = 0; i < sub->value_info->len; i++)
        g_hash_table_add(data, ((HgValueDecl *)sub->value_info->pdata[i])->value);
}

void
hg_graph_compact(HgGraph *g)
{
    g_return_if_fail(g != NULL);
    guint w = 0;
    g_autoptr(GPtrArray) dead = g_ptr_array_new_with_free_func(node_free);
    for (guint r = 0; r < g->nodes->len; r++) {
        HgNode *n = g->nodes->pdata[r];
        if (n->flags & HG_NODE_DEAD) {
            g_ptr_array_add(dead, n);
            continue;
        }
        n->order = w;
        g->nodes->pdata[w++] = n;
    }
    /* Shrink without freeing the moved nodes. */
    g_ptr_array_set_free_func(g->nodes, NULL);
    g_ptr_array_set_size(g->nodes, w);
    g_ptr_array_set_free_func(g->nodes, node_free);

    /* Values that nothing defines, declares or uses any more are dropped; a nested graph's
     * value_info may name a value of this one, so those count as declarations too. */
    g_autoptr(GHashTable) declared = g_hash_table_new(NULL, NULL);
    hg_graph_foreach(g, collect_declared, declared);
    GHashTableIter it;
    gpointer val;
    g_hash_table_iter_init(&it, g->values);
    while (g_hash_table_iter_next(&it, NULL, &val)) {
        HgValue *v = val;
        if (!v->producer && !v->init && !v->sparse_init && !v->is_input && !v->is_output &&
            !v->nested_outputs && v->uses->len == 0 && !g_hash_table_contains(declared, v))
            g_hash_table_iter_remove(&it);
    }
    hg_graph_touch(g);
}

static void
replace_in_decls(GPtrArray *decls, HgValue *old_v, HgValue *new_v)
{
    for (guint i = 0; i < decls->len; i++) {
        HgValueDecl *d = decls->pdata[i];
        if (d->value == old_v) {
            d->value = new_v;
            g_free(d->name);
            d->name = g_strdup(new_v->name);
        }
    }
}

void
hg_value_replace_uses(HgValue *old_v, HgValue *new_v)
{
    g_return_if_fail(old_v != NULL && new_v != NULL);
    if (old_v == new_v)
        return;
    /* Copy: hg_node_set_input edits the array we walk. */
    g_autoptr(GArray) uses = g_array_copy(old_v->uses);
    for (guint k = 0; k < uses->len; k++) {
        HgUse u = g_array_index(uses, HgUse, k);
        hg_node_set_input(u.node, u.index, new_v);
    }
    if (old_v->is_output) {
        HgGraph *g = old_v->graph;
        replace_in_decls(g->outputs, old_v, new_v);
        old_v->is_output = FALSE;
        new_v->is_output = TRUE;
    }
    hg_graph_touch(old_v->graph);
}

static void
set_decl_types(GPtrArray *decls, HgValue *v, int dtype)
{
    for (guint i = 0; i < decls->len; i++) {
        HgValueDecl *d = decls->pdata[i];
        if (d->value == v && d->type && d->type->kind == HG_TYPE_TENSOR) {
            d->type->elem_type = dtype;
            d->type->has_elem_type = TRUE;
        }
    }
}

gboolean
hg_node_is(const HgNode *n, const char *op_type)
{
    return n && !(n->flags & HG_NODE_DEAD) && strcmp(n->op_type, op_type) == 0 &&
           (!n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0);
}

void
hg_graph_move_node_before(HgGraph *g, HgNode *n, HgNode *anchor)
{
    g_return_if_fail(g != NULL && n != NULL && anchor != NULL && n->graph == g);
    guint at;
    if (!g_ptr_array_find(g->nodes, anchor, &at))
        return;
    g_ptr_array_steal_index(g->nodes, n->order); /* not _remove: the array frees what it drops */
    if (n->order < at)
        at--;
    g_ptr_array_insert(g->nodes, (gint)at, n);
    for (guint i = 0; i < g->nodes->len; i++)
        ((HgNode *)g->nodes->pdata[i])->order = i;
    hg_graph_touch(g);
}

guint
hg_nodes_remove_unread(GHashTable *nodes)
{
    g_return_val_if_fail(nodes != NULL, 0);
    guint removed = 0;
    gboolean changed;
    do {
        changed = FALSE;
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, nodes);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
            HgNode *n = key;
            if (n->flags & HG_NODE_DEAD)
                continue;
            gboolean read = FALSE;
            for (guint k = 0; k < n->n_outputs && !read; k++)
                read = n->outputs[k] && (n->outputs[k]->uses->len || n->outputs[k]->is_output ||
                                         n->outputs[k]->nested_outputs);
            if (!read) {
                hg_node_remove(n);
                removed++;
                changed = TRUE;
            }
        }
    } while (changed);
    return removed;
}

static void
rename_decls(GPtrArray *decls, const HgValue *v, const char *name)
{
    for (guint i = 0; decls && i < decls->len; i++) {
        HgValueDecl *d = decls->pdata[i];
        if (d->value == v) {
            g_free(d->name);
            d->name = g_strdup(name);
        }
    }
}

gboolean
hg_value_rename(HgValue *v, const char *name, GError **error)
{
    g_return_val_if_fail(v != NULL && name != NULL, FALSE);
    HgGraph *g = v->graph;
    if (g_hash_table_contains(g->values, name)) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "cannot rename '%s': '%s' is already defined",
                    v->name, name);
        return FALSE;
    }
    g_hash_table_steal(g->values, v->name);
    rename_decls(g->inputs, v, name);
    rename_decls(g->outputs, v, name);
    rename_decls(g->value_info, v, name);
    if (v->init) {
        g_free(v->init->name);
        v->init->name = g_strdup(name);
    }
    g_free(v->name);
    v->name = g_strdup(name);
    g_hash_table_insert(g->values, v->name, v);
    name_set_add(g->model, name);
    hg_graph_touch(g);
    return TRUE;
}

int
hg_value_elem_type(const HgValue *v)
{
    return v && v->type && v->type->kind == HG_TYPE_TENSOR && v->type->has_elem_type ? v->type->elem_type
                                                                                     : HG_DTYPE_UNDEFINED;
}

void
hg_value_set_elem_type(HgValue *v, HgDType dtype)
{
    g_return_if_fail(v != NULL);
    if (v->type && v->type->kind == HG_TYPE_TENSOR) {
        v->type->elem_type = dtype;
        v->type->has_elem_type = TRUE;
    } else if (!v->type) {
        v->type = hg_type_new_tensor(dtype, 0, NULL);
        hg_shape_free(v->type->shape);
        v->type->shape = NULL;
    }
    HgGraph *g = v->graph;
    /* Only the lists that may declare v are walked (the verbs that add a graph input or output set
     * the flag), and an input's own declaration is at hand, so that lowering each of 10^5 inputs does
     * not walk 10^5 declarations each time. */
    if (v->input_decl) {
        HgType *t = v->input_decl->type;
        if (t && t->kind == HG_TYPE_TENSOR) {
            t->elem_type = dtype;
            t->has_elem_type = TRUE;
        }
    } else if (v->is_input) {
        set_decl_types(g->inputs, v, dtype);
    }
    if (v->is_output)
        set_decl_types(g->outputs, v, dtype);
    set_decl_types(g->value_info, v, dtype);
    hg_graph_touch(g);
}

void
hg_graph_foreach(HgGraph *g, HgGraphFunc fn, gpointer data)
{
    g_return_if_fail(g != NULL && fn != NULL);
    fn(g, data);
    for (guint i = 0; i < g->nodes->len; i++) {
        HgNode *n = g->nodes->pdata[i];
        if (n->flags & HG_NODE_DEAD)
            continue;
        for (guint k = 0; k < n->attrs->len; k++) {
            HgAttr *a = n->attrs->pdata[k];
            if (a->g)
                hg_graph_foreach(a->g, fn, data);
            if (a->graphs)
                for (guint j = 0; j < a->graphs->len; j++)
                    hg_graph_foreach(a->graphs->pdata[j], fn, data);
        }
    }
}
