// The self-play service's pieces in-process: games from a real GameRunner
// converted to the wire format pass the replay service's validator; replica
// seeds; loading models (and refusing bad ones); and the GamePusher against a fake push function
// (outage, recovery, order, shedding, rejections, duplicates, flush deadlines, the --acked-log
// lines, appended across restarts; an unopenable --acked-log refused at start-up).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/config/config.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_network.h"
#include "chessrl/replay/move_codec.h"
#include "chessrl/replay/validation.h"
#include "chessrl/selfplay/game_runner.h"
#include "game_conversion.h"
#include "game_pusher.h"
#include "model_follower.h"
#include "replica.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

std::vector<selfplay::GameRecord> play(
    std::uint64_t seed, int games, const std::string& fen = "",
    nn::FakeBackend::Mode mode = nn::FakeBackend::Mode::kRandom) {
  selfplay::GameRunnerOptions o;
  o.concurrent_games = 4;
  o.threads = 1;
  o.leaves_per_search = 4;
  o.seed = seed;
  o.max_games = std::uint64_t(games);
  o.start_fen = fen;
  o.config.playouts = {.full_visits = 16, .reduced_visits = 8, .full_fraction = 0.5f};
  o.config.max_plies = 80;
  nn::BatchEvaluator evaluator(std::make_shared<nn::FakeBackend>(mode, 7),
                               {.max_batch = 64, .batch_timeout = 100us});
  selfplay::GameRunner runner(evaluator, o);
  std::vector<selfplay::GameRecord> records;
  runner.run([&](selfplay::GameRecord&& r) { records.push_back(std::move(r)); });
  return records;
}

void expect_valid(const selfplay::GameRecord& record, const v1::Game& game) {
  const replay::Validation checked = replay::validate_game(game);
  if (const auto* rejection = std::get_if<replay::Rejection>(&checked)) {
    FAIL() << record.id << ": " << replay::reason_label(rejection->reason) << ": "
           << rejection->detail;
  }
  const auto& stored = std::get<replay::StoredGame>(checked);
  EXPECT_EQ(stored.id, record.id);
  EXPECT_EQ(stored.positions.size(), record.targets.size());
}

TEST(GameConversion, RunnerGamesPassTheReplayValidator) {
  const auto records = play(11, 8);
  ASSERT_EQ(records.size(), 8u);
  std::set<v1::Termination> terminations;
  for (const auto& record : records) {
    const v1::Game game = to_wire_game(record, 42, "selfplay-7");
    expect_valid(record, game);
    EXPECT_EQ(game.id(), record.id);
    EXPECT_EQ(game.model_version(), 42u);
    EXPECT_EQ(game.producer(), "selfplay-7");
    EXPECT_TRUE(game.start_fen().empty());  // the standard start position
    ASSERT_EQ(game.moves_size(), int(record.moves.size()));
    ASSERT_EQ(game.targets_size(), int(record.targets.size()));
    EXPECT_NE(game.outcome(), v1::OUTCOME_UNSPECIFIED);
    terminations.insert(game.termination());

    // Every packed move decodes back to the move played.
    auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
    for (int i = 0; i < game.moves_size(); ++i) {
      const auto decoded = replay::decode_move(pos, game.moves(i));
      ASSERT_TRUE(decoded.has_value()) << record.id << " ply " << i;
      EXPECT_EQ(*decoded, record.moves[std::size_t(i)]);
      pos.make_move(*decoded);
    }
    for (int i = 0; i < game.targets_size(); ++i) {
      const auto& t = game.targets(i);
      const auto& r = record.targets[std::size_t(i)];
      EXPECT_EQ(t.ply(), std::uint32_t(r.ply));
      EXPECT_EQ(t.visits(), r.visits);
      EXPECT_FLOAT_EQ(t.root_value(), r.root_value);
      ASSERT_EQ(t.policy_moves_size(), int(r.policy.size()));
      ASSERT_EQ(t.policy_probs_size(), int(r.policy.size()));
    }
  }
  EXPECT_FALSE(terminations.empty());
}

