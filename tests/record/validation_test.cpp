// Game validation: synthetic and hand-made games are accepted and turned into
// the right training positions; each kind of bad game is refused with its
// reason and a detail naming the field and ply.
#include "chessrl/record/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/harness/synthetic_game.h"

namespace chessrl::record {
namespace {

chess::Position start_of(const v1::Game& game) {
  if (game.start_fen().empty()) return chess::Position();
  return chess::Position::from_fen(game.start_fen()).value_or_throw();
}

// A game of UCI moves (each must be legal) with no targets.
v1::Game game_of(const std::vector<std::string>& uci, v1::Outcome outcome,
                 v1::Termination termination, const std::string& start_fen = "") {
  v1::Game game;
  game.set_id("test-game");
  game.set_start_fen(start_fen);
  game.set_outcome(outcome);
  game.set_termination(termination);
  chess::Position pos = start_of(game);
  for (const std::string& text : uci) {
    const chess::Move m = chess::parse_uci(pos, text).value_or_throw();
    game.add_moves(encode_move(m));
    pos.make_move(m);
  }
  return game;
}

// The position before the move at `ply`, by an independent replay.
chess::Position position_at(const v1::Game& game, int ply) {
  chess::Position pos = start_of(game);
  for (int i = 0; i < ply; ++i) pos.make_move(*decode_move(pos, game.moves(i)));
  return pos;
}

// Adds a target at `ply` with a uniform policy over every legal move there.
v1::MoveTarget* add_uniform_target(v1::Game& game, int ply) {
  const chess::Position pos = position_at(game, ply);
  v1::MoveTarget* t = game.add_targets();
  t->set_ply(static_cast<std::uint32_t>(ply));
  t->set_root_value(0.25f);
  t->set_root_draw(0.5f);
  const chess::MoveList legal = chess::legal_moves(pos);
  for (chess::Move m : legal) {
    t->add_policy_moves(encode_move(m));
    t->add_policy_probs(1.0f / static_cast<float>(legal.size()));
  }
  return t;
}

const std::vector<std::string> kFoolsMate = {"f2f3", "e7e5", "g2g4", "d8h4"};

v1::Game fools_mate() { return game_of(kFoolsMate, v1::BLACK_WINS, v1::CHECKMATE); }

std::vector<v1::TrainingPosition> accepted(const v1::Game& game) {
  const Validation v = validate_game(game);
  const auto* rejection = std::get_if<Rejection>(&v);
  EXPECT_EQ(rejection, nullptr) << (rejection ? rejection->detail : "");
  std::vector<v1::TrainingPosition> out;
  if (rejection) return out;
  for (const std::string& bytes : std::get<StoredGame>(v).positions) {
    EXPECT_TRUE(out.emplace_back().ParseFromString(bytes));
  }
  return out;
}

// Expects a rejection for `reason` whose detail contains `needle`.
void expect_rejected(const v1::Game& game, RejectReason reason, const std::string& needle,
                     const ValidationLimits& limits = {}) {
  const Validation v = validate_game(game, limits);
  const auto* rejection = std::get_if<Rejection>(&v);
  ASSERT_NE(rejection, nullptr) << "accepted, expected " << reason_label(reason);
  EXPECT_EQ(reason_label(rejection->reason), reason_label(reason)) << rejection->detail;
  EXPECT_NE(rejection->detail.find(needle), std::string::npos)
      << "detail '" << rejection->detail << "' lacks '" << needle << "'";
}

TEST(Validation, ReasonLabels) {
  std::vector<std::string> labels;
  for (RejectReason r : kAllRejectReasons) labels.emplace_back(reason_label(r));
  EXPECT_EQ(labels, (std::vector<std::string>{"malformed", "bad_id", "oversized", "bad_fen",
                                              "illegal_move", "bad_policy", "bad_result"}));
}

TEST(Validation, SyntheticGamesAreValid) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const v1::Game game = harness::make_synthetic_game(seed);
    EXPECT_EQ(game.SerializeAsString(), harness::make_synthetic_game(seed).SerializeAsString());
    const Validation v = validate_game(game);
    ASSERT_TRUE(std::holds_alternative<StoredGame>(v))
        << "seed " << seed << ": " << std::get<Rejection>(v).detail;
    EXPECT_EQ(std::get<StoredGame>(v).id, "synthetic-" + std::to_string(seed));
    EXPECT_EQ(std::get<StoredGame>(v).positions.size(),
              static_cast<std::size_t>(game.targets_size()));
  }
}

