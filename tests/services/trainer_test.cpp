// The chessrl-trainer binary, run as child processes on a small network
// (2x16, CPU, one thread) over a fixed data set of self-play records that the
// test plays first with the uniform fake backend:
//   - two ranks over Gloo on loopback train the same weights as one rank with
//     twice the batch in two accumulated halves;
//   - a run stopped at step 4 and resumed to 8 ends bit-identical to a run of
//     8; SIGTERM stops with a checkpoint at the step reached; after SIGKILL a
//     restart resumes from the latest checkpoint;
//   - against an in-process replay service: trains on sampled positions and
//     publishes a model version; pauses (and serves /metrics saying so) while
//     the window is below --min-window;
//   - bad options, a bad RANK and MASTER_PORT=0 on rank 1 stop start-up with a
//     message naming them.
#include <algorithm>

#include "trainer_test_util.h"

namespace chessrl::trainer_service {
namespace {

std::vector<float> floats(const nn::NamedTensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  std::memcpy(out.data(), t.data.data(), out.size() * sizeof(float));
  return out;
}

TEST_F(TrainerBinaryTest, TwoRanksTrainTheSameWeightsAsOneRankWithTwiceTheBatch) {
  const std::vector<std::string> two = {"--batch-size", "8",   "--steps",          "4",
                                        "--hash-every", "1",   "--checkpoint-dir", path("eq2"),
                                        "--seed",       "7"};
  Pair pair = start_ranks("eq", two);
  const RunResult r0 = finish(pair.rank0, 60s);
  const RunResult r1 = finish(pair.rank1, 60s);
  ASSERT_EQ(r0.code, 0) << describe(r0) << "\nrank 1:\n" << describe(r1);
  ASSERT_EQ(r1.code, 0) << describe(r1);
  ASSERT_TRUE(r0.summary.is_object()) << r0.out;
  ASSERT_TRUE(r1.summary.is_object()) << r1.out;
  EXPECT_EQ(r0.summary["rank"], 0);
  EXPECT_EQ(r1.summary["rank"], 1);
  EXPECT_EQ(r0.summary["world_size"], 2);
  EXPECT_EQ(r0.summary["end_step"], 4);
  EXPECT_EQ(r0.summary["samples_total"], 64);  // 4 steps x 2 ranks x 8
  EXPECT_EQ(r0.summary["weights_hash"], r1.summary["weights_hash"]);

  const RunResult one = run("eq-one", {"--batch-size", "16", "--accumulate", "2", "--steps", "4",
                                       "--checkpoint-dir", path("eq1"), "--seed", "7"});
  ASSERT_EQ(one.code, 0) << describe(one);
  EXPECT_EQ(one.summary["world_size"], 1);
  EXPECT_EQ(one.summary["end_step"], 4);
  EXPECT_EQ(one.summary["samples_total"], 64);

  const std::string file2 = r0.summary["checkpoint"].get<std::string>();
  const std::string file1 = one.summary["checkpoint"].get<std::string>();
  ASSERT_FALSE(file2.empty());
  ASSERT_FALSE(file1.empty());
  auto a = nn::load_checkpoint_file(file2);
  auto b = nn::load_checkpoint_file(file1);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  EXPECT_EQ(train::trainer_state(*a)->world_size, 2);

  // Parameters: max |a - b| <= 1e-5 * (1 + |b|). Batch-norm running
  // statistics differ by construction (averaged over 2 ranks vs updated twice
  // by 2 micro-batches), so they are only checked to be finite.
  double max_diff = 0, max_ratio = 0;
  std::string worst;
  int compared = 0, running = 0;
  for (const auto& tb : b->tensors) {
    const auto it = std::find_if(a->tensors.begin(), a->tensors.end(),
                                 [&](const nn::NamedTensor& t) { return t.name == tb.name; });
    ASSERT_NE(it, a->tensors.end()) << tb.name;
    const nn::NamedTensor& ta = *it;
    ASSERT_EQ(ta.shape, tb.shape) << tb.name;
    ASSERT_EQ(ta.type, tb.type) << tb.name;
    if (tb.type != nn::TensorType::kFloat32) continue;
    const auto va = floats(ta), vb = floats(tb);
    if (tb.name.find("running_") != std::string::npos ||
        tb.name.find("num_batches") != std::string::npos) {
      ++running;
      for (std::size_t i = 0; i < va.size(); ++i) {
        ASSERT_TRUE(std::isfinite(va[i]) && std::isfinite(vb[i])) << tb.name << "[" << i << "]";
      }
      continue;
    }
    ++compared;
    for (std::size_t i = 0; i < va.size(); ++i) {
      const double d = std::fabs(double(va[i]) - double(vb[i]));
      const double ratio = d / (1.0 + std::fabs(double(vb[i])));
      if (d > max_diff) max_diff = d;
      if (ratio > max_ratio) {
        max_ratio = ratio;
        worst = tb.name + "[" + std::to_string(i) + "]";
      }
    }
  }
  std::printf("equivalence: %d parameter tensors compared, %d running-stat tensors finite; "
              "max |a-b| = %.3g, max |a-b|/(1+|b|) = %.3g (%s); tolerance 1e-5\n",
              compared, running, max_diff, max_ratio, worst.c_str());
  EXPECT_GT(compared, 0);
  EXPECT_LE(max_ratio, 1e-5) << "worst at " << worst;
}

TEST_F(TrainerBinaryTest, AResumedRunEndsBitIdenticalToAnUninterruptedOne) {
  const RunResult a = run("resume-a", {"--batch-size", "16", "--steps", "8", "--checkpoint-dir",
                                       path("resume-a")});
  ASSERT_EQ(a.code, 0) << describe(a);
  EXPECT_EQ(a.summary["resumed"], false);
  EXPECT_EQ(a.summary["start_step"], 0);
  EXPECT_EQ(a.summary["end_step"], 8);

  const RunResult b1 = run("resume-b1", {"--batch-size", "16", "--steps", "4", "--checkpoint-dir",
                                         path("resume-b")});
  ASSERT_EQ(b1.code, 0) << describe(b1);
  EXPECT_EQ(b1.summary["end_step"], 4);
  EXPECT_NE(b1.summary["weights_hash"], a.summary["weights_hash"]);

  const RunResult b2 = run("resume-b2", {"--batch-size", "16", "--steps", "8", "--checkpoint-dir",
                                         path("resume-b")});
  ASSERT_EQ(b2.code, 0) << describe(b2);
  EXPECT_EQ(b2.summary["resumed"], true);
  EXPECT_EQ(b2.summary["start_step"], 4);
  EXPECT_EQ(b2.summary["end_step"], 8);
  EXPECT_EQ(b2.summary["samples_total"], a.summary["samples_total"]);
  EXPECT_EQ(b2.summary["weights_hash"], a.summary["weights_hash"]) << describe(b2);
}

TEST_F(TrainerBinaryTest, SigtermStopsWithACheckpointToResumeFrom) {
  const std::string ckpt = path("sigterm");
  Child child = start("sigterm", {"--batch-size", "16", "--steps", "100000", "--checkpoint-every",
                                  "2", "--checkpoint-dir", ckpt});
  ASSERT_FALSE(wait_for_checkpoint(ckpt, 2, child, 60s).empty()) << child.err();
  child.signal(SIGTERM);
  const RunResult stopped = finish(child, 60s);
  ASSERT_EQ(stopped.code, 0) << describe(stopped);
  EXPECT_NE(stopped.err.find("SIGTERM"), std::string::npos) << stopped.err;
  const std::int64_t end = stopped.summary["end_step"].get<std::int64_t>();
  EXPECT_GT(end, 0);
  EXPECT_LT(end, 100000);
  auto latest = train::latest_checkpoint(ckpt);
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ(*latest, stopped.summary["checkpoint"].get<std::string>());
  EXPECT_EQ(checkpoint_step(*latest), end);

  const RunResult resumed =
      run("sigterm-resume", {"--batch-size", "16", "--steps", std::to_string(end + 2),
                             "--checkpoint-every", "2", "--checkpoint-dir", ckpt});
  ASSERT_EQ(resumed.code, 0) << describe(resumed);
  EXPECT_EQ(resumed.summary["resumed"], true);
  EXPECT_EQ(resumed.summary["start_step"], end);
  EXPECT_EQ(resumed.summary["end_step"], end + 2);
}

TEST_F(TrainerBinaryTest, AfterSigkillARestartResumesFromTheLatestCheckpoint) {
  const std::string ckpt = path("sigkill");
  Child child = start("sigkill", {"--batch-size", "16", "--steps", "100000", "--checkpoint-every",
                                  "2", "--checkpoint-dir", ckpt});
  ASSERT_FALSE(wait_for_checkpoint(ckpt, 4, child, 60s).empty()) << child.err();
  child.signal(SIGKILL);
  const RunResult killed = finish(child, 30s);
  EXPECT_EQ(killed.code, 128 + SIGKILL);
  auto latest = train::latest_checkpoint(ckpt);
  ASSERT_TRUE(latest.ok()) << latest.error();
  ASSERT_FALSE(latest->empty());
  const std::int64_t step = checkpoint_step(*latest);
  EXPECT_GE(step, 4);

  const RunResult resumed =
      run("sigkill-resume", {"--batch-size", "16", "--steps", std::to_string(step + 2),
                             "--checkpoint-every", "2", "--checkpoint-dir", ckpt});
  ASSERT_EQ(resumed.code, 0) << describe(resumed);
  EXPECT_EQ(resumed.summary["resumed"], true);
  EXPECT_EQ(resumed.summary["start_step"], step);
  EXPECT_EQ(resumed.summary["end_step"], step + 2);
}

// --- against the replay service (in-process, in-memory stores)

class TrainerReplayTest : public TrainerBinaryTest {
 protected:
  TrainerReplayTest() : games_(100000) {
    server_ = std::make_unique<replay_service::ReplayServer>(games_, models_, registry_,
                                                             testing::fast_server_options());
    address_ = "127.0.0.1:" + std::to_string(server_->port());
    client_ = std::make_unique<rpc::ReplayClient>(testing::single_try_client(server_->port()));
    models_client_ =
        std::make_unique<rpc::ModelRegistryClient>(testing::single_try_client(server_->port()));
    auto pushed = client_->push_games(testing::batch(1, 8, 40));
    if (!pushed.ok()) throw Error(pushed.error());
    for (const auto& r : pushed->results()) {
      if (r.status() != v1::STORED) throw Error("not stored: " + r.id() + ": " + r.detail());
    }
  }

