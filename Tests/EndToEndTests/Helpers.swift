import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What a device shows of the synced tree, as the receiving device must reproduce it.
///
/// Directory mtimes are left out: every entry a sync adds to a folder moves its mtime. User
/// xattrs are not part of a version (DESIGN.md §2), so they are left out too.
func syncedTree(_ device: Device, mtimes: Bool = true) throws -> [String: TreeEntry] {
  try snapshot(
    device.mountPoint,
    options: TreeSnapshotOptions(directoryMtimes: false, mtimes: mtimes, xattrs: false))
}

/// Differences between two devices' trees; a version carries its file's mtime to the
/// nanosecond, so file and symlink mtimes must be equal.
func treeDifferences(_ expected: Device, _ actual: Device, mtimes: Bool = true) throws
  -> [String]
{
  differences(try syncedTree(expected, mtimes: mtimes), try syncedTree(actual, mtimes: mtimes))
}

func expectSameTree(
  _ expected: Device, _ actual: Device, mtimes: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let diff = try treeDifferences(expected, actual, mtimes: mtimes)
  #expect(
    diff.isEmpty,
    "\(actual.name) differs from \(expected.name):\n\(diff.prefix(20).joined(separator: "\n"))",
    sourceLocation: sourceLocation)
}

/// `find .versions -type f` on a device, through the real program: the conflict versions,
/// without the `merged` and `base` views of text documents.
func findVersions(_ device: Device) throws -> [String] {
  let result = try check(["find", ".versions", "-type", "f"], cwd: device.mountPoint)
  return result.stdout.split(separator: "\n").map(String.init)
    .filter { !isViewName(($0 as NSString).lastPathComponent) }.sorted()
}

/// `merged<ext>` and `base<ext>` beside a text document's conflict versions (a version's
/// name starts with its time, a digit).
func isViewName(_ name: String) -> Bool {
  for stem in ["merged", "base"] where name.hasPrefix(stem) {
    let rest = name.dropFirst(stem.count)
    if rest.isEmpty || rest.hasPrefix(".") { return true }
  }
  return false
}

/// Makes `paths` conflict between `a` and `b`: both start from one synced base, `b` is paused
/// while `a` edits and pushes, then `b` edits a little later and resumes. Returns after the
/// sync `a`, `b`, `a` that the brief prescribes, when both know every version.
///
/// `b`'s edit is the later modification, so it is current everywhere and `a`'s edit is the one
/// conflict version.
func makeConflicts(_ library: Library, _ a: Device, _ b: Device, paths: [String]) throws {
  for path in paths { try write(a.path(path), base(path)) }
  try library.sync(a, b)
  for path in paths { #expect(try read(b.path(path)) == base(path)) }
  try b.pause()
  for path in paths { try write(a.path(path), edit(path, by: a)) }
  try a.sync()
  // The version's time is kept to the millisecond; this keeps b's edit strictly later.
  usleep(20_000)
  for path in paths { try write(b.path(path), edit(path, by: b)) }
  try b.resume()
  try library.sync(a, b, a)
}

func base(_ path: String) -> String { "base of \(path)\n" }
func edit(_ path: String, by device: Device) -> String { "\(device.name)'s edit of \(path)\n" }

/// The names of the conflict versions under `.versions/<path>/` (not the views).
func versionNames(_ device: Device, of path: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: device.path(".versions/\(path)"))
    .filter { !isViewName($0) }.sorted()
}

/// `<YYYY-MM-DDTHH.MM.SSZ>_<device>_<6 hex><extension>`.
func isVersionName(_ name: String, device: String, extension ext: String) -> Bool {
  let pattern =
    #"^\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}Z_"# + NSRegularExpression.escapedPattern(for: device)
    + "_[0-9a-f]{6}" + NSRegularExpression.escapedPattern(for: ext) + "$"
  return name.range(of: pattern, options: .regularExpression) != nil
}

/// The contents a device shows for `path`: its current content and each conflict version's.
func currentAndVersions(_ device: Device, _ path: String) throws -> [String] {
  var contents = [try read(device.path(path))]
  let folder = device.path(".versions/\(path)")
  if FileManager.default.fileExists(atPath: folder) {
    for name in try versionNames(device, of: path) {
      contents.append(try read("\(folder)/\(name)"))
    }
  }
  return contents
}

func errnoText(_ code: Int32) -> String { String(cString: strerror(code)) }

struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
