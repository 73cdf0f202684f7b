// libs/runtime without a registry: build_model classifies what is wrong with
// a checkpoint (unusable bytes, a refusal before anything is allocated, a copy
// that cannot be saved), files and fresh networks, and the layout rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/runtime/layout.h"
#include "chessrl/runtime/model.h"

namespace chessrl::runtime {
namespace {

namespace fs = std::filesystem;

std::string tiny_blob(std::int64_t step = 0) {
  nn::Checkpoint checkpoint =
      nn::fresh_checkpoint(nn::parse_network_name("1x8").value_or_throw(), 3);
  checkpoint.info.step = step;
  return nn::serialize_checkpoint(checkpoint);
}

ModelOptions one_thread() {
  ModelOptions options;
  options.torch.threads = 1;
  return options;
}

TEST(BuildModel, BuildsACheckpointWithItsVersionNetworkAndStep) {
  ModelLoad load = build_model(tiny_blob(200), 7, one_thread());
  ASSERT_TRUE(load.ok()) << load.message;
  EXPECT_EQ(load.model->version, 7u);
  EXPECT_EQ(load.model->network, "1x8");
  EXPECT_EQ(load.model->step, 200);
  EXPECT_NE(load.model->description.find("1x8"), std::string::npos) << load.model->description;
  ASSERT_NE(load.model->backend, nullptr);
  EXPECT_EQ(load.reason, "");
}

TEST(BuildModel, BytesThatAreNotACheckpointAreUnusable) {
  const std::string blob = tiny_blob();
  for (const std::string& bad : {std::string("not a checkpoint"), blob.substr(0, blob.size() / 2)}) {
    ModelLoad load = build_model(bad, 8, one_thread());
    EXPECT_EQ(load.error, ModelError::kUnusable) << load.message;
    EXPECT_EQ(load.reason, "unusable");
    EXPECT_FALSE(load.model.has_value());
    EXPECT_EQ(load.message.rfind("v8: not a usable checkpoint", 0), 0u) << load.message;
    EXPECT_EQ(load.detail.rfind("not a usable checkpoint", 0), 0u) << load.detail;
  }
}

TEST(BuildModel, OverTheCeilingIsRefusedAndNotSaved) {
  const fs::path dir = fs::temp_directory_path() / ("runtime_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ModelOptions options = one_thread();
  options.torch.limits.max_parameters = 10;  // a 1x8 network has thousands
  options.save_path = (dir / "v9.ckpt").string();
  ModelLoad load = build_model(tiny_blob(), 9, options);
  EXPECT_EQ(load.error, ModelError::kRefused) << load.message;
  EXPECT_EQ(load.reason, "refused");
  EXPECT_FALSE(fs::exists(options.save_path)) << "a refused model must not be saved";
  fs::remove_all(dir);
}

TEST(BuildModel, SavesTheCheckedBytesOrSaysWhyNot) {
  const fs::path dir = fs::temp_directory_path() / ("runtime_save_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string blob = tiny_blob();
  ModelOptions options = one_thread();
  options.save_path = (dir / "v3.ckpt").string();
  ModelLoad load = build_model(blob, 3, options);
  ASSERT_TRUE(load.ok()) << load.message;
  std::ifstream in(options.save_path, std::ios::binary);
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(saved, blob);

  options.save_path = (dir / "no-such-dir" / "v4.ckpt").string();
  ModelLoad unsaved = build_model(blob, 4, options);
  EXPECT_EQ(unsaved.error, ModelError::kBackend) << unsaved.message;
  EXPECT_NE(unsaved.message.find("no-such-dir"), std::string::npos) << unsaved.message;
  fs::remove_all(dir);
}

TEST(BuildModel, ABadDeviceIsABackendError) {
  ModelOptions options = one_thread();
  options.torch.device = "tpu";
  ModelLoad load = build_model(tiny_blob(), 5, options);
  EXPECT_EQ(load.error, ModelError::kBackend) << load.message;
  EXPECT_NE(load.message.find("tpu"), std::string::npos) << load.message;
}

TEST(ModelFromFile, ReadsTheVersionAndNamesAMissingPath) {
  const fs::path path =
      fs::temp_directory_path() / ("runtime_file_" + std::to_string(::getpid()) + ".ckpt");
  nn::Checkpoint checkpoint =
      nn::fresh_checkpoint(nn::parse_network_name("1x8").value_or_throw(), 5);
  checkpoint.info.version = 12;
  ASSERT_TRUE(nn::save_checkpoint_file(checkpoint, path.string()).ok());
  nn::TorchBackendOptions torch;
  torch.threads = 1;
  auto model = model_from_file(path.string(), torch);
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(model->version, 12u);
  EXPECT_NE(model->description.find(path.string()), std::string::npos) << model->description;
  fs::remove(path);

  auto missing = model_from_file("/nonexistent/model.ckpt", torch);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().rfind("/nonexistent/model.ckpt: ", 0), 0u) << missing.error();
}

TEST(FreshAndFakeModels, AreVersionZeroAndAFreshNetHasNoCeiling) {
  nn::TorchBackendOptions torch;
  torch.threads = 1;
  torch.limits.max_parameters = 10;  // the operator's own --net is not a file: no ceiling
  auto fresh = fresh_model(nn::parse_network_name("1x8").value_or_throw(), 1, torch);
  ASSERT_TRUE(fresh.ok()) << fresh.error();
  EXPECT_EQ(fresh->version, 0u);
  EXPECT_EQ(fresh->network, "1x8");
  for (const Model& fake : {uniform_model(), random_model()}) {
    EXPECT_EQ(fake.version, 0u);
    ASSERT_NE(fake.backend, nullptr);
    EXPECT_TRUE(fake.network.empty());
  }
  EXPECT_EQ(error_label(ModelError::kRefused), "refused");
  EXPECT_EQ(error_label(ModelError::kUnavailable), "unavailable");
}

TEST(SearchLayout, FillsTheZerosForTheDevice) {
  const SearchLayout cuda = fill_layout({}, "cuda:1", 0, 8);
  EXPECT_EQ(cuda.workers, 2);
  EXPECT_EQ(cuda.threads, 4);
  EXPECT_EQ(cuda.batch, 256);
  EXPECT_EQ(cuda.concurrent_games, 4 * 256 / 8);

  const SearchLayout cpu = fill_layout({}, "cpu", 0, 8);
  const nn::CpuSplit split = nn::default_cpu_split();
  EXPECT_EQ(cpu.workers, split.workers);
  EXPECT_EQ(cpu.threads, 2 * split.workers);
  EXPECT_EQ(cpu.batch, 64);
  // Fewer LibTorch threads per pass: more passes in flight.
  const SearchLayout narrow = fill_layout({}, "cpu", 1, 8);
  EXPECT_EQ(narrow.workers, split.workers * split.threads);

  const SearchLayout given = fill_layout({3, 5, 32, 7}, "cuda", 0, 8, 4);
  EXPECT_EQ(given.workers, 3);
  EXPECT_EQ(given.threads, 5);
  EXPECT_EQ(given.batch, 32);
  EXPECT_EQ(given.concurrent_games, 4) << "never more games in flight than games to play";
}

TEST(SearchLayout, OneRoundOfAThreadIsOneForwardPass) {
  const SearchLayout layout{2, 4, 64, 30};
  const nn::BatchEvaluatorOptions e = evaluator_options(layout, 8, 1000);
  EXPECT_EQ(e.workers, 2);
  EXPECT_EQ(e.max_batch, 8 * 8);  // ceil(30 / 4) games per thread x 8 leaves
  EXPECT_EQ(e.cache_size, 1000u);
  EXPECT_EQ(evaluator_options({1, 1, 64, 100000}, 8, 0).max_batch, 4096);
}

}  // namespace
}  // namespace chessrl::runtime
