#!/usr/bin/env bash
# Black-box tests of the chessrl command line: output formats and errors.
# Usage: chessrl_cli_test.sh <path to chessrl>
set -u
bin=$1
# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

out=$("$bin" perft --depth 3 2>/dev/null); rc=$?
check "perft --depth 3 exits 0" test $rc -eq 0
check "perft --depth 3 ends with 'total 8902'" test "$(tail -n1 <<<"$out")" = "total 8902"

out=$("$bin" perft --depth 2 --divide 2>/dev/null)
check "divide lists 20 moves" test "$(grep -c -E '^[a-h][1-8][a-h][1-8][nbrq]?: [0-9]+$' <<<"$out")" -eq 20
check "divide has e2e4: 20" grep -qx 'e2e4: 20' <<<"$out"
check "divide ends with 'total 400'" test "$(tail -n1 <<<"$out")" = "total 400"

out=$("$bin" perft --fen "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1" --depth 4 2>/dev/null)
check "perft --fen pos3 depth 4 is 43238" test "$(tail -n1 <<<"$out")" = "total 43238"

err=$("$bin" perft --fen "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1" --depth 1 2>&1); rc=$?
check "bad FEN exits non-zero" test $rc -ne 0
check "bad FEN error names the problem" grep -q "ranks, expected 8" <<<"$err"

err=$("$bin" perft --depth 99 2>&1); rc=$?
check "depth out of range is refused with exit 2 (bad options)" test $rc -eq 2
check "depth error names the option" grep -q -- "--depth" <<<"$err"

err=$("$bin" perft --no-such-flag 2>&1); rc=$?
check "an unknown flag exits 2" test $rc -eq 2
check "the unknown flag is named" grep -q -- "--no-such-flag" <<<"$err"

err=$("$bin" selfplay --games 1 --max-plies 1025 2>&1); rc=$?
check "chessrl selfplay refuses a game longer than replay takes, exit 2" test $rc -eq 2
check "the refusal names --max-plies" grep -q -- "--max-plies: 1025 is not in" <<<"$err"

"$bin" perft --help >/dev/null 2>&1; rc=$?
check "--help exits 0" test $rc -eq 0

err=$("$bin" perft --bench --repeat 1 --stockfish chessrl-no-such-engine 2>&1); rc=$?
check "bench without stockfish still runs" test $rc -eq 0
check "bench says why it has no comparison" grep -q "no comparison: program 'chessrl-no-such-engine' not found" <<<"$err"
check "bench prints a total row" grep -q "^total " <<<"$err"

out=$("$bin" bench nn --net 1x8 --batch 1,4 --seconds 0.1 --repeat 1 2>/dev/null); rc=$?
check "bench nn exits 0" test $rc -eq 0
check "bench nn prints its header" grep -q "^net  *batch  *raw evals/s .* efficiency$" <<<"$out"
check "bench nn prints one row per batch size" test "$(grep -c -E '^1x8 +[14] ' <<<"$out")" -eq 2
check "bench nn reports the encoding cost" grep -q -E '^per position, on the caller.s thread: prepare .* [0-9]+ ns, expand to floats [0-9]+ ns; chess features \(-feat\) [0-9]+ ns, expand with them \(132 planes\) [0-9]+ ns$' <<<"$out"
check "bench nn reports each stream's CPU time per batch" grep -q "^net  *batch  *raw evals/s  *ms/batch  *cpu ms " <<<"$out"
check "bench nn rows end in an efficiency" grep -q -E '^1x8 +4 .* [0-9]+\.[0-9]{3}$' <<<"$out"

