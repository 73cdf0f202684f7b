#include "chessrl/nn/network_config.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace chessrl::nn {

std::string NetworkConfig::name() const {
  std::string s = std::to_string(blocks) + "x" + std::to_string(filters);
  if (se_ratio > 0) s += "-se" + std::to_string(se_ratio);
  if (global_pool > 0) s += "-gp" + std::to_string(global_pool);
  if (input_features == 1) s += "-feat";
  if (reply_head) s += "-reply";
  if (moves_left_head) s += "-mlh";
  return s;
}

Result<void> NetworkConfig::validate() const {
  auto in_range = [](const char* field, int v, int lo, int hi) -> Result<void> {
    if (v < lo || v > hi)
      return fail("network " + std::string(field) + " = " + std::to_string(v) +
                  " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return {};
  };
  for (auto r : {in_range("blocks", blocks, 1, 64), in_range("filters", filters, 1, 1024),
                 in_range("se_ratio", se_ratio, 0, 1024),
                 in_range("value_channels", value_channels, 1, 1024),
                 in_range("value_hidden", value_hidden, 1, 4096),
                 in_range("material_head", material_head, 0, 1),
                 in_range("input_features", input_features, 0, 1),
                 in_range("global_pool", global_pool, 0, 64),
                 in_range("reply_head", reply_head, 0, 1),
                 in_range("moves_left_head", moves_left_head, 0, 1)})
    if (!r) return r;
  if (se_ratio > 0 && filters % se_ratio != 0)
    return fail("network se_ratio = " + std::to_string(se_ratio) +
                " must divide filters = " + std::to_string(filters));
  return {};
}

std::string NetworkConfig::difference(const NetworkConfig& other) const {
  const std::pair<const char*, std::pair<int, int>> fields[] = {
      {"blocks", {blocks, other.blocks}},
      {"filters", {filters, other.filters}},
      {"se_ratio", {se_ratio, other.se_ratio}},
      {"value_channels", {value_channels, other.value_channels}},
      {"value_hidden", {value_hidden, other.value_hidden}},
      {"material_head", {material_head, other.material_head}},
      {"input_features", {input_features, other.input_features}},
      {"global_pool", {global_pool, other.global_pool}},
      {"reply_head", {reply_head, other.reply_head}},
      {"moves_left_head", {moves_left_head, other.moves_left_head}},
  };
  for (const auto& [name, values] : fields)
    if (values.first != values.second)
      return std::string(name) + " " + std::to_string(values.first) + " vs " +
             std::to_string(values.second);
  return "";
}

Result<NetworkConfig> parse_network_name(const std::string& text) {
  const std::string form =
      "network '" + text + "' is not of the form BLOCKSxFILTERS[-seR][-gpN][-feat][-reply][-mlh]";
  NetworkConfig c;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto number = [&](int& out) {
    auto [next, ec] = std::from_chars(p, end, out);
    if (ec != std::errc() || next == p) return false;
    p = next;
    return true;
  };
  if (!number(c.blocks) || p == end || *p++ != 'x' || !number(c.filters)) return fail(form);
  bool seen_se = false, seen_gp = false, seen_feat = false, seen_reply = false, seen_mlh = false;
  while (p != end) {
    if (*p++ != '-') return fail(form);
    const char* word_end = std::find(p, end, '-');
    const std::string_view word(p, std::size_t(word_end - p));
    auto once = [&](bool& seen, const char* option) -> Result<void> {
      if (seen) return fail("network '" + text + "' names " + option + " twice");
      seen = true;
      return {};
    };
    Result<void> r;
    if (word.starts_with("se") && word.size() > 2) {
      r = once(seen_se, "-seR");
      p += 2;
      if (r && (!number(c.se_ratio) || p != word_end)) return fail(form);
    } else if (word.starts_with("gp") && word.size() > 2) {
      r = once(seen_gp, "-gpN");
      p += 2;
      if (r && (!number(c.global_pool) || p != word_end)) return fail(form);
    } else if (word == "feat") {
      r = once(seen_feat, "-feat");
      c.input_features = 1;
    } else if (word == "reply") {
      r = once(seen_reply, "-reply");
      c.reply_head = 1;
    } else if (word == "mlh") {
      r = once(seen_mlh, "-mlh");
      c.moves_left_head = 1;
    } else {
      return fail("network '" + text + "': unknown option '-" + std::string(word) +
                  "' (known: -seR, -gpN, -feat, -reply, -mlh)");
    }
    if (!r) return fail(r.error());
    p = word_end;
  }
  if (auto r = c.validate(); !r) return fail(r.error());
  return c;
}

}  // namespace chessrl::nn
