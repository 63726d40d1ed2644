import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What one path looks like through `lstat`, its content and its user xattrs: enough to tell
/// whether a copy preserved what `cp -a`, `rsync -a` and a remount must preserve.
public struct TreeEntry: Equatable, CustomStringConvertible {
  public enum Kind: String { case file, directory, symlink, other }
  public var kind: Kind
  public var mode: UInt32
  public var size: Int64
  public var mtimeNanoseconds: Int64
  public var contentHash: UInt64
  public var linkTarget: String
  public var xattrs: [String: [UInt8]]

  public var description: String {
    "\(kind.rawValue) mode \(String(mode, radix: 8)) size \(size) mtime \(mtimeNanoseconds)"
      + " hash \(String(contentHash, radix: 16)) -> \(linkTarget) xattrs \(xattrs.keys.sorted())"
  }
}

public struct TreeSnapshotOptions {
  /// Directory mtimes change whenever a program adds an entry, and not every tool restores them.
  public var directoryMtimes = true
  public var mtimes = true
  public var xattrs = true

  public init(directoryMtimes: Bool = true, mtimes: Bool = true, xattrs: Bool = true) {
    self.directoryMtimes = directoryMtimes
    self.mtimes = mtimes
    self.xattrs = xattrs
  }
}

/// Every path under `root` (relative, sorted), excluding the top folder itself and any
/// top-level names in `excluding`.
public func snapshot(
  _ root: String, options: TreeSnapshotOptions = .init(), excluding: Set<String> = [".versions"]
) throws -> [String: TreeEntry] {
  var entries: [String: TreeEntry] = [:]
  func walk(_ relative: String) throws {
    let folder = relative.isEmpty ? root : "\(root)/\(relative)"
    for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
      if relative.isEmpty && excluding.contains(name) { continue }
      let childRelative = relative.isEmpty ? name : "\(relative)/\(name)"
      let entry = try describe("\(root)/\(childRelative)", options: options)
      entries[childRelative] = entry
      if entry.kind == .directory { try walk(childRelative) }
    }
  }
  try walk("")
  return entries
}

public func describe(_ path: String, options: TreeSnapshotOptions = .init()) throws -> TreeEntry {
  var info = stat()
  guard lstat(path, &info) == 0 else {
    throw RunError(description: "lstat \(path): \(String(cString: strerror(errno)))")
  }
  let format = info.st_mode & S_IFMT
  let kind: TreeEntry.Kind =
    switch format {
    case S_IFREG: .file
    case S_IFDIR: .directory
    case S_IFLNK: .symlink
    default: .other
    }
  var entry = TreeEntry(
    kind: kind, mode: info.st_mode & 0o7777, size: kind == .directory ? 0 : Int64(info.st_size),
    mtimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
    contentHash: 0, linkTarget: "", xattrs: [:])
  if !options.mtimes || (kind == .directory && !options.directoryMtimes) {
    entry.mtimeNanoseconds = 0
  }
  switch kind {
  case .file:
    entry.contentHash = fnv1a(try Data(contentsOf: URL(fileURLWithPath: path)))
  case .symlink:
    entry.linkTarget = try FileManager.default.destinationOfSymbolicLink(atPath: path)
  default: break
  }
  if options.xattrs && kind != .symlink { entry.xattrs = try userXattrs(path) }
  return entry
}

/// Human-readable differences between two snapshots; empty when they agree.
public func differences(_ expected: [String: TreeEntry], _ actual: [String: TreeEntry]) -> [String]
{
  var lines: [String] = []
  for path in Set(expected.keys).union(actual.keys).sorted() {
    switch (expected[path], actual[path]) {
    case (let e?, let a?) where e != a: lines.append("\(path): expected \(e), got \(a)")
    case (_?, nil): lines.append("\(path): missing")
    case (nil, let a?): lines.append("\(path): unexpected \(a)")
    default: break
    }
  }
  return lines
}

public func fnv1a(_ data: Data) -> UInt64 {
  var hash: UInt64 = 0xcbf2_9ce4_8422_2325
  for byte in data {
    hash ^= UInt64(byte)
    hash = hash &* 0x100_0000_01b3
  }
  return hash
}

// MARK: - Extended attributes

// Glibc's module map leaves out <sys/xattr.h>, so the three calls are looked up at run time.
private typealias ListXattr =
  @convention(c) (
    UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int
  ) -> Int
private typealias GetXattr =
  @convention(c) (
    UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int
  ) -> Int
private typealias SetXattr =
  @convention(c) (
    UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer, Int, Int32
  ) -> Int32

private func libc<F>(_ name: String, as type: F.Type) -> F {
  guard let symbol = dlsym(nil, name) else { fatalError("\(name) not in libc") }
  return unsafeBitCast(symbol, to: type)
}

