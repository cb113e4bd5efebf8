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

/* --shard I/N: I and N from "I/N" (1 <= I <= N). FALSE with a usage message otherwise. */
gboolean bulk_shard_parse(const char *spec, guint *i, guint *n, GError **error);

/* Keep shard i of n: the items whose place in the list (from 0) is i - 1 modulo n, so that n runs
 * over the same list, one for each i, convert every model exactly once. */
void bulk_shard(GPtrArray *items, guint i, guint n);

/* --skip-existing: the key of the output's metadata_props entry that holds the options hash. */
#define BULK_OPTIONS_KEY "halfguard.convert.options"

/* A hash (hex SHA-256) of what shapes a conversion's output: the values of entries (a parsed
 * GOptionEntry array, NULL-terminated) but those named in skip (NULL-terminated), and version. */
char *bulk_options_hash(const GOptionEntry *entries, const char *const *skip, const char *version);

/* Is out up to date for in: a regular file whose modification time is later than in's? (The
 * options hash is the caller's to compare: reading it needs the model.) */
gboolean bulk_output_newer(const char *in, const char *out);

/* Is out up to date for in: newer (bulk_output_newer), and made with the options hash? */
gboolean bulk_up_to_date(const char *in, const char *out, const char *hash);

typedef struct HgModel HgModel;
/* Put hash in m's metadata_props under BULK_OPTIONS_KEY (replacing one there). */
void bulk_model_set_options(HgModel *m, const char *hash);

/* Would m, saved as it is, be the bytes of the file at path? (Serializes m: for --skip-existing,
 * whose hash makes the saved file differ.) */
gboolean bulk_model_is_file(HgModel *m, const char *path);

/* What became of one model. */
typedef enum { BULK_CONVERTED, BULK_UNCHANGED, BULK_SKIPPED, BULK_ERROR } BulkStatus;

typedef struct {
    BulkStatus status;
    char *message;     /* why it failed or was skipped, or NULL */
    gboolean figures;  /* the conversion's figures below are set */
    gint64 macs, macs_fp16, weight_bytes, weight_bytes_fp16;
    guint islands, casts, hazards;
    double seconds;    /* wall time of its conversion (bulk_run's to fill) */
    guint64 peak_bytes; /* the peak resident set while it was converted (bulk_run's to fill) */
    gboolean stop;     /* an error every model would meet (a usage error): start no more */
} BulkRecord;

void bulk_record_clear(BulkRecord *rec);

/* Convert one model into rec (status, message, figures), printing what a conversion prints. */
typedef void (*BulkConvertFunc)(BulkItem *it, BulkRecord *rec, gpointer data);
/* Called for each model once it and every model before it are done, in the list's order, after
 * its printed lines have gone out. */
typedef void (*BulkDoneFunc)(guint index, const BulkItem *it, const BulkRecord *rec, gpointer data);

/* The default of --jobs: the number of cores. */
guint bulk_default_jobs(void);

/* Convert every item, up to jobs at once. With one job (or one item) they are converted here, in
 * order. With more (or on a terminal, for the progress line), jobs worker processes (fork) convert
 * one model at a time each; what a model's conversion prints to standard output and error is kept
 * (the workers' are memfds) and printed when its turn in the list comes, so that what is printed,
 * and what done is given, is the same whatever jobs is. A model whose worker dies gets an error
 * (its signal), and the worker is started again. A signal that ends this process (SIGINT, SIGTERM,
 * SIGHUP) is passed on to the workers first. HALFGUARD_TEST_CRASH=SUFFIX kills the worker that
 * is given a model whose path ends in SUFFIX (for the tests). */
void bulk_run(GPtrArray *items, guint jobs, BulkConvertFunc convert, BulkDoneFunc done, gpointer data);

/* Do files a and b hold the same bytes? (FALSE when either cannot be read, or is standard output.) */
gboolean bulk_same_bytes(const char *a, const char *b);

/* The --results line of one model (README: "convert --results"): a JSON object and a newline. */
char *bulk_result_line(const BulkItem *it, const BulkRecord *rec);

G_END_DECLS

#endif
