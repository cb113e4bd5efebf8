/* The interpreter: runs the main graph in topological order through the op table's kernels, frees
 * each intermediate after its last use, and hands every computed tensor to an observer (calibration,
 * --mark-all). An If runs the branch its condition picks, a Loop its body as many times as its trip count
 * and condition say (below); Scan is not run. */
#include "halfguard/run.h"
#include "halfguard/io.h"
#include "infile.h"
#include "ir_private.h"
#include "ops/kernel.h"

#include <pthread.h>
#include <string.h>

/* A tensor header over an array's data, for observers; nothing is copied or owned. */
static void
tensor_view(HgTensor *t, const HgValue *v, const HgArray *a)
{
    memset(t, 0, sizeof(*t));
    t->name = v->name;
    t->has_dtype = TRUE;
    t->dtype = a->dtype;
    t->rank = a->rank;
    t->dims = (gint64 *)a->dims;
    t->storage = a->strings ? HG_STORAGE_STRINGS : HG_STORAGE_RAW;
    t->data = a->data;
    t->nbytes = (gsize)a->numel * hg_dtype_size(a->dtype);
    t->strings = a->strings;
}

/* ---------------------------------------------------------------- the plan */

/* A run compiled once per model (and per list of requested outputs): values get slot numbers, nodes
 * become steps that read and write slots, and nodes whose inputs are all constants (initializers,
 * Constant nodes, and what they feed) are evaluated once here, as ONNX Runtime folds them when it
 * creates a session. Cached on the model until the graph changes. A plan is immutable once built and
 * counted: runs in several threads share it, and one that replaces the cache (other outputs) leaves
 * the old plan to the runs still holding it. */
typedef struct {
    HgNode *node;
    const HgOpDef *op;
    guint *in;   /* slot per input, G_MAXUINT when omitted */
    guint *out;  /* slot per output, G_MAXUINT when omitted */
    guint *outer;   /* slots of the main graph's values its subgraphs read (If, Loop) */
    guint n_outer;
} Step;

typedef struct {
    gint refcount;
    guint64 generation;
    char *outputs_key;
    guint n_slots;
    HgValue **values;      /* slot -> value */
    HgArray **constants;   /* slot -> constant (initializer or folded), NULL for run-time values */
    Step *steps;
    guint n_steps;
    guint *feeds;          /* slots of hg_run_feeds(), in order */
    guint n_feeds;
    guint *want;           /* slots of the values returned */
    guint n_want;
    guint *uses;           /* slot -> reads by run-time steps */
    GArray *folded;        /* of guint: slots computed while folding, in order (for observers) */
    gboolean *keep;        /* slot -> returned at the end */
    GHashTable *bodies;    /* HgGraph* (an If's branch) -> GPtrArray of its nodes in topological order */
} Plan;

static void
plan_free(gpointer p)
{
    Plan *pl = p;
    if (!pl)
        return;
    for (guint i = 0; i < pl->n_slots; i++)
        hg_array_unref(pl->constants[i]);
    for (guint i = 0; i < pl->n_steps; i++) {
        g_free(pl->steps[i].in);
        g_free(pl->steps[i].out);
        g_free(pl->steps[i].outer);
    }
    g_free(pl->steps);
    g_free(pl->values);
    g_free(pl->constants);
    g_free(pl->feeds);
    g_free(pl->want);
    g_free(pl->uses);
    g_free(pl->keep);
    g_array_unref(pl->folded);
    g_clear_pointer(&pl->bodies, g_hash_table_unref);
    g_free(pl->outputs_key);
    g_free(pl);
}

/* A key that tells "the graph outputs" (NULL), an empty list and every list of names apart. */
static char *
outputs_key(const char *const *outputs)
{
    if (!outputs)
        return g_strdup("*");
    GString *k = g_string_new(NULL);
    for (guint i = 0; outputs[i]; i++)
        g_string_append_printf(k, "%zu:%s", strlen(outputs[i]), outputs[i]);
    return g_string_free(k, FALSE);
}

static guint
slot_of(GHashTable *slots, GPtrArray *values, HgValue *v)
{
    gpointer s;
    if (g_hash_table_lookup_extended(slots, v, NULL, &s))
        return GPOINTER_TO_UINT(s);
    guint n = values->len;
    g_ptr_array_add(values, v);
    g_hash_table_insert(slots, v, GUINT_TO_POINTER(n));
    return n;
}

/* Evaluate a step whose inputs are all constants; FALSE (no error) when it cannot be folded. */
static gboolean
fold_step(Plan *pl, Step *st, gint64 opset)
{
    if (!st->op || st->node->n_outputs == 0)
        return FALSE;
    for (guint k = 0; k < st->node->n_inputs; k++)
        if (st->in[k] != G_MAXUINT && !pl->constants[st->in[k]])
            return FALSE;
    g_autofree HgArray **ins = g_new0(HgArray *, st->node->n_inputs + 1);
    g_autofree HgArray **outs = g_new0(HgArray *, st->node->n_outputs + 1);
    for (guint k = 0; k < st->node->n_inputs; k++)
        ins[k] = st->in[k] != G_MAXUINT ? pl->constants[st->in[k]] : NULL;
    g_autoptr(GError) err = NULL;
    gboolean ok = hg_eval_constants(st->node, opset, st->op->eval, st->node->n_inputs, ins,
                                    st->node->n_outputs, outs, &err);
    for (guint k = 0; ok && k < st->node->n_outputs; k++)
        ok = st->out[k] == G_MAXUINT || outs[k];
    if (!ok) {
        /* Left to run time, where the error (if any) is reported with the run. */
        for (guint k = 0; k < st->node->n_outputs; k++)
            hg_array_unref(outs[k]);
        return FALSE;
    }
    for (guint k = 0; k < st->node->n_outputs; k++) {
        if (st->out[k] == G_MAXUINT) {
            hg_array_unref(outs[k]);
            continue;
        }
        pl->constants[st->out[k]] = outs[k];
        g_array_append_val(pl->folded, st->out[k]);
    }
    return TRUE;
}

