/* Runtime tensors for the interpreter and the kernels (internal).
 *
 * An HgArray holds a dense row-major tensor in the element type the graph declares: an FP16 tensor is
 * stored as IEEE binary16, so a value that overflows shows up as inf where it happens. Kernels compute
 * in FP32 (FP64 for double, int64 for integers) and store the result back with one rounding; the
 * load/store helpers below do those conversions so each kernel is written once per compute type.
 */
#ifndef HG_OPS_ARRAY_H
#define HG_OPS_ARRAY_H

#include "halfguard/ir.h"

G_BEGIN_DECLS

#define HG_MAX_RANK 8

typedef struct HgArray {
    gint refcount;
    int dtype;                 /* HgDType */
    guint rank;
    gint64 dims[HG_MAX_RANK];
    gint64 numel;              /* product of dims (1 for a scalar) */
    void *data;                /* numel elements of hg_dtype_size(dtype) bytes */
    gboolean owns_data;        /* FALSE when data is a view of a tensor or another array */
    HgBlob *blob;              /* keeps viewed tensor data alive */
    struct HgArray *base;      /* keeps a viewed array alive */
    GPtrArray *strings;        /* of GBytes, for HG_DTYPE_STRING (data is NULL) */
} HgArray;

/* Bytes per element in an HgArray (bool, int8, uint8: 1; 4-bit types are not supported: 0). */
gsize hg_dtype_size(int dtype);

/* A new zero-filled array, or NULL with HG_ERROR_UNSUPPORTED/INVALID when the dtype has no fixed size,
 * the rank exceeds HG_MAX_RANK, a dim is negative, or the size overflows. */
HgArray *hg_array_new(int dtype, guint rank, const gint64 *dims, GError **error);
/* Cap the bytes of each array allocated on the calling thread from now on (0: no cap); returns the
 * cap before. The interpreter sets it to what a run's memory cap leaves while a kernel runs, so an
 * output whose size only the data decides (a Range to a computed limit) fails before it is allocated
 * and filled, with HG_ERROR_USAGE. */
guint64 hg_array_set_alloc_limit(guint64 bytes);
/* The bytes of the last array the cap refused on this thread since it was last set (0: none). */
guint64 hg_array_alloc_refused(void);
/* Like hg_array_new, but numeric data is left uninitialized (string arrays still hold empty strings):
 * for kernels that write every element of the output. */
HgArray *hg_array_new_uninit(int dtype, guint rank, const gint64 *dims, GError **error);
/* Like hg_array_new, dims taken from another array. */
HgArray *hg_array_new_like(int dtype, const HgArray *shape_of, GError **error);
HgArray *hg_array_new_scalar_f32(int dtype, float v);
HgArray *hg_array_ref(HgArray *a);
void hg_array_unref(HgArray *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HgArray, hg_array_unref)

/* An array over the tensor's data (a view where the layout allows, else a copy), or NULL with an
 * error for storage it cannot read (strings are copied into strings). */
HgArray *hg_array_from_tensor(const HgTensor *t, GError **error);
/* A view of the tensor's data even where it is not aligned for its element type (a file's bytes):
 * for the analyses, which read elements with hg_array_get_f64/_i64, the hg_array_load_* helpers or
 * hg_range_of_array, all of which accept unaligned data. Kernels that cast a->data to a typed pointer
 * need hg_array_from_tensor. Falls back to hg_array_from_tensor where no view is possible. */
HgArray *hg_array_view_tensor(const HgTensor *t, GError **error);
/* Done reading a's bytes in bulk: where a views a mapped file, its pages leave the process
 * (hg_blob_release), so that a pass over every weight does not keep them all resident. */
void hg_array_release(const HgArray *a);
/* A new tensor (raw storage) holding a copy of a's data. */
HgTensor *hg_array_to_tensor(const HgArray *a, const char *name);
/* A view of a with other dims (same numel); shares data. */
HgArray *hg_array_reshape_view(HgArray *a, guint rank, const gint64 *dims, GError **error);
/* A deep copy with owned data. */
HgArray *hg_array_copy(const HgArray *a);
/* a itself when its data is aligned for its element type, else an aligned copy of it in *tmp (which
 * the caller unrefs; NULL when a is returned): arrays viewing a mapped file may sit at odd offsets. */
