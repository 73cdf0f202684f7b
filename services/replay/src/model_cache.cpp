#include "chessrl/replay_service/model_cache.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <utility>

namespace chessrl::replay_service {

ModelBlobCache::ModelBlobCache(replay::ModelStore& store, std::uint64_t max_bytes,
                               ModelCacheMetrics metrics)
    : store_(store), max_bytes_(max_bytes), metrics_(metrics) {
  report();
}

replay::StoreResult<std::optional<ModelBlob>> ModelBlobCache::get(std::uint64_t version,
                                                                  const replay::ModelMeta* meta) {
  std::unique_lock lock(mutex_);
  if (auto it = entries_.find(version); it != entries_.end()) {
    it->second.used = ++tick_;
    if (metrics_.hits) metrics_.hits->inc();
    return std::optional<ModelBlob>(it->second.blob);
  }
  if (auto it = live_.find(version); it != live_.end()) {
    if (auto bytes = it->second.second.lock()) {
      ModelBlob blob{it->second.first, std::move(bytes)};
      keep(blob);
      if (metrics_.hits) metrics_.hits->inc();
      return std::optional<ModelBlob>(std::move(blob));
    }
  }
  if (auto it = flights_.find(version); it != flights_.end()) {
    const std::shared_ptr<Flight> flight = it->second;
    if (metrics_.hits) metrics_.hits->inc();
    loaded_.wait(lock, [&] { return flight->done; });
    return *flight->result;
  }
  auto flight = std::make_shared<Flight>();
  flights_.emplace(version, flight);
  lock.unlock();
  std::optional<replay::StoreResult<std::optional<ModelBlob>>> result;
  try {
    result.emplace(load(version, meta));
  } catch (const std::exception& e) {
    result.emplace(Failure{std::string("reading model version ") + std::to_string(version) +
                           ": " + e.what()});
  }
  lock.lock();
  if (result->ok() && result->value().has_value()) {
    const ModelBlob& blob = *result->value();
    live_[version] = {blob.meta, blob.bytes};
    keep(blob);
  }
  flight->result = result;
  flight->done = true;
  flights_.erase(version);
  loaded_.notify_all();
  return std::move(*result);
}

replay::StoreResult<std::optional<ModelBlob>> ModelBlobCache::load(std::uint64_t version,
                                                                   const replay::ModelMeta* meta) {
  replay::ModelMeta info;
  if (meta) {
    info = *meta;
  } else {
    auto stored = store_.info(version);
    if (!stored.ok()) return stored.failure();
    if (!stored->has_value()) return std::optional<ModelBlob>();
    info = std::move(**stored);
  }
  auto bytes = store_.read(version);
  {
    std::lock_guard lock(mutex_);
    ++reads_;
  }
  if (metrics_.reads) metrics_.reads->inc();
  if (!bytes.ok()) return bytes.failure();
  if (!bytes->has_value()) return std::optional<ModelBlob>();
  if ((*bytes)->size() != info.size_bytes) {
    return replay::store_fail(replay::StoreErrorKind::kDataLoss,
                              "model version " + std::to_string(version) + ": read " +
                                  std::to_string((*bytes)->size()) + " bytes, its info says " +
                                  std::to_string(info.size_bytes));
  }
  return std::optional<ModelBlob>(
      ModelBlob{std::move(info), std::make_shared<const std::string>(std::move(**bytes))});
}

void ModelBlobCache::keep(const ModelBlob& blob) {
  // Blobs no download holds any more are forgotten.
  for (auto it = live_.begin(); it != live_.end();) {
    it = it->second.second.expired() ? live_.erase(it) : std::next(it);
  }
  const std::uint64_t size = blob.bytes->size();
  if (size > max_bytes_ || entries_.count(blob.meta.version) != 0) return;
  while (!entries_.empty() && bytes_ + size > max_bytes_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    });
    bytes_ -= oldest->second.blob.bytes->size();
    entries_.erase(oldest);
  }
  entries_.emplace(blob.meta.version, Entry{blob, ++tick_});
  bytes_ += size;
  report();
}

void ModelBlobCache::report() {
  if (metrics_.bytes) metrics_.bytes->set(static_cast<double>(bytes_));
  if (metrics_.versions) metrics_.versions->set(static_cast<double>(entries_.size()));
}

