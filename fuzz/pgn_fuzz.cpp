// PGN import (read_pgn, read_pgn_games). Checks: the two agree (read_pgn
// accepts exactly the texts that hold one game), and every game read writes
// back (write_pgn) to PGN that reads to the same game.
#include <algorithm>
#include <string>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/pgn.h"
#include "fuzz_check.h"

using namespace chessrl::chess;

namespace {

// write_pgn turns line breaks in tag values into spaces; read_pgn keeps a
// carriage return (a tag value ends at a newline only).
std::string written(std::string value) {
  std::replace(value.begin(), value.end(), '\r', ' ');
  return value;
}

std::string moves_text(const PgnGame& game) {
  std::string out;
  for (const Move m : game.moves) out += to_uci(m) + " ";
  return out;
}

void check_round_trip(const PgnGame& game) {
  auto text = write_pgn(game);
  FUZZ_CHECK(text.ok(), text.ok() ? "" : text.error());
  auto back = read_pgn(*text);
  FUZZ_CHECK(back.ok(), *text + "\n" + (back.ok() ? "" : back.error()));
  FUZZ_CHECK(back->moves == game.moves, *text + "\n" + moves_text(*back));
  FUZZ_CHECK(back->start_fen == game.start_fen, *text);
  FUZZ_CHECK(back->result == game.result, *text);
  FUZZ_CHECK(back->event == written(game.event) && back->site == written(game.site) &&
                 back->date == written(game.date) && back->round == written(game.round) &&
                 back->white == written(game.white) && back->black == written(game.black),
             *text);
  FUZZ_CHECK(back->tags.size() == game.tags.size(), *text);
  for (std::size_t i = 0; i < game.tags.size(); ++i)
    FUZZ_CHECK(back->tags[i].first == game.tags[i].first &&
                   back->tags[i].second == written(game.tags[i].second),
               *text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = chessrl::fuzz::as_text(data, size);
  const auto games = read_pgn_games(text);
  const auto one = read_pgn(text);
  if (!games.ok()) FUZZ_CHECK(!games.error().empty());
  if (!one.ok()) FUZZ_CHECK(!one.error().empty());
  FUZZ_CHECK(one.ok() == (games.ok() && games->size() == 1));
  if (one.ok()) FUZZ_CHECK(one->moves == games->front().moves);
  if (games.ok())
    for (const PgnGame& game : *games) check_round_trip(game);
  return 0;
}
