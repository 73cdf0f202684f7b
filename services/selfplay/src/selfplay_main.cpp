// chessrl-selfplay's entry point (services/selfplay/main.cpp calls it): the options, then the run.
#include "chessrl/selfplay_service/main.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "chessrl/config/config.h"
#include "chessrl/core/stop_signals.h"
#include "selfplay_service.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {

int selfplay_main(int argc, char** argv) {
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

}  // namespace chessrl::selfplay_service
