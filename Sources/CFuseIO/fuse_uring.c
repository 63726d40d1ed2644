// pthread_setaffinity_np, CPU_SET
#define _GNU_SOURCE
#include "fuse_uring.h"

#include "cfuse_io.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

// The kernel's FUSE-over-io_uring ABI (include/uapi/linux/fuse.h, protocol 7.42), which
// neither libfuse 3.14 nor Debian 12's kernel headers have.
enum {
  kCmdRegister = 1,        // FUSE_IO_URING_CMD_REGISTER
  kCmdCommitAndFetch = 2,  // FUSE_IO_URING_CMD_COMMIT_AND_FETCH
  kInHeaderSize = 40,      // struct fuse_in_header
  kOutHeaderSize = 16,     // struct fuse_out_header
  kOpInSize = 128,         // FUSE_URING_OP_IN_OUT_SZ
};

struct ring_ent_in_out {
  uint64_t flags;
  uint64_t commit_id;  // the request's unique, echoed in COMMIT_AND_FETCH
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};

// iov[0] of a registered entry: the kernel writes fuse_in_header into in_out and the request's
// fixed-size argument into op_in; the reply's fuse_out_header goes back in in_out.
struct ring_req_header {
  uint8_t in_out[128];
  uint8_t op_in[kOpInSize];
  struct ring_ent_in_out ent;
};

// The command area of a 128-byte SQE.
struct ring_cmd_req {
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};

// Entries per queue: the kernel fills idle ones while the queue thread serves another.
enum { kDepth = 8 };
// Room in front of the payload, where the in header and op_in are moved so that libfuse sees
// one contiguous request, as read(2) on /dev/fuse gives it, without copying the payload.
enum { kFront = 256 };
// user_data of the eventfd read that wakes a queue thread.
static const uint64_t kWakeTag = UINT64_MAX;

enum entry_state {
  kRegistering,  // REGISTER sent, no request yet
  kInKernel,     // waiting for a request
  kServing,      // libfuse is working on it
  kReplied,      // the reply is in the entry's buffers; commit it
  kDead,         // the kernel ended it (teardown) or registration failed
};

struct ring_queue;

struct ring_entry {
  struct ring_req_header header;
  struct ring_queue *queue;
  uint8_t *buffer;  // kFront + payload_size
  struct iovec iov[2];
  _Atomic uint64_t unique;
  _Atomic int state;
};

struct ring_queue {
  int qid;
  int ring_fd;
  int event_fd;
  uint64_t event_value;
  pthread_t thread;
  int started;
  unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
  unsigned *cq_head, *cq_tail, *cq_mask;
  uint8_t *sqes;
  struct io_uring_cqe *cqes;
  void *sq_map, *cq_map, *sqe_map;
  size_t sq_map_len, cq_map_len, sqe_map_len;
  unsigned to_submit;
  struct ring_entry entries[kDepth];
};

static struct fuse_session *ring_session;
static int fuse_fd = -1;
static size_t payload_capacity;
static int queue_count;
// Published once every queue is set up; replies on libfuse's worker threads read it.
static struct ring_queue *_Atomic queues;
static atomic_int stopping;
static atomic_int serving_logged;
static atomic_int rings_state;  // 0 off, 1 serving, -errno failed
static atomic_ullong served;
// The entry the calling queue thread is serving: its reply comes back on this thread.
static _Thread_local struct ring_entry *current_entry;

static int ring_setup(unsigned entries, struct io_uring_params *params) {
  return (int)syscall(__NR_io_uring_setup, entries, params);
}

static int ring_enter(int fd, unsigned submit, unsigned wait, unsigned flags) {
  return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, NULL, 0);
}

