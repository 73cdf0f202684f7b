// Checkpoint bytes (parse_checkpoint, parse_checkpoint_info). Each input is
// parsed as it is, and again with its body length and CRC-32 made right, so
// mutations reach the sections, the metadata JSON and the tensor table behind
// the checksum. Checks: what parses is consistent (a valid architecture, each
// tensor's data exactly its shape's size), parse_checkpoint_info agrees with
// parse_checkpoint, and a parsed checkpoint serializes to bytes that parse to
// the same checkpoint.
#include <array>
#include <cstring>
#include <string>
#include <string_view>

#include "chessrl/nn/checkpoint.h"
#include "fuzz_check.h"

using namespace chessrl::nn;

namespace {

constexpr std::size_t kHeaderSize = 8 + 4 + 8;  // magic, format version, body length

std::uint32_t crc32(std::string_view bytes) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (const char b : bytes) c = table[(c ^ static_cast<std::uint8_t>(b)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

bool same_info(const ModelInfo& a, const ModelInfo& b) {
  return a.config.blocks == b.config.blocks && a.config.filters == b.config.filters &&
         a.config.se_ratio == b.config.se_ratio &&
         a.config.value_channels == b.config.value_channels &&
         a.config.value_hidden == b.config.value_hidden && a.step == b.step &&
         a.version == b.version && a.created_ms == b.created_ms && a.description == b.description;
}

bool same_tensor(const NamedTensor& a, const NamedTensor& b) {
  return a.name == b.name && a.type == b.type && a.shape == b.shape && a.data == b.data;
}

// The element count of a shape, or -1 when it does not fit in 63 bits.
std::int64_t checked_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

void check(std::string_view bytes) {
  const auto info = parse_checkpoint_info(bytes);
  const auto checkpoint = parse_checkpoint(bytes);
  if (!info.ok()) FUZZ_CHECK(!info.error().empty());
  if (!checkpoint.ok()) {
    FUZZ_CHECK(!checkpoint.error().empty());
    return;
  }
  FUZZ_CHECK(info.ok(), info.error());
  FUZZ_CHECK(same_info(*info, checkpoint->info));
  FUZZ_CHECK(checkpoint->info.config.validate().ok());
  for (const NamedTensor& t : checkpoint->tensors) {
    const std::int64_t numel = checked_numel(t.shape);
    FUZZ_CHECK(numel >= 0, "tensor '" + t.name + "': its shape's element count overflows");
    FUZZ_CHECK(numel == t.numel());
    const std::size_t element = t.type == TensorType::kFloat32 ? 4 : 8;
    FUZZ_CHECK(t.data.size() / element == static_cast<std::uint64_t>(numel) &&
                   t.data.size() % element == 0,
               "tensor '" + t.name + "': " + std::to_string(t.data.size()) + " bytes for " +
                   std::to_string(numel) + " elements");
  }
  const std::string again = serialize_checkpoint(*checkpoint);
  const auto back = parse_checkpoint(again);
  FUZZ_CHECK(back.ok(), back.error());
  FUZZ_CHECK(same_info(back->info, checkpoint->info));
  FUZZ_CHECK(back->optimizer_state == checkpoint->optimizer_state);
  FUZZ_CHECK(back->tensors.size() == checkpoint->tensors.size());
  for (std::size_t i = 0; i < back->tensors.size(); ++i)
    FUZZ_CHECK(same_tensor(back->tensors[i], checkpoint->tensors[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = chessrl::fuzz::as_text(data, size);
  check(bytes);
  if (bytes.size() >= kHeaderSize + 4) {
    std::string fixed(bytes);
    const std::uint64_t body = fixed.size() - kHeaderSize - 4;
    std::memcpy(fixed.data() + 12, &body, sizeof body);
    const std::uint32_t crc = crc32(std::string_view(fixed).substr(0, fixed.size() - 4));
    std::memcpy(fixed.data() + fixed.size() - 4, &crc, sizeof crc);
    if (fixed != bytes) check(fixed);
  }
  return 0;
}
