/* halfguard: the command line. It parses arguments and calls the library; nothing else. The reports
 * and the options the commands share are in cli_common.c. */
#include "cli.h"

#include "bulk.h"
#include "dot.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- convert */

/* The names of g's float graph inputs (new array of new strings). */
static GPtrArray *
float_inputs(const HgGraph *g)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < g->inputs->len; i++) {
        const HgValueDecl *d = g->inputs->pdata[i];
        if (!d->value->init && d->type && d->type->kind == HG_TYPE_TENSOR && d->type->elem_type == HG_DTYPE_FLOAT)
            g_ptr_array_add(names, g_strdup(d->value->name));
    }
    return names;
}

/* Does the converted graph g round every input named in names to FP16: declared FLOAT16, or read
 * by a Cast to it? */
static gboolean
inputs_rounded(const HgGraph *g, const GPtrArray *names)
{
    for (guint k = 0; k < names->len; k++) {
        gboolean rounded = FALSE;
        for (guint i = 0; i < g->inputs->len && !rounded; i++) {
            const HgValueDecl *d = g->inputs->pdata[i];
            if (strcmp(d->value->name, names->pdata[k]) != 0)
                continue;
            rounded = d->type && d->type->kind == HG_TYPE_TENSOR && d->type->elem_type == HG_DTYPE_FLOAT16;
            for (guint u = 0; u < d->value->uses->len && !rounded; u++) {
                const HgNode *n = g_array_index(d->value->uses, HgUse, u).node;
                rounded = hg_node_is(n, "Cast") && hg_node_attr_int(n, "to", 0) == HG_DTYPE_FLOAT16;
            }
        }
        if (!rounded)
            return FALSE;
    }
    return TRUE;
}

/* What every model of one convert command shares. */
typedef struct {
    Analysis *an;
    const char *output, *output_dir, *report, *dump_after, *dot, *trtexec;
    gboolean keep_io, strict_lfs, stdout_taken;
    char **block_ops, **block_nodes, **force_nodes, **pass_list;
    const char *results; /* --results FILE, or NULL */
    const char *options_hash; /* --skip-existing: the hash outputs carry, else NULL */
    GString *lines;      /* its lines so far (a file is written at the end) */
    int rc;
    HgExternalData external; /* --external-data */
    gboolean no_probe;       /* --no-probe */
} ConvertRun;

/* convert --emit-trtexec FILE: the trtexec flags of a weakly typed FP16 build (TensorRT 10.11 and
 * older), one line, written as every output is (- for standard output). */
static gboolean
write_trtexec(const HgConvertResult *result, const char *path, GError **error)
{
    g_autofree char *pins = hg_convert_result_trtexec(result);
    g_autofree char *line = g_strdup_printf("--fp16%s%s\n", pins ? " " : "", pins ? pins : "");
    return hg_write_file(path, line, strlen(line), error);
}

