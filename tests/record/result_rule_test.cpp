// The one result rule (result_rule.h), and the two readers that apply it:
// parse_record (the trainer's --data) refuses what replay's validation
// refuses. The cases are the ones where the two copies of the rule disagreed:
// adjudication (--data took any), resignation by the side not to move (replay
// took it) and moves after a rule ended the game (--data took them).
#include "chessrl/record/result_rule.h"

#include <gtest/gtest.h>

#include <string>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/position.h"
#include "chessrl/record/game_record.h"

namespace chessrl::record {
namespace {

using chess::GameResult;
using chess::Outcome;
using chess::Termination;
using chess::testing::uci_moves;

chess::Position after(const std::string& fen, const std::string& moves) {
  chess::Position pos = chess::Position::from_fen(fen).value_or_throw();
  for (chess::Move m : uci_moves(fen, moves)) pos.make_move(m);
  return pos;
}

// "" when `declared` is accepted at `pos`, else the problem.
std::string problem(const chess::Position& pos, GameResult declared) {
  return result_problem(pos, declared, declared.to_string()).value_or("");
}

const std::string kStart(chess::kStartFen);
const std::string kRookUp = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1";  // White leads by 5

TEST(ResultRule, TheRulesDecideWhenTheyEndTheGame) {
  const chess::Position mate = after(kStart, "f2f3 e7e5 g2g4 d8h4");
  EXPECT_EQ(problem(mate, {Outcome::kBlackWins, Termination::kCheckmate}), "");
  EXPECT_NE(problem(mate, {Outcome::kWhiteWins, Termination::kCheckmate})
                .find("the final position is 0-1 (checkmate)"),
            std::string::npos);
  EXPECT_NE(problem(mate, {Outcome::kBlackWins, Termination::kResignation}).find("checkmate"),
            std::string::npos);
  // A rule-decided termination where the rules do not end the game.
  EXPECT_NE(problem(after(kStart, "e2e4"), {Outcome::kDraw, Termination::kStalemate})
                .find("rules do not end"),
            std::string::npos);
}

TEST(ResultRule, ResignationIsTheSideToMoveLosing) {
  const chess::Position black_to_move = after(kStart, "e2e4");
  EXPECT_EQ(problem(black_to_move, {Outcome::kWhiteWins, Termination::kResignation}), "");
  EXPECT_NE(problem(black_to_move, {Outcome::kBlackWins, Termination::kResignation})
                .find("the side to move (black) resigned, so the result is 1-0"),
            std::string::npos);
  EXPECT_NE(problem(black_to_move, {Outcome::kDraw, Termination::kResignation}).find("resigned"),
            std::string::npos);
}

TEST(ResultRule, AdjudicationIsAWinForTheSideAheadAndTheMoveLimitADraw) {
  const chess::Position rook_up = after(kRookUp, "e1e2");
  EXPECT_EQ(problem(rook_up, {Outcome::kWhiteWins, Termination::kAdjudication}), "");
  EXPECT_NE(problem(rook_up, {Outcome::kBlackWins, Termination::kAdjudication})
                .find("material lead at the final position is -5"),
            std::string::npos);
  EXPECT_NE(problem(rook_up, {Outcome::kDraw, Termination::kAdjudication}).find("needs a winner"),
            std::string::npos);
  EXPECT_NE(problem(after(kStart, "e2e4"), {Outcome::kWhiteWins, Termination::kAdjudication})
                .find("lead at the final position is 0"),
            std::string::npos);
  EXPECT_EQ(problem(rook_up, {Outcome::kDraw, Termination::kMoveLimit}), "");
  EXPECT_NE(problem(rook_up, {Outcome::kWhiteWins, Termination::kMoveLimit})
                .find("a game stopped by the move limit is a draw"),
            std::string::npos);
}

TEST(ResultRule, AnUnfinishedGameHasNoResult) {
  EXPECT_NE(problem(after(kStart, "e2e4"), {}).find("not over"), std::string::npos);
}

TEST(ResultRule, NoMoveFollowsTheEnd) {
  EXPECT_FALSE(move_after_end_problem(after(kStart, "e2e4")));
  const chess::Position threefold = after(kStart, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8");
  EXPECT_EQ(move_after_end_problem(threefold).value_or(""),
            "moves continue after threefold repetition");
}

// A record with the given moves and result, one target at ply 0.
std::string record_json(const std::string& fen, const std::string& moves, GameResult result) {
  GameRecord r;
  r.id = "rule-0";
  r.start_fen = fen;
  r.moves = uci_moves(fen, moves);
  r.result = result;
  r.targets.push_back({.ply = 0, .policy = {{r.moves[0], 1.0f}}});
  return to_json(r);
}

// parse_record applies the rule: what it refused before (a resignation by
// the side not to move) and what it let through that replay refused.
TEST(ResultRule, TheTrainersRecordReaderAppliesIt) {
  EXPECT_TRUE(parse_record(record_json(kStart, "e2e4",
                                       {Outcome::kWhiteWins, Termination::kResignation})));
  EXPECT_TRUE(parse_record(record_json(kRookUp, "e1e2",
                                       {Outcome::kWhiteWins, Termination::kAdjudication})));
  const auto expect_refused = [](const std::string& json, const std::string& why) {
    auto r = parse_record(json);
    ASSERT_FALSE(r) << json;
    EXPECT_NE(r.error().find(why), std::string::npos) << r.error();
  };
  expect_refused(record_json(kStart, "e2e4", {Outcome::kBlackWins, Termination::kResignation}),
                 "resigned");
  expect_refused(record_json(kRookUp, "e1e2", {Outcome::kBlackWins, Termination::kAdjudication}),
                 "material lead at the final position is -5");
  expect_refused(record_json(kRookUp, "e1e2", {Outcome::kDraw, Termination::kAdjudication}),
                 "needs a winner");
  expect_refused(record_json(kStart, "e2e4", {}), "not over");
  // Moves after a threefold repetition, and a move-limit draw declared at the end.
  expect_refused(record_json(kStart, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8 e2e4",
                             {Outcome::kDraw, Termination::kMoveLimit}),
                 "move at ply 8: moves continue after threefold repetition");
}

}  // namespace
}  // namespace chessrl::record
