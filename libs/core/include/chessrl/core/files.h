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

// The same for a secret (a token, a password, a key): the temporary file is
// created with mode 0600 (owner read and write only) by open() itself, so no
// other user can read it at any moment, and then renamed over `path`.
Result<void> write_private_file(const std::string& path, std::string_view bytes);

// A file's bytes. Every error of open() and read() is one, with an error
// starting "<path>: " and naming it (a directory, an I/O error, no
// permission): unlike an iostream, which ends such a read as if at the end of
// the file, handing back what it had, or nothing.
Result<std::string> read_file(const std::string& path);

// A secret given as a file (--redis-password-file, a mounted Kubernetes
// Secret): its bytes without the trailing line break(s). Fails, with an error
// starting "<path>: ", when the file is missing, unreadable or empty.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace chessrl
