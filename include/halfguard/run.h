/* halfguard: the interpreter, and the files it reads and writes.
 *
 * hg_run() executes a model node by node in topological order. Compute is FP32 (FP64 for double);
 * every tensor is stored in the element type the graph declares, so an FP16 model runs with FP16
 * storage, as a GPU runs it, and an overflow shows up as inf in the tensor where it happens. The op
 * table (src/ops/ops.def) documents each op's accumulation.
 */
#ifndef HALFGUARD_RUN_H
#define HALFGUARD_RUN_H

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
} HgRunOptions;

/* The graph inputs a caller must feed: those that are not initializers, in graph-input order. Returns
 * a new array of HgValueDecl (borrowed). */
HG_API GPtrArray *hg_run_feeds(HgModel *m);

/* Run m's main graph. inputs holds one HgTensor per feed (hg_run_feeds order); each must have the
 * declared element type, rank and known dims. Returns a new array of HgTensor (free with
 * g_ptr_array_unref), one per graph output (or per opts->outputs name), or NULL with an HG_ERROR naming
 * the node or input at fault (an op without a kernel is HG_ERROR_UNSUPPORTED; an unknown output name
 * HG_ERROR_USAGE). */
HG_API GPtrArray *hg_run(HgModel *m, GPtrArray *inputs, const HgRunOptions *opts, GError **error);

/* A tensor file: a TensorProto (.pb) or a NumPy array (.npy). Returns a new tensor. */
HG_API HgTensor *hg_tensor_load_file(const char *path, GError **error);
/* Write t as .npy (C order). */
HG_API gboolean hg_tensor_save_npy(const HgTensor *t, const char *path, GError **error);
/* Write t as a TensorProto file. */
HG_API gboolean hg_tensor_save_pb_file(const HgTensor *t, const char *path, GError **error);

/* The feeds for m from a folder in the ONNX test-data layout (input_K.pb, K in feed order) or of
 * NAME.npy files. Names come from the files (.npy) or the model (.pb); a missing input, or one with
 * the wrong element type or shape, is an HG_ERROR_USAGE error that names it. */
HG_API GPtrArray *hg_load_feeds(HgModel *m, const char *dir, GError **error);

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

G_END_DECLS

#endif
