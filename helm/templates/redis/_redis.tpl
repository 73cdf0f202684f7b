{{/*
redis.conf: the chart's directives, then redis.config's. The password is not
here: the container's start reads it from the Secret (REDIS_PASSWORD) and hands
it to redis-server on stdin as `requirepass` (statefulset.yaml).
*/}}
{{- define "chess-rl.redis.conf" -}}
{{- $owned := list "port" "bind" "dir" "appendonly" "appendfsync" "maxmemory-policy" "requirepass" "masterauth" "daemonize" "supervised" "pidfile" "logfile" "include" "unixsocket" "protected-mode" "aclfile" "rename-command" -}}
{{- range $k, $v := .Values.redis.config -}}
{{- if has $k $owned -}}
{{- fail (printf "redis.config.%s: the chart sets this directive itself (use redis.port, redis.persistence.appendfsync or redis.auth)" $k) -}}
{{- end -}}
{{- end -}}
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
