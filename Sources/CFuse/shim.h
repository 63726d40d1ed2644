#ifndef DOCSYNC_CFUSE_SHIM_H
#define DOCSYNC_CFUSE_SHIM_H

// libfuse picks its API by FUSE_USE_VERSION; 314 makes fuse_session_loop_mt take a
// fuse_loop_config built by fuse_loop_cfg_create() instead of a versioned macro.
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#endif
