{{/*
Checks of the values that values.schema.json cannot express (relations between
values, keys the chart owns), or that must also hold with
--skip-schema-validation. Each chess-rl.validateValues.<check> returns one line
per problem, naming the value, or nothing; chess-rl.validateValues runs them
all and fails once, listing every problem, so that one render reports them all
rather than one per attempt.

validate.yaml runs it. Helm renders the templates in subfolders first and stops
at the first fail, so the templates and helpers that use these values do not
fail on them: such a check belongs here (a fail elsewhere would hide the
others). The check helpers live with their component (redis/_redis.tpl, ...).
*/}}
{{- define "chess-rl.validateValues" -}}
{{- $checks := list
      "chess-rl.validateValues.fullname"
      "chess-rl.validateValues.redis.external"
      "chess-rl.validateValues.redis.shards"
      "chess-rl.validateValues.redis.externalAuth"
      "chess-rl.validateValues.redis.openAuth"
      "chess-rl.validateValues.redis.config"
      "chess-rl.validateValues.tls"
      "chess-rl.validateValues.replay.ports"
      "chess-rl.validateValues.selfplay.precision"
      "chess-rl.validateValues.selfplay.autoscaling.api"
      "chess-rl.validateValues.selfplay.autoscaling.band"
      "chess-rl.validateValues.selfplay.autoscaling.replicas"
      "chess-rl.validateValues.trainer.mixedPrecision"
      "chess-rl.validateValues.trainer.persistence"
      "chess-rl.validateValues.trainer.ports"
      "chess-rl.validateValues.trainer.gangScheduling"
      "chess-rl.validateValues.web.ports"
      "chess-rl.validateValues.web.ingress"
      "chess-rl.validateValues.config" -}}
{{- $problems := list -}}
{{- range $checks -}}
{{- range include . $ | splitList "\n" -}}
{{- if . -}}
{{- $problems = append $problems . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $problems -}}
{{- fail (printf "%d %s in the values:\n- %s" (len .) (ternary "problem" "problems" (eq (len .) 1)) (join "\n- " .)) -}}
{{- end -}}
{{- end -}}

{{/*
The objects' prefix must be a DNS label. values.schema.json checks
fullnameOverride; this catches a release name that is none (chess-rl.fullname
itself refuses one longer than 45 characters).
*/}}
{{- define "chess-rl.validateValues.fullname" -}}
{{- $name := include "chess-rl.fullname" . -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- printf "the objects' prefix %q must be a DNS label (lower-case letters, digits and '-', starting with a letter): set fullnameOverride" $name -}}
{{- end -}}
{{- end -}}
