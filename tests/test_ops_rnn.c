/* Kernels, shape rules and interval rules of the recurrent family (src/ops/rnn.c: LSTM, GRU, RNN),
 * checked against values worked out by hand (written here). The sequence cases use Affine
 * activations, whose alpha 0 makes a gate a constant and alpha 1 the identity, so the states are
 * small exact sums that show the order of the steps, the lengths and the layouts. */
#include "opstest.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define check(a, dtype, rank, dims, want, tol) hg_check_rel_at((a), (dtype), (rank), (dims), (want), (tol), __FILE__, __LINE__)

static void
attr_strings(HgNode *n, const char *name, guint len, const char *const *v)
{
    HgAttr *a = hg_attr_new(name, HG_ATTR_STRINGS);
    a->strings = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (guint i = 0; i < len; i++)
        g_ptr_array_add(a->strings, g_bytes_new(v[i], strlen(v[i])));
    hg_node_add_attr(n, a);
}

#define STRS(...) ((const char *const[]){__VA_ARGS__})

/* The dims of an inferred shape, a name expected where syms[i] is not NULL. */
static void
assert_sym_dims_at(const HgValueShape *s, int dtype, int rank, const gint64 *dims, const char *const *syms,
                   const char *file, int line)
{
    hg_assert_vshape_at(s, dtype, rank, dims, file, line);
    for (int i = 0; i < rank && i < s->rank; i++)
        if (syms[i] && s->dims[i].sym != g_intern_string(syms[i]))
            fail_msg("%s:%d: dim %d is named '%s', expected '%s'", file, line, i, s->dims[i].sym ? s->dims[i].sym : "(none)",
                     syms[i]);
}

#define assert_sym_dims(s, dtype, rank, dims, syms) assert_sym_dims_at((s), (dtype), (rank), (dims), (syms), __FILE__, __LINE__)

/* ---------------------------------------------------------------- the table */

static void
test_family_rows(void **state)
{
    (void)state;
    assert_family_rows("rnn", 3);
    /* matrix products inside, and neither elementwise nor homogeneous (the activations are not) */
    const char *ops[] = {"LSTM", "GRU", "RNN"};
    for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
        const HgOpDef *d = hg_op_lookup("", ops[i]);
        assert_non_null(d);
        assert_int_equal(d->traits, HG_TRAIT_ACCUMULATES);
        assert_int_equal(d->fp32_inputs, 0);
    }
}

/* ---------------------------------------------------------------- shapes */

