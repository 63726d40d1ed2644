import Foundation

/// Runs `work`, which blocks (a server started or stopped, a `docsync hub add-device` waited
/// for), on a thread of its own rather than on one of the few threads that every test's async
/// code shares: a test that blocks them holds the others back, and one with a time limit of
/// its own (`aServerThatStopsAnsweringIsUnreachableWithinTheLimit`) ran out of it.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
  }
}
