import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync hub add-device ADMIN-URL ACCOUNT ROLE`.
struct HubAddDeviceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "add-device",
    abstract: "Create the account when missing and a device's login role in it.",
    discussion: """
      The password comes from DOCSYNC_DEVICE_PASSWORD, else it is asked for on the terminal; \
      never on the command line, where every user of the machine could read it in ps.
      """)

  @Argument(help: "postgres://ADMIN@HOST:PORT/DATABASE of a role that may create roles.")
  var adminURL: String

  @Argument(help: "The person's account: 1 to 40 of a-z, 0-9 and _.")
  var account: String

  @Argument(help: "The device's login role: a lower-case SQL name.")
  var role: String

  func run() throws {
    let administration = try administrationOrFailure(adminURL)
    let password = try devicePassword(for: role)
    try outcome {
      try await administration.addDevice(account: account, role: role, password: password)
    }
    writeText(
      "account \(account): device role \(role) can connect; it mounts with "
        + "--hub 'postgres://\(role)@\(administration.location.host):\(administration.location.port)/"
        + "\(administration.location.database)'\n", to: 1)
  }

  func devicePassword(for role: String) throws -> String {
    if let given = ProcessInfo.processInfo.environment["DOCSYNC_DEVICE_PASSWORD"] {
      guard !given.isEmpty else { throw CommandFailure("DOCSYNC_DEVICE_PASSWORD is empty") }
      return given
    }
    let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
    guard terminal >= 0 else {
      throw CommandFailure(
        "no terminal to ask for the password of \(role): set DOCSYNC_DEVICE_PASSWORD")
    }
    defer { close(terminal) }
    var saved = termios()
    tcgetattr(terminal, &saved)
    var quiet = saved
    quiet.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(terminal, TCSAFLUSH, &quiet)
    defer { tcsetattr(terminal, TCSAFLUSH, &saved) }
    writeText("password for \(role): ", to: terminal)
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(terminal, &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }
    writeText("\n", to: terminal)
    guard !line.isEmpty else { throw CommandFailure("an empty password") }
    return String(decoding: line, as: UTF8.self)
  }
}
