#include "candidate_lease.h"

#include <utility>

namespace chessrl::evaluator_service {
namespace {

std::string duration_text(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

}  // namespace

CandidateLease::CandidateLease(std::uint64_t version, LeaseCall call,
                               CandidateLeaseOptions options, std::atomic<bool>& unsupported,
                               std::function<void(const std::string&)> log)
    : version_(version),
      call_(std::move(call)),
      options_(options),
      unsupported_(unsupported),
      log_(std::move(log)) {
  if (options_.length.count() <= 0 || unsupported_.load()) return;
  if (!ask(options_.length, true)) return;
  renewer_ = std::thread([this] {
    std::unique_lock lock(mu_);
    for (;;) {
      if (cv_.wait_for(lock, options_.renew_every, [&] { return stopping_; })) return;
      lock.unlock();
      const bool again = ask(options_.length, false);
      lock.lock();
      if (!again) return;
    }
  });
}

CandidateLease::~CandidateLease() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) {
    renewer_.join();
    // The end; if it fails the lease runs out by the registry's clock.
    if (!unsupported_.load()) ask(std::chrono::seconds(0), false);
  }
}

bool CandidateLease::ask(std::chrono::seconds length, bool first) {
  const std::string name = "v" + std::to_string(version_);
  auto leased = call_(version_, length);
  if (leased.ok()) {
    held_ = length.count() > 0;
    ++granted_;
    if (failing_) log_(name + ": lease renewed again");
    failing_ = false;
    return true;
  }
  held_ = false;
  switch (leased.code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      if (!unsupported_.exchange(true)) {
        log_("the model registry has no LeaseModel (an older chessrl-replay): gating without "
             "leases, so a candidate its --keep-models prunes during a match cannot be promoted (" +
             leased.error() + ")");
      }
      return false;
    case grpc::StatusCode::NOT_FOUND:
      // Pruned already, or never published: the evaluation finds out itself.
      if (length.count() > 0) log_(name + ": not leased: " + leased.error());
      return false;
    default:
      if (length.count() == 0) return false;  // the end: the lease runs out by itself
      if (first || !failing_) {
        log_(name + ": lease " + (first ? "not granted" : "not renewed") +
             " (tried again every " + duration_text(options_.renew_every) + "): " + leased.error());
      }
      failing_ = true;
      return true;
  }
}

}  // namespace chessrl::evaluator_service