/* The values of g that n's subgraphs read (their outer references defined in g), each once. */
static GPtrArray *
outer_reads(const HgGraph *g, const HgNode *n)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < n->attrs->len; i++) {
        const HgAttr *a = n->attrs->pdata[i];
        guint n_graphs = a->graphs ? a->graphs->len : 0;
        for (guint j = 0; j < n_graphs + (a->g ? 1 : 0); j++) {
            const HgGraph *sub = j < n_graphs ? a->graphs->pdata[j] : a->g;
            for (guint k = 0; sub->outer_refs && k < sub->outer_refs->len; k++) {
                HgValue *v = sub->outer_refs->pdata[k];
                if (v->graph == g && !g_ptr_array_find(out, v, NULL))
                    g_ptr_array_add(out, v);
            }
        }
    }
    return out;
}

/* The topological order of every branch of n's Ifs and every body of its Loops, at every depth, into
 * bodies (a graph with a cycle gets none: running it is the error). Computed once with the plan: runs
 * share it read-only. */
static void
add_bodies(GHashTable *bodies, const HgNode *n, int depth)
{
    if (!(hg_node_is(n, "If") || hg_node_is(n, "Loop")) || depth > 64)
        return;
    for (guint i = 0; i < n->attrs->len; i++) {
        HgGraph *sub = ((const HgAttr *)n->attrs->pdata[i])->g;
        if (!sub || g_hash_table_contains(bodies, sub))
            continue;
        GPtrArray *order = hg_graph_topo_order(sub, NULL);
        if (!order)
            continue;
        g_hash_table_insert(bodies, sub, order);
        for (guint k = 0; k < order->len; k++)
            add_bodies(bodies, order->pdata[k], depth + 1);
    }
}

