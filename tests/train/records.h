// Self-play records for the training tests: a few short games played by the
// real GameRunner with a random fake network (fast, reproducible).
#pragma once

#include <algorithm>
#include <vector>

#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/backend.h"
#include "chessrl/selfplay/game_runner.h"

namespace chessrl::train::testing {

inline std::vector<record::GameRecord> play_records(int games, std::uint64_t seed = 20261123) {
  selfplay::GameRunnerOptions o;
  o.concurrent_games = games;
  o.threads = 1;
  o.leaves_per_search = 4;
  o.seed = seed;
  o.max_games = std::uint64_t(games);
  o.config.playouts = {.full_visits = 24, .reduced_visits = 8, .full_fraction = 0.5f};
  o.config.max_plies = 60;
  nn::BatchEvaluator evaluator(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, seed),
                               {.max_batch = 64, .batch_timeout = std::chrono::microseconds(100)});
  selfplay::GameRunner runner(evaluator, o);
  std::vector<record::GameRecord> out;
  runner.run([&](record::GameRecord&& r) { out.push_back(std::move(r)); });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

}  // namespace chessrl::train::testing
