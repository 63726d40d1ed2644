// Debian's copy of BLAKE3's reference code (see include/CBlake3.h).
#include "/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c"
