// Bearer tokens and TLS on the replay service and model registry, through
// real gRPC clients on a loopback port: who may call what, that a refused
// call changes nothing, and the token files' and variables' checks.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/auth.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/rpc/security_flags.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

namespace fs = std::filesystem;
using testing::batch;

const std::string kSelfplay = "selfplay-token-0123456789abcdef";
const std::string kTrainer = "trainer-token-0123456789abcdef";
const std::string kEvaluator = "evaluator-token-0123456789abcdef";

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/chessrl-auth-test-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::string path_;
};

class ReplayAuthTest : public ::testing::Test {
 protected:
  ReplayAuthTest() : games_(1000) {
    auto options = testing::fast_server_options();
    options.auth.add(rpc::Role::kSelfplay, kSelfplay);
    options.auth.add(rpc::Role::kTrainer, kTrainer);
    options.auth.add(rpc::Role::kEvaluator, kEvaluator);
    server_ = std::make_unique<ReplayServer>(games_, models_, registry_, options);
  }
  rpc::ClientOptions client(const std::string& token) const {
    auto options = testing::single_try_client(server_->port());
    options.security.token = token;
    return options;
  }
  std::string publish(const std::string& token, std::uint64_t version) {
    rpc::ModelRegistryClient registry(client(token));
    v1::ModelInfo info;
    info.set_version(version);
    auto published = registry.publish(info, "model bytes " + std::to_string(version));
    return published.ok() ? "" : published.error();
  }
  std::string calls(const std::string& method, const std::string& code) const {
    const std::string text = registry_.serialize();
    const std::string series = "chessrl_replay_rpc_requests_total{code=\"" + code +
                               "\",method=\"" + method + "\"} ";
    const auto at = text.find(series);
    return at == std::string::npos ? "0" : text.substr(at + series.size(), text.find('\n', at) - at - series.size());
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
};

TEST_F(ReplayAuthTest, ACallWithoutATokenIsUnauthenticatedAndChangesNothing) {
  rpc::ReplayClient anonymous(client(""));
  auto pushed = anonymous.push_games(batch(1, 3));
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.error().find("PushGames: UNAUTHENTICATED"), std::string::npos) << pushed.error();
  EXPECT_NE(pushed.error().find("no token"), std::string::npos) << pushed.error();
  EXPECT_EQ(games_.stats()->games, 0u);

  const std::string refused = publish("", 1);
  EXPECT_NE(refused.find("UNAUTHENTICATED"), std::string::npos) << refused;
  EXPECT_FALSE(models_.latest()->has_value());
  rpc::ModelRegistryClient reader(client(""));
  auto latest = reader.latest();
  ASSERT_FALSE(latest.ok());
  EXPECT_NE(latest.error().find("UNAUTHENTICATED"), std::string::npos) << latest.error();
  EXPECT_EQ(calls("PushGames", "UNAUTHENTICATED"), "1");
}

// The token is checked on the initial metadata, before gRPC reads the
// message: a push over the message limit without a token is UNAUTHENTICATED,
// not RESOURCE_EXHAUSTED. (Checked in the handler, the whole message was
// read first: six clients sending 59 MB pushes took replay to 608 MiB.)
TEST_F(ReplayAuthTest, TheTokenIsCheckedBeforeTheMessageIsRead) {
  v1::PushGamesRequest big;
  v1::Game* g = big.add_games();
  g->set_id("big");
  // Over the server's message limit (4 bytes a move).
  const int moves = (ReplayServerOptions{}.max_message_bytes + (4 << 20)) / 4;
  for (int i = 0; i < moves; ++i) g->add_moves(0x0FFFFFFFu);
  auto anonymous = client("");
  anonymous.max_message_bytes = 1 << 30;
  auto pushed = rpc::ReplayClient(anonymous).push_games(big);
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.code(), grpc::StatusCode::UNAUTHENTICATED) << pushed.error();
  EXPECT_NE(pushed.error().find("PushGames: no token"), std::string::npos) << pushed.error();
  // With the token, the same push is refused for its size.
  auto known = client(kSelfplay);
  known.max_message_bytes = 1 << 30;
  auto sized = rpc::ReplayClient(known).push_games(big);
  ASSERT_FALSE(sized.ok());
  EXPECT_EQ(sized.code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << sized.error();
  // A method name from the client is a label only when the service has it.
  EXPECT_EQ(calls("PushGames", "UNAUTHENTICATED"), "1");
}