static Plan *
plan_build(HgModel *m, const char *const *outputs, GError **error)
{
    HgGraph *g = m->graph;
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, error);
    if (!order)
        return NULL;
    /* The values to return, and the nodes they need. */
    g_autoptr(GPtrArray) wanted = g_ptr_array_new();
    if (outputs) {
        for (guint i = 0; outputs[i]; i++) {
            HgValue *v = g_hash_table_lookup(g->values, outputs[i]);
            if (!v) {
                g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "the model has no value '%s'", outputs[i]);
                return NULL;
            }
            g_ptr_array_add(wanted, v);
        }
    } else {
        for (guint i = 0; i < g->outputs->len; i++)
            g_ptr_array_add(wanted, ((HgValueDecl *)g->outputs->pdata[i])->value);
    }
    g_autoptr(GHashTable) needed = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    for (guint i = 0; i < wanted->len; i++)
        g_ptr_array_add(stack, ((HgValue *)wanted->pdata[i])->producer);
    while (stack->len) {
        HgNode *n = g_ptr_array_steal_index_fast(stack, stack->len - 1);
        if (!n || g_hash_table_contains(needed, n))
            continue;
        g_hash_table_add(needed, n);
        for (guint k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] && n->inputs[k]->producer)
                g_ptr_array_add(stack, n->inputs[k]->producer);
        g_autoptr(GPtrArray) outer = outer_reads(g, n);
        for (guint k = 0; k < outer->len; k++)
            if (((HgValue *)outer->pdata[k])->producer)
                g_ptr_array_add(stack, ((HgValue *)outer->pdata[k])->producer);
    }

    Plan *pl = g_new0(Plan, 1);
    pl->generation = g->generation;
    pl->outputs_key = outputs_key(outputs);
    pl->folded = g_array_new(FALSE, FALSE, sizeof(guint));
    pl->bodies = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
    g_autoptr(GHashTable) slots = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) values = g_ptr_array_new();
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    pl->n_feeds = feeds->len;
    pl->feeds = g_new0(guint, feeds->len + 1);
    for (guint i = 0; i < feeds->len; i++)
        pl->feeds[i] = slot_of(slots, values, ((HgValueDecl *)feeds->pdata[i])->value);
    g_autoptr(GPtrArray) steps = g_ptr_array_new();
    for (guint i = 0; i < order->len; i++) {
        HgNode *n = order->pdata[i];
        if (!g_hash_table_contains(needed, n))
            continue;
        Step *st = g_new0(Step, 1);
        st->node = n;
        st->op = hg_op_for_node(n);
        st->in = g_new0(guint, n->n_inputs + 1);
        st->out = g_new0(guint, n->n_outputs + 1);
        for (guint k = 0; k < n->n_inputs; k++)
            st->in[k] = n->inputs[k] ? slot_of(slots, values, n->inputs[k]) : G_MAXUINT;
        for (guint k = 0; k < n->n_outputs; k++)
            st->out[k] = n->outputs[k] ? slot_of(slots, values, n->outputs[k]) : G_MAXUINT;
        add_bodies(pl->bodies, n, 0);
        g_autoptr(GPtrArray) outer = outer_reads(g, n);
        st->n_outer = outer->len;
        st->outer = g_new0(guint, outer->len + 1);
        for (guint k = 0; k < outer->len; k++)
            st->outer[k] = slot_of(slots, values, outer->pdata[k]);
        g_ptr_array_add(steps, st);
    }
    pl->n_want = wanted->len;
    pl->want = g_new0(guint, wanted->len + 1);
    for (guint i = 0; i < wanted->len; i++)
        pl->want[i] = slot_of(slots, values, wanted->pdata[i]);
    pl->n_slots = values->len;
    pl->values = (HgValue **)g_ptr_array_free(g_steal_pointer(&values), FALSE);
    pl->constants = g_new0(HgArray *, pl->n_slots + 1);
    pl->uses = g_new0(guint, pl->n_slots + 1);
    pl->keep = g_new0(gboolean, pl->n_slots + 1);
    for (guint i = 0; i < pl->n_want; i++)
        pl->keep[pl->want[i]] = TRUE;
    for (guint s = 0; s < pl->n_slots; s++) {
        HgValue *v = pl->values[s];
        if (v->init) {
            pl->constants[s] = hg_array_from_tensor(v->init, error);
            if (!pl->constants[s]) {
                g_prefix_error(error, "initializer '%s': ", v->name);
                for (guint i = 0; i < steps->len; i++) {
                    Step *st = steps->pdata[i];
                    g_free(st->in);
                    g_free(st->out);
                    g_free(st->outer);
                    g_free(st);
                }
                plan_free(pl);
                return NULL;
            }
        }
    }
    /* Fold constant steps; keep the rest as the run-time list. */
    gint64 opset = hg_model_opset(m, "");
    pl->steps = g_new0(Step, steps->len + 1);
    for (guint i = 0; i < steps->len; i++) {
        Step *st = steps->pdata[i];
        if (!st->n_outer && fold_step(pl, st, opset)) {
            g_free(st->in);
            g_free(st->out);
            g_free(st->outer);
        } else {
            pl->steps[pl->n_steps++] = *st;
            for (guint k = 0; k < st->node->n_inputs; k++)
                if (st->in[k] != G_MAXUINT && !pl->constants[st->in[k]])
                    pl->uses[st->in[k]]++;
            for (guint k = 0; k < st->n_outer; k++)
                if (!pl->constants[st->outer[k]])
                    pl->uses[st->outer[k]]++;
        }
        g_free(st);
    }
    return pl;
}

static Plan *
plan_ref(Plan *pl)
{
    g_atomic_int_inc(&pl->refcount);
    return pl;
}

static void
plan_unref(gpointer p)
{
    Plan *pl = p;
    if (pl && g_atomic_int_dec_and_test(&pl->refcount))
        plan_free(pl);
}

/* The cache of every model, guarded by one lock: looking it up is brief, and building a plan under it
 * keeps two threads from building one model's plan twice. A pthread mutex rather than GMutex: GLib's
 * futex-based GMutex is invisible to helgrind and ThreadSanitizer, which the suite runs this under. */
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;

/* A reference to the plan for m and these outputs (plan_unref it), built and cached when the cached one
 * is for other outputs or an older graph. */
static Plan *
plan_for(HgModel *m, const char *const *outputs, GError **error)
{
    g_autofree char *key = outputs_key(outputs);
    pthread_mutex_lock(&plans_lock);
    Plan *pl = m->run_plan;
    if (!(pl && pl->generation == m->graph->generation && strcmp(pl->outputs_key, key) == 0)) {
        pl = plan_build(m, outputs, error);
        if (pl) {
            pl->refcount = 1; /* the cache's */
            if (m->run_plan_free)
                m->run_plan_free(m->run_plan);
            m->run_plan = pl;
            m->run_plan_free = plan_unref;
        }
    }
    if (pl)
        plan_ref(pl);
    pthread_mutex_unlock(&plans_lock);
    return pl;
}

/* ---------------------------------------------------------------- running */

static gboolean
observe(const HgRunOptions *opts, const HgValue *v, const HgArray *a, GError **error)
{
    if (!opts || !opts->observe)
        return TRUE;
    HgTensor t;
    tensor_view(&t, v, a);
    return opts->observe(v, &t, opts->observe_data, error);
}

/* What a live array adds to the memory the run holds: its own data (a view adds nothing). */
static guint64
array_bytes(const HgArray *a)
{
    return a && a->owns_data && a->data ? (guint64)a->numel * hg_dtype_size(a->dtype) : 0;
}

/* Set before runs start (the command line does, once); 0: half the physical memory. */
static guint64 default_max_memory;

void
hg_run_set_default_max_memory(guint64 bytes)
{
    default_max_memory = bytes;
}

/* The memory the run holds against its cap. */
typedef struct {
    guint64 live, cap;
    guint64 iterations; /* Loop bodies run so far, nested ones included (LOOP_MAX_ITERATIONS) */
} Budget;

