import CrashShieldBase
import CrashShieldRecording
import Foundation
#if os(Linux)
import Glibc
#endif

/// Keeps OpenSSL usable until the process has ended.
///
/// On Linux URLSession runs on libcurl, and libcurl's global initialisation (done by the
/// process's first URLSession) initialises OpenSSL (libssh2 included). OpenSSL's first
/// initialisation registers `OPENSSL_cleanup` with `atexit`. Exit handlers run last registered,
/// first run, so that cleanup, registered by reporting's setup after reporting's own exit handler,
/// runs *before* it. Two faults follow:
/// - when the process exits while the reporting queue is still inside that initialisation (a
///   short-lived process: the start returns, `main` returns), the main thread frees OpenSSL's
///   global locks under the initialising thread: SIGSEGV in `pthread_rwlock_*lock` under
///   `CRYPTO_THREAD_write_lock` ← `ENGINE_register_all_complete` ← `libssh2_init` ←
///   `curl_global_init` ← `URLSession.init` (seen 1 time in 40 quick-exit runs);
/// - reporting's exit flush and the remote-configuration fetch would run on an OpenSSL already
///   cleaned up (an https request then fails).
///
/// `keepThroughExit` initialises OpenSSL first, with `OPENSSL_INIT_NO_ATEXIT`, so no cleanup is
/// registered at all; the memory OpenSSL holds is returned by the kernel with the process. It
/// finds `OPENSSL_init_crypto` among the libraries already loaded (libcurl's); when OpenSSL is
/// not loaded (another platform, a libcurl without it) it does nothing. When the app initialised
/// OpenSSL before the start, its cleanup was registered before reporting's handler and runs after
/// it, which is harmless: then this call changes nothing. Once per process; cheap (OpenSSL's base
/// initialisation only: no algorithms, no configuration file).
enum OpenSSLExit {
    /// Idempotent; call before the process's first URLSession and before reporting registers its
    /// exit handler.
    static func keepThroughExit() { _ = once }

    /// `OPENSSL_INIT_NO_ATEXIT` (OpenSSL 1.1.1b and 3.x).
    private static let noAtExit: UInt64 = 0x0008_0000

    private static let once: Void = {
        #if os(Linux)
        typealias InitCrypto = @convention(c) (UInt64, OpaquePointer?) -> Int32
        // RTLD_DEFAULT: the global scope, where libcurl's dependencies live.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "OPENSSL_init_crypto") else { return }
        _ = unsafeBitCast(symbol, to: InitCrypto.self)(noAtExit, nil)
        #endif
    }()
}