err=$("$bin" bench nn --net 6y64 2>&1); rc=$?
check "bench nn refuses a bad network name" test $rc -ne 0
check "bench nn names the bad network" grep -q "network '6y64' is not of the form" <<<"$err"
err=$("$bin" bench nn --net 1x8 --device tpu --seconds 0.1 2>&1); rc=$?
check "bench nn refuses an unknown device" test $rc -ne 0
check "bench nn names the bad device" grep -q "device 'tpu' is not cpu, cuda or cuda:N" <<<"$err"
err=$("$bin" bench nn --net 1x8 --precision fp16 --seconds 0.1 2>&1); rc=$?
check "bench nn refuses fp16 on the CPU" grep -q "fp16 needs a CUDA device" <<<"$err"
err=$("$bin" bench nn --batch 0 2>&1); rc=$?
check "bench nn refuses batch 0" test $rc -ne 0

# quit during a search stops it: its bestmove comes out before the engine exits.
out=$(printf 'uci\nisready\nposition startpos moves e2e4\ngo nodes 100\nquit\n' |
      timeout 60 "$bin" uci --backend uniform 2>/dev/null); rc=$?
check "uci session exits 0" test $rc -eq 0
check "uci answers uci with uciok" grep -qx 'uciok' <<<"$out"
check "uci answers isready with readyok" grep -qx 'readyok' <<<"$out"
check "uci plays a bestmove for black" grep -q -E '^bestmove [a-h][1-8][a-h][1-8]$' <<<"$out"
out=$(printf 'position startpos moves e2e4 e7e5 e1e5\ngo nodes 30\n' |
      timeout 60 "$bin" uci 2>/dev/null)
check "uci rejects an illegal move by name" grep -q "^info string bad move 'e1e5'" <<<"$out"

# selfplay writes one JSON record and one PGN game per game; the summary counts them.
dir=$(mktemp -d)
out=$("$bin" selfplay --games 3 --backend uniform --visits 24 --reduced-visits 8 --max-plies 40 \
      --out "$dir" 2>/dev/null); rc=$?
check "selfplay exits 0" test $rc -eq 0
check "selfplay writes 3 records" test "$(wc -l <"$dir/games.jsonl")" -eq 3
check "selfplay records carry moves, targets and a result" \
  grep -q -E '^\{.*"moves":\["[a-h][1-8][a-h][1-8]".*"result":"(1-0|0-1|1/2-1/2)".*"targets":\[\{' "$dir/games.jsonl"
check "selfplay writes 3 PGN games" test "$(grep -c '^\[Event ' "$dir/games.pgn")" -eq 3
check "selfplay summary counts the games" grep -q -E '^3 games in [0-9.]+ s' <<<"$out"
check "selfplay says where it wrote" grep -q "wrote 3 games to $dir/games.jsonl" <<<"$out"
rm -rf "$dir"
err=$("$bin" selfplay --games 1 --backend uniform --start-fen "8/8/8 w - - 0 1" --out /tmp 2>&1); rc=$?
check "selfplay refuses a bad start position" test $rc -ne 0
check "selfplay names the bad start position" grep -q "start position:" <<<"$err"

out=$("$bin" bench selfplay --backend uniform --visits 16 --seconds 0.5 --warmup 0.2 --repeat 1 2>/dev/null); rc=$?
check "bench selfplay exits 0" test $rc -eq 0
check "bench selfplay prints its header" grep -q -E '^ *run +positions/s +playouts/s +evals/s +mean batch +raw evals/s +efficiency$' <<<"$out"
check "bench selfplay prints a median row" grep -q -E '^ *med +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9]+\.[0-9]{3}$' <<<"$out"

"$bin" --help >/dev/null 2>&1
check "--help exits 0" test $? -eq 0

# bench train: one rank and the PyTorch yardstick on a tiny network (python3-torch
# is installed by the set-up step; a yardstick that cannot run fails the command).
out=$("$bin" bench train --ranks 1 --net 1x8 --batch 16 --steps 2 --warmup 1 --repeat 1 2>&1); rc=$?
check "bench train with the yardstick exits 0" test $rc -eq 0
check "bench train compares C++ with Python on the same network" \
  grep -q 'Python .*: the same network. C++ / Python samples/s = ' <<<"$out"

finish
