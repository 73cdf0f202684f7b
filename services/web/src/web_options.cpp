#include "web_options.h"

#include <cctype>
#include <charconv>

namespace chessrl::web_service {

std::string Endpoint::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

Result<Endpoint> parse_endpoint(const std::string& option, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return fail(option + " '" + text + "': " + why + " (expected host:port)");
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("no port");
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unbalanced [ ]");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 address must be in [ ]");
  }
  for (const char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
          c == '_'))
      return bad("the host has a character other than letters, digits, '.', '-', '_' or ':'");
  int port = 0;
  const std::string digits = text.substr(colon + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (error != std::errc() || end != digits.data() + digits.size() || port < 1 || port > 65535)
    return bad("the port must be a number in [1, 65535]");
  return Endpoint{host, port};
}

Result<void> WebOptions::validate() {
  if (listen.empty() || listen == "off") return fail("--listen: an address is needed (host:port)");
  selfplay_endpoints.clear();
  std::size_t start = 0;
  while (start < selfplay.size()) {
    const auto comma = selfplay.find(',', start);
    const auto end = comma == std::string::npos ? selfplay.size() : comma;
    std::string item = selfplay.substr(start, end - start);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    if (!item.empty()) {
      auto endpoint = parse_endpoint("--selfplay", item);
      if (!endpoint.ok()) return fail(endpoint.error());
      selfplay_endpoints.push_back(std::move(endpoint).value());
    }
    start = end + 1;
  }
  evaluator_endpoint.clear();
  if (!evaluator.empty()) {
    auto endpoint = parse_endpoint("--evaluator", evaluator);
    if (!endpoint.ok()) return fail(endpoint.error());
    evaluator_endpoint.push_back(std::move(endpoint).value());
  }
  return {};
}

void add_options(CLI::App& app, WebOptions& o) {
  app.add_option("--listen", o.listen,
                 "address of the page, api/state, /metrics and /healthz (host:port)")
      ->capture_default_str();
  o.runtime::ProbeListenOptions::add_to(app);
  app.add_option("--selfplay", o.selfplay,
                 "self-play metrics addresses (host:port, comma-separated) whose GET /live is "
                 "shown; every address a name resolves to is one pod (a headless Service name "
                 "gives every ready pod)")
      ->capture_default_str();
  app.add_option("--evaluator", o.evaluator,
                 "the evaluator's metrics address (host:port) whose GET /matches is shown; \"\": "
                 "none")
      ->capture_default_str();
  app.add_option("--poll-interval", o.poll_interval_s,
                 "seconds between polls of the sources (whatever the number of viewers)")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  app.add_option("--max-boards", o.max_boards, "self-play pods shown (and polled) at most")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--stale-after", o.stale_after_s,
                 "seconds a pod's board stays, marked stale, after the pod stopped answering")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
}

}  // namespace chessrl::web_service
