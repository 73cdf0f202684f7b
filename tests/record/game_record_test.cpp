#include "chessrl/record/game_record.h"

#include <gtest/gtest.h>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/position.h"

namespace chessrl::record {
namespace {

using chess::testing::uci_moves;

// Fool's mate with two recorded moves.
GameRecord fools_mate() {
  GameRecord r;
  r.id = "test-0";
  r.index = 0;
  r.seed = 99;
  r.start_fen = chess::Position().fen();
  r.moves = uci_moves("", "f2f3 e7e5 g2g4 d8h4");
  r.result = {chess::Outcome::kBlackWins, chess::Termination::kCheckmate};
  MoveTarget t0;
  t0.ply = 0;
  t0.root_value = 0.05f;
  t0.root_draw = 0.4f;
  t0.visits = 100;
  t0.policy = {{r.moves[0], 0.25f}, {uci_moves("", "e2e4")[0], 0.75f}};
  MoveTarget t3;
  t3.ply = 3;
  t3.root_value = 1.0f;
  t3.visits = 50;
  const chess::Position before = [&] {
    chess::Position p;
    for (int i = 0; i < 3; ++i) p.make_move(r.moves[std::size_t(i)]);
    return p;
  }();
  t3.policy = {{r.moves[3], 1.0f}};
  (void)before;
  r.targets = {t0, t3};
  r.resign_disabled = true;
  r.would_resign_ply = 2;
  r.would_resign_side = chess::kWhite;
  return r;
}

TEST(GameRecord, JsonRoundTrip) {
  const GameRecord r = fools_mate();
  const std::string json = to_json(r);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto back = parse_record(json);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(r.resign_false_positive());  // white would have resigned, and lost
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(GameRecord, BadRecordsAreRefusedWithTheReason) {
  const std::string good = to_json(fools_mate());
  struct Case {
    std::string json, expect;
  };
  const Case cases[] = {
      {"{", "not valid JSON"},
      {"[]", "not a JSON object"},
      {replace(good, "\"g2g4\"", "\"g2g5\""), "move at ply 2"},
      {replace(good, "\"result\":\"0-1\"", "\"result\":\"1-0\""), "contradicts the final position"},
      {replace(good, "\"termination\":\"checkmate\"", "\"termination\":\"boredom\""),
       "termination' is unknown"},
      {replace(good, "0.75", "0.5"), "policy sums to"},
      {replace(good, "[\"e2e4\",0.75]", "[\"e2e5\",0.75]"), "policy move"},
      {replace(good, "\"ply\":3", "\"ply\":7"), "plies must increase"},
      {replace(good, "\"seed\":99", "\"seed\":\"x\""), "wrong type"},
  };
  for (const Case& c : cases) {
    auto r = parse_record(c.json);
    ASSERT_FALSE(r) << c.json;
    EXPECT_NE(r.error().find(c.expect), std::string::npos) << r.error();
  }
}

TEST(GameRecord, ResignationMustBeTheSideToMoveLosing) {
  GameRecord r = fools_mate();
  r.moves.pop_back();  // black to move after 1.f3 e5 2.g4: only black can have resigned
  r.targets.pop_back();
  r.result = {chess::Outcome::kBlackWins, chess::Termination::kResignation};
  auto parsed = parse_record(to_json(r));
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().find("resigned"), std::string::npos) << parsed.error();
  r.result = {chess::Outcome::kWhiteWins, chess::Termination::kResignation};
  EXPECT_TRUE(parse_record(to_json(r)));
}

TEST(GameRecord, PgnHasTheTermination) {
  auto text = chess::write_pgn(to_pgn(fools_mate()));
  ASSERT_TRUE(text) << text.error();
  EXPECT_NE(text->find("[Termination \"checkmate\"]"), std::string::npos);
  EXPECT_NE(text->find("2. g4 Qh4# 0-1"), std::string::npos) << *text;
}

}  // namespace
}  // namespace chessrl::record
