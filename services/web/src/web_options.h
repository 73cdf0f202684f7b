// chessrl-web's options (flags, CHESSRL_* variables, --config).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/runtime/options.h"

namespace chessrl::web_service {

// A source address: "host:port" (host a name, an IPv4 address or [IPv6]).
struct Endpoint {
  std::string host;
  int port = 0;
  std::string text() const;  // as given
};

// --probe-listen is libs/runtime's probe listener alone: the page's --listen
// already answers /metrics and /healthz, so there is no --metrics-listen.
struct WebOptions : runtime::ProbeListenOptions {
  std::string listen = "0.0.0.0:8080";
  std::string selfplay;   // comma-separated host:port; every address a name resolves to is a pod
  std::string evaluator;  // host:port, "" none
  double poll_interval_s = 1.0;
  int max_boards = 16;
  int stale_after_s = 30;  // a board whose pod stopped answering is dropped after this

  // Parsed by validate().
  std::vector<Endpoint> selfplay_endpoints;
  std::vector<Endpoint> evaluator_endpoint;  // zero or one

  // Parses the addresses; errors name the option and the value.
  Result<void> validate();
};

void add_options(CLI::App& app, WebOptions& options);

// "host:port" or "[v6]:port" -> Endpoint; the error names `option` and the text.
Result<Endpoint> parse_endpoint(const std::string& option, const std::string& text);

}  // namespace chessrl::web_service
