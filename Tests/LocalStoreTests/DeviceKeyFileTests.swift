import ContentModel
import DocumentModel
import Glibc
import LocalStore
import Testing

/// The device's key file: written atomically with mode 0600, read back, refused when others may
/// read it.
@Suite struct DeviceKeyFileTests {
  let folder = makeStateFolder()
  let device = DeviceID(high: 7, low: 9)

  func newKeys() throws -> (LibraryKeys, DeviceKeys) {
    let (keys, _, deviceKeys) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: device)
    return (keys, deviceKeys)
  }

  func mode(_ path: String) -> UInt32 {
    var status = stat()
    precondition(stat(path, &status) == 0)
    return UInt32(status.st_mode & 0o7777)
  }

  func names() -> [String] {
    guard let directory = opendir(folder) else { return [] }
    defer { closedir(directory) }
    var out: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { out.append(name) }
    }
    return out.sorted()
  }

  @Test func keysWrittenAre0600AndReadBackAndOpenTheLibrary() throws {
    let (keys, deviceKeys) = try newKeys()
    #expect(try DeviceKeyFile.read(fromFolder: folder) == nil)
    let mask = umask(0o022)
    defer { umask(mask) }
    try DeviceKeyFile.write(deviceKeys, toFolder: folder)
    #expect(mode(folder + "/" + DeviceKeyFile.name) == 0o600)
    #expect(names() == [DeviceKeyFile.name])  // no temporary file left
    let read = try #require(try DeviceKeyFile.read(fromFolder: folder))
    #expect(read == deviceKeys)
    #expect(try read.keyring(from: keys.envelope).current.epoch == 1)
    // Written again (the device joined again): replaced whole, still 0600.
    let (_, other) = try newKeys()
    try DeviceKeyFile.write(other, toFolder: folder)
    #expect(try DeviceKeyFile.read(fromFolder: folder) == other)
    #expect(mode(folder + "/" + DeviceKeyFile.name) == 0o600)
    #expect(names() == [DeviceKeyFile.name])
  }

  @Test func aKeyFileOthersMayReadIsRefused() throws {
    let (_, deviceKeys) = try newKeys()
    try DeviceKeyFile.write(deviceKeys, toFolder: folder)
    let path = folder + "/" + DeviceKeyFile.name
    for wider: mode_t in [0o640, 0o604, 0o644, 0o660, 0o602] {
      #expect(chmod(path, wider) == 0)
      #expect(throws: KeyError.keyFileTooOpen(path, UInt32(wider))) {
        try DeviceKeyFile.read(fromFolder: folder)
      }
    }
    #expect(
      KeyError.keyFileTooOpen(path, 0o644).description
        == "\(path) is open to other users (mode 644): run chmod 600 on it")
    #expect(chmod(path, 0o400) == 0)
    #expect(try DeviceKeyFile.read(fromFolder: folder) == deviceKeys)
  }

  @Test func whatIsNotAKeyFileIsOneLineError() throws {
    let path = folder + "/" + DeviceKeyFile.name
    for bytes in [Array("not keys".utf8), [], Array("DSDK".utf8) + [9]] {
      let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
      #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
      close(fd)
      do {
        _ = try DeviceKeyFile.read(fromFolder: folder)
        Issue.record("\(bytes) was read as keys")
      } catch {
        guard case .keyFile(let named, let reason) = error else {
          Issue.record("\(error)")
          continue
        }
        #expect(named == path && !reason.contains("\n"))
      }
    }
    // A symbolic link in its place is not followed.
    unlink(path)
    #expect(symlink("/etc/passwd", path) == 0)
    #expect(throws: KeyError.self) { try DeviceKeyFile.read(fromFolder: folder) }
  }
}
