// ModelRegistryImpl::GetModel: a callback stream per download. A stream holds
// no thread: while it waits for a slot (DownloadQueue, --max-model-downloads)
// it is one DownloadStream in the queue's list; the store calls it needs (the
// latest or best pointer, the cache's single read of a version) run on the
// registry's few worker threads (TaskPool), never on gRPC's; it then writes
// one chunk at a time, each a slice of the blob every download of that
// version shares. A deadline passing or the client leaving cancels the call
// (OnCancel), which takes a waiter out of the queue. A waiter whose deadline
// would pass before its turn is answered UNAVAILABLE with the trailer
// chessrl-retry-after-ms shortly before that deadline (docs/replay.md, "Model
// distribution").
#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "handler_util.h"
#include "chessrl/replay_service/replay_service.h"

namespace chessrl::replay_service {

using grpc::Status;
using grpc::StatusCode;

namespace {

// A stream answered at once (refused): finishes, then deletes itself.
class Refusal final : public grpc::ServerWriteReactor<v1::ModelChunk> {
 public:
  explicit Refusal(const Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// How long before its deadline a caller that cannot be served in time is
// answered (its client must get the answer before giving up on its own).
constexpr std::chrono::milliseconds kAnswerBeforeDeadline{1000};

std::int64_t ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

class DownloadStream final : public grpc::ServerWriteReactor<v1::ModelChunk>,
                             public std::enable_shared_from_this<DownloadStream> {
 public:
  DownloadStream(ModelRegistryImpl& registry, grpc::CallbackServerContext& context,
                 const v1::GetModelRequest& request)
      : registry_(registry),
        context_(context),
        best_(request.best()),
        version_(request.version()),
        deadline_(context.deadline()),
        arrived_(std::chrono::steady_clock::now()),
        arrived_at_(std::chrono::system_clock::now()) {}

  // Owned by itself from now until OnDone (queued callbacks and tasks may hold it longer).
  void own(std::shared_ptr<DownloadStream> self) { self_ = std::move(self); }

  void start() {
    if (best_ || version_ == 0) {
      post([this] { resolve(); });  // the pointers come from the store
      return;
    }
    if (const replay::ModelMeta* known = registry_.hub().view()->find(version_)) meta_ = *known;
    enter_queue();
  }

  // Server shutdown: ends the stream (after the chunk in flight).
  void stop() { finish(Status(StatusCode::UNAVAILABLE, "GetModel: the server is stopping")); }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mutex_);
    writing_ = false;
    if (!ok) {
      lock.unlock();
      finish(Status(StatusCode::CANCELLED, "GetModel: client went away"));
      return;
    }
    if (pending_) {
      const Status status = *pending_;
      lock.unlock();
      finish(status);
      return;
    }
    if (offset_ >= blob_->bytes->size()) {
      lock.unlock();
      finish(Status::OK);
      return;
    }
    next_chunk();
    writing_ = true;
    lock.unlock();
    StartWrite(&chunk_);
  }

  // The client left, or the call's deadline passed.
  void OnCancel() override {
    std::unique_lock lock(mutex_);
    const bool waited = state_ == State::kWaiting;
    const std::size_t ahead = ahead_;
    lock.unlock();
    if (waited && std::chrono::system_clock::now() >= deadline_) {
      finish(Status(StatusCode::DEADLINE_EXCEEDED,
                    "GetModel: the deadline passed after waiting " +
                        std::to_string(ms_since(arrived_)) +
                        " ms for a download slot (--max-model-downloads " +
                        std::to_string(registry_.downloads_->slots()) + ", all sending; " +
                        std::to_string(ahead) + " were waiting ahead of it)"));
    } else {
      finish(Status(StatusCode::CANCELLED, "GetModel: the client left"));
    }
  }

  void OnDone() override {
    registry_.download_left(this);
    registry_.metrics_.record_call(
        "GetModel", code_,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived_).count(),
        /*timed=*/true);
    const std::shared_ptr<DownloadStream> last = std::move(self_);  // may delete this
  }

 private:
  enum class State { kStarting, kWaiting, kDeferred, kGranted };

  template <class Task>
  void post(Task task) {
    registry_.pool_->post([self = shared_from_this(), task] { task(); });
  }

  bool finished() {
    std::lock_guard lock(mutex_);
    return finished_;
  }

  // GetModel of the latest or the best: which version (worker thread).
  void resolve() {
    if (finished()) return;
    // The pointers from the store (one small call: exact even just after
    // another process published), the latest from memory while it is down.
    auto found = best_ ? registry_.store_.best() : registry_.store_.latest();
    if (!found.ok() && !best_ && registry_.hub().view()->known) found = registry_.latest();
    if (!found.ok()) return finish(handler::store_error("GetModel", found));
    if (!found->has_value()) {
      return finish(Status(StatusCode::NOT_FOUND, best_ ? "GetModel: no best model yet"
                                                        : "GetModel: no model published yet"));
    }
    meta_ = std::move(**found);
    version_ = meta_->version;
    enter_queue();
  }

