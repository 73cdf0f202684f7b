// decode_position: a sampled TrainingPosition back into chess terms, and the
// problems it names (the trainer's conversion builds on it: trainer_service_test).
#include "chessrl/record/training_position.h"

#include <gtest/gtest.h>

#include <string>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/record/move_codec.h"

namespace chessrl::record {
namespace {

v1::TrainingPosition after_e4_e5() {
  v1::TrainingPosition p;
  p.set_fen(std::string(chess::kStartFen));
  p.set_game_id("g");
  p.set_ply(2);
  auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
  for (const char* uci : {"e2e4", "e7e5"}) {
    const chess::Move m = chess::parse_uci(pos, uci).value_or_throw();
    p.add_history_moves(encode_move(m));
    pos.make_move(m);
  }
  p.add_policy_moves(encode_move(chess::parse_uci(pos, "g1f3").value_or_throw()));
  p.add_policy_probs(1.0f);
  p.set_result(-1);
  p.set_root_value(-0.5f);
  p.set_root_draw(0.25f);
  return p;
}

TEST(DecodePosition, GivesTheMovesOfHistoryAndPolicyAndTheTargets) {
  v1::TrainingPosition p = after_e4_e5();
  auto decoded = decode_position(p);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  ASSERT_EQ(decoded->history.size(), 2u);
  EXPECT_EQ(chess::to_uci(decoded->history[0]), "e2e4");
  EXPECT_EQ(chess::to_uci(decoded->history[1]), "e7e5");
  ASSERT_EQ(decoded->policy_moves.size(), 1u);
  EXPECT_EQ(chess::to_uci(decoded->policy_moves[0]), "g1f3");
  EXPECT_EQ(decoded->policy_probs, std::vector<float>{1.0f});
  EXPECT_EQ(decoded->result, -1);
  EXPECT_FLOAT_EQ(decoded->root_value, -0.5f);
  EXPECT_FLOAT_EQ(decoded->root_draw, 0.25f);
  EXPECT_FALSE(decoded->material_later.has_value()) << "unset: stored before the field existed";

  p.set_material_later(-3);
  decoded = decode_position(p);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded->material_later, -3);
}

TEST(DecodePosition, GivesTheNextMovesAndThePliesLeft) {
  v1::TrainingPosition p = after_e4_e5();
  auto decoded = decode_position(p);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_TRUE(decoded->next_moves.empty()) << "none: stored before the field existed";
  EXPECT_FALSE(decoded->plies_left.has_value());

  auto pos = chess::Position::from_fen("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
                 .value_or_throw();
  const chess::Move nf3 = chess::parse_uci(pos, "g1f3").value_or_throw();
  pos.make_move(nf3);
  const chess::Move nc6 = chess::parse_uci(pos, "b8c6").value_or_throw();
  p.add_next_moves(encode_move(nf3));
  p.add_next_moves(encode_move(nc6));
  p.set_plies_left(7);
  decoded = decode_position(p);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  ASSERT_EQ(decoded->next_moves.size(), 2u);
  EXPECT_EQ(decoded->next_moves[0], nf3);
  EXPECT_EQ(decoded->next_moves[1], nc6);
  EXPECT_EQ(decoded->plies_left, 7);

  // The reply must be legal after the move played; at most two; plies left
  // covers them.
  v1::TrainingPosition bad = p;
  bad.set_next_moves(1, encode_move(nf3));  // g1f3 again: not black's move
  auto refused = decode_position(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("game 'g' ply 2: next move 1"), std::string::npos)
      << refused.error();
  bad = p;
  bad.add_next_moves(encode_move(nf3));
  refused = decode_position(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("3 next moves"), std::string::npos) << refused.error();
  bad = p;
  bad.set_plies_left(1);
  refused = decode_position(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("plies_left 1 is below 2"), std::string::npos) << refused.error();
}

TEST(DecodePosition, LeavesThePositionReachedAndItsLegalMovesOnlyOnSuccess) {
  v1::TrainingPosition p = after_e4_e5();
  chess::Position reached;
  chess::MoveList legal;
  auto decoded = decode_position(p, &reached, &legal);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  auto played = chess::Position::from_fen(chess::kStartFen).value_or_throw();
  for (const char* uci : {"e2e4", "e7e5"}) played.make_move(chess::parse_uci(played, uci).value_or_throw());
  EXPECT_EQ(reached.fen(), played.fen());
  // The list make_example_at takes in place of a second generation: the same
  // moves in the same order as chess::legal_moves.
  const chess::MoveList want = chess::legal_moves(reached);
  ASSERT_EQ(legal.size(), want.size());
  EXPECT_EQ(legal.size(), 29);
  for (int i = 0; i < want.size(); ++i) EXPECT_EQ(legal[i], want[i]) << "move " << i;

  // A refused position writes neither.
  p.set_result(2);
  chess::Position untouched;
  chess::MoveList empty;
  ASSERT_FALSE(decode_position(p, &untouched, &empty).ok());
  EXPECT_EQ(untouched.fen(), chess::Position().fen());
  EXPECT_TRUE(empty.empty());
}

TEST(DecodePosition, NamesTheGamePlyAndProblem) {
  v1::TrainingPosition p = after_e4_e5();
  p.set_material_later(40);
  auto bad = decode_position(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("game 'g' ply 2: material_later 40"), std::string::npos)
      << bad.error();

  p = after_e4_e5();
  p.set_root_draw(1.5f);
  bad = decode_position(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("root value"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace chessrl::record
