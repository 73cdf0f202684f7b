// chessrl material-probe: does a network value material? Pairs of positions
// from the built-in openings that differ only by one piece (libs/eval
// material_probe.h), the side to move a piece up and a piece down, through the
// network's value head; a table per piece type.
#include <cstdio>
#include <memory>

#include "backend_setup.h"
#include "chessrl/eval/match.h"
#include "chessrl/eval/material_probe.h"
#include "commands.h"

namespace chessrl::tool {

void add_material_probe_command(CLI::App& app) {
  auto setup = std::make_shared<BackendSetup>();
  CLI::App* cmd = app.add_subcommand(
      "material-probe",
      "Does a network's value head prefer the side a piece up? Position pairs from the built-in "
      "openings that differ by one piece, a table per piece type");
  setup->add_options(*cmd);
  cmd->callback([setup] {
    const auto backend = setup->make();
    const auto positions = eval::material_probe_positions(eval::opening_fens());
    std::fprintf(stderr, "material-probe: %s, %zu position pairs from %zu openings\n",
                 setup->describe(*backend).c_str(), positions.size(),
                 eval::opening_fens().size());
    std::printf("%s", eval::format_material_probe(eval::run_material_probe(*backend, positions))
                          .c_str());
  });
}

}  // namespace chessrl::tool