  void enter_queue() {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    // Under mutex_: a turn decided on another thread waits until the ticket is kept.
    const QueueTurn turn = registry_.downloads_->enter(
        meta_ ? meta_->size_bytes : 0, deadline_,
        [self = shared_from_this()](bool granted, std::chrono::milliseconds wait) {
          self->on_turn(granted, wait);
        });
    ahead_ = turn.ahead;
    switch (turn.kind) {
      case QueueTurn::Kind::kGranted:
        state_ = State::kGranted;
        lock.unlock();
        granted();
        return;
      case QueueTurn::Kind::kWaiting:
        state_ = State::kWaiting;
        ticket_ = turn.ticket;
        return;
      case QueueTurn::Kind::kRefused:
        state_ = State::kDeferred;
        lock.unlock();
        defer(turn.wait);
        return;
    }
  }

  void on_turn(bool granted_slot, std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    if (finished_) {  // it left while its turn was being decided
      lock.unlock();
      if (granted_slot) registry_.downloads_->leave(0, {}, /*completed=*/false);
      return;
    }
    state_ = granted_slot ? State::kGranted : State::kDeferred;
    lock.unlock();
    if (granted_slot) {
      granted();
    } else {
      defer(wait);
    }
  }

  // A slot is held: the bytes from memory at once, or read on a worker thread.
  void granted() {
    {
      std::lock_guard lock(mutex_);
      holds_slot_ = true;
      slot_since_ = std::chrono::steady_clock::now();
    }
    if (std::optional<ModelBlob> blob = registry_.cache_->peek(version_)) {
      send(std::move(*blob));
      return;
    }
    post([this] { load(); });
  }

  void load() {
    if (finished()) return;
    auto blob = registry_.cache_->get(version_, meta_ ? &*meta_ : nullptr);
    if (!blob.ok()) {
      registry_.metrics_.store_errors.inc();
      return finish(handler::store_error("GetModel", blob));
    }
    if (!blob->has_value()) {
      return finish(Status(
          StatusCode::NOT_FOUND,
          "GetModel: no version " + std::to_string(version_) +
              (meta_ ? " (pruned: the registry keeps the newest --keep-models versions, the "
                       "best and the leased)"
                     : " (never published, or pruned: the registry keeps the newest "
                       "--keep-models versions, the best and the leased)")));
    }
    send(std::move(**blob));
  }

  void send(ModelBlob blob) {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    blob_ = std::move(blob);
    offset_ = 0;
    *chunk_.mutable_info() = to_proto(blob_->meta);
    next_chunk();
    writing_ = true;
    lock.unlock();
    StartWrite(&chunk_);  // never under the lock: gRPC may call back on this thread
  }

  // The next slice of the blob into chunk_ (under mutex_).
  void next_chunk() {
    const std::string& data = *blob_->bytes;
    if (offset_ != 0) chunk_.clear_info();
    const std::size_t n =
        std::min<std::size_t>(registry_.options_.chunk_bytes, data.size() - offset_);
    chunk_.set_data(data.data() + offset_, n);
    offset_ += n;
  }

  // Its deadline would pass before its turn: answered shortly before it.
  void defer(std::chrono::milliseconds wait) {
    refused_wait_ = wait;
    turn_at_ = std::chrono::steady_clock::now() + wait;
    const auto left = deadline_ - std::chrono::system_clock::now() - kAnswerBeforeDeadline;
    const auto when =
        std::chrono::steady_clock::now() +
        std::max<std::chrono::steady_clock::duration>(
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(left),
            std::chrono::steady_clock::duration::zero());
    registry_.pool_->post_at(when, [self = shared_from_this()] { self->answer_deferred(); });
  }

  void answer_deferred() {
    if (finished()) return;
    DownloadQueue& queue = *registry_.downloads_;
    // Its turn was estimated at turn_at_: a call as long as this one, started
    // `retry` from now, would then wait a quarter of what its transfer leaves
    // of it, the rest for the estimate's error and the clients' jitter (those
    // told alike come back in another order than their turns).
    const std::chrono::milliseconds transfer =
        queue.estimate_transfer(meta_ ? meta_->size_bytes : 0).value_or(std::chrono::milliseconds(0));
    const auto call = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - arrived_at_);
    const auto until_turn = std::chrono::duration_cast<std::chrono::milliseconds>(
        turn_at_ - std::chrono::steady_clock::now());
    const std::chrono::milliseconds retry = std::max(
        std::chrono::milliseconds(0),
        until_turn - std::max(std::chrono::milliseconds(0), call - transfer) / 4);
    registry_.metrics_.model_downloads_deferred.inc();
    finish(Status(StatusCode::UNAVAILABLE,
                  "GetModel: about " + std::to_string(refused_wait_.count()) +
                      " ms until a download slot would be free (--max-model-downloads " +
                      std::to_string(queue.slots()) + ", all sending; " +
                      std::to_string(queue.waiting()) +
                      " waiting), past this call's deadline; try again in " +
                      std::to_string(retry.count()) + " ms"),
           std::to_string(retry.count()));
  }

