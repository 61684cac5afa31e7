// The shim's private jemalloc (private_jemalloc.cmake): its public functions under their je_
// names. Included plainly, <jemalloc/jemalloc.h> would declare the unprefixed names, which the
// shim does not link and must never call.
#pragma once

#define JEMALLOC_NO_RENAME
#include <jemalloc/jemalloc.h>
