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

// Plays a seeded random legal game into game.moves, to its end by the rules or
// 400 plies, and sets game.result.
void play_random_game(std::uint32_t seed, PgnGame& game) {
  std::mt19937 rng(seed);
  Position pos;
  while (!game_result(pos).is_over() && game.moves.size() < 400) {
    MoveList moves = legal_moves(pos);
    Move m = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
    game.moves.push_back(m);
    pos.make_move(m);
  }
  game.result = game_result(pos).pgn_result();
}

// Scholar's mate with a full roster and one extra tag.
PgnGame scholars_mate() {
  PgnGame game;
  game.event = "chess-rl self-play";
  game.white = "net-12";
  game.black = "net-11";
  game.date = "2026.11.22";
  game.result = "1-0";
  game.tags = {{"Termination", "normal"}};
  game.moves = uci_moves("", "e2e4 e7e5 f1c4 b8c6 d1h5 g8f6 h5f7");
  return game;
}

TEST(Pgn, ScholarsMate) {
  const PgnGame game = scholars_mate();
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
  PgnGame game;
  play_random_game(11, game);
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

// --- read_pgn / read_pgn_games ---

std::string uci_line(const std::vector<Move>& moves) {
  std::string line;
  for (Move m : moves) line += (line.empty() ? "" : " ") + to_uci(m);
  return line;
}

// The game write_pgn would write again: start_fen in Position::fen() form.
void expect_same_game(const PgnGame& read, const PgnGame& written) {
  EXPECT_EQ(read.event, written.event);
  EXPECT_EQ(read.site, written.site);
  EXPECT_EQ(read.date, written.date);
  EXPECT_EQ(read.round, written.round);
  EXPECT_EQ(read.white, written.white);
  EXPECT_EQ(read.black, written.black);
  EXPECT_EQ(read.tags, written.tags);
  EXPECT_EQ(read.start_fen,
            written.start_fen.empty() ? "" : testing::from_fen(written.start_fen).fen());
  EXPECT_EQ(uci_line(read.moves), uci_line(written.moves));
  EXPECT_EQ(read.result, written.result);
}

void expect_round_trip(const PgnGame& game) {
  auto pgn = write_pgn(game);
  ASSERT_TRUE(pgn.ok()) << pgn.error();
  auto read = read_pgn(*pgn);
  ASSERT_TRUE(read.ok()) << read.error() << "\n" << *pgn;
  expect_same_game(*read, game);
}

TEST(PgnRead, RoundTripsWrittenGames) {
  const PgnGame scholars = scholars_mate();
  expect_round_trip(scholars);

  PgnGame castles;
  castles.start_fen = "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 12";
  castles.moves = uci_moves(castles.start_fen, "e8c8 e1g1 h8h1");
  expect_round_trip(castles);

  PgnGame endgame;
  endgame.start_fen = "6k1/5ppp/8/8/8/8/8/R5K1 b - -";  // completed to six fields
  endgame.event = "mate in one";
  endgame.result = "1-0";
  endgame.tags = {{"PlyCount", "2"}, {"Annotator", "chess-rl"}};
  endgame.moves = uci_moves(endgame.start_fen, "g8h8 a1a8");
  expect_round_trip(endgame);

  PgnGame escaped;
  escaped.event = R"(The "big" one \ final)";
  escaped.tags = {{"Comment", R"(\"quoted\" \\ {braces} ; semicolon [brackets])"}};
  escaped.result = "1/2-1/2";
  expect_round_trip(escaped);

  PgnGame empty;  // no moves, every field at its default
  expect_round_trip(empty);
}

TEST(PgnRead, RoundTripsLongRandomGames) {
  for (unsigned seed : {3u, 11u, 29u}) {
    SCOPED_TRACE(seed);
    PgnGame game;
    game.event = "random";
    game.round = std::to_string(seed);
    game.tags = {{"Seed", std::to_string(seed)}};
    play_random_game(seed, game);
    EXPECT_GE(game.moves.size(), 10u);
    expect_round_trip(game);
  }
}

TEST(PgnRead, AnnotatedGameFromFen) {
  const std::string_view pgn =
      "\xEF\xBB\xBF[Event \"Annotated\"]\n"
      "[Site \"Lab\"]\n"
      "[Date \"2026.01.02\"]\n"
      "[Round \"3\"]\n"
      "[White \"A\"]\n"
      "[Black \"B\"]\n"
      "[Result \"1-0\"]\n"
      "[FEN \"r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 12\"]\n"
      "[Annotator \"me\"]\n"
      "[TimeControl \"40/7200:3600\"]\n"
      "\n"
      "% an escape line: ( { are not syntax here\n"
      "{Opening comment} 12... O-O-O! $1 {castles (long)} (12... O-O 13. O-O\n"
      "(13. Rh1?? ; nested ) in a rest-of-line comment\n"
      ") Rf1+ {a (comment) in a variation}) 13. O-O $14 Rh1+!? ; check\n"
      "14.Kxh1 Rd2 15. Ra8+ Kb7 16. Rfa1 ?! Rd1+ 17. Rxd1 {the end} (17. Kg2 Rxa1)\n"
      "17...Kxa8 $18 1-0\n";
  auto game = read_pgn(pgn);
  ASSERT_TRUE(game.ok()) << game.error();
  EXPECT_EQ(game->event, "Annotated");
  EXPECT_EQ(game->site, "Lab");
  EXPECT_EQ(game->date, "2026.01.02");
  EXPECT_EQ(game->round, "3");
  EXPECT_EQ(game->white, "A");
  EXPECT_EQ(game->black, "B");
  EXPECT_EQ(game->result, "1-0");
  EXPECT_EQ(game->start_fen, "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 12");
  const std::vector<std::pair<std::string, std::string>> tags = {{"Annotator", "me"},
                                                                 {"TimeControl", "40/7200:3600"}};
  EXPECT_EQ(game->tags, tags);
  EXPECT_EQ(uci_line(game->moves),
            uci_line(uci_moves(game->start_fen,
                               "e8c8 e1g1 h8h1 g1h1 d8d2 a1a8 c8b7 f1a1 d2d1 a1d1 b7a8")));

  // Import-format leniency: no tags, no spaces after move numbers, 0-0 castling,
  // a move number without periods, and no termination marker at the end.
  auto bare = read_pgn("1.e4 e5 2.Nf3 Nc6 3.Bc4 Bc5 4 0-0 Nf6");
  ASSERT_TRUE(bare.ok()) << bare.error();
  EXPECT_EQ(uci_line(bare->moves), "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5 e1g1 g8f6");
  EXPECT_EQ(bare->result, "*");
  EXPECT_TRUE(bare->start_fen.empty());
  EXPECT_TRUE(bare->tags.empty());

  // Without a marker, the Result tag gives the result; SetUp "1" with FEN.
  auto tagged = read_pgn(
      "[Result \"0-1\"]\r\n[SetUp \"1\"]\r\n[FEN \"6k1/8/8/8/8/8/r4PPP/6K1 w - - 0 40\"]\r\n"
      "\r\n40. h3 {forced?}");
  ASSERT_TRUE(tagged.ok()) << tagged.error();
  EXPECT_EQ(tagged->result, "0-1");
  EXPECT_EQ(uci_line(tagged->moves), "h2h3");
  EXPECT_EQ(tagged->start_fen, "6k1/8/8/8/8/8/r4PPP/6K1 w - - 0 40");
  EXPECT_EQ(tagged->event, "?");
}

TEST(PgnRead, MultiGameText) {
  PgnGame first;
  first.white = "net-1";
  first.result = "1-0";
  first.moves = uci_moves("", "e2e4 e7e5 f1c4 b8c6 d1h5 g8f6 h5f7");
  PgnGame second;
  second.start_fen = "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1";
  second.result = "1-0";
  second.moves = uci_moves(second.start_fen, "g8h8 a1a8");
  const std::string text = *write_pgn(first) + "\n" + *write_pgn(second) +
                           "{between games}\n\n"
                           "1. d4 d5 2. c4 1/2-1/2\n"
                           "[Event \"last\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4#\n";
  auto games = read_pgn_games(text);
  ASSERT_TRUE(games.ok()) << games.error();
  ASSERT_EQ(games->size(), 4u);
  expect_same_game((*games)[0], first);
  expect_same_game((*games)[1], second);
  EXPECT_EQ(uci_line((*games)[2].moves), "d2d4 d7d5 c2c4");
  EXPECT_EQ((*games)[2].result, "1/2-1/2");
  EXPECT_EQ((*games)[3].event, "last");
  EXPECT_EQ(uci_line((*games)[3].moves), "f2f3 e7e5 g2g4 d8h4");
  EXPECT_EQ((*games)[3].result, "0-1");

  auto none = read_pgn_games(" \n{just a comment}\n");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->empty());

  // read_pgn reads exactly one game.
  auto two = read_pgn("1. e4 * 1. d4 *");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().find("text after the end of the game"), std::string::npos) << two.error();
}

