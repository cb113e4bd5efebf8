/* gen_model: write a large, realistic FP32 model for the benchmarks (bench/run.sh, bench/check.sh).
 *
 *   gen_model OUT.onnx SIZE_MIB [--arch mlp|cnn|transformer] [--external DATA_NAME] [--dim N] [--seed S]
 *
 * --arch mlp (default): x[1,dim] -> (MatMul W_i[dim,dim] -> Add b_i[dim] -> Relu) ... -> y, dim 4096
 * by default. Its initializers add up to SIZE_MIB MiB (to within one column of the last layer): full
 * dim x dim layers while the budget lasts, then one narrower last layer [dim, c] that takes what is
 * left.
 *
 * --arch cnn: a VGG-like network whose weights are almost all Conv kernels, dim channels wide (1024 by
 * default; 28 body convs for 1 GiB):
 *
 *   x[1,3,224,224] -> Conv 3x3 (3 -> dim) -> Relu
 *     -> (Conv 3x3 (dim -> dim) -> Relu [-> MaxPool 2x2, five times spread over the body]) ...
 *     -> GlobalAveragePool -> Flatten -> Gemm (dim -> H) -> Relu -> Gemm (H -> 1000) -> y[1,1000]
 *
 * Convs pad by 1 and carry a bias; the Gemms hold PyTorch Linear weights ([out, in], transB=1). As
 * many body convs as fit, then the hidden width H takes what is left (to within one hidden unit).
 *
 * --arch transformer: a pre-norm transformer encoder as torch.onnx.export writes one at opset 13, dim
 * wide (1024 by default; 16 heads, FFN 4 x dim, sequence 128), as many blocks as fit (21 for 1 GiB):
 *
 *   x[1,128,dim] -> (h + Attention(LN(h)), then h + FFN(LN(h))) ... -> LN -> y[1,128,dim]
 *
 * LayerNorm decomposed (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add); attention
 * with Q, K, V and output projections (MatMul + Add), Reshape/Transpose to heads, MatMul, Div by
 * sqrt(64), Softmax; the FFN's GELU with Erf (Div sqrt 2, Erf, Add 1, Mul, Mul 0.5). Its weights
 * are N(0, 0.02) (Box-Muller), LayerNorm scales 1 and shifts 0, biases 0; the scalar and shape
 * constants stay inside OUT.onnx even with --external.
 *
 * Weights are deterministic pseudo-random floats in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (xorshift64*),
 * so two runs with the same arguments give the same bytes.
 *
 * Embedded (default): every weight is raw_data inside OUT.onnx, written by hg_model_save(). This holds
 * the whole model in memory once (SIZE_MIB MiB).
 *
 * --external DATA_NAME: every weight goes to the one file DATA_NAME beside OUT.onnx, each at a 64-byte
 * boundary (as hg_model_save lays out external data). The generator must not hold the whole model in
 * memory, and hg_model_save() writes external data from tensor bytes held in memory, so the data file
 * is written here one tensor at a time; each tensor's buffer is released once written and the tensor
 * keeps only its external reference. The small .onnx is then serialized with hg_model_save_bytes(),
 * which writes references only, and written atomically with g_file_set_contents().
 */
#include <halfguard/halfguard.h>
#include "ir_private.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((guint64)1 << 20)

