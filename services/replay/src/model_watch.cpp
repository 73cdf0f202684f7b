// ModelRegistryImpl::WatchModels: a callback stream per watcher. A stream
// holds no thread: it is one WatchStream (its last version sent and the
// message being written) subscribed to the process's ModelHub, which polls
// the store once for all of them and wakes them on a newer version. A stream
// writes one message at a time; while a write is in flight newer versions
// wait in the hub's memory, so a slow watcher costs nothing more (one that
// falls more than the hub's 64 versions behind skips to the newest).
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
class Refusal final : public grpc::ServerWriteReactor<v1::ModelInfo> {
 public:
  explicit Refusal(const Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

class WatchStream final : public grpc::ServerWriteReactor<v1::ModelInfo>,
                          public ModelHub::Subscriber {
 public:
  WatchStream(ModelRegistryImpl& registry, std::uint64_t after_version)
      : registry_(registry), sent_(after_version), from_scratch_(after_version == 0) {}

  // Owned by itself from now until OnDone (the hub's fan-out may hold it a moment longer).
  void own(std::shared_ptr<WatchStream> self) { self_ = std::move(self); }

  void on_new_version() override { pump(); }

  // Starts the next write when none is in flight and there is a version to send.
  void pump() {
    std::unique_lock lock(mutex_);
    if (writing_ || finished_ || finish_) return;
    const std::shared_ptr<const ModelView> view = registry_.hub().view();
    // A watcher from scratch starts at the latest version, not at version 1.
    const replay::ModelMeta* next = from_scratch_ ? view->newest() : view->next_after(sent_);
    if (!next) return;
    from_scratch_ = false;
    sent_ = next->version;
    message_ = to_proto(*next);
    writing_ = true;
    lock.unlock();
    StartWrite(&message_);  // never under the lock: gRPC may call back on this thread
  }

  // Ends the stream with `status`, after the write in flight if there is one.
  void end(const Status& status) {
    std::unique_lock lock(mutex_);
    if (finished_ || finish_) return;
    if (writing_) {
      finish_ = status;
      return;
    }
    finished_ = true;
    code_ = status.error_code();
    lock.unlock();
    Finish(status);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mutex_);
    writing_ = false;
    if (!ok && !finish_) finish_ = Status::OK;  // the client left
    if (finish_ && !finished_) {
      finished_ = true;
      const Status status = *finish_;
      code_ = status.error_code();
      lock.unlock();
      Finish(status);
      return;
    }
    lock.unlock();
    pump();
  }

  // The client cancelled or went away: a watcher leaving is the normal end.
  void OnCancel() override { end(Status::OK); }

  void OnDone() override {
    registry_.hub().unsubscribe(this);
    registry_.watcher_left();
    registry_.metrics_.record_call("WatchModels", code_, 0.0, /*timed=*/false);
    const std::shared_ptr<WatchStream> last = std::move(self_);  // may delete this
  }

 private:
  ModelRegistryImpl& registry_;
  std::mutex mutex_;
  v1::ModelInfo message_;  // the one being written; untouched while writing_
  std::uint64_t sent_;     // the newest version sent (or after_version)
  bool from_scratch_;      // nothing sent yet and after_version 0
  bool writing_ = false;
  bool finished_ = false;         // Finish called
  std::optional<Status> finish_;  // to finish with once the write in flight is done
  StatusCode code_ = StatusCode::OK;
  std::shared_ptr<WatchStream> self_;
};

grpc::ServerWriteReactor<v1::ModelInfo>* ModelRegistryImpl::WatchModels(
    grpc::CallbackServerContext* context, const v1::WatchModelsRequest* request) {
  const auto refuse = [&](const Status& status) {
    metrics_.record_call("WatchModels", status.error_code(), 0.0, /*timed=*/false);
    return new Refusal(status);
  };
  try {
    if (Status denied = handler::check_callback_token(auth_, *context, rpc::Action::kRead,
                                                      "WatchModels");
        !denied.ok()) {
      return refuse(denied);
    }
    std::unique_lock lock(watch_mutex_);
    if (stopping_) {
      return refuse(Status(StatusCode::UNAVAILABLE, "WatchModels: the server is stopping"));
    }
    if (watchers_ >= options_.max_watchers) {
      const std::uint32_t open = watchers_;
      lock.unlock();
      // Not UNAVAILABLE: the client must not come back to this replica over
      // the same connection, but open a new one (and poll meanwhile).
      context->AddTrailingMetadata(kRetryElsewhereKey, "1");
      return refuse(Status(StatusCode::RESOURCE_EXHAUSTED,
                           "WatchModels: " + std::to_string(open) +
                               " streams are open, the most --max-watchers allows; try another "
                               "replica"));
    }
    ++watchers_;
    metrics_.model_watchers.set(static_cast<double>(watchers_));
    auto stream = std::make_shared<WatchStream>(*this, request->after_version());
    stream->own(stream);
    hub_->subscribe(stream);  // under watch_mutex_: stop_watchers() sees it or it was refused
    lock.unlock();
    stream->pump();
    return stream.get();
  } catch (const std::exception& e) {
    return refuse(Status(StatusCode::INTERNAL, std::string("WatchModels: ") + e.what()));
  }
}

void ModelRegistryImpl::watcher_left() {
  std::lock_guard lock(watch_mutex_);
  --watchers_;
  metrics_.model_watchers.set(static_cast<double>(watchers_));
}

void ModelRegistryImpl::stop_watchers() {
  {
    std::lock_guard lock(watch_mutex_);
    stopping_ = true;
  }
  const Status stopping(StatusCode::UNAVAILABLE, "WatchModels: the server is stopping");
  hub_->for_each_subscriber([&](ModelHub::Subscriber& subscriber) {
    if (auto* stream = dynamic_cast<WatchStream*>(&subscriber)) stream->end(stopping);
  });
}

}  // namespace chessrl::replay_service
