// chessrl-replay's entry point (services/replay/main.cpp calls it): the options, then the run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/core/error.h"
#include "chessrl/core/files.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/http_server.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay/redis_store.h"
#include "chessrl/replay/sharded_store.h"
#include "chessrl/replay_service/main.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/runtime/options.h"
#include "chessrl/runtime/service_process.h"
#include "chessrl/rpc/security_flags.h"
#include "model_http.h"

namespace chessrl::replay_service {

namespace {

// The status listeners (--metrics-listen, --probe-listen) are libs/runtime's group.
struct Settings : chessrl::runtime::StatusListenOptions {
  Settings() { metrics_listen = "0.0.0.0:9102"; }

  std::string store = "redis";
  chessrl::replay::RedisOptions redis;
  chessrl::replay_service::ReplayServerOptions server;
  std::string models_http_listen = "off";  // the model URLs: --models-http-listen
  bool models_http_public = false;
  int dedup_ttl_hours = 7 * 24;
  int ack_timeout_ms = 1000;
  int shutdown_grace_s = 10;
  chessrl::rpc::ServerSecurityFlags security;
  std::string redis_password_file;
  std::vector<std::string> quarantine;
  std::vector<std::string> redis_shards;  // host:port each; empty: --redis-host:--redis-port
};

constexpr const char* kPasswordEnv = "CHESSRL_REDIS_PASSWORD";

// The Redis password never comes from a flag or the config file, which ps or a
// ConfigMap would show: only from --redis-password-file or CHESSRL_REDIS_PASSWORD.
// Added after config::finish, so that CHESSRL_REDIS_PASSWORD is not this
// option's variable.
void refuse_password_option(CLI::App& app) {
  app.add_option_function<std::string>(
         "--redis-password",
         [](const std::string&) {
           throw CLI::ValidationError(
               "--redis-password",
               "is no longer accepted, as a flag or a config key: a password there is visible to "
               "others (every user's ps, the config file). Give --redis-password-file PATH (a "
               "file only you can read) or set CHESSRL_REDIS_PASSWORD");
         })
      ->group("");  // hidden from --help
}

// Fills s.redis.password from --redis-password-file or CHESSRL_REDIS_PASSWORD;
// an error naming the option and the file when it cannot.
void read_password(Settings& s) {
  const char* env = std::getenv(kPasswordEnv);
  const bool from_env = env != nullptr && *env != '\0';
  if (!s.redis_password_file.empty()) {
    if (from_env) {
      throw chessrl::Error(std::string("both --redis-password-file and ") + kPasswordEnv +
                           " are set: give the Redis password one way");
    }
    auto password = chessrl::read_secret_file(s.redis_password_file);
    if (!password.ok()) throw chessrl::Error("--redis-password-file " + password.error());
    s.redis.password = std::move(password).value();
  } else if (from_env) {
    s.redis.password = env;
  }
}

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--listen", s.server.listen, "gRPC address (host:port)")->capture_default_str();
  s.chessrl::runtime::StatusListenOptions::add_to(app);
  app.add_option("--models-http-listen", s.models_http_listen,
                 "address of the model URLs over plain HTTP, for an HTTP cache or CDN in front: "
                 "GET /models/v<N> (immutable, ETag, ranges) and /models/latest (a redirect); "
                 "tokens checked as for GetModel; 32 responses written at once; \"off\": none")
      ->capture_default_str();
  app.add_flag("--models-http-public", s.models_http_public,
               "with tokens on, answer the model URLs with Cache-Control: public, so a shared "
               "cache may store them: give it only when the cache in front authenticates its "
               "own clients or keys its copies on the token (without it: private)");
  app.add_option("--store", s.store, "where games live: redis, or memory (lost on exit)")
      ->check(CLI::IsMember({"redis", "memory"}))
      ->capture_default_str();
  app.add_option("--redis-host", s.redis.host, "Redis host")->capture_default_str();
  app.add_option("--redis-port", s.redis.port, "Redis port")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--redis-shards", s.redis_shards,
                 "independent Redis primaries the games are spread over (host:port, comma-"
                 "separated, the same password): a game goes whole to one by a hash of its id, "
                 "--window-positions is split over them, Sample draws from one by its share of "
                 "the window, and the first also holds the model registry; replaces "
                 "--redis-host/--redis-port")
      ->delimiter(',');
  app.add_option("--redis-password-file", s.redis_password_file,
                 "file holding the Redis password (AUTH when set; read at start-up, trailing "
                 "newline stripped); or the password itself in CHESSRL_REDIS_PASSWORD");
  app.add_option("--redis-connections", s.redis.connections, "Redis connection pool size")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--key-prefix", s.redis.key_prefix, "prefix of every Redis key")
      ->capture_default_str();
  app.add_option("--window-positions", s.redis.window_positions,
                 "training positions kept (oldest games are evicted beyond it)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--dedup-ttl-hours", s.dedup_ttl_hours,
                 "how long an evicted game's id still counts as a duplicate")
      ->check(CLI::Range(0, 24 * 365))
      ->capture_default_str();
  app.add_option("--max-sample", s.server.replay.max_sample,
                 "most positions per Sample call (Redis answers it in Lua calls of at most 2048)")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str();
  app.add_option("--max-push-games", s.server.replay.max_push_games,
                 "most games per PushGames call (one Redis transaction)")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  app.add_option("--max-push-positions", s.server.replay.max_push_positions,
                 "most training positions per PushGames call of several games (one game is "
                 "bounded by --max-plies)")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  app.add_option("--max-push-calls", s.server.replay.max_push_calls,
                 "PushGames calls handled at once; the next is answered UNAVAILABLE at once "
                 "(self-play keeps its games and retries with backoff); 0: no cap")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--max-push-bytes", s.server.replay.max_push_bytes,
                 "request bytes of the PushGames calls handled at once; a call that does not "
                 "fit is answered UNAVAILABLE at once; at least --max-message-bytes; 0: no cap")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{64} << 30))
      ->capture_default_str();
  app.add_option("--quarantine", s.quarantine,
                 "producers whose pushes are refused (PERMISSION_DENIED), by exact name (a "
                 "Game's producer, self-play's --replica); repeatable or comma-separated")
      ->delimiter(',');
  app.add_option("--producer-rate", s.server.replay.producers.rate,
                 "training positions a second one producer may push, sustained (a game "
                 "without positions counts as one; 10 s of it at once); 0: no limit")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  app.add_option("--max-producers", s.server.replay.producers.max_tracked,
                 "producers with their own metrics series (the first names seen) and rate "
                 "buckets; the others share the producer label and bucket \"(other)\"")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))
      ->capture_default_str();
  app.add_option("--producer-idle-expiry", s.server.replay.producers.idle_expiry_seconds,
                 "seconds after a producer's last push when its metrics series are removed and "
                 "its --max-producers place goes to the next new name (a rollout's new pods); "
                 "0: never")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_option("--max-message-bytes", s.server.max_message_bytes,
                 "largest gRPC message received (a PushGames): gRPC reads a call's whole "
                 "message before the service sees it")
      ->check(CLI::Range(5 << 20, 1 << 30))
      ->capture_default_str();
  app.add_option("--max-game-bytes", s.server.replay.limits.max_game_bytes,
                 "largest accepted game (serialized bytes)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{64} << 20))
      ->capture_default_str();
  app.add_option("--max-plies", s.server.replay.limits.max_plies, "longest accepted game (plies)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))
      ->capture_default_str();
  app.add_option("--max-model-bytes", s.server.models.max_model_bytes,
                 "largest accepted model checkpoint (replay holds a model twice while it is "
                 "published: keep it well under the memory limit)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{8} << 30))
      ->capture_default_str();
  app.add_option("--model-cache-bytes", s.server.models.model_cache_bytes,
                 "bytes of recent model versions kept in memory, so each version is read from "
                 "Redis once however many pods download it (a version larger than this is "
                 "streamed without being kept; 0: none kept, downloads at once of one version "
                 "still share one read)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{64} << 30))
      ->capture_default_str();
  app.add_option("--max-model-downloads", s.server.models.max_model_downloads,
                 "GetModel streams sending at once (each holds about two 1 MiB chunks); the "
                 "next wait in order for one to end, holding no thread; one whose deadline would "
                 "pass before its turn is answered UNAVAILABLE with the trailer "
                 "chessrl-retry-after-ms shortly before it")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("--max-watchers", s.server.models.max_watchers,
                 "WatchModels streams open at once (one per self-play pod and evaluator; a few "
                 "KB each, no thread); the next is told to try another replica")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--watch-poll-ms", s.server.models.watch_poll_ms,
                 "how often this process asks Redis for versions other replay processes took "
                 "(one call for all its watchers; its own publishes are seen at once)")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--keep-models", s.server.models.keep_models,
                 "model versions kept: after each publish all but the newest this many, the "
                 "best and the leased (LeaseModel) are deleted (0: keep every version)")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--ack-replicas", s.redis.ack_replicas,
                 "acknowledge a push, publish or SetBest only once this many Redis replicas "
                 "have it (WAIT); fewer within --ack-timeout-ms fails the call with UNAVAILABLE "
                 "(written, not acknowledged: the client's retry finds it a duplicate)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--ack-timeout-ms", s.ack_timeout_ms,
                 "how long an acknowledging write waits for --ack-replicas (and --ack-fsync's "
                 "WAITAOF)")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_flag("--ack-fsync", s.redis.ack_fsync,
               "acknowledge only once Redis has fsynced the write to its append-only file: "
               "needs appendfsync always, or Redis 7.2+ (WAITAOF); start-up is refused, naming "
               "the version, where neither holds");
  app.add_flag("--allow-unpersisted-acks", s.redis.allow_unpersisted,
               "serve a Redis that writes no append-only file (appendonly no), whose restart or "
               "failover loses acknowledged games; without it such a Redis is refused");
  chessrl::rpc::add_server_security_options(app, s.security);
  app.add_option("--shutdown-grace", s.shutdown_grace_s,
                 "seconds calls in flight get to finish on SIGTERM")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
}