int fuse_uring_probe(void) {
  struct io_uring_params params;
  memset(&params, 0, sizeof params);
  params.flags = IORING_SETUP_SQE128;
  int fd = ring_setup(2, &params);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

static void log_failure(const char *what, int error) {
  int expected = 0;
  // Said once; and once a ring served a request it stays the transport (the kernel never
  // switches back), so a later failure is no fallback.
  if (!atomic_compare_exchange_strong(&rings_state, &expected, -error)) return;
  fprintf(stderr, "docsync: FUSE over io_uring unavailable (%s: %s); serving requests over /dev/fuse\n",
          what, strerror(error));
}

static int map_ring(struct ring_queue *queue) {
  struct io_uring_params params;
  // One issuer and task work run only when the queue thread waits: the queue thread is the
  // only one that submits, and it waits in io_uring_enter anyway.
  unsigned flags[] = {
      IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_SQE128,
  };
  int fd = -1;
  for (size_t i = 0; i < sizeof flags / sizeof flags[0] && fd < 0; i++) {
    memset(&params, 0, sizeof params);
    params.flags = flags[i];
    fd = ring_setup(kDepth * 2, &params);
  }
  if (fd < 0) return -errno;
  queue->ring_fd = fd;
  queue->sq_map_len = params.sq_off.array + params.sq_entries * sizeof(unsigned);
  queue->cq_map_len = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
  int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) {
    if (queue->cq_map_len > queue->sq_map_len) queue->sq_map_len = queue->cq_map_len;
    queue->cq_map_len = queue->sq_map_len;
  }
  queue->sq_map = mmap(NULL, queue->sq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                       fd, IORING_OFF_SQ_RING);
  if (queue->sq_map == MAP_FAILED) return -errno;
  queue->cq_map = single ? queue->sq_map
                         : mmap(NULL, queue->cq_map_len, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
  if (queue->cq_map == MAP_FAILED) return -errno;
  queue->sqe_map_len = params.sq_entries * 2 * sizeof(struct io_uring_sqe);
  queue->sqe_map = mmap(NULL, queue->sqe_map_len, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
  if (queue->sqe_map == MAP_FAILED) return -errno;
  uint8_t *sq = queue->sq_map, *cq = queue->cq_map;
  queue->sq_head = (unsigned *)(sq + params.sq_off.head);
  queue->sq_tail = (unsigned *)(sq + params.sq_off.tail);
  queue->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
  queue->sq_array = (unsigned *)(sq + params.sq_off.array);
  queue->cq_head = (unsigned *)(cq + params.cq_off.head);
  queue->cq_tail = (unsigned *)(cq + params.cq_off.tail);
  queue->cq_mask = (unsigned *)(cq + params.cq_off.ring_mask);
  queue->cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);
  queue->sqes = queue->sqe_map;
  return 0;
}

static void unmap_ring(struct ring_queue *queue) {
  if (queue->sqe_map && queue->sqe_map != MAP_FAILED) munmap(queue->sqe_map, queue->sqe_map_len);
  if (queue->cq_map && queue->cq_map != MAP_FAILED && queue->cq_map != queue->sq_map)
    munmap(queue->cq_map, queue->cq_map_len);
  if (queue->sq_map && queue->sq_map != MAP_FAILED) munmap(queue->sq_map, queue->sq_map_len);
  // Closing the ring cancels the commands still registered: the kernel takes those entries
  // back (fuse_uring_cancel), so it never writes into the buffers freed below.
  if (queue->ring_fd >= 0) close(queue->ring_fd);
  queue->ring_fd = -1;
}

// Only the queue thread calls this; the ring is sized so that it never fills between two
// io_uring_enter calls (at most one SQE per entry plus the wake read).
static struct io_uring_sqe *next_sqe(struct ring_queue *queue) {
  unsigned tail = *queue->sq_tail;
  unsigned index = tail & *queue->sq_mask;
  struct io_uring_sqe *sqe = (struct io_uring_sqe *)(queue->sqes + index * 2 * sizeof *sqe);
  memset(sqe, 0, 2 * sizeof *sqe);
  queue->sq_array[index] = index;
  atomic_store_explicit((_Atomic unsigned *)queue->sq_tail, tail + 1, memory_order_release);
  queue->to_submit++;
  return sqe;
}

static void prepare_command(struct ring_queue *queue, int index, uint32_t op, uint64_t commit) {
  struct io_uring_sqe *sqe = next_sqe(queue);
  struct ring_entry *entry = &queue->entries[index];
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fuse_fd;
  sqe->cmd_op = op;
  sqe->user_data = (uint64_t)index;
  if (op == kCmdRegister) {
    sqe->addr = (uint64_t)(uintptr_t)entry->iov;
    sqe->len = 2;
  }
  struct ring_cmd_req request = {.flags = 0, .commit_id = commit, .qid = (uint16_t)queue->qid};
  memcpy(sqe->cmd, &request, sizeof request);
}

static void prepare_wake_read(struct ring_queue *queue) {
  struct io_uring_sqe *sqe = next_sqe(queue);
  sqe->opcode = IORING_OP_READ;
  sqe->fd = queue->event_fd;
  sqe->addr = (uint64_t)(uintptr_t)&queue->event_value;
  sqe->len = sizeof queue->event_value;
  sqe->user_data = kWakeTag;
}

static void commit(struct ring_queue *queue, int index) {
  struct ring_entry *entry = &queue->entries[index];
  uint64_t unique = atomic_load(&entry->unique);
  atomic_store(&entry->unique, 0);
  atomic_store(&entry->state, kInKernel);
  prepare_command(queue, index, kCmdCommitAndFetch, unique);
}

// Answers a request libfuse must not see (a header the kernel should never send) with EIO.
static void reply_error(struct ring_entry *entry, uint64_t unique, int error) {
  int32_t header[4] = {kOutHeaderSize, -error, 0, 0};
  memcpy(&header[2], &unique, 8);
  memcpy(entry->header.in_out, header, sizeof header);
  entry->header.ent.payload_sz = 0;
  atomic_store(&entry->state, kReplied);
}

static void serve(struct ring_queue *queue, int index) {
  struct ring_entry *entry = &queue->entries[index];
  uint32_t length;
  uint64_t unique;
  memcpy(&length, entry->header.in_out, 4);
  memcpy(&unique, entry->header.in_out + 8, 8);
  uint32_t payload = entry->header.ent.payload_sz;
  atomic_store(&entry->unique, unique);
  // The kernel sets the in header's len to the whole request (fuse_send_one and
  // fuse_request_queue_background_uring), so what is neither header nor payload is op_in.
  if (length < kInHeaderSize + payload || length - kInHeaderSize - payload > kOpInSize ||
      payload > payload_capacity) {
    reply_error(entry, unique, EIO);
  } else {
    size_t op_size = length - kInHeaderSize - payload;
    uint8_t *start = entry->buffer + kFront - op_size - kInHeaderSize;
    memcpy(start, entry->header.in_out, kInHeaderSize);
    memcpy(start + kInHeaderSize, entry->header.op_in, op_size);
    atomic_store(&entry->state, kServing);
    atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
    if (!atomic_exchange(&serving_logged, 1)) {
      atomic_store(&rings_state, 1);
      fprintf(stderr, "docsync: FUSE over io_uring: serving requests from %d queues\n",
              queue_count);
    }
    struct fuse_buf buffer = {.size = length, .flags = 0, .mem = start, .fd = -1, .pos = 0};
    current_entry = entry;
    cfuse_io_note_request(start, length);
    fuse_session_process_buf(ring_session, &buffer);
    current_entry = NULL;
  }
  // A reply that another thread sends later arrives through the eventfd instead.
  if (atomic_load(&entry->state) == kReplied) commit(queue, index);
}

static void commit_replied(struct ring_queue *queue) {
  for (int index = 0; index < kDepth; index++) {
    if (atomic_load(&queue->entries[index].state) == kReplied) commit(queue, index);
  }
}

static void handle_completion(struct ring_queue *queue, uint64_t tag, int32_t result) {
  if (tag == kWakeTag) {
    commit_replied(queue);
    if (!atomic_load(&stopping)) prepare_wake_read(queue);
    return;
  }
  if (tag >= kDepth) return;
  int index = (int)tag;
  struct ring_entry *entry = &queue->entries[index];
  if (result < 0) {
    // A failed REGISTER makes the kernel clear io_uring for the connection (fuse_uring_cmd),
    // so requests stay on /dev/fuse. -ENOTCONN, -ECONNABORTED and -ECANCELED end every entry
    // when the mount goes away (fuse_uring_entry_teardown, fuse_uring_cancel), one that never
    // had a request among them.
    int gone = result == -ENOTCONN || result == -ECONNABORTED || result == -ECANCELED;
    if (atomic_load(&entry->state) == kRegistering && !gone) {
      log_failure("registering a queue", -result);
    }
    atomic_store(&entry->state, kDead);
    return;
  }
  serve(queue, index);
}

// When no REGISTER reached the kernel, it would hold every request for rings that never
// come: an invalid REGISTER (no iovecs) makes it clear io_uring for the connection and wake
// them, so they go to /dev/fuse.
static void release_kernel(void) {
  struct ring_queue spare;
  memset(&spare, 0, sizeof spare);
  spare.ring_fd = -1;
  if (map_ring(&spare) == 0) {
    struct io_uring_sqe *sqe = next_sqe(&spare);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = fuse_fd;
    sqe->cmd_op = kCmdRegister;
    ring_enter(spare.ring_fd, spare.to_submit, 1, IORING_ENTER_GETEVENTS);
  }
  unmap_ring(&spare);
}

static void *queue_main(void *argument) {
  struct ring_queue *queue = argument;
  sigset_t all;
  sigfillset(&all);
  // Signals go to the threads that handle them (Session's loop thread), never here.
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(queue->qid, &cpus);
  // The kernel picks the queue of the CPU the caller runs on; serving it there keeps the
  // request's cache lines warm. A CPU that is offline only makes this fail.
  pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);

  int error = map_ring(queue);
  if (error != 0) {
    log_failure("setting up a ring", -error);
    release_kernel();
    return NULL;
  }
  for (int index = 0; index < kDepth; index++) {
    atomic_store(&queue->entries[index].state, kRegistering);
    prepare_command(queue, index, kCmdRegister, 0);
  }
  prepare_wake_read(queue);
  while (!atomic_load(&stopping)) {
    int entered = ring_enter(queue->ring_fd, queue->to_submit, 1, IORING_ENTER_GETEVENTS);
    if (entered < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EBUSY) continue;
      log_failure("waiting for requests", errno);
      break;
    }
    queue->to_submit -= (unsigned)entered < queue->to_submit ? (unsigned)entered : queue->to_submit;
    _Atomic unsigned *tail = (_Atomic unsigned *)queue->cq_tail;
    unsigned head = *queue->cq_head;
    while (head != atomic_load_explicit(tail, memory_order_acquire)) {
      struct io_uring_cqe cqe = queue->cqes[head & *queue->cq_mask];
      head++;
      atomic_store_explicit((_Atomic unsigned *)queue->cq_head, head, memory_order_release);
      handle_completion(queue, cqe.user_data, cqe.res);
    }
  }
  unmap_ring(queue);
  return NULL;
}

