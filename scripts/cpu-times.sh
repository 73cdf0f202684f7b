#!/bin/sh
# CPU seconds (user + system) each process of a running `chessrl local` run has
# used so far, read from /proc: every process whose command line names RUN_DIR.
#
#   scripts/cpu-times.sh RUN_DIR
#
# Prints "NAME SECONDS" per process (self-play as chessrl-selfplay:<replica>).
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 RUN_DIR" >&2
  exit 2
fi
dir=$1
tck=$(getconf CLK_TCK)
for pid in $(pgrep -f -- "$dir" || true); do
  [ "$pid" != "$$" ] || continue  # this script names RUN_DIR too
  [ -r "/proc/$pid/stat" ] || continue
  words=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  name=$(basename "${words%% *}")
  replica=$(printf '%s\n' "$words" | sed -n 's/.*--replica \([^ ]*\).*/:\1/p')
  # Fields 14 and 15 of /proc/PID/stat: user and system time in clock ticks.
  awk -v n="$name$replica" -v t="$tck" '{printf "%s %.0f\n", n, ($14 + $15) / t}' "/proc/$pid/stat"
done