TEST_F(ReplayAuthTest, AWrongTokenIsUnauthenticated) {
  rpc::ReplayClient guesser(client("selfplay-token-0123456789abcdeX"));
  auto pushed = guesser.push_games(batch(1, 2));
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.error().find("UNAUTHENTICATED: PushGames: the token is not known"),
            std::string::npos)
      << pushed.error();
  EXPECT_EQ(games_.stats()->games, 0u);
}

TEST_F(ReplayAuthTest, EachRoleMayDoItsOwnWritesAndNoOthers) {
  // Self-play pushes; the trainer and the evaluator may not.
  auto pushed = rpc::ReplayClient(client(kSelfplay)).push_games(batch(1, 3));
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_EQ(games_.stats()->games, 3u);
  auto denied = rpc::ReplayClient(client(kTrainer)).push_games(batch(10, 1));
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.error().find("PERMISSION_DENIED: PushGames: the trainer token may not push "
                                "games (only selfplay may)"),
            std::string::npos)
      << denied.error();
  EXPECT_EQ(games_.stats()->games, 3u);

  // The trainer samples and publishes; self-play may not.
  EXPECT_TRUE(rpc::ReplayClient(client(kTrainer)).sample(4).ok());
  auto sampled = rpc::ReplayClient(client(kSelfplay)).sample(4);
  ASSERT_FALSE(sampled.ok());
  EXPECT_NE(sampled.error().find("PERMISSION_DENIED"), std::string::npos) << sampled.error();
  EXPECT_NE(publish(kSelfplay, 1).find("PERMISSION_DENIED: PublishModel"), std::string::npos);
  EXPECT_NE(publish(kEvaluator, 1).find("PERMISSION_DENIED: PublishModel"), std::string::npos);
  EXPECT_FALSE(models_.latest()->has_value());
  EXPECT_EQ(publish(kTrainer, 1), "");
  EXPECT_EQ(publish(kTrainer, 2), "");

  // The evaluator sets the best version; the trainer may not.
  auto moved = rpc::ModelRegistryClient(client(kTrainer)).set_best(2);
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.error().find("PERMISSION_DENIED: SetBest"), std::string::npos) << moved.error();
  EXPECT_FALSE(models_.best()->has_value());
  auto set = rpc::ModelRegistryClient(client(kEvaluator)).set_best(2);
  ASSERT_TRUE(set.ok()) << set.error();
  EXPECT_EQ((*models_.best())->version, 2u);

  // Every role reads: model info, bytes, stats, the watch stream.
  for (const std::string& token : {kSelfplay, kTrainer, kEvaluator}) {
    rpc::ModelRegistryClient reader(client(token));
    auto best = reader.best();
    ASSERT_TRUE(best.ok()) << best.error();
    EXPECT_EQ((*best)->version(), 2u);
    auto got = reader.get(1);
    ASSERT_TRUE(got.ok()) << got.error();
    EXPECT_EQ(got->second, "model bytes 1");
    EXPECT_TRUE(rpc::ReplayClient(client(token)).stats().ok());
    std::atomic<bool> stop{false};
    std::uint64_t seen = 0;
    reader.watch(0, [&](const v1::ModelInfo& info) {
      seen = info.version();
      return false;
    }, stop);
    EXPECT_EQ(seen, 2u);
  }
  EXPECT_EQ(calls("PushGames", "PERMISSION_DENIED"), "1");
}

TEST_F(ReplayAuthTest, AWatchWithoutATokenGetsNothing) {
  ASSERT_EQ(publish(kTrainer, 1), "");
  rpc::ClientOptions options = client("");
  options.backoff_min = std::chrono::milliseconds(10);
  rpc::ModelRegistryClient reader(options);
  std::atomic<bool> stop{false};
  int seen = 0;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  reader.watch(0, [&](const v1::ModelInfo&) { return ++seen < 100; }, stop,
               std::chrono::milliseconds(50));
  stopper.join();
  EXPECT_EQ(seen, 0);
  EXPECT_NE(calls("WatchModels", "UNAUTHENTICATED"), "0");
}

