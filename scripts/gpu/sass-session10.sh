#!/usr/bin/env bash
# Session 10: the SASS of one kernel of the carried stencil-bench (cuobjdump exists on the device
# machine, not on the development machine), to see where ptxas spills. KERNEL is a pattern of the
# mangled name (default: the float grouped staged laplap, quads, plain chasing table, uniform
# weights); the anonymous-namespace hash in the name changes with every build, so it is matched,
# not spelled out. Binaries carried as build-carry10/bin.tar.xz. Results in $OUT.
set -u
OUT=${OUT:-/tmp/session10-sass}
B=/tmp/s10
mkdir -p "$OUT" "$B"
tar xJf build-carry10/bin.tar.xz -C "$B"
CU=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2> /dev/null)
PATTERN=${KERNEL:-stagedGroupLaplapKernelINS0_12PlainChasingIfLi4EEELb0}
# Whole SASS of the binary, then the one function's section.
"$CU" -sass "$B/bin/stencil-bench" > "$OUT/all.sass" 2>&1
awk -v p="$PATTERN" '/Function : /{keep = index($0, p) > 0} keep' "$OUT/all.sass" > "$OUT/kernel.sass"
rm -f "$OUT/all.sass"
echo "$(wc -l < "$OUT/kernel.sass") lines; spill loads/stores:"
grep -nE "LDL|STL" "$OUT/kernel.sass" | head -40