TEST(Validation, SyntheticGameOptions) {
  harness::SyntheticGameOptions options;
  options.target_fraction = 0.0;
  options.max_plies = 30;
  const v1::Game none = harness::make_synthetic_game(7, options, "x-");
  EXPECT_EQ(none.id(), "x-7");
  EXPECT_EQ(none.targets_size(), 0);
  EXPECT_LE(none.moves_size(), 30);
  options.target_fraction = 1.0;
  options.policy_moves = 3;
  const v1::Game full = harness::make_synthetic_game(7, options, "x-");
  EXPECT_EQ(full.moves().size(), none.moves().size());  // moves do not depend on targets
  ASSERT_EQ(full.targets_size(), full.moves_size());
  for (const v1::MoveTarget& t : full.targets()) {
    EXPECT_LE(t.policy_moves_size(), 3);
    EXPECT_EQ(t.policy_moves(0), full.moves(static_cast<int>(t.ply())));
  }
  EXPECT_TRUE(std::holds_alternative<StoredGame>(validate_game(full)));
}

// Replaying history_moves from fen reaches the target's position, with k plies
// of history as the header defines, and the result from the mover's view.
TEST(Validation, TrainingPositionsReplayToTheirPly) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const v1::Game game = harness::make_synthetic_game(seed);
    const std::vector<v1::TrainingPosition> positions = accepted(game);
    ASSERT_EQ(positions.size(), static_cast<std::size_t>(game.targets_size()));
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const v1::TrainingPosition& tp = positions[i];
      const v1::MoveTarget& t = game.targets(static_cast<int>(i));
      const int ply = static_cast<int>(t.ply());
      ASSERT_EQ(tp.ply(), t.ply());
      chess::Position pos = chess::Position::from_fen(tp.fen()).value_or_throw();
      for (std::uint32_t code : tp.history_moves()) pos.make_move(*decode_move(pos, code));
      const chess::Position expected = position_at(game, ply);
      EXPECT_EQ(pos.fen(), expected.fen()) << "seed " << seed << " ply " << ply;
      const int k = ply < 7 ? ply : std::min(ply, 7 + position_at(game, ply - 7).halfmove_clock());
      EXPECT_EQ(tp.history_moves_size(), k) << "seed " << seed << " ply " << ply;
      EXPECT_EQ(tp.fen(), position_at(game, ply - k).fen());
      const int white_result = game.outcome() == v1::WHITE_WINS   ? 1
                               : game.outcome() == v1::BLACK_WINS ? -1
                                                                  : 0;
      EXPECT_EQ(tp.result(),
                expected.side_to_move() == chess::kWhite ? white_result : -white_result);
      EXPECT_EQ(tp.policy_moves().size(), t.policy_moves().size());
      EXPECT_EQ(tp.policy_probs().size(), t.policy_probs().size());
      EXPECT_EQ(tp.policy_moves(0), t.policy_moves(0));
      EXPECT_EQ(tp.root_value(), t.root_value());
      EXPECT_EQ(tp.root_draw(), t.root_draw());
      EXPECT_EQ(tp.game_id(), game.id());
      EXPECT_EQ(tp.model_version(), game.model_version());
    }
  }
}

// History goes back seven plies, then to the last capture or pawn move.
TEST(Validation, HistoryStopsAtTheLastCaptureOrPawnMove) {
  v1::Game game = game_of({"e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "b1c3", "g8f6",
                           "d2d3", "d7d6", "c1g5", "h7h6", "g5f6", "d8f6", "c3d5", "f6d8",
                           "e1g1", "e8g8", "f1e1", "c8e6", "d5c7", "d8c7", "a2a3"},
                          v1::WHITE_WINS, v1::RESIGNATION);
  // ply -> expected start ply (the FEN's ply). Plies 12/13 are captures, 11 a pawn move.
  const std::vector<std::pair<int, int>> expected = {{0, 0},   {3, 0},   {12, 2},  {18, 10},
                                                     {19, 12}, {20, 13}, {21, 14}, {22, 14}};
  for (const auto& [ply, start] : expected) add_uniform_target(game, ply);
  const std::vector<v1::TrainingPosition> positions = accepted(game);
  ASSERT_EQ(positions.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto [ply, start] = expected[i];
    EXPECT_EQ(positions[i].history_moves_size(), ply - start) << "ply " << ply;
    EXPECT_EQ(positions[i].fen(), position_at(game, start).fen()) << "ply " << ply;
    EXPECT_EQ(positions[i].result(), ply % 2 == 0 ? 1 : -1) << "ply " << ply;
  }
}