/* Convert one model (bulk_run's BulkConvertFunc). */
static void
convert_one(BulkItem *it, BulkRecord *rec, gpointer data)
{
    ConvertRun *r = data;
    const char *in = it->path;
    const char *out = it->output;
    FILE *info = r->stdout_taken ? stderr : stdout; /* standard output may carry the model or report */
    if (r->options_hash && bulk_up_to_date(in, out, r->options_hash)) {
        rec->status = BULK_SKIPPED;
        rec->message = g_strdup_printf("%s is up to date: newer, and made with the same options", out);
        print_line(info, "%s -> %s: up to date, skipped (--skip-existing)", in, out);
        return;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = hg_model_load(in, &error);
    if (!m && error->code == HG_ERROR_LFS && r->output_dir && !r->strict_lfs) {
        rec->status = BULK_SKIPPED;
        rec->message = g_strdup("Git LFS pointer, not a model: skipped (--strict-lfs makes this an error)");
        print_line(stderr, "%s: note: %s", in, rec->message);
        return;
    }
    g_autofree char *out_dir = g_path_get_dirname(out);
    if (m && r->output_dir && g_mkdir_with_parents(out_dir, 0755) != 0) {
        int e = errno;
        g_clear_pointer(&m, hg_model_free);
        g_set_error(&error, HG_ERROR, HG_ERROR_OUTPUT, "%s: cannot create: %s", out_dir, g_strerror(e));
    }
    HgStats *use = NULL;
    g_autoptr(HgStats) owned = NULL;
    g_auto(Synthetic) syn = {0};
    g_auto(ModelSetup) ms = {0};
    g_autoptr(HgConvertResult) result = NULL;
    g_autoptr(GString) dump = g_string_new(NULL);
    /* --passes none runs nothing that reads statistics: convert's default synthetic calibration (a run
     * of the model per set) would be spent for nothing. */
    gboolean runs_passes = !r->pass_list || !r->pass_list[0];
    for (guint p = 0; r->pass_list && r->pass_list[p]; p++)
        runs_passes |= *r->pass_list[p] && strcmp(r->pass_list[p], "none") != 0;
    if (m && model_setup(r->an, m, in, &ms, &error) &&
        model_stats(m, r->an, &ms, runs_passes, &use, &owned, &syn, &error)) {
        HgCheckOptions co = ms.co;
        co.stats = use;
        /* Without statistics, a synthetic probe in the ranges looks for activations too small for
         * FP16, which no bound can show (HgCheckOptions.probe); a model it cannot run goes without. */
        g_autoptr(HgStats) probe = NULL;
        double sens_rel = 0;
        g_autofree char *sens_output = NULL;
        g_autoptr(GPtrArray) sens_inputs = NULL;
        if (!use && runs_passes && !r->no_probe && m->graph) {
            g_autoptr(GError) perr = NULL;
            probe = hg_stats_collect_probe(m, &co, (guint64)r->an->seed, r->an->threads, &perr);
            if (!probe && !cli_quiet)
                print_line(stderr, "%s: note: the synthetic probe for activations too small for FP16 did not run "
                           "(%s): only their static bounds can show them; --calib gives it data",
                           in, perr ? perr->message : "the interpreter failed");
            /* Where it runs, it also asks how far FP32 itself moves when only the inputs are rounded
             * to FP16 (said below if the conversion rounds them): a model that sensitive cannot agree
             * with FP32 in any FP16 conversion that does. */
            if (probe && !cli_quiet &&
                hg_verify_input_sensitivity(m, &co, (guint64)r->an->seed, r->an->threads, &sens_rel, &sens_output,
                                            NULL) && sens_rel > HG_VERIFY_DEFAULT_L2_TOL)
                sens_inputs = float_inputs(m->graph);
        }
        co.probe = probe;
        report_warnings(in, m, &co);
        g_autoptr(HgConvertOptions) o = hg_convert_options_new();
        hg_convert_options_set_analysis(o, &co);
        hg_convert_options_set_block_ops(o, (const char *const *)r->block_ops);
        hg_convert_options_set_block_nodes(o, (const char *const *)r->block_nodes);
        hg_convert_options_set_force_fp16_nodes(o, (const char *const *)r->force_nodes);
        hg_convert_options_set_keep_io_types(o, r->keep_io);
        HgPipelineOptions po = {(const char *const *)r->pass_list, r->dump_after, dump};
        g_autoptr(DotSnapshot) before = r->dot ? dot_snapshot(m->graph) : NULL;
        /* The output will have a data file: lower writes the converted weights into it directly. */
        hg_model_plan_output(m, out, r->external);
        result = hg_convert(m, o, &po, &error);
        if (result && sens_inputs && sens_inputs->len && inputs_rounded(m->graph, sens_inputs))
            print_line(stderr, "%s: warning: rounding its inputs to FP16, as this conversion does, moves output '%s' "
                       "by rel-L2 %.3g in FP32 (a synthetic input in the ranges): FP32 itself is that sensitive, so "
                       "no conversion that rounds them can agree with it more closely (verify's default --l2-tol is "
                       "1e-2)", in, sens_output ? sens_output : "", sens_rel);
        /* Only --results tells converted and unchanged apart: the comparison reads both files (with
         * --skip-existing, before the options hash makes them differ). */
        gboolean same = result && r->results && r->options_hash && bulk_model_is_file(m, in);
        if (result && r->options_hash)
            bulk_model_set_options(m, r->options_hash);
        g_autofree char *title = g_strdup_printf("halfguard convert %s -> %s", in, out);
        if (result && (!hg_model_save_external(m, out, r->external, &error) ||
                       (r->report && !hg_convert_result_write_report(result, in, r->report, &error)) ||
                       (r->trtexec && !write_trtexec(result, r->trtexec, &error)) ||
                       (r->dot && !dot_write_convert(r->dot, m->graph, before, title, &error))))
            g_clear_pointer(&result, hg_convert_result_free);
        same = same || (result && r->results && !r->options_hash && bulk_same_bytes(in, out));
        rec->status = same ? BULK_UNCHANGED : BULK_CONVERTED;
    }
    if (dump->len)
        fputs(dump->str, stdout);
    if (!result) {
        report_error(error->code == HG_ERROR_USAGE ? NULL : in, error);
        rec->status = BULK_ERROR;
        rec->message = g_strdup(error->message);
        rec->stop = error->code == HG_ERROR_USAGE; /* the same for every model */
        return;
    }
    report_derived(in, result->inputs);
    report_unranged(in, result->inputs, use, ms.samples->len > 0, &syn, r->an->seed,
                    ms.cfg ? hg_check_config_path(ms.cfg) : NULL);
    g_autofree char *summary = hg_convert_result_summary(result);
    if (!cli_quiet)
        print_line(info, "%s -> %s: %s", in, out, summary);
    /* What the user should know without -v: ops halfguard does not know, kept FP32. */
    for (guint i = 0; !cli_quiet && i < result->notes->len; i++) {
        const HgPassNote *note = result->notes->pdata[i];
        if (g_strcmp0(note->pass, "assign_precision") == 0 && g_str_has_prefix(note->message, "kept "))
            print_line(stderr, "%s: note: %s", in, note->message);
    }
    g_autofree char *details = cli_verbose && !cli_quiet ? hg_convert_result_details(result, "  ") : NULL;
    if (details) /* its names are escaped: one item, one line */
        fputs(details, info);
    *rec = (BulkRecord){rec->status, NULL, result->planned, result->macs_total, result->macs_fp16, result->weight_bytes_total,
                        result->weight_bytes_fp16, result->n_fp32_islands, result->n_casts, 0};
    for (guint i = 0; result->decisions && i < result->decisions->len; i++) {
        const HgDecision *d = result->decisions->pdata[i];
        rec->hazards += d->fp32 && d->reason && hg_hazard_kind_from_name(d->reason) >= 0;
    }
}

/* A model done, in the list's order (bulk_run's BulkDoneFunc). */
static void
convert_done(guint index, const BulkItem *it, const BulkRecord *rec, gpointer data)
{
    (void)index;
    ConvertRun *r = data;
    if (rec->status == BULK_ERROR)
        r->rc = EXIT_ERROR;
    if (!r->results)
        return;
    g_autofree char *line = bulk_result_line(it, rec);
    g_autoptr(GError) error = NULL;
    if (strcmp(r->results, "-") != 0)
        g_string_append(r->lines, line);
    else if (!hg_write_file("-", line, strlen(line), &error))
        report_error(NULL, error);
}

/* --external-data's value, or -1. */
static int
parse_external_data(const char *s)
{
    return !strcmp(s, "auto") ? HG_EXTERNAL_AUTO : !strcmp(s, "always") ? HG_EXTERNAL_ALWAYS
           : !strcmp(s, "never") ? HG_EXTERNAL_NEVER : -1;
}

static int
cmd_convert(int argc, char **argv)
{
    const Command *cmd = find_command("convert");
    char *output = NULL, *output_dir = NULL, *passes = NULL, *dump_after = NULL, *report = NULL, *from = NULL;
    char *results = NULL, *shard = NULL, *trtexec = NULL, *dot = NULL, *external_data = NULL;
    guint shard_i = 1, shard_n = 1;
    int external = HG_EXTERNAL_AUTO;
    char **block_ops = NULL, **block_nodes = NULL, **force_nodes = NULL;
    Analysis an = ANALYSIS_INIT;
    gboolean keep_io = FALSE, strict_lfs = FALSE, skip_existing = FALSE, no_probe = FALSE;
    int jobs = 0;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the model to FILE (one input; - for standard output)", "FILE"},
        {"output-dir", 'O', 0, G_OPTION_ARG_FILENAME, &output_dir,
         "Write each model to DIR at its path below the folder given (or the inputs' common folder)", "DIR"},
        {"from", 0, 0, G_OPTION_ARG_FILENAME, &from,
         "Also convert the models (or folders) FILE lists, one a line (- for standard input)", "FILE"},
        {"strict-lfs", 0, 0, G_OPTION_ARG_NONE, &strict_lfs,
         "A Git LFS pointer is an error, not a skipped file", NULL},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Convert N models at once in N worker processes (default: the number of cores)", "N"},
        {"results", 0, 0, G_OPTION_ARG_FILENAME, &results,
         "Write one JSON line per model, in the inputs' order, to FILE (- for stdout)", "FILE.jsonl"},
        {"skip-existing", 0, 0, G_OPTION_ARG_NONE, &skip_existing,
         "Skip a model whose output is newer and was made with the same options (a hash in its metadata)",
         NULL},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
         "Convert only the I-th of N shares of the models (the K-th model, from 0, goes to K mod N + 1)", "I/N"},
        {"external-data", 0, 0, G_OPTION_ARG_STRING, &external_data,
         "Initializers in OUT.data beside the model: auto (when the input had external data or the model "
         "would pass 2 GiB), always, never (default: auto)", "WHEN"},
        ANALYSIS_ENTRIES(an),
        {"keep-io-types", 0, 0, G_OPTION_ARG_NONE, &keep_io,
         "Graph inputs and outputs keep their element types (Casts inside the model)", NULL},
        /* AutoCast's and onnxconverter-common's spelling, which their users type */
        {"keep_io_types", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &keep_io, NULL, NULL},
        {"block-op", 0, 0, G_OPTION_ARG_STRING_ARRAY, &block_ops,
         "Keep every node of op TYPE FP32 (repeatable; AutoCast: --op_types_to_exclude)", "TYPE"},
        {"block-node", 0, 0, G_OPTION_ARG_STRING_ARRAY, &block_nodes,
         "Keep nodes whose name matches REGEX FP32 (repeatable; AutoCast: --nodes_to_exclude)", "REGEX"},
        /* AutoCast's spellings (one value each: repeat the option for several) */
        {"op_types_to_exclude", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &block_ops, NULL, NULL},
        {"nodes_to_exclude", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &block_nodes, NULL, NULL},
        {"force-fp16-node", 0, 0, G_OPTION_ARG_STRING_ARRAY, &force_nodes,
         "Run nodes whose name matches REGEX in FP16 whatever the analysis says (repeatable)", "REGEX"},
        {"no-probe", 0, 0, G_OPTION_ARG_NONE, &no_probe,
         "Without --calib or --stats, decide from the ranges alone: run no synthetic probe for activations too "
         "small for FP16", NULL},
        {"report", 0, 0, G_OPTION_ARG_FILENAME, &report,
         "Write every decision with its reason and interval to FILE (JSON; one input; - for stdout)",
         "FILE.json"},
        {"dot", 0, 0, G_OPTION_ARG_FILENAME, &dot,
         "Draw the result with Graphviz to FILE: FP32 islands, Casts, rewritten nodes, FP16 runs folded "
         "(DOT; SVG when FILE ends in .svg; one input)", "FILE"},
        {"emit-trtexec", 0, 0, G_OPTION_ARG_FILENAME, &trtexec,
         "Write trtexec's flags for a weakly typed FP16 build (TensorRT <= 10.11: --fp16 and "
         "--layerPrecisions for the FP32 nodes) to FILE (one input; - for stdout)", "FILE"},
        {"passes", 0, 0, G_OPTION_ARG_STRING, &passes,
         "Comma-separated passes to run, or 'none' (default: all, in pipeline order)", "LIST"},
        {"dump-after", 0, 0, G_OPTION_ARG_STRING, &dump_after,
         "Print the graph's text form to stdout after PASS", "PASS"},
        OUTPUT_ENTRIES,
        {NULL},
    };
    int rc = EXIT_OK;
    g_auto(GStrv) pass_list = NULL;
    g_autoptr(GPtrArray) items = NULL;
    g_autoptr(GError) list_error = NULL;
    const char *usage;
    int stdout_users;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        goto out;
    stdout_users = (output && strcmp(output, "-") == 0) + (report && strcmp(report, "-") == 0) +
                   (dump_after != NULL) + (results && strcmp(results, "-") == 0) +
                   (trtexec && strcmp(trtexec, "-") == 0);
    items = argc >= 2 || from ? bulk_collect(argv + 1, argc - 1, from, output_dir, output_dir != NULL, &list_error) : NULL;
    if ((argc >= 2 || from) && !items) {
        report_error(NULL, list_error);
        rc = EXIT_ERROR;
        goto out;
    }
    if (external_data && (external = parse_external_data(external_data)) < 0) {
        fprintf(stderr, "halfguard convert: --external-data wants auto, always or never, not '%s'\n"
                "Try 'halfguard help convert'.\n", external_data);
        rc = EXIT_ERROR;
        goto out;
    }
    if (shard && !bulk_shard_parse(shard, &shard_i, &shard_n, &list_error)) {
        fprintf(stderr, "halfguard convert: %s\nTry 'halfguard help convert'.\n", list_error->message);
        rc = EXIT_ERROR;
        goto out;
    }
    usage = !items || !items->len     ? "no input model"
            : output && output_dir    ? "give -o or -O, not both"
            : !output && !output_dir  ? "say where to write: -o FILE or -O DIR"
            : output && items->len > 1 ? "-o takes one input; use -O DIR for several"
            : report && items->len > 1 ? "--report takes one input"
            : trtexec && items->len > 1 ? "--emit-trtexec takes one input"
            : dot && items->len > 1   ? "--dot takes one input"
            : stdout_users > 1        ? "only one of -o -, --report -, --results -, --emit-trtexec - and --dump-after "
                                        "may use stdout"
            : cli_verbose && cli_quiet ? "give -v or -q, not both"
            : jobs < 0                ? "--jobs takes a count, 1 or more (0: the number of cores)"
                                      : NULL;
    if (usage) {
        fprintf(stderr, "halfguard convert: %s\nTry 'halfguard help convert'.\n", usage);
        rc = EXIT_ERROR;
        goto out;
    }
    if (!analysis_prepare(&an, cmd)) {
        rc = EXIT_ERROR;
        goto out;
    }
    pass_list = passes ? g_strsplit(passes, ",", -1) : NULL;
    {
        /* A pass that does not exist is an error of the command, not of each model: said once, and
         * nothing is converted (with -j N, workers would otherwise each start a model first). */
        HgPipelineOptions names = {(const char *const *)pass_list, dump_after, NULL};
        g_autoptr(GError) names_error = NULL;
        if (!hg_pipeline_check_names(&names, &names_error)) {
            report_error(NULL, names_error);
            rc = EXIT_ERROR;
            goto out;
        }
    }
    if (output_dir && g_mkdir_with_parents(output_dir, 0755) != 0) {
        print_line(stderr, "%s: cannot create: %s", output_dir, g_strerror(errno));
        rc = EXIT_ERROR;
        goto out;
    }
    {
        g_autoptr(GString) lines = g_string_new(NULL);
        /* What does not shape the output model stays out of the hash. */
        static const char *const not_hashed[] = {"output", "output-dir", "from", "strict-lfs", "jobs", "results",
                                                 "skip-existing", "shard", "report", "emit-trtexec",
                                                 "dump-after", "threads", "dot", NULL};
        g_autofree char *hash = skip_existing ? bulk_options_hash(entries, not_hashed, hg_version()) : NULL;
        ConvertRun run = {&an,       output,      output_dir,  report,    dump_after, dot, trtexec, keep_io,
                          strict_lfs, stdout_users > 0, block_ops, block_nodes, force_nodes, pass_list,
                          results,   hash,        lines,       EXIT_OK};
        run.external = (HgExternalData)external;
        run.no_probe = no_probe;
        bulk_shard(items, shard_i, shard_n); /* after the usage checks: a shard may be empty */
        for (guint i = 0; i < items->len; i++) {
            BulkItem *it = items->pdata[i];
            it->output = output ? g_strdup(output) : g_build_filename(output_dir, it->rel, NULL);
        }
        bulk_run(items, jobs ? (guint)jobs : bulk_default_jobs(), convert_one, convert_done, &run);
        rc = run.rc;
        g_autoptr(GError) error = NULL;
        if (results && strcmp(results, "-") != 0 && !hg_write_file(results, lines->str, lines->len, &error)) {
            report_error(NULL, error);
            rc = EXIT_ERROR;
        }
    }
