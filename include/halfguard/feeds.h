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
HG_API HgTensor *hg_tensor_convert(const HgTensor *t, int dtype, GError **error);

G_END_DECLS

#endif
