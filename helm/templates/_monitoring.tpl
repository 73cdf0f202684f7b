{{/* Whether each monitoring object renders. */}}

{{- define "chess-rl.monitoring.podMonitor" -}}
{{- if and .Values.monitoring.enabled .Values.monitoring.podMonitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}true{{- end -}}
{{- end -}}

{{/* The PrometheusRule of rules/chess-rl.yaml: enabled, and the operator's API exists. */}}
{{- define "chess-rl.monitoring.prometheusRule" -}}
{{- if and .Values.monitoring.enabled .Values.monitoring.prometheusRule.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}true{{- end -}}
{{- end -}}

{{/* The Grafana dashboard ConfigMap: a plain ConfigMap, needs no API but Kubernetes's. */}}
{{- define "chess-rl.monitoring.dashboards" -}}
{{- if and .Values.monitoring.enabled .Values.monitoring.dashboards.enabled -}}true{{- end -}}
{{- end -}}
