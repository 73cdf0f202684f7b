#!/usr/bin/env python3
"""`chessrl bench NAME --json`, briefly: it must exit 0 and its whole stdout must be one
JSON document holding the table's figures (every key below, a finite number where a
figure is expected, windows as [start, end] in Unix seconds around the run).

    bench_json_test.py CHESSRL NAME [MORE ARGUMENTS]   # NAME: nn, selfplay, train, ...
"""

import json
import math
import subprocess
import sys
import time

failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def number(doc, key, where):
    value = doc.get(key) if isinstance(doc, dict) else None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    check(f"{where}: '{key}' is a number ({value!r})", ok)
    return value if ok else None


def positive(doc, keys, where):
    for key in keys:
        value = number(doc, key, where)
        if value is not None:
            check(f"{where}: '{key}' above 0", value > 0)


def within(value, start, end, where):
    check(f"{where}: {value!r} within the run [{start:.1f}, {end:.1f}]",
          value is not None and start - 1 <= value <= end + 1)


def window(doc, key, start, end, where):
    value = doc.get(key) if isinstance(doc, dict) else None
    ok = isinstance(value, list) and len(value) == 2 and all(
        isinstance(x, (int, float)) for x in value) and value[0] <= value[1]
    check(f"{where}: '{key}' is a window [start, end] ({value!r})", ok)
    if ok:
        within(value[0], start, end, f"{where} '{key}' start")
        within(value[1], start, end, f"{where} '{key}' end")


def test_nn(doc, start, end):
    check("bench is 'nn'", doc.get("bench") == "nn")
    positive(doc, ["workers", "repeat", "seconds"], "nn")
    check("a libtorch version and a backend", bool(doc.get("libtorch")) and bool(doc.get("backend")))
    rows = doc.get("rows") or []
    check("rows for batch 1 and 4", sorted(r.get("batch") for r in rows) == [1, 4])
    for r in rows:
        where = f"nn batch {r.get('batch')}"
        check(f"{where}: net 1x8", r.get("net") == "1x8")
        positive(r, ["raw_evals_per_second", "ms_per_batch", "cpu_ms_per_batch", "callers",
                     "evals_per_second", "mean_batch", "p50_latency_ms", "efficiency"], where)
        within(number(r, "started_at", where), start, end, f"{where} started_at")
        within(number(r, "ended_at", where), start, end, f"{where} ended_at")
    positive(doc.get("encoding") or {}, ["prepare_ns", "expand_ns", "chess_features_ns",
                                         "expand_with_features_ns", "planes_with_features"],
             "nn encoding")


def test_selfplay(doc, start, end):
    check("bench is 'selfplay'", doc.get("bench") == "selfplay")
    positive(doc, ["games", "threads", "leaves_per_search", "visits", "workers", "max_batch",
                   "repeat", "seconds"], "selfplay")
    runs = doc.get("runs") or []
    check("two runs, numbered 1 and 2", [r.get("run") for r in runs] == [1, 2])
    figures = ["positions_per_second", "playouts_per_second", "evals_per_second", "mean_batch",
               "raw_evals_per_second", "efficiency"]
    for r in runs:
        where = f"selfplay run {r.get('run')}"
        positive(r, figures, where)
        window(r, "selfplay_window", start, end, where)
        window(r, "raw_window", start, end, where)
    positive(doc.get("median") or {}, figures, "selfplay median")


def test_train(doc, start, end):
    check("bench is 'train'", doc.get("bench") == "train")
    positive(doc, ["parameters", "batch", "threads_per_rank", "steps", "repeat", "cores"], "train")
    check("the ranks' weights agreed", doc.get("hashes_equal") is True)
    rows = doc.get("rows") or []
    check("rows for 1 and 2 ranks, and 2 unconnected",
          [(r.get("ranks"), r.get("independent")) for r in rows] ==
          [(1, False), (2, False), (2, True)])
    for r in rows:
        where = f"train {r.get('ranks')} rank(s){' unconnected' if r.get('independent') else ''}"
        positive(r, ["samples_per_second_per_rank", "samples_per_second", "step_ms",
                     "wall_ms_per_step", "efficiency"], where)
        for key in ("allreduce_share", "data_wait_share"):
            value = number(r, key, where)
            check(f"{where}: '{key}' a share in [0, 1]", value is not None and 0 <= value <= 1)
    check("no yardstick: --python off, said why",
          "yardstick" not in doc and isinstance(doc.get("yardstick_skipped"), str))


