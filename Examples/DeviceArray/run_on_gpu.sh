#!/bin/bash
# One call on the GPU machine (the `run` tool): build the example there, run it at 256^3 (and
# 512^3 for the codec's benchmark size) for the numbers, and at 128^3 into $OUT for the files that
# come back (a 256^3 raw field, 64 MiB, is over what the tool returns per file).
set -o pipefail
OUT=${OUT:-/tmp/device-example-out}
mkdir -p "$OUT"
build=/tmp/build-device-example
nvidia-smi -L 2>&1 | tee "$OUT/device.txt"
date -u +%Y-%m-%dT%H:%MZ | tee -a "$OUT/device.txt"
start=$(date +%s)
cmake -S Examples/DeviceArray -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$build" -j16 > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
export CUDA_MODULE_LOADING=EAGER
rc=0
for size in 256 512; do
  "$build/bin/compress_device_field" --size $size --repeats 10 --output /tmp/field$size \
    2>&1 | tee "$OUT/run$size.log" || rc=1
done
"$build/bin/compress_device_field" --size 128 --repeats 10 --output "$OUT/device_field" \
  2>&1 | tee "$OUT/run128.log" || rc=1
ls -l "$OUT"
exit $rc
