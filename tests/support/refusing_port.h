// RefusingPort: for tests that need "a port nothing listens on" (a client
// pointed at a service that is down, a Redis that is not there).
//
// It holds a TCP socket bound to 127.0.0.1:0 (the kernel picks the number)
// and never calls listen() on it, for as long as the object lives:
//   - a connect() to 127.0.0.1:port() is refused (ECONNREFUSED): no socket
//     listens there, so the kernel answers the SYN with a reset;
//   - no other socket can bind that number meanwhile (EADDRINUSE), a gRPC
//     server or redis-server included: the socket does not set SO_REUSEADDR
//     or SO_REUSEPORT, and Linux lets a second socket share a bound address
//     only when both set them. The kernel does not hand the number out as
//     an ephemeral source port either, while it is bound.
// Unlike a number from bind, close and reuse, nothing can take the port
// between the test choosing it and using it.
//
// Header-only (POSIX sockets); include it as "../support/refusing_port.h".
// Tested in tests/support/refusing_port_test.cpp.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "chessrl/core/error.h"

namespace chessrl::testing {

// A TCP socket bound to 127.0.0.1:0 (no SO_REUSEADDR) and, in `port`, the
// number the kernel gave it. Throws chessrl::Error naming `who` and the call
// that failed. RefusingPort keeps it as it is; a test server listen()s on it.
inline int bind_loopback(const std::string& who, int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(who + ": socket: " + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw Error(who + ": bind 127.0.0.1:0: " + reason);
  }
  port = ntohs(address.sin_port);
  return fd;
}

class RefusingPort {
 public:
  // Throws chessrl::Error (naming the call that failed) when no socket can
  // be made or bound.
  RefusingPort() { fd_ = bind_loopback("RefusingPort", port_); }
  ~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  RefusingPort(RefusingPort&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}
  RefusingPort& operator=(RefusingPort&& other) noexcept {
    std::swap(fd_, other.fd_);
    std::swap(port_, other.port_);
    return *this;
  }

  int port() const { return port_; }
  // "127.0.0.1:<port>", for the options that take an address.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace chessrl::testing