static void
test_infer_symbolic(void **state)
{
    (void)state;
    g_autoptr(GError) error = NULL;
    HgValueShape *in[3], *out[3];
    /* X [seq, batch, 32], hidden 16, bidirectional: Y [seq, 2, batch, 16], Y_h and Y_c [2, batch, 16] */
    Node n = node_new("LSTM", "x,w,r", "y,yh,yc");
    attr_i(n.node, "hidden_size", 16);
    attr_s(n.node, "direction", "bidirectional");
    in[0] = g_new(HgValueShape, 1);
    vs_set(in[0], HG_DTYPE_FLOAT, 3, DIMS(-1, -1, 32), STRS("seq", "batch", NULL));
    in[1] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 64, 32));
    in[2] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 64, 16));
    assert_true(infer_vs(&n, 14, 3, in, 3, out, &error));
    assert_sym_dims(out[0], HG_DTYPE_FLOAT, 4, DIMS(-1, 2, -1, 16), STRS("seq", NULL, "batch", NULL));
    assert_sym_dims(out[1], HG_DTYPE_FLOAT, 3, DIMS(2, -1, 16), STRS(NULL, "batch", NULL));
    assert_sym_dims(out[2], HG_DTYPE_FLOAT, 3, DIMS(2, -1, 16), STRS(NULL, "batch", NULL));
    for (int k = 0; k < 3; k++)
        vs_free(out[k]);
    node_free(&n);

    /* layout 1 (opset 14): X [batch, seq, 32] gives Y [batch, seq, 2, 16] and Y_h [batch, 2, 16];
     * GRU without hidden_size takes H from R */
    n = node_new("GRU", "x,w,r", "y,yh");
    attr_s(n.node, "direction", "bidirectional");
    attr_i(n.node, "layout", 1);
    in[0] = g_new(HgValueShape, 1);
    vs_set(in[0], HG_DTYPE_FLOAT16, 3, DIMS(-1, -1, 32), STRS("batch", "seq", NULL));
    in[1] = vs_new(HG_DTYPE_FLOAT16, 3, DIMS(2, 48, 32));
    in[2] = vs_new(HG_DTYPE_FLOAT16, 3, DIMS(2, 48, 16));
    assert_true(infer_vs(&n, 14, 3, in, 2, out, &error));
    assert_sym_dims(out[0], HG_DTYPE_FLOAT16, 4, DIMS(-1, -1, 2, 16), STRS("batch", "seq", NULL, NULL));
    assert_sym_dims(out[1], HG_DTYPE_FLOAT16, 3, DIMS(-1, 2, 16), STRS("batch", NULL, NULL));
    for (int k = 0; k < 2; k++)
        vs_free(out[k]);
    node_free(&n);

    /* an omitted Y: only Y_h is inferred; an RNN of one direction */
    n = node_new("RNN", "x,w,r", ",yh");
    attr_i(n.node, "hidden_size", 4);
    in[0] = vs_new(HG_DTYPE_DOUBLE, 3, DIMS(7, 3, 5));
    in[1] = vs_new(HG_DTYPE_DOUBLE, 3, DIMS(1, 4, 5));
    in[2] = vs_new(HG_DTYPE_DOUBLE, 3, DIMS(1, 4, 4));
    assert_true(infer_vs(&n, 7, 3, in, 2, out, &error));
    assert_int_equal(out[0]->rank, -1);
    hg_assert_vshape_at(out[1], HG_DTYPE_DOUBLE, 3, DIMS(1, 3, 4), __FILE__, __LINE__);
    /* the cost: the products of every step, 7 * 3 * 4 * (5 + 4) */
    HgValueShape *xc = vs_new(HG_DTYPE_DOUBLE, 3, DIMS(7, 3, 5));
    const HgValueShape *cin[3] = {xc, NULL, NULL};
    HgShapeCtx cctx = {n.node, 7, 3, cin, 0, NULL, NULL};
    assert_int_equal(hg_op_for_node(n.node)->cost(&cctx), 7 * 3 * 4 * 9);
    vs_free(xc);
    for (int k = 0; k < 2; k++)
        vs_free(out[k]);
    node_free(&n);
}

static void
test_infer_errors(void **state)
{
    (void)state;
    g_autoptr(GError) error = NULL;
    HgValueShape *in[3], *out[2];
    /* W of one direction for a bidirectional node */
    Node n = node_new("RNN", "x,w,r", "y,yh");
    attr_s(n.node, "direction", "bidirectional");
    in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4));
    in[1] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 5, 4));
    in[2] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 5, 5));
    assert_false(infer_vs(&n, 14, 3, in, 2, out, &error));
    assert_hg_error(error, HG_ERROR_INVALID, "W holds 1 directions");
    g_clear_error(&error);
    for (int k = 0; k < 2; k++)
        vs_free(out[k]);
    node_free(&n);
    /* a direction ONNX does not have, an activation it does not list, ScaledTanh without parameters */
    const struct {
        const char *attr, *value, *needle;
    } bad[] = {
        {"direction", "sideways", "direction 'sideways'"},
        {"activations", "Swish", "activation 'Swish'"},
        {"activations", "ScaledTanh", "ScaledTanh needs its alpha and beta"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        n = node_new("RNN", "x,w,r", "y,yh");
        if (!strcmp(bad[i].attr, "direction"))
            attr_s(n.node, "direction", bad[i].value);
        else
            attr_strings(n.node, "activations", 1, STRS(bad[i].value));
        in[0] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(2, 3, 4));
        in[1] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 5, 4));
        in[2] = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 5, 5));
        assert_false(infer_vs(&n, 14, 3, in, 2, out, &error));
        assert_hg_error(error, HG_ERROR_INVALID, bad[i].needle);
        g_clear_error(&error);
        for (int k = 0; k < 2; k++)
            vs_free(out[k]);
        node_free(&n);
    }
}

/* ---------------------------------------------------------------- one step, default activations */

