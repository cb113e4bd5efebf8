/* Internal helpers shared by the library's modules; not installed. */
#ifndef HALFGUARD_IR_PRIVATE_H
#define HALFGUARD_IR_PRIVATE_H

#include "halfguard/ir.h"

G_BEGIN_DECLS

/* A blob owning data (g_free'd at the last unref), or a read-only mapping (munmap'ed). */
HgBlob *hg_blob_new_take(void *data, gsize len);
/* A read-only mapping of the file open as fd (owned: closed at the last unref). */
HgBlob *hg_blob_new_mapped(void *addr, gsize len, int fd);
/* The open file of a mapped blob, or -1. */
int hg_blob_fd(const HgBlob *b);
const void *hg_blob_data(const HgBlob *b, gsize *len);

void hg_unknown_free(HgUnknown *u);
HgUnknown *hg_unknown_copy(const HgUnknown *u);
void hg_string_pair_free(gpointer p);

/* A shape of the given rank with every dim unknown. */
HgShape *hg_shape_new(guint rank);
void hg_shape_free(HgShape *s);

/* Product of dims, or -1 on a negative dim or overflow. */
gint64 hg_numel(guint rank, const gint64 *dims);
/* Dims as "[2,3,4]" (a new string). */
char *hg_dims_string(guint rank, const gint64 *dims);
/* Bytes the tensor's dims and dtype call for, or -1 (overflow, or a dtype without a fixed size). */
gint64 hg_tensor_expected_bytes(const HgTensor *t);

/* Record v (defined in an enclosing graph) as an outer reference of g and of every graph between.
 * hg_node_set_input, hg_graph_add_node and hg_graph_add_output do it themselves. */
void hg_graph_note_outer_ref(HgGraph *g, HgValue *v);

/* Call fn on each graph-valued attribute of n (not recursing). */
void hg_node_for_each_subgraph(HgNode *n, HgGraphFunc fn, gpointer data);

/* TRUE when t fits the graph input d: present, of the declared element type, and of the declared
 * shape where dims are known; else an HG_ERROR_USAGE error that names the input (feeds.c). */
gboolean hg_feed_check(const HgValueDecl *d, const HgTensor *t, GError **error);

/* A tensor from the bytes of a .npy file (version 1-3, C order). */
HgTensor *hg_npy_parse(const guint8 *d, gsize len, const char *name, GError **error);

G_END_DECLS

#endif
