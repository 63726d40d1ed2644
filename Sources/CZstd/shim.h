#ifndef DOCSYNC_CZSTD_SHIM_H
#define DOCSYNC_CZSTD_SHIM_H

// Debian's libzstd-dev: chunks are compressed one by one before anything else transforms them.
#include <zstd.h>

// ZSTD_isError's result is an unsigned, and ZSTD_CONTENTSIZE_* are macros of a type Swift
// imports as a plain integer literal without its unsigned width; these name them as functions.
static inline unsigned long long czstd_content_size_unknown(void) { return ZSTD_CONTENTSIZE_UNKNOWN; }
static inline unsigned long long czstd_content_size_error(void) { return ZSTD_CONTENTSIZE_ERROR; }

#endif