struct ShardAddress {
  std::string host;
  int port = 0;
  std::string name() const { return host + ":" + std::to_string(port); }
};

// The Redis shards: --redis-shards, or the one at --redis-host:--redis-port.
// An error names the entry that is not host:port, or one given twice.
std::vector<ShardAddress> shard_addresses(const Settings& s) {
  if (s.redis_shards.empty()) return {ShardAddress{s.redis.host, s.redis.port}};
  std::vector<ShardAddress> out;
  for (const std::string& entry : s.redis_shards) {
    const auto colon = entry.rfind(':');
    const std::string port_text = colon == std::string::npos ? "" : entry.substr(colon + 1);
    const bool numeric = !port_text.empty() && port_text.size() <= 5 &&
                         port_text.find_first_not_of("0123456789") == std::string::npos;
    const int port = numeric ? std::stoi(port_text) : 0;
    if (colon == 0 || colon == std::string::npos || !numeric || port < 1 || port > 65535) {
      throw chessrl::runtime::BadOptions("--redis-shards: \"" + entry +
                           "\" is not host:port (with a port 1..65535)");
    }
    ShardAddress address{entry.substr(0, colon), port};
    for (const ShardAddress& seen : out) {
      if (seen.name() == address.name())
        throw chessrl::runtime::BadOptions("--redis-shards: " + address.name() +
                             " is given twice (each shard is a Redis of its own)");
    }
    out.push_back(std::move(address));
  }
  if (s.redis.window_positions < out.size()) {
    throw chessrl::runtime::BadOptions("--window-positions " +
                                       std::to_string(s.redis.window_positions) +
                         " is smaller than the " + std::to_string(out.size()) +
                         " shards of --redis-shards: each shard needs a window");
  }
  return out;
}

