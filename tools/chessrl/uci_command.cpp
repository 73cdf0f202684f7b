// chessrl uci: plays as a UCI engine on stdin/stdout (for GUIs, cutechess-cli
// and the evaluator), with the network from --model or a fake backend.
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "backend_setup.h"
#include "chessrl/uci/uci_engine.h"
#include "commands.h"

namespace chessrl::tool {

namespace {

struct UciCommandOptions {
  BackendSetup setup;
  int nodes = 800;
  int minibatch = 16;
};

void run_uci(UciCommandOptions o, bool backend_given) {
  // Without a model and an explicit --backend there is no network to load:
  // play with the uniform backend rather than random weights.
  if (o.setup.model.empty() && !backend_given) o.setup.backend = "uniform";
  uci::UciEngineOptions options;
  options.name = "chessrl";
  options.author = "the chessrl authors";
  options.model = o.setup.model;
  options.threads = o.setup.nn_threads;
  options.nodes = o.nodes;
  options.minibatch = o.minibatch;
  // The Model option names a checkpoint (played with LibTorch); empty means
  // what the command line chose.
  options.backend_factory = [setup = o.setup](const std::string& model, int threads) {
    BackendSetup s = setup;
    if (!model.empty() && model != setup.model) {
      s.model = model;
      s.backend = "torch";
    }
    // One search feeds one evaluator worker: a forward pass gets every core
    // unless the Threads option says otherwise.
    s.nn_threads = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return s.make();
  };
  uci::UciEngine engine(std::move(options), std::cout);
  engine.run(std::cin);
}

}  // namespace

void add_uci_command(CLI::App& app) {
  auto o = std::make_shared<UciCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "uci",
      "Play as a UCI engine on stdin/stdout. The backend defaults to torch with --model, and "
      "to uniform (no network) without one; UCI options: Threads, Model, Nodes, "
      "MinibatchSize, CPuct, UCI_ShowWDL");
  o->setup.add_options(*cmd, "torch");
  // Shown in the help; run_uci picks uniform when neither --model nor --backend is given.
  cmd->get_option("--backend")->default_str("torch with --model, else uniform");
  cmd->add_option("--nodes", o->nodes, "Visits for a 'go' without limits (the Nodes option)")
      ->check(CLI::Range(1, 1'000'000'000))
      ->capture_default_str();
  cmd->add_option("--minibatch", o->minibatch,
                  "Leaves evaluated together per round (the MinibatchSize option)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->callback([o, cmd] { run_uci(*o, cmd->count("--backend") > 0); });
}

}  // namespace chessrl::tool
