#include "chessrl/chess/pgn.h"

#include <cctype>
#include <string_view>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"

namespace chessrl::chess {

namespace {

constexpr size_t kMaxLine = 80;
// Tags write_pgn writes itself; an extra tag may not repeat them.
constexpr std::string_view kFixedTags[] = {"Event", "Site",   "Date",  "Round", "White",
                                           "Black", "Result", "SetUp", "FEN"};

std::string tag_line(const std::string& name, const std::string& value) {
  std::string line = "[" + name + " \"";
  for (char c : value) {
    if (c == '\\' || c == '"') line += '\\';
    line += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return line + "\"]\n";
}

// PGN tag names are symbols: a letter or digit, then letters, digits and _+#=:-.
bool valid_tag_name(const std::string& name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("_+#=:-").find(c) == std::string_view::npos)
      return false;
  return true;
}

// Appends tokens separated by spaces, breaking lines before kMaxLine columns.
class MovetextWriter {
 public:
  void add(const std::string& token) {
    if (!line_.empty() && line_.size() + 1 + token.size() > kMaxLine) {
      text_ += line_ + "\n";
      line_.clear();
    }
    if (!line_.empty()) line_ += ' ';
    line_ += token;
  }
  std::string finish() { return text_ + line_ + "\n"; }

 private:
  std::string text_, line_;
};

}  // namespace

Result<std::string> write_pgn(const PgnGame& game) {
  if (game.result != "1-0" && game.result != "0-1" && game.result != "1/2-1/2" &&
      game.result != "*")
    return fail("PGN result must be 1-0, 0-1, 1/2-1/2 or *, got '" + game.result + "'");
  Position pos;
  if (!game.start_fen.empty()) {
    auto parsed = Position::from_fen(game.start_fen);
    if (!parsed) return fail("PGN start position: " + parsed.error());
    pos = std::move(parsed).value();
  }

  std::string out;
  out += tag_line("Event", game.event);
  out += tag_line("Site", game.site);
  out += tag_line("Date", game.date);
  out += tag_line("Round", game.round);
  out += tag_line("White", game.white);
  out += tag_line("Black", game.black);
  out += tag_line("Result", game.result);
  if (!game.start_fen.empty()) {
    out += tag_line("SetUp", "1");
    out += tag_line("FEN", pos.fen());
  }
  for (const auto& [name, value] : game.tags) {
    if (!valid_tag_name(name)) return fail("PGN tag name '" + name + "' is not a PGN symbol");
    for (std::string_view fixed : kFixedTags)
      if (name == fixed)
        return fail("PGN tag '" + name + "' is written from the PgnGame fields, not from tags");
    out += tag_line(name, value);
  }
  out += '\n';

  MovetextWriter movetext;
  for (size_t ply = 0; ply < game.moves.size(); ++ply) {
    const Move m = game.moves[ply];
    if (!is_legal(pos, m))
      return fail("PGN ply " + std::to_string(ply + 1) + ": move " + to_uci(m) +
                  " is not legal in position " + pos.fen());
    if (pos.side_to_move() == kWhite)
      movetext.add(std::to_string(pos.fullmove_number()) + ".");
    else if (ply == 0)
      movetext.add(std::to_string(pos.fullmove_number()) + "...");
    movetext.add(to_san(pos, m));
    pos.make_move(m);
  }
  movetext.add(game.result);
  return out + movetext.finish();
}

}  // namespace chessrl::chess
