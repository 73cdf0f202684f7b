// One rule per fact: every game self-play writes is accepted by the replay
// service's validation and by the trainer's --data reader, and both give the
// trainer the same examples. Real games of libs/selfplay's GameRunner on a
// seeded random backend, with the settings that make each ending happen:
// resignation, adjudication and the move limit from the start position, and
// checkmate, stalemate, the fifty-move rule, threefold repetition and
// insufficient material from sparse endgames. Each game goes
//   replay:  to_wire_game -> validate_game -> stored TrainingPositions ->
//            to_example (the trainer's ReplaySource decoding)
//   --data:  to_json -> a .jsonl file -> train::load_examples (parse_record,
//            examples_from_record)
// and the two lists of Examples must be equal, position by position: planes,
// policy, legal moves, result and every auxiliary target. (It found that a
// game resigned after a full search carried a target past its last move,
// which both readers refused: self-play no longer records it.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "chessrl/chess/rules.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/record/game_conversion.h"
#include "chessrl/record/game_record.h"
#include "chessrl/record/validation.h"
#include "chessrl/selfplay/game_runner.h"
#include "chessrl/train/example.h"
#include "replay_source.h"

namespace chessrl::trainer_service {
namespace {

using chess::Termination;
namespace fs = std::filesystem;

struct SelfplayRun {
  const char* what;
  std::string start_fen;  // empty: the standard start
  std::uint64_t games;
  std::uint64_t backend_seed;
  void (*configure)(selfplay::SelfPlayConfig&);
};

// The runs, each seeded: the games (and so the endings seen) are the same on
// every machine and at any thread count (game_runner.h).
const SelfplayRun kRuns[] = {
    {"resignation (threshold 0, one move) from the start", "", 12, 11,
     [](selfplay::SelfPlayConfig& c) {
       c.resign = {.threshold = 0.0f, .consecutive = 1, .disabled_fraction = 0.25f};
       c.max_plies = 80;
     }},
    {"self-play's defaults, short games adjudicated on material", "", 12, 12,
     [](selfplay::SelfPlayConfig& c) {
       c.max_plies = 40;
       c.short_max_plies = 16;
     }},
    {"the move limit with adjudication off", "", 4, 13,
     [](selfplay::SelfPlayConfig& c) {
       c.max_plies = 30;
       c.adjudicate_material = 0;
       c.short_game_fraction = 0;
     }},
    {"king and rook against king: mate, fifty moves, the rook taken", "8/8/8/4k3/8/8/8/R3K3 w - - 0 1",
     12, 14,
     [](selfplay::SelfPlayConfig& c) {
       c.max_plies = 300;
       c.short_game_fraction = 0;
     }},
    {"king and queen against a cornered king: stalemate, mate", "k7/8/8/2Q5/8/8/8/4K3 w - - 0 1", 8,
     15,
     [](selfplay::SelfPlayConfig& c) {
       c.max_plies = 100;
       c.short_game_fraction = 0;
     }},
    {"kings behind locked pawns: repetition", "4k3/8/8/1p1p1p2/1P1P1P2/8/8/4K3 w - - 0 1", 8, 16,
     [](selfplay::SelfPlayConfig& c) {
       c.max_plies = 200;
       c.short_game_fraction = 0;
       c.search.draw_contempt = 0;  // a repetition is not avoided
     }},
};

std::vector<record::GameRecord> play(const SelfplayRun& run) {
  selfplay::GameRunnerOptions o;
  o.concurrent_games = 4;
  o.threads = 1;
  o.leaves_per_search = 4;
  o.seed = 20260101 + run.backend_seed;
  o.id_nonce = run.backend_seed;
  o.max_games = run.games;
  o.start_fen = run.start_fen;
  o.config.playouts = {.full_visits = 16, .reduced_visits = 8, .full_fraction = 0.5f};
  run.configure(o.config);
  nn::BatchEvaluator evaluator(
      std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, run.backend_seed),
      {.max_batch = 16, .batch_timeout = std::chrono::microseconds(100)});
  selfplay::GameRunner runner(evaluator, o);
  std::map<std::uint64_t, record::GameRecord> by_index;
  runner.run([&](record::GameRecord&& r) { by_index.emplace(r.index, std::move(r)); });
  std::vector<record::GameRecord> out;
  for (auto& [index, r] : by_index) out.push_back(std::move(r));
  return out;
}

// The replay path: validation on ingest, then the trainer's decoding of each
// stored position.
std::vector<train::Example> through_replay(const record::GameRecord& game) {
  const v1::Game wire = record::to_wire_game(game, 3, "selfplay-0");
  const record::Validation checked = record::validate_game(wire);
  if (const auto* refused = std::get_if<record::Rejection>(&checked)) {
    ADD_FAILURE() << "replay refused game " << game.id << " (" << game.result.to_string()
                  << "): " << record::reason_label(refused->reason) << ": " << refused->detail;
    return {};
  }
  std::vector<train::Example> out;
  for (const std::string& bytes : std::get<record::StoredGame>(checked).positions) {
    v1::TrainingPosition p;
    EXPECT_TRUE(p.ParseFromString(bytes));
    auto example = to_example(p);
    if (!example.ok()) {
      ADD_FAILURE() << example.error();
      return {};
    }
    out.push_back(std::move(example).value());
  }
  return out;
}

TEST(RecordRules, SelfplayGamesAreAcceptedByReplayAndTrain) {
  const fs::path file = fs::temp_directory_path() /
                        ("chessrl-selfplay-accepted-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream out(file);
  std::vector<train::Example> replayed;
  std::map<Termination, int> endings;
  std::size_t games = 0;
  for (const SelfplayRun& run : kRuns) {
    SCOPED_TRACE(run.what);
    const std::vector<record::GameRecord> played = play(run);
    ASSERT_EQ(played.size(), run.games);
    for (const record::GameRecord& game : played) {
      SCOPED_TRACE("game " + game.id + ", " + game.result.to_string());
      ++endings[game.result.reason];
      ++games;
      // Per game: the --data reader's examples equal replay's.
      const std::string line = record::to_json(game);
      auto parsed = record::parse_record(line);
      ASSERT_TRUE(parsed) << "--data refused it: " << parsed.error();
      auto from_data = train::examples_from_record(*parsed);
      ASSERT_TRUE(from_data) << from_data.error();
      const std::vector<train::Example> from_replay = through_replay(game);
      ASSERT_EQ(from_replay.size(), game.targets.size());
      ASSERT_EQ(from_data->size(), from_replay.size());
      for (std::size_t i = 0; i < from_replay.size(); ++i)
        ASSERT_EQ((*from_data)[i], from_replay[i]) << "the position of target " << i << " (ply "
                                                   << game.targets[i].ply << ")";
      out << line << '\n';
      replayed.insert(replayed.end(), from_replay.begin(), from_replay.end());
    }
  }
  out.close();
  // The whole file through the --data loader gives the same list.
  auto loaded = train::load_examples(file.string());
  fs::remove(file);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(*loaded, replayed);

  // The runs reach every ending self-play writes.
  std::string seen;
  for (const auto& [t, n] : endings)
    seen += std::string(chess::termination_name(t)) + " " + std::to_string(n) + ", ";
  std::printf("%zu games, %zu positions: %s\n", games, replayed.size(), seen.c_str());
  for (Termination t : {Termination::kCheckmate, Termination::kStalemate,
                        Termination::kFiftyMoveRule, Termination::kThreefoldRepetition,
                        Termination::kInsufficientMaterial, Termination::kResignation,
                        Termination::kAdjudication, Termination::kMoveLimit})
    EXPECT_GT(endings[t], 0) << "no game ended by " << chess::termination_name(t) << " (" << seen
                             << ")";
  EXPECT_EQ(endings.count(Termination::kNone), 0u);
}

}  // namespace
}  // namespace chessrl::trainer_service
