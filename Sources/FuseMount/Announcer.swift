import DocumentFileSystem
import Foundation
import FuseLowLevel
import Glibc
import SystemPackage

/// Raises the file notifications of sync's changes: for each change that sync has made in the
/// tree, the call through the mount that a local program making it would make (create, mkdir,
/// symlink, unlink, rmdir, open for writing and truncate, chmod), so that the kernel raises
/// the inotify events itself. The file system recognises the calls by this thread's id and
/// answers them with what the tree holds already.
///
/// A thread of its own that holds no lock: every call waits for a FUSE thread to serve it, and
/// no FUSE request ever waits for this thread (``DocumentFileSystem/flushKernelCaches()``
/// waits for it a bounded time only).
final class Announcer: @unchecked Sendable {
  private let fileSystem: DocumentFileSystem
  private let notifier: KernelNotifier
  private let mountPoint: String
  /// Folders announced a moment ago, by inode: a watcher that watches folders as they appear
  /// (`inotifywait -r`, recursive file managers) adds its watch when it hears of the folder,
  /// and must have a moment to do so before what sync put inside is announced.
  private var newFolders: [UInt64: UInt64] = [:]
  static let newFolderGrace: UInt64 = 50
  /// O_PATH, which Glibc's module does not export: the folder is opened for the calls in it
  /// only, with no OPENDIR, and so no IN_OPEN for its watchers.
  static let pathOnly: Int32 = 0o10_000_000

  init(fileSystem: DocumentFileSystem, notifier: KernelNotifier, mountPoint: String) {
    self.fileSystem = fileSystem
    self.notifier = notifier
    self.mountPoint = mountPoint
  }

  func start() {
    let queue = fileSystem.announcements
    let started = DispatchSemaphore(value: 0)
    guard let threadID = Self.currentThreadID else { return }
    let thread = Thread { [self] in
      fileSystem.rememberConflicts()
      queue.begin(thread: threadID())
      started.signal()
      while let batch = queue.next() {
        for announcement in batch.announcements { raise(announcement) }
        if !batch.conflicts.isEmpty {
          for announcement in fileSystem.versionsAnnouncements(at: batch.conflicts) {
            raise(announcement)
          }
        }
        queue.markDone()
      }
    }
    thread.name = "docsync-announcer"
    thread.start()
    // Changes made from here on are announced.
    started.wait()
  }

  private func raise(_ announcement: Announcement) {
    let queue = fileSystem.announcements
    guard case .raise(let size) = fileSystem.plan(announcement) else {
      fallBack(announcement)
      return
    }
    waitForWatchers(in: announcement.parent)
    // Names are bytes, not necessarily UTF-8.
    var path = Array(mountPoint.utf8)
    if !announcement.parentPath.isRoot {
      path += [UInt8(ascii: "/")] + announcement.parentPath.bytes
    }
    path.append(0)
    let folder = path.withUnsafeBufferPointer { bytes in
      bytes.withMemoryRebound(to: CChar.self) {
        open($0.baseAddress!, Self.pathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      }
    }
    guard folder >= 0 else {
      fallBack(announcement)
      return
    }
    defer { close(folder) }
    queue.setCurrent(announcement)
    defer { queue.setCurrent(nil) }
    // The name as a C string (names never hold a NUL byte).
    let name = announcement.name.map { CChar(bitPattern: $0) } + [0]
    let raised = call(announcement, in: folder, name: name, size: size)
    if !raised { fallBack(announcement) }
    if case .created(.directory) = announcement.kind, raised {
      newFolders[announcement.inode] = monotonicMilliseconds()
    }
  }

  private func call(_ announcement: Announcement, in folder: Int32, name: [CChar], size: Int64)
    -> Bool
  {
    switch announcement.kind {
    case .created(let kind):
      // A name the kernel remembers (as missing, or as found by someone who looked it up
      // in between) is forgotten first, so that the call asks the file system.
      for _ in 0..<3 {
        try? notifier.invalidateEntry(parent: announcement.parent, name: announcement.name)
        let done: Bool
        switch kind {
        case .file:
          let fd = openat(folder, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
          if fd >= 0 { close(fd) }
          done = fd >= 0
        case .directory:
          done = mkdirat(folder, name, 0o700) == 0
        case .symlink:
          done = symlinkat(".", folder, name) == 0
        }
        if done { return true }
        if errno != EEXIST { return false }
      }
      return false
    case .removed(let kind):
      return unlinkat(folder, name, kind == .directory ? AT_REMOVEDIR : 0) == 0
    case .contentChanged:
      // The kernel drops the pages first, so that whoever reads on hearing IN_MODIFY reads the
      // new content.
      try? notifier.invalidateInode(announcement.inode)
      let fd = openat(folder, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
      guard fd >= 0 else { return false }
      let truncated = ftruncate(fd, off_t(size)) == 0
      close(fd)
      return truncated
    case .modeChanged(let mode):
      try? notifier.invalidateAttributes(announcement.inode)
      return fchmodat(folder, name, mode_t(mode & 0o7777), 0) == 0
    }
  }

  /// What the kernel must be told when a change could not be raised: a removed name is gone.
  private func fallBack(_ announcement: Announcement) {
    if case .removed = announcement.kind {
      try? notifier.deleteEntry(
        parent: announcement.parent, child: announcement.inode, name: announcement.name)
    }
  }

  private func waitForWatchers(in folder: UInt64) {
    let now = monotonicMilliseconds()
    newFolders = newFolders.filter { now < $0.value + Self.newFolderGrace }
    if let since = newFolders[folder] {
      usleep(UInt32((since + Self.newFolderGrace - now) * 1000))
    }
  }

  /// gettid(2), which requests carry as their pid. Glibc declares it only under _GNU_SOURCE,
  /// so it is looked up by name; without it nothing is announced.
  private static let currentThreadID: (@convention(c) () -> Int32)? = {
    guard let symbol = dlsym(nil, "gettid") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) () -> Int32).self)
  }()

  private func monotonicMilliseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
  }
}
