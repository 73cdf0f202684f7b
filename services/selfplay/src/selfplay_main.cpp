// chessrl-selfplay's entry point (services/selfplay/main.cpp calls it): the options, then the run.
#include "chessrl/selfplay_service/main.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "chessrl/config/config.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/runtime/service_process.h"
#include "selfplay_service.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {

int selfplay_main(int argc, char** argv) {
  namespace service = chessrl::selfplay_service;
  CLI::App app{
      "chessrl-selfplay: self-play games with the newest model from the registry, pushed "
      "to the replay service"};
  service::Settings settings;
  chessrl::runtime::ServiceProcess process("chessrl-selfplay");
  service::add_options(app, settings);
  process.add_options(app);
  chessrl::config::finish(app);
  if (auto status = process.parse(app, argc, argv)) return *status;
  if (auto resolved = service::resolve(settings, app); !resolved.ok()) {
    process.log(resolved.error());
    return chessrl::runtime::kExitBadOptions;
  }

  // Before any thread starts (parsing starts none).
  process.set_program("chessrl-selfplay[" + settings.replica + "]");
  const chessrl::StopSignals& signals = process.install_stop_signals(
      "stopping: abandoning the games in progress, pushing the finished ones");
  return process.run([&] {
    service::SelfplayService selfplay(settings, signals.flag());
    selfplay.on_listening([&process](const chessrl::runtime::ListeningPorts& ports) {
      process.ready(ports);
    });
    return selfplay.run();
  });
}

}  // namespace chessrl::selfplay_service