/* xorshift64* (Vigna): fast, good enough for weights, and the same on every machine. */
static guint64
xs_next(guint64 *s)
{
    guint64 x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Fill n floats, two per random draw: the top 24 bits of each half give a uniform value in [0,1). */
static void
fill_uniform(float *p, gsize n, guint64 *state, float scale)
{
    const float k = 2.0f * scale / 16777216.0f;
    gsize i = 0;
    for (; i + 1 < n; i += 2) {
        guint64 r = xs_next(state);
        p[i] = (float)(guint32)(r >> 40) * k - scale;
        p[i + 1] = (float)(guint32)((r >> 8) & 0xFFFFFF) * k - scale;
    }
    if (i < n)
        p[i] = (float)(guint32)(xs_next(state) >> 40) * k - scale;
}

/* Fill n floats from N(0, sigma): Box-Muller on two uniform draws, both results kept. */
static void
fill_normal(float *p, gsize n, guint64 *state, float sigma)
{
    for (gsize i = 0; i < n; i += 2) {
        double u1 = ((double)(xs_next(state) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
        double u2 = (double)(xs_next(state) >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1)) * sigma;
        p[i] = (float)(r * cos(2.0 * G_PI * u2));
        if (i + 1 < n)
            p[i + 1] = (float)(r * sin(2.0 * G_PI * u2));
    }
}

/* The external_data entries of a tensor, freed by the GPtrArray with the library's own destructor
 * (ir_private.h), as the loader builds them: ir.h offers no public HgStringPair constructor. */
static void
add_pair(GPtrArray *a, const char *key, char *value /* taken */)
{
    HgStringPair *sp = g_new0(HgStringPair, 1);
    sp->key = g_strdup(key);
    sp->value = value;
    g_ptr_array_add(a, sp);
}

static gboolean
pwrite_all(int fd, const void *data, gsize n, gint64 off, GError **error)
{
    const guint8 *p = data;
    while (n) {
        ssize_t w = pwrite(fd, p, MIN(n, (gsize)1 << 30), off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            g_set_error(error, HG_ERROR, HG_ERROR_IO, "write: %s", g_strerror(w < 0 ? errno : EIO));
            return FALSE;
        }
        p += w;
        n -= (gsize)w;
        off += w;
    }
    return TRUE;
}

typedef struct {
    HgModel *m;
    HgGraph *g;
    guint64 state;
    int fill; /* 0: uniform in +-scale; 1: N(0, scale); 2: the constant scale */
    /* external data; fd < 0 for embedded weights */
    int fd;
    const char *location;
    gint64 off;
    GPtrArray *names; /* the transformer's names (nm), freed at the end */
} Gen;

/* prefix followed by suffix, kept in gen->names. */
static const char *
nm(Gen *gen, const char *prefix, const char *suffix)
{
    char *s = g_strconcat(prefix, suffix, NULL);
    g_ptr_array_add(gen->names, s);
    return s;
}

/* A value of the graph for tensor t (taken), its initializer. */
static HgValue *
add_initializer(Gen *gen, HgTensor *t, GError **error)
{
    HgValue *v = hg_graph_new_value(gen->g, t->name, error);
    if (!v) {
        hg_tensor_free(t);
        return NULL;
    }
    hg_graph_add_initializer(gen->g, v, t);
    return v;
}

/* A new initializer called name of shape dims, filled with pseudo-random weights. For external data
 * the bytes go to the data file and the tensor keeps only the reference. */
static HgValue *
add_weight(Gen *gen, const char *name, guint rank, const gint64 *dims, float scale, GError **error)
{
    HgTensor *t = hg_tensor_new(name, HG_DTYPE_FLOAT, rank, dims);
    if (!t) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "tensor '%s' is too large", name);
        return NULL;
    }
    float *f = hg_tensor_data_mut(t);
    gsize n = t->nbytes / sizeof(float);
    if (gen->fill == 1)
        fill_normal(f, n, &gen->state, scale);
    else if (gen->fill == 2)
        for (gsize i = 0; i < n; i++)
            f[i] = scale;
    else
        fill_uniform(f, n, &gen->state, scale);
    if (gen->fd >= 0) {
        gint64 off = (gen->off + 63) & ~(gint64)63;
        if (!pwrite_all(gen->fd, t->data, t->nbytes, off, error)) {
            hg_tensor_free(t);
            return NULL;
        }
        gen->off = off + (gint64)t->nbytes;
        t->storage = HG_STORAGE_EXTERNAL;
        t->ext_location = g_strdup(gen->location);
        t->ext_offset = off;
        t->ext_length = (gint64)t->nbytes;
        t->has_data_location = TRUE;
        t->data_location = 1; /* TensorProto.EXTERNAL */
        t->external = g_ptr_array_new_with_free_func(hg_string_pair_free);
        add_pair(t->external, "location", g_strdup(gen->location));
        add_pair(t->external, "offset", g_strdup_printf("%" G_GINT64_FORMAT, off));
        add_pair(t->external, "length", g_strdup_printf("%" G_GINT64_FORMAT, t->ext_length));
        /* Drop the bytes: the saver writes only the reference of an external tensor. */
        hg_blob_unref(t->blob);
        t->blob = NULL;
        t->data = NULL;
    }
    return add_initializer(gen, t, error);
}

