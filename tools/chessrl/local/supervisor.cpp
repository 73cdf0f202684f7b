#include "local/supervisor.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include "chessrl/core/backoff.h"

namespace chessrl::tool {

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", double(d.count()) / 1000);
  return buf;
}

// The part of a log tail after its last "==== chessrl local: starting" line
// (written before each start): what the child's last run said.
std::string last_start(const std::string& tail) {
  const auto header = tail.rfind("==== chessrl local: starting");
  if (header == std::string::npos) return tail;
  const auto next = tail.find('\n', header);
  return next == std::string::npos ? tail : tail.substr(next + 1);
}

}  // namespace

struct Supervisor::Supervised {
  ChildSpec spec;
  bool optional = false;
  std::unique_ptr<Child> process;  // the running (or last) process
  bool waiting = false;            // exited; restarts at restart_at
  bool gave_up = false;            // an optional child left stopped
  Clock::time_point started, restart_at;
  std::optional<Backoff> backoff;  // no jitter: one machine's few children
  std::chrono::milliseconds wait{0};  // the last restart's
  std::deque<Clock::time_point> exits;  // within the crash window
  int restarts = 0;
  LivenessCheck liveness;
  Clock::time_point next_check;
  int failed_checks = 0;              // in a row
  std::string killed_for;             // stopped by a failed liveness check: why
  Clock::time_point kill_at;          // then SIGKILL, if it has not exited
  metrics::Counter* restarts_total = nullptr;
  metrics::Gauge* up = nullptr;
};

Supervisor::Supervisor(RestartPolicy policy, metrics::Registry& registry)
    : policy_(policy), registry_(registry) {}

Supervisor::~Supervisor() = default;  // a Child still running is killed by its destructor

Result<void> Supervisor::start(Supervised& s) {
  {
    std::ofstream log(s.spec.log_path, std::ios::app);
    log << "==== chessrl local: starting " << s.spec.name;
    if (s.restarts > 0) log << " (restart " << s.restarts << ")";
    log << ":";
    for (const auto& a : s.spec.argv) log << " " << a;
    log << "\n";
  }
  auto process = Child::start(s.spec);
  if (!process.ok()) return fail(process.error());
  s.process = std::move(process).value();
  s.started = Clock::now();
  s.waiting = false;
  s.failed_checks = 0;
  s.killed_for.clear();
  s.next_check = s.started + policy_.liveness_period;
  s.up->set(1);
  return {};
}

Result<Child*> Supervisor::launch(ChildSpec spec, bool optional) {
  auto s = std::make_unique<Supervised>();
  s->spec = std::move(spec);
  s->optional = optional;
  const metrics::Labels labels = {{"child", s->spec.name}};
  s->restarts_total = &registry_.counter(
      "chessrl_local_child_restarts_total",
      "Times chessrl local restarted this child after it exited on its own", labels);
  s->up = &registry_.gauge("chessrl_local_child_up",
                           "1 while this child of chessrl local runs, 0 while it waits to restart",
                           labels);
  if (auto started = start(*s); !started.ok()) return fail(started.error());
  children_.push_back(std::move(s));
  return children_.back()->process.get();
}

Supervisor::Supervised* Supervisor::find(const std::string& name) const {
  for (const auto& s : children_)
    if (s->spec.name == name) return s.get();
  return nullptr;
}

void Supervisor::set_argv(const std::string& name, std::vector<std::string> argv) {
  if (Supervised* s = find(name)) s->spec.argv = std::move(argv);
}

void Supervisor::set_env(const std::string& name,
                         std::vector<std::pair<std::string, std::string>> env) {
  if (Supervised* s = find(name)) s->spec.env = std::move(env);
}

void Supervisor::set_liveness(const std::string& name, LivenessCheck check) {
  if (Supervised* s = find(name)) {
    s->liveness = std::move(check);
    s->next_check = std::max(s->next_check, Clock::now() + policy_.liveness_period);
  }
}

void Supervisor::check_liveness(Supervised& s, Clock::time_point now) {
  if (!s.killed_for.empty()) {  // stopping it: SIGKILL once the grace is over
    if (now >= s.kill_at) s.process->kill();
    return;
  }
  if (!s.liveness || now < s.next_check) return;
  s.next_check = now + policy_.liveness_period;
  const std::string problem = s.liveness();
  if (problem.empty()) {
    s.failed_checks = 0;
    return;
  }
  if (++s.failed_checks < policy_.liveness_failures) return;
  s.killed_for = "its liveness check failed " + std::to_string(s.failed_checks) +
                 " times in a row: " + problem;
  s.kill_at = now + policy_.liveness_grace;
  std::fprintf(stderr, "\nchessrl local: %s: %s; stopping it to restart it\n",
               s.spec.name.c_str(), s.killed_for.c_str());
  s.process->terminate();
}

Result<Child*> Supervisor::start_again(const std::string& name) {
  Supervised* s = find(name);
  if (s == nullptr) return fail("no child named " + name);
  if (!s->waiting && !s->process->exited()) return fail(name + " is still running");
  if (auto started = start(*s); !started.ok()) return fail(started.error());
  return s->process.get();
}

