/// docsync's version, written here and nowhere else: `docsync --version` prints it, and
/// `Tools/package` names the Debian package after what the binary prints (it refuses a
/// `Tools/debian/changelog` whose first entry says otherwise).
let docsyncVersion = "0.1.0"
