// The supervisor of `chessrl local`: starts the children and, as Kubernetes
// restarts a pod's container (restartPolicy Always, CrashLoopBackOff),
// restarts one that exits while the run goes on, after a backoff of 1 s, 2 s,
// 4 s, ... capped at 30 s, reset once a child has run 60 s. A child that exits
// `max_crashes` times within `crash_window` is crash-looping: the run stops,
// naming it and showing the end of its log (an optional child, Prometheus, is
// left stopped instead). Restarts are counted per child, for the status line
// and `chessrl_local_child_restarts_total{child}`. A child with a liveness
// check (the trainer ranks: /healthz, which answers 503 once a rank makes no
// progress) is also restarted, as the kubelet does, when the check fails
// `liveness_failures` times in a row, `liveness_period` apart: SIGTERM, then
// SIGKILL after `liveness_grace`. Not thread-safe; one supervising thread.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/metrics/registry.h"
#include "local/children.h"

namespace chessrl::tool {

struct RestartPolicy {
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds healthy_after{60000};  // a run this long resets the backoff
  int max_crashes = 5;                             // exits within crash_window that stop the run
  std::chrono::milliseconds crash_window{std::chrono::minutes(10)};
  // Liveness checks (the chart's trainer liveness probe: 20 s apart, 6 failures).
  std::chrono::milliseconds liveness_period{10000};  // also the delay after a start
  int liveness_failures = 3;
  std::chrono::milliseconds liveness_grace{60000};   // SIGTERM, then SIGKILL
};

// "" while the child is healthy, else why not ("HTTP 503: no progress for ...",
// "connection refused"). Called from the supervising thread; must be quick.
using LivenessCheck = std::function<std::string()>;

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // Each child's restarts go to chessrl_local_child_restarts_total{child} in
  // `registry` (and chessrl_local_child_up{child}).
  Supervisor(RestartPolicy policy, metrics::Registry& registry);
  ~Supervisor();

  // Starts a child and keeps it running. `optional`: a crash loop leaves it
  // stopped rather than stopping the run. Fails, naming the program, when it
  // cannot be started at all (not executable, log not writable).
  Result<Child*> launch(ChildSpec spec, bool optional = false);

  // The command line `name`'s restarts use from now on: chessrl local starts
  // a child on port 0 and, once its log names the port the kernel chose, pins
  // that number, so that the others keep reaching it at the same address.
  void set_argv(const std::string& name, std::vector<std::string> argv);
  // Likewise its environment (MASTER_PORT of trainer rank 0).
  void set_env(const std::string& name, std::vector<std::pair<std::string, std::string>> env);
  // From now on, `name` is checked every liveness_period (its first check one
  // period after it started) and restarted when `check` fails
  // liveness_failures times in a row.
  void set_liveness(const std::string& name, LivenessCheck check);

  // Starts `name` again at once, not counted as a restart, after its first
  // start failed and was seen by the caller, not by poll() (redis-server on a
  // port another process held: chessrl local tries another number). Fails
  // when it is still running or cannot be started.
  Result<Child*> start_again(const std::string& name);

  // Reaps children that exited and restarts those whose backoff is over.
  // Returns the reason the run must stop (a crash loop, with the end of that
  // child's log), or nullopt. `restarted` is set when a pid changed.
  struct Poll {
    std::optional<std::string> stop_reason;
    bool restarted = false;
  };
  Poll poll();

  // Stops every child, in order: self-play and evaluator, then the trainer
  // (it checkpoints), then replay, then Redis (it persists), then Prometheus.
  // Nothing is restarted from here on.
  void stop_all();

  // The running process of a child (nullptr while it waits to restart).
  Child* child(const std::string& name) const;
  int restarts(const std::string& name) const;
  bool gave_up(const std::string& name) const;  // an optional child left stopped
  // The children's names, in launch order.
  std::vector<std::string> names() const;
  // "redis ↻1, selfplay-0 ↻2": the children restarted so far; "" when none.
  std::string restarts_summary() const;
  // Children that ended with a status other than 0 after stop_all, as
  // "selfplay-0 ended with exit status 1 (log PATH)".
  std::vector<std::string> unclean_exits() const;

 private:
  struct Supervised;
  // `s` exited (or could not be started) with `status`: schedule its restart,
  // or, on a crash loop, set poll.stop_reason (or give an optional child up).
  void on_exit(Supervised& s, Clock::time_point now, const std::string& status, Poll& poll);
  Result<void> start(Supervised& s);
  // The liveness check of a running child, when one is due; may stop it.
  void check_liveness(Supervised& s, Clock::time_point now);
  Supervised* find(const std::string& name) const;

  RestartPolicy policy_;
  metrics::Registry& registry_;
  std::vector<std::unique_ptr<Supervised>> children_;
  bool stopping_ = false;
};

}  // namespace chessrl::tool
