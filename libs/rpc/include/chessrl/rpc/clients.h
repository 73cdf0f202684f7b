// Clients of chessrl-replay's two services. Every call has a deadline; calls
// that are safe to repeat (all of them: pushes are idempotent by game id) may
// be retried on UNAVAILABLE and DEADLINE_EXCEEDED with jittered exponential
// backoff (chessrl::Backoff), up to `attempts` tries (1 by default: every
// service owns its retries); no other code is retried (docs/replay.md, "Status
// codes"). Errors come back as RpcResult failures naming the call, the gRPC
// code and the server's message, with the code itself in code(). A client is
// thread-safe (one channel, shared).
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chessrl/core/backoff.h"
#include "chessrl/core/result.h"
#include "chessrl/v1/models.grpc.pb.h"
#include "chessrl/v1/replay.grpc.pb.h"

namespace chessrl::rpc {

// The largest model version the registry takes: 2^53 - 1. Redis's Lua keeps
// numbers as doubles, exact only up to 2^53, and a version must leave room
// for the next one (latest + 1); the service refuses larger ones.
inline constexpr std::uint64_t kMaxModelVersion = (std::uint64_t{1} << 53) - 1;

// Trailing metadata ("1") a server adds to a refusal for capacity
// (RESOURCE_EXHAUSTED: this replica holds all the streams it may): another
// replica may have room. The client drops its connection and comes back on a
// new one (make_fresh_channel), which a Kubernetes Service balances anew.
inline constexpr char kRetryElsewhereKey[] = "chessrl-retry-elsewhere";

// Trailing metadata (milliseconds, decimal) a server adds to an UNAVAILABLE
// that knows when it can serve: GetModel's queue answers so when a caller's
// turn would come after its deadline. The client comes back after that long
// instead of after its own backoff (and instead of waiting out its deadline
// in the queue only to join it again at the back).
inline constexpr char kRetryAfterMsKey[] = "chessrl-retry-after-ms";

// Who the client is and how it reaches the server safely.
struct ClientSecurity {
  // Sent with every call as `authorization: Bearer <token>` when not empty
  // (see chessrl/rpc/auth.h).
  std::string token;
  // TLS to the server: trusting the CA certificates in `tls_root_pem` (PEM;
  // empty: the system's), checking the certificate names `tls_server_name`
  // (empty: the host in the address).
  bool tls = false;
  std::string tls_root_pem;
  std::string tls_server_name;
};

struct ClientOptions {
  std::string address = "127.0.0.1:50051";
  std::chrono::milliseconds deadline{30000};  // per attempt
  // Tries per call. 1: the services and the benchmarks own their retries (the
  // self-play pusher, the model follower, the trainer's prefetcher and
  // publisher, the evaluator's loop: docs/architecture.md, "Who retries what");
  // a tool waiting for a server to come up asks for more.
  int attempts = 1;
  // The waits between tries, and between a watch's streams: full jitter
  // (U(0, cap)), the cap doubling from `backoff_min` to `backoff_max`.
  std::chrono::milliseconds backoff_min{100};
  std::chrono::milliseconds backoff_max{5000};
  BackoffPolicy::Jitter backoff_jitter = BackoffPolicy::Jitter::kFull;
  // How soon the channel tries to connect again after a failed attempt:
  // doubling-ish (x1.6) from `reconnect_backoff_min` to at most
  // `reconnect_backoff_max` (gRPC's own default grows to 120 s, so a client
  // of a server that was down for minutes would stay away minutes longer).
  std::chrono::milliseconds reconnect_backoff_min{500};
  std::chrono::milliseconds reconnect_backoff_max{2000};
  // HTTP/2 keepalive: while a call is open, the channel pings the server after
  // `keepalive_time` without traffic and drops the connection when no answer
  // comes within `keepalive_timeout`; the next call connects afresh. Without
  // it, a connection whose server vanished without a reset (a pod whose
  // network went with it, a host gone) looks open for minutes and every call
  // on it runs into its deadline. Servers must allow pings this often
  // (ReplayServerOptions::keepalive_min_ping_interval). 0: no keepalive.
  std::chrono::milliseconds keepalive_time{10000};
  std::chrono::milliseconds keepalive_timeout{5000};
  // How soon the channel may look a DNS name up again after the last lookup.
  // A lookup happens when a connection fails; gRPC's default spacing, 30 s,
  // keeps a client on a server's old address for up to 30 s after the name
  // moved (a pod replaced behind a headless Service, a restarted container
  // with a new address).
  std::chrono::milliseconds dns_min_reresolution{1000};
  // One thread per process polls gRPC in slices of this length (the shortest
  // any live channel asked for) while a channel made with it lives, so that a
  // connection attempt made while no call is in flight completes as soon as
  // the server answers (gRPC otherwise reads such a socket only every 5 s and
  // the attempt runs into its deadline). It ends within a slice of the last
  // such channel's last copy. 0: this channel keeps no poller running.
  std::chrono::milliseconds poll_interval{100};
  int max_message_bytes = 64 << 20;
  // GetModel refuses a model larger than this as soon as its first chunk
  // names its size, before the rest arrives.
  std::uint64_t max_model_bytes = std::uint64_t{1} << 30;
  ClientSecurity security;