std::optional<ModelBlob> ModelBlobCache::peek(std::uint64_t version) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(version); it != entries_.end()) {
    it->second.used = ++tick_;
    if (metrics_.hits) metrics_.hits->inc();
    return it->second.blob;
  }
  if (auto it = live_.find(version); it != live_.end()) {
    if (auto bytes = it->second.second.lock()) {
      ModelBlob blob{it->second.first, std::move(bytes)};
      keep(blob);
      if (metrics_.hits) metrics_.hits->inc();
      return blob;
    }
  }
  return std::nullopt;
}

std::optional<replay::ModelMeta> ModelBlobCache::cached_meta(std::uint64_t version) const {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(version); it != entries_.end()) return it->second.blob.meta;
  return std::nullopt;
}

std::uint64_t ModelBlobCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t ModelBlobCache::versions() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::uint64_t ModelBlobCache::store_reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

DownloadQueue::DownloadQueue(std::uint32_t slots, metrics::Gauge* in_flight,
                             metrics::Gauge* waiting)
    : slots_(std::max<std::uint32_t>(slots, 1)),
      in_flight_gauge_(in_flight),
      waiting_gauge_(waiting) {
  report();
}

namespace {
// The share of a caller's time left that its estimated wait and transfer may
// take when it is first judged; later judgements allow it all.
constexpr double kFirstShare = 0.75;
}  // namespace

std::uint64_t DownloadQueue::sized(std::uint64_t bytes) const {
  return bytes != 0 ? bytes : static_cast<std::uint64_t>(mean_bytes_);
}

std::optional<double> DownloadQueue::wait_seconds(std::uint64_t bytes_ahead) const {
  if (seconds_per_byte_ <= 0) return std::nullopt;
  // Every slot sends at 1 / seconds_per_byte_: what is queued ahead goes out
  // over all of them, after the downloads in flight (half done, on average).
  // Nothing to wait for while a slot is free.
  if (in_flight_ < slots_ && bytes_ahead == 0) return 0.0;
  const double bytes = static_cast<double>(bytes_ahead) + static_cast<double>(in_flight_bytes_) / 2;
  return seconds_per_byte_ * bytes / slots_;
}

bool DownloadQueue::fits(std::uint64_t bytes_ahead, std::uint64_t bytes,
                         std::chrono::system_clock::time_point deadline,
                         std::chrono::system_clock::time_point now, double share,
                         double* wait) const {
  const std::optional<double> waiting = wait_seconds(bytes_ahead);
  if (!waiting) return true;  // no estimate yet: it waits
  *wait = *waiting;
  if (deadline == std::chrono::system_clock::time_point::max()) return true;
  const double left = std::chrono::duration<double>(deadline - now).count();
  return *waiting + seconds_per_byte_ * static_cast<double>(sized(bytes)) <= share * left;
}

QueueTurn DownloadQueue::enter(std::uint64_t bytes, std::chrono::system_clock::time_point deadline,
                               OnTurn on_turn) {
  std::lock_guard lock(mutex_);
  if (bytes != 0) {
    mean_bytes_ = mean_bytes_ == 0 ? static_cast<double>(bytes)
                                   : 0.8 * mean_bytes_ + 0.2 * static_cast<double>(bytes);
  }
  QueueTurn turn;
  turn.ahead = queue_.size();
  if (queue_.empty() && in_flight_ < slots_) {
    ++in_flight_;
    in_flight_bytes_ += sized(bytes);
    report();
    return turn;  // kGranted
  }
  double wait = 0;
  if (!fits(queued_bytes_, bytes, deadline, std::chrono::system_clock::now(), kFirstShare, &wait)) {
    turn.kind = QueueTurn::Kind::kRefused;
    turn.wait = std::chrono::milliseconds(static_cast<std::int64_t>(wait * 1000));
    return turn;
  }
  turn.kind = QueueTurn::Kind::kWaiting;
  turn.ticket = next_ticket_++;
  queue_.push_back(
      Waiter{turn.ticket, sized(bytes), deadline, std::move(on_turn), seconds_per_byte_ > 0});
  queued_bytes_ += queue_.back().bytes;
  report();
  return turn;
}

