/* convert_one: the library's one-call conversion, as a program that uses it would call it.
 *
 *   cc -o convert_one examples/convert_one.c $(pkg-config --cflags --libs halfguard)
 *   ./convert_one examples/tiny_unet.onnx unet_fp16.onnx -r 'input=0:1' --exclude-op Resize
 *
 * Options: -r NAME=LO:HI (an input's range), --calib DATA, --exclude-op TYPE, --exclude-node REGEX,
 * --keep-io-types, --threads N; each as `halfguard convert` takes it. Prints convert's summary line.
 * Exit 0 on success, 2 with "FILE: message" on error. */
#include <halfguard/halfguard.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s IN.onnx OUT.onnx [-r NAME=LO:HI] [--calib DATA] [--exclude-op TYPE] "
                        "[--exclude-node REGEX] [--keep-io-types] [--threads N]\n", argv[0]);
        return 2;
    }
    g_autoptr(HgConvertOptions) opts = hg_convert_options_new();
    g_autoptr(GPtrArray) ops = g_ptr_array_new(), nodes = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    for (int i = 3; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--keep-io-types") == 0) {
            hg_convert_options_set_keep_io_types(opts, TRUE);
            continue;
        }
        if (!val) {
            fprintf(stderr, "%s: needs a value\n", arg);
            return 2;
        }
        i++;
        if (strcmp(arg, "-r") == 0) {
            g_auto(HgInputRangeSpec) r = {0};
            if (!hg_input_range_parse(val, &r, &error)) {
                fprintf(stderr, "%s\n", error->message);
                return 2;
            }
            hg_convert_options_add_input_range(opts, r.name, r.lo, r.hi);
        } else if (strcmp(arg, "--calib") == 0) {
            hg_convert_options_add_calib(opts, val);
        } else if (strcmp(arg, "--exclude-op") == 0) {
            g_ptr_array_add(ops, (gpointer)val);
        } else if (strcmp(arg, "--exclude-node") == 0) {
            g_ptr_array_add(nodes, (gpointer)val);
        } else if (strcmp(arg, "--threads") == 0) {
            hg_convert_options_set_threads(opts, atoi(val));
        } else {
            fprintf(stderr, "%s: unknown option\n", arg);
            return 2;
        }
    }
    g_ptr_array_add(ops, NULL);
    g_ptr_array_add(nodes, NULL);
    hg_convert_options_set_block_ops(opts, (const char *const *)ops->pdata);
    hg_convert_options_set_block_nodes(opts, (const char *const *)nodes->pdata);

    g_autoptr(HgConvertResult) result = NULL;
    if (!hg_convert_file(argv[1], argv[2], opts, &result, &error)) {
        fprintf(stderr, "%s\n", error->message);
        return 2;
    }
    g_autofree char *summary = hg_convert_result_summary(result);
    printf("%s -> %s: %s\n", argv[1], argv[2], summary);
    return 0;
}
