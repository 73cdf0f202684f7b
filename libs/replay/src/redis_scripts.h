// Private to the replay library: the Lua scripts RedisReplayStore runs (key
// layout in redis_store.cpp). Every script gets the key prefix as ARGV[1] and
// builds its key names from it, with no KEYS: fine on one Redis (not a Redis
// Cluster, where a script must name its keys and they must share a slot).
// Scripts without a `#!lua` shebang run in Redis 7's compatibility mode, which
// allows undeclared keys, so none is used.
//
// Lua 5.1 numbers are doubles: sequence numbers and counts stay exact below
// 2^53. Numbers go back to Redis through string.format('%d'), since Lua's
// default number formatting ("%.14g") would switch to an exponent at 1e14.
#pragma once

#include <string_view>

namespace chessrl::replay::redis {

enum Script : int {
  kPushScript = 0,
  kSampleScript,
  kStatsScript,
  kPublishScript,
  kModelInfoScript,
  kSetBestScript,
  kPruneScript,
  kLeaseScript,
  kScriptCount,
};

// ARGV: prefix, game id, capacity (positions), dedup ttl (s), position blobs.
// Returns 1 (stored) or 0 (duplicate: the id's marker exists).
//
// An evicted game's marker stays, with the dedup ttl, and its id goes on
// P:evicted; once P:evicted holds more ids than the window holds games, the
// oldest go and their markers with them. So markers number at most twice the
// window's games, and a late retry of a game is a duplicate until about one
// more window's worth of games was evicted after it. A marker without a TTL
// belongs to a game in the window (stored again after its old marker
// expired): it stays.
inline constexpr std::string_view kPushLua = R"lua(
local prefix, id = ARGV[1], ARGV[2]
local capacity, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local count = #ARGV - 4
local game_key = prefix .. ':game:' .. id
if redis.call('EXISTS', game_key) == 1 then return 0 end
if count == 0 then
  -- No positions: counted, nothing kept (no window entry, no marker), so
  -- such games cannot grow the store past its window of positions.
  redis.call('HINCRBY', prefix .. ':stats', 'games_total', 1)
  return 1
end
local next_seq = redis.call('INCRBY', prefix .. ':pos:next', count)
local seq = next_seq - count
local pairs_ = {}
for i = 1, count do
  pairs_[#pairs_ + 1] = string.format('%s:pos:%d', prefix, seq + i - 1)
  pairs_[#pairs_ + 1] = ARGV[4 + i]
  if #pairs_ >= 1000 then redis.call('MSET', unpack(pairs_)); pairs_ = {} end
end
if #pairs_ > 0 then redis.call('MSET', unpack(pairs_)) end
redis.call('RPUSH', prefix .. ':window', string.format('%d %d %s', seq, count, id))
redis.call('SET', game_key, string.format('%d %d', seq, count))
local stats = prefix .. ':stats'
redis.call('HINCRBY', stats, 'games_total', 1)
redis.call('HINCRBY', stats, 'positions_total', count)
redis.call('HINCRBY', stats, 'window_games', 1)
local first = tonumber(redis.call('GET', prefix .. ':pos:first') or '0')
local evicted = false
while next_seq - first > capacity do
  local entry = redis.call('LPOP', prefix .. ':window')
  if not entry then break end
  local efirst, ecount, eid = string.match(entry, '^(%d+) (%d+) (.*)$')
  efirst, ecount = tonumber(efirst), tonumber(ecount)
  local keys = {}
  for s = efirst, efirst + ecount - 1 do
    keys[#keys + 1] = string.format('%s:pos:%d', prefix, s)
    if #keys >= 1000 then redis.call('UNLINK', unpack(keys)); keys = {} end
  end
  if #keys > 0 then redis.call('UNLINK', unpack(keys)) end
  if ttl > 0 then
    redis.call('EXPIRE', prefix .. ':game:' .. eid, ttl)
    redis.call('RPUSH', prefix .. ':evicted', eid)
  else
    redis.call('DEL', prefix .. ':game:' .. eid)
  end
  redis.call('HINCRBY', stats, 'window_games', -1)
  first = efirst + ecount
  evicted = true
end
if evicted then
  redis.call('SET', prefix .. ':pos:first', string.format('%d', first))
  local keep = tonumber(redis.call('HGET', stats, 'window_games') or '0')
  local excess = redis.call('LLEN', prefix .. ':evicted') - keep
  for _ = 1, excess do
    local old_key = prefix .. ':game:' .. redis.call('LPOP', prefix .. ':evicted')
    if redis.call('TTL', old_key) ~= -1 then redis.call('DEL', old_key) end
  end
end
return 1
)lua";

// ARGV: prefix, count, seed (0 <= seed < 2^31). Returns {window size, blobs...};
// just {window size} when the window is empty.
//
// Redis replaces math.random with its own rand48: each call gives 31 random
// bits, and math.random(m, n) truncates its bounds to a C int. One draw would
// make floor(r * n) visibly uneven for a window of millions (relative bias up
// to n / 2^31). So r joins the top 21 bits of one draw with the 31 bits of
// the next: 52 bits, held exactly by a double and never reaching 1, which
// leaves a relative bias of at most n / 2^52 (under 1e-6 for n up to 4e9).
inline constexpr std::string_view kSampleLua = R"lua(
local prefix, count, seed = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local bounds = redis.call('MGET', prefix .. ':pos:first', prefix .. ':pos:next')
local first, next_seq = tonumber(bounds[1] or '0'), tonumber(bounds[2] or '0')
local n = next_seq - first
local out = {string.format('%d', n)}
if n <= 0 or count <= 0 then return out end
math.randomseed(seed)
local keys = {}
for i = 1, count do
  local r = (math.floor(math.random() * 2097152) + math.random()) / 2097152
  local index = math.floor(r * n)
  if index >= n then index = n - 1 end
  keys[#keys + 1] = string.format('%s:pos:%d', prefix, first + index)
  if #keys >= 1000 or i == count then
    local values = redis.call('MGET', unpack(keys))
    for j = 1, #keys do out[#out + 1] = values[j] end
    keys = {}
  end
end
return out
)lua";

// ARGV: prefix. Returns {first, next, games_total, positions_total, window_games}.
inline constexpr std::string_view kStatsLua = R"lua(
local prefix = ARGV[1]
local bounds = redis.call('MGET', prefix .. ':pos:first', prefix .. ':pos:next')
local s = redis.call('HMGET', prefix .. ':stats', 'games_total', 'positions_total', 'window_games')
return {bounds[1] or '0', bounds[2] or '0', s[1] or '0', s[2] or '0', s[3] or '0'}
)lua";

// ARGV: prefix, version, nonce, chunks, size_bytes, crc32, then the meta
// hash's field/value pairs. Moves the chunks uploaded to
// <prefix>:model:<v>:tmp:<nonce>:<i> into place and writes the meta hash last,
// all in one script, so readers see the whole version or none of it.
// Returns 0 (published), 1 (already published, same size and crc32) or
// 2 (conflict); an error when an uploaded chunk is missing.
inline constexpr std::string_view kPublishLua = R"lua(
local prefix, v, nonce, chunks = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local key = prefix .. ':model:' .. v
local function tmp(i) return string.format('%s:tmp:%s:%d', key, nonce, i) end
if redis.call('EXISTS', key) == 1 then
  for i = 0, chunks - 1 do redis.call('UNLINK', tmp(i)) end
  local current = redis.call('HMGET', key, 'size_bytes', 'crc32')
  if current[1] == ARGV[5] and current[2] == ARGV[6] then return 1 end
  return 2
end
for i = 0, chunks - 1 do
  if redis.call('EXISTS', tmp(i)) == 0 then
    return redis.error_reply('model ' .. v .. ': uploaded chunk ' .. i .. ' is missing')
  end
end
for i = 0, chunks - 1 do
  local chunk = string.format('%s:%d', key, i)
  redis.call('RENAME', tmp(i), chunk)
  redis.call('PERSIST', chunk)
end
local fields = {}
for i = 7, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', key, unpack(fields))
redis.call('ZADD', prefix .. ':models', v, v)
local latest = tonumber(redis.call('GET', prefix .. ':model:latest') or '0')
if tonumber(v) > latest then redis.call('SET', prefix .. ':model:latest', v) end
return 0
)lua";

// ARGV: prefix, a version or 'latest' or 'best'. Returns {version, {field,
// value, ...}} or nil when the pointer is unset or the version unknown.
inline constexpr std::string_view kModelInfoLua = R"lua(
local prefix, v = ARGV[1], ARGV[2]
if v == 'latest' or v == 'best' then
  v = redis.call('GET', prefix .. ':model:' .. v)
  if not v then return false end
end
local fields = redis.call('HGETALL', prefix .. ':model:' .. v)
if #fields == 0 then return false end
return {v, fields}
)lua";

