import Foundation
import Logging
import SessionBus
import SyncEngine

/// Tells the person at the desk, through a desktop notification on the session bus, when a
/// document gets a conflict that docsync could not merge (once per conflict), when syncing
/// stops on this device for a reason the person can act on, such as a full disk (once an hour
/// at most), and when a saved version cannot be uploaded because its content cannot be read
/// here (once per version): discreetly, and only what needs them.
///
/// It reads the engine's events on a thread of its own, so a slow or absent notification
/// server never holds up syncing.
enum DesktopNotifier {
  /// Starts the reader when this process has a session bus; logs once when it has none.
  static func start(events: EventLog, mountPoint: String, logger: Logger) {
    guard let address = BusAddress.session(environment: ProcessInfo.processInfo.environment)
    else {
      logger.info("no session bus: conflicts are not shown as desktop notifications")
      return
    }
    let thread = Thread {
      var connection: BusConnection?
      var after = events.latest
      var warned = false
      var failingShown: ContinuousClock.Instant?
      while true {
        var batch = events.wait(after: after)
        guard let last = batch.last else { return }
        after = last.sequence
        // A disk that stays nearly full may fail and recover many times an hour.
        batch.removeAll { event in
          guard case .failing = event.kind else { return false }
          let now = ContinuousClock.now
          if let shown = failingShown, now - shown < failingQuiet { return true }
          failingShown = now
          return false
        }
        for notification in notifications(for: batch, mountPoint: mountPoint) {
          // One reconnect per notification: the bus may have restarted since the last one.
          for attempt in 0..<2 {
            do throws(BusError) {
              if connection == nil { connection = try BusConnection(address: address) }
              try notification.send(on: connection!)
              warned = false
              break
            } catch {
              if case .refused = error {
                // The bus is fine; the notification server is not there or refused it.
                if !warned { logger.warning("desktop notification not shown: \(error)") }
                warned = true
                break
              }
              connection = nil
              if attempt == 1 {
                if !warned {
                  logger.warning("desktop notification not shown (\(address)): \(error)")
                }
                warned = true
              }
            }
          }
        }
      }
    }
    thread.name = "docsync-notify"
    thread.start()
  }

  /// More conflicts than this at once (a device back after weeks offline) make one summary.
  static let mostAtOnce = 3

  /// The least time between two notifications that syncing fails on this device.
  static let failingQuiet = Duration.seconds(3600)

  /// One notification per new conflict in `batch`, or one for all of them when there are more
  /// than ``mostAtOnce``: a person wants to know, not to dismiss a hundred bubbles.
  static func notifications(for batch: [EngineEvent], mountPoint: String) -> [DesktopNotification] {
    // What the person can act on here: the latest reason syncing fails, versions held back.
    let warnings =
      batch.compactMap { failingNotification(for: $0, mountPoint: mountPoint) }.suffix(1)
      + heldBackNotification(for: batch, mountPoint: mountPoint)
    let single = batch.compactMap { notification(for: $0, mountPoint: mountPoint) }
    guard single.count > mostAtOnce else { return warnings + single }
    let names = batch.compactMap { event -> String? in
      guard case .conflict(let path, _, _, _) = event.kind else { return nil }
      return plain(path.description)
    }
    return warnings + [
      DesktopNotification(
        appName: "docsync", icon: "dialog-warning",
        summary: "Conflicts in \(names.count) documents",
        body: markupEscaped(
          """
          \(names.prefix(mostAtOnce).joined(separator: ", ")) and \(names.count - mostAtOnce) \
          more were changed on two devices at the same time. Nothing is lost: the other \
          versions are in \(mountPoint)/.versions/ (docsync status lists them).
          """))
    ]
  }

  /// The notification for a new conflict; nil for every other event.
  static func notification(for event: EngineEvent, mountPoint: String) -> DesktopNotification? {
    guard case .conflict(let path, _, let versions, let devices) = event.kind else { return nil }
    let name = path.components.last.map { String(decoding: $0, as: UTF8.self) } ?? "\(path)"
    let plural = versions == 1 ? "version is" : "versions are"
    let body = """
      \(path) was changed on \(devices.joined(separator: " and ")) at the same time. \
      Nothing is lost: \(mountPoint)/\(path) shows one version, and \(versions) other \
      \(plural) in \(mountPoint)/.versions/\(path)/ (docsync versions lists them).
      """
    return DesktopNotification(
      appName: "docsync", icon: "dialog-warning", summary: "Conflict in \(plain(name))",
      body: markupEscaped(plain(body)))
  }

  /// The notification that syncing fails on this device, and why; nil for every other event.
  /// The person can act on it (free some space); nothing is lost meanwhile.
  static func failingNotification(for event: EngineEvent, mountPoint: String)
    -> DesktopNotification?
  {
    guard case .failing(let reason) = event.kind else { return nil }
    let full = reason.contains("No space left on device") || reason.contains("disk is full")
    let act = full ? "; free some space on the disk that holds its state" : ""
    let body = """
      \(reason.prefix(1).uppercased() + reason.dropFirst()). Nothing is lost: \(mountPoint) \
      keeps working, and docsync tries again by itself\(act) (docsync status \(mountPoint)).
      """
    return DesktopNotification(
      appName: "docsync", icon: "dialog-warning",
      summary: "docsync cannot sync \(plain((mountPoint as NSString).lastPathComponent))",
      body: markupEscaped(plain(body)))
  }

  /// One notification for the versions in `batch` that cannot be uploaded, or none. Each
  /// is told once (the engine posts it once); the person can act on it: the disk that holds
  /// docsync's state may be failing, and `docsync sync` tries again.
  static func heldBackNotification(for batch: [EngineEvent], mountPoint: String)
    -> [DesktopNotification]
  {
    let paths = batch.compactMap { event -> String? in
      guard case .heldBack(let path) = event.kind else { return nil }
      return plain(path.description)
    }
    guard let first = paths.first else { return [] }
    let named =
      paths.count == 1
      ? first
      : paths.count <= mostAtOnce
        ? paths.joined(separator: ", ")
        : "\(paths.prefix(mostAtOnce).joined(separator: ", ")) and \(paths.count - mostAtOnce) more"
    let body = """
      A saved version of \(named) cannot be read on this device (its disk may be failing), and \
      the file has changed since, so that version cannot be uploaded. The later versions sync \
      as usual; docsync sync \(mountPoint) tries it again.
      """
    let summary =
      paths.count == 1
      ? "docsync cannot upload a version of \((first as NSString).lastPathComponent)"
      : "docsync cannot upload versions of \(paths.count) documents"
    return [
      DesktopNotification(
        appName: "docsync", icon: "dialog-warning", summary: summary,
        body: markupEscaped(plain(body)))
    ]
  }

  /// Control characters (names come from other devices) shown as `?`.
  static func plain(_ text: String) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.map { scalar in
          scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar
        }))
  }

  /// A body may be read as markup by the notification server (the specification's
  /// `body-markup`): a name with `&` or `<` must show as itself.
  static func markupEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
      .replacingOccurrences(of: ">", with: "&gt;")
  }
}