static void
test_one_step_by_hand(void **state)
{
    (void)state;
    const gint64 *d111 = DIMS(1, 1, 1);
    /* RNN: H = tanh(x W + h0 R + Wb + Rb) = tanh(0.5 + 0.25 + 0.1 + 0.2) = tanh(1.05) */
    Node n = node_new("RNN", "x,w,r,b,,h0", "y,yh");
    attr_i(n.node, "hidden_size", 1);
    Result res = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 3, d111, VALS(1)), arr(HG_DTYPE_FLOAT, 3, d111, VALS(0.5)),
                     arr(HG_DTYPE_FLOAT, 3, d111, VALS(0.25)), arr(HG_DTYPE_FLOAT, 2, DIMS(1, 2), VALS(0.1, 0.2)), NULL,
                     arr(HG_DTYPE_FLOAT, 3, d111, VALS(1)));
    assert_true(res.ok);
    check(res.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(0.7818063576087741), 1e-6);
    check(res.out[1], HG_DTYPE_FLOAT, 3, d111, VALS(0.7818063576087741), 1e-6);
    result_free(&res);
    node_free(&n);

    /* LSTM, only the cell gate reading x (W = [0, 0, 0, 1] for i, o, f, c), c0 = 2: the gates are
     * sigmoid(0) = 0.5, c = tanh(1), C = 0.5 * 2 + 0.5 * tanh(1) = 1.3807970779778824 and
     * H = 0.5 * tanh(C) = 0.4405648141721129. With the output gate's peephole 1 (P = [0, 1, 0]),
     * o = sigmoid(C): H = sigmoid(C) tanh(C) = 0.7041274133373643. */
    for (int peep = 0; peep < 2; peep++) {
        n = node_new("LSTM", "x,w,r,,,,c0,p", "y,yh,yc");
        attr_i(n.node, "hidden_size", 1);
        res = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 3, d111, VALS(1)), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 1)),
                  arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 0)), NULL, NULL, NULL,
                  arr(HG_DTYPE_FLOAT, 3, d111, VALS(2)),
                  arr(HG_DTYPE_FLOAT, 2, DIMS(1, 3), peep ? VALS(0, 1, 0) : VALS(0, 0, 0)));
        assert_true(res.ok);
        double h = peep ? 0.7041274133373643 : 0.4405648141721129;
        check(res.out[0], HG_DTYPE_FLOAT, 4, DIMS(1, 1, 1, 1), VALS(h), 1e-6);
        check(res.out[1], HG_DTYPE_FLOAT, 3, d111, VALS(h), 1e-6);
        check(res.out[2], HG_DTYPE_FLOAT, 3, d111, VALS(1.3807970779778824), 1e-6);
        result_free(&res);
        node_free(&n);
    }

    /* GRU with W = R = [0, 0, 1] (z, r, h), Rbh = 0.5, h0 = 0.5, x = 1: z = r = 0.5 and
     * linear_before_reset 0: h = tanh(1 + (0.5 * 0.5) * 1 + 0.5) = tanh(1.75),
     * linear_before_reset 1: h = tanh(1 + 0.5 * (0.5 * 1 + 0.5)) = tanh(1.5);
     * H = 0.5 h + 0.5 * 0.5 = 0.7206877692486438 and 0.7025741268224333. */
    for (int lbr = 0; lbr < 2; lbr++) {
        n = node_new("GRU", "x,w,r,b,,h0", "y,yh");
        attr_i(n.node, "hidden_size", 1);
        attr_i(n.node, "linear_before_reset", lbr);
        res = RUN(&n, 7, arr(HG_DTYPE_FLOAT, 3, d111, VALS(1)), arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 0, 1)),
                  arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 0, 1)),
                  arr(HG_DTYPE_FLOAT, 2, DIMS(1, 6), VALS(0, 0, 0, 0, 0, 0.5)), NULL,
                  arr(HG_DTYPE_FLOAT, 3, d111, VALS(0.5)));
        assert_true(res.ok);
        check(res.out[1], HG_DTYPE_FLOAT, 3, d111, VALS(lbr ? 0.7025741268224333 : 0.7206877692486438), 1e-6);
        result_free(&res);
        node_free(&n);
    }
}

/* ---------------------------------------------------------------- sequences: order, lengths, layouts */

/* An RNN with the identity (Affine 1, 0), W = 1 and R = 10: H_t = x_t + 10 H_{t-1}, so the digits of
 * H spell the steps in the order they ran. Entries [1, 2, 3] (length 3) and [4, 5, 6] (length 2):
 * forward 1, 12, 123 and 4, 45 (then 0); reverse, from each entry's last valid step, 321, 32, 3 and
 * 54, 5 (then 0). */
