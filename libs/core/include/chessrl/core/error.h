// chessrl::Error: the one exception type thrown at I/O and configuration
// boundaries. Hot paths never throw; they assert invariants.
#pragma once

#include <stdexcept>
#include <string>

namespace chessrl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace chessrl
