// ModelHub: one chessrl-replay process's view of the model registry. One
// thread asks the store for the latest version every `poll` (one cheap call,
// whatever the number of watchers), or at once when a local PublishModel
// calls refresh(); it keeps the newest versions' metadata in memory and tells
// every subscriber (a WatchModels stream) when there is a newer one.
// LatestModel, GetModel of the latest and the watchers read that memory, not
// the store. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "chessrl/replay/model_store.h"

namespace chessrl::replay_service {

struct ModelHubOptions {
  std::chrono::milliseconds poll{1000};  // how often the store is asked for the latest version
  std::size_t recent = 64;               // versions' metadata kept (a watcher further behind skips)
};

// What the hub knows at one moment (immutable once made; readers share it).
struct ModelView {
  bool known = false;  // the store answered at least once
  // The newest versions, oldest first (at most ModelHubOptions::recent):
  // every published version above `floor` is here.
  std::deque<replay::ModelMeta> recent;
  std::uint64_t floor = 0;

  const replay::ModelMeta* newest() const { return recent.empty() ? nullptr : &recent.back(); }
  const replay::ModelMeta* find(std::uint64_t version) const;
  // What a watcher that has seen versions up to `sent` gets next: the oldest
  // version above it, or the newest when `sent` is below what memory holds.
  const replay::ModelMeta* next_after(std::uint64_t sent) const;
};

class ModelHub {
 public:
  // Told (from the hub's thread, no lock held) that a newer version is known.
  // Must not block: a WatchModels stream starts a write and returns.
  class Subscriber {
   public:
    virtual ~Subscriber() = default;
    virtual void on_new_version() = 0;
  };

  // `on_error` is called with each failed poll's message (counted by the caller).
  ModelHub(replay::ModelStore& store, ModelHubOptions options,
           std::function<void(const std::string&)> on_error = {});
  ~ModelHub();  // stop()
  ModelHub(const ModelHub&) = delete;
  ModelHub& operator=(const ModelHub&) = delete;

  void start();  // the polling thread (also polls once first)
  void stop();   // ends it; the view stays readable

  std::shared_ptr<const ModelView> view() const;
  // Asks the store now, updates the view, and has the thread tell the
  // subscribers if there is a newer version. false when the store failed.
  bool refresh();

  void subscribe(std::shared_ptr<Subscriber> subscriber);
  void unsubscribe(const Subscriber* subscriber);
  // Calls `f` on every subscriber, no lock held (shutdown ends the streams).
  void for_each_subscriber(const std::function<void(Subscriber&)>& f);
  std::size_t subscribers() const;

  // Store calls made by polls so far (tests, benchmarks).
  std::uint64_t store_calls() const;

 private:
  void run();
  void fan_out();
  replay::ModelStore& store_;
  ModelHubOptions options_;
  std::function<void(const std::string&)> on_error_;

  mutable std::mutex view_mutex_;
  std::shared_ptr<const ModelView> view_;  // guarded by view_mutex_
  std::mutex poll_mutex_;                  // one poll at a time
  std::uint64_t store_calls_ = 0;          // guarded by view_mutex_

  mutable std::mutex subscribers_mutex_;
  std::unordered_map<const Subscriber*, std::shared_ptr<Subscriber>> subscribers_;

  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;          // guarded by thread_mutex_
  bool fan_out_pending_ = false;   // guarded by thread_mutex_
  std::uint64_t fanned_out_ = 0;   // the newest version subscribers were told of (the thread's)
  std::thread thread_;
};

}  // namespace chessrl::replay_service