out:
    analysis_clear(&an);
    g_strfreev(block_ops);
    g_strfreev(block_nodes);
    g_strfreev(force_nodes);
    g_free(output);
    g_free(output_dir);
    g_free(passes);
    g_free(dump_after);
    g_free(report);
    g_free(dot);
    g_free(from);
    g_free(results);
    g_free(shard);
    g_free(trtexec);
    g_free(external_data);
    return rc;
}

/* ---------------------------------------------------------------- dump */

static int
cmd_dump(int argc, char **argv)
{
    const Command *cmd = find_command("dump");
    gint64 max_elements = 0;
    gboolean all = FALSE;
    GOptionEntry entries[] = {
        {"max-elements", 0, 0, G_OPTION_ARG_INT64, &max_elements,
         "Summarise initializers with more than N elements (default 64)", "N"},
        {"full", 0, 0, G_OPTION_ARG_NONE, &all, "Print every initializer in full", NULL},
        {NULL},
    };
    int rc = EXIT_OK;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        return rc;
    if (argc < 2) {
        fprintf(stderr, "halfguard dump: no input model\nTry 'halfguard help dump'.\n");
        return EXIT_ERROR;
    }
    HgTextOptions to = {all ? G_MAXINT64 : max_elements};
    for (int i = 1; i < argc; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(HgModel) m = hg_model_load(argv[i], &error);
        if (!m) {
            report_error(argv[i], error);
            rc = EXIT_ERROR;
            continue;
        }
        report_warnings(argv[i], m, NULL);
        g_autofree char *text = hg_model_to_text(m, &to);
        fputs(text, stdout);
    }
    return rc;
}

/* ---------------------------------------------------------------- inspect */

static int
cmd_inspect(int argc, char **argv)
{
    const Command *cmd = find_command("inspect");
    char *format = NULL;
    gboolean ini = FALSE;
    GOptionEntry entries[] = {
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "text (default) or json", "FMT"},
        {"ini", 0, 0, G_OPTION_ARG_NONE, &ini, "Print a .halfguard.ini skeleton for the model instead", NULL},
        {NULL},
    };
    int rc = EXIT_OK;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        return rc;
    g_autofree char *fmt = format;
    if (argc < 2 || (fmt && strcmp(fmt, "text") != 0 && strcmp(fmt, "json") != 0) || (ini && argc != 2)) {
        fprintf(stderr, "halfguard inspect: %s\nTry 'halfguard help inspect'.\n",
                argc < 2 ? "no input model" : ini && argc != 2 ? "--ini takes one model"
                                                               : "--format must be text or json");
        return EXIT_ERROR;
    }
    gboolean json = fmt && strcmp(fmt, "json") == 0;
    for (int i = 1; i < argc; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(HgModel) m = hg_model_load(argv[i], &error);
        g_autofree char *text = !m ? NULL : ini ? hg_inspect_ini(m, argv[i], &error) : hg_inspect(m, argv[i], json, &error);
        if (!text) {
            report_error(argv[i], error);
            rc = EXIT_ERROR;
            continue;
        }
        report_warnings(argv[i], m, NULL);
        fputs(text, stdout);
        if (json)
            fputc('\n', stdout);
    }
    return rc;
}

/* ---------------------------------------------------------------- run */

