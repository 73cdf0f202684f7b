#!/bin/sh
# A learning experiment: `chessrl local` for a fixed time, then the final version's
# matches against random, greedy, the run's first version and (when a stockfish
# binary is found) Stockfish at Skill Level 0 and depth 1, at the evaluator's
# settings (32 visits, 300 plies), 40 games each (20 pairs).
#
#   scripts/learning-run.sh DIR SECONDS [chessrl local options...]
#   scripts/learning-run.sh /tmp/exp 1800 --final-temperature 1.0
#
# Writes DIR/local.out (the run's status lines and how its games ended) and
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
pairs=${PAIRS:-20}
visits=${VISITS:-32}
mkdir -p "$dir"
echo "learning-run: chessrl local --dir $dir --duration $seconds $*" | tee "$dir/local.out"
"$chessrl" local --dir "$dir" --duration "$seconds" --quiet --no-prometheus "$@" >>"$dir/local.out" 2>&1
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
  set -- "$@" "uci:$stockfish;Skill Level=0;depth=1;name=stockfish-skill0"
fi
for second in "$@"; do
  case $second in
    uci:*) name=stockfish-skill0 ;;
    *) name=$(basename "$second" .chrl) ;;
  esac
  echo "learning-run: v$last vs $name, $pairs pairs at $visits visits" >&2
  result=$("$chessrl" match --first "model:$models/model-v$last.chrl" --second "$second" \
    --pairs "$pairs" --visits "$visits" --threads 2 2>/dev/null)
  echo "v$last vs $name: $result" | tee -a "$dir/matches.txt"
done
