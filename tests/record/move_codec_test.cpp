// The wire move codec: every legal move of varied positions round-trips,
// castling is the king's two-square move, and codes that name no legal move
// (out of range, wrong square, missing or extra promotion) decode to nothing.
#include "chessrl/record/move_codec.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"

namespace chessrl::record {
namespace {

chess::Position from_fen(std::string_view fen) {
  return chess::Position::from_fen(fen).value_or_throw();
}

// The code the wire format gives a UCI move, computed from its text.
std::uint32_t code_of_uci(const std::string& uci) {
  auto square = [](std::string_view s) {
    return static_cast<std::uint32_t>((s[0] - 'a') + 8 * (s[1] - '1'));
  };
  std::uint32_t promotion = 0;
  if (uci.size() == 5) promotion = static_cast<std::uint32_t>(std::string("nbrq").find(uci[4]) + 1);
  return square(uci.substr(0, 2)) + 64 * square(uci.substr(2, 2)) + 4096 * promotion;
}

std::uint32_t code(const chess::Position& pos, std::string_view uci) {
  return encode_move(chess::parse_uci(pos, uci).value_or_throw());
}

TEST(MoveCodec, EveryLegalMoveRoundTrips) {
  const char* fens[] = {
      "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
      // Kiwipete: castling both ways, pins, many captures.
      "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
      "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1",
      // En passant on f6.
      "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
      // Promotions, with and without capture, for both sides.
      "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
      "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1",
  };
  int checked = 0;
  for (const char* fen : fens) {
    const chess::Position pos = from_fen(fen);
    for (chess::Move m : chess::legal_moves(pos)) {
      const std::uint32_t c = encode_move(m);
      EXPECT_EQ(c, code_of_uci(chess::to_uci(m))) << fen << " " << chess::to_uci(m);
      EXPECT_LT(c, 5u * 4096u);
      const auto back = decode_move(pos, c);
      ASSERT_TRUE(back.has_value()) << fen << " " << chess::to_uci(m);
      EXPECT_EQ(*back, m) << fen << " " << chess::to_uci(m);
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(MoveCodec, CastlingIsTheKingsTwoSquareMove) {
  const chess::Position white =
      from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1");
  EXPECT_EQ(code(white, "e1g1"), 4u + 64u * 6u);
  EXPECT_EQ(code(white, "e1c1"), 4u + 64u * 2u);
  EXPECT_EQ(decode_move(white, 4 + 64 * 6)->kind(), chess::MoveKind::kCastling);
  const chess::Position black =
      from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1");
  EXPECT_EQ(code(black, "e8g8"), 60u + 64u * 62u);
  EXPECT_EQ(code(black, "e8c8"), 60u + 64u * 58u);
  // King takes own rook is not how castling travels.
  EXPECT_FALSE(decode_move(white, 4 + 64 * 7).has_value());
  EXPECT_FALSE(decode_move(white, 4 + 64 * 0).has_value());
}

TEST(MoveCodec, PromotionAndEnPassantCodes) {
  const chess::Position promo = from_fen("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1");
  // b7xa8=Q: b7 = 49, a8 = 56.
  EXPECT_EQ(code(promo, "b7a8q"), 49u + 64u * 56u + 4096u * 4u);
  EXPECT_EQ(code(promo, "b7a8n"), 49u + 64u * 56u + 4096u * 1u);
  EXPECT_EQ(decode_move(promo, 49 + 64 * 56 + 4096 * 3)->promotion(), chess::kRook);
  // A promotion without its piece, and a promotion code on a quiet move.
  EXPECT_FALSE(decode_move(promo, 49 + 64 * 56).has_value());
  const chess::Position start;
  EXPECT_FALSE(decode_move(start, 12 + 64 * 28 + 4096 * 4).has_value());  // e2e4q

  const chess::Position ep =
      from_fen("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3");
  const auto m = decode_move(ep, 36 + 64 * 45);  // e5f6
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind(), chess::MoveKind::kEnPassant);
}

TEST(MoveCodec, GarbageDecodesToNothing) {
  const chess::Position start;
  EXPECT_EQ(decode_move(start, 12 + 64 * 28)->to(), chess::kE4);
  for (std::uint32_t c : {5u * 4096u, 5u * 4096u + 12u + 64u * 28u, 1u << 20,
                          std::numeric_limits<std::uint32_t>::max()})
    EXPECT_FALSE(decode_move(start, c).has_value()) << c;
  EXPECT_FALSE(decode_move(start, 12 + 64 * 12).has_value());  // e2e2
  EXPECT_FALSE(decode_move(start, 12 + 64 * 36).has_value());  // e2e5
  EXPECT_FALSE(decode_move(start, 28 + 64 * 36).has_value());  // empty e4
  EXPECT_FALSE(decode_move(start, 52 + 64 * 44).has_value());  // e7e6: black's pawn
  EXPECT_FALSE(decode_move(start, 0).has_value());             // a1a1
}

}  // namespace
}  // namespace chessrl::record
