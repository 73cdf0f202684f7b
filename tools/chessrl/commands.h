// Registration of the chessrl tool's subcommands; each adds itself to the app
// and runs from its callback.
#pragma once

#include <CLI/CLI.hpp>

namespace chessrl::tool {

void add_perft_command(CLI::App& app);
void add_bench_command(CLI::App& app);

}  // namespace chessrl::tool
