/* Reading the members of a zip archive held in memory (internal; src/zip.c): what numpy's .npz files
 * need, stored and deflated members, ZIP64 included. */
#ifndef HG_ZIP_H
#define HG_ZIP_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    char *name;    /* as stored in the archive */
    guint8 *data;  /* the member's bytes, inflated */
    gsize size;
} HgZipMember;

void hg_zip_member_free(HgZipMember *m);

/* Every member of the archive in buf (len bytes), in central-directory order, inflated and checked
 * against its CRC-32. Returns a new array of HgZipMember* (with its free function), or NULL with an
 * HG_ERROR_PARSE (not a zip archive, truncated or inconsistent records, a CRC that does not match) or
 * HG_ERROR_UNSUPPORTED (an encrypted member, a compression method other than stored or deflate, a
 * multi-disk archive) that says what is wrong and, for a member, names it. Directory entries (a name
 * ending in '/') are skipped. */
GPtrArray *hg_zip_read(const guint8 *buf, gsize len, GError **error);

G_END_DECLS

#endif