bool DownloadQueue::withdraw(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->ticket != ticket) continue;
    queued_bytes_ -= it->bytes;
    queue_.erase(it);
    report();
    return true;
  }
  return false;
}

void DownloadQueue::leave(std::uint64_t bytes, std::chrono::steady_clock::duration took,
                          bool completed) {
  struct Told {
    OnTurn on_turn;
    bool granted;
    std::chrono::milliseconds wait;
  };
  std::vector<Told> told;  // called after the lock
  {
    std::lock_guard lock(mutex_);
    if (completed && bytes > 0) {
      // The first downloads to finish are the fastest of their round: the
      // estimate starts from the mean of half a round (at most 8), then follows.
      const double seconds = std::chrono::duration<double>(took).count();
      ++completed_;
      if (seconds_per_byte_ == 0) {
        first_seconds_ += seconds;
        first_bytes_ += static_cast<double>(bytes);
        if (completed_ >= std::min<std::uint64_t>((slots_ + 1) / 2, 8)) {
          seconds_per_byte_ = first_seconds_ / first_bytes_;
        }
      } else {
        seconds_per_byte_ = 0.8 * seconds_per_byte_ + 0.2 * seconds / static_cast<double>(bytes);
      }
    }
    const std::uint64_t sent = sized(bytes);
    in_flight_bytes_ -= std::min(in_flight_bytes_, sent);
    if (!queue_.empty()) {
      Waiter next = std::move(queue_.front());  // the slot passes to the oldest waiter
      queue_.pop_front();
      queued_bytes_ -= next.bytes;
      in_flight_bytes_ += next.bytes;
      told.push_back(Told{std::move(next.on_turn), true, std::chrono::milliseconds(0)});
    } else if (in_flight_ > 0) {
      --in_flight_;
    }
    if (in_flight_ == 0) in_flight_bytes_ = 0;  // sizes assumed from the mean do not drift
    // Those who would now wait past their deadline are told at once. One
    // told keeps its place in the estimates of those behind it: it is to
    // come back before them.
    const auto now = std::chrono::system_clock::now();
    std::uint64_t ahead = 0;
    for (auto it = queue_.begin(); it != queue_.end();) {
      double wait = 0;
      const bool fit =
          fits(ahead, it->bytes, it->deadline, now, it->judged ? 1.0 : kFirstShare, &wait);
      ahead += it->bytes;
      if (fit) {
        it->judged = true;
        ++it;
        continue;
      }
      queued_bytes_ -= it->bytes;
      told.push_back(Told{std::move(it->on_turn), false,
                          std::chrono::milliseconds(static_cast<std::int64_t>(wait * 1000))});
      it = queue_.erase(it);
    }
    report();
  }
  for (Told& t : told) t.on_turn(t.granted, t.wait);
}

std::optional<std::chrono::milliseconds> DownloadQueue::estimate_wait() const {
  std::lock_guard lock(mutex_);
  const std::optional<double> wait = wait_seconds(queued_bytes_);
  if (!wait) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(*wait * 1000));
}

std::optional<std::chrono::milliseconds> DownloadQueue::estimate_transfer(
    std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  if (seconds_per_byte_ <= 0) return std::nullopt;
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(seconds_per_byte_ * static_cast<double>(sized(bytes)) * 1000));
}

std::uint32_t DownloadQueue::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

std::size_t DownloadQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void DownloadQueue::report() {
  if (in_flight_gauge_) in_flight_gauge_->set(static_cast<double>(in_flight_));
  if (waiting_gauge_) waiting_gauge_->set(static_cast<double>(queue_.size()));
}

TaskPool::TaskPool(int threads) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { run(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void TaskPool::post(std::function<void()> task) {
  post_at(std::chrono::steady_clock::time_point::min(), std::move(task));
}

void TaskPool::post_at(std::chrono::steady_clock::time_point when, std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    tasks_.emplace(when, std::move(task));
  }
  wake_.notify_one();
}

void TaskPool::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (tasks_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto first = tasks_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      wake_.wait_until(lock, first->first);
      continue;
    }
    std::function<void()> task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    try {
      task();
    } catch (...) {
      // A task reports its own failures; one that throws must not end the thread.
    }
    lock.lock();
  }
}

}  // namespace chessrl::replay_service
