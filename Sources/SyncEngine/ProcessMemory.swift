import Glibc

/// How the daemon asks glibc's allocator to hold freed memory while content moves, and to give
/// it back once it stops.
///
/// Content moves in windows of a few MiB of chunk-sized arrays. glibc gives the top of a heap
/// back to the system as soon as more than 128 KiB of it is free, so every window faulted its
/// pages in again: a sixth of a 1 GiB pull's processor time. The threshold is raised while the
/// daemon runs, and `malloc_trim` gives the memory back when a turn of the loop that moved
/// content ends, so an idle mount does not hold what a large transfer used.
enum ProcessMemory {
  /// Free memory a heap keeps at its top: two windows of ``SyncEngine/objectBatchBytes`` in
  /// flight, with room.
  static let keptWhileMoving: Int32 = 64 << 20
  /// M_TRIM_THRESHOLD, from <malloc.h>.
  static let trimThreshold: Int32 = -1

  private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
  private typealias MallocTrim = @convention(c) (Int) -> Int32

  /// <malloc.h> is not in Swift's Glibc module: looked up once by name; nil without glibc.
  private static let mallopt: Mallopt? = dlsym(
    dlopen(nil, RTLD_NOW), "mallopt"
  ).map { unsafeBitCast($0, to: Mallopt.self) }
  private static let mallocTrim: MallocTrim? = dlsym(
    dlopen(nil, RTLD_NOW), "malloc_trim"
  ).map { unsafeBitCast($0, to: MallocTrim.self) }

  /// Raises the trim threshold, once per process.
  static let configured: Bool = {
    guard let mallopt else { return false }
    return mallopt(trimThreshold, keptWhileMoving) == 1
  }()

  /// Gives free memory back to the system.
  static func giveBack() {
    _ = mallocTrim?(0)
  }
}
