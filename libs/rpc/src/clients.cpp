#include "chessrl/rpc/clients.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "chessrl/rpc/auth.h"

namespace chessrl::rpc {
namespace {

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN_CODE";
  }
}


// Sleeps `wait`, or less when `stop` is requested first (no polling: the
// stop request wakes it).
void sleep_unless_stopped(std::chrono::milliseconds wait, const std::stop_token& stop) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  cv.wait_for(lock, stop, wait, [] { return false; });
}

// What a failed call's trailers said about asking again.
struct RetryHints {
  bool elsewhere = false;                          // kRetryElsewhereKey
  std::optional<std::chrono::milliseconds> after;  // kRetryAfterMsKey
};

// The failure of `call`: "Call: CODE: server message", the code, and what the
// server said about asking again.
RpcFailure failed(const char* call, const grpc::Status& status, const RetryHints& hints = {}) {
  return RpcFailure{describe(call, status), status.error_code(), hints.elsewhere, hints.after};
}

}  // namespace

class CallsInFlight {
 public:
  // False once cancelled: the call must not go out.
  bool add(grpc::ClientContext* context) {
    std::lock_guard lock(mu_);
    if (cancelled_) return false;
    live_.insert(context);
    return true;
  }
  void remove(grpc::ClientContext* context) {
    std::lock_guard lock(mu_);
    live_.erase(context);
  }
  void cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    for (auto* context : live_) context->TryCancel();
  }

 private:
  std::mutex mu_;
  bool cancelled_ = false;
  std::set<grpc::ClientContext*> live_;
};

namespace {

// Runs `call(context)` until it succeeds, fails for good, or runs out of tries;
// with `calls`, each attempt is registered there while it runs (cancel()).
// `hints`, when given, gets what the last answer's trailers said about asking
// again. A retry waits as long as the server's kRetryAfterMsKey says, when it
// says, rather than the backoff.
template <class Call>
grpc::Status with_retries(const ClientOptions& options, Call&& call,
                          CallsInFlight* calls = nullptr, RetryHints* hints = nullptr) {
  std::optional<Backoff> backoff;  // made at the first retry only
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options.deadline);
    if (!options.security.token.empty()) {
      context.AddMetadata(kAuthorizationKey, bearer(options.security.token));
    }
    if (calls && !calls->add(&context))
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client was cancelled (stopping)");
    grpc::Status status = call(context);
    if (calls) calls->remove(&context);
    if (status.ok() || attempt >= options.attempts || !transient(status.error_code())) {
      if (hints && !status.ok()) *hints = {retry_elsewhere(context), retry_after(context)};
      return status;
    }
    if (!backoff) backoff.emplace(options.retry_backoff());
    const auto wait = *backoff->next();
    std::this_thread::sleep_for(retry_after(context).value_or(wait));
  }
}

}  // namespace

bool retry_elsewhere(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kRetryElsewhereKey);
  return found != trailers.end() && found->second == "1";
}

std::optional<std::chrono::milliseconds> retry_after(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kRetryAfterMsKey);
  if (found == trailers.end()) return std::nullopt;
  const std::string text(found->second.data(), found->second.size());
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const std::int64_t ms = std::stoll(text);
  if (ms > 3'600'000) return std::nullopt;  // an hour at most: anything longer is not a hint
  return std::chrono::milliseconds(ms);
}

