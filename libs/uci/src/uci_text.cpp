// Text helpers of the UCI engine: tokens, printable echoes, numbers, scores.
#include "uci_text.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace chessrl::uci::text {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

bool iequals(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

// Printable ASCII only, so that echoed input cannot break the line protocol.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

// A piece of the input for an info string: quoted, printable and short.
std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 60;
  std::string text = printable(s.substr(0, kMax));
  if (s.size() > kMax) text += "...";
  return "'" + text + "'";
}

std::string join(const std::vector<std::string_view>& tokens, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (i > begin) out += ' ';
    out += tokens[i];
  }
  return out;
}

std::optional<float> parse_float(std::string_view s) {
  float v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string format_float(float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

bool is_command(std::string_view token) {
  static constexpr std::string_view kCommands[] = {
      "uci",      "debug", "isready", "setoption", "register", "ucinewgame",
      "position", "go",    "stop",    "ponderhit", "quit"};
  return std::find(std::begin(kCommands), std::end(kCommands), token) != std::end(kCommands);
}

// lc0's mapping of an expected score in [-1, 1] to centipawns.
int centipawns(double q) {
  q = std::clamp(q, -0.9999, 0.9999);
  const double cp = 90.0 * std::tan(1.5637541897 * q);
  return int(std::lround(std::clamp(cp, -20000.0, 20000.0)));
}

TreeShape tree_shape(const mcts::Node& root) {
  std::uint64_t visit_sum = 0;
  int max_depth = 0;
  std::vector<std::pair<const mcts::Node*, int>> stack{{&root, 0}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth > 0) visit_sum += node->visits;
    max_depth = std::max(max_depth, depth);
    for (int i = 0; i < node->num_edges; ++i) {
      const mcts::Node* child = node->edges[i].node;
      if (child && child->visits > 0) stack.emplace_back(child, depth + 1);
    }
  }
  TreeShape shape;
  shape.max_depth = max_depth;
  if (root.visits > 0)
    shape.mean_depth_rounded_up = int((visit_sum + root.visits - 1) / root.visits);
  return shape;
}

}  // namespace chessrl::uci::text
