#include "local/options.h"

#include "chessrl/record/game_limits.h"

namespace chessrl::tool {

void add_local_options(CLI::App& cmd, LocalOptions& o) {
  cmd.add_option("--dir", o.dir, "Everything the run writes goes here; a second run resumes")
      ->capture_default_str();
  cmd.add_option("--bin-dir", o.bin_dir, "Where the chessrl-* binaries are (default: found)");
  cmd.add_option("--port", o.port,
                 "The replay service's gRPC port on 127.0.0.1 (0: one the kernel picks; kept "
                 "when the service is restarted)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd.add_option("--selfplay", o.selfplay, "Self-play processes")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--trainers", o.trainers, "Trainer ranks (2: data parallel over Gloo)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  cmd.add_option("--device", o.device,
                 "cpu, cuda or auto for every child (default: each binary's own, auto: CUDA when "
                 "present)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd.add_option("--gpus", o.gpus,
                 "GPUs for self-play, e.g. 0,1,2,3: one self-play process per GPU, each seeing "
                 "only its own (CUDA_VISIBLE_DEVICES); the trainer's ranks on the first of them "
                 "and the evaluator on the last, unless --train-gpus");
  cmd.add_option("--train-gpus", o.train_gpus,
                 "GPUs for the trainer, one rank per GPU (NCCL refuses two ranks on one), e.g. "
                 "4,5: sets --trainers");
  // The learning settings: passed on only when given (each binary's own
  // default otherwise, as in the chart).
  cmd.add_option("--net", o.net,
                 "Network (BLOCKSxFILTERS[-seR][-gpN][-feat][-reply][-mlh]; default: "
                 "chessrl-trainer's, 4x32)");
  cmd.add_option("--visits", o.visits,
                 "Self-play visits of a full (recorded) search (default: chessrl-selfplay's, 64)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--reduced-visits", o.reduced_visits,
                 "Visits of the other moves (default: chessrl-selfplay's, 16)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--full-fraction", o.full_fraction,
                 "Share of full searches (default: chessrl-selfplay's, 0.25)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--concurrent", o.concurrent, "Games at once per self-play process")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--selfplay-threads", o.selfplay_threads,
                 "Search threads (and network workers) per self-play process (0: this "
                 "machine's cores over the self-play processes)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  cmd.add_option("--selfplay-nice", o.selfplay_nice,
                 "Self-play's niceness (0..19): below the trainer and evaluator, it takes the "
                 "CPU they leave idle")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  cmd.add_option("--max-plies", o.max_plies,
                 "Plies after which a self-play game ends, a draw or won on material "
                 "(default: chessrl-selfplay's, 200; at most the longest game replay "
                 "accepts)")
      ->check(CLI::Range(10, record::kMaxGamePlies));
  cmd.add_option("--adjudicate-material", o.adjudicate_material,
                 "At --max-plies, a side this many pawns ahead wins the self-play game (0: a "
                 "draw; default: chessrl-selfplay's, 3)")
      ->check(CLI::Range(0, 100));
  cmd.add_option("--final-temperature", o.final_temperature,
                 "PUCT self-play's move temperature after the first 30 plies (0: the most "
                 "visited move; default: chessrl-selfplay's, 0.5)")
      ->check(CLI::Range(0.0, 10.0));
  cmd.add_option("--short-games", o.short_games,
                 "Share of self-play games cut at 60 plies and won there by the side a pawn "
                 "ahead (0: none; default: chessrl-selfplay's, 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--draw-contempt", o.draw_contempt,
                 "In self-play's search, a proven draw looks this much worse than 0 to the side "
                 "choosing it (0: exact; default: chessrl-selfplay's, 0.2)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--value-q-ratio", o.value_q_ratio,
                 "Share of the search's root value in the trainer's value target (0: the game "
                 "result alone; default: chessrl-trainer's, 0.3)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--window", o.window,
                 "Replay window in positions (chessrl-replay --window-positions; default: "
                 "chessrl-replay's, 50,000)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  cmd.add_option("--redis-shards", o.redis_shards,
                 "redis-servers the window is spread over (chessrl-replay --redis-shards; "
                 "shard i keeps its data in run/redis, run/redis-1, ...)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--batch-size", o.batch_size,
                 "Trainer batch over all ranks (default: chessrl-trainer's, 256 per rank)")
      ->check(CLI::Range(2, 65536));
  cmd.add_option("--optimizer", o.optimizer, "sgd or adamw (default: chessrl-trainer's, adamw)")
      ->check(CLI::IsMember({"sgd", "adamw"}));
  cmd.add_option("--lr", o.lr, "Learning rate (default: chessrl-trainer's, 0.001)");
  cmd.add_option("--publish-every", o.publish_every,
                 "Trainer steps between model versions (default: chessrl-trainer's, 200)")
      ->check(CLI::Range(1, 1000000));
  cmd.add_option("--checkpoint-every", o.checkpoint_every,
                 "Trainer steps between checkpoints (default: chessrl-trainer's, 100)")
      ->check(CLI::Range(1, 1000000));
  cmd.add_option("--min-window", o.min_window,
                 "Positions stored before training starts (default: chessrl-trainer's, 4000)");
  cmd.add_option("--max-reuse", o.max_reuse,
                 "Training pauses while samples trained / positions stored exceeds this "
                 "(default: chessrl-trainer's, 4)");
  cmd.add_option("--eval-visits", o.eval_visits,
                 "Evaluator visits per move (default: chessrl-evaluator's, 32)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--eval-pairs", o.eval_pairs,
                 "Game pairs of each new version against the best (default: "
                 "chessrl-evaluator's, 4)")
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--anchor-pairs", o.anchor_pairs,
                 "Game pairs against each anchor (default: chessrl-evaluator's, 4)")
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--anchors", o.anchors,
                 "Fixed anchors (default: chessrl-evaluator's, random,greedy)");
  cmd.add_option("--engine", o.engines,
                 "A UCI engine anchor, e.g. \"uci:stockfish;Skill Level=0;movetime=50\" "
                 "(repeatable)");
  cmd.add_option("--ladder", o.ladder,
                 "The Stockfish ladder the evaluator climbs (chessrl-evaluator --ladder): rungs "
                 "PROGRAM:SKILL:DEPTH, comma-separated; it plays the rung in play with the "
                 "anchors and the next once a version scores at least 0.5 against it; without a "
                 "stockfish binary (PATH, /usr/games) the evaluator says so and plays the other "
                 "anchors; off: none")
      ->check([](const std::string& text) {
        auto rungs = eval::parse_ladder(text);
        return rungs.ok() ? std::string() : rungs.error();
      })
      ->capture_default_str();
  cmd.add_option("--selfplay-args", o.selfplay_args,
                 "More chessrl-selfplay options, e.g. \"--temperature-plies 20\" (none that "
                 "chessrl local sets itself)");
  cmd.add_option("--trainer-args", o.trainer_args, "More chessrl-trainer options");
  cmd.add_option("--evaluator-args", o.evaluator_args, "More chessrl-evaluator options");
  cmd.add_option("--duration", o.duration, "Stop after this many seconds (0: at Ctrl-C)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd.add_option("--status-every", o.status_every, "Seconds between status updates")
      ->check(CLI::Range(0.2, 3600.0))
      ->capture_default_str();
  cmd.add_flag("--quiet", o.quiet, "Only the status line");
  cmd.add_flag("--print-settings", o.print_settings,
               "Print the settings each child is started with (JSON: every option but "
               "addresses, ports, files and tokens) and exit without starting anything");
  cmd.add_flag("--no-auth", o.no_auth,
               "no bearer tokens on the replay service (by default each process gets its "
               "role's token from run/auth)");
  cmd.add_flag("--no-prometheus", o.no_prometheus,
               "Start no Prometheus (by default one scrapes every child, data under --dir)");
  cmd.add_flag("--no-web", o.no_web,
               "Start no game viewer (by default chessrl-web serves a page of the live games, "
               "the matches and the Elo curve)");
  cmd.add_option("--prometheus-rules", o.prometheus_rules,
                 "Recording rules and alerts for that Prometheus")
      ->capture_default_str();
}

}  // namespace chessrl::tool
