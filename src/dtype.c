/* Element types: names as ONNX's text syntax writes them, and sizes. */
#include "halfguard/ir.h"

#include <string.h>

static const struct {
    const char *name;
    guint bits;
} dtypes[] = {
    [HG_DTYPE_UNDEFINED] = {NULL, 0},
    [HG_DTYPE_FLOAT] = {"float", 32},
    [HG_DTYPE_UINT8] = {"uint8", 8},
    [HG_DTYPE_INT8] = {"int8", 8},
    [HG_DTYPE_UINT16] = {"uint16", 16},
    [HG_DTYPE_INT16] = {"int16", 16},
    [HG_DTYPE_INT32] = {"int32", 32},
    [HG_DTYPE_INT64] = {"int64", 64},
    [HG_DTYPE_STRING] = {"string", 0},
    [HG_DTYPE_BOOL] = {"bool", 8},
    [HG_DTYPE_FLOAT16] = {"float16", 16},
    [HG_DTYPE_DOUBLE] = {"double", 64},
    [HG_DTYPE_UINT32] = {"uint32", 32},
    [HG_DTYPE_UINT64] = {"uint64", 64},
    [HG_DTYPE_COMPLEX64] = {"complex64", 64},
    [HG_DTYPE_COMPLEX128] = {"complex128", 128},
    [HG_DTYPE_BFLOAT16] = {"bfloat16", 16},
    [HG_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 8},
    [HG_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 8},
    [HG_DTYPE_FLOAT8E5M2] = {"float8e5m2", 8},
    [HG_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 8},
    [HG_DTYPE_UINT4] = {"uint4", 4},
    [HG_DTYPE_INT4] = {"int4", 4},
};
G_STATIC_ASSERT(G_N_ELEMENTS(dtypes) == HG_DTYPE_COUNT);

const char *
hg_dtype_name(HgDType dtype)
{
    if (dtype < 0 || dtype >= HG_DTYPE_COUNT)
        return NULL;
    return dtypes[dtype].name;
}

HgDType
hg_dtype_from_name(const char *name)
{
    g_return_val_if_fail(name != NULL, HG_DTYPE_UNDEFINED);
    for (int i = 1; i < HG_DTYPE_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return (HgDType)i;
    return HG_DTYPE_UNDEFINED;
}

guint
hg_dtype_bits(HgDType dtype)
{
    if (dtype < 0 || dtype >= HG_DTYPE_COUNT)
        return 0;
    return dtypes[dtype].bits;
}

gboolean
hg_dtype_is_int(HgDType dtype)
{
    switch (dtype) {
    case HG_DTYPE_INT8: case HG_DTYPE_INT16: case HG_DTYPE_INT32: case HG_DTYPE_INT64:
    case HG_DTYPE_UINT8: case HG_DTYPE_UINT16: case HG_DTYPE_UINT32: case HG_DTYPE_UINT64:
        return TRUE;
    default:
        return FALSE;
    }
}

gboolean
hg_dtype_is_float(HgDType dtype)
{
    switch (dtype) {
    case HG_DTYPE_FLOAT:
    case HG_DTYPE_FLOAT16:
    case HG_DTYPE_DOUBLE:
    case HG_DTYPE_BFLOAT16:
        return TRUE;
    default:
        return FALSE;
    }
}
