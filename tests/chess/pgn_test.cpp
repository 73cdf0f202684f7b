#include "chessrl/chess/pgn.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"

namespace chessrl::chess {
namespace {

using testing::uci_moves;

TEST(Pgn, ScholarsMate) {
  PgnGame game;
  game.event = "chess-rl self-play";
  game.white = "net-12";
  game.black = "net-11";
  game.date = "2026.11.22";
  game.result = "1-0";
  game.tags = {{"Termination", "normal"}};
  game.moves = uci_moves("", "e2e4 e7e5 f1c4 b8c6 d1h5 g8f6 h5f7");
  auto pgn = write_pgn(game);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  EXPECT_EQ(*pgn,
            "[Event \"chess-rl self-play\"]\n"
            "[Site \"?\"]\n"
            "[Date \"2026.11.22\"]\n"
            "[Round \"?\"]\n"
            "[White \"net-12\"]\n"
            "[Black \"net-11\"]\n"
            "[Result \"1-0\"]\n"
            "[Termination \"normal\"]\n"
            "\n"
            "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n");
}

TEST(Pgn, GameFromFenWithBlackToMove) {
  PgnGame game;
  game.start_fen = "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 12";
  game.moves = uci_moves(game.start_fen, "e8c8 e1g1 h8h1");
  auto pgn = write_pgn(game);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  EXPECT_NE(pgn->find("[SetUp \"1\"]\n[FEN \"r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 12\"]\n"),
            std::string::npos)
      << *pgn;
  EXPECT_NE(pgn->find("\n\n12... O-O-O 13. O-O Rh1+ *\n"), std::string::npos) << *pgn;

  // The whole text, with extra tags after SetUp/FEN and a four-field FEN completed.
  PgnGame endgame;
  endgame.start_fen = "6k1/5ppp/8/8/8/8/8/R5K1 b - -";
  endgame.event = "mate in one";
  endgame.result = "1-0";
  endgame.tags = {{"PlyCount", "2"}, {"Annotator", "chess-rl"}};
  endgame.moves = uci_moves(endgame.start_fen, "g8h8 a1a8");
  pgn = write_pgn(endgame);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  EXPECT_EQ(*pgn,
            "[Event \"mate in one\"]\n"
            "[Site \"?\"]\n"
            "[Date \"????.??.??\"]\n"
            "[Round \"?\"]\n"
            "[White \"?\"]\n"
            "[Black \"?\"]\n"
            "[Result \"1-0\"]\n"
            "[SetUp \"1\"]\n"
            "[FEN \"6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1\"]\n"
            "[PlyCount \"2\"]\n"
            "[Annotator \"chess-rl\"]\n"
            "\n"
            "1... Kh8 2. Ra8# 1-0\n");
}

TEST(Pgn, LongGameWrapsAt80Columns) {
  // A seeded random game to its end by the rules.
  std::mt19937 rng(11);
  Position pos;
  PgnGame game;
  while (!game_result(pos).is_over() && game.moves.size() < 400) {
    MoveList moves = legal_moves(pos);
    Move m = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
    game.moves.push_back(m);
    pos.make_move(m);
  }
  game.result = game_result(pos).pgn_result();
  auto pgn = write_pgn(game);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  std::istringstream lines(*pgn);
  int movetext_lines = 0;
  bool in_movetext = false;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
    if (in_movetext) ++movetext_lines;
    if (line.empty()) in_movetext = true;
  }
  EXPECT_GT(movetext_lines, 3);
  EXPECT_EQ(pgn->back(), '\n');
  EXPECT_NE(pgn->find(" " + game.result + "\n"), std::string::npos);
}

TEST(Pgn, TagValuesAreEscaped) {
  PgnGame game;
  game.event = R"(The "big" one \ final)";
  game.site = "two\nlines";
  auto pgn = write_pgn(game);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  EXPECT_NE(pgn->find(R"([Event "The \"big\" one \\ final"])"), std::string::npos) << *pgn;
  EXPECT_NE(pgn->find("[Site \"two lines\"]"), std::string::npos) << *pgn;
  EXPECT_NE(pgn->find("\n\n*\n"), std::string::npos) << "an empty game is just its result";
}

TEST(Pgn, ErrorsNameTheProblem) {
  PgnGame bad_result;
  bad_result.result = "1-1";
  auto r = write_pgn(bad_result);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'1-1'"), std::string::npos) << r.error();

  PgnGame bad_fen;
  bad_fen.start_fen = "not a fen";
  r = write_pgn(bad_fen);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("start position"), std::string::npos) << r.error();

  PgnGame illegal;
  illegal.moves = {Move(kE2, kE4), Move(kE2, kE4)};
  r = write_pgn(illegal);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("ply 2: move e2e4 is not legal in position"), std::string::npos)
      << r.error();

  PgnGame null_move;
  null_move.moves = {Move::none()};
  r = write_pgn(null_move);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("ply 1: move 0000 is not legal"), std::string::npos) << r.error();

  PgnGame late;
  late.start_fen = "4k3/8/8/8/8/8/8/4K3 b - - 0 40";
  late.moves = {Move(kE8, kD8), Move(kE1, kE2), Move(kD8, kD1)};
  r = write_pgn(late);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("ply 3: move d8d1 is not legal in position 3k4/8/8/8/8/8/4K3/8 b"),
            std::string::npos)
      << r.error();

  PgnGame bad_tag;
  bad_tag.tags = {{"Bad Tag", "x"}};
  r = write_pgn(bad_tag);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'Bad Tag'"), std::string::npos) << r.error();

  for (const char* fixed : {"Result", "FEN", "Event"}) {
    PgnGame repeated;
    repeated.tags = {{"Annotator", "x"}, {fixed, "y"}};
    r = write_pgn(repeated);
    ASSERT_FALSE(r.ok()) << fixed;
    EXPECT_NE(r.error().find("PGN tag '" + std::string(fixed) + "'"), std::string::npos)
        << r.error();
  }
}

}  // namespace
}  // namespace chessrl::chess
