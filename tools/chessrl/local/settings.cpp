#include "local/settings.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>

namespace chessrl::tool {

std::vector<std::string> with_words(std::vector<std::string> argv, const std::string& extra) {
  std::istringstream words(extra);
  for (std::string word; words >> word;) argv.push_back(word);
  return argv;
}

namespace {

// `flag value` appended to `argv` when `value` is given.
template <class T>
void pass(std::vector<std::string>& argv, const char* flag, const std::optional<T>& value) {
  if (!value) return;
  argv.push_back(flag);
  if constexpr (std::is_same_v<T, std::string>)
    argv.push_back(*value);
  else
    argv.push_back(std::to_string(*value));
}

}  // namespace

int auto_selfplay_threads(int processes) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, processes));
}

std::vector<std::string> selfplay_settings(const LocalOptions& o) {
  const std::string threads = std::to_string(std::max(1, o.selfplay_threads));
  std::vector<std::string> a = {"--concurrent", std::to_string(o.concurrent), "--threads", threads,
                                "--workers", threads, "--nn-threads", "1"};
  pass(a, "--net", o.net);
  pass(a, "--visits", o.visits);
  pass(a, "--reduced-visits", o.reduced_visits);
  pass(a, "--full-fraction", o.full_fraction);
  pass(a, "--max-plies", o.max_plies);
  pass(a, "--adjudicate-material", o.adjudicate_material);
  pass(a, "--final-temperature", o.final_temperature);
  pass(a, "--short-games", o.short_games);
  pass(a, "--draw-contempt", o.draw_contempt);
  return with_words(std::move(a), o.selfplay_args);
}

std::vector<std::string> trainer_settings(const LocalOptions& o) {
  std::vector<std::string> a = {"--threads", "1"};
  pass(a, "--net", o.net);
  if (o.batch_size) pass(a, "--batch-size", std::optional<int>(*o.batch_size / o.trainers));
  pass(a, "--optimizer", o.optimizer);
  pass(a, "--lr", o.lr);
  pass(a, "--checkpoint-every", o.checkpoint_every);
  pass(a, "--publish-every", o.publish_every);
  pass(a, "--min-window", o.min_window);
  pass(a, "--max-reuse", o.max_reuse);
  pass(a, "--value-q-ratio", o.value_q_ratio);
  return with_words(std::move(a), o.trainer_args);
}

std::vector<std::string> evaluator_settings(const LocalOptions& o) {
  std::vector<std::string> a = {"--threads", "1", "--nn-threads", "1"};
  pass(a, "--visits", o.eval_visits);
  // Fewer visits than the evaluator's 8 leaves a round: one round is the search.
  if (o.eval_visits && *o.eval_visits < 8)
    pass(a, "--leaves", o.eval_visits);
  pass(a, "--pairs", o.eval_pairs);
  pass(a, "--anchor-pairs", o.anchor_pairs);
  pass(a, "--anchors", o.anchors);
  for (const auto& e : o.engines) {
    a.push_back("--engine");
    a.push_back(e);
  }
  // The Stockfish ladder by default (the chart's evaluator.ladder is off by
  // default): on a laptop it is cheap, Stockfish at depth 1 or 2.
  if (o.ladder != "off" && !o.ladder.empty()) {
    a.push_back("--ladder");
    a.push_back(o.ladder);
  }
  return with_words(std::move(a), o.evaluator_args);
}

std::vector<std::string> replay_settings(const LocalOptions& o) {
  std::vector<std::string> a = {"--store", "redis"};
  pass(a, "--window-positions", o.window);
  return a;
}

}  // namespace chessrl::tool
