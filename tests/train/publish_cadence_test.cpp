// When rank 0 publishes: by steps (at their multiples, as always), by time
// (once the seconds have passed since the last model offered), or by both,
// whichever comes first; and train() publishing by time alone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "chessrl/train/trainer.h"
#include "publisher.h"
#include "records.h"

namespace chessrl::train {
namespace {

using namespace std::chrono_literals;
using Clock = PublishCadence::Clock;

TEST(PublishCadence, StepsAloneAreTheMultiplesWhateverTheTime) {
  const auto t0 = Clock::now();
  PublishCadence c(200, 0, t0);
  EXPECT_TRUE(c.enabled());
  EXPECT_FALSE(c.due(1, t0 + 1h));
  EXPECT_FALSE(c.due(199, t0 + 2h));
  EXPECT_TRUE(c.due(200, t0 + 2h));
  EXPECT_FALSE(c.due(201, t0 + 2h));
  EXPECT_TRUE(c.due(400, t0 + 2h));
  EXPECT_FALSE(PublishCadence(0, 0, t0).enabled());
}

TEST(PublishCadence, TimeAloneCountsFromTheLastModelOffered) {
  const auto t0 = Clock::now();
  PublishCadence c(0, 60, t0);
  EXPECT_TRUE(c.enabled());
  EXPECT_FALSE(c.due(1, t0 + 59s));
  EXPECT_TRUE(c.due(2, t0 + 60s));
  EXPECT_FALSE(c.due(3, t0 + 119s));  // 59 s since the last
  EXPECT_TRUE(c.due(4, t0 + 121s));
  EXPECT_FALSE(c.due(200, t0 + 122s));  // no step cadence
}

TEST(PublishCadence, BothWhicheverComesFirst) {
  const auto t0 = Clock::now();
  PublishCadence c(100, 30, t0);
  EXPECT_TRUE(c.due(40, t0 + 30s));   // by time, between step multiples
  EXPECT_FALSE(c.due(60, t0 + 50s));
  EXPECT_TRUE(c.due(100, t0 + 51s));  // by steps; the time cadence starts again
  EXPECT_FALSE(c.due(120, t0 + 80s));
  EXPECT_TRUE(c.due(130, t0 + 81s));
}

TEST(PublishCadence, FractionsOfASecond) {
  const auto t0 = Clock::now();
  PublishCadence c(0, 0.25, t0);
  EXPECT_FALSE(c.due(1, t0 + 200ms));
  EXPECT_TRUE(c.due(2, t0 + 250ms));
}

TEST(PublishCadence, InvalidSecondsAreRefusedNamingTheOption) {
  TrainerOptions o;
  o.publish_every_seconds = -1;
  auto valid = o.validate();
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().find("publish_every_seconds"), std::string::npos) << valid.error();
  o.publish_every_seconds = 0.5;
  EXPECT_TRUE(o.validate().ok()) << o.validate().error();
}

// train() with no step cadence publishes by time alone: about one model per
// interval while it trains.
TEST(PublishCadence, TrainPublishesByTimeAlone) {
  std::vector<Example> data;
  for (const auto& r : testing::play_records(4))
    for (auto& e : examples_from_record(r).value_or_throw()) data.push_back(std::move(e));
  DatasetSource source(data, 1);
  TrainerOptions o;
  o.network = {.blocks = 1, .filters = 8, .se_ratio = 0, .value_channels = 4, .value_hidden = 16};
  o.batch_size = 8;
  o.threads = 1;
  o.log_every = 0;
  o.optimizer = OptimizerKind::kSgd;  // as written: SGD at 0.02 on the result alone
  o.lr = 0.02;
  o.value_q_ratio = 0;
  o.prefetch_batches = 2;
  o.publish_every = 0;
  o.publish_every_seconds = 0.1;
  std::atomic<int> published{0};
  TrainerCallbacks cb;
  cb.log = [](const std::string&) {};
  cb.publish = [&](const nn::Checkpoint&) -> Result<std::uint64_t> {
    return static_cast<std::uint64_t>(++published);
  };
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(1200ms);
    stop = true;
  });
  auto s = train(o, {}, source, cb, stop);
  stopper.join();
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_GT(s->end_step, 20) << "too few steps to tell the cadence";
  // About 1.2 s / 0.1 s; a slow machine's pauses only lower it.
  EXPECT_GE(published.load(), 4);
  EXPECT_LE(published.load(), 13);
  EXPECT_LT(static_cast<std::int64_t>(published.load()), s->end_step);
}

}  // namespace
}  // namespace chessrl::train
