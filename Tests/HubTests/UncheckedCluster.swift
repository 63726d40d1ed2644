import MountHarness

/// A ``PrivatePostgresCluster`` handed from the thread that made it (``offThePool(_:)``) to
/// the test that uses it alone.
struct UncheckedCluster: @unchecked Sendable {
  let cluster: PrivatePostgresCluster

  init(_ cluster: PrivatePostgresCluster) { self.cluster = cluster }
}