// ARGV: prefix, version. Returns 1 (best moved) or 0 (no such version).
inline constexpr std::string_view kSetBestLua = R"lua(
local prefix, v = ARGV[1], ARGV[2]
if redis.call('EXISTS', prefix .. ':model:' .. v) == 0 then return 0 end
redis.call('SET', prefix .. ':model:best', v)
return 1
)lua";

// Lease times are Redis's own clock (TIME, in ms), so every replay process
// sharing this Redis agrees on when a lease ends. TIME inside a script that
// then writes needs script effects replication, the default since Redis 5.

// ARGV: prefix, version, ttl (ms). Sets the version's lease in
// P:model:leases (score: when it ends, ms) to now + ttl; ttl 0 removes it.
// Returns 1, or 0 when the version does not exist (its lease, if any, goes).
inline constexpr std::string_view kLeaseLua = R"lua(
local prefix, v, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local leases = prefix .. ':model:leases'
if redis.call('EXISTS', prefix .. ':model:' .. v) == 0 then
  redis.call('ZREM', leases, v)
  return 0
end
if ttl <= 0 then
  redis.call('ZREM', leases, v)
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', leases, string.format('%d', now + ttl), v)
return 1
)lua";

// ARGV: prefix, keep (> 0). Deletes every version but the newest `keep`, the
// best and the leased (lease not ended by Redis's TIME): its hash, its chunks
// and its entry in P:models. Drops ended leases and those of versions gone
// first. Returns the deleted versions, oldest first.
inline constexpr std::string_view kPruneLua = R"lua(
local prefix, keep = ARGV[1], tonumber(ARGV[2])
local models = prefix .. ':models'
local leases = prefix .. ':model:leases'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', leases, '-inf', string.format('%d', now))
for _, v in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  if redis.call('EXISTS', prefix .. ':model:' .. v) == 0 then redis.call('ZREM', leases, v) end
end
local n = redis.call('ZCARD', models)
local pruned = {}
if n <= keep then return pruned end
local best = redis.call('GET', prefix .. ':model:best')
for _, v in ipairs(redis.call('ZRANGE', models, 0, n - keep - 1)) do
  if v ~= best and not redis.call('ZSCORE', leases, v) then
    local key = prefix .. ':model:' .. v
    local keys = {key}
    local chunks = tonumber(redis.call('HGET', key, 'chunks') or '0')
    for i = 0, chunks - 1 do
      keys[#keys + 1] = string.format('%s:%d', key, i)
      if #keys >= 1000 then redis.call('UNLINK', unpack(keys)); keys = {} end
    end
    if #keys > 0 then redis.call('UNLINK', unpack(keys)) end
    redis.call('ZREM', models, v)
    pruned[#pruned + 1] = v
  end
end
return pruned
)lua";

}  // namespace chessrl::replay::redis
