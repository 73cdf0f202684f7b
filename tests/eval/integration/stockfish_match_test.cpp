// A short match of stockfish (the real binary, a project dependency:
// deps/apt.txt) against the random mover. Fails, never skips, without it.
#include <gtest/gtest.h>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/eval/match.h"
#include "chessrl/eval/uci_engine.h"

namespace chessrl::eval {
namespace {

TEST(StockfishMatch, CrushesTheRandomMover) {
  ASSERT_TRUE(find_program("stockfish").has_value())
      << "stockfish is required (scripts/install-deps.sh installs it)";
  const std::string spec = "uci:stockfish;Threads=1;Hash=16;nodes=2000";
  auto sf = parse_anchor(spec, 1);
  ASSERT_TRUE(sf.ok()) << sf.error();
  MatchOptions o;
  o.pairs = 4;
  o.threads = 2;
  o.max_plies = 200;
  auto r = play_match(*sf, parse_anchor("random", 2).value_or_throw(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->games.size(), 8u);
  EXPECT_EQ(r->forfeits, 0);
  for (const MatchGame& g : r->games) {
    EXPECT_TRUE(g.forfeit.empty()) << g.forfeit;
    EXPECT_EQ(g.first_is_white ? g.pgn.white : g.pgn.black, "stockfish-Threads1-Hash16-nodes2000");
    auto pos = chess::Position::from_fen(g.pgn.start_fen).value_or_throw();
    for (const chess::Move m : g.pgn.moves) {
      ASSERT_TRUE(chess::is_legal(pos, m)) << chess::to_uci(m) << " in " << pos.fen();
      pos.make_move(m);
    }
    if (g.result.reason != chess::Termination::kMoveLimit) {
      EXPECT_EQ(chess::game_result(pos), g.result);
    }
  }
  EXPECT_GT(r->score.score(), 0.8) << r->elo().to_string();
}

}  // namespace
}  // namespace chessrl::eval