TEST(GameConversion, PromotionsAndAnotherStartPositionPassTheValidator) {
  const std::string fen = "7k/PP6/8/8/8/8/6pp/K7 w - - 0 1";
  const auto records = play(5, 6, fen);
  ASSERT_EQ(records.size(), 6u);
  int promotions = 0;
  for (const auto& record : records) {
    const v1::Game game = to_wire_game(record, 0, "p");
    EXPECT_EQ(game.start_fen(), record.start_fen);
    expect_valid(record, game);
    for (const std::uint32_t code : game.moves()) promotions += code >= 4096 ? 1 : 0;
  }
  EXPECT_GT(promotions, 0);
}

TEST(ReplicaSeed, DiffersByReplicaAndRepeatsWithAFixedSeed) {
  EXPECT_NE(replica_seed("chess-rl-selfplay-0", 1), replica_seed("chess-rl-selfplay-1", 1));
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-1", 9));
  EXPECT_EQ(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-0", 9));
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-0", 10));
  // Without --seed every start draws a fresh nonce.
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", std::nullopt),
            choose_seed("chess-rl-selfplay-0", std::nullopt));
  // Each network generation of a run plays under its own runner seed.
  std::set<std::uint64_t> generations;
  for (std::uint64_t g = 0; g < 100; ++g) generations.insert(generation_seed(12345, g));
  EXPECT_EQ(generations.size(), 100u);
  EXPECT_EQ(generation_seed(12345, 0), 12345u);
}

