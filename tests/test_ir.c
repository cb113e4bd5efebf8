/* The IR: building, editing, topological order and the invariant checker. */
#include "testutil.h"

#include "ir_private.h"

#include <string.h>

/* x -> Relu -> y -> Add(y, w) -> z, with w an initializer and z the graph output. */
typedef struct {
    HgModel *m;
    HgGraph *g;
    HgValue *x, *y, *w, *z;
    HgNode *relu, *add;
} Chain;

static void
chain_build(Chain *c)
{
    const gint64 dims[] = {2, 3};
    c->m = hg_model_new();
    hg_model_set_opset(c->m, "", 17);
    c->g = c->m->graph = hg_graph_new(c->m, NULL);
    c->x = hg_graph_new_value(c->g, "x", NULL);
    HgType *tt = hg_type_new_tensor(HG_DTYPE_FLOAT, 2, dims);
    hg_graph_add_input(c->g, c->x, tt);
    c->w = hg_graph_new_value(c->g, "w", NULL);
    hg_graph_add_initializer(c->g, c->w, hg_tensor_new("w", HG_DTYPE_FLOAT, 2, dims));
    c->y = hg_graph_new_value(c->g, "y", NULL);
    c->z = hg_graph_new_value(c->g, "z", NULL);
    c->relu = hg_graph_add_node(c->g, "Relu", NULL, "relu", 1, &c->x, 1, &c->y);
    HgValue *ins[] = {c->y, c->w};
    c->add = hg_graph_add_node(c->g, "Add", NULL, "add", 2, ins, 1, &c->z);
    hg_graph_add_output(c->g, c->z, tt);
    hg_type_free(tt);
}

/* A new model (*m, the caller's) whose graph has one input, x (untyped); returns x. */
static HgValue *
model_with_input(HgModel **m)
{
    *m = hg_model_new();
    HgGraph *g = (*m)->graph = hg_graph_new(*m, NULL);
    HgValue *x = hg_graph_new_value(g, "x", NULL);
    hg_graph_add_input(g, x, NULL);
    return x;
}

/* The editing verbs: each changes what it says, keeps the invariants and moves the generation. */
static void
test_edit_verbs(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    const gint64 dims[] = {2, 3};
    /* An initializer replaced in place: same slot, the new tensor's type, the old one freed. */
    guint64 gen = c.g->generation;
    HgTensor *h = hg_tensor_new("other", HG_DTYPE_FLOAT16, 2, dims);
    hg_value_set_initializer(c.w, h);
    assert_ptr_equal(c.w->init, h);
    assert_string_equal(h->name, "w");
    assert_ptr_equal(c.g->initializers->pdata[0], h);
    assert_int_equal(c.g->initializers->len, 1);
    assert_int_equal(hg_value_elem_type(c.w), HG_DTYPE_FLOAT16);
    assert_true(c.g->generation > gen);
    /* Removed: the value stays, without data. */
    gen = c.g->generation;
    HgValue *w2 = hg_graph_new_value(c.g, "w2", NULL);
    hg_graph_add_initializer(c.g, w2, hg_tensor_new("w2", HG_DTYPE_FLOAT, 2, dims));
    hg_value_remove_initializer(w2);
    assert_null(w2->init);
    assert_int_equal(c.g->initializers->len, 1);
    assert_true(c.g->generation > gen);
    /* A node output moved to a fresh value: the old one loses its producer. */
    gen = c.g->generation;
    HgValue *y2 = hg_graph_new_value(c.g, "y2", NULL);
    hg_node_set_output(c.relu, 0, y2);
    assert_ptr_equal(y2->producer, c.relu);
    assert_null(c.y->producer);
    assert_true(c.g->generation > gen);
    assert_false(hg_graph_verify(c.g, NULL)); /* add still reads y, which nothing defines now */
    hg_node_set_input(c.add, 0, y2);
    assert_true(hg_graph_verify(c.g, NULL));
    /* Attributes set in place, replaced, removed; the op changed. */
    gen = c.g->generation;
    hg_node_set_attr_int(c.add, "k", 3);
    hg_node_set_attr_int(c.add, "k", 4);
    hg_node_set_attr_float(c.add, "f", 0.5f);
    assert_int_equal(c.add->attrs->len, 2);
    assert_int_equal(hg_node_attr_int(c.add, "k", 0), 4);
    assert_true(hg_node_remove_attr(c.add, "k"));
    assert_false(hg_node_remove_attr(c.add, "k"));
    assert_int_equal(c.add->attrs->len, 1);
    hg_node_set_op(c.add, "Sub", "ai.onnx");
    assert_true(hg_node_is(c.add, "Sub"));
    assert_true(hg_node_default_domain(c.add));
    hg_node_set_op(c.add, "Sub", "com.example");
    assert_false(hg_node_default_domain(c.add));
    assert_true(c.g->generation > gen);
    hg_model_free(c.m);
}

