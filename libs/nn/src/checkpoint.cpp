#include "chessrl/nn/checkpoint.h"

#include "chessrl/core/files.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace chessrl::nn {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'R', 'L', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 8 + 4 + 8;
constexpr size_t kMaxTensors = 100000;
constexpr size_t kMaxRank = 8;

std::uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large buffers in pieces.
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const uInt n = uInt(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(p), n);
    p += n;
    left -= n;
  }
  return std::uint32_t(crc);
}

template <class T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

// Bounds-checked reading of the little-endian fields.
class Reader {
 public:
  Reader(std::string_view bytes, std::string what) : b_(bytes), what_(std::move(what)) {}
  template <class T>
  Result<T> get(const char* field) {
    if (b_.size() - pos_ < sizeof(T)) return truncated(field, sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  Result<std::string_view> bytes(const char* field, std::uint64_t n) {
    if (b_.size() - pos_ < n) return truncated(field, n);
    std::string_view v = b_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return v;
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  Failure truncated(const char* field, std::uint64_t n) const {
    return fail("checkpoint is corrupt: " + what_ + " " + field + " needs " + std::to_string(n) +
                " bytes at offset " + std::to_string(pos_) + " but only " +
                std::to_string(b_.size() - pos_) + " remain");
  }
  std::string_view b_;
  std::string what_;
  size_t pos_ = 0;
};

nlohmann::json info_to_json(const ModelInfo& info) {
  const NetworkConfig& c = info.config;
  return {{"architecture",
           {{"blocks", c.blocks},
            {"filters", c.filters},
            {"se_ratio", c.se_ratio},
            {"value_channels", c.value_channels},
            {"value_hidden", c.value_hidden},
            {"material_head", c.material_head},
            {"input_features", c.input_features},
            {"global_pool", c.global_pool},
            {"reply_head", c.reply_head},
            {"moves_left_head", c.moves_left_head}}},
          {"step", info.step},
          {"version", info.version},
          {"created_ms", info.created_ms},
          {"description", info.description}};
}

Result<ModelInfo> info_from_json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("checkpoint metadata is not a JSON object");
  ModelInfo info;
  auto integer = [](const nlohmann::json& obj, const char* key, auto& out,
                    const std::string& where) -> Result<void> {
    auto it = obj.find(key);
    if (it == obj.end()) return fail("checkpoint metadata lacks " + where + key);
    if (!it->is_number_integer())
      return fail("checkpoint metadata " + where + key + " is not an integer");
    const auto v = it->template get<std::int64_t>();
    using T = std::remove_reference_t<decltype(out)>;
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
      return fail("checkpoint metadata " + where + key + " = " + std::to_string(v) +
                  " is out of range");
    out = T(v);
    return {};
  };
  auto arch = j.find("architecture");
  if (arch == j.end() || !arch->is_object()) return fail("checkpoint metadata lacks architecture");
  NetworkConfig& c = info.config;
  for (auto r : {integer(*arch, "blocks", c.blocks, "architecture."),
                 integer(*arch, "filters", c.filters, "architecture."),
                 integer(*arch, "se_ratio", c.se_ratio, "architecture."),
                 integer(*arch, "value_channels", c.value_channels, "architecture."),
                 integer(*arch, "value_hidden", c.value_hidden, "architecture."),
                 integer(j, "step", info.step, ""), integer(j, "version", info.version, ""),
                 integer(j, "created_ms", info.created_ms, "")})
    if (!r) return fail(r.error());
  // Checkpoints made before the material head have none, nor the later
  // options (each 0, off, when absent).
  c.material_head = 0;
  for (auto [key, field] : {std::pair{"material_head", &c.material_head},
                            std::pair{"input_features", &c.input_features},
                            std::pair{"global_pool", &c.global_pool},
                            std::pair{"reply_head", &c.reply_head},
                            std::pair{"moves_left_head", &c.moves_left_head}})
    if (arch->contains(key))
      if (auto r = integer(*arch, key, *field, "architecture."); !r) return fail(r.error());
  if (auto r = c.validate(); !r) return fail("checkpoint architecture: " + r.error());
  if (auto it = j.find("description"); it != j.end() && it->is_string())
    info.description = it->get<std::string>();
  return info;
}

size_t element_size(TensorType t) { return t == TensorType::kFloat32 ? 4 : 8; }

struct Sections {
  std::string_view meta, tensors, optimizer;
  bool has_meta = false, has_tensors = false;
};

// Checks magic, version, length and CRC; the body's length.
Result<std::uint64_t> check_container(std::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return fail("not a chess-rl checkpoint (the file does not start with CHRLCKPT)");
  if (bytes.size() < kHeaderSize + 4)
    return fail("checkpoint is truncated: " + std::to_string(bytes.size()) +
                " bytes, less than its " + std::to_string(kHeaderSize + 4) +
                "-byte header and checksum");
  Reader header(bytes, "header");
  (void)header.bytes("magic", 8);
  auto version = header.get<std::uint32_t>("format version");
  if (!version) return fail(version.error());
  if (*version != kFormatVersion)
    return fail("checkpoint format version " + std::to_string(*version) +
                " is not supported (this build reads version " + std::to_string(kFormatVersion) +
                ")");
  auto body_len = header.get<std::uint64_t>("body length");
  if (!body_len) return fail(body_len.error());
  const std::uint64_t expected = kHeaderSize + *body_len + 4;
  if (*body_len > bytes.size() || bytes.size() != expected) {
    if (bytes.size() < expected)
      return fail("checkpoint is truncated: " + std::to_string(bytes.size()) + " bytes, expected " +
                  std::to_string(expected));
    return fail("checkpoint has " + std::to_string(bytes.size() - expected) +
                " unexpected bytes after its end");
  }
  std::uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  if (crc32_of(bytes.substr(0, bytes.size() - 4)) != stored)
    return fail("checkpoint is corrupt: CRC-32 mismatch");
  return *body_len;
}

// check_container, then the body split into sections.
Result<Sections> split(std::string_view bytes) {
  auto body_len = check_container(bytes);
  if (!body_len) return fail(body_len.error());
  Sections s;
  Reader body(bytes.substr(kHeaderSize, size_t(*body_len)), "section");
  while (body.left() > 0) {
    auto tag = body.bytes("tag", 4);
    if (!tag) return fail(tag.error());
    auto len = body.get<std::uint64_t>("length");
    if (!len) return fail(len.error());
    auto payload = body.bytes("payload", *len);
    if (!payload) return fail(payload.error());
    if (*tag == "META") {
      s.meta = *payload;
      s.has_meta = true;
    } else if (*tag == "TENS") {
      s.tensors = *payload;
      s.has_tensors = true;
    } else if (*tag == "OPTM") {
      s.optimizer = *payload;
    }  // Unknown sections are skipped: later versions may add some.
  }
  if (!s.has_meta) return fail("checkpoint has no META section");
  if (!s.has_tensors) return fail("checkpoint has no TENS section");
  return s;
}

Result<std::vector<NamedTensor>> parse_tensors(std::string_view payload) {
  Reader r(payload, "tensor table");
  auto count = r.get<std::uint32_t>("count");
  if (!count) return fail(count.error());
  if (*count > kMaxTensors) return fail("checkpoint lists " + std::to_string(*count) + " tensors");
  std::vector<NamedTensor> out;
  out.reserve(*count);
  for (std::uint32_t i = 0; i < *count; ++i) {
    NamedTensor t;
    auto name_len = r.get<std::uint16_t>("name length");
    if (!name_len) return fail(name_len.error());
    auto name = r.bytes("name", *name_len);
    if (!name) return fail(name.error());
    t.name = std::string(*name);
    auto type = r.get<std::uint8_t>("type");
    if (!type) return fail(type.error());
    if (*type > 1)
      return fail("checkpoint tensor '" + t.name + "' has unknown type " + std::to_string(*type));
    t.type = TensorType(*type);
    auto rank = r.get<std::uint8_t>("rank");
    if (!rank) return fail(rank.error());
    if (*rank > kMaxRank)
      return fail("checkpoint tensor '" + t.name + "' has rank " + std::to_string(*rank));
    std::uint64_t numel = 1;
    for (int d = 0; d < *rank; ++d) {
      auto dim = r.get<std::int64_t>("dimension");
      if (!dim) return fail(dim.error());
      if (*dim < 0 || *dim > (std::int64_t(1) << 32))
        return fail("checkpoint tensor '" + t.name + "' has dimension " + std::to_string(*dim));
      t.shape.push_back(*dim);
      // Checked before multiplying: 2^32 * 2^32 elements would wrap to 0.
      if (*dim != 0 && numel > (std::uint64_t(1) << 36) / std::uint64_t(*dim))
        return fail("checkpoint tensor '" + t.name + "' is too large");
      numel *= std::uint64_t(*dim);
    }
    auto data = r.bytes("data", numel * element_size(t.type));
    if (!data) return fail("checkpoint tensor '" + t.name + "': " + data.error());
    // assign, not memcpy: an empty tensor's data() may be null, and memcpy from
    // or to null is undefined even for 0 bytes.
    t.data.assign(reinterpret_cast<const std::byte*>(data->data()),
                  reinterpret_cast<const std::byte*>(data->data()) + data->size());
    out.push_back(std::move(t));
  }
  if (r.left() != 0)
    return fail("checkpoint tensor table has " + std::to_string(r.left()) +
                " bytes after its last tensor");
  return out;
}

}  // namespace

std::int64_t NamedTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::int64_t unix_millis_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string serialize_checkpoint(const Checkpoint& checkpoint) {
  std::string body;
  auto section = [&](const char* tag, const std::string& payload) {
    body.append(tag, 4);
    put<std::uint64_t>(body, payload.size());
    body += payload;
  };
  section("META", info_to_json(checkpoint.info).dump());
  std::string tensors;
  put<std::uint32_t>(tensors, std::uint32_t(checkpoint.tensors.size()));
  for (const NamedTensor& t : checkpoint.tensors) {
    put<std::uint16_t>(tensors, std::uint16_t(t.name.size()));
    tensors += t.name;
    put<std::uint8_t>(tensors, std::uint8_t(t.type));
    put<std::uint8_t>(tensors, std::uint8_t(t.shape.size()));
    for (auto d : t.shape) put<std::int64_t>(tensors, d);
    tensors.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  section("TENS", tensors);
  if (!checkpoint.optimizer_state.empty()) section("OPTM", checkpoint.optimizer_state);

  std::string out(kMagic, 8);
  put<std::uint32_t>(out, kFormatVersion);
  put<std::uint64_t>(out, body.size());
  out += body;
  put<std::uint32_t>(out, crc32_of(out));
  return out;
}

std::optional<std::string> checkpoint_damage(std::string_view bytes) {
  if (bytes.size() >= kHeaderSize) {
    std::uint32_t version;
    std::memcpy(&version, bytes.data() + 8, 4);
    if (std::memcmp(bytes.data(), kMagic, 8) == 0 && version != kFormatVersion) return std::nullopt;
  }
  auto container = check_container(bytes);
  if (container) return std::nullopt;
  return container.error();
}

Result<Checkpoint> parse_checkpoint(std::string_view bytes) {
  auto sections = split(bytes);
  if (!sections) return fail(sections.error());
  Checkpoint c;
  auto info = info_from_json(sections->meta);
  if (!info) return fail(info.error());
  c.info = std::move(info).value();
  auto tensors = parse_tensors(sections->tensors);
  if (!tensors) return fail(tensors.error());
  c.tensors = std::move(tensors).value();
  c.optimizer_state = std::string(sections->optimizer);
  return c;
}

Result<ModelInfo> parse_checkpoint_info(std::string_view bytes) {
  auto sections = split(bytes);
  if (!sections) return fail(sections.error());
  return info_from_json(sections->meta);
}

Result<void> save_checkpoint_file(const Checkpoint& checkpoint, const std::string& path) {
  const std::string bytes = serialize_checkpoint(checkpoint);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot write checkpoint " + tmp + ": " + std::strerror(errno));
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail("cannot write checkpoint " + tmp + ": " + why);
    }
    p += n;
    left -= size_t(n);
  }
  // On disk before the rename, so a crash leaves the old file or the new one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail("cannot write checkpoint " + tmp + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail("cannot rename " + tmp + " to " + path + ": " + why);
  }
  // The rename is in the directory: on disk only once the directory is synced.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return fail("cannot open directory " + dir + " to sync " + path + ": " + std::strerror(errno));
  const int synced = ::fsync(dfd);
  const int sync_errno = errno;
  ::close(dfd);
  // EINVAL: a file system that cannot sync directories; the rename stands.
  if (synced != 0 && sync_errno != EINVAL)
    return fail("cannot sync directory " + dir + " after writing " + path + ": " +
                std::strerror(sync_errno));
  return {};
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0) continue;
    const std::string digits = name.substr(at + 5);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(digits));
    const bool dead = pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH);
    if (!dead && pid != ::getpid()) continue;
    std::error_code rm;
    if (fs::remove(entry.path(), rm)) removed.push_back(entry.path().string());
  }
  return removed;
}

Result<std::string> read_file_bytes(const std::string& path) { return read_file(path); }

Result<Checkpoint> load_checkpoint_file(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return fail(bytes.error());
  auto c = parse_checkpoint(*bytes);
  if (!c) return fail(path + ": " + c.error());
  return c;
}

}  // namespace chessrl::nn
