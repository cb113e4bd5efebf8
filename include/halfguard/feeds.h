/* halfguard: what a run is fed.
 *
 * The graph inputs a caller must give, loading them from a folder of sample data, and converting a
 * tensor between float element types. The interpreter (run.h) takes these feeds; so do calibration,
 * verify and the hazard analysis, which need nothing else of the interpreter for them.
 */
#ifndef HALFGUARD_FEEDS_H
#define HALFGUARD_FEEDS_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

/* The graph inputs a caller must feed: those that are not initializers, in graph-input order. Returns
 * a new array of HgValueDecl (borrowed). */
HG_API GPtrArray *hg_run_feeds(HgModel *m);

/* The feeds for m from a folder in the ONNX test-data layout (input_K.pb, K in feed order) or of
 * NAME.npy files. Names come from the files (.npy) or the model (.pb); a missing input, or one with
 * the wrong element type or shape, is an HG_ERROR_USAGE error that names it. */
HG_API GPtrArray *hg_load_feeds(HgModel *m, const char *dir, GError **error);
/* The same, converting a float feed to the float type the model declares for it (rounding once): FP32
 * sample data for a model whose inputs convert made FP16 (calibration, check, convert). */
HG_API GPtrArray *hg_load_feeds_converted(HgModel *m, const char *dir, GError **error);

/* A new tensor holding t's values in element type dtype (dims and name kept; raw storage). The float
 * types (float, float16, bfloat16, double) convert among themselves with one rounding to nearest
 * even (double to float16 or bfloat16 goes through float); overflow becomes inf, NaN stays NaN. The
 * same type is a copy. Any other pair is HG_ERROR_UNSUPPORTED; storage that cannot be read (external
 * data) HG_ERROR_INVALID. */
HG_API HgTensor *hg_tensor_convert(const HgTensor *t, HgDType dtype, GError **error);

/* ---------------------------------------------------------------- sample inputs */

/* Sample inputs from one file or folder, in the formats users have (README.md, "Calibration data"):
 *   - a folder of input_K.pb (K in feed order) or NAME.npy files: one sample (hg_load_feeds);
 *   - a folder of such folders, and no input files of its own: one sample per folder, in name order
 *     (what `calibrate --random -O` writes; ONNX's test_data_set_K layout);
 *   - an .npz (numpy's zip of .npy files): arrays keyed by input name, each with an optional leading
 *     sample axis (one more dim than the input declares), as AutoCast reads them; arrays without it
 *     are the same in every sample;
 *   - Polygraphy's --save-inputs JSON: a list of {input name: encoded array}, one sample each.
 * Opening reads and checks the file's own structure (a malformed file is an error here, before any
 * model is touched); hg_samples_feeds fits the samples to a model. */
typedef struct HgSamples HgSamples;

/* Open path. NULL with HG_ERROR_IO (cannot be read) or HG_ERROR_PARSE (not a valid .npz, JSON or .npy
 * inside; a JSON that is not a list of feed dicts). */
HG_API HgSamples *hg_samples_open(const char *path, GError **error);
/* Samples are reference-counted: hg_samples_free drops one reference. */
HG_API HgSamples *hg_samples_ref(HgSamples *s);
HG_API void hg_samples_free(HgSamples *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgSamples, hg_samples_free)
/* The path it was opened from. */
HG_API const char *hg_samples_path(const HgSamples *s);

/* One sample fitted to a model: a label naming where it comes from ("calib/0", "data.npz[3]",
 * "inputs.json[0]") and its feeds in hg_run_feeds order (HgTensor*, owned). */
typedef struct {
    char *label;
    GPtrArray *feeds;
} HgSample;

HG_API void hg_sample_free(HgSample *s);

/* Every sample of s as feeds for m: a new array of HgSample*. With convert, a float array becomes the
 * float type the model declares (rounding once: FP32 data for a model whose inputs are FP16), and an
 * integer array the integer type it declares where every value fits (numpy's default int64 for an
 * int32 input). NULL with HG_ERROR_USAGE naming the file, the sample and the input that is missing,
 * has the wrong type or shape, or an array that is no input of m. */
HG_API GPtrArray *hg_samples_feeds(const HgSamples *s, HgModel *m, gboolean convert, GError **error);

G_END_DECLS

#endif