static void
test_rnn_bidirectional_lengths(void **state)
{
    (void)state;
    const int dtypes[] = {HG_DTYPE_FLOAT, HG_DTYPE_DOUBLE, HG_DTYPE_FLOAT16};
    for (guint k = 0; k < G_N_ELEMENTS(dtypes); k++) {
        for (int layout = 0; layout < 2; layout++) {
            int dt = dtypes[k];
            Node n = node_new("RNN", "x,w,r,,lens", "y,yh");
            attr_i(n.node, "hidden_size", 1);
            attr_s(n.node, "direction", "bidirectional");
            attr_strings(n.node, "activations", 2, STRS("Affine", "Affine"));
            attr_floats(n.node, "activation_alpha", 2, F32S(1, 1));
            attr_floats(n.node, "activation_beta", 2, F32S(0, 0));
            attr_i(n.node, "layout", layout);
            HgArray *x = layout ? arr(dt, 3, DIMS(2, 3, 1), VALS(1, 2, 3, 4, 5, 6))
                                : arr(dt, 3, DIMS(3, 2, 1), VALS(1, 4, 2, 5, 3, 6));
            Result res = RUN(&n, 14, x, arr(dt, 3, DIMS(2, 1, 1), VALS(1, 1)), arr(dt, 3, DIMS(2, 1, 1), VALS(10, 10)),
                             NULL, arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(3, 2)));
            assert_true(res.ok);
            if (layout) {
                /* Y [batch, seq, dirs, 1], Y_h [batch, dirs, 1] */
                check(res.out[0], dt, 4, DIMS(2, 3, 2, 1), VALS(1, 321, 12, 32, 123, 3, 4, 54, 45, 5, 0, 0), 0);
                check(res.out[1], dt, 3, DIMS(2, 2, 1), VALS(123, 321, 45, 54), 0);
            } else {
                /* Y [seq, dirs, batch, 1], Y_h [dirs, batch, 1] */
                check(res.out[0], dt, 4, DIMS(3, 2, 2, 1), VALS(1, 4, 321, 54, 12, 45, 32, 5, 123, 0, 3, 0), 0);
                check(res.out[1], dt, 3, DIMS(2, 2, 1), VALS(123, 45, 321, 54), 0);
            }
            result_free(&res);
            node_free(&n);
        }
    }
}

/* LSTM, reverse, with lengths [2, 1]: gates f = Affine(0, 0.5) are 0.5, g and h the identity, only
 * the cell gate reads x (W_c = 1), so C_t = 0.5 C_{t-1} + 0.5 x_t and H_t = 0.5 C_t. Entry 0 reads
 * [2, 8] from its step 1 down: C = 4 (H 2), then C = 2 + 1 = 3 (H 1.5); entry 1 reads [10] only:
 * C = 5 (H 2.5), and its step 1 is 0 in Y. alpha and beta are consumed in the order of the
 * functions: f takes 0 and 0.5, g and h 1 and 0. */
static void
test_lstm_reverse_lengths(void **state)
{
    (void)state;
    Node n = node_new("LSTM", "x,w,r,,lens", "y,yh,yc");
    attr_i(n.node, "hidden_size", 1);
    attr_s(n.node, "direction", "reverse");
    attr_strings(n.node, "activations", 3, STRS("Affine", "affine", "AFFINE"));
    attr_floats(n.node, "activation_alpha", 3, F32S(0, 1, 1));
    attr_floats(n.node, "activation_beta", 3, F32S(0.5, 0, 0));
    Result res = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 1), VALS(2, 10, 8, 100)),
                     arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 1)),
                     arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 0)), NULL,
                     arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(2, 1)));
    assert_true(res.ok);
    check(res.out[0], HG_DTYPE_FLOAT, 4, DIMS(2, 1, 2, 1), VALS(1.5, 2.5, 2, 0), 0);
    check(res.out[1], HG_DTYPE_FLOAT, 3, DIMS(1, 2, 1), VALS(1.5, 2.5), 0);
    check(res.out[2], HG_DTYPE_FLOAT, 3, DIMS(1, 2, 1), VALS(3, 5), 0);
    result_free(&res);
    /* a length past the sequence */
    RUN_FAILS(&n, 14, HG_ERROR_INVALID, "sequence_lens[1] = 3 is outside [0, 2]",
              arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 1), VALS(2, 10, 8, 100)),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 1)),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 0)), NULL,
              arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(2, 3)));
    /* R of the wrong shape */
    RUN_FAILS(&n, 14, HG_ERROR_INVALID, "R has shape [1, 3, 1], expected [1, 4, 1]",
              arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 1), VALS(2, 10, 8, 100)),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 1), VALS(0, 0, 0, 1)),
              arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 0, 0)));
    node_free(&n);
}

