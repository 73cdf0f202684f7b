#include "chessrl/replay_service/model_hub.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace chessrl::replay_service {

const replay::ModelMeta* ModelView::find(std::uint64_t version) const {
  const auto it = std::lower_bound(
      recent.begin(), recent.end(), version,
      [](const replay::ModelMeta& meta, std::uint64_t v) { return meta.version < v; });
  return it != recent.end() && it->version == version ? &*it : nullptr;
}

const replay::ModelMeta* ModelView::next_after(std::uint64_t sent) const {
  if (recent.empty() || recent.back().version <= sent) return nullptr;
  if (sent < floor) return &recent.back();  // further behind than memory reaches
  const auto it = std::upper_bound(
      recent.begin(), recent.end(), sent,
      [](std::uint64_t v, const replay::ModelMeta& meta) { return v < meta.version; });
  return &*it;
}

ModelHub::ModelHub(replay::ModelStore& store, ModelHubOptions options,
                   std::function<void(const std::string&)> on_error)
    : store_(store),
      options_(options),
      on_error_(std::move(on_error)),
      view_(std::make_shared<const ModelView>()) {
  if (options_.recent == 0) options_.recent = 1;
}

ModelHub::~ModelHub() { stop(); }

void ModelHub::start() {
  std::lock_guard lock(thread_mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void ModelHub::stop() {
  {
    std::lock_guard lock(thread_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const ModelView> ModelHub::view() const {
  std::lock_guard lock(view_mutex_);
  return view_;
}

std::uint64_t ModelHub::store_calls() const {
  std::lock_guard lock(view_mutex_);
  return store_calls_;
}

bool ModelHub::refresh() {
  std::lock_guard poll(poll_mutex_);
  const std::shared_ptr<const ModelView> current = view();
  const auto count_call = [this] {
    std::lock_guard lock(view_mutex_);
    ++store_calls_;
  };
  const auto failed = [this](const std::string& error) {
    if (on_error_) on_error_(error);
    return false;
  };
  count_call();
  auto latest = store_.latest();
  if (!latest.ok()) return failed(latest.error());
  const replay::ModelMeta* newest = current->newest();
  if (current->known &&
      (latest->has_value() ? newest && newest->version == (*latest)->version : !newest)) {
    return true;  // nothing new: the usual answer, one call
  }
  auto next = std::make_shared<ModelView>();
  next->known = true;
  if (latest->has_value()) {
    const replay::ModelMeta& last = **latest;
    const std::size_t batch = options_.recent;
    if (newest && last.version > newest->version) {
      // Newer versions: those between the last known and the latest.
      count_call();
      auto newer = store_.versions_after(newest->version, batch);
      if (!newer.ok()) return failed(newer.error());
      if (newer->size() == batch && newer->back().version < last.version) {
        next->recent.push_back(last);  // more than memory holds: the newest alone
        next->floor = last.version - 1;
      } else {
        next->recent = current->recent;
        next->floor = current->floor;
        for (auto& meta : *newer) next->recent.push_back(std::move(meta));
        if (next->recent.back().version < last.version) next->recent.push_back(last);
      }
    } else {
      // First sight (or the store went back, e.g. an older copy restored):
      // every version, when there are fewer than memory holds.
      count_call();
      auto all = store_.versions_after(0, batch);
      if (all.ok() && all->size() < batch && !all->empty() &&
          all->back().version >= last.version) {
        next->recent.assign(all->begin(), all->end());
      } else {
        next->recent.push_back(last);
        next->floor = last.version - 1;
      }
    }
    while (next->recent.size() > batch) {
      next->floor = next->recent.front().version;
      next->recent.pop_front();
    }
  }
  {
    std::lock_guard lock(view_mutex_);
    view_ = std::move(next);
  }
  {
    std::lock_guard lock(thread_mutex_);
    fan_out_pending_ = true;
  }
  wake_.notify_all();
  return true;
}

void ModelHub::subscribe(std::shared_ptr<Subscriber> subscriber) {
  std::lock_guard lock(subscribers_mutex_);
  const Subscriber* key = subscriber.get();
  subscribers_.emplace(key, std::move(subscriber));
}

void ModelHub::unsubscribe(const Subscriber* subscriber) {
  std::shared_ptr<Subscriber> last;  // released outside the lock
  std::lock_guard lock(subscribers_mutex_);
  if (auto it = subscribers_.find(subscriber); it != subscribers_.end()) {
    last = std::move(it->second);
    subscribers_.erase(it);
  }
}

std::size_t ModelHub::subscribers() const {
  std::lock_guard lock(subscribers_mutex_);
  return subscribers_.size();
}

void ModelHub::for_each_subscriber(const std::function<void(Subscriber&)>& f) {
  std::vector<std::shared_ptr<Subscriber>> all;
  {
    std::lock_guard lock(subscribers_mutex_);
    all.reserve(subscribers_.size());
    for (const auto& [key, subscriber] : subscribers_) all.push_back(subscriber);
  }
  for (const auto& subscriber : all) f(*subscriber);
}

void ModelHub::fan_out() {
  const std::shared_ptr<const ModelView> current = view();
  const replay::ModelMeta* newest = current->newest();
  if (!newest || newest->version == fanned_out_) return;
  fanned_out_ = newest->version;
  for_each_subscriber([](Subscriber& subscriber) { subscriber.on_new_version(); });
}

void ModelHub::run() {
  auto next_poll = std::chrono::steady_clock::now();
  std::unique_lock lock(thread_mutex_);
  while (!stopping_) {
    const bool due = std::chrono::steady_clock::now() >= next_poll;
    if (due) {
      lock.unlock();
      refresh();
      lock.lock();
      next_poll = std::chrono::steady_clock::now() + options_.poll;
    }
    if (fan_out_pending_) {
      fan_out_pending_ = false;
      lock.unlock();
      fan_out();
      lock.lock();
      continue;
    }
    wake_.wait_until(lock, next_poll, [this] { return stopping_ || fan_out_pending_; });
  }
}

}  // namespace chessrl::replay_service
