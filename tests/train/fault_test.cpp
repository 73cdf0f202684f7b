// The trainer's faults in one process: a registry that never answers, a
// replay store flushed under a running trainer, a corrupt latest checkpoint,
// a checkpoint of another world size, a rank that leaves mid-step under a
// stop (two ranks as threads over Gloo on loopback), and a restarted rank
// meeting the keys of a group already formed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/torch_network.h"
#include "chessrl/train/trainer.h"
#include "listening_port.h"
#include "process_group.h"
#include "publisher.h"
#include "records.h"

namespace chessrl::train {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<Example>& data() {
  static const std::vector<Example> d = [] {
    std::vector<Example> out;
    for (const auto& r : testing::play_records(4))
      for (auto& e : examples_from_record(r).value_or_throw()) out.push_back(std::move(e));
    return out;
  }();
  return d;
}

TrainerOptions tiny() {
  TrainerOptions o;
  o.network = {.blocks = 1, .filters = 8, .se_ratio = 0, .value_channels = 4, .value_hidden = 16};
  o.batch_size = 8;
  o.threads = 1;
  o.log_every = 0;
  // SGD at 0.02 on the game's result alone: what these tests were written
  // against (TrainerOptions' defaults are the launchers' AdamW at 1e-3 with
  // value_q_ratio 0.3).
  o.optimizer = OptimizerKind::kSgd;
  o.lr = 0.02;
  o.value_q_ratio = 0;
  o.prefetch_batches = 2;
  return o;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("chessrl-fault-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

struct Lines : TrainerCallbacks {
  std::mutex mu;
  std::vector<std::string> lines;
  std::vector<StepReport> reports;
  Lines() {
    log = [this](const std::string& l) {
      std::lock_guard lock(mu);
      lines.push_back(l);
    };
    on_step = [this](const StepReport& r) { reports.push_back(r); };
  }
  bool has(const std::string& text) {
    std::lock_guard lock(mu);
    for (const auto& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
  std::string all() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

// A registry call that holds until released (or 20 s), then fails. The
// publisher abandons a call in flight at its end (its thread is detached), so
// the call may still be inside this object when the test ends: the destructor
// releases and waits until no call is inside.
struct HangingRegistry {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  int inside = 0;
  std::atomic<int> calls{0};
  std::atomic<std::size_t> last_blob_tensors{0};
  std::atomic<bool> last_had_optimizer{true};
  Result<std::uint64_t> call(const nn::Checkpoint& c) {
    ++calls;
    last_blob_tensors = c.tensors.size();
    last_had_optimizer = !c.optimizer_state.empty();
    std::unique_lock lock(mu);
    ++inside;
    cv.wait_for(lock, 20s, [&] { return released; });
    --inside;
    cv.notify_all();
    return fail("registry unavailable");
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  ~HangingRegistry() {
    std::unique_lock lock(mu);
    released = true;
    cv.notify_all();
    cv.wait(lock, [&] { return inside == 0; });
  }
};

TEST(Publisher, ANewerModelReplacesOneNotYetSentAndFinishIsBounded) {
  HangingRegistry registry;
  std::vector<std::string> log;
  std::mutex log_mu;
  BackgroundPublisher p([&](const nn::Checkpoint& c) { return registry.call(c); },
                        [&](const std::string& l) {
                          std::lock_guard lock(log_mu);
                          log.push_back(l);
                        },
                        {.first_backoff = 10ms, .max_backoff = 20ms});
  const auto start = std::chrono::steady_clock::now();
  p.offer(nn::Checkpoint{}, 1);
  while (registry.calls == 0) std::this_thread::sleep_for(1ms);
  p.offer(nn::Checkpoint{}, 2);                             // queued behind the hanging call
  p.offer(nn::Checkpoint{}, 3);                             // replaces 2
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);  // offer never waits
  EXPECT_EQ(p.counts().skipped, 1u);
  EXPECT_FALSE(p.finish(200ms));  // the registry still holds the call
  registry.release();
}

// Item 5: training steps go on at their pace while every publish hangs, and
// the published model has no optimizer state (item 4).
TEST(TrainerFaults, StepsContinueWhileTheRegistryNeverAnswers) {
  HangingRegistry registry;
  DatasetSource source(data(), 1);
  TrainerOptions o = tiny();
  o.steps = 30;
  o.publish_every = 2;
  o.publish_flush_ms = 200;
  Lines cb;
  cb.publish = [&](const nn::Checkpoint& c) { return registry.call(c); };
  std::atomic<bool> stop{false};
  const auto start = std::chrono::steady_clock::now();
  auto s = train(o, {}, source, cb, stop);
  const auto took = std::chrono::steady_clock::now() - start;
  registry.release();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->end_step, 30);
  EXPECT_LT(took, 15s) << cb.all();  // one hanging call alone is 20 s
  EXPECT_GE(registry.calls.load(), 1);
  EXPECT_GT(s->publish_skipped, 0u);
  EXPECT_FALSE(registry.last_had_optimizer.load());
  EXPECT_GT(registry.last_blob_tensors.load(), 0u);
  EXPECT_TRUE(cb.has("giving up on step")) << cb.all();
}

// Item 4: the model published is the weights alone (the checkpoint on disk
// keeps the optimizer state), and consumers load it as they load any model.
// Prints the sizes for the default 6x64 net with SGD and AdamW.
TEST(TrainerFaults, ThePublishedModelIsWeightsOnlyAndLoads) {
  for (const auto optimizer : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) {
    TempDir dir("weights-only");
    DatasetSource source(data(), 1);
    TrainerOptions o = tiny();
    o.network = nn::NetworkConfig{};  // the default net
    o.optimizer = optimizer;
    o.steps = 1;
    o.publish_every = 1;
    o.checkpoint_dir = dir.path.string();
    std::mutex mu;
    std::string blob;
    Lines cb;
    cb.publish = [&](const nn::Checkpoint& c) -> Result<std::uint64_t> {
      std::lock_guard lock(mu);
      blob = nn::serialize_checkpoint(c);
      return 1;
    };
    std::atomic<bool> stop{false};
    auto s = train(o, {}, source, cb, stop);
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->published, 1u);
    const auto on_disk = fs::file_size(checkpoint_path(o.checkpoint_dir, 1));
    std::printf("%s %s: published model %zu bytes, checkpoint %ju bytes\n",
                o.network.name().c_str(), optimizer == OptimizerKind::kSgd ? "sgd" : "adamw",
                blob.size(), std::uintmax_t(on_disk));
    auto parsed = nn::parse_checkpoint(blob);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_TRUE(parsed->optimizer_state.empty());
    EXPECT_LT(blob.size() * 3, on_disk * 2);  // well under the checkpoint
    ASSERT_TRUE(nn::check_model(*parsed, {}).ok());
    auto net = nn::network_from_checkpoint(*parsed);
    ASSERT_TRUE(net.ok()) << net.error();
  }
}

// A source whose stored counter can be reset, like a flushed Redis.
class FlushableSource : public ExampleSource {
 public:
  FlushableSource() : data_(data(), 9) {}
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override {
    return data_.fetch(step, rank, world, count);
  }
  Result<DataStatus> status() override {
    std::lock_guard lock(mu_);
    return DataStatus{stored_, stored_, false};
  }
  void set_stored(std::uint64_t n) {
    std::lock_guard lock(mu_);
    stored_ = n;
  }

 private:
  DatasetSource data_;
  std::mutex mu_;
  std::uint64_t stored_ = 64;
};

// Item 5: the counter flushed to 0 under a running trainer: it pauses, then
// trains again on what self-play stores after the flush, within max_reuse of it.
TEST(TrainerFaults, AFlushedStoreCounterRebasesTheReuseCap) {
  FlushableSource source;
  TrainerOptions o = tiny();
  o.max_reuse = 2;  // 64 stored: 128 samples = 16 steps of 8
  Lines cb;
  std::atomic<bool> stop{false};
  int pauses = 0;
  std::int64_t steps_at_flush = -1;
  cb.on_pause = [&](bool paused, const std::string&) {
    if (!paused) return;
    ++pauses;
    if (pauses == 1) {
      steps_at_flush = cb.reports.empty() ? 0 : cb.reports.back().step;
      source.set_stored(0);  // FLUSHALL
    } else {
      stop = true;  // paused again, at the cap of the new positions
    }
  };
  std::thread watchdog([&] {
    // Once the trainer saw the flush, self-play stores 16 new positions:
    // 32 samples, 4 steps of 8.
    for (int i = 0; i < 300 && !stop && !cb.has("went down"); ++i)
      std::this_thread::sleep_for(100ms);
    source.set_stored(16);
    for (int i = 0; i < 300 && !stop; ++i) std::this_thread::sleep_for(100ms);
    stop = true;
  });
  auto s = train(o, {}, source, cb, stop);
  stop = true;
  watchdog.join();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(steps_at_flush, 16);
  EXPECT_EQ(s->end_step, 20) << cb.all();
  EXPECT_TRUE(cb.has("went down from 64 to 0")) << cb.all();
  ASSERT_FALSE(cb.reports.empty());
  EXPECT_DOUBLE_EQ(cb.reports.back().sample_reuse, 2.0);
}

// tiny() for 4 steps, checkpointed every 2 into `dir` (ckpt 2 and 4).
TrainerOptions four_steps_checkpointed(const TempDir& dir) {
  TrainerOptions o = tiny();
  o.checkpoint_dir = dir.path.string();
  o.checkpoint_every = 2;
  o.steps = 4;
  return o;
}

// A checkpoint that cannot be read now (here: a directory in its place; an I/O
// or permission error alike) or that is whole but of a newer format (a helm
// rollback) is not proven damaged: the resume stops naming it and leaves it
// where it is. Set aside, as before, the next restart found no checkpoint,
// started from step 0 and published the fresh weights as the newest model.
TEST(TrainerFaults, ACheckpointNotProvenDamagedStopsTheResumeAndStaysPut) {
  TempDir dir("not-damaged");
  TrainerOptions o = four_steps_checkpointed(dir);
  std::atomic<bool> stop{false};
  DatasetSource source(data(), 2);
  Lines first;
  ASSERT_TRUE(train(o, {}, source, first, stop).ok()) << first.all();
  const std::string latest = checkpoint_path(o.checkpoint_dir, 4);
  const std::string saved = latest + ".saved";
  fs::rename(latest, saved);

  fs::create_directory(latest);  // reading it fails
  o.steps = 6;
  Lines unreadable;
  auto r = train(o, {}, source, unreadable, stop);
  ASSERT_FALSE(r.ok()) << unreadable.all();
  EXPECT_NE(r.error().find("cannot read checkpoint " + latest), std::string::npos) << r.error();
  EXPECT_TRUE(fs::is_directory(latest));
  EXPECT_FALSE(fs::exists(latest + ".corrupt"));
  fs::remove(latest);

  std::string bytes = nn::read_file_bytes(saved).value();
  const std::uint32_t newer = 2;  // the format version, after the 8-byte magic
  std::memcpy(bytes.data() + 8, &newer, 4);
  std::ofstream(latest, std::ios::binary) << bytes;
  Lines newer_format;
  r = train(o, {}, source, newer_format, stop);
  ASSERT_FALSE(r.ok()) << newer_format.all();
  EXPECT_NE(r.error().find("is whole but this build cannot resume from it"), std::string::npos)
      << r.error();
  EXPECT_NE(r.error().find("format version 2"), std::string::npos) << r.error();
  EXPECT_TRUE(fs::exists(latest));
  EXPECT_FALSE(fs::exists(latest + ".corrupt"));
}

// Item 5: a corrupt latest checkpoint: the previous one is loaded, with a
// warning; one written by another world size resumes with a warning naming both.
TEST(TrainerFaults, ACorruptLatestCheckpointFallsBackToThePreviousOne) {
  TempDir dir("corrupt");
  TrainerOptions o = four_steps_checkpointed(dir);
  std::atomic<bool> stop{false};
  DatasetSource source(data(), 2);
  Lines first;
  ASSERT_TRUE(train(o, {}, source, first, stop).ok());
  const std::string latest = checkpoint_path(o.checkpoint_dir, 4);
  ASSERT_TRUE(fs::exists(latest));
  fs::resize_file(latest, fs::file_size(latest) / 2);  // torn by a disk error
  // A writer of this pid died mid-write (a container restart reuses pids).
  const std::string stale = latest + ".tmp." + std::to_string(::getpid());
  std::ofstream(stale) << "half";
  o.steps = 5;
  Lines second;
  auto s = train(o, {}, source, second, stop);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->start_step, 2) << second.all();
  EXPECT_EQ(s->end_step, 5);
  EXPECT_TRUE(second.has("is damaged")) << second.all();
  EXPECT_TRUE(fs::exists(latest + ".corrupt"));
  EXPECT_FALSE(fs::exists(stale)) << second.all();

  // Written by 2 ranks (the state says so), resumed by 1: a warning names both.
  auto c = nn::load_checkpoint_file(checkpoint_path(o.checkpoint_dir, 5)).value_or_throw();
  std::string opt = c.optimizer_state;
  const auto at = opt.find("\"world_size\":1");
  ASSERT_NE(at, std::string::npos);
  opt[at + 13] = '2';
  c.optimizer_state = opt;
  ASSERT_TRUE(nn::save_checkpoint_file(c, checkpoint_path(o.checkpoint_dir, 5)).ok());
  o.steps = 6;
  Lines third;
  ASSERT_TRUE(train(o, {}, source, third, stop).ok()) << third.all();
  EXPECT_TRUE(third.has("written by 2 rank(s) and resumes with 1")) << third.all();
}

DistributedConfig rank_config(int rank, int port, int timeout_s = 20) {
  DistributedConfig d;
  d.rank = rank;
  d.world_size = 2;
  d.master_addr = "127.0.0.1";
  d.master_port = port;
  d.rendezvous_timeout = std::chrono::seconds(timeout_s);
  d.collective_timeout = std::chrono::seconds(timeout_s);
  return d;
}

// A source that stops delivering from step `dry_from` on.
class DryingSource : public ExampleSource {
 public:
  explicit DryingSource(std::int64_t dry_from) : data_(data(), 4), dry_from_(dry_from) {}
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override {
    if (step >= dry_from_) {
      dry = true;
      return fail("no data");
    }
    return data_.fetch(step, rank, world, count);
  }
  Result<DataStatus> status() override { return data_.status(); }
  std::atomic<bool> dry{false};

 private:
  DatasetSource data_;
  std::int64_t dry_from_;
};

// Calls `seen` with each step fetched.
class WatchedSource : public ExampleSource {
 public:
  explicit WatchedSource(std::function<void(std::int64_t)> seen)
      : data_(data(), 4), seen_(std::move(seen)) {}
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override {
    seen_(step);
    return data_.fetch(step, rank, world, count);
  }
  Result<DataStatus> status() override { return data_.status(); }

 private:
  DatasetSource data_;
  std::function<void(std::int64_t)> seen_;
};

// Item 5: told to stop, rank 1 gives up on data while rank 0 is inside the
// step: rank 0 still leaves a checkpoint at the last step both finished.
TEST(TrainerFaults, ARankLeavingMidStepStillLeavesRankZerosCheckpoint) {
  TempDir dir("leave");
  ListeningPort port;
  TrainerOptions o = tiny();
  o.checkpoint_dir = dir.path.string();
  o.checkpoint_every = 1000;
  o.stop_data_grace_ms = 500;
  o.prefetch_batches = 1;
  std::atomic<bool> stop0{false}, stop1{false};
  // Rank 0's prefetcher asks for step 7's batch once it took step 6's, that
  // is after both ranks agreed to step 6: then rank 1 is told to stop (a
  // SIGTERM to it alone) while it waits for step 6's batch, which never comes.
  WatchedSource source0([&](std::int64_t step) {
    if (step >= 7) stop1 = true;
  });
  DryingSource source1(6);
  Lines cb0, cb1;
  auto rank1 = std::async(std::launch::async,
                          [&] { return train(o, rank_config(1, port.get()), source1, cb1, stop1); });
  auto r0 = train(o, port.rank0(rank_config(0, 0)), source0, cb0, stop0);
  auto r1 = rank1.get();
  ASSERT_TRUE(r1.ok()) << r1.error() << cb1.all();
  EXPECT_EQ(r1->end_step, 6);
  // Rank 0 was not told to stop: its step failed, and it says so, but it
  // wrote the state both ranks reached.
  ASSERT_FALSE(r0.ok()) << cb0.all();
  const std::string ckpt = checkpoint_path(o.checkpoint_dir, 6);
  EXPECT_TRUE(fs::exists(ckpt)) << r0.error() << "\n" << cb0.all();
}

// Item 5: a rank restarted while rank 0's store still holds the keys of the
// group it formed never reads them: it waits for a new generation and its
// rendezvous times out naming that, instead of joining a stale group.
TEST(Rendezvous, ARestartedRankNeverReadsTheKeysOfAGroupAlreadyFormed) {
  ListeningPort port;
  auto first1 = std::async(std::launch::async, [&] {
    return join_group(rank_config(1, port.get()), false, [](const std::string&) {});
  });
  auto g0 = join_group(port.rank0(rank_config(0, 0)), false, [](const std::string&) {});
  ASSERT_TRUE(g0.ok()) << g0.error();
  auto g1 = first1.get();
  ASSERT_TRUE(g1.ok()) << g1.error();
  // Rank 1 "restarts" against the same rank 0.
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  auto again =
      join_group(rank_config(1, port.get(), 3), false, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("already formed"), std::string::npos) << again.error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

// A loopback port nothing listens on (bound by the kernel's choice, then closed).
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no loopback port");
  ::close(fd);
  return ntohs(a.sin_port);
}

// A stop request while the other ranks are missing ends the rendezvous at
// once, on rank 0 (serving the store) and on a rank whose rank 0 is not there:
// a pod deleted while its group re-forms stops within its grace period.
TEST(Rendezvous, AStopRequestEndsTheWaitForTheOtherRanks) {
  for (int rank : {0, 1}) {
    std::atomic<bool> stop{false};
    ListeningPort port;
    DistributedConfig d = rank == 0 ? port.rank0(rank_config(0, 0, 60))
                                    : rank_config(1, unused_port(), 60);
    d.stop = &stop;
    std::thread stopper([&] {
      std::this_thread::sleep_for(300ms);
      stop = true;
    });
    const auto start = std::chrono::steady_clock::now();
    auto g = join_group(d, false, [](const std::string&) {});
    stopper.join();
    ASSERT_FALSE(g.ok()) << "rank " << rank;
    EXPECT_NE(g.error().find("stopped"), std::string::npos) << g.error();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "rank " << rank;
  }
}

// train() asked to stop before its group formed: nothing trained, nothing to
// save, and that is a stop (the service exits 0), not a failure.
TEST(TrainerFaults, AStopAtTheRendezvousIsNotAFailure) {
  TempDir dir("rendezvous-stop");
  TrainerOptions o = tiny();
  o.checkpoint_dir = dir.path.string();
  DatasetSource source(data(), 4);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop = true;
  });
  ListeningPort port;
  Lines cb;
  const auto start = std::chrono::steady_clock::now();
  auto r = train(o, port.rank0(rank_config(0, 0, 60)), source, cb, stop);
  stopper.join();
  ASSERT_TRUE(r.ok()) << r.error() << cb.all();
  EXPECT_EQ(r->end_step, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(cb.has("stopped at the rendezvous")) << cb.all();
}

// Both ranks told to stop (a helm uninstall): rank 1 leaves between steps
// (here: its last step), so rank 0's step agreement fails on the closed
// connection. Asked to stop, that is the stop, not a failure: rank 0 writes
// the checkpoint of the step both reached and succeeds.
TEST(TrainerFaults, APeerLeavingBetweenStepsUnderAStopIsAStop) {
  TempDir dir("leave-between");
  ListeningPort port;
  TrainerOptions o = tiny();
  o.checkpoint_dir = dir.path.string();
  o.checkpoint_every = 1000;
  TrainerOptions o1 = o;
  o1.checkpoint_dir.clear();
  o1.steps = 6;  // rank 1 ends after step 6; rank 0 would go on
  std::atomic<bool> stop0{false}, stop1{false};
  DatasetSource source0(data(), 4), source1(data(), 4);
  Lines cb0, cb1;
  // Set before rank 1 leaves (its last step's report): rank 0 learns of the
  // stop no later than it sees rank 1's connection close.
  cb1.on_step = [&](const StepReport& r) {
    if (r.step >= 6) stop0 = true;
  };
  auto rank1 = std::async(std::launch::async,
                          [&] { return train(o1, rank_config(1, port.get()), source1, cb1, stop1); });
  auto r0 = train(o, port.rank0(rank_config(0, 0)), source0, cb0, stop0);
  auto r1 = rank1.get();
  ASSERT_TRUE(r1.ok()) << r1.error() << cb1.all();
  ASSERT_TRUE(r0.ok()) << r0.error() << "\n" << cb0.all();
  EXPECT_EQ(r0->end_step, 6);
  EXPECT_TRUE(fs::exists(checkpoint_path(o.checkpoint_dir, 6))) << cb0.all();
  EXPECT_TRUE(cb0.has("another rank left first")) << cb0.all();
}

}  // namespace
}  // namespace chessrl::train
