// logged_port: the port a child process says it listens on, read from its
// log. A service started on port 0 binds a number the kernel picks and logs
// it ("serving gRPC on port N", "rendezvous: listening on port N"): unlike a
// number from bind, close and reuse (which only redis-server still needs: it
// cannot report a port-0 bind), no other process can take it between the test
// choosing it and the service binding it.
//
// Header-only; include it as "../support/logged_port.h".
#pragma once

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace chessrl::testing {

// The number after the first `key` in the file at `log_path`, once it is
// there; 0 when it is not within `timeout` (the file is read every 50 ms).
inline int logged_port(const std::string& log_path, const std::string& key,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(log_path);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (const auto at = text.find(key); at != std::string::npos)
      return std::atoi(text.c_str() + at + key.size());
    if (std::chrono::steady_clock::now() >= deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace chessrl::testing
