/* The pass table: every pass in default pipeline order, with one line of help. Adding a pass is one
 * row here and one file in passes/. */
#include "halfguard/pass.h"

#include <string.h>

gboolean hg_pass_fold_shapes(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_fuse_layernorm(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_prescale(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_avgpool_integral(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_clamp_constants(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_rescale(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_assign_precision(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_lower(HgGraph *g, HgPassCtx *ctx, GError **error);
gboolean hg_pass_cleanup(HgGraph *g, HgPassCtx *ctx, GError **error);

static const HgPassInfo passes[] = {
    {"fold_shapes", hg_pass_fold_shapes,
     "replace shape arithmetic that shape inference computes (Shape, Gather, Concat...) by constants"},
    {"fuse_layernorm", hg_pass_fuse_layernorm,
     "turn decomposed LayerNorm into opset-17 LayerNormalization (raising the opset when safe)"},
    {"prescale", hg_pass_prescale,
     "move a constant scale in front of the MatMul it follows, and pre-scale L2 norms, where the product overflows"},
    {"avgpool_integral", hg_pass_avgpool_integral,
     "turn an integral-image box filter (CumSum, Slices, s1 - s2 - s3 + s4, divide by the area) into AveragePool"},
    {"clamp_constants", hg_pass_clamp_constants,
     "raise float32-min and -inf mask fills to -65504 where only a softmax or a maximum reads them"},
    {"rescale", hg_pass_rescale,
     "scale linear regions whose activations pass 65504 by 2^-k (exact), undoing it where it is absorbed"},
    {"assign_precision", hg_pass_assign_precision,
     "choose FP16 or FP32 per node: hazards force FP32, a minimum cut places the boundaries"},
    {"lower", hg_pass_lower,
     "retype tensors, convert initializers and insert Casts as assign_precision decided"},
    {"cleanup", hg_pass_cleanup,
     "drop dead default-domain nodes and put the nodes in topological order"},
};

const HgPassInfo *
hg_pass_list(guint *n)
{
    *n = G_N_ELEMENTS(passes);
    return passes;
}

const HgPassInfo *
hg_pass_find(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(passes); i++)
        if (strcmp(passes[i].name, name) == 0)
            return &passes[i];
    return NULL;
}
