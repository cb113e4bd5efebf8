/* The loader against hostile bytes. The property: whatever loads must save, and what it saves must
 * load again and save to the same bytes (load/save is a fixed point after one round).
 *
 * Built as a libFuzzer target with clang (-fsanitize=fuzzer, -DHG_LIBFUZZER). Otherwise main()
 * replays seed files plus deterministic mutations of each (byte flips, varint-breaking bytes,
 * truncations, duplicated spans): the `fuzz-replay` test, run under ASan and UBSan in CI.
 *
 * Usage (replay): fuzz_load [--mutations N] FILE... */
#include "halfguard/halfguard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
    GError *error = NULL;
    HgModel *m = hg_model_load_bytes(data, size, NULL, &error);
    if (!m) {
        /* Refusals must be HG_ERRORs with a message, never anything else. */
        if (!error || error->domain != HG_ERROR || !error->message[0])
            abort();
        g_error_free(error);
        return 0;
    }
    gsize n1 = 0, n2 = 0;
    guint8 *b1 = hg_model_save_bytes(m, &n1, &error);
    if (!b1) {
        fprintf(stderr, "a loaded model did not save: %s\n", error->message);
        abort();
    }
    HgModel *m2 = hg_model_load_bytes(b1, n1, NULL, &error);
    if (!m2) {
        fprintf(stderr, "a saved model did not load again: %s\n", error->message);
        abort();
    }
    guint8 *b2 = hg_model_save_bytes(m2, &n2, &error);
    if (!b2 || n1 != n2 || memcmp(b1, b2, n1) != 0) {
        fprintf(stderr, "saving is not a fixed point (%" G_GSIZE_FORMAT " vs %" G_GSIZE_FORMAT " bytes)\n",
                n1, n2);
        abort();
    }
    g_free(b1);
    g_free(b2);
    hg_model_free(m);
    hg_model_free(m2);
    return 0;
}

#ifndef HG_LIBFUZZER
static guint64
next(guint64 *s)
{
    /* xorshift64*: deterministic, so a failure replays */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

int
main(int argc, char **argv)
{
    int mutations = 100;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--mutations") == 0) {
        mutations = atoi(argv[2]);
        first = 3;
    }
    guint runs = 0, files = 0;
    for (int a = first; a < argc; a++) {
        gchar *data = NULL;
        gsize len = 0;
        if (!g_file_test(argv[a], G_FILE_TEST_EXISTS)) {
            printf("note: %s is absent, skipped\n", argv[a]); /* a seed of the shared corpus, in a clone */
            continue;
        }
        if (!g_file_get_contents(argv[a], &data, &len, NULL)) {
            fprintf(stderr, "%s: cannot read\n", argv[a]);
            return 2;
        }
        files++;
        LLVMFuzzerTestOneInput((const guint8 *)data, len);
        runs++;
        guint64 s = 0x9E3779B97F4A7C15ULL ^ len ^ (guint64)a;
        guint8 *buf = g_malloc(len * 2 + 16);
        for (int k = 0; k < mutations && len; k++) {
            memcpy(buf, data, len);
            gsize n = len;
            switch (next(&s) % 4) {
            case 0: /* flip a few bytes */
                for (int j = 0; j < 1 + (int)(next(&s) % 4); j++)
                    buf[next(&s) % n] ^= (guint8)(1u << (next(&s) % 8));
                break;
            case 1: /* bytes that break varints and lengths */
                buf[next(&s) % n] = (guint8)(next(&s) % 2 ? 0xff : 0x80);
                break;
            case 2: /* truncate */
                n = next(&s) % n;
                break;
            default: { /* duplicate a span (repeated fields, merged messages) */
                gsize at = next(&s) % n, span = MIN(n - at, 1 + next(&s) % 64);
                memmove(buf + at + span, buf + at, n - at);
                n += span;
                break;
            }
            }
            LLVMFuzzerTestOneInput(buf, n);
            runs++;
        }
        g_free(buf);
        g_free(data);
    }
    if (!files) {
        printf("no seed file is there: skipped\n");
        return 77;
    }
    printf("%u inputs from %u seed files: no crash, every loadable input saves to a fixed point\n", runs,
           files);
    printf("%u passed, 0 failed\n", runs);
    return 0;
}
#endif
