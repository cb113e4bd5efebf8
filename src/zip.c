/* A zip reader for numpy's .npz files: np.savez writes stored members, np.savez_compressed deflated
 * ones, both through Python's zipfile with force_zip64, so local headers may carry ZIP64 sizes.
 *
 * The central directory is the one source of truth for names, sizes, methods and offsets (a local
 * header written to a stream has no sizes); the local header only says where the data starts. Every
 * offset and size is checked against the buffer before use, a deflated member may not claim more
 * than deflate can produce from its compressed size (1032:1), and every member's CRC-32 is checked,
 * so a truncated or corrupt file is an error, never a short array. Deflate itself is GIO's
 * GZlibDecompressor (raw format), part of GLib: no library beyond the ones halfguard already uses.
 *
 *   [local header + data]...  central directory  [ZIP64 end record, locator]  end record
 */
#include "zip.h"

#include <gio/gio.h>
#include <string.h>

#include "halfguard/ir.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define DEFLATE_MAX_RATIO 1032u

void
hg_zip_member_free(HgZipMember *m)
{
    if (!m)
        return;
    g_free(m->name);
    g_free(m->data);
    g_free(m);
}

static guint32
u16(const guint8 *p)
{
    return (guint32)p[0] | (guint32)p[1] << 8;
}

static guint32
u32(const guint8 *p)
{
    return (guint32)p[0] | (guint32)p[1] << 8 | (guint32)p[2] << 16 | (guint32)p[3] << 24;
}

static guint64
u64(const guint8 *p)
{
    return (guint64)u32(p) | (guint64)u32(p + 4) << 32;
}

static gboolean
bad(GError **error, const char *member, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
bad(GError **error, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (member)
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "zip member '%s': %s", member, msg);
    else
        g_set_error(error, HG_ERROR, HG_ERROR_PARSE, "not a valid zip archive: %s", msg);
    return FALSE;
}

