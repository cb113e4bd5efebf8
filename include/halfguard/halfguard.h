/* halfguard: the public API in one include. */
#ifndef HALFGUARD_H
#define HALFGUARD_H

#include <halfguard/check.h>
#include <halfguard/feeds.h>
#include <halfguard/inspect.h>
#include <halfguard/ir.h>
#include <halfguard/io.h>
#include <halfguard/pass.h>
#include <halfguard/run.h>
#include <halfguard/text.h>
#include <halfguard/typecheck.h>

G_BEGIN_DECLS

/* The library's version, "MAJOR.MINOR.PATCH". */
HG_API const char *hg_version(void);

/* s as one printable line (g_free): newline, carriage return and tab become \n, \r and \t, other
 * control characters \xNN (C1 ones \u00NN), and each byte that is not part of valid UTF-8 \xNN; the
 * rest, backslashes included, is kept. For everything a model names (nodes, values, op types, files)
 * in text output, so that a name cannot forge a line or reach the terminal. NULL gives "(null)". */
HG_API char *hg_escape_text(const char *s);

G_END_DECLS

#endif
