#include "redis_connection.h"

#include <pthread.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <utility>

namespace chessrl::replay::redis {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  const auto count = std::max<std::chrono::milliseconds::rep>(ms.count(), 1);
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(count / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((count % 1000) * 1000);
  return tv;
}

// hiredis 0.14 writes with write(2), which raises SIGPIPE when Redis has gone
// away. Blocks SIGPIPE in this thread while hiredis runs and swallows one that
// became pending, so a dead server is an error, not a killed process, without
// changing the signal disposition of the whole program.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{};
        while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
  bool blocked_ = false;
};

bool is_error(const Reply& reply) { return reply && reply->type == REDIS_REPLY_ERROR; }

std::string reply_text(const Reply& reply) {
  return reply && reply->str != nullptr ? std::string(reply->str, reply->len) : std::string();
}

bool is_noscript(const Reply& reply) {
  return is_error(reply) && std::string_view(reply->str, reply->len).starts_with("NOSCRIPT");
}

// Marks `connection` broken with a description of hiredis's error.
void mark_broken(Connection& connection, std::chrono::milliseconds timeout) {
  connection.broken = true;
  const redisContext* context = connection.context;
  std::string what = context->errstr[0] != '\0' ? context->errstr : "connection error";
  if (context->err == REDIS_ERR_IO && (what.find("temporarily unavailable") != std::string::npos ||
                                       what.find("timed out") != std::string::npos)) {
    what = "no reply within " + std::to_string(timeout.count()) + " ms (" + what + ")";
  }
  connection.error = std::move(what);
}

// Sends the commands at `indices` as one pipeline and stores their replies at
// the same indices of `replies`; with `atomic`, inside MULTI/EXEC. Fails with
// the connection marked broken on an I/O error, or (connection intact) when
// the transaction is refused.
Result<void> send(Connection& connection, std::span<const Command> commands,
                  const std::vector<std::size_t>& indices, std::vector<Reply>& replies, bool atomic,
                  std::chrono::milliseconds timeout) {
  static constexpr std::string_view kEvalsha = "EVALSHA";
  static constexpr std::string_view kNoKeys = "0";
  SigpipeGuard sigpipe_guard;
  auto io_failure = [&]() -> Result<void> {
    mark_broken(connection, timeout);
    return fail(connection.error);
  };
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  auto add = [&](std::string_view value) {
    argv.push_back(value.data());
    lengths.push_back(value.size());
  };
  auto append = [&](const Command* command, std::string_view word) {
    argv.clear();
    lengths.clear();
    if (command == nullptr) {
      add(word);  // MULTI or EXEC
    } else {
      if (command->script_index() >= 0) {
        add(kEvalsha);
        add(connection.shas.at(static_cast<std::size_t>(command->script_index())));
        add(kNoKeys);
      }
      for (std::string_view value : command->args()) add(value);
    }
    return redisAppendCommandArgv(connection.context, static_cast<int>(argv.size()), argv.data(),
                                  lengths.data()) == REDIS_OK;
  };
  auto get = [&](Reply& out) {
    void* reply = nullptr;
    if (redisGetReply(connection.context, &reply) != REDIS_OK || reply == nullptr) return false;
    out.reset(static_cast<redisReply*>(reply));
    return true;
  };

  if (atomic && !append(nullptr, "MULTI")) return io_failure();
  for (std::size_t index : indices) {
    if (!append(&commands[index], {})) return io_failure();
  }
  if (atomic && !append(nullptr, "EXEC")) return io_failure();
  if (!atomic) {
    for (std::size_t index : indices) {
      if (!get(replies[index])) return io_failure();
    }
    return {};
  }
  // MULTI's +OK, one +QUEUED (or a refusal) per command, then EXEC's array.
  Reply queued;
  std::string refusal;
  for (std::size_t i = 0; i < indices.size() + 1; ++i) {
    if (!get(queued)) return io_failure();
    if (is_error(queued) && refusal.empty()) refusal = reply_text(queued);
  }
  Reply exec;
  if (!get(exec)) return io_failure();
  if (exec->type != REDIS_REPLY_ARRAY || exec->elements != indices.size()) {
    return fail("transaction refused: " + (refusal.empty() ? reply_text(exec) : refusal));
  }
  for (std::size_t i = 0; i < indices.size(); ++i) {
    replies[indices[i]].reset(exec->element[i]);
    exec->element[i] = nullptr;  // now owned by replies; freeReplyObject skips nulls
  }
  return {};
}

