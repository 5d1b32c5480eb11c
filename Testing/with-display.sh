#!/usr/bin/env bash
# Runs a command with an X display. When DISPLAY is set (./run.sh test runs CTest inside one
# Xvfb) the command uses it: tests then never race each other to start their own server, which
# nested `xvfb-run -a` calls do under load. Without a display it starts one with xvfb-run.
# Accepts xvfb-run's options so that it can stand in for it.
set -euo pipefail
options=()
while [ $# -gt 0 ]; do
  case "$1" in
    -a | --auto-servernum) options+=("$1"); shift ;;
    -s | --server-args | -n | --server-num | -e | --error-file | -f | --auth-file | -p | --xauth-protocol)
      options+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [ -n "${DISPLAY:-}" ]; then
  exec "$@"
fi
exec xvfb-run "${options[@]}" "$@"