def test_sample(doc, start, end):
    check("bench is 'sample'", doc.get("bench") == "sample")
    positive(doc, ["window", "plies", "batch", "seconds", "repeat"], "sample")
    rows = doc.get("rows") or []
    check("rows for 1, 2, 4 and 8 calls in flight",
          [r.get("inflight") for r in rows] == [1, 2, 4, 8])
    for r in rows:
        where = f"sample {r.get('inflight')} in flight"
        positive(r, ["examples_per_second", "min", "max", "vs_one"], where)
        if None not in (r.get("min"), r.get("examples_per_second"), r.get("max")):
            check(f"{where}: min <= median <= max",
                  r["min"] <= r["examples_per_second"] <= r["max"])
    positive(doc.get("decode") or {}, ["positions", "examples_per_second",
                                       "examples_per_cpu_second",
                                       "decode_position_per_cpu_second"], "sample decode")


def test_replay(doc, start, end):
    check("bench is 'replay'", doc.get("bench") == "replay")
    positive(doc, ["clients", "seconds", "repeat", "positions_per_game", "window"], "replay")
    positive(doc.get("ingest") or {}, ["games_per_call", "games_per_second",
                                       "positions_per_second", "redis_set_per_second"],
             "replay ingest")
    positive(doc.get("sample") or {}, ["positions_per_call", "positions_per_second",
                                       "calls_per_second", "redis_get_per_second"],
             "replay sample")
    positive(doc.get("window_after") or {}, ["games", "positions", "capacity"],
             "replay window after")


STOP_MEDIANS = ["games_flushed", "lost", "abandoned", "plies_per_game", "positions_per_game",
                "to_stopping_s", "stopping_to_done_s", "done_to_exit_s", "to_exit_s",
                "to_exit_min_s", "to_exit_max_s"]


def test_selfplay_stop(doc, start, end):
    check("bench is 'selfplay-stop'", doc.get("bench") == "selfplay-stop")
    check("ok, no problem", doc.get("ok") is True and doc.get("problems") == [])
    for scenario in ("full", "empty"):
        part = doc.get(scenario) or {}
        runs = part.get("runs") or []
        check(f"{scenario}: one run", len(runs) == 1)
        for r in runs:
            where = f"selfplay-stop {scenario} run {r.get('run')}"
            check(f"{where}: exit status 0", r.get("clean_exit") is True and
                  r.get("exit_status") == "exit status 0")
            check(f"{where}: none lost", r.get("lost") == 0)
            positive(r, ["to_stopping_s", "to_done_s", "to_exit_s"], where)
            pushed = number(r, "pushed", where)
            check(f"{where}: 'pushed' not negative", pushed is not None and pushed >= 0)
        for key in STOP_MEDIANS:
            number(part.get("median") or {}, key, f"selfplay-stop {scenario} median")
    # The full run's buffer is still full at SIGTERM (the bench runs it again when
    # self-play's own retry pushed it before SIGTERM landed), and the flush pushes it all.
    full = ((doc.get("full") or {}).get("runs") or [{}])[0]
    buffered, pushed = full.get("buffered"), full.get("pushed")
    check(f"full: 32 buffered at SIGTERM, the buffer full ({buffered}, full {full.get('full')})",
          buffered == 32 and full.get("full") == 32)
    check(f"full: the 32 pushed ({pushed})", pushed == 32)
    check(f"full: tries 1 to 5 ({full.get('tries')})", full.get("tries") in range(1, 6))
    positive((doc.get("full") or {}).get("median") or {},
             ["flush_s", "flush_games_per_second"], "selfplay-stop full median")


