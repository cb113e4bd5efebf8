/* The lexer of the ONNX text reader, and the token primitives the parser (text_parse.c) is built
 * from: peeking, stepping, expecting punctuation, errors with a line and column, names, strings,
 * integers and float literals read to the exact bits of their type. text_parse.c's header gives the
 * grammar. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtof_l */
#endif

#include "text_parse.h"

#include "halfguard/io.h"
#include "halfguard/text.h"
#include "elem.h"
#include "ir_private.h"
#include "ops/array.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tokens */

void
hg_tok_clear(gpointer p)
{
    g_free(((HgTok *)p)->text);
}

gboolean
hg_parse_fail_at(HgParser *p, HgLoc loc, const char *fmt, ...)
{
    if (p->error)
        return FALSE;
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    p->error = g_error_new(HG_ERROR, HG_ERROR_PARSE, "line %u, column %u: %s", loc.line, loc.col, msg);
    return FALSE;
}

const HgTok *
hg_parse_peek_at(const HgParser *p, guint k)
{
    guint i = MIN(p->pos + k, p->toks->len - 1);
    return &g_array_index(p->toks, HgTok, i);
}

const HgTok *
hg_parse_peek(const HgParser *p)
{
    return hg_parse_peek_at(p, 0);
}

HgLoc
hg_parse_loc_of(const HgTok *t)
{
    return (HgLoc){t->line, t->col};
}

const HgTok *
hg_parse_advance(HgParser *p)
{
    const HgTok *t = hg_parse_peek(p);
    if (t->kind != TK_EOF)
        p->pos++;
    return t;
}

gboolean
hg_parse_is_punct(const HgTok *t, char c)
{
    return t->kind == TK_PUNCT && t->punct == c;
}

gboolean
hg_parse_is_word(const HgTok *t, const char *w)
{
    return t->kind == TK_IDENT && strcmp(t->text, w) == 0;
}

gboolean
hg_parse_accept(HgParser *p, char c)
{
    if (!hg_parse_is_punct(hg_parse_peek(p), c))
        return FALSE;
    p->pos++;
    return TRUE;
}

/* What a token is, for error messages. */
static char *
describe(const HgTok *t)
{
    switch (t->kind) {
    case TK_EOF:
        return g_strdup("the end of the text");
    case TK_STRING:
        return g_strdup("a string");
    case TK_PUNCT:
        return g_strdup_printf("'%c'", t->punct);
    case TK_ARROW:
        return g_strdup("'=>'");
    case TK_PRAGMA:
        return g_strdup("an annotation ('#@')");
    case TK_PRAGMA_END:
        return g_strdup("the end of the annotation");
    default:
        /* A name can be long; a message quotes its start. */
        if (t->len > 40)
            return g_strdup_printf("'%.40s...'", t->text);
        return g_strdup_printf("'%s'", t->text);
    }
}

/* Fail at the next token: "expected WHAT, found X". */
gboolean
hg_parse_expected(HgParser *p, const char *what)
{
    const HgTok *t = hg_parse_peek(p);
    g_autofree char *found = describe(t);
    return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected %s, found %s", what, found);
}

gboolean
hg_parse_expect(HgParser *p, char c, const char *what)
{
    if (hg_parse_accept(p, c))
        return TRUE;
    return hg_parse_expected(p, what);
}

/* ---------------------------------------------------------------- lexer */

static gboolean
is_ident_start(char c)
{
    return g_ascii_isalpha(c) || c == '_';
}

static gboolean
is_ident_char(char c)
{
    return g_ascii_isalnum(c) || c == '_';
}

typedef struct {
    const char *s;
    gsize len, i;
    guint line, col;
} Scan;

static char
sc_at(const Scan *sc, gsize k)
{
    return sc->i + k < sc->len ? sc->s[sc->i + k] : '\0';
}

