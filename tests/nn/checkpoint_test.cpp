#include "chessrl/nn/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace chessrl::nn {
namespace {

NamedTensor float_tensor(std::string name, std::vector<std::int64_t> shape, float start) {
  NamedTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  std::vector<float> values(size_t(t.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + float(i) * 0.5f;
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

Checkpoint sample() {
  Checkpoint c;
  c.info.config = NetworkConfig{4, 32, 4, 16, 64};
  c.info.step = 1234;
  c.info.version = 7;
  c.info.created_ms = 1700000000123;
  c.info.description = "test \"checkpoint\"\n";
  c.tensors.push_back(float_tensor("input.conv.weight", {32, 112, 3, 3}, -1.0f));
  c.tensors.push_back(float_tensor("value.fc2.bias", {3}, 0.25f));
  NamedTensor count;
  count.name = "input.bn.num_batches_tracked";
  count.type = TensorType::kInt64;
  std::int64_t n = 99;
  count.data.resize(8);
  std::memcpy(count.data.data(), &n, 8);
  c.tensors.push_back(count);
  c.optimizer_state = std::string("opaque\0bytes", 12);
  return c;
}

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.info.config, b.info.config);
  EXPECT_EQ(a.info.step, b.info.step);
  EXPECT_EQ(a.info.version, b.info.version);
  EXPECT_EQ(a.info.created_ms, b.info.created_ms);
  EXPECT_EQ(a.info.description, b.info.description);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].type, b.tensors[i].type);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].data, b.tensors[i].data);
  }
  EXPECT_EQ(a.optimizer_state, b.optimizer_state);
}

void expect_error(const Result<Checkpoint>& r, const std::string& words) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << words << "'";
  EXPECT_NE(r.error().find(words), std::string::npos) << r.error();
}

TEST(Checkpoint, BytesRoundTrip) {
  const Checkpoint c = sample();
  const std::string bytes = serialize_checkpoint(c);
  auto back = parse_checkpoint(bytes);
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(c, *back);
  EXPECT_EQ(serialize_checkpoint(*back), bytes) << "deterministic";
  auto info = parse_checkpoint_info(bytes);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_EQ(info->step, 1234);
  EXPECT_EQ(info->config.name(), "4x32-se4");
  // The later options travel too.
  Checkpoint options = sample();
  options.info.config = parse_network_name("4x32-gp2-feat-reply-mlh").value_or_throw();
  auto options_back = parse_checkpoint(serialize_checkpoint(options));
  ASSERT_TRUE(options_back.ok()) << options_back.error();
  expect_same(options, *options_back);
}

// Found by fuzz_checkpoint (tests/fuzz/corpus/checkpoint/): an empty tensor
// was copied with memcpy to the null data() of an empty vector (undefined,
// caught by UBSan in the asan preset).
TEST(Checkpoint, EmptyTensorRoundTrips) {
  Checkpoint c = sample();
  c.tensors.push_back(float_tensor("empty", {0, 3}, 0.0f));
  auto back = parse_checkpoint(serialize_checkpoint(c));
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(c, *back);
  EXPECT_TRUE(back->tensors.back().data.empty());
}

TEST(Checkpoint, EveryTruncationIsAnError) {
  const std::string bytes = serialize_checkpoint(sample());
  for (size_t len = 0; len < bytes.size(); len += (len < 64 ? 1 : 997)) {
    auto r = parse_checkpoint(std::string_view(bytes).substr(0, len));
    ASSERT_FALSE(r.ok()) << "length " << len;
    if (len >= 8) {
      EXPECT_NE(r.error().find("truncated"), std::string::npos) << len << ": " << r.error();
    }
  }
  expect_error(parse_checkpoint(bytes + "x"), "unexpected bytes after its end");
}