def test_selfplay_stop_sabotage(doc, start, end):
    check("bench is 'selfplay-stop'", doc.get("bench") == "selfplay-stop")
    problems = doc.get("problems") or []
    check("not ok, the kill named", doc.get("ok") is False and len(problems) == 1 and
          "killed by SIGKILL" in problems[0])
    runs = (doc.get("empty") or {}).get("runs") or [{}]
    check("the run's exit was not clean", runs[0].get("clean_exit") is False)


def test_swap(doc, start, end):
    check("bench is 'swap'", doc.get("bench") == "swap")
    positive(doc, ["concurrent", "threads", "visits", "workers", "seconds", "repeat"], "swap")
    modes = doc.get("modes") or {}
    check("modes overlap and drain", sorted(modes) == ["drain", "overlap"])
    ratios = ["games_ratio", "positions_ratio", "games_per_cpu_second_ratio", "mean_batch"]
    for name, mode in modes.items():
        runs = mode.get("runs") or []
        check(f"swap {name}: one run", len(runs) == 1)
        for r in runs:
            where = f"swap {name} run {r.get('run')}"
            positive(r, ["quiet_games_per_second", "game_seconds", "publish_interval_s",
                         "games_per_second", "switches"] + ratios, where)
            for key in ("drain_share", "overlap_share"):
                value = number(r, key, where)
                check(f"{where}: '{key}' a share in [0, 1]",
                      value is not None and 0 <= value <= 1)
        positive(mode.get("median") or {}, ratios + ["quiet_mean_batch"], f"swap {name} median")
        check(f"swap {name}: pass is true or false", isinstance(mode.get("pass"), bool))
    overlap = (modes.get("overlap") or {}).get("median") or {}
    check("overlap never drains", overlap.get("drain_share") == 0)


def spread(doc, key, where):
    """A figure of several runs: median, min and max finite and ordered, above 0."""
    value = doc.get(key) if isinstance(doc, dict) else None
    positive(value or {}, ["median", "min", "max"], f"{where} {key}")
    if isinstance(value, dict) and all(isinstance(value.get(k), (int, float))
                                       for k in ("min", "median", "max")):
        check(f"{where} {key}: min <= median <= max",
              value["min"] <= value["median"] <= value["max"])
        check(f"{where} {key}: its runs listed", isinstance(value.get("runs"), list) and
              len(value["runs"]) >= 1)


