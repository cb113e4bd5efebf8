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
/* Where a mapped blob's first byte lies in its file (hg_blob_fd): 0 but for hg_blob_new_mapped_at. */
gint64 hg_blob_file_offset(const HgBlob *b);
/* A read-only mapping of len bytes at offset of file's open file (a blob made by hg_blob_new_mapped,
 * whose file it shares and keeps open by a reference). scratch: the file is halfguard's own scratch
 * (hg_spill_*), holding data the process made, not a file it read. */
HgBlob *hg_blob_new_mapped_at(void *addr, gsize len, HgBlob *file, gint64 offset, gboolean scratch);
/* Does b map a scratch file (bytes the process made, which a save must write out like memory)? */
gboolean hg_blob_is_spill(const HgBlob *b);
/* Done reading the len bytes at p, which lie in b: when b maps a file, its whole pages there leave
 * the process (madvise MADV_DONTNEED; the page cache keeps them and a later read maps them again),
 * so that reading a model's weights once, tensor by tensor, does not leave them all resident. Heap
 * blobs are untouched. */
void hg_blob_release(const HgBlob *b, const void *p, gsize len);
/* What a pass over a weight's bytes found (a scan, column sums), kept with the file they were mapped
 * from, so that each analysis of a conversion (there are several) does not read every weight again.
 * Only bytes that map a file (the input, its external data, the spill file) are kept: they cannot
 * change under us. The key is where the bytes lie in the file and how many, the fact's kind and up
 * to HG_FACT_PARAMS parameters (a layout); get copies the fact into out (out_len bytes) and says
 * whether it was there with that size. */
#define HG_FACT_PARAMS 4
enum { HG_FACT_SCAN = 1, HG_FACT_ROW_SUMS, HG_FACT_COL_SUMS, HG_FACT_COL_SQUARES };
/* Facts are kept only for weights of at least this many bytes: smaller ones cost less to read again. */
#define HG_FACT_MIN_BYTES ((gsize)64 << 10)
gboolean hg_blob_fact_get(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np,
                          void *out, gsize out_len);
gboolean hg_blob_fact_has(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np);
void hg_blob_fact_put(const HgBlob *b, const void *data, gsize len, guint kind, const gint64 *p, guint np,
                      const void *val, gsize val_len);
/* hg_blob_release of all of t's bytes. */
void hg_tensor_release(const HgTensor *t);

/* A scratch file: an unlinked temporary in g_get_tmp_dir() ($TMPDIR) that converted weights are
 * written to and mapped back from (hg_spill_put), so that a conversion's new weights need not live
 * in memory. Counted; each tensor put in it keeps it open. */
typedef struct HgSpill HgSpill;
HgSpill *hg_spill_new(GError **error);
void hg_spill_unref(HgSpill *s);
/* Append len bytes made by fill (called with successive pieces of at most 1 MiB: fill(dst, from,
 * count, data) writes bytes [from, from + count) of the tensor into dst) to s and return a read-only
 * mapping of them, or NULL with an error (HG_ERROR_IO). */
HgBlob *hg_spill_put(HgSpill *s, gsize len, void (*fill)(guint8 *dst, gsize from, gsize count,
                                                             gpointer data),
                       gpointer data, GError **error);
/* New weights of at least hg_spill_min() bytes made from a tensor that views a mapped file go to the
 * model's spill file (64 KiB; HALFGUARD_TEST_SCRATCH_MIN lowers it: the test suite checks the
 * mechanism on small models). */
#define HG_SPILL_MIN ((gsize)64 << 10)
gsize hg_spill_min(void);
/* A new raw tensor whose bytes fill writes (hg_spill_put) into m's spill file (made at the first
 * call, freed with m), or NULL with an error (the caller makes it in memory instead). */
HgTensor *hg_tensor_new_spilled(HgModel *m, const char *name, HgDType dtype, guint rank, const gint64 *dims,
                                void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data),
                                gpointer data, GError **error);

/* The same, but the bytes go into the output's data file when hg_model_spill_to_output opened it
 * (lower's converted weights: written once, where the save leaves them), else the spill file. */
HgTensor *hg_tensor_new_spilled_output(HgModel *m, const char *name, HgDType dtype, guint rank,
                                       const gint64 *dims,
                                       void (*fill)(guint8 *dst, gsize from, gsize count, gpointer data),
                                       gpointer data, GError **error);
/* Open the data file that saving m to out_path will write (its temporary, beside the target, under
 * the rules of outfile.h), so that lower writes converted weights straight into it: the save then
 * writes only what is not there yet, and renames it into place. Quietly does nothing where that
 * file cannot be opened (the save then reports it, or copies as before). The caller is one that
 * will save m to out_path with a data file (convert of a model with external data, or
 * --external-data always). */
void hg_model_spill_to_output(HgModel *m, const char *out_path);
/* For the save: the descriptor of the output spill when its file is the data file data_target and
 * still open (with *end, its length), else -1; then take its temporary (for hg_outfile_finish and
 * commit), or drop it (removed; the tensors in it keep their mapping) when the save lays the data
 * file out itself. */
int hg_model_output_spill(const HgModel *m, const char *data_target, gint64 *end);
struct HgOutFile *hg_model_take_output_data(HgModel *m);
void hg_model_drop_output_data(HgModel *m);

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
