#!/usr/bin/env python3
"""The parts of scripts/gpu-check.sh that are clearer in Python (stdlib only; pynvml
when it is installed): sampling the GPU's or the CPU's busy share and memory at 10 Hz,
running a bench with each stdout line timestamped, reading the benches' figures (the
JSON document of `bench nn`, `bench selfplay` and `bench train` with --json; nn's and
selfplay's windows in Unix seconds line up with the samples), watching `chessrl local`'s
/metrics, and writing the summary table.

Every reader fails loudly (exit 3, "cannot parse ...") when the output does not hold
what it expects: a changed document or table must not turn into an empty or made-up
figure.

Files under OUT: samples.csv (time, busy %, memory MiB), rows.jsonl (one summary row
a line), logs/NAME.out (a bench's stdout), logs/NAME.tsv (each stdout line with its
time), logs/NAME.err (its stderr), steps.jsonl (each bench's start, end, exit status).
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

PARSE_ERROR = 3


def die(message, code=PARSE_ERROR):
    print(f"gpu-check-helper: {message}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- sampling


def sample_cpu(out, period):
    """The machine's busy share from /proc/stat (all cores) and used memory."""

    def cpu_times():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]), idle  # guest time is already in user

    def used_mib():
        info = {}
        with open("/proc/meminfo") as f:
            for line in f:
                key, value = line.split(":", 1)
                info[key] = int(value.split()[0])
        return (info["MemTotal"] - info["MemAvailable"]) / 1024

    total0, idle0 = cpu_times()
    while True:
        time.sleep(period)
        total, idle = cpu_times()
        dt = total - total0
        busy = 100.0 * (dt - (idle - idle0)) / dt if dt > 0 else 0.0
        total0, idle0 = total, idle
        out.write(f"{time.time():.3f},{busy:.1f},{used_mib():.0f}\n")
        out.flush()


def sample_gpu_nvml(out, period, index):
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    while True:
        util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
        out.write(f"{time.time():.3f},{util},{mem:.0f}\n")
        out.flush()
        time.sleep(period)


def sample_gpu_smi(out, period, index):
    # The arrival time of each line is the sample's time: stdbuf keeps
    # nvidia-smi's lines from waiting in a pipe buffer.
    cmd = ["nvidia-smi", "-i", str(index), "--query-gpu=utilization.gpu,memory.used",
           "--format=csv,noheader,nounits", "-lms", str(int(period * 1000))]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL"] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    signal.signal(signal.SIGTERM, lambda *_: (proc.terminate(), sys.exit(0)))
    for line in proc.stdout:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            util, mem = float(parts[0]), float(parts[1])
        except ValueError:
            continue  # "[N/A]"
        out.write(f"{time.time():.3f},{util:.0f},{mem:.0f}\n")
        out.flush()
    die(f"nvidia-smi stopped (exit {proc.wait()})", 1)


def cmd_sample(a):
    with open(a.out, "a") as out:
        if a.mode == "cpu":
            sample_cpu(out, a.period)
        try:
            import pynvml  # noqa: F401

            have_nvml = True
        except ImportError:
            have_nvml = False
        if have_nvml:
            print("gpu-check-helper: sampling the GPU with pynvml", file=sys.stderr)
            sample_gpu_nvml(out, a.period, a.gpu)
        elif shutil.which("nvidia-smi"):
            print("gpu-check-helper: sampling the GPU with nvidia-smi -lms", file=sys.stderr)
            sample_gpu_smi(out, a.period, a.gpu)
        else:
            die("no pynvml (pip install nvidia-ml-py) and no nvidia-smi: cannot sample the GPU", 1)


def read_samples(path):
    samples = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) != 3:
                continue  # a line being written
            try:
                samples.append(tuple(float(x) for x in parts))
            except ValueError:
                continue
    return samples


def windows(samples, spans):
    """The median busy % and the most memory MiB of the samples within the spans
    [(start, end)]. The first second of a span longer than 2 s is left out of the
    median: NVML's utilization covers the sample period before it (up to 1 s)."""
    busy, mem = [], []
    for start, end in spans:
        busy_from = start + min(1.0, 0.25 * (end - start)) if end - start > 2 else start
        busy += [b for t, b, _ in samples if busy_from <= t <= end]
        mem += [m for t, _, m in samples if start <= t <= end]
    return (statistics.median(busy) if busy else None, max(mem) if mem else None)