void fuse_uring_start(struct fuse_session *session, size_t payload_size) {
  ring_session = session;
  fuse_fd = fuse_session_fd(session);
  payload_capacity = payload_size;
  // The kernel makes one queue per possible CPU (num_possible_cpus) and is ready only when
  // every one of them has an entry.
  queue_count = get_nprocs_conf();
  struct ring_queue *all = calloc((size_t)queue_count, sizeof *all);
  if (all == NULL) {
    log_failure("allocating queues", ENOMEM);
    release_kernel();
    return;
  }
  atomic_store(&queues, all);
  for (int qid = 0; qid < queue_count; qid++) {
    struct ring_queue *queue = &all[qid];
    queue->qid = qid;
    queue->ring_fd = -1;
    queue->event_fd = eventfd(0, EFD_CLOEXEC);
    queue->started = 0;
    for (int index = 0; index < kDepth; index++) {
      struct ring_entry *entry = &queue->entries[index];
      entry->queue = queue;
      entry->buffer = malloc(kFront + payload_size);
      entry->iov[0] = (struct iovec){.iov_base = &entry->header, .iov_len = sizeof entry->header};
      entry->iov[1] = (struct iovec){.iov_base = entry->buffer + kFront, .iov_len = payload_size};
      if (entry->buffer == NULL) queue->event_fd = -1;
    }
    if (queue->event_fd < 0 || pthread_create(&queue->thread, NULL, queue_main, queue) != 0) {
      log_failure("starting a queue thread", errno ? errno : ENOMEM);
      release_kernel();
      return;
    }
    queue->started = 1;
  }
}