nonisolated(unsafe) private let listxattr = libc("listxattr", as: ListXattr.self)
nonisolated(unsafe) private let getxattr = libc("getxattr", as: GetXattr.self)
nonisolated(unsafe) private let setxattr = libc("setxattr", as: SetXattr.self)

public func userXattrs(_ path: String) throws -> [String: [UInt8]] {
  let size = listxattr(path, nil, 0)
  guard size >= 0 else {
    if errno == ENOTSUP { return [:] }
    throw RunError(description: "listxattr \(path): \(String(cString: strerror(errno)))")
  }
  var names = [CChar](repeating: 0, count: size)
  let got = listxattr(path, &names, size)
  guard got >= 0 else {
    throw RunError(description: "listxattr \(path): \(String(cString: strerror(errno)))")
  }
  var result: [String: [UInt8]] = [:]
  for raw in names.prefix(got).split(separator: 0) {
    let name = String(decoding: raw.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard name.hasPrefix("user.") else { continue }
    result[name] = try getUserXattr(path, name)
  }
  return result
}

public func getUserXattr(_ path: String, _ name: String) throws -> [UInt8] {
  let size = getxattr(path, name, nil, 0)
  guard size >= 0 else {
    throw RunError(description: "getxattr \(path) \(name): \(String(cString: strerror(errno)))")
  }
  var value = [UInt8](repeating: 0, count: size)
  let got = getxattr(path, name, &value, size)
  guard got >= 0 else {
    throw RunError(description: "getxattr \(path) \(name): \(String(cString: strerror(errno)))")
  }
  return Array(value.prefix(got))
}

public func setUserXattr(_ path: String, _ name: String, _ value: String) throws {
  let bytes = Array(value.utf8)
  guard setxattr(path, name, bytes, bytes.count, 0) == 0 else {
    throw RunError(description: "setxattr \(path) \(name): \(String(cString: strerror(errno)))")
  }
}

// MARK: - Making trees

public func write(_ path: String, _ text: String, mode: mode_t = 0o644) throws {
  try FileManager.default.createDirectory(
    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
  try Data(text.utf8).write(to: URL(fileURLWithPath: path))
  guard chmod(path, mode) == 0 else {
    throw RunError(description: "chmod \(path): \(String(cString: strerror(errno)))")
  }
}

public func read(_ path: String) throws -> String {
  try String(contentsOfFile: path, encoding: .utf8)
}

/// Sets atime and mtime to `seconds` + `nanoseconds`, without following symlinks.
public func setMtime(_ path: String, seconds: Int, nanoseconds: Int) throws {
  let time = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
  let times = [time, time]
  guard utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0 else {
    throw RunError(description: "utimensat \(path): \(String(cString: strerror(errno)))")
  }
}

public func makeSymlink(_ path: String, to target: String) throws {
  guard symlink(target, path) == 0 else {
    throw RunError(description: "symlink \(path): \(String(cString: strerror(errno)))")
  }
}

/// A small tree with what copies must preserve: odd modes, nanosecond mtimes, relative,
/// absolute-looking and dangling symlinks, user xattrs, an empty file and an empty folder.
public func makeRichTree(at root: String) throws {
  try write("\(root)/readme.md", "# hello\n")
  try write("\(root)/bin/run.sh", "#!/bin/sh\necho hi\n", mode: 0o755)
  try write("\(root)/private/secret.txt", "s3cret\n", mode: 0o600)
  try write("\(root)/docs/empty.txt", "")
  try write("\(root)/docs/notes/deep/leaf.txt", String(repeating: "leaf line\n", count: 500))
  try FileManager.default.createDirectory(
    atPath: "\(root)/empty-folder", withIntermediateDirectories: true)
  guard chmod("\(root)/private", 0o700) == 0 else {
    throw RunError(description: "chmod private")
  }
  try makeSymlink("\(root)/link-to-readme", to: "readme.md")
  try makeSymlink("\(root)/docs/link-up", to: "../bin/run.sh")
  try makeSymlink("\(root)/dangling", to: "no/such/file")
  try setUserXattr("\(root)/readme.md", "user.color", "blue")
  try setUserXattr("\(root)/docs/notes", "user.folder-tag", "notes")
  // Last, because every entry created in a folder moves the folder's mtime.
  let paths = try snapshot(root).keys.sorted() + [""]
  for (index, relative) in paths.enumerated() {
    let path = relative.isEmpty ? root : "\(root)/\(relative)"
    try setMtime(path, seconds: 1_600_000_000 + index * 3_607, nanoseconds: 123_456_789 + index)
  }
}

/// `count` small files across folders (at most 100 a folder), each with distinct content.
public func makeManyFiles(at root: String, count: Int) throws {
  for index in 0..<count {
    let folder = "\(root)/d\(index / 100)/e\(index % 7)"
    let body = String(repeating: "file \(index) line\n", count: 1 + index % 40)
    try write("\(folder)/f\(index).txt", body)
  }
}
