#include "chessrl/rpc/auth.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace chessrl::rpc {
namespace {

std::uint8_t bit(Role role) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(role)); }

// Compares every byte whatever the first difference, so the time a refusal
// takes says nothing about how much of a guess was right.
bool same_secret(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

std::string allowed_roles(Action action) {
  std::string out;
  for (Role role : kAllRoles) {
    if (!role_may(role, action)) continue;
    if (!out.empty()) out += ", ";
    out += role_name(role);
  }
  return out;
}

std::string env_name(Role role) {
  std::string name = "CHESSRL_TOKEN_";
  for (char c : role_name(role))
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kSelfplay: return "selfplay";
    case Role::kTrainer: return "trainer";
    case Role::kEvaluator: return "evaluator";
  }
  return "unknown";
}

std::string_view action_name(Action action) {
  switch (action) {
    case Action::kRead: return "read";
    case Action::kPushGames: return "push games";
    case Action::kSample: return "sample positions";
    case Action::kPublishModel: return "publish models";
    case Action::kSetBest: return "set the best version";
    case Action::kLeaseModel: return "lease model versions";
  }
  return "unknown";
}

bool role_may(Role role, Action action) {
  switch (action) {
    case Action::kRead: return true;
    case Action::kPushGames: return role == Role::kSelfplay;
    case Action::kSample: return role == Role::kTrainer;
    case Action::kPublishModel: return role == Role::kTrainer;
    case Action::kSetBest: return role == Role::kEvaluator;
    case Action::kLeaseModel: return role == Role::kEvaluator;
  }
  return false;
}

Result<std::string> clean_token(std::string text, const std::string& source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return fail(source + ": the token is empty");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = text.substr(first, last - first + 1);
  for (char c : text) {
    if (c < 0x21 || c > 0x7e) {
      return fail(source + ": the token may hold only printable ASCII without spaces");
    }
  }
  if (text.size() < kMinTokenBytes) {
    return fail(source + ": the token is " + std::to_string(text.size()) + " bytes; at least " +
                std::to_string(kMinTokenBytes) + " are needed (e.g. `openssl rand -hex 32`)");
  }
  return text;
}

Result<std::string> read_token_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(option + " " + path + ": cannot read it: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 4096) return fail(option + " " + path + ": over 4096 bytes; not a token");
  return clean_token(std::move(text), option + " " + path);
}

Result<std::string> client_token(const std::string& token_file) {
  if (!token_file.empty()) return read_token_file(token_file, "--token-file");
  if (const char* env = std::getenv("CHESSRL_TOKEN"); env != nullptr && *env != '\0') {
    return clean_token(env, "CHESSRL_TOKEN");
  }
  return std::string();
}

std::string bearer(const std::string& token) { return "Bearer " + token; }

Result<ServerAuth> ServerAuth::load(const std::string& dir) {
  namespace fs = std::filesystem;
  ServerAuth auth;
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return fail("--auth-dir " + dir + ": not a directory");
    for (Role role : kAllRoles) {
      const fs::path file = fs::path(dir) / std::string(role_name(role));
      if (!fs::exists(file, ec)) continue;
      auto token = read_token_file(file.string(), "--auth-dir");
      if (!token.ok()) return fail(token.error());
      auth.add(role, std::move(token).value());
    }
    if (!auth.enabled()) {
      return fail("--auth-dir " + dir + ": holds none of the files selfplay, trainer, evaluator");
    }
    return auth;
  }
  for (Role role : kAllRoles) {
    const std::string name = env_name(role);
    const char* env = std::getenv(name.c_str());
    if (env == nullptr || *env == '\0') continue;
    auto token = clean_token(env, name);
    if (!token.ok()) return fail(token.error());
    auth.add(role, std::move(token).value());
  }
  return auth;
}

void ServerAuth::add(Role role, std::string token) {
  for (Entry& entry : tokens_) {
    if (same_secret(entry.token, token)) {
      entry.roles |= bit(role);
      return;
    }
  }
  tokens_.push_back(Entry{std::move(token), bit(role)});
}

std::string ServerAuth::roles() const {
  std::string out;
  for (Role role : kAllRoles) {
    bool has = false;
    for (const Entry& entry : tokens_) has = has || (entry.roles & bit(role)) != 0;
    if (!has) continue;
    if (!out.empty()) out += ", ";
    out += role_name(role);
  }
  return out;
}

grpc::Status ServerAuth::check(const grpc::ServerContext& context, Action action,
                               const char* method) const {
  if (!enabled()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(kAuthorizationKey);
  if (found == metadata.end()) return check_token(std::nullopt, action, method);
  return check_token(std::string_view(found->second.data(), found->second.size()), action, method);
}

grpc::Status ServerAuth::check_token(std::optional<std::string_view> authorization, Action action,
                                     const char* method) const {
  if (!enabled()) return grpc::Status::OK;
  const std::string call(method);
  if (!authorization) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        call +
                            ": no token (this service needs `authorization: Bearer <token>`; "
                            "give the client --token-file or CHESSRL_TOKEN)");
  }
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization->size() <= kScheme.size() ||
      authorization->substr(0, kScheme.size()) != kScheme) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        call + ": the authorization metadata is not `Bearer <token>`");
  }
  const std::string_view token = authorization->substr(kScheme.size());
  std::uint8_t roles = 0;
  for (const Entry& entry : tokens_) {
    if (same_secret(entry.token, token)) roles |= entry.roles;
  }
  if (roles == 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, call + ": the token is not known");
  }
  for (Role role : kAllRoles) {
    if ((roles & bit(role)) != 0 && role_may(role, action)) return grpc::Status::OK;
  }
  std::string held;
  for (Role role : kAllRoles) {
    if ((roles & bit(role)) == 0) continue;
    if (!held.empty()) held += "/";
    held += role_name(role);
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      call + ": the " + held + " token may not " +
                          std::string(action_name(action)) + " (only " + allowed_roles(action) +
                          " may)");
}

}  // namespace chessrl::rpc
