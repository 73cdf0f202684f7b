// FEN parsing (Position::from_fen) and what every position it accepts must
// then support: fen() parsing back to the same position and key, the
// incremental Zobrist key, legal move generation and counting, UCI and SAN of
// every legal move parsing back to it, make/unmake, and each position one
// move on being a valid FEN again.
#include <string>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "fuzz_check.h"

using namespace chessrl::chess;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parsed = Position::from_fen(chessrl::fuzz::as_text(data, size));
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().empty());
    return 0;
  }
  Position pos = std::move(parsed).value();
  const std::string fen = pos.fen();
  const Key key = pos.key();
  FUZZ_CHECK(key == pos.compute_key(), fen);
  auto again = Position::from_fen(fen);
  FUZZ_CHECK(again.ok(), fen + ": " + (again.ok() ? "" : again.error()));
  FUZZ_CHECK(again->fen() == fen, fen + " became " + again->fen());
  FUZZ_CHECK(again->key() == key, fen);

  const MoveList moves = legal_moves(pos);
  FUZZ_CHECK(count_legal(pos) == moves.size(), fen);
  const GameResult result = game_result(pos);
  if (moves.empty()) FUZZ_CHECK(result.is_over(), fen);
  for (const Move m : moves) {
    const std::string uci = to_uci(m);
    FUZZ_CHECK(is_legal(pos, m), fen + " " + uci);
    auto from_uci = parse_uci(pos, uci);
    FUZZ_CHECK(from_uci.ok() && *from_uci == m, fen + " " + uci);
    const std::string san = to_san(pos, m);
    auto from_san = parse_san(pos, san);
    FUZZ_CHECK(
        from_san.ok() && *from_san == m,
        fen + " " + uci + " " + san + ": " + (from_san.ok() ? "another move" : from_san.error()));

    pos.make_move(m);
    const std::string after = pos.fen();
    FUZZ_CHECK(pos.key() == pos.compute_key(), fen + " " + uci);
    auto reparsed = Position::from_fen(after);
    FUZZ_CHECK(reparsed.ok(),
               fen + " " + uci + " -> " + after + ": " + (reparsed.ok() ? "" : reparsed.error()));
    FUZZ_CHECK(reparsed->key() == pos.key(), fen + " " + uci);
    FUZZ_CHECK(count_legal(pos) == legal_moves(pos).size(), after);
    FUZZ_CHECK((san.back() == '#') == (pos.in_check() && count_legal(pos) == 0), fen + " " + san);
    (void)game_result(pos);
    pos.unmake_move();
    FUZZ_CHECK(pos.fen() == fen && pos.key() == key, fen + " " + uci + " unmade");
  }
  return 0;
}
