// `chessrl local`'s status line, from scrapes made up in the Prometheus text
// format: games per hour and the decisive share over the last minute, the
// evaluator's Stockfish ladder.
#include "local/status.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace chessrl::tool {
namespace {

Samples selfplay(double white, double black, double draw) {
  return parse_samples("# TYPE chessrl_selfplay_game_results_total counter\n"
                       "chessrl_selfplay_game_results_total{result=\"black\"} " +
                       std::to_string(black) +
                       "\nchessrl_selfplay_game_results_total{result=\"draw\"} " +
                       std::to_string(draw) +
                       "\nchessrl_selfplay_game_results_total{result=\"white\"} " +
                       std::to_string(white) + "\nchessrl_selfplay_games_total " +
                       std::to_string(white + black + draw) + "\n");
}

TEST(StatusLine, DecisiveShareIsOverTheLastMinuteAndEverySelfplayChild) {
  const auto t0 = std::chrono::steady_clock::now();
  StatusLine status;
  EXPECT_EQ(status.decisive_share(), std::nullopt);
  status.add({t0, {{"selfplay-0", selfplay(0, 0, 100)}, {"selfplay-1", selfplay(0, 0, 100)}}});
  // Only the first scrape: everything so far, all drawn.
  ASSERT_TRUE(status.decisive_share().has_value());
  EXPECT_DOUBLE_EQ(*status.decisive_share(), 0.0);
  // 30 s later: 40 more games, 10 won by white on one child, 6 by black on the other.
  status.add({t0 + std::chrono::seconds(30),
              {{"selfplay-0", selfplay(10, 0, 110)}, {"selfplay-1", selfplay(0, 6, 114)}}});
  EXPECT_DOUBLE_EQ(*status.decisive_share(), 16.0 / 40.0);
  EXPECT_DOUBLE_EQ(status.games_per_hour(), 40.0 * 120);
  const std::string line = status.format(std::chrono::seconds(95));
  EXPECT_NE(line.find("0:01:35 | games 240 (4,800/h, 40% decisive)"), std::string::npos) << line;
  // No game in the last interval: no share rather than a division by zero.
  StatusLine idle;
  idle.add({t0, {{"selfplay-0", selfplay(1, 1, 1)}}});
  idle.add({t0 + std::chrono::seconds(10), {{"selfplay-0", selfplay(1, 1, 1)}}});
  EXPECT_EQ(idle.decisive_share(), std::nullopt);
  EXPECT_NE(idle.format(std::chrono::seconds(10)).find("games 3 (0/h)"), std::string::npos)
      << idle.format(std::chrono::seconds(10));
}

TEST(StatusLine, GamesSummarySaysHowTheGamesEnded) {
  StatusLine status;
  EXPECT_EQ(status.games_summary(), "");
  Samples a = selfplay(3, 1, 16);
  Samples b = selfplay(0, 0, 0);
  const auto set = [](Samples& s, const char* reason, double n) {
    s["chessrl_selfplay_game_terminations_total{reason=\"" + std::string(reason) + "\"}"] = n;
  };
  set(a, "checkmate", 3);
  set(a, "resignation", 1);
  set(a, "move_limit", 10);
  set(a, "threefold_repetition", 6);
  set(a, "stalemate", 0);
  set(b, "move_limit", 0);
  status.add({std::chrono::steady_clock::now(), {{"selfplay-0", a}, {"selfplay-1", b}}});
  EXPECT_EQ(status.games_summary(),
            "20 self-play games: 20% decisive; move limit 50%, threefold repetition 30%, "
            "checkmate 15%, resignation 5%");
}

TEST(StatusLine, TheLadderShowsTheRungInPlayAndTheLatestScoreAgainstIt) {
  const auto now = std::chrono::steady_clock::now();
  const std::string anchors =
      "chessrl_eval_elo{opponent=\"random\"} 400\n"
      "chessrl_eval_elo_lower{opponent=\"random\"} 300\n"
      "chessrl_eval_elo_upper{opponent=\"random\"} 500\n";
  // No ladder (the evaluator's default): nothing of it on the line.
  StatusLine none;
  none.add({now, {{"evaluator", parse_samples(anchors + "chessrl_eval_ladder_rung 0\n")}}});
  EXPECT_EQ(none.ladder(), "");
  EXPECT_EQ(none.format(std::chrono::seconds(1)).find("ladder"), std::string::npos);
  // Rung 1 of 2 in play, not played yet.
  const std::string rungs = "chessrl_eval_ladder_in_play{opponent=\"stockfish-skill0\"} 1\n"
                            "chessrl_eval_ladder_in_play{opponent=\"stockfish-skill1\"} 0\n";
  StatusLine fresh;
  fresh.add({now, {{"evaluator", parse_samples(anchors + rungs + "chessrl_eval_ladder_rung 1\n")}}});
  EXPECT_EQ(fresh.ladder(), "stockfish-skill0 (1/2) no result yet");
  // Played: its score; the line ends with it, after the anchors' Elo.
  StatusLine played;
  played.add({now,
              {{"evaluator", parse_samples(anchors + rungs + "chessrl_eval_ladder_rung 1\n" +
                                           "chessrl_eval_score{opponent=\"stockfish-skill0\"} "
                                           "0.0625\n")}}});
  const std::string line = played.format(std::chrono::seconds(1));
  EXPECT_NE(line.find("| elo random +400 ±100 | ladder stockfish-skill0 (1/2) score 0.06"),
            std::string::npos)
      << line;
  // Moved up: the second rung, its own score (skill0's stays in the metrics, not shown).
  StatusLine up;
  up.add({now,
          {{"evaluator",
            parse_samples("chessrl_eval_ladder_in_play{opponent=\"stockfish-skill0\"} 0\n"
                          "chessrl_eval_ladder_in_play{opponent=\"stockfish-skill1\"} 1\n"
                          "chessrl_eval_ladder_rung 2\n"
                          "chessrl_eval_score{opponent=\"stockfish-skill0\"} 0.5\n"
                          "chessrl_eval_score{opponent=\"stockfish-skill1\"} 0.125\n")}}});
  EXPECT_EQ(up.ladder(), "stockfish-skill1 (2/2) score 0.12");
}

TEST(StatusLine, TheLossesOfTheHeadsTheTrainerExportsAreShown) {
  const auto t0 = std::chrono::steady_clock::now();
  auto trainer = [](bool heads) {
    std::string text =
        "chessrl_trainer_step 120\n"
        "chessrl_trainer_loss{head=\"total\"} 4.5\n"
        "chessrl_trainer_loss{head=\"policy\"} 3.25\n"
        "chessrl_trainer_loss{head=\"value\"} 0.75\n"
        "chessrl_trainer_loss{head=\"material\"} 0.25\n";
    if (heads)
      text += "chessrl_trainer_loss{head=\"reply\"} 2.5\n"
              "chessrl_trainer_loss{head=\"moves_left\"} 0.0625\n";
    return parse_samples(text);
  };
  StatusLine with;
  with.add({t0, {{"trainer-0", trainer(true)}}});
  const std::string line = with.format(std::chrono::seconds(5));
  EXPECT_NE(line.find("step 120 loss 4.50 (p 3.25 v 0.75 m 0.25 r 2.50 ml 0.06)"),
            std::string::npos)
      << line;
  StatusLine without;
  without.add({t0, {{"trainer-0", trainer(false)}}});
  const std::string plain = without.format(std::chrono::seconds(5));
  EXPECT_NE(plain.find("(p 3.25 v 0.75 m 0.25)"), std::string::npos) << plain;
}

}  // namespace
}  // namespace chessrl::tool