static void
sc_step(Scan *sc)
{
    char c = sc->s[sc->i++];
    if (c == '\n') {
        sc->line++;
        sc->col = 1;
    } else if (((guchar)c & 0xc0) != 0x80) {
        /* Columns count characters: UTF-8 continuation bytes add none. */
        sc->col++;
    }
}

static int
hex_value(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* A string literal at sc (on the opening quote), escapes decoded. */
static gboolean
lex_string(HgParser *p, Scan *sc, HgTok *t)
{
    g_autoptr(GString) out = g_string_new(NULL);
    sc_step(sc);
    for (;;) {
        if (sc->i >= sc->len)
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "the string has no closing '\"'");
        char c = sc_at(sc, 0);
        if (c == '"') {
            sc_step(sc);
            break;
        }
        if (c != '\\') {
            g_string_append_c(out, c);
            sc_step(sc);
            continue;
        }
        HgLoc at = {sc->line, sc->col};
        char e = sc_at(sc, 1);
        sc_step(sc);
        if (sc->i >= sc->len)
            return hg_parse_fail_at(p, at, "the string has no closing '\"'");
        sc_step(sc);
        switch (e) {
        case '"':
        case '\\':
            g_string_append_c(out, e);
            break;
        case 'n':
            g_string_append_c(out, '\n');
            break;
        case 't':
            g_string_append_c(out, '\t');
            break;
        case 'r':
            g_string_append_c(out, '\r');
            break;
        case 'x': {
            int hi = hex_value(sc_at(sc, 0)), lo = hex_value(sc_at(sc, 1));
            if (hi < 0 || lo < 0)
                return hg_parse_fail_at(p, at, "expected two hex digits after '\\x'");
            sc_step(sc);
            sc_step(sc);
            g_string_append_c(out, (char)(hi * 16 + lo));
            break;
        }
        default:
            return hg_parse_fail_at(p, at, "unknown escape '\\%c' (escapes are \\\" \\\\ \\n \\t \\r \\xHH)",
                           g_ascii_isprint(e) ? e : '?');
        }
    }
    t->kind = TK_STRING;
    t->len = out->len;
    t->text = g_string_free(g_steal_pointer(&out), FALSE);
    return TRUE;
}

/* A number: -?digits(.digits)?(e[+-]?digits)?, or -inf / -nan. */
static gboolean
lex_number(HgParser *p, Scan *sc, HgTok *t)
{
    gsize start = sc->i;
    gboolean is_float = FALSE, digits = FALSE;
    if (sc_at(sc, 0) == '-')
        sc_step(sc);
    if (is_ident_start(sc_at(sc, 0))) {
        gsize w = sc->i;
        while (is_ident_char(sc_at(sc, 0)))
            sc_step(sc);
        g_autofree char *word = g_strndup(sc->s + w, sc->i - w);
        if (strcmp(word, "inf") != 0 && strcmp(word, "nan") != 0)
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected a number after '-'");
        is_float = digits = TRUE;
    } else {
        while (g_ascii_isdigit(sc_at(sc, 0))) {
            digits = TRUE;
            sc_step(sc);
        }
        if (sc_at(sc, 0) == '.') {
            is_float = TRUE;
            sc_step(sc);
            while (g_ascii_isdigit(sc_at(sc, 0))) {
                digits = TRUE;
                sc_step(sc);
            }
        }
        if (digits && (sc_at(sc, 0) == 'e' || sc_at(sc, 0) == 'E')) {
            gsize k = 1;
            if (sc_at(sc, k) == '+' || sc_at(sc, k) == '-')
                k++;
            if (g_ascii_isdigit(sc_at(sc, k))) {
                is_float = TRUE;
                for (gsize j = 0; j < k; j++)
                    sc_step(sc);
                while (g_ascii_isdigit(sc_at(sc, 0)))
                    sc_step(sc);
            }
        }
    }
    if (!digits)
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected a number");
    t->kind = is_float ? TK_FLOAT : TK_INT;
    t->len = sc->i - start;
    t->text = g_strndup(sc->s + start, t->len);
    return TRUE;
}

