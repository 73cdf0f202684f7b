// Private to the replay library: hiredis connections, commands as argument
// vectors, and the pool RedisReplayStore borrows them from (with the backoff
// that keeps an unreachable Redis from being hammered).
#pragma once

#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/backoff.h"
#include "chessrl/core/result.h"
#include "chessrl/replay/redis_store.h"

namespace chessrl::replay::redis {

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
// One top-level reply; its elements are owned by it.
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// One Redis command as its arguments. Arguments given as string_view are
// borrowed (they must outlive the run); numbers and copies are owned.
class Command {
 public:
  explicit Command(std::string_view name) { args_.push_back(name); }
  // Movable, not copyable: arguments may point into owned_.
  Command(Command&&) = default;
  Command& operator=(Command&&) = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  // EVALSHA of the pool's script `index` with no KEYS: the arguments added
  // after this are the script's ARGV.
  static Command script(int index) {
    Command command;
    command.script_ = index;
    return command;
  }

  Command& arg(std::string_view value) {
    args_.push_back(value);
    return *this;
  }
  Command& arg_copy(std::string value) {
    args_.push_back(owned_.emplace_back(std::move(value)));
    return *this;
  }
  Command& arg(std::uint64_t value) { return arg_copy(std::to_string(value)); }

  int script_index() const { return script_; }
  const std::vector<std::string_view>& args() const { return args_; }

 private:
  Command() = default;
  int script_ = -1;
  std::vector<std::string_view> args_;
  std::deque<std::string> owned_;  // a deque: growing it does not move strings
};

// A connected hiredis context with the SHA1 of every script loaded on it.
struct Connection {
  redisContext* context = nullptr;
  std::vector<std::string> shas;
  std::uint64_t generation = 0;  // the pool's generation when it was opened
  bool broken = false;           // an I/O error happened: never reuse
  std::string error;             // why it broke
  AckPlan ack;                   // how its acknowledging writes wait (open() decides)
  ~Connection();
};

// Up to `options.connections` connections, opened lazily. Thread-safe.
class ConnectionPool {
 public:
  ConnectionPool(const RedisOptions& options, std::vector<std::string_view> scripts);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Sends `commands` on one connection as one pipeline (one round trip) and
  // returns their replies in order; with `atomic`, inside MULTI/EXEC. Error
  // replies come back as replies, for the caller to judge, except NOSCRIPT:
  // then the scripts are loaded again and those commands resent, once. Fails
  // (and starts the backoff) on any I/O error, or at once while the backoff
  // lasts. With `acknowledge`, then waits on the same connection as the
  // options ask (WAIT for ack_replicas, WAITAOF where the connection's plan
  // says), and fails, naming how many confirmed, when that falls short: the
  // writes are done but must not be acknowledged.
  Result<std::vector<Reply>> run(std::span<const Command> commands, bool atomic = false,
                                 bool acknowledge = false);
  Result<Reply> run(const Command& command);

  // "redis <host>:<port>: <what>", the prefix of every error message.
  std::string error(std::string_view what) const;

  // The maxmemory-policy the last connection attempt was refused for (open()
  // refuses one that can evict the window's keys); empty when it was not.
  std::string refused_eviction_policy();
  // Why the last connection attempt was refused for the server's
  // configuration (eviction policy, persistence, acknowledgement guarantees);
  // empty when it was not.
  std::string refused_configuration();

 private:
  using Clock = std::chrono::steady_clock;

  Result<std::unique_ptr<Connection>> acquire();
  void release(std::unique_ptr<Connection> connection, bool succeeded);
  // Why open() refused a server that answered: its configuration.
  struct Refusal {
    std::string policy;  // the maxmemory-policy, when that was the reason
    std::string reason;  // any configuration refusal, without the address prefix
  };
  // Opens a connection: connect, timeouts, AUTH, the maxmemory-policy and
  // persistence checks, SCRIPT LOAD. Returns the reason (without the address
  // prefix) on failure, and in `refusal` what of the configuration was refused.
  Result<std::unique_ptr<Connection>> open(std::uint64_t generation, Refusal& refusal);
  // CONFIG GET maxmemory-policy: fails naming a policy that can evict the
  // window's keys; a refused CONFIG (renamed) is a warning on stderr, once.
  Result<void> check_eviction_policy(Connection& connection, std::string& refused_policy);
  // INFO persistence and server (and CONFIG GET appendfsync with ack_fsync):
  // sets the connection's AckPlan, or fails (in `refused`) for a Redis that
  // does not persist or cannot give what the options ask
  // (plan_acknowledgement). Skipped when the options ask nothing of it.
  Result<void> check_persistence(Connection& connection, std::string& refused);
  // WAIT / WAITAOF after an acknowledging write on `connection`.
  Result<void> wait_for_acknowledgement(Connection& connection);
  // Call with mu_ held: drops idle connections and (re)starts the backoff.
  void note_failure_locked(std::string what);

  const RedisOptions options_;
  const std::vector<std::string_view> scripts_;
  const std::string address_;

  std::mutex mu_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;  // idle + borrowed + being opened
  // Bumped on every I/O failure: connections from before it are not reused.
  std::uint64_t generation_ = 0;
  // Between failed reconnections: equal jitter (U(cap / 2, cap)), the cap doubling
  // from backoff_min to backoff_max, so the replicas of a Redis restarted do not
  // all come back in the same millisecond. Reset by a call that succeeds.
  Backoff backoff_;
  Clock::time_point retry_at_{};          // calls fail at once before this
  std::string last_error_;
  Refusal refusal_;  // guarded by mu_
  std::atomic<bool> warned_config_{false};
};

}  // namespace chessrl::replay::redis
