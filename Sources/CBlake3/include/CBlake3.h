#ifndef DOCSYNC_CBLAKE3_H
#define DOCSYNC_CBLAKE3_H

// BLAKE3, the hash of content object ids (docs/content-layer.md), from the BLAKE3 team's own C
// implementation as Debian 12 ships it in librust-blake3-dev (Debian has no libblake3): these
// files compile Debian's sources in place, so the code is Debian's, patched and updated there.
#include "/usr/share/cargo/registry/blake3-1.3.1/c/blake3.h"

#endif