TEST(ReplicaSeed, TwoReplicasPlayDifferentGamesWithDifferentIds) {
  const auto a = play(choose_seed("replica-a", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  const auto b = play(choose_seed("replica-b", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  std::set<std::string> ids;
  std::set<std::string> games;  // the moves, packed
  for (const auto* run : {&a, &b}) {
    for (const auto& r : *run) {
      ids.insert(r.id);
      std::string moves;
      for (const chess::Move m : r.moves) moves += std::to_string(replay::encode_move(m)) + " ";
      games.insert(moves);
    }
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(games.size(), 8u);
  // The same replica and seed (a restart with --seed) replays the same games,
  // under new ids.
  const auto again = play(choose_seed("replica-a", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  ASSERT_EQ(again.size(), a.size());
  std::map<std::uint64_t, std::vector<chess::Move>> by_index;
  for (const auto& r : a) by_index[r.index] = r.moves;
  for (const auto& r : again) {
    EXPECT_EQ(by_index[r.index], r.moves) << r.id;
    EXPECT_EQ(ids.count(r.id), 0u) << r.id;
  }
}

TEST(ModelLoading, BuildsACheckpointAndNamesWhatIsWrongWithOthers) {
  nn::Network network = nn::make_network(nn::parse_network_name("1x8").value_or_throw(), 3);
  const std::string blob = nn::serialize_checkpoint(nn::to_checkpoint(network, {}));
  nn::TorchBackendOptions options;
  options.threads = 1;
  auto model = load_model(blob, 7, options);
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(model->version, 7u);
  EXPECT_NE(model->description.find("1x8"), std::string::npos) << model->description;
  ASSERT_NE(model->backend, nullptr);

  auto garbage = load_model("not a checkpoint", 8, options);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().find("checkpoint"), std::string::npos) << garbage.error();
  auto truncated = load_model(std::string_view(blob).substr(0, blob.size() / 2), 9, options);
  EXPECT_FALSE(truncated.ok());
  auto missing = model_from_file("/nonexistent/model.ckpt", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/model.ckpt"), std::string::npos) << missing.error();

  const PlayingModel uniform = uniform_model();
  EXPECT_EQ(uniform.version, 0u);
  ASSERT_NE(uniform.backend, nullptr);
}

// --- GamePusher against a fake replay service

class FakeReplay {
 public:
  Result<v1::PushGamesReply> push(const v1::PushGamesRequest& request) {
    std::lock_guard lock(mutex_);
    ++calls_;
    for (const auto& g : request.games()) ++offered_[g.id()];
    if (!up_) return fail("PushGames: UNAVAILABLE: the fake replay is down");
    v1::PushGamesReply reply;
    for (const auto& g : request.games()) {
      v1::PushResult* r = reply.add_results();
      r->set_id(g.id());
      if (auto it = reject_.find(g.id()); it != reject_.end()) {
        r->set_status(v1::REJECTED);
        r->set_reason(it->second);
        r->set_detail("ply 3: made up");
      } else if (std::find(stored_.begin(), stored_.end(), g.id()) != stored_.end()) {
        r->set_status(v1::DUPLICATE);
      } else {
        r->set_status(v1::STORED);
        stored_.push_back(g.id());
      }
    }
    if (truncate_next_) {
      truncate_next_ = false;
      reply.mutable_results()->RemoveLast();
    }
    return reply;
  }
  PushFunction function() {
    return [this](const v1::PushGamesRequest& request, Clock::time_point) { return push(request); };
  }
  void set_up(bool up) {
    std::lock_guard lock(mutex_);
    up_ = up;
  }
  void reject(const std::string& id, const std::string& reason) {
    std::lock_guard lock(mutex_);
    reject_[id] = reason;
  }
  void pre_store(const std::string& id) {
    std::lock_guard lock(mutex_);
    stored_.push_back(id);
  }
  void truncate_next_reply() {
    std::lock_guard lock(mutex_);
    truncate_next_ = true;
  }
  std::vector<std::string> stored() {
    std::lock_guard lock(mutex_);
    return stored_;
  }
  int offered(const std::string& id) {
    std::lock_guard lock(mutex_);
    return offered_[id];
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  bool up_ = true;
  bool truncate_next_ = false;
  std::vector<std::string> stored_;
  std::map<std::string, std::string> reject_;
  std::map<std::string, int> offered_;
  int calls_ = 0;
};

class Lines {
 public:
  LogFunction function() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  int count(const std::string& text) {
    std::lock_guard lock(mutex_);
    return int(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return l.find(text) != std::string::npos;
    }));
  }
  std::string all() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

v1::Game numbered(int i) {
  v1::Game g;
  g.set_id("game-" + std::to_string(i));
  return g;
}

std::vector<std::string> ids(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("game-" + std::to_string(i));
  return out;
}

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

double value(metrics::Registry& registry, const std::string& name,
             const metrics::Labels& labels = {}) {
  return registry.counter(name, "x", labels).value();
}

GamePusherOptions fast_options() {
  GamePusherOptions o;
  o.buffer_games = 64;
  o.batch_games = 4;
  o.interval = 10ms;
  o.backoff_min = 2ms;
  o.backoff_max = 20ms;
  return o;
}

TEST(GamePusher, BuffersThroughAnOutageAndPushesEverythingOnceInOrder) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.set_up(false);
  GamePusher pusher(replay.function(), fast_options(), registry, log.function());
  for (int i = 0; i < 10; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().failures >= 4; }));
  EXPECT_EQ(pusher.buffered(), 10u);
  EXPECT_TRUE(replay.stored().empty());
  EXPECT_EQ(registry.gauge("chessrl_selfplay_games_buffered", "x").value(), 10.0);
  EXPECT_GE(value(registry, "chessrl_selfplay_push_failures_total"), 4.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 0.0);

  // Backoff: far fewer calls than the outage's milliseconds.
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(replay.calls(), 40) << "no exponential backoff";

  replay.set_up(true);
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }));
  EXPECT_EQ(replay.stored(), ids(0, 10));
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 10.0);
  EXPECT_EQ(registry.gauge("chessrl_selfplay_games_buffered", "x").value(), 0.0);
  // The outage is logged once when it starts and once when it ends.
  EXPECT_EQ(log.count("cannot push"), 1) << log.all();
  EXPECT_EQ(log.count("takes games again"), 1) << log.all();
  const GamePusherStats stats = pusher.stats();
  EXPECT_EQ(stats.stored, 10u);
  EXPECT_EQ(stats.shed, 0u);
  EXPECT_EQ(pusher.flush(1s), 0u);
}

TEST(GamePusher, ShedsTheOldestWhenFullCountedAndLogged) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o;
  o.buffer_games = 8;
  o.batch_games = 4;
  o.interval = std::chrono::hours(1);
  o.backoff_min = o.backoff_max = std::chrono::hours(1);  // one failed push, then quiet
  replay.set_up(false);
  GamePusher pusher(replay.function(), o, registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().failures == 1; }));
  for (int i = 4; i < 12; ++i) pusher.add(numbered(i));
  EXPECT_EQ(pusher.buffered(), 8u);
  EXPECT_EQ(pusher.stats().shed, 4u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_shed_total"), 4.0);
  EXPECT_GE(log.count("shed the oldest, game game-0"), 1) << log.all();

  replay.set_up(true);
  EXPECT_EQ(pusher.flush(5s), 0u);  // a flush retries at once, whatever the backoff
  EXPECT_EQ(replay.stored(), ids(4, 12));
}