TEST_F(ReplayAuthTest, TheHealthServiceStaysOpenForProbes) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckResponse response;
  const auto status = stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST(ServerAuthTest, OneTokenForSeveralRolesHoldsTheirRightsTogether) {
  rpc::ServerAuth auth;
  auth.add(rpc::Role::kSelfplay, kSelfplay);
  auth.add(rpc::Role::kTrainer, kSelfplay);
  EXPECT_EQ(auth.roles(), "selfplay, trainer");
  const std::string header = rpc::bearer(kSelfplay);
  EXPECT_TRUE(auth.check_token(header, rpc::Action::kPushGames, "PushGames").ok());
  EXPECT_TRUE(auth.check_token(header, rpc::Action::kPublishModel, "PublishModel").ok());
  const auto denied = auth.check_token(header, rpc::Action::kSetBest, "SetBest");
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(),
            "SetBest: the selfplay/trainer token may not set the best version (only evaluator "
            "may)");
  const auto lease = auth.check_token(header, rpc::Action::kLeaseModel, "LeaseModel");
  EXPECT_EQ(lease.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(lease.error_message(),
            "LeaseModel: the selfplay/trainer token may not lease model versions (only "
            "evaluator may)");
  const auto scheme = auth.check_token("Basic " + kSelfplay, rpc::Action::kRead, "Stats");
  EXPECT_EQ(scheme.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(scheme.error_message().find("not `Bearer <token>`"), std::string::npos);
  // Open when no token is configured.
  EXPECT_TRUE(rpc::ServerAuth().check_token(std::nullopt, rpc::Action::kSetBest, "SetBest").ok());
}

TEST(ServerAuthTest, TokensAreCheckedWhereTheyAreRead) {
  EXPECT_EQ(*rpc::clean_token("  " + kTrainer + "\n", "x"), kTrainer);
  auto short_token = rpc::clean_token("abc\n", "--token-file /run/t");
  ASSERT_FALSE(short_token.ok());
  EXPECT_EQ(short_token.error(),
            "--token-file /run/t: the token is 3 bytes; at least 16 are needed (e.g. `openssl "
            "rand -hex 32`)");
  EXPECT_FALSE(rpc::clean_token("\n\n", "x").ok());
  auto spaced = rpc::clean_token("one token with spaces inside", "CHESSRL_TOKEN");
  ASSERT_FALSE(spaced.ok());
  EXPECT_NE(spaced.error().find("CHESSRL_TOKEN: "), std::string::npos);
  auto missing = rpc::read_token_file("/nonexistent/token", "--token-file");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("--token-file /nonexistent/token: cannot read it"),
            std::string::npos)
      << missing.error();
}

TEST(ServerAuthTest, LoadsADirectoryOfRoleFilesOrTheVariables) {
  TempDir dir;
  dir.write("selfplay", kSelfplay + "\n");
  dir.write("evaluator", kEvaluator);
  auto auth = rpc::ServerAuth::load(dir.path());
  ASSERT_TRUE(auth.ok()) << auth.error();
  EXPECT_EQ(auth->roles(), "selfplay, evaluator");
  // The trainer has no token here: its calls cannot succeed with any token.
  EXPECT_EQ(auth->check_token(rpc::bearer(kTrainer), rpc::Action::kSample, "Sample").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  TempDir empty;
  auto none = rpc::ServerAuth::load(empty.path());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("holds none of the files selfplay, trainer, evaluator"),
            std::string::npos);
  TempDir bad;
  bad.write("trainer", "short");
  auto refused = rpc::ServerAuth::load(bad.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find(bad.path() + "/trainer: the token is 5 bytes"), std::string::npos)
      << refused.error();
  EXPECT_FALSE(rpc::ServerAuth::load("/nonexistent-dir").ok());

  ::setenv("CHESSRL_TOKEN_TRAINER", kTrainer.c_str(), 1);
  auto from_env = rpc::ServerAuth::load("");
  ::unsetenv("CHESSRL_TOKEN_TRAINER");
  ASSERT_TRUE(from_env.ok()) << from_env.error();
  EXPECT_EQ(from_env->roles(), "trainer");
  auto open = rpc::ServerAuth::load("");
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->enabled());
}

