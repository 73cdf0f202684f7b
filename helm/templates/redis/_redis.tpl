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

{{/* replay's Redis: F-redis, else redis.external.host (chess-rl.validateValues.redis.external refuses an empty one). */}}
{{- define "chess-rl.redis.host" -}}
{{- if .Values.redis.enabled -}}
{{- include "chess-rl.componentName" (dict "root" . "component" "redis") -}}
{{- else -}}
{{- .Values.redis.external.host -}}
{{- end -}}
{{- end -}}

{{- define "chess-rl.redis.port" -}}
{{- if .Values.redis.enabled -}}
{{- .Values.redis.port -}}
{{- else -}}
{{- .Values.redis.external.port -}}
{{- end -}}
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
{{- if and (not .Values.redis.enabled) (not .Values.redis.external.host) -}}
redis.enabled=false needs redis.external.host (and redis.external.port): the replay service's Redis
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
