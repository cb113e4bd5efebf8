/* Text that came from a model (names, op types, file names) made safe to print: one line, valid UTF-8. */
#include "halfguard/halfguard.h"

#include <string.h>

char *
hg_escape_text(const char *s)
{
    if (!s)
        return g_strdup("(null)");
    GString *out = g_string_sized_new(strlen(s));
    const char *p = s;
    while (*p) {
        const char *end = NULL;
        /* The longest valid stretch goes through as it is, but for the control characters in it. */
        g_utf8_validate(p, -1, &end);
        for (const char *q = p; q < end; q = g_utf8_next_char(q)) {
            gunichar c = g_utf8_get_char(q);
            if (c == '\n')
                g_string_append(out, "\\n");
            else if (c == '\r')
                g_string_append(out, "\\r");
            else if (c == '\t')
                g_string_append(out, "\\t");
            else if (c < 0x20 || c == 0x7f)
                g_string_append_printf(out, "\\x%02x", c);
            else if (c >= 0x80 && c < 0xa0) /* C1 controls: CSI is U+009B */
                g_string_append_printf(out, "\\u%04x", c);
            else
                g_string_append_len(out, q, g_utf8_next_char(q) - q);
        }
        if (!*end)
            break;
        g_string_append_printf(out, "\\x%02x", (guchar)*end);
        p = end + 1;
    }
    return g_string_free(out, FALSE);
}
