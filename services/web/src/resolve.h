// Every address a name resolves to: how the viewer finds the self-play pods
// behind a headless Service (its HTTP GET is metrics::http_get).
#pragma once

#include <string>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::web_service {

// The addresses `host` resolves to (IPv4 and IPv6, each once, in the
// resolver's order); an IP literal is itself. Errors name the host.
Result<std::vector<std::string>> resolve_all(const std::string& host);

}  // namespace chessrl::web_service
