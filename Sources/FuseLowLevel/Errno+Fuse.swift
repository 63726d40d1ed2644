import Glibc
import SystemPackage

// The FUSE edge is the one place where an error becomes a number (STYLE.md): these helpers turn
// whatever a file system throws, and what C reports in `errno`, into an `Errno`.

extension Errno {
  /// The `Errno` a thrown error stands for: an `Errno` stays itself, anything else is EIO.
  public init(mapping error: any Error) {
    if let errno = error as? Errno {
      self = errno
    } else {
      self = .ioError
    }
  }

  /// The calling thread's C `errno`, read right after a call that failed.
  public static func fromCErrno() -> Errno {
    Errno(rawValue: Glibc.errno)
  }

  /// libfuse's convention for failures is a negated errno; nil for success (zero or positive).
  static func fromNegatedReturn(_ value: Int32) -> Errno? {
    value < 0 ? Errno(rawValue: -value) : nil
  }
}

/// Runs `body` and maps what it throws to an `Errno`, for file systems that throw inside and
/// answer the session with `Result<_, Errno>`.
public func errnoResult<Success>(_ body: () throws -> Success) -> Result<Success, Errno> {
  do {
    return .success(try body())
  } catch {
    return .failure(Errno(mapping: error))
  }
}