/* A new node op_type called name with n_in inputs and one output called out_name; returns the
 * output (its producer is the node, for attributes). */
static HgValue *
add_op_n(Gen *gen, const char *op, const char *name, const char *out_name, guint n_in, HgValue *const *in,
         GError **error)
{
    HgValue *out = hg_graph_new_value(gen->g, out_name, error);
    if (!out)
        return NULL;
    hg_graph_add_node(gen->g, op, NULL, name, n_in, in, 1, &out);
    return out;
}

static HgValue *
add_op(Gen *gen, const char *op, const char *name, const char *out_name, HgValue *a, HgValue *b,
       GError **error)
{
    HgValue *in[2] = {a, b};
    return add_op_n(gen, op, name, out_name, b ? 2 : 1, in, error);
}

static void
attr_int(HgValue *out, const char *name, gint64 v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INT);
    a->i = v;
    hg_node_add_attr(out->producer, a);
}

static void
attr_ints(HgValue *out, const char *name, guint n, const gint64 *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_INTS);
    a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), n);
    g_array_append_vals(a->ints, v, n);
    hg_node_add_attr(out->producer, a);
}

static void
add_io(Gen *gen, HgValue *v, gboolean input, guint rank, const gint64 *dims)
{
    HgType *t = hg_type_new_tensor(HG_DTYPE_FLOAT, rank, dims);
    if (input)
        hg_graph_add_input(gen->g, v, t);
    else
        hg_graph_add_output(gen->g, v, t);
    hg_type_free(t);
}

/* Build the MLP. Returns FALSE with error set. */
static gboolean
build_mlp(Gen *gen, guint64 budget_bytes, gint64 dim, GError **error)
{
    const guint64 budget = budget_bytes / sizeof(float); /* in floats */
    const guint64 per_col = (guint64)dim + 1;            /* one column of W plus one bias entry */
    const guint64 full = (guint64)dim * per_col;
    guint64 n_full = budget / full;
    gint64 last_cols = (gint64)((budget - n_full * full) / per_col);
    guint n_layers = (guint)n_full + (last_cols > 0);
    if (n_layers == 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "size too small for one column of dim %" G_GINT64_FORMAT,
                    dim);
        return FALSE;
    }
    const float scale = 1.0f / sqrtf((float)dim);

    gint64 in_dims[2] = {1, dim};
    HgValue *x = hg_graph_new_value(gen->g, "x", error);
    if (!x)
        return FALSE;
    add_io(gen, x, TRUE, 2, in_dims);

    HgValue *h = x;
    gint64 cols = dim;
    for (guint i = 0; i < n_layers; i++) {
        cols = i < n_full ? dim : last_cols;
        gboolean last = i + 1 == n_layers;
        g_autofree char *wn = g_strdup_printf("layers.%u.weight", i);
        g_autofree char *bn = g_strdup_printf("layers.%u.bias", i);
        g_autofree char *mm = g_strdup_printf("layers.%u/MatMul", i);
        g_autofree char *ad = g_strdup_printf("layers.%u/Add", i);
        g_autofree char *re = g_strdup_printf("layers.%u/Relu", i);
        gint64 wd[2] = {dim, cols}, bd[1] = {cols};
        HgValue *w = add_weight(gen, wn, 2, wd, scale, error);
        HgValue *b = w ? add_weight(gen, bn, 1, bd, scale, error) : NULL;
        if (!b)
            return FALSE;
        if (!(h = add_op(gen, "MatMul", mm, mm, h, w, error)) ||
            !(h = add_op(gen, "Add", ad, last ? "y" : ad, h, b, error)))
            return FALSE;
        if (!last && !(h = add_op(gen, "Relu", re, re, h, NULL, error)))
            return FALSE;
    }
    gint64 out_dims[2] = {1, cols};
    add_io(gen, h, FALSE, 2, out_dims);
    return TRUE;
}

