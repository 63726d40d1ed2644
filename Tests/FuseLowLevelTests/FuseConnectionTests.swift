import Testing

@testable import FuseLowLevel

@Suite("FUSE connections as fusectl names them")
struct FuseConnectionTests {
  @Test func theMountTableFieldGivesTheKernelsNumber() {
    #expect(FuseConnection(mountInfoDevice: "0:52")?.id == 52)
    // The kernel's dev_t: major << 20 | minor, not glibc's encoding.
    let withMajor: UInt32 = 1 << 20 | 2
    #expect(FuseConnection(mountInfoDevice: "1:2")?.id == withMajor)
    #expect(FuseConnection(mountInfoDevice: "0:300")?.id == 300)
    #expect(FuseConnection(mountInfoDevice: "52") == nil)
    #expect(FuseConnection(mountInfoDevice: "0:x") == nil)
    #expect(FuseConnection(mountInfoDevice: "0:1048576") == nil)
  }

  @Test func aRecordedNumberReadsBack() {
    let connection = FuseConnection(id: 41)
    #expect(FuseConnection(recorded: "\(connection)\n") == connection)
    #expect(FuseConnection(recorded: "") == nil)
    #expect(FuseConnection(recorded: "forty") == nil)
  }

  @Test func aConnectionThatIsGoneIsNotAnError() {
    // No connection has this number (the kernel's anonymous minors stay far below it).
    let outcome = FuseConnection(id: 1 << 19).abort()
    if FuseConnection.controlFileSystemIsMounted() {
      #expect(outcome == .ended)
    } else {
      #expect(outcome == .noControlFileSystem)
    }
  }
}
