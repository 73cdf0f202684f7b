#include "chessrl/core/stop_signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "chessrl/core/error.h"

namespace chessrl {
namespace {

using namespace std::chrono_literals;

TEST(StopSignals, RequestSetsTheFlagAndWakesWaiters) {
  StopSignals stop("test");
  EXPECT_FALSE(stop.requested());
  EXPECT_FALSE(stop.wait_for(20ms));
  std::thread requester([&] {
    std::this_thread::sleep_for(50ms);
    stop.request();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(stop.wait_for(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  requester.join();
  EXPECT_TRUE(stop.requested());
  EXPECT_TRUE(stop.flag().load());
  EXPECT_TRUE(stop.wait_for(0ms));  // stays requested
}

TEST(StopSignals, SigtermSetsTheFlagAndTheProcessSurvives) {
  testing::internal::CaptureStderr();
  {
    StopSignals stop("test-program", "stopping after this step");
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    EXPECT_TRUE(stop.wait_for(10s));
    ASSERT_EQ(::kill(::getpid(), SIGINT), 0);
    // The second signal is logged before the destructor returns: by the
    // watcher thread, or by the handler once the mask is restored.
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("test-program: SIGTERM: stopping after this step\n"), std::string::npos)
      << err;
  EXPECT_NE(err.find("test-program: SIGINT again: already stopping\n"), std::string::npos) << err;
}

TEST(StopSignals, HandlerServesThreadsStartedBeforeIt) {
  // Like OpenBLAS's pool: a thread that does not block the signals.
  std::atomic<bool> quit{false};
  std::thread early([&] {
    while (!quit) std::this_thread::sleep_for(1ms);
  });
  testing::internal::CaptureStderr();
  {
    StopSignals stop("early-test");
    ASSERT_EQ(::pthread_kill(early.native_handle(), SIGTERM), 0);
    EXPECT_TRUE(stop.wait_for(10s));
  }
  const std::string err = testing::internal::GetCapturedStderr();
  quit = true;
  early.join();
  EXPECT_NE(err.find("early-test: SIGTERM: stopping\n"), std::string::npos) << err;
}

TEST(StopSignals, OnlyOneAtATimeAndItRestoresTheProcess) {
  sigset_t before;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  ASSERT_FALSE(sigismember(&before, SIGTERM));
  {
    StopSignals first("one");
    EXPECT_THROW(StopSignals("two"), Error);
    sigset_t during;
    pthread_sigmask(SIG_SETMASK, nullptr, &during);
    EXPECT_TRUE(sigismember(&during, SIGTERM));
    EXPECT_TRUE(sigismember(&during, SIGINT));
    first.request();
  }
  sigset_t after;
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_FALSE(sigismember(&after, SIGTERM));
  struct sigaction action {};
  sigaction(SIGTERM, nullptr, &action);
  EXPECT_EQ(action.sa_handler, SIG_DFL);
  // A new one starts unrequested.
  StopSignals again("three");
  EXPECT_FALSE(again.requested());
}

}  // namespace
}  // namespace chessrl
