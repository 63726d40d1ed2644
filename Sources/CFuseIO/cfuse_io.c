// splice(2)
#define _GNU_SOURCE
#include "cfuse_io.h"

#include "fuse_uring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

// The kernel ABI parts that libfuse 3.14's headers do not have (include/uapi/linux/fuse.h).
enum {
  kOpcodeWrite = 16,
  kOpcodeInit = 26,
  kInHeaderSize = 40,
  kOutHeaderSize = 16,
  kOpenOutSize = 16,
  kInitOutFullSize = 64,
};
static const uint32_t kInitExt = 1u << 30;           // flags: flags2 is meaningful
static const uint32_t kWritebackCache = 1u << 16;    // flags
static const uint32_t kPassthroughFlags2 = 1u << 5;  // FUSE_PASSTHROUGH (1ULL << 37)
static const uint32_t kIoUringFlags2 = 1u << 9;      // FUSE_OVER_IO_URING (1ULL << 41)
static const uint32_t kMaxPages = 1u << 22;          // flags: max_pages is meaningful
static const uint32_t kKillPrivV2 = 1u << 28;        // flags: FUSE_HANDLE_KILLPRIV_V2
static const uint32_t kWriteKillSuidGid = 1u << 2;   // fuse_write_in.write_flags
static const uint32_t kOpenPassthrough = 1u << 7;    // FOPEN_PASSTHROUGH
// What is kept beside it: NOFLUSH and PARALLEL_DIRECT_WRITES. KEEP_CACHE would fail the open
// with EIO (there is no cache to keep). DIRECT_IO, which the kernel allows too
// (FOPEN_PASSTHROUGH_MASK), is dropped: it would send the file's reads and writes to the daemon
// instead of the backing file (fuse_file_write_iter checks it before passthrough), and a
// write-only open asks for it only to skip the page cache that passthrough skips anyway.
static const uint32_t kOpenPassthroughAllowed = (1u << 5) | (1u << 6);

struct backing_map {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
#define BACKING_OPEN _IOW(229, 1, struct backing_map)
#define BACKING_CLOSE _IOW(229, 2, uint32_t)

static atomic_int want_passthrough;
static atomic_int kernel_offers;
static atomic_int want_killpriv;
static atomic_int kernel_offers_killpriv;
static atomic_int want_uring;
static atomic_int kernel_offers_uring;
// Set when the INIT reply asked for io_uring: the rings start once the kernel has it.
static atomic_int uring_agreed;
static size_t uring_payload_size;
static struct fuse_session *installed_session;
static atomic_ullong init_unique;
static atomic_int active;
// The open reply a worker thread is about to send: libfuse writes it on the same thread.
static _Thread_local int reply_backing_id;
// Whether the request this thread is serving is a WRITE with FUSE_WRITE_KILL_SUIDGID, which
// libfuse 3.14's do_write does not pass on. A worker serves the request it read (or took from
// its ring) on the same thread, so the flag is the request's until the next one arrives.
static _Thread_local int request_kills_suidgid;

void cfuse_io_note_request(const uint8_t *bytes, size_t len) {
  request_kills_suidgid = 0;
  if (len < kInHeaderSize + 24) return;
  uint32_t opcode, write_flags;
  memcpy(&opcode, bytes + 4, 4);
  if (opcode != kOpcodeWrite) return;
  // struct fuse_write_in: fh, offset, size, then write_flags.
  memcpy(&write_flags, bytes + kInHeaderSize + 20, 4);
  request_kills_suidgid = (write_flags & kWriteKillSuidGid) != 0;
}

int cfuse_io_write_kills_suidgid(void) { return request_kills_suidgid; }

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata) {
  (void)userdata;
  ssize_t n = read(fd, buf, len);
  if (n > 0) cfuse_io_note_request(buf, (size_t)n);
  if (n >= kInHeaderSize + 20) {
    const uint8_t *bytes = buf;
    uint32_t opcode;
    memcpy(&opcode, bytes + 4, 4);
    if (opcode == kOpcodeInit) {
      uint64_t unique;
      uint32_t flags, flags2;
      memcpy(&unique, bytes + 8, 8);
      memcpy(&flags, bytes + kInHeaderSize + 12, 4);
      memcpy(&flags2, bytes + kInHeaderSize + 16, 4);
      atomic_store(&init_unique, unique);
      atomic_store(&kernel_offers, (flags & kInitExt) && (flags2 & kPassthroughFlags2));
      atomic_store(&kernel_offers_uring, (flags & kInitExt) && (flags2 & kIoUringFlags2));
      atomic_store(&kernel_offers_killpriv, (flags & kKillPrivV2) != 0);
    }
  }
  return n;
}