  BackoffPolicy retry_backoff() const {
    BackoffPolicy policy;
    policy.initial = backoff_min;
    policy.max = backoff_max;
    policy.jitter = backoff_jitter;
    return policy;
  }
};

// Whether a call that failed with `code` may succeed if made again later
// (UNAVAILABLE, DEADLINE_EXCEEDED): the codes the clients retry. Any other
// code (DATA_LOSS, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, ...) will
// fail the same way again.
bool transient(grpc::StatusCode code);

// A client call's Result: on failure also the gRPC code (OK on success), so a
// caller can tell a failure worth retrying later from one that is not.
// Failures found by the client itself (a model whose CRC does not match) are
// DATA_LOSS.
struct RpcFailure {
  std::string message;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  bool retry_elsewhere = false;  // the server's answer carried kRetryElsewhereKey
  // The server's answer carried kRetryAfterMsKey: when to ask again.
  std::optional<std::chrono::milliseconds> retry_after = std::nullopt;
};

template <class T>
class [[nodiscard]] RpcResult : public Result<T> {
 public:
  RpcResult(T value) : Result<T>(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  RpcResult(RpcFailure failure)                        // NOLINT(google-explicit-constructor)
      : Result<T>(Failure{std::move(failure.message)}),
        code_(failure.code),
        retry_elsewhere_(failure.retry_elsewhere),
        retry_after_(failure.retry_after) {}

  grpc::StatusCode code() const { return code_; }
  // The server refused for capacity and named another replica as the way out:
  // ask again on a fresh channel (make_fresh_channel).
  bool retry_elsewhere() const { return retry_elsewhere_; }
  // The server said when it can serve (kRetryAfterMsKey): ask again after that.
  std::optional<std::chrono::milliseconds> retry_after() const { return retry_after_; }
  // Failed, and transient(code()) or retry_elsewhere().
  bool transient() const { return !this->ok() && (rpc::transient(code_) || retry_elsewhere_); }

 private:
  grpc::StatusCode code_ = grpc::StatusCode::OK;
  bool retry_elsewhere_ = false;
  std::optional<std::chrono::milliseconds> retry_after_;
};

// Whether a finished call's trailing metadata carries kRetryElsewhereKey.
bool retry_elsewhere(const grpc::ClientContext& context);
// A finished call's kRetryAfterMsKey, when it carries a valid one (0 to one hour).
std::optional<std::chrono::milliseconds> retry_after(const grpc::ClientContext& context);

// zlib's CRC-32 of `bytes`, any length (crc32_z: no 4 GiB wrap).
std::uint32_t blob_crc32(std::string_view bytes);

// The options every client binary shares (--token-file, --tls, --tls-ca,
// --tls-server-name; see security_flags.h), as given on its command line.
struct ClientSecurityFlags {
  std::string token_file;  // empty: CHESSRL_TOKEN, if set
  bool tls = false;
  std::string tls_ca_file;  // implies tls
  std::string tls_server_name;
};
// Reads the token and the CA file; errors name the option and file.
Result<ClientSecurity> load_client_security(const ClientSecurityFlags& flags);

// TLS or plain credentials, as `options` says.
std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const ClientOptions& options);
// A channel with `options`' message limits and credentials, plus `args`.
std::shared_ptr<grpc::Channel> make_channel(const ClientOptions& options,
                                            grpc::ChannelArguments args = {});
// A channel like make_channel's that shares no connection with any other
// channel of this process (its own subchannel pool and an argument no other
// channel has): it connects anew, so a Service in front of several replicas
// picks one afresh.
std::shared_ptr<grpc::Channel> make_fresh_channel(const ClientOptions& options);

// The calls of one client in flight, for cancel().
class CallsInFlight;

class ReplayClient {
 public:
  explicit ReplayClient(ClientOptions options);
  ReplayClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel);
  ~ReplayClient();

