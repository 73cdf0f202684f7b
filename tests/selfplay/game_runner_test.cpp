#include "chessrl/selfplay/game_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chessrl/chess/pgn.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"

namespace chessrl::selfplay {
namespace {

using chess::Outcome;
using chess::Termination;

GameRunnerOptions small_run(std::uint64_t games, int concurrent, int threads) {
  GameRunnerOptions o;
  o.concurrent_games = concurrent;
  o.threads = threads;
  o.leaves_per_search = 4;
  o.seed = 20261122;
  o.max_games = games;
  o.config.playouts = {.full_visits = 32, .reduced_visits = 12, .full_fraction = 0.5f};
  o.config.max_plies = 80;
  return o;
}

struct PlayedGames {
  std::map<std::uint64_t, record::GameRecord> games;  // by index
  RunnerStats stats;
};

PlayedGames play(const GameRunnerOptions& options, std::shared_ptr<nn::InferenceBackend> backend) {
  nn::BatchEvaluator evaluator(std::move(backend),
                               {.max_batch = 64, .batch_timeout = std::chrono::microseconds(100)});
  GameRunner runner(evaluator, options);
  PlayedGames run;
  runner.run([&](record::GameRecord&& r) { run.games.emplace(r.index, std::move(r)); });
  run.stats = runner.stats();
  return run;
}

std::shared_ptr<nn::InferenceBackend> uniform() { return std::make_shared<nn::FakeBackend>(); }

// The signatures: with the uniform backend and a fixed seed, these runs make
// exactly this many playouts, with self-play's defaults (Gumbel root search,
// short games, adjudication, draw contempt) and with PUCT and root noise. Any change to the search, the policies or the
// runner that changes a single move or visit moves one (update it on purpose).
constexpr std::uint64_t kSignaturePlayouts = 8440;
constexpr std::uint64_t kPuctSignaturePlayouts = 7290;

void expect_signature(const GameRunnerOptions& options, std::uint64_t expected) {
  const PlayedGames run = play(options, uniform());
  ASSERT_EQ(run.games.size(), 6u);
  std::uint64_t positions = 0;
  for (const auto& [index, g] : run.games) positions += g.moves.size();
  std::printf("signature: %llu playouts, %llu positions, %llu evaluations\n",
              static_cast<unsigned long long>(run.stats.playouts),
              static_cast<unsigned long long>(positions),
              static_cast<unsigned long long>(run.stats.evaluations));
  EXPECT_EQ(run.stats.playouts, expected);
  EXPECT_EQ(run.stats.positions, positions);
}

TEST(GameRunner, SignatureOfASeededUniformRun) {
  const GameRunnerOptions options = small_run(6, 3, 2);
  ASSERT_TRUE(options.config.search.gumbel) << "self-play's default root search is Gumbel";
  expect_signature(options, kSignaturePlayouts);
}

TEST(GameRunner, SignatureOfASeededUniformPuctRun) {
  GameRunnerOptions options = small_run(6, 3, 2);
  // PUCT with root noise, and none of self-play's learning settings: the run
  // this number was first measured on.
  options.config.search.gumbel = false;
  options.config.search.draw_contempt = 0.0f;
  options.config.temperature.final = 0.0f;
  options.config.adjudicate_material = 0;
  options.config.short_game_fraction = 0.0f;
  expect_signature(options, kPuctSignaturePlayouts);
}

TEST(GameRunner, GamesDoNotDependOnThreadsOrConcurrency) {
  auto backend = std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 77);
  GameRunnerOptions eight = small_run(8, 8, 2), three = small_run(8, 3, 1);
  eight.id_nonce = three.id_nonce = 7;  // the same ids too
  const PlayedGames a = play(eight, backend);
  const PlayedGames b = play(three, backend);
  ASSERT_EQ(a.games.size(), 8u);
  ASSERT_EQ(b.games.size(), 8u);
  for (std::uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(a.games.count(i) && b.games.count(i)) << i;
    EXPECT_EQ(a.games.at(i), b.games.at(i)) << "game " << i;
  }
  EXPECT_EQ(a.stats.playouts, b.stats.playouts);
  // Different games from one run differ.
  EXPECT_NE(a.games.at(0).moves, a.games.at(1).moves);
}

// A restarted replica with the same --seed plays the same games (the search
// stays seeded) under new ids: the replay service would answer DUPLICATE for
// a repeated id and the game would be lost.
TEST(GameRunner, TwoRunnersWithTheSameSeedGiveDisjointIds) {
  GameRunnerOptions options = small_run(4, 4, 1);
  options.config.max_plies = 6;
  const PlayedGames a = play(options, uniform());
  const PlayedGames b = play(options, uniform());
  ASSERT_EQ(a.games.size(), 4u);
  ASSERT_EQ(b.games.size(), 4u);
  std::set<std::string> ids;
  for (const PlayedGames* run : {&a, &b}) {
    for (const auto& [index, g] : run->games) {
      ids.insert(g.id);
      // What the replay service takes: [A-Za-z0-9._:-], 1 to 128 characters.
      EXPECT_TRUE(!g.id.empty() && g.id.size() <= 128) << g.id;
      EXPECT_TRUE(std::all_of(g.id.begin(), g.id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
               c == '-';
      })) << g.id;
    }
  }
  EXPECT_EQ(ids.size(), 8u);
  for (std::uint64_t i = 0; i < 4; ++i) EXPECT_EQ(a.games.at(i).moves, b.games.at(i).moves) << i;
  // A fixed id nonce (tests, reproductions) repeats the ids.
  options.id_nonce = 42;
  EXPECT_EQ(play(options, uniform()).games.at(0).id, play(options, uniform()).games.at(0).id);
}

