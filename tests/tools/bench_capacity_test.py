#!/usr/bin/env python3
"""`chessrl bench capacity --quick`, the smoke run of the capacity benchmark: it must
exit 0 and print every per-unit constant as a finite number above zero, the capacity
model's four rows (10 to 10,000 GPUs) with shard counts that never fall as N grows,
the scaling table's rows for 1, 2 and 4 shards, and the window memory summary.

    bench_capacity_test.py CHESSRL
"""

import math
import re
import subprocess
import sys

failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def number(text):
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def main():
    chessrl = sys.argv[1]
    run = subprocess.run([chessrl, "bench", "capacity", "--quick"], capture_output=True,
                         text=True, timeout=120)
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    check("exit status 0 (got %d)" % run.returncode, run.returncode == 0)
    out = run.stdout

    constants = {}
    for name, value in re.findall(r"^\| (c_[a-z_]+(?: always)?|AOF(?: always)?|EVALSHA) \|[^|]*\| "
                                  r"([-0-9.e+inf]+) \(", out, re.M):
        constants[name] = number(value)
    for name in ["c_in", "c_in always", "EVALSHA", "c_s", "c_m", "AOF", "AOF always", "c_val",
                 "c_push", "c_sample", "c_parse"]:
        value = constants.get(name)
        check("constant %s is a finite number > 0 (got %r)" % (name, value),
              value is not None and value > 0)

    holds = re.search(r"GPUs one Redis holds \(appendfsync everysec\): .* = ([0-9.]+)", out)
    check("the GPUs one Redis holds is printed and > 0",
          holds is not None and number(holds.group(1)) and number(holds.group(1)) > 0)

    model = re.findall(r"^\| (10|100|1000|10000) \| ([0-9]+) \| ([0-9]+) \| ([0-9.]+) \| ([0-9]+) "
                       r"\| ([0-9]+) \|", out, re.M)
    check("the capacity model has rows for 10, 100, 1000 and 10000 GPUs (got %s)"
          % [row[0] for row in model], [row[0] for row in model] == ["10", "100", "1000", "10000"])
    shards = [int(row[4]) for row in model]
    check("shards never fall as N grows and are >= 1 (got %s)" % shards,
          len(shards) == 4 and shards[0] >= 1 and shards == sorted(shards))
    ingest = [int(row[1]) for row in model]
    check("ingest is 1111 positions/s per GPU (got %s)" % ingest,
          ingest == [11110, 111100, 1111000, 11110000])

    scaling = re.findall(r"^\| ([124]) \| ([0-9.]+) \(.*\) \| ([0-9.]+) \(.*\) \| ([0-9.]+) \(",
                         out, re.M)
    check("the scaling table has 1, 2 and 4 shards (got %s)" % [row[0] for row in scaling],
          [row[0] for row in scaling] == ["1", "2", "4"])
    check("every scaling row has positions/s, cores and us/position > 0",
          all(number(v) and number(v) > 0 for row in scaling for v in row[1:]))
    ratio = re.search(r"^2 shards vs 1: ([0-9.]+) ", out, re.M)
    check("the 2-vs-1 shard ratio is printed and > 0",
          ratio is not None and number(ratio.group(1)) > 0)

    memory = re.search(r"used_memory per position .*: mean ([0-9.]+) bytes", out)
    check("used_memory per position is printed and > 0",
          memory is not None and number(memory.group(1)) > 0)
    check("the 4-vs-1 memory ratio is printed",
          re.search(r"^4 shards of 1/4 the window vs 1 shard of the whole: [0-9.]+x", out, re.M)
          is not None)

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