bool transient(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::uint32_t blob_crc32(std::string_view bytes) {
  return static_cast<std::uint32_t>(
      crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

std::string describe(const char* call, const grpc::Status& status) {
  return std::string(call) + ": " + code_name(status.error_code()) + ": " + status.error_message();
}

Result<ClientSecurity> load_client_security(const ClientSecurityFlags& flags) {
  ClientSecurity out;
  auto token = client_token(flags.token_file);
  if (!token.ok()) return fail(token.error());
  out.token = std::move(token).value();
  out.tls = flags.tls || !flags.tls_ca_file.empty();
  out.tls_server_name = flags.tls_server_name;
  if (!flags.tls_ca_file.empty()) {
    std::ifstream in(flags.tls_ca_file, std::ios::binary);
    if (!in) return fail("--tls-ca " + flags.tls_ca_file + ": cannot read it");
    out.tls_root_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (out.tls_root_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return fail("--tls-ca " + flags.tls_ca_file + ": holds no PEM certificate");
    }
  }
  if (!out.tls && !flags.tls_server_name.empty()) {
    return fail("--tls-server-name needs --tls or --tls-ca");
  }
  return out;
}

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const ClientOptions& options) {
  if (!options.security.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.security.tls_root_pem;
  return grpc::SslCredentials(ssl);
}

namespace {

// The thread that reads the channels' sockets while no call does. gRPC
// (1.51's poller) moves a connection attempt on only while some thread polls
// for it: a call in flight, or its backup poller, every 5 s. A caller that
// fails fast and pauses between calls (the self-play pusher) leaves the
// attempts alone; each runs into its connect deadline (about the reconnect
// backoff, 2 s) although the server is up ("tcp handshaker shutdown"): the
// self-play pusher got in a median 15 s after the replay service was back.
// Polling any completion queue polls every socket of the process (the epoll1
// engine has one epoll set), so one thread serves every channel: it waits on
// a queue of its own in slices while at least one polled channel lives, and
// ends within a slice of the last one's end. (A thread per channel, as before,
// cost 1,000 idle model followers about 0.8 of a core in wakeups.)
class SharedPoller {
 public:
  static SharedPoller& instance() {
    static SharedPoller* poller = new SharedPoller;  // never destroyed: no exit-order problems
    return *poller;
  }
  void acquire(std::chrono::milliseconds slice) {
    std::lock_guard lock(mutex_);
    ++users_;
    slice_ = users_ == 1 ? slice : std::min(slice_, slice);
    if (running_) return;
    if (thread_.joinable()) thread_.join();  // it ended its loop: nothing left to wait for
    running_ = true;
    thread_ = std::thread([this] { loop(); });
  }
  void release() {
    std::lock_guard lock(mutex_);
    --users_;
  }

 private:
  void loop() {
    grpc::CompletionQueue queue;
    for (;;) {
      std::chrono::milliseconds slice;
      {
        std::lock_guard lock(mutex_);
        if (users_ == 0) {
          running_ = false;
          break;
        }
        slice = slice_;
      }
      void* tag = nullptr;
      bool ok = false;
      (void)queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + slice);
    }
    queue.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue.Next(&tag, &ok)) {
    }
  }

  std::mutex mutex_;
  int users_ = 0;
  std::chrono::milliseconds slice_{100};
  bool running_ = false;
  std::thread thread_;
};

// A channel that keeps the shared poller running while it lives.
struct PolledChannel {
  std::shared_ptr<grpc::Channel> channel;
  ~PolledChannel() { SharedPoller::instance().release(); }
};

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const ClientOptions& options,
                                            grpc::ChannelArguments args) {
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.reconnect_backoff_min.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.reconnect_backoff_min.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.reconnect_backoff_max.count()));
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS,
              static_cast<int>(options.dns_min_reresolution.count()));
  if (options.keepalive_time.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive_time.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                static_cast<int>(options.keepalive_timeout.count()));
    // Keep pinging through a long quiet call (a model watch): gRPC's default
    // stops after two pings without data.
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.security.tls && !options.security.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.security.tls_server_name);
  }
  auto channel = grpc::CreateCustomChannel(options.address, channel_credentials(options), args);
  if (options.poll_interval.count() <= 0) return channel;
  SharedPoller::instance().acquire(options.poll_interval);
  auto polled = std::make_shared<PolledChannel>();
  polled->channel = std::move(channel);
  // Shares ownership with `polled`: the last copy of the channel lets the poller go.
  return std::shared_ptr<grpc::Channel>(polled, polled->channel.get());
}

std::shared_ptr<grpc::Channel> make_fresh_channel(const ClientOptions& options) {
  static std::atomic<int> made{0};
  grpc::ChannelArguments args;
  // Channels with equal arguments may share a subchannel (a connection) in
  // gRPC's global pool: a pool of its own and an argument no other channel
  // has keep this one off every connection made before.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("chessrl.fresh_channel", made.fetch_add(1, std::memory_order_relaxed));
  return make_channel(options, std::move(args));
}

// ---------------------------------------------------------------- replay

ReplayClient::ReplayClient(ClientOptions options) : ReplayClient(options, make_channel(options)) {}

ReplayClient::ReplayClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      stub_(v1::ReplayService::NewStub(channel)),
      calls_(std::make_unique<CallsInFlight>()) {}

ReplayClient::~ReplayClient() = default;

void ReplayClient::cancel() { calls_->cancel(); }

RpcResult<v1::PushGamesReply> ReplayClient::push_games(const v1::PushGamesRequest& request) {
  v1::PushGamesReply reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    reply.Clear();
    return stub_->PushGames(&context, request, &reply);
  }, calls_.get());
  if (!status.ok()) return failed("PushGames", status);
  return reply;
}