TEST(GameRunner, RecordsAreConsistentAndRoundTrip) {
  auto options = small_run(6, 6, 2);
  options.config.max_plies = 200;
  options.config.adjudicate_material = 0;     // the move limit is a draw ...
  options.config.short_game_fraction = 0.0f;  // ... at 200 plies in every game
  const PlayedGames run =
      play(options, std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 1));
  std::uint64_t recorded = 0;
  for (const auto& [index, g] : run.games) {
    SCOPED_TRACE(g.id);
    // The result is what the rules say at the end, or the move limit, or a resignation.
    chess::Position pos = chess::Position::from_fen(g.start_fen).value_or_throw();
    for (chess::Move m : g.moves) pos.make_move(m);
    const chess::GameResult by_rules = chess::game_result(pos);
    if (by_rules.is_over()) {
      EXPECT_EQ(g.result, by_rules);
    } else {
      EXPECT_TRUE(g.result.reason == Termination::kMoveLimit ||
                  g.result.reason == Termination::kResignation)
          << g.result.to_string();
    }
    if (g.result.reason == Termination::kMoveLimit) {
      EXPECT_EQ(g.moves.size(), 200u);
    }
    for (const record::MoveTarget& t : g.targets) {
      double sum = 0;
      for (const record::PolicyEntry& e : t.policy) sum += e.probability;
      EXPECT_NEAR(sum, 1.0, 1e-4);
      EXPECT_GE(t.visits, 32u);
    }
    recorded += g.targets.size();
    // JSON and back.
    auto parsed = record::parse_record(to_json(g));
    ASSERT_TRUE(parsed) << parsed.error();
    EXPECT_EQ(parsed->moves, g.moves);
    EXPECT_EQ(parsed->result, g.result);
    EXPECT_EQ(parsed->targets.size(), g.targets.size());
    // PGN and back.
    auto text = chess::write_pgn(record::to_pgn(g));
    ASSERT_TRUE(text) << text.error();
    auto game = chess::read_pgn(*text);
    ASSERT_TRUE(game) << game.error();
    EXPECT_EQ(game->moves, g.moves);
    EXPECT_EQ(game->result, g.result.pgn_result());
  }
  EXPECT_EQ(recorded, run.stats.recorded);
  // About half the moves are full searches (full_fraction 0.5).
  EXPECT_GT(run.stats.recorded, run.stats.positions / 4);
  EXPECT_LT(run.stats.recorded, run.stats.positions * 3 / 4);
}