gboolean
hg_lex(HgParser *p, const char *text, gsize len)
{
    Scan sc = {text, len, 0, 1, 1};
    gboolean in_pragma = FALSE;
    for (;;) {
        while (sc.i < sc.len && g_ascii_isspace(sc_at(&sc, 0)) && !(in_pragma && sc_at(&sc, 0) == '\n'))
            sc_step(&sc);
        HgTok t = {TK_EOF, 0, sc.line, sc.col, NULL, 0};
        char c = sc_at(&sc, 0);
        if (in_pragma && (sc.i >= sc.len || c == '\n')) {
            t.kind = TK_PRAGMA_END;
            in_pragma = FALSE;
            g_array_append_val(p->toks, t);
            continue;
        }
        if (sc.i >= sc.len) {
            g_array_append_val(p->toks, t);
            return TRUE;
        }
        if (c == '#' && sc_at(&sc, 1) == '@' && !in_pragma) {
            sc_step(&sc);
            sc_step(&sc);
            t.kind = TK_PRAGMA;
            in_pragma = TRUE;
        } else if (c == '#') {
            while (sc.i < sc.len && sc_at(&sc, 0) != '\n')
                sc_step(&sc);
            continue;
        } else if (c == '"') {
            if (!lex_string(p, &sc, &t))
                return FALSE;
        } else if (g_ascii_isdigit(c) || (c == '-' && (g_ascii_isdigit(sc_at(&sc, 1)) ||
                                                       sc_at(&sc, 1) == '.' ||
                                                       is_ident_start(sc_at(&sc, 1)))) ||
                   (c == '.' && g_ascii_isdigit(sc_at(&sc, 1)))) {
            if (!lex_number(p, &sc, &t))
                return FALSE;
        } else if (is_ident_start(c)) {
            gsize start = sc.i;
            while (is_ident_char(sc_at(&sc, 0)))
                sc_step(&sc);
            t.kind = TK_IDENT;
            t.len = sc.i - start;
            t.text = g_strndup(text + start, t.len);
        } else if (c == '=' && sc_at(&sc, 1) == '>') {
            sc_step(&sc);
            sc_step(&sc);
            t.kind = TK_ARROW;
        } else if (c && strchr("()[]{}<>,=:@.?", c)) {
            sc_step(&sc);
            t.kind = TK_PUNCT;
            t.punct = c;
        } else {
            if (g_ascii_isprint(c))
                return hg_parse_fail_at(p, hg_parse_loc_of(&t), "unexpected character '%c'", c);
            return hg_parse_fail_at(p, hg_parse_loc_of(&t), "unexpected byte 0x%02x", (guchar)c);
        }
        g_array_append_val(p->toks, t);
    }
}

/* ---------------------------------------------------------------- names and literals */

/* A name: an identifier or a quoted string (which must hold no NUL). *out is NULL for "". */
gboolean
hg_parse_name(HgParser *p, char **out, const char *what)
{
    const HgTok *t = hg_parse_peek(p);
    if (t->kind == TK_IDENT) {
        *out = g_strdup(hg_parse_advance(p)->text);
        return TRUE;
    }
    if (t->kind == TK_STRING) {
        if (strlen(t->text) != t->len)
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "a name cannot contain a NUL byte");
        hg_parse_advance(p);
        *out = t->len ? g_strdup(t->text) : NULL;
        return TRUE;
    }
    if (t->kind == TK_INT || t->kind == TK_FLOAT) {
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "expected %s, found '%s' (quote names that are not identifiers: "
                       "\"%s\")", what, t->text, t->text);
    }
    return hg_parse_expected(p, what);
}

gboolean
hg_parse_string(HgParser *p, char **out, const char *what)
{
    const HgTok *t = hg_parse_peek(p);
    if (t->kind != TK_STRING)
        return hg_parse_expected(p, what);
    if (strlen(t->text) != t->len)
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "this string cannot contain a NUL byte");
    *out = g_strdup(hg_parse_advance(p)->text);
    return TRUE;
}