RpcResult<v1::SampleReply> ReplayClient::sample(std::uint32_t count) {
  v1::SampleRequest request;
  request.set_count(count);
  v1::SampleReply reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    reply.Clear();
    return stub_->Sample(&context, request, &reply);
  }, calls_.get());
  if (!status.ok()) return failed("Sample", status);
  return reply;
}

RpcResult<v1::StatsReply> ReplayClient::stats() {
  v1::StatsReply reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    return stub_->Stats(&context, v1::StatsRequest(), &reply);
  }, calls_.get());
  if (!status.ok()) return failed("Stats", status);
  return reply;
}

// ---------------------------------------------------------------- models

ModelRegistryClient::ModelRegistryClient(ClientOptions options)
    : ModelRegistryClient(options, make_channel(options)) {}

ModelRegistryClient::ModelRegistryClient(ClientOptions options,
                                         std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)), stub_(v1::ModelRegistry::NewStub(channel)) {}

RpcResult<v1::ModelInfo> ModelRegistryClient::publish(v1::ModelInfo info, std::string_view blob,
                                                   std::size_t chunk_bytes) {
  if (chunk_bytes == 0) chunk_bytes = 1 << 20;
  info.set_size_bytes(blob.size());
  info.set_crc32(blob_crc32(blob));
  v1::ModelInfo reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    auto writer = stub_->PublishModel(&context, &reply);
    std::size_t offset = 0;
    v1::ModelChunk chunk;
    *chunk.mutable_info() = info;
    do {
      const std::size_t n = std::min(chunk_bytes, blob.size() - offset);
      chunk.set_data(std::string(blob.substr(offset, n)));
      offset += n;
      if (!writer->Write(chunk)) break;  // the server ended the call: Finish says why
      chunk.clear_info();
    } while (offset < blob.size());
    writer->WritesDone();
    return writer->Finish();
  });
  if (!status.ok()) return failed("PublishModel", status);
  return reply;
}

RpcResult<std::pair<v1::ModelInfo, std::string>> ModelRegistryClient::get(
    std::uint64_t version, bool best, std::optional<std::chrono::milliseconds> deadline) {
  ClientOptions options = options_;
  if (deadline) options.deadline = *deadline;
  v1::GetModelRequest request;
  request.set_version(version);
  request.set_best(best);
  std::pair<v1::ModelInfo, std::string> out;
  RetryHints hints;
  auto status = with_retries(options, [&](grpc::ClientContext& context) {
    out = {};
    auto reader = stub_->GetModel(&context, request);
    v1::ModelChunk chunk;
    while (reader->Read(&chunk)) {
      if (chunk.has_info()) out.first = chunk.info();
      // Refused from the size the first chunk names, before the rest arrives;
      // and a server sending more than it named is cut off.
      const std::uint64_t named = out.first.size_bytes();
      std::string too_big;
      if (named > options_.max_model_bytes) {
        too_big = "version " + std::to_string(out.first.version()) + " is " +
                  std::to_string(named) + " bytes; this client takes at most " +
                  std::to_string(options_.max_model_bytes);
      } else if (out.second.size() + chunk.data().size() > named) {
        too_big = "the server sent more than the " + std::to_string(named) + " bytes it named";
      }
      if (!too_big.empty()) {
        context.TryCancel();
        reader->Finish();
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, too_big);
      }
      out.second += chunk.data();
    }
    return reader->Finish();
  }, nullptr, &hints);
  if (!status.ok()) return failed("GetModel", status, hints);
  if (out.second.size() != out.first.size_bytes()) {
    return RpcFailure{"GetModel: received " + std::to_string(out.second.size()) + " bytes of " +
                          std::to_string(out.first.size_bytes()),
                      grpc::StatusCode::DATA_LOSS};
  }
  if (blob_crc32(out.second) != out.first.crc32()) {
    return RpcFailure{"GetModel: crc32 mismatch (the data was damaged)",
                      grpc::StatusCode::DATA_LOSS};
  }
  return out;
}

namespace {

template <class Call>
RpcResult<std::optional<v1::ModelInfo>> optional_info(const ClientOptions& options,
                                                      const char* name, Call&& call) {
  v1::ModelInfo reply;
  RetryHints hints;
  auto status = with_retries(
      options, [&](grpc::ClientContext& context) { return call(context, reply); }, nullptr,
      &hints);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<v1::ModelInfo>();
  if (!status.ok()) return failed(name, status, hints);
  return std::optional<v1::ModelInfo>(reply);
}

}  // namespace

