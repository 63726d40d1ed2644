import DocumentModel
import Foundation
import Glibc
import LocalStore
import SyncEngine
import Testing

/// A blob that this device cannot read (a failing disk gives EIO; here the blob's name leads to
/// a folder, which opens and cannot be read). Waiting to upload, it holds back no other upload,
/// a working file that still holds the content makes it again, and a file that may be the only
/// copy is never deleted. Needed for a change from another device, it is fetched again.
@Suite("unreadable blobs, in process")
struct UnreadableBlobTests {
  /// Records `text` at `path` on `device` while its uploads wait, then makes that content's
  /// blob unreadable; returns the blob's path.
  /// Points `blob` at a new folder: it opens, and every read fails.
  private func makeUnreadable(_ blob: String, library: Library) {
    let folder = library.folder + "/unreadable-\(UInt32.random(in: 0...UInt32.max))"
    #expect(mkdir(folder, 0o700) == 0)
    #expect(unlink(blob) == 0 && symlink(folder, blob) == 0)
  }

  private func recordWithUnreadableBlob(
    _ device: Device, _ path: String, _ text: String, library: Library
  ) async throws -> String {
    try device.write(path, text)
    try device.write("other.md", "another document\n")
    // Recorded once quiet, while paused: the blobs are made, not uploaded.
    try await Task.sleep(for: .milliseconds(300))
    let blob = device.store.blobPath(hex: ContentHash(of: Array(text.utf8)).hex)
    #expect(access(blob, F_OK) == 0)
    makeUnreadable(blob, library: library)
    return blob
  }

  /// Saves draft.md on `device` while its uploads wait, makes that save's blob unreadable, and
  /// saves it again, so that nothing here holds the first save's content; then lets the device
  /// upload. Returns the blob's path.
  private func holdBackDraft(_ device: Device, library: Library) async throws -> String {
    device.engine.pause()
    let text = "the only copy of this draft\n"
    let blob = try await recordWithUnreadableBlob(device, "draft.md", text, library: library)
    try device.write("draft.md", "the next draft\n")
    try await Task.sleep(for: .milliseconds(300))
    device.engine.resume()
    return blob
  }

  @Test func aWorkingFileThatHoldsTheContentMakesItAgain() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try await a.sync()
    a.engine.pause()
    let text = String(repeating: "a plan that must reach b\n", count: 4_000)
    let blob = try await recordWithUnreadableBlob(a, "plan.md", text, library: library)
    a.engine.resume()
    try await a.sync()
    try await b.sync()
    #expect(try b.read("plan.md") == text)
    #expect(try b.read("other.md") == "another document\n")
    // The unreadable file was replaced by the content, or let go once the hub had it.
    var info = stat()
    #expect(lstat(blob, &info) != 0 || info.st_mode & S_IFMT == S_IFREG)
    #expect(a.engine.status().state == .upToDate)
    await a.stop()
    await b.stop()
  }

  @Test func withoutAnotherCopyOnlyItsVersionWaitsAndTheFileStays() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try await a.sync()
    let blob = try await holdBackDraft(a, library: library)
    let failure = await #expect(throws: SyncError.self) {
      try await a.engine.synchronize(timeout: .seconds(20))
    }
    #expect(
      failure?.description.contains("cannot upload draft.md") == true,
      "\(String(describing: failure))")
    // Every other upload went on.
    var arrived = false
    for _ in 0..<200 where !arrived {
      try? await b.sync()
      arrived = (try? b.read("other.md")) == "another document\n"
      if !arrived { try await Task.sleep(for: .milliseconds(20)) }
    }
    #expect(arrived, "other.md did not reach b while draft.md's content could not be read")
    // What could not be read is not deleted: it may read again at the next sync or start.
    var info = stat()
    #expect(lstat(blob, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    // The status names it, and does not call the device busy uploading it.
    let status = a.engine.status()
    #expect(status.heldBack == [DocumentPath("draft.md")])
    #expect(status.state == .upToDate, "\(status.state)")
    await a.stop()
    await b.stop()
  }

  @Test func aVersionHeldBackIsToldOnceAndUploadsWhenItReadsAgainAtTheNextSync() async throws {
    let library = Library()
    let a = try library.device("a")
    try await a.sync()
    let mark = a.engine.events.latest
    let blob = try await holdBackDraft(a, library: library)
    func heldBack() -> [EngineEvent.Kind] {
      a.engine.events.events(after: mark).map(\.kind).filter {
        if case .heldBack = $0 { true } else { false }
      }
    }
    for _ in 0..<2 {
      await #expect(throws: SyncError.self) {
        try await a.engine.synchronize(timeout: .seconds(20))
      }
    }
    // Tried at each sync, told once.
    #expect(heldBack() == [.heldBack(path: DocumentPath("draft.md"))])
    #expect(a.engine.status().heldBack == [DocumentPath("draft.md")])

    // The disk reads again: the next sync asked for uploads the held-back version.
    #expect(unlink(blob) == 0)
    try Data("the only copy of this draft\n".utf8).write(to: URL(fileURLWithPath: blob))
    try await a.engine.synchronize(timeout: .seconds(20))
    let status = a.engine.status()
    #expect(status.heldBack.isEmpty && status.pendingUploads == 0, "\(status)")
    #expect(heldBack().count == 1)
    await a.stop()
  }

  @Test func oneNeededForAnotherDevicesChangeIsFetchedAgain() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("doc.txt", "base\n")
    try await a.sync()
    try await b.sync()
    // A conflict on b keeps a's version, and its blob, in .versions.
    b.engine.pause()
    let kept = "a's edit, kept as a version on b\n"
    try a.write("doc.txt", kept)
    try await a.sync()
    try await Task.sleep(for: .milliseconds(20))
    try b.write("doc.txt", "b's edit, the later one\n")
    try await Task.sleep(for: .milliseconds(300))
    b.engine.resume()
    try await b.sync()
    #expect(try b.versions("doc.txt").count == 1)
    let blob = b.store.blobPath(hex: ContentHash(of: Array(kept.utf8)).hex)
    makeUnreadable(blob, library: library)

    // A new document with that content: b copies it from the blob it holds, which fails.
    try a.write("copy.txt", kept)
    try await a.sync()
    try await b.sync()
    #expect(try b.read("copy.txt") == kept)
    var info = stat()
    #expect(lstat(blob, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
    #expect(b.engine.status().waiting.isEmpty)
    await a.stop()
    await b.stop()
  }
}
