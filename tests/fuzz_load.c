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
#define FUZZ_PROPERTY "no crash, every loadable input saves to a fixed point"
#include "fuzz_replay.h"
#endif