/* GRU, reverse, layout 1 (X [batch, seq, 1]), lengths [2, 1]: z = r = Affine(0, 0.5) = 0.5, the
 * candidate the identity of x (W_h = 1), so H_t = 0.5 x_t + 0.5 H_{t-1}. Entry 0 reads [2, 8] from
 * its step 1: 4, then 1 + 2 = 3; entry 1 reads [10]: 5. */
static void
test_gru_reverse_layout1(void **state)
{
    (void)state;
    Node n = node_new("GRU", "x,w,r,,lens", "y,yh");
    attr_i(n.node, "hidden_size", 1);
    attr_i(n.node, "layout", 1);
    attr_s(n.node, "direction", "reverse");
    attr_strings(n.node, "activations", 2, STRS("Affine", "Affine"));
    attr_floats(n.node, "activation_alpha", 2, F32S(0, 1));
    attr_floats(n.node, "activation_beta", 2, F32S(0.5, 0));
    Result res = RUN(&n, 14, arr(HG_DTYPE_FLOAT, 3, DIMS(2, 2, 1), VALS(2, 8, 10, 100)),
                     arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 0, 1)),
                     arr(HG_DTYPE_FLOAT, 3, DIMS(1, 3, 1), VALS(0, 0, 0)), NULL,
                     arr_i(HG_DTYPE_INT32, 1, DIMS(2), INTS(2, 1)));
    assert_true(res.ok);
    check(res.out[0], HG_DTYPE_FLOAT, 4, DIMS(2, 2, 1, 1), VALS(3, 4, 5, 0), 0);
    check(res.out[1], HG_DTYPE_FLOAT, 3, DIMS(2, 1, 1), VALS(3, 5), 0);
    result_free(&res);
    node_free(&n);
}

/* ---------------------------------------------------------------- interval rules */

/* Call node's interval rule at opset: input i present when sh[i] is not NULL, with range in[i]; every
 * output FLOAT of unknown dims; out[0..n_out) receive the ranges (without the driver's widening). */
static void
range_rule(const HgNode *node, gint64 opset, guint n_in, const HgRange *in, HgValueShape *const *sh, guint n_out,
           HgRange *out)
{
    const HgOpDef *d = hg_op_for_node(node);
    const HgRange *ip[MAX_IO] = {0};
    const HgValueShape *sp[MAX_IO] = {0}, *op[MAX_IO];
    const HgArray *vp[MAX_IO] = {0};
    HgRange *outp[MAX_IO];
    HgValueShape os;
    vs_set(&os, HG_DTYPE_FLOAT, -1, NULL, NULL);
    for (guint i = 0; i < n_in; i++) {
        ip[i] = sh[i] ? &in[i] : NULL;
        sp[i] = sh[i];
    }
    for (guint k = 0; k < n_out; k++) {
        out[k] = hg_range_any();
        outp[k] = &out[k];
        op[k] = &os;
    }
    HgRangeCtx ctx = {node, opset, n_in, ip, sp, vp, n_out, op, outp};
    d->range(&ctx);
}

static void
assert_range_at(const HgRange *r, double lo, double hi, gboolean nan, double tol, const char *file, int line)
{
    gboolean ok = (lo == r->lo || fabs(r->lo - lo) <= tol * MAX(1, fabs(lo))) &&
                  (hi == r->hi || fabs(r->hi - hi) <= tol * MAX(1, fabs(hi))) && r->nan == nan;
    if (!ok)
        fail_msg("%s:%d: range [%.9g, %.9g] nan %d, expected [%.9g, %.9g] nan %d", file, line, r->lo, r->hi, r->nan, lo,
                 hi, nan);
}

#define assert_range(r, lo, hi, nan, tol) assert_range_at((r), (lo), (hi), (nan), (tol), __FILE__, __LINE__)

