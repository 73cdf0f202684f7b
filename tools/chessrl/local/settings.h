// What `chessrl local` starts each child with beyond addresses, ports, files
// and tokens: what differs on a laptop (threads, games at once), the learning
// settings given to chessrl local itself (none by default: the binaries'
// defaults are the measured ones, as in the chart), then --selfplay-args,
// --trainer-args or --evaluator-args. Replay's are its store (Redis, as the
// chart's) and --window when given (unset: chessrl-replay's own window).
// `chessrl local --print-settings` prints them, and tests/helm/settings.test.js
// compares them with the chart's.
#pragma once

#include <string>
#include <vector>

#include "local/options.h"

namespace chessrl::tool {

std::vector<std::string> selfplay_settings(const LocalOptions& o);
// --selfplay-threads 0: this machine's cores shared out over `processes`
// self-play processes, at least 1 each.
int auto_selfplay_threads(int processes);
std::vector<std::string> trainer_settings(const LocalOptions& o);
std::vector<std::string> evaluator_settings(const LocalOptions& o);
std::vector<std::string> replay_settings(const LocalOptions& o);

// `argv` with the words of `extra` (split at whitespace) appended.
std::vector<std::string> with_words(std::vector<std::string> argv, const std::string& extra);

}  // namespace chessrl::tool