/* One Conv 3x3, padding 1, with bias, then Relu: named features.I/Conv, features.I.weight, ... */
static HgValue *
add_conv_relu(Gen *gen, HgValue *x, guint i, gint64 cin, gint64 cout, GError **error)
{
    static const gint64 k33[2] = {3, 3}, pad1[4] = {1, 1, 1, 1};
    g_autofree char *wn = g_strdup_printf("features.%u.weight", i);
    g_autofree char *bn = g_strdup_printf("features.%u.bias", i);
    g_autofree char *cv = g_strdup_printf("features.%u/Conv", i);
    g_autofree char *re = g_strdup_printf("features.%u/Relu", i);
    gint64 wd[4] = {cout, cin, 3, 3}, bd[1] = {cout};
    const float scale = 1.0f / sqrtf((float)(cin * 9));
    HgValue *w = add_weight(gen, wn, 4, wd, scale, error);
    HgValue *b = w ? add_weight(gen, bn, 1, bd, scale, error) : NULL;
    if (!b)
        return NULL;
    HgValue *in[3] = {x, w, b};
    HgValue *h = add_op_n(gen, "Conv", cv, cv, 3, in, error);
    if (!h)
        return NULL;
    attr_ints(h, "kernel_shape", 2, k33);
    attr_ints(h, "pads", 4, pad1);
    return add_op(gen, "Relu", re, re, h, NULL, error);
}

/* Gemm with a PyTorch Linear weight [nout, nin] (transB=1) and bias: classifier.I/Gemm, ... */
static HgValue *
add_linear(Gen *gen, HgValue *x, guint i, gint64 nin, gint64 nout, const char *out_name, GError **error)
{
    g_autofree char *wn = g_strdup_printf("classifier.%u.weight", i);
    g_autofree char *bn = g_strdup_printf("classifier.%u.bias", i);
    g_autofree char *gm = g_strdup_printf("classifier.%u/Gemm", i);
    gint64 wd[2] = {nout, nin}, bd[1] = {nout};
    const float scale = 1.0f / sqrtf((float)nin);
    HgValue *w = add_weight(gen, wn, 2, wd, scale, error);
    HgValue *b = w ? add_weight(gen, bn, 1, bd, scale, error) : NULL;
    if (!b)
        return NULL;
    HgValue *in[3] = {x, w, b};
    HgValue *h = add_op_n(gen, "Gemm", gm, out_name ? out_name : gm, 3, in, error);
    if (h)
        attr_int(h, "transB", 1);
    return h;
}

/* Build the CNN (see the top of the file). Returns FALSE with error set. */
static gboolean
build_cnn(Gen *gen, guint64 budget_bytes, gint64 dim, GError **error)
{
    const gint64 classes = 1000, side = 224;
    const guint max_pools = 5;
    const guint64 budget = budget_bytes / sizeof(float); /* in floats */
    const guint64 stem = (guint64)dim * (3 * 9 + 1);
    const guint64 conv = (guint64)dim * ((guint64)dim * 9 + 1);
    const guint64 per_hidden = (guint64)dim + 1 + (guint64)classes; /* a row of W1, its bias, a column of W2 */
    if (budget < stem + (guint64)classes + per_hidden) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "size too small for a CNN of width %" G_GINT64_FORMAT, dim);
        return FALSE;
    }
    const guint64 rest = budget - stem - (guint64)classes;
    const guint n_conv = (guint)((rest - per_hidden) / conv);
    const gint64 hidden = (gint64)((rest - n_conv * conv) / per_hidden);
    const guint pool_every = MAX(1, n_conv / max_pools);

    gint64 in_dims[4] = {1, 3, side, side};
    HgValue *x = hg_graph_new_value(gen->g, "x", error);
    if (!x)
        return FALSE;
    add_io(gen, x, TRUE, 4, in_dims);

    HgValue *h = add_conv_relu(gen, x, 0, 3, dim, error);
    guint pools = 0;
    for (guint i = 1; h && i <= n_conv; i++) {
        h = add_conv_relu(gen, h, i, dim, dim, error);
        if (h && i % pool_every == 0 && pools < max_pools) {
            static const gint64 k22[2] = {2, 2};
            g_autofree char *mp = g_strdup_printf("features.%u/MaxPool", i);
            if ((h = add_op(gen, "MaxPool", mp, mp, h, NULL, error))) {
                attr_ints(h, "kernel_shape", 2, k22);
                attr_ints(h, "strides", 2, k22);
            }
            pools++;
        }
    }
    if (!h || !(h = add_op(gen, "GlobalAveragePool", "avgpool/GlobalAveragePool", "avgpool", h, NULL, error)) ||
        !(h = add_op(gen, "Flatten", "Flatten", "flatten", h, NULL, error)))
        return FALSE;
    attr_int(h, "axis", 1);
    if (!(h = add_linear(gen, h, 0, dim, hidden, NULL, error)) ||
        !(h = add_op(gen, "Relu", "classifier.0/Relu", "classifier.0/Relu", h, NULL, error)) ||
        !(h = add_linear(gen, h, 1, hidden, classes, "y", error)))
        return FALSE;
    gint64 out_dims[2] = {1, classes};
    add_io(gen, h, FALSE, 2, out_dims);
    return TRUE;
}

