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

G_END_DECLS

#endif