// The error of read_pgn(text) contains `expected`.
void expect_read_error(std::string_view text, std::string_view expected) {
  auto game = read_pgn(text);
  ASSERT_FALSE(game.ok()) << "read: " << text;
  EXPECT_NE(game.error().find(expected), std::string::npos)
      << "error: " << game.error() << "\nexpected: " << expected;
}

TEST(PgnRead, ErrorsNameTheProblem) {
  Position after_e4;
  after_e4.make_move(Move(kE2, kE4));
  expect_read_error("1. e4 Nf9 *",
                    "PGN move 1 (ply 2) 'Nf9': " + parse_san(after_e4, "Nf9").error());
  expect_read_error("1. e4 e5 2. Ke3 *", "PGN move 2 (ply 3) 'Ke3': illegal SAN");
  expect_read_error("[FEN \"4k3/8/8/8/8/8/8/4K3 b - - 0 40\"]\n40... Kd8 41. Ke2 Kd1 *",
                    "PGN move 41 (ply 3) 'Kd1': ");
  expect_read_error("1. e4 e5 -- *", "PGN move 2 (ply 3) '--'");

  expect_read_error("[Event \"x\"\n1. e4 *", "line 1: tag 'Event': expected ']'");
  expect_read_error("[Event \"x]\n1. e4 *", "tag 'Event': unterminated value");
  expect_read_error("[Event x]\n*", "tag 'Event': expected a quoted value");
  expect_read_error("[Bad Tag \"x\"]\n*", "tag 'Bad': expected a quoted value");
  expect_read_error("[ \"x\"]\n*", "tag has no name");
  expect_read_error("[_x \"x\"]\n*", "tag name '_x' is not a PGN symbol");
  expect_read_error("[Event \"x\"", "unterminated tag");
  expect_read_error("[Event \"a\"]\n[Event \"b\"]\n*", "line 2: tag 'Event' repeats");
  expect_read_error("[Result \"2-0\"]\n*", "Result tag must be 1-0, 0-1, 1/2-1/2 or *, got '2-0'");
  expect_read_error("[SetUp \"1\"]\n*", "SetUp tag \"1\" without a FEN tag");
  expect_read_error("[FEN \"not a fen\"]\n*", "PGN FEN tag: FEN must have 4 to 6");

  expect_read_error("1. e4 {unfinished\ne5 *", "PGN line 1: unterminated comment '{'");
  expect_read_error("1. e4\n(1. d4 d5 {ok} *", "PGN line 2: unterminated variation '('");
  expect_read_error("1. e4 (1. d4 {never closed) *", "unterminated comment '{'");
  expect_read_error("1. e4 ) e5 *", "')' closes no variation");
  expect_read_error("1. e4 $ e5 *", "'$' without a NAG number");
  expect_read_error("1. e4 \"e5\" *", "unexpected '\"'");

  expect_read_error("[Result \"1-0\"]\n\n1. e4 e5 0-1",
                    "Result tag '1-0' disagrees with the termination marker '0-1'");
  expect_read_error("1. e4 e5\n\n[Event \"next\"]\n1. d4 *",
                    "PGN line 3: missing termination marker before the next tag section");
  expect_read_error("", "PGN text holds no game");
  expect_read_error(" {only a comment} ", "PGN text holds no game");

  auto games = read_pgn_games("1. e4 e5 *\n\n1. d4 d5 2. Ke2 *\n1. c4 *");
  ASSERT_FALSE(games.ok());
  EXPECT_NE(games.error().find("PGN game 2: move 2 (ply 3) 'Ke2'"), std::string::npos)
      << games.error();
}