/* Would an output of `bytes` more take the live tensors past the cap? Then FALSE, with an error
 * naming node n and the value (how: how it was computed, "" or ", computed from constants"). */
static gboolean
budget_allows(const Budget *b, guint64 bytes, const HgNode *n, const char *value, const char *how, GError **error)
{
    if (b->live + bytes <= b->cap)
        return TRUE;
    g_set_error(error, HG_ERROR, HG_ERROR_USAGE,
                "node '%s' (%s): its output '%s' (%" G_GUINT64_FORMAT " bytes%s) takes the run's live tensors past "
                "the memory cap of %" G_GUINT64_FORMAT " bytes (--max-memory)", n && n->name ? n->name : "",
                n ? n->op_type : "?", value ? value : "", bytes, how, b->cap);
    return FALSE;
}

/* ---------------------------------------------------------------- If and Loop

 * An If runs the branch its condition picks, node by node in topological order through the same
 * kernels, with no plan: its values live until the branch is done. A branch reads the values of the
 * graphs around it (the step's outer slots, and a nested If's or Loop's enclosing body) through a
 * chain of tables. A Loop runs its body the same way once per iteration, its formal inputs bound to
 * the iteration number, the condition and the loop-carried values. Observers see the If's and the
 * Loop's outputs, not the bodies' tensors. */

typedef struct Env {
    GHashTable *vals; /* HgValue* -> HgArray* (a reference each) */
    const struct Env *parent;
} Env;

static HgArray *
env_lookup(const Env *e, const HgValue *v)
{
    for (; e; e = e->parent) {
        HgArray *a = g_hash_table_lookup(e->vals, v);
        if (a)
            return a;
    }
    return NULL;
}

static gboolean is_if(const HgNode *n)
{
    return hg_node_is(n, "If") && n->n_inputs >= 1 && n->inputs[0];
}

static gboolean is_loop(const HgNode *n)
{
    const HgAttr *body = hg_node_is(n, "Loop") ? hg_node_attr(n, "body") : NULL;
    return body && body->g;
}

/* A node the interpreter runs through its subgraphs rather than a kernel. */
static gboolean is_control(const HgNode *n)
{
    return is_if(n) || is_loop(n);
}

static gboolean run_body(GHashTable *bodies, HgGraph *sub, const Env *parent, gint64 opset, int threads,
                         Budget *budget, guint n_args, HgArray *const *args, guint n_results, HgArray **results,
                         int depth, GError **error);

/* The branch of If node n that cond picks, run into outs[0..n_outputs). */
static gboolean
eval_if(GHashTable *bodies, const HgNode *n, const HgArray *cond, const Env *env, gint64 opset, int threads,
        Budget *budget, HgArray **outs, int depth, GError **error)
{
    if (!cond || cond->numel != 1) {
        hg_op_error(error, HG_ERROR_INVALID, n, "cond must hold one value");
        return FALSE;
    }
    HgAttr *a = hg_node_attr(n, hg_array_get_f64(cond, 0) != 0 ? "then_branch" : "else_branch");
    if (!a || !a->g) {
        hg_op_error(error, HG_ERROR_INVALID, n, "no then_branch or else_branch graph");
        return FALSE;
    }
    if (depth > 64) {
        hg_op_error(error, HG_ERROR_INVALID, n, "If and Loop bodies nested more than 64 deep");
        return FALSE;
    }
    return run_body(bodies, a->g, env, opset, threads, budget, 0, NULL, n->n_outputs, outs, depth + 1, error);
}

/* More Loop iterations than this in one run, nested loops' included, are taken for a loop that does
 * not end (a condition its body never clears, a trip count of 2^63 - 1 with no condition, loops nested
 * so deep that their product never ends), and end the run with an error. */
#define LOOP_MAX_ITERATIONS (1 << 20)

/* Stacks a Loop's scan output: the values its body gave, one per iteration, along a new first axis.
 * With no iteration, an empty tensor of the element type and the trailing shape the body declares (or
 * [0] float where it declares none). */
static HgArray *
stack_scan(const HgNode *n, GPtrArray *parts, const HgValueDecl *decl, GError **error)
{
    gint64 dims[HG_MAX_RANK] = {(gint64)parts->len};
    if (parts->len == 0) {
        const HgType *t = decl ? decl->type : NULL;
        gboolean known = t && t->kind == HG_TYPE_TENSOR && t->shape && t->shape->rank < HG_MAX_RANK;
        for (guint k = 0; known && k < t->shape->rank; k++)
            known = t->shape->dims[k].has_value;
        for (guint k = 0; known && k < t->shape->rank; k++)
            dims[k + 1] = t->shape->dims[k].value;
        int dtype = t && t->has_elem_type ? (int)t->elem_type : HG_DTYPE_FLOAT;
        return hg_array_new(dtype, known ? t->shape->rank + 1 : 1, dims, error);
    }
    const HgArray *first = parts->pdata[0];
    if (first->rank + 1 > HG_MAX_RANK || first->strings) {
        hg_op_error(error, HG_ERROR_UNSUPPORTED, n, "scan output of rank %u%s", first->rank,
                    first->strings ? " holding strings" : "");
        return NULL;
    }
    for (guint i = 1; i < parts->len; i++) {
        const HgArray *a = parts->pdata[i];
        gboolean same = a->dtype == first->dtype && a->rank == first->rank;
        for (guint k = 0; same && k < a->rank; k++)
            same = a->dims[k] == first->dims[k];
        if (!same) {
            hg_op_error(error, HG_ERROR_INVALID, n, "scan output of iteration %u differs in type or shape from "
                        "iteration 0's", i);
            return NULL;
        }
    }
    memcpy(dims + 1, first->dims, first->rank * sizeof(gint64));
    HgArray *out = hg_array_new_uninit(first->dtype, first->rank + 1, dims, error);
    if (!out)
        return NULL;
    gsize part = (gsize)first->numel * hg_dtype_size(first->dtype);
    for (guint i = 0; i < parts->len && part; i++)
        memcpy((char *)out->data + i * part, ((const HgArray *)parts->pdata[i])->data, part);
    return out;
}