TEST(Checkpoint, CorruptBytesAreCaught) {
  const std::string bytes = serialize_checkpoint(sample());
  for (size_t at : {size_t(30), bytes.size() / 2, bytes.size() - 5, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = char(bad[at] ^ 0x10);
    expect_error(parse_checkpoint(bad), "CRC-32 mismatch");
  }
  expect_error(parse_checkpoint("hello world, not a checkpoint at all"),
               "not a chess-rl checkpoint");
  expect_error(parse_checkpoint(""), "not a chess-rl checkpoint");
}

// Rewrites the META section of a valid checkpoint and fixes its CRC, so the
// metadata checks themselves are reached.
std::string with_meta(const std::string& meta) {
  Checkpoint c = sample();
  std::string bytes = serialize_checkpoint(c);
  const size_t meta_len_at = 20 + 4;
  std::uint64_t old_len;
  std::memcpy(&old_len, bytes.data() + meta_len_at, 8);
  std::string out = bytes.substr(0, 20) + "META";
  const std::uint64_t len = meta.size();
  out.append(reinterpret_cast<const char*>(&len), 8);
  out += meta;
  out += bytes.substr(meta_len_at + 8 + old_len, bytes.size() - 4 - (meta_len_at + 8 + old_len));
  const std::uint64_t body = out.size() - 20;
  std::memcpy(out.data() + 12, &body, 8);
  // CRC-32 (zlib's polynomial), computed here independently of the library.
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char ch : out) {
    crc ^= ch;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  out.append(reinterpret_cast<const char*>(&crc), 4);
  return out;
}

TEST(Checkpoint, BadMetadataIsNamed) {
  const std::string arch =
      R"("architecture":{"blocks":4,"filters":32,"se_ratio":4,"value_channels":16,"value_hidden":64})";
  ASSERT_TRUE(
      parse_checkpoint(with_meta("{" + arch + R"(,"step":1,"version":2,"created_ms":3})")).ok())
      << "the rewriting itself is sound";
  // A checkpoint from before the material head has none; one with it says so.
  EXPECT_EQ(parse_checkpoint(with_meta("{" + arch + R"(,"step":1,"version":2,"created_ms":3})"))
                ->info.config.material_head,
            0);
  const std::string with_head =
      R"("architecture":{"blocks":4,"filters":32,"se_ratio":4,"value_channels":16,"value_hidden":64,"material_head":1})";
  EXPECT_EQ(parse_checkpoint(with_meta("{" + with_head + R"(,"step":1,"version":2,"created_ms":3})"))
                ->info.config.material_head,
            1);
  const std::string bad_head =
      R"("architecture":{"blocks":4,"filters":32,"se_ratio":4,"value_channels":16,"value_hidden":64,"material_head":2})";
  expect_error(parse_checkpoint(with_meta("{" + bad_head + R"(,"step":1,"version":2,"created_ms":3})")),
               "material_head = 2 is out of range");
  // Checkpoints from before the later options have them off; a bad one is named.
  const NetworkConfig old = parse_checkpoint(with_meta("{" + with_head + R"(,"step":1,"version":2,"created_ms":3})"))
                                ->info.config;
  EXPECT_EQ(old.input_features + old.global_pool + old.reply_head + old.moves_left_head, 0);
  const std::string bad_pool =
      R"("architecture":{"blocks":4,"filters":32,"se_ratio":4,"value_channels":16,"value_hidden":64,"global_pool":-1})";
  expect_error(parse_checkpoint(with_meta("{" + bad_pool + R"(,"step":1,"version":2,"created_ms":3})")),
               "global_pool = -1 is out of range");
  expect_error(parse_checkpoint(with_meta("{not json")), "not a JSON object");
  expect_error(parse_checkpoint(with_meta("{" + arch + R"(,"version":2,"created_ms":3})")),
               "lacks step");
  expect_error(
      parse_checkpoint(with_meta("{" + arch + R"(,"step":"x","version":2,"created_ms":3})")),
      "step is not an integer");
  expect_error(parse_checkpoint(with_meta(R"({"step":1,"version":2,"created_ms":3})")),
               "lacks architecture");
  expect_error(
      parse_checkpoint(with_meta(
          R"({"architecture":{"blocks":0,"filters":32,"se_ratio":0,"value_channels":16,"value_hidden":64},"step":1,"version":2,"created_ms":3})")),
      "blocks = 0 is out of range");
  expect_error(
      parse_checkpoint(with_meta(
          R"({"architecture":{"filters":32,"se_ratio":0,"value_channels":16,"value_hidden":64},"step":1,"version":2,"created_ms":3})")),
      "lacks architecture.blocks");
}

// Found by fuzz_checkpoint: the element count was checked after multiplying,
// so dimensions 2^32 x 2^32 wrapped to 0 elements and a tensor of that shape
// parsed with no data at all.
TEST(Checkpoint, ElementCountCannotWrap) {
  Checkpoint c = sample();
  NamedTensor huge;
  huge.name = "huge";
  huge.shape = {std::int64_t(1) << 32, std::int64_t(1) << 32};
  c.tensors = {huge};
  expect_error(parse_checkpoint(serialize_checkpoint(c)), "checkpoint tensor 'huge' is too large");
}

TEST(Checkpoint, FilesAreWrittenAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("chessrl_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.ckpt").string();
  const Checkpoint c = sample();
  ASSERT_TRUE(save_checkpoint_file(c, path).ok());
  Checkpoint newer = c;
  newer.info.step = 2000;
  ASSERT_TRUE(save_checkpoint_file(newer, path).ok()) << "overwrites";
  auto back = load_checkpoint_file(path);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->info.step, 2000);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file left behind";

  auto missing = load_checkpoint_file((dir / "nope.ckpt").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("nope.ckpt"), std::string::npos) << missing.error();
  auto unwritable = save_checkpoint_file(c, (dir / "no" / "such" / "dir.ckpt").string());
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.error().find("no/such"), std::string::npos) << unwritable.error();

  // A truncated file on disk names the file and the problem.
  const std::string bytes = serialize_checkpoint(c);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), std::streamsize(bytes.size() / 2));
  auto truncated = load_checkpoint_file(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().find("model.ckpt"), std::string::npos) << truncated.error();
  EXPECT_NE(truncated.error().find("truncated"), std::string::npos) << truncated.error();
  std::filesystem::remove_all(dir);
}