TEST(ClientSecurityTest, ReadsTheTokenFromTheFileOrTheVariable) {
  TempDir dir;
  rpc::ClientSecurityFlags flags;
  flags.token_file = dir.write("token", kSelfplay + "\n");
  auto security = rpc::load_client_security(flags);
  ASSERT_TRUE(security.ok()) << security.error();
  EXPECT_EQ(security->token, kSelfplay);
  EXPECT_FALSE(security->tls);
  ::setenv("CHESSRL_TOKEN", kTrainer.c_str(), 1);
  auto from_env = rpc::load_client_security(rpc::ClientSecurityFlags{});
  ::unsetenv("CHESSRL_TOKEN");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->token, kTrainer);
  rpc::ClientSecurityFlags no_ca;
  no_ca.tls_ca_file = dir.write("ca.pem", "not a certificate");
  auto refused = rpc::load_client_security(no_ca);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("--tls-ca " + no_ca.tls_ca_file + ": holds no PEM certificate"),
            std::string::npos);
  rpc::ClientSecurityFlags name_only;
  name_only.tls_server_name = "replay";
  EXPECT_FALSE(rpc::load_client_security(name_only).ok());
}

// TLS: a self-signed certificate made with openssl for this test.
TEST(ReplayTlsTest, ATlsServerAnswersATlsClientThatTrustsItsCertificateAndNoOther) {
  TempDir dir;
  const std::string cert = dir.path() + "/cert.pem", key = dir.path() + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=chessrl-replay -addext subjectAltName=DNS:chessrl-replay -keyout " +
      key + " -out " + cert + " 2>" + dir.path() + "/openssl.log";
  ASSERT_EQ(std::system(command.c_str()), 0) << "openssl failed; see " << dir.path();
  rpc::ServerSecurityFlags server_flags;
  server_flags.tls_cert_file = cert;
  server_flags.tls_key_file = key;
  auto server_security = rpc::load_server_security(server_flags);
  ASSERT_TRUE(server_security.ok()) << server_security.error();

  replay::MemoryReplayStore games(1000);
  replay::MemoryModelStore models;
  metrics::Registry registry;
  auto options = testing::fast_server_options();
  options.tls_cert_pem = server_security->tls_cert_pem;
  options.tls_key_pem = server_security->tls_key_pem;
  options.auth.add(rpc::Role::kSelfplay, kSelfplay);
  ReplayServer server(games, models, registry, options);

  rpc::ClientSecurityFlags flags;
  flags.tls_ca_file = cert;
  flags.tls_server_name = "chessrl-replay";
  auto security = rpc::load_client_security(flags);
  ASSERT_TRUE(security.ok()) << security.error();
  auto client = testing::single_try_client(server.port());
  client.security = *security;
  client.security.token = kSelfplay;
  auto pushed = rpc::ReplayClient(client).push_games(batch(1, 2));
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_EQ(games.stats()->games, 2u);

  // A plaintext client gets no answer; nor does one checking another name.
  auto plain = testing::single_try_client(server.port());
  plain.deadline = std::chrono::seconds(3);
  plain.security.token = kSelfplay;
  EXPECT_FALSE(rpc::ReplayClient(plain).stats().ok());
  auto wrong_name = client;
  wrong_name.deadline = std::chrono::seconds(3);
  wrong_name.security.tls_server_name = "someone-else";
  EXPECT_FALSE(rpc::ReplayClient(wrong_name).stats().ok());
  // Cert and key go together.
  rpc::ServerSecurityFlags half;
  half.tls_cert_file = cert;
  auto refused = rpc::load_server_security(half);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "--tls-cert and --tls-key go together: give both or neither");
}

}  // namespace
}  // namespace chessrl::replay_service
