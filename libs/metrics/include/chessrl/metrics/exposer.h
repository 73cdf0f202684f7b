// Exposer: an HTTP server for a Registry: GET /metrics (text format 0.0.4)
// and GET /healthz ("ok", or 503 with the reason when the health check says
// so), both on one address. Optionally a second address for the kubelet's
// probes alone: GET /healthz (the same check) and GET /livez ("ok" while the
// process serves HTTP), on threads of its own, so that clients holding the
// metrics port (anyone a NetworkPolicy lets scrape) cannot delay a probe.
// Runs on its own threads until destroyed. Thread-safe. It is civetweb with
// a few handlers, not prometheus-cpp's pull Exposer: see exposer.cpp.
//
// It counts the /metrics responses it served, and can wait for a scrape that
// began after a given point: a process about to exit waits for its final
// counts to be read (chessrl-selfplay, --final-scrape-wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/metrics/http_server.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {

// Empty string: healthy; otherwise the reason it is not.
using HealthCheck = std::function<std::string()>;

class Exposer {
 public:
  // Listens on `address` ("0.0.0.0:9100", "127.0.0.1:0" for any free port),
  // and on `probe_address` for /healthz and /livez when it is neither "" nor
  // "off". Throws chessrl::Error naming the address when it cannot listen.
  Exposer(const Registry& registry, const std::string& address, HealthCheck health = {},
          const std::string& probe_address = "");
  ~Exposer();
  Exposer(const Exposer&) = delete;
  Exposer& operator=(const Exposer&) = delete;

  // Serves GET (and HEAD) requests for `uri` with `handler`: a path such as
  // "/live", or one ending in "/**" for every path under it. A handler added
  // later for the same uri replaces the earlier one. Other methods get 405.
  // Used for the game viewer's JSON (self-play's /live, the evaluator's
  // /matches) and by chessrl-web for its page.
  void handle(const std::string& uri, HttpHandler handler);
  // The same with the whole request (its method and headers): see http_server.h.
  void handle_request(const std::string& uri, HttpRequestHandler handler);

  int port() const;        // the bound port (useful with port 0)
  int probe_port() const;  // the probe address's bound port; 0 without one

  // GET /metrics responses written in full so far (not /healthz, not the
  // probe address, not a response whose client went away mid-write).
  std::uint64_t scrapes() const;
  // A point in the sequence of scrapes: the /metrics requests begun so far.
  // A scrape that begins after the call serializes the registry after it, so
  // it holds every value set before the call.
  std::uint64_t scrape_point() const;
  // Waits up to `timeout` until a /metrics response whose request began after
  // `point` (a scrape_point()) has been written in full. True when one was;
  // false at the timeout. A scrape already under way at `point` does not count.
  bool wait_for_scrape(std::uint64_t point, std::chrono::milliseconds timeout) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chessrl::metrics
