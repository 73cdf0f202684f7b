// A GET over HTTP with deadlines and a size cap, on civetweb's client (the
// library the Exposer serves with, hence here): how chessrl local reads its
// children's /metrics and /healthz, and how the game viewer (chessrl-web)
// reads self-play's /live and the evaluator's /matches.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "chessrl/core/result.h"

namespace chessrl::metrics {

struct HttpReply {
  int status = 0;  // any status: the caller decides what a 503 means
  std::string body;
};

// GET http://host:port/path (HTTP/1.0). Connecting may take civetweb's 10 s at
// most (a refused connection fails at once); the reply must start within
// `timeout`; a body larger than `max_bytes` is an error. Errors name the URL
// and what failed. Thread-safe.
Result<HttpReply> http_get(const std::string& host, int port, const std::string& path,
                           std::chrono::milliseconds timeout, std::size_t max_bytes = 64 << 20);

}  // namespace chessrl::metrics