TEST(GameRunner, ResignationAndItsFalsePositiveRate) {
  auto options = small_run(24, 8, 2);
  options.config.max_plies = 60;
  // Resign as soon as a side is worse at all: the random backend makes that common.
  options.config.resign = {.threshold = 0.0f, .consecutive = 1, .disabled_fraction = 0.5f};
  const PlayedGames run =
      play(options, std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 4));
  EXPECT_GT(run.stats.resignations, 0u);
  EXPECT_GT(run.stats.resign_checked, 0u);
  std::uint64_t resigned = 0, checked = 0, false_positives = 0;
  for (const auto& [index, g] : run.games) {
    if (g.result.reason == Termination::kResignation) {
      ++resigned;
      EXPECT_FALSE(g.resign_disabled);
    }
    // Every target names a move played: the resigning side's search leaves none.
    for (const record::MoveTarget& t : g.targets) EXPECT_LT(std::size_t(t.ply), g.moves.size());
    if (g.resign_disabled && g.would_resign_ply >= 0) {
      ++checked;
      false_positives += g.resign_false_positive();
    }
  }
  EXPECT_EQ(resigned, run.stats.resignations);
  EXPECT_EQ(checked, run.stats.resign_checked);
  EXPECT_EQ(false_positives, run.stats.resign_false_positives);
  EXPECT_LE(run.stats.resign_false_positive_rate(), 1.0);
}

TEST(GameRunner, StopsWhenAsked) {
  auto options = small_run(0, 4, 2);  // no game limit
  nn::BatchEvaluator evaluator(uniform(), {});
  GameRunner runner(evaluator, options);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    while (runner.stats().games < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    stop = true;
  });
  runner.run({}, &stop);
  stopper.join();
  EXPECT_GE(runner.stats().games, 2u);
}

TEST(GameRunner, ReportsSearchAndWaitTimePerRound) {
  auto options = small_run(6, 4, 2);
  std::mutex mutex;
  double busy = 0, wait = 0;
  int rounds = 0;
  options.on_round = [&](double b, double w) {
    std::lock_guard lock(mutex);
    EXPECT_GE(b, 0.0);
    EXPECT_GE(w, 0.0);
    busy += b, wait += w, ++rounds;
  };
  const PlayedGames run = play(options, uniform());
  EXPECT_EQ(run.stats.games, 6u);
  EXPECT_GT(rounds, 6);
  EXPECT_GT(run.stats.busy_seconds, 0.0);
  EXPECT_GT(run.stats.wait_seconds, 0.0);
  // The callback and the counters see the same durations (to the nanosecond).
  EXPECT_NEAR(busy, run.stats.busy_seconds, 1e-6 * rounds);
  EXPECT_NEAR(wait, run.stats.wait_seconds, 1e-6 * rounds);
}

TEST(GameRunner, MaterialBalanceCountsPawnsKnightsBishopsRooksQueens) {
  EXPECT_EQ(chess::material_balance(chess::Position::from_fen(chess::kStartFen).value()), 0);
  // White: K Q R P P; black: K N B P -> (9 + 5 + 2) - (3 + 3 + 1) = 9.
  auto pos = chess::Position::from_fen("4k3/3nb1p1/8/8/8/8/PP6/QR2K3 w - - 0 1");
  ASSERT_TRUE(pos.ok()) << pos.error();
  EXPECT_EQ(chess::material_balance(*pos), 9);
}

TEST(GameRunner, AdjudicatesByMaterialAtTheMoveLimit) {
  auto options = small_run(12, 4, 2);
  options.config.max_plies = 24;  // random-ish play: captures happen in 24 plies
  options.config.adjudicate_material = 1;
  options.config.short_game_fraction = 0.0f;  // every game to max_plies
  const PlayedGames run = play(options, uniform());
  int adjudicated = 0;
  for (const auto& [index, game] : run.games) {
    chess::Position pos = chess::Position::from_fen(chess::kStartFen).value();
    for (const chess::Move m : game.moves) pos.make_move(m);
    const int balance = chess::material_balance(pos);
    // At the limit: a draw only with equal material.
    if (game.result.reason == Termination::kMoveLimit) {
      EXPECT_EQ(balance, 0) << index;
    }
    if (game.result.reason != Termination::kAdjudication) continue;
    ++adjudicated;
    EXPECT_GE(std::abs(balance), 1) << index;
    EXPECT_EQ(game.result.outcome, balance > 0 ? Outcome::kWhiteWins : Outcome::kBlackWins)
        << index;
  }
  EXPECT_GT(adjudicated, 0);
  // Off (0), the same games end as move-limit draws.
  options.config.adjudicate_material = 0;
  const PlayedGames off = play(options, uniform());
  for (const auto& [index, game] : off.games)
    EXPECT_NE(game.result.reason, Termination::kAdjudication) << index;
  options.config.adjudicate_material = -1;
  EXPECT_FALSE(options.validate().ok());
}