void cfuse_io_uring_stop(void) {
  struct ring_queue *all = atomic_load(&queues);
  if (all == NULL) return;
  atomic_store(&stopping, 1);
  for (int qid = 0; qid < queue_count; qid++) {
    struct ring_queue *queue = &all[qid];
    if (!queue->started) continue;
    uint64_t one = 1;
    if (write(queue->event_fd, &one, sizeof one) < 0) perror("docsync: waking a ring queue");
    pthread_join(queue->thread, NULL);
  }
  for (int qid = 0; qid < queue_count; qid++) {
    struct ring_queue *queue = &all[qid];
    if (queue->event_fd >= 0) close(queue->event_fd);
    for (int index = 0; index < kDepth; index++) free(queue->entries[index].buffer);
  }
  atomic_store(&queues, NULL);
  free(all);
}

static struct ring_entry *entry_for(uint64_t unique) {
  struct ring_entry *entry = current_entry;
  if (entry != NULL && atomic_load(&entry->unique) == unique) return entry;
  struct ring_queue *all = atomic_load(&queues);
  if (all == NULL || unique == 0) return NULL;
  for (int qid = 0; qid < queue_count; qid++) {
    for (int index = 0; index < kDepth; index++) {
      entry = &all[qid].entries[index];
      if (atomic_load(&entry->state) == kServing && atomic_load(&entry->unique) == unique)
        return entry;
    }
  }
  return NULL;
}

