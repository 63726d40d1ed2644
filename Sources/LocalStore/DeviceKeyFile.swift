import ContentModel
import Glibc

/// The device's own keys for an encrypted library (``DeviceKeys``), in its state folder, so
/// that a remount opens the library without asking for the passphrase.
///
/// Readable by its owner alone: written with mode 0600 and refused when its mode lets anyone
/// else read it (as ssh refuses a private key), since whoever reads it reads the library.
/// Not wired yet: nothing creates or reads it until the mount learns `--encrypt` (issue 41).
public enum DeviceKeyFile {
  public static let name = "library-key"

  /// Writes `keys` to `folder`'s key file atomically and durably: a new file (mode 0600,
  /// whatever the umask), fsynced, renamed over the old one, and the folder fsynced, so a crash
  /// leaves the old keys or the new ones, never a part.
  public static func write(_ keys: DeviceKeys, toFolder folder: String) throws(KeyError) {
    let path = folder + "/" + name
    let temporary = folder + "/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
    func failure(_ step: String) -> KeyError {
      .keyFile(path, "\(step): \(String(cString: strerror(errno)))")
    }
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw failure("cannot create it") }
    var done = false
    defer {
      if !done { unlink(temporary) }
    }
    let bytes = keys.encoded()
    let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    guard fchmod(fd, 0o600) == 0, written == bytes.count, fsync(fd) == 0 else {
      let error = failure("cannot write it")
      close(fd)
      throw error
    }
    guard close(fd) == 0 else { throw failure("cannot write it") }
    guard rename(temporary, path) == 0 else { throw failure("cannot put it in place") }
    done = true
    let folderFD = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard folderFD >= 0 else { throw failure("cannot make it durable") }
    defer { close(folderFD) }
    guard fsync(folderFD) == 0 else { throw failure("cannot make it durable") }
  }

  /// The keys in `folder`'s key file; nil when there is none. Refuses a file that others may
  /// read or write, one another user owns, a symbolic link, and bytes that are not keys.
  public static func read(fromFolder folder: String) throws(KeyError) -> DeviceKeys? {
    let path = folder + "/" + name
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else {
      if errno == ENOENT { return nil }
      throw .keyFile(path, String(cString: strerror(errno)))
    }
    defer { close(fd) }
    var status = stat()
    guard fstat(fd, &status) == 0 else {
      throw .keyFile(path, String(cString: strerror(errno)))
    }
    guard status.st_mode & S_IFMT == S_IFREG else { throw .keyFile(path, "not a regular file") }
    guard status.st_uid == geteuid() else {
      throw .keyFile(path, "owned by user \(status.st_uid), not by this user")
    }
    let mode = UInt32(status.st_mode & 0o7777)
    guard mode & 0o077 == 0 else { throw .keyFileTooOpen(path, mode) }
    var bytes = [UInt8](repeating: 0, count: 4096)
    let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
    guard count >= 0 else { throw .keyFile(path, String(cString: strerror(errno))) }
    do {
      return try DeviceKeys(decoding: Array(bytes[0..<count]))
    } catch {
      throw .keyFile(path, error.description)
    }
  }
}