/* A small constant initializer kept inside the model: n values of dtype at data. */
static HgValue *
add_const(Gen *gen, const char *name, int dtype, guint rank, const gint64 *dims, const void *data, GError **error)
{
    HgTensor *t = hg_tensor_new(name, dtype, rank, dims);
    memcpy(hg_tensor_data_mut(t), data, t->nbytes);
    return add_initializer(gen, t, error);
}

static HgValue *
add_scalar(Gen *gen, const char *name, float v, GError **error)
{
    return add_const(gen, name, HG_DTYPE_FLOAT, 0, NULL, &v, error);
}

/* The transformer's shared constants. */
typedef struct {
    HgValue *eps, *two, *sqrt_d, *sqrt2, *one, *half, *to_heads, *to_model;
} Consts;

/* A weight of the transformer: N(0, 0.02), or the constant c (fill 2). */
static HgValue *
tf_weight(Gen *gen, const char *name, guint rank, const gint64 *dims, int fill, float v, GError **error)
{
    gen->fill = fill;
    return add_weight(gen, name, rank, dims, v, error);
}

/* ReduceMean over the last axis (opset 13: axes an attribute), node and output called name. */
static HgValue *
mean_last(Gen *gen, HgValue *x, const char *name, GError **error)
{
    static const gint64 last[1] = {-1};
    HgValue *h = x ? add_op(gen, "ReduceMean", name, name, x, NULL, error) : NULL;
    if (h)
        attr_ints(h, "axes", 1, last);
    return h;
}

/* LayerNorm over the last axis as torch exports it at opset 13; names under prefix. */
static HgValue *
add_layernorm(Gen *gen, const Consts *c, HgValue *x, const char *p, gint64 dim, GError **error)
{
    gint64 d[1] = {dim};
    HgValue *gamma = tf_weight(gen, nm(gen, p, ".weight"), 1, d, 2, 1.0f, error);
    HgValue *beta = gamma ? tf_weight(gen, nm(gen, p, ".bias"), 1, d, 2, 0.0f, error) : NULL;
    HgValue *mean = beta ? mean_last(gen, x, nm(gen, p, "/ReduceMean"), error) : NULL;
    HgValue *dev = mean ? add_op(gen, "Sub", nm(gen, p, "/Sub"), nm(gen, p, "/Sub"), x, mean, error) : NULL;
    HgValue *sq = dev ? add_op(gen, "Pow", nm(gen, p, "/Pow"), nm(gen, p, "/Pow"), dev, c->two, error) : NULL;
    HgValue *var = mean_last(gen, sq, nm(gen, p, "/ReduceMean_1"), error);
    if (!var)
        return NULL;
    HgValue *h = add_op(gen, "Add", nm(gen, p, "/Add"), nm(gen, p, "/Add"), var, c->eps, error);
    h = h ? add_op(gen, "Sqrt", nm(gen, p, "/Sqrt"), nm(gen, p, "/Sqrt"), h, NULL, error) : NULL;
    h = h ? add_op(gen, "Div", nm(gen, p, "/Div"), nm(gen, p, "/Div"), dev, h, error) : NULL;
    h = h ? add_op(gen, "Mul", nm(gen, p, "/Mul"), nm(gen, p, "/Mul"), h, gamma, error) : NULL;
    return h ? add_op(gen, "Add", nm(gen, p, "/Add_1"), nm(gen, p, "/Add_1"), h, beta, error) : NULL;
}