RpcResult<std::optional<v1::ModelInfo>> ModelRegistryClient::latest() {
  return optional_info(options_, "LatestModel", [&](grpc::ClientContext& c, v1::ModelInfo& r) {
    return stub_->LatestModel(&c, v1::LatestModelRequest(), &r);
  });
}

RpcResult<std::optional<v1::ModelInfo>> ModelRegistryClient::best() {
  return optional_info(options_, "BestModel", [&](grpc::ClientContext& c, v1::ModelInfo& r) {
    return stub_->BestModel(&c, v1::BestModelRequest(), &r);
  });
}

RpcResult<v1::ModelInfo> ModelRegistryClient::set_best(std::uint64_t version) {
  v1::SetBestRequest request;
  request.set_version(version);
  v1::ModelInfo reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    return stub_->SetBest(&context, request, &reply);
  });
  if (!status.ok()) return failed("SetBest", status);
  return reply;
}

RpcResult<v1::ModelInfo> ModelRegistryClient::lease(std::uint64_t version,
                                                    std::chrono::seconds ttl) {
  v1::LeaseModelRequest request;
  request.set_version(version);
  request.set_seconds(static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(ttl.count(), 0, std::numeric_limits<std::uint32_t>::max())));
  v1::ModelInfo reply;
  auto status = with_retries(options_, [&](grpc::ClientContext& context) {
    return stub_->LeaseModel(&context, request, &reply);
  });
  if (!status.ok()) return failed("LeaseModel", status);
  return reply;
}

void ModelRegistryClient::watch(std::uint64_t after_version,
                                const std::function<bool(const v1::ModelInfo&)>& on_model,
                                std::stop_token stop, const WatchHooks& hooks) {
  using Clock = std::chrono::steady_clock;
  Backoff backoff(hooks.backoff.value_or(options_.retry_backoff()),
                  hooks.seed != 0 ? hooks.seed : random_backoff_seed());
  std::uint64_t seen = after_version;
  // The first stream goes on the client's channel; each later one on a fresh one.
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ModelRegistry::Stub> fresh_stub;
  v1::ModelRegistry::Stub* stub = stub_.get();
  while (!stop.stop_requested()) {
    grpc::ClientContext context;
    if (!options_.security.token.empty()) {
      context.AddMetadata(kAuthorizationKey, bearer(options_.security.token));
    }
    v1::WatchModelsRequest request;
    request.set_after_version(seen);
    bool held = false;
    bool keep_going = true;
    grpc::Status status;
    {
      // Read() blocks until the next version: a stop request cancels the
      // stream from the requesting thread (at once if already requested).
      std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
      if (hooks.on_open) hooks.on_open();
      const auto opened = Clock::now();
      auto reader = stub->WatchModels(&context, request);
      v1::ModelInfo info;
      while (keep_going && reader->Read(&info)) {
        held = true;
        seen = std::max(seen, info.version());
        keep_going = on_model(info);
      }
      if (!keep_going) context.TryCancel();
      status = reader->Finish();
      held = held || Clock::now() - opened >= hooks.held_after;
    }
    if (!keep_going || stop.stop_requested()) return;
    const bool elsewhere = retry_elsewhere(context);
    if (hooks.on_end) hooks.on_end(status, elsewhere);
    if (held) backoff.reset();
    sleep_unless_stopped(backoff.next().value_or(options_.backoff_max), stop);
    if (stop.stop_requested()) return;
    // Not the old connection: the server it reached is gone, full or broken.
    fresh_stub.reset();
    channel = make_fresh_channel(options_);
    fresh_stub = v1::ModelRegistry::NewStub(channel);
    stub = fresh_stub.get();
  }
}

void ModelRegistryClient::watch(std::uint64_t after_version,
                                const std::function<bool(const v1::ModelInfo&)>& on_model,
                                const std::atomic<bool>& stop, std::chrono::milliseconds poll) {
  std::stop_source source;
  std::mutex mutex;
  std::condition_variable cv;
  bool returned = false;
  // Turns the flag into a stop request: looks at it every `poll`.
  std::thread bridge([&] {
    std::unique_lock lock(mutex);
    while (!returned && !stop.load()) cv.wait_for(lock, poll);
    if (!returned) source.request_stop();
  });
  watch(after_version, on_model, source.get_token(), WatchHooks{});
  {
    std::lock_guard lock(mutex);
    returned = true;
  }
  cv.notify_all();
  bridge.join();
}

}  // namespace chessrl::rpc