// Any bytes are safe: mutated and random texts fail or parse, never crash, and
// whatever parses writes back and reads again as the same game.
TEST(PgnRead, SurvivesMutatedAndRandomBytes) {
  PgnGame game;
  game.start_fen = "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 8";
  game.tags = {{"Annotator", "fuzz"}};
  Position pos = testing::from_fen(game.start_fen);
  std::mt19937 rng(7);
  while (!game_result(pos).is_over() && game.moves.size() < 60) {
    MoveList moves = legal_moves(pos);
    Move m = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
    game.moves.push_back(m);
    pos.make_move(m);
  }
  game.result = game_result(pos).pgn_result();
  const std::string written = *write_pgn(game);
  const std::string annotated =
      "[Event \"a\"]\n[Result \"*\"]\n\n{c} 1. e4 $1 (1. d4 (1. c4) {x}) e5 ; rest\n"
      "2. Nf3 Nc6 3. Bb5 a6 *\n";
  const std::string seeds[] = {written, annotated, written + "\n" + annotated};
  // Characters that matter to the syntax, to make interesting mutations likely.
  const std::string_view syntax = "[]{}()\";%$.*-/\\ \n0123456789!?+#=xOabcdefgh12345678KQRBN";

  int parsed = 0, parsed_games = 0;
  auto check = [&](const std::string& text) {
    auto one = read_pgn(text);
    if (one.ok()) {
      ++parsed;
      auto again = write_pgn(*one);
      ASSERT_TRUE(again.ok()) << again.error();
      auto reread = read_pgn(*again);
      ASSERT_TRUE(reread.ok()) << reread.error();
      EXPECT_EQ(uci_line(reread->moves), uci_line(one->moves));
      EXPECT_EQ(reread->start_fen, one->start_fen);
      EXPECT_EQ(reread->result, one->result);
    }
    auto all = read_pgn_games(text);
    if (all.ok()) parsed_games += int(all->size());
    if (one.ok()) {
      EXPECT_TRUE(all.ok() && all->size() == 1u) << text;
    }
  };

  std::uniform_int_distribution<int> byte(0, 255);
  for (int iter = 0; iter < 4000; ++iter) {
    std::string text = seeds[size_t(iter) % std::size(seeds)];
    const int edits = 1 + iter % 8;
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng);
      const char c = iter % 2
                         ? char(byte(rng))
                         : syntax[std::uniform_int_distribution<size_t>(0, syntax.size() - 1)(rng)];
      switch (rng() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.insert(at, 1, c);
          break;
        default:
          text.erase(at, 1 + rng() % 4);
          break;
      }
    }
    check(text);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (int iter = 0; iter < 1000; ++iter) {
    std::string text(std::uniform_int_distribution<size_t>(0, 200)(rng), '\0');
    for (char& c : text) c = char(byte(rng));
    check(text);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Some mutations (in comments, tag values, glyphs) still parse.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(parsed_games, parsed);
}

}  // namespace
}  // namespace chessrl::chess
