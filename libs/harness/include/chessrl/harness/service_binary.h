// Where the chess-rl service binaries are, for what starts them as children
// (`chessrl local`, the benches).
#pragma once

#include <string>

#include "chessrl/core/result.h"

namespace chessrl::harness {

// The directory of the running executable (/proc/self/exe).
std::string executable_dir();
// Where a chess-rl binary (chessrl-replay, ...) is: `bin_dir` when given,
// else next to this executable, else in the build tree beside it
// (<exe dir>/../../services/<short name>/), else PATH. Errors say where it looked.
Result<std::string> find_service_binary(const std::string& name, const std::string& bin_dir);

}  // namespace chessrl::harness
