// Exposer: an HTTP server for a Registry: GET /metrics (text format 0.0.4)
// and GET /healthz ("ok", or 503 with the reason when the health check says
// so), both on one address. Runs on its own threads until destroyed.
// Thread-safe. It is civetweb with two handlers, not prometheus-cpp's pull
// Exposer: see exposer.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {

// Empty string: healthy; otherwise the reason it is not.
using HealthCheck = std::function<std::string()>;

class Exposer {
 public:
  // Listens on `address` ("0.0.0.0:9100", "127.0.0.1:0" for any free port).
  // Throws chessrl::Error naming the address when it cannot listen.
  Exposer(const Registry& registry, const std::string& address, HealthCheck health = {});
  ~Exposer();
  Exposer(const Exposer&) = delete;
  Exposer& operator=(const Exposer&) = delete;

  int port() const;  // the bound port (useful with port 0)

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chessrl::metrics
