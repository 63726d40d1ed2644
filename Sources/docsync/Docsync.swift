import ArgumentParser

/// The `docsync` command and its subcommands.
struct Docsync: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "docsync",
    abstract: "Mount a folder of documents that stays in sync between your machines.",
    version: docsyncVersion,
    subcommands: [
      MountCommand.self, UnmountCommand.self, StatusCommand.self, SyncCommand.self,
      VersionsCommand.self, EventsCommand.self, HistoryCommand.self, RetentionCommand.self,
      PruneCommand.self, ForgetCommand.self, PauseCommand.self, ResumeCommand.self,
      HubCommand.self, DoctorCommand.self,
    ]
  )
}

/// A failure a person can act on: printed as one line, exit status 1.
struct CommandFailure: Error {
  let message: String
  init(_ message: String) { self.message = message }
}
