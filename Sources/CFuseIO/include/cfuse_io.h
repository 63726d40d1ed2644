#ifndef DOCSYNC_CFUSE_IO_H
#define DOCSYNC_CFUSE_IO_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stdint.h>

// FUSE passthrough (Linux 6.9 and later): the kernel reads and writes a regular file straight
// from a descriptor that the file system registered, with no request per read or write.
// libfuse 3.14 predates it, so these hooks sit between libfuse and /dev/fuse: they ask for it
// in the INIT reply and mark the open replies that carry a backing file.

/// Installs the hooks on a mounted session; `want` says whether to ask for passthrough,
/// `want_io_uring` whether to ask for FUSE over io_uring, `want_killpriv_v2` whether to ask for
/// FUSE_HANDLE_KILLPRIV_V2 (which libfuse 3.14 does not know). Returns 0, or a negative errno.
int cfuse_io_install(struct fuse_session *session, int want, int want_io_uring,
                     int want_killpriv_v2);

/// In a write callback: whether the kernel asked this write to clear the setuid and setgid bits
/// (FUSE_WRITE_KILL_SUIDGID: the writer lacks CAP_FSETID), a flag libfuse 3.14 drops.
int cfuse_io_write_kills_suidgid(void);

/// Whether the kernel accepted passthrough in INIT (known once the first request is served).
int cfuse_io_passthrough_active(void);

/// Registers `fd` with the kernel as a backing file: its id, or -errno.
int cfuse_io_backing_open(struct fuse_session *session, int fd);

/// Drops a backing id; the kernel keeps the file for opens that still use it.
int cfuse_io_backing_close(struct fuse_session *session, int backing_id);

/// fuse_reply_open and fuse_reply_create, with the reply marked to pass through `backing_id`.
int cfuse_io_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int backing_id);
int cfuse_io_reply_create(fuse_req_t req, const struct fuse_entry_param *entry,
                          const struct fuse_file_info *fi, int backing_id);

// FUSE over io_uring (Linux 6.14 and later, with the fuse module's enable_uring on): after
// INIT, one thread per possible CPU registers ring entries on /dev/fuse and serves the
// requests the kernel puts in them through libfuse's own request handling; forgets,
// interrupts and notifications stay on /dev/fuse.

/// 1 once a request was served from a ring, 0 before (or when not asked for), -errno when
/// registering failed and requests stayed on /dev/fuse.
int cfuse_io_uring_state(void);

/// How many requests the rings have served.
uint64_t cfuse_io_uring_requests(void);

/// How many queues (one per possible CPU) the rings have; 0 when they never started.
int cfuse_io_uring_queues(void);

/// Stops the queue threads: call once the session loop returned, before the session is
/// destroyed.
void cfuse_io_uring_stop(void);

#endif