gboolean
hg_parse_int(HgParser *p, gint64 *out, const char *what)
{
    const HgTok *t = hg_parse_peek(p);
    if (t->kind != TK_INT)
        return hg_parse_expected(p, what);
    if (!g_ascii_string_to_signed(t->text, 10, G_MININT64, G_MAXINT64, out, NULL))
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s does not fit in 64 bits", t->text);
    hg_parse_advance(p);
    return TRUE;
}

/* Whether t is a float literal: a number, inf, nan or nan0xHEX. */
gboolean
hg_parse_is_float_token(const HgTok *t)
{
    if (t->kind == TK_INT || t->kind == TK_FLOAT)
        return TRUE;
    return t->kind == TK_IDENT && (strcmp(t->text, "inf") == 0 || strcmp(t->text, "nan") == 0 ||
                                   g_str_has_prefix(t->text, "nan0x"));
}

/* Read a float literal as a value of float type dtype: its bits, in the low end of *bits. */
gboolean
hg_parse_float_bits(HgParser *p, const HgTok *t, int dtype, guint64 *bits)
{
    const char *s = t->text;
    guint width = dtype == HG_DTYPE_COMPLEX64 ? 32 : dtype == HG_DTYPE_COMPLEX128 ? 64 : hg_dtype_bits(dtype);
    if (strcmp(s, "nan") == 0 || strcmp(s, "-nan") == 0) {
        *bits = hg_canonical_nan(dtype, s[0] == '-');
        return TRUE;
    }
    if (g_str_has_prefix(s, "nan0x")) {
        guint64 v;
        if (strlen(s + 5) > width / 4 || !g_ascii_string_to_unsigned(s + 5, 16, 0, G_MAXUINT64, &v, NULL) ||
            !hg_bits_are_nan(v, dtype))
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "'%s' is not a NaN of %s", s, hg_dtype_name(dtype));
        *bits = v;
        return TRUE;
    }
    gboolean inf_literal = strstr(s, "inf") != NULL;
    if (width == 64) {
        double v = strtod_l(s, NULL, hg_c_locale());
        if (isinf(v) && !inf_literal)
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s is out of range for %s", s, hg_dtype_name(dtype));
        memcpy(bits, &v, sizeof v);
        return TRUE;
    }
    /* Straight to float, then rounded once more to a narrower type (not from the decimal straight to
     * the type, which can differ by one code): text_dump.c checks that what it writes comes back
     * exactly through this path and these conversions. No NaN gets here (they are read above), so
     * hg_float_to_half quieting a signalling NaN does not matter. */
    float f = strtof_l(s, NULL, hg_c_locale());
    if (isinf(f) && !inf_literal)
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s is out of range for %s", s, hg_dtype_name(dtype));
    gboolean overflow = FALSE;
    switch (dtype) {
    case HG_DTYPE_FLOAT16:
        *bits = hg_float_to_half(f);
        overflow = !isinf(f) && (*bits & 0x7fffu) == 0x7c00u;
        break;
    case HG_DTYPE_BFLOAT16:
        *bits = hg_float_to_bf16(f);
        overflow = !isinf(f) && (*bits & 0x7fffu) == 0x7f80u;
        break;
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_COMPLEX64:
        *bits = hg_float_bits(f);
        break;
    default: {
        const HgF8Format *fmt = hg_f8_format(dtype);
        if (isinf(f) && !fmt->ieee)
            return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s has no infinity", hg_dtype_name(dtype));
        overflow = isfinite(f) && fabsf(f) > hg_f8_max(fmt);
        *bits = hg_float_to_f8(f, fmt);
        break;
    }
    }
    if (overflow)
        return hg_parse_fail_at(p, hg_parse_loc_of(t), "%s is out of range for %s", s, hg_dtype_name(dtype));
    return TRUE;
}
