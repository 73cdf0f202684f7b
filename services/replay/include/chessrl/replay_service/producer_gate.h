// What replay allows each self-play producer (a Game's `producer`, the
// replica's pod name): a quarantine list, a rate limit in training positions
// per second, and per-producer counters with a bounded label set. The name is
// self-declared and every replica shares one token, so none of this binds an
// attacker who holds the token: it stops a broken or misconfigured replica,
// and caps what any one name can push (docs/security.md, "What a self-play
// token can still do"). Thread-safe.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/v1/replay.pb.h"

namespace chessrl::replay_service {

struct ProducerOptions {
  // Producers whose pushes are refused whole (PERMISSION_DENIED), by exact name.
  std::set<std::string> quarantined;
  // Training positions a second one producer may push (a game without
  // positions counts as one), sustained; 0: no limit. A real replica makes
  // far fewer: about 2,000 on an H100 with a 10x128 network, about 3,000 per
  // two cores with no network (--bootstrap uniform), at self-play's default
  // visits (docs/replay.md, "Producers").
  double rate = 50000;
  // A producer may push this many seconds' worth of `rate` at once after a
  // pause (the bucket's depth); never less than one game of --max-plies.
  double burst_seconds = 10;
  // Producers with their own metrics series and rate buckets at once (a
  // bucket that has refilled is forgotten; a name's series expire, below).
  // The rest share the label and the bucket kOtherProducers.
  std::size_t max_tracked = 256;
  // A producer's series are removed from the registry once it has pushed
  // nothing for this long, and its place goes to the next new name: a
  // rollout's new pod names get series of their own as the old ones go quiet.
  // A name that comes back gets new series, from zero. 0: never.
  double idle_expiry_seconds = 600;
};

// The label and the rate bucket of producers beyond ProducerOptions::max_tracked,
// and of names outside [A-Za-z0-9._:-]{1,128} (it has characters no tracked name has).
inline constexpr std::string_view kOtherProducers = "(other)";

class ProducerGate {
 public:
  using Clock = std::chrono::steady_clock;
  // `min_burst`: the fewest positions a bucket holds (the largest valid game).
  ProducerGate(ProducerOptions options, metrics::Registry& registry, std::size_t min_burst,
               std::function<Clock::time_point()> now = Clock::now);

  // Whether `request` may go on to validation: OK, or PERMISSION_DENIED when
  // a game's producer is quarantined, or RESOURCE_EXHAUSTED when a producer
  // has not the positions left in its bucket; a refusal debits nothing and
  // counts the call's games as refused. On OK each producer's bucket is
  // debited what its games cost.
  grpc::Status admit(const v1::PushGamesRequest& request);

  // What became of one game that was admitted: stored (with its positions),
  // a duplicate, or rejected by validation.
  enum class Result { kStored, kDuplicate, kRejected };
  void count(std::string_view producer, Result result, std::size_t positions = 0);

  // Counts the games of a call refused whole for `reason` (a fixed label):
  // chessrl_replay_games_refused_total{reason} and each producer's refused.
  void refused(const v1::PushGamesRequest& request, std::string_view reason);

  // The label a producer's series carry (tracking it if there is room).
  std::string label(std::string_view producer);

 private:
  struct Series {
    std::string label;
    Clock::time_point used;                  // last counted
    std::list<std::string>::iterator order;  // in by_use_ (not for kOtherProducers)
    metrics::Counter* stored;
    metrics::Counter* duplicate;
    metrics::Counter* rejected;
    metrics::Counter* refused;
    metrics::Counter* positions;
  };
  struct Bucket {
    double tokens;
    Clock::time_point at;  // when `tokens` was last brought up to date
  };
  // The series of `producer` (or kOtherProducers'), used at `now`; first
  // removes those idle past the expiry.
  Series& series_locked(std::string_view producer, Clock::time_point now);
  void expire_idle_locked(Clock::time_point now);
  void remove_series_locked(const std::string& name);
  Bucket& bucket_locked(const std::string& producer, Clock::time_point now);
  void refill(Bucket& bucket, Clock::time_point now) const;
  void forget_full_buckets_locked(Clock::time_point now);
  void refused_locked(const v1::PushGamesRequest& request, std::string_view reason,
                      Clock::time_point now);

  ProducerOptions options_;
  metrics::Registry& registry_;
  double capacity_;  // positions a bucket holds
  std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  std::map<std::string, Series, std::less<>> series_;  // guarded by mutex_
  std::list<std::string> by_use_;  // guarded by mutex_: tracked names, least recently used first
  std::map<std::string, Bucket, std::less<>> buckets_;  // guarded by mutex_
};

}  // namespace chessrl::replay_service