TEST(Validation, HistoryFromAStartFenWithAHalfmoveClock) {
  v1::Game game = game_of(
      {"g1f3", "g8f6", "b1c3", "b8c6", "f3g1", "f6g8", "c3b1", "c6b8", "g1f3", "g8f6", "b1c3"},
      v1::DRAW, v1::MOVE_LIMIT, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 40 21");
  add_uniform_target(game, 10);
  const std::vector<v1::TrainingPosition> positions = accepted(game);
  ASSERT_EQ(positions.size(), 1u);
  EXPECT_EQ(positions[0].history_moves_size(), 10);
  EXPECT_EQ(positions[0].fen(), game.start_fen());
  EXPECT_EQ(positions[0].result(), 0);
}

// Found by fuzz_fen (tests/fuzz/corpus/fen/regression-271-legal-moves): a
// start FEN with 271 legal moves overflowed the move list validation fills, on
// the replay service's stack. Such material is now a bad FEN.
TEST(Validation, StartFenWithMaterialNoGameReachesIsABadFen) {
  v1::Game game = game_of({}, v1::DRAW, v1::MOVE_LIMIT);
  game.set_start_fen("QQQQQQBk/Q5RB/Q6Q/Q6Q/Q6Q/Q6Q/Q6Q/KQQQQQQQ w - - 0 1");
  game.add_moves(0);
  expect_rejected(game, RejectReason::kBadFen, "beyond the starting set");
}

// Found by fuzz_fen: from a start FEN at the six-digit move-number limit,
// training positions got FENs with move number 1000000, which the trainer's
// from_fen refuses.
TEST(Validation, TrainingFensParseFromTheMoveNumberLimit) {
  v1::Game game = game_of(
      {"e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "b1c3", "f8c5", "d2d3", "d7d6"}, v1::DRAW,
      v1::MOVE_LIMIT, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 999999");
  add_uniform_target(game, 9);
  const std::vector<v1::TrainingPosition> positions = accepted(game);
  ASSERT_EQ(positions.size(), 1u);
  EXPECT_EQ(positions[0].history_moves_size(), 7);  // from the position after 1...e5
  auto start = chess::Position::from_fen(positions[0].fen());
  EXPECT_TRUE(start.ok()) << positions[0].fen() << ": " << start.error();
}

TEST(Validation, FoolsMateIsValid) {
  v1::Game game = fools_mate();
  add_uniform_target(game, 0);
  add_uniform_target(game, 3);
  const std::vector<v1::TrainingPosition> positions = accepted(game);
  ASSERT_EQ(positions.size(), 2u);
  EXPECT_EQ(positions[0].result(), -1);  // white to move, white lost
  EXPECT_EQ(positions[1].result(), 1);   // black to move, black won
  EXPECT_EQ(positions[1].history_moves_size(), 3);
}

TEST(Validation, RuleDecidedDrawsAreValid) {
  accepted(game_of({"g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"}, v1::DRAW,
                   v1::THREEFOLD_REPETITION));
  accepted(game_of({"c5b6"}, v1::DRAW, v1::STALEMATE, "k7/8/8/2Q5/8/8/8/7K w - - 0 1"));
  accepted(game_of({"a1b2"}, v1::DRAW, v1::INSUFFICIENT_MATERIAL, "7k/8/8/8/8/8/1r6/K7 w - - 0 1"));
  accepted(game_of({"a1b1"}, v1::DRAW, v1::FIFTY_MOVE_RULE, "7k/8/8/8/8/8/8/K5R1 w - - 99 80"));
}

// Each position carries the side to move's material lead 12 plies later (or
// at the end): the material head's target.
TEST(Validation, PositionsCarryTheMaterialLeadALittleLater) {
  // 1.e4 d5 2.exd5 Qxd5 3.Nc3 Qxg2 (White wins a pawn, Black wins it back
  // and one more), then 14 plies without a capture.
  std::vector<std::string> moves = {"e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5g2"};
  for (const char* m : {"a2a3", "a7a6", "b2b3", "b7b6", "a3a4", "a6a5", "h2h3", "c7c6", "d2d3",
                        "e7e6", "b3b4", "h7h6", "a1b1", "g7g6"})
    moves.push_back(m);
  v1::Game game = game_of(moves, v1::BLACK_WINS, v1::RESIGNATION);
  for (int ply : {0, 2, 3, 8, 19}) add_uniform_target(game, ply);
  const auto positions = accepted(game);
  ASSERT_EQ(positions.size(), 5u);
  // White's lead after each ply: 0 0 +1 0 0 -1 ... -1.
  const auto lead = [](int ply) { return ply >= 6 ? -1 : ply >= 4 ? 0 : ply >= 3 ? 1 : 0; };
  for (const auto& p : positions) {
    ASSERT_TRUE(p.has_material_later()) << p.ply();
    const int ply = int(p.ply());
    const int later = std::min(ply + chess::kMaterialHorizonPlies, int(moves.size()));
    const int white = lead(later);
    EXPECT_EQ(p.material_later(), ply % 2 == 0 ? white : -white) << "ply " << ply;
  }
  EXPECT_EQ(positions[0].material_later(), -1);  // White, 12 plies on: a pawn down
  EXPECT_EQ(positions[2].material_later(), 1);   // Black (ply 3), 12 plies on: a pawn up
  EXPECT_EQ(positions[4].material_later(), 1);   // ply 19, Black: at the end, a pawn up
}

// Each position carries the game's next two moves (the move played and the
// opponent's reply: the reply head's target) and the plies to the end (the
// moves-left head's).
TEST(Validation, PositionsCarryTheNextMovesAndThePliesLeft) {
  const std::vector<std::string> moves = {"e2e4", "e7e5", "g1f3", "b8c6", "f1b5"};
  v1::Game game = game_of(moves, v1::WHITE_WINS, v1::RESIGNATION);
  for (int ply : {0, 3, 4}) add_uniform_target(game, ply);
  const auto positions = accepted(game);
  ASSERT_EQ(positions.size(), 3u);
  for (const auto& p : positions) {
    const int ply = int(p.ply());
    ASSERT_TRUE(p.has_plies_left()) << ply;
    EXPECT_EQ(p.plies_left(), std::uint32_t(5 - ply)) << ply;
    ASSERT_EQ(p.next_moves_size(), std::min(2, 5 - ply)) << ply;
    for (int i = 0; i < p.next_moves_size(); ++i)
      EXPECT_EQ(p.next_moves(i), game.moves(ply + i)) << "ply " << ply << " next " << i;
  }
  EXPECT_EQ(positions[2].next_moves_size(), 1) << "the last ply: no reply";
}

// Self-play resigns for the side to move (result_rule.h): after 1.e4 only
// Black can have resigned. Replay accepted either winner here while the
// trainer's --data refused White's resignation; both now apply one rule.
TEST(Validation, DeclaredEndingsNeedNoRule) {
  expect_rejected(game_of({"e2e4"}, v1::BLACK_WINS, v1::RESIGNATION), RejectReason::kBadResult,
                  "ply 1: the side to move (black) resigned, so the result is 1-0");
  accepted(game_of({"e2e4"}, v1::WHITE_WINS, v1::RESIGNATION));
  accepted(game_of({}, v1::DRAW, v1::MOVE_LIMIT));
}

// ADJUDICATION and MOVE_LIMIT are what chess::move_limit_result gives self-play
// at its move limit: a win for the side ahead in material by at least the
// threshold (>= 1 when on), else a draw.
TEST(Validation, AdjudicationsFollowTheMaterialRule) {
  const std::string rook_up = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1";  // White leads by 5
  const std::string pawn_up = "4k3/p7/8/8/8/8/PP6/4K3 w - - 0 1";  // White leads by 1
  accepted(game_of({"e1e2"}, v1::WHITE_WINS, v1::ADJUDICATION, rook_up));
  accepted(game_of({"e1e2"}, v1::WHITE_WINS, v1::ADJUDICATION, pawn_up));
  accepted(game_of({"e1e2", "e8d7", "a1a7"}, v1::WHITE_WINS, v1::ADJUDICATION, rook_up));
  // The winner must lead at the final position: here White leads by 4 until
  // Black promotes, and then trails by 4.
  const std::string promotes = "4k3/8/8/8/8/8/1p6/R3K3 w - - 0 1";
  accepted(game_of({"a1a2"}, v1::WHITE_WINS, v1::ADJUDICATION, promotes));
  expect_rejected(game_of({"a1a2", "b2b1q"}, v1::WHITE_WINS, v1::ADJUDICATION, promotes),
                  RejectReason::kBadResult, "lead at the final position is -4");
  accepted(game_of({"a1a2", "b2b1q"}, v1::BLACK_WINS, v1::ADJUDICATION, promotes));
  expect_rejected(game_of({"e1e2"}, v1::BLACK_WINS, v1::ADJUDICATION, rook_up),
                  RejectReason::kBadResult,
                  "ply 1: the game says BLACK_WINS by ADJUDICATION, but the winner's material "
                  "lead at the final position is -5 (adjudication needs at least 1)");
  expect_rejected(game_of({"e2e4"}, v1::WHITE_WINS, v1::ADJUDICATION), RejectReason::kBadResult,
                  "material lead at the final position is 0");
  expect_rejected(game_of({"e1e2"}, v1::DRAW, v1::ADJUDICATION, rook_up),
                  RejectReason::kBadResult, "adjudication decides a game on material");
  // The move limit is a draw, at any material (adjudication may be off).
  accepted(game_of({"e1e2"}, v1::DRAW, v1::MOVE_LIMIT, rook_up));
  accepted(game_of({"e2e4"}, v1::DRAW, v1::MOVE_LIMIT));
  expect_rejected(game_of({"e1e2"}, v1::WHITE_WINS, v1::MOVE_LIMIT, rook_up),
                  RejectReason::kBadResult, "a game stopped by the move limit is a draw");
  expect_rejected(game_of({"e2e4"}, v1::BLACK_WINS, v1::MOVE_LIMIT), RejectReason::kBadResult,
                  "BLACK_WINS by MOVE_LIMIT");
}

TEST(Validation, RejectsBadIds) {
  v1::Game game = fools_mate();
  game.set_id("");
  expect_rejected(game, RejectReason::kBadId, "id");
  game.set_id(std::string(129, 'a'));
  expect_rejected(game, RejectReason::kBadId, "id");
  game.set_id("a b");
  expect_rejected(game, RejectReason::kBadId, "id");
  game.set_id("pod-1/game");
  expect_rejected(game, RejectReason::kBadId, "id");
  game.set_id("pod-1:game_2.x");
  accepted(game);
}

TEST(Validation, RejectsOversizedGames) {
  const v1::Game game = harness::make_synthetic_game(1);
  ValidationLimits limits;
  limits.max_game_bytes = 200;
  expect_rejected(game, RejectReason::kOversized, "bytes", limits);
  limits = {};
  limits.max_plies = 3;
  expect_rejected(fools_mate(), RejectReason::kOversized, "moves", limits);
}

TEST(Validation, RejectsMalformedFields) {
  v1::Game game = fools_mate();
  game.set_producer(std::string(200, 'p'));
  expect_rejected(game, RejectReason::kMalformed, "producer");

  game = fools_mate();
  game.set_outcome(v1::OUTCOME_UNSPECIFIED);
  expect_rejected(game, RejectReason::kMalformed, "outcome");
  game.set_outcome(static_cast<v1::Outcome>(42));
  expect_rejected(game, RejectReason::kMalformed, "outcome");
  game = fools_mate();
  game.set_termination(v1::TERMINATION_UNSPECIFIED);
  expect_rejected(game, RejectReason::kMalformed, "termination");

  game = fools_mate();
  add_uniform_target(game, 1)->set_ply(4);  // only plies 0..3 exist
  expect_rejected(game, RejectReason::kMalformed, "ply out of range");

  game = fools_mate();
  add_uniform_target(game, 2);
  add_uniform_target(game, 1);
  expect_rejected(game, RejectReason::kMalformed, "increase");

  game = fools_mate();
  add_uniform_target(game, 1)->add_policy_probs(0.0f);
  expect_rejected(game, RejectReason::kMalformed, "length");

  game = fools_mate();
  v1::MoveTarget* empty = add_uniform_target(game, 1);
  empty->clear_policy_moves();
  empty->clear_policy_probs();
  expect_rejected(game, RejectReason::kMalformed, "empty policy");

  game = fools_mate();
  add_uniform_target(game, 2)->set_root_value(std::numeric_limits<float>::quiet_NaN());
  expect_rejected(game, RejectReason::kMalformed, "(ply 2): root_value");
  game = fools_mate();
  add_uniform_target(game, 2)->set_root_value(1.5f);
  expect_rejected(game, RejectReason::kMalformed, "root_value");
  game = fools_mate();
  add_uniform_target(game, 2)->set_root_draw(-0.1f);
  expect_rejected(game, RejectReason::kMalformed, "root_draw");
}

TEST(Validation, RejectsBadStartFen) {
  v1::Game game = fools_mate();
  game.set_start_fen("not a fen");
  expect_rejected(game, RejectReason::kBadFen, "start_fen");
}

TEST(Validation, RejectsIllegalMoves) {
  v1::Game game = fools_mate();
  game.set_moves(2, 12 + 64 * 36);  // e2e5 at ply 2
  expect_rejected(game, RejectReason::kIllegalMove,
                  "ply 2: move e2e5 is not legal in "
                  "rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq - 0 2");
  game.set_moves(2, 1u << 20);
  expect_rejected(game, RejectReason::kIllegalMove, "ply 2: move code 1048576");
  // Castling as king-takes-rook.
  game = game_of({"e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"}, v1::DRAW, v1::MOVE_LIMIT);
  game.add_moves(4 + 64 * 7);
  expect_rejected(game, RejectReason::kIllegalMove, "ply 6: move e1h1");
}

TEST(Validation, RejectsBadPolicies) {
  v1::Game game = fools_mate();
  add_uniform_target(game, 1)->set_policy_moves(0, 12 + 64 * 28);  // e2e4, white's move
  expect_rejected(game, RejectReason::kBadPolicy, "ply 1: policy move e2e4 is not legal");

  game = fools_mate();
  v1::MoveTarget* t = add_uniform_target(game, 1);
  for (float& p : *t->mutable_policy_probs()) p *= 0.9f;
  expect_rejected(game, RejectReason::kBadPolicy, "ply 1: policy sums to 0.9");

  game = fools_mate();
  t = add_uniform_target(game, 1);
  t->set_policy_moves(1, t->policy_moves(0));
  expect_rejected(game, RejectReason::kBadPolicy, "twice");

  game = fools_mate();
  t = add_uniform_target(game, 0);
  t->set_policy_probs(0, 1.5f);
  t->set_policy_probs(1, t->policy_probs(1) - 1.5f);
  expect_rejected(game, RejectReason::kBadPolicy, "outside [0, 1]");

  game = fools_mate();
  add_uniform_target(game, 0)->set_policy_probs(3, std::numeric_limits<float>::infinity());
  expect_rejected(game, RejectReason::kBadPolicy, "outside [0, 1]");
}

TEST(Validation, RejectsWrongResults) {
  v1::Game game = fools_mate();
  game.set_outcome(v1::DRAW);
  expect_rejected(game, RejectReason::kBadResult, "checkmate");
  game.set_outcome(v1::WHITE_WINS);
  expect_rejected(game, RejectReason::kBadResult, "ply 4: the final position is 0-1");
  game.set_outcome(v1::BLACK_WINS);
  game.set_termination(v1::RESIGNATION);
  expect_rejected(game, RejectReason::kBadResult, "checkmate");
  // Rule-decided terminations that do not hold.
  expect_rejected(game_of({"e2e4"}, v1::WHITE_WINS, v1::CHECKMATE), RejectReason::kBadResult,
                  "rules do not end");
  expect_rejected(game_of({"e2e4"}, v1::DRAW, v1::STALEMATE), RejectReason::kBadResult,
                  "rules do not end");
  expect_rejected(game_of({"e2e4"}, v1::DRAW, v1::RESIGNATION), RejectReason::kBadResult,
                  "resigned");
  expect_rejected(game_of({"g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"},
                          v1::WHITE_WINS, v1::THREEFOLD_REPETITION),
                  RejectReason::kBadResult, "threefold");
}

TEST(Validation, RejectsMovesAfterTheEnd) {
  v1::Game game = fools_mate();
  game.add_moves(12 + 64 * 28);
  expect_rejected(game, RejectReason::kBadResult, "ply 4: moves continue after checkmate at ply 4");
  game = game_of({"g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8", "e2e4"}, v1::DRAW,
                 v1::MOVE_LIMIT);
  expect_rejected(game, RejectReason::kBadResult, "after threefold repetition at ply 8");
}

}  // namespace
}  // namespace chessrl::record
