/// How a document in conflict may be merged without the person, as `.docsyncattributes` says.
public enum MergePolicy: Hashable, Sendable {
  /// The conflict waits for the person (`-merge`, `merge=binary`, or no matching line).
  case manual
  /// `merge=text`: a three-way merge with no overlapping change resolves the conflict; an
  /// overlapping one leaves it to the person.
  case text
  /// `merge=union`: where both sides changed the same lines, both sides' lines are kept.
  case union
}
