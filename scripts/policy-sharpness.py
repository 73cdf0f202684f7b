#!/usr/bin/env python3
"""How sharp self-play's recorded policy targets are: over every recorded
search in the given games.jsonl files (`chessrl selfplay --out DIR` writes
DIR/games.jsonl), the mean share of visits of the most visited move, the mean
entropy of the visit distribution (nats), and the mean number of moves visited.

    scripts/policy-sharpness.py DIR/games.jsonl [more.jsonl ...]

A flat target (top share near 1/moves, entropy near log(moves)) teaches the
policy head little; a search whose virtual loss spreads its few visits over the
root's moves gives one."""
import json
import math
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = entropy = visited = 0.0
    n = games = 0
    for path in sys.argv[1:]:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{number}: not JSON: {e}")
                games += 1
                for target in record["targets"]:
                    probs = [float(entry[1]) for entry in target["policy"]]
                    if not probs:
                        continue
                    top += max(probs)
                    entropy -= sum(p * math.log(p) for p in probs if p > 0)
                    visited += len(probs)
                    n += 1
    if n == 0:
        sys.exit("policy-sharpness: no recorded searches in " + " ".join(sys.argv[1:]))
    print(f"{games} games, {n} recorded searches: top move {top / n:.3f} of the visits, "
          f"entropy {entropy / n:.3f} nats, {visited / n:.1f} moves visited")


if __name__ == "__main__":
    main()