TEST(GamePusher, CountsRejectionsByReasonAndDoesNotRetryThem) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.reject("game-2", "illegal_move");
  replay.reject("game-5", "something_new");
  replay.pre_store("game-6");  // a retried push: DUPLICATE counts as pushed
  GamePusher pusher(replay.function(), fast_options(), registry, log.function());
  for (int i = 0; i < 8; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().added == 8 && pusher.buffered() == 0; }));
  std::this_thread::sleep_for(50ms);
  const GamePusherStats stats = pusher.stats();
  EXPECT_EQ(stats.rejected, 2u);
  EXPECT_EQ(stats.rejected_by_reason.at("illegal_move"), 1u);
  EXPECT_EQ(stats.rejected_by_reason.at("other"), 1u);
  EXPECT_EQ(stats.duplicates, 1u);
  EXPECT_EQ(stats.stored, 5u);
  EXPECT_EQ(stats.pushed(), 6u);
  EXPECT_EQ(replay.offered("game-2"), 1);
  EXPECT_EQ(replay.offered("game-5"), 1);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "illegal_move"}}),
            1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "other"}}), 1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "bad_policy"}}),
            0.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 6.0);
  EXPECT_EQ(log.count("rejected game game-2 (illegal_move)"), 1) << log.all();
  // Only the fixed reason labels (and "other") ever appear.
  EXPECT_EQ(registry.serialize().find("something_new"), std::string::npos);
  EXPECT_EQ(GamePusher::reason_label("bad_result"), "bad_result");
  EXPECT_EQ(GamePusher::reason_label("nonsense"), "other");
}

TEST(GamePusher, RetriesABatchWhoseReplyDoesNotMatch) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.truncate_next_reply();
  GamePusher pusher(replay.function(), fast_options(), registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }));
  EXPECT_EQ(pusher.stats().failures, 1u);
  // The first push stored all four but its reply was cut short: the retry
  // finds them stored (DUPLICATE), and each is counted pushed once.
  EXPECT_EQ(replay.stored(), ids(0, 4));
  EXPECT_EQ(pusher.stats().duplicates, 4u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 4.0);
}

TEST(GamePusher, PushesASmallBatchAfterTheInterval) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o = fast_options();
  o.batch_games = 32;
  o.interval = 100ms;
  GamePusher pusher(replay.function(), o, registry, log.function());
  pusher.add(numbered(0));
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(replay.stored().empty());  // neither a full batch nor the interval yet
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }, 2s));
  EXPECT_EQ(replay.stored(), ids(0, 1));

  // Again once the buffer has drained and the thread waits on an empty one.
  std::this_thread::sleep_for(50ms);
  pusher.add(numbered(1));
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }, 2s));
  EXPECT_EQ(replay.stored(), ids(0, 2));
}

TEST(GamePusher, FlushGivesUpAtItsDeadlineAndSaysHowManyAreLeft) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.set_up(false);
  GamePusher pusher(replay.function(), fast_options(), registry, log.function());
  for (int i = 0; i < 5; ++i) pusher.add(numbered(i));
  const auto start = Clock::now();
  EXPECT_EQ(pusher.flush(300ms), 5u);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 3s);
  EXPECT_TRUE(replay.stored().empty());
}

TEST(GamePusher, FlushPushesEverythingWhenTheReplayAnswers) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o = fast_options();
  o.interval = std::chrono::hours(1);
  o.batch_games = 16;
  GamePusher pusher(replay.function(), o, registry, log.function());
  for (int i = 0; i < 10; ++i) pusher.add(numbered(i));  // under a batch: waits for the interval
  EXPECT_EQ(pusher.flush(5s), 0u);
  EXPECT_EQ(replay.stored(), ids(0, 10));
}

// --- --acked-log

