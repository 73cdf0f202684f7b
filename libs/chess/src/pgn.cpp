#include "chessrl/chess/pgn.h"

#include <algorithm>
#include <cctype>
#include <optional>
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

// PGN import: a cursor over the text. Errors carry no "PGN " prefix; read_pgn and
// read_pgn_games add it (and the game number).
namespace {

constexpr std::string_view kTerminations[] = {"1-0", "0-1", "1/2-1/2", "*"};

bool is_termination(std::string_view token) {
  for (std::string_view t : kTerminations)
    if (token == t) return true;
  return false;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Characters that end a movetext token (a move, move number or marker).
bool ends_token(char c) {
  return is_space(c) || std::string_view("{}();[]$\"").find(c) != std::string_view::npos;
}

bool is_symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("_+#=:-").find(c) != std::string_view::npos;
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

class PgnReader {
 public:
  explicit PgnReader(std::string_view text) : text_(text) {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // UTF-8 byte order mark
  }

  bool at_end() const { return pos_ >= text_.size(); }
  std::string here() const { return where(pos_); }

  // Skips whitespace, {comments}, ; comments and % escape lines.
  Result<void> skip_filler() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (is_space(c)) {
        ++pos_;
      } else if (c == ';' || (c == '%' && (pos_ == 0 || text_[pos_ - 1] == '\n'))) {
        skip_line();
      } else if (c == '{') {
        const size_t close = text_.find('}', pos_ + 1);
        if (close == std::string_view::npos) return fail(where(pos_) + "unterminated comment '{'");
        pos_ = close + 1;
      } else {
        break;
      }
    }
    return {};
  }

  // Reads one game from the cursor (after skip_filler, not at the end).
  Result<PgnGame> read_game() {
    PgnGame game;
    std::optional<std::string> result_tag, fen_tag;
    bool setup = false;
    std::vector<std::string> seen;  // roster, Result, SetUp and FEN tags read so far
    for (;;) {
      if (auto skipped = skip_filler(); !skipped) return fail(skipped.error());
      if (at_end() || text_[pos_] != '[') break;
      const size_t tag_start = pos_;
      auto tag = read_tag();
      if (!tag) return fail(tag.error());
      auto& [name, value] = *tag;
      std::string* field = nullptr;
      if (name == "Event") field = &game.event;
      if (name == "Site") field = &game.site;
      if (name == "Date") field = &game.date;
      if (name == "Round") field = &game.round;
      if (name == "White") field = &game.white;
      if (name == "Black") field = &game.black;
      const bool fixed = field || name == "Result" || name == "SetUp" || name == "FEN";
      if (fixed) {
        for (const std::string& s : seen)
          if (s == name) return fail(where(tag_start) + "tag " + quoted(name) + " repeats");
        seen.push_back(name);
      }
      if (field) {
        *field = std::move(value);
      } else if (name == "Result") {
        if (!is_termination(value))
          return fail(where(tag_start) + "Result tag must be 1-0, 0-1, 1/2-1/2 or *, got " +
                      quoted(value));
        result_tag = std::move(value);
      } else if (name == "SetUp") {
        if (value != "0" && value != "1")
          return fail(where(tag_start) + "SetUp tag must be \"0\" or \"1\", got " + quoted(value));
        setup = value == "1";
      } else if (name == "FEN") {
        fen_tag = std::move(value);
      } else {
        game.tags.emplace_back(std::move(name), std::move(value));
      }
    }
    if (setup && !fen_tag) return fail("SetUp tag \"1\" without a FEN tag");

    Position pos;
    if (fen_tag) {
      auto parsed = Position::from_fen(*fen_tag);
      if (!parsed) return fail("FEN tag: " + parsed.error());
      pos = std::move(parsed).value();
      game.start_fen = pos.fen();
    }

    std::string marker;
    for (;;) {
      if (auto skipped = skip_filler(); !skipped) return fail(skipped.error());
      if (at_end()) break;
      const char c = text_[pos_];
      if (c == '[') return fail(here() + "missing termination marker before the next tag section");
      if (c == '(') {
        if (auto skipped = skip_variation(); !skipped) return fail(skipped.error());
        continue;
      }
      if (c == ')') return fail(here() + "')' closes no variation");
      if (c == '$') {
        const size_t start = pos_++;
        while (!at_end() && is_digit(text_[pos_])) ++pos_;
        if (pos_ == start + 1) return fail(where(start) + "'$' without a NAG number");
        continue;
      }
      if (ends_token(c)) return fail(here() + "unexpected " + quoted(std::string_view(&c, 1)));

      const size_t start = pos_;
      while (!at_end() && !ends_token(text_[pos_])) ++pos_;
      std::string_view token = text_.substr(start, pos_ - start);
      if (is_termination(token)) {
        marker = token;
        break;
      }
      if (is_digit(token.front())) {
        // A move number: digits then periods, perhaps with the move run on ("1.e4").
        size_t digits = 0;
        while (digits < token.size() && is_digit(token[digits])) ++digits;
        if (digits == token.size() || token[digits] == '.') {
          token.remove_prefix(digits);
          while (!token.empty() && token.front() == '.') token.remove_prefix(1);
          if (token.empty()) continue;
        }
        // Otherwise a move that starts with a digit: "0-0", "0-0-0".
      }
      if (token.find_first_not_of("!?") == std::string_view::npos) continue;  // a glyph

      auto move = parse_san(pos, token);
      if (!move)
        return fail("move " + std::to_string(pos.fullmove_number()) + " (ply " +
                    std::to_string(game.moves.size() + 1) + ") " + quoted(token) + ": " +
                    move.error());
      game.moves.push_back(*move);
      pos.make_move(*move);
    }

    if (marker.empty()) {
      game.result = result_tag.value_or("*");
    } else {
      if (result_tag && *result_tag != marker)
        return fail("Result tag " + quoted(*result_tag) +
                    " disagrees with the termination marker " + quoted(marker));
      game.result = marker;
    }
    return game;
  }

