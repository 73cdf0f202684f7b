#include "chessrl/config/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstddef>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace chessrl::config {
namespace {

bool env_set(const std::string& long_name) {
  const char* value = std::getenv(env_name(long_name).c_str());
  return value != nullptr && *value != '\0';
}

// Map entries read, aliases expanded, before a file is refused. A file has a
// few dozen; the cap stops one whose aliases nest (a: &a {x: 1, y: 1}, b: &b
// {p: *a, q: *a}, ...) from expanding a few hundred bytes into millions of
// keys and hanging start-up.
constexpr std::size_t kMaxEntries = 10000;
// Maps nested in maps, at most. A file nests two or three; an alias inside its
// own anchor (a: &a {b: *a}) nests without end and would overflow the stack.
constexpr int kMaxDepth = 32;

void flatten(const YAML::Node& node, const std::string& key, std::vector<CLI::ConfigItem>& out,
             std::size_t& entries, int depth) {
  CLI::ConfigItem item;
  item.name = key;
  if (node.IsMap()) {
    if (depth > kMaxDepth) {
      throw CLI::ConfigError("config key '" + key.substr(0, 80) + "...': maps nest more than " +
                             std::to_string(kMaxDepth) + " deep (an alias inside its own anchor?)");
    }
    for (const auto& entry : node) {
      if (++entries > kMaxEntries) {
        throw CLI::ConfigError("the config file has more than " + std::to_string(kMaxEntries) +
                               " keys (with its aliases expanded)");
      }
      // Keys must be plain names: as<> throws a YAML exception, which
      // CLI11_PARSE does not catch, on a list or map as a key ("? [a]: 1").
      if (!entry.first.IsScalar()) {
        throw CLI::ConfigError("config file line " + std::to_string(entry.first.Mark().line + 1) +
                               (key.empty() ? "" : " (under '" + key + "')") +
                               ": a key must be a plain name, not a list, a map or nothing");
      }
      const std::string sub = entry.first.as<std::string>();
      flatten(entry.second, key.empty() ? sub : key + "-" + sub, out, entries, depth + 1);
    }
    return;
  }
  if (key.empty()) throw CLI::ConfigError("the config file must be a map of keys to values");
  if (node.IsSequence()) {
    for (const auto& element : node) {
      if (!element.IsScalar()) {
        throw CLI::ConfigError("config key '" + key + "': lists may hold only plain values");
      }
      item.inputs.push_back(element.as<std::string>());
    }
  } else if (node.IsScalar()) {
    item.inputs.push_back(node.as<std::string>());
  } else {
    return;  // `key:` with no value keeps the default
  }
  out.push_back(std::move(item));
}

// Every long name of an option, by each of its names: a config key under one
// name gives way to the variable of any (--search-threads, old name --threads).
using OptionNames = std::map<std::string, std::vector<std::string>>;

// CLI11 processes the file before the environment and lets the first source
// win, so keys whose environment variable is set are dropped here: that gives
// flag > env > file.
class YamlConfig final : public CLI::Config {
 public:
  explicit YamlConfig(OptionNames names) : names_(std::move(names)) {}

 public:
  std::string to_config(const CLI::App* app, bool default_also, bool, std::string) const override {
    YAML::Emitter out;
    out << YAML::BeginMap;
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->get_lnames().empty() || opt->get_lnames().front() == "config" ||
          opt->get_lnames().front() == "help") {
        continue;
      }
      std::string value = opt->as<std::string>();
      if (value.empty() && default_also) value = opt->get_default_str();
      if (value.empty()) continue;
      out << YAML::Key << opt->get_lnames().front() << YAML::Value << value;
    }
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    YAML::Node root;
    try {
      root = YAML::Load(input);
    } catch (const YAML::Exception& e) {
      throw CLI::ConfigError(std::string("the config file is not valid YAML: ") + e.what());
    }
    std::vector<CLI::ConfigItem> found;
    if (root.IsNull()) return found;
    // Only CLI::ParseError may leave here: it is what CLI11_PARSE reports.
    try {
      std::size_t entries = 0;
      flatten(root, "", found, entries, 0);
    } catch (const YAML::Exception& e) {
      throw CLI::ConfigError(std::string("the config file cannot be read: ") + e.what());
    }
    std::erase_if(found, [this](const CLI::ConfigItem& item) {
      const auto names = names_.find(item.name);
      if (names == names_.end()) return env_set(item.name);
      return std::any_of(names->second.begin(), names->second.end(), env_set);
    });
    return found;
  }

 private:
  OptionNames names_;
};

}  // namespace

std::string env_name(const std::string& long_name) {
  std::string out = "CHESSRL_";
  for (const char c : long_name) {
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

void finish(CLI::App& app) {
  OptionNames option_names;
  for (CLI::Option* opt : app.get_options()) {
    const std::vector<std::string>& names = opt->get_lnames();
    if (names.empty() || names.front() == "help") continue;
    // An option with an old name beside its own (--search-threads,--threads)
    // reads the first of its names whose variable is set (its own first).
    const auto set = std::find_if(names.begin(), names.end(), env_set);
    opt->envname(env_name(set != names.end() ? *set : names.front()));
    for (const std::string& name : names) option_names[name] = names;
  }
  app.set_config("--config", "", "YAML file of option values (keys are the long option names)");
  app.config_formatter(std::make_shared<YamlConfig>(std::move(option_names)));
  app.allow_config_extras(CLI::config_extras_mode::error);
}

}  // namespace chessrl::config
