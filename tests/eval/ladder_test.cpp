// The Stockfish ladder's text form, labels, specs and promotion rule
// (chessrl/eval/ladder.h); no engine is started.
#include "chessrl/eval/ladder.h"

#include <gtest/gtest.h>

#include <string>

#include "chessrl/eval/uci_engine.h"

namespace chessrl::eval {
namespace {

std::string error_of(const std::string& text) {
  auto parsed = parse_ladder(text);
  return parsed.ok() ? std::string("(parsed)") : parsed.error();
}

TEST(Ladder, TheDefaultIsSkillZeroAtDepthOneThenSkillOneAtDepthTwo) {
  auto rungs = parse_ladder(kDefaultLadder);
  ASSERT_TRUE(rungs.ok()) << rungs.error();
  ASSERT_EQ(rungs->size(), 2u);
  EXPECT_EQ((*rungs)[0].program, "stockfish");
  EXPECT_EQ((*rungs)[0].skill, 0);
  EXPECT_EQ((*rungs)[0].depth, 1);
  EXPECT_EQ((*rungs)[0].label, "stockfish-skill0");
  EXPECT_EQ((*rungs)[1].skill, 1);
  EXPECT_EQ((*rungs)[1].depth, 2);
  EXPECT_EQ((*rungs)[1].label, "stockfish-skill1");
  // The spec parses as an anchor, under the rung's label.
  const std::string spec = (*rungs)[0].anchor_spec();
  EXPECT_EQ(spec, "uci:stockfish;Skill Level=0;depth=1;name=stockfish-skill0");
  EXPECT_TRUE(parse_anchor(spec, 1).ok());
  EXPECT_EQ(anchor_label(spec), "stockfish-skill0");
}

TEST(Ladder, EmptyOrOffIsNoLadder) {
  for (const char* text : {"", "off", "  "}) {
    auto rungs = parse_ladder(text);
    ASSERT_TRUE(rungs.ok()) << text << ": " << rungs.error();
    EXPECT_TRUE(rungs->empty()) << text;
  }
}

TEST(Ladder, ADepthOtherThanSkillPlusOneIsInTheLabelAndPathsKeepTheirBaseName) {
  auto rungs = parse_ladder(" /usr/games/stockfish:3:4 , stockfish:3:1 ,sf:20:30");
  ASSERT_TRUE(rungs.ok()) << rungs.error();
  ASSERT_EQ(rungs->size(), 3u);
  EXPECT_EQ((*rungs)[0].program, "/usr/games/stockfish");
  EXPECT_EQ((*rungs)[0].label, "stockfish-skill3");
  EXPECT_EQ((*rungs)[1].label, "stockfish-skill3-depth1");
  EXPECT_EQ((*rungs)[2].label, "sf-skill20-depth30");
  EXPECT_EQ(rung_index(*rungs, "stockfish-skill3-depth1"), 1u);
  EXPECT_EQ(rung_index(*rungs, "stockfish-skill9"), 3u);
}

TEST(Ladder, BadRungsAreRefusedNamingTheRungAndTheProblem) {
  EXPECT_NE(error_of("stockfish:0").find("rung 1 'stockfish:0' has fewer than three fields"),
            std::string::npos)
      << error_of("stockfish:0");
  EXPECT_NE(error_of("stockfish:0:1,").find("rung 2 is empty"), std::string::npos)
      << error_of("stockfish:0:1,");
  EXPECT_NE(error_of(":0:1").find("has no program"), std::string::npos) << error_of(":0:1");
  EXPECT_NE(error_of("stockfish:21:1").find("SKILL '21' is not a whole number 0-20"),
            std::string::npos)
      << error_of("stockfish:21:1");
  EXPECT_NE(error_of("stockfish:low:1").find("SKILL 'low'"), std::string::npos);
  EXPECT_NE(error_of("stockfish:0:0").find("DEPTH '0' is not a whole number 1-30"),
            std::string::npos)
      << error_of("stockfish:0:0");
  EXPECT_NE(error_of("stockfish:0:1x").find("DEPTH '1x'"), std::string::npos);
  EXPECT_NE(error_of("stockfish:-1:1").find("SKILL '-1'"), std::string::npos);
  EXPECT_NE(error_of("sf;Hash=1:0:1").find("may not hold ';'"), std::string::npos);
  const std::string twice = error_of("stockfish:0:1,/usr/games/stockfish:0:1");
  EXPECT_NE(twice.find("rung 2"), std::string::npos) << twice;
  EXPECT_NE(twice.find("another rung has the label 'stockfish-skill0'"), std::string::npos)
      << twice;
  // The whole text is quoted.
  EXPECT_NE(error_of("stockfish:0:1,x").find("ladder 'stockfish:0:1,x', rung 2"),
            std::string::npos)
      << error_of("stockfish:0:1,x");
}

TEST(Ladder, AScoreOfAtLeastHalfMovesUpOneRungNeverPastTheTop) {
  EXPECT_EQ(next_rung(0, 2, 0.0), 0u);
  EXPECT_EQ(next_rung(0, 2, 0.4375), 0u);  // 3.5 of 8
  EXPECT_EQ(next_rung(0, 2, 0.5), 1u);     // 4 of 8: half the time
  EXPECT_EQ(next_rung(0, 2, 0.75), 1u);
  EXPECT_EQ(next_rung(0, 3, 1.0), 1u);  // one rung at a time
  EXPECT_EQ(next_rung(1, 2, 1.0), 1u);  // the top stays
  EXPECT_EQ(next_rung(0, 1, 0.9), 0u);
}

TEST(Ladder, ResolveFindsTheProgramOrNamesTheMissingOne) {
  auto rungs = parse_ladder("/nonexistent/chessrl-no-engine:0:1");
  ASSERT_TRUE(rungs.ok()) << rungs.error();
  auto resolved = resolve_ladder(*rungs);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.error().find("no /nonexistent/chessrl-no-engine on PATH or in /usr/games"),
            std::string::npos)
      << resolved.error();
  // A program that is there (sh, as any POSIX system has) resolves to its path.
  auto sh = resolve_ladder(*parse_ladder("sh:0:1"));
  ASSERT_TRUE(sh.ok()) << sh.error();
  EXPECT_EQ((*sh)[0].program.front(), '/');
  EXPECT_EQ((*sh)[0].label, "sh-skill0");
}

}  // namespace
}  // namespace chessrl::eval
