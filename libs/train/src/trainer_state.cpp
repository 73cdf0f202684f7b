#include "trainer_state.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace chessrl::train {

// The optimizer section of a checkpoint: "CHRLOPT1", u32 length, JSON
// (TrainerState), then LibTorch's archive of the optimizer's state.
constexpr char kStateMagic[] = "CHRLOPT1";
constexpr std::size_t kStateMagicSize = 8;

std::string encode_state(const TrainerState& s, const std::string& archive) {
  const std::string json = nlohmann::json{{"step", s.step},
                                          {"samples_total", s.samples_total},
                                          {"optimizer", s.optimizer},
                                          {"world_size", s.world_size}}
                               .dump();
  std::string out(kStateMagic, kStateMagicSize);
  const auto n = static_cast<std::uint32_t>(json.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  out += archive;
  return out;
}

Result<DecodedState> decode_state(std::string_view bytes) {
  if (bytes.size() < kStateMagicSize + 4 || bytes.substr(0, kStateMagicSize) != kStateMagic)
    return fail("the checkpoint's optimizer section is not chessrl-trainer state");
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= std::uint32_t(static_cast<unsigned char>(bytes[kStateMagicSize + std::size_t(i)])) << (8 * i);
  if (bytes.size() < kStateMagicSize + 4 + n) return fail("the checkpoint's trainer state is truncated");
  DecodedState d;
  try {
    const auto j = nlohmann::json::parse(bytes.substr(kStateMagicSize + 4, n));
    d.state.step = j.at("step").get<std::int64_t>();
    d.state.samples_total = j.at("samples_total").get<std::uint64_t>();
    d.state.optimizer = j.at("optimizer").get<std::string>();
    d.state.world_size = j.at("world_size").get<int>();
  } catch (const std::exception& e) {
    return fail(std::string("the checkpoint's trainer state is invalid: ") + e.what());
  }
  if (d.state.step < 0) return fail("the checkpoint's trainer state has a negative step");
  d.archive = bytes.substr(kStateMagicSize + 4 + n);
  return d;
}

namespace {

std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, std::int64_t step) {
  char name[48];
  std::snprintf(name, sizeof name, "ckpt-%010lld.chrl", static_cast<long long>(step));
  return (std::filesystem::path(dir) / name).string();
}

Result<std::vector<std::pair<std::int64_t, std::string>>> list_checkpoints(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 20 || name.rfind("ckpt-", 0) != 0 || name.substr(15) != ".chrl") continue;
    const std::string digits = name.substr(5, 10);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.emplace_back(std::stoll(digits), entry.path().string());
  }
  if (ec) return fail("cannot list checkpoints in " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> latest_checkpoint(const std::string& dir) {
  auto all = list_checkpoints(dir);
  if (!all) return fail(all.error());
  return all->empty() ? std::string() : all->back().second;
}

Result<TrainerState> trainer_state(const nn::Checkpoint& checkpoint) {
  if (checkpoint.optimizer_state.empty())
    return fail("the checkpoint has no trainer state (weights only)");
  auto d = decode_state(checkpoint.optimizer_state);
  if (!d) return fail(d.error());
  return d->state;
}

std::uint64_t weights_hash(const nn::Checkpoint& checkpoint) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const nn::NamedTensor& t : checkpoint.tensors) {
    h = fnv1a(h, t.name.data(), t.name.size());
    h = fnv1a(h, t.shape.data(), t.shape.size() * sizeof(std::int64_t));
    h = fnv1a(h, t.data.data(), t.data.size());
  }
  return h;
}

}  // namespace chessrl::train