std::string temp_dir() {
  char pattern[] = "/tmp/chessrl-selfplay-unit-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  EXPECT_NE(made, nullptr);
  return made ? made : "/tmp";
}

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(GamePusher, AppendsALinePerAnsweredGameToTheAckedLogAcrossRestarts) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/acked.log";
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.reject("game-2", "illegal_move");
  replay.reject("game-5", "something_new");
  replay.pre_store("game-6");
  const std::vector<std::string> first = {
      "game-0 stored",    "game-1 stored", "game-2 rejected illegal_move",
      "game-3 stored",    "game-4 stored", "game-5 rejected other",
      "game-6 duplicate", "game-7 stored"};
  {
    GamePusherOptions o = fast_options();
    o.acked_log = AckedLog::open(path).value_or_throw();
    GamePusher pusher(replay.function(), o, registry, log.function());
    for (int i = 0; i < 8; ++i) pusher.add(numbered(i));
    ASSERT_TRUE(eventually([&] { return pusher.stats().added == 8 && pusher.buffered() == 0; }));
    // In the file as the replies arrive, while the pusher still runs (no flush, no close).
    EXPECT_EQ(file_lines(path), first);
  }

  // A restarted pusher appends to the same file.
  GamePusherOptions o = fast_options();
  o.acked_log = AckedLog::open(path).value_or_throw();
  GamePusher pusher(replay.function(), o, registry, log.function());
  pusher.add(numbered(0));  // stored by the first: DUPLICATE
  pusher.add(numbered(8));
  EXPECT_EQ(pusher.flush(5s), 0u);
  std::vector<std::string> both = first;
  both.insert(both.end(), {"game-0 duplicate", "game-8 stored"});
  EXPECT_EQ(file_lines(path), both);
  EXPECT_EQ(log.count("--acked-log"), 0) << log.all();
  std::filesystem::remove_all(dir);
}

TEST(GamePusher, AnAckedLogThatCannotBeOpenedNamesTheOptionAndThePath) {
  const std::string dir = temp_dir();
  for (const std::string& path : {std::string("/nonexistent-dir/x"), dir}) {
    auto opened = AckedLog::open(path);
    ASSERT_FALSE(opened.ok()) << path;
    EXPECT_NE(opened.error().find("--acked-log " + path + ": cannot open"), std::string::npos)
        << opened.error();
  }

  // Through the options: a start-up error from resolve() (the flag or CHESSRL_ACKED_LOG).
  auto resolved = [](std::vector<std::string> args) -> Result<Settings> {
    Settings settings;
    CLI::App app{"test"};
    add_options(app, settings);
    config::finish(app);
    std::vector<const char*> argv = {"chessrl-selfplay"};
    for (const auto& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    if (auto r = resolve(settings, app); !r.ok()) return fail(r.error());
    return settings;
  };
  auto none = resolved({"--replica", "r"});
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->push.acked_log, nullptr);
  auto bad = resolved({"--replica", "r", "--acked-log", dir + "/missing/acked.log"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--acked-log " + dir + "/missing/acked.log"), std::string::npos)
      << bad.error();
  ::setenv("CHESSRL_ACKED_LOG", (dir + "/acked.log").c_str(), 1);
  auto from_env = resolved({"--replica", "r"});
  ::unsetenv("CHESSRL_ACKED_LOG");
  ASSERT_TRUE(from_env.ok()) << from_env.error();
  ASSERT_NE(from_env->push.acked_log, nullptr);
  EXPECT_EQ(from_env->push.acked_log->path(), dir + "/acked.log");
  EXPECT_TRUE(std::filesystem::exists(dir + "/acked.log"));

  // --version-stats the same way: refused at start-up, naming the option and the path.
  auto stats = resolved({"--replica", "r", "--version-stats", dir + "/missing/v.jsonl"});
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().find("--version-stats: cannot open " + dir + "/missing/v.jsonl"),
            std::string::npos)
      << stats.error();
  auto good = resolved({"--replica", "r", "--version-stats", dir + "/v.jsonl"});
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->version_stats, dir + "/v.jsonl");
  std::filesystem::remove_all(dir);
}

TEST(GamePusher, RejectsABatchLargerThanTheBuffer) {
  GamePusherOptions o;
  o.buffer_games = 4;
  o.batch_games = 8;
  auto valid = o.validate();
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().find("--push-batch"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::selfplay_service
