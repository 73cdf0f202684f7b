// Writes the binary seed inputs of the game and checkpoint fuzz targets:
//   build/fuzz/fuzz/fuzz_make_seeds tests/fuzz/corpus
// puts valid chessrl.v1.Game bytes in DIR/game/ and valid checkpoints in
// DIR/checkpoint/ (the text corpora are written by hand). Deterministic, so
// rerunning it changes nothing. Built in the fuzz build only; not run by CI.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/record/validation.h"

namespace fs = std::filesystem;
using namespace chessrl;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// A game of UCI moves from `fen` (empty: the start position), each ply a
// target whose policy is the move played (0.75) and, when there is one,
// another legal move (0.25).
v1::Game uci_game(const std::string& id, const std::string& fen,
                  const std::vector<std::string>& moves, v1::Outcome outcome,
                  v1::Termination termination) {
  v1::Game game;
  game.set_id(id);
  game.set_producer("fuzz-seed");
  game.set_model_version(3);
  game.set_start_fen(fen);
  chess::Position pos =
      fen.empty() ? chess::Position() : chess::Position::from_fen(fen).value_or_throw();
  for (std::size_t ply = 0; ply < moves.size(); ++ply) {
    const chess::Move m = chess::parse_uci(pos, moves[ply]).value_or_throw();
    v1::MoveTarget* t = game.add_targets();
    t->set_ply(static_cast<std::uint32_t>(ply));
    t->set_root_value(0.25f);
    t->set_root_draw(0.5f);
    t->set_visits(32);
    t->add_policy_moves(record::encode_move(m));
    chess::Move other = m;
    for (const chess::Move candidate : chess::legal_moves(pos))
      if (candidate != m) other = candidate;
    if (other != m) {
      t->add_policy_probs(0.75f);
      t->add_policy_moves(record::encode_move(other));
      t->add_policy_probs(0.25f);
    } else {
      t->add_policy_probs(1.0f);
    }
    game.add_moves(record::encode_move(m));
    pos.make_move(m);
  }
  game.set_outcome(outcome);
  game.set_termination(termination);
  return game;
}

void write_game(const fs::path& dir, const std::string& name, const v1::Game& game) {
  const auto validation = record::validate_game(game);
  if (const auto* r = std::get_if<record::Rejection>(&validation)) {
    std::fprintf(stderr, "%s: rejected: %s\n", name.c_str(), r->detail.c_str());
    std::exit(1);
  }
  write(dir / name, game.SerializeAsString());
}

nn::NamedTensor tensor(std::string name, nn::TensorType type, std::vector<std::int64_t> shape) {
  nn::NamedTensor t;
  t.name = std::move(name);
  t.type = type;
  t.shape = std::move(shape);
  const std::size_t bytes =
      static_cast<std::size_t>(t.numel()) * (type == nn::TensorType::kFloat32 ? 4 : 8);
  for (std::size_t i = 0; i < bytes; ++i) t.data.push_back(static_cast<std::byte>(i * 37 % 251));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];

  const fs::path games = root / "game";
  harness::SyntheticGameOptions small;
  small.max_plies = 24;
  small.policy_moves = 3;
  small.model_version = 7;
  write_game(games, "synthetic-24-plies", harness::make_synthetic_game(1, small));
  harness::SyntheticGameOptions sparse;
  sparse.max_plies = 80;
  sparse.policy_moves = 2;
  sparse.target_fraction = 0.2;
  write_game(games, "synthetic-80-plies-sparse", harness::make_synthetic_game(2, sparse));
  write_game(
      games, "fools-mate",
      uci_game("fools-mate", "", {"f2f3", "e7e5", "g2g4", "d8h4"}, v1::BLACK_WINS, v1::CHECKMATE));
  write_game(
      games, "threefold",
      uci_game("threefold", "", {"g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"},
               v1::DRAW, v1::THREEFOLD_REPETITION));
  write_game(games, "promotion-from-fen",
             uci_game("promo:1", "8/P6k/8/8/8/8/6pK/8 w - - 12 40", {"a7a8n", "g2g1q", "h2g1"},
                      v1::DRAW, v1::INSUFFICIENT_MATERIAL));
  // A draw at the move limit before any target: no positions (counted, nothing kept).
  v1::Game empty;
  empty.set_id("empty-draw");
  empty.set_producer("fuzz-seed");
  empty.set_outcome(v1::DRAW);
  empty.set_termination(v1::MOVE_LIMIT);
  write_game(games, "move-limit-no-positions", empty);
  write_game(games, "en-passant-resign",
             uci_game("ep.1", "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                      {"e5f6", "g8f6", "e1e2"}, v1::WHITE_WINS, v1::RESIGNATION));

  // Refused now (bad_fen); its start position has 271 legal moves, which
  // overflowed the move list validation generates into before from_fen
  // refused such material.
  v1::Game overflow;
  overflow.set_id("regression-271");
  overflow.set_start_fen("QQQQQQBk/Q5RB/Q6Q/Q6Q/Q6Q/Q6Q/Q6Q/KQQQQQQQ w - - 0 1");
  overflow.add_moves(0);
  overflow.set_outcome(v1::DRAW);
  overflow.set_termination(v1::ADJUDICATION);
  write(games / "regression-start-fen-271-legal-moves", overflow.SerializeAsString());

  const fs::path checkpoints = root / "checkpoint";
  nn::Checkpoint c;
  c.info.config = {1, 8, 0, 1, 4};
  c.info.step = 1200;
  c.info.version = 4;
  c.info.created_ms = 1700000000000;
  c.info.description = "fuzz seed";
  c.tensors.push_back(tensor("input.conv.weight", nn::TensorType::kFloat32, {8, 2, 1, 1}));
  c.tensors.push_back(tensor("input.bn.num_batches_tracked", nn::TensorType::kInt64, {}));
  c.tensors.push_back(tensor("value.fc.bias", nn::TensorType::kFloat32, {4}));
  write(checkpoints / "tiny-no-optimizer", nn::serialize_checkpoint(c));
  c.info.config.se_ratio = 4;
  c.optimizer_state = "adam state";
  c.tensors.push_back(tensor("empty", nn::TensorType::kFloat32, {0, 3}));
  write(checkpoints / "tiny-se-optimizer", nn::serialize_checkpoint(c));
  return 0;
}
