#!/usr/bin/env python3
"""`chessrl local` stops a run whose child keeps crashing (label e2e): self-play
is given an option it does not know (--selfplay-args), so it exits at once every
time. `chessrl local` restarts it with a doubling backoff (1 s, 2 s, 4 s, 8 s),
counting the restarts on its own /metrics, and at the fifth exit stops the whole
run with exit status 1, naming the child, its log file and the end of that log
(self-play's own error), and leaves no child running.

Usage: local_crashloop_test.py <path to the chessrl tool>
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ARGS = [
    "--net", "1x8", "--visits", "8", "--reduced-visits", "4", "--concurrent", "2",
    "--min-window", "200", "--eval-visits", "4", "--eval-pairs", "1", "--anchor-pairs", "1",
    "--status-every", "1", "--no-prometheus", "--selfplay-args", "--no-such-option",
]


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def main():
    tool = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="chessrl-crashloop-") as tmp:
        run_dir = os.path.join(tmp, "run")
        proc = subprocess.Popen([tool, "local", "--dir", run_dir, *ARGS],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # While it runs: its own /metrics counts self-play's restarts.
        state, restarts = None, 0
        while proc.poll() is None and time.time() - started < 120:
            try:
                with open(os.path.join(run_dir, "local.json")) as f:
                    state = json.load(f)
                url = f"http://127.0.0.1:{state['metrics_port']}/metrics"
                with urllib.request.urlopen(url, timeout=5) as reply:
                    for line in reply.read().decode().splitlines():
                        if line.startswith('chessrl_local_child_restarts_total{child="selfplay-0"}'):
                            restarts = max(restarts, float(line.split()[-1]))
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.3)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("chessrl local did not stop within 240 s although self-play cannot start")
        print(err, flush=True)
        if proc.returncode != 1:
            fail(f"chessrl local exited with {proc.returncode}, not 1")
        log_path = os.path.join(run_dir, "logs", "selfplay-0.log")
        for want in ["restarting it in 1 s", "restarting it in 2 s", "restarting it in 4 s",
                     "restarting it in 8 s", "selfplay-0 exited 5 times", "crash loop",
                     "the end of " + log_path, "--no-such-option"]:
            if want not in err:
                fail(f"its stderr does not say {want!r}")
        if restarts != 4:
            fail(f"chessrl_local_child_restarts_total{{child=\"selfplay-0\"}} reached {restarts}, "
                 "not 4")
        if state is None:
            fail("local.json never appeared")
        for child in (c for c in state["children"] if c["pid"] > 0):
            try:
                os.kill(child["pid"], 0)
                fail(f"{child['name']} (pid {child['pid']}) is still running")
            except ProcessLookupError:
                pass
    print(f"PASS ({time.time() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
