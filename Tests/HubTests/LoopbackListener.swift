import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A listening TCP socket on 127.0.0.1 at a port the kernel picks, served by a thread of its
/// own: what the stand-in servers of these tests accept their clients on.
///
/// The serving thread alone closes the socket. Its owner only shuts it down, which ends the
/// thread's `accept`: a close by the owner would free the descriptor's number while the thread
/// may be about to call `accept` on it, and the next socket the process opens (another test's
/// server) would get that number, so this thread would take that server's clients.
final class LoopbackListener: Sendable {
  let port: Int
  private let socket: Int32

  /// Listens, and hands each client to `serve` on one thread, one at a time; the client's
  /// socket is closed after `serve` returns.
  init(serve: @escaping @Sendable (Int32) -> Void) throws {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard socket >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
        bind(socket, raw, length) == 0 && listen(socket, 8) == 0
          && getsockname(socket, raw, &length) == 0
      }
    }
    guard bound else {
      close(socket)
      throw POSIXError(.EADDRINUSE)
    }
    self.socket = socket
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread.detachNewThread {
      while true {
        let client = accept(socket, nil, nil)
        if client < 0 {
          // Only the owner's shutdown ends the thread (EINVAL): closing on another error (a
          // client gone before it was accepted) would free the number the owner still shuts.
          if errno == EINVAL || errno == EBADF { break }
          usleep(1000)
          continue
        }
        // Glibc's accept4 is not visible to Swift; a child started in between keeps the
        // client open only until it execs.
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        serve(client)
        close(client)
      }
      close(socket)
    }
  }

  /// Stops listening: nothing listens at `port` once this returns, and the serving thread ends.
  deinit {
    shutdown(socket, Int32(SHUT_RDWR))
  }
}