/* A size: digits with an optional K, M, G or T (powers of 1024), "B" or "iB" after it allowed.
 * FALSE when s is not one or is 0. */
static gboolean
parse_size(const char *s, guint64 *out)
{
    char *end = NULL;
    if (!s || !g_ascii_isdigit(*s))
        return FALSE;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    guint shift = 0;
    switch (g_ascii_toupper(*end)) {
    case 'K': shift = 10, end++; break;
    case 'M': shift = 20, end++; break;
    case 'G': shift = 30, end++; break;
    case 'T': shift = 40, end++; break;
    default: break;
    }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B')
        end++;
    if (*end || v == 0 || v > (G_MAXUINT64 >> shift))
        return FALSE;
    *out = v << shift;
    return TRUE;
}

/* run --time: one timing each is kept, and a run takes at least microseconds. */
#define MAX_TIMED_RUNS 1000000

static int
cmd_run(int argc, char **argv)
{
    const Command *cmd = find_command("run");
    char *data = NULL, *output = NULL, *format = NULL, *outputs = NULL, *max_memory = NULL;
    gboolean mark_all = FALSE;
    int threads = 0, repeat = 0;
    GOptionEntry entries[] = {
        {"data", 'd', 0, G_OPTION_ARG_FILENAME, &data,
         "Folder of inputs: input_K.pb (ONNX test-data layout) or NAME.npy", "DIR"},
        {"time", 0, 0, G_OPTION_ARG_INT, &repeat,
         "Time N runs after a warm-up and print each in milliseconds (writes no outputs)", "N"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Folder for output_K.pb files", "DIR"},
        {"format", 0, 0, G_OPTION_ARG_STRING, &format, "Output files: pb (default) or npy", "FMT"},
        {"mark-all", 0, 0, G_OPTION_ARG_NONE, &mark_all,
         "Also write every intermediate float tensor, with index.json", NULL},
        {"outputs", 0, 0, G_OPTION_ARG_STRING, &outputs,
         "Comma-separated values to write instead of the graph outputs (only what they need runs)",
         "NAMES"},
        {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "Threads for BLAS kernels (default: all cores)", "N"},
        {"max-memory", 0, 0, G_OPTION_ARG_STRING, &max_memory,
         "Cap on the live tensors, e.g. 4G (default: half the physical memory)", "SIZE"},
        {NULL},
    };
    int rc = EXIT_OK;
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = NULL;
    g_auto(GStrv) wanted = NULL;
    HgTensorFormat fmt = HG_FORMAT_PB;
    guint64 cap = 0;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        goto out;
    if (format && strcmp(format, "npy") == 0)
        fmt = HG_FORMAT_NPY;
    else if (format && strcmp(format, "pb") != 0) {
        print_line(stderr, "halfguard run: --format takes pb or npy, not '%s'", format);
        rc = EXIT_ERROR;
        goto out;
    }
    if (max_memory && !parse_size(max_memory, &cap)) {
        print_line(stderr, "halfguard run: --max-memory takes a size such as 4G or 512M, not '%s'", max_memory);
        rc = EXIT_ERROR;
        goto out;
    }
    hg_run_set_default_max_memory(cap);
    if (argc != 2 || !data || (!output && !repeat) || threads < 0 || repeat < 0 || repeat > MAX_TIMED_RUNS) {
        fprintf(stderr, "halfguard run: %s\nTry 'halfguard help run'.\n",
                argc != 2                   ? "give one model"
                : threads < 0 || repeat < 0 ? "--threads and --time take positive numbers"
                : repeat > MAX_TIMED_RUNS   ? "--time takes at most " G_STRINGIFY(MAX_TIMED_RUNS) " runs"
                                            : "give --data DIR and -o OUTDIR");
        rc = EXIT_ERROR;
        goto out;
    }
    m = hg_model_load(argv[1], &error);
    if (!m) {
        report_error(argv[1], error);
        rc = EXIT_ERROR;
        goto out;
    }
    report_warnings(argv[1], m, NULL);
    wanted = outputs ? g_strsplit(outputs, ",", -1) : NULL;
    for (guint i = 0; wanted && (!wanted[0] || wanted[i]); i++) {
        if (!wanted[i] || !*wanted[i]) {
            fprintf(stderr, "halfguard run: --outputs takes a comma-separated list of value names\n");
            rc = EXIT_ERROR;
            goto out;
        }
    }
    if (repeat) {
        g_autofree double *ms = g_new0(double, repeat);
        if (!hg_run_timed(m, data, (const char *const *)wanted, threads, (guint)repeat, ms, &error)) {
            report_error(argv[1], error);
            rc = EXIT_ERROR;
            goto out;
        }
        for (int i = 0; i < repeat; i++)
            printf("run %d: %.3f ms\n", i + 1, ms[i]);
        goto out;
    }
    if (!hg_run_to_dir(m, data, output, (const char *const *)wanted, fmt, mark_all, threads, &error)) {
        report_error(argv[1], error);
        rc = EXIT_ERROR;
    }
out:
    g_free(data);
    g_free(output);
    g_free(format);
    g_free(outputs);
    g_free(max_memory);
    return rc;
}

/* ---------------------------------------------------------------- calibrate */

/* Samples of m drawn by hg_synth_feeds with co: n of them, seeds seed, seed + 1, ... (HgSample*,
 * labelled "synthetic K (seed S)"), appended to out. */
static gboolean
synthetic_samples(HgModel *m, const HgCheckOptions *co, guint n, gint64 seed, GPtrArray *out, GError **error)
{
    for (guint k = 0; k < n; k++) {
        GPtrArray *feeds = hg_synth_feeds(m, co, (guint64)seed + k, error);
        if (!feeds)
            return FALSE;
        HgSample *smp = g_new0(HgSample, 1);
        smp->label = g_strdup_printf("synthetic %u (seed %" G_GINT64_FORMAT ")", k, seed + (gint64)k);
        smp->feeds = feeds;
        g_ptr_array_add(out, smp);
    }
    return TRUE;
}

/* Every sample of sources fitted to m, appended to out (HgSample*). */
static gboolean
source_samples(HgModel *m, const GPtrArray *sources, GPtrArray *out, GError **error)
{
    for (guint i = 0; i < sources->len; i++) {
        g_autoptr(GPtrArray) part = hg_samples_feeds(sources->pdata[i], m, TRUE, error);
        if (!part)
            return FALSE;
        while (part->len)
            g_ptr_array_add(out, g_ptr_array_steal_index(part, 0));
    }
    return TRUE;
}

/* Write samples as input sets dir/K/input_J.pb (K from 0, J in feed order). */
static gboolean
write_sets(const GPtrArray *samples, const char *dir, GError **error)
{
    for (guint k = 0; k < samples->len; k++) {
        const HgSample *smp = samples->pdata[k];
        g_autofree char *sub = g_strdup_printf("%s/%u", dir, k);
        if (g_mkdir_with_parents(sub, 0755) != 0) {
            int e = errno;
            g_set_error(error, HG_ERROR, HG_ERROR_OUTPUT, "%s: cannot create: %s", sub, g_strerror(e));
            return FALSE;
        }
        for (guint j = 0; j < smp->feeds->len; j++) {
            g_autofree char *path = g_strdup_printf("%s/input_%u.pb", sub, j);
            if (!hg_tensor_save_pb_file(smp->feeds->pdata[j], path, error))
                return FALSE;
        }
    }
    return TRUE;
}

static int
cmd_calibrate(int argc, char **argv)
{
    const Command *cmd = find_command("calibrate");
    char *output = NULL, *output_dir = NULL;
    int threads = 0;
    Analysis a = ANALYSIS_INIT;
    GOptionEntry entries[] = {
        {"data", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &a.calib,
         "Inputs: a folder laid out as for 'run' (or a folder of such folders), an .npz, or Polygraphy "
         "--save-inputs JSON (repeatable)", "DATA"},
        {"random", 0, 0, G_OPTION_ARG_INT, &a.calib_random,
         "Draw N synthetic input sets in the input ranges (a float input without one: uniform in "
         "[-64, 64])", "N"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &a.seed, "Seed of the synthetic inputs (default 0)", "S"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "The statistics file (JSON; - for standard output)", "FILE"},
        {"output-dir", 'O', 0, G_OPTION_ARG_FILENAME, &output_dir,
         "Write the input sets to DIR/K/input_J.pb, to inspect, edit and reuse with --calib DIR", "DIR"},
        INPUT_ENTRIES(a),
        CONFIG_ENTRIES(a),
        {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "Threads for BLAS kernels (default: all cores)", "N"},
        {NULL},
    };
    int rc = EXIT_OK;
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) m = NULL;
    g_autoptr(GPtrArray) samples = NULL;
    g_autoptr(GPtrArray) drawn = NULL;
    g_autoptr(HgStats) st = NULL;
    g_auto(ModelSetup) ms = {0};
    const char *usage;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        goto out;
    usage = argc != 2                  ? "give one model"
            : threads < 0              ? "--threads must be positive"
            : !output && !output_dir   ? "say what to write: -o stats.json and/or -O DIR"
                                       : NULL;
    if (usage) {
        fprintf(stderr, "halfguard calibrate: %s\nTry 'halfguard help calibrate'.\n", usage);
        rc = EXIT_ERROR;
        goto out;
    }
    if (!analysis_prepare(&a, cmd)) {
        rc = EXIT_ERROR;
        goto out;
    }
    m = hg_model_load(argv[1], &error);
    if (!m || !model_setup(&a, m, argv[1], &ms, &error)) {
        report_error(argv[1], error);
        rc = EXIT_ERROR;
        goto out;
    }
    report_warnings(argv[1], m, NULL);
    if (!ms.samples->len && a.calib_random <= 0) {
        fprintf(stderr, "halfguard calibrate: give --data DATA or --random N (or calib = DATA in a [model] "
                        "group of .halfguard.ini)\nTry 'halfguard help calibrate'.\n");
        rc = EXIT_ERROR;
        goto out;
    }
    samples = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
    drawn = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
    if (!source_samples(m, ms.samples, samples, &error) ||
        !synthetic_samples(m, &ms.co, a.calib_random > 0 ? (guint)a.calib_random : 0, a.seed, drawn, &error)) {
        report_error(argv[1], error);
        rc = EXIT_ERROR;
        goto out;
    }
    if (drawn->len) {
        g_autoptr(GPtrArray) inputs = hg_check_inputs(m, &ms.co, NULL);
        Synthetic syn = {drawn->len, FALSE, NULL};
        report_unranged(argv[1], inputs, NULL, samples->len > 0, &syn, a.seed,
                        ms.cfg ? hg_check_config_path(ms.cfg) : NULL);
    }
    if (output) {
        /* Synthetic statistics count as such (hg_stats_collect_synthetic draws what synthetic_samples
         * drew: the same seeds). */
        st = samples->len ? cli_collect_samples(m, samples, threads, &error) : hg_stats_new();
        g_autoptr(HgStats) syn_st =
            st && drawn->len ? cli_collect_synthetic(m, &ms.co, drawn->len, (guint64)a.seed, threads, &error)
                             : NULL;
        if (syn_st)
            hg_stats_merge(st, syn_st);
        if (!st || (drawn->len && !syn_st) || !hg_stats_save(st, output, &error)) {
            report_error(argv[1], error);
            rc = EXIT_ERROR;
            goto out;
        }
    }
    if (output_dir) {
        while (drawn->len)
            g_ptr_array_add(samples, g_ptr_array_steal_index(drawn, 0));
        if (!write_sets(samples, output_dir, &error)) {
            report_error(NULL, error);
            rc = EXIT_ERROR;
        }
    }
out:
    analysis_clear(&a);
    g_free(output);
    g_free(output_dir);
    return rc;
}

