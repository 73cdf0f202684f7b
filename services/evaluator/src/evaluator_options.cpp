#include "evaluator_options.h"

#include <algorithm>

#include "chessrl/eval/ladder.h"
#include "chessrl/eval/uci_engine.h"

namespace chessrl::evaluator_service {

std::vector<std::string> EvaluatorOptions::anchor_specs() const {
  std::vector<std::string> specs;
  auto add = [&specs](std::string spec) {
    const auto first = spec.find_first_not_of(" \t");
    const auto last = spec.find_last_not_of(" \t");
    spec = first == std::string::npos ? std::string() : spec.substr(first, last - first + 1);
    if (!spec.empty() && std::find(specs.begin(), specs.end(), spec) == specs.end()) {
      specs.push_back(std::move(spec));
    }
  };
  std::size_t start = 0;
  while (start <= anchors.size()) {
    const auto comma = anchors.find(',', start);
    const auto end = comma == std::string::npos ? anchors.size() : comma;
    add(anchors.substr(start, end - start));
    start = end + 1;
  }
  for (const auto& engine : engines) add(engine);
  return specs;
}

Result<void> EvaluatorOptions::validate() const {
  if (registry.empty()) return fail("--registry: an address is needed (host:port)");
  if (device != "cpu" && device.rfind("cuda", 0) != 0) {
    return fail("--device " + device + ": expected cpu, cuda or cuda:N");
  }
  if (leaves > visits) {
    return fail("--leaves " + std::to_string(leaves) + ": more than --visits " +
                std::to_string(visits));
  }
  if (state_dir.empty()) return fail("--state-dir: a directory is needed");
  if (lease_s < 0 || lease_s > 3600) {
    return fail("--lease " + std::to_string(lease_s) +
                ": expected 0 (no lease) to 3600 (the longest lease the registry grants)");
  }
  if (keep_models < 0) {
    return fail("--keep-models " + std::to_string(keep_models) + ": expected 0 or more");
  }
  for (const auto& spec : engines) {
    if (spec.rfind("uci:", 0) != 0) {
      return fail("--engine " + spec + ": expected uci:PROGRAM[;KEY=VALUE]...");
    }
  }
  std::vector<std::string> labels;
  for (const auto& spec : anchor_specs()) {
    auto parsed = eval::parse_anchor(spec, seed);
    if (!parsed.ok()) return fail(parsed.error());  // it names the spec
    const std::string label = eval::anchor_label(spec);
    if (label == "best") return fail("anchor '" + spec + "': the label 'best' is reserved");
    if (std::find(labels.begin(), labels.end(), label) != labels.end()) {
      return fail("anchor '" + spec + "': another anchor has the label '" + label +
                  "' (give one a name=)");
    }
    labels.push_back(label);
  }
  auto rungs = eval::parse_ladder(ladder);
  if (!rungs.ok()) return fail("--ladder: " + rungs.error());
  for (const auto& rung : *rungs) {
    if (rung.label == "best" ||
        std::find(labels.begin(), labels.end(), rung.label) != labels.end()) {
      return fail("--ladder " + ladder + ": the rung label '" + rung.label +
                  "' is taken (by an anchor, or 'best')");
    }
  }
  return {};
}

void add_options(CLI::App& app, EvaluatorOptions& o) {
  // Where models come from, where status goes.
  o.runtime::ClientOptions::add_registry_only_to(app);
  o.runtime::StatusListenOptions::add_to(app);
  app.add_option("--poll", o.poll_s,
                 "seconds between registry checks while idle (new versions also arrive by watch)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--unhealthy-after", o.unhealthy_after_s,
                 "/healthz answers 503 once the registry has been unreachable this many seconds")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--lease", o.lease_s,
                 "seconds the candidate being gated is leased from the registry, renewed every "
                 "quarter of it while its match runs, so --keep-models cannot prune it before it "
                 "is promoted (0: no lease; at most 3600)")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();

  // The players.
  app.add_option("--visits", o.visits, "MCTS visits per move")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--leaves", o.leaves, "leaves gathered per search round (batched)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--random-plies", o.random_plies,
                 "first plies of each game drawn in proportion to visits, so paired games differ")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  o.runtime::DeviceOptions::add_to(app, /*with_precision=*/false);

  // The matches.
  app.add_option("--concurrent,--threads", o.threads, "games played at once, each on a thread")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-plies", o.max_plies, "a game still going after this many plies is a draw")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--pairs", o.pairs,
                 "gating match against the best: pairs of games (one opening, colours swapped)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--promote-score", o.promote_score,
                 "the candidate becomes best when it scores above this (0-1; a tie keeps the best)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--anchor-pairs", o.anchor_pairs, "gauntlet: pairs of games per anchor")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--anchors", o.anchors,
                 "built-in anchors, comma-separated: random, greedy (\"\": none)")
      ->capture_default_str();
  app.add_option("--engine", o.engines,
                 "a UCI engine anchor (repeatable): uci:PROGRAM[;KEY=VALUE]..., keys nodes, "
                 "depth, movetime, name, any other a UCI option, e.g. "
                 "\"uci:stockfish;Skill Level=0;movetime=50\"");
  app.add_option("--ladder", o.ladder,
                 "the Stockfish ladder: rungs PROGRAM:SKILL:DEPTH (Skill Level, search depth), "
                 "comma-separated, e.g. \"stockfish:0:1,stockfish:1:2\"; the gauntlet plays the "
                 "rung in play (2 * --anchor-pairs games, labelled e.g. stockfish-skill0) and the "
                 "next version plays the next rung once one scores at least 0.5 against it; the "
                 "rung reached is kept in --state-dir (\"\" or off: no ladder)")
      ->capture_default_str();
  app.add_option("--gauntlet-every", o.gauntlet_every,
                 "play the anchors every N evaluated versions (0: never)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the players' and anchors' random choices")
      ->capture_default_str();

  // What is kept.
  app.add_option("--state-dir", o.state_dir,
                 "results.jsonl, PGN files, saved models and the last evaluated version")
      ->capture_default_str();
  app.add_option("--save-models", o.save_models,
                 "keep each evaluated model as <state-dir>/models/model-v<N>.chrl (true/false)")
      ->capture_default_str();
  app.add_option("--keep-models", o.keep_models,
                 "saved models kept: the first, the best and the N newest; others are deleted after "
                 "each evaluation (0: keep every one)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_flag("--once", o.once,
               "evaluate the latest version (if not done yet), print a JSON line and exit");
}

}  // namespace chessrl::evaluator_service