// Temporary files of writers that died mid-write go; a live writer's stay.
TEST(Checkpoint, StaleTemporaryFilesOfDeadWritersAreRemoved) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("chessrl_ckpt_tmp_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: that pid is dead now
  const auto file = [&](const std::string& name) {
    std::ofstream((dir / name).string()) << "half";
    return (dir / name).string();
  };
  const std::string dead = file("ckpt-0000000010.chrl.tmp." + std::to_string(child));
  const std::string own = file("ckpt-0000000020.chrl.tmp." + std::to_string(::getpid()));
  const std::string live = file("ckpt-0000000030.chrl.tmp." + std::to_string(::getppid()));
  const std::string other = file("notes.tmp.txt");
  const auto removed = remove_stale_temp_files(dir.string());
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(own));
  EXPECT_TRUE(std::filesystem::exists(live)) << "a live process's write in flight";
  EXPECT_TRUE(std::filesystem::exists(other));
  // A checkpoint saved in a directory is there (the directory is synced too).
  ASSERT_TRUE(save_checkpoint_file(sample(), (dir / "m.ckpt").string()).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "m.ckpt"));
  std::filesystem::remove_all(dir);
}

TEST(NetworkConfig, NamesAndValidation) {
  EXPECT_EQ((NetworkConfig{6, 64}).name(), "6x64");
  EXPECT_EQ((NetworkConfig{10, 128, 8}).name(), "10x128-se8");
  auto c = parse_network_name("10x128-se8");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->blocks, 10);
  EXPECT_EQ(c->filters, 128);
  EXPECT_EQ(c->se_ratio, 8);
  for (const char* bad : {"", "6", "6x", "x64", "6x64x", "6x64-se", "6x64-sex", "6x64-se3", "0x64",
                          "6x-4", "6x64 "}) {
    auto r = parse_network_name(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(parse_network_name("6x64-se3").error().find("must divide filters"), std::string::npos);
  EXPECT_EQ((NetworkConfig{6, 64}).difference(NetworkConfig{6, 128}), "filters 64 vs 128");
  EXPECT_EQ((NetworkConfig{6, 64}).difference(NetworkConfig{6, 64}), "");
}

TEST(NetworkConfig, OptionWordsRoundTripInAnyOrderOnce) {
  auto c = parse_network_name("4x32-mlh-feat-gp2-se4-reply");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->se_ratio, 4);
  EXPECT_EQ(c->global_pool, 2);
  EXPECT_EQ(c->input_features, 1);
  EXPECT_EQ(c->reply_head, 1);
  EXPECT_EQ(c->moves_left_head, 1);
  EXPECT_EQ(c->material_head, 1);
  EXPECT_EQ(c->name(), "4x32-se4-gp2-feat-reply-mlh");
  EXPECT_EQ(parse_network_name(c->name()).value_or_throw(), *c);
  const NetworkConfig plain = parse_network_name("4x32").value_or_throw();
  EXPECT_EQ(plain.input_features + plain.global_pool + plain.reply_head + plain.moves_left_head, 0);
  EXPECT_EQ(plain.difference(*c), "se_ratio 0 vs 4");
  NetworkConfig feat = plain;
  feat.input_features = 1;
  EXPECT_EQ(plain.difference(feat), "input_features 0 vs 1");
  EXPECT_NE(parse_network_name("4x32-feat-feat").error().find("names -feat twice"),
            std::string::npos);
  EXPECT_NE(parse_network_name("4x32-gp1-gp2").error().find("names -gpN twice"), std::string::npos);
  EXPECT_NE(parse_network_name("4x32-wide").error().find("unknown option '-wide'"),
            std::string::npos);
  EXPECT_NE(parse_network_name("4x32-gp65").error().find("global_pool = 65 is out of range"),
            std::string::npos);
  for (const char* bad : {"4x32-", "4x32--feat", "4x32-gp", "4x32-gpx", "4x32-feat1", "4x32-se4x"})
    EXPECT_FALSE(parse_network_name(bad).ok()) << bad;
}

}  // namespace
}  // namespace chessrl::nn
