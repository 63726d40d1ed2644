#ifndef DOCSYNC_CFUSE_SHIM_H
#define DOCSYNC_CFUSE_SHIM_H

// libfuse picks its API by FUSE_USE_VERSION; 314 makes fuse_session_loop_mt take a
// fuse_loop_config built by fuse_loop_cfg_create() instead of a versioned macro.
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// FUSE_BUFVEC_INIT is a function-like macro, which Swift does not import; this builds the
// one-buffer vector that points at a range of an open file (as passthrough_ll's lo_read does)
// so libfuse reads it with pread, or splices it when the kernel allows, without a copy
// through Swift.
static inline int cfuse_reply_file_range(fuse_req_t req, int fd, off_t offset, size_t count) {
  struct fuse_bufvec buffer = FUSE_BUFVEC_INIT(count);
  buffer.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
  buffer.buf[0].fd = fd;
  buffer.buf[0].pos = offset;
  return fuse_reply_data(req, &buffer, FUSE_BUF_SPLICE_MOVE);
}

// fuse_file_info's open flags are C bit-fields; writing them here keeps the layout in the
// compiler that defined it rather than relying on how Swift imports bit-fields.
static inline void cfuse_set_open_flags(struct fuse_file_info *fi, uint64_t handle, int direct_io,
                                        int keep_cache, int nonseekable, int cache_readdir,
                                        int noflush) {
  fi->fh = handle;
  fi->direct_io = direct_io ? 1 : 0;
  fi->keep_cache = keep_cache ? 1 : 0;
  fi->nonseekable = nonseekable ? 1 : 0;
  fi->cache_readdir = cache_readdir ? 1 : 0;
  fi->noflush = noflush ? 1 : 0;
}

#endif
