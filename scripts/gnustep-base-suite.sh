#!/usr/bin/env bash
# GNUstep Base's own regression suite (Tests/base of the installed gnustep-base's Debian source
# package) as a gate on the guards: a guard may change a legal result nowhere,
# and this suite is thousands of legal calls nobody here wrote.
#
# What it does:
#   1. Installs what it needs (gnustep-make for gnustep-tests, dpkg-dev for dpkg-source, the
#      package's build dependencies for its configure script), adds a deb-src entry for this
#      Debian release if apt has none, and fetches the source package of exactly the installed
#      gnustep-base version into .build/gnustep-base-suite/ (cached; ignored by git).
#   2. Configures that source tree the way debian/rules does. No library is built: the tests link
#      the installed one. Configuring only produces what some tests include (config.h,
#      config.mak); the script checks that the GSConfig.h it generates equals the installed one.
#      Debian's patches are applied, as in Debian's own build, which runs this suite: they turn
#      the assertions that need the internet into hopes.
#   3. Links the guards into every test program of a second copy of the suite: the objects that
#      `swift build` compiled for _CrashShieldRuntime and its C dependencies, plus
#      Tests/GNUstepBase/start_guards.c (calls cs_guards_start(NULL) before main), combined into
#      one relocatable object with the starter last, added to gnustep-make's ADDITIONAL_TOOL_LIBS
#      so that it follows the test's own objects on the link line (ADDITIONAL_LDFLAGS would put
#      it before them). Constructors run in link order, so the runtime has registered the test's
#      and the guards' classes and selectors when the starter runs. Only programs get it (a
#      makefile fragment in GNUSTEP_LOCAL_ADDITIONAL_MAKEFILES adds it for the tool and test_tool
#      types): the bundles and frameworks the tests load must not carry a second copy of the
#      guards. Every built program is checked (nm) for the starter.
#   4. Builds Tests/GNUstepBase/pool_patterns.m plain and with the same guards object, and runs
#      each of its cases in both (seconds): autorelease-pool sequences GNUstep Base's tests use,
#      and the short-buffer copy misuse of NSData/general.m that once overwrote the thread's
#      pool cache under the guards. Any case that does not exit 0 with "<case>: ok" fails the gate
#      before the long runs start.
#   5. Runs the whole Tests/base unguarded, then guarded (one after the other: tests use fixed
#      ports and the defaults database), prints both runs' counts, and compares. The unguarded
#      result depends only on the installed gnustep-base (the suite is that version's source), so
#      it is committed: Tests/GNUstepBase/unguarded-baseline/<libgnustep-base-dev version>.txt
#      holds the unguarded run's counts and its failing assertions. When that file exists, it
#      stands for the unguarded run, which is skipped; when it does not (another gnustep-base) or
#      CS_SUITE_RECOMPUTE_BASELINE=1, the unguarded suite runs and, if its failures are exactly
#      the expected ones (timing-dependent ones, see below, left out), the file is written for the
#      developer to commit. The comparison:
#      - a guard-caused failure (an assertion that fails more often guarded than unguarded) must
#        be listed in Tests/GNUstepBase/expected-guarded-failures.txt, each entry an assertion
#        that a misuse raises with the guard that stops it; that guard must have recorded a misuse
#        in the entry's test program (the starter prints each guard's incident count at exit);
#      - an entry of that list that no longer fails is stale and fails the gate too, so the list
#        stays exact;
#      - an unguarded failure must be listed in Tests/GNUstepBase/expected-unguarded-failures.txt
#        (the baseline of this platform; empty when the suite passes);
#      - no test may report that a guard failed to start, and both runs must have passed tests.
#      An unexpected failure is confirmed by rerunning its test programs in both modes; one that
#      does not happen again is reported as timing-dependent and does not fail the gate (the
#      suite has assertions on timers and timeouts, and CI machines are loaded).
#
# Nothing is subset: every test directory of Tests/base runs in both modes. Wall time is mostly
# the tests' own waiting (run loops, timeouts) and the compile of ~380 test programs per run.
# Measured on the 2-core build machine shared with seven other builds: a run takes 350 s
# (guarded, load ~3) to 745 s (guarded, load ~17), unguarded 609 s at load ~15; the first fetch,
# build dependencies and configure add about 2 minutes, later runs reuse the configured tree.
# With the committed baseline, a whole gate used 213 s of CPU (user+sys; at load ~18, where it
# took 1,309 s): about 0.6 of one core over the ~350 s of a guarded run at low load, so most of
# a 2-core machine is idle meanwhile; scripts/test runs other stages beside it.
#
# Usage: scripts/gnustep-base-suite.sh        (after `swift build`; scripts/test runs it last)
#        CS_SUITE_REUSE_RUNS=1 scripts/gnustep-base-suite.sh   compares the last runs' logs again
#        (for editing the expected lists) and runs only a mode whose log is missing.
#        CS_SUITE_RECOMPUTE_BASELINE=1 scripts/gnustep-base-suite.sh   runs the unguarded suite
#        even when a committed baseline exists, and rewrites that baseline.
# Exit status: 0 when the gate holds, 1 otherwise. Linux (Debian) only; elsewhere it says so and
# exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export SWIFT_BACKTRACE=enable=no

