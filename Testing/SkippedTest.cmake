# sparsegrid_add_skipped_test(NAME LABEL REASON): a test standing for tests that cannot run on
# this machine. It prints the reason and exits with 77, which CTest reports as skipped
# (SKIP_RETURN_CODE), so that a missing tool shows in the summary with its reason instead of
# the suite silently shrinking.
function(sparsegrid_add_skipped_test name label reason)
  add_test(NAME ${name} COMMAND sh -c "echo \"$1\"; exit 77" sparsegrid-skip "SKIPPED: ${reason}")
  set_tests_properties(${name} PROPERTIES LABELS "${label}" SKIP_RETURN_CODE 77)
endfunction()