def test_capacity(doc, start, end):
    check("bench is 'capacity'", doc.get("bench") == "capacity")
    check("phase all", doc.get("phase") == "all")
    calibration = doc.get("calibration") or {}
    for key in ["c_in_us", "c_in_always_us", "evalsha_us", "c_s_us", "c_m_us_per_mb",
                "aof_bytes_per_position", "aof_always_bytes_per_position", "c_val_us",
                "c_push_us", "c_sample_us", "c_parse_us"]:
        spread(calibration, key, "capacity calibration")
    for fsync in ("everysec", "always"):
        spread(calibration.get("ingest_positions_per_second") or {}, fsync,
               "capacity ingest positions/s")
    model = doc.get("model") or {}
    positive(model.get("gpus_one_redis_holds") or {}, ["everysec", "always"],
             "capacity GPUs one Redis holds")
    rows = model.get("rows") or []
    check("model rows for 10 to 10,000 GPUs",
          [r.get("gpus") for r in rows] == [10, 100, 1000, 10000])
    check("ingest is 1111 positions/s per GPU",
          [r.get("ingest_positions_per_second") for r in rows] == [11110, 111100, 1111000,
                                                                   11110000])
    shards = [r.get("shards_everysec") for r in rows]
    check(f"shards never fall as N grows, at least 1 ({shards})",
          all(isinstance(x, (int, float)) for x in shards) and shards[0] >= 1 and
          shards == sorted(shards))
    for r in rows:
        positive(r, ["sampled_positions_per_second", "redis_main_thread_cores", "replay_cores",
                     "aof_mb_per_second_per_shard", "shard0_seconds_per_model_version"],
                 f"capacity model {r.get('gpus')} GPUs")
    scaling = doc.get("scaling") or {}
    check("scaling rows for 1, 2 and 4 shards",
          [r.get("shards") for r in scaling.get("rows") or []] == [1, 2, 4])
    for r in scaling.get("rows") or []:
        for key in ("positions_per_second", "redis_main_thread_cores",
                    "main_thread_us_per_position"):
            spread(r, key, f"capacity scaling {r.get('shards')} shard(s)")
    for key in ("step", "overhead"):
        spread(scaling.get(key) or {}, "ratio", f"capacity scaling {key}")
        check(f"scaling {key}: met is true or false",
              isinstance((scaling.get(key) or {}).get("met"), bool))
    memory = doc.get("memory") or {}
    check("memory rows, one per turnover (6 with --quick)",
          [r.get("turnover") for r in memory.get("rows") or []] == [1, 2, 3, 4, 5, 6])
    for r in memory.get("rows") or []:
        positive(r, ["one_shard_used_memory_mb", "one_shard_bytes_per_position",
                     "shards_used_memory_mb", "shards_bytes_per_position"],
                 f"capacity memory turnover {r.get('turnover')}")
    positive(memory.get("per_position") or {}, ["mean_bytes", "empty_server_mb"],
             "capacity memory per position")
    positive(memory.get("shard_ratio") or {}, ["used_memory"], "capacity memory shard ratio")
    number(memory.get("flatness") or {}, "largest_deviation", "capacity memory flatness")


LOAD_CHECKS = ["lost", "duplicated", "rejected", "unresolved", "unexpected_duplicates",
               "missing_position_keys", "missing_markers"]


def test_load(doc, start, end):
    check("bench is 'load', the closed loop", doc.get("bench") == "load" and
          doc.get("loop") == "closed")
    check("ok", doc.get("ok") is True)
    runs = doc.get("runs") or []
    check("runs steady and Redis SIGKILL + restart",
          [r.get("scenario") for r in runs] == ["steady", "Redis SIGKILL + restart"])
    for r in runs:
        where = f"load {r.get('scenario')}"
        positive(r, ["seconds", "games_acknowledged", "positions", "games_per_second",
                     "sample_calls", "replay_rss_mib"], where)
        positive(r.get("push_latency_ms") or {}, ["p50", "p99", "max"], f"{where} push latency")
        for key in LOAD_CHECKS:
            check(f"{where}: {key} 0 ({r.get(key)!r})", r.get(key) == 0)
        check(f"{where}: ok", r.get("ok") is True)
        check(f"{where}: failed calls by code", isinstance(r.get("failed_push_calls"), dict))


def test_load_sabotage(doc, start, end):
    check("bench is 'load'", doc.get("bench") == "load")
    runs = doc.get("runs") or [{}]
    check("not ok, one game lost and one doubled",
          doc.get("ok") is False and runs[0].get("ok") is False and
          runs[0].get("lost") == 1 and runs[0].get("duplicated") == 1)


def test_load_rate(doc, start, end):
    check("bench is 'load', the open loop", doc.get("bench") == "load" and
          doc.get("loop") == "open")
    check("ok", doc.get("ok") is True)
    positive(doc, ["seconds", "games_generated", "games_acknowledged", "push_calls_answered",
                   "offered_games_per_second", "sample_calls"], "load --rate")
    generated, acknowledged = doc.get("games_generated"), doc.get("games_acknowledged")
    check(f"every game generated acknowledged (drained): {acknowledged} >= {generated}",
          isinstance(generated, int) and isinstance(acknowledged, int) and
          acknowledged >= generated)
    positive(doc.get("push_latency_ms") or {}, ["p50", "p99", "max"], "load --rate push latency")
    for key in ["lost", "window_duplicates", "stored_twice", "rejected", "dropped", "unresolved",
                "unexpected_duplicates", "missing_position_keys", "missing_markers"]:
        check(f"load --rate: {key} 0 ({doc.get(key)!r})", doc.get(key) == 0)
    shards = doc.get("shard_positions") or []
    check(f"two shards, both holding positions ({shards})",
          len(shards) == 2 and all(isinstance(n, int) and n > 0 for n in shards))
    check("balanced is true or false", isinstance(doc.get("balanced"), bool))
    positive(doc.get("replay") or {}, ["peak_rss_mib", "max_threads", "metrics_bytes",
                                       "metrics_series"], "load --rate replay")
    check("replay exited with status 0",
          (doc.get("replay") or {}).get("exit") == "exit status 0")


