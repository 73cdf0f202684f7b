#include "chessrl/nn/network_config.h"

#include <charconv>

namespace chessrl::nn {

std::string NetworkConfig::name() const {
  std::string s = std::to_string(blocks) + "x" + std::to_string(filters);
  if (se_ratio > 0) s += "-se" + std::to_string(se_ratio);
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
                 in_range("material_head", material_head, 0, 1)})
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
  };
  for (const auto& [name, values] : fields)
    if (values.first != values.second)
      return std::string(name) + " " + std::to_string(values.first) + " vs " +
             std::to_string(values.second);
  return "";
}

Result<NetworkConfig> parse_network_name(const std::string& text) {
  auto bad = [&] {
    return fail("network '" + text + "' is not of the form BLOCKSxFILTERS or BLOCKSxFILTERS-seR");
  };
  NetworkConfig c;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto number = [&](int& out) {
    auto [next, ec] = std::from_chars(p, end, out);
    if (ec != std::errc() || next == p) return false;
    p = next;
    return true;
  };
  if (!number(c.blocks) || p == end || *p++ != 'x' || !number(c.filters)) return bad();
  if (p != end) {
    if (end - p < 4 || std::string_view(p, 3) != "-se") return bad();
    p += 3;
    if (!number(c.se_ratio) || p != end) return bad();
  }
  if (auto r = c.validate(); !r) return fail(r.error());
  return c;
}

}  // namespace chessrl::nn
