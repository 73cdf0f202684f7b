// The evaluator against a real model registry (the replay service over the
// in-memory stores, in-process on a loopback port) with tiny random networks
// (1 block x 8 filters) and tiny matches:
//   - in-process (the library): the first version becomes best without a
//     match; the second plays the best, its line lands in results.jsonl, its
//     PGN parses, the score rule decides `best`, the metrics carry every
//     opponent; a restart does not redo a version; an anchor that does not
//     start is skipped; the service loop evaluates the newest version and
//     stops mid-match writing nothing of it;
//   - the chessrl-evaluator binary: --once prints the summary (with the real
//     stockfish as an --engine anchor and as the --ladder's first rung; a
//     ladder whose engine is missing is said once and left out); bad options
//     and a bad --engine exit non-zero naming them; with the registry down it
//     keeps running, /healthz turns 503 after --unhealthy-after, SIGTERM exits 0.
#include "evaluator.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/refusing_port.h"
#include "chessrl/chess/pgn.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "child_process.h"
#include "hanging_registry.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::evaluator_service {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using Outcome = Evaluation::Outcome;

using testing::Child;
using testing::http_get;
using testing::slurp;

std::vector<Json> json_lines(const std::string& path) {
  std::vector<Json> out;
  std::istringstream lines(slurp(path));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

// A fresh 1x8 network with weights from `seed`, as checkpoint bytes.
std::string tiny_model(std::uint64_t seed) {
  auto config = nn::parse_network_name("1x8");
  EXPECT_TRUE(config.ok());
  nn::ModelInfo info;
  info.step = static_cast<std::int64_t>(seed) * 100;
  return nn::serialize_checkpoint(nn::fresh_checkpoint(*config, seed, info));
}

// Small everything: a few seconds per evaluation on one core.
EvaluatorOptions tiny_options(int port, const std::string& state_dir) {
  EvaluatorOptions o;
  o.registry = "127.0.0.1:" + std::to_string(port);
  o.metrics_listen = "off";
  o.visits = 8;
  o.leaves = 4;
  o.threads = 2;
  o.nn_threads = 1;
  o.max_plies = 60;
  o.pairs = 1;
  o.anchor_pairs = 1;
  o.poll_s = 1;
  o.state_dir = state_dir;
  return o;
}

class EvaluatorTest : public ::testing::Test {
 protected:
  EvaluatorTest() : games_(1000) {
    server_ = std::make_unique<replay_service::ReplayServer>(games_, models_, registry_,
                                                             testing::fast_server_options());
    client_ = std::make_unique<rpc::ModelRegistryClient>(testing::single_try_client(port()));
    char pattern[] = "/tmp/chessrl-evaluator-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    EXPECT_NE(made, nullptr);
    dir_ = made;
  }
  ~EvaluatorTest() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(dir_, ignored);
  }

  int port() const { return server_->port(); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  void publish(std::uint64_t version) {
    v1::ModelInfo info;
    info.set_version(version);
    info.set_step(version * 100);
    auto published = client_->publish(info, tiny_model(version));
    ASSERT_TRUE(published.ok()) << published.error();
  }
  std::uint64_t best_version() {
    auto best = client_->best();
    EXPECT_TRUE(best.ok()) << best.error();
    return best.ok() && best->has_value() ? (*best)->version() : 0;
  }

  // An evaluator whose log lines are kept (thread-safe: the watch thread logs too).
  std::unique_ptr<Evaluator> make(const EvaluatorOptions& options, metrics::Registry& metrics) {
    auto made = Evaluator::create(options, metrics, [this](const std::string& line) {
      std::lock_guard lock(log_mutex_);
      log_ += line + "\n";
    });
    EXPECT_TRUE(made.ok()) << made.error();
    return made.ok() ? std::move(made).value() : nullptr;
  }
  std::string log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<replay_service::ReplayServer> server_;
  std::unique_ptr<rpc::ModelRegistryClient> client_;
  std::string dir_;
  std::mutex log_mutex_;
  std::string log_;
};

TEST_F(EvaluatorTest, FirstVersionBecomesBestThenTheSecondIsGatedAndPlaysTheAnchors) {
  EvaluatorOptions options = tiny_options(port(), path("state"));
  // An engine that cannot start: skipped this round, not fatal.
  options.engines = {"uci:/nonexistent/chessrl-no-engine;depth=1;name=ghost"};
  metrics::Registry metrics;
  auto evaluator = make(options, metrics);
  ASSERT_NE(evaluator, nullptr);
  std::atomic<bool> stop{false};

  // Nothing published yet: nothing to do.
  Evaluation none = evaluator->evaluate_latest(stop);
  EXPECT_EQ(none.outcome, Outcome::kDone) << none.error;
  EXPECT_FALSE(none.report.evaluated);

  publish(1);
  Evaluation first = evaluator->evaluate_latest(stop);
  ASSERT_EQ(first.outcome, Outcome::kDone) << first.error << "\n" << log();
  EXPECT_TRUE(first.report.evaluated);
  EXPECT_EQ(first.report.candidate, 1u);
  EXPECT_TRUE(first.report.promoted);
  EXPECT_EQ(first.report.best_before, 0u);
  EXPECT_EQ(first.report.best_after, 1u);
  EXPECT_EQ(best_version(), 1u);
  EXPECT_NE(log().find("v1 is now best without a match"), std::string::npos) << log();
  // The gauntlet only: random and greedy played, the ghost was skipped.
  ASSERT_EQ(first.report.matches.size(), 2u);
  EXPECT_EQ(first.report.matches[0].opponent, "random");
  EXPECT_EQ(first.report.matches[1].opponent, "greedy");
  ASSERT_EQ(first.report.skipped.size(), 1u);
  EXPECT_EQ(first.report.skipped[0].rfind("ghost: ", 0), 0u) << first.report.skipped[0];
  EXPECT_NE(log().find("anchor ghost skipped this round"), std::string::npos) << log();

  publish(2);
  Evaluation second = evaluator->evaluate_latest(stop);
  ASSERT_EQ(second.outcome, Outcome::kDone) << second.error << "\n" << log();
  EXPECT_EQ(second.report.candidate, 2u);
  EXPECT_EQ(second.report.best_before, 1u);
  ASSERT_EQ(second.report.matches.size(), 3u);
  const MatchRecord& gating = second.report.matches[0];
  EXPECT_EQ(gating.opponent, "best");
  EXPECT_EQ(gating.opponent_version, 1u);
  EXPECT_EQ(gating.score.games(), 2);
  // The score rule (--promote-score 0.5): above it promotes, a tie keeps the best.
  const bool should_promote = gating.score.score() > 0.5;
  EXPECT_EQ(second.report.promoted, should_promote);
  EXPECT_EQ(best_version(), should_promote ? 2u : 1u);
  EXPECT_EQ(second.report.best_after, best_version());
  EXPECT_NE(log().find("v2 vs best v1: "), std::string::npos) << log();

  // results.jsonl: v1's two anchors, then v2's gating match and anchors.
  const auto results = json_lines(path("state/results.jsonl"));
  ASSERT_EQ(results.size(), 5u);
  const Json& line = results[2];
  EXPECT_EQ(line["candidate"], 2);
  EXPECT_EQ(line["opponent"], "best");
  EXPECT_EQ(line["opponent_version"], 1);
  EXPECT_EQ(line["games"], 2);
  EXPECT_EQ(line["wins"].get<int>() + line["draws"].get<int>() + line["losses"].get<int>(), 2);
  EXPECT_EQ(line["promoted"], should_promote);
  EXPECT_NEAR(line["score"].get<double>(), gating.score.score(), 1e-12);
  EXPECT_LE(line["lower"].get<double>(), line["elo"].get<double>());
  EXPECT_GE(line["upper"].get<double>(), line["elo"].get<double>());
  EXPECT_EQ(results[3]["opponent"], "random");
  EXPECT_EQ(results[4]["opponent"], "greedy");

  // The PGN files: 2 * pairs games each, which parse and name the players.
  auto match_games = chess::read_pgn_games(slurp(path("state/pgn/match-v2-v1.pgn")));
  ASSERT_TRUE(match_games.ok()) << match_games.error();
  ASSERT_EQ(match_games->size(), 2u);
  EXPECT_EQ((*match_games)[0].white, "chessrl-v2");
  EXPECT_EQ((*match_games)[0].black, "chessrl-v1");
  EXPECT_EQ((*match_games)[1].white, "chessrl-v1");
  auto gauntlet_games = chess::read_pgn_games(slurp(path("state/pgn/gauntlet-v2.pgn")));
  ASSERT_TRUE(gauntlet_games.ok()) << gauntlet_games.error();
  EXPECT_EQ(gauntlet_games->size(), 4u);  // random and greedy, one pair each

  // Both models were kept, as checkpoints.
  for (const char* file : {"state/models/model-v1.chrl", "state/models/model-v2.chrl"}) {
    auto model = nn::load_checkpoint_file(path(file));
    EXPECT_TRUE(model.ok()) << file << ": " << (model.ok() ? "" : model.error());
  }

  // The metrics.
  const std::string text = metrics.serialize();
  for (const char* series :
       {"chessrl_eval_elo{opponent=\"random\"} ", "chessrl_eval_elo{opponent=\"greedy\"} ",
        "chessrl_eval_elo{opponent=\"best\"} ", "chessrl_eval_elo_lower{opponent=\"best\"} ",
        "chessrl_eval_score{opponent=\"best\"} ", "chessrl_eval_matches_total 5\n",
        "chessrl_model_version 2\n",
        "chessrl_eval_games_total{opponent=\"random\",result=\"win\"} "}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
  EXPECT_NE(text.find(should_promote ? "chessrl_eval_promotions_total 2\n"
                                     : "chessrl_eval_promotions_total 1\n"),
            std::string::npos)
      << text;

  // A restart on the same state directory does not redo v2.
  metrics::Registry metrics2;
  auto restarted = make(options, metrics2);
  ASSERT_NE(restarted, nullptr);
  EXPECT_EQ(restarted->last_evaluated(), 2u);
  Evaluation again = restarted->evaluate_latest(stop);
  EXPECT_EQ(again.outcome, Outcome::kDone);
  EXPECT_FALSE(again.report.evaluated);
  EXPECT_NE(again.report.note.find("already evaluated"), std::string::npos) << again.report.note;
  EXPECT_EQ(json_lines(path("state/results.jsonl")).size(), 5u);
}

TEST_F(EvaluatorTest, AScoreThresholdOfOneNeverPromotes) {
  EvaluatorOptions options = tiny_options(port(), path("state"));
  options.promote_score = 1.0;
  options.gauntlet_every = 0;
  options.save_models = false;
  metrics::Registry metrics;
  auto evaluator = make(options, metrics);
  ASSERT_NE(evaluator, nullptr);
  std::atomic<bool> stop{false};
  publish(1);
  ASSERT_EQ(evaluator->evaluate(1, stop).outcome, Outcome::kDone) << log();
  publish(2);
  Evaluation second = evaluator->evaluate(2, stop);
  ASSERT_EQ(second.outcome, Outcome::kDone) << second.error << "\n" << log();
  ASSERT_EQ(second.report.matches.size(), 1u);  // no gauntlet
  EXPECT_FALSE(second.report.promoted);
  EXPECT_EQ(best_version(), 1u);
  EXPECT_NE(log().find("-> v1 stays best"), std::string::npos) << log();
  EXPECT_FALSE(fs::exists(path("state/models/model-v2.chrl")));
  EXPECT_FALSE(fs::exists(path("state/pgn/gauntlet-v2.pgn")));
}

// Saved models are bounded: the best and the newest --keep-models stay, the
// others are deleted after each evaluation (before, every version stayed).
TEST_F(EvaluatorTest, SavedModelsArePrunedToTheBestAndTheNewest) {
  EvaluatorOptions options = tiny_options(port(), path("state"));
  options.promote_score = 1.0;  // v1 stays the best
  options.gauntlet_every = 0;
  options.keep_models = 2;
  metrics::Registry metrics;
  auto evaluator = make(options, metrics);
  ASSERT_NE(evaluator, nullptr);
  std::atomic<bool> stop{false};
  const std::string other = path("state/models/notes.txt");  // not a saved model: left alone
  { std::ofstream(other) << "kept\n"; }
  for (std::uint64_t v = 1; v <= 4; ++v) {
    publish(v);
    ASSERT_EQ(evaluator->evaluate(v, stop).outcome, Outcome::kDone) << log();
  }
  EXPECT_EQ(best_version(), 1u);
  EXPECT_TRUE(fs::exists(path("state/models/model-v1.chrl"))) << "the best";
  EXPECT_FALSE(fs::exists(path("state/models/model-v2.chrl"))) << log();
  EXPECT_TRUE(fs::exists(path("state/models/model-v3.chrl")));
  EXPECT_TRUE(fs::exists(path("state/models/model-v4.chrl")));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_NE(log().find("deleted the saved models v2 (--keep-models 2"), std::string::npos)
      << log();

  // --keep-models is checked.
  EvaluatorOptions bad = options;
  bad.keep_models = -1;
  ASSERT_FALSE(bad.validate().ok());
  EXPECT_NE(bad.validate().error().find("--keep-models -1"), std::string::npos);
}

// The run's first saved version is never pruned, whichever is best: it is the
// baseline a run's progress is measured against.
TEST_F(EvaluatorTest, TheFirstSavedModelIsKept) {
  EvaluatorOptions options = tiny_options(port(), path("state"));
  options.promote_score = 0.0;  // most candidates become the best: v1 is soon not
  options.gauntlet_every = 0;
  options.keep_models = 2;
  metrics::Registry metrics;
  auto evaluator = make(options, metrics);
  ASSERT_NE(evaluator, nullptr);
  std::atomic<bool> stop{false};
  for (std::uint64_t v = 1; v <= 5; ++v) {
    publish(v);
    ASSERT_EQ(evaluator->evaluate(v, stop).outcome, Outcome::kDone) << log();
  }
  const std::uint64_t best = best_version();
  for (std::uint64_t v = 1; v <= 5; ++v) {
    const bool kept = v == 1 || v == best || v >= 4;
    EXPECT_EQ(fs::exists(path("state/models/model-v" + std::to_string(v) + ".chrl")), kept)
        << "v" << v << " (best v" << best << ")\n" << log();
  }
  EXPECT_NE(log().find("the first, the best and the newest are kept"), std::string::npos) << log();
}

TEST_F(EvaluatorTest, TheLoopEvaluatesTheNewestVersionAndStopsMidMatchWritingNothing) {
  publish(1);
  publish(2);
  publish(3);
  EvaluatorOptions options = tiny_options(port(), path("state"));
  options.anchors = "";  // gating only, so the loop turns quickly
  metrics::Registry metrics;
  auto evaluator = make(options, metrics);
  ASSERT_NE(evaluator, nullptr);
  std::atomic<bool> stop{false};
  std::optional<Result<void>> ran;
  std::thread loop([&] { ran = evaluator->run(stop); });
  auto wait_for = [&](std::uint64_t version, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (evaluator->last_evaluated() < version && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    return evaluator->last_evaluated() >= version;
  };
  // v1 and v2 are skipped: v3 is the newest, and becomes best without a match.
  ASSERT_TRUE(wait_for(3, 30s)) << log();
  EXPECT_NE(log().find("starting at v3"), std::string::npos) << log();
  EXPECT_EQ(best_version(), 3u);
  publish(4);
  ASSERT_TRUE(wait_for(4, 30s)) << log();
  EXPECT_NE(log().find("v4 vs best v3: "), std::string::npos) << log();
  EXPECT_EQ(evaluator->health(), "");
  stop = true;
  loop.join();
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(ran->ok()) << ran->error();

  // Long matches, stopped a moment in: nothing of v5 is written.
  const auto lines_before = json_lines(path("state/results.jsonl")).size();
  EvaluatorOptions slow = options;
  slow.pairs = 200;
  slow.max_plies = 300;
  slow.visits = 64;
  auto slow_evaluator = make(slow, metrics);
  ASSERT_NE(slow_evaluator, nullptr);
  publish(5);
  stop = false;
  std::thread slow_loop([&] { ran = slow_evaluator->run(stop); });
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (log().find("v5 loaded") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(log().find("v5 loaded"), std::string::npos) << log();
  std::this_thread::sleep_for(500ms);
  const auto stopped_at = std::chrono::steady_clock::now();
  stop = true;
  slow_loop.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, 10s);
  ASSERT_TRUE(ran->ok()) << ran->error();
  EXPECT_NE(log().find("stopped during v5"), std::string::npos) << log();
  EXPECT_EQ(json_lines(path("state/results.jsonl")).size(), lines_before);
  EXPECT_FALSE(fs::exists(path("state/pgn/match-v5-v") + std::to_string(best_version()) + ".pgn"));
  EXPECT_EQ(slow_evaluator->last_evaluated(), 4u);
  EXPECT_EQ(json_lines(path("state/state.json"))[0]["last_evaluated"], 4);
}

// ------------------------------------------------------------ the binary

std::vector<std::string> binary_args(int registry_port, const std::string& state_dir,
                                     std::vector<std::string> extra) {
  std::vector<std::string> args = {CHESSRL_EVALUATOR_BINARY,
                                   "--registry",
                                   "127.0.0.1:" + std::to_string(registry_port),
                                   "--state-dir",
                                   state_dir,
                                   "--visits",
                                   "8",
                                   "--leaves",
                                   "4",
                                   "--pairs",
                                   "1",
                                   "--anchor-pairs",
                                   "1",
                                   "--max-plies",
                                   "60",
                                   "--nn-threads",
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_F(EvaluatorTest, BinaryOncePrintsTheSummaryAndGatesTheSecondVersion) {
  publish(1);
  {
    // The anchors: the random mover and Stockfish at its weakest, few nodes;
    // then the ladder's first rung, the real stockfish at Skill Level 0, depth 1.
    Child child(binary_args(port(), path("state"),
                            {"--once", "--anchors", "random", "--engine",
                             "uci:stockfish;Skill Level=0;nodes=50;name=sf-skill0", "--ladder",
                             "stockfish:0:1,stockfish:1:2", "--metrics-listen", "off"}),
                dir_, "once1");
    const auto code = child.wait(60s);
    ASSERT_EQ(code, std::optional<int>(0)) << child.err();
    const Json summary = Json::parse(child.out());
    EXPECT_EQ(summary["candidate"], 1);
    EXPECT_EQ(summary["evaluated"], true);
    EXPECT_EQ(summary["promoted"], true);
    EXPECT_EQ(summary["best"], 1);
    ASSERT_EQ(summary["matches"].size(), 3u) << child.out() << child.err();
    EXPECT_EQ(summary["matches"][0]["opponent"], "random");
    EXPECT_EQ(summary["matches"][1]["opponent"], "sf-skill0");
    EXPECT_EQ(summary["matches"][1]["games"], 2);
    EXPECT_EQ(summary["matches"][1]["forfeits"], 0);
    EXPECT_EQ(summary["matches"][2]["opponent"], "stockfish-skill0");
    EXPECT_EQ(summary["matches"][2]["games"], 2);
    EXPECT_EQ(summary["matches"][2]["forfeits"], 0);
    EXPECT_TRUE(summary["skipped"].empty()) << summary["skipped"];
    // An untrained 1x8 network does not score half against Skill Level 0: still rung 1.
    EXPECT_EQ(summary["ladder_rung"], "stockfish-skill0") << child.out();
    EXPECT_NE(child.err().find("the ladder: stockfish-skill0, stockfish-skill1; in play: "
                               "stockfish-skill0 (rung 1 of 2)"),
              std::string::npos)
        << child.err();
    EXPECT_EQ(json_lines(path("state/state.json"))[0]["ladder_rung"], "stockfish-skill0");
    auto games = chess::read_pgn_games(slurp(path("state/pgn/gauntlet-v1.pgn")));
    ASSERT_TRUE(games.ok()) << games.error();
    ASSERT_EQ(games->size(), 6u);
    EXPECT_EQ((*games)[2].white, "chessrl-v1");
    EXPECT_EQ((*games)[2].black, "sf-skill0");
    EXPECT_EQ((*games)[5].white, "stockfish-skill0");
  }
  publish(2);
  // A ladder whose engine is not installed: said once, and the evaluation goes on without it.
  Child child(binary_args(port(), path("state"),
                          {"--once", "--anchors", "", "--ladder", "/nonexistent/stockfish:0:1",
                           "--metrics-listen", "off"}),
              dir_, "once2");
  const auto code = child.wait(60s);
  ASSERT_EQ(code, std::optional<int>(0)) << child.err();
  const Json summary = Json::parse(child.out());
  EXPECT_EQ(summary["candidate"], 2);
  EXPECT_EQ(summary["best_before"], 1);
  ASSERT_EQ(summary["matches"].size(), 1u);
  EXPECT_EQ(summary["matches"][0]["opponent"], "best");
  EXPECT_EQ(summary["matches"][0]["games"], 2);
  EXPECT_EQ(summary["best"], best_version());
  EXPECT_NE(child.err().find("chessrl-evaluator: v2 vs best v1: "), std::string::npos)
      << child.err();
  EXPECT_TRUE(fs::exists(path("state/pgn/match-v2-v1.pgn")));
  const std::string off = "the Stockfish ladder (--ladder /nonexistent/stockfish:0:1) is off";
  const auto said = child.err().find(off);
  EXPECT_NE(said, std::string::npos) << child.err();
  EXPECT_EQ(child.err().find(off, said + 1), std::string::npos) << "said twice:\n" << child.err();
  EXPECT_FALSE(summary.contains("ladder_rung")) << child.out();
  // The rung reached stays saved for when the engine is back.
  EXPECT_EQ(json_lines(path("state/state.json"))[0]["ladder_rung"], "stockfish-skill0");
}

TEST_F(EvaluatorTest, BinaryRefusesUnknownOptionsAndBadEnginesNamingThem) {
  {
    Child child(binary_args(port(), path("state"), {"--no-such-option", "1"}), dir_, "bad1");
    const auto code = child.wait(30s);
    ASSERT_TRUE(code.has_value());
    EXPECT_NE(*code, 0);
    EXPECT_NE((child.out() + child.err()).find("--no-such-option"), std::string::npos)
        << child.err();
  }
  {
    Child child(binary_args(port(), path("state"), {"--engine", "uci:stockfish;movetime=soon"}),
                dir_, "bad2");
    const auto code = child.wait(30s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 2);
    EXPECT_NE(child.err().find("uci:stockfish;movetime=soon"), std::string::npos) << child.err();
  }
  {
    Child child(binary_args(port(), path("state"), {"--engine", "stockfish"}), dir_, "bad3");
    const auto code = child.wait(30s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 2);
    EXPECT_NE(child.err().find("--engine stockfish"), std::string::npos) << child.err();
  }
  EXPECT_FALSE(fs::exists(path("state")));  // nothing was started
}

TEST_F(EvaluatorTest, BinaryKeepsRetryingADownRegistryAndReportsItOnHealthz) {
  const testing::RefusingPort down;  // no registry: connects are refused
  Child child(
      binary_args(down.port(), path("state"),
                  {"--metrics-listen", "127.0.0.1:0", "--unhealthy-after", "1", "--poll", "1"}),
      dir_, "down");
  int metrics_port = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (metrics_port == 0 && std::chrono::steady_clock::now() < deadline) {
    const std::string err = child.err();
    const auto at = err.find("metrics on port ");
    if (at != std::string::npos) metrics_port = std::atoi(err.c_str() + at + 16);
    if (auto code = child.wait(0ms)) FAIL() << "exited " << *code << ":\n" << child.err();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GT(metrics_port, 0) << child.err();
  // 503 once the registry has been unreachable for over a second.
  std::string health;
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < until) {
    health = http_get(metrics_port, "/healthz");
    if (health.find(" 503 ") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(health.find(" 503 "), std::string::npos) << health << "\n" << child.err();
  EXPECT_NE(health.find("unreachable"), std::string::npos) << health;
  EXPECT_NE(http_get(metrics_port, "/metrics").find("chessrl_build_info"), std::string::npos);
  EXPECT_FALSE(child.wait(0ms).has_value()) << child.err();  // still running
  EXPECT_NE(child.err().find("unreachable (will retry)"), std::string::npos) << child.err();

  // SIGTERM ends it promptly even while the watch stream is reconnecting.
  const auto signalled = std::chrono::steady_clock::now();
  child.signal(SIGTERM);
  const auto code = child.wait(15s);
  ASSERT_TRUE(code.has_value()) << child.err();
  EXPECT_EQ(*code, 0) << child.err();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 5s) << child.err();
}

TEST_F(EvaluatorTest, BinaryStopsWithinTwentySecondsWhileARegistryCallHangs) {
  // Every registry call blocks until its deadline (60 s here, times 5 attempts).
  testing::HangingRegistry hanging;
  Child child(binary_args(hanging.port(), path("state"), {"--rpc-deadline", "60"}), dir_, "hang");
  const auto in_call = std::chrono::steady_clock::now() + 30s;
  while (hanging.calls() == 0 && std::chrono::steady_clock::now() < in_call) {
    ASSERT_FALSE(child.wait(0ms).has_value()) << child.err();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GT(hanging.calls(), 0) << "the evaluator never called the registry:\n" << child.err();
  const auto signalled = std::chrono::steady_clock::now();
  child.signal(SIGTERM);
  const auto code = child.wait(40s);
  const auto took = std::chrono::steady_clock::now() - signalled;
  hanging.shutdown();
  ASSERT_TRUE(code.has_value()) << "still running 40 s after SIGTERM:\n" << child.err();
  EXPECT_EQ(*code, 0) << child.err();
  EXPECT_LT(took, 25s) << child.err();
  EXPECT_NE(child.err().find("still busy 20 s after the stop request"), std::string::npos)
      << child.err();
}

}  // namespace
}  // namespace chessrl::evaluator_service