// The store over the shards, with chessrl_replay_shard_up{shard} and
// chessrl_replay_shard_positions{shard} set each time it reads their stats
// (the server's monitor reads them every interval).
std::unique_ptr<chessrl::replay::ShardedReplayStore> make_sharded(
    const std::vector<std::unique_ptr<chessrl::replay::RedisReplayStore>>& redis,
    const std::vector<ShardAddress>& shards, chessrl::metrics::Registry& registry) {
  std::vector<chessrl::replay::ReplayStore*> stores;
  std::vector<std::string> names;
  std::vector<chessrl::metrics::Gauge*> up, positions;
  for (std::size_t i = 0; i < redis.size(); ++i) {
    stores.push_back(redis[i].get());
    names.push_back(shards[i].name());
    const chessrl::metrics::Labels shard{{"shard", std::to_string(i)}};
    up.push_back(&registry.gauge("chessrl_replay_shard_up",
                                 "1 when the replay shard (a Redis of --redis-shards) answered "
                                 "the last stats read, else 0",
                                 shard));
    positions.push_back(&registry.gauge("chessrl_replay_shard_positions",
                                        "Training positions in the shard's window", shard));
  }
  chessrl::replay::ShardedStoreOptions options;
  options.on_shard_stats = [up, positions](std::size_t shard,
                                           const Result<chessrl::replay::WindowStats>& stats) {
    up[shard]->set(stats.ok() ? 1.0 : 0.0);
    if (stats.ok()) positions[shard]->set(static_cast<double>(stats->positions));
  };
  std::fprintf(stderr, "chessrl-replay: %zu Redis shards (the model registry on %s)\n",
               shards.size(), shards.front().name().c_str());
  return std::make_unique<chessrl::replay::ShardedReplayStore>(stores, names, std::move(options));
}

