/* halfguard: the interpreter, and the files it reads and writes.
 *
 * hg_run() executes a model node by node in topological order. Compute is FP32 (FP64 for double);
 * every tensor is stored in the element type the graph declares, so an FP16 model runs with FP16
 * storage, as a GPU runs it, and an overflow shows up as inf in the tensor where it happens. The op
 * table (src/ops/ops.def) documents each op's accumulation.
 */
#ifndef HALFGUARD_RUN_H
#define HALFGUARD_RUN_H

#include <halfguard/feeds.h>
#include <halfguard/ir.h>

G_BEGIN_DECLS

/* Called for each value as soon as it is computed (graph inputs first, then node outputs; not the
 * initializers, which are known without running). t is a view
 * valid only during the call. Return FALSE (with error set) to stop the run. */
typedef gboolean (*HgObserveFunc)(const HgValue *value, const HgTensor *t, gpointer data,
                                  GError **error);

typedef struct {
    int threads;           /* threads for BLAS kernels; 0 = all cores */
    HgObserveFunc observe; /* may be NULL */
    gpointer observe_data;
    /* Names of the values to return instead of the graph outputs (NULL-terminated; NULL = the graph
     * outputs). Only the nodes they depend on run, so a model whose other outputs need ops without a
     * kernel (ai.onnx.ml's ZipMap, say) still runs up to these. */
    const char *const *outputs;
    /* The most bytes the run's live tensors (those it computed and still needs, and its inputs; not
     * the model's constants) may take; 0 = the default, half the physical memory. A node whose
     * outputs pass it stops the run with an HG_ERROR_USAGE naming the node (its outputs, once
     * computed, are freed: the peak is the cap plus one node's outputs). */
    guint64 max_memory;
} HgRunOptions;

/* Run m's main graph. Several threads may run one model at once (the compiled plan it caches is
 * shared and immutable), as long as none changes the model meanwhile. inputs holds one HgTensor per feed
 * (hg_run_feeds order); each must have the
 * declared element type, rank and known dims. Returns a new array of HgTensor (free with
 * g_ptr_array_unref), one per graph output (or per opts->outputs name), or NULL with an HG_ERROR naming
 * the node or input at fault (an op without a kernel is HG_ERROR_UNSUPPORTED; an unknown output name
 * HG_ERROR_USAGE). */
HG_API GPtrArray *hg_run(HgModel *m, GPtrArray *inputs, const HgRunOptions *opts, GError **error);
/* The cap on live tensors of every run whose options give none (0 restores half the physical memory):
 * for the runs that commands make inside calibration, verification and hg_run_to_dir. Call it before
 * any run starts; it is not synchronized with running threads. */
HG_API void hg_run_set_default_max_memory(guint64 bytes);

/* A tensor file: a TensorProto (.pb) or a NumPy array (.npy). Returns a new tensor. */
HG_API HgTensor *hg_tensor_load_file(const char *path, GError **error);
/* Write t as .npy (C order). */
HG_API gboolean hg_tensor_save_npy(const HgTensor *t, const char *path, GError **error);
/* Write t as a TensorProto file. */
HG_API gboolean hg_tensor_save_pb_file(const HgTensor *t, const char *path, GError **error);

typedef enum { HG_FORMAT_PB, HG_FORMAT_NPY } HgTensorFormat;

/* Run m on the feeds in data_dir (hg_load_feeds) and write output_K.pb (or .npy) into out_dir, which
 * is created: one file per graph output, or per name of outputs (NULL-terminated, may be NULL). With
 * mark_all, also every intermediate float tensor, under a file name made safe from the tensor's name,
 * plus index.json mapping tensor names to files, element types and shapes. */
HG_API gboolean hg_run_to_dir(HgModel *m, const char *data_dir, const char *out_dir,
                              const char *const *outputs, HgTensorFormat format, gboolean mark_all,
                              int threads, GError **error);

/* Time hg_run on the feeds in data_dir: repeat runs (after one untimed warm-up); times_ms receives
 * each run's wall time in milliseconds (caller-allocated, repeat entries). */
HG_API gboolean hg_run_timed(HgModel *m, const char *data_dir, const char *const *outputs, int threads,
                             guint repeat, double *times_ms, GError **error);

/* Run m on every folder of data_dirs and write per-tensor statistics of the float tensors to json_path
 * (format documented in the README: min, max, absmax, smallest nonzero |x|, counts of inf and NaN, the
 * number of samples). */
HG_API gboolean hg_calibrate(HgModel *m, const char *const *data_dirs, int threads,
                             const char *json_path, GError **error);

/* ---------------------------------------------------------------- verify */

/* The largest relative L2 error of an output that passes, by default. */
#define HG_VERIFY_DEFAULT_L2_TOL 1e-2
/* The per-element tolerances when only one is given (Polygraphy's defaults). */
#define HG_VERIFY_DEFAULT_ATOL 1e-5
#define HG_VERIFY_DEFAULT_RTOL 1e-5

