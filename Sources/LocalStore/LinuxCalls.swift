import Glibc

/// The glibc functions that Swift's Glibc module leaves out (declared only under
/// `_GNU_SOURCE`), looked up once by name.
enum LinuxCalls {
  typealias Fallocate = @convention(c) (Int32, Int32, Int64, Int64) -> Int32

  /// fallocate(2); a glibc without it (there is none on Linux) answers ENOSYS.
  nonisolated(unsafe) static let fallocate: Fallocate = {
    if let address = dlsym(dlopen(nil, RTLD_NOW), "fallocate") {
      return unsafeBitCast(address, to: Fallocate.self)
    }
    return { _, _, _, _ in
      errno = ENOSYS
      return -1
    }
  }()
}
