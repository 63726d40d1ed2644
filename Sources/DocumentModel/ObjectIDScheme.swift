/// The hash that names every object of one content tree: a record says which, so that a device
/// checks each object it receives against the id the tree's parent gave it.
///
/// One tree never mixes schemes (a node names its children by its own scheme), and the same
/// bytes under two schemes are two objects: the hub stores both, which is why the scheme
/// changes rarely.
public enum ObjectIDScheme: UInt8, Sendable, Hashable, CaseIterable {
  /// BLAKE2b-256 personalised by kind: what docsync named content with from chunks' start
  /// (session 40) to session 44. Still read, and still written for content whose kept chunk
  /// list predates BLAKE3, so that nothing is stored twice.
  case blake2b = 1
  /// BLAKE3 keyed by kind: about five times BLAKE2b's speed on one core with SIMD, so that
  /// cutting and naming content runs above 1 GB/s (docs/content-layer.md).
  case blake3 = 2

  /// What this docsync names new content with.
  public static let current = ObjectIDScheme.blake3
}
