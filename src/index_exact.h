/* Index math proven exact in FP16 by following every integer of its range (index_exact.c). */
#pragma once

#include "halfguard/ir.h"
#include "shapes.h"

#define HG_INDEX_CHAIN_MAX 32 /* nodes */

/* Float math on one integer tensor that ends in a Cast to an integer type. */
typedef struct {
    const HgValue *source;      /* the root: an integer tensor, or a float Cast of one; the domain */
    int source_dtype;           /* its type (an integer type; FLOAT, or FLOAT16 in a converted model) */
    const HgValue *result;      /* what the Cast to an integer reads */
    GPtrArray *nodes;           /* const HgNode*, in order, from source to result */
    GPtrArray *constants;       /* const HgValue*: the scalar constants the nodes read */
    GPtrArray *constant_ranges; /* HgRange* (owned): their values, exactly */
    const HgShapes *shapes;     /* shape inference's view of the values (dtypes, for the rules) */
    gint64 opset;
    GHashTable *closure;        /* HgNode*: what hg_index_chain_roots found upward of the result */
    GHashTable *trunk;          /* HgValue*: the values every path from the result passes */
} HgIndexChain;

void hg_index_chain_init(HgIndexChain *ch, const HgShapes *shapes, gint64 opset);
void hg_index_chain_clear(HgIndexChain *ch);

/* The integer roots the result (set ch->result first) may be computed from elementwise, deepest
 * first: a new array of const HgValue*. Fills ch's closure and trunk for hg_index_chain_build. */
GPtrArray *hg_index_chain_roots(HgIndexChain *ch);
/* Fill ch's nodes and constants with the chain from root (one of hg_index_chain_roots) to the
 * result; FALSE when it is not elementwise in root. */
gboolean hg_index_chain_build(HgIndexChain *ch, const HgValue *root);

/* Ops that only move or select values (data in input 0): the chain passes through them. */
gboolean hg_index_chain_moves_only(const HgNode *n);

/* Can the chain, stored in FP16 in any mix, give any integer in [lo, hi] only indices (the Cast to
 * `to`) that the model as declared may give too? FALSE also when the range is too wide to try (over
 * 2^17 integers) or a rule is missing. */
gboolean hg_index_chain_exact(const HgIndexChain *ch, double lo, double hi, int to);
