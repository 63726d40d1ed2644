import DocumentModel

/// The two read-only files that help a person merge a text document in conflict, in
/// `.versions/<path>/`: `merged<ext>`, a three-way merge of every head over their nearest
/// common ancestor, and `base<ext>`, that ancestor (absent when history no longer has one).
/// Computed from the versions alone, so every device shows the same bytes.
struct MergeViews: Sendable {
  /// The heads and ancestor they were made from (`MergeHeads.key`).
  var key: [VersionID]
  var merged: [UInt8]
  var base: [UInt8]?
  /// The current version's time, which both files show as their modification time.
  var modified: HLCTimestamp

  static let mergedStem = Array("merged".utf8)
  static let baseStem = Array("base".utf8)

  /// The views' names for the document named `name`, with whether each is the base.
  func names(for name: [UInt8]) -> [(name: [UInt8], isBase: Bool)] {
    let suffix = VersionsName.fileExtension(of: name)
    var result = [(Self.mergedStem + suffix, false)]
    if base != nil { result.append((Self.baseStem + suffix, true)) }
    return result
  }
}
