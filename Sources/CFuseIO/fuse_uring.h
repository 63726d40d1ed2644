#ifndef DOCSYNC_FUSE_URING_H
#define DOCSYNC_FUSE_URING_H

// FUSE over io_uring (Linux 6.14 and later), private to CFuseIO: cfuse_io.c decides when the
// rings start (after the INIT reply that asked for them) and hands over the replies that
// belong to requests which arrived on a ring.

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/// Whether this process can make the rings at all (io_uring with 128-byte SQEs); asked before
/// INIT, because once the kernel agrees to io_uring it holds every request until the rings
/// are registered.
int fuse_uring_probe(void);

/// Starts one queue thread per possible CPU; each registers `depth` entries whose payload
/// buffers hold `payload_size` bytes. Called once, right after the INIT reply was written.
void fuse_uring_start(struct fuse_session *session, size_t payload_size);

/// When `unique` is a request that arrived on a ring, puts the reply in its ring entry and
/// returns the reply's length; otherwise -1, and the reply goes to /dev/fuse.
ssize_t fuse_uring_reply(uint64_t unique, const struct iovec *iov, int count);

/// When the calling thread is serving a ring request, takes a spliced reply of `len` bytes
/// out of the pipe `fd` into the ring entry and returns `len` (or -errno); otherwise 0.
ssize_t fuse_uring_reply_from_pipe(int fd, size_t len);

/// Notes what the hooks need to know of a request before libfuse serves it on this thread (the
/// kill-suid flag of a WRITE); both /dev/fuse's reads and the rings' requests pass through it.
void cfuse_io_note_request(const uint8_t *bytes, size_t len);

#endif
