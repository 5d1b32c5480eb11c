#!/bin/sh
# usage: expect_failure.sh DIR MESSAGE COMMAND [ARG...]
#
# Runs COMMAND in a fresh DIR (run_in_clean_dir.sh) and passes when the run fails loudly: a
# non-zero exit status, the line MESSAGE (a fixed string) exactly once, no Python traceback and
# no .sgrid file written.
dir=$1
message=$2
shift 2
sh "$(dirname "$0")/run_in_clean_dir.sh" "$dir" "$@"
status=$?
if [ "$status" -eq 0 ]; then
  echo "FAIL: the run exited with status 0"
  exit 1
fi
count=$(grep -cF -- "$message" "$dir/log.txt")
if [ "$count" -ne 1 ]; then
  echo "FAIL: expected the message once, found it $count times: $message"
  exit 1
fi
if grep -q "Traceback" "$dir/log.txt"; then
  echo "FAIL: a Python traceback instead of one message"
  exit 1
fi
if [ -n "$(find "$dir" -name '*.sgrid' | head -n 1)" ]; then
  echo "FAIL: a file was written"
  exit 1
fi
echo "PASS: exit status $status and one message"
