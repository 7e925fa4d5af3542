#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The scheduling priority of the threads that build dashboard pages and API reads: below the
/// threads that serve ingest, so that on a machine whose cores ingest keeps busy a page takes
/// the CPU ingest leaves, not the CPU ingest needs (the bound: ingest with a dashboard user
/// reloading the heaviest page loses ≤ 10 % of its rate).
///
/// The platform-specific part, kept here alone:
/// - Linux: the calling thread's nice value is raised to `niceValue`. On Linux a nice value
///   belongs to a thread, not to the process, and `setpriority(PRIO_PROCESS, 0, ...)` sets the
///   calling thread's (the kernel reads `who` 0 as the current task, which is a thread;
///   setpriority(2), NOTES). A thread at nice 10 weighs 110 against 1,024 for a thread at nice 0 in the kernel's fair scheduler, so
///   while ingest threads are runnable on its core it gets about a tenth of that core; on an idle
///   core it runs at full speed. Raising one's own nice value needs no privilege (lowering it
///   back would).
/// - Darwin: the thread's QoS class becomes `utility` (the closest equivalent; not measured).
/// - Elsewhere: nothing (the pages then compete with ingest as equals).
///
/// Not `SCHED_IDLE`: measured on the benchmark's machine (2 cores, shared with other builds), it
/// starved the pages whenever the cores were busy (2 loads in 8 s, p95 5-7 s) and did not remove
/// the loss on a quiet machine either. Caveat: Linux gives a new thread its creator's nice value,
/// so a thread of Swift's global pool that a page thread happens to start (when it hands work
/// to a pool short of threads) starts at nice 10 too. Not confirmed in the benchmark: in 1 of
/// 17 runs a nice-10 thread carried a pool thread's name, but it ran the pages (it may have been
/// a page thread whose name was not applied), and a check of every thread's nice value in
/// another run found only the two page threads.
enum ThreadPriority {
    /// The nice value of the page threads (Linux).
    static let niceValue: Int32 = 10

    /// Lowers the calling thread's priority to the page threads' (see the type); returns whether
    /// it was lowered. Call it on the thread itself, before it runs any job.
    @discardableResult
    static func lowerCurrentThreadForReads() -> Bool {
        #if os(Linux)
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceValue) == 0
        #elseif canImport(Darwin)
        return pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0) == 0
        #else
        return false
        #endif
    }

    /// The calling thread's nice value (Linux; nil elsewhere), for tests.
    static func currentNiceValue() -> Int32? {
        #if os(Linux)
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return errno == 0 ? value : nil
        #else
        return nil
        #endif
    }
}
