"""What the `chessrl local` end-to-end tests share (local_e2e_test.py,
local_restart_test.py): a run of `chessrl local` with a tiny network, its
local.json, its Redis, the children's /metrics, and stopping it.

The tests run as scripts (tests/e2e/CMakeLists.txt: python3 <test>.py), so
this directory is first on sys.path and `import local_harness` finds this file.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request


def tiny_args(window):
    """`chessrl local` options for a run that trains within minutes."""
    return [
        "--net", "1x8", "--visits", "8", "--reduced-visits", "4", "--full-fraction", "0.5",
        "--concurrent", "8", "--max-plies", "60", "--window", str(window), "--batch-size", "64",
        "--publish-every", "10", "--checkpoint-every", "10", "--min-window", "200",
        "--max-reuse", "100", "--eval-visits", "4", "--eval-pairs", "1", "--anchor-pairs", "1",
        "--status-every", "1",
    ]


RUNNING = []  # chessrl local processes, stopped (SIGINT, then SIGKILL) when a test fails


def fail(message):
    print("FAIL: " + message, flush=True)
    for proc in RUNNING:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
    sys.exit(1)


def log(message):
    print(message, flush=True)


def samples(text):
    """A Prometheus exposition as {series: value}."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def scrape_text(port):
    """The /metrics text on `port`; raises OSError when it does not answer."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return reply.read().decode()


def scrape(port):
    """The /metrics samples on `port`, or None when it does not answer."""
    try:
        return samples(scrape_text(port))
    except OSError:
        return None


def latest_checkpoint_step(run_dir):
    steps = [int(m.group(1)) for name in os.listdir(os.path.join(run_dir, "checkpoints"))
             if (m := re.fullmatch(r"ckpt-(\d+)\.chrl", name))]
    return max(steps) if steps else 0


def last_start(log_path):
    """What a child's log holds since chessrl local last started it."""
    with open(log_path) as f:
        return f.read().split("==== chessrl local: starting")[-1]


class Run:
    """`chessrl local --dir run_dir <args>`, its stdout piped."""

    def __init__(self, tool, run_dir, args):
        self.dir = run_dir
        self.proc = subprocess.Popen([tool, "local", "--dir", run_dir, *args],
                                     stdout=subprocess.PIPE, text=True)
        RUNNING.append(self.proc)
        self.state = None

    def alive(self, what):
        if self.proc.poll() is not None:
            fail(f"chessrl local exited with {self.proc.returncode} {what}")

    def read_state(self):
        """local.json, kept from the last good read while it is absent or half written."""
        try:
            with open(os.path.join(self.dir, "local.json")) as f:
                self.state = json.load(f)
        except (OSError, ValueError):
            pass
        return self.state

    def wait(self, what, check, timeout):
        """check()'s first true value, read_state() before each try; fails at the timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.alive("while waiting until " + what)
            self.read_state()
            value = check()
            if value:
                return value
            time.sleep(0.5)
        fail(f"not within {timeout} s: {what}")

    def wait_ready(self, timeout=120):
        """Until local.json says every child started and its metrics port is known."""
        self.wait("local.json says the run is ready (every child's metrics port)",
                  lambda: self.state and self.state.get("ready"), timeout)
        return self.state

    def child(self, name):
        return next(c for c in self.state["children"] if c["name"] == name)

    def metrics_ports(self):
        return {c["name"]: c["metrics_port"] for c in self.state["children"]
                if "metrics_port" in c}

    def redis(self, *args, shard=0):
        """redis-cli's stdout against the run's Redis (shard `shard` of
        --redis-shards), or None when it failed."""
        with open(os.path.join(self.dir, "redis", "password")) as f:
            password = f.read().strip()
        port = self.state.get("redis_ports", [self.state["redis_port"]])[shard]
        out = subprocess.run(["redis-cli", "-p", str(port), *args],
                             env={**os.environ, "REDISCLI_AUTH": password},
                             capture_output=True, text=True, timeout=10)
        return out.stdout if out.returncode == 0 else None

    def games_in_redis(self, shard=0):
        out = self.redis("HGET", "chessrl:stats", "games_total", shard=shard)
        try:
            return int(out.strip())
        except (AttributeError, ValueError):
            return None  # Redis is down or loading

    def stop(self, timeout=150):
        """SIGINT; checks exit status 0 and that no child outlived it. Returns its stdout."""
        self.proc.send_signal(signal.SIGINT)
        try:
            output, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail(f"chessrl local did not stop within {timeout} s of SIGINT")
        if self.proc.returncode != 0:
            fail(f"chessrl local exited with {self.proc.returncode} after SIGINT")
        for child in (c for c in (self.state or {}).get("children", []) if c["pid"] > 0):
            try:
                os.kill(child["pid"], 0)
                fail(f"{child['name']} (pid {child['pid']}) is still running after the stop")
            except ProcessLookupError:
                pass
        return output
