import Glibc

/// A task executor with a thread of its own for the engine's loop.
///
/// Swift's global pool has one thread per core (two here); anything that blocks on it (a
/// waiting subprocess in a test, a slow disk) would stall syncing. The loop's awaits resume
/// here instead.
final class EngineExecutor: TaskExecutor, @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var jobs: [UnownedJob] = []

  init(name: String) {
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
    let box = Unmanaged.passRetained(self)
    var thread = pthread_t()
    pthread_create(
      &thread, nil,
      { argument in
        let executor = Unmanaged<EngineExecutor>.fromOpaque(argument!).takeRetainedValue()
        executor.serve()
        return nil
      }, box.toOpaque())
    pthread_detach(thread)
    _ = name
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    pthread_mutex_lock(&mutex)
    jobs.append(unowned)
    pthread_cond_signal(&condition)
    pthread_mutex_unlock(&mutex)
  }

  private func serve() {
    while true {
      pthread_mutex_lock(&mutex)
      while jobs.isEmpty { pthread_cond_wait(&condition, &mutex) }
      let batch = jobs
      jobs = []
      pthread_mutex_unlock(&mutex)
      for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
  }
}
