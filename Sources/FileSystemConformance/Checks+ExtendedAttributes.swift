import SystemPackage

extension ConformanceSuite {
  static let extendedAttributeChecks: [ConformanceCheck] = [
    ConformanceCheck("user xattrs are set, read, listed and removed", "xattr") { c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      for name in ["f", "d"] {
        try c.setXattr(name, "user.one", Array("first".utf8))
        try c.setXattr(name, "user.two", [0, 1, 2, 0, 255])
        try c.expectEqual(try c.getXattr(name, "user.one"), Array("first".utf8), "user.one")
        try c.expectEqual(try c.getXattr(name, "user.two"), [0, 1, 2, 0, 255], "user.two")
        let listed = try c.step("listxattr") { try c.subject.listExtendedAttributes(c.path(name)) }
          .filter { $0.hasPrefix("user.") }.sorted()
        try c.expectEqual(listed, ["user.one", "user.two"], "listxattr of \(name)")
        try c.setXattr(name, "user.one", Array("replaced, longer".utf8))
        try c.expectEqual(
          try c.getXattr(name, "user.one"), Array("replaced, longer".utf8), "user.one")
        try c.step("removexattr") {
          try c.subject.removeExtendedAttribute(c.path(name), name: "user.one")
        }
        try c.expectError([.noData], "getxattr after removexattr") {
          _ = try c.getXattr(name, "user.one")
        }
        let after = try c.step("listxattr") { try c.subject.listExtendedAttributes(c.path(name)) }
          .filter { $0.hasPrefix("user.") }
        try c.expectEqual(after, ["user.two"], "listxattr after removexattr")
      }
    },
    ConformanceCheck("an empty xattr value round-trips", "xattr") { c in
      try c.writeFile("f", "x")
      try c.setXattr("f", "user.empty", [])
      try c.expectEqual(
        try c.step("size") { try c.subject.extendedAttributeSize(c.path("f"), name: "user.empty") },
        0, "size of empty value")
      try c.expectEqual(try c.getXattr("f", "user.empty"), [], "empty value")
    },
    ConformanceCheck("XATTR_CREATE on an existing xattr fails with EEXIST", "xattr") { c in
      try c.writeFile("f", "x")
      try c.setXattr("f", "user.a", [1], flags: .create)
      try c.expectError([.fileExists], "XATTR_CREATE again") {
        try c.subject.setExtendedAttribute(c.path("f"), name: "user.a", value: [2], flags: .create)
      }
      try c.expectEqual(try c.getXattr("f", "user.a"), [1], "value after refused create")
    },
    ConformanceCheck("XATTR_REPLACE on a missing xattr fails with ENODATA", "xattr") { c in
      try c.writeFile("f", "x")
      try c.expectError([.noData], "XATTR_REPLACE of missing") {
        try c.subject.setExtendedAttribute(c.path("f"), name: "user.a", value: [2], flags: .replace)
      }
      try c.setXattr("f", "user.a", [1])
      try c.setXattr("f", "user.a", [3], flags: .replace)
      try c.expectEqual(try c.getXattr("f", "user.a"), [3], "value after XATTR_REPLACE")
    },
    ConformanceCheck("getxattr and removexattr of a missing xattr fail with ENODATA", "xattr") {
      c in
      try c.writeFile("f", "x")
      try c.expectError([.noData], "getxattr of missing") { _ = try c.getXattr("f", "user.none") }
      try c.expectError([.noData], "size of missing") {
        _ = try c.subject.extendedAttributeSize(c.path("f"), name: "user.none")
      }
      try c.expectError([.noData], "removexattr of missing") {
        try c.subject.removeExtendedAttribute(c.path("f"), name: "user.none")
      }
    },
    ConformanceCheck("getxattr answers a size query, then ERANGE for a small buffer", "xattr") {
      c in
      try c.writeFile("f", "x")
      let value = pattern(100)
      try c.setXattr("f", "user.big", value)
      let size = try c.step("getxattr size") {
        try c.subject.extendedAttributeSize(c.path("f"), name: "user.big")
      }
      try c.expectEqual(size, 100, "size query")
      try c.expectError([.outOfRange], "getxattr into 99 bytes") {
        _ = try c.subject.getExtendedAttribute(c.path("f"), name: "user.big", capacity: 99)
      }
      try c.expectEqual(
        try c.step("getxattr 100") {
          try c.subject.getExtendedAttribute(c.path("f"), name: "user.big", capacity: 100)
        }, value, "value in an exact buffer")
    },
    ConformanceCheck("POSIX ACL names are answered with ENODATA or EOPNOTSUPP", "xattr") { c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      let clean: [Errno] = [.noData, .notSupported]
      try c.expectError(clean, "getxattr system.posix_acl_access of f") {
        _ = try c.subject.getExtendedAttribute(
          c.path("f"), name: "system.posix_acl_access", capacity: 4096)
      }
      try c.expectError(clean, "size of system.posix_acl_access of f") {
        _ = try c.subject.extendedAttributeSize(c.path("f"), name: "system.posix_acl_access")
      }
      try c.expectError(clean, "getxattr system.posix_acl_default of d") {
        _ = try c.subject.getExtendedAttribute(
          c.path("d"), name: "system.posix_acl_default", capacity: 4096)
      }
    },
  ]
}

extension CheckContext {
  func setXattr(
    _ name: String, _ attribute: String, _ value: [UInt8], flags: ExtendedAttributeFlags = []
  ) throws {
    try step("setxattr \(attribute) on \(name)") {
      try subject.setExtendedAttribute(path(name), name: attribute, value: value, flags: flags)
    }
  }

  /// The whole value: a size query, then a read into a buffer of that size.
  func getXattr(_ name: String, _ attribute: String) throws -> [UInt8] {
    try step("getxattr \(attribute) of \(name)") {
      let size = try subject.extendedAttributeSize(path(name), name: attribute)
      return try subject.getExtendedAttribute(path(name), name: attribute, capacity: size)
    }
  }
}
