set -u
B=/tmp/s10; mkdir -p $B; tar xJf build-carry10/bin.tar.xz -C $B
CU=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
echo "cuobjdump: $CU"
$CU -sass -fun '_ZN7stencil6detail61_GLOBAL__N__9ca7362c_22_ColumnsChasingFloat_cu_34359346_1482123stagedGroupLaplapKernelINS0_12PlainChasingIfLi4EEELb0EEEvNS0_10ColumnArgsIfEET_NS0_9TileListsEi' $B/bin/stencil-bench > $OUT/prod.sass 2>&1
wc -l $OUT/prod.sass
$CU -sass build-carry10/lab10 > $OUT/lab.sass 2>&1
wc -l $OUT/lab.sass
