import DocumentFileSystem
import DocumentModel
import Glibc
import LocalStore
import Testing

/// Any `timespec` the kernel may pass to setattr: kept to the nanosecond inside 1677–2262,
/// clamped to the nearer end outside (EpochNanoseconds), never a trap; a regular file's times
/// live on its working file, so the disk under the state folder may clamp them further, exactly
/// as it clamps a file of its own.
@Suite struct SetAttributeTimeTests {
  let folder = temporaryFolder()
  let me = Caller(uid: 1000, gid: 1000)
  let root = DocumentFileSystem.rootInode

  /// Random second counts over the whole Int64 range, and every boundary.
  static let seconds: [Int64] = {
    var generator = SystemRandomNumberGenerator()
    var values: [Int64] = [
      .min, .min + 1, .max, .max - 1, -62_167_219_200, -9_223_372_037, -9_223_372_036,
      -2_147_483_649, -1, 0, 1, 2_147_483_648, 7_952_342_400, 9_223_372_036, 9_223_372_037,
      13_900_000_000, 16_447_446_400, 17_179_869_183, 67_767_976_233_532_799,
    ]
    for _ in 0..<200 { values.append(Int64.random(in: .min ... .max, using: &generator)) }
    for _ in 0..<200 {
      values.append(Int64.random(in: -20_000_000_000...20_000_000_000, using: &generator))
    }
    return values
  }()

  /// What the disk under `folder` shows for a time set on a file of its own.
  func diskKeeps(_ time: timespec) -> timespec {
    let probe = folder + "/probe"
    let fd = open(probe, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
    defer {
      close(fd)
      unlink(probe)
    }
    var shown = stat()
    guard futimens(fd, [time, time]) == 0, fstat(fd, &shown) == 0 else { return timespec() }
    return shown.st_mtim
  }

  func expected(_ seconds: Int64, _ nanoseconds: Int64) -> timespec {
    let kept = EpochNanoseconds.split(
      EpochNanoseconds.clamped(seconds: seconds, nanoseconds: nanoseconds))
    return timespec(tv_sec: Int(kept.seconds), tv_nsec: Int(kept.nanoseconds))
  }

  @Test func everyTimeIsKeptOrClampedAndSurvivesAReopen() throws {
    var shownBefore: [UInt64: [(timespec, timespec)]] = [:]
    var fs: DocumentFileSystem? = try DocumentFileSystem(
      store: LocalStore(directory: folder + "/state"), owner: me)
    let (file, created) = try fs!.create(
      parent: root, name: Array("f".utf8), mode: 0o644, flags: O_WRONLY, caller: me)
    fs!.release(handle: created.handle)
    let directory = try fs!.makeDirectory(
      parent: root, name: Array("d".utf8), mode: 0o755, caller: me)
    let link = try fs!.symlink(
      target: Array("f".utf8), parent: root, name: Array("l".utf8), caller: me)
    let inodes = [UInt64(file.st_ino), UInt64(directory.st_ino), UInt64(link.st_ino)]
    let last = Self.seconds.count - 1
    for (index, seconds) in Self.seconds.enumerated() {
      let nanoseconds = Int64(index * 7_654_321 % 1_000_000_000)
      for inode in inodes {
        let update = AttributeUpdate(
          accessTime: .clamped(seconds: seconds, nanoseconds: nanoseconds),
          modificationTime: .clamped(seconds: seconds, nanoseconds: nanoseconds))
        let shown = try fs!.setAttributes(inode: inode, update: update, caller: me)
        var want = expected(seconds, nanoseconds)
        if inode == UInt64(file.st_ino) { want = diskKeeps(want) }
        #expect(
          shown.st_mtim.tv_sec == want.tv_sec && shown.st_mtim.tv_nsec == want.tv_nsec,
          "inode \(inode) set to \(seconds).\(nanoseconds) shows \(shown.st_mtim)")
        #expect(shown.st_atim.tv_sec == want.tv_sec && shown.st_atim.tv_nsec == want.tv_nsec)
        if index == last { shownBefore[inode] = [(shown.st_atim, shown.st_mtim)] }
      }
    }
    fs!.shutdown()
    fs = nil
    let reopened = try DocumentFileSystem(
      store: LocalStore(directory: folder + "/state"), owner: me)
    defer { reopened.shutdown() }
    for inode in inodes {
      let shown = try reopened.attributes(inode: inode)
      let (atime, mtime) = shownBefore[inode]![0]
      #expect(shown.st_mtim.tv_sec == mtime.tv_sec && shown.st_mtim.tv_nsec == mtime.tv_nsec)
      #expect(shown.st_atim.tv_sec == atime.tv_sec && shown.st_atim.tv_nsec == atime.tv_nsec)
    }
  }
}