void Supervisor::on_exit(Supervised& s, Clock::time_point now, const std::string& status,
                         Poll& poll) {
  s.up->set(0);
  // A long healthy run resets the backoff (Kubernetes: after 10 minutes).
  if (now - s.started >= policy_.healthy_after && s.backoff) s.backoff->reset();
  s.exits.push_back(now);
  while (!s.exits.empty() && now - s.exits.front() > policy_.crash_window) s.exits.pop_front();
  if (int(s.exits.size()) >= policy_.max_crashes) {
    const std::string what =
        s.spec.name + " exited " + std::to_string(s.exits.size()) + " times within " +
        seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(policy_.crash_window)) +
        " (last: " + status + ")";
    if (s.optional) {
      s.gave_up = true;
      std::fprintf(stderr, "\nchessrl local: %s: left stopped (log %s); training goes on\n",
                   what.c_str(), s.spec.log_path.c_str());
      return;
    }
    poll.stop_reason = what + ": a crash loop, stopping the run; the end of " + s.spec.log_path +
                       ":\n" + (s.process ? last_start(s.process->log_tail(20)) : std::string());
    return;
  }
  if (!s.backoff) {
    BackoffPolicy backoff;
    backoff.initial = policy_.first_backoff;
    backoff.max = policy_.max_backoff;
    backoff.jitter = BackoffPolicy::Jitter::kNone;
    s.backoff.emplace(backoff);
  }
  s.wait = s.backoff->next().value_or(policy_.max_backoff);
  s.waiting = true;
  s.restart_at = now + s.wait;
  const std::string happened =
      status.rfind("could not start", 0) == 0 ? status
      : !s.killed_for.empty()                 ? "was stopped (" + status + ") as " + s.killed_for
                                              : "stopped unexpectedly (" + status + ")";
  std::fprintf(stderr, "\nchessrl local: %s %s; restarting it in %s (log %s)\n",
               s.spec.name.c_str(), happened.c_str(), seconds_text(s.wait).c_str(),
               s.spec.log_path.c_str());
}

Supervisor::Poll Supervisor::poll() {
  Poll result;
  if (stopping_) return result;
  const auto now = Clock::now();
  for (auto& sp : children_) {
    Supervised& s = *sp;
    if (s.gave_up) continue;
    if (!s.waiting && s.process->exited()) {
      on_exit(s, now, s.process->status(), result);
      if (result.stop_reason) return result;
      continue;
    }
    if (!s.waiting) check_liveness(s, now);
    if (s.waiting && now >= s.restart_at) {
      ++s.restarts;
      s.restarts_total->inc();
      if (auto started = start(s); !started.ok()) {
        on_exit(s, now, "could not start: " + started.error(), result);
        if (result.stop_reason) return result;
        continue;
      }
      result.restarted = true;
    }
  }
  return result;
}

void Supervisor::stop_all() {
  stopping_ = true;
  auto stop_group = [&](const std::string& prefix, std::chrono::seconds grace) {
    std::vector<Child*> group;
    for (auto& s : children_)
      if (s->spec.name.rfind(prefix, 0) == 0 && !s->process->exited())
        group.push_back(s->process.get());
    for (Child* c : group) c->terminate();
    for (Child* c : group) {
      if (!c->stop(grace))
        std::fprintf(stderr, "chessrl local: %s did not stop in %lld s: killed\n",
                     c->name().c_str(), static_cast<long long>(grace.count()));
    }
  };
  stop_group("selfplay", std::chrono::seconds(30));
  stop_group("evaluator", std::chrono::seconds(30));
  stop_group("trainer", std::chrono::seconds(60));
  stop_group("replay", std::chrono::seconds(20));
  stop_group("redis", std::chrono::seconds(20));
  stop_group("prometheus", std::chrono::seconds(20));  // last: it saw everything stop
  stop_group("", std::chrono::seconds(20));            // any other
  for (auto& s : children_) s->up->set(0);
}

Child* Supervisor::child(const std::string& name) const {
  for (const auto& s : children_)
    if (s->spec.name == name) return s->waiting || s->gave_up ? nullptr : s->process.get();
  return nullptr;
}

int Supervisor::restarts(const std::string& name) const {
  for (const auto& s : children_)
    if (s->spec.name == name) return s->restarts;
  return 0;
}

bool Supervisor::gave_up(const std::string& name) const {
  for (const auto& s : children_)
    if (s->spec.name == name) return s->gave_up;
  return false;
}

std::vector<std::string> Supervisor::names() const {
  std::vector<std::string> out;
  for (const auto& s : children_) out.push_back(s->spec.name);
  return out;
}

std::string Supervisor::restarts_summary() const {
  std::string out;
  for (const auto& s : children_) {
    if (s->restarts == 0 && !s->waiting) continue;
    out += (out.empty() ? "" : ", ") + s->spec.name + " \u21bb" + std::to_string(s->restarts);
    if (s->waiting) out += " (down)";
  }
  return out;
}

std::vector<std::string> Supervisor::unclean_exits() const {
  std::vector<std::string> out;
  for (const auto& s : children_)
    if (s->process && !s->process->clean_exit())
      out.push_back(s->spec.name + " ended with " + s->process->status() + " (log " +
                    s->spec.log_path + ")");
  return out;
}

}  // namespace chessrl::tool
