/// A second name in the blob folder for a working file about to be replaced: its content
/// stays here without a copy (``ContentStore/keepAside(workingFile:)``).
public struct KeptAside: Sendable {
  let path: String
}
