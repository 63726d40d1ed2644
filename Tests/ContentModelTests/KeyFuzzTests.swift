import ContentModel
import DocumentModel
import Testing

/// Random and mutated bytes, as a hostile hub or a damaged disk would give them, to every
/// decoder of keys and sealed data: each answers with one line, never a crash or a success.
@Suite struct KeyFuzzTests {
  @Test func randomAndSplicedBytesNeverDecodeOrOpen() throws {
    let (keys, _, device) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: DeviceID(high: 1, low: 1))
    let keyring = try keys.keyring()
    let envelope = keys.envelope.encoded()
    let id = ObjectID(bytes: [UInt8](repeating: 9, count: 32))!
    let record = VersionID(Digest256(bytes: [UInt8](repeating: 8, count: 32))!)
    let object = ObjectSealer(keys: keyring.current).seal(frame: [0, 1, 2], id: id, kind: .chunk)
    let fields = RecordSealer(keys: keyring.current).seal([1, 2, 3], record: record, parents: [])
    var random = TestBytes(seed: 46)
    for round in 0..<3000 {
      // Pure noise, or a valid value with a random stretch of it overwritten or cut.
      func mutate(_ valid: [UInt8]) -> [UInt8] {
        if round % 3 == 0 { return random.bytes(random.below(valid.count * 2)) }
        var bytes = valid
        let start = random.below(bytes.count)
        let end = min(bytes.count, start + 1 + random.below(8))
        if round % 3 == 1 {
          bytes.replaceSubrange(start..<end, with: random.bytes(end - start))
          if bytes == valid { bytes[start] ^= 1 }
        } else {
          bytes.removeSubrange(start..<end)
        }
        return bytes
      }
      func oneLine(_ error: any Error) {
        #expect(!"\(error)".isEmpty && !"\(error)".contains("\n"))
      }
      do {
        let decoded = try KeyEnvelope(decoding: mutate(envelope))
        _ = try device.keyring(from: decoded)
        Issue.record("a changed envelope opened")
      } catch { oneLine(error) }
      do {
        _ = try DeviceKeys(decoding: mutate(device.encoded())).keyring(from: keys.envelope)
        Issue.record("changed device keys opened the envelope")
      } catch { oneLine(error) }
      do {
        _ = try ObjectSealer.open(
          mutate(object), id: id, kind: .chunk, keyring: keyring, maximumSize: 1 << 18)
        Issue.record("a changed object opened")
      } catch { oneLine(error) }
      do {
        _ = try RecordSealer.open(mutate(fields), record: record, parents: [], keyring: keyring)
        Issue.record("changed record fields opened")
      } catch { oneLine(error) }
      let text = String(
        decoding: random.bytes(random.below(60)).map { 32 + $0 % 95 }, as: UTF8.self)
      do {
        _ = try RecoveryKey(parsing: text)
        Issue.record("\(text) was read as a recovery key")
      } catch { oneLine(error) }
    }
  }
}
