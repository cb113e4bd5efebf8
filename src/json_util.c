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

gboolean
hg_json_parse(JsonParser *p, const char *data, gsize len, GError **error)
{
    guint depth = 0;
    gboolean in_string = FALSE;
    for (gsize i = 0; i < len; i++) {
        char c = data[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character, even a quote */
            else if (c == '"')
                in_string = FALSE;
        } else if (c == '"') {
            in_string = TRUE;
        } else if (c == '[' || c == '{') {
            if (++depth > HG_JSON_MAX_DEPTH) {
                g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "JSON nested more than %d levels deep",
                            HG_JSON_MAX_DEPTH);
                return FALSE;
            }
        } else if ((c == ']' || c == '}') && depth) {
            depth--; /* unbalanced text is json-glib's to refuse */
        }
    }
    GError *e = NULL;
    if (!json_parser_load_from_data(p, data, (gssize)len, &e)) {
        /* An HG_ERROR like every other refusal of the library's. */
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not JSON: %s", e->message);
        g_error_free(e);
        return FALSE;
    }
    return TRUE;
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
