#!/bin/sh
# Timed fuzzing run, benchmark-style (not a CTest): builds the libFuzzer target of the .sgrid
# reader and the representation's field-data validator (fuzz/run.sh), fuzzes for SECONDS
# (default 600) starting from fuzz/corpus, then prints a table and one JSON line: executions,
# executions per second, new inputs, peak memory, findings, and the machine.
#
#   scripts/fuzz-run.sh [SECONDS]
#
# Environment as for fuzz/run.sh (BUILD, default build-fuzz; JOBS; CXX; VTK_INCLUDE). On a shared
# machine run it under nice, e.g. `nice -n 15 scripts/fuzz-run.sh 600`. Exit status 1 when the
# fuzzer found a crash, a sanitizer report or a violated invariant (the input is in
# $BUILD/artifacts).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build-fuzz}
seconds=${1:-600}
export BUILD="$build"

rm -rf "$build/artifacts"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)
sh "$root/fuzz/run.sh" "$seconds" > "$build.fuzz-run.out" 2>&1 || true
t1=$(date +%s)
log="$build/fuzz.log"
if [ ! -f "$log" ]; then
  echo "scripts/fuzz-run.sh: the fuzzer did not run; see $build.fuzz-run.out" >&2
  exit 2
fi

stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
executions=$(stat number_of_executed_units)
per_second=$(stat average_exec_per_sec)
new_units=$(stat new_units_added)
peak_rss=$(stat peak_rss_mb)
coverage=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
findings=$(ls "$build/artifacts" 2>/dev/null | wc -l)
if grep -qE 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer|UndefinedBehaviorSanitizer)|invariant violated|deadly signal' "$log"; then
  findings=$((findings > 0 ? findings : 1))
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(nproc)
load=$(cut -d' ' -f1-3 /proc/loadavg)

printf '\nFuzzing run of fuzz/sgrid_fuzz.cxx (libFuzzer, ASan + UBSan, -O1), started %s\n' "$started"
printf 'machine: %s, %s cores, load average at the end %s\n\n' "$cpu" "$cores" "$load"
printf '| %-22s | %14s |\n' "quantity" "value"
printf '|%s|%s|\n' "------------------------" "----------------"
printf '| %-22s | %14s |\n' "requested seconds" "$seconds"
printf '| %-22s | %14s |\n' "wall seconds (+build)" "$((t1 - t0))"
printf '| %-22s | %14s |\n' "executions" "${executions:-?}"
printf '| %-22s | %14s |\n' "executions per second" "${per_second:-?}"
printf '| %-22s | %14s |\n' "new corpus inputs" "${new_units:-?}"
printf '| %-22s | %14s |\n' "coverage (edges)" "${coverage:-?}"
printf '| %-22s | %14s |\n' "peak RSS (MB)" "${peak_rss:-?}"
printf '| %-22s | %14s |\n' "findings" "$findings"
printf '\n{"benchmark": "sgrid_fuzz", "started": "%s", "seconds": %s, "executions": %s, "exec_per_sec": %s, "new_units": %s, "coverage": %s, "peak_rss_mb": %s, "findings": %s, "cpu": "%s", "cores": %s, "load": "%s"}\n' \
  "$started" "$seconds" "${executions:-null}" "${per_second:-null}" "${new_units:-null}" \
  "${coverage:-null}" "${peak_rss:-null}" "$findings" "$cpu" "$cores" "$load"
[ "$findings" -eq 0 ]
