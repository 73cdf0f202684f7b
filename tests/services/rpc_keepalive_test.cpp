// rpc::make_channel's HTTP/2 keepalive. A connection whose server vanished
// without a reset (a pod restarted with a new address, its old network gone;
// a host gone) looks open to the client: without keepalive every call on it
// runs into its deadline until TCP gives up, many minutes later. With it, the
// channel's ping goes unanswered, the connection is dropped, and the next call
// connects afresh. A proxy between client and server plays the vanished
// server: it stops forwarding on the connections it has, without closing
// them, and forwards new ones. About 15 s.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/models.grpc.pb.h"
#include "../support/refusing_port.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Forwards 127.0.0.1:port() to 127.0.0.1:upstream. black_hole() freezes the
// connections open at that moment: they stay open, and nothing more is read
// from or written to them, as with a peer whose network is gone.
class BlackHoleProxy {
 public:
  explicit BlackHoleProxy(int upstream) : upstream_(upstream) {
    listen_fd_ = testing::bind_loopback("proxy", port_);  // the kernel's pick: no race
    if (::listen(listen_fd_, 16) != 0) throw std::runtime_error("proxy: cannot listen");
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~BlackHoleProxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pipes_) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  void black_hole() { frozen_below_ = generation_.load(); }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    return a;
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      const sockaddr_in to = loopback(upstream_);
      if (::connect(server, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      ++connections_;
      const int generation = ++generation_;
      pipes_.emplace_back([this, client, server, generation] { pipe(client, server, generation); });
    }
  }

  // Both directions of one connection, until either side closes or the test
  // ends; frozen (neither read nor written) once black-holed.
  void pipe(int client, int server, int generation) {
    char buffer[16384];
    while (!stop_) {
      if (generation <= frozen_below_.load()) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      // Again: black_hole() may have come while poll() waited, and bytes sent
      // after it must not get through.
      if (generation <= frozen_below_.load()) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(p[i].fd, buffer, sizeof buffer);
        if (n <= 0) {
          closed = true;
          break;
        }
        const int to = i == 0 ? server : client;
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w = ::write(to, buffer + sent, static_cast<std::size_t>(n - sent));
          if (w <= 0) {
            closed = true;
            break;
          }
          sent += w;
        }
      }
      if (closed) break;
    }
    ::close(client);
    ::close(server);
  }

  int upstream_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> generation_{0};
  std::atomic<int> frozen_below_{0};  // connections of this generation or older are frozen
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::list<std::thread> pipes_;  // only the acceptor adds; joined after it stops
};

struct Served {
  replay::MemoryReplayStore games{1000};
  replay::MemoryModelStore models;
  metrics::Registry registry;
  std::unique_ptr<ReplayServer> server;
  explicit Served(std::chrono::milliseconds min_ping_interval) {
    auto options = testing::fast_server_options();
    options.keepalive_min_ping_interval = min_ping_interval;
    server = std::make_unique<ReplayServer>(games, models, registry, options);
  }
};

rpc::ClientOptions client_through(const BlackHoleProxy& proxy, std::chrono::milliseconds ping) {
  rpc::ClientOptions options = testing::single_try_client(proxy.port());
  options.deadline = 2s;
  options.keepalive_time = ping;
  options.keepalive_timeout = ping;
  return options;
}

TEST(RpcKeepaliveTest, ACallOnAConnectionWhoseServerVanishedGetsThroughOnANewOne) {
  Served served(200ms);
  BlackHoleProxy proxy(served.server->port());
  rpc::ReplayClient client(client_through(proxy, 1000ms));
  ASSERT_TRUE(client.push_games(testing::one_game("before")).ok());
  ASSERT_EQ(proxy.connections(), 1);

  proxy.black_hole();
  // Keepalive: a ping after 1 s without an answer, dropped 1 s later; then a
  // new connection. Without it, every call runs into its 2 s deadline for as
  // long as TCP keeps the dead connection (minutes).
  const auto took = testing::push_until_answered(client, 15s);
  ASSERT_TRUE(took.has_value()) << "no push got through in 15 s: the client kept using the "
                                   "black-holed connection";
  EXPECT_LT(*took, 8s) << std::chrono::duration<double>(*took).count() << " s";
  EXPECT_EQ(proxy.connections(), 2);
  auto stats = served.games.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats.value().games_total, 2u);
}

TEST(RpcKeepaliveTest, WithoutKeepaliveTheCallsStayOnTheDeadConnection) {
  // The same with keepalive off: what the test above guards against.
  Served served(200ms);
  BlackHoleProxy proxy(served.server->port());
  rpc::ReplayClient client(client_through(proxy, 0ms));
  ASSERT_TRUE(client.push_games(testing::one_game("before")).ok());
  proxy.black_hole();
  EXPECT_FALSE(testing::push_until_answered(client, 8s).has_value());
  EXPECT_EQ(proxy.connections(), 1);
}

// A model watch through the proxy, quiet for 4 s while the client pings every
// second, then a version published: whether the stream is still open to bring it.
bool watch_outlives_quiet_pings(Served& served) {
  BlackHoleProxy proxy(served.server->port());
  rpc::ClientOptions options = client_through(proxy, 1000ms);
  auto stub = v1::ModelRegistry::NewStub(rpc::make_channel(options));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 20s);
  v1::WatchModelsRequest request;
  auto reader = stub->WatchModels(&context, request);
  std::atomic<bool> got{false};
  std::thread publisher([&] {
    std::this_thread::sleep_for(4s);
    replay::ModelMeta meta;
    meta.version = 1;
    meta.size_bytes = 3;
    meta.crc32 = rpc::blob_crc32("abc");
    (void)served.models.publish(meta, "abc");
  });
  v1::ModelInfo info;
  if (reader->Read(&info)) got = info.version() == 1;
  context.TryCancel();
  publisher.join();
  reader->Finish();
  return got.load();
}

// With gRPC's default server policy (one ping per 5 minutes) the client gets
// GOAWAY "too_many_pings" at its third ping; what the stream does after that
// depends on timing, so this only checks the policy the server sets.
TEST(RpcKeepaliveTest, TheServerAcceptsTheClientsPingsThroughAQuietWatch) {
  Served served(200ms);
  EXPECT_TRUE(watch_outlives_quiet_pings(served));
}

}  // namespace
}  // namespace chessrl::replay_service
