#!/usr/bin/env python3
"""scripts/gpu-check.sh STAGE --cpu --build-dir BUILD_DIR, with OUT in a temporary
directory: it must exit 0 and its summary table (OUT/summary.md, also printed last) must
hold the rows of every step, with a number wherever a figure is expected. The table
is kept as BUILD_DIR/gpu-check-STAGE.md, which CI prints.

    gpu_check_test.py SCRIPT STAGE BUILD_DIR          # STAGE: selfplay, train or loop
    gpu_check_test.py SCRIPT parse-failure BUILD_DIR  # a bench whose figures changed

parse-failure runs the selfplay stage with a fake chessrl (GPU_CHECK_CHESSRL) that
prints bench nn's JSON document (--json) with a figure missing from its row: the script
must stop at that step with exit status 1, name it, say why, and still print the table
of what completed.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def last_table(text):
    """The header and rows of the last markdown table in text."""
    blocks, block = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            blocks.append(block)
            block = []
    if block:
        blocks.append(block)
    if not blocks:
        return [], []
    header, _, *rows = blocks[-1]
    return header, [dict(zip(header, r)) for r in rows]


NUMBER = re.compile(r"^[-+]?[\d,]+(\.\d+)?$")


def numeric(value):
    return bool(NUMBER.match(value or ""))


def value(cell):
    return float(cell.replace(",", ""))


def run(script, stage, build_dir, out, env_extra=None):
    env = dict(os.environ, OUT=out, **(env_extra or {}))
    start = time.time()
    proc = subprocess.run(["bash", script, stage, "--cpu", "--build-dir", build_dir], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    print(f"({stage} --cpu took {time.time() - start:.0f} s)")
    return proc


def expect_numbers(rows, row_name, columns):
    for r in rows:
        for c in columns:
            check(f"{row_name(r)}: '{c}' is a number ({r.get(c)!r})", numeric(r.get(c)))


def test_selfplay(header, rows):
    busy = [h for h in header if h.endswith("busy %")]
    check("a CPU busy % column", busy == ["CPU busy %"])
    nn = [r for r in rows if r.get("bench") == "nn"]
    sp = [r for r in rows if r.get("bench") == "selfplay"]
    check("bench nn rows for batch 16 and 64", sorted(r["batch"] for r in nn) == ["16", "64"])
    check("bench selfplay rows for 1 and 2 threads", sorted(r["threads"] for r in sp) == ["1", "2"])
    name = lambda r: f"{r['bench']} batch {r['batch']} threads {r['threads']}"  # noqa: E731
    expect_numbers(nn, name, ["raw evals/s", "evals/s", "eval ÷ raw", "CPU busy %",
                              "CPU mem MiB", "seconds"])
    expect_numbers(sp, name, ["games", "raw evals/s", "evals/s", "positions/s", "eval ÷ raw",
                              "CPU busy %", "CPU busy % (raw)", "CPU mem MiB", "seconds"])
    for r in nn + sp:
        if numeric(r.get("evals/s")):
            check(f"{name(r)}: evals/s above 0", value(r["evals/s"]) > 0)
    for r in sp:
        if numeric(r.get("positions/s")):
            check(f"{name(r)}: positions/s above 0", value(r["positions/s"]) > 0)


def test_train(header, rows):
    check("train rows for batch 64 and 256, fp32",
          sorted((r["batch"], r["precision"]) for r in rows) == [("256", "fp32"), ("64", "fp32")])
    expect_numbers(rows, lambda r: f"train batch {r['batch']}",
                   ["chessrl samples/s", "step ms", "data wait %", "PyTorch samples/s",
                    "PyTorch step ms", "C++ ÷ Python", "CPU busy %", "CPU mem MiB", "seconds"])


def test_loop(header, rows):
    by = {r["figure"]: r["value"] for r in rows}
    for figure in ["games", "games per hour (over the span)", "self-play positions/s",
                   "positions stored/s", "CPU busy %", "CPU memory used, MiB", "trainer steps",
                   "trainer steps/s", "trainer samples/s", "model versions published",
                   "evaluator matches"]:
        check(f"loop: '{figure}' is a number ({by.get(figure)!r})", numeric(by.get(figure)))
    for figure in ["games", "self-play positions/s", "trainer steps"]:
        if numeric(by.get(figure)):
            check(f"loop: '{figure}' above 0", value(by[figure]) > 0)


def main():
    script, stage, build_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix=f"gpu-check-{stage}-") as out:
        if stage == "parse-failure":
            fake = os.path.join(out, "fake-chessrl")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho '{\"bench\": \"nn\", \"rows\": [{\"net\": \"2x16\", "
                        "\"batch\": 16, \"raw_evals_per_second\": 1, \"efficiency\": 1, "
                        "\"started_at\": 0, \"ended_at\": 1}]}'\n")
            os.chmod(fake, 0o755)
            proc = run(script, "selfplay", build_dir, os.path.join(out, "out"),
                       {"GPU_CHECK_CHESSRL": fake})
            check("exit status 1", proc.returncode == 1)
            check("stderr says which figure of bench nn's JSON it cannot read",
                  "cannot parse" in proc.stderr and
                  "bench nn's row for batch 16: no number 'evals_per_second'" in proc.stderr)
            check("stderr names the step",
                  "FAILED at step 2/4 (bench nn 2x16 fp32, batch 16,64)" in proc.stderr)
            summary = os.path.join(out, "out", "summary.md")
            check("summary.md written", os.path.exists(summary))
            text = open(summary).read() if os.path.exists(summary) else ""
            check("the summary says where it failed", "**FAILED** at step 2/4" in text)
            check("the summary is printed last", proc.stdout.rstrip().endswith(text.rstrip()))
        else:
            proc = run(script, stage, build_dir, out)
            check("exit status 0", proc.returncode == 0)
            summary = os.path.join(out, "summary.md")
            check("summary.md written", os.path.exists(summary))
            text = open(summary).read() if os.path.exists(summary) else ""
            check("the summary is printed last", bool(text) and
                  proc.stdout.rstrip().endswith(text.rstrip()))
            check("the summary says it completed", "Completed " in text)
            header, rows = last_table(text)
            check("a table with rows", bool(rows))
            for r in rows:
                check(f"no empty cell in {list(r.values())[:3]}", all(v != "" for k, v in r.items()
                                                                      if k != "detail"))
            {"selfplay": test_selfplay, "train": test_train, "loop": test_loop}[stage](header, rows)
            if text:
                with open(os.path.join(build_dir, f"gpu-check-{stage}.md"), "w") as f:
                    f.write(text)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
