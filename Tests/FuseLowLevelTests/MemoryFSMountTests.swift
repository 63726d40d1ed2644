import Foundation
import Glibc
import SystemPackage
import Testing

import class MountHarness.BackgroundProcess
import func MountHarness.run

/// Mounts Tools/MemoryFS in a subprocess (never in this process: a FUSE server that touches its
/// own mount can deadlock) and works on it through the kernel.
@Suite("MemoryFS through a real mount", .serialized, .enabled(if: MountFixture.mayRun))
struct MemoryFSMountTests {
  @Test func fileOperationsThroughTheKernel() throws {
    let mount = try MountFixture()
    defer { mount.tearDown() }
    let root = mount.mountPoint

    // create + write + read back, small and larger than one 1 MiB request
    let small = Array("hello, kernel\n".utf8)
    try writeFile("\(root)/a.txt", small, exclusive: true)
    #expect(try readFile("\(root)/a.txt") == small)
    let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
    try writeFile("\(root)/large.bin", large, exclusive: true)
    #expect(try readFile("\(root)/large.bin") == large)
    var status = stat()
    #expect(stat("\(root)/large.bin", &status) == 0 && status.st_size == large.count)

    // O_EXCL on an existing name
    #expect(throws: Errno.fileExists) { try writeFile("\(root)/a.txt", small, exclusive: true) }

    // mkdir and readdir
    #expect(mkdir("\(root)/folder", 0o755) == 0)
    #expect(try listDirectory(root) == ["a.txt", "folder", "large.bin"])

    // rename with RENAME_NOREPLACE: refused over an existing name, done onto a new one
    #expect(throws: Errno.fileExists) {
      try renameNoReplace("\(root)/a.txt", "\(root)/large.bin")
    }
    try renameNoReplace("\(root)/a.txt", "\(root)/folder/b.txt")
    #expect(try readFile("\(root)/folder/b.txt") == small)
    #expect(try listDirectory(root) == ["folder", "large.bin"])

    // extended attributes: size query, value, ERANGE, list, missing
    let path = "\(root)/folder/b.txt"
    try Xattr.set(path, "user.docsync.test", Array("value-1".utf8))
    #expect(try Xattr.size(path, "user.docsync.test") == 7)
    #expect(try Xattr.get(path, "user.docsync.test", capacity: 64) == Array("value-1".utf8))
    #expect(throws: Errno.outOfRange) {
      try Xattr.get(path, "user.docsync.test", capacity: 3)
    }
    #expect(try Xattr.list(path) == ["user.docsync.test"])
    #expect(throws: Errno.noData) { try Xattr.get(path, "user.missing", capacity: 8) }

    // truncate through O_TRUNC (arrives as setattr), then unlink and rmdir
    try writeFile(path, Array("x".utf8), exclusive: false)
    #expect(try readFile(path) == Array("x".utf8))
    #expect(unlink(path) == 0)
    #expect(access(path, F_OK) == -1 && errno == ENOENT)
    #expect(rmdir("\(root)/folder") == 0)
    #expect(try listDirectory(root) == ["large.bin"])

    // ownership: default_permissions makes the kernel enforce modes
    #expect(chmod("\(root)/large.bin", 0o600) == 0)
    #expect(stat("\(root)/large.bin", &status) == 0 && status.st_mode & 0o777 == 0o600)

    let output = try mount.unmountAndWait()
    #expect(output.contains("ended: unmounted"))
  }

  @Test func sigtermEndsTheLoopAndTheServerUnmounts() throws {
    let mount = try MountFixture()
    defer { mount.tearDown() }
    try writeFile("\(mount.mountPoint)/f", [1, 2, 3], exclusive: true)
    kill(mount.process.pid, SIGTERM)
    let output = try mount.waitForExit()
    #expect(output.contains("ended: signal(15)"))
    #expect(!MountFixture.isFuseMount(mount.mountPoint))
  }
}

// MARK: fixture

struct MountFailure: Error, CustomStringConvertible {
  var description: String
}

final class MountFixture {
  static let prefix = "/var/tmp/fuselowlevel-test-"