def test_fanout(doc, start, end):
    check("bench is 'fanout', the follower run", doc.get("bench") == "fanout" and
          doc.get("mode") == "followers")
    check("ok, every criterion passed", doc.get("ok") is True)
    criteria = doc.get("criteria") or []
    check("six criteria, each passed",
          len(criteria) == 6 and all(c.get("pass") is True for c in criteria))
    positive(doc, ["bloop_bytes_per_second", "hold_bound_s"], "fanout")
    # CPU shares are counted in clock ticks: over a second or two, 0 is possible.
    share = number(doc, "redis_cpu_share", "fanout")
    check("redis-server's CPU share not negative", share is not None and share >= 0)
    versions = doc.get("versions") or []
    check("one version", [v.get("version") for v in versions] == [1])
    for v in versions:
        where = f"fanout v{v.get('version')}"
        positive(v, ["window_s", "hold_99_s", "hold_100_s", "redis_bytes_per_replay"], where)
        for key in ("notified_p50_s", "notified_p99_s", "notified_max_s"):
            value = number(v, key, where)
            check(f"{where}: '{key}' within 2 s", value is not None and 0 <= value <= 2)
        check(f"{where}: every follower holds it within 2 s",
              (v.get("holding_within_s") or {}).get("2") == 1)
        check(f"{where}: none never notified", v.get("never_notified") == 0)
    replicas = doc.get("replay") or []
    check("one replica's figures", len(replicas) == 1)
    for r in replicas:
        positive(r, ["peak_rss_mib"], "fanout replica")


def test_fanout_idle(doc, start, end):
    check("bench is 'fanout', the idle mode", doc.get("bench") == "fanout" and
          doc.get("mode") == "idle")
    check("ok, both criteria passed", doc.get("ok") is True and
          [c.get("pass") for c in doc.get("criteria") or []] == [True, True])
    check("20 streams asked and open",
          doc.get("streams_asked") == 20 and doc.get("streams_open") == 20)
    positive(doc, ["seconds", "replay_peak_rss_mib"], "fanout idle")
    share = number(doc, "replay_cpu_share", "fanout idle")
    check("replay's CPU share in [0, 0.05]", share is not None and 0 <= share <= 0.05)
    number(doc, "redis_calls_per_second", "fanout idle")


def test_abuse(doc, start, end):
    check("bench is 'abuse'", doc.get("bench") == "abuse")
    check("ok", doc.get("ok") is True)
    for key in ("empty_games", "big_push", "downloads", "slow_http"):
        check(f"{key}: its bound held", (doc.get(key) or {}).get("bound_held") is True)
    empty = doc.get("empty_games") or {}
    check("empty_games: 2000 pushed, all stored, none in the window",
          empty.get("games") == 2000 and empty.get("stored") == 2000 and
          empty.get("window_games") == 0)
    grew = number(empty.get("redis_used_memory_mib") or {}, "grew", "empty_games")
    check("empty_games: Redis grew by at most 1 MiB", grew is not None and grew <= 1)
    big = doc.get("big_push") or {}
    check("big_push: both pushes refused, none otherwise",
          big.get("refused") == 2 and big.get("other") == 0 and big.get("still_serving") is True)
    positive(big.get("replay_rss_mib") or {}, ["before", "peak_sampled", "vmhwm"], "big_push")
    downloads = doc.get("downloads") or {}
    check("downloads: both served", downloads.get("served") == 2 and downloads.get("other") == 0)
    positive(downloads.get("replay_rss_mib") or {}, ["before", "peak_sampled", "vmhwm"],
             "downloads")
    slow = doc.get("slow_http") or {}
    check("slow_http: the probe port answered", (slow.get("probe_port") or {}).get("answered") == 1)
    positive(slow.get("probe_port") or {}, ["median_ms"], "slow_http probe port")
    positive(slow, ["attack_connections"], "slow_http")


