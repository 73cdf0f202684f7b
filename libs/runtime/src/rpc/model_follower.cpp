#include "chessrl/runtime/model_follower.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "chessrl/runtime/registry.h"

namespace chessrl::runtime {

namespace {

constexpr std::chrono::milliseconds kRetryMin{500};
constexpr std::chrono::milliseconds kRetryMax{30000};
// How often the watch looks at stop_ (ModelRegistryClient::watch's poll): the
// destructor waits for it, and self-play destroys the follower as it stops,
// before it flushes its buffer (at the watch's default of 500 ms, up to half a
// second of a stop).
constexpr std::chrono::milliseconds kWatchStopPoll{20};

}  // namespace

ModelFollower::ModelFollower(rpc::ClientOptions registry, nn::TorchBackendOptions torch,
                             LogFunction log, RefusedFunction on_refused,
                             SkippedFunction on_skipped)
    : ModelFollower([&] {
        ModelFollowerOptions options;
        options.registry = std::move(registry);
        options.torch = std::move(torch);
        options.log = std::move(log);
        options.on_refused = std::move(on_refused);
        options.on_skipped = std::move(on_skipped);
        return options;
      }()) {}

ModelFollower::ModelFollower(ModelFollowerOptions options) : options_(std::move(options)) {
  channel_ = rpc::make_channel(options_.registry);
  client_ = std::make_unique<rpc::ModelRegistryClient>(options_.registry, channel_);
  load_thread_ = std::thread([this] { load_loop(); });
  watch_thread_ = std::thread([this] {
    client_->watch(
        0,
        [this](const v1::ModelInfo& info) {
          std::lock_guard lock(mutex_);
          announce(info.version());
          return !stop_.load();
        },
        stop_, kWatchStopPoll);
  });
}

void ModelFollower::announce(std::uint64_t version) {
  if (version <= newest_) return;
  newest_ = version;
  if (options_.on_announced) options_.on_announced(version);
  changed_.notify_all();
}

void ModelFollower::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void ModelFollower::request_stop() {
  stop_ = true;
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

ModelFollower::~ModelFollower() {
  request_stop();
  watch_thread_.join();
  load_thread_.join();
}

void ModelFollower::wait_settled(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return settled_; });
}

std::optional<ModelFollower::Pending> ModelFollower::take() {
  std::lock_guard lock(mutex_);
  if (!pending_) return std::nullopt;
  std::optional<Pending> out = std::move(pending_);
  pending_.reset();
  playing_ = out->model.version;
  ready_ = false;
  changed_.notify_all();
  return out;
}

std::vector<std::uint64_t> ModelFollower::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::vector<std::uint64_t> ModelFollower::skipped() const {
  std::lock_guard lock(mutex_);
  return skipped_;
}

void ModelFollower::skip(std::uint64_t version, const std::string& reason) {
  // Only versions above attempted_ are fetched: never downloaded again by this process.
  attempted_ = std::max(attempted_, version);
  skipped_.push_back(version);
  if (options_.on_skipped) options_.on_skipped(version, reason);
}

void ModelFollower::settle() {
  settled_ = true;
  changed_.notify_all();
}

void ModelFollower::load_loop() {
  // Start-up: one quick question, so self-play starts on the latest model
  // rather than swapping to it right after starting.
  {
    rpc::ClientOptions once = options_.registry;
    once.attempts = 1;
    rpc::ModelRegistryClient quick(once, channel_);
    auto latest = quick.latest();
    std::lock_guard lock(mutex_);
    if (!latest.ok()) {
      log("model registry at " + options_.registry.address + " not reachable yet (" + latest.error() +
           "); starting with the bootstrap model and following it when it answers");
    } else if (latest->has_value()) {
      announce((*latest)->version());
    } else {
      log("model registry at " + options_.registry.address +
           " has no model yet; starting with the bootstrap model");
    }
    if (newest_ == 0) settle();
  }

  std::chrono::milliseconds backoff{0};
  Clock::time_point retry_at{};
  bool failing = false;
  for (;;) {
    std::uint64_t version = 0;
    {
      std::unique_lock lock(mutex_);
      auto can_load = [&] {
        return stop_.load() || (newest_ > attempted_ && newest_ > playing_ && !pending_);
      };
      if (retry_at > Clock::now()) {
        changed_.wait_until(lock, retry_at, [&] { return stop_.load(); });
        if (stop_.load()) return;
      }
      changed_.wait(lock, can_load);
      if (stop_.load()) return;
      version = newest_;
    }

    auto got = client_->get(version);
    if (!got.ok() && options_.on_download_failed) options_.on_download_failed(version, got.code());
    if (!got.ok()) {
      const std::string reason = skip_reason(got.code());
      std::lock_guard lock(mutex_);
      if (!reason.empty()) {
        // Asking again would fail the same way: skipped, like an unusable model.
        log("model version " + std::to_string(version) + " cannot be downloaded (" + reason +
             ": " + got.error() + "); skipped, not fetched again (self-play stays on version " +
             std::to_string(playing_) + ")");
        skip(version, reason);
        if (failing) log("model registry answers again");
        failing = false;
      } else {
        backoff = failing ? std::min(backoff * 2, kRetryMax) : kRetryMin;
        if (!failing) {
          log("cannot download model version " + std::to_string(version) + " (" + got.error() +
               "); retrying with backoff");
        }
        failing = true;
        retry_at = Clock::now() + backoff;
      }
      settle();
      continue;
    }
    if (failing) log("model registry answers again");
    failing = false;

    const auto started = Clock::now();
    ModelLoad load;
    if (options_.loader) {
      load = options_.loader(got->second, version);
    } else {
      ModelOptions model_options;
      model_options.torch = options_.torch;
      load = build_model(got->second, version, model_options);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::lock_guard lock(mutex_);
    // Only versions above attempted_ are fetched: a refused or unusable
    // version is never downloaded again by this process.
    attempted_ = std::max(attempted_, version);
    if (load.error == ModelError::kRefused) {
      refused_.push_back(version);
      log("model version " + std::to_string(version) + " refused, not fetched again (self-play " +
           "stays on version " + std::to_string(playing_) + "): " + load.detail);
      if (options_.on_refused) options_.on_refused(version);
    } else if (!load.ok()) {
      // Not a checkpoint, or one that does not build here: self-play keeps playing.
      log("model version " + std::to_string(version) +
           " is unusable, skipped (self-play stays on version " + std::to_string(playing_) +
           "): " + load.detail);
      skip(version, "unusable");
    } else {
      char timing[64];
      std::snprintf(timing, sizeof timing, " in %.2f s", seconds);
      Model& model = *load.model;
      model.version = version;
      model.description = "version " + std::to_string(version) + " (" + model.description + ")";
      log("model " + model.description + " downloaded (" + std::to_string(got->second.size()) +
           " bytes) and built" + timing + "; self-play takes it up between games");
      pending_ = Pending{std::move(model), Clock::now()};
      ready_ = true;
    }
    settle();
  }
}

}  // namespace chessrl::runtime
