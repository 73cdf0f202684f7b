// The fixture of the tests of the services that follow the model registry
// (selfplay_follower_test.cpp, model_refusal_test.cpp): an in-process model
// registry (the replay service on in-memory stores, on a port the kernel
// picks), a client of it that tries once, a log the code under test writes
// to, and the count of the models the registry sent.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::testing {

// A 1x8 network of random weights as checkpoint bytes, naming `version`.
inline std::string tiny_model(std::uint64_t version) {
  nn::ModelInfo info;
  info.version = static_cast<std::int64_t>(version);
  return nn::serialize_checkpoint(nn::fresh_checkpoint({1, 8}, version, info));
}

// Polls `condition` every 20 ms; false if it is still false after `timeout`.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class InProcessRegistryTest : public ::testing::Test {
 protected:
  InProcessRegistryTest() : games_(1000) {
    server_ = std::make_unique<replay_service::ReplayServer>(games_, models_, server_metrics_,
                                                             fast_server_options());
    client_ = std::make_unique<rpc::ModelRegistryClient>(single_try_client(port()));
  }

  int port() const { return server_->port(); }
  // Publishes `blob` as `version` (step version * 100) through the client.
  void publish(std::uint64_t version, const std::string& blob) {
    v1::ModelInfo info;
    info.set_version(version);
    info.set_step(version * 100);
    auto published = client_->publish(info, blob);
    ASSERT_TRUE(published.ok()) << published.error();
  }
  void publish(std::uint64_t version) { publish(version, tiny_model(version)); }
  // GetModel calls the registry answered OK (it sent the bytes; the client
  // checks them).
  double downloads() const {
    const std::string text = server_metrics_.serialize();
    const std::string key = "chessrl_replay_rpc_requests_total{code=\"OK\",method=\"GetModel\"} ";
    const auto at = text.find(key);
    return at == std::string::npos ? 0 : std::atof(text.c_str() + at + key.size());
  }
  void log(const std::string& line) {
    std::lock_guard lock(log_mutex_);
    log_ += line + "\n";
  }
  std::string logged() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry server_metrics_;
  std::unique_ptr<replay_service::ReplayServer> server_;
  std::unique_ptr<rpc::ModelRegistryClient> client_;
  std::mutex log_mutex_;
  std::string log_;
};

}  // namespace chessrl::testing