std::vector<std::size_t> all_indices(std::size_t n) {
  std::vector<std::size_t> indices(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = i;
  return indices;
}

// SCRIPT LOAD of every script, recording their SHA1s on the connection.
// Returns what went wrong (I/O errors also mark the connection broken).
Result<void> load_scripts(Connection& connection, const std::vector<std::string_view>& scripts,
                          std::chrono::milliseconds timeout) {
  std::vector<Command> commands;
  for (std::string_view source : scripts) {
    commands.emplace_back("SCRIPT").arg("LOAD").arg(source);
  }
  std::vector<Reply> replies(commands.size());
  if (auto sent = send(connection, commands, all_indices(commands.size()), replies,
                       /*atomic=*/false, timeout);
      !sent.ok()) {
    return sent;
  }
  connection.shas.clear();
  for (const Reply& reply : replies) {
    if (reply->type != REDIS_REPLY_STRING) return fail("SCRIPT LOAD: " + reply_text(reply));
    connection.shas.push_back(reply_text(reply));
  }
  return {};
}

}  // namespace

Connection::~Connection() {
  if (context != nullptr) redisFree(context);
}

ConnectionPool::ConnectionPool(const RedisOptions& options, std::vector<std::string_view> scripts)
    : options_(options),
      scripts_(std::move(scripts)),
      address_(options.host + ":" + std::to_string(options.port)),
      backoff_([&] {
        BackoffPolicy policy;
        policy.initial = options.backoff_min;
        policy.max = options.backoff_max;
        policy.jitter = BackoffPolicy::Jitter::kEqual;
        return policy;
      }()) {}

ConnectionPool::~ConnectionPool() = default;

std::string ConnectionPool::error(std::string_view what) const {
  return "redis " + address_ + ": " + std::string(what);
}

std::string ConnectionPool::refused_eviction_policy() {
  std::lock_guard lock(mu_);
  return refusal_.policy;
}

std::string ConnectionPool::refused_configuration() {
  std::lock_guard lock(mu_);
  return refusal_.reason.empty() ? std::string() : error(refusal_.reason);
}

Result<void> ConnectionPool::check_eviction_policy(Connection& connection,
                                                   std::string& refused_policy) {
  Command config("CONFIG");
  config.arg("GET").arg("maxmemory-policy");
  std::vector<Reply> replies(1);
  if (auto sent = send(connection, std::span(&config, 1), {0}, replies, /*atomic=*/false,
                       options_.command_timeout);
      !sent.ok()) {
    return fail("CONFIG GET maxmemory-policy: " + sent.error());
  }
  const Reply& reply = replies[0];
  if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
      reply->element[1]->type == REDIS_REPLY_STRING) {
    std::string policy(reply->element[1]->str, reply->element[1]->len);
    if (eviction_policy_keeps_window(policy)) return {};
    refused_policy = policy;
    return fail("maxmemory-policy " + policy +
                " can evict the replay window's keys (Sample would fail on an evicted position, "
                "and new positions overwrite others): set maxmemory-policy noeviction");
  }
  // CONFIG renamed or refused (a managed Redis): nothing to check with.
  if (!warned_config_.exchange(true)) {
    std::fprintf(stderr,
                 "chessrl replay store: WARNING: redis %s: cannot read maxmemory-policy (%s); "
                 "make sure it is noeviction: an allkeys-* policy evicts the window's keys\n",
                 address_.c_str(),
                 is_error(reply) ? reply_text(reply).c_str() : "unexpected CONFIG GET reply");
  }
  return {};
}

Result<void> ConnectionPool::check_persistence(Connection& connection, std::string& refused) {
  if (options_.allow_unpersisted && !options_.ack_fsync) return {};  // nothing to check
  std::vector<Command> commands;
  commands.emplace_back("INFO").arg("persistence");
  commands.emplace_back("INFO").arg("server");
  if (options_.ack_fsync) commands.emplace_back("CONFIG").arg("GET").arg("appendfsync");
  std::vector<Reply> replies(commands.size());
  if (auto sent = send(connection, commands, all_indices(commands.size()), replies,
                       /*atomic=*/false, options_.command_timeout);
      !sent.ok()) {
    return fail("INFO persistence: " + sent.error());
  }
  std::string info;
  for (std::size_t i = 0; i < 2; ++i) {
    if (replies[i]->type != REDIS_REPLY_STRING) {
      // INFO refused: whether Redis persists cannot be known, so it is not assumed.
      refused = "INFO: " + (is_error(replies[i]) ? reply_text(replies[i]) : "unexpected reply") +
                ": cannot tell whether Redis persists acknowledged games (start with "
                "--allow-unpersisted-acks to accept that it may not)";
      return fail(refused);
    }
    info += reply_text(replies[i]) + "\n";
  }
  std::optional<std::string> appendfsync;
  if (options_.ack_fsync) {
    const Reply& reply = replies[2];
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == REDIS_REPLY_STRING) {
      appendfsync.emplace(reply->element[1]->str, reply->element[1]->len);
    }
  }
  auto plan = plan_acknowledgement(options_, info, appendfsync);
  if (!plan.ok()) {
    refused = plan.error();
    return fail(refused);
  }
  connection.ack = *plan;
  return {};
}