// A share of short games: cut at short_max_plies and adjudicated there at
// short_adjudicate_material; the others play to max_plies as before.
TEST(GameRunner, ShortGamesEndAtTheirOwnLimitOnMaterial) {
  auto options = small_run(16, 4, 2);
  options.config.max_plies = 60;
  options.config.adjudicate_material = 0;
  options.config.short_game_fraction = 0.5f;
  options.config.short_max_plies = 12;
  options.config.short_adjudicate_material = 1;
  const PlayedGames run = play(options, uniform());
  ASSERT_EQ(run.games.size(), 16u);
  int short_games = 0, long_games = 0;
  for (const auto& [index, game] : run.games) {
    const auto plies = game.moves.size();
    if (game.result.reason == Termination::kAdjudication) {
      // Only a short game adjudicates (the long ones have adjudication off).
      EXPECT_EQ(plies, 12u) << index;
      ++short_games;
    } else if (plies == 12u && game.result.reason == Termination::kMoveLimit) {
      ++short_games;
    } else if (plies > 12u) {
      ++long_games;
    }
  }
  // 16 games at one half: both kinds (each missing has probability 2^-16).
  EXPECT_GT(short_games, 0);
  EXPECT_GT(long_games, 0);
  EXPECT_EQ(short_games + long_games, 16) << "a game ended early by the rules";

  options.config.short_game_fraction = 1.0f;
  for (const auto& [index, game] : play(options, uniform()).games)
    EXPECT_LE(game.moves.size(), 12u) << index;
  options.config.short_game_fraction = 1.5f;
  auto r = options.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("short game fraction"), std::string::npos);
}

// Gumbel self-play: every full search records a policy over all the legal
// moves (softmax of log prior + sigma(Q)) summing to 1, the games play to
// their end, and two runs with one seed play the same games.
TEST(GameRunner, GumbelRecordsAPolicyOverEveryLegalMove) {
  auto options = small_run(4, 4, 1);
  options.config.max_plies = 40;
  options.config.search.gumbel = true;
  options.config.search.gumbel_considered = 8;
  options.id_nonce = 1;
  const auto backend = [] {
    return std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 3);
  };
  const PlayedGames run = play(options, backend());
  ASSERT_EQ(run.games.size(), 4u);
  std::uint64_t targets = 0;
  for (const auto& [index, g] : run.games) {
    SCOPED_TRACE(g.id);
    chess::Position pos = chess::Position::from_fen(g.start_fen).value_or_throw();
    std::size_t next = 0;
    for (std::size_t ply = 0; ply <= g.moves.size(); ++ply) {
      if (next < g.targets.size() && g.targets[next].ply == int(ply)) {
        const record::MoveTarget& t = g.targets[next++];
        EXPECT_EQ(t.policy.size(), chess::legal_moves(pos).size());
        double sum = 0;
        for (const record::PolicyEntry& e : t.policy) sum += e.probability;
        EXPECT_NEAR(sum, 1.0, 1e-4);
        ++targets;
      }
      if (ply < g.moves.size()) {
        ASSERT_TRUE(chess::is_legal(pos, g.moves[ply]));
        pos.make_move(g.moves[ply]);
      }
    }
    EXPECT_EQ(next, g.targets.size());
  }
  EXPECT_GT(targets, 0u);
  const PlayedGames again = play(options, backend());
  for (const auto& [index, g] : run.games) EXPECT_EQ(again.games.at(index).moves, g.moves);
}