static void patch_init(struct iovec *iov, int count) {
  if (count < 2 || iov[1].iov_len < kInitOutFullSize) return;
  uint8_t *out = iov[1].iov_base;
  uint32_t flags, flags2;
  memcpy(&flags, out + 12, 4);
  memcpy(&flags2, out + 32, 4);
  // The kernel refuses passthrough together with the writeback cache.
  if (atomic_load(&want_passthrough) && atomic_load(&kernel_offers) &&
      !(flags & kWritebackCache)) {
    uint32_t depth = 1;
    flags |= kInitExt;
    flags2 |= kPassthroughFlags2;
    memcpy(out + 36, &depth, 4);  // max_stack_depth: backing files on a plain file system
    atomic_store(&active, 1);
  }
  // With FUSE_HANDLE_KILLPRIV_V2 the kernel marks the super block SB_NOSEC (process_init_reply),
  // so after one GETXATTR of security.capability an inode with no setuid or setgid bit is
  // S_NOSEC and later writes ask nothing; the file system then clears those bits itself on a
  // write (FUSE_WRITE_KILL_SUIDGID), a truncate and a chown (FATTR_KILL_SUIDGID).
  if (atomic_load(&want_killpriv) && atomic_load(&kernel_offers_killpriv)) flags |= kKillPrivV2;
  // Once the kernel has io_uring it holds every request until all queues are registered, so
  // it is asked for only where this process can make the rings.
  if (atomic_load(&want_uring) && atomic_load(&kernel_offers_uring) && fuse_uring_probe()) {
    uint32_t max_write;
    uint16_t max_pages = 0;
    memcpy(&max_write, out + 20, 4);
    if (flags & kMaxPages) memcpy(&max_pages, out + 28, 2);
    // The kernel wants payload buffers of max(FUSE_MIN_READ_BUFFER, max_write,
    // max_pages pages) (fuse_uring_create); 256 pages is the most it allows by default.
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = 256 * page;
    if (max_write > size) size = max_write;
    if ((size_t)max_pages * page > size) size = (size_t)max_pages * page;
    uring_payload_size = size;
    flags |= kInitExt;
    flags2 |= kIoUringFlags2;
    atomic_store(&uring_agreed, 1);
  }
  memcpy(out + 12, &flags, 4);
  memcpy(out + 32, &flags2, 4);
}

// Sets FOPEN_PASSTHROUGH and the backing id in the fuse_open_out that ends the reply.
static void patch_open(struct iovec *iov, int count, int backing_id) {
  struct iovec *last = &iov[count - 1];
  if (count < 2 || last->iov_len < kOpenOutSize) return;
  uint8_t *open_out = (uint8_t *)last->iov_base + last->iov_len - kOpenOutSize;
  uint32_t open_flags;
  int32_t id = backing_id;
  memcpy(&open_flags, open_out + 8, 4);
  open_flags = (open_flags & kOpenPassthroughAllowed) | kOpenPassthrough;
  memcpy(open_out + 8, &open_flags, 4);
  memcpy(open_out + 12, &id, 4);
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata) {
  (void)userdata;
  int init_reply = 0;
  if (count >= 1 && iov[0].iov_len == kOutHeaderSize) {
    const uint8_t *header = iov[0].iov_base;
    int32_t error;
    uint64_t unique;
    memcpy(&error, header + 4, 4);
    memcpy(&unique, header + 8, 8);
    if (error == 0 && reply_backing_id > 0) {
      patch_open(iov, count, reply_backing_id);
    } else if (error == 0 && unique == atomic_load(&init_unique)) {
      patch_init(iov, count);
      init_reply = 1;
    }
    // A reply to a request that came on a ring goes back in its ring entry.
    ssize_t written = fuse_uring_reply(unique, iov, count);
    if (written >= 0) return written;
  }
  ssize_t written = writev(fd, iov, count);
  // The kernel has taken the INIT reply once writev returns (fuse_dev_do_write ends the
  // request synchronously), so registering now finds the connection initialised.
  if (init_reply && written > 0 && atomic_exchange(&uring_agreed, 0)) {
    fuse_uring_start(installed_session, uring_payload_size);
  }
  return written;
}

static ssize_t hook_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                           unsigned int flags, void *userdata) {
  (void)userdata;
  // libfuse splices a read reply from a pipe; one for a ring request is read out of the pipe
  // into the ring entry instead.
  ssize_t taken = fuse_uring_reply_from_pipe(fdin, len);
  if (taken > 0) return taken;
  if (taken < 0) {
    errno = (int)-taken;
    return -1;
  }
  return splice(fdin, offin, fdout, offout, len, flags);
}

int cfuse_io_install(struct fuse_session *session, int want, int want_io_uring,
                     int want_killpriv_v2) {
  atomic_store(&want_passthrough, want ? 1 : 0);
  atomic_store(&want_killpriv, want_killpriv_v2 ? 1 : 0);
  atomic_store(&want_uring, want_io_uring ? 1 : 0);
  installed_session = session;
  struct fuse_custom_io io = {
      .writev = hook_writev,
      // No splice_receive: every request, INIT among them, then arrives through hook_read.
      .read = hook_read,
      .splice_send = hook_splice,
  };
  return fuse_session_custom_io(session, &io, fuse_session_fd(session));
}

int cfuse_io_passthrough_active(void) { return atomic_load(&active); }

int cfuse_io_backing_open(struct fuse_session *session, int fd) {
  struct backing_map map = {.fd = fd, .flags = 0, .padding = 0};
  int id = ioctl(fuse_session_fd(session), BACKING_OPEN, &map);
  return id < 0 ? -errno : id;
}

int cfuse_io_backing_close(struct fuse_session *session, int backing_id) {
  uint32_t id = (uint32_t)backing_id;
  return ioctl(fuse_session_fd(session), BACKING_CLOSE, &id) < 0 ? -errno : 0;
}

int cfuse_io_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int backing_id) {
  reply_backing_id = backing_id;
  int result = fuse_reply_open(req, fi);
  reply_backing_id = 0;
  return result;
}

int cfuse_io_reply_create(fuse_req_t req, const struct fuse_entry_param *entry,
                          const struct fuse_file_info *fi, int backing_id) {
  reply_backing_id = backing_id;
  int result = fuse_reply_create(req, entry, fi);
  reply_backing_id = 0;
  return result;
}
