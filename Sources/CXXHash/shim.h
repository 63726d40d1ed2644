#ifndef DOCSYNC_CXXHASH_SHIM_H
#define DOCSYNC_CXXHASH_SHIM_H

// Debian's libxxhash-dev: the SQLite hub's check of its own stored objects (XXH64).
#include <xxhash.h>

#endif
