// The configuration rules every chess-rl binary follows (docs/architecture.md):
// each long option --some-name can also come from the environment variable
// CHESSRL_SOME_NAME or from the key `some-name` of a YAML file given with
// --config, and a flag beats the environment, which beats the file, which
// beats the default. A key the program does not know, or a value its option
// does not accept, stops start-up with a message naming it. Nested YAML maps
// are flattened with '-' ({redis: {host: h}} is redis-host), so a file can be
// grouped by component. An option with a second long name (an old name kept
// as an alias) answers to both names' variables and keys; its own name's
// variable wins when both are set.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace chessrl::config {

// "CHESSRL_" + the option's long name upper-cased, '-' as '_'.
std::string env_name(const std::string& long_name);

// Call once all options are added: adds --config, sets every long option's
// environment variable, and installs the YAML reader.
void finish(CLI::App& app);

}  // namespace chessrl::config
