import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A listening TCP socket on 127.0.0.1 at a port the kernel picks: what the stand-in servers
/// of these tests accept their clients on.
enum LoopbackListener {
  static func open() throws -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
  }
}
