#include "chessrl/core/progress.h"

#include <gtest/gtest.h>

namespace chessrl {
namespace {

using namespace std::chrono_literals;

TEST(Progress, HealthyWithinTheBoundOfTheLastBeat) {
  Progress p(60s);
  const auto t = Progress::Clock::now();
  EXPECT_EQ(p.stalled(t + 59s), "");
  EXPECT_EQ(p.doing(), "starting");
  p.beat("training step 7", 5s);
  EXPECT_EQ(p.doing(), "training step 7");
  EXPECT_EQ(p.stalled(Progress::Clock::now() + 4s), "");
}

TEST(Progress, StalledPastTheBoundNamesWhatItWasDoing) {
  Progress p(60s);
  p.beat("writing a checkpoint", 10s);
  const std::string why = p.stalled(Progress::Clock::now() + 12s);
  EXPECT_NE(why.find("no progress for 12 s"), std::string::npos) << why;
  EXPECT_NE(why.find("'writing a checkpoint'"), std::string::npos) << why;
  EXPECT_NE(why.find("within 10 s"), std::string::npos) << why;
}

TEST(Progress, ANewBeatEndsTheStall) {
  Progress p(1s);
  EXPECT_NE(p.stalled(Progress::Clock::now() + 2s), "");
  p.beat("waiting for data: window 10/100 positions", 30s);
  EXPECT_EQ(p.stalled(Progress::Clock::now() + 2s), "");
}

}  // namespace
}  // namespace chessrl