// Draining finishes every game in progress (none abandoned, none started),
// and a second run continues with the next indices: how the self-play
// service changes networks between games.
TEST(GameRunner, DrainFinishesGamesInProgressAndStartsNone) {
  auto options = small_run(0, 4, 2);
  nn::BatchEvaluator evaluator(uniform(), {});
  GameRunner runner(evaluator, options);
  std::atomic<bool> drain{false};
  std::vector<std::uint64_t> indices;
  std::thread drainer([&] {
    while (runner.stats().games < 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    drain = true;
  });
  runner.run([&](record::GameRecord&& r) { indices.push_back(r.index); }, nullptr, &drain);
  drainer.join();
  std::sort(indices.begin(), indices.end());
  // Every index handed out was finished: 0..n-1 with no gap.
  ASSERT_GE(indices.size(), 3u);
  for (std::size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(indices[i], i);
  EXPECT_EQ(runner.stats().games, indices.size());
  // While draining, a run starts nothing and returns at once.
  runner.run([&](record::GameRecord&&) { ADD_FAILURE() << "a game started while draining"; }, nullptr,
             &drain);
  drain = false;
  auto more = small_run(0, 4, 2);
  std::atomic<bool> stop{false};
  std::uint64_t first_new = ~0ull;
  runner.run(
      [&](record::GameRecord&& r) {
        first_new = std::min(first_new, r.index);
        stop = true;
      },
      &stop, &drain);
  EXPECT_GE(first_new, indices.size());
}

class FailingBackend : public nn::InferenceBackend {
 public:
  void forward(std::span<const nn::InputPlanes>, std::span<float>, std::span<nn::Wdl>) override {
    throw Error("device lost");
  }
  std::string describe() const override { return "failing"; }
};

TEST(GameRunner, BackendFailureReachesTheCaller) {
  nn::BatchEvaluator evaluator(std::make_shared<FailingBackend>(), {});
  GameRunner runner(evaluator, small_run(4, 4, 2));
  EXPECT_THROW(runner.run({}), Error);
}

TEST(GameRunner, OptionsAreValidated) {
  nn::BatchEvaluator evaluator(uniform(), {});
  auto options = small_run(1, 0, 1);
  auto r = options.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("concurrent games"), std::string::npos);
  options = small_run(1, 1, 1);
  options.start_fen = "not a fen";
  EXPECT_FALSE(options.validate());
  EXPECT_THROW(GameRunner(evaluator, options), Error);
}

}  // namespace
}  // namespace chessrl::selfplay

namespace chessrl::selfplay {
namespace {

// The watched games are the first slot's: with one slot, every game in turn;
// `current` is the last one played (finished), `previous` the one before it,
// each with the moves and result of its record.
TEST(GameRunnerWatch, FollowsTheFirstSlotsGames) {
  GameRunnerOptions options = small_run(3, 1, 1);
  nn::BatchEvaluator evaluator(uniform(), {.max_batch = 64});
  GameRunner runner(evaluator, options);
  EXPECT_FALSE(runner.watched().current.has_value());
  std::vector<record::GameRecord> games;
  runner.run([&](record::GameRecord&& r) { games.push_back(std::move(r)); });
  ASSERT_EQ(games.size(), 3u);
  const WatchedGames watched = runner.watched();
  ASSERT_TRUE(watched.current && watched.previous);
  for (const auto& [game, record] :
       {std::pair{*watched.current, games[2]}, std::pair{*watched.previous, games[1]}}) {
    EXPECT_EQ(game.id, record.id);
    EXPECT_EQ(game.start_fen, record.start_fen);
    EXPECT_EQ(game.moves, record.moves);
    EXPECT_EQ(game.result, record.result);
    EXPECT_TRUE(game.result.is_over());
    EXPECT_GE(game.max_plies, int(record.moves.size()));
  }
}

// While a game is played, the watched copy grows move by move and is not over.
TEST(GameRunnerWatch, ShowsTheGameInProgress) {
  GameRunnerOptions options = small_run(0, 2, 1);
  nn::BatchEvaluator evaluator(uniform(), {.max_batch = 64});
  GameRunner runner(evaluator, options);
  std::atomic<bool> stop{false};
  std::thread player([&] { runner.run([](record::GameRecord&&) {}, &stop); });
  std::size_t seen = 0;
  bool saw_in_progress = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!saw_in_progress && std::chrono::steady_clock::now() < deadline) {
    const WatchedGames w = runner.watched();
    if (w.current && !w.current->result.is_over() && w.current->moves.size() > seen) {
      if (seen > 0) saw_in_progress = true;  // two sightings: it grew while in progress
      seen = w.current->moves.size();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  player.join();
  EXPECT_TRUE(saw_in_progress);
}

}  // namespace
}  // namespace chessrl::selfplay