// Options that cannot be served with (a combination, an empty name) throw
// runtime::BadOptions (exit status 2); a Redis that is unfit returns 1.
int serve(Settings& s, chessrl::runtime::ServiceProcess& process) {
  if (s.store != "redis" && (s.redis.ack_replicas > 0 || s.redis.ack_fsync)) {
    throw chessrl::runtime::BadOptions("--ack-replicas and --ack-fsync need --store redis (--store " + s.store +
                         " keeps everything in this process, lost on exit)");
  }
  const bool models_http = !s.models_http_listen.empty() && s.models_http_listen != "off";
  if (s.models_http_public && !models_http)
    throw chessrl::runtime::BadOptions(
        "--models-http-public needs --models-http-listen (the model URLs are off)");
  if (s.store != "redis" && !s.redis_shards.empty()) {
    throw chessrl::runtime::BadOptions("--redis-shards needs --store redis (--store " + s.store +
                         " keeps everything in this process)");
  }
  auto security = chessrl::rpc::load_server_security(s.security);
  if (!security.ok()) throw chessrl::runtime::BadOptions(security.error());
  s.server.auth = std::move(security->auth);
  s.server.tls_cert_pem = std::move(security->tls_cert_pem);
  s.server.tls_key_pem = std::move(security->tls_key_pem);
  if (s.server.auth.enabled()) {
    std::fprintf(stderr, "chessrl-replay: calls need a bearer token (roles with one: %s)\n",
                 s.server.auth.roles().c_str());
  } else {
    std::fprintf(stderr,
                 "chessrl-replay: WARNING: authentication is off (no --auth-dir, no "
                 "CHESSRL_TOKEN_* variable): anyone who reaches %s can push games, publish "
                 "models and set the best version\n",
                 s.server.listen.c_str());
  }

  for (const std::string& name : s.quarantine) {
    if (name.empty()) throw chessrl::runtime::BadOptions("--quarantine: an empty producer name");
    s.server.replay.producers.quarantined.insert(name);
  }
  if (!s.quarantine.empty()) {
    std::string names;
    for (const std::string& name : s.server.replay.producers.quarantined)
      names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "chessrl-replay: quarantined producers (their pushes are refused): %s\n",
                 names.c_str());
  }

  s.redis.dedup_ttl = std::chrono::hours(s.dedup_ttl_hours);
  s.redis.ack_timeout = std::chrono::milliseconds(s.ack_timeout_ms);
  chessrl::metrics::Registry registry;
  std::vector<ShardAddress> shards = shard_addresses(s);
  std::vector<std::unique_ptr<chessrl::replay::RedisReplayStore>> redis;
  std::unique_ptr<chessrl::replay::ShardedReplayStore> sharded;
  std::unique_ptr<chessrl::replay::MemoryReplayStore> memory_games;
  std::unique_ptr<chessrl::replay::MemoryModelStore> memory_models;
  chessrl::replay::ReplayStore* games = nullptr;
  chessrl::replay::ModelStore* models = nullptr;
  if (s.store == "redis") {
    const std::vector<std::uint64_t> windows =
        chessrl::replay::split_window(s.redis.window_positions, shards.size());
    for (std::size_t i = 0; i < shards.size(); ++i) {
      chessrl::replay::RedisOptions options = s.redis;
      options.host = shards[i].host;
      options.port = shards[i].port;
      options.window_positions = windows[i];
      redis.push_back(std::make_unique<chessrl::replay::RedisReplayStore>(options));
      if (auto ping = redis.back()->ping(); !ping.ok()) {
        const std::string which =
            shards.size() == 1 ? std::string() : "shard " + std::to_string(i) + ": ";
        // Redis is there, but unfit: it may evict the window, does not
        // persist, or cannot give the acknowledgements asked for.
        if (!redis.back()->refused_configuration().empty()) {
          std::fprintf(stderr, "chessrl-replay: %s%s\n", which.c_str(), ping.error().c_str());
          return 1;
        }
        std::fprintf(stderr,
                     "chessrl-replay: %sRedis not reachable yet (%s); serving anyway, calls "
                     "fail with UNAVAILABLE until it is\n",
                     which.c_str(), ping.error().c_str());
      }
    }
    models = redis.front().get();  // the registry: on the first shard
    if (redis.size() == 1) {
      games = redis.front().get();
    } else {
      sharded = make_sharded(redis, shards, registry);
      games = sharded.get();
    }
  } else {
    memory_games = std::make_unique<chessrl::replay::MemoryReplayStore>(s.redis.window_positions);
    memory_models = std::make_unique<chessrl::replay::MemoryModelStore>();
    games = memory_games.get();
    models = memory_models.get();
  }

  chessrl::metrics::add_build_info(registry);
  chessrl::replay_service::ReplayServer server(*games, *models, registry, s.server);
  std::unique_ptr<chessrl::metrics::Exposer> exposer;
  if (s.metrics_on()) {
    exposer = std::make_unique<chessrl::metrics::Exposer>(
        registry, s.metrics_listen,
        [&server] { return server.serving() ? "" : "store unreachable"; }, s.probe_listen);
    if (exposer->probe_port() != 0)
      std::fprintf(stderr, "chessrl-replay: probes on port %d\n", exposer->probe_port());
  }
  // The model URLs: the registry's cached bytes over HTTP, on threads of their own.
  std::unique_ptr<ModelHttp> model_http;
  std::unique_ptr<chessrl::metrics::HttpServer> model_http_server;
  if (models_http) {
    model_http = std::make_unique<ModelHttp>(
        registry_source(server.registry()), s.server.auth,
        ModelHttpOptions{.public_with_auth = s.models_http_public}, &registry);
    chessrl::metrics::HttpServerOptions http_options;
    http_options.name = "--models-http-listen";
    model_http_server =
        std::make_unique<chessrl::metrics::HttpServer>(s.models_http_listen, http_options);
    model_http->attach(*model_http_server);
    std::fprintf(stderr, "chessrl-replay: model URLs (GET /models/v<N>) on port %d%s\n",
                 model_http_server->port(),
                 s.server.auth.enabled()
                     ? (s.models_http_public ? ", tokens checked, Cache-Control public"
                                             : ", tokens checked, Cache-Control private")
                     : "");
    if (!s.server.tls_cert_pem.empty()) {
      std::fprintf(stderr,
                   "chessrl-replay: WARNING: the model URLs are plain HTTP (no TLS): tokens "
                   "sent to %s cross the network in clear\n",
                   s.models_http_listen.c_str());
    }
  }
  std::fprintf(stderr,
               "chessrl-replay: serving gRPC%s on port %d (store %s, window %llu positions), "
               "metrics %s\n",
               s.server.tls_cert_pem.empty() ? "" : " (TLS)", server.port(),
               (s.store == "redis" && shards.size() > 1
                    ? "redis, " + std::to_string(shards.size()) + " shards"
                    : s.store)
                   .c_str(),
               static_cast<unsigned long long>(s.redis.window_positions),
               exposer ? ("on port " + std::to_string(exposer->port())).c_str() : "off");

  chessrl::runtime::ListeningPorts ports = {{"grpc", server.port()}};
  if (exposer) {
    ports.emplace_back("metrics", exposer->port());
    if (exposer->probe_port() != 0) ports.emplace_back("probe", exposer->probe_port());
  }
  if (model_http_server) ports.emplace_back("http", model_http_server->port());
  process.ready(ports);

  process.wait_for_stop();  // StopSignals logs "chessrl-replay: SIGTERM: finishing calls ..."
  server.shutdown(std::chrono::seconds(s.shutdown_grace_s));
  std::fprintf(stderr, "chessrl-replay: stopped\n");
  return 0;
}

}  // namespace

int replay_main(int argc, char** argv) {
  CLI::App app{
      "chessrl-replay: validated self-play games in a Redis window, uniform "
      "sampling, and the model registry (gRPC)"};
  Settings settings;
  chessrl::runtime::ServiceProcess process("chessrl-replay");
  add_options(app, settings);
  process.add_options(app);
  chessrl::config::finish(app);
  refuse_password_option(app);
  if (auto status = process.parse(app, argc, argv)) return *status;
  // Before any thread starts (parsing and the password file start none): the
  // gRPC and Redis threads inherit the blocked signals.
  process.install_stop_signals("finishing calls in flight (up to " +
                               std::to_string(settings.shutdown_grace_s) + " s)");
  return process.run([&] {
    read_password(settings);
    return serve(settings, process);
  });
}

}  // namespace chessrl::replay_service