Result<void> ConnectionPool::wait_for_acknowledgement(Connection& connection) {
  const int replicas = std::max(options_.ack_replicas, 0);
  const bool wait_aof = connection.ack.wait_aof;
  if (replicas == 0 && !wait_aof) return {};
  const auto ack_timeout = std::max(options_.ack_timeout, std::chrono::milliseconds(1));
  std::vector<Command> commands;
  if (replicas > 0) {
    commands.emplace_back("WAIT")
        .arg(static_cast<std::uint64_t>(replicas))
        .arg(static_cast<std::uint64_t>(ack_timeout.count()));
  }
  if (wait_aof) {
    commands.emplace_back("WAITAOF").arg("1").arg("0").arg(
        static_cast<std::uint64_t>(ack_timeout.count()));
  }
  // Each wait may block for ack_timeout: the socket waits that much longer.
  const auto timeout = options_.command_timeout + ack_timeout * static_cast<int>(commands.size());
  if (redisSetTimeout(connection.context, to_timeval(timeout)) != REDIS_OK) {
    mark_broken(connection, timeout);
    return fail(connection.error);
  }
  std::vector<Reply> replies(commands.size());
  auto sent =
      send(connection, commands, all_indices(commands.size()), replies, /*atomic=*/false, timeout);
  if (!sent.ok()) return sent;
  if (redisSetTimeout(connection.context, to_timeval(options_.command_timeout)) != REDIS_OK) {
    mark_broken(connection, timeout);
    return fail(connection.error);
  }
  const std::string within = " within " + std::to_string(ack_timeout.count()) + " ms";
  std::size_t next = 0;
  if (replicas > 0) {
    const Reply& reply = replies[next++];
    if (reply->type != REDIS_REPLY_INTEGER) {
      return fail("written, but not acknowledged: WAIT " + std::to_string(replicas) + ": " +
                  (is_error(reply) ? reply_text(reply) : "unexpected reply"));
    }
    if (reply->integer < replicas) {
      return fail("written, but only " + std::to_string(reply->integer) + " of " +
                  std::to_string(replicas) + " replicas confirmed it" + within +
                  " (--ack-replicas " + std::to_string(replicas) + "): not acknowledged");
    }
  }
  if (wait_aof) {
    const Reply& reply = replies[next];
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER) {
      return fail("written, but not acknowledged: WAITAOF: " +
                  (is_error(reply) ? reply_text(reply) : "unexpected reply"));
    }
    if (reply->element[0]->integer < 1) {
      return fail("written, but Redis did not fsync it to its append-only file" + within +
                  " (--ack-fsync, WAITAOF): not acknowledged");
    }
  }
  return {};
}

Result<std::unique_ptr<Connection>> ConnectionPool::open(std::uint64_t generation,
                                                         Refusal& refusal) {
  auto connection = std::make_unique<Connection>();
  connection->generation = generation;
  connection->context = redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                                to_timeval(options_.connect_timeout));
  if (connection->context == nullptr) return fail("connect: out of memory");
  if (connection->context->err != 0) {
    return fail("connect: " + std::string(connection->context->errstr));
  }
  if (redisSetTimeout(connection->context, to_timeval(options_.command_timeout)) != REDIS_OK) {
    return fail("setting the command timeout: " + std::string(connection->context->errstr));
  }
  redisEnableKeepAlive(connection->context);
  if (!options_.password.empty()) {
    Command auth("AUTH");
    auth.arg(options_.password);
    std::vector<Reply> replies(1);
    if (auto sent = send(*connection, std::span(&auth, 1), {0}, replies, /*atomic=*/false,
                         options_.command_timeout);
        !sent.ok()) {
      return fail("AUTH: " + sent.error());
    }
    if (is_error(replies[0])) return fail("AUTH failed: " + reply_text(replies[0]));
  }
  if (auto checked = check_eviction_policy(*connection, refusal.policy); !checked.ok()) {
    if (!refusal.policy.empty()) refusal.reason = checked.error();
    return fail(checked.error());
  }
  if (auto checked = check_persistence(*connection, refusal.reason); !checked.ok()) {
    return fail(checked.error());
  }
  if (auto loaded = load_scripts(*connection, scripts_, options_.command_timeout); !loaded.ok()) {
    return fail(loaded.error());
  }
  return connection;
}

