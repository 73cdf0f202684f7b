// What a Redis server says of itself (INFO): its version, persistence and
// memory for the store_* gauges, and the acknowledgement plan its settings
// allow (plan_acknowledgement: AOF, appendfsync, WAITAOF; docs/replay.md,
// "Durability").
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/replay/redis_store.h"
#include "parse_number.h"

namespace chessrl::replay {

namespace {

// The "key:value" lines of INFO replies (sections and blank lines skipped).
std::map<std::string_view, std::string_view> info_fields(std::string_view info) {
  std::map<std::string_view, std::string_view> fields;
  while (!info.empty()) {
    const std::size_t end = info.find('\n');
    std::string_view line = info.substr(0, end);
    info = end == std::string_view::npos ? std::string_view() : info.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos) fields[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return fields;
}

}  // namespace

std::optional<int> parse_redis_version(std::string_view version) {
  const std::size_t dot = version.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view minor_text = version.substr(dot + 1);
  auto major = parse_number<int>(version.substr(0, dot));
  auto minor = parse_number<int>(minor_text.substr(0, minor_text.find('.')));
  if (!major || !minor || *major < 0 || *minor < 0 || *minor > 99) return std::nullopt;
  return *major * 100 + *minor;
}

Result<AckPlan> plan_acknowledgement(const RedisOptions& options, std::string_view info,
                                     const std::optional<std::string>& appendfsync) {
  const auto fields = info_fields(info);
  const auto aof = fields.find("aof_enabled");
  if (aof == fields.end() || (aof->second != "0" && aof->second != "1")) {
    return fail(
        "INFO persistence has no aof_enabled: cannot tell whether Redis persists "
        "acknowledged games");
  }
  const bool aof_enabled = aof->second == "1";
  if (!aof_enabled && !options.allow_unpersisted) {
    return fail(
        "Redis writes no append-only file (appendonly no): a restart or a failover loses every "
        "acknowledged game since its last RDB snapshot, if any. Run Redis with appendonly yes "
        "(and appendfsync always), or start with --allow-unpersisted-acks if losing "
        "acknowledged games is acceptable");
  }
  AckPlan plan;
  if (!options.ack_fsync) return plan;
  if (!aof_enabled) {
    return fail(
        "--ack-fsync: Redis writes no append-only file (appendonly no), so there is no "
        "fsync to wait for: run it with appendonly yes");
  }
  if (appendfsync == "always") return plan;  // Redis fsyncs before it replies
  const auto version_field = fields.find("redis_version");
  const std::string version = version_field == fields.end() ? std::string("of unknown version")
                                                            : std::string(version_field->second);
  const auto number =
      version_field == fields.end() ? std::nullopt : parse_redis_version(version_field->second);
  if (number && *number >= 702) {
    plan.wait_aof = true;  // WAITAOF, Redis 7.2 or newer
    return plan;
  }
  return fail("--ack-fsync: Redis " + version +
              (appendfsync ? " has appendfsync " + *appendfsync
                           : std::string(" does not say its appendfsync (CONFIG GET refused)")) +
              " and no WAITAOF (Redis 7.2 or newer): set appendfsync always, or use Redis 7.2 or "
              "newer");
}

Result<StoreServerInfo> parse_redis_info(std::string_view info) {
  const auto fields = info_fields(info);
  std::string missing;
  const auto field = [&](std::string_view name) -> std::string_view {
    const auto it = fields.find(name);
    if (it == fields.end()) {
      if (missing.empty()) missing = "INFO has no " + std::string(name);
      return {};
    }
    return it->second;
  };
  const auto integer = [&](std::string_view name) -> std::int64_t {
    const std::string_view value = field(name);
    if (!missing.empty()) return 0;
    auto parsed = parse_number<std::int64_t>(value);
    if (!parsed) missing = "INFO " + std::string(name) + " is not a number: " + std::string(value);
    return parsed.value_or(0);
  };
  StoreServerInfo out;
  out.used_memory_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer("used_memory")));
  out.max_memory_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer("maxmemory")));
  out.aof_enabled = integer("aof_enabled") != 0;
  out.aof_ok = field("aof_last_write_status") == "ok" && field("aof_last_bgrewrite_status") == "ok";
  out.rdb_ok = field("rdb_last_bgsave_status") == "ok";
  out.changes_since_save =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, integer("rdb_changes_since_last_save")));
  out.last_save_unix = integer("rdb_last_save_time");
  if (!missing.empty()) return fail(missing);
  return out;
}

}  // namespace chessrl::replay