CASES = {
    "nn": (["bench", "nn", "--net", "1x8", "--batch", "1,4", "--seconds", "0.1", "--repeat", "1"],
           test_nn),
    "selfplay": (["bench", "selfplay", "--backend", "uniform", "--visits", "16", "--seconds",
                  "0.5", "--warmup", "0.2", "--repeat", "2"], test_selfplay),
    "train": (["bench", "train", "--ranks", "1,2", "--net", "1x8", "--batch", "16", "--steps",
               "2", "--warmup", "1", "--repeat", "1", "--python", "off"], test_train),
    # More arguments (--bin-dir) come from the command line.
    "sample": (["bench", "sample", "--window", "5000", "--seconds", "0.3", "--repeat", "1",
                "--decode-positions", "1000"], test_sample),
    "replay": (["bench", "replay", "--seconds", "0.3", "--repeat", "1"], test_replay),
    "selfplay-stop": (["bench", "selfplay-stop", "--repeat", "1", "--buffer-games", "32"],
                      test_selfplay_stop),
    "swap": (["bench", "swap", "--seconds", "3", "--warmup", "0", "--repeat", "1", "--concurrent",
              "8", "--visits", "8", "--reduced-visits", "4", "--publish-every", "0.5",
              "--selfplay-arg=--max-plies=20"], test_swap),
    # These five: more arguments (--bin-dir, --replay-binary) from the command line.
    "capacity": (["bench", "capacity", "--quick"], test_capacity),
    "load": (["bench", "load", "--producers", "2", "--samplers", "1", "--seconds", "1.5",
              "--scenario", "both", "--down", "0.5", "--drain", "30"], test_load),
    "load-sabotage": (["bench", "load", "--producers", "2", "--samplers", "0", "--seconds", "1",
                       "--scenario", "plain", "--sabotage"], test_load_sabotage, 1),
    "load-rate": (["bench", "load", "--producers", "4", "--rate", "20", "--samplers", "1",
                   "--seconds", "2", "--shards", "2", "--drain", "30"], test_load_rate),
    "fanout": (["bench", "fanout", "--followers", "20", "--versions", "1", "--interval", "1s",
                "--model-bytes", "100kB", "--settle", "1", "--bloop-downloads", "1", "--check"],
               test_fanout),
    "fanout-idle": (["bench", "fanout", "--idle-watchers", "20", "--idle-seconds", "3"],
                    test_fanout_idle),
    "abuse": (["bench", "abuse", "--games", "2000", "--rounds", "1", "--slow-clients", "8",
               "--probes", "1", "--pushers", "2", "--push-mib", "4", "--downloaders", "2",
               "--model-mib", "4"], test_abuse),
    # The check's own test with --json: the document says why, and the exit status is 1.
    "selfplay-stop-sabotage": (["bench", "selfplay-stop", "--repeat", "1", "--scenario", "empty",
                                "--sabotage"], test_selfplay_stop_sabotage, 1),
}


def main():
    chessrl, name = sys.argv[1:3]
    args, test, status = (CASES[name] + (0,))[:3]
    start = time.time()
    proc = subprocess.run([chessrl] + args + ["--json"] + sys.argv[3:], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=600)
    end = time.time()
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    check(f"exit status {status} ({proc.returncode})", proc.returncode == status)
    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        doc = None
        check(f"stdout is one JSON document ({e})", False)
    check("the document is an object", isinstance(doc, dict))
    if isinstance(doc, dict):
        test(doc, start, end)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