static void
test_ranges(void **state)
{
    (void)state;
    HgRange out[3];
    HgRange unit = hg_range_exact(-1, 1);
    HgValueShape *x5 = vs_new(HG_DTYPE_FLOAT, 3, DIMS(5, 2, 3)), *xs = g_new(HgValueShape, 1);
    vs_set(xs, HG_DTYPE_FLOAT, 3, DIMS(-1, 2, 3), STRS("seq", NULL, NULL));
    HgValueShape *w = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 16, 3)), *r = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 16, 4));
    HgValueShape *st = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 2, 4));

    /* LSTM: Y, Y_h = o tanh(C) in [-1, 1] whatever the weights; five steps move C by at most 1 each
     * from c0 in [-0.5, 3]: [-5.5, 8], which takes Y's bound to [tanh(-5.5), tanh(8)] (rounding
     * included); a symbolic length leaves C unbounded and Y in [-1, 1] */
    Node n = node_new("LSTM", "x,w,r,,,h0,c0", "y,yh,yc");
    attr_i(n.node, "hidden_size", 4);
    HgRange in[7] = {unit, hg_range_exact(-1e3, 1e3), unit, {0}, {0}, hg_range_exact(-7, 7), hg_range_exact(-0.5, 3)};
    range_rule(n.node, 14, 7, in, (HgValueShape *[]){x5, w, r, NULL, NULL, st, st}, 3, out);
    assert_range(&out[0], tanh(-5.5), tanh(8), FALSE, 1e-5);
    assert_range(&out[1], tanh(-5.5), tanh(8), FALSE, 1e-5);
    assert_range(&out[2], -5.5, 8, FALSE, 1e-5);
    range_rule(n.node, 14, 7, in, (HgValueShape *[]){xs, w, r, NULL, NULL, st, st}, 3, out);
    assert_range(&out[0], -1, 1, FALSE, 1e-6);
    assert_range(&out[2], -INFINITY, INFINITY, FALSE, 0);
    /* an input that may be NaN, or unbounded, makes every output possibly NaN */
    in[0].nan = TRUE;
    range_rule(n.node, 14, 7, in, (HgValueShape *[]){xs, w, r, NULL, NULL, st, st}, 3, out);
    assert_range(&out[0], -1, 1, TRUE, 1e-6);
    in[0] = (HgRange){-INFINITY, 0, 0, FALSE};
    range_rule(n.node, 14, 7, in, (HgValueShape *[]){x5, w, r, NULL, NULL, st, st}, 3, out);
    assert_true(out[2].nan);
    node_free(&n);

    /* GRU: a convex combination of tanh values and initial_h: [-3, 2] for h0 in [-3, 2] */
    n = node_new("GRU", "x,w,r,,,h0", "y,yh");
    attr_i(n.node, "hidden_size", 4);
    HgValueShape *wg = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 12, 3)), *rg = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 12, 4));
    HgRange gin[6] = {unit, unit, unit, {0}, {0}, hg_range_exact(-3, 2)};
    range_rule(n.node, 14, 6, gin, (HgValueShape *[]){xs, wg, rg, NULL, NULL, st}, 2, out);
    assert_range(&out[0], -3, 2, FALSE, 1e-6);
    assert_range(&out[1], -3, 2, FALSE, 1e-6);
    node_free(&n);

    /* RNN: tanh gives [-1, 1]; Relu has no bound (and a state without one may overflow: NaN), but
     * with clip 2 its input is in [-2, 2]: [0, 2] */
    HgValueShape *wr = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 3)), *rr = vs_new(HG_DTYPE_FLOAT, 3, DIMS(1, 4, 4));
    HgRange rin[3] = {unit, unit, unit};
    n = node_new("RNN", "x,w,r", "y,yh");
    attr_i(n.node, "hidden_size", 4);
    range_rule(n.node, 14, 3, rin, (HgValueShape *[]){x5, wr, rr}, 2, out);
    assert_range(&out[0], -1, 1, FALSE, 1e-6);
    attr_strings(n.node, "activations", 1, STRS("Relu"));
    range_rule(n.node, 14, 3, rin, (HgValueShape *[]){x5, wr, rr}, 2, out);
    assert_range(&out[0], 0, INFINITY, TRUE, 0);
    attr_f(n.node, "clip", 2);
    range_rule(n.node, 14, 3, rin, (HgValueShape *[]){x5, wr, rr}, 2, out);
    assert_range(&out[1], 0, 2, FALSE, 1e-5);
    node_free(&n);

    HgValueShape *all[] = {x5, xs, w, r, st, wg, rg, wr, rr};
    for (guint i = 0; i < G_N_ELEMENTS(all); i++)
        vs_free(all[i]);
}

HG_TEST_MAIN("ops_rnn",
             cmocka_unit_test(test_family_rows),
             cmocka_unit_test(test_infer_symbolic),
             cmocka_unit_test(test_infer_errors),
             cmocka_unit_test(test_one_step_by_hand),
             cmocka_unit_test(test_rnn_bidirectional_lengths),
             cmocka_unit_test(test_lstm_reverse_lengths),
             cmocka_unit_test(test_gru_reverse_layout1),
             cmocka_unit_test(test_ranges))
