// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
  name: "docsync",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "docsync", targets: ["docsync"])
  ],
  dependencies: [
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
  ],
  targets: [
    .systemLibrary(
      name: "CFuse",
      pkgConfig: "fuse3",
      providers: [.apt(["libfuse3-dev"])]
    ),
    .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
    .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
    .systemLibrary(
      name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
    // BLAKE3 (object ids), compiled from Debian's librust-blake3-dev sources: Debian 12 ships
    // the C implementation only there.
    .target(name: "CBlake3"),
    // The I/O hooks that let libfuse 3.14 use FUSE passthrough, which it predates.
    .target(name: "CFuseIO", dependencies: ["CFuse"]),
    .target(
      name: "FuseLowLevel",
      dependencies: [
        "CFuse", "CFuseIO", .product(name: "SystemPackage", package: "swift-system"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "DocumentModel",
      dependencies: [.product(name: "Crypto", package: "swift-crypto")],
      swiftSettings: strict
    ),
    .target(
      name: "ContentModel",
      dependencies: [
        "DocumentModel", "CBlake3", "CSodium", "CZstd",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "LocalStore",
      dependencies: [
        "ContentModel", "DocumentModel", "Hub",
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "SystemPackage", package: "swift-system"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "Hub",
      dependencies: [
        "CSodium", "CXXHash", "ContentModel", "DocumentModel",
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "PostgresHub",
      dependencies: [
        "Hub", "ContentModel", "DocumentModel",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      resources: [
        .embedInCode("Migrations/v0001_accounts_records_blobs.sql"),
        .embedInCode("Migrations/v0002_least_privilege.sql"),
        .embedInCode("Migrations/v0003_blob_repair.sql"),
        .embedInCode("Migrations/v0004_retention.sql"),
        .embedInCode("Migrations/v0005_erasures_and_forget.sql"),
        .embedInCode("Migrations/v0006_released_blobs_not_wanted.sql"),
        .embedInCode("Migrations/v0007_row_checks_use_indexes.sql"),
        .embedInCode("Migrations/v0008_upload_sweep_uses_an_index.sql"),
        .embedInCode("Migrations/v0009_content_objects.sql"),
        .embedInCode("Migrations/v0010_objects_freed_at_once.sql"),
        .embedInCode("Migrations/v0011_append_holds_the_head_briefly.sql"),
        .embedInCode("Migrations/v0012_smaller_object_rows.sql"),
        .embedInCode("Migrations/v0013_devices_from.sql"),
        .embedInCode("Migrations/v0014_objects_keyed_by_number.sql"),
        .embedInCode("Migrations/v0015_blob_twins.sql"),
      ],
      swiftSettings: strict
    ),
    .executableTarget(
      name: "hub-stress",
      dependencies: ["Hub", "PostgresHub"],
      path: "Tools/HubStress",
      swiftSettings: strict
    ),
    .target(
      name: "SyncEngine",
      dependencies: [
        "DocumentModel", "ContentModel", "Hub", "LocalStore",
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "DocumentFileSystem",
      dependencies: [
        "LocalStore", "SyncEngine", "DocumentModel",
        .product(name: "SystemPackage", package: "swift-system"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "FuseMount",
      dependencies: ["FuseLowLevel", "DocumentFileSystem"],
      swiftSettings: strict
    ),
    .executableTarget(
      name: "docsync",
      dependencies: [
        "FuseMount", "SyncEngine", "Hub", "PostgresHub", "DocumentModel", "SessionBus",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "SessionBus",
      swiftSettings: strict
    ),
    .target(
      name: "FileSystemConformance",
      dependencies: [.product(name: "SystemPackage", package: "swift-system")],
      swiftSettings: strict
    ),
    .executableTarget(
      name: "bench-model",
      dependencies: ["DocumentModel"],
      path: "Tools/BenchModel",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "bench-content",
      dependencies: [
        "CSodium", "ContentModel", "DocumentModel",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      path: "Tools/BenchContent",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "bench-objects",
      dependencies: ["Hub", "PostgresHub", .product(name: "GRDB", package: "GRDB.swift")],
      path: "Tools/BenchObjects",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "library-generator",
      dependencies: ["DocumentModel", "Hub", "LocalStore", "SyncEngine"],
      path: "Tools/LibraryGenerator",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "memoryfs-example",
      dependencies: ["FuseLowLevel"],
      path: "Tools/MemoryFS",
      swiftSettings: strict
    ),
    .testTarget(
      name: "DocumentModelTests", dependencies: ["DocumentModel", "ContentModel"],
      swiftSettings: strict),
    .testTarget(
      name: "ContentModelTests", dependencies: ["ContentModel", "DocumentModel"],
      swiftSettings: strict),
    .testTarget(
      name: "HubTests",
      dependencies: [
        "Hub", "PostgresHub", "DocumentModel", "ContentModel", "MountHarness",
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "SyncEngineTests",
      dependencies: [
        "SyncEngine", "DocumentFileSystem", "Hub", "LocalStore", "DocumentModel", "MountHarness",
        "ContentModel",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "SessionBusTests", dependencies: ["SessionBus", "MountHarness"], swiftSettings: strict),
    .testTarget(
      name: "LocalStoreTests",
      dependencies: [
        "LocalStore", "DocumentModel", "ContentModel", "MountHarness",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "DocumentFileSystemTests",
      dependencies: ["DocumentFileSystem", "FileSystemConformance", "MountHarness"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "FuseLowLevelTests", dependencies: ["FuseLowLevel", "MountHarness"],
      swiftSettings: strict),
    .testTarget(
      name: "FileSystemConformanceTests",
      dependencies: ["FileSystemConformance", "MountHarness"],
      swiftSettings: strict
    ),
    .target(
      name: "MountHarness",
      path: "Tests/MountHarness",
      swiftSettings: strict
    ),
    .testTarget(
      name: "MountTests",
      dependencies: ["FileSystemConformance", "MountHarness"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "EndToEndTests",
      dependencies: ["MountHarness", "DocumentModel", "ContentModel"],
      swiftSettings: strict
    ),
  ]
)