/* A node appended for a rewrite moves before the node it replaces; renaming a value renames its
 * declarations; a set of pattern nodes goes once nothing reads them, a node still read stays. */
static void
test_move_rename_remove_unread(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    HgValue *n1 = hg_graph_new_value(c.g, "n1", NULL);
    HgNode *neg = hg_graph_add_node(c.g, "Neg", NULL, "neg", 1, &c.x, 1, &n1);
    assert_int_equal(neg->order, 2);
    hg_graph_move_node_before(c.g, neg, c.relu);
    assert_ptr_equal(c.g->nodes->pdata[0], neg);
    assert_ptr_equal(c.g->nodes->pdata[1], c.relu);
    assert_int_equal(c.relu->order, 1);
    hg_graph_move_node_before(c.g, neg, c.add); /* forwards: lands just before add */
    assert_ptr_equal(c.g->nodes->pdata[1], neg);
    assert_ptr_equal(c.g->nodes->pdata[2], c.add);
    assert_true(hg_graph_verify(c.g, NULL));
    assert_true(hg_value_rename(c.z, "out", NULL));
    assert_string_equal(((HgValueDecl *)c.g->outputs->pdata[0])->name, "out");
    assert_ptr_equal(hg_graph_lookup(c.g, "out"), c.z);
    assert_null(hg_graph_lookup(c.g, "z"));
    assert_false(hg_value_rename(c.y, "x", NULL)); /* taken */
    g_autoptr(GHashTable) set = g_hash_table_new(NULL, NULL);
    g_hash_table_add(set, neg);
    g_hash_table_add(set, c.relu); /* read by add */
    assert_int_equal(hg_nodes_remove_unread(set), 1);
    assert_true(neg->flags & HG_NODE_DEAD);
    assert_false(c.relu->flags & HG_NODE_DEAD);
    hg_model_free(c.m);
}

static void
test_build_and_links(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    assert_verified(c.g);
    assert_ptr_equal(c.y->producer, c.relu);
    assert_int_equal(c.y->uses->len, 1);
    assert_ptr_equal(g_array_index(c.y->uses, HgUse, 0).node, c.add);
    assert_int_equal(g_array_index(c.w->uses, HgUse, 0).index, 1);
    assert_true(c.x->is_input);
    assert_true(c.z->is_output);
    assert_non_null(c.w->init);
    assert_int_equal(c.x->type->elem_type, HG_DTYPE_FLOAT);
    assert_ptr_equal(hg_graph_lookup(c.g, "w"), c.w);
    assert_null(hg_graph_lookup(c.g, "nope"));
    hg_model_free(c.m);
}

static void
test_duplicate_value_refused(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    GError *error = NULL;
    assert_null(hg_graph_new_value(c.g, "y", &error));
    assert_hg_error(error, HG_ERROR_INVALID, "'y' is defined twice");
    g_error_free(error);
    hg_model_free(c.m);
}

static void
test_topo_order_keeps_sorted_file_order(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(c.g, NULL);
    assert_non_null(order);
    assert_int_equal(order->len, 2);
    assert_ptr_equal(order->pdata[0], c.relu);
    assert_ptr_equal(order->pdata[1], c.add);
    hg_model_free(c.m);
}