/* ---------------------------------------------------------------- check */

typedef struct {
    Analysis an;
    gboolean strict_lfs, show_fixed;
    char *dot; /* --dot FILE */
} CheckArgs;

/* Check one model into *f; returns the result (NULL on error or skip, with f filled in). */
static HgCheckResult *
check_one(CheckArgs *a, const char *path, HgCheckFile *f, char **message)
{
    g_autoptr(GError) error = NULL;
    f->file = path;
    g_autoptr(HgModel) m = hg_model_load(path, &error);
    if (!m && error->code == HG_ERROR_LFS && !a->strict_lfs) {
        f->status = HG_CHECK_SKIPPED;
        *message = g_strdup("Git LFS pointer, not a model: skipped (--strict-lfs makes this an error)");
        print_line(stderr, "%s: note: %s", path, *message);
        return NULL;
    }
    HgCheckResult *r = NULL;
    HgStats *stats = NULL;
    g_autoptr(HgStats) calib = NULL;
    g_auto(Synthetic) syn = {0};
    g_auto(ModelSetup) ms = {0};
    const HgCheckConfig *cfg = NULL;
    if (m && model_setup(&a->an, m, path, &ms, &error)) {
        cfg = ms.cfg;
        report_warnings(path, m, &ms.co);
        HgCheckOptions o = ms.co;
        if (model_stats(m, &a->an, &ms, FALSE, &stats, &calib, &syn, &error)) {
            o.stats = stats;
            r = hg_check(m, &o, &error);
            if (r && !hg_check_mark_fixed(m, &o, r, &error))
                g_clear_pointer(&r, hg_check_result_free);
        }
        if (r && cfg)
            hg_check_config_suppress(cfg, path, r);
        /* Drawn here: the hazards point into m. */
        g_autofree char *title = g_strdup_printf("halfguard check %s", path);
        if (r && a->dot && !dot_write_check(a->dot, m->graph, r, title, &error))
            g_clear_pointer(&r, hg_check_result_free);
    }
    if (!r) {
        f->status = HG_CHECK_ERROR;
        *message = g_strdup(error->message);
        report_error(path, error);
        return NULL;
    }
    f->status = hg_check_result_count(r) ? HG_CHECK_HAZARDS : HG_CHECK_CLEAN;
    f->result = r;
    report_unranged(path, r->inputs, stats, ms.samples->len > 0, &syn, a->an.seed,
                    cfg ? hg_check_config_path(cfg) : NULL);
    report_derived(path, r->inputs);
    report_unknown_ops(path, r);
    report_fixed(path, r, a->show_fixed);
    return r;
}

