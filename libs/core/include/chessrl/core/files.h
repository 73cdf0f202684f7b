// Files written whole or not at all.
#pragma once

#include <string>
#include <string_view>

#include "chessrl/core/result.h"

namespace chessrl {

// Writes `bytes` to a temporary file beside `path`, then renames it over
// `path`, so a reader sees the old file or the new one, never half of one.
// Errors start with "<path>: " and say what failed; no temporary is left.
Result<void> write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace chessrl
