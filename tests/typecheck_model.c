/* The type check (include/halfguard/typecheck.h) of models on the command line, for the script tests:
 * one JSON line per model, {"model": PATH, "violations": [{"node", "op", "output", "param",
 * "message"}, ...]} (the fields of HgTypeViolation; output may be null), or {"model": PATH, "error":
 * MESSAGE} when it does not load.
 *
 * Usage: typecheck_model MODEL... */
#include "halfguard/halfguard.h"

#include <json-glib/json-glib.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "model");
        json_builder_add_string_value(b, argv[i]);
        g_autoptr(GError) error = NULL;
        g_autoptr(HgModel) m = hg_model_load(argv[i], &error);
        if (!m) {
            json_builder_set_member_name(b, "error");
            json_builder_add_string_value(b, error->message);
        } else {
            g_autoptr(GPtrArray) v = hg_model_typecheck(m);
            json_builder_set_member_name(b, "violations");
            json_builder_begin_array(b);
            for (guint k = 0; k < v->len; k++) {
                const HgTypeViolation *x = v->pdata[k];
                json_builder_begin_object(b);
                json_builder_set_member_name(b, "node");
                json_builder_add_string_value(b, x->node);
                json_builder_set_member_name(b, "op");
                json_builder_add_string_value(b, x->op);
                json_builder_set_member_name(b, "output");
                json_builder_add_string_value(b, x->output); /* NULL: null */
                json_builder_set_member_name(b, "param");
                json_builder_add_string_value(b, x->param);
                json_builder_set_member_name(b, "message");
                json_builder_add_string_value(b, x->message);
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
        }
        json_builder_end_object(b);
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *line = json_to_string(root, FALSE);
        printf("%s\n", line);
    }
    return 0;
}
