// UCI and SAN move strings (parse_square, parse_uci, parse_san). The input is
// a FEN on its first line (the start position when it does not parse), then
// one move string a line; each line is parsed both ways in the current
// position and a move either way accepts is played. Checks: what parses is
// legal, both parsers agree when both accept, to_uci/to_san of the move parse
// back to it, and error messages are printable ASCII (notation.h's promise
// that garbage input cannot produce a garbage message).
#include <string>
#include <string_view>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "fuzz_check.h"

using namespace chessrl::chess;

namespace {

bool printable(std::string_view text) {
  for (const char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

template <class T>
void check_error(const chessrl::Result<T>& r) {
  if (!r.ok()) FUZZ_CHECK(!r.error().empty() && printable(r.error()), r.error());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = chessrl::fuzz::as_text(data, size);
  const std::size_t eol = text.find('\n');
  Position pos;
  if (auto parsed = Position::from_fen(text.substr(0, eol))) pos = std::move(parsed).value();
  text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);

  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);

    check_error(parse_square(line));
    const auto uci = parse_uci(pos, line);
    const auto san = parse_san(pos, line);
    check_error(uci);
    check_error(san);
    const std::string fen = pos.fen();
    const std::string what = fen + " '" + std::string(line) + "'";
    if (uci.ok()) {
      FUZZ_CHECK(is_legal(pos, *uci), what);
      const auto back = parse_uci(pos, to_uci(*uci));
      FUZZ_CHECK(back.ok() && *back == *uci, what);
    }
    if (san.ok()) {
      FUZZ_CHECK(is_legal(pos, *san), what);
      const auto back = parse_san(pos, to_san(pos, *san));
      FUZZ_CHECK(back.ok() && *back == *san, what + " as " + to_san(pos, *san));
    }
    if (uci.ok() && san.ok()) FUZZ_CHECK(*uci == *san, what);
    if (uci.ok() || san.ok()) {
      pos.make_move(uci.ok() ? *uci : *san);
      FUZZ_CHECK(pos.key() == pos.compute_key(), what);
    }
  }
  return 0;
}
