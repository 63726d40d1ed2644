/// A set of paths that gives those at or below a path in time proportional to how many there
/// are below it (a tree of children), not to the size of the set: a window of 10,000 renames
/// that filtered every path for each rename took minutes to record.
public struct PathIndex: Sendable {
  private var members: Set<DocumentPath> = []
  /// The children of every member and of every folder above one (the root included).
  private var children: [DocumentPath: Set<DocumentPath>] = [:]

  public init() {}

  public init(_ paths: some Sequence<DocumentPath>) {
    for path in paths { insert(path) }
  }

  public var count: Int { members.count }

  public func contains(_ path: DocumentPath) -> Bool { members.contains(path) }

  /// Adds `path`, linking it under its ancestors: O(depth) at most, O(1) when its parent is
  /// known already.
  public mutating func insert(_ path: DocumentPath) {
    guard members.insert(path).inserted else { return }
    var child = path
    while !child.isRoot {
      let parent = child.parent
      let linked = children[parent] != nil || members.contains(parent)
      children[parent, default: []].insert(child)
      // A parent with children, or a member, is linked to its own parent already.
      if linked { return }
      child = parent
    }
  }

  /// The members at or below `path`, in no particular order.
  public func paths(atOrBelow path: DocumentPath) -> [DocumentPath] {
    var result: [DocumentPath] = []
    var stack = [path]
    while let next = stack.popLast() {
      if members.contains(next) { result.append(next) }
      if let below = children[next] { stack += below }
    }
    return result
  }
}
