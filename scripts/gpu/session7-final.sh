#!/usr/bin/env bash
# Session 7, the lead's last device call: the two patches written after the helpers' last calls
# (scripts/gpu/pending/codec-session7-drop-warp-analysis.patch and corr-auto-band-from-128.patch,
# applied to the working tree before the call) and the complete racecheck of the new Huffman
# decoder kernels that the codec helper's calls ran out of time for.
#   OUT=/some/dir bash scripts/gpu/session7-final.sh
# CorrelationCore builds in the background while scripts/gpu/codec-session7.sh (MODE=final,
# BUDGET 190 s: every SparseGridCore test, noisy and smooth benchmark, memcheck, racecheck of the
# decoder kernels alone) runs; then the correlation tests and the cases that Auto's rule changes.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-$PWD/gpu-out-final7}
mkdir -p "$OUT/codec"
SECONDS=0
CB=/tmp/build-corr-final7
{ cmake -S CorrelationCore -B "$CB" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON &&
  cmake --build "$CB" -j 6; } > "$OUT/corr-build.log" 2>&1 &
corr_build=$!
OUT=$OUT/codec BUDGET=190 timeout 200 bash scripts/gpu/codec-session7.sh > "$OUT/codec-stdout.txt" 2>&1
echo "[${SECONDS}s] codec-session7 rc=$?"
grep -E "^\[|compress \(kernels\)|decompress \(kernels\)|device to device\)|analyse|Huffman chunks" \
  "$OUT/codec/summary.txt" | cut -c1-220
wait $corr_build
echo "[${SECONDS}s] corr build rc=$?"
(cd "$CB" && timeout 60 ctest -j 8 > "$OUT/corr-ctest.log" 2>&1)
echo "[${SECONDS}s] corr ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/corr-ctest.log")"
grep -E "\(Failed\)|\(Timeout\)" "$OUT/corr-ctest.log" | head
for i in 1 2 3; do
  for cfg in auto tensor-3xtf32 cufft-cached; do
    for case in "32x32 x128" "32x32 x1024"; do
      timeout 10 "$CB/bin/correlation-bench" --no-cpu --case "$case" --config "$cfg" \
        --json /dev/null | grep -E "^one-to-many " >> "$OUT/corr-auto.txt"
    done
  done
done
echo "[${SECONDS}s] corr auto (case config gpu_ms kernel):"
awk '{ print $2, $3, $4, $6, $8 }' "$OUT/corr-auto.txt" | sort
tar czf "$OUT/logs.tgz" -C "$OUT" codec corr-build.log corr-ctest.log codec-stdout.txt 2> /dev/null
cp "$OUT/codec/summary.txt" "$OUT/codec-summary.txt"
rm -rf "$OUT/codec" "$OUT/corr-build.log" "$OUT/corr-ctest.log"
echo "[${SECONDS}s] done"
