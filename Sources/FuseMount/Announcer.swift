import DocumentFileSystem
import Foundation
import FuseLowLevel
import Glibc
import SystemPackage

/// Raises the file notifications of sync's changes: for each change that sync has made in the
/// tree, the call through the mount that a local program making it would make (create, mkdir,
/// symlink, unlink, rmdir, open for writing and truncate, chmod), so that the kernel raises
/// the inotify events itself. The calls are made by a process of the daemon's own
/// (``AnnouncerHelper``), which the file system recognises by its id and answers with what the
/// tree holds already.
///
/// A thread of its own that holds no lock: every call waits for a FUSE thread to serve it, and
/// no FUSE request ever waits for this thread (``DocumentFileSystem/flushKernelCaches()``
/// waits for it a bounded time only).
final class Announcer: @unchecked Sendable {
  private let fileSystem: DocumentFileSystem
  private let notifier: KernelNotifier
  private let mountPoint: String
  private var helper: AnnouncerProcess?
  /// Folders announced a moment ago, by inode: a watcher that watches folders as they appear
  /// (`inotifywait -r`, recursive file managers) adds its watch when it hears of the folder,
  /// and must have a moment to do so before what sync put inside is announced.
  private var newFolders: [UInt64: UInt64] = [:]
  static let newFolderGrace: UInt64 = 50

  init(fileSystem: DocumentFileSystem, notifier: KernelNotifier, mountPoint: String) {
    self.fileSystem = fileSystem
    self.notifier = notifier
    self.mountPoint = mountPoint
  }

  func start() {
    let queue = fileSystem.announcements
    let started = DispatchSemaphore(value: 0)
    let thread = Thread { [self] in
      // Without the process nothing is posted: sync's changes only invalidate, as before.
      guard let helper = AnnouncerProcess() else {
        started.signal()
        return
      }
      self.helper = helper
      fileSystem.rememberConflicts()
      queue.begin(process: helper.pid)
      started.signal()
      while let batch = queue.next() {
        for announcement in batch.announcements { raise(announcement) }
        if !batch.conflicts.isEmpty {
          let changes = fileSystem.versionsAnnouncements(at: batch.conflicts, local: batch.local)
          for announcement in changes { raise(announcement) }
        }
        queue.markDone()
      }
      helper.end()
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
    var folder = Array(mountPoint.utf8)
    if !announcement.parentPath.isRoot {
      folder += [UInt8(ascii: "/")] + announcement.parentPath.bytes
    }
    queue.setCurrent(announcement)
    let result = call(announcement, in: folder, size: size)
    queue.setCurrent(nil)
    switch result {
    case 0:
      if case .created(.directory) = announcement.kind {
        newFolders[announcement.inode] = monotonicMilliseconds()
      }
    case ENOENT:
      // Gone already (a person removed it, or the folder it was in went too): nobody can be
      // told of it by a call, and nothing is wrong. The kernel forgets a name it still holds.
      if case .removed = announcement.kind { fallBack(announcement) }
    default:
      fallBack(announcement)
    }
  }

  /// Makes the call that raises `announcement`'s events, in the folder at `folder`; the errno
  /// it ended with, 0 for success.
  private func call(_ announcement: Announcement, in folder: [UInt8], size: Int64) -> Int32 {
    let name = announcement.name
    switch announcement.kind {
    case .created(let kind):
      let operation: AnnouncerRequest.Operation =
        switch kind {
        case .file: .createFile
        case .directory: .makeDirectory
        case .symlink: .makeSymlink
        }
      // A name the kernel remembers (as missing, or as found by someone who looked it up
      // in between) is forgotten first, so that the call asks the file system.
      var result = EEXIST
      for _ in 0..<3 where result == EEXIST {
        try? notifier.invalidateEntry(parent: announcement.parent, name: name)
        result = perform(AnnouncerRequest(operation, folder: folder, name: name))
      }
      return result
    case .removed(let kind):
      return perform(
        AnnouncerRequest(
          kind == .directory ? .removeDirectory : .unlink, folder: folder, name: name))
    case .contentChanged:
      // The kernel drops the pages first, so that whoever reads on hearing IN_MODIFY reads the
      // new content.
      try? notifier.invalidateInode(announcement.inode)
      return perform(AnnouncerRequest(.truncate, value: size, folder: folder, name: name))
    case .modeChanged(let mode):
      try? notifier.invalidateAttributes(announcement.inode)
      return perform(AnnouncerRequest(.changeMode, value: Int64(mode), folder: folder, name: name))
    }
  }

  /// A process that has gone answers nothing: EPIPE, and the kernel is told what it must know.
  private func perform(_ request: AnnouncerRequest) -> Int32 {
    helper?.call(request) ?? EPIPE
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

  private func monotonicMilliseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
  }
}
