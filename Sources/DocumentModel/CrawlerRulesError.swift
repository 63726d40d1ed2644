/// A line of a crawler list that names no program.
public struct CrawlerRulesError: Error, Sendable, Hashable, CustomStringConvertible {
  public let line: Int
  public let text: String

  public init(line: Int, text: String) {
    self.line = line
    self.text = text
  }

  public var description: String {
    "line \(line) of the crawler list is not a program name: \(text)"
  }
}
