// chessrl: the command-line tool. Subcommands live in their own files.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"chessrl: AlphaZero-style chess training, tools and benchmarks"};
  app.require_subcommand(1);
  chessrl::tool::add_perft_command(app);
  chessrl::tool::add_bench_command(app);
  chessrl::tool::add_bench_train_command(*app.get_subcommand("bench"));
  chessrl::tool::add_uci_command(app);
  chessrl::tool::add_selfplay_command(app);
  chessrl::tool::add_match_command(app);
  chessrl::tool::add_curve_command(app);
  chessrl::tool::add_material_probe_command(app);
  chessrl::tool::add_doctor_command(app);
#ifdef CHESSRL_HAVE_SERVICES
  chessrl::tool::add_local_command(app);
  chessrl::tool::add_probe_command(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A command that ran and failed says its own status (CLI11 raises it
    // through the parse, as a ParseError).
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help or the message naming the flag; a refused option
    // exits 2, as the services' do (CLI11's own statuses are one per kind).
    const int status = app.exit(e);
    return status == static_cast<int>(CLI::ExitCodes::Success) ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "chessrl: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
