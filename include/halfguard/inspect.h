/* halfguard: what a model is, for a person meeting it (`halfguard inspect`).
 *
 * Its inputs and outputs with element types and shapes (symbolic dims by name), what the analysis
 * knows of each input's range (given, derived from the model, not needed, or none: then what to
 * pass), IR and opset versions, producer, an op histogram, initializer bytes by element type,
 * external data, and the ops halfguard has no row for. And a `.halfguard.ini` skeleton with a
 * `[ranges]` group for the model, the inputs that need a range left as commented lines to fill in.
 */
#ifndef HALFGUARD_INSPECT_H
#define HALFGUARD_INSPECT_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

/* The description of m (loaded from path, which it names) as text lines or (json) one JSON object;
 * the input ranges are those hg_check derives with no range given. New string; NULL with an error
 * where the analysis cannot run (a cycle). */
HG_API char *hg_inspect(HgModel *m, const char *path, gboolean json, GError **error);

/* A .halfguard.ini skeleton for m: a [ranges GLOB] group (GLOB the model's file name) with a line per
 * input, commented out ("# NAME = LO:HI") where the input needs a range the model does not give, and
 * a comment saying why for the others. New string. */
HG_API char *hg_inspect_ini(HgModel *m, const char *path, GError **error);

G_END_DECLS

#endif