/* Loop node n (ONNX's Loop: inputs M, cond and N loop-carried values; body inputs the iteration
 * number, the condition and the N values; body outputs the condition, the N values and K scan
 * outputs), run into outs[0..N+K): the last loop-carried values, then each scan output stacked.
 * Iterations run while i < M (where M is given) and the condition holds (where cond is given; the
 * body's condition is then the next iteration's). */
static gboolean
eval_loop(GHashTable *bodies, const HgNode *n, HgArray *const *ins, const Env *env, gint64 opset, int threads,
          Budget *budget, HgArray **outs, int depth, GError **error)
{
    HgGraph *body = hg_node_attr(n, "body")->g;
    if (n->n_inputs < 2) {
        hg_op_error(error, HG_ERROR_INVALID, n, "takes a trip count, a condition and the loop-carried values");
        return FALSE;
    }
    guint n_carried = n->n_inputs - 2;
    if (body->inputs->len != n_carried + 2 || body->outputs->len < n_carried + 1 ||
        n->n_outputs != body->outputs->len - 1) {
        hg_op_error(error, HG_ERROR_INVALID, n, "its body has %u inputs and %u outputs for %u loop-carried values "
                    "and %u outputs", body->inputs->len, body->outputs->len, n_carried, n->n_outputs);
        return FALSE;
    }
    if (depth > 64) {
        hg_op_error(error, HG_ERROR_INVALID, n, "If and Loop bodies nested more than 64 deep");
        return FALSE;
    }
    guint n_scan = body->outputs->len - 1 - n_carried;
    const HgArray *trip = ins[0], *cond = ins[1];
    if ((trip && trip->numel != 1) || (cond && cond->numel != 1)) {
        hg_op_error(error, HG_ERROR_INVALID, n, "M and cond must hold one value each");
        return FALSE;
    }
    if (!trip && !cond) {
        hg_op_error(error, HG_ERROR_INVALID, n, "has neither a trip count nor a condition: it would not end");
        return FALSE;
    }
    for (guint j = 0; j < n_carried; j++)
        if (!ins[2 + j]) {
            hg_op_error(error, HG_ERROR_INVALID, n, "loop-carried input %u is omitted", j);
            return FALSE;
        }
    gint64 max_trip = trip ? hg_array_get_i64(trip, 0) : G_MAXINT64;
    gboolean go = cond ? hg_array_get_f64(cond, 0) != 0 : TRUE;
    g_autofree HgArray **args = g_new0(HgArray *, n_carried + 3);
    g_autofree HgArray **res = g_new0(HgArray *, body->outputs->len + 1);
    g_autofree GPtrArray **scans = g_new0(GPtrArray *, n_scan + 1);
    for (guint k = 0; k < n_scan; k++)
        scans[k] = g_ptr_array_new_with_free_func((GDestroyNotify)hg_array_unref);
    for (guint j = 0; j < n_carried; j++)
        args[2 + j] = hg_array_ref(ins[2 + j]);
    guint64 held = 0; /* the values the loop made and still holds (the carried ones after iteration 0, the scans) */
    gboolean ok = TRUE;
    for (gint64 i = 0; ok && go && i < max_trip; i++) {
        if (++budget->iterations > LOOP_MAX_ITERATIONS) {
            hg_op_error(error, HG_ERROR_INVALID, n, "the run's loops ran %d iterations (this one %" G_GINT64_FORMAT
                        ", nested ones counted) and this one has not ended", LOOP_MAX_ITERATIONS, i);
            ok = FALSE;
            break;
        }
        args[0] = hg_array_new(HG_DTYPE_INT64, 0, NULL, error);
        args[1] = args[0] ? hg_array_new(HG_DTYPE_BOOL, 0, NULL, error) : NULL;
        ok = args[1] != NULL;
        if (ok) {
            *(gint64 *)args[0]->data = i;
            *(guint8 *)args[1]->data = (guint8)go;
            ok = run_body(bodies, body, env, opset, threads, budget, n_carried + 2, args, body->outputs->len, res,
                          depth + 1, error);
        }
        g_clear_pointer(&args[0], hg_array_unref);
        g_clear_pointer(&args[1], hg_array_unref);
        if (!ok)
            break;
        if (cond) {
            ok = res[0]->numel == 1;
            if (!ok)
                hg_op_error(error, HG_ERROR_INVALID, n, "its body's condition must hold one value");
            go = ok && hg_array_get_f64(res[0], 0) != 0;
        }
        g_clear_pointer(&res[0], hg_array_unref);
        guint64 made = 0;
        for (guint k = 0; k < n_scan; k++)
            made += array_bytes(res[1 + n_carried + k]);
        for (guint j = 0; j < n_carried; j++)
            made += array_bytes(res[1 + j]);
        ok = ok && budget_allows(budget, made, n, "", "", error);
        for (guint j = 0; j < n_carried; j++) {
            if (i > 0) {
                held -= array_bytes(args[2 + j]);
                budget->live -= array_bytes(args[2 + j]);
            }
            hg_array_unref(args[2 + j]);
            args[2 + j] = g_steal_pointer(&res[1 + j]);
        }
        for (guint k = 0; k < n_scan; k++)
            g_ptr_array_add(scans[k], g_steal_pointer(&res[1 + n_carried + k]));
        held += made;
        budget->live += made;
    }
    for (guint j = 0; j < n_carried; j++) {
        if (ok)
            outs[j] = hg_array_ref(args[2 + j]);
        hg_array_unref(args[2 + j]);
    }
    for (guint k = 0; k < n_scan; k++) {
        if (ok)
            ok = (outs[n_carried + k] = stack_scan(n, scans[k], body->outputs->pdata[1 + n_carried + k], error)) != NULL;
        g_ptr_array_unref(scans[k]);
    }
    if (!ok)
        for (guint k = 0; k < n->n_outputs; k++)
            g_clear_pointer(&outs[k], hg_array_unref);
    budget->live -= held; /* (the outputs are counted again as the Loop's) */
    return ok;
}

