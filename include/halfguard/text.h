/* halfguard: the text form of a model, in ONNX's textual syntax (the one onnx.parser reads).
 *
 * hg_model_to_text() writes the model header, the graph signature with element types and shapes, the
 * initializers, value_info and the nodes with their attributes. hg_model_parse_text() reads that
 * syntax back, so tests and golden inputs are written as text.
 */
#ifndef HALFGUARD_TEXT_H
#define HALFGUARD_TEXT_H

#include <halfguard/ir.h>

G_BEGIN_DECLS

typedef struct {
    /* Initializers with more elements than this are summarised (a comment with dtype, shape, and
     * statistics) instead of printed in full. 0 means the default (64); G_MAXINT64 prints all. */
    gint64 max_elements;
} HgTextOptions;

/* The text form of m. Returns a newly allocated string (g_free). opts may be NULL. */
HG_API char *hg_model_to_text(HgModel *m, const HgTextOptions *opts);

/* Parse ONNX text into a new model (free with hg_model_free), or NULL with HG_ERROR_PARSE whose message
 * starts with "line L, column C: ". The model is then validated like a loaded one: a model that parses
 * but is invalid (a cycle, an undefined value, a tensor of the wrong size) fails with
 * HG_ERROR_INVALID, without a position, as the loader reports it. */
HG_API HgModel *hg_model_parse_text(const char *text, gsize len, GError **error);

G_END_DECLS

#endif
