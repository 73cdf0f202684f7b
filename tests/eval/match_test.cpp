#include "chessrl/eval/match.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"
#include "chessrl/eval/uci_engine.h"

namespace chessrl::eval {
namespace {

PlayerFactory factory(const std::string& spec, std::uint64_t seed) {
  return parse_anchor(spec, seed).value_or_throw();
}

// Replays a game's moves from its opening and checks the recorded result.
void expect_consistent(const MatchGame& g, int max_plies) {
  auto pos = chess::Position::from_fen(g.pgn.start_fen);
  ASSERT_TRUE(pos.ok()) << g.pgn.start_fen;
  for (std::size_t i = 0; i < g.pgn.moves.size(); ++i) {
    ASSERT_FALSE(chess::game_result(*pos).is_over()) << "a move after the game ended";
    ASSERT_TRUE(chess::is_legal(*pos, g.pgn.moves[i]))
        << "ply " << i + 1 << " " << chess::to_uci(g.pgn.moves[i]) << " in " << pos->fen();
    pos->make_move(g.pgn.moves[i]);
  }
  if (!g.forfeit.empty()) {
    EXPECT_EQ(g.result.reason, chess::Termination::kAdjudication);
  } else if (g.result.reason == chess::Termination::kMoveLimit) {
    EXPECT_EQ(int(g.pgn.moves.size()), max_plies);
    EXPECT_EQ(g.result.outcome, chess::Outcome::kDraw);
  } else {
    EXPECT_EQ(chess::game_result(*pos), g.result);
  }
  EXPECT_EQ(g.pgn.result, g.result.pgn_result());
  const bool first_won = g.result.outcome == (g.first_is_white ? chess::Outcome::kWhiteWins
                                                               : chess::Outcome::kBlackWins);
  EXPECT_EQ(g.first_score, g.result.outcome == chess::Outcome::kDraw ? 0.5 : first_won ? 1.0 : 0.0);
  auto text = chess::write_pgn(g.pgn);
  ASSERT_TRUE(text.ok()) << text.error();
}

std::string tag(const chess::PgnGame& g, const std::string& name) {
  for (const auto& [k, v] : g.tags)
    if (k == name) return v;
  return "";
}

TEST(Openings, EveryOneIsLegalAndPlayable) {
  const auto& fens = opening_fens();
  EXPECT_GE(fens.size(), 16u);
  EXPECT_LE(fens.size(), 24u);
  std::set<std::string> distinct(fens.begin(), fens.end());
  EXPECT_EQ(distinct.size(), fens.size());
  for (std::size_t i = 0; i < fens.size(); ++i) {
    auto pos = chess::Position::from_fen(fens[i]);
    ASSERT_TRUE(pos.ok()) << fens[i] << ": " << pos.error();
    EXPECT_FALSE(chess::game_result(*pos).is_over()) << fens[i];
    EXPECT_GE(pos->game_ply(), 4) << fens[i];  // a few moves in
    EXPECT_NE(opening_name(i), "?");
  }
  EXPECT_EQ(opening_name(fens.size()), "?");
  EXPECT_EQ(opening_name(0), "Ruy Lopez");
}

TEST(Match, ValidatesOptions) {
  MatchOptions o;
  o.pairs = 0;
  auto r = play_match(factory("random", 1), factory("random", 2), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("pairs"), std::string::npos);
  o = {};
  o.threads = 0;
  EXPECT_NE(o.validate().error().find("threads"), std::string::npos);
  o = {};
  o.max_plies = 0;
  EXPECT_NE(o.validate().error().find("max_plies"), std::string::npos);
  o = {};
  o.adjudicate_material = -1;
  EXPECT_NE(o.validate().error().find("adjudicate_material"), std::string::npos);
}

TEST(Match, AdjudicatesByMaterialAtTheMoveLimit) {
  // Greedy takes what random leaves: after 16 plies it is usually ahead.
  MatchOptions o;
  o.pairs = 6;
  o.max_plies = 16;
  o.adjudicate_material = 2;
  auto r = play_match(factory("greedy", 1), factory("random", 2), o);
  ASSERT_TRUE(r.ok()) << r.error();
  int adjudicated = 0;
  for (const MatchGame& g : r->games) {
    auto pos = chess::Position::from_fen(g.pgn.start_fen).value();
    for (const chess::Move m : g.pgn.moves) pos.make_move(m);
    const int balance = chess::material_balance(pos);
    if (g.result.reason == chess::Termination::kMoveLimit) {
      EXPECT_LT(std::abs(balance), 2) << g.pgn.start_fen;
      EXPECT_EQ(g.result.outcome, chess::Outcome::kDraw);
    }
    if (g.result.reason != chess::Termination::kAdjudication) continue;
    ++adjudicated;
    EXPECT_EQ(int(g.pgn.moves.size()), 16);
    EXPECT_GE(std::abs(balance), 2);
    EXPECT_EQ(g.result.outcome,
              balance > 0 ? chess::Outcome::kWhiteWins : chess::Outcome::kBlackWins);
  }
  EXPECT_GT(adjudicated, 6) << "greedy should be ahead in most games after 16 plies";
  EXPECT_GT(r->score.score(), 0.7);
}

TEST(Match, GreedyBeatsRandom) {
  MatchOptions o;
  o.pairs = 8;
  o.threads = 2;
  o.seed = 5;
  int calls = 0;
  auto r =
      play_match(factory("greedy", 1), factory("random", 2), o, [&](const MatchGame&) { ++calls; });
  ASSERT_TRUE(r.ok()) << r.error();
  const MatchResult& m = *r;
  ASSERT_EQ(m.games.size(), 16u);
  EXPECT_EQ(calls, 16);
  EXPECT_EQ(m.score.games(), 16);
  EXPECT_EQ(m.score.paired(), 8);
  EXPECT_EQ(m.forfeits, 0);
  int pair_points2 = 0;  // in half points
  for (int k = 0; k < 5; ++k) pair_points2 += k * m.score.pairs[std::size_t(k)];
  EXPECT_EQ(pair_points2, 2 * m.score.wins + m.score.draws);
  for (std::size_t i = 0; i < m.games.size(); ++i) {
    const MatchGame& g = m.games[i];
    expect_consistent(g, o.max_plies);
    EXPECT_EQ(g.pair, int(i / 2));
    EXPECT_EQ(g.first_is_white, i % 2 == 0);  // colours alternate within a pair
    EXPECT_EQ(g.pgn.white, g.first_is_white ? "greedy" : "random");
    EXPECT_EQ(g.pgn.black, g.first_is_white ? "random" : "greedy");
    EXPECT_EQ(g.pgn.round, std::to_string(g.pair + 1) + (g.first_is_white ? ".1" : ".2"));
    // Pair i plays opening (seed + i) mod the set, both games.
    const std::size_t opening = (o.seed + std::uint64_t(g.pair)) % opening_fens().size();
    EXPECT_EQ(g.pgn.start_fen, opening_fens()[opening]);
    EXPECT_EQ(tag(g.pgn, "Opening"), opening_name(opening));
    EXPECT_FALSE(tag(g.pgn, "Termination").empty());
    EXPECT_EQ(g.pgn.event, "chessrl match");
  }
  // Measured over seeds 1-10: greedy scores 0.94 to 1.0, nearly every game a
  // checkmate (it takes everything the random mover leaves, and then mates in
  // one when the random mover walks into it). Random against random: ~0.5.
  EXPECT_GE(m.score.score(), 0.85) << m.elo().to_string();
  EXPECT_GT(m.elo().elo, 0);
}

class Forfeiter final : public Player {
 public:
  std::string name() const override { return "forfeiter"; }
  Result<chess::Move> choose(const GameState&) override { return fail("no move today"); }
};

TEST(Match, ForfeitingPlayerLosesEveryGame) {
  MatchOptions o;
  o.pairs = 3;
  o.threads = 2;
  PlayerFactory forfeiter = []() -> Result<std::unique_ptr<Player>> {
    return std::unique_ptr<Player>(std::make_unique<Forfeiter>());
  };
  auto r = play_match(factory("random", 1), forfeiter, o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->score.wins, 6);
  EXPECT_EQ(r->forfeits, 6);
  EXPECT_EQ(r->score.pairs[4], 3);
  for (const MatchGame& g : r->games) {
    expect_consistent(g, o.max_plies);
    EXPECT_EQ(g.forfeit, "forfeiter: no move today");
    EXPECT_EQ(tag(g.pgn, "Forfeit"), "forfeiter: no move today");
    EXPECT_EQ(tag(g.pgn, "Termination"), "forfeit");
    // On move at the opening it forfeits at once, else after one random move.
    const bool white_to_move =
        chess::Position::from_fen(g.pgn.start_fen)->side_to_move() == chess::kWhite;
    EXPECT_EQ(g.pgn.moves.size(), white_to_move == g.first_is_white ? 1u : 0u);
  }
  auto text = chess::write_pgn(r->games[0].pgn);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("[Forfeit \"forfeiter: no move today\"]"), std::string::npos) << *text;
}

TEST(Match, FactoryFailureFailsTheMatch) {
  PlayerFactory broken = []() -> Result<std::unique_ptr<Player>> {
    return fail("engine x cannot start");
  };
  auto r = play_match(factory("random", 1), broken, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "engine x cannot start");
}

TEST(Match, StopFlagEndsEarly) {
  MatchOptions o;
  o.pairs = 10;
  o.threads = 1;
  std::atomic<bool> stop{false};
  int seen = 0;
  auto r = play_match(
      factory("random", 1), factory("random", 2), o,
      [&](const MatchGame&) {
        if (++seen == 3) stop = true;
      },
      &stop);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->games.size(), 3u);
  EXPECT_EQ(r->score.games(), 3);
  EXPECT_EQ(r->score.paired(), 1);  // the third game's pair is not complete
  std::atomic<bool> already{true};
  auto none = play_match(factory("random", 1), factory("random", 2), o, {}, &already);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->games.empty());
}