  /// Mount tests run where /dev/fuse exists, and always under CI, where they must fail rather
  /// than skip when FUSE is missing.
  static var mayRun: Bool {
    ProcessInfo.processInfo.environment["CI"] == "true" || access("/dev/fuse", R_OK | W_OK) == 0
  }

  let mountPoint: String
  // posix_spawn (MountHarness), not Foundation's Process, whose run() in Swift 6.3.1 over-reads
  // a `dirent` of /proc/self/fd and can crash the test run (swift-corelibs-foundation #5472).
  let process: BackgroundProcess
  private var exited = false

  init() throws {
    Self.cleanUpStaleMounts()
    let executable = try Self.locateExecutable()
    var template = Array("\(Self.prefix)XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw MountFailure(description: "mkdtemp failed: errno \(errno)")
    }
    mountPoint = String(cString: made)
    process = try BackgroundProcess([executable, mountPoint])
    try waitUntilMounted()
  }

  /// Listed as a FUSE mount of subtype docsync, and answering: stat of the root differs in
  /// device from the folder below, which needs the server to reply to getattr.
  static func isFuseMount(_ path: String) -> Bool {
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8),
      mounts.split(separator: "\n").contains(where: {
        let fields = $0.split(separator: " ")
        return fields.count > 2 && fields[1] == Substring(path) && fields[2] == "fuse.docsync"
      })
    else { return false }
    var mounted = stat()
    var parent = stat()
    return stat(path, &mounted) == 0 && stat("/var/tmp", &parent) == 0
      && mounted.st_dev != parent.st_dev
  }

  private func waitUntilMounted() throws {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      if Self.isFuseMount(mountPoint) { return }
      if !process.isRunning {
        throw MountFailure(
          description: "memoryfs-example exited with \(try process.wait()) before mounting")
      }
      usleep(20_000)
    }
    throw MountFailure(description: "\(mountPoint) did not become a FUSE mount in 20 s")
  }

  /// fusermount3 -u, then the server's output once it has exited.
  ///
  /// Retried for a few seconds: under a loaded suite the kernel can still hold a just-closed
  /// file (an asynchronous release), and fusermount3 then reports the mount busy.
  func unmountAndWait() throws -> String {
    let deadline = Date().addingTimeInterval(10)
    while true {
      if try run(["/bin/fusermount3", "-u", mountPoint]).status == 0 { break }
      guard Date() < deadline else {
        throw MountFailure(description: "fusermount3 -u \(mountPoint) failed")
      }
      usleep(100_000)
    }
    return try waitForExit()
  }

  func waitForExit() throws -> String {
    guard let status = try? process.wait(timeout: .seconds(20)) else {
      throw MountFailure(description: "memoryfs-example still runs 20 s after unmount")
    }
    exited = true
    let text = process.output
    guard status == 0 else {
      throw MountFailure(description: "memoryfs-example exited with \(status): \(text)")
    }
    return text
  }

  func tearDown() {
    if !exited {
      if process.isRunning { kill(process.pid, SIGTERM) }
      Self.forceUnmount(mountPoint)
      _ = try? process.wait()
    }
    Self.forceUnmount(mountPoint)
    rmdir(mountPoint)
  }

  private static func forceUnmount(_ path: String) {
    guard isMounted(path) else { return }
    _ = try? run(["/bin/fusermount3", "-u", "-z", path])
  }

  private static func isMounted(_ path: String) -> Bool {
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else {
      return false
    }
    return mounts.split(separator: "\n").contains {
      $0.split(separator: " ").dropFirst().first == Substring(path)
    }
  }

  /// Mounts and folders a crashed earlier run left behind.
  static func cleanUpStaleMounts() {
    if let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) {
      for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        if fields.count > 1, fields[1].hasPrefix(prefix) { forceUnmount(String(fields[1])) }
      }
    }
    if let leftovers = try? FileManager.default.contentsOfDirectory(atPath: "/var/tmp") {
      for name in leftovers where "/var/tmp/\(name)".hasPrefix(prefix) {
        rmdir("/var/tmp/\(name)")
      }
    }
  }

  /// The example is built next to the test bundle (swift build --build-tests builds it).
  static func locateExecutable() throws -> String {
    var candidates: [String] = []
    if let explicit = ProcessInfo.processInfo.environment["MEMORYFS_EXAMPLE"] {
      candidates.append(explicit)
    }
    for start in [CommandLine.arguments[0], Bundle.main.executablePath ?? ""] where !start.isEmpty {
      var folder = URL(fileURLWithPath: start).deletingLastPathComponent()
      for _ in 0..<4 {
        candidates.append(folder.appendingPathComponent("memoryfs-example").path)
        folder.deleteLastPathComponent()
      }
    }
    if let found = candidates.first(where: { access($0, X_OK) == 0 }) { return found }
    throw MountFailure(
      description: "memoryfs-example not found (looked at \(candidates)); build with --build-tests")
  }
}