if [ "$(uname -s)" != "Linux" ]; then
    echo "gnustep-base-suite: GNUstep Base runs on Linux only here; skipped"
    exit 0
fi

say() { echo "gnustep-base-suite: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
apt_install() {
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

expected_guarded=Tests/GNUstepBase/expected-guarded-failures.txt
expected_unguarded=Tests/GNUstepBase/expected-unguarded-failures.txt
starter_source=Tests/GNUstepBase/start_guards.c
work="$repo/.build/gnustep-base-suite"
mkdir -p "$work"

# ---- 1. tools, deb-src, the source of exactly the installed version -------------------------
scripts/bootstrap.sh
missing=()
command -v gnustep-tests >/dev/null 2>&1 || missing+=(gnustep-make)
command -v dpkg-source >/dev/null 2>&1 || missing+=(dpkg-dev)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    $SUDO apt-get update -qq
    apt_install "${missing[@]}"
fi

read -r src_package src_version < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' libgnustep-base-dev)
[ -n "$src_version" ] || die "libgnustep-base-dev is not installed"
# The committed unguarded result of exactly this binary package version (step 5).
base_version=$(dpkg-query -W -f='${Version}' libgnustep-base-dev)
baseline="Tests/GNUstepBase/unguarded-baseline/$base_version.txt"

has_source_index() {
    apt-cache showsrc "$src_package" 2>/dev/null | grep -x "Version: $src_version" >/dev/null
}
if ! has_source_index; then
    # shellcheck disable=SC1091
    . /etc/os-release
    [ "${ID:-}" = debian ] && [ -n "${VERSION_CODENAME:-}" ] \
        || die "no deb-src entry provides $src_package $src_version and this is not Debian (ID=${ID:-?}); add one"
    sources_file=/etc/apt/sources.list.d/crashshield-deb-src.sources
    if [ ! -f "$sources_file" ]; then
        say "adding $sources_file (deb-src for $VERSION_CODENAME)"
        $SUDO tee "$sources_file" >/dev/null <<EOF
# Added by CrashShield's scripts/gnustep-base-suite.sh: Debian source packages for apt-get source.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $VERSION_CODENAME-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    $SUDO apt-get update -qq
    has_source_index || die "apt has no source package $src_package $src_version (is the installed gnustep-base older than the archive's? upgrade it)"
fi

# Everything the package's configure script probes for, so config.h matches the installed build.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get build-dep -y -qq --arch-only "$src_package=$src_version" >/dev/null

tree="$work/$src_package-$src_version"
if [ ! -f "$tree/.configured" ]; then
    say "fetching and configuring $src_package $src_version"
    rm -rf "$tree" "$work/download"
    mkdir -p "$work/download"
    (cd "$work/download" && apt-get source --download-only -qq "$src_package=$src_version") >/dev/null 2>&1 \
        || die "apt-get source $src_package=$src_version failed"
    dpkg-source -x "$work/download/${src_package}_${src_version#*:}.dsc" "$tree" >/dev/null 2>&1 \
        || die "dpkg-source could not unpack the source package"
    # The configure options of debian/rules (override_dh_auto_configure).
    (cd "$tree" && ./configure ac_cv_lib_kvm_kvm_getenvv=no --with-installation-domain=SYSTEM --disable-bfd \
        >configure.out 2>&1) || { tail -20 "$tree/configure.out" >&2; die "configure failed"; }
    cmp -s "$tree/Headers/GNUstepBase/GSConfig.h" "$(gnustep-config --variable=GNUSTEP_SYSTEM_HEADERS)/GNUstepBase/GSConfig.h" \
        || die "the configured GSConfig.h differs from the installed one: the tests would not match the installed library"
    touch "$tree/.configured"
fi

# ---- 2. the guards as one relocatable object, the starter last ------------------------------
swift build --target _CrashShieldRuntime >/dev/null
bin="$(swift build --show-bin-path)"
objects=()
for target in _CrashShieldIncidents _CrashShieldCapture _CrashShieldRuntime; do
    # The objects of the target's current sources only: .build may keep objects of deleted files.
    while IFS= read -r source; do
        object="$bin/$target.build/${source#Sources/$target/}.o"
        [ -f "$object" ] || die "$object is missing (did swift build succeed?)"
        objects+=("$object")
    done < <(find "Sources/$target" -name '*.c' -o -name '*.m' -o -name '*.mm' | sort)
done
CC="$(gnustep-config --variable=CC)"
mkdir -p "$work/guards"
"$CC" -c -O1 -fPIC -Wall -Werror -ISources/_CrashShieldRuntime/include -ISources/_CrashShieldIncidents/include \
    "$starter_source" -o "$work/guards/start_guards.o"
guards_object="$work/guards/crashshield-guards.o"
ld -r -o "$guards_object" "${objects[@]}" "$work/guards/start_guards.o"
nm --defined-only "$guards_object" | grep ' T cs_guards_start$' >/dev/null || die "cs_guards_start is not in $guards_object"
link_guards_make="$work/guards/link-guards.make"
cat >"$link_guards_make" <<EOF
# Included by gnustep-make in the guarded run: programs only, never bundles or frameworks.
ifneq (\$(filter tool test_tool,\$(GNUSTEP_TYPE)),)
ADDITIONAL_TOOL_LIBS += $guards_object
endif
EOF

# ---- 3. the pool patterns, plain and guarded (seconds; before the long runs) -----------------
# Tests/GNUstepBase/pool_patterns.m: autorelease-pool sequences of GNUstep Base's tests and the
# buffer-copy misuse of NSData/general.m that once corrupted the thread's pool cache under the
# guards. Every case must exit 0 and print "<case>: ok" in both builds, each in its own process.
patterns_source=Tests/GNUstepBase/pool_patterns.m
mkdir -p "$work/patterns"
# shellcheck disable=SC2046 # gnustep-config prints several flags
"$CC" -std=gnu11 -Wall -Werror $(gnustep-config --objc-flags) "$patterns_source" -o "$work/patterns/plain" \
    $(gnustep-config --base-libs) -lpthread || die "$patterns_source did not build"
# shellcheck disable=SC2046
"$CC" -std=gnu11 -Wall -Werror $(gnustep-config --objc-flags) "$patterns_source" "$guards_object" \
    -o "$work/patterns/guarded" $(gnustep-config --base-libs) -lpthread || die "$patterns_source did not build with the guards"
mapfile -t pattern_cases < <("$work/patterns/plain")
[ ${#pattern_cases[@]} -gt 0 ] || die "$patterns_source lists no case"
pattern_failures=0
for mode in plain guarded; do
    for case_name in "${pattern_cases[@]}"; do
        rc=0
        output=$(timeout 60 "$work/patterns/$mode" "$case_name" 2>"$work/patterns/$mode.$case_name.err") || rc=$?
        if [ "$rc" -ne 0 ] || [ "$output" != "$case_name: ok" ] \
            || grep -q '^crashshield-suite-starter:' "$work/patterns/$mode.$case_name.err"; then
            say "FAIL: pool pattern $case_name ($mode) exited $rc, printed '$output'; stderr:"
            grep -v 'autorelease called without pool' "$work/patterns/$mode.$case_name.err" | head -5 >&2 || true
            pattern_failures=$((pattern_failures + 1))
        fi
    done
done
echo "pool patterns: ${#pattern_cases[@]} cases, plain and guarded, $pattern_failures failed"
[ "$pattern_failures" -eq 0 ] || die "pool patterns failed (see above)"

# ---- 4. both runs ---------------------------------------------------------------------------
export GNUSTEP_MAKEFILES="${GNUSTEP_MAKEFILES:-$(gnustep-config --variable=GNUSTEP_MAKEFILES)}"
prepare_copy() { # mode: a fresh copy of the suite and a fresh HOME for that mode
    # A copy beside Tests/, so that the tests' ../../../ paths still reach the configured tree.
    local copy="$tree/Tests-$1"
    rm -rf "$copy" "$work/home-$1"
    cp -a "$tree/Tests" "$copy"
    mkdir -p "$work/home-$1"
}
run_suite() { # mode [test files relative to Tests/base]: the whole suite, or a rerun of some files
    local mode=$1 copy="$tree/Tests-$1"; shift
    if [ $# -gt 0 ]; then
        # The unguarded copy does not exist when the committed baseline stood for the unguarded run.
        if [ ! -d "$copy" ] || [ ! -d "$work/home-$mode" ]; then prepare_copy "$mode"; fi
        (
            cd "$copy"
            export HOME="$work/home-$mode"
            if [ "$mode" = guarded ]; then export GNUSTEP_LOCAL_ADDITIONAL_MAKEFILES="$link_guards_make"; fi
            rm -f "$work/$mode.rerun.out"
            for file in "$@"; do gnustep-tests "base/$file" >>"$work/$mode.rerun.out" 2>&1 || true; cat tests.log; done
        ) >"$work/$mode.rerun.log"
        return
    fi
    if [ "${CS_SUITE_REUSE_RUNS:-0}" = 1 ] && [ -f "$work/$mode.log" ]; then
        say "reusing the last $mode run ($work/$mode.log)"
        return
    fi
    prepare_copy "$mode"
    say "running Tests/base $mode (log: $copy/tests.log)"
    local start=$SECONDS
    (
        cd "$copy"
        export HOME="$work/home-$mode"
        if [ "$mode" = guarded ]; then export GNUSTEP_LOCAL_ADDITIONAL_MAKEFILES="$link_guards_make"; fi
        gnustep-tests base >"$work/$mode.out" 2>&1 || true
    )
    say "$mode run took $((SECONDS - start)) s"
    if [ -f "$copy/tests.log" ]; then cp "$copy/tests.log" "$work/$mode.log"; else rm -f "$work/$mode.log"; fi
    echo "$base_version" >"$work/$mode.version"   # which gnustep-base this log is of
}
if [ "${CS_SUITE_RECOMPUTE_BASELINE:-0}" != 1 ] && [ -f "$baseline" ]; then
    unguarded_from=baseline
    say "unguarded run: the committed result in $baseline stands for it (CS_SUITE_RECOMPUTE_BASELINE=1 runs it)"
else
    unguarded_from=run
    [ -f "$baseline" ] || say "no unguarded baseline for libgnustep-base-dev $base_version ($baseline): running the unguarded suite"
    run_suite unguarded
fi
run_suite guarded

# ---- 5. results -----------------------------------------------------------------------------
# One record per result line of tests.log: kind, key, description. The key is the assertion's
# place, relative to Tests/base: Dir/test.m:LINE (Dir/test.m@header.h:LINE when the assertion is in
# a header the test includes; Dir/test.m:? when the test gave no place); a test program that
# aborted or was not built is Dir/test.m:aborted or Dir/test.m:not-built.
parse_log() { # tests.log > records
    awk '
        function key(file, line) {
            sub(/^.*\//, "", file)
            return (file == test || test == "") ? dir "/" file ":" line : dir "/" test "@" file ":" line
        }
        /^Building in base\//     { dir = substr($3, 6); next }
        /^Testing .*\.\.\.$/      { test = $2; sub(/\.\.\.$/, "", test); next }
        /^Running base\/.*\.\.\.$/ {
            path = substr($2, 6); sub(/\.\.\.$/, "", path)
            dir = path; sub(/\/[^\/]*$/, "", dir); test = path; sub(/^.*\//, "", test); next
        }
        /^(Passed test|Failed test|Dashed hope):/ {
            kind = ($1 == "Passed") ? "passed" : ($1 == "Failed") ? "failed" : "hope"
            if (match($0, /[^ ()]+:[0-9]+ \.\.\. /)) {
                place = substr($0, RSTART, RLENGTH - 5); desc = substr($0, RSTART + RLENGTH)
                n = split(place, parts, ":")
                printf "%s\t%s\t%s\n", kind, key(parts[1], parts[2]), desc
            } else { # pass() called directly: no place, only a description
                desc = $0; sub(/^[^)]*\) */, "", desc)
                printf "%s\t%s\t%s\n", kind, dir "/" test ":?", desc
            }
            next
        }
        /^(Failed|Skipped) set:/ {
            kind = ($1 == "Failed") ? "failed" : "skipped"
            desc = $0; sub(/^[^.]*\.\.\. /, "", desc)
            printf "%s\t%s\t%s\n", kind, key($3, $4), desc
            next
        }
        /^Failed file:/              { printf "failed\t%s/%s:aborted\t%s\n", dir, $3, "the program ended abnormally"; next }
        /^Skipped \(not built\) file:/ { printf "failed\t%s/%s:not-built\t%s\n", dir, $5, "the program did not build"; next }
        /^crashshield-suite-starter:/   { printf "starter\t%s/%s\t%s\n", dir, test, $0; next }
        /^crashshield-suite-incidents:/ { $1 = ""; sub(/^ /, ""); printf "incidents\t%s/%s\t%s\n", dir, test, $0; next }
    ' "$1"
}
# The committed baseline (written below): comment lines, then "count<TAB>kind<TAB>n" for the
# passed, hope and skipped records of the unguarded run, then its failed records as parse_log
# prints them, one line per failed assertion (a key may appear more than once).
read_baseline() { # baseline-file: writes $work/unguarded.records and $work/unguarded.counts
    awk -F'\t' '$1 == "failed"' "$1" >"$work/unguarded.records"
    awk -F'\t' '$1 == "count" { print $2 "\t" $3 }' "$1" >"$work/unguarded.counts"
    printf 'failed\t%d\n' "$(wc -l <"$work/unguarded.records")" >>"$work/unguarded.counts"
}
for mode in unguarded guarded; do
    if [ "$mode" = unguarded ] && [ "$unguarded_from" = baseline ]; then
        read_baseline "$baseline"
        continue
    fi
    [ -f "$work/$mode.log" ] || { tail -20 "$work/$mode.out" >&2; die "the $mode run wrote no tests.log: the suite did not run"; }
    parse_log "$work/$mode.log" >"$work/$mode.records"
    awk -F'\t' '{ n[$1]++ } END { for (k in n) printf "%s\t%d\n", k, n[k] }' "$work/$mode.records" >"$work/$mode.counts"
done

count() { awk -F'\t' -v k="$2" '$1 == k { n = $2 } END { print n + 0 }' "$work/$1.counts"; }
failure_counts() { # records-file > "count<TAB>key" per failing key
    awk -F'\t' '$1 == "failed" { n[$2]++ } END { for (k in n) printf "%d\t%s\n", n[k], k }' "$1" | sort -t$'\t' -k2
}
guard_caused() { # unguarded-records guarded-records > keys failing more often guarded than unguarded
    awk -F'\t' 'FILENAME == ARGV[1] { before[$2] = $1; next } $1 > before[$2] + 0 { print $2 }' \
        <(failure_counts "$1") <(failure_counts "$2") | sort -u
}
describe() { # mode key > "  key  (n×) description  [incidents in that program]"
    awk -F'\t' -v k="$2" -v p="${2%%[@:]*}" '
        $1 == "failed" && $2 == k { n++; d = $3 }
        $1 == "incidents" && $2 == p { i = $3 }
        END { printf "  %s  (%d×) %s  [incidents: %s]\n", k, n, d, (i == "" ? "none" : i) }' "$work/$1.records"
}
list_keys() { # expected-list file > keys (comments and blank lines skipped)
    [ -f "$1" ] || return 0
    awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$1" | sort -u
}

echo "== GNUstep Base $src_version: Tests/base =="
for mode in unguarded guarded; do
    printf '%-9s  %5d passed  %3d failed  (%d hopes dashed, %d sets skipped)%s\n' "$mode" \
        "$(count "$mode" passed)" "$(count "$mode" failed)" "$(count "$mode" hope)" "$(count "$mode" skipped)" \
        "$([ "$mode" = unguarded ] && [ "$unguarded_from" = baseline ] && echo "  [committed: $baseline]")"
done

status=0
for mode in unguarded guarded; do
    if [ "$(count "$mode" passed)" -eq 0 ]; then
        say "FAIL: the $mode run passed no test: the suite did not run"; status=1
    fi
done

# The starter's complaints, once per distinct message.
if [ "$(count guarded starter)" -gt 0 ]; then
    say "FAIL: the guards did not start cleanly in $(awk -F'\t' '$1 == "starter" { print $2 }' "$work/guarded.records" | sort -u | wc -l) test programs:"
    awk -F'\t' '$1 == "starter" { print "  " $3 }' "$work/guarded.records" | sort | uniq -c >&2
    status=1
fi

# Every program of the guarded run (test or helper; not bundles, which have no interpreter)
# carries the starter.
built=0; unguarded_programs=()
while IFS= read -r program; do
    built=$((built + 1))
    nm "$program" 2>/dev/null | grep ' T cs_suite_start_guards$' >/dev/null || unguarded_programs+=("${program#"$tree/Tests-guarded/"}")
done < <(find "$tree/Tests-guarded/base" -path '*/obj/*' -type f -executable -exec sh -c \
            'readelf -lW "$1" 2>/dev/null | grep "program interpreter" >/dev/null' _ {} \; -print)
if [ ${#unguarded_programs[@]} -gt 0 ]; then
    say "FAIL: ${#unguarded_programs[@]} of $built guarded test programs were linked without the guards: ${unguarded_programs[*]}"
    status=1
fi
[ "$built" -gt 0 ] || { say "FAIL: the guarded run built no test program"; status=1; }

guard_caused "$work/unguarded.records" "$work/guarded.records" >"$work/guard-caused.keys"
failure_counts "$work/unguarded.records" | cut -f2 | sort -u >"$work/unguarded.keys"

# An unexpected failure is confirmed by running its test programs again: the suite has
# timing-dependent assertions, and a loaded CI machine can fail one in either run. Only a failure
# that happens again fails the gate; the others are reported. A committed baseline is no run: it
# was written only when it matched the expected list, so a difference fails the gate unconfirmed.
rerun_files() { sed -E 's/[@:].*$//' | sort -u; }
unexpected_unguarded=""
if [ "$unguarded_from" = run ]; then
    unexpected_unguarded=$(comm -23 "$work/unguarded.keys" <(list_keys "$expected_unguarded"))
fi
unexpected_guarded=$(comm -23 "$work/guard-caused.keys" <(list_keys "$expected_guarded"))
if [ -n "$unexpected_unguarded$unexpected_guarded" ]; then
    mapfile -t files < <(printf '%s\n%s\n' "$unexpected_unguarded" "$unexpected_guarded" | grep . | rerun_files)
    say "unexpected failures; rerunning ${files[*]} in both modes to confirm them"
    run_suite unguarded "${files[@]}"
    run_suite guarded "${files[@]}"
    parse_log "$work/unguarded.rerun.log" >"$work/unguarded.rerun.records"
    parse_log "$work/guarded.rerun.log" >"$work/guarded.rerun.records"
    not_again() { # keys-file-of-first-run keys-of-rerun
        comm -23 "$1" <(sort -u <<<"$2")
    }
    flaky_unguarded=$(not_again <(grep . <<<"$unexpected_unguarded" || true) \
        "$(failure_counts "$work/unguarded.rerun.records" | cut -f2)")
    flaky_guarded=$(not_again <(grep . <<<"$unexpected_guarded" || true) \
        "$(guard_caused "$work/unguarded.rerun.records" "$work/guarded.rerun.records")")
    if [ -n "$flaky_unguarded$flaky_guarded" ]; then
        say "failed in the full run but not on a rerun of their programs (timing-dependent; not failing the gate):"
        [ -z "$flaky_unguarded" ] || while IFS= read -r key; do describe unguarded "$key" >&2; done <<<"$flaky_unguarded"
        [ -z "$flaky_guarded" ] || while IFS= read -r key; do describe guarded "$key" >&2; done <<<"$flaky_guarded"
        comm -23 "$work/unguarded.keys" <(grep . <<<"$flaky_unguarded" || true) >"$work/keys.tmp" && mv "$work/keys.tmp" "$work/unguarded.keys"
        comm -23 "$work/guard-caused.keys" <(grep . <<<"$flaky_guarded" || true) >"$work/keys.tmp" && mv "$work/keys.tmp" "$work/guard-caused.keys"
    fi
fi

compare() { # label mode actual-keys-file expected-list; returns 1 when they differ
    local label=$1 mode=$2 actual=$3 list=$4 unexpected stale differ=0
    unexpected=$(comm -23 "$actual" <(list_keys "$list"))
    stale=$(comm -13 "$actual" <(list_keys "$list"))
    echo "$label failures: $(wc -l <"$actual") assertions failing, $(grep -c . <<<"$unexpected" || true) of them not in $list"
    if [ -n "$unexpected" ]; then
        say "FAIL: $label failures not in $list:"
        while IFS= read -r key; do describe "$mode" "$key" >&2; done <<<"$unexpected"
        status=1; differ=1
    fi
    if [ -n "$stale" ]; then
        say "FAIL: entries of $list that no longer fail (remove them):"
        sed 's/^/  /' <<<"$stale" >&2
        status=1; differ=1
    fi
    return "$differ"
}
unguarded_as_expected=1
compare "unguarded" unguarded "$work/unguarded.keys" "$expected_unguarded" || unguarded_as_expected=0
compare "guard-caused" guarded "$work/guard-caused.keys" "$expected_guarded" || true

# A real unguarded run of this gnustep-base whose failures are exactly the expected ones becomes
# the committed baseline: its counts and its failed records, timing-dependent ones (failed in the
# full run, not on the rerun) left out, so that a later gate does not inherit them.
if [ "$unguarded_from" = run ]; then
    if [ "$unguarded_as_expected" = 1 ] && [ "$(cat "$work/unguarded.version" 2>/dev/null)" = "$base_version" ]; then
        mkdir -p "$(dirname "$baseline")"
        {
            echo "# GNUstep Base's Tests/base run WITHOUT the guards, libgnustep-base-dev $base_version"
            echo "# (source $src_package $src_version; $(gcc --version | head -1); gnustep-make $(dpkg-query -W -f='${Version}' gnustep-make 2>/dev/null))."
            echo "# Written by scripts/gnustep-base-suite.sh from a real unguarded run; it stands for that run"
            echo "# while this gnustep-base version is installed. CS_SUITE_RECOMPUTE_BASELINE=1 runs and rewrites it."
            echo "# Lines: count<TAB>kind<TAB>n, then one failed<TAB>key<TAB>description per failed assertion"
            echo "# (timing-dependent failures of the run that wrote it left out)."
            for kind in passed hope skipped; do printf 'count\t%s\t%d\n' "$kind" "$(count unguarded "$kind")"; done
            awk -F'\t' 'FILENAME == ARGV[1] { keep[$0] = 1; next } $1 == "failed" && ($2 in keep)' \
                "$work/unguarded.keys" "$work/unguarded.records" | LC_ALL=C sort
        } >"$baseline.tmp"
        mv "$baseline.tmp" "$baseline"
        say "wrote $baseline: commit it, so that later runs on libgnustep-base-dev $base_version skip the unguarded suite"
    else
        say "not writing $baseline: the unguarded run's failures are not exactly those of $expected_unguarded"
    fi
fi

# The guard column of the expected list: a guard of the registry, and that guard recorded a misuse
# in the entry's test program during the guarded run (the starter prints the counts at exit).
guard_names=$(grep -ho 'CS_GUARD_DEFINE[A-Z_]*([A-Za-z_]*, *[a-z]*' Sources/_CrashShieldRuntime/Guards/*.m | sed 's/.*, *//' | sort -u)
while read -r key guard _; do
    if ! grep -qx "$guard" <<<"$guard_names"; then
        say "FAIL: $expected_guarded: '$guard' (entry $key) is not a guard name ($(echo $guard_names))"
        status=1; continue
    fi
    program=${key%%[@:]*}
    if ! awk -F'\t' -v p="$program" -v g="$guard" \
        '$1 == "incidents" && $2 == p && (" " $3) ~ (" " g "=") { found = 1 } END { exit !found }' "$work/guarded.records"; then
        say "FAIL: $expected_guarded: entry $key names guard $guard, which recorded no misuse in $program"
        status=1
    fi
done < <(awk '!/^[[:space:]]*(#|$)/' "$expected_guarded" 2>/dev/null || true)

# Not a failure, but worth a look: a guard that recorded a misuse in a program none of whose
# assertions it changed either met a misuse the test does not assert on, or misjudged a legal call.
quiet_incidents=$(awk -F'\t' 'FILENAME == ARGV[1] { sub(/[@:].*$/, ""); caused[$0] = 1; next }
    $1 == "incidents" && !($2 in caused) { printf "  %s: %s\n", $2, $3 }' "$work/guard-caused.keys" "$work/guarded.records" | sort -u)
if [ -n "$quiet_incidents" ]; then
    echo "incidents in guarded programs with no guard-caused failure (not failing the gate):"
    echo "$quiet_incidents"
fi

if [ "$status" -eq 0 ]; then
    if [ "$unguarded_from" = baseline ]; then unguarded_result=$baseline; else unguarded_result=$work/unguarded.log; fi
    echo "gnustep-base-suite: OK (every guard-caused failure is an expected misuse; unguarded: $unguarded_result, guarded: $work/guarded.log)"
fi
exit "$status"
