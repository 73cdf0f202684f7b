// CandidateLease: while the evaluator gates a candidate, the registry holds
// that version back from pruning (LeaseModel). Without it a trainer that
// publishes faster than a match lasts, with the registry's --keep-models,
// prunes the candidate mid-match and its SetBest finds it gone (NOT_FOUND):
// the match's work is thrown away.
//
// The lease is taken when the object is made, renewed by a thread every
// quarter of its length, and ended (a lease of 0 s) when the object goes,
// promoted or not. The registry's clock ends it anyway if the evaluator dies.
// A registry without LeaseModel (UNIMPLEMENTED: an older chessrl-replay) is
// logged once and never asked again; gating goes on without a lease. No
// failure of the lease stops an evaluation.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "chessrl/rpc/clients.h"

namespace chessrl::evaluator_service {

struct CandidateLeaseOptions {
  std::chrono::seconds length{120};
  std::chrono::milliseconds renew_every{30000};  // a quarter of length by default
};

// What one lease call does: ModelRegistryClient::lease.
using LeaseCall =
    std::function<rpc::RpcResult<v1::ModelInfo>(std::uint64_t version, std::chrono::seconds)>;

class CandidateLease {
 public:
  // `unsupported` is shared by the leases of one evaluator: set once the
  // registry answered UNIMPLEMENTED, after which no call is made.
  CandidateLease(std::uint64_t version, LeaseCall call, CandidateLeaseOptions options,
                 std::atomic<bool>& unsupported, std::function<void(const std::string&)> log);
  ~CandidateLease();  // stops renewing and ends the lease
  CandidateLease(const CandidateLease&) = delete;
  CandidateLease& operator=(const CandidateLease&) = delete;

  // Whether the registry granted the lease on the last call.
  bool held() const { return held_.load(); }
  // Lease calls the registry answered OK (the first, renewals, the end).
  int granted() const { return granted_.load(); }

 private:
  // One lease call; false when there is no point in calling again.
  bool ask(std::chrono::seconds length, bool first);

  std::uint64_t version_;
  LeaseCall call_;
  CandidateLeaseOptions options_;
  std::atomic<bool>& unsupported_;
  std::function<void(const std::string&)> log_;
  std::atomic<bool> held_{false};
  std::atomic<int> granted_{0};
  bool failing_ = false;  // the last renewal failed (logged once per streak)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread renewer_;
};

}  // namespace chessrl::evaluator_service
