#!/usr/bin/env python3
"""End-to-end test of `chessrl local` (label e2e): the whole loop with a tiny
network and few visits, as a user runs it.

Asserts: the run's Redis directory is 0700 and its password and redis.conf
0600; no process's command line holds the password (while it runs,
scripts/secrets-in-cmdlines.py); games reach Redis; the trainer publishes at
least two versions;
self-play picks up a new version; the evaluator reports a result; every
/metrics endpoint passes `promtool check metrics`; the game viewer renders in
headless chromium with live moves arriving within seconds and serves no secret
(check_viewer); Ctrl-C (SIGINT) stops every
process cleanly; a second run in the same directory resumes from the
checkpoint. Usage: local_e2e_test.py <path to the chessrl tool>
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from local_harness import (Run, fail, last_start, latest_checkpoint_step, log, samples,
                           scrape_text, tiny_args)

WEB_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web")
SCANNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                       "secrets-in-cmdlines.py")

TINY = tiny_args(window=20000)


def check_viewer(run_dir, state, ports):
    """The game viewer (chessrl-web): its page and api/state hold none of the run's
    secrets; in headless chromium (tests/web/viewer_check.mjs) the page renders a
    live board, the evaluator's games, the match table and the Elo curve, and a
    move played appears on it within a few seconds."""
    web = state.get("web")
    if not web:
        fail("local.json has no game viewer address (web)")
    secrets = [open(os.path.join(run_dir, "redis", "password")).read().strip()]
    auth = os.path.join(run_dir, "auth")
    secrets += [open(os.path.join(auth, f)).read().strip() for f in os.listdir(auth)]
    for path in ("", "api/state", "static/app.js"):
        with urllib.request.urlopen(web + path, timeout=10) as response:
            text = response.read().decode()
        if any(secret and secret in text for secret in secrets):
            fail(f"{web}{path} holds one of the run's secrets")
    log(f"ok: the game viewer at {web} serves none of the run's {len(secrets)} secrets")
    if not os.path.isdir(os.path.join(WEB_TESTS, "node_modules", "puppeteer-core")):
        fail("tests/web/node_modules is missing: run scripts/install-web-assets.sh (make does)")
    screenshot = os.environ.get("CHESSRL_VIEWER_SCREENSHOT",
                                os.path.join(run_dir, "viewer.png"))
    check = subprocess.run(
        ["node", os.path.join(WEB_TESTS, "viewer_check.mjs"), "--url", web,
         "--live", f"http://127.0.0.1:{ports['selfplay-0']}/live", "--screenshot", screenshot,
         "--follow", "8", "--timeout", "150"], capture_output=True, text=True, timeout=240)
    sys.stderr.write(check.stderr)
    if check.returncode != 0:
        fail(f"the game viewer in chromium: {check.stdout}")
    result = json.loads(check.stdout)
    log(f"ok: the game viewer in chromium: {result['live']['cards']} live board(s), "
        f"{result['evaluator']['curve_points']} curve points, a move reached the page in "
        f"{result['latency_ms']['median']} ms (median, max {result['latency_ms']['max']}); "
        f"screenshot {screenshot}")


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="chessrl-e2e-") as tmp:
        run_dir = os.path.join(tmp, "run")
        run = Run(tool, run_dir, TINY)
        state = run.wait_ready()
        ports = run.metrics_ports()
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
                run.stop()
                fail("not reached within 300 s: " + ", ".join(k for k in want if k not in met))
            run.alive("while running")
            try:
                texts = {name: scrape_text(port) for name, port in ports.items()}
            except OSError as e:
                log(f"scrape failed ({e}); retrying")
                time.sleep(1)
                continue
            parsed = {name: samples(text) for name, text in texts.items()}
            keys = int((run.redis("DBSIZE") or "0").strip() or 0)
            for what, check in want.items():
                if what not in met and check(parsed, keys):
                    met[what] = time.time() - started
                    log(f"ok after {met[what]:.0f} s: {what}")
            time.sleep(1)

        check_viewer(run_dir, run.read_state(), ports)

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

        output = run.stop()
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
        run = Run(tool, run_dir, TINY)
        state = run.wait_ready()
        if state.get("started_ms") != first_started:
            fail(f"the resumed run's started_ms {state.get('started_ms')} is not the first run's "
                 f"{first_started}")
        port = run.metrics_ports()["trainer-0"]
        deadline = time.time() + 120
        resumed_step = None
        while time.time() < deadline:
            resumed = "resuming from" in last_start(os.path.join(run_dir, "logs", "trainer-0.log"))
            try:
                current = samples(scrape_text(port)).get("chessrl_trainer_step")
            except OSError:
                current = None
            if resumed and current is not None and current >= step:
                resumed_step = current
                break
            time.sleep(1)
        run.stop()
        if resumed_step is None:
            with open(os.path.join(run_dir, "logs", "trainer-0.log")) as f:
                tail = "".join(f.readlines()[-25:])
            fail(f"the second run did not resume from step {step} (resumed: {resumed}, "
                 f"trainer step: {current}); the trainer's log ends:\n{tail}")
        log(f"ok: the second run resumed at step {resumed_step:.0f} (checkpoint {step})")
    log("PASS")


if __name__ == "__main__":
    main()
