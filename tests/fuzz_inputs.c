/* The readers of what users hand halfguard besides models, against hostile bytes: the ONNX text parser
 * (FUZZ_TEXT), .npy (FUZZ_NPY) and TensorProto (FUZZ_PB) tensor files, statistics and Polygraphy JSON
 * (FUZZ_STATS) and .halfguard.ini (FUZZ_INI); the build defines one. The property: no crash, no
 * sanitizer report, and a refusal is an HG_ERROR with a message. The file readers take a path, so the
 * bytes go through a memfd (a regular file) named /proc/self/fd/N.
 *
 * Built as a libFuzzer target with clang (-fsanitize=fuzzer, -DHG_LIBFUZZER; bench/fuzz.sh), else as
 * a replay of seed files and their mutations (tests/fuzz_replay.h): the fuzz-replay-* tests. */
#include "halfguard/halfguard.h"
#include "ir_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

#if defined(FUZZ_STATS) || defined(FUZZ_INI)
/* data as a regular file: its path (g_free) and descriptor. */
static char *
as_file(const guint8 *data, size_t size, int *fd)
{
    *fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (*fd < 0 || (size && write(*fd, data, size) != (ssize_t)size))
        abort();
    return g_strdup_printf("/proc/self/fd/%d", *fd);
}
#endif

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
    GError *error = NULL;
    gboolean ok;
#if defined(FUZZ_TEXT)
    HgModel *m = hg_model_parse_text((const char *)data, size, &error);
    ok = m != NULL;
    hg_model_free(m);
#elif defined(FUZZ_NPY) || defined(FUZZ_PB)
#ifdef FUZZ_NPY
    HgTensor *t = hg_npy_parse(data, size, "x", &error);
#else
    HgTensor *t = hg_tensor_load_pb(data, size, &error);
#endif
    ok = t != NULL;
    hg_tensor_free(t);
#elif defined(FUZZ_STATS) || defined(FUZZ_INI)
    int fd;
    g_autofree char *path = as_file(data, size, &fd);
#ifdef FUZZ_STATS
    HgStats *st = hg_stats_load(path, &error);
    ok = st != NULL;
    if (st)
        hg_stats_unref(st);
#else
    HgCheckConfig *cfg = hg_check_config_load(path, &error);
    ok = cfg != NULL;
    hg_check_config_free(cfg);
#endif
    close(fd);
#else
#error "define one of FUZZ_TEXT, FUZZ_NPY, FUZZ_PB, FUZZ_STATS, FUZZ_INI"
#endif
    if (!ok) {
        /* Refusals must be HG_ERRORs with a message, never anything else. */
        if (!error || error->domain != HG_ERROR || !error->message[0]) {
            fprintf(stderr, "refused without an HG_ERROR: %s (%s)\n", error ? error->message : "no error",
                    error ? g_quark_to_string(error->domain) : "-");
            abort();
        }
        g_error_free(error);
    }
    return 0;
}

#ifndef HG_LIBFUZZER
#define FUZZ_PROPERTY "no crash, every refusal an HG_ERROR with a message"
#include "fuzz_replay.h"
#endif
