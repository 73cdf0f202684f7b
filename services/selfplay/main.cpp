// chessrl-selfplay: plays self-play games on the newest model in the registry
// and pushes them to the replay service (services/selfplay/src). Options come
// from flags, CHESSRL_* variables and a YAML --config file (flag > env > file
// > default). SIGTERM or SIGINT stops play (the games in progress are
// abandoned), pushes what is buffered for up to --flush-timeout and exits 0;
// a failure of self-play exits 1, bad options 2. Logs go to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "chessrl/config/config.h"
#include "chessrl/core/stop_signals.h"
#include "selfplay_service.h"
#include "selfplay_settings.h"

int main(int argc, char** argv) {
  namespace service = chessrl::selfplay_service;
  CLI::App app{
      "chessrl-selfplay: self-play games with the newest model from the registry, pushed "
      "to the replay service"};
  service::Settings settings;
  service::add_options(app, settings);
  chessrl::config::finish(app);
  CLI11_PARSE(app, argc, argv);
  if (auto resolved = service::resolve(settings, app); !resolved.ok()) {
    std::fprintf(stderr, "chessrl-selfplay: %s\n", resolved.error().c_str());
    return 2;
  }

  // Before any thread starts (parsing starts none).
  chessrl::StopSignals signals(
      "chessrl-selfplay[" + settings.replica + "]",
      "stopping: abandoning the games in progress, pushing the finished ones");
  try {
    service::SelfplayService selfplay(settings, signals.flag());
    return selfplay.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chessrl-selfplay[%s]: %s\n", settings.replica.c_str(), e.what());
    return 1;
  }
}