const HgArray *hg_array_aligned(const HgArray *a, HgArray **tmp);

/* IEEE binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN, overflow goes to inf. */
float hg_half_to_float(guint16 h);
guint16 hg_float_to_half(float f);
float hg_bf16_to_float(guint16 h);
guint16 hg_float_to_bf16(float f);
/* n values converted between FP32 and FP16 bits, four lanes at a time: the same bits as
 * hg_float_to_half / hg_half_to_float element by element, for every input (NaN payloads included).
 * src and dst must not overlap. */
void hg_float_to_half_n(const float *src, guint16 *dst, gsize n);
void hg_half_to_float_n(const guint16 *src, float *dst, gsize n);
/* The same conversions on n little-endian values given as bytes at any alignment (a tensor viewed in
 * a mapped file, say): src holds 4n (resp. 2n) bytes, dst receives 2n (resp. 4n). */
void hg_f32_bytes_to_f16(const void *src, void *dst, gsize n);
void hg_f16_bytes_to_f32(const void *src, void *dst, gsize n);
/* Round an FP32 value to the nearest FP16 value (as FP32): what storing it in FP16 does. */
float hg_round_half(float f);

/* Compute types: FP32 for float, float16 and bfloat16; FP64 for double; int64 for integers and bool. */
typedef enum { HG_COMPUTE_F32, HG_COMPUTE_F64, HG_COMPUTE_I64, HG_COMPUTE_NONE } HgCompute;
HgCompute hg_dtype_compute(int dtype);

/* The elements of a as FP32. Returns a.data itself for FLOAT arrays (*owned = FALSE), else a new
 * buffer to g_free (*owned = TRUE). Integer arrays convert by value. */
float *hg_array_load_f32(const HgArray *a, gboolean *owned);
double *hg_array_load_f64(const HgArray *a, gboolean *owned);
gint64 *hg_array_load_i64(const HgArray *a, gboolean *owned);
/* Store n = out->numel values into out, converting to out's dtype with one rounding (FP16, BF16) or a
 * C conversion (integers wrap like a cast; bool is x != 0). */
void hg_array_store_f32(HgArray *out, const float *src);
void hg_array_store_f64(HgArray *out, const double *src);
void hg_array_store_i64(HgArray *out, const gint64 *src);
/* Elements [off, off + n) of a float array (FLOAT, FLOAT16 or BFLOAT16) as FP32 into dst, and the
 * reverse with one rounding: for kernels that stream FP16 data through a row of FP32 scratch instead
 * of converting the whole tensor. The store may take src == the FLOAT row it replaces. */
void hg_array_load_span_f32(const HgArray *a, gint64 off, gint64 n, float *dst);
void hg_array_store_span_f32(HgArray *a, gint64 off, gint64 n, const float *src);
/* One element, converted: handy for scalars and small index tensors. */
double hg_array_get_f64(const HgArray *a, gint64 i);
gint64 hg_array_get_i64(const HgArray *a, gint64 i);

/* Row-major strides (in elements) of a shape. */
void hg_strides(guint rank, const gint64 *dims, gint64 *strides);

/* NumPy broadcasting of two shapes into out (rank = max); FALSE with HG_ERROR_INVALID when they do
 * not broadcast. */
gboolean hg_broadcast_shape(guint ra, const gint64 *da, guint rb, const gint64 *db, guint *rout,
                            gint64 *dout, GError **error);
/* Strides of an input of shape (rank, dims) broadcast to (rout, dout): 0 along broadcast axes. */
void hg_broadcast_strides(guint rank, const gint64 *dims, guint rout, const gint64 *dout,
                          gint64 *strides);

G_END_DECLS

#endif
