// ModelHttp: GET /models/v<N> and /models/latest (model_http.h).
#include "model_http.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/replay_service/replay_service.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::replay_service {
namespace model_http {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Digits as a number, saturating at the largest uint64 (a range end far past
// any body means "to the end"; a start far past it is unsatisfiable).
std::uint64_t saturating(std::string_view digits) {
  std::uint64_t value = 0;
  for (const char c : digits) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
      return std::numeric_limits<std::uint64_t>::max();
    value = value * 10 + d;
  }
  return value;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

RangeAnswer parse_range(std::string_view header, std::uint64_t size) {
  using Kind = RangeAnswer::Kind;
  header = trim(header);
  constexpr std::string_view kUnit = "bytes=";
  if (header.size() < kUnit.size() || !iequals(header.substr(0, kUnit.size()), kUnit)) return {};
  const std::string_view spec = trim(header.substr(kUnit.size()));
  // Several ranges: the whole body (RFC 9110 lets a server ignore Range).
  if (spec.find(',') != std::string_view::npos) return {};
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos) return {};
  const std::string_view from = trim(spec.substr(0, dash));
  const std::string_view to = trim(spec.substr(dash + 1));
  if (from.empty()) {  // bytes=-n: the last n bytes
    if (!all_digits(to)) return {};
    const std::uint64_t n = saturating(to);
    if (n == 0 || size == 0) return {Kind::kUnsatisfiable};
    return {Kind::kSatisfiable, n >= size ? 0 : size - n, size - 1};
  }
  if (!all_digits(from) || (!to.empty() && !all_digits(to))) return {};
  const std::uint64_t first = saturating(from);
  std::uint64_t last = to.empty() ? std::numeric_limits<std::uint64_t>::max() : saturating(to);
  if (last < first) return {};  // not a valid range: ignored
  if (first >= size) return {Kind::kUnsatisfiable};
  if (last >= size) last = size - 1;
  return {Kind::kSatisfiable, first, last};
}

std::string etag(const replay::ModelMeta& meta) {
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", meta.crc32);
  return "\"" + std::string(crc) + "-" + std::to_string(meta.size_bytes) + "\"";
}

bool none_match_hits(std::string_view if_none_match, std::string_view tag) {
  std::string_view rest = if_none_match;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "*") return true;
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);  // weak comparison
    if (item == tag) return true;
  }
  return false;
}

std::string http_date(std::int64_t unix_ms) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t seconds = static_cast<std::time_t>(unix_ms < 0 ? 0 : unix_ms / 1000);
  std::tm t{};
  gmtime_r(&seconds, &t);
  char out[40];
  std::snprintf(out, sizeof out, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[t.tm_wday % 7],
                t.tm_mday, kMonths[t.tm_mon % 12], t.tm_year + 1900, t.tm_hour, t.tm_min,
                t.tm_sec);
  return out;
}

Target parse_target(std::string_view path) {
  using Kind = Target::Kind;
  constexpr std::string_view kPrefix = "/models/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return {};
  const std::string_view name = path.substr(kPrefix.size());
  if (name == "latest") return {Kind::kLatest};
  if (name.empty() || name.front() != 'v') return {};
  const std::string_view digits = name.substr(1);
  if (!all_digits(digits) || digits.front() == '0' || digits.size() > 16) return {Kind::kMalformed};
  const std::uint64_t version = saturating(digits);
  if (version > rpc::kMaxModelVersion) return {Kind::kMalformed};
  return {Kind::kVersion, version};
}

}  // namespace model_http

namespace {

using metrics::HttpRequest;
using metrics::HttpResponse;

// The status codes this route answers, each with its series.
constexpr int kCodes[] = {200, 206, 302, 304, 400, 401, 403, 404, 416, 500, 503};

HttpResponse text(int status, std::string message) {
  return HttpResponse(status, "text/plain; charset=utf-8", std::move(message) + "\n");
}

}  // namespace

ModelBlobSource registry_source(ModelRegistryImpl& registry) {
  return [&registry](std::uint64_t version)
             -> replay::StoreResult<std::optional<ModelHttpBlob>> {
    auto blob = registry.model_blob(version);
    if (!blob.ok()) return blob.failure();
    if (!blob->has_value()) return std::optional<ModelHttpBlob>();
    return std::optional<ModelHttpBlob>(ModelHttpBlob{(*blob)->meta, (*blob)->bytes});
  };
}

ModelHttp::ModelHttp(ModelBlobSource source, const rpc::ServerAuth& auth, ModelHttpOptions options,
                     metrics::Registry* registry)
    : source_(std::move(source)), auth_(auth), options_(options), registry_(registry) {
  if (registry_ == nullptr) return;
  for (const int code : kCodes) {
    registry_->counter("chessrl_replay_model_http_requests_total",
                       "Requests to the model URLs (GET and HEAD /models/...), by HTTP status",
                       {{"code", std::to_string(code)}});
  }
  body_bytes_ = &registry_->counter(
      "chessrl_replay_model_http_body_bytes_total",
      "Model bytes in the bodies of GET /models/v<N> answers (200 and 206), counted as each "
      "answer starts");
}

void ModelHttp::attach(metrics::HttpServer& server) const {
  server.handle("/models/**", [this](const HttpRequest& request) { return serve(request); });
}

HttpResponse ModelHttp::counted(HttpResponse response) const {
  if (registry_ != nullptr) {
    registry_
        ->counter("chessrl_replay_model_http_requests_total",
                  "Requests to the model URLs (GET and HEAD /models/...), by HTTP status",
                  {{"code", std::to_string(response.status)}})
        .inc();
  }
  return response;
}

