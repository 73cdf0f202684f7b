// The chessrl-trainer binary as a child process: a fixed data set of
// self-play records (played first with the uniform fake backend), the
// fixture that runs the binary on it, and checkpoint helpers. Shared by
// trainer_test.cpp and trainer_fault_test.cpp.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/record/game_record.h"
#include "chessrl/selfplay/game_runner.h"
#include "chessrl/train/trainer.h"
#include "../support/logged_port.h"
#include "chessrl/replay_service/replay_server.h"
#include "child_process.h"
#include "service_test_util.h"

extern char** environ;

namespace chessrl::trainer_service {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::Child;
using testing::http_get;
using testing::slurp;

struct RunResult {
  int code = -1;
  std::string out, err;
  Json summary;  // the JSON line on stdout (null when there is none)
};

Json parse_summary(const std::string& out) {
  std::istringstream lines(out);
  std::string last;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  if (last.empty()) return Json();
  return Json::parse(last, nullptr, /*allow_exceptions=*/false);
}

RunResult finish(Child& child, std::chrono::milliseconds timeout) {
  RunResult r;
  auto code = child.wait(timeout);
  r.out = child.out();
  r.err = child.err();
  r.code = code ? *code : -1;  // the destructor kills it
  r.summary = parse_summary(r.out);
  return r;
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// Self-play records from the uniform fake backend: short games, quickly.
void write_records(const std::string& path) {
  selfplay::GameRunnerOptions o;
  o.concurrent_games = 3;
  o.threads = 1;
  o.leaves_per_search = 4;
  o.seed = 4242;
  o.max_games = 5;
  o.config.playouts = {.full_visits = 16, .reduced_visits = 8, .full_fraction = 0.5f};
  o.config.max_plies = 60;
  nn::BatchEvaluator evaluator(std::make_shared<nn::FakeBackend>(),
                               {.max_batch = 64, .batch_timeout = std::chrono::microseconds(100)});
  selfplay::GameRunner runner(evaluator, o);
  std::ofstream out(path);
  runner.run([&](record::GameRecord&& r) { out << record::to_json(r) << "\n"; });
}

// The rank variables of a world of two on loopback.
std::map<std::string, std::string> rank_env(int rank, int port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", "2"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)}};
}

struct Pair {
  Child rank0, rank1;
};

class TrainerBinaryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/chessrl-trainer-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    ASSERT_NE(made, nullptr);
    dir_ = new std::string(made);
    records_ = new std::string(*dir_ + "/records.jsonl");
    write_records(*records_);
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    // CHESSRL_TRAINER_TEST_KEEP=1 keeps the records, logs and checkpoints.
    if (std::getenv("CHESSRL_TRAINER_TEST_KEEP") == nullptr) {
      fs::remove_all(*dir_, ignored);
    } else {
      std::printf("kept %s\n", dir_->c_str());
    }
    delete dir_;
    delete records_;
    dir_ = records_ = nullptr;
  }

  static const std::string& dir() { return *dir_; }

  // The data set, a small network on one CPU thread, no metrics port.
  static std::vector<std::string> base_args(std::vector<std::string> extra) {
    std::vector<std::string> args = {CHESSRL_TRAINER_BINARY, "--data", *records_, "--net", "2x16",
                                     "--device", "cpu", "--threads", "1", "--metrics-listen", "off",
                                     "--log-every", "1", "--rendezvous-timeout", "60"};
    // --collective-timeout 60 unless `extra` names another.
    if (std::find(extra.begin(), extra.end(), "--collective-timeout") == extra.end())
      args.insert(args.end(), {"--collective-timeout", "60"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  static Child start(const std::string& name, std::vector<std::string> extra,
                     const std::map<std::string, std::string>& env = {}) {
    return Child::start(base_args(std::move(extra)), env, dir(), name);
  }

  // Two ranks, <name>-rank0 and <name>-rank1: rank 0 on MASTER_PORT=0 binds
  // a port the kernel picks, and rank 1 starts on the port rank 0 logs
  // ("rendezvous: listening on port N"). Throws when rank 0 never says it.
  static Pair start_ranks(const std::string& name, const std::vector<std::string>& args) {
    Pair pair;
    pair.rank0 = start(name + "-rank0", args, rank_env(0, 0));
    const int port = testing::logged_port(path(name + "-rank0.err"),
                                          "rendezvous: listening on port ", 60s);
    if (port <= 0) throw Error("rank 0 never logged its port:\n" + pair.rank0.err());
    pair.rank1 = start(name + "-rank1", args, rank_env(1, port));
    return pair;
  }

  static RunResult run(const std::string& name, std::vector<std::string> extra,
                       const std::map<std::string, std::string>& env = {},
                       std::chrono::milliseconds timeout = 60s) {
    Child child = start(name, std::move(extra), env);
    return finish(child, timeout);
  }

  static std::string path(const std::string& name) { return dir() + "/" + name; }

 private:
  static std::string* dir_;
  static std::string* records_;
};

std::string* TrainerBinaryTest::dir_ = nullptr;
std::string* TrainerBinaryTest::records_ = nullptr;

// Steps of a checkpoint file (trainer_state).
std::int64_t checkpoint_step(const std::string& file) {
  auto checkpoint = nn::load_checkpoint_file(file);
  if (!checkpoint.ok()) throw Error(checkpoint.error());
  auto state = train::trainer_state(*checkpoint);
  if (!state.ok()) throw Error(state.error());
  return state->step;
}

// Waits until `dir` holds a checkpoint of at least `step`; its path, or "".
std::string wait_for_checkpoint(const std::string& dir, std::int64_t step, Child& child,
                                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    // The trainer may delete an old checkpoint while it is read here
    // (--keep-checkpoints): a failed read is tried again.
    auto latest = train::latest_checkpoint(dir);
    if (latest.ok() && !latest->empty()) {
      auto checkpoint = nn::load_checkpoint_file(*latest);
      if (checkpoint.ok()) {
        auto state = train::trainer_state(*checkpoint);
        if (state.ok() && state->step >= step) return *latest;
      }
    }
    if (auto code = child.wait(0ms)) {
      ADD_FAILURE() << "the trainer exited (" << *code << ") before a checkpoint of step " << step
                    << ":\n"
                    << child.err();
      return "";
    }
    std::this_thread::sleep_for(20ms);
  }
  return "";
}

}  // namespace
}  // namespace chessrl::trainer_service
