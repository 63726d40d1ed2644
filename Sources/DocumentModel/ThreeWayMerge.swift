/// A line-based three-way merge of two texts that both descend from a base, as diff3 does:
/// a change made on one side only is taken; the same change on both sides is taken once; and
/// different changes to the same lines are an overlap, shown between diff3 markers (or, for a
/// union merge, kept from both sides).
///
/// Pure and deterministic: every device that merges the same three texts gets the same bytes.
public enum ThreeWayMerge {
  /// What to do where both sides changed the same lines differently.
  public enum Overlap: Sendable {
    /// diff3 markers naming each side: `<<<<<<<`, `|||||||`, `=======`, `>>>>>>>`.
    case markers(current: String, base: String, other: String)
    /// The current side's lines, then the other's, with no markers (gitattributes' union).
    case union
  }

  /// The merged text and how many overlapping changes it holds.
  public struct Result: Sendable, Equatable {
    public var bytes: [UInt8]
    public var overlaps: Int

    public init(bytes: [UInt8], overlaps: Int) {
      self.bytes = bytes
      self.overlaps = overlaps
    }
  }

  /// Documents larger than this are not merged: a person reads the markers, and the diff's cost
  /// grows with the size.
  public static let maximumBytes = 4 << 20

  /// Whether `bytes` is text docsync merges: valid UTF-8, no NUL, at most `maximumBytes`.
  public static func isMergeableText(_ bytes: [UInt8]) -> Bool {
    bytes.count <= maximumBytes && !bytes.contains(0)
      && String(validating: bytes, as: UTF8.self) != nil
  }

  public static func merge(
    base: [UInt8], current: [UInt8], other: [UInt8], overlap: Overlap
  ) -> Result {
    let o = LineDiff.lines(base)
    let a = LineDiff.lines(current)
    let b = LineDiff.lines(other)
    let inA = LineDiff.matches(o, a)
    let inB = LineDiff.matches(o, b)
    var output: [UInt8] = []
    var overlaps = 0
    var (lo, la, lb) = (0, 0, 0)

    func emit(_ lines: ArraySlice<ArraySlice<UInt8>>) {
      for line in lines { output += line }
    }
    /// Lines inside markers must end with a newline, or the marker would join the last one.
    func emitClosed(_ lines: ArraySlice<ArraySlice<UInt8>>) {
      emit(lines)
      if let last = lines.last, last.last != UInt8(ascii: "\n") {
        output.append(UInt8(ascii: "\n"))
      }
    }
    func unstable(_ oRange: Range<Int>, _ aRange: Range<Int>, _ bRange: Range<Int>) {
      let (oLines, aLines, bLines) = (o[oRange], a[aRange], b[bRange])
      if aLines.elementsEqual(oLines) {
        emit(bLines)
      } else if bLines.elementsEqual(oLines) || aLines.elementsEqual(bLines) {
        emit(aLines)
      } else {
        overlaps += 1
        switch overlap {
        case .union:
          emitClosed(aLines)
          emit(bLines)
        case .markers(let currentLabel, let baseLabel, let otherLabel):
          output += Array("<<<<<<< \(currentLabel)\n".utf8)
          emitClosed(aLines)
          output += Array("||||||| \(baseLabel)\n".utf8)
          emitClosed(oLines)
          output += Array("=======\n".utf8)
          emitClosed(bLines)
          output += Array(">>>>>>> \(otherLabel)\n".utf8)
        }
      }
    }

    while lo < o.count || la < a.count || lb < b.count {
      // A stable run: base lines that both sides kept, in the same place.
      var run = 0
      while lo + run < o.count && inA[lo + run] == la + run && inB[lo + run] == lb + run {
        run += 1
      }
      emit(o[lo..<(lo + run)])
      lo += run
      la += run
      lb += run
      // The next base line both sides kept ends the unstable stretch before it.
      var next = lo
      while next < o.count && (inA[next] == nil || inB[next] == nil) { next += 1 }
      if next == o.count {
        unstable(lo..<o.count, la..<a.count, lb..<b.count)
        break
      }
      let (nextA, nextB) = (inA[next]!, inB[next]!)
      if next > lo || nextA > la || nextB > lb {
        unstable(lo..<next, la..<nextA, lb..<nextB)
      }
      (lo, la, lb) = (next, nextA, nextB)
    }
    return Result(bytes: output, overlaps: overlaps)
  }
}
