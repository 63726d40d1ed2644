import ContentModel

/// The hub's content objects in the simulation: each chunk and node stored once by id, a
/// node's references beside it, and the step it was last put or found present, swept as
/// `SQLiteHub.sweepObjects` sweeps.
struct SimObjectStore {
  struct Object {
    var frame: [UInt8]
    var references: [ObjectID]
    var touched: UInt64
  }

  /// The hubs keep an unnamed object a day after it was last put or found present; the
  /// simulation's steps stand for seconds, so its grace is some steps instead.
  static let grace: UInt64 = 6

  var objects: [ObjectID: Object] = [:]
  /// Broken on purpose by a test: a sweep frees what prune or forget released even where a
  /// retained version still reaches it.
  var sweepsReachable = false

  /// The ids of `ids` the store lacks; those it has count as touched now (`missingObjects`).
  mutating func missing(_ ids: [ObjectID], now: UInt64) -> Set<ObjectID> {
    var result: Set<ObjectID> = []
    for id in ids {
      if objects[id] != nil {
        objects[id]!.touched = now
      } else {
        result.insert(id)
      }
    }
    return result
  }

  /// Stores an object (or touches the copy it has); refuses a node unless every child is there.
  mutating func put(_ id: ObjectID, frame: [UInt8], references: [ObjectID], now: UInt64) -> Bool {
    guard references.allSatisfy({ objects[$0] != nil }) else { return false }
    if objects[id] != nil {
      objects[id]!.touched = now
    } else {
      objects[id] = Object(frame: frame, references: references, touched: now)
    }
    return true
  }

  /// Every object reached from `roots` through the references of the nodes present.
  func reach(_ roots: some Sequence<ObjectID>) -> Set<ObjectID> {
    var reached: Set<ObjectID> = []
    var pending = Array(roots)
    while let id = pending.popLast() {
      guard reached.insert(id).inserted, let object = objects[id] else { continue }
      pending += object.references
    }
    return reached
  }

  /// The step before which an object counts as old at `now`.
  static func cutoff(now: UInt64) -> UInt64 { now >= grace ? now - grace : 0 }

  /// Frees what no retained record reaches and that is old, or that was reached only through
  /// `released` (the roots prune or forget just let go). A recent node that was not released
  /// keeps what it names: an upload whose record is not committed yet finds its chunks.
  /// Returns the closure of `released`, which the caller checks is gone where unreached.
  @discardableResult
  mutating func sweep(retained: Set<ObjectID>, released: Set<ObjectID>, now: UInt64)
    -> Set<ObjectID>
  {
    let cutoff = Self.cutoff(now: now)
    let freed = reach(released)
    let recentNodes = objects.filter { !$0.value.references.isEmpty && $0.value.touched >= cutoff }
      .keys.filter { !freed.contains($0) }
    let reached = reach(Array(retained) + recentNodes)
    objects = objects.filter { id, object in
      if sweepsReachable && freed.contains(id) { return false }
      return reached.contains(id) || (object.touched >= cutoff && !freed.contains(id))
    }
    return freed
  }
}
