// One limit on a game's length (record::kMaxGamePlies): replay refuses a
// longer game by default, and self-play refuses a move limit past it, through
// chessrl-selfplay's options and `chessrl selfplay`'s (add_game_options, the
// same function) and through SelfPlayConfig::validate, naming the flag.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/record/game_limits.h"
#include "chessrl/record/validation.h"
#include "chessrl/selfplay/game_options.h"
#include "chessrl/selfplay/game_runner.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {
namespace {

const std::string kLimit = std::to_string(record::kMaxGamePlies);
const std::string kOneMore = std::to_string(record::kMaxGamePlies + 1);

// chessrl-selfplay's options parsed and resolved; the parse error's text, or
// "" when both succeeded.
std::string parse_selfplay(const std::vector<std::string>& args, Settings& settings) {
  CLI::App app{"chessrl-selfplay"};
  add_options(app, settings);
  config::finish(app);
  std::vector<const char*> argv = {"chessrl-selfplay", "--replica", "r"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  if (auto r = resolve(settings, app); !r.ok()) return r.error();
  return "";
}

TEST(SelfplayMaxPlies, ReplayRefusesAGameLongerThanTheLimitByDefault) {
  EXPECT_EQ(record::ValidationLimits{}.max_plies, std::size_t(record::kMaxGamePlies));
  v1::Game game;
  game.set_id("long");
  for (int i = 0; i < record::kMaxGamePlies; ++i) game.add_moves(0);
  // At the limit the move count passes (the moves themselves are not legal).
  auto checked = record::validate_game(game);
  const auto* at_limit = std::get_if<record::Rejection>(&checked);
  ASSERT_NE(at_limit, nullptr);
  EXPECT_NE(at_limit->reason, record::RejectReason::kOversized) << at_limit->detail;
  game.add_moves(0);
  checked = record::validate_game(game);
  const auto* over = std::get_if<record::Rejection>(&checked);
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->reason, record::RejectReason::kOversized);
  EXPECT_EQ(over->detail, "moves: " + kOneMore + " plies, more than " + kLimit);
}

TEST(SelfplayMaxPlies, ChessrlSelfplayTakesTheLimitAndRefusesOneMoreNamingTheFlag) {
  Settings at_limit;
  EXPECT_EQ(parse_selfplay({"--max-plies", kLimit, "--short-max-plies", kLimit}, at_limit), "");
  EXPECT_EQ(at_limit.runner.config.max_plies, record::kMaxGamePlies);
  EXPECT_EQ(at_limit.runner.config.short_max_plies, record::kMaxGamePlies);

  for (const std::string flag : {"--max-plies", "--short-max-plies"}) {
    Settings over;
    const std::string error = parse_selfplay({flag, kOneMore}, over);
    EXPECT_EQ(error.rfind(flag + ": " + kOneMore + " is not in [1, " + kLimit + "]", 0), 0u)
        << error;
    EXPECT_NE(error.find("the replay service refuses a game of more than " + kLimit + " plies"),
              std::string::npos)
        << error;
    Settings zero;
    EXPECT_EQ(parse_selfplay({flag, "0"}, zero).rfind(flag + ": 0 is not in", 0), 0u) << flag;
    Settings word;
    EXPECT_EQ(parse_selfplay({flag, "many"}, word).rfind(flag + ": many is not in", 0), 0u)
        << flag;
  }
}

TEST(SelfplayMaxPlies, TheConfigRefusesALongerLimitToo) {
  selfplay::SelfPlayConfig config;
  config.max_plies = record::kMaxGamePlies;
  EXPECT_TRUE(config.validate().ok());
  config.max_plies = record::kMaxGamePlies + 1;
  auto refused = config.validate();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "max plies must be in [1, " + kLimit +
                                 "] (the replay service refuses a longer game), got " + kOneMore);
  config.max_plies = record::kMaxGamePlies;
  config.short_max_plies = record::kMaxGamePlies + 1;
  refused = config.validate();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "short max plies must be in [1, " + kLimit +
                                 "] (the replay service refuses a longer game), got " + kOneMore);
}

}  // namespace
}  // namespace chessrl::selfplay_service
