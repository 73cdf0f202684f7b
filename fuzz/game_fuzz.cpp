// A pushed game as the replay service receives it: chessrl.v1.Game bytes
// parsed, validated (record::validate_game, with the service's default
// limits) and, when valid, pushed into a store and sampled as PushGames and
// Sample do (the in-memory store: the Redis one needs a server). Checks: a
// rejection names its problem; a valid game yields one training position per
// target, each of which the trainer can replay (its FEN parses, its history
// and policy moves are legal where they are played, its fields are in range);
// the store takes the game once and samples only its positions.
#include <google/protobuf/stubs/logging.h>

#include <set>
#include <string>
#include <variant>

#include "chessrl/chess/position.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/record/validation.h"
#include "fuzz_check.h"

namespace v1 = chessrl::v1;
namespace chess = chessrl::chess;
namespace replay = chessrl::replay;
namespace record = chessrl::record;

namespace {

// Invalid UTF-8 in a string field fails the parse, and protobuf logs an error
// line for each such input; silence it, the fuzzer's output is the report.
const bool kProtobufQuiet = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

void check_position(const v1::Game& game, const v1::MoveTarget& target, const std::string& bytes) {
  v1::TrainingPosition tp;
  FUZZ_CHECK(tp.ParseFromString(bytes));
  const std::string where = "ply " + std::to_string(target.ply());
  FUZZ_CHECK(tp.ply() == target.ply(), where);
  FUZZ_CHECK(tp.game_id() == game.id() && tp.model_version() == game.model_version(), where);
  FUZZ_CHECK(tp.result() >= -1 && tp.result() <= 1, where);
  FUZZ_CHECK(tp.root_value() == target.root_value() && tp.root_draw() == target.root_draw(), where);
  auto start = chess::Position::from_fen(tp.fen());
  FUZZ_CHECK(start.ok(), where + ": '" + tp.fen() + "': " + (start.ok() ? "" : start.error()));
  chess::Position pos = std::move(start).value();
  FUZZ_CHECK(static_cast<std::uint32_t>(tp.history_moves_size()) <= tp.ply(), where);
  for (const std::uint32_t code : tp.history_moves()) {
    const auto move = record::decode_move(pos, code);
    FUZZ_CHECK(move.has_value(), where + ": history move " + std::to_string(code));
    pos.make_move(*move);
  }
  // The history ends where the game played the target's move.
  const auto played = record::decode_move(pos, game.moves(static_cast<int>(target.ply())));
  FUZZ_CHECK(played.has_value(), where + ": the game's move is not legal after the history");
  FUZZ_CHECK(tp.policy_moves_size() == tp.policy_probs_size(), where);
  FUZZ_CHECK(tp.policy_moves_size() == target.policy_moves_size(), where);
  for (int i = 0; i < tp.policy_moves_size(); ++i) {
    FUZZ_CHECK(record::decode_move(pos, tp.policy_moves(i)).has_value(), where);
    const float p = tp.policy_probs(i);
    FUZZ_CHECK(p >= 0.0f && p <= 1.0f, where);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  v1::Game game;
  if (!game.ParseFromArray(data, static_cast<int>(size))) return 0;
  record::Validation validation = record::validate_game(game);
  if (const auto* rejection = std::get_if<record::Rejection>(&validation)) {
    FUZZ_CHECK(!rejection->detail.empty());
    FUZZ_CHECK(!record::reason_label(rejection->reason).empty());
    return 0;
  }
  const auto& stored = std::get<record::StoredGame>(validation);
  FUZZ_CHECK(stored.id == game.id());
  FUZZ_CHECK(stored.positions.size() == static_cast<std::size_t>(game.targets_size()));
  for (int i = 0; i < game.targets_size(); ++i)
    check_position(game, game.targets(i), stored.positions[static_cast<std::size_t>(i)]);

  replay::MemoryReplayStore store(1 << 16);
  const record::StoredGame games[] = {stored, stored};
  const auto statuses = store.push(games);
  FUZZ_CHECK(statuses.ok() && statuses->size() == 2 &&
             (*statuses)[0] == replay::PushStatus::kStored &&
             (*statuses)[1] == replay::PushStatus::kDuplicate);
  const auto sampled = store.sample(16, size);
  FUZZ_CHECK(sampled.ok() && sampled->window_positions == stored.positions.size());
  const std::set<std::string> known(stored.positions.begin(), stored.positions.end());
  for (const std::string& p : sampled->positions) FUZZ_CHECK(known.count(p) == 1);
  return 0;
}