static void
test_topo_order_sorts_unsorted_file(void **state)
{
    (void)state;
    /* File order: C(b) -> c, B(a) -> b, A(x) -> a, D(x) -> d. Topological: A B C, with D kept
     * where the file puts it relative to the others that are ready (smallest file index first). */
    HgModel *m;
    HgValue *x = model_with_input(&m);
    HgGraph *g = m->graph;
    HgValue *a = hg_graph_new_value(g, "a", NULL), *b = hg_graph_new_value(g, "b", NULL);
    HgValue *cv = hg_graph_new_value(g, "c", NULL), *d = hg_graph_new_value(g, "d", NULL);
    HgNode *nc = hg_graph_add_node(g, "Relu", NULL, "C", 1, &b, 1, &cv);
    HgNode *nb = hg_graph_add_node(g, "Relu", NULL, "B", 1, &a, 1, &b);
    HgNode *na = hg_graph_add_node(g, "Relu", NULL, "A", 1, &x, 1, &a);
    HgNode *nd = hg_graph_add_node(g, "Relu", NULL, "D", 1, &x, 1, &d);
    hg_graph_add_output(g, cv, NULL);
    hg_graph_add_output(g, d, NULL);
    assert_verified(g);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, NULL);
    assert_non_null(order);
    HgNode *want[] = {na, nb, nc, nd};
    for (guint i = 0; i < 4; i++)
        assert_ptr_equal(order->pdata[i], want[i]);
    assert_true(hg_graph_sort(g, NULL));
    for (guint i = 0; i < 4; i++) {
        assert_ptr_equal(g->nodes->pdata[i], want[i]);
        assert_int_equal(want[i]->order, i);
    }
    assert_verified(g);
    hg_model_free(m);
}

