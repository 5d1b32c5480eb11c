#!/bin/sh
# usage: run_in_clean_dir.sh DIR COMMAND [ARG...]
#
# Empties DIR, runs COMMAND inside it and keeps everything it printed in DIR/log.txt (the check
# tests read the per-step lines from there), then shows the log. The exit status is COMMAND's.
# A fresh folder per run: files from an earlier run would otherwise pass for this run's.
dir=$1
shift
rm -rf "$dir" && mkdir -p "$dir/dump" && cd "$dir" || exit 1
"$@" > log.txt 2>&1
status=$?
cat log.txt
exit $status