static guint32
crc32(const guint8 *p, gsize n)
{
    static guint32 table[256];
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        for (guint32 i = 0; i < 256; i++) {
            guint32 c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        g_once_init_leave(&once, 1);
    }
    guint32 c = 0xffffffffu;
    for (gsize i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* Inflate the raw deflate stream in (n bytes) into exactly out_len bytes of out, which has room for
 * one more: a stream that inflates to more than its declared size fills it. */
static gboolean
inflate(const guint8 *in, gsize n, guint8 *out, gsize out_len, const char *member, GError **error)
{
    g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_RAW);
    gsize done_in = 0, done_out = 0;
    for (;;) {
        gsize r = 0, w = 0;
        g_autoptr(GError) e = NULL;
        GConverterResult res = g_converter_convert(G_CONVERTER(z), in + done_in, n - done_in, out + done_out,
                                                   out_len + 1 - done_out, G_CONVERTER_INPUT_AT_END, &r, &w, &e);
        done_in += r;
        done_out += w;
        if (res == G_CONVERTER_ERROR)
            return bad(error, member, "its deflate data is corrupt or longer than declared (%s)", e->message);
        if (res == G_CONVERTER_FINISHED)
            break;
        if (r == 0 && w == 0)
            return bad(error, member, "its deflate data ends early");
    }
    if (done_out != out_len)
        return bad(error, member, "inflates to %" G_GSIZE_FORMAT " bytes, the archive declares %" G_GSIZE_FORMAT,
                   done_out, out_len);
    return TRUE;
}

/* The values a ZIP64 extra field (id 1) overrides, in their order, for those set to all ones. */
static gboolean
zip64_extra(const guint8 *extra, gsize n, guint64 *usize, guint64 *csize, guint64 *offset, const char *member,
            GError **error)
{
    for (gsize at = 0; at + 4 <= n;) {
        guint32 id = u16(extra + at), len = u16(extra + at + 2);
        if (at + 4 + len > n)
            return bad(error, member, "an extra field runs past its record");
        if (id == 1) {
            const guint8 *p = extra + at + 4, *end = p + len;
            guint64 *fields[] = {usize, csize, offset};
            for (guint i = 0; i < G_N_ELEMENTS(fields); i++) {
                if (*fields[i] != 0xffffffffu)
                    continue;
                if (p + 8 > end)
                    return bad(error, member, "its ZIP64 extra field is too short");
                *fields[i] = u64(p);
                p += 8;
            }
            return TRUE;
        }
        at += 4 + len;
    }
    return TRUE;
}

GPtrArray *
hg_zip_read(const guint8 *buf, gsize len, GError **error)
{
    g_return_val_if_fail(buf != NULL || len == 0, NULL);
    /* The end record: the last signature that leaves room for its comment. */
    gssize end = -1;
    for (gssize at = (gssize)len - 22; at >= 0 && at >= (gssize)len - 22 - 65535; at--)
        if (u32(buf + at) == SIG_END && (gsize)at + 22 + u16(buf + at + 20) == len) {
            end = at;
            break;
        }
    if (end < 0) {
        bad(error, NULL, "no end-of-central-directory record");
        return NULL;
    }
    const guint8 *e = buf + end;
    guint64 count = u16(e + 10), cd_size = u32(e + 12), cd_off = u32(e + 16);
    if (u16(e + 4) != 0 || u16(e + 6) != 0) {
        g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "multi-disk zip archives are not supported");
        return NULL;
    }
    if (count == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
        if (end < 20 || u32(buf + end - 20) != SIG_LOCATOR64) {
            bad(error, NULL, "a ZIP64 archive without its locator");
            return NULL;
        }
        guint64 at = u64(buf + end - 20 + 8);
        if (at > (guint64)end - 20 || (guint64)end - 20 - at < 56 || u32(buf + at) != SIG_END64) {
            bad(error, NULL, "the ZIP64 end record is missing");
            return NULL;
        }
        count = u64(buf + at + 32);
        cd_size = u64(buf + at + 40);
        cd_off = u64(buf + at + 48);
    }
    if (cd_off > len || cd_size > len - cd_off) {
        bad(error, NULL, "the central directory lies outside the file");
        return NULL;
    }
    g_autoptr(GPtrArray) members = g_ptr_array_new_with_free_func((GDestroyNotify)hg_zip_member_free);
    const guint8 *cd = buf + cd_off, *cd_end = cd + cd_size;
    for (guint64 i = 0; i < count; i++) {
        if ((gsize)(cd_end - cd) < 46 || u32(cd) != SIG_CENTRAL) {
            bad(error, NULL, "central directory entry %" G_GUINT64_FORMAT " is missing or truncated", i);
            return NULL;
        }
        guint32 flags = u16(cd + 8), method = u16(cd + 10), crc = u32(cd + 16);
        guint64 csize = u32(cd + 20), usize = u32(cd + 24), offset = u32(cd + 42);
        gsize name_len = u16(cd + 28), extra_len = u16(cd + 30), comment_len = u16(cd + 32);
        if ((gsize)(cd_end - cd) < 46 + name_len + extra_len + comment_len) {
            bad(error, NULL, "central directory entry %" G_GUINT64_FORMAT " is truncated", i);
            return NULL;
        }
        g_autofree char *name = g_strndup((const char *)cd + 46, name_len);
        if (!zip64_extra(cd + 46 + name_len, extra_len, &usize, &csize, &offset, name, error))
            return NULL;
        cd += 46 + name_len + extra_len + comment_len;
        if (name_len && name[name_len - 1] == '/')
            continue;
        if (flags & 1) {
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED, "zip member '%s' is encrypted", name);
            return NULL;
        }
        if (method != 0 && method != 8) {
            g_set_error(error, HG_ERROR, HG_ERROR_UNSUPPORTED,
                        "zip member '%s' uses compression method %u (only stored and deflate are read)", name,
                        method);
            return NULL;
        }
        if (offset > len || len - offset < 30 || u32(buf + offset) != SIG_LOCAL) {
            bad(error, name, "its local header is missing");
            return NULL;
        }
        guint64 data = offset + 30 + u16(buf + offset + 26) + u16(buf + offset + 28);
        if (data > len || csize > len - data) {
            bad(error, name, "its data runs past the end of the file");
            return NULL;
        }
        if ((method == 0 && usize != csize) || (method == 8 && usize > csize * DEFLATE_MAX_RATIO + 64) ||
            usize > G_MAXSIZE - 1) {
            bad(error, name, "its sizes are inconsistent (%" G_GUINT64_FORMAT " bytes from %" G_GUINT64_FORMAT ")",
                usize, csize);
            return NULL;
        }
        HgZipMember *m = g_new0(HgZipMember, 1);
        m->name = g_steal_pointer(&name);
        m->size = (gsize)usize;
        m->data = g_malloc(m->size + 1);
        g_ptr_array_add(members, m);
        if (method == 0)
            memcpy(m->data, buf + data, m->size);
        else if (!inflate(buf + data, (gsize)csize, m->data, m->size, m->name, error))
            return NULL;
        if (crc32(m->data, m->size) != crc) {
            bad(error, m->name, "its CRC-32 does not match: the file is corrupt");
            return NULL;
        }
    }
    return g_steal_pointer(&members);
}
