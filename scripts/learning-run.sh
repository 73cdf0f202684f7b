#!/bin/sh
# A learning experiment: `chessrl local` for a fixed time, then the final version's
# matches against random, greedy, the run's first version and (when a stockfish
# binary is found) the Stockfish rungs Skill Level 0 at depth 1 and Skill Level 1
# at depth 2, at the evaluator's settings (32 visits, 300 plies), 100 games each
# (50 pairs).
#
#   scripts/learning-run.sh DIR SECONDS [chessrl local options...]
#   scripts/learning-run.sh /tmp/exp 1800 --final-temperature 1.0
#
# Writes DIR/local.out (the run's status lines and how its games ended),
# DIR/cpu.txt (the machine's idle share over the run, from /proc/stat, and each
# process's CPU time a minute before the end: scripts/cpu-times.sh) and
# DIR/matches.txt (per match: W / D / L, score, Elo and its interval, then how the
# games ended and how the lost games' material went).
# CHESSRL (default: build/dev/tools/chessrl/chessrl) is the binary; PAIRS and VISITS
# change the matches.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 DIR SECONDS [chessrl local options...]" >&2
  exit 2
fi
dir=$1
seconds=$2
shift 2
chessrl=${CHESSRL:-build/dev/tools/chessrl/chessrl}
pairs=${PAIRS:-50}
visits=${VISITS:-32}
mkdir -p "$dir"
echo "learning-run: chessrl local --dir $dir --duration $seconds $*" | tee "$dir/local.out"
# The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...".
cpu_ticks() { head -n 1 /proc/stat; }
before=$(cpu_ticks)
(
  # Each process's CPU time a minute before the end (they are gone after it).
  sleep $((seconds > 120 ? seconds - 60 : seconds / 2))
  "$(dirname "$0")/cpu-times.sh" "$dir" 2>/dev/null | grep '^chessrl' >"$dir/cpu-times.txt" || true
) &
"$chessrl" local --dir "$dir" --duration "$seconds" --quiet --no-prometheus "$@" >>"$dir/local.out" 2>&1
after=$(cpu_ticks)
wait
printf '%s\n%s\n' "$before" "$after" | awk '
  { busy = $2 + $3 + $4 + $7 + $8 + $9; idle = $5 + $6
    if (NR == 1) { b0 = busy; i0 = idle } else { b1 = busy; i1 = idle } }
  END { printf "idle share over the run: %.1f%% (/proc/stat, all cores)\n",
        100 * (i1 - i0) / ((b1 - b0) + (i1 - i0)) }' | tee "$dir/cpu.txt"
cat "$dir/cpu-times.txt" >>"$dir/cpu.txt" 2>/dev/null || true
tail -n 3 "$dir/local.out"

models="$dir/evaluator/models"
last=$(ls "$models" | sed -n 's/^model-v\([0-9]*\)\.chrl$/\1/p' | sort -n | tail -n 1)
if [ -z "$last" ]; then
  echo "learning-run: no model version in $models" >&2
  exit 1
fi
: >"$dir/matches.txt"
stockfish=$(command -v stockfish || ls /usr/games/stockfish 2>/dev/null || true)
set -- random greedy "model:$models/model-v1.chrl"
if [ -n "$stockfish" ]; then
  set -- "$@" "uci:$stockfish;Skill Level=0;depth=1;name=stockfish-skill0" \
    "uci:$stockfish;Skill Level=1;depth=2;name=stockfish-skill1"
fi
for second in "$@"; do
  case $second in
    uci:*) name=${second##*name=} ;;
    *) name=$(basename "$second" .chrl) ;;
  esac
  echo "learning-run: v$last vs $name, $pairs pairs at $visits visits" >&2
  result=$("$chessrl" match --first "model:$models/model-v$last.chrl" --second "$second" \
    --pairs "$pairs" --visits "$visits" --threads 2 2>/dev/null)
  echo "v$last vs $name: $result" | tee -a "$dir/matches.txt"
done
