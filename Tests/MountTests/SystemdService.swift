import Foundation

/// A systemd service unit read as systemd's manager reads it, for running its commands where no
/// manager runs: its `Environment=` and `EnvironmentFile=` settings, and its `Exec...=` lines
/// split into words with systemd's quoting, specifiers (`%h`, `%E`, `%i`) and variable
/// substitutions (`${NAME}` within a word, `$NAME` as a word split at whitespace, `$$`).
struct SystemdService {
  let settings: [(key: String, value: String)]
  let home: String
  let instance: String

  init(unit: String, home: String, instance: String = "") {
    var settings: [(String, String)] = []
    var inService = false
    for raw in unit.split(separator: "\n") {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("[") {
        inService = line == "[Service]"
        continue
      }
      guard inService, !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else {
        continue
      }
      settings.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
    }
    self.settings = settings
    self.home = home
    self.instance = instance
  }

  func specifiersReplaced(_ text: String) -> String {
    text.replacingOccurrences(of: "%h", with: home)
      .replacingOccurrences(of: "%E", with: home + "/.config")
      .replacingOccurrences(of: "%i", with: instance)
  }

  /// The service's environment: `Environment=` first, then each environment file's lines
  /// (a file named with a leading `-` may be absent).
  func environment() throws -> [String: String] {
    var environment: [String: String] = [:]
    for (key, value) in settings where key == "Environment" {
      let pair = specifiersReplaced(value).split(separator: "=", maxSplits: 1).map(String.init)
      if pair.count == 2 { environment[pair[0]] = pair[1] }
    }
    for (key, value) in settings where key == "EnvironmentFile" {
      let optional = value.hasPrefix("-")
      let path = specifiersReplaced(optional ? String(value.dropFirst()) : value)
      guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        if optional { continue }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
      }
      for line in text.split(separator: "\n") {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix(";") else { continue }
        let pair = trimmed.split(separator: "=", maxSplits: 1).map(String.init)
        if pair.count == 2 { environment[pair[0]] = pair[1] }
      }
    }
    return environment
  }

  /// The command lines of `key` (`ExecStart`, ...), as argument vectors; a leading `-` (failure
  /// ignored) is dropped.
  func commands(_ key: String, environment: [String: String]) -> [[String]] {
    settings.filter { $0.key == key }.map { setting in
      var line = setting.value
      if line.hasPrefix("-") { line.removeFirst() }
      return words(specifiersReplaced(line)).flatMap { word -> [String] in
        if word.quoted == false, word.text.hasPrefix("$"), !word.text.hasPrefix("$$"),
          !word.text.hasPrefix("${")
        {
          let value = environment[String(word.text.dropFirst())] ?? ""
          return value.split(separator: " ").map(String.init)
        }
        return [substituted(word.text, environment)]
      }
    }
  }

  /// `${NAME}` replaced by its value, `$$` by `$`.
  func substituted(_ word: String, _ environment: [String: String]) -> String {
    var result = ""
    var rest = Substring(word)
    while let dollar = rest.firstIndex(of: "$") {
      result += rest[..<dollar]
      rest = rest[rest.index(after: dollar)...]
      if rest.hasPrefix("$") {
        result += "$"
        rest = rest.dropFirst()
      } else if rest.hasPrefix("{"), let close = rest.firstIndex(of: "}") {
        result += environment[String(rest[rest.index(after: rest.startIndex)..<close])] ?? ""
        rest = rest[rest.index(after: close)...]
      } else {
        result += "$"
      }
    }
    return result + rest
  }

  /// Words split at whitespace, with single and double quotes grouping (and removed).
  func words(_ line: String) -> [(text: String, quoted: Bool)] {
    var words: [(String, Bool)] = []
    var current = ""
    var quote: Character?
    var quoted = false
    var inWord = false
    for character in line {
      if let open = quote {
        if character == open { quote = nil } else { current.append(character) }
      } else if character == "'" || character == "\"" {
        quote = character
        quoted = true
        inWord = true
      } else if character == " " {
        if inWord { words.append((current, quoted)) }
        current = ""
        quoted = false
        inWord = false
      } else {
        current.append(character)
        inWord = true
      }
    }
    if inWord { words.append((current, quoted)) }
    return words
  }
}
