#include "chessrl/metrics/registry.h"

#include <charconv>
#include <cmath>

#include "chessrl/core/error.h"

namespace chessrl::metrics {
namespace {

bool valid_name(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return name.rfind("__", 0) != 0;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
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

// The shortest text that reads back as the same double (as Prometheus's Go
// clients write it): 0.1, 1, 2.5e-05.
std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

// name{labels[,le="bound"]} value
void write_series(std::string& out, const std::string& name, const Labels& labels, double v,
                  const char* le = nullptr) {
  out += name;
  if (!labels.empty() || le != nullptr) {
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
    if (le != nullptr) {
      if (!first) out += ',';
      out += "le=\"";
      out += le;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_value(v);
  out += '\n';
}

void write_histogram(std::string& out, const std::string& name, const Labels& labels,
                     const Histogram& h) {
  const Histogram::Snapshot s = h.snapshot();
  const auto& bounds = h.bounds();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    write_series(out, name + "_bucket", labels, double(s.cumulative[i]),
                 format_value(bounds[i]).c_str());
  }
  write_series(out, name + "_bucket", labels, double(s.count), "+Inf");
  write_series(out, name + "_sum", labels, s.sum);
  write_series(out, name + "_count", labels, double(s.count));
}

const char* type_name(int type) {
  static const char* const kNames[] = {"counter", "gauge", "histogram"};
  return kNames[type];
}

}  // namespace

void Counter::inc(double amount) {
  if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
}

void Gauge::add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }

Registry::Family& Registry::family(const std::string& name, const std::string& help, Type type,
                                   const Labels& labels) {
  if (!valid_name(name, true)) throw Error("metrics: invalid metric name '" + name + "'");
  for (const auto& entry : labels) {
    if (!valid_name(entry.first, false)) {
      throw Error("metrics: invalid label name '" + entry.first + "' on " + name);
    }
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    // promtool's lint rules, checked once per family.
    const bool total = ends_with(name, "_total");
    if (type == Type::kCounter && !total)
      throw Error("metrics: counter " + name + " must end in _total");
    if (type != Type::kCounter && total)
      throw Error("metrics: " + name + " ends in _total, which only counters may");
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (ends_with(name, suffix))
        throw Error("metrics: " + name + " ends in " + suffix + ", which histograms' series use");
    }
    if (help.empty()) throw Error("metrics: " + name + " needs help text");
    it = families_.try_emplace(name).first;
    it->second.help = help;
    it->second.type = type;
  } else if (it->second.type != type) {
    throw Error("metrics: " + name + " is already registered as a " +
                type_name(static_cast<int>(it->second.type)));
  }
  return it->second;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, Type::kCounter, labels).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, Type::kGauge, labels).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help,
                               std::vector<double> bounds, const Labels& labels) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]))
      throw Error("metrics: histogram " + name +
                  ": bucket bounds must be finite (+Inf is implicit)");
    if (i > 0 && !(bounds[i] > bounds[i - 1]))
      throw Error("metrics: histogram " + name + ": bucket bounds must be strictly increasing");
  }
  if (labels.count("le")) throw Error("metrics: histogram " + name + " may not have a label 'le'");
  std::lock_guard lock(mutex_);
  const bool is_new = families_.find(name) == families_.end();
  Family& fam = family(name, help, Type::kHistogram, labels);
  if (is_new) {
    fam.bounds = bounds;
  } else if (fam.bounds != bounds) {
    throw Error("metrics: histogram " + name + " is already registered with other bucket bounds");
  }
  auto& slot = fam.histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

std::string Registry::serialize() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    out += "# HELP " + name + ' ';
    escape_into(out, fam.help, false);
    out += "\n# TYPE " + name + ' ' + type_name(static_cast<int>(fam.type)) + '\n';
    for (const auto& [labels, c] : fam.counters) write_series(out, name, labels, c->value());
    for (const auto& [labels, g] : fam.gauges) write_series(out, name, labels, g->value());
    for (const auto& [labels, h] : fam.histograms) write_histogram(out, name, labels, *h);
  }
  return out;
}

void add_build_info(Registry& registry) {
  registry
      .gauge("chessrl_build_info", "chess-rl build; the value is always 1",
             {{"version", CHESSRL_VERSION}})
      .set(1);
}

}  // namespace chessrl::metrics
