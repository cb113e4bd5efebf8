/* halfguard: loading and saving models.
 *
 * The loader reads the ONNX protobuf (or ONNX text, .onnxtxt) into the IR of ir.h; the saver writes the
 * IR back. What the IR carries unchanged comes out byte for byte as it came in.
 */
#ifndef HALFGUARD_IO_H
#define HALFGUARD_IO_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

/* The deepest a model may nest: graphs inside graphs (If, Loop, Scan bodies; the main graph is level 1)
 * and types inside types (sequence, map, optional; a tensor type is level 1). A model past either is
 * HG_ERROR_INVALID, found on the wire before protobuf-c (which recurses) unpacks it. */
#define HG_MAX_GRAPH_DEPTH 64
#define HG_MAX_TYPE_DEPTH 64

/* Load the model at path: an ONNX protobuf, or ONNX text when the name ends in ".onnxtxt".
 * External data is mapped read-only from files beside the model; paths that leave the model's folder
 * are refused. Returns a new model (free with hg_model_free) or NULL with an HG_ERROR:
 * HG_ERROR_IO, HG_ERROR_PARSE, HG_ERROR_LFS (a Git LFS pointer) or HG_ERROR_INVALID. The message does
 * not repeat the path: callers print "PATH: message". */
HG_API HgModel *hg_model_load(const char *path, GError **error);

/* Load a serialized ModelProto from memory. dir (may be NULL) is the folder external data is read
 * from. The bytes are not referenced after the call. */
HG_API HgModel *hg_model_load_bytes(const void *data, gsize len, const char *dir, GError **error);

/* Check a loaded graph tree for the errors the loader rejects (undefined values, duplicates, cycles,
 * bad tensor sizes). The loader calls it; the text parser too. */
HG_API gboolean hg_model_validate(HgModel *m, GError **error);

/* Serialize m to a new buffer (g_free it) of *len bytes. External tensors stay external (only their
 * references are written). */
HG_API guint8 *hg_model_save_bytes(HgModel *m, gsize *len, GError **error);

/* Write m to path under the output rules (README "Outputs"): a regular file is replaced atomically
 * (a temporary in the folder of the file a symbolic link points to, then a rename); a character
 * device or a FIFO is written to directly; "-" is standard output; anything else is refused. External
 * tensors go to the output's own data file, TARGET.data beside the target (its location entries say
 * so): copied whole when they come unchanged from one file that holds nothing else, else laid out
 * again at 64-byte boundaries; initializers a conversion made (held in memory or in the model's
 * spill file, 1 KiB or more) go there too when there is a data file or the input had external data. A stream gets them inside the model. A model whose serialized size would pass 2 GiB
 * less 64 MiB (protobuf's limit; HALFGUARD_TEST_PROTOBUF_LIMIT lowers it for tests) has its
 * largest initializers moved to the data file; if it cannot fit, or goes to a stream, nothing is
 * written (HG_ERROR_OUTPUT). path may be the file m was loaded from when m keeps no external data;
 * it may never be another file a live model was loaded from. On failure nothing at path changes
 * (a stream keeps what was written). Output errors are HG_ERROR_OUTPUT, "PATH: reason". */
HG_API gboolean hg_model_save(HgModel *m, const char *path, GError **error);

/* Where hg_model_save_external puts initializers. */
typedef enum {
    HG_EXTERNAL_AUTO,   /* hg_model_save's rules: a data file when the input had external data (every
                         * tensor that was external or that a conversion made, of 1 KiB or more, goes
                         * there), or when the model would pass the 2 GiB limit */
    HG_EXTERNAL_ALWAYS, /* every initializer of 1 KiB or more in the data file; a stream is refused */
    HG_EXTERNAL_NEVER,  /* every tensor inside the model, external ones read in; a model past the
                         * limit is refused */
} HgExternalData;

/* hg_model_save with the data file chosen by mode. Refusals are HG_ERROR_OUTPUT; nothing is written. */
HG_API gboolean hg_model_save_external(HgModel *m, const char *path, HgExternalData mode, GError **error);

/* Say, before converting m, that it will be saved to path with mode: where the output will have a
 * data file (mode ALWAYS, or AUTO and m has external data), that file's temporary is opened now, beside
 * path's target (under the rules above; removed if m is freed unsaved, or on SIGINT, SIGTERM, SIGHUP),
 * and the weights the conversion converts are written into it, where the save then leaves them:
 * written once, not to a scratch file and then again. Optional: a save to another path, or with
 * another mode, copies them as before. Nothing happens where the file cannot be opened (the save
 * reports why). hg_convert_file does this itself. */
HG_API void hg_model_plan_output(HgModel *m, const char *path, HgExternalData mode);

/* Write len bytes at data to path as halfguard writes every file: "-" is standard output, a regular
 * file is replaced atomically, a FIFO or character device is written directly, anything else is
 * refused (HG_ERROR_OUTPUT, "PATH: reason"); no file a live model was loaded from is replaced. */
HG_API gboolean hg_write_file(const char *path, const void *data, gsize len, GError **error);

/* A serialized TensorProto (the ONNX test-data format, input_0.pb) as a new tensor, or NULL with an
 * HG_ERROR. Typed fields are decoded; the tensor owns its data. */
HG_API HgTensor *hg_tensor_load_pb(const void *data, gsize len, GError **error);

/* t serialized as a TensorProto (raw_data storage unless t holds strings). Returns a new buffer. */
HG_API guint8 *hg_tensor_save_pb(const HgTensor *t, gsize *len);

/* TRUE when the first bytes of a file are a Git LFS pointer. */
HG_API gboolean hg_is_lfs_pointer(const void *data, gsize len);

G_END_DECLS

#endif