def window(samples, start, end):
    return windows(samples, [(start, end)])


# ---------------------------------------------------------------- running a bench


def cmd_run(a):
    """Runs the command; its stdout to NAME.out and, timestamped, NAME.tsv (and
    echoed, indented; with --json, where stdout is one JSON document for the reader,
    only where it is), its stderr to NAME.err; the span to steps.jsonl."""
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if not shutil.which("stdbuf"):
        die("stdbuf (coreutils) is missing: without it a bench's lines arrive in blocks and "
            "their times, which set each row's busy-share window, would be wrong", 1)
    cmd = ["stdbuf", "-oL"] + cmd  # each line arrives when it is printed
    os.makedirs(os.path.dirname(a.log), exist_ok=True)
    start = time.time()
    with open(a.log + ".out", "w") as out, open(a.log + ".tsv", "w") as tsv, \
            open(a.log + ".err", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        for line in proc.stdout:
            now = time.time()
            out.write(line)
            tsv.write(f"{now:.3f}\t{line}")
            out.flush()
            tsv.flush()
            if not a.json:
                print("    " + line, end="", flush=True)
        rc = proc.wait()
    if a.json:
        print(f"    (its figures, one JSON document: {a.log}.out)", flush=True)
    end = time.time()
    with open(a.steps, "a") as f:
        f.write(json.dumps({"name": os.path.basename(a.log), "start": start, "end": end,
                            "rc": rc}) + "\n")
    if rc != 0:
        with open(a.log + ".err") as f:
            tail = f.readlines()[-20:]
        print(f"gpu-check-helper: {' '.join(cmd)} exited with status {rc}; the end of "
              f"{a.log}.err:", file=sys.stderr)
        sys.stderr.write("".join("    " + l for l in tail))
    sys.exit(rc if rc >= 0 else 128 - rc)  # killed by signal -rc


def step_span(steps_path, name):
    span = None
    with open(steps_path) as f:
        for line in f:
            s = json.loads(line)
            if s["name"] == name:
                span = (s["start"], s["end"])
    if span is None:
        die(f"no step {name} in {steps_path}")
    return span


def append_row(path, row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


# ---------------------------------------------------------------- bench nn


def read_bench_json(log, bench):
    """The JSON document `chessrl bench BENCH --json` printed (LOG.out)."""
    try:
        with open(log + ".out") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot parse {log}.out: not one JSON document (bench {bench} --json): {e}")
    if not isinstance(doc, dict) or doc.get("bench") != bench:
        die(f"cannot parse {log}.out: not bench {bench}'s JSON document "
            f"(its \"bench\" is {doc.get('bench') if isinstance(doc, dict) else None!r})")
    return doc


def field(obj, key, what):
    """obj[key], a finite number; dies naming `what` otherwise."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or \
            value in (float("inf"), float("-inf")):
        die(f"cannot parse {what}: no number '{key}' (got {value!r})")
    return value


def span(obj, key, what):
    """obj[key], a window [start, end] in Unix seconds."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, list) or len(value) != 2 or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value) or \
            value[0] > value[1]:
        die(f"cannot parse {what}: no window '{key}' [start, end] (got {value!r})")
    return tuple(value)


def cmd_nn(a):
    name = os.path.basename(a.log)
    doc = read_bench_json(a.log, "nn")
    samples = read_samples(a.samples)
    rows = doc.get("rows")
    if not isinstance(rows, list):
        die(f"cannot parse {a.log}.out: bench nn's document has no list 'rows'")
    seen = {}
    for r in rows:
        batch = field(r, "batch", f"{a.log}.out: a bench nn row")
        what = f"{a.log}.out: bench nn's row for batch {batch}"
        values = {k: field(r, k, what) for k in
                  ("raw_evals_per_second", "evals_per_second", "efficiency")}
        start = field(r, "started_at", what)
        end = field(r, "ended_at", what)
        busy, mem = window(samples, start, end)
        seen[int(batch)] = {
            "stage": "selfplay", "step": name, "bench": "nn", "net": str(r.get("net", "?")),
            "precision": a.precision, "batch": int(batch), "threads": None,
            "raw evals/s": values["raw_evals_per_second"],
            "evals/s": values["evals_per_second"],
            "positions/s": None, "eval ÷ raw": values["efficiency"],
            "busy %": busy, "busy % (raw)": None, "mem MiB": mem,
            "seconds": round(end - start, 1),
        }
    missing = [b for b in a.batches if b not in seen]
    if missing:
        die(f"cannot parse {a.log}.out: no row for batch {missing} (rows for {sorted(seen)})")
    for b in a.batches:
        row = seen[b]
        append_row(a.rows, row)
        print(f"  nn {a.precision} batch {b}: raw {row['raw evals/s']:.0f} evals/s, through "
              f"BatchEvaluator {row['evals/s']:.0f}, busy {fmt(row['busy %'])}%")


# ---------------------------------------------------------------- bench selfplay


def cmd_selfplay(a):
    name = os.path.basename(a.log)
    doc = read_bench_json(a.log, "selfplay")
    samples = read_samples(a.samples)
    what = f"{a.log}.out: bench selfplay's document"
    games = int(field(doc, "games", what))
    threads = int(field(doc, "threads", what))
    runs = doc.get("runs")
    if not isinstance(runs, list) or len(runs) != a.repeat:
        die(f"cannot parse {a.log}.out: {len(runs) if isinstance(runs, list) else 'no'} runs "
            f"(expected {a.repeat})")
    # Each run's timed self-play window, and the backend alone at its mean batch.
    play_spans = [span(r, "selfplay_window", f"{what}'s run {i + 1}") for i, r in enumerate(runs)]
    raw_spans = [span(r, "raw_window", f"{what}'s run {i + 1}") for i, r in enumerate(runs)]
    med = doc.get("median")
    if not isinstance(med, dict):
        die(f"cannot parse {a.log}.out: bench selfplay's document has no 'median'")
    v = {k: field(med, k, f"{what}'s median") for k in
         ("positions_per_second", "evals_per_second", "raw_evals_per_second", "efficiency")}
    busy, _ = windows(samples, play_spans)
    busy_raw, _ = windows(samples, raw_spans)
    start, end = step_span(a.steps, name)
    _, mem = window(samples, start, end)
    row = {"stage": "selfplay", "step": name, "bench": "selfplay", "net": a.net,
           "precision": a.precision, "batch": a.batch, "threads": threads, "games": games,
           "raw evals/s": v["raw_evals_per_second"], "evals/s": v["evals_per_second"],
           "positions/s": v["positions_per_second"], "eval ÷ raw": v["efficiency"],
           "busy %": busy, "busy % (raw)": busy_raw, "mem MiB": mem,
           "seconds": round(end - start, 1)}
    append_row(a.rows, row)
    print(f"  selfplay {a.precision} {threads} threads: {row['positions/s']:.1f} positions/s, "
          f"{row['evals/s']:.0f} evals/s, efficiency {row['eval ÷ raw']:.3f}, busy "
          f"{fmt(busy)}% (raw {fmt(busy_raw)}%)")


# ---------------------------------------------------------------- bench train


def cmd_train(a):
    name = os.path.basename(a.log)
    doc = read_bench_json(a.log, "train")
    samples = read_samples(a.samples)
    one = [r for r in doc.get("rows") or [] if isinstance(r, dict) and r.get("ranks") == 1
           and not r.get("independent")]
    if len(one) != 1:
        die(f"cannot parse {a.log}.out: bench train's document has no row for 1 rank")
    what = f"{a.log}.out: bench train's row for 1 rank"
    row = {"stage": "train", "step": name, "batch": a.batch, "precision": a.precision,
           "chessrl samples/s": field(one[0], "samples_per_second_per_rank", what),
           "chessrl step ms": field(one[0], "step_ms", what),
           "data wait %": 100 * field(one[0], "data_wait_share", what),
           "python": None, "python samples/s": None, "python step ms": None,
           "C++ ÷ Python": None, "note": ""}
    yardstick = doc.get("yardstick")
    if isinstance(yardstick, dict):
        what = f"{a.log}.out: bench train's yardstick"
        row["python"] = str(yardstick.get("torch_version", "?"))
        row["python samples/s"] = field(yardstick, "samples_per_second", what)
        row["python step ms"] = field(yardstick, "step_ms", what)
        row["C++ ÷ Python"] = round(row["chessrl samples/s"] / row["python samples/s"], 2) \
            if row["python samples/s"] > 0 else None
        if yardstick.get("same_network") is not True:
            row["note"] = (f"parameter counts differ: C++ {doc.get('parameters')}, Python "
                           f"{yardstick.get('parameters')}")
    elif isinstance(doc.get("yardstick_skipped"), str):
        row["note"] = "Python yardstick skipped: " + doc["yardstick_skipped"]
    else:
        die(f"cannot parse {a.log}.out: neither 'yardstick' nor 'yardstick_skipped'")
    start, end = step_span(a.steps, name)
    row["busy %"], row["mem MiB"] = window(samples, start, end)
    row["seconds"] = round(end - start, 1)
    append_row(a.rows, row)
    print(f"  train batch {a.batch} {a.precision}: chessrl {row['chessrl samples/s']:.0f} "
          f"samples/s, PyTorch {fmt(row['python samples/s'], 0)} samples/s")


# ---------------------------------------------------------------- chessrl local

WATCHED = ["chessrl_selfplay_games_total", "chessrl_selfplay_positions_total",
           "chessrl_trainer_step", "chessrl_trainer_samples_total", "chessrl_trainer_paused",
           "chessrl_model_version", "chessrl_replay_positions",
           "chessrl_replay_positions_stored_total", "chessrl_eval_matches_total"]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
        text = reply.read().decode()
    sums = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        key, _, value = line.rpartition(" ")
        metric = key.split("{", 1)[0]
        if metric in WATCHED:
            try:
                sums[metric] = sums.get(metric, 0.0) + float(value)
            except ValueError:
                pass
    return sums


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmd_watch(a):
    """Scrapes every child of `chessrl local` every --every seconds until --seconds
    after its start (the shutdown's scrapes would miss children), then waits for it
    to exit; SIGINT after --seconds + --grace, SIGKILL 90 s later."""
    state_path = os.path.join(a.dir, "local.json")
    started = a.started
    stop_scraping = started + a.seconds - 1
    last_state = None
    last_print = time.time()
    with open(a.out, "w") as out:
        while alive(a.pid):
            now = time.time()
            if now > started + a.seconds + a.grace:
                print(f"gpu-check-helper: chessrl local still running {a.grace} s after its "
                      f"--duration: SIGINT", file=sys.stderr)
                os.kill(a.pid, signal.SIGINT)
                deadline = time.time() + 90
                while alive(a.pid) and time.time() < deadline:
                    time.sleep(0.5)
                if alive(a.pid):
                    os.kill(a.pid, signal.SIGKILL)
                sys.exit(1)
            if now < stop_scraping:
                try:
                    with open(state_path) as f:
                        state = json.load(f)
                except (OSError, ValueError):
                    state = None
                if state and state.get("ready"):
                    last_state = state
                    record = {"t": now, "restarts": {}, "children": {}, "complete": True}
                    for child in state["children"]:
                        record["restarts"][child["name"]] = child.get("restarts", 0)
                        if "metrics_port" not in child:
                            continue
                        try:
                            record["children"][child["name"]] = scrape(child["metrics_port"])
                        except OSError:
                            record["complete"] = False
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                    if now - last_print >= 30:
                        last_print = now
                        games = total(record, "selfplay", "chessrl_selfplay_games_total")
                        step = total(record, "trainer-0", "chessrl_trainer_step")
                        print(f"    {now - started:.0f} s of {a.seconds:.0f}: {games:.0f} games, "
                              f"trainer step {step:.0f}", flush=True)
                    time.sleep(a.every)
                    continue
            time.sleep(0.5)
    if last_state is None:
        print("gpu-check-helper: chessrl local never became ready (no local.json with "
              "\"ready\": true)", file=sys.stderr)


def total(record, prefix, metric):
    return sum(c.get(metric, 0.0) for name, c in record["children"].items()
               if name.startswith(prefix))


def cmd_loop(a):
    rows = []

    def add(figure, value, detail=""):
        rows.append({"stage": "loop", "figure": figure, "value": value, "detail": detail})

    with open(a.stdout) as f:
        out = f.read().splitlines()
    status = [l for l in out if re.match(r"^\d+:\d\d:\d\d \| ", l)]
    if not status:
        die(f"cannot parse {a.stdout}: no status line ('H:MM:SS | games ...')")
    final = status[-1]
    games_line = [l for l in out if re.match(r"^[\d,]+ self-play games: ", l)]
    m = re.search(r"\| games ([\d,]+) \(([\d,]+)/h", final)
    if not m:
        die(f"cannot parse the final status line: no 'games N (N/h' in '{final}'")
    with open(os.path.join(a.out, "status.txt"), "w") as f:
        f.write(final + "\n" + (games_line[0] + "\n" if games_line else ""))

    records = []
    with open(a.metrics) as f:
        records = [json.loads(l) for l in f if l.strip()]
    complete = [r for r in records if r["complete"] and "trainer-0" in r["children"]
                and any(n.startswith("selfplay") for n in r["children"])]
    if len(complete) < 2:
        die(f"cannot use {a.metrics}: fewer than 2 scrapes that reached every child")
    first, last = complete[0], complete[-1]
    span = last["t"] - first["t"]
    samples = read_samples(a.samples)
    busy, mem = window(samples, first["t"], last["t"])

    def rate(metric, prefix, since=None, per=1.0):
        a0 = since or first
        dt = last["t"] - a0["t"]
        return (total(last, prefix, metric) - total(a0, prefix, metric)) * per / dt if dt > 0 else 0.0

    recent = [r for r in complete if r["t"] >= last["t"] - 60]
    recent_first = recent[0] if len(recent) >= 2 else first
    add("run length, s (chessrl local --duration)", a.seconds)
    add("measured span, s", round(span, 1), "from the first to the last scrape that reached every child")
    add("games", total(last, "selfplay", "chessrl_selfplay_games_total"), "at the last scrape")
    add("games per hour (over the span)", round(rate("chessrl_selfplay_games_total", "selfplay",
                                                      per=3600)))
    add("games per hour (last 60 s)", round(rate("chessrl_selfplay_games_total", "selfplay",
                                                  since=recent_first, per=3600)))
    add("self-play positions/s",
        round(rate("chessrl_selfplay_positions_total", "selfplay"), 1), "every move played")
    add("positions stored/s",
        round(rate("chessrl_replay_positions_stored_total", "replay"), 1),
        "the replay service's (recorded moves)")
    add(f"{a.busy_name} busy %", busy, "the median over the span")
    add(f"{a.busy_name} memory used, MiB", mem, "the most over the span")
    # The trainer from its first step on: before it, it waits for --min-window.
    stepping = [r for r in complete
                if r["children"]["trainer-0"].get("chessrl_trainer_step", 0) > 0]
    step = total(last, "trainer-0", "chessrl_trainer_step")
    add("trainer steps", step, "at the last scrape")
    if len(stepping) >= 2:
        s0 = stepping[0]
        dt = last["t"] - s0["t"]
        since = "from the first scrape with a step on"
        add("trainer steps/s", round((step - total(s0, "trainer-0", "chessrl_trainer_step")) / dt, 2),
            since)
        samples_trained = (total(last, "trainer-0", "chessrl_trainer_samples_total") -
                           total(s0, "trainer-0", "chessrl_trainer_samples_total"))
        add("trainer samples/s", round(samples_trained / dt), since)
        paused = [r for r in stepping
                  if r["children"]["trainer-0"].get("chessrl_trainer_paused", 0) > 0]
        add("trainer paused, %", round(100.0 * len(paused) / len(stepping)),
            "share of those scrapes that found it paused (--max-reuse, --min-window)")
    else:
        add("trainer steps/s", "n/a", "fewer than 2 scrapes while it stepped")
    add("model versions published", total(last, "trainer-0", "chessrl_model_version"))
    restarts = last.get("restarts", {})
    add("child restarts", sum(restarts.values()),
        ", ".join(f"{k} {v}" for k, v in restarts.items() if v) or "")

    # The evaluator's results, one JSON line per match (run/evaluator/results.jsonl).
    results_path = os.path.join(a.run_dir, "evaluator", "results.jsonl")
    matches = []
    if os.path.exists(results_path):
        with open(results_path) as f:
            matches = [json.loads(l) for l in f if l.strip()]
    add("evaluator matches", len(matches))
    add("evaluator versions evaluated", len({m["candidate"] for m in matches}))
    add("evaluator promotions (new best)",
        sum(1 for m in matches if m.get("opponent") == "best" and m.get("promoted")))
    for opponent in sorted({m["opponent"] for m in matches if m["opponent"] != "best"}):
        mine = [m for m in matches if m["opponent"] == opponent]
        latest = mine[-1]
        w, d, l = (sum(m[k] for m in mine) for k in ("wins", "draws", "losses"))
        score = (w + 0.5 * d) / (w + d + l) if w + d + l else 0
        add(f"evaluator vs {opponent}: Elo of the latest version evaluated (v{latest['candidate']})",
            f"{latest['elo']:+.0f}", f"±{(latest['upper'] - latest['lower']) / 2:.0f} (95%), "
            f"{latest['games']} games")
        add(f"evaluator vs {opponent}: all matches score", round(score, 3),
            f"+{w} ={d} -{l}")
    for r in rows:
        append_row(a.rows, r)
    print(f"  final status line: {final}")
    # A loop that made no game or took no training step is a failed check, whatever
    # its figures (the table above is written first, so it shows how far it got).
    problems = []
    if not total(last, "selfplay", "chessrl_selfplay_games_total"):
        problems.append("no self-play game was played")
    if not total(last, "replay", "chessrl_replay_positions_stored_total"):
        problems.append("replay stored no position")
    if not step:
        problems.append("the trainer took no step")
    if problems:
        die("the loop did not run: " + "; ".join(problems), code=1)


# ---------------------------------------------------------------- the summary


def fmt(value, digits=None):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if digits is None and float(value).is_integer():
        digits = 0
    if digits is None:
        digits = 0 if abs(value) >= 100 else (1 if abs(value) >= 10 else 3 if abs(value) < 1 else 2)
    return f"{value:,.{digits}f}"


def table(header, rows):
    aligned = ["---" if h in ("step", "bench", "precision", "figure", "note", "net", "detail")
               else "---:" for h in header]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(aligned) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def cmd_table(a):
    rows = []
    if os.path.exists(a.rows):
        with open(a.rows) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    busy = a.busy_name
    dash = "—"
    lines = [f"## gpu-check {a.stage}{' --cpu' if a.cpu else ''}: {a.machine}", ""]
    if a.versions and os.path.exists(a.versions):
        with open(a.versions) as f:
            built = [l.strip() for l in f if l.strip()]
        if built:
            lines += ["Built and run with:", ""] + [f"- {l}" for l in built] + [""]
    if a.note:
        lines += [a.note, ""]
    if a.stage == "selfplay":
        header = ["bench", "net", "precision", "batch", "threads", "games", "raw evals/s", "evals/s",
                  "positions/s", "eval ÷ raw", f"{busy} busy %", f"{busy} busy % (raw)",
                  f"{busy} mem MiB", "seconds"]
        body = []
        for r in rows:
            body.append([r["bench"], r["net"], r["precision"], str(r["batch"]),
                         dash if r["threads"] is None else str(r["threads"]),
                         str(r["games"]) if r.get("games") else dash,
                         fmt(r["raw evals/s"], 0), fmt(r["evals/s"], 0),
                         dash if r["bench"] == "nn" else fmt(r["positions/s"], 1),
                         fmt(r["eval ÷ raw"], 3), fmt(r["busy %"], 0),
                         dash if r["bench"] == "nn" else fmt(r["busy % (raw)"], 0),
                         fmt(r["mem MiB"], 0),
                         dash if r["seconds"] is None else fmt(r["seconds"], 1)])
        text = table(header, body)
    elif a.stage == "train":
        header = ["batch", "precision", "chessrl samples/s", "step ms", "data wait %",
                  "PyTorch samples/s", "PyTorch step ms", "C++ ÷ Python", f"{busy} busy %",
                  f"{busy} mem MiB", "seconds"]
        body, notes = [], []
        for r in rows:
            body.append([str(r["batch"]), r["precision"], fmt(r["chessrl samples/s"], 0),
                         fmt(r["chessrl step ms"], 1), fmt(r["data wait %"], 1),
                         fmt(r["python samples/s"], 0), fmt(r["python step ms"], 1),
                         fmt(r["C++ ÷ Python"], 2), fmt(r["busy %"], 0), fmt(r["mem MiB"], 0),
                         fmt(r["seconds"], 1)])
            if r["note"]:
                notes.append(f"batch {r['batch']} {r['precision']}: {r['note']}")
        versions = sorted({r["python"] for r in rows if r["python"]})
        if versions:
            lines += [f"PyTorch (Python yardstick, train_yardstick.py): {', '.join(versions)}", ""]
        lines += [n for n in notes] + ([""] if notes else [])
        text = table(header, body)
    else:
        status = os.path.join(a.out, "status.txt")
        if os.path.exists(status):
            with open(status) as f:
                lines += ["Final status line of chessrl local:", "", "```", f.read().rstrip(),
                          "```", ""]
        body = [[r["figure"], fmt(r["value"]) if not isinstance(r["value"], str) else r["value"],
                 r["detail"]] for r in rows]
        text = table(["figure", "value", "detail"], body)
    if a.status:
        lines += [a.status, ""]
    lines.append(text if rows else "(no figure completed)")
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def cmd_machine(a):
    cores = os.cpu_count()
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    text = f"{cores} cores ({model})" if model else f"{cores} cores"
    if a.mode == "gpu":
        try:
            gpu = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=name,memory.total,driver_version",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
            name, memory, driver = [x.strip() for x in gpu.split(",")]
            text = f"{name} ({int(float(memory)):,} MiB, driver {driver}), {text}"
        except (OSError, ValueError, subprocess.SubprocessError):
            text = f"GPU unknown (nvidia-smi failed), {text}"
    print(text)


def cmd_unpack(a):
    """Unpacks a .tar.xz with Python's tarfile (its lzma module), for a machine without
    xz; only what lies inside DIR is written."""
    import tarfile
    with tarfile.open(a.tarball, "r:xz") as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(a.dir, filter="tar")
        else:
            root = os.path.realpath(a.dir)
            for m in t.getmembers():
                target = os.path.realpath(os.path.join(root, m.name))
                if os.path.commonpath([root, target]) != root:
                    die(f"{a.tarball}: {m.name} would land outside {a.dir}")
            t.extractall(a.dir)


def find_nvcc():
    """nvcc: on PATH, else the newest /usr/local/cuda*/bin, else the pip nvidia-cuda-nvcc
    wheel beside torch (nvidia/cuda_nvcc/bin or nvidia/cu13/bin); None when nowhere."""
    found = shutil.which("nvcc")
    if found:
        return found
    def release(path):
        m = re.search(r"cuda-([0-9.]+)", path)
        return [int(x) for x in m.group(1).split(".") if x] if m else [10 ** 6]
    dirs = sorted((os.path.join(d, "bin") for d in
                   [os.path.join("/usr/local", e) for e in os.listdir("/usr/local")
                    if e == "cuda" or e.startswith("cuda-")] if os.path.isdir("/usr/local")),
                  key=release, reverse=True)
    try:
        out = subprocess.run([sys.executable, "-c", "import os, torch; print(os.path.dirname("
                              "os.path.dirname(torch.__file__)))"], capture_output=True,
                             text=True, timeout=120)
        if out.returncode == 0:
            site = out.stdout.strip()
            dirs += [os.path.join(site, "nvidia", "cuda_nvcc", "bin"),
                     os.path.join(site, "nvidia", "cu13", "bin")]
    except (OSError, subprocess.SubprocessError):
        pass
    for d in dirs:
        if os.access(os.path.join(d, "nvcc"), os.X_OK):
            return os.path.join(d, "nvcc")
    return None


def nvcc_release(nvcc):
    try:
        text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "does not run"
    m = re.search(r"release ([0-9.]+)", text)
    return m.group(1) if m else "version unknown"


def cmd_nvcc(a):
    """Prints where nvcc is and its release (`PATH RELEASE`); exit 1 when nowhere."""
    nvcc = find_nvcc()
    if not nvcc:
        sys.exit(1)
    print(nvcc, nvcc_release(nvcc))


def cmd_versions(a):
    """What a build and its run use: configure's facts (<build>/chessrl-configure.txt:
    Protocol Buffers, LibTorch's own copy, the CUDA switch, nccl.h), and on a GPU
    machine PyTorch's versions (CUDA, cuDNN, the NCCL library torch loads) and nvcc."""
    lines = []
    if a.mode == "gpu":
        probe = ("import torch, sys\n"
                 "nccl = torch.cuda.nccl.version() if torch.cuda.is_available() else None\n"
                 "nccl = '.'.join(map(str, nccl)) if isinstance(nccl, tuple) else nccl\n"
                 "print(f'PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
                 "{torch.backends.cudnn.version()}, NCCL library {nccl})')\n")
        try:
            out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                 timeout=120)
            lines.append(out.stdout.strip() if out.returncode == 0 else
                         f"PyTorch: python3 could not tell ({out.stderr.strip().splitlines()[-1:]})")
        except (OSError, subprocess.SubprocessError) as e:
            lines.append(f"PyTorch: python3 could not tell ({e})")
        nvcc = shutil.which("nvcc")
        if nvcc:
            lines.append(f"nvcc: {nvcc} ({nvcc_release(nvcc)})")
    if a.bundle:
        lines.append(f"dependency bundle: {a.bundle}")
    facts = os.path.join(a.build_dir, "chessrl-configure.txt")
    if os.path.exists(facts):
        with open(facts) as f:
            lines += [l.strip().removeprefix("chessrl: ") for l in f if l.strip()]
    else:
        lines.append(f"(no {facts}: the build directory was configured before chess-rl wrote it)")
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--mode", choices=["gpu", "cpu"], required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--period", type=float, default=0.1)
    s.add_argument("--gpu", type=int, default=0)
    s = sub.add_parser("run")
    s.add_argument("--log", required=True)
    s.add_argument("--steps", required=True)
    s.add_argument("--json", action="store_true", help="stdout is a JSON document: not echoed")
    s.add_argument("command", nargs=argparse.REMAINDER)
    for name in ("nn", "selfplay", "train"):
        s = sub.add_parser(name)
        s.add_argument("--log", required=True)
        s.add_argument("--samples", required=True)
        s.add_argument("--steps", required=True)
        s.add_argument("--rows", required=True)
        s.add_argument("--precision", required=True)
        if name == "nn":
            s.add_argument("--batches", type=lambda x: [int(b) for b in x.split(",")], required=True)
        else:
            s.add_argument("--batch", type=int, required=True)
        if name == "selfplay":
            s.add_argument("--net", required=True)
            s.add_argument("--repeat", type=int, required=True)
    s = sub.add_parser("watch-local")
    s.add_argument("--dir", required=True)
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--started", type=float, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--every", type=float, default=5)
    s.add_argument("--grace", type=float, default=180)
    s.add_argument("--out", required=True)
    s = sub.add_parser("loop")
    s.add_argument("--stdout", required=True)
    s.add_argument("--metrics", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--run-dir", required=True)
    s.add_argument("--rows", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--busy-name", required=True)
    s = sub.add_parser("table")
    s.add_argument("--stage", required=True)
    s.add_argument("--rows", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--machine", default="")
    s.add_argument("--busy-name", required=True)
    s.add_argument("--cpu", action="store_true")
    s.add_argument("--note", default="")
    s.add_argument("--status", default="")
    s.add_argument("--versions", default="", help="a file of lines to print under the title")
    s = sub.add_parser("machine")
    s.add_argument("--mode", choices=["gpu", "cpu"], required=True)
    sub.add_parser("nvcc")
    s = sub.add_parser("unpack")
    s.add_argument("tarball")
    s.add_argument("dir")
    s = sub.add_parser("versions")
    s.add_argument("--mode", choices=["gpu", "cpu"], required=True)
    s.add_argument("--build-dir", required=True)
    s.add_argument("--bundle", default="")
    a = p.parse_args()
    {"sample": cmd_sample, "run": cmd_run, "nn": cmd_nn, "selfplay": cmd_selfplay,
     "train": cmd_train, "watch-local": cmd_watch, "loop": cmd_loop, "table": cmd_table,
     "machine": cmd_machine, "versions": cmd_versions, "unpack": cmd_unpack,
     "nvcc": cmd_nvcc}[a.cmd](a)


if __name__ == "__main__":
    main()
