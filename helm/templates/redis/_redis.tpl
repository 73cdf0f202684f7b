{{/* Helpers of the Redis component: its Secret, its address for replay, redis.conf. */}}

{{/* The Secret holding the Redis password, and its key. */}}
{{- define "chess-rl.redis.secretName" -}}
{{- .Values.redis.auth.existingSecret | default (include "chess-rl.componentName" (dict "root" . "component" "redis")) -}}
{{- end -}}

{{- define "chess-rl.redis.secretKey" -}}
{{- if .Values.redis.auth.existingSecret -}}
{{- .Values.redis.auth.existingSecretPasswordKey | default "redis-password" -}}
{{- else -}}
redis-password
{{- end -}}
{{- end -}}

{{/* Whether the chart makes the Secret F-redis itself. */}}
{{- define "chess-rl.redis.createSecret" -}}
{{- if and .Values.redis.auth.enabled (not .Values.redis.auth.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* replay's Redis when there is one: F-redis, else redis.external.host or the one entry of redis.external.shards (chess-rl.validateValues.redis.external refuses neither). */}}
{{- define "chess-rl.redis.host" -}}
{{- if .Values.redis.enabled -}}
{{- include "chess-rl.componentName" (dict "root" . "component" "redis") -}}
{{- else if eq (len (.Values.redis.external.shards | default list)) 1 -}}
{{- (first .Values.redis.external.shards).host -}}
{{- else -}}
{{- .Values.redis.external.host -}}
{{- end -}}
{{- end -}}

{{- define "chess-rl.redis.port" -}}
{{- if .Values.redis.enabled -}}
{{- .Values.redis.port -}}
{{- else if eq (len (.Values.redis.external.shards | default list)) 1 -}}
{{- (first .Values.redis.external.shards).port | default 6379 -}}
{{- else -}}
{{- .Values.redis.external.port -}}
{{- end -}}
{{- end -}}

{{/*
replay's Redis shards, "host:port" each, shard 0 (the model registry's) first: the
StatefulSet's pods through its headless Service (F-redis-<i>.F-redis-headless), or
redis.external.shards. One shard: a list of one (replay then gets --redis-host and
--redis-port, as before sharding). A JSON list.
*/}}
{{- define "chess-rl.redis.shardAddresses" -}}
{{- $out := list -}}
{{- if .Values.redis.enabled -}}
{{- $name := include "chess-rl.componentName" (dict "root" . "component" "redis") -}}
{{- if gt (int .Values.redis.shards) 1 -}}
{{- range $i := until (int .Values.redis.shards) -}}
{{- $out = append $out (printf "%s-%d.%s-headless:%v" $name $i $name $.Values.redis.port) -}}
{{- end -}}
{{- else -}}
{{- $out = append $out (printf "%s:%v" $name .Values.redis.port) -}}
{{- end -}}
{{- else if .Values.redis.external.shards -}}
{{- range .Values.redis.external.shards -}}
{{- $out = append $out (printf "%s:%v" .host (.port | default 6379)) -}}
{{- end -}}
{{- else -}}
{{- $out = append $out (printf "%s:%v" .Values.redis.external.host .Values.redis.external.port) -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/* The ports replay reaches Redis on (its NetworkPolicy's egress): a JSON list, no repeats. */}}
{{- define "chess-rl.redis.ports" -}}
{{- $ports := list -}}
{{- if .Values.redis.enabled -}}
{{- $ports = append $ports (int .Values.redis.port) -}}
{{- else if .Values.redis.external.shards -}}
{{- range .Values.redis.external.shards -}}
{{- $ports = append $ports (int (.port | default 6379)) -}}
{{- end -}}
{{- else -}}
{{- $ports = append $ports (int .Values.redis.external.port) -}}
{{- end -}}
{{- $ports | uniq | toJson -}}
{{- end -}}

{{/*
What the Redis password's consumers (redis, replay) roll on. Not the Secret's
bytes: a generated password is made once and then kept (lookup), and hashing a
fresh random value on every render would roll the pods on every upgrade. So:
the settings that change the password the pods see (auth on or off, an
existing Secret's name and key, an explicit auth.password), salted with the
release. After rotating an existing Secret's contents: `kubectl rollout restart`.
*/}}
{{- define "chess-rl.redis.secretChecksum" -}}
{{- $a := .Values.redis.auth -}}
{{- printf "%v|%s|%s|%s|%s|%s" $a.enabled ($a.existingSecret | default "") (include "chess-rl.redis.secretKey" .) ($a.password | default "") .Release.Namespace .Release.Name | sha256sum -}}
{{- end -}}

{{/*
redis.conf: the chart's directives, then redis.config's (none of the chart's:
chess-rl.validateValues.redis.config). The password is not here: the
container's start reads it from the Secret (REDIS_PASSWORD) and hands it to
redis-server on stdin as `requirepass` (statefulset.yaml).
*/}}
{{- define "chess-rl.redis.conf" -}}
# Written by the chess-rl chart: redis.conf of {{ include "chess-rl.componentName" (dict "root" . "component" "redis") }}.
port {{ .Values.redis.port }}
bind * -::*
protected-mode {{ ternary "yes" "no" .Values.redis.auth.enabled }}
daemonize no
logfile ""
dir /data
# Every acknowledged write goes to the append-only file; no RDB snapshots besides
# the AOF's own preamble.
appendonly yes
appendfsync {{ .Values.redis.persistence.appendfsync }}
save ""
# The replay service evicts old games itself; Redis must never drop keys (it
# refuses to start over an allkeys-* policy; redis.config cannot set this).
maxmemory-policy noeviction
{{- range $k, $v := .Values.redis.config }}
{{ $k }} {{ $v }}
{{- end }}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{- define "chess-rl.validateValues.redis.external" -}}
{{- if and (not .Values.redis.enabled) (not .Values.redis.external.host) (not .Values.redis.external.shards) -}}
redis.enabled=false needs redis.external.host (and redis.external.port), or redis.external.shards: the replay service's Redis
{{- end -}}
{{- end -}}

{{/*
The shards: redis.shards counts the chart's Redis pods, redis.external.shards lists
an external Redis's; one of the two, never both, and no address twice (two shards
on one Redis would share one window under two counts).
*/}}
{{- define "chess-rl.validateValues.redis.shards" -}}
{{- $r := .Values.redis -}}
{{- $ext := $r.external.shards | default list -}}
{{- if and (not $r.enabled) (gt (int $r.shards) 1) }}
redis.shards={{ $r.shards }} is for the chart's Redis (redis.enabled=true); with redis.enabled=false list the external Redis's shards in redis.external.shards
{{- end -}}
{{- if and $r.enabled $ext }}
redis.external.shards is for an external Redis (redis.enabled=false); the chart's own Redis is split by redis.shards
{{- end -}}
{{- if and (not $r.enabled) $ext $r.external.host }}
redis.external.host and redis.external.shards are both set: give one Redis as host/port or every shard in redis.external.shards, not both
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $s := $ext -}}
{{- $addr := printf "%v:%v" $s.host ($s.port | default 6379) -}}
{{- if hasKey $seen $addr }}
redis.external.shards[{{ $i }}] ({{ $addr }}) repeats redis.external.shards[{{ get $seen $addr }}]: each shard must be its own Redis
{{- else -}}
{{- $_ := set $seen $addr (toString $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.redis.externalAuth" -}}
{{- $r := .Values.redis -}}
{{- if and (not $r.enabled) $r.auth.enabled (not $r.auth.existingSecret) (not $r.auth.password) -}}
redis.enabled=false with redis.auth.enabled=true needs the external Redis's password: redis.auth.existingSecret (a Secret you made; key redis.auth.existingSecretPasswordKey) or redis.auth.password; or redis.auth.enabled=false for a Redis without AUTH
{{- end -}}
{{- end -}}

{{/*
The chart's Redis without a password runs with protected-mode no and binds every
interface: only the NetworkPolicy then keeps other pods away from it.
*/}}
{{- define "chess-rl.validateValues.redis.openAuth" -}}
{{- $r := .Values.redis -}}
{{- if and $r.enabled (not $r.auth.enabled) (not .Values.networkPolicy.enabled) -}}
redis.auth.enabled=false with the chart's Redis (redis.enabled=true) needs networkPolicy.enabled=true: without a password Redis runs with protected-mode no on every interface, and only the NetworkPolicy keeps every pod but replay away from it (or set redis.auth.enabled=true)
{{- end -}}
{{- end -}}

{{/*
redis.config may not set what redis.conf sets itself, nor what would break the
chart's Redis (a second password, daemonizing, an allkeys-* eviction policy).
One line per such key.
*/}}
{{- define "chess-rl.validateValues.redis.config" -}}
{{- if .Values.redis.enabled -}}
{{- $owned := list "port" "bind" "dir" "appendonly" "appendfsync" "maxmemory-policy" "requirepass" "masterauth" "daemonize" "supervised" "pidfile" "logfile" "include" "unixsocket" "protected-mode" "aclfile" "rename-command" -}}
{{- range $k, $v := .Values.redis.config -}}
{{- if has $k $owned }}
redis.config.{{ $k }}: the chart sets this directive itself (use redis.port, redis.persistence.appendfsync or redis.auth)
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
