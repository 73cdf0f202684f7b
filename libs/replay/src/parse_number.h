// A decimal number that is the whole of `s`, or nullopt (std::from_chars:
// no sign but '-', no spaces, no trailing text). Internal to libs/replay.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace chessrl::replay {

template <class T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace chessrl::replay