  // Ends the stream once (after the write in flight, if any), freeing its slot.
  void finish(const Status& status, std::optional<std::string> retry_after_ms = std::nullopt) {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    if (writing_) {
      if (!pending_) pending_ = status;
      return;
    }
    finished_ = true;
    code_ = status.error_code();
    const bool held = holds_slot_;
    holds_slot_ = false;
    const std::uint64_t bytes = blob_ ? blob_->bytes->size() : 0;
    const auto took = std::chrono::steady_clock::now() - slot_since_;
    // A waiter leaves the queue; if its turn was decided meanwhile, on_turn frees the slot.
    if (state_ == State::kWaiting) registry_.downloads_->withdraw(ticket_);
    blob_.reset();
    chunk_.Clear();
    if (retry_after_ms) context_.AddTrailingMetadata(kRetryAfterMsKey, *retry_after_ms);
    lock.unlock();
    if (held) registry_.downloads_->leave(bytes, took, /*completed=*/status.ok());
    Finish(status);
  }

  ModelRegistryImpl& registry_;
  grpc::CallbackServerContext& context_;  // valid until OnDone; untouched once finished_
  const bool best_;
  std::uint64_t version_;                 // set before the queue is entered, then read only
  std::optional<replay::ModelMeta> meta_;  // likewise
  const std::chrono::system_clock::time_point deadline_;
  const std::chrono::steady_clock::time_point arrived_;
  const std::chrono::system_clock::time_point arrived_at_;
  std::chrono::milliseconds refused_wait_{0};       // set once, before answer_deferred
  std::chrono::steady_clock::time_point turn_at_;  // likewise: the estimated turn
  std::mutex mutex_;
  State state_ = State::kStarting;  // guarded by mutex_
  std::uint64_t ticket_ = 0;        // guarded by mutex_: while kWaiting
  std::size_t ahead_ = 0;          // guarded by mutex_
  bool holds_slot_ = false;  // guarded by mutex_
  std::chrono::steady_clock::time_point slot_since_;
  std::optional<ModelBlob> blob_;  // guarded by mutex_: while sending
  std::size_t offset_ = 0;         // guarded by mutex_
  v1::ModelChunk chunk_;           // the one being written; untouched while writing_
  bool writing_ = false;           // guarded by mutex_
  bool finished_ = false;          // guarded by mutex_: Finish called (or about to be)
  std::optional<Status> pending_;  // guarded by mutex_: to finish with after the write
  StatusCode code_ = StatusCode::OK;
  std::shared_ptr<DownloadStream> self_;
};

grpc::ServerWriteReactor<v1::ModelChunk>* ModelRegistryImpl::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request) {
  const auto refuse = [&](const Status& status) {
    metrics_.record_call("GetModel", status.error_code(), 0.0, /*timed=*/true);
    return new Refusal(status);
  };
  try {
    if (Status denied = handler::check_callback_token(auth_, *context, rpc::Action::kRead,
                                                      "GetModel");
        !denied.ok()) {
      return refuse(denied);
    }
    if (request->best() && request->version() != 0) {
      return refuse(
          Status(StatusCode::INVALID_ARGUMENT, "GetModel: give a version or best, not both"));
    }
    std::unique_lock lock(download_mutex_);
    if (downloads_stopping_) {
      return refuse(Status(StatusCode::UNAVAILABLE, "GetModel: the server is stopping"));
    }
    auto stream = std::make_shared<DownloadStream>(*this, *context, *request);
    stream->own(stream);
    download_streams_.emplace(stream.get(), stream);
    lock.unlock();
    stream->start();
    return stream.get();
  } catch (const std::exception& e) {
    return refuse(Status(StatusCode::INTERNAL, std::string("GetModel: ") + e.what()));
  }
}

void ModelRegistryImpl::download_left(DownloadStream* stream) {
  std::lock_guard lock(download_mutex_);
  download_streams_.erase(stream);
}

void ModelRegistryImpl::stop_downloads() {
  std::vector<std::shared_ptr<DownloadStream>> streams;
  {
    std::lock_guard lock(download_mutex_);
    downloads_stopping_ = true;
    for (auto& [raw, weak] : download_streams_) {
      if (auto stream = weak.lock()) streams.push_back(std::move(stream));
    }
  }
  for (auto& stream : streams) stream->stop();
}

}  // namespace chessrl::replay_service
