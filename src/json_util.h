/* JSON writing shared by the reports and files (internal): members that turn what JSON cannot hold
 * (NaN, inf, a missing string) into null, and the pretty text json-glib makes of a builder. */
#ifndef HG_JSON_UTIL_H
#define HG_JSON_UTIL_H

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

void hg_json_add_num(JsonBuilder *b, const char *key, double v);     /* null unless finite */
void hg_json_add_str(JsonBuilder *b, const char *key, const char *v); /* null when NULL */
void hg_json_add_int(JsonBuilder *b, const char *key, gint64 v);
void hg_json_add_bool(JsonBuilder *b, const char *key, gboolean v);
/* b's document as pretty-printed text ending in a newline (g_free); always valid UTF-8 (U+FFFD for
 * what a name held that is not). */
char *hg_json_to_text(JsonBuilder *b);
/* b's document written to path under outfile.h's rules ("-" is standard output). */
gboolean hg_json_save(JsonBuilder *b, const char *path, GError **error);

/* JSON read by halfguard (statistics, Polygraphy arrays) nests a few levels; json-glib recurses once
 * per level, so 100,000 nested '[' overflowed the stack. */
#define HG_JSON_MAX_DEPTH 64
/* json_parser_load_from_data after a scan that refuses text nested deeper than HG_JSON_MAX_DEPTH
 * (HG_ERROR_PARSE, "JSON nested more than 64 levels deep") before json-glib sees it; json-glib's own
 * refusals come back as HG_ERROR_PARSE too ("not JSON: ..."). */
gboolean hg_json_parse(JsonParser *p, const char *data, gsize len, GError **error);

typedef struct HgTensor HgTensor;
/* A Polygraphy-encoded array (src/stats.c): {"array": base64 of a .npy file, "polygraphy_class":
 * "ndarray"}, possibly wrapped in a LazyArray {"values": ...}. NULL with *is_array FALSE when node is
 * not one; NULL with *is_array TRUE and an error when it is one but is broken; else a new tensor. */
HgTensor *hg_polygraphy_array(JsonNode *node, const char *name, gboolean *is_array, GError **error);

G_END_DECLS

#endif
