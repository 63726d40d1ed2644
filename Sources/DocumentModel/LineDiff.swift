/// The lines two texts share, in order: a longest common subsequence of lines, found with
/// Myers's O((N+M)·D) algorithm, so that a small edit of a long document costs little.
public enum LineDiff {
  /// Splits `bytes` into lines that keep their `\n`; the last line may lack one.
  public static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var start = 0
    for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
      result.append(bytes[start...index])
      start = index + 1
    }
    if start < bytes.count { result.append(bytes[start...]) }
    return result
  }

  /// For each line of `a`, the index of the line of `b` it is matched with, or nil: matched
  /// pairs increase in both texts, and as many lines as possible are matched.
  public static func matches<Line: Equatable>(_ a: [Line], _ b: [Line]) -> [Int?] {
    var result = [Int?](repeating: nil, count: a.count)
    // Common ends first: most edits touch a small middle of the document.
    var prefix = 0
    while prefix < a.count && prefix < b.count && a[prefix] == b[prefix] {
      result[prefix] = prefix
      prefix += 1
    }
    var suffix = 0
    while suffix < a.count - prefix && suffix < b.count - prefix
      && a[a.count - 1 - suffix] == b[b.count - 1 - suffix]
    {
      result[a.count - 1 - suffix] = b.count - 1 - suffix
      suffix += 1
    }
    let middleA = Array(a[prefix..<(a.count - suffix)])
    let middleB = Array(b[prefix..<(b.count - suffix)])
    for (i, j) in myers(middleA, middleB) { result[prefix + i] = prefix + j }
    return result
  }

  /// The matched pairs of a shortest edit script between `a` and `b`.
  static func myers<Line: Equatable>(_ a: [Line], _ b: [Line]) -> [(Int, Int)] {
    let n = a.count
    let m = b.count
    if n == 0 || m == 0 { return [] }
    let maximum = n + m
    let offset = maximum
    var frontier = [Int](repeating: 0, count: 2 * maximum + 2)
    var trace: [[Int]] = []
    var found = false
    for depth in 0...maximum {
      trace.append(frontier)
      for diagonal in stride(from: -depth, through: depth, by: 2) {
        var x: Int
        if diagonal == -depth
          || (diagonal != depth
            && frontier[offset + diagonal - 1] < frontier[offset + diagonal + 1])
        {
          x = frontier[offset + diagonal + 1]
        } else {
          x = frontier[offset + diagonal - 1] + 1
        }
        var y = x - diagonal
        while x < n && y < m && a[x] == b[y] {
          x += 1
          y += 1
        }
        frontier[offset + diagonal] = x
        if x >= n && y >= m {
          found = true
          break
        }
      }
      if found { break }
    }
    // Walk back through the saved frontiers, collecting the diagonal runs (the matches).
    var pairs: [(Int, Int)] = []
    var x = n
    var y = m
    for depth in stride(from: trace.count - 1, through: 0, by: -1) {
      let saved = trace[depth]
      let diagonal = x - y
      let previous: Int
      if diagonal == -depth
        || (diagonal != depth && saved[offset + diagonal - 1] < saved[offset + diagonal + 1])
      {
        previous = diagonal + 1
      } else {
        previous = diagonal - 1
      }
      let previousX = depth == 0 ? 0 : saved[offset + previous]
      let previousY = previousX - previous
      while x > previousX && y > previousY && x > 0 && y > 0 {
        x -= 1
        y -= 1
        pairs.append((x, y))
      }
      if depth > 0 {
        x = previousX
        y = previousY
      }
    }
    return pairs.reversed()
  }
}