/* x @ W + b, W [nin, nout], named prefix.weight, prefix.bias, prefix/MatMul, prefix/Add. */
static HgValue *
add_dense(Gen *gen, HgValue *x, const char *prefix, gint64 nin, gint64 nout, GError **error)
{
    gint64 wd[2] = {nin, nout}, bd[1] = {nout};
    const char *mm = nm(gen, prefix, "/MatMul"), *ad = nm(gen, prefix, "/Add");
    HgValue *w = tf_weight(gen, nm(gen, prefix, ".weight"), 2, wd, 1, 0.02f, error);
    HgValue *b = w ? tf_weight(gen, nm(gen, prefix, ".bias"), 1, bd, 2, 0.0f, error) : NULL;
    HgValue *h = b && x ? add_op(gen, "MatMul", mm, mm, x, w, error) : NULL;
    return h ? add_op(gen, "Add", ad, ad, h, b, error) : NULL;
}

/* Reshape x to [1, seq, heads, 64] and transpose by perm (4 axes). */
static HgValue *
to_heads(Gen *gen, const Consts *c, HgValue *x, const char *prefix, const gint64 *perm, GError **error)
{
    const char *rs = nm(gen, prefix, "/Reshape"), *tr = nm(gen, prefix, "/Transpose");
    HgValue *h = x ? add_op(gen, "Reshape", rs, rs, x, c->to_heads, error) : NULL;
    h = h ? add_op(gen, "Transpose", tr, tr, h, NULL, error) : NULL;
    if (h)
        attr_ints(h, "perm", 4, perm);
    return h;
}

