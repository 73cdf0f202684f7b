#include "chessrl/metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "chessrl/core/error.h"

namespace chessrl::metrics {
namespace {

bool valid_name(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                        (allow_colon && c == ':');
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return name.rfind("__", 0) != 0;
}

void escape_into(std::string& out, const std::string& text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void write_series(std::string& out, const std::string& name, const Labels& labels, double v) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : labels) {
      if (!first) out += ',';
      first = false;
      out += key;
      out += "=\"";
      escape_into(out, value, true);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_value(v);
  out += '\n';
}

}  // namespace

void Counter::inc(double amount) {
  if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
}

void Gauge::add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }

Registry::Family& Registry::family(const std::string& name, const std::string& help,
                                   bool is_counter, const Labels& labels) {
  if (!valid_name(name, true)) throw Error("metrics: invalid metric name '" + name + "'");
  for (const auto& entry : labels) {
    if (!valid_name(entry.first, false)) {
      throw Error("metrics: invalid label name '" + entry.first + "' on " + name);
    }
  }
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.help = help;
    it->second.is_counter = is_counter;
  } else if (it->second.is_counter != is_counter) {
    throw Error("metrics: " + name + " is already registered as a " +
                (it->second.is_counter ? "counter" : "gauge"));
  }
  return it->second;
}

Counter& Registry::counter(const std::string& name, const std::string& help,
                           const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, true, labels).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, false, labels).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

std::string Registry::serialize() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    out += "# HELP " + name + ' ';
    escape_into(out, fam.help, false);
    out += "\n# TYPE " + name + (fam.is_counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, c] : fam.counters) write_series(out, name, labels, c->value());
    for (const auto& [labels, g] : fam.gauges) write_series(out, name, labels, g->value());
  }
  return out;
}

void add_build_info(Registry& registry) {
  registry.gauge("chessrl_build_info", "chess-rl build; the value is always 1",
                 {{"version", CHESSRL_VERSION}})
      .set(1);
}

}  // namespace chessrl::metrics
