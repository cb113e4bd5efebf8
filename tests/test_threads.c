/* hg_run is reentrant: two threads run one loaded model at once, each alternating between the graph
 * outputs and an intermediate (so each replaces the other's cached plan), and get exactly what one
 * thread alone gets. The suite also runs this under valgrind's helgrind (tests/meson.build), which
 * reports any data race between the threads. */
#include "testutil.h"

#include <halfguard/run.h>
#include <pthread.h>
#include <string.h>

static const char *const model_text =
    "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n"
    "g (float[2,8] x) => (float[2,4] y)\n"
    "<\n  float[8,8] w = {1.0, -0.5, 0.25, 0.0, 0.5, -1.0, 0.75, 0.125, 0.5, 0.5, -0.25, 1.0, 0.0, 0.25, -0.75, 0.5,\n"
    "    -1.0, 0.0, 0.5, 0.5, 0.25, -0.5, 1.0, -0.125, 0.25, 1.0, 0.0, -0.5, 0.75, 0.5, -0.25, 0.0,\n"
    "    0.5, -0.25, 1.0, 0.25, -0.5, 0.0, 0.5, 0.75, 0.0, 0.5, -0.5, 1.0, 0.25, -0.75, 0.125, 0.5,\n"
    "    -0.5, 0.25, 0.0, 0.75, 1.0, 0.5, -0.25, 0.0, 0.125, -1.0, 0.5, 0.25, 0.0, 0.5, 1.0, -0.5},\n"
    "  float[8,4] v = {0.5, -0.5, 1.0, 0.0, 0.25, 0.75, -0.25, 0.5, 1.0, 0.0, 0.5, -1.0, -0.5, 0.5, 0.25, 0.125,\n"
    "    0.0, 1.0, -0.75, 0.5, 0.5, 0.25, 0.0, -0.5, -0.25, 0.5, 1.0, 0.25, 0.75, -0.125, 0.5, 0.0}\n>\n"
    "{\n  h = MatMul(x, w)\n  r = Relu(h)\n  s = MatMul(r, v)\n  y = Softmax <axis = -1> (s)\n}\n";

typedef struct {
    HgModel *m;
    HgTensor *x;            /* this thread's input */
    GPtrArray *want_y, *want_r;
    gboolean ok;
} Worker;

static GPtrArray *
run_once(HgModel *m, HgTensor *x, const char *const *outputs)
{
    g_autoptr(GPtrArray) in = g_ptr_array_new();
    g_ptr_array_add(in, x);
    HgRunOptions o = {1, NULL, NULL, outputs};
    return hg_run(m, in, &o, NULL);
}

static gboolean
same(GPtrArray *a, GPtrArray *b)
{
    if (!a || !b || a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++) {
        const HgTensor *s = a->pdata[i], *t = b->pdata[i];
        if (s->nbytes != t->nbytes || memcmp(s->data, t->data, s->nbytes) != 0)
            return FALSE;
    }
    return TRUE;
}

static void *
work(void *data)
{
    Worker *w = data;
    static const char *const intermediate[] = {"r", NULL};
    w->ok = TRUE;
    for (int i = 0; i < 20 && w->ok; i++) {
        g_autoptr(GPtrArray) y = run_once(w->m, w->x, NULL);
        g_autoptr(GPtrArray) r = run_once(w->m, w->x, intermediate);
        w->ok = same(y, w->want_y) && same(r, w->want_r);
    }
    return NULL;
}

static HgTensor *
input(float base)
{
    const gint64 dims[] = {2, 8};
    HgTensor *t = hg_tensor_new("x", HG_DTYPE_FLOAT, 2, dims);
    float *f = hg_tensor_data_mut(t);
    for (int i = 0; i < 16; i++)
        f[i] = base + 0.25f * (float)(i % 7) - 0.5f * (float)(i % 3);
    return t;
}

static void
test_two_threads_one_model(void **state)
{
    (void)state;
    g_autoptr(HgModel) m = parse_ok(model_text);
    static const char *const intermediate[] = {"r", NULL};
    Worker w[2];
    for (int k = 0; k < 2; k++) {
        w[k].m = m;
        w[k].x = input(k ? -1.0f : 1.5f);
        w[k].want_y = run_once(m, w[k].x, NULL);
        w[k].want_r = run_once(m, w[k].x, intermediate);
        assert_non_null(w[k].want_y);
        assert_non_null(w[k].want_r);
    }
    /* The two inputs give different outputs, so a mix-up between the threads would show. */
    assert_false(same(w[0].want_y, w[1].want_y));
    /* pthreads rather than GThread: GLib's lazy per-thread setup is a race to helgrind, one that is
     * not ours. */
    pthread_t t0, t1;
    assert_int_equal(pthread_create(&t0, NULL, work, &w[0]), 0);
    assert_int_equal(pthread_create(&t1, NULL, work, &w[1]), 0);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    for (int k = 0; k < 2; k++) {
        assert_true(w[k].ok);
        g_ptr_array_unref(w[k].want_y);
        g_ptr_array_unref(w[k].want_r);
        hg_tensor_free(w[k].x);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads_one_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