/* Build the transformer (see the top of the file). Returns FALSE with error set. */
static gboolean
build_transformer(Gen *gen, guint64 budget_bytes, gint64 dim, GError **error)
{
    const gint64 seq = 128, head = 64, heads = dim / head, ffn = 4 * dim;
    if (dim % head) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "--dim must be a multiple of 64 for the transformer");
        return FALSE;
    }
    const guint64 per_block = (guint64)(4 * dim * dim + 4 * dim + 2 * dim * ffn + ffn + dim + 4 * dim);
    const guint n_blocks = (guint)((budget_bytes / sizeof(float) - 2 * (guint64)dim) / per_block);
    if (!n_blocks) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "size too small for one block of width %" G_GINT64_FORMAT, dim);
        return FALSE;
    }
    hg_model_set_opset(gen->m, "", 13);
    const gint64 heads_shape[4] = {1, seq, heads, head}, model_shape[3] = {1, seq, dim}, four[1] = {4}, three[1] = {3};
    Consts c = {
        add_scalar(gen, "const.eps", 1e-5f, error),    add_scalar(gen, "const.two", 2.0f, error),
        add_scalar(gen, "const.sqrt_d", 8.0f, error),  add_scalar(gen, "const.sqrt2", 1.4142135f, error),
        add_scalar(gen, "const.one", 1.0f, error),     add_scalar(gen, "const.half", 0.5f, error),
        add_const(gen, "const.to_heads", HG_DTYPE_INT64, 1, four, heads_shape, error),
        add_const(gen, "const.to_model", HG_DTYPE_INT64, 1, three, model_shape, error),
    };
    if (!c.to_model)
        return FALSE;
    HgValue *x = hg_graph_new_value(gen->g, "x", error);
    if (!x)
        return FALSE;
    add_io(gen, x, TRUE, 3, model_shape);
    static const gint64 qv_perm[4] = {0, 2, 1, 3}, k_perm[4] = {0, 2, 3, 1};
    HgValue *h = x;
    for (guint i = 0; h && i < n_blocks; i++) {
        g_autofree char *p = g_strdup_printf("layers.%u", i);
        const char *q = nm(gen, p, ".attn.q"), *k = nm(gen, p, ".attn.k"), *v = nm(gen, p, ".attn.v");
        const char *sc = nm(gen, p, ".attn/MatMul"), *dv = nm(gen, p, ".attn/Div"), *sm = nm(gen, p, ".attn/Softmax");
        const char *av = nm(gen, p, ".attn/MatMul_1"), *tb = nm(gen, p, ".attn/Transpose");
        const char *rb = nm(gen, p, ".attn/Reshape"), *r1 = nm(gen, p, "/Add"), *r2 = nm(gen, p, "/Add_1");
        const char *g1 = nm(gen, p, ".ffn/Div"), *g2 = nm(gen, p, ".ffn/Erf"), *g3 = nm(gen, p, ".ffn/Add");
        const char *g4 = nm(gen, p, ".ffn/Mul"), *g5 = nm(gen, p, ".ffn/Mul_1");
        HgValue *a = add_layernorm(gen, &c, h, nm(gen, p, ".ln1"), dim, error);
        HgValue *qh = a ? to_heads(gen, &c, add_dense(gen, a, q, dim, dim, error), q, qv_perm, error) : NULL;
        HgValue *kh = qh ? to_heads(gen, &c, add_dense(gen, a, k, dim, dim, error), k, k_perm, error) : NULL;
        HgValue *vh = kh ? to_heads(gen, &c, add_dense(gen, a, v, dim, dim, error), v, qv_perm, error) : NULL;
        HgValue *t = vh ? add_op(gen, "MatMul", sc, sc, qh, kh, error) : NULL;
        t = t ? add_op(gen, "Div", dv, dv, t, c.sqrt_d, error) : NULL;
        if ((t = t ? add_op(gen, "Softmax", sm, sm, t, NULL, error) : NULL))
            attr_int(t, "axis", -1);
        t = t ? add_op(gen, "MatMul", av, av, t, vh, error) : NULL;
        if ((t = t ? add_op(gen, "Transpose", tb, tb, t, NULL, error) : NULL))
            attr_ints(t, "perm", 4, qv_perm);
        t = t ? add_op(gen, "Reshape", rb, rb, t, c.to_model, error) : NULL;
        t = t ? add_dense(gen, t, nm(gen, p, ".attn.out"), dim, dim, error) : NULL;
        h = t ? add_op(gen, "Add", r1, r1, h, t, error) : NULL;
        HgValue *b = h ? add_layernorm(gen, &c, h, nm(gen, p, ".ln2"), dim, error) : NULL;
        HgValue *f = b ? add_dense(gen, b, nm(gen, p, ".ffn.fc1"), dim, ffn, error) : NULL;
        HgValue *e = f ? add_op(gen, "Div", g1, g1, f, c.sqrt2, error) : NULL;
        e = e ? add_op(gen, "Erf", g2, g2, e, NULL, error) : NULL;
        e = e ? add_op(gen, "Add", g3, g3, e, c.one, error) : NULL;
        e = e ? add_op(gen, "Mul", g4, g4, f, e, error) : NULL;
        e = e ? add_op(gen, "Mul", g5, g5, e, c.half, error) : NULL;
        e = e ? add_dense(gen, e, nm(gen, p, ".ffn.fc2"), ffn, dim, error) : NULL;
        h = e ? add_op(gen, "Add", r2, r2, h, e, error) : NULL;
    }
    h = h ? add_layernorm(gen, &c, h, "norm", dim, error) : NULL;
    h = h ? add_op(gen, "Identity", "output/Identity", "y", h, NULL, error) : NULL;
    if (!h)
        return FALSE;
    add_io(gen, h, FALSE, 3, model_shape);
    return TRUE;
}

