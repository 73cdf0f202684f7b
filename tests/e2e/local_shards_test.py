#!/usr/bin/env python3
"""`chessrl local --redis-shards 2` (label e2e): the replay window over two
redis-servers, one of them killed with SIGKILL during the run. Checks that

- games reach both shards (each shard's chessrl:stats games_total grows);
- while shard 1 is down the loop goes on, and once `chessrl local` has
  restarted it, games reach it again;
- no acknowledged game is lost: every game self-play logged as stored or
  duplicate is in the window of the shard its id maps to (the union of the
  two windows; nothing is evicted), and no game is in both;
- Ctrl-C stops everything with exit status 0.

Usage: local_shards_test.py <path to the chessrl tool>
"""
import os
import signal
import sys
import tempfile
import time

from local_harness import Run, fail, log, tiny_args

TINY = [*tiny_args(window=5000000), "--no-prometheus", "--no-web", "--redis-shards", "2"]


def window_ids(run, shard):
    window = run.redis("LRANGE", "chessrl:window", "0", "-1", shard=shard)
    if window is None:
        fail(f"cannot read chessrl:window from shard {shard}")
    return [entry.split()[2] for entry in window.splitlines() if entry.strip()]


def main():
    tool = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="chessrl-shards-") as tmp:
        run = Run(tool, os.path.join(tmp, "run"), TINY)
        run.wait_ready()
        if len(run.state.get("redis_ports", [])) != 2:
            fail(f"local.json does not name two Redis ports: {run.state.get('redis_ports')}")
        run.wait("games reach both shards",
                 lambda: all((run.games_in_redis(s) or 0) > 0 for s in (0, 1)), 300)
        log(f"ok after {time.time() - started:.0f} s: games on shard 0 "
            f"{run.games_in_redis(0)}, shard 1 {run.games_in_redis(1)}")

        victim = run.child("redis-1")
        games = run.games_in_redis(1)
        os.kill(victim["pid"], signal.SIGKILL)
        t0 = time.time()
        others = run.games_in_redis(0)
        run.wait("games reach shard 0 while shard 1 is down or restarting",
                 lambda: (run.games_in_redis(0) or 0) > others, 120)
        run.wait("redis-1 is restarted (local.json)",
                 lambda: run.child("redis-1")["pid"] not in (0, victim["pid"]), 60)
        run.wait(f"games reach shard 1 again (had {games})",
                 lambda: (run.games_in_redis(1) or 0) > games, 180)
        log(f"ok: redis-1 killed with SIGKILL, restarted, games on it {games} -> "
            f"{run.games_in_redis(1)} ({time.time() - t0:.0f} s)")

        with open(os.path.join(run.dir, "stats", "selfplay-0.acked")) as f:
            acked = [line.split() for line in f if line.strip()]
        kept = {line[0] for line in acked if line[1:] in (["stored"], ["duplicate"])}
        # Each shard's games_total before its window: the run goes on, so the window may
        # hold more by the time it is read, never fewer unless it evicted.
        totals = [run.games_in_redis(0), run.games_in_redis(1)]
        shard_ids = [window_ids(run, 0), window_ids(run, 1)]
        for s in (0, 1):
            if totals[s] is None or len(shard_ids[s]) < totals[s]:
                fail(f"shard {s} stored {totals[s]} games but its window holds "
                     f"{len(shard_ids[s])}: it evicted, so this test cannot compare")
        both = set(shard_ids[0]) & set(shard_ids[1])
        if both:
            fail(f"{len(both)} games are on both shards: {sorted(both)[:5]}")
        lost = kept - set(shard_ids[0]) - set(shard_ids[1])
        if not kept:
            fail("self-play acknowledged no game")
        if lost:
            fail(f"{len(lost)} of the {len(kept)} acknowledged games are on no shard: "
                 f"{sorted(lost)[:5]}")
        log(f"ok: all {len(kept)} acknowledged games are stored, {len(shard_ids[0])} on shard 0 "
            f"and {len(shard_ids[1])} on shard 1, none on both")
        run.stop()
    log(f"PASS ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