static int
cmd_check(int argc, char **argv)
{
    const Command *cmd = find_command("check");
    char *format = NULL, *fail_on = NULL;
    gboolean show_suppressed = FALSE;
    guint fail_mask = ~0u;
    CheckArgs a = {ANALYSIS_INIT, FALSE, FALSE, NULL};
    GOptionEntry entries[] = {
        ANALYSIS_ENTRIES(a.an),
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text, json or sarif (default text)",
         "FORMAT"},
        {"strict-lfs", 0, 0, G_OPTION_ARG_NONE, &a.strict_lfs,
         "A Git LFS pointer is an error, not a skipped file", NULL},
        {"show-suppressed", 0, 0, G_OPTION_ARG_NONE, &show_suppressed,
         "Also print suppressed hazards (text format)", NULL},
        {"show-fixed", 0, 0, G_OPTION_ARG_NONE, &a.show_fixed,
         "Also print the hazards convert rewrites away by itself (text format; never counted)", NULL},
        {"dot", 0, 0, G_OPTION_ARG_FILENAME, &a.dot,
         "Draw the model with Graphviz to FILE, hazards marked, runs without findings folded (DOT; SVG "
         "when FILE ends in .svg; one model)", "FILE"},
        {"fail-on", 0, 0, G_OPTION_ARG_STRING, &fail_on,
         "Exit 1 only for these: levels (error, warning, note) and kinds, comma-separated (default: all)",
         "LIST"},
        OUTPUT_ENTRIES,
        {NULL},
    };
    int rc = EXIT_OK;
    g_autoptr(GError) fail_error = NULL;
    g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)hg_check_result_free);
    g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func(g_free);
    g_autofree HgCheckFile *files = NULL;
    g_autofree char *summary = NULL;
    const char *fmt, *usage;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        goto out;
    fmt = format ? format : "text";
    usage = argc < 2 ? "no input model"
                        : strcmp(fmt, "text") && strcmp(fmt, "json") && strcmp(fmt, "sarif")
                            ? "--format must be text, json or sarif"
                        : cli_verbose && cli_quiet ? "give -v or -q, not both"
                            : NULL;
    if (!usage && fail_on && !hg_check_fail_on_parse(fail_on, &fail_mask, &fail_error))
        usage = fail_error->message;
    if (!usage && a.dot && argc > 2)
        usage = "--dot takes one model";
    if (usage) {
        fprintf(stderr, "halfguard check: %s\nTry 'halfguard help check'.\n", usage);
        rc = EXIT_ERROR;
        goto out;
    }
    if (!analysis_prepare(&a.an, cmd)) {
        rc = EXIT_ERROR;
        goto out;
    }
    files = g_new0(HgCheckFile, argc);
    for (int i = 1; i < argc; i++) {
        char *msg = NULL;
        HgCheckResult *r = check_one(&a, argv[i], &files[i - 1], &msg);
        if (r)
            g_ptr_array_add(results, r);
        if (msg)
            g_ptr_array_add(messages, msg);
        files[i - 1].message = msg;
        if (files[i - 1].status == HG_CHECK_ERROR)
            rc = EXIT_ERROR;
        else if (files[i - 1].status == HG_CHECK_HAZARDS && rc == EXIT_OK && hg_check_result_count_kinds(r, fail_mask))
            rc = EXIT_FINDINGS;
        if (strcmp(fmt, "text") == 0 && !cli_quiet) {
            /* Identical hazards on one line, unless -v. */
            g_autofree char *text = hg_check_format_text(
                &files[i - 1], 1,
                (show_suppressed ? HG_CHECK_SHOW_SUPPRESSED : 0u) | (a.show_fixed ? HG_CHECK_SHOW_FIXED : 0u) |
                    (cli_verbose ? 0u : HG_CHECK_GROUP));
            g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
            for (guint k = 0; lines[k] && *lines[k]; k++) {
                g_autofree char *shown = cli_colourize(stdout, lines[k]);
                printf("%s\n", shown);
            }
        }
    }
    /* The count by kind, for people and hooks, after the findings (stdout stays one finding a line). */
    summary = cli_quiet ? NULL : hg_check_summary(files, (guint)argc - 1);
    if (summary) {
        fflush(stdout);
        print_line(stderr, "halfguard check: %s", summary);
    }
    if (strcmp(fmt, "text") != 0) {
        g_autofree char *text = strcmp(fmt, "json") == 0 ? hg_check_format_json(files, argc - 1)
                                                         : hg_check_format_sarif(files, argc - 1);
        fputs(text, stdout);
    }
out:
    analysis_clear(&a.an);
    g_free(a.dot);
    g_free(format);
    g_free(fail_on);
    return rc;
}

/* ---------------------------------------------------------------- verify */

/* The progress line over verify's samples (HgVerifyOptions.progress; data: the CliProgress). */
static void
verify_progress(guint done, guint total, const char *label, gpointer data)
{
    (void)total;
    cli_progress_step(data, done, label);
}

static int
cmd_verify(int argc, char **argv)
{
    const Command *cmd = find_command("verify");
    char *format = NULL, *outputs = NULL;
    double l2_tol = HG_VERIFY_DEFAULT_L2_TOL, atol = -G_MAXDOUBLE, rtol = -G_MAXDOUBLE; /* not given */
    int threads = 0;
    Analysis a = ANALYSIS_INIT;
    GOptionEntry entries[] = {
        {"data", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &a.calib,
         "Inputs: a folder laid out as for 'run' (or a folder of such folders), an .npz, or Polygraphy "
         "--save-inputs JSON (repeatable)", "DATA"},
        {"random", 0, 0, G_OPTION_ARG_INT, &a.calib_random,
         "Also compare on N synthetic input sets drawn in the input ranges (a float input without one: "
         "uniform in [-64, 64])", "N"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &a.seed, "Seed of the synthetic inputs (default 0)", "S"},
        INPUT_ENTRIES(a),
        CONFIG_ENTRIES(a),
        {"l2-tol", 0, 0, G_OPTION_ARG_DOUBLE, &l2_tol,
         "Largest relative L2 error an output may have, over all its elements (default 1e-2)", "L"},
        {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &atol,
         "Per element, as Polygraphy: pass when |conv-orig| <= A + R*|orig| (default 1e-5 once either is given)",
         "A"},
        {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &rtol, "Per element: R above (default 1e-5 once either is given)", "R"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text or json (default text)",
         "FORMAT"},
        {"outputs", 0, 0, G_OPTION_ARG_STRING, &outputs,
         "Compare these values (comma-separated) instead of the graph outputs", "NAMES"},
        {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "Threads for BLAS kernels (default: all cores)", "N"},
        {NULL},
    };
    int rc = EXIT_OK;
    g_autoptr(GError) error = NULL;
    g_autoptr(HgModel) orig = NULL;
    g_autoptr(HgModel) conv = NULL;
    g_autoptr(HgVerifyReport) r = NULL;
    g_autoptr(GPtrArray) samples = NULL;
    g_auto(GStrv) names = NULL;
    g_auto(ModelSetup) ms = {0};
    g_autofree char *text = NULL;
    HgVerifyOptions vo;
    CliProgress progress;
    const char *usage;
    if (!parse_options(cmd, entries, &argc, &argv, &rc))
        goto out;
    usage = argc != 3                                          ? "give two models: ORIG CONVERTED"
            : !(l2_tol >= 0)                                   ? "--l2-tol must be a number >= 0"
            : !(atol >= 0 || atol == -G_MAXDOUBLE) || !(rtol >= 0 || rtol == -G_MAXDOUBLE)
                                                               ? "--atol and --rtol must be numbers >= 0"
            : threads < 0                                      ? "--threads must be positive"
            : format && strcmp(format, "text") && strcmp(format, "json") ? "--format must be text or json"
                                                               : NULL;
    if (usage) {
        fprintf(stderr, "halfguard verify: %s\nTry 'halfguard help verify'.\n", usage);
        rc = EXIT_ERROR;
        goto out;
    }
    if (!analysis_prepare(&a, cmd)) {
        rc = EXIT_ERROR;
        goto out;
    }
    for (int i = 1; i <= 2; i++) {
        HgModel *m = hg_model_load(argv[i], &error);
        if (!m) {
            report_error(argv[i], error);
            rc = EXIT_ERROR;
            goto out;
        }
        report_warnings(argv[i], m, NULL);
        *(i == 1 ? &orig : &conv) = m;
    }
    /* The data: --data, else the configuration's calib for ORIG; and --random N sets. */
    if (!model_setup(&a, orig, argv[1], &ms, &error)) {
        report_error(argv[1], error);
        rc = EXIT_ERROR;
        goto out;
    }
    if (!ms.samples->len && a.calib_random <= 0) {
        fprintf(stderr, "halfguard verify: give --data DATA (one or more) or --random N (or calib = DATA in a "
                        "[model] group of .halfguard.ini)\nTry 'halfguard help verify'.\n");
        rc = EXIT_ERROR;
        goto out;
    }
    samples = g_ptr_array_new_with_free_func((GDestroyNotify)hg_sample_free);
    if (!source_samples(orig, ms.samples, samples, &error) ||
        !synthetic_samples(orig, &ms.co, a.calib_random > 0 ? (guint)a.calib_random : 0, a.seed, samples, &error)) {
        print_line(stderr, "halfguard verify: %s", error->message);
        rc = EXIT_ERROR;
        goto out;
    }
    if (a.calib_random > 0) {
        g_autoptr(GPtrArray) inputs = hg_check_inputs(orig, &ms.co, NULL);
        Synthetic syn = {(guint)a.calib_random, FALSE, NULL};
        report_unranged(argv[1], inputs, NULL, FALSE, &syn, a.seed, ms.cfg ? hg_check_config_path(ms.cfg) : NULL);
    }
    vo.l2_tol = l2_tol;
    vo.elementwise = atol >= 0 || rtol >= 0;
    vo.atol = atol >= 0 ? atol : HG_VERIFY_DEFAULT_ATOL;
    vo.rtol = rtol >= 0 ? rtol : HG_VERIFY_DEFAULT_RTOL;
    vo.threads = threads;
    names = outputs ? g_strsplit(outputs, ",", -1) : NULL;
    vo.outputs = (const char *const *)names;
    cli_progress_start(&progress, "verifying on sample", samples->len);
    vo.progress = verify_progress;
    vo.progress_data = &progress;
    r = hg_verify_samples(orig, conv, samples, &vo, &error);
    cli_progress_end(&progress);
    if (!r) {
        print_line(stderr, "halfguard verify: %s", error->message);
        rc = EXIT_ERROR;
        goto out;
    }
    text = format && strcmp(format, "json") == 0 ? hg_verify_format_json(r) : hg_verify_format_text(r);
    fputs(text, stdout);
    rc = r->pass ? EXIT_OK : EXIT_FINDINGS;
out:
    analysis_clear(&a);
    g_free(format);
    g_free(outputs);
    return rc;
}

