// A pushed game as the replay service receives it: chessrl.v1.Game bytes
// parsed, validated (record::validate_game, with the service's default
// limits) and, when valid, pushed into a store and sampled as PushGames and
// Sample do (the in-memory store: the Redis one needs a server). Checks: a
// rejection names its problem; a valid game yields one training position per
// target, each of which the trainer's own decoding (record::decode_position)
// and policy rule accept; the store takes the game once (a game without
// positions: counted, nothing kept) and samples only its positions.
#include <google/protobuf/stubs/logging.h>

#include <set>
#include <string>
#include <variant>

#include "chessrl/chess/position.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/record/policy_rule.h"
#include "chessrl/record/training_position.h"
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

// A stored position as the trainer takes it: decoded by the trainer's own
// function (record::decode_position: the FEN, the history and policy moves
// legal where they stand, the list lengths and value ranges) and the trainer's
// policy rule; then what ties it to the game pushed (its ply, id, version,
// root values, and the game's move at that ply legal after the history).
void check_position(const v1::Game& game, const v1::MoveTarget& target, const std::string& bytes) {
  v1::TrainingPosition tp;
  FUZZ_CHECK(tp.ParseFromString(bytes));
  const std::string where = "ply " + std::to_string(target.ply());
  FUZZ_CHECK(tp.ply() == target.ply(), where);
  FUZZ_CHECK(tp.game_id() == game.id() && tp.model_version() == game.model_version(), where);
  auto decoded = record::decode_position(tp);
  FUZZ_CHECK(decoded.ok(), where + ": " + (decoded.ok() ? "" : decoded.error()));
  FUZZ_CHECK(decoded->root_value == target.root_value() && decoded->root_draw == target.root_draw(),
             where);
  double sum = 0;
  for (const float p : decoded->policy_probs) {
    FUZZ_CHECK(record::probability_ok(p), where);
    sum += p;
  }
  FUZZ_CHECK(decoded->policy_moves.size() == std::size_t(target.policy_moves_size()), where);
  if (!decoded->policy_probs.empty()) FUZZ_CHECK(!record::policy_sum_problem(sum), where);
  chess::Position pos = chess::Position::from_fen(decoded->fen).value();
  for (const chess::Move move : decoded->history) pos.make_move(move);
  // The history ends where the game played the target's move.
  const auto played = record::decode_move(pos, game.moves(static_cast<int>(target.ply())));
  FUZZ_CHECK(played.has_value(), where + ": the game's move is not legal after the history");
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
  // A game without positions is counted and keeps nothing, not even its id:
  // sent twice, it is stored twice (and the window stays empty).
  const auto second = stored.positions.empty() ? replay::PushStatus::kStored
                                               : replay::PushStatus::kDuplicate;
  FUZZ_CHECK(statuses.ok() && statuses->size() == 2 &&
             (*statuses)[0] == replay::PushStatus::kStored && (*statuses)[1] == second);
  const auto sampled = store.sample(16, size);
  FUZZ_CHECK(sampled.ok() && sampled->window_positions == stored.positions.size());
  const std::set<std::string> known(stored.positions.begin(), stored.positions.end());
  for (const std::string& p : sampled->positions) FUZZ_CHECK(known.count(p) == 1);
  return 0;
}
