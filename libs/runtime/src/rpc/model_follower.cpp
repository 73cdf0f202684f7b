#include "chessrl/runtime/model_follower.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "chessrl/runtime/registry.h"

namespace chessrl::runtime {

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

ModelFollower::ModelFollower(ModelFollowerOptions options)
    : options_(std::move(options)),
      rng_(options_.seed != 0 ? options_.seed : random_backoff_seed()),
      download_backoff_(options_.download_backoff, rng_.next()) {
  // One connection for the watch and the downloads until something fails.
  channel_ = rpc::make_channel(options_.registry);
  client_ = std::make_unique<rpc::ModelRegistryClient>(options_.registry, channel_);
  watch_client_ = std::make_unique<rpc::ModelRegistryClient>(options_.registry, channel_);
  load_thread_ = std::thread([this] { load_loop(); });
  watch_thread_ = std::thread([this] { watch_loop(); });
}

void ModelFollower::watch_loop() {
  rpc::ModelRegistryClient::WatchHooks hooks;
  hooks.backoff = options_.watch_backoff;
  {
    std::lock_guard lock(mutex_);
    hooks.seed = rng_.next() | 1;
  }
  hooks.held_after = options_.watch_held_after;
  hooks.on_open = [this] {
    std::lock_guard lock(mutex_);
    stream_open_ = true;
    stream_opened_ = Clock::now();
    changed_.notify_all();
  };
  hooks.on_end = [this](const grpc::Status& status, bool elsewhere) {
    std::lock_guard lock(mutex_);
    stream_open_ = false;
    if (polling_ || stop_.load()) return;
    polling_ = true;
    poll_at_ = Clock::now() + jitter(options_.poll_interval);
    log("model watch at " + options_.registry.address + " ended (" +
        rpc::describe("WatchModels", status) + ")" +
        (elsewhere ? "; that replica is full, watching again on a new connection"
                   : "; watching again on a new connection") +
        ", asking LatestModel every ~" +
        std::to_string(options_.poll_interval.count() / 1000) + " s meanwhile");
    changed_.notify_all();
  };
  watch_client_->watch(
      0,
      [this](const v1::ModelInfo& info) {
        std::lock_guard lock(mutex_);
        announce(info.version());
        if (polling_) {
          polling_ = false;
          log("model watch at " + options_.registry.address + " is back; no more polling");
        }
        return !stop_.load();
      },
      stop_source_.get_token(), hooks);
}

ModelFollower::Clock::duration ModelFollower::jitter(Clock::duration up_to) {
  return std::chrono::duration_cast<Clock::duration>(up_to * rng_.uniform());
}

void ModelFollower::announce(std::uint64_t version) {
  if (version <= newest_) return;
  newest_ = version;
  // A new version is fetched after its own spread, not after an older one's retry.
  download_backoff_.reset();
  load_at_ = Clock::now() + jitter(options_.announce_spread);
  if (options_.on_announced) options_.on_announced(version);
  changed_.notify_all();
}

void ModelFollower::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void ModelFollower::request_stop() {
  stop_ = true;
  stop_source_.request_stop();
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

void ModelFollower::poll_latest() {
  auto latest = client_->latest();
  std::lock_guard lock(mutex_);
  poll_at_ = Clock::now() + options_.poll_interval / 2 + jitter(options_.poll_interval);
  if (latest.ok() && latest->has_value()) announce((*latest)->version());
  if (latest.retry_elsewhere()) {
    client_ = std::make_unique<rpc::ModelRegistryClient>(options_.registry,
                                                         rpc::make_fresh_channel(options_.registry));
  }
}

void ModelFollower::load_loop() {
  // Start-up: one quick question, so self-play starts on the latest model
  // rather than swapping to it right after starting (no spread: nothing plays yet).
  {
    auto latest = client_->latest();
    std::lock_guard lock(mutex_);
    if (!latest.ok()) {
      log("model registry at " + options_.registry.address + " not reachable yet (" +
          latest.error() + "); starting with the bootstrap model and following it when it answers");
    } else if (latest->has_value()) {
      announce((*latest)->version());
      load_at_ = Clock::now();
    } else {
      log("model registry at " + options_.registry.address +
          " has no model yet; starting with the bootstrap model");
    }
    if (newest_ == 0) settle();
  }

  bool failing = false;
  for (;;) {
    std::uint64_t version = 0;
    bool poll = false;
    {
      std::unique_lock lock(mutex_);
      for (;;) {
        if (stop_.load()) return;
        const auto now = Clock::now();
        if (polling_ && stream_open_ && now - stream_opened_ >= options_.watch_held_after) {
          polling_ = false;
          log("model watch at " + options_.registry.address + " is back; no more polling");
        }
        const bool wanted = newest_ > attempted_ && newest_ > playing_ && !pending_;
        const auto load_at = std::max(load_at_, newest_ == failed_version_ ? retry_at_
                                                                          : Clock::time_point{});
        if (wanted && now >= load_at) {
          version = newest_;
          break;
        }
        if (polling_ && now >= poll_at_) {
          poll = true;
          break;
        }
        auto wake = Clock::time_point::max();
        if (wanted) wake = std::min(wake, load_at);
        if (polling_) wake = std::min(wake, poll_at_);
        if (polling_ && stream_open_) {
          wake = std::min(wake, stream_opened_ + options_.watch_held_after);
        }
        if (wake == Clock::time_point::max()) {
          changed_.wait(lock);
        } else {
          changed_.wait_until(lock, wake);
        }
      }
    }
    if (poll) {
      poll_latest();
      continue;
    }

    auto got = client_->get(version, false,
                            std::max(options_.registry.deadline, options_.download_deadline));
    if (!got.ok() && options_.on_download_failed) options_.on_download_failed(version, got.code());
    if (!got.ok()) {
      // A capacity refusal naming another replica may pass there: retried.
      const std::string reason = got.retry_elsewhere() ? "" : skip_reason(got.code());
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
        if (got.retry_after()) {
          // The registry's queue named when this download's turn comes: back
          // then, plus up to a tenth (so the callers it answered alike do not
          // all arrive in the same instant), and not counted as a failure.
          const auto after = *got.retry_after();
          failed_version_ = version;
          retry_at_ = Clock::now() + after + jitter(after / 10);
          settle();
          continue;
        }
        if (!failing) {
          log("cannot download model version " + std::to_string(version) + " (" + got.error() +
              "); retrying with backoff");
        }
        failing = true;
        if (got.retry_elsewhere()) {
          client_ = std::make_unique<rpc::ModelRegistryClient>(
              options_.registry, rpc::make_fresh_channel(options_.registry));
        }
        failed_version_ = version;
        retry_at_ = Clock::now() + download_backoff_.next().value_or(options_.download_backoff.max);
      }
      settle();
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      if (failing) log("model registry answers again");
      failing = false;
      download_backoff_.reset();
    }

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
           " bytes) and built" + timing + "; new games start on it");
      pending_ = Pending{std::move(model), Clock::now()};
      ready_ = true;
    }
    settle();
  }
}

}  // namespace chessrl::runtime
