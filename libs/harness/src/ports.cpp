#include "chessrl/harness/ports.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <system_error>

namespace chessrl::harness {

std::optional<ReadyFile> read_ready_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer() ||
      !j.contains("ports") || !j["ports"].is_object())
    return std::nullopt;
  ReadyFile ready;
  ready.pid = j["pid"].get<int>();
  for (const auto& [name, port] : j["ports"].items()) {
    if (!port.is_number_integer()) return std::nullopt;
    ready.ports[name] = port.get<int>();
  }
  return ready;
}

std::uintmax_t log_size(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

std::string log_since(const std::string& path, std::uintmax_t from) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(from));
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<int> logged_port(const std::string& path, std::uintmax_t from,
                               const std::string& key) {
  const std::string text = log_since(path, from);
  const std::size_t at = text.rfind(key);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t digits = at + key.size();
  const std::size_t end = text.find_first_not_of("0123456789", digits);
  // A line still being written: wait for what follows the number.
  if (end == std::string::npos || end == digits) return std::nullopt;
  const int port = std::atoi(text.c_str() + digits);
  if (port <= 0 || port > 65535) return std::nullopt;
  return port;
}

int pick_port() {
  int ephemeral_low = 32768;  // Linux's default
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  if (int low = 0; range >> low && low > 12000) ephemeral_low = low;
  static std::mt19937 random{std::random_device{}()};
  return std::uniform_int_distribution<int>(10000, ephemeral_low - 1)(random);
}

std::vector<std::string> with_port(std::vector<std::string> argv, const std::string& flag,
                                   int port) {
  const std::string address = "127.0.0.1:" + std::to_string(port);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) argv[i + 1] = address;
    if (argv[i].rfind(flag + "=", 0) == 0) argv[i] = flag + "=" + address;
  }
  return argv;
}

}  // namespace chessrl::harness
