// rpc::make_channel's reconnect backoff. While the server is down, a client
// tries to connect again at least every ~2.4 s (ClientOptions'
// reconnect_backoff_max, 2 s, plus gRPC's 20% jitter), where gRPC's default
// backoff grows 1 s, 1.6 s, 2.6 s, 4.1 s, ... to 120 s; once the server is
// back, a waiting call gets through within seconds. About 23 s.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A loopback port where every connection is accepted and closed at once: a
// server that is down, whose port still shows each connection attempt.
class RefusingListener {
 public:
  RefusingListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;  // the kernel picks a free port: no race
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~RefusingListener() { close(); }

  int port() const { return port_; }
  std::vector<Clock::time_point> attempts() {
    std::lock_guard lock(mutex_);
    return attempts_;
  }
  // Stops listening, so a real server can take the port.
  void close() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void run() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int connection = ::accept(fd_, nullptr, nullptr);
      if (connection < 0) continue;
      {
        std::lock_guard lock(mutex_);
        attempts_.push_back(Clock::now());
      }
      ::close(connection);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Clock::time_point> attempts_;
};

TEST(RpcReconnectTest, AClientOfADownServerKeepsTryingEveryFewSecondsAndGetsInWhenItIsBack) {
  RefusingListener down;
  rpc::ClientOptions options = testing::single_try_client(down.port());
  auto channel = rpc::make_channel(options);
  auto stub = v1::ReplayService::NewStub(channel);
  // A call that waits for the server (wait_for_ready) keeps the channel
  // connecting the whole time.
  std::atomic<bool> answered{false};
  Clock::time_point answered_at;
  grpc::Status status;
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + 60s);
  std::thread call([&] {
    v1::StatsReply reply;
    status = stub->Stats(&context, v1::StatsRequest(), &reply);
    answered_at = Clock::now();
    answered = true;
  });

  // Down for 20 s: gRPC's default would have tried at about 0, 1, 2.6, 5.2, 9.3
  // and 15.9 s (each gap +-20%), at most 7 attempts, a gap of 5.2 s or more
  // among them. Capped at 2.4 s there are at least 9, so the bounds below (8
  // attempts, gaps under 4.5 s) leave each side two seconds or an attempt of
  // room for a machine busy with other tests.
  const auto start = Clock::now();
  while (Clock::now() - start < 20s) std::this_thread::sleep_for(50ms);
  const auto attempts = down.attempts();
  EXPECT_GE(attempts.size(), 2u);
  Clock::duration widest{0};
  for (std::size_t i = 1; i < attempts.size(); ++i) {
    widest = std::max(widest, attempts[i] - attempts[i - 1]);
  }
  EXPECT_LT(widest, 4500ms) << "widest gap between connection attempts: "
                            << std::chrono::duration<double>(widest).count() << " s, of "
                            << attempts.size() << " attempts";
  EXPECT_GE(attempts.size(), 8u);

  // Back: the waiting call gets through within a few seconds. (The port was
  // ours until now; a server coming back takes the same address.)
  down.close();
  replay::MemoryReplayStore games(1000);
  replay::MemoryModelStore models;
  metrics::Registry registry;
  auto server_options = testing::fast_server_options();
  server_options.listen = "127.0.0.1:" + std::to_string(down.port());
  ReplayServer server(games, models, registry, server_options);
  const auto back = Clock::now();
  for (int i = 0; i < 1000 && !answered; ++i) std::this_thread::sleep_for(10ms);
  const bool in_time = answered.load();
  if (!in_time) context.TryCancel();
  call.join();
  ASSERT_TRUE(in_time) << "no answer 10 s after the server came back";
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(answered_at - back, 4500ms)  // the next attempt, at most 2.4 s away
      << std::chrono::duration<double>(answered_at - back).count() << " s";
}

}  // namespace
}  // namespace chessrl::replay_service
