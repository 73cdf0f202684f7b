// to_example (one replay, one move generation per position) against a
// reference written the plain way decoding used to work: every history and
// policy move looked up in a fresh move generation, the history replayed from
// the FEN a second time, each policy move checked with chess::is_legal. Over
// every training position of 120 synthetic games (castling, captures, en
// passant and promotions among them) the Examples must be equal: planes,
// policy, legal moves, every target.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/record/validation.h"
#include "chessrl/train/example.h"
#include "replay_source.h"

namespace chessrl::trainer_service {
namespace {

// The reference: nothing shared with to_example but the chess library, the
// move codec's one-position decode_move, and the encoders.
train::Example reference_example(const v1::TrainingPosition& p) {
  chess::Position pos = chess::Position::from_fen(p.fen()).value_or_throw();
  for (std::uint32_t code : p.history_moves()) {
    const auto move = record::decode_move(pos, code);
    EXPECT_TRUE(move.has_value());
    EXPECT_TRUE(chess::is_legal(pos, *move));
    pos.make_move(*move);
  }
  train::Example e;
  e.planes = nn::encode(pos);
  e.result = static_cast<std::int8_t>(p.result());
  double sum = 0;
  for (int i = 0; i < p.policy_moves_size(); ++i) {
    const auto move = record::decode_move(pos, p.policy_moves(i));
    EXPECT_TRUE(move.has_value() && chess::is_legal(pos, *move));
    e.policy.emplace_back(static_cast<std::uint16_t>(nn::policy_index(*move, pos.side_to_move())),
                          p.policy_probs(i));
    sum += p.policy_probs(i);
  }
  for (auto& entry : e.policy) entry.second = static_cast<float>(entry.second / sum);
  for (const chess::Move m : chess::legal_moves(pos))
    e.legal.push_back(static_cast<std::uint16_t>(nn::policy_index(m, pos.side_to_move())));
  e.root_value = p.root_value();
  e.root_draw = p.root_draw();
  if (p.has_material_later()) {
    e.material = static_cast<std::int16_t>(p.material_later());
    e.has_material = true;
  }
  if (p.next_moves_size() == 2) {
    chess::Position after = pos;
    after.make_move(*record::decode_move(pos, p.next_moves(0)));
    const auto reply = record::decode_move(after, p.next_moves(1));
    EXPECT_TRUE(reply.has_value());
    e.reply = static_cast<std::int16_t>(nn::policy_index(*reply, after.side_to_move()));
  }
  if (p.has_plies_left()) e.plies_left = static_cast<std::int16_t>(p.plies_left());
  return e;
}

std::vector<v1::TrainingPosition> corpus() {
  std::vector<v1::TrainingPosition> out;
  harness::SyntheticGameOptions options;
  options.max_plies = 200;
  options.policy_moves = 40;
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    const auto checked = record::validate_game(harness::make_synthetic_game(seed, options));
    const auto* stored = std::get_if<record::StoredGame>(&checked);
    if (!stored) throw Error("synthetic game " + std::to_string(seed) + " was rejected");
    for (const std::string& bytes : stored->positions) {
      v1::TrainingPosition p;
      if (!p.ParseFromString(bytes)) throw Error("a stored position does not parse");
      out.push_back(std::move(p));
    }
  }
  return out;
}

TEST(ReplaySourceDecode, GivesTheExamplesOfThePlainDecodingOnEveryPositionOfAFixedCorpus) {
  const std::vector<v1::TrainingPosition> positions = corpus();
  ASSERT_GT(positions.size(), 10000u);
  int promotions = 0, castles = 0, en_passants = 0, captures = 0;
  std::size_t replies = 0;
  for (const auto& p : positions) {
    const train::Example want = reference_example(p);
    auto got = to_example(p);
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(*got, want) << "game " << p.game_id() << " ply " << p.ply();
    replies += got->reply >= 0;
    EXPECT_GE(got->plies_left, 1);
    // The same through the public make_example (FEN and history replayed).
    auto pos = chess::Position::from_fen(p.fen()).value_or_throw();
    std::vector<chess::Move> history, policy;
    for (std::uint32_t code : p.history_moves()) {
      history.push_back(*record::decode_move(pos, code));
      pos.make_move(history.back());
    }
    for (std::uint32_t code : p.policy_moves()) policy.push_back(*record::decode_move(pos, code));
    const std::vector<float> probs(p.policy_probs().begin(), p.policy_probs().end());
    auto via_fen = train::make_example(p.fen(), history, policy, probs, p.result());
    ASSERT_TRUE(via_fen.ok()) << via_fen.error();
    EXPECT_EQ(via_fen->planes, want.planes);
    EXPECT_EQ(via_fen->policy, want.policy);
    EXPECT_EQ(via_fen->legal, want.legal);
    for (const chess::Move m : policy) {
      promotions += m.kind() == chess::MoveKind::kPromotion;
      castles += m.kind() == chess::MoveKind::kCastling;
      en_passants += m.kind() == chess::MoveKind::kEnPassant;
      captures += pos.piece_on(m.to()) != chess::kNoPiece;
    }
  }
  // The corpus reaches the moves whose encoding is special.
  EXPECT_GT(promotions, 0);
  EXPECT_GT(castles, 0);
  EXPECT_GT(en_passants, 0);
  EXPECT_GT(captures, 0);
  // Every position but a game's last-ply one has the opponent's reply.
  EXPECT_GT(replies, positions.size() * 9 / 10);
}

}  // namespace
}  // namespace chessrl::trainer_service