// The reply is complete in the entry: commit it now (same thread) or wake the queue thread.
static void replied(struct ring_entry *entry) {
  atomic_store(&entry->state, kReplied);
  if (entry != current_entry) {
    uint64_t one = 1;
    if (write(entry->queue->event_fd, &one, sizeof one) < 0) perror("docsync: waking a ring queue");
  }
}

ssize_t fuse_uring_reply(uint64_t unique, const struct iovec *iov, int count) {
  struct ring_entry *entry = entry_for(unique);
  if (entry == NULL || count < 1 || iov[0].iov_len != kOutHeaderSize) return -1;
  size_t total = 0;
  for (int i = 1; i < count; i++) total += iov[i].iov_len;
  if (total > payload_capacity) {
    reply_error(entry, unique, EIO);
  } else {
    memcpy(entry->header.in_out, iov[0].iov_base, kOutHeaderSize);
    uint8_t *payload = entry->buffer + kFront;
    for (int i = 1; i < count; i++) {
      // memmove: nothing says a reply never points into the request it answers.
      memmove(payload, iov[i].iov_base, iov[i].iov_len);
      payload += iov[i].iov_len;
    }
    entry->header.ent.payload_sz = (uint32_t)total;
  }
  replied(entry);
  return (ssize_t)(kOutHeaderSize + total);
}

static int read_fully(int fd, uint8_t *into, size_t len) {
  while (len > 0) {
    ssize_t n = read(fd, into, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? -errno : -EIO;
    into += n;
    len -= (size_t)n;
  }
  return 0;
}

ssize_t fuse_uring_reply_from_pipe(int fd, size_t len) {
  struct ring_entry *entry = current_entry;
  if (entry == NULL || atomic_load(&entry->state) != kServing) return 0;
  if (len < kOutHeaderSize || len - kOutHeaderSize > payload_capacity) return -EINVAL;
  int error = read_fully(fd, entry->header.in_out, kOutHeaderSize);
  if (error == 0) error = read_fully(fd, entry->buffer + kFront, len - kOutHeaderSize);
  if (error != 0) return error;
  entry->header.ent.payload_sz = (uint32_t)(len - kOutHeaderSize);
  replied(entry);
  return (ssize_t)len;
}

int cfuse_io_uring_state(void) { return atomic_load(&rings_state); }

uint64_t cfuse_io_uring_requests(void) { return atomic_load(&served); }

int cfuse_io_uring_queues(void) { return queue_count; }