 private:
  // "line N: " for an offset into the text, counting lines from 1.
  std::string where(size_t offset) const {
    const auto before = text_.substr(0, std::min(offset, text_.size()));
    return "line " + std::to_string(1 + std::count(before.begin(), before.end(), '\n')) + ": ";
  }

  void skip_line() {
    const size_t end = text_.find('\n', pos_);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
  }

  // [Name "value"] at the cursor, with \\ and \" unescaped.
  Result<std::pair<std::string, std::string>> read_tag() {
    const size_t start = pos_++;
    auto unterminated = [&] { return fail(where(start) + "unterminated tag '['"); };
    auto skip_spaces = [&] {
      while (!at_end() && is_space(text_[pos_])) ++pos_;
    };
    skip_spaces();
    const size_t name_start = pos_;
    while (!at_end() && is_symbol_char(text_[pos_])) ++pos_;
    std::string name(text_.substr(name_start, pos_ - name_start));
    if (at_end()) return unterminated();
    if (name.empty()) return fail(where(start) + "tag has no name (expected [Name \"value\"])");
    if (!std::isalnum(static_cast<unsigned char>(name[0])))
      return fail(where(start) + "tag name " + quoted(name) + " is not a PGN symbol");
    skip_spaces();
    if (at_end()) return unterminated();
    if (text_[pos_] != '"')
      return fail(where(start) + "tag " + quoted(name) + ": expected a quoted value");
    ++pos_;
    std::string value;
    for (;;) {
      if (at_end() || text_[pos_] == '\n')
        return fail(where(start) + "tag " + quoted(name) + ": unterminated value");
      const char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\\' && !at_end() && (text_[pos_] == '\\' || text_[pos_] == '"')) {
        value += text_[pos_++];
      } else {
        value += c;
      }
    }
    skip_spaces();
    if (at_end()) return unterminated();
    if (text_[pos_] != ']') return fail(where(start) + "tag " + quoted(name) + ": expected ']'");
    ++pos_;
    return std::pair{std::move(name), std::move(value)};
  }

  // A (variation) at the cursor, with the variations and comments inside it.
  Result<void> skip_variation() {
    const size_t start = pos_;
    int depth = 0;
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '{') {
        const size_t close = text_.find('}', pos_ + 1);
        if (close == std::string_view::npos) return fail(where(pos_) + "unterminated comment '{'");
        pos_ = close + 1;
        continue;
      }
      if (c == ';') {
        skip_line();
        continue;
      }
      ++pos_;
      if (c == '(') ++depth;
      if (c == ')' && --depth == 0) return {};
    }
    return fail(where(start) + "unterminated variation '('");
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<PgnGame> read_pgn(std::string_view text) {
  PgnReader reader(text);
  if (auto skipped = reader.skip_filler(); !skipped) return fail("PGN " + skipped.error());
  if (reader.at_end()) return fail("PGN text holds no game");
  auto game = reader.read_game();
  if (!game) return fail("PGN " + game.error());
  if (auto skipped = reader.skip_filler(); !skipped) return fail("PGN " + skipped.error());
  if (!reader.at_end())
    return fail("PGN " + reader.here() +
                "text after the end of the game (read_pgn_games reads several games)");
  return game;
}

Result<std::vector<PgnGame>> read_pgn_games(std::string_view text) {
  PgnReader reader(text);
  std::vector<PgnGame> games;
  for (;;) {
    const std::string which = "PGN game " + std::to_string(games.size() + 1) + ": ";
    if (auto skipped = reader.skip_filler(); !skipped) return fail(which + skipped.error());
    if (reader.at_end()) break;
    auto game = reader.read_game();
    if (!game) return fail(which + game.error());
    games.push_back(std::move(game).value());
  }
  return games;
}

}  // namespace chessrl::chess