void ConnectionPool::note_failure_locked(std::string what) {
  ++generation_;
  open_ -= static_cast<int>(idle_.size());
  idle_.clear();
  const auto now = Clock::now();
  // Failures of calls already in flight while backing off do not lengthen
  // the backoff: only a retry that fails does.
  if (now >= retry_at_) {
    retry_at_ = now + backoff_.next().value_or(options_.backoff_max);
  }
  last_error_ = std::move(what);
  released_.notify_all();
}

Result<std::unique_ptr<Connection>> ConnectionPool::acquire() {
  const int capacity = std::max(options_.connections, 1);
  std::unique_lock lock(mu_);
  const auto deadline = Clock::now() + options_.command_timeout;
  std::uint64_t generation = 0;
  for (;;) {
    const auto now = Clock::now();
    if (now < retry_at_) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(retry_at_ - now);
      return fail("redis " + address_ + " unavailable (retrying in " +
                  std::to_string(left.count()) + " ms): " + last_error_);
    }
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
    if (open_ < capacity) {
      ++open_;
      generation = generation_;
      break;
    }
    if (released_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= capacity) {
      return fail(error("all " + std::to_string(capacity) + " connections busy for " +
                        std::to_string(options_.command_timeout.count()) + " ms"));
    }
  }
  lock.unlock();
  Refusal refusal;
  auto opened = open(generation, refusal);
  lock.lock();
  refusal_ = std::move(refusal);
  if (!opened.ok()) {
    --open_;
    note_failure_locked(opened.error());
    return fail(error(opened.error()));
  }
  return opened;
}

void ConnectionPool::release(std::unique_ptr<Connection> connection, bool succeeded) {
  std::unique_ptr<Connection> dropped;
  {
    std::lock_guard lock(mu_);
    if (connection->broken) {
      --open_;
      note_failure_locked(connection->error);
      dropped = std::move(connection);
    } else {
      if (succeeded) {
        backoff_.reset();
        retry_at_ = {};
      }
      if (connection->generation != generation_) {
        --open_;
        dropped = std::move(connection);
      } else {
        idle_.push_back(std::move(connection));
      }
    }
  }
  released_.notify_one();
}

Result<std::vector<Reply>> ConnectionPool::run(std::span<const Command> commands, bool atomic,
                                               bool acknowledge) {
  auto acquired = acquire();
  if (!acquired.ok()) return fail(acquired.error());
  std::unique_ptr<Connection> connection = std::move(acquired).value();

  std::vector<Reply> replies(commands.size());
  auto attempt = [&]() -> Result<void> {
    const auto timeout = options_.command_timeout;
    if (auto sent =
            send(*connection, commands, all_indices(commands.size()), replies, atomic, timeout);
        !sent.ok()) {
      return sent;
    }
    // The script cache is empty after a restart or SCRIPT FLUSH: load the
    // scripts again and resend what was refused. A refused script did not run.
    std::vector<std::size_t> refused;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (commands[i].script_index() >= 0 && is_noscript(replies[i])) refused.push_back(i);
    }
    if (!refused.empty()) {
      if (auto loaded = load_scripts(*connection, scripts_, timeout); !loaded.ok()) return loaded;
      if (auto resent = send(*connection, commands, refused, replies, atomic, timeout);
          !resent.ok()) {
        return resent;
      }
    }
    // On this connection: WAIT counts the replicas that have its last write.
    return acknowledge ? wait_for_acknowledgement(*connection) : Result<void>();
  };
  auto attempted = attempt();
  const bool succeeded = !connection->broken;
  release(std::move(connection), succeeded);
  if (!attempted.ok()) return fail(error(attempted.error()));
  return replies;
}

Result<Reply> ConnectionPool::run(const Command& command) {
  auto replies = run(std::span(&command, 1), /*atomic=*/false);
  if (!replies.ok()) return fail(replies.error());
  return std::move(replies->front());
}

}  // namespace chessrl::replay::redis
