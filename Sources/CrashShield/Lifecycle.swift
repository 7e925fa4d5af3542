import CrashShieldBase
import CrashShieldGuards
internal import _CrashShieldRuntime

/// Zombies kept at run time: how many, and freeing them.
extension CrashShieldSDK {
    /// Frees every kept zombie properly. Call it when the app goes to the background: zombies
    /// protect only while they are kept.
    public static func flushZombies() {
        cs_zombie_flush()
    }

    /// Zombies kept now and the memory they hold, in bytes.
    public static var zombieUsage: (count: Int, bytes: Int) {
        (Int(cs_zombie_count()), Int(cs_zombie_bytes()))
    }

    /// Applies the lifecycle options; `start` calls it before installing the guards.
    static func applyLifecycleOptions(_ options: CrashShieldOptions) {
        withCStrings(options.timerWeakTargetClasses) { names in
            // Never a NULL list (NULL asks for the C default): an empty list means "none".
            let list = names.isEmpty ? [nil] : names
            list.withUnsafeBufferPointer { cs_timer_configure_weak_targets($0.baseAddress, names.count) }
        }
        withCStrings(options.zombieClassNames) { names in
            withCStrings(options.zombieClassPrefixes) { prefixes in
                withCStrings(options.zombieDeniedClasses) { deny in
                    names.withUnsafeBufferPointer { n in
                        prefixes.withUnsafeBufferPointer { p in
                            deny.withUnsafeBufferPointer { d in
                                var config = cs_zombie_config(
                                    class_names: n.baseAddress, class_count: n.count, prefixes: p.baseAddress,
                                    prefix_count: p.count, deny: d.baseAddress, deny_count: d.count,
                                    max_bytes: max(1, options.zombieMaxBytes), max_count: max(1, options.zombieMaxCount))
                                cs_zombie_configure(&config)
                            }
                        }
                    }
                }
            }
        }
        // An empty list keeps whatever was configured through the C API.
        guard !options.mainThreadOnlyCalls.isEmpty else { return }
        withCStrings(options.mainThreadOnlyCalls.map(\.className)) { classes in
            withCStrings(options.mainThreadOnlyCalls.map(\.selector)) { selectors in
                classes.withUnsafeBufferPointer { c in
                    selectors.withUnsafeBufferPointer { s in
                        cs_mainthread_configure(c.baseAddress, s.baseAddress, c.count)
                    }
                }
            }
        }
    }
}
