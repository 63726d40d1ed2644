/// What a run of schedules did with chunked content, printed with `DOCSYNC_SIM_STATS=1`.
struct SimStatistics: CustomStringConvertible {
  var schedules = 0
  var versions = 0
  var chunked = 0
  var whole = 0
  var objectsPut = 0
  var objectBytesPut = 0
  var edits = 0
  var worstEdit = (chunks: 0, nodes: 0)
  var tallest: UInt8 = 0
  var dedups = 0
  var reuploads = 0
  var sweeps = 0
  var swept = 0
  var pruned = 0
  var forgotten = 0

  mutating func add(_ schedule: Schedule) {
    schedules += 1
    versions += schedule.created.count
    chunked += schedule.chunkedVersions
    whole += schedule.blobVersions
    objectsPut += schedule.objectsPut
    objectBytesPut += schedule.objectBytesPut
    edits += schedule.editsChecked
    worstEdit = (
      max(worstEdit.chunks, schedule.worstEdit.chunks),
      max(worstEdit.nodes, schedule.worstEdit.nodes)
    )
    tallest = max(tallest, schedule.tallest)
    dedups += schedule.dedupChecks
    reuploads += schedule.reuploads
    sweeps += schedule.sweeps
    swept += schedule.objectsSwept
    pruned += schedule.pruned.count
    forgotten += schedule.forgotten.count
  }

  var description: String {
    "\(schedules) schedules, \(versions) versions (\(chunked) chunked, \(whole) whole blobs, "
      + "trees up to height \(tallest)), "
      + "\(objectsPut) objects put (\(objectBytesPut) bytes), \(edits) small edits (worst "
      + "\(worstEdit.chunks) chunks, \(worstEdit.nodes) nodes), \(dedups) pushes of held "
      + "content, \(reuploads) re-uploads, \(sweeps) sweeps freed \(swept) objects, "
      + "\(pruned) pruned, \(forgotten) forgotten"
  }
}