static gboolean
eval_control(GHashTable *bodies, const HgNode *n, HgArray *const *ins, const Env *env, gint64 opset, int threads,
             Budget *budget, HgArray **outs, int depth, GError **error)
{
    if (is_loop(n))
        return eval_loop(bodies, n, ins, env, opset, threads, budget, outs, depth, error);
    return eval_if(bodies, n, ins[0], env, opset, threads, budget, outs, depth, error);
}

static gboolean
run_body(GHashTable *bodies, HgGraph *sub, const Env *parent, gint64 opset, int threads, Budget *budget,
         guint n_args, HgArray *const *args, guint n_results, HgArray **results, int depth, GError **error)
{
    Env local = {g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_array_unref), parent};
    gboolean ok = TRUE;
    guint64 held = 0; /* what this branch's tensors add to the run's live memory, until it is done */
    /* a Loop body's formal inputs (the caller holds and counts them) */
    if (n_args != sub->inputs->len && n_args) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "body '%s' has %u inputs, given %u", sub->name ? sub->name : "",
                    sub->inputs->len, n_args);
        ok = FALSE;
    }
    for (guint i = 0; ok && i < n_args; i++) {
        HgValue *v = ((HgValueDecl *)sub->inputs->pdata[i])->value;
        if (v && args[i])
            g_hash_table_insert(local.vals, v, hg_array_ref(args[i]));
    }
    for (guint i = 0; ok && i < sub->initializers->len; i++) {
        HgTensor *t = sub->initializers->pdata[i];
        HgValue *v = t->name ? g_hash_table_lookup(sub->values, t->name) : NULL;
        HgArray *a = v ? hg_array_from_tensor(t, error) : NULL;
        ok = !v || a;
        if (a)
            g_hash_table_insert(local.vals, v, a);
    }
    /* (the plan holds every branch's order but those with a cycle, or nested past 64) */
    GPtrArray *order = g_hash_table_lookup(bodies, sub);
    if (ok && !order) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "body '%s': its nodes have no topological order",
                    sub->name ? sub->name : "");
        ok = FALSE;
    }
    for (guint i = 0; ok && order && i < order->len; i++) {
        HgNode *n = order->pdata[i];
        const HgOpDef *op = hg_op_for_node(n);
        if (!op && !is_control(n)) {
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                        "node '%s' (%s%s%s): the interpreter has no kernel for this op", n->name ? n->name : "",
                        n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "", n->op_type);
            ok = FALSE;
            break;
        }
        g_autofree HgArray **ins = g_new0(HgArray *, n->n_inputs + 1);
        g_autofree HgArray **outs = g_new0(HgArray *, n->n_outputs + 1);
        for (guint k = 0; ok && k < n->n_inputs; k++) {
            if (!n->inputs[k])
                continue;
            ins[k] = env_lookup(&local, n->inputs[k]);
            if (!ins[k]) {
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "node '%s' (%s): input '%s' has no value",
                            n->name ? n->name : "", n->op_type, n->inputs[k]->name);
                ok = FALSE;
            }
        }
        if (!ok)
            break;
        if (op) {
            HgEvalCtx ctx = {n, opset, n->n_inputs, ins, n->n_outputs, outs, threads, error};
            ok = op->eval(&ctx);
        } else {
            ok = eval_control(bodies, n, ins, &local, opset, threads, budget, outs, depth, error);
        }
        for (guint k = 0; k < n->n_outputs; k++) {
            /* The branch's tensors count against the run's cap as the main graph's do. */
            guint64 b = array_bytes(outs[k]);
            if (ok && outs[k])
                ok = budget_allows(budget, b, n, n->outputs[k] ? n->outputs[k]->name : "", "", error);
            if (ok && n->outputs[k] && outs[k]) {
                budget->live += b;
                held += b;
                g_hash_table_replace(local.vals, n->outputs[k], outs[k]);
            } else {
                hg_array_unref(outs[k]);
            }
        }
    }
    if (ok && sub->outputs->len != n_results) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "a body has %u outputs, its node takes %u", sub->outputs->len,
                    n_results);
        ok = FALSE;
    }
    for (guint i = 0; ok && i < n_results; i++) {
        const HgValue *v = ((HgValueDecl *)sub->outputs->pdata[i])->value;
        HgArray *a = v ? env_lookup(&local, v) : NULL;
        if (!a) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "body output '%s' was not computed", v ? v->name : "");
            ok = FALSE;
            break;
        }
        results[i] = hg_array_ref(a);
    }
    if (!ok)
        for (guint i = 0; i < n_results; i++)
            g_clear_pointer(&results[i], hg_array_unref);
    g_hash_table_unref(local.vals);
    budget->live -= held; /* (the results are counted again as the If's outputs) */
    return ok;
}

