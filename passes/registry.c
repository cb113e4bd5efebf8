/* The pass table: every pass in default pipeline order, with one line of help, what it needs and makes,
 * and the passes that must come before it. Adding a pass is one row here and one file in passes/. */
#include "halfguard/pass.h"

#include <string.h>

gboolean hg_pass_fold_shapes(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_fuse_layernorm(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_prescale(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_avgpool_integral(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_stable_softplus(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_clamp_constants(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_rescale(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_assign_precision(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_lower(HgGraph *g, const HgPassEnv *env, GError **error);
gboolean hg_pass_cleanup(HgGraph *g, const HgPassEnv *env, GError **error);

/* The rewrites come before the plan: a rewrite after assign_precision would leave its nodes out of it. */
static const char *const before_plan[] = {"fold_shapes", "fuse_layernorm", "prescale", "avgpool_integral",
                                          "stable_softplus", "clamp_constants", "rescale", NULL};
static const char *const before_lower[] = {"assign_precision", NULL};

static const HgPassInfo passes[] = {
    {"fold_shapes", hg_pass_fold_shapes,
     "replace shape arithmetic that shape inference computes (Shape, Gather, Concat...) by constants",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"fuse_layernorm", hg_pass_fuse_layernorm,
     "turn decomposed LayerNorm into opset-17 LayerNormalization (raising the opset when safe)",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"prescale", hg_pass_prescale,
     "move a constant scale in front of the MatMul it follows, and pre-scale L2 norms, where the product overflows",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"avgpool_integral", hg_pass_avgpool_integral,
     "turn an integral-image box filter (CumSum, Slices, s1 - s2 - s3 + s4, divide by the area) into AveragePool",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"stable_softplus", hg_pass_stable_softplus,
     "rewrite a softplus whose exp overflows FP16 (Softplus, Log(Exp(x) + 1)) as relu(x) + softplus(-|x|)",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"clamp_constants", hg_pass_clamp_constants,
     "bring mask fills past FP16's range to +-65504 where only saturating readers (softmax, maximum, Sigmoid) see them, "
     "and division floors FP16 flushes (1e-12) to 2^-23",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"rescale", hg_pass_rescale,
     "scale linear regions whose activations pass 65504 by 2^-k (exact), undoing it where it is absorbed",
     HG_NEEDS_ANALYSIS, 0, NULL},
    {"assign_precision", hg_pass_assign_precision,
     "choose FP16 or FP32 per node: hazards force FP32, a minimum cut places the boundaries",
     HG_NEEDS_ANALYSIS, HG_NEEDS_PLAN, before_plan},
    {"lower", hg_pass_lower,
     "retype tensors, convert initializers and insert Casts as the precision plan says",
     HG_NEEDS_PLAN, 0, before_lower},
    {"cleanup", hg_pass_cleanup,
     "drop dead default-domain nodes and put the nodes in topological order",
     0, 0, NULL},
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
