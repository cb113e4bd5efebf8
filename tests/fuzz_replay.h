/* The replay half of a fuzz target (included by tests/fuzz_*.c when not built for libFuzzer): main()
 * feeds LLVMFuzzerTestOneInput each seed file plus deterministic mutations of it (byte flips,
 * varint-breaking bytes, truncations, duplicated spans), so the suite runs every target under ASan and
 * UBSan without clang. The including file defines FUZZ_PROPERTY, the sentence printed on success.
 *
 * Usage: TARGET [--mutations N] FILE... */
#ifndef HG_FUZZ_REPLAY_H
#define HG_FUZZ_REPLAY_H

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        guint8 *buf = g_malloc(len + 64 + 16); /* a duplicated span adds at most 64 bytes */
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
    printf("%u inputs from %u seed files: %s\n", runs, files, FUZZ_PROPERTY);
    printf("%u passed, 0 failed\n", runs);
    return 0;
}
#endif