static gboolean
run_step(const Plan *pl, const Step *st, HgArray **arrays, guint *left, const HgRunOptions *opts,
         gint64 opset, int threads, Budget *budget, GError **error)
{
    HgNode *n = st->node;
    if (!st->op && !is_control(n)) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                    "node '%s' (%s%s%s): the interpreter has no kernel for this op", n->name ? n->name : "",
                    n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "",
                    n->op_type);
        return FALSE;
    }
    HgArray *ins_buf[16], *outs_buf[16];
    g_autofree HgArray **ins_heap = n->n_inputs > 16 ? g_new0(HgArray *, n->n_inputs) : NULL;
    g_autofree HgArray **outs_heap = n->n_outputs > 16 ? g_new0(HgArray *, n->n_outputs) : NULL;
    HgArray **ins = ins_heap ? ins_heap : ins_buf;
    HgArray **outs = outs_heap ? outs_heap : outs_buf;
    for (guint k = 0; k < n->n_inputs; k++) {
        guint s = st->in[k];
        ins[k] = s == G_MAXUINT ? NULL : pl->constants[s] ? pl->constants[s] : arrays[s];
        if (s != G_MAXUINT && !ins[k]) {
            g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "node '%s' (%s): input '%s' has no value",
                        n->name ? n->name : "", n->op_type, n->inputs[k]->name);
            return FALSE;
        }
    }
    for (guint k = 0; k < n->n_outputs; k++)
        outs[k] = NULL;
    gboolean ok;
    if (st->op) {
        HgEvalCtx ctx = {n, opset, n->n_inputs, ins, n->n_outputs, outs, threads, error};
        /* what the cap leaves bounds each array the kernel makes, before it is allocated */
        guint64 was = hg_array_set_alloc_limit(budget->cap > budget->live ? budget->cap - budget->live : 1);
        ok = st->op->eval(&ctx);
        guint64 refused = hg_array_alloc_refused();
        hg_array_set_alloc_limit(was);
        if (!ok && refused) {
            /* said as for an output past the cap: the same words, before the bytes were allocated */
            gboolean from_constants = TRUE;
            for (guint k = 0; k < n->n_inputs; k++)
                from_constants &= st->in[k] == G_MAXUINT || pl->constants[st->in[k]] != NULL;
            g_clear_error(error);
            budget_allows(budget, refused, n, n->n_outputs == 1 && n->outputs[0] ? n->outputs[0]->name : "",
                          from_constants ? ", computed from constants" : "", error);
        }
    } else {
        /* the main graph's values the branches read */
        Env env = {g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)hg_array_unref), NULL};
        ok = TRUE;
        for (guint k = 0; ok && k < st->n_outer; k++) {
            guint s = st->outer[k];
            HgArray *a = pl->constants[s] ? pl->constants[s] : arrays[s];
            if (!a)
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "node '%s' (%s): '%s', which its body reads, has no "
                            "value", n->name ? n->name : "", n->op_type, pl->values[s]->name);
            else
                g_hash_table_insert(env.vals, pl->values[s], hg_array_ref(a));
            ok = a != NULL;
        }
        ok = ok && eval_control(pl->bodies, n, ins, &env, opset, threads, budget, outs, 0, error);
        g_hash_table_unref(env.vals);
    }
    for (guint k = 0; k < n->n_outputs; k++) {
        guint s = st->out[k];
        if (!ok || s == G_MAXUINT) {
            hg_array_unref(outs[k]);
            continue;
        }
        if (!outs[k]) {
            if (pl->uses[s] || pl->keep[s]) {
                hg_op_error(error, HG_ERROR_INVALID, n, "output %u was not computed", k);
                ok = FALSE;
            }
            continue;
        }
        if (ok)
            ok = budget_allows(budget, array_bytes(outs[k]), n, pl->values[s]->name, "", error);
        if (ok)
            ok = observe(opts, pl->values[s], outs[k], error);
        if (ok && (pl->uses[s] || pl->keep[s])) {
            budget->live -= array_bytes(arrays[s]);
            hg_array_unref(arrays[s]);
            arrays[s] = outs[k];
            budget->live += array_bytes(outs[k]);
        } else {
            hg_array_unref(outs[k]);
        }
    }
    if (!ok)
        return FALSE;
    for (guint k = 0; k < n->n_inputs; k++) {
        guint s = st->in[k];
        /* A weight viewed in a mapped file leaves the process once read: a run touches each weight
         * page when it needs it, and a model larger than memory runs. */
        if (s != G_MAXUINT && pl->constants[s])
            hg_array_release(pl->constants[s]);
        if (s == G_MAXUINT || pl->constants[s])
            continue;
        if (--left[s] == 0 && !pl->keep[s]) {
            budget->live -= array_bytes(arrays[s]);
            g_clear_pointer(&arrays[s], hg_array_unref);
        }
    }
    for (guint k = 0; k < st->n_outer; k++) {
        guint s = st->outer[k];
        if (pl->constants[s])
            continue;
        if (--left[s] == 0 && !pl->keep[s]) {
            budget->live -= array_bytes(arrays[s]);
            g_clear_pointer(&arrays[s], hg_array_unref);
        }
    }
    return TRUE;
}

