extension Hub {
  // A hub that keeps no retention setting and removes nothing: every version stays, which is
  // what docsync did before retention, and `docsync prune` says so in one line.
  public func retention() async throws(HubError) -> String? { nil }

  public func setRetention(_ serialized: String) async throws(HubError) {
    throw .failed("this hub does not keep a retention setting yet")
  }

  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    throw .failed("this hub cannot prune yet")
  }
}
