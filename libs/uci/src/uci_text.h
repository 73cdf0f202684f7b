// Text helpers of the UCI engine (internal): tokens, printable echoes of
// input, numbers, scores and the shape of the search tree for info lines.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "chessrl/mcts/node.h"

namespace chessrl::uci::text {

bool is_space(char c);

std::vector<std::string_view> split(std::string_view line);

std::string lower(std::string_view s);

// Equal ignoring ASCII case (UCI option names and keywords).
bool iequals(std::string_view a, std::string_view b);

// Printable ASCII only, so that echoed input cannot break the line protocol.
std::string printable(std::string_view s);

// A piece of the input for an info string: quoted, printable and short.
std::string quoted(std::string_view s);

std::string join(const std::vector<std::string_view>& tokens, std::size_t begin, std::size_t end);

std::optional<float> parse_float(std::string_view s);

std::string format_float(float v);

bool is_command(std::string_view token);

// lc0's mapping of an expected score in [-1, 1] to centipawns.
int centipawns(double q);

// Mean depth of the playouts that built the tree, and its deepest node.
// Every playout of depth d passes through d non-root nodes, each counting it
// in its visits, so the mean is (visits summed over non-root nodes) / root visits.
struct TreeShape {
  int mean_depth_rounded_up = 0;
  int max_depth = 0;
};

TreeShape tree_shape(const mcts::Node& root);

template <class Int>
std::optional<Int> parse_int(std::string_view s) {
  Int v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace chessrl::uci::text
