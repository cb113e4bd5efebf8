/* convert --dot and check --dot (src/dot.c): the decision drawn with Graphviz. Not part of the
 * library. */
#ifndef HG_DOT_H
#define HG_DOT_H

#include "halfguard/halfguard.h"

/* The nodes of a graph before convert ran (their ops and inputs by name), to tell what a pass
 * rewrote. */
typedef struct DotSnapshot DotSnapshot;
DotSnapshot *dot_snapshot(const HgGraph *g);
void dot_snapshot_free(DotSnapshot *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DotSnapshot, dot_snapshot_free)

/* Was halfguard built with Graphviz? */
gboolean dot_available(void);
/* Draw converted graph g (before: its snapshot before convert, NULL: nothing marked rewritten) to
 * path: DOT, or SVG when path ends in .svg; written atomically (hg_write_file). title heads it.
 * FALSE with HG_ERROR_OUTPUT naming path, or HG_ERROR_USAGE in a build without Graphviz. */
gboolean dot_write_convert(const char *path, const HgGraph *g, const DotSnapshot *before, const char *title,
                           GError **error);
/* Draw g with check's findings r (valid for g as it is). */
gboolean dot_write_check(const char *path, const HgGraph *g, const HgCheckResult *r, const char *title,
                         GError **error);

#endif
