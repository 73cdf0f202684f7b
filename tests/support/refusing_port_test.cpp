// RefusingPort (refusing_port.h): a connect to its port is refused, and the
// number stays bound (no one else can bind it, SO_REUSEADDR or not) while the
// object lives, a moved-to object included.
#include "refusing_port.h"

#include <gtest/gtest.h>

#include <optional>

namespace chessrl::testing {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  return address;
}

// The errno of a connect() to 127.0.0.1:port; 0 when it connected.
int connect_errno(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const sockaddr_in address = loopback(port);
  const int error =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// The errno of a bind() to 127.0.0.1:port (SO_REUSEADDR set first when
// `reuse_address`, as gRPC and redis-server do); 0 when it bound.
int bind_errno(int port, bool reuse_address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int one = 1;
  if (reuse_address) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in address = loopback(port);
  const int error =
      ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

TEST(RefusingPort, AConnectIsRefused) {
  const RefusingPort port;
  ASSERT_GT(port.port(), 0);
  EXPECT_EQ(port.address(), "127.0.0.1:" + std::to_string(port.port()));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(connect_errno(port.port()), ECONNREFUSED)
        << std::strerror(connect_errno(port.port()));
  }
}

TEST(RefusingPort, TheNumberStaysBoundWhileTheObjectLives) {
  std::optional<RefusingPort> held(std::in_place);
  const int number = held->port();
  EXPECT_EQ(bind_errno(number, /*reuse_address=*/false), EADDRINUSE);
  EXPECT_EQ(bind_errno(number, /*reuse_address=*/true), EADDRINUSE);

  // Moved: the new object holds the same socket, the old one nothing.
  RefusingPort moved = std::move(*held);
  held.reset();
  EXPECT_EQ(moved.port(), number);
  EXPECT_EQ(bind_errno(number, /*reuse_address=*/true), EADDRINUSE);
  EXPECT_EQ(connect_errno(number), ECONNREFUSED);

  // Another one gets another number.
  const RefusingPort other;
  EXPECT_NE(other.port(), number);

  // Destroyed: the number is free again (unless another process took it in
  // this instant, which is what the class is there to prevent).
  { RefusingPort gone = std::move(moved); }
  EXPECT_EQ(bind_errno(number, /*reuse_address=*/false), 0);
}

}  // namespace
}  // namespace chessrl::testing
