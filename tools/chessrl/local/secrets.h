// The secrets of a `chessrl local` run directory: the Redis password and the
// bearer tokens, made on the first run and kept, so a second run opens the
// same data. Files 0600 and directories 0700 from their creation: never
// readable by others, not even for a moment.
#pragma once

#include <filesystem>
#include <string>

namespace chessrl::tool {

// The secret in `file`: made (32 random lowercase letters and digits) and
// written 0600 on the first call, read back later (an older run's file is
// narrowed to 0600). Throws chessrl::Error when it cannot be written.
std::string kept_secret(const std::filesystem::path& file);

// `dir` for secrets: created 0700 by mkdir itself; one left by an older run is
// narrowed to 0700. Throws chessrl::Error when it cannot be created.
void make_private_dir(const std::filesystem::path& dir);

// The run's bearer tokens, one file per caller role (selfplay, trainer,
// evaluator) in `dir`, made on the first run and kept. The replay service
// reads the directory (--auth-dir); each client its own file (--token-file).
void make_run_tokens(const std::filesystem::path& dir);

}  // namespace chessrl::tool
