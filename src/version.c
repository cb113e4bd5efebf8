/* The library's version, from meson's project() (HG_VERSION). */
#include "halfguard/halfguard.h"

const char *
hg_version(void)
{
    return HG_VERSION;
}
