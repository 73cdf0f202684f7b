// The trainer's prefetch thread (libs/train/src/prefetcher.h): batches made on
// its thread arrive in step order with the source's content, a failing source
// is retried, and stop() or an abandoned wait ends a pop. Run under
// ThreadSanitizer by `make tsan` with the Trainer tests beside it.
#include "prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batch.h"

namespace chessrl::train {
namespace {

std::vector<Example> examples(int n) {
  std::vector<Example> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& e = out[static_cast<std::size_t>(i)];
    e.policy = {{static_cast<std::uint16_t>(i * 37 % 4672), 0.75f},
                {static_cast<std::uint16_t>((i * 37 + 1) % 4672), 0.25f}};
    e.result = static_cast<std::int8_t>(i % 3 - 1);
  }
  return out;
}

// A DatasetSource whose first `failures` fetches fail; counts its fetches.
class FlakySource : public ExampleSource {
 public:
  explicit FlakySource(int failures) : inner_(examples(50), 7), failures_left_(failures) {}
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override {
    ++fetches;
    if (failures_left_ > 0) {
      --failures_left_;
      return fail("the replay service is restarting");
    }
    return inner_.fetch(step, rank, world, count);
  }
  Result<DataStatus> status() override { return inner_.status(); }
  std::atomic<int> fetches{0};

 private:
  DatasetSource inner_;
  int failures_left_;  // only the prefetch thread fetches
};

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;  // guarded by mutex
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
};

void expect_same(const Batch& got, const Batch& want, std::int64_t step) {
  EXPECT_TRUE(torch::equal(got.input, want.input)) << "step " << step;
  EXPECT_TRUE(torch::equal(got.policy, want.policy)) << "step " << step;
  EXPECT_TRUE(torch::equal(got.wdl, want.wdl)) << "step " << step;
}

TEST(Prefetcher, BatchesFromItsThreadArriveInStepOrder) {
  FlakySource source(0);
  DatasetSource reference(examples(50), 7);
  Log log;
  Prefetcher prefetcher(source, /*first_step=*/5, /*rank=*/0, /*world=*/1, /*batch_size=*/8,
                        /*depth=*/2, /*pin=*/false, log.sink());
  const std::atomic<bool> abandon{false};
  for (std::int64_t step = 5; step < 25; ++step) {
    auto batch = prefetcher.pop(abandon, std::chrono::milliseconds(0));
    ASSERT_TRUE(batch.has_value()) << "step " << step;
    ASSERT_EQ(batch->size(), 8);
    expect_same(*batch, make_batch(reference.fetch(step, 0, 1, 8).value_or_throw()), step);
  }
  // The thread keeps at most `depth` batches ready ahead of the consumer.
  prefetcher.stop();
  EXPECT_LE(source.fetches.load(), 20 + 2 + 1);
}

TEST(Prefetcher, AFailingSourceIsRetriedAndLogged) {
  FlakySource source(2);
  DatasetSource reference(examples(50), 7);
  Log log;
  Prefetcher prefetcher(source, 0, 0, 1, 4, 1, false, log.sink());
  const std::atomic<bool> abandon{false};
  auto batch = prefetcher.pop(abandon, std::chrono::milliseconds(0));
  ASSERT_TRUE(batch.has_value());
  expect_same(*batch, make_batch(reference.fetch(0, 0, 1, 4).value_or_throw()), 0);
  prefetcher.stop();
  std::lock_guard lock(log.mutex);
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_NE(log.lines[0].find("the replay service is restarting"), std::string::npos);
  EXPECT_NE(log.lines[1].find("works again after 2 failures"), std::string::npos);
}

TEST(Prefetcher, StopFromAnotherThreadEndsAWaitingPop) {
  FlakySource source(1 << 30);  // never delivers
  Log log;
  Prefetcher prefetcher(source, 0, 0, 1, 4, 1, false, log.sink());
  const std::atomic<bool> abandon{false};
  std::thread stopper([&] {
    while (source.fetches.load() == 0) std::this_thread::yield();  // the thread is running
    prefetcher.stop();
  });
  EXPECT_FALSE(prefetcher.pop(abandon, std::chrono::milliseconds(0)).has_value());
  stopper.join();
}

TEST(Prefetcher, AnAbandonedPopGivesUpAfterTheGrace) {
  FlakySource source(1 << 30);
  Log log;
  Prefetcher prefetcher(source, 0, 0, 1, 4, 1, false, log.sink());
  std::atomic<bool> abandon{false};
  std::thread asker([&] { abandon = true; });
  EXPECT_FALSE(prefetcher.pop(abandon, std::chrono::milliseconds(50)).has_value());
  asker.join();
}

}  // namespace
}  // namespace chessrl::train
