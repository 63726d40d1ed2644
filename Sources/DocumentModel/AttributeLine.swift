/// One line of `.docsyncattributes` in gitattributes syntax: a pattern, then the attributes it
/// says something about. Every attribute docsync reads (`merge`, `package`) comes through this
/// one parser, so the file has one syntax whatever it sets.
///
/// Fields are separated by spaces, tabs (and a `\r` before the newline). `name` sets an
/// attribute, `-name` unsets it, `!name` returns it to unspecified, `name=value` gives it a
/// value; within a line a later field about the same name overrides an earlier one, as in git.
/// Lines starting with `#` are comments; negative patterns (`!pattern`) are ignored as git
/// ignores them; a leading `\` escapes a pattern's first character (`\#odd.md`).
struct AttributeLine: Hashable, Sendable {
  /// What one field says about an attribute.
  enum State: Hashable, Sendable {
    case set
    case unset
    case unspecified
    case value(String)
  }

  let pattern: PathPattern
  /// Each field's attribute name and what it says, in the line's order.
  let fields: [Field]

  struct Field: Hashable, Sendable {
    let name: String
    let state: State
  }

  /// The lines of a `.docsyncattributes` file that name a pattern and at least one attribute.
  static func lines(of fileContent: [UInt8]) -> [AttributeLine] {
    fileContent.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
      .compactMap { AttributeLine($0) }
  }

  init?(_ raw: ArraySlice<UInt8>) {
    let blank: (UInt8) -> Bool = {
      $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
    }
    let words = raw.split(whereSeparator: blank)
    guard var first = words.first, first.first != UInt8(ascii: "#"),
      first.first != UInt8(ascii: "!")
    else { return nil }
    if first.first == UInt8(ascii: "\\") { first = first.dropFirst() }
    guard let pattern = PathPattern(first) else { return nil }
    let fields = words.dropFirst().compactMap(Self.field)
    guard !fields.isEmpty else { return nil }
    self.pattern = pattern
    self.fields = fields
  }

  /// What this line says about `name` (the last field about it), or nil when it says nothing.
  func state(of name: String) -> State? {
    fields.last { $0.name == name }?.state
  }

  private static func field(_ word: ArraySlice<UInt8>) -> Field? {
    let text = String(decoding: word, as: UTF8.self)
    if let equals = text.firstIndex(of: "=") {
      let name = String(text[..<equals])
      return name.isEmpty
        ? nil : Field(name: name, state: .value(String(text[text.index(after: equals)...])))
    }
    if text.hasPrefix("-") || text.hasPrefix("!") {
      let name = String(text.dropFirst())
      guard !name.isEmpty else { return nil }
      return Field(name: name, state: text.hasPrefix("-") ? .unset : .unspecified)
    }
    return Field(name: text, state: .set)
  }
}