  // No --data: the replay service at address_.
  Child start_replay(const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {CHESSRL_TRAINER_BINARY, "--replay", address_, "--net", "2x16",
                                     "--device", "cpu", "--threads", "1", "--log-every", "1",
                                     "--checkpoint-dir", path(name)};
    // --min-window 0 unless given: train on the few positions pushed (the
    // binary waits for 4,000).
    if (std::find(extra.begin(), extra.end(), "--min-window") == extra.end())
      args.insert(args.end(), {"--min-window", "0"});
    args.insert(args.end(), extra.begin(), extra.end());
    return Child::start(args, {}, dir(), name);
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<replay_service::ReplayServer> server_;
  std::string address_;
  std::unique_ptr<rpc::ReplayClient> client_;
  std::unique_ptr<rpc::ModelRegistryClient> models_client_;
};

TEST_F(TrainerReplayTest, TrainsOnSampledPositionsAndPublishesAModelVersion) {
  Child child = start_replay("replay-train", {"--steps", "3", "--publish-every", "3",
                                              "--batch-size", "16", "--metrics-listen", "off"});
  const RunResult r = finish(child, 60s);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.summary["end_step"], 3);
  EXPECT_EQ(r.summary["samples_total"], 48);

  auto latest = models_client_->latest();
  ASSERT_TRUE(latest.ok()) << latest.error();
  ASSERT_TRUE(latest->has_value()) << describe(r);
  const v1::ModelInfo& info = **latest;
  EXPECT_EQ(info.version(), 1u);
  EXPECT_EQ(info.step(), 3u);
  EXPECT_EQ(info.metadata().at("network"), "2x16");
  EXPECT_EQ(info.metadata().at("producer"), "chessrl-trainer");
  EXPECT_EQ(info.metadata().at("step"), "3");