  RpcResult<v1::PushGamesReply> push_games(const v1::PushGamesRequest& request);
  RpcResult<v1::SampleReply> sample(std::uint32_t count);
  RpcResult<v1::StatsReply> stats();

  // For good: the calls in flight end at once with CANCELLED, and every later
  // call fails so without going out (a stopping process gives up on them
  // instead of waiting up to the deadline on a server that is gone).
  void cancel();

 private:
  ClientOptions options_;
  std::unique_ptr<v1::ReplayService::Stub> stub_;
  std::unique_ptr<CallsInFlight> calls_;
};

class ModelRegistryClient {
 public:
  explicit ModelRegistryClient(ClientOptions options);
  ModelRegistryClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel);

  // Streams `blob` in chunks of `chunk_bytes`; `info` needs version (and
  // usually step and metadata); size and crc32 are filled in here.
  RpcResult<v1::ModelInfo> publish(v1::ModelInfo info, std::string_view blob,
                                   std::size_t chunk_bytes = 1 << 20);
  // version 0: the latest; best: the `best` version.
  // `deadline`, when given, replaces the options' for this call (a download
  // may wait its turn in the server's queue far longer than a quick call takes).
  RpcResult<std::pair<v1::ModelInfo, std::string>> get(
      std::uint64_t version, bool best = false,
      std::optional<std::chrono::milliseconds> deadline = std::nullopt);
  // nullopt when nothing is published / best was never set.
  RpcResult<std::optional<v1::ModelInfo>> latest();
  RpcResult<std::optional<v1::ModelInfo>> best();
  RpcResult<v1::ModelInfo> set_best(std::uint64_t version);
  // Holds `version` back from pruning for `ttl` from now (renews a lease
  // already held); a ttl of 0 ends the lease. NOT_FOUND: not published.
  RpcResult<v1::ModelInfo> lease(std::uint64_t version, std::chrono::seconds ttl);

  // What a watch tells its caller besides the versions, and how it waits.
  struct WatchHooks {
    // Each stream as it is opened (the first and every later one).
    std::function<void()> on_open;
    // Each stream that ended other than by `stop` or on_model's false: its
    // status, and whether the server asked for another replica.
    std::function<void(const grpc::Status& status, bool retry_elsewhere)> on_end;
    // The waits between streams; nullopt: options.retry_backoff(). Reset by a
    // stream that yielded a version or stayed open `held_after`.
    std::optional<BackoffPolicy> backoff;
    std::uint64_t seed = 0;  // the backoff's jitter; 0: random
    std::chrono::milliseconds held_after{10000};
  };

  // Calls `on_model` for each version WatchModels yields (first the latest,
  // or every version after `after_version` when it is not 0), until
  // `on_model` returns false or `stop` is requested. A stream that ends (the
  // server gone, refused, a capacity refusal) is opened again after a jittered
  // backoff on a fresh channel (make_fresh_channel: not the old connection, so
  // a Service may send it to another replica), asking for the versions after
  // the newest seen. `stop` ends the stream and any wait at once: an idle
  // watch wakes no thread of its own.
  void watch(std::uint64_t after_version, const std::function<bool(const v1::ModelInfo&)>& on_model,
             std::stop_token stop, const WatchHooks& hooks);
  // The same, stopped by a flag looked at every `poll` (one thread per call
  // does that; prefer the stop_token form where many watches run).
  void watch(std::uint64_t after_version, const std::function<bool(const v1::ModelInfo&)>& on_model,
             const std::atomic<bool>& stop,
             std::chrono::milliseconds poll = std::chrono::milliseconds(500));

 private:
  ClientOptions options_;
  std::unique_ptr<v1::ModelRegistry::Stub> stub_;
};

// "PushGames: UNAVAILABLE: <server message>".
std::string describe(const char* call, const grpc::Status& status);

}  // namespace chessrl::rpc
