// The model URLs over the real registry (ReplayServer in-process over an
// in-memory store that counts its reads): a version published over gRPC is
// served over HTTP byte for byte, its bytes read from the store once however
// many clients download it at once (and by gRPC's GetModel after them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/metrics/http_server.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "model_http.h"

namespace chessrl::replay_service {
namespace {

// MemoryModelStore, with its blob reads counted.
class CountingModelStore final : public replay::ModelStore {
 public:
  replay::StoreResult<replay::PublishStatus> publish(const replay::ModelMeta& meta,
                                                     std::string_view blob) override {
    return inner_.publish(meta, blob);
  }
  replay::StoreResult<std::optional<replay::ModelMeta>> latest() override { return inner_.latest(); }
  replay::StoreResult<std::optional<replay::ModelMeta>> info(std::uint64_t version) override {
    return inner_.info(version);
  }
  replay::StoreResult<std::optional<std::string>> read(std::uint64_t version) override {
    ++reads;
    return inner_.read(version);
  }
  replay::StoreResult<std::vector<replay::ModelMeta>> versions_after(std::uint64_t version,
                                                                     std::size_t limit) override {
    return inner_.versions_after(version, limit);
  }
  replay::StoreResult<std::optional<replay::ModelMeta>> best() override { return inner_.best(); }
  Result<bool> set_best(std::uint64_t version) override { return inner_.set_best(version); }
  Result<bool> lease(std::uint64_t version, std::chrono::milliseconds ttl) override {
    return inner_.lease(version, ttl);
  }
  Result<std::vector<std::uint64_t>> prune(std::size_t keep) override { return inner_.prune(keep); }
  std::atomic<int> reads{0};

 private:
  replay::MemoryModelStore inner_;
};

// GET path; the status line's code and the body (the server closes after it).
std::pair<int, std::string> get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return {0, ""};
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: replay\r\n\r\n";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[65536];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
    raw.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  const auto end = raw.find("\r\n\r\n");
  if (end == std::string::npos || raw.size() < 12) return {0, ""};
  return {std::stoi(raw.substr(9, 3)), raw.substr(end + 4)};
}

std::string model_bytes(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  std::uint32_t x = seed;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return bytes;
}

TEST(ModelHttpRegistry, EachVersionIsReadFromTheStoreOnceForManyDownloads) {
  replay::MemoryReplayStore games(1000);
  CountingModelStore models;
  metrics::Registry registry;
  ReplayServerOptions options;
  options.listen = "127.0.0.1:0";
  options.models.keep_models = 2;
  ReplayServer server(games, models, registry, options);
  rpc::ServerAuth open;
  ModelHttp http(registry_source(server.registry()), open, {}, &registry);
  metrics::HttpServer listener("127.0.0.1:0");
  http.attach(listener);

  rpc::ClientOptions client;
  client.address = "127.0.0.1:" + std::to_string(server.port());
  client.attempts = 1;
  client.deadline = std::chrono::seconds(20);
  rpc::ModelRegistryClient publisher(client);
  const std::string bytes = model_bytes(std::size_t{3} << 20, 1);  // several 1 MiB chunks
  v1::ModelInfo info;
  info.set_version(1);
  ASSERT_TRUE(publisher.publish(info, bytes).ok());
  const int reads = models.reads;

  constexpr int kClients = 8;
  std::vector<std::pair<int, std::string>> replies(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] { replies[i] = get(listener.port(), "/models/v1"); });
  for (auto& t : clients) t.join();
  for (const auto& [status, body] : replies) {
    ASSERT_EQ(status, 200);
    EXPECT_EQ(rpc::blob_crc32(body), rpc::blob_crc32(bytes));
    EXPECT_EQ(body.size(), bytes.size());
  }
  EXPECT_LE(models.reads - reads, 1) << "the version's bytes were read once per download";
  // gRPC's GetModel shares the same copy.
  auto over_grpc = publisher.get(1);
  ASSERT_TRUE(over_grpc.ok());
  EXPECT_EQ(over_grpc->second, bytes);
  EXPECT_LE(models.reads - reads, 1);

  // A version never published is 404; the newest is the one /models/latest names.
  for (std::uint64_t v : {2, 3}) {
    info.set_version(v);
    ASSERT_TRUE(publisher.publish(info, model_bytes(1000, static_cast<unsigned>(v))).ok());
  }
  EXPECT_EQ(get(listener.port(), "/models/v9").first, 404);
  EXPECT_EQ(get(listener.port(), "/models/latest").first, 302);
  EXPECT_EQ(get(listener.port(), "/models/v3").second, model_bytes(1000, 3));
  server.shutdown(std::chrono::milliseconds(0));
}

}  // namespace
}  // namespace chessrl::replay_service
