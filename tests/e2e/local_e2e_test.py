#!/usr/bin/env python3
"""End-to-end test of `chessrl local` (label e2e): the whole loop with a tiny
network and few visits, as a user runs it.

Asserts: the run's Redis directory is 0700 and its password and redis.conf
0600; no process's command line holds the password (while it runs,
scripts/secrets-in-cmdlines.py); games reach Redis; the trainer publishes at
least two versions;
self-play picks up a new version; the evaluator reports a result; every
/metrics endpoint passes `promtool check metrics`; Ctrl-C (SIGINT) stops every
process cleanly; a second run in the same directory resumes from the
checkpoint. Usage: local_e2e_test.py <path to the chessrl tool>
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SCANNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                       "secrets-in-cmdlines.py")

TINY = [
    "--net", "1x8", "--visits", "8", "--reduced-visits", "4", "--full-fraction", "0.5",
    "--concurrent", "8", "--max-plies", "60", "--window", "20000", "--batch-size", "64",
    "--publish-every", "10", "--checkpoint-every", "10", "--min-window", "200",
    "--max-reuse", "100", "--eval-visits", "4", "--eval-pairs", "1", "--anchor-pairs", "1",
    "--status-every", "1",
]


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def log(message):
    print(message, flush=True)


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return reply.read().decode()


def samples(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def start(tool, run_dir, extra=()):
    return subprocess.Popen([tool, "local", "--dir", run_dir, *TINY, *extra],
                            stdout=subprocess.PIPE, text=True)


def read_state(run_dir, proc, timeout=60):
    path = os.path.join(run_dir, "local.json")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"chessrl local exited early with {proc.returncode}")
        if os.path.exists(path):
            try:
                with open(path) as f:
                    state = json.load(f)
                if any(c["name"] == "evaluator" for c in state["children"]):
                    return state
            except ValueError:
                pass
        time.sleep(0.5)
    fail("local.json did not appear")


def redis_keys(run_dir, state):
    with open(os.path.join(run_dir, "redis", "password")) as f:
        password = f.read().strip()
    out = subprocess.run(["redis-cli", "-p", str(state["redis_port"]), "DBSIZE"],
                         env={**os.environ, "REDISCLI_AUTH": password},
                         capture_output=True, text=True, timeout=10)
    return int(out.stdout.strip() or 0)


def stop(proc, state, timeout=150):
    proc.send_signal(signal.SIGINT)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"chessrl local did not stop within {timeout} s of SIGINT")
    if proc.returncode != 0:
        fail(f"chessrl local exited with {proc.returncode} after SIGINT")
    for child in state["children"]:
        try:
            os.kill(child["pid"], 0)
            fail(f"{child['name']} (pid {child['pid']}) is still running after chessrl local ended")
        except ProcessLookupError:
            pass
    return output


def latest_checkpoint_step(run_dir):
    steps = [int(m.group(1)) for name in os.listdir(os.path.join(run_dir, "checkpoints"))
             if (m := re.fullmatch(r"ckpt-(\d+)\.chrl", name))]
    return max(steps) if steps else 0


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="chessrl-e2e-") as tmp:
        run_dir = os.path.join(tmp, "run")
        proc = start(tool, run_dir)
        state = read_state(run_dir, proc)
        ports = {c["name"]: c["metrics_port"] for c in state["children"] if "metrics_port" in c}
        log("children: " + ", ".join(f"{n} :{p}" for n, p in sorted(ports.items())))

        # Secrets: owner-only from the start, and on no command line.
        for path, mode in (("redis", 0o700), ("redis/password", 0o600), ("redis/redis.conf", 0o600)):
            actual = os.stat(os.path.join(run_dir, path)).st_mode & 0o777
            if actual != mode:
                fail(f"{path} has mode {actual:o}, not {mode:o}")
        log("ok: run/redis is 0700, its password and redis.conf 0600")
        scanner = subprocess.Popen([sys.executable, SCANNER, run_dir, "--for", "30"],
                                   stdout=subprocess.PIPE, text=True)

        want = {
            "games reach Redis": lambda s, keys: keys > 0
            and s["replay"].get("chessrl_replay_games_stored_total", 0) > 0,
            "the trainer publishes two versions": lambda s, keys: s["trainer-0"].get(
                "chessrl_model_version", 0) >= 2,
            "self-play picks up a new version": lambda s, keys: s["selfplay-0"].get(
                "chessrl_model_version", 0) >= 2
            and s["selfplay-0"].get("chessrl_selfplay_model_swaps_total", 0) >= 1,
            "the evaluator reports a result": lambda s, keys: s["evaluator"].get(
                "chessrl_eval_matches_total", 0) >= 1
            and any(k.startswith('chessrl_eval_elo{opponent="random"}') for k in s["evaluator"]),
        }
        met = {}
        started = time.time()
        deadline = started + 300
        texts = {}
        while len(met) < len(want):
            if time.time() > deadline:
                stop(proc, state)
                fail("not reached within 300 s: " + ", ".join(k for k in want if k not in met))
            if proc.poll() is not None:
                fail(f"chessrl local exited with {proc.returncode} while running")
            try:
                texts = {name: scrape(port) for name, port in ports.items()}
            except OSError as e:
                log(f"scrape failed ({e}); retrying")
                time.sleep(1)
                continue
            parsed = {name: samples(text) for name, text in texts.items()}
            keys = redis_keys(run_dir, state)
            for what, check in want.items():
                if what not in met and check(parsed, keys):
                    met[what] = time.time() - started
                    log(f"ok after {met[what]:.0f} s: {what}")
            time.sleep(1)

        scan, _ = scanner.communicate(timeout=120)
        if scanner.returncode != 0:
            fail("secrets-in-cmdlines.py:\n" + scan)
        log("ok: " + " / ".join(scan.strip().splitlines()))

        # Every endpoint's exposition passes promtool.
        for name, text in sorted(texts.items()):
            check = subprocess.run(["promtool", "check", "metrics"], input=text,
                                   capture_output=True, text=True)
            if check.returncode != 0:
                fail(f"promtool check metrics failed for {name}:\n{check.stdout}{check.stderr}")
            log(f"ok: promtool check metrics: {name} ({len(text.splitlines())} lines)")

        output = stop(proc, state)
        last = [line for line in output.splitlines() if "games" in line]
        if not last:
            fail("no status line printed")
        log("status line: " + last[-1])
        step = latest_checkpoint_step(run_dir)
        if step <= 0:
            fail("no checkpoint written on stop")
        log(f"ok: stopped cleanly on SIGINT; latest checkpoint at step {step}")

        # Self-play summed up each model version it played (--version-stats).
        stats_path = os.path.join(run_dir, "stats", "selfplay-0.jsonl")
        with open(stats_path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        if not lines or not any(v["version"] >= 1 for v in lines):
            fail(f"{stats_path}: no line for a trained version: {lines}")
        for v in lines:
            if v["games"] <= 0 or v["positions"] <= 0 or v["plies"] <= 0:
                fail(f"{stats_path}: a line without games: {v}")
        log(f"ok: per-version statistics for versions {sorted({v['version'] for v in lines})}")
        first_started = state.get("started_ms")
        if not isinstance(first_started, int) or first_started <= 0:
            fail(f"local.json has no started_ms: {state}")

        # A second run resumes from that checkpoint.
        if os.path.exists(os.path.join(run_dir, "local.json")):
            fail("local.json (the last run's ports and pids) is still there after a clean stop")
        proc = start(tool, run_dir)
        state = read_state(run_dir, proc)
        if state.get("started_ms") != first_started:
            fail(f"the resumed run's started_ms {state.get('started_ms')} is not the first run's "
                 f"{first_started}")
        port = next(c["metrics_port"] for c in state["children"] if c["name"] == "trainer-0")
        deadline = time.time() + 120
        resumed_step = None
        while time.time() < deadline:
            with open(os.path.join(run_dir, "logs", "trainer-0.log")) as f:
                resumed = "resuming from" in f.read().split("==== chessrl local: starting")[-1]
            try:
                current = samples(scrape(port)).get("chessrl_trainer_step")
            except OSError:
                current = None
            if resumed and current is not None and current >= step:
                resumed_step = current
                break
            time.sleep(1)
        stop(proc, state)
        if resumed_step is None:
            with open(os.path.join(run_dir, "logs", "trainer-0.log")) as f:
                tail = "".join(f.readlines()[-25:])
            fail(f"the second run did not resume from step {step} (resumed: {resumed}, "
                 f"trainer step: {current}); the trainer's log ends:\n{tail}")
        log(f"ok: the second run resumed at step {resumed_step:.0f} (checkpoint {step})")
    log("PASS")


if __name__ == "__main__":
    main()
