import DocumentFileSystem

// Both DocumentFileSystem and FileSystemConformance name a `Caller` and an `OpenFile`; this
// file imports only the former, so these aliases name its types unambiguously.
typealias DocumentCaller = Caller
typealias DocumentOpenFile = OpenFile