TEST(Match, SameSeedSameGames) {
  MatchOptions o;
  o.pairs = 3;
  o.threads = 1;
  o.max_plies = 120;
  auto play = [&](std::uint64_t seed) {
    return play_match(factory("random", seed), factory("random", seed + 1), o).value_or_throw();
  };
  const MatchResult a = play(4), b = play(4), c = play(9);
  ASSERT_EQ(a.games.size(), b.games.size());
  bool any_differ = false;
  for (std::size_t i = 0; i < a.games.size(); ++i) {
    EXPECT_EQ(a.games[i].pgn.moves, b.games[i].pgn.moves) << "game " << i;
    EXPECT_EQ(a.games[i].result, b.games[i].result);
    any_differ |= a.games[i].pgn.moves != c.games[i].pgn.moves;
  }
  EXPECT_TRUE(any_differ);
}

TEST(Match, AppendPgnWritesReadableGames) {
  MatchOptions o;
  o.pairs = 2;
  o.max_plies = 40;
  auto r = play_match(factory("greedy", 1), factory("random", 2), o).value_or_throw();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("chessrl-eval-" + std::to_string(::getpid()) + ".pgn"))
                               .string();
  std::filesystem::remove(path);
  std::vector<chess::PgnGame> games;
  for (const MatchGame& g : r.games) games.push_back(g.pgn);
  ASSERT_TRUE(append_pgn(path, games).ok());
  ASSERT_TRUE(append_pgn(path, {games[0]}).ok());  // appends
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::filesystem::remove(path);
  auto read = chess::read_pgn_games(text.str());
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_EQ(read->size(), 5u);
  EXPECT_EQ((*read)[0].moves, games[0].moves);
  EXPECT_EQ((*read)[0].start_fen, games[0].start_fen);
  EXPECT_EQ((*read)[4].round, games[0].round);

  auto bad = append_pgn("/nonexistent-dir/x.pgn", games);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("/nonexistent-dir/x.pgn"), std::string::npos) << bad.error();
  chess::PgnGame broken;
  broken.start_fen = "not a fen";
  auto invalid = append_pgn(path, {broken});
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().find(path + ": game 1"), std::string::npos) << invalid.error();
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace chessrl::eval