static void
test_cycle_detected(void **state)
{
    (void)state;
    HgModel *m = hg_model_new();
    HgGraph *g = m->graph = hg_graph_new(m, NULL);
    HgValue *a = hg_graph_new_value(g, "a", NULL), *b = hg_graph_new_value(g, "b", NULL);
    hg_graph_add_node(g, "Relu", NULL, "first", 1, &b, 1, &a);
    hg_graph_add_node(g, "Relu", NULL, "second", 1, &a, 1, &b);
    hg_graph_add_output(g, b, NULL);
    GError *error = NULL;
    assert_null(hg_graph_topo_order(g, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "cycle");
    g_clear_error(&error);
    assert_false(hg_graph_verify(g, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "cycle");
    g_error_free(error);
    hg_model_free(m);
}

static void
test_replace_uses_and_remove(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    /* Bypass the Relu: Add reads x directly; the Relu becomes dead and is removed. */
    hg_value_replace_uses(c.y, c.x);
    assert_int_equal(c.y->uses->len, 0);
    assert_ptr_equal(c.add->inputs[0], c.x);
    assert_int_equal(c.x->uses->len, 2); /* the Relu and the Add */
    hg_node_remove(c.relu);
    assert_int_equal(c.x->uses->len, 1);
    hg_graph_compact(c.g);
    assert_int_equal(c.g->nodes->len, 1);
    assert_ptr_equal(c.g->nodes->pdata[0], c.add);
    assert_int_equal(c.add->order, 0);
    assert_null(hg_graph_lookup(c.g, "y")); /* nothing defines or uses it any more */
    assert_verified(c.g);
    hg_model_free(c.m);
}

static void
test_replace_uses_renames_graph_output(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    HgValue *z2 = hg_graph_new_value(c.g, "z2", NULL);
    HgNode *id = hg_graph_add_node(c.g, "Identity", NULL, "id", 1, &c.z, 1, &z2);
    /* The Identity's own input must keep reading z: replace, then restore that one use. */
    hg_value_replace_uses(c.z, z2);
    hg_node_set_input(id, 0, c.z);
    assert_verified(c.g);
    HgValueDecl *d = c.g->outputs->pdata[0];
    assert_ptr_equal(d->value, z2);
    assert_string_equal(d->name, "z2");
    assert_true(z2->is_output);
    assert_false(c.z->is_output);
    hg_model_free(c.m);
}

static void
test_unique_names(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    g_autofree char *a = hg_graph_unique_name(c.g, "relu"); /* a node is called relu */
    g_autofree char *b = hg_graph_unique_name(c.g, "relu");
    g_autofree char *n = hg_graph_unique_name(c.g, "fresh");
    g_autofree char *v = hg_graph_unique_name(c.g, "x"); /* a value is called x */
    assert_string_equal(a, "relu_1");
    assert_string_equal(b, "relu_2");
    assert_string_equal(n, "fresh");
    assert_string_equal(v, "x_1");
    /* A value created after the name set exists is seen by it. */
    hg_graph_new_value(c.g, "later", NULL);
    g_autofree char *l = hg_graph_unique_name(c.g, "later");
    assert_string_equal(l, "later_1");
    /* A new initializer takes a free name from its base, and its tensor takes the name too (whatever
     * name it came with); the value has the tensor's type. */
    gint64 two = 2;
    HgTensor *t = hg_tensor_new("stale", HG_DTYPE_FLOAT, 1, &two);
    HgValue *iv = hg_graph_new_initializer(c.g, "k", t);
    assert_string_equal(iv->name, "k");
    assert_ptr_equal(iv->init, t);
    assert_string_equal(t->name, "k");
    assert_int_equal(iv->type->elem_type, HG_DTYPE_FLOAT);
    HgValue *iv2 = hg_graph_new_initializer(c.g, "k", hg_tensor_new(NULL, HG_DTYPE_INT64, 0, NULL));
    assert_string_equal(iv2->name, "k_1");
    assert_string_equal(iv2->init->name, "k_1");
    assert_true(hg_graph_verify(c.g, NULL));
    hg_model_free(c.m);
}

static void
test_verify_catches_broken_invariants(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    GError *error = NULL;
    /* A value nothing defines, read by a node. */
    HgValue *ghost = hg_graph_new_value(c.g, "ghost", NULL);
    hg_node_set_input(c.add, 1, ghost);
    assert_false(hg_graph_verify(c.g, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "'ghost' is used but never defined");
    g_clear_error(&error);
    hg_node_set_input(c.add, 1, c.w);
    assert_verified(c.g);
    /* A use record that no longer matches the node's input. */
    c.add->inputs[0] = c.x;
    assert_false(hg_graph_verify(c.g, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "use record");
    g_clear_error(&error);
    c.add->inputs[0] = c.y;
    assert_verified(c.g);
    hg_model_free(c.m);
}

/* A graph with inputs x and cond and values t and out, for an If (cond -> out) whose branch reads an
 * outer value. */
typedef struct {
    HgModel *m;
    HgGraph *g;
    HgValue *x, *cond, *t, *out;
} OuterScope;

static OuterScope
outer_scope_new(void)
{
    OuterScope o;
    o.x = model_with_input(&o.m);
    o.g = o.m->graph;
    o.cond = hg_graph_new_value(o.g, "cond", NULL);
    hg_graph_add_input(o.g, o.cond, NULL);
    o.t = hg_graph_new_value(o.g, "t", NULL);
    o.out = hg_graph_new_value(o.g, "out", NULL);
    return o;
}

/* A then_branch for nif in o's model: bo = Identity(read) at node 'inner' (returned in *inner unless
 * inner is NULL). */
static HgGraph *
add_then_branch(OuterScope *o, HgNode *nif, HgValue *read, HgNode **inner)
{
    HgGraph *branch = hg_graph_new(o->m, o->g);
    HgValue *bo = hg_graph_new_value(branch, "bo", NULL);
    HgNode *n = hg_graph_add_node(branch, "Identity", NULL, "inner", 1, &read, 1, &bo);
    if (inner)
        *inner = n;
    hg_graph_add_output(branch, bo, NULL);
    HgAttr *a = hg_attr_new("then_branch", HG_ATTR_GRAPH);
    a->g = branch;
    hg_node_add_attr(nif, a);
    return branch;
}

static void
test_subgraph_outer_reference_orders_parent(void **state)
{
    (void)state;
    /* File order: If (its branch reads t), then the node that defines t. */
    OuterScope o = outer_scope_new();
    HgModel *m = o.m;
    HgGraph *g = o.g;
    HgValue *x = o.x, *t = o.t, *out = o.out;
    HgNode *nif = hg_graph_add_node(g, "If", NULL, "if", 1, &o.cond, 1, &out);
    HgNode *nt = hg_graph_add_node(g, "Relu", NULL, "make_t", 1, &x, 1, &t);
    HgNode *inner;
    HgGraph *branch = add_then_branch(&o, nif, t, &inner);
    hg_graph_add_output(g, out, NULL);
    assert_verified(g);
    assert_int_equal(t->uses->len, 1);
    assert_ptr_equal(g_array_index(t->uses, HgUse, 0).node, inner);
    assert_ptr_equal(branch->parent_node, nif);
    g_autoptr(GPtrArray) order = hg_graph_topo_order(g, NULL);
    assert_ptr_equal(order->pdata[0], nt);
    assert_ptr_equal(order->pdata[1], nif);
    /* Removing the If drops its branch's use of t. */
    hg_value_replace_uses(out, x);
    hg_node_remove(nif);
    assert_int_equal(t->uses->len, 0);
    hg_graph_compact(g);
    assert_verified(g);
    hg_model_free(m);
}

static void
test_compact_keeps_values_nested_graphs_declare(void **state)
{
    (void)state;
    /* A branch's value_info names t, a value of the main graph that nothing reads: compacting the
     * main graph must not free t while the declaration points at it. */
    OuterScope o = outer_scope_new();
    HgModel *m = o.m;
    HgGraph *g = o.g;
    HgValue *t = o.t;
    HgNode *relu = hg_graph_add_node(g, "Relu", NULL, "relu", 1, &o.x, 1, &t);
    HgNode *nif = hg_graph_add_node(g, "If", NULL, "if", 1, &o.cond, 1, &o.out);
    HgGraph *branch = add_then_branch(&o, nif, o.x, NULL);
    hg_graph_add_value_info(branch, t, NULL);
    hg_graph_add_output(g, o.out, NULL);
    hg_node_remove(relu);
    hg_graph_compact(g);
    assert_ptr_equal(hg_graph_lookup(g, "t"), t);
    assert_string_equal(((HgValueDecl *)branch->value_info->pdata[0])->value->name, "t");
    assert_verified(g);
    hg_model_free(m);
}

static void
test_many_uses_stay_linear(void **state)
{
    (void)state;
    /* 20000 nodes read one value: verifying and removing them all must not scan the use list once
     * per use (it took seconds at 10^5 before). The check here is the bookkeeping, exactly. */
    HgModel *m;
    HgValue *x = model_with_input(&m);
    HgGraph *g = m->graph;
    enum { N = 20000 };
    for (guint i = 0; i < N; i++) {
        g_autofree char *name = g_strdup_printf("y%u", i);
        HgValue *y = hg_graph_new_value(g, name, NULL);
        hg_graph_add_node(g, "Relu", NULL, NULL, 1, &x, 1, &y);
        if (i == 0)
            hg_graph_add_output(g, y, NULL);
    }
    assert_int_equal(x->uses->len, N);
    assert_verified(g);
    for (guint i = N; i-- > 1;)
        hg_node_remove(g->nodes->pdata[i]);
    hg_graph_compact(g);
    assert_int_equal(x->uses->len, 1);
    assert_int_equal(g->nodes->len, 1);
    assert_verified(g);
    hg_model_free(m);
}

static void
test_set_elem_type_updates_declarations(void **state)
{
    (void)state;
    Chain c;
    chain_build(&c);
    assert_int_equal(hg_value_elem_type(NULL), HG_DTYPE_UNDEFINED);
    hg_graph_add_value_info(c.g, c.y, c.x->type);
    assert_int_equal(hg_value_elem_type(c.y), c.x->type->elem_type);
    hg_value_set_elem_type(c.y, HG_DTYPE_FLOAT16);
    assert_int_equal(hg_value_elem_type(c.y), HG_DTYPE_FLOAT16);
    hg_value_set_elem_type(c.z, HG_DTYPE_FLOAT16);
    HgValueDecl *vi = c.g->value_info->pdata[0];
    HgValueDecl *out = c.g->outputs->pdata[0];
    assert_int_equal(vi->type->elem_type, HG_DTYPE_FLOAT16);
    assert_int_equal(out->type->elem_type, HG_DTYPE_FLOAT16);
    assert_int_equal(c.z->type->elem_type, HG_DTYPE_FLOAT16);
    /* The shape is untouched. */
    assert_int_equal(out->type->shape->rank, 2);
    assert_int_equal(out->type->shape->dims[1].value, 3);
    hg_model_free(c.m);
}

static void
test_tensor_sizes(void **state)
{
    (void)state;
    const gint64 ok_dims[] = {3, 5};
    HgTensor *t = hg_tensor_new("t", HG_DTYPE_FLOAT16, 2, ok_dims);
    assert_int_equal(t->nbytes, 30);
    assert_int_equal(hg_tensor_numel(t), 15);
    HgTensor *c = hg_tensor_copy(t);
    ((guint8 *)hg_tensor_data_mut(c))[0] = 7;
    assert_int_equal(((const guint8 *)t->data)[0], 0); /* copy on write */
    hg_tensor_free(c);
    hg_tensor_free(t);
    const gint64 huge[] = {G_MAXINT64 / 2, 4};
    assert_null(hg_tensor_new("h", HG_DTYPE_FLOAT, 2, huge));
    const gint64 neg[] = {-1};
    assert_null(hg_tensor_new("n", HG_DTYPE_FLOAT, 1, neg));
    const gint64 i4[] = {3};
    t = hg_tensor_new("i4", HG_DTYPE_INT4, 1, i4);
    assert_int_equal(t->nbytes, 2); /* 4-bit elements round up to whole bytes */
    hg_tensor_free(t);
}

static void
test_dtype_names(void **state)
{
    (void)state;
    for (int d = 1; d < HG_DTYPE_COUNT; d++) {
        const char *name = hg_dtype_name(d);
        assert_non_null(name);
        assert_int_equal(hg_dtype_from_name(name), d);
    }
    assert_null(hg_dtype_name(99));
    assert_int_equal(hg_dtype_bits(HG_DTYPE_FLOAT16), 16);
    assert_int_equal(hg_dtype_from_name("fp16"), HG_DTYPE_UNDEFINED);
    assert_true(hg_dtype_is_float(HG_DTYPE_BFLOAT16));
    assert_false(hg_dtype_is_float(HG_DTYPE_INT64));
}

static void
test_opsets(void **state)
{
    (void)state;
    HgModel *m = hg_model_new();
    hg_model_set_opset(m, "ai.onnx", 13);
    hg_model_set_opset(m, "com.microsoft", 1);
    assert_int_equal(hg_model_opset(m, ""), 13);
    hg_model_set_opset(m, "", 17);
    assert_int_equal(m->opsets->len, 2);
    assert_int_equal(hg_model_opset(m, NULL), 17);
    assert_int_equal(hg_model_opset(m, "com.microsoft"), 1);
    assert_int_equal(hg_model_opset(m, "ai.onnx.ml"), 0);
    hg_model_free(m);
}

HG_TEST_MAIN("ir",
             cmocka_unit_test(test_build_and_links),
             cmocka_unit_test(test_duplicate_value_refused),
             cmocka_unit_test(test_topo_order_keeps_sorted_file_order),
             cmocka_unit_test(test_topo_order_sorts_unsorted_file),
             cmocka_unit_test(test_cycle_detected),
             cmocka_unit_test(test_replace_uses_and_remove),
             cmocka_unit_test(test_replace_uses_renames_graph_output),
             cmocka_unit_test(test_unique_names),
             cmocka_unit_test(test_verify_catches_broken_invariants),
             cmocka_unit_test(test_subgraph_outer_reference_orders_parent),
             cmocka_unit_test(test_compact_keeps_values_nested_graphs_declare),
             cmocka_unit_test(test_many_uses_stay_linear),
             cmocka_unit_test(test_set_elem_type_updates_declarations),
             cmocka_unit_test(test_tensor_sizes),
             cmocka_unit_test(test_dtype_names),
             cmocka_unit_test(test_opsets),
             cmocka_unit_test(test_move_rename_remove_unread),
             cmocka_unit_test(test_edit_verbs))
