#!/usr/bin/env python3
"""`chessrl local` heals itself (labels e2e, slow): kill -9 each child in turn
during a run, Redis included, and check that

- the run goes on: `chessrl local` restarts the child (a new pid in local.json,
  its restart count there, in chessrl_local_child_restarts_total{child} on its
  own /metrics and, at the end, in the status line), and games keep reaching
  Redis after each kill;
- a restarted child keeps the ports of its first start (its metrics port in
  local.json, the replay address), so the others reconnect to the same place;
- the trainer resumes from its checkpoint (it logs "resuming from" and its step
  is at least the checkpoint's, then grows) rather than from step 0;
- no acknowledged game is lost: every game self-play logged as stored or
  duplicate in its --acked-log (run/stats/selfplay-0.acked) is in Redis's
  window at the end (the window is sized so that nothing is evicted);
- Ctrl-C still stops everything with exit status 0.

Usage: local_restart_test.py <path to the chessrl tool>
"""
import os
import signal
import sys
import tempfile
import time

from local_harness import Run, fail, latest_checkpoint_step, last_start, log, scrape, tiny_args

TINY = [*tiny_args(window=5000000), "--no-prometheus"]
VICTIMS = ["redis", "replay", "selfplay-0", "trainer-0", "evaluator"]


def main():
    tool = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="chessrl-restart-") as tmp:
        run = Run(tool, os.path.join(tmp, "run"), TINY)
        run.wait_ready()
        first = {c["name"]: c.get("metrics_port") for c in run.state["children"]}
        first_replay = run.state["replay"]
        run.wait("games reach Redis and the trainer writes a checkpoint",
                 lambda: (run.games_in_redis() or 0) > 0 and latest_checkpoint_step(run.dir) > 0,
                 300)
        log(f"ok after {time.time() - started:.0f} s: games in Redis, checkpoint at step "
            f"{latest_checkpoint_step(run.dir)}")

        for victim in VICTIMS:
            before = run.child(victim)
            restarts = before.get("restarts", 0)
            games = run.wait("Redis answers", run.games_in_redis, 60)
            checkpoint = latest_checkpoint_step(run.dir)
            os.kill(before["pid"], signal.SIGKILL)
            t0 = time.time()

            def restarted():
                c = run.child(victim)
                return c.get("restarts") == restarts + 1 and c["pid"] not in (0, before["pid"])
            run.wait(f"{victim} is restarted (local.json)", restarted, 60)
            if "metrics_port" not in run.state:
                fail(f"local.json has no metrics_port (chessrl local's own /metrics): {run.state}")
            run.wait(f"chessrl_local_child_restarts_total{{child=\"{victim}\"}} counts it",
                     lambda: (scrape(run.state["metrics_port"]) or {}).get(
                         f'chessrl_local_child_restarts_total{{child="{victim}"}}') == restarts + 1,
                     30)
            log(f"ok: {victim} (pid {before['pid']}) killed with SIGKILL, restarted as pid "
                f"{run.child(victim)['pid']} in {time.time() - t0:.1f} s")
            # Restarts keep the ports of the first start: the others reconnect
            # to the same addresses.
            if run.child(victim).get("metrics_port") != first[victim]:
                fail(f"{victim}'s metrics port changed from {first[victim]} to "
                     f"{run.child(victim).get('metrics_port')} across its restart")
            if run.state["replay"] != first_replay:
                fail(f"the replay address changed from {first_replay} to {run.state['replay']}")
            run.wait(f"games keep reaching Redis after {victim} was killed (had {games})",
                     lambda: (run.games_in_redis() or 0) > games, 180)
            log(f"ok: games in Redis {games} -> {run.games_in_redis()}")
            if victim == "trainer-0":
                port = run.child("trainer-0")["metrics_port"]

                def resumed():
                    section = last_start(run.child("trainer-0")["log"])
                    step = (scrape(port) or {}).get("chessrl_trainer_step")
                    return "resuming from" in section and step is not None and step > checkpoint \
                        and step
                step = run.wait(f"the trainer resumes from its checkpoint (step {checkpoint}) "
                                "and trains on", resumed, 180)
                log(f"ok: the trainer resumed from step {checkpoint}, now at step {step:.0f}")

        # No acknowledged game is lost: every id self-play logged as acknowledged
        # is in Redis's window (nothing was evicted: it holds every game stored).
        with open(os.path.join(run.dir, "stats", "selfplay-0.acked")) as f:
            acked = [line.split() for line in f if line.strip()]
        # "<id> stored", "<id> duplicate" (a retry of a stored game); not
        # "<id> duplicate unexpected" (the id was taken) nor "<id> rejected ...".
        kept = {line[0] for line in acked
                if line[1:] == ["stored"] or line[1:] == ["duplicate"]}
        # Self-play keeps pushing while this reads: the count first, then the
        # window, which holds at least that many games unless it evicted some.
        total = run.games_in_redis()
        if total is None:
            fail("cannot read games_total from Redis")
        window = run.redis("LRANGE", "chessrl:window", "0", "-1")
        if window is None:
            fail("cannot read chessrl:window from Redis")
        in_redis = {entry.split()[2] for entry in window.splitlines() if entry.strip()}
        if len(in_redis) < total:
            fail(f"Redis stored {total} games but its window holds {len(in_redis)}: the window "
                 "evicted games, so this test cannot compare (raise --window)")
        lost = kept - in_redis
        if not kept:
            fail("self-play acknowledged no game")
        if lost:
            fail(f"{len(lost)} of the {len(kept)} acknowledged games are not in Redis: "
                 f"{sorted(lost)[:5]}")
        log(f"ok: all {len(kept)} games self-play saw acknowledged are in Redis ({total} stored)")

        output = run.stop()
        last = [line for line in output.splitlines() if "restarts" in line]
        if not last or any(f"{v} \u21bb" not in last[-1] for v in VICTIMS):
            fail("the final status line does not show every child's restarts: "
                 + (last[-1] if last else output[-500:]))
        log("status line: " + last[-1])
    log(f"PASS ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
