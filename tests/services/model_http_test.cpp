// The model URLs (services/replay/src/model_http.h): range, ETag and path
// parsing alone, then GET/HEAD /models/... on a real HttpServer on a loopback
// port through a raw socket: every status, the caching headers with tokens on
// and off, and one 14 MB body sent to 8 clients at once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/metrics/http_server.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/rpc/auth.h"
#include "chessrl/rpc/clients.h"
#include "model_http.h"

namespace chessrl::replay_service {
namespace {

using model_http::RangeAnswer;
using Kind = RangeAnswer::Kind;

TEST(ModelHttpRange, SingleRangesOfEveryForm) {
  const auto r = model_http::parse_range("bytes=0-99", 1000);
  EXPECT_EQ(r.kind, Kind::kSatisfiable);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 99u);
  const auto open = model_http::parse_range("bytes=990-", 1000);
  EXPECT_EQ(open.kind, Kind::kSatisfiable);
  EXPECT_EQ(open.first, 990u);
  EXPECT_EQ(open.last, 999u);
  const auto suffix = model_http::parse_range("bytes=-10", 1000);
  EXPECT_EQ(suffix.kind, Kind::kSatisfiable);
  EXPECT_EQ(suffix.first, 990u);
  EXPECT_EQ(suffix.last, 999u);
  // An end past the body is the body's end; a suffix longer than it is all of it.
  const auto past = model_http::parse_range("bytes=500-99999999999999999999999", 1000);
  EXPECT_EQ(past.kind, Kind::kSatisfiable);
  EXPECT_EQ(past.last, 999u);
  const auto whole = model_http::parse_range("bytes=-5000", 1000);
  EXPECT_EQ(whole.kind, Kind::kSatisfiable);
  EXPECT_EQ(whole.first, 0u);
  EXPECT_EQ(whole.last, 999u);
  const auto spaced = model_http::parse_range(" Bytes=1-2 ", 1000);
  EXPECT_EQ(spaced.kind, Kind::kSatisfiable);
  EXPECT_EQ(spaced.first, 1u);
  EXPECT_EQ(spaced.last, 2u);
}

TEST(ModelHttpRange, UnsatisfiableAndIgnored) {
  EXPECT_EQ(model_http::parse_range("bytes=1000-", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(model_http::parse_range("bytes=1000-2000", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(model_http::parse_range("bytes=-0", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(model_http::parse_range("bytes=99999999999999999999999-", 1000).kind,
            Kind::kUnsatisfiable);
  // Several ranges: the whole body; malformed or another unit: ignored.
  for (const char* header : {"bytes=0-1,5-6", "bytes=0-1, 5-6", "bytes=5-1", "bytes=a-b",
                             "bytes=-", "bytes=1", "items=0-1", "", "bytes=0x10-"}) {
    EXPECT_EQ(model_http::parse_range(header, 1000).kind, Kind::kIgnore) << header;
  }
}

TEST(ModelHttpHeaders, EtagMatchesAndDates) {
  replay::ModelMeta meta;
  meta.crc32 = 0xAB;
  meta.size_bytes = 3300000;
  EXPECT_EQ(model_http::etag(meta), "\"000000ab-3300000\"");
  EXPECT_TRUE(model_http::none_match_hits("\"000000ab-3300000\"", "\"000000ab-3300000\""));
  EXPECT_TRUE(model_http::none_match_hits("\"x\", W/\"000000ab-3300000\"", "\"000000ab-3300000\""));
  EXPECT_TRUE(model_http::none_match_hits("*", "\"000000ab-3300000\""));
  EXPECT_FALSE(model_http::none_match_hits("\"000000ab-3300001\"", "\"000000ab-3300000\""));
  EXPECT_FALSE(model_http::none_match_hits("", "\"000000ab-3300000\""));
  EXPECT_EQ(model_http::http_date(784111777000), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(model_http::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(ModelHttpHeaders, Targets) {
  using T = model_http::Target::Kind;
  EXPECT_EQ(model_http::parse_target("/models/latest").kind, T::kLatest);
  const auto v = model_http::parse_target("/models/v42");
  EXPECT_EQ(v.kind, T::kVersion);
  EXPECT_EQ(v.version, 42u);
  EXPECT_EQ(model_http::parse_target("/models/v9007199254740991").version, rpc::kMaxModelVersion);
  for (const char* bad : {"/models/v", "/models/v0", "/models/v01", "/models/v1x", "/models/v-1",
                          "/models/v9007199254740992", "/models/v99999999999999999999",
                          "/models/v1/x"}) {
    EXPECT_EQ(model_http::parse_target(bad).kind, T::kMalformed) << bad;
  }
  for (const char* other : {"/models/", "/models/best", "/other", "/models/latest/x"}) {
    EXPECT_EQ(model_http::parse_target(other).kind, T::kUnknown) << other;
  }
}

// --- Over a socket ---------------------------------------------------------

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// One request over HTTP/1.1; the server closes the connection after it.
Reply request(int port, const std::string& method, const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  Reply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return reply;
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return reply;
  }
  std::string text = method + " " + path + " HTTP/1.1\r\nHost: replay\r\n";
  for (const auto& [name, value] : headers) text += name + ": " + value + "\r\n";
  text += "\r\n";
  (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto end = raw.find("\r\n\r\n");
  if (end == std::string::npos || raw.size() < 12) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  std::size_t line = raw.find("\r\n") + 2;
  while (line < end) {
    const auto next = raw.find("\r\n", line);
    const std::string h = raw.substr(line, next - line);
    const auto colon = h.find(':');
    std::string name = h.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = h.substr(h.find_first_not_of(' ', colon + 1));
    line = next + 2;
  }
  reply.body = raw.substr(end + 4);
  return reply;
}

const std::string kTrainer = "trainer-token-0123456789abcdef";

std::shared_ptr<const std::string> pattern_bytes(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return std::make_shared<const std::string>(std::move(bytes));
}

// A registry of versions 3 and 7 (7 the latest), counting its reads.
class FakeModels {
 public:
  FakeModels() {
    add(3, pattern_bytes(1000, 3));
    add(7, pattern_bytes(4096, 7));
  }
  void add(std::uint64_t version, std::shared_ptr<const std::string> bytes) {
    ModelHttpBlob blob;
    blob.meta.version = version;
    blob.meta.size_bytes = bytes->size();
    blob.meta.crc32 = rpc::blob_crc32(*bytes);
    blob.meta.created_unix_ms = 1700000000000 + static_cast<std::int64_t>(version);
    blob.bytes = std::move(bytes);
    blobs_[version] = std::move(blob);
  }
  ModelBlobSource source() {
    return [this](std::uint64_t version) -> replay::StoreResult<std::optional<ModelHttpBlob>> {
      ++reads;
      if (down) return replay::StoreResult<std::optional<ModelHttpBlob>>(fail("Redis is down"));
      if (version == 0) version = blobs_.rbegin()->first;
      auto it = blobs_.find(version);
      if (it == blobs_.end()) return std::optional<ModelHttpBlob>();
      return std::optional<ModelHttpBlob>(it->second);
    };
  }
  const ModelHttpBlob& blob(std::uint64_t version) { return blobs_.at(version); }
  std::atomic<int> reads{0};
  std::atomic<bool> down{false};

 private:
  std::map<std::uint64_t, ModelHttpBlob> blobs_;
};

class ModelHttpServerTest : public ::testing::Test {
 protected:
  void start(const rpc::ServerAuth& auth, ModelHttpOptions options = {}) {
    server_.reset();
    http_ = std::make_unique<ModelHttp>(models_.source(), auth, options, &registry_);
    server_ = std::make_unique<metrics::HttpServer>("127.0.0.1:0");
    http_->attach(*server_);
  }
  Reply get(const std::string& path,
            const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return request(server_->port(), "GET", path, headers);
  }
  FakeModels models_;
  metrics::Registry registry_;
  std::unique_ptr<ModelHttp> http_;
  std::unique_ptr<metrics::HttpServer> server_;
};

TEST_F(ModelHttpServerTest, ServesAVersionWithImmutableCachingHeaders) {
  rpc::ServerAuth open;
  start(open);
  const Reply reply = get("/models/v3");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, *models_.blob(3).bytes);
  EXPECT_EQ(reply.header("content-type"), "application/octet-stream");
  EXPECT_EQ(reply.header("content-length"), "1000");
  EXPECT_EQ(reply.header("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(reply.header("accept-ranges"), "bytes");
  EXPECT_EQ(reply.header("etag"), model_http::etag(models_.blob(3).meta));
  EXPECT_EQ(reply.header("last-modified"), model_http::http_date(1700000000003));
  EXPECT_EQ(reply.header("vary"), "");  // tokens off: nothing to vary on
  // The same tag on every request for the version, another for another version.
  EXPECT_EQ(get("/models/v3").header("etag"), reply.header("etag"));
  EXPECT_NE(get("/models/v7").header("etag"), reply.header("etag"));

  const Reply head = request(server_->port(), "HEAD", "/models/v3");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), "1000");
  EXPECT_EQ(head.header("etag"), reply.header("etag"));
  EXPECT_TRUE(head.body.empty());
}

TEST_F(ModelHttpServerTest, ConditionalAndRangeRequests) {
  rpc::ServerAuth open;
  start(open);
  const std::string& bytes = *models_.blob(7).bytes;
  const std::string tag = model_http::etag(models_.blob(7).meta);

  const Reply not_modified = get("/models/v7", {{"If-None-Match", tag}});
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_TRUE(not_modified.body.empty());
  EXPECT_EQ(not_modified.header("etag"), tag);
  EXPECT_EQ(get("/models/v7", {{"If-None-Match", "\"other\""}}).status, 200);

  const Reply part = get("/models/v7", {{"Range", "bytes=100-199"}});
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, bytes.substr(100, 100));
  EXPECT_EQ(part.header("content-range"), "bytes 100-199/4096");
  EXPECT_EQ(part.header("content-length"), "100");
  EXPECT_EQ(get("/models/v7", {{"Range", "bytes=4000-"}}).body, bytes.substr(4000));
  EXPECT_EQ(get("/models/v7", {{"Range", "bytes=-96"}}).body, bytes.substr(4000));

  const Reply beyond = get("/models/v7", {{"Range", "bytes=4096-"}});
  EXPECT_EQ(beyond.status, 416);
  EXPECT_EQ(beyond.header("content-range"), "bytes */4096");

  const Reply several = get("/models/v7", {{"Range", "bytes=0-1,10-11"}});
  EXPECT_EQ(several.status, 200);
  EXPECT_EQ(several.body, bytes);

  // If-Range: the range only while the client holds this very version's bytes.
  EXPECT_EQ(get("/models/v7", {{"Range", "bytes=0-9"}, {"If-Range", tag}}).status, 206);
  const Reply stale = get("/models/v7", {{"Range", "bytes=0-9"}, {"If-Range", "\"old\""}});
  EXPECT_EQ(stale.status, 200);
  EXPECT_EQ(stale.body, bytes);
}

TEST_F(ModelHttpServerTest, LatestRedirectsAndErrorsAreNamed) {
  rpc::ServerAuth open;
  start(open);
  const Reply latest = get("/models/latest");
  EXPECT_EQ(latest.status, 302);
  EXPECT_EQ(latest.header("location"), "/models/v7");
  EXPECT_EQ(latest.header("cache-control"), "no-store");

  const Reply missing = get("/models/v5");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("no version 5"), std::string::npos) << missing.body;
  EXPECT_EQ(missing.header("cache-control"), "no-store");
  const Reply malformed = get("/models/v05");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_NE(malformed.body.find("/models/v05"), std::string::npos) << malformed.body;
  EXPECT_EQ(get("/models/vx").status, 400);
  EXPECT_EQ(get("/models/other").status, 404);
  EXPECT_EQ(request(server_->port(), "POST", "/models/v7").status, 405);

  models_.down = true;
  const Reply down = get("/models/v7");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.header("retry-after"), "1");
  EXPECT_NE(down.body.find("Redis is down"), std::string::npos) << down.body;

  const std::string text = registry_.serialize();
  EXPECT_NE(text.find("chessrl_replay_model_http_requests_total{code=\"302\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("chessrl_replay_model_http_requests_total{code=\"503\"} 1"),
            std::string::npos);
}

TEST_F(ModelHttpServerTest, TokensAreCheckedAndAnswersArePrivateUnlessOptedIn) {
  rpc::ServerAuth auth;
  auth.add(rpc::Role::kTrainer, kTrainer);
  start(auth);
  const int reads = models_.reads;
  const Reply anonymous = get("/models/v3");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.header("www-authenticate").rfind("Bearer", 0), 0u);
  EXPECT_EQ(anonymous.header("cache-control"), "no-store");
  EXPECT_EQ(get("/models/v3", {{"Authorization", "Bearer not-a-known-token-at-all"}}).status, 401);
  EXPECT_EQ(get("/models/v3", {{"Authorization", "Basic dXNlcjpwYXNz"}}).status, 401);
  // Nothing is told, or read, before the token: not even whether a path is a version.
  EXPECT_EQ(get("/models/v0").status, 401);
  EXPECT_EQ(get("/models/latest").status, 401);
  EXPECT_EQ(models_.reads, reads);

  const Reply allowed = get("/models/v3", {{"Authorization", "Bearer " + kTrainer}});
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.body, *models_.blob(3).bytes);
  // No shared cache may store it (RFC 9111: a request with Authorization is
  // stored only when the answer says public); a cache keyed on the token may.
  EXPECT_EQ(allowed.header("cache-control"), "private, max-age=31536000, immutable");
  EXPECT_EQ(allowed.header("vary"), "Authorization");
  // The scheme is case-insensitive.
  EXPECT_EQ(get("/models/v3", {{"authorization", "bearer " + kTrainer}}).status, 200);

  // --models-http-public: the operator's cache authenticates, so it may store it.
  start(auth, ModelHttpOptions{.public_with_auth = true});
  const Reply opted = get("/models/v3", {{"Authorization", "Bearer " + kTrainer}});
  EXPECT_EQ(opted.status, 200);
  EXPECT_EQ(opted.header("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(opted.header("vary"), "Authorization");
  EXPECT_EQ(get("/models/v3").status, 401);
}

TEST_F(ModelHttpServerTest, OneLargeBodyToEightClientsAtOnce) {
  rpc::ServerAuth open;
  start(open);
  models_.add(9, pattern_bytes(14 << 20, 9));
  const std::uint32_t crc = models_.blob(9).meta.crc32;
  const std::shared_ptr<const std::string> held = models_.blob(9).bytes;
  const long before = held.use_count();
  const int reads = models_.reads;
  constexpr int kClients = 8;
  std::vector<Reply> replies(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] { replies[i] = get("/models/v9"); });
  for (auto& t : clients) t.join();
  for (const Reply& reply : replies) {
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body.size(), std::size_t{14} << 20);
    EXPECT_EQ(rpc::blob_crc32(reply.body), crc);
  }
  // One source read per request: the route holds the source's bytes, shared
  // (the registry's cache makes it one Redis read per version), and lets go.
  EXPECT_EQ(models_.reads - reads, kClients);
  EXPECT_EQ(held.use_count(), before);
}

}  // namespace
}  // namespace chessrl::replay_service
