/* The ONNX text reader's two halves (internal): the lexer and the parser's token primitives
 * (text_lex.c), and the parser and IR builder (text_parse.c). */
#ifndef HALFGUARD_TEXT_PARSE_H
#define HALFGUARD_TEXT_PARSE_H

#include "halfguard/ir.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- tokens */

typedef enum {
    TK_EOF,
    TK_IDENT,
    TK_STRING,
    TK_INT,
    TK_FLOAT,
    TK_PUNCT,
    TK_ARROW,       /* => */
    TK_PRAGMA,      /* #@ starts an annotation ... */
    TK_PRAGMA_END,  /* ... that the end of the line ends */
} HgTokKind;

typedef struct {
    HgTokKind kind;
    char punct;
    guint line, col;
    char *text; /* identifier or number as written; decoded bytes of a string (NUL-terminated) */
    gsize len;  /* of text */
} HgTok;

typedef struct {
    guint line, col;
} HgLoc;

/* ---------------------------------------------------------------- the parser */

/* Graphs in attributes and types in types nest; deeper text is refused rather than allowed to
 * exhaust the stack. Real models nest a few levels. */
#define HG_PARSE_MAX_DEPTH 64

typedef struct {
    GArray *toks; /* of HgTok, ending with TK_EOF */
    guint pos;
    guint depth; /* of graphs and types being parsed */
    HgModel *model;
    GError *error; /* the first error */
} HgParser;

/* ---------------------------------------------------------------- the lexer */

/* Free a token's text (the toks array's clear function). */
void hg_tok_clear(gpointer p);

/* Split text into p->toks (ending with TK_EOF); FALSE with p->error on a bad character or literal. */
gboolean hg_lex(HgParser *p, const char *text, gsize len);

/* ---------------------------------------------------------------- tokens */

/* Record the first error, at loc ("line L, column C: message"), and return FALSE. */
gboolean hg_parse_fail_at(HgParser *p, HgLoc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* The token k ahead of the current one (the last, TK_EOF, past the end), and the current one. */
const HgTok *hg_parse_peek_at(const HgParser *p, guint k);
const HgTok *hg_parse_peek(const HgParser *p);
HgLoc hg_parse_loc_of(const HgTok *t);
/* The current token, stepping past it (not past TK_EOF). */
const HgTok *hg_parse_advance(HgParser *p);
gboolean hg_parse_is_punct(const HgTok *t, char c);
gboolean hg_parse_is_word(const HgTok *t, const char *w);
/* Step past the punctuation c when it comes next. */
gboolean hg_parse_accept(HgParser *p, char c);
/* Fail at the next token: "expected WHAT, found X". */
gboolean hg_parse_expected(HgParser *p, const char *what);
/* Step past c, or fail: expected WHAT. */
gboolean hg_parse_expect(HgParser *p, char c, const char *what);

/* ---------------------------------------------------------------- names and literals */

/* A name: an identifier or a quoted string (which must hold no NUL). *out is NULL for "". */
gboolean hg_parse_name(HgParser *p, char **out, const char *what);
gboolean hg_parse_string(HgParser *p, char **out, const char *what);
gboolean hg_parse_int(HgParser *p, gint64 *out, const char *what);
/* Whether t is a float literal: a number, inf, nan or nan0xHEX. */
gboolean hg_parse_is_float_token(const HgTok *t);
/* Read a float literal as a value of float type dtype: its bits, in the low end of *bits. */
gboolean hg_parse_float_bits(HgParser *p, const HgTok *t, int dtype, guint64 *bits);

G_END_DECLS

#endif
