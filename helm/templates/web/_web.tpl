{{/*
Where the game viewer polls: every self-play pod through the headless Service
F-selfplay-pods (each address its name resolves to is one pod), and the evaluator
through F-evaluator-metrics. Both on the metrics ports, where /live and /matches are.
*/}}
{{- define "chess-rl.web.selfplayAddress" -}}
{{- printf "%s-pods:%v" (include "chess-rl.componentName" (dict "root" . "component" "selfplay")) .Values.selfplay.ports.metrics -}}
{{- end -}}

{{- define "chess-rl.web.evaluatorAddress" -}}
{{- printf "%s-metrics:%v" (include "chess-rl.componentName" (dict "root" . "component" "evaluator")) .Values.evaluator.ports.metrics -}}
{{- end -}}

{{/* An Ingress host's paths: its own, else / (Prefix). (a web.ingress.hosts entry) */}}
{{- define "chess-rl.web.ingressPaths" -}}
{{- .paths | default (list (dict "path" "/" "pathType" "Prefix")) | toJson -}}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{- define "chess-rl.validateValues.web.ports" -}}
{{- $p := .Values.web.ports -}}
{{- if and .Values.web.enabled (eq (int $p.http) (int $p.probes)) -}}
{{- printf "web.ports.http and web.ports.probes are both %v: they must differ (the probe port is for the kubelet alone)" $p.http -}}
{{- end -}}
{{- end -}}

{{- define "chess-rl.validateValues.web.ingress" -}}
{{- $w := .Values.web -}}
{{- if and $w.enabled $w.ingress.enabled (not $w.ingress.hosts) -}}
web.ingress.enabled=true needs at least one entry in web.ingress.hosts (e.g. {host: chess.example.com}): the Ingress would have no rule
{{- end -}}
{{- end -}}