typedef struct {
    double l2_tol; /* the largest relative L2 error that passes (>= 0; HG_VERIFY_DEFAULT_L2_TOL) */
    int threads; /* threads for BLAS kernels; 0 = all cores */
    /* Values to compare instead of the graph outputs (NULL-terminated, NULL = the graph outputs): a
     * model whose outputs go through ops the interpreter lacks is compared up to them. */
    const char *const *outputs;
    /* The per-element check, Polygraphy's convention: with elementwise set, an element passes when
     * |conv - orig| <= atol + rtol * |orig| (both >= 0), and an output passes only when every compared
     * element does (as well as its L2 figure). Off (FALSE) by default. */
    gboolean elementwise;
    double atol, rtol;
    /* Called before each sample runs, with the samples finished so far, their total and the
     * sample's label; NULL for none (the CLI draws its progress line with it). */
    void (*progress)(guint done, guint total, const char *label, gpointer data);
    gpointer progress_data;
} HgVerifyOptions;

/* One graph output, compared over all data folders (their elements taken as one vector). */
typedef struct {
    char *name;
    HgDType dtype_orig, dtype_conv;
    gint64 count;          /* elements per model, summed over folders */
    gint64 compared;       /* elements where both values are finite: what rel_l2 and max_abs cover */
    /* ||conv - orig||_2 / ||orig||_2 over the compared elements, in double; 0 when both norms are 0
     * (0/0), +inf when only ||orig|| is 0. */
    double rel_l2;
    double max_abs;        /* max |conv - orig| over the compared elements (0 when none) */
    /* The per-element check (HgVerifyReport.elementwise): the compared elements over atol + rtol *
     * |orig|, and the largest ratio |conv - orig| / (atol + rtol * |orig|) (over 1: that element
     * fails; 0 when the check is off or nothing was compared). */
    gint64 elements_over;
    double worst_ratio;
    gint64 nonfinite_orig; /* inf or NaN elements of ORIG */
    gint64 nonfinite_conv; /* inf or NaN elements of CONVERTED */
    gint64 new_nonfinite;  /* elements non-finite in CONVERTED where ORIG's is finite */
    gboolean pass;         /* new_nonfinite == 0, rel_l2 <= l2_tol, and elements_over == 0 */
} HgVerifyOutput;

/* The first value that turned non-finite in CONVERTED: in its execution order, the first computed
 * float value holding inf or NaN whose same-named value in ORIG, run on the same folder, was finite
 * everywhere (or was not computed there). The earliest over all folders; value NULL when none. */
typedef struct {
    char *value;
    char *node, *op;         /* its producer (node may be NULL: unnamed); op NULL for a graph input */
    char *data_dir;          /* the folder where it happened */
    gint64 nonfinite, count; /* its inf/NaN elements, and all of them, in that folder */
} HgVerifyNonFinite;

typedef struct {
    double l2_tol;
    gboolean elementwise; /* the per-element check ran, with these tolerances */
    double atol, rtol;
    guint samples;      /* data folders run */
    guint n_outputs;
    HgVerifyOutput *outputs; /* in ORIG's graph-output order */
    HgVerifyNonFinite first_nonfinite;
    gboolean pass;      /* every output passes */
} HgVerifyReport;

HG_API void hg_verify_report_free(HgVerifyReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgVerifyReport, hg_verify_report_free)

/* Run orig and conv with the interpreter on the feeds of every folder of data_dirs (NULL-terminated,
 * at least one; the layout of hg_load_feeds, which must fit orig) and compare their graph outputs by
 * name. conv's feeds are orig's, matched by input name and converted to the element type conv
 * declares (hg_tensor_convert), so a model converted without keeping its IO types takes the same
 * data. opts may be NULL. Returns a new report (free with hg_verify_report_free), or NULL with an
 * HG_ERROR: HG_ERROR_USAGE when the outputs differ in name (all missing names are listed), when conv
 * needs an input orig lacks, or when the two give an output different shapes; what hg_load_feeds and
 * hg_run report otherwise, prefixed with the model and the folder. A negative tolerance is a caller
 * bug. */
HG_API HgVerifyReport *hg_verify(HgModel *orig, HgModel *conv, const char *const *data_dirs,
                                 const HgVerifyOptions *opts, GError **error);

/* hg_verify on samples already fitted to orig (HgSample*, hg_samples_feeds; at least one), each
 * labelled in the report by its label instead of a folder (a sample whose feeds are NULL is loaded
 * from the folder its label names, when its turn comes). */
HG_API HgVerifyReport *hg_verify_samples(HgModel *orig, HgModel *conv, const GPtrArray *samples,
                                         const HgVerifyOptions *opts, GError **error);

/* The report as text: one line per output, the first non-finite value, a verdict line. New string. */
HG_API char *hg_verify_format_text(const HgVerifyReport *r);
/* The report as JSON (format "halfguard-verify", README.md documents the fields). New string. */
HG_API char *hg_verify_format_json(const HgVerifyReport *r);

G_END_DECLS

#endif
