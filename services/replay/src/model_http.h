// Immutable model URLs over HTTP (chessrl-replay --models-http-listen):
//
//   GET /models/v<N>     the bytes of version N, as GetModel sends them: 200
//                        with a strong ETag ("<crc32 hex>-<size>"),
//                        Last-Modified, Accept-Ranges and a year's
//                        Cache-Control with `immutable` (a version never
//                        changes: different bytes under it are refused at
//                        publish); If-None-Match -> 304; one byte range
//                        (bytes=a-b, a-, -n) -> 206, one past the end -> 416;
//                        several ranges -> 200 with the whole body
//   GET /models/latest   302 to /models/v<N> of the newest version, never
//                        cached (Cache-Control: no-store), so a cache in front
//                        keeps only immutable URLs
//   HEAD of either       the same headers, no body
//
// Authorized as GetModel is: with tokens on, `Authorization: Bearer <token>`
// of a role that may read (401 with WWW-Authenticate without one, 403 when the
// role may not). The answer to an authorized request is `private` (no shared
// cache stores it) unless `public_with_auth`: the operator's word that the
// cache in front authenticates its own clients (docs/security.md).
//
// The bytes come from a source (ModelRegistryImpl::model_blob in the binary:
// its cache, one Redis read per version per process), held shared by every
// response that sends them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/metrics/http_server.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/model_store.h"
#include "chessrl/replay/store_error.h"
#include "chessrl/rpc/auth.h"

namespace chessrl::replay_service {

struct ModelHttpBlob {
  replay::ModelMeta meta;
  std::shared_ptr<const std::string> bytes;  // meta.size_bytes of them
};
// A version's blob (0: the latest), nullopt when there is no such version
// (never published, or pruned) or none at all yet.
using ModelBlobSource =
    std::function<replay::StoreResult<std::optional<ModelHttpBlob>>(std::uint64_t version)>;

class ModelRegistryImpl;
// `registry`'s versions (ModelRegistryImpl::model_blob: its cache, shared with
// GetModel). The registry must outlive the source.
ModelBlobSource registry_source(ModelRegistryImpl& registry);

struct ModelHttpOptions {
  // With tokens on, send `public` instead of `private` (--models-http-public).
  bool public_with_auth = false;
};

class ModelHttp {
 public:
  // `auth` is kept by reference (it must outlive this); `registry`, when
  // given, gets chessrl_replay_model_http_requests_total{code} and
  // chessrl_replay_model_http_body_bytes_total.
  ModelHttp(ModelBlobSource source, const rpc::ServerAuth& auth, ModelHttpOptions options = {},
            metrics::Registry* registry = nullptr);
  // Any request under /models/ (thread-safe; never throws).
  metrics::HttpResponse serve(const metrics::HttpRequest& request) const;
  // Adds serve() for /models/** to `server`; this must outlive it.
  void attach(metrics::HttpServer& server) const;

 private:
  metrics::HttpResponse serve_version(const metrics::HttpRequest& request,
                                      std::uint64_t version) const;
  metrics::HttpResponse counted(metrics::HttpResponse response) const;
  ModelBlobSource source_;
  const rpc::ServerAuth& auth_;
  ModelHttpOptions options_;
  metrics::Registry* registry_;
  metrics::Counter* body_bytes_ = nullptr;
};

// The pieces, for the unit tests.
namespace model_http {

// A Range header against a body of `size` bytes (RFC 9110, 14.2): kIgnore
// (absent, not `bytes=`, malformed, or several ranges: the whole body is
// sent), kSatisfiable [first, last], or kUnsatisfiable (416).
struct RangeAnswer {
  enum class Kind : std::uint8_t { kIgnore, kSatisfiable, kUnsatisfiable } kind = Kind::kIgnore;
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};
RangeAnswer parse_range(std::string_view header, std::uint64_t size);

// ASCII case-insensitive equality (header names, schemes, units).
bool iequals(std::string_view a, std::string_view b);
// "\"<crc32 as 8 hex digits>-<size>\"": strong, the same for a version everywhere.
std::string etag(const replay::ModelMeta& meta);
// Whether an If-None-Match value names `tag` ("*" does; weak comparison).
bool none_match_hits(std::string_view if_none_match, std::string_view tag);
// An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of a Unix time in ms.
std::string http_date(std::int64_t unix_ms);

// The name after "/models/": "latest", "v<N>" (N from 1 to 2^53 - 1, no
// leading zero), or an error.
struct Target {
  enum class Kind : std::uint8_t { kLatest, kVersion, kMalformed, kUnknown } kind = Kind::kUnknown;
  std::uint64_t version = 0;
};
Target parse_target(std::string_view path);

}  // namespace model_http
}  // namespace chessrl::replay_service