/* ---------------------------------------------------------------- help */

static void print_usage(FILE *f);

static int
cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) { /* halfguard help help */
        printf("Usage:\n  halfguard help [SUBCOMMAND]\n\nShow the list of subcommands, or one subcommand's "
               "options (the same as halfguard SUBCOMMAND --help).\n");
        return EXIT_OK;
    }
    const Command *cmd = find_command(argv[1]);
    if (!cmd) {
        print_line(stderr, "halfguard help: no subcommand '%s'", argv[1]);
        return EXIT_ERROR;
    }
    char *args[] = {(char *)cmd->name, "--help", NULL};
    return cmd->run(2, args);
}

static const Command commands[] = {
    {"check", cmd_check, "MODEL... [--input-range NAME=LO:HI]... [--calib DATA]... [--stats FILE]...",
     "Find FP16 hazards statically (and with calibration); exit 1 if any.",
     "Infers shapes and sound value intervals for every tensor from the input ranges, the weights and\n"
     "each op's interval rule, and reports what would go wrong in FP16: overflow, internal-overflow,\n"
     "underflow, non-finite-constant, division-by-zero, precision-loss, must-stay-fp32,\n"
     "unranged-input. With --calib or\n"
     "--stats a decision uses the observed magnitude times --margin where that is below the static\n"
     "bound, and the report shows both. An input without a range is unbounded: what depends only on\n"
     "it is not checked, the input itself is an unranged-input finding (exit 1) that says how to give\n"
     "its range, and a note names what was assumed. Ranges that follow from the model are derived: an\n"
     "integer input that only indexes Gathers takes [0, rows - 1] of its table, a bool input [0, 1],\n"
     "and an input read only by Sigmoid or Tanh (or for its shape) needs none; a note says so.\n"
     "A hazard that convert rewrites away by itself (an\n"
     "epsilon kept inside a fused LayerNorm, a mask fill clamped to -65504, an integral image made an\n"
     "AveragePool, an overflow scaled away) is not counted: a note says how many, --show-fixed lists\n"
     "them. --calib-random N decides also on N synthetic input sets, marked synthetic.\n"
     "Internal overflow is checked where a running sum stays\n"
     "in FP16: CumSum on TensorRT, ONNX Runtime CUDA and PyTorch (--accumulate targets, the\n"
     "default), every reduction, pool and norm with --accumulate fp16.\n\n"
     "Configuration: the nearest .halfguard.ini at or above each model's folder ([check] threshold and\n"
     "margin, [ranges GLOB] input ranges, [model GLOB] calib and dim-max, [suppress NAME]\n"
     "node/kind/model/reason), read alike by check, convert, calibrate and verify; see the README. An\n"
     "unknown group or key is an error naming the file and line.\n"
     "Git LFS pointers are skipped with a note (--strict-lfs: an error).\n\n"
     "Output: text (compiler-style lines on stdout, notes on stderr), json or sarif (SARIF 2.1.0).\n"
     "Text puts identical hazards of a model on one line (\"24 × node 'a', 'b', 'c' and 21 more\"; -v:\n"
     "one line each), ends each with what convert does about it, and counts the hazards by kind on\n"
     "stderr at the end; -q prints only errors (and the JSON or SARIF asked for). Colour only on a\n"
     "terminal, and never with NO_COLOR set.\n"
     "Exit status: 0 no hazards, 1 hazards, 2 an error.\n\n"
     "Example:\n  halfguard check model.onnx --input-range 'input=0:1'\n"
     "  halfguard check models/*.onnx --calib calib/0 --format sarif > halfguard.sarif"},
    {"convert", cmd_convert, "(IN.onnx | FOLDER)... [--from LIST] (-o OUT.onnx | -O DIR)",
     "Make models FP16-safe: mixed precision through the pass pipeline, saved atomically.",
     "Loads each model, runs the passes (all of them in pipeline order unless --passes says\n"
     "otherwise), checks the graph after every pass, and writes the result. A regular file is\n"
     "replaced atomically (a temporary .NAME.halfguard-tmp.PID in its folder, then a rename; a\n"
     "symbolic link is followed); a character device or a FIFO is written to directly, not\n"
     "atomically; - is standard output; anything else (a directory, a socket) is an error.\n"
     "An input is never replaced: -o may name the input itself only when it keeps no external\n"
     "data, and no output may be one of its data files. External data goes to one file of the\n"
     "output's own, OUT.data beside it, without the FP32 originals nothing reads any more; so do the\n"
     "FP16 copies a conversion makes, and the largest initializers of a model that would pass\n"
     "protobuf's 2 GiB limit. With --passes none the output is the input, byte for byte\n"
     "(external data: but for the data file's name).\n\n"
     "Passes, in order: fold_shapes (shape arithmetic becomes constants), fuse_layernorm\n"
     "(decomposed LayerNorm becomes opset-17 LayerNormalization), prescale (a scale after a MatMul\n"
     "moves before it, L2 norms are pre-scaled), avgpool_integral (integral-image\n"
     "box filters become AveragePool), stable_softplus (a softplus whose exp overflows becomes\n"
     "relu(x) + softplus(-|x|)), clamp_constants (float32-min mask fills read only by\n"
     "softmaxes become -65504; division floors FP16 flushes become 2^-23), rescale (overflowing\n"
     "linear regions scaled by an exact 2^-k),\n"
     "assign_precision (FP16 or FP32 per node: hazards force FP32, a minimum cut places the\n"
     "boundaries), lower (element types, initializers, Casts), cleanup (cancelling and duplicate\n"
     "Casts, a Transpose before an FP16 MatMul by a constant moved after it, dead nodes,\n"
     "topological order).\n\n"
     "Give input ranges (-r) or calibration (--calib, --stats). An input whose values reach float\n"
     "math with neither gets synthetic calibration by default: 4 seeded input sets (a float input\n"
     "uniform in [-64, 64], an integer one 0 or 1), and a warning names the input, what was assumed\n"
     "and what fixes it; --calib-random 0 refuses such a model instead. The summary line (about 200\n"
     "characters at most) gives the LayerNorms fused, the FP32 islands, the Casts, the FP16 share of\n"
     "MACs and weight bytes, the nodes kept FP32 for hazards, how many other changes were made and\n"
     "patterns left alone, and how many decisions rest on synthetic data. -v lists each FP32 island\n"
     "with its nodes and why, each rewrite and each pattern left alone (identical ones grouped); -q\n"
     "prints only errors. --emit-trtexec FILE writes trtexec's flags for TensorRT 10.11 and older;\n"
     "from 10.12 on, build the output with trtexec --stronglyTyped.\n\n"
     "It reads .halfguard.ini exactly as check does ([check], [ranges], [model] calib and dim-max;\n"
     "--config FILE, --no-config); options on the command line win.\n\n"
     "Many models: with -O DIR, a FOLDER is walked for *.onnx at every depth (names in byte order;\n"
     "symbolic links only where they stay inside it; DIR itself is not walked), --from LIST adds the\n"
     "paths LIST holds, one a line (- for standard input; # starts a comment), and each model is\n"
     "written to DIR at its path below the folder given (several arguments: below the deepest folder\n"
     "that holds them all), its external data beside it; two inputs never share an output. A Git LFS\n"
     "pointer is skipped with a note (--strict-lfs: an error).\n\n"
     "--jobs N converts N models at once (default: the number of cores) in N worker processes; what\n"
     "each model prints goes out in the list's order when its turn comes, so outputs and lines are\n"
     "the same whatever N. A model whose worker dies (a crash) is an error; the others go on.\n"
     "--results FILE writes one JSON object a line per model, in the list's order (- streams them to\n"
     "standard output): file, output, status (converted, unchanged, skipped, error), message, the\n"
     "FP16 shares of MACs and weight bytes, islands, casts, hazards, seconds, peak_bytes; fields in\n"
     "the README, schema in tests/convert_results_schema.json.\n"
     "--shard I/N converts only the models whose place K in the list (from 0) has K mod N = I - 1: N\n"
     "runs over the same inputs (a Slurm array, a Kubernetes Indexed Job, a CI matrix) convert every\n"
     "model exactly once.\n"
     "--skip-existing skips a model whose output is newer than it and carries the same options hash\n"
     "(metadata_props halfguard.convert.options, written with --skip-existing): a rerun resumes.\n"
     "A model that fails gets an error line (FILE: message) and the others go on. On a terminal,\n"
     "stderr shows the progress: models done, the one started last, the time left.\n\n"
     "Exit status: 0 when no model failed (written, unchanged or skipped), 2 when any failed.\n\n"
     "Example:\n  halfguard convert model.onnx -o model.fp16.onnx -r 'input=0:1' --calib calib/0\n"
     "  halfguard convert model.onnx -o out.onnx --keep-io-types --report report.json --emit-trtexec flags.txt\n"
     "  halfguard convert --passes none a.onnx b.onnx -O out/\n"
     "  halfguard convert models/ -O models-fp16/\n"
     "  halfguard convert models/ -O models-fp16/ --shard $((SLURM_ARRAY_TASK_ID + 1))/$SLURM_ARRAY_TASK_COUNT"},
    {"dump", cmd_dump, "MODEL...",
     "Print models in ONNX's textual syntax, with element types and shapes.",
     "The text is the syntax onnx.parser reads; halfguard reads it back from .onnxtxt files.\n"
     "Initializers with more than --max-elements elements are summarised.\n\n"
     "Example:\n  halfguard dump model.onnx | less"},
    {"inspect", cmd_inspect, "MODEL... [--format json] | MODEL --ini",
     "Describe a model: inputs and their ranges, outputs, ops, weights, unknown ops.",
     "Lists the inputs to feed and the outputs with element types and shapes (symbolic dims by name),\n"
     "what is known of each input's range (derived from the model: token ids index their table, bools\n"
     "are 0/1; not needed; or none, with the -r option that gives it), IR and opset versions, the\n"
     "producer, an op histogram, initializer bytes by element type, external data, and the ops\n"
     "halfguard does not know (convert keeps them FP32). --ini prints a .halfguard.ini skeleton for\n"
     "the model: a [ranges] group with a commented line to fill in for each input that needs a range.\n\n"
     "Exit status: 0 on success, 2 on an error (a model that cannot be read).\n\n"
     "Examples:\n  halfguard inspect model.onnx\n  halfguard inspect model.onnx --ini > .halfguard.ini"},
    {"run", cmd_run, "MODEL --data DIR -o OUTDIR",
     "Run a model with the built-in interpreter.",
     "Reads the inputs from DIR (input_K.pb in graph-input order, as the ONNX test data is laid out,\n"
     "or NAME.npy per input), runs the model with tensors stored in their declared element types (an\n"
     "FP16 model runs with FP16 storage, as a GPU runs it), and writes output_K.pb (or .npy) to OUTDIR.\n"
     "--mark-all also writes every intermediate float tensor and an index.json.\n\n"
     "Exit status: 0 on success, 2 on an error (a missing input, or one with the wrong name, element\n"
     "type or shape; an op the interpreter does not implement).\n\n"
     "Example:\n  halfguard run model.onnx --data test_data_set_0 -o out/"},
    {"calibrate", cmd_calibrate, "MODEL (--data DATA... | --random N) (-o stats.json | -O DIR)",
     "Record per-tensor value statistics over sample inputs; draw synthetic input sets.",
     "Runs the model on each sample of each --data (a folder of input_K.pb or NAME.npy, a folder of\n"
     "such folders, an .npz, or Polygraphy --save-inputs JSON) and writes, per float tensor (and per\n"
     "integer graph input): min, max, absmax, the smallest\n"
     "nonzero |x|, the counts of inf and NaN values, the element count and the number of samples.\n"
     "The JSON format is documented in the README. --random N draws N synthetic input sets (seeded:\n"
     "--seed) inside the input ranges (-r, .halfguard.ini, derived; a float input without one uniform in\n"
     "[-64, 64], an integer one 0 or 1), counted as synthetic in the statistics; -O DIR writes the\n"
     "sets used as DIR/K/input_J.pb to inspect, edit and give back with --calib DIR. Without --data or\n"
     "--random, the calib of the model's [model] group in .halfguard.ini is the data.\n\n"
     "Example:\n  halfguard calibrate model.onnx --data calib/0 --data calib/1 -o stats.json\n"
     "  halfguard calibrate model.onnx --random 8 -O calib/"},
    {"verify", cmd_verify, "ORIG CONVERTED --data DATA [--data DATA...] [--l2-tol L] [--atol A] [--rtol R] [--format text|json]",
     "Run a model and its converted form on the same data; exit 1 if they disagree.",
     "Runs both models with the built-in interpreter on each sample of each --data (a folder laid out\n"
     "as for 'run', a folder of such folders, an .npz, or Polygraphy --save-inputs JSON;\n"
     "the files must fit ORIG, and CONVERTED's inputs get the same values converted to the element\n"
     "types it declares, so an FP16-input model takes FP32 data). Graph outputs are matched by name.\n"
     "Per output, over all folders: the relative L2 error ||conv - orig|| / ||orig|| (0 when both\n"
     "are 0, inf when only ORIG's is) and the largest absolute error, both over the elements finite\n"
     "in both models, and the count of inf/NaN values in CONVERTED (and in ORIG, when it has some).\n"
     "It names the first tensor, in CONVERTED's execution order, that holds inf or NaN where ORIG's\n"
     "tensor of the same name is finite, and the node that produced it.\n\n"
     "--random N adds N synthetic input sets drawn in the input ranges (-r, .halfguard.ini, derived).\n"
     "Without --data, the calib of ORIG's [model] group in .halfguard.ini is the data.\n\n"
     "Output: text, or json (fields in the README).\n"
     "Exit status: 0 every output finite and within its tolerances; 1 an output non-finite where ORIG's\n"
     "is finite, over --l2-tol, or (with --atol/--rtol) with an element over atol + rtol*|orig|; 2 an error (bad arguments, an unreadable model, data that does not fit,\n"
     "outputs that differ in name or shape).\n\n"
     "Example:\n  halfguard verify model.onnx model.fp16.onnx --data test_data_set_0 --data test_data_set_1"},
    {"help", cmd_help, "[SUBCOMMAND]", "Show help for a subcommand.", ""},
};

const Command *
find_command(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void
print_usage(FILE *f)
{
    fprintf(f, "Usage: halfguard SUBCOMMAND [OPTION...] ARGS\n\n"
               "Make ONNX models safe to run in FP16.\n\nSubcommands:\n");
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nOptions:\n  -h, --help     Show this help\n  --version      Print the version\n\n"
               "'halfguard help SUBCOMMAND' or 'halfguard SUBCOMMAND --help' shows a subcommand's "
               "options.\nExit status: 0 success, 1 findings (check, verify), 2 error.\n");
}

int
main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C"); /* reports and files use '.' decimals whatever the locale */
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_ERROR;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("halfguard %s\n", hg_version());
        return EXIT_OK;
    }
    const Command *cmd = find_command(argv[1]);
    if (!cmd) {
        print_line(stderr, "halfguard: no subcommand '%s'", argv[1]);
        print_usage(stderr);
        return EXIT_ERROR;
    }
    return cmd->run(argc - 1, argv + 1);
}
