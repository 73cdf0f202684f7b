#!/usr/bin/env bash
# Black-box tests of `chessrl match`: the result line, PGN output and errors.
# Usage: chessrl_match_test.sh <path to chessrl>
set -u
bin=$1
# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

all=$("$bin" match --first greedy --second random --pairs 2 --pgn "$dir/games.pgn" 2>"$dir/err"); rc=$?
check "match exits 0" test $rc -eq 0
out=$(head -n 1 <<<"$all")
endings=$(tail -n +2 <<<"$all")
check "after the result line, how the games ended, indented" test -z "$(grep -v '^  ' <<<"$endings")"
check "greedy's games are counted by termination" grep -q -E '^  greedy (wins|draws|losses): ' <<<"$endings"
counted=$(grep -E '^  greedy (wins|draws|losses): ' <<<"$endings" | grep -o -E '[0-9]+(,|$)' | tr -d , | awk '{ s += $1 } END { print s }')
check "the endings add up to the 4 games" test "$counted" -eq 4
check "the result line has the names, counts, score, elo and games" grep -q -E \
  '^first greedy vs second random: \+[0-9]+ =[0-9]+ -[0-9]+  score [01]\.[0-9]{3}  elo [+-][0-9]+\.[0-9] \[[+-][0-9]+\.[0-9], [+-][0-9]+\.[0-9]\]  \(4 games, 0 forfeits\)$' <<<"$out"
wins=$(sed -E 's/.*: \+([0-9]+) =([0-9]+) -([0-9]+) .*/\1 \2 \3/' <<<"$out")
read -r w d l <<<"$wins"
check "wins, draws and losses add up to 4" test $((w + d + l)) -eq 4
check "progress goes to stderr, one line per game" test "$(grep -c '^games [1-4]/4 ' "$dir/err")" -eq 4
check "the PGN file has 4 games" test "$(grep -c '^\[Event "chessrl match"\]' "$dir/games.pgn")" -eq 4
check "the PGN games start from the openings" test "$(grep -c '^\[FEN ' "$dir/games.pgn")" -eq 4
check "the PGN games say how they ended" test "$(grep -c '^\[Termination ' "$dir/games.pgn")" -eq 4

out=$("$bin" match --first uniform --second random --pairs 1 --visits 8 --max-plies 20 --threads 1 2>/dev/null); rc=$?
check "uniform (MCTS on the fake network) plays" test $rc -eq 0
check "uniform's result line has 2 games" grep -q -E '^first uniform vs second random: .*\(2 games, 0 forfeits\)$' <<<"$(head -n 1 <<<"$out")"

a=$("$bin" match --first random --second random --pairs 2 --threads 1 --seed 7 --pgn "$dir/a.pgn" 2>/dev/null)
b=$("$bin" match --first random --second random --pairs 2 --threads 1 --seed 7 --pgn "$dir/b.pgn" 2>/dev/null)
check "the same seed plays the same games" cmp -s <(grep -v '^\[Date ' "$dir/a.pgn") <(grep -v '^\[Date ' "$dir/b.pgn")

err=$("$bin" match --first stockfish --second random 2>&1); rc=$?
check "a bad spec exits non-zero" test $rc -ne 0
check "a bad spec is named" grep -q -- "--first 'stockfish': expected random, greedy, uniform, model:PATH or uci:" <<<"$err"
err=$("$bin" match --first random --second "uci:stockfish;depth=x" 2>&1); rc=$?
check "a bad uci spec exits non-zero" test $rc -ne 0
check "a bad uci spec names the part" grep -q -- "--second: anchor 'uci:stockfish;depth=x': depth=x is not a positive integer" <<<"$err"
err=$("$bin" match --first "model:$dir/missing.ckpt" --second random 2>&1); rc=$?
check "a missing model exits non-zero" test $rc -ne 0
check "a missing model is named" grep -q -- "--first model:$dir/missing.ckpt: " <<<"$err"
err=$("$bin" match --first "uci:chessrl-no-such-engine" --second random --pairs 1 2>&1); rc=$?
check "an engine that does not start exits non-zero" test $rc -ne 0
check "an engine that does not start is named" grep -q "cannot start engine chessrl-no-such-engine" <<<"$err"
err=$("$bin" match --first random 2>&1); rc=$?
check "--second is required" test $rc -ne 0

finish
