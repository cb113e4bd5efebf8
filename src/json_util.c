/* JSON writing shared by the reports and files. */
#include "json_util.h"
#include "outfile.h"

#include <math.h>
#include <string.h>

void
hg_json_add_num(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    if (isfinite(v))
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

void
hg_json_add_str(JsonBuilder *b, const char *key, const char *v)
{
    json_builder_set_member_name(b, key);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

void
hg_json_add_int(JsonBuilder *b, const char *key, gint64 v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, v);
}

void
hg_json_add_bool(JsonBuilder *b, const char *key, gboolean v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_boolean_value(b, v);
}

char *
hg_json_to_text(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    /* The generator escapes control characters but copies a name's bytes as they are: what is not
     * UTF-8 (only ever inside a string, the rest is ASCII) becomes U+FFFD, so the document stays JSON. */
    g_autofree char *valid = g_utf8_make_valid(text, -1);
    return g_strconcat(valid, "\n", NULL);
}

gboolean
hg_json_save(JsonBuilder *b, const char *path, GError **error)
{
    g_autofree char *text = hg_json_to_text(b);
    return hg_outfile_write(path, text, strlen(text), error);
}
