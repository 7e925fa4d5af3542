# scripts/lib/runtime-objc.sh — sourced by the checks that read the runtime's compiled code.
# runtime_objc_compile <output> <source> [clang flags...]: compiles one Objective-C file of
# Sources/_CrashShieldRuntime as SwiftPM's release build compiles it (clang -O2, x86_64 Linux,
# GNUstep through scripts/bootstrap.sh's pkg-config file), with `$clang`, the caller's compiler;
# the flags say what to produce (-c for an object, -S for assembly).
runtime_objc_compile() {
    local output="$1" source="$2"
    shift 2
    "$clang" -target x86_64-unknown-linux-gnu -O2 -fblocks -fPIC -fno-omit-frame-pointer \
        -DGNUSTEP -DGNU_RUNTIME=1 -DGNUSTEP_BASE_LIBRARY=1 \
        -ISources/_CrashShieldRuntime/include -ISources/_CrashShieldIncidents/include \
        -ISources/_CrashShieldCapture/include -ISources/_CrashShieldRuntime/Backend/GNUstepShim \
        -ISources/_CrashShieldRuntime/Engine -ISources/_CrashShieldRuntime/Backend \
        $(pkg-config --cflags crashshield-gnustep-base) "$@" "$source" -o "$output"
}