  // The published blob is a checkpoint of the network, naming its version.
  auto model = models_client_->get(1);
  ASSERT_TRUE(model.ok()) << model.error();
  auto checkpoint = nn::parse_checkpoint(model->second);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error();
  EXPECT_EQ(checkpoint->info.config.name(), "2x16");
  EXPECT_EQ(checkpoint->info.step, 3);
  EXPECT_EQ(checkpoint->info.version, 1);
}

// GET `target` from 127.0.0.1:port: the whole response, headers included.

TEST_F(TrainerReplayTest, PausesBelowTheMinimumWindowAndStillStopsOnSigterm) {
  // --stall-timeout 2: a paused rank makes progress (it looks at the data
  // gates every second), so /healthz stays 200 past that bound.
  Child child = start_replay("replay-pause", {"--steps", "3", "--batch-size", "16",
                                              "--min-window", "1000000", "--metrics-listen",
                                              "127.0.0.1:0", "--stall-timeout", "2",
                                              "--collective-timeout", "1"});
  // Wait for the pause to be logged (and the metrics port).
  int port = 0;
  bool paused = false;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline && !(paused && port > 0)) {
    const std::string err = child.err();
    const auto at = err.find("metrics on port ");
    if (at != std::string::npos) port = std::atoi(err.c_str() + at + 16);
    paused = err.find("paused") != std::string::npos;
    if (auto code = child.wait(0ms)) FAIL() << "exited " << *code << ":\n" << child.err();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(paused) << child.err();
  ASSERT_GT(port, 0) << child.err();

  // Still paused past the stall timeout, at step 0, and /metrics says so.
  std::this_thread::sleep_for(3s);
  const std::string metrics = http_get(port, "/metrics");
  EXPECT_NE(metrics.find("\nchessrl_trainer_paused 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nchessrl_trainer_steps_total 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("chessrl_build_info"), std::string::npos) << metrics;
  EXPECT_NE(http_get(port, "/healthz").find(" 200 "), std::string::npos);

  child.signal(SIGTERM);
  const RunResult r = finish(child, 60s);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.summary["end_step"], 0);
  EXPECT_EQ(r.summary["samples_total"], 0);
  auto latest = models_client_->latest();
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_FALSE(latest->has_value());
}

// --- bad input

TEST_F(TrainerBinaryTest, BadOptionsAndABadRankStopStartUpNamingTheProblem) {
  const RunResult unknown = run("bad-unknown", {"--bogus-option", "3"});
  EXPECT_NE(unknown.code, 0);
  EXPECT_NE(unknown.err.find("--bogus-option"), std::string::npos) << describe(unknown);

  const RunResult batch = run("bad-batch", {"--batch-size", "0"});
  EXPECT_NE(batch.code, 0);
  EXPECT_NE(batch.err.find("batch"), std::string::npos) << describe(batch);

  const RunResult accumulate = run("bad-accumulate", {"--batch-size", "10", "--accumulate", "3"});
  EXPECT_NE(accumulate.code, 0);
  EXPECT_NE(accumulate.err.find("accumulate"), std::string::npos) << describe(accumulate);

  const RunResult net = run("bad-net", {"--net", "2by16"});
  EXPECT_NE(net.code, 0);
  EXPECT_NE(net.err.find("--net"), std::string::npos) << describe(net);

  const RunResult rank = run("bad-rank", {"--steps", "1"}, {{"RANK", "5"}, {"WORLD_SIZE", "2"}});
  EXPECT_NE(rank.code, 0);
  std::string lower = rank.err;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  EXPECT_NE(lower.find("rank 5"), std::string::npos) << describe(rank);

  // Only rank 0 can bind a port the kernel picks.
  const RunResult port0 = run("bad-port", {"--steps", "1"}, rank_env(1, 0));
  EXPECT_EQ(port0.code, 2) << describe(port0);
  EXPECT_NE(port0.err.find("MASTER_PORT=0"), std::string::npos) << describe(port0);
  EXPECT_NE(port0.err.find("rank 0 only"), std::string::npos) << describe(port0);

  Child missing = Child::start({CHESSRL_TRAINER_BINARY, "--data", path("no-such-file.jsonl"),
                                "--net", "2x16", "--device", "cpu", "--metrics-listen", "off"},
                               {}, dir(), "bad-data");
  const RunResult data = finish(missing, 30s);
  EXPECT_EQ(data.code, 1);
  EXPECT_NE(data.err.find("no-such-file.jsonl"), std::string::npos) << describe(data);
}

}  // namespace
}  // namespace chessrl::trainer_service