HttpResponse ModelHttp::serve(const HttpRequest& request) const {
  try {
    // The token first, as every gRPC call: nothing about the models (not even
    // whether a version exists) is told to a caller that may not read them.
    std::optional<std::string> authorization;
    if (auto header = request.header("Authorization")) {
      std::string value(*header);
      // The scheme is case-insensitive in HTTP; ServerAuth wants "Bearer ".
      if (value.size() > 7 && model_http::iequals(std::string_view(value).substr(0, 7), "bearer "))
        value.replace(0, 7, "Bearer ");
      authorization = std::move(value);
    }
    const grpc::Status allowed =
        auth_.check_token(authorization, rpc::Action::kRead, "GET /models");
    if (!allowed.ok()) {
      if (allowed.error_code() == grpc::StatusCode::PERMISSION_DENIED)
        return counted(text(403, allowed.error_message()));
      HttpResponse refused = text(401, allowed.error_message());
      refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"chessrl-models\"");
      return counted(std::move(refused));
    }
    using Kind = model_http::Target::Kind;
    const model_http::Target target = model_http::parse_target(request.path);
    switch (target.kind) {
      case Kind::kUnknown:
        return counted(text(404, "no such path: " + request.path +
                                     " (the model URLs are /models/v<N> and /models/latest)"));
      case Kind::kMalformed:
        return counted(text(400, "not a model version: " + request.path +
                                     " (versions are /models/v<N>, N from 1 to 2^53 - 1, no "
                                     "leading zero)"));
      case Kind::kLatest: break;
      case Kind::kVersion: return counted(serve_version(request, target.version));
    }
    auto latest = source_(0);
    if (!latest.ok()) {
      HttpResponse busy = text(503, "GET /models/latest: " + latest.error());
      busy.headers.emplace_back("Retry-After", "1");
      return counted(std::move(busy));
    }
    if (!latest->has_value()) return counted(text(404, "no model published yet"));
    const std::string location = "/models/v" + std::to_string((*latest)->meta.version);
    HttpResponse redirect = text(302, "the newest version: " + location);
    redirect.headers.emplace_back("Location", location);
    return counted(std::move(redirect));  // Cache-Control: no-store
  } catch (const std::exception& e) {
    return counted(text(500, std::string("internal error: ") + e.what()));
  }
}

HttpResponse ModelHttp::serve_version(const HttpRequest& request, std::uint64_t version) const {
  auto blob = source_(version);
  if (!blob.ok()) {
    if (blob.kind() == replay::StoreErrorKind::kDataLoss)
      return text(500, "version " + std::to_string(version) + ": " + blob.error());
    HttpResponse busy = text(503, "version " + std::to_string(version) + ": " + blob.error());
    busy.headers.emplace_back("Retry-After", "1");
    return busy;
  }
  if (!blob->has_value() || !(*blob)->bytes) {
    return text(404, "no version " + std::to_string(version) +
                         " (never published, or pruned: the registry keeps the newest "
                         "--keep-models versions and the best)");
  }
  const replay::ModelMeta& meta = (*blob)->meta;
  const std::shared_ptr<const std::string>& bytes = (*blob)->bytes;
  const std::uint64_t size = bytes->size();
  const std::string tag = model_http::etag(meta);
  const std::string modified = model_http::http_date(meta.created_unix_ms);

  HttpResponse response;
  response.content_type = "application/octet-stream";
  // Shared caches store an answer to a request with Authorization only when
  // it says `public` (RFC 9111, 3.5): with tokens on, only on the operator's word.
  const bool shared_cacheable = !auth_.enabled() || options_.public_with_auth;
  response.cache_control = std::string(shared_cacheable ? "public" : "private") +
                           ", max-age=31536000, immutable";
  response.headers = {{"ETag", tag}, {"Last-Modified", modified}, {"Accept-Ranges", "bytes"}};
  // A cache that keys on the token keeps one copy per role, never one for a caller without it.
  if (auth_.enabled()) response.headers.emplace_back("Vary", "Authorization");

  if (auto none_match = request.header("If-None-Match");
      none_match && model_http::none_match_hits(*none_match, tag)) {
    response.status = 304;
    return response;
  }
  model_http::RangeAnswer range;
  if (auto header = request.header("Range")) {
    // If-Range: the range only while the client's copy is this one.
    const auto if_range = request.header("If-Range");
    if (!if_range || *if_range == tag || *if_range == modified)
      range = model_http::parse_range(*header, size);
  }
  using Kind = model_http::RangeAnswer::Kind;
  if (range.kind == Kind::kUnsatisfiable) {
    HttpResponse refused = text(416, "version " + std::to_string(version) + " has " +
                                         std::to_string(size) + " bytes");
    refused.headers = {{"Content-Range", "bytes */" + std::to_string(size)},
                       {"ETag", tag},
                       {"Accept-Ranges", "bytes"}};
    return refused;
  }
  if (range.kind == Kind::kSatisfiable) {
    response.status = 206;
    response.headers.emplace_back("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                                       std::to_string(range.last) + "/" +
                                                       std::to_string(size));
    response.share(bytes, range.first, range.last - range.first + 1);
  } else {
    response.share(bytes, 0, size);
  }
  if (body_bytes_ != nullptr && request.method == "GET")
    body_bytes_->inc(static_cast<double>(response.content_length()));
  return response;
}

}  // namespace chessrl::replay_service