int
main(int argc, char **argv)
{
    g_autofree char *external = NULL, *arch = NULL;
    gint64 dim = 0, seed = 1;
    GOptionEntry entries[] = {
        {"arch", 0, 0, G_OPTION_ARG_STRING, &arch, "mlp (MatMul layers, the default), cnn (Conv layers, Gemm head) or transformer (pre-norm encoder)",
         "mlp|cnn|transformer"},
        {"external", 0, 0, G_OPTION_ARG_STRING, &external,
         "Store the weights in DATA_NAME beside OUT.onnx (external data)", "DATA_NAME"},
        {"dim", 0, 0, G_OPTION_ARG_INT64, &dim, "Width of the layers: mlp 4096, cnn 1024 channels, transformer 1024 (defaults)", "N"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed of the weights (default 1)", "S"},
        {NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = g_option_context_new("OUT.onnx SIZE_MIB");
    g_option_context_set_summary(ctx, "Write an FP32 MLP, CNN or transformer whose weights take SIZE_MIB MiB.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 3) {
        fprintf(stderr, "gen_model: %s\nusage: gen_model OUT.onnx SIZE_MIB [--arch mlp|cnn|transformer] [--external DATA_NAME]\n",
                error ? error->message : "expected OUT.onnx and SIZE_MIB");
        return 2;
    }
    gboolean cnn = arch && !strcmp(arch, "cnn"), tf = arch && !strcmp(arch, "transformer");
    if (arch && !cnn && !tf && strcmp(arch, "mlp")) {
        fprintf(stderr, "gen_model: --arch wants mlp, cnn or transformer, got '%s'\n", arch);
        return 2;
    }
    if (dim == 0)
        dim = cnn || tf ? 1024 : 4096;
    const char *out = argv[1];
    char *end;
    guint64 size_mib = g_ascii_strtoull(argv[2], &end, 10);
    if (*end || size_mib == 0 || dim < 1 || dim > 65536) {
        fprintf(stderr, "gen_model: bad SIZE_MIB '%s' or --dim\n", argv[2]);
        return 2;
    }
    if (external && (!*external || g_path_is_absolute(external) || strchr(external, '/'))) {
        fprintf(stderr, "gen_model: --external wants a plain file name, got '%s'\n", external);
        return 2;
    }

    g_autoptr(HgModel) m = hg_model_new();
    m->has_ir_version = TRUE;
    m->ir_version = 8;
    m->producer_name = g_strdup("halfguard-bench");
    hg_model_set_opset(m, "", 17);
    m->graph = hg_graph_new(m, NULL);
    m->graph->name = g_strdup(cnn ? "cnn" : tf ? "transformer" : "mlp");

    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    Gen gen = {m, m->graph, UINT64_C(0x9E3779B97F4A7C15) ^ (guint64)seed, 0, -1, external, 0, names};
    g_autofree char *data_path = NULL;
    if (external) {
        g_autofree char *dir = g_path_get_dirname(out);
        data_path = g_build_filename(dir, external, NULL);
        gen.fd = open(data_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (gen.fd < 0) {
            fprintf(stderr, "gen_model: %s: %s\n", data_path, g_strerror(errno));
            return 1;
        }
    }
    gboolean ok = cnn  ? build_cnn(&gen, size_mib * MIB, dim, &error)
                  : tf ? build_transformer(&gen, size_mib * MIB, dim, &error)
                       : build_mlp(&gen, size_mib * MIB, dim, &error);
    if (gen.fd >= 0) {
        if (close(gen.fd) != 0 && ok) {
            g_set_error(&error, HG_ERROR, HG_ERROR_IO, "%s: %s", data_path, g_strerror(errno));
            ok = FALSE;
        }
    }
    if (ok && external) {
        gsize len;
        g_autofree guint8 *bytes = hg_model_save_bytes(m, &len, &error);
        ok = bytes && g_file_set_contents(out, (const char *)bytes, (gssize)len, &error);
    } else if (ok) {
        ok = hg_model_save(m, out, &error);
    }
    if (!ok) {
        fprintf(stderr, "gen_model: %s: %s\n", out, error->message);
        if (data_path)
            unlink(data_path);
        return 1;
    }
    return 0;
}