// MARK: system calls the Glibc module does not import

/// renameat2 sits behind _GNU_SOURCE and sys/xattr.h is not in Glibc's module map, so these
/// are looked up in libc at run time.
private func libcFunction<T>(_ name: String, as type: T.Type) -> T {
  guard let symbol = dlsym(nil, name) else { fatalError("libc has no \(name)") }
  return unsafeBitCast(symbol, to: type)
}

private func check(_ result: Int) throws -> Int {
  if result < 0 { throw Errno(rawValue: errno) }
  return result
}

private func renameNoReplace(_ from: String, _ to: String) throws {
  typealias Renameat2 =
    @convention(c) (
      Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32
    ) -> Int32
  let renameat2 = libcFunction("renameat2", as: Renameat2.self)
  let renameNoReplaceFlag: UInt32 = 1
  _ = try check(Int(renameat2(AT_FDCWD, from, AT_FDCWD, to, renameNoReplaceFlag)))
}

private enum Xattr {
  typealias Set =
    @convention(c) (
      UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32
    ) -> Int32
  typealias Get =
    @convention(c) (
      UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int
    ) -> Int
  typealias List = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int

  static func set(_ path: String, _ name: String, _ value: [UInt8]) throws {
    let function = libcFunction("setxattr", as: Set.self)
    _ = try check(Int(value.withUnsafeBytes { function(path, name, $0.baseAddress, $0.count, 0) }))
  }

  static func size(_ path: String, _ name: String) throws -> Int {
    try check(libcFunction("getxattr", as: Get.self)(path, name, nil, 0))
  }

  static func get(_ path: String, _ name: String, capacity: Int) throws -> [UInt8] {
    let function = libcFunction("getxattr", as: Get.self)
    var value = [UInt8](repeating: 0, count: capacity)
    let count = try check(
      value.withUnsafeMutableBytes { function(path, name, $0.baseAddress, capacity) })
    return Array(value[..<count])
  }

  static func list(_ path: String) throws -> [String] {
    let function = libcFunction("listxattr", as: List.self)
    let size = try check(function(path, nil, 0))
    var names = [CChar](repeating: 0, count: size)
    let count = try check(function(path, &names, size))
    return names[..<count].split(separator: 0).map {
      String(decoding: $0.map(UInt8.init), as: UTF8.self)
    }
  }
}

private func writeFile(_ path: String, _ bytes: [UInt8], exclusive: Bool) throws {
  let flags = O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC)
  let descriptor = try check(Int(open(path, flags, 0o644)))
  defer { close(Int32(descriptor)) }
  var written = 0
  while written < bytes.count {
    written += try check(
      bytes.withUnsafeBytes {
        write(Int32(descriptor), $0.baseAddress! + written, $0.count - written)
      })
  }
}

private func readFile(_ path: String) throws -> [UInt8] {
  let descriptor = try check(Int(open(path, O_RDONLY)))
  defer { close(Int32(descriptor)) }
  var result: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 20)
  while true {
    let count = try check(
      chunk.withUnsafeMutableBytes { read(Int32(descriptor), $0.baseAddress, $0.count) })
    if count == 0 { return result }
    result.append(contentsOf: chunk[..<count])
  }
}

private func listDirectory(_ path: String) throws -> [String] {
  guard let directory = opendir(path) else { throw Errno(rawValue: errno) }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
      String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return names.sorted()
}