GPtrArray *
hg_run(HgModel *m, GPtrArray *inputs, const HgRunOptions *opts, GError **error)
{
    g_return_val_if_fail(m != NULL && inputs != NULL, NULL);
    if (!m->graph) {
        g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "the model has no graph");
        return NULL;
    }
    /* what the plan computes from constants alone counts against the cap too (checked below): no one
     * such value may pass the cap as it is made */
    guint64 cap = opts && opts->max_memory ? opts->max_memory : default_max_memory ? default_max_memory : hg_infile_limit();
    guint64 was = hg_array_set_alloc_limit(cap);
    Plan *pl = plan_for(m, opts ? opts->outputs : NULL, error);
    hg_array_set_alloc_limit(was);
    if (!pl)
        return NULL;
    g_autoptr(GPtrArray) feeds = hg_run_feeds(m);
    if (inputs->len != pl->n_feeds) {
        g_set_error(error, HG_ERROR, HG_ERROR_USAGE, "the model takes %u inputs, %u were given",
                    pl->n_feeds, inputs->len);
        plan_unref(pl);
        return NULL;
    }
    int threads = opts && opts->threads > 0 ? opts->threads : (int)g_get_num_processors();
    gint64 opset = hg_model_opset(m, "");
    HgArray **arrays = g_new0(HgArray *, pl->n_slots + 1);
    guint *left = g_memdup2(pl->uses, sizeof(guint) * (pl->n_slots + 1));
    GPtrArray *result = NULL;
    Budget budget = {0, cap, 0};
    for (guint i = 0; i < pl->n_feeds; i++) {
        HgValueDecl *d = feeds->pdata[i];
        const HgTensor *t = inputs->pdata[i];
        if (!hg_feed_check(d, t, error))
            goto out;
        arrays[pl->feeds[i]] = hg_array_from_tensor(t, error);
        if (!arrays[pl->feeds[i]]) {
            g_prefix_error(error, "input '%s': ", d->value->name);
            goto out;
        }
        if (!observe(opts, d->value, arrays[pl->feeds[i]], error))
            goto out;
    }
    /* Folded values are computed once, but observers see them on every run like any other. */
    for (guint i = 0; i < pl->folded->len; i++) {
        guint s = g_array_index(pl->folded, guint, i);
        /* What the plan computed from constants alone (a ConstantOfShape of 3 GiB) counts too. */
        if (!budget_allows(&budget, array_bytes(pl->constants[s]), pl->values[s]->producer, pl->values[s]->name,
                           ", computed from constants", error))
            goto out;
        budget.live += array_bytes(pl->constants[s]);
        if (!observe(opts, pl->values[s], pl->constants[s], error))
            goto out;
    }
    for (guint i = 0; i < pl->n_feeds; i++)
        budget.live += array_bytes(arrays[pl->feeds[i]]);
    for (guint i = 0; i < pl->n_steps; i++)
        if (!run_step(pl, &pl->steps[i], arrays, left, opts, opset, threads, &budget, error))
            goto out;
    result = g_ptr_array_new_with_free_func((GDestroyNotify)hg_tensor_free);
    for (guint i = 0; i < pl->n_want; i++) {
        guint s = pl->want[i];
        HgValue *v = pl->values[s];
        HgArray *a = pl->constants[s] ? pl->constants[s] : arrays[s];
        HgTensor *t = a ? hg_array_to_tensor(a, v->name) : NULL;
        if (!t) {
            gint64 need = a && !a->strings && hg_dtype_bits(a->dtype)
                              ? (gint64)((a->numel * hg_dtype_bits(a->dtype) + 7) / 8) : -1;
            if (a && need >= 0)
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "output '%s': out of memory for its %" G_GINT64_FORMAT
                            " bytes", v->name, need);
            else if (a)
                g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "output '%s' (%s) cannot be returned",
                            v->name, hg_dtype_name(a->dtype) ? hg_dtype_name(a->dtype) : "?");
            else
                g_set_error(error, HG_ERROR, HG_ERROR_INVALID, "output '%s' was not computed", v->name);
            g_clear_pointer(&result, g_ptr_array_unref);
            goto out;
        }
        g_ptr_array_add(result, t);
    }
out:
    for (guint i = 0; i < pl->n_slots; i++)
        hg_array_unref(arrays[i]);
    g_free(arrays);
    g_free(left);
    plan_unref(pl);
    return result;
}


