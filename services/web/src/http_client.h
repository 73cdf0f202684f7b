// The little HTTP the viewer needs to read its sources: a GET with deadlines
// and a size cap (civetweb's client), and every address a name resolves to.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::web_service {

// GET http://host:port/path; the body of a 200 response. Connecting may take
// civetweb's 10 s at most; the response must start within `timeout`, and a
// body larger than `max_bytes` is an error. Errors name the address and what
// failed. Thread-safe.
Result<std::string> http_get(const std::string& host, int port, const std::string& path,
                             std::chrono::milliseconds timeout, std::size_t max_bytes);

// The addresses `host` resolves to (IPv4 and IPv6, each once, in the
// resolver's order); an IP literal is itself. Errors name the host.
Result<std::vector<std::string>> resolve_all(const std::string& host);

}  // namespace chessrl::web_service
