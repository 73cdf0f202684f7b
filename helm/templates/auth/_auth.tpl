{{/* Authentication and TLS of replay's gRPC port: the Secrets, and the flags, mounts and volumes of each role. */}}

{{/* The Secret of the bearer tokens (keys selfplay, trainer, evaluator). */}}
{{- define "chess-rl.auth.secretName" -}}
{{- .Values.auth.existingSecret | default (include "chess-rl.componentName" (dict "root" . "component" "auth")) -}}
{{- end -}}

{{/* Whether the chart makes the Secret F-auth itself. */}}
{{- define "chess-rl.auth.createSecret" -}}
{{- if and .Values.auth.enabled (not .Values.auth.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* The name the clients check in replay's certificate: tls.serverName, else F-replay. */}}
{{- define "chess-rl.tls.serverName" -}}
{{- .Values.tls.serverName | default (include "chess-rl.componentName" (dict "root" . "component" "replay")) -}}
{{- end -}}

{{/*
Where the Secrets' files are mounted: a directory each, outside /etc/chessrl (the
config volume) and /tmp.
*/}}
{{- define "chess-rl.auth.dir" -}}/run/secrets/chessrl/auth{{- end -}}
{{- define "chess-rl.tls.dir" -}}/run/secrets/chessrl/tls{{- end -}}

{{/*
The mode of the Secrets' files (a decimal number in the manifest: 288 = 0440,
292 = 0444). With the pod's fsGroup the kubelet makes them group-owned by it, so
0440 lets the non-root user read them and no one else. Without fsGroup they
stay root's, and only 0444 lets the non-root user read them (they are visible
inside that pod's container only). (dict "values" .Values.x)
*/}}
{{- define "chess-rl.secretFileMode" -}}
{{- $psc := .values.podSecurityContext | default dict -}}
{{- if not (kindIs "invalid" $psc.fsGroup) -}}288{{- else -}}292{{- end -}}
{{- end -}}

{{/*
The flags the chart passes for auth and TLS, as a JSON list of option names
without dashes (the config keys a component's `config:` may not set).
(dict "root" $ "role" "replay"|"selfplay"|"trainer"|"evaluator")
*/}}
{{- define "chess-rl.security.flags" -}}
{{- $out := list -}}
{{- if eq .role "replay" -}}
{{- if .root.Values.auth.enabled -}}{{- $out = append $out "auth-dir" -}}{{- end -}}
{{- if .root.Values.tls.enabled -}}{{- $out = concat $out (list "tls-cert" "tls-key") -}}{{- end -}}
{{- else -}}
{{- if .root.Values.auth.enabled -}}{{- $out = append $out "token-file" -}}{{- end -}}
{{- if .root.Values.tls.enabled -}}{{- $out = concat $out (list "tls" "tls-ca" "tls-server-name") -}}{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
Container args for auth and TLS: replay's --auth-dir, --tls-cert, --tls-key;
a client's --token-file (its own key only), --tls-ca, --tls-server-name. Paths
only: no token or key is ever on a command line.
(dict "root" $ "role" "replay"|"selfplay"|"trainer"|"evaluator"|"test")
*/}}
{{- define "chess-rl.security.args" -}}
{{- $auth := and .root.Values.auth.enabled (ne .role "test") -}}
{{- if eq .role "replay" -}}
{{- if $auth }}
- --auth-dir
- {{ include "chess-rl.auth.dir" . }}
{{- end }}
{{- if .root.Values.tls.enabled }}
- --tls-cert
- {{ include "chess-rl.tls.dir" . }}/tls.crt
- --tls-key
- {{ include "chess-rl.tls.dir" . }}/tls.key
{{- end }}
{{- else -}}
{{- if $auth }}
- --token-file
- {{ include "chess-rl.auth.dir" . }}/token
{{- end }}
{{- if .root.Values.tls.enabled }}
- --tls-ca
- {{ include "chess-rl.tls.dir" . }}/ca.crt
- --tls-server-name
- {{ include "chess-rl.tls.serverName" .root | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumeMounts that go with chess-rl.security.args (same dict). */}}
{{- define "chess-rl.security.volumeMounts" -}}
{{- if and .root.Values.auth.enabled (ne .role "test") }}
- name: auth
  mountPath: {{ include "chess-rl.auth.dir" . }}
  readOnly: true
{{- end }}
{{- if .root.Values.tls.enabled }}
- name: tls
  mountPath: {{ include "chess-rl.tls.dir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The Secret volumes that go with chess-rl.security.args: replay gets the three
tokens and the certificate with its key; a client gets its own token (as
`token`) and the CA certificate (tls.existingSecret: chess-rl.validateValues.tls
refuses TLS without it). (dict "root" $ "role" "x" "values" .Values.x)
*/}}
{{- define "chess-rl.security.volumes" -}}
{{- $mode := include "chess-rl.secretFileMode" . -}}
{{- if and .root.Values.auth.enabled (ne .role "test") }}
- name: auth
  secret:
    secretName: {{ include "chess-rl.auth.secretName" .root }}
    defaultMode: {{ $mode }}
    items:
      {{- if eq .role "replay" }}
      {{- range list "selfplay" "trainer" "evaluator" }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
      {{- else }}
      - key: {{ .role }}
        path: token
      {{- end }}
{{- end }}
{{- if .root.Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .root.Values.tls.existingSecret }}
    defaultMode: {{ $mode }}
    items:
      {{- if eq .role "replay" }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- else }}
      - key: ca.crt
        path: ca.crt
      {{- end }}
{{- end }}
{{- end -}}

{{/* ---------- Checks (chess-rl.validateValues): a message naming the value, or nothing ---------- */}}

{{/* values.schema.json refuses this too; here for --skip-schema-validation. */}}
{{- define "chess-rl.validateValues.tls" -}}
{{- if and .Values.tls.enabled (not .Values.tls.existingSecret) -}}
tls.enabled=true needs tls.existingSecret: a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt
{{- end -}}
{{- end -}}
