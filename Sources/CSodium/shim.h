#ifndef DOCSYNC_CSODIUM_SHIM_H
#define DOCSYNC_CSODIUM_SHIM_H

// Debian's libsodium-dev: BLAKE2b for chunk ids (keyed per library once libraries are
// encrypted) and, for end-to-end encryption, Argon2id, which swift-crypto lacks.
#include <sodium.h>

#endif
