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

grpc::Status DownloadQueue::enter(std::chrono::system_clock::time_point deadline,
                                  const std::function<bool()>& cancelled, const char* what,
                                  std::chrono::milliseconds check) {
  std::unique_lock lock(mutex_);
  if (queue_.empty() && in_flight_ < slots_) {
    ++in_flight_;
    report();
    return grpc::Status::OK;
  }
  Waiter waiter;
  const auto place = queue_.insert(queue_.end(), &waiter);
  const std::size_t ahead = queue_.size() - 1;
  report();
  const auto start = std::chrono::steady_clock::now();
  const auto leave_queue = [&](grpc::StatusCode code, const std::string& why) {
    queue_.erase(place);
    report();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return grpc::Status(code, std::string(what) + ": " + why + " after waiting " +
                                  std::to_string(waited.count()) +
                                  " ms for a download slot (--max-model-downloads " +
                                  std::to_string(slots_) + ", all sending; " +
                                  std::to_string(ahead) + " were waiting ahead of it)");
  };
  while (!waiter.granted) {
    const auto now = std::chrono::system_clock::now();
    if (now >= deadline) return leave_queue(grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed");
    if (cancelled && cancelled()) return leave_queue(grpc::StatusCode::CANCELLED, "the client left");
    changed_.wait_until(lock, deadline - now > check ? now + check : deadline);
  }
  return grpc::Status::OK;  // leave() handed its slot over
}

void DownloadQueue::leave() {
  std::lock_guard lock(mutex_);
  if (!queue_.empty()) {
    queue_.front()->granted = true;  // the slot passes to the oldest waiter
    queue_.pop_front();
    changed_.notify_all();
  } else if (in_flight_ > 0) {
    --in_flight_;
  }
  report();
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

}  // namespace chessrl::replay_service
