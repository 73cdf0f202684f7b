#include "chessrl/metrics/registry.h"

#include <prometheus/check_names.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "chessrl/core/error.h"

namespace chessrl::metrics {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// prometheus-cpp's TextSerializer (1.0.1, and 1.3 still) writes the help text
// after "# HELP name" as it is, but the text format wants backslashes and
// newlines escaped: a raw newline would end the line and make the whole scrape
// unparsable. So the families are given their help already escaped.
std::string escape_help(const std::string& help) {
  std::string out;
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

template <class T>
prometheus::detail::Builder<T> builder() {
  if constexpr (std::is_same_v<T, prometheus::Counter>) {
    return prometheus::BuildCounter();
  } else if constexpr (std::is_same_v<T, prometheus::Gauge>) {
    return prometheus::BuildGauge();
  } else {
    return prometheus::BuildHistogram();
  }
}

}  // namespace

void Counter::inc(double amount) {
  // prometheus-cpp ignores a negative amount but adds NaN, which would stick.
  if (amount > 0) series_->Increment(amount);
}
double Counter::value() const { return series_->Value(); }

void Gauge::set(double value) { series_->Set(value); }
void Gauge::add(double amount) { series_->Increment(amount); }
double Gauge::value() const { return series_->Value(); }

// prometheus-cpp holds the families, series and values; this holds what it
// does not: the type and bounds of each name, for the project's rules and
// clear errors, and the wrappers handed out, so that the same series is the
// same object every time.
struct Registry::Impl {
  // The variant's index is the type: counter, gauge, histogram.
  using AnyFamily =
      std::variant<prometheus::Family<prometheus::Counter>*, prometheus::Family<prometheus::Gauge>*,
                   prometheus::Family<prometheus::Histogram>*>;
  struct Family {
    AnyFamily family;
    std::vector<double> bounds;  // histograms
  };
  template <class Wrapper>
  using Series = std::map<std::pair<std::string, Labels>, std::unique_ptr<Wrapper>>;

  // The family `name` of type T, registered on first use. `bounds`: a
  // histogram's, which must be the family's.
  template <class T>
  prometheus::Family<T>& family(const std::string& name, const std::string& help,
                                const Labels& labels, const std::vector<double>* bounds = nullptr);

  // Removes the series of `slots` keyed {name, labels} from its family.
  template <class T, class Wrapper>
  bool remove(Series<Wrapper>& slots, const std::string& name, const Labels& labels);

  prometheus::Registry registry;  // thread-safe on its own; serialize() needs no lock
  std::mutex mutex;               // families and the wrappers
  std::map<std::string, Family> families;
  Series<Counter> counters;
  Series<Gauge> gauges;
  Series<Histogram> histograms;
};

template <class T>
prometheus::Family<T>& Registry::Impl::family(const std::string& name, const std::string& help,
                                              const Labels& labels,
                                              const std::vector<double>* bounds) {
  // prometheus-cpp's own rules for names, checked here first so that the
  // error names the metric (prometheus-cpp only says "Invalid metric name").
  if (!prometheus::CheckMetricName(name))
    throw Error("metrics: invalid metric name '" + name + "'");
  for (const auto& entry : labels) {
    if (!prometheus::CheckLabelName(entry.first)) {
      throw Error("metrics: invalid label name '" + entry.first + "' on " + name);
    }
  }
  if (auto it = families.find(name); it != families.end()) {
    const auto* same = std::get_if<prometheus::Family<T>*>(&it->second.family);
    if (same == nullptr) {
      static const char* const kTypes[] = {"counter", "gauge", "histogram"};
      throw Error("metrics: " + name + " is already registered as a " +
                  kTypes[it->second.family.index()]);
    }
    if (bounds != nullptr && it->second.bounds != *bounds) {
      throw Error("metrics: histogram " + name + " is already registered with other bucket bounds");
    }
    return **same;
  }
  // promtool's lint rules, which prometheus-cpp does not check, once per family.
  constexpr bool kCounter = std::is_same_v<T, prometheus::Counter>;
  const bool total = ends_with(name, "_total");
  if (kCounter && !total) throw Error("metrics: counter " + name + " must end in _total");
  if (!kCounter && total)
    throw Error("metrics: " + name + " ends in _total, which only counters may");
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (ends_with(name, suffix))
      throw Error("metrics: " + name + " ends in " + suffix + ", which histograms' series use");
  }
  if (help.empty()) throw Error("metrics: " + name + " needs help text");
  prometheus::Family<T>* created = nullptr;
  try {
    created = &builder<T>().Name(name).Help(escape_help(help)).Register(registry);
  } catch (const std::invalid_argument& e) {
    throw Error("metrics: cannot register " + name + ": " + e.what());
  }
  families.emplace(name, Family{created, bounds != nullptr ? *bounds : std::vector<double>{}});
  return *created;
}

template <class T, class Wrapper>
bool Registry::Impl::remove(Series<Wrapper>& slots, const std::string& name, const Labels& labels) {
  const auto slot = slots.find({name, labels});
  if (slot == slots.end()) return false;
  // A series exists only in a family of its own type (family() checks it).
  auto* family = std::get<prometheus::Family<T>*>(families.at(name).family);
  family->Remove(slot->second->series_);
  slots.erase(slot);
  return true;
}

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  auto& family = impl_->family<prometheus::Counter>(name, help, labels);
  auto& slot = impl_->counters[{name, labels}];
  if (!slot) slot.reset(new Counter(family.Add(labels)));
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  auto& family = impl_->family<prometheus::Gauge>(name, help, labels);
  auto& slot = impl_->gauges[{name, labels}];
  if (!slot) slot.reset(new Gauge(family.Add(labels)));
  return *slot;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help,
                               std::vector<double> bounds, const Labels& labels) {
  // prometheus-cpp refuses unsorted bounds too, but without the metric's name,
  // and takes an infinite bound as an ordinary one.
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]))
      throw Error("metrics: histogram " + name +
                  ": bucket bounds must be finite (+Inf is implicit)");
    if (i > 0 && !(bounds[i] > bounds[i - 1]))
      throw Error("metrics: histogram " + name + ": bucket bounds must be strictly increasing");
  }
  if (labels.count("le")) throw Error("metrics: histogram " + name + " may not have a label 'le'");
  std::lock_guard lock(impl_->mutex);
  auto& family = impl_->family<prometheus::Histogram>(name, help, labels, &bounds);
  auto& slot = impl_->histograms[{name, labels}];
  if (!slot) slot.reset(new Histogram(family.Add(labels, bounds)));
  return *slot;
}

bool Registry::remove_counter(const std::string& name, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  return impl_->remove<prometheus::Counter>(impl_->counters, name, labels);
}

bool Registry::remove_gauge(const std::string& name, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  return impl_->remove<prometheus::Gauge>(impl_->gauges, name, labels);
}

std::string Registry::serialize() const {
  // prometheus-cpp collects the families by type and then in the order they
  // were registered, and a family's series in hash order: sorted, the output
  // stays the same from one scrape to the next (and as it always was here).
  std::vector<prometheus::MetricFamily> families = impl_->registry.Collect();
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& family : families) {
    std::sort(family.metric.begin(), family.metric.end(),
              [](const auto& a, const auto& b) { return a.label < b.label; });
  }
  return prometheus::TextSerializer().Serialize(families);
}

void add_build_info(Registry& registry) {
  registry
      .gauge("chessrl_build_info", "chess-rl build; the value is always 1",
             {{"version", CHESSRL_VERSION}})
      .set(1);
}

}  // namespace chessrl::metrics
