{{/*
The per-service chart's own named templates (the shared ones come from halo-lib). Every object is
named <platform>-<service> (halo-catalog): the name the platform's gateway, topology and peers
already use, whatever this release is called.
*/}}

{{/* The platform's base name, as helm/halo derives its own fullname. (root) */}}
{{- define "halo.platformFullname" -}}
{{- $p := .Values.platform }}
{{- if $p.fullnameOverride }}
{{- $p.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains "halo" $p.release }}
{{- $p.release | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-halo" $p.release | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "halo.platformName" -}}
{{- .Values.platform.release }}
{{- end }}

{{- define "halo.fullname" -}}
{{- printf "%s-%s" (include "halo.platformFullname" .) (required "service is required: the service this release runs (catalog, payments, …)" .Values.service) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "halo.platformSecretName" -}}
{{- .Values.platform.secretName | default (include "halo.platformFullname" .) }}
{{- end }}

{{- define "halo.topologyName" -}}
{{- printf "%s-topology" (include "halo.platformFullname" .) }}
{{- end }}

{{- define "halo.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "halo.fullname" .) }}
{{- end }}

{{/* Pre-install/pre-upgrade hooks run before this release's Secret exists or changes: they read a hook copy (or yours). */}}
{{- define "halo.hookSecretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- printf "%s-hooks" (include "halo.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* This service's entry of `topology`, with the values' own ports, calls and redis on top. (root) → JSON */}}
{{- define "halo.serviceTopology" -}}
{{- $t := deepCopy (index .Values.topology .Values.service | default (dict)) }}
{{- range $k := list "httpPort" "grpcPort" "calls" "redis" }}
{{- if hasKey $.Values $k }}{{ $_ := set $t $k (index $.Values $k) }}{{ end }}
{{- end }}
{{- if not $t.httpPort }}
{{- fail (printf "service %s: no httpPort (not in `topology`; set httpPort and grpcPort)" .Values.service) }}
{{- end }}
{{- $_ := set $t "calls" (default (list) $t.calls) }}
{{- toJson $t }}
{{- end }}

{{/* The components whose `calls` in `topology` name this service, sorted. (root) → JSON */}}
{{- define "halo.topologyCallers" -}}
{{- $callers := list }}
{{- range $name, $t := .Values.topology }}
{{- if has $.Values.service (default (list) $t.calls) }}{{ $callers = append $callers $name }}{{ end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $callers)) }}
{{- end }}

{{/* The data of this release's Secret. (root) */}}
{{- define "halo.secretData" -}}
{{- $db := .Values.database }}
{{- if $db.enabled }}
{{- if $db.url }}
database-url: {{ $db.url | b64enc | quote }}
{{- else }}
database-password: {{ required (printf "database.password (or database.url, or secrets.existingSecret) is required: %s has a database" .Values.service) $db.password | b64enc | quote }}
{{- end }}
{{- end }}
{{- if include "halo.needsSigningKey" . }}
signing-key: {{ required (printf "secrets.serviceSigningKey is required: %s signs its gRPC calls and its contract publishes (npm run service-key -- %s)" .Values.service .Values.service) .Values.secrets.serviceSigningKey | b64enc | quote }}
{{- end }}
{{- end }}

{{- define "halo.needsSigningKey" -}}
{{- $t := fromJson (include "halo.serviceTopology" .) }}
{{- if or $t.calls .Values.publish.enabled }}true{{ end }}
{{- end }}

{{/* The service's effective settings, in the shape halo-lib's templates take. (root) → JSON */}}
{{- define "halo.component" -}}
{{- $v := .Values }}
{{- $t := fromJson (include "halo.serviceTopology" .) }}
{{- $c := dict }}
{{- range $k := list "replicas" "env" "resources" "autoscaling" "podDisruptionBudget" "spreadAcrossNodes" "strategy" "terminationGracePeriodSeconds" "preStopSleepSeconds" "probes" "podSecurityContext" "securityContext" "podAnnotations" "podLabels" "nodeSelector" "tolerations" "affinity" "priorityClassName" "extraEnvFrom" "extraVolumes" "extraVolumeMounts" "initContainers" "extraContainers" "serviceType" "serviceAnnotations" "topologySpreadConstraints" }}
{{- $_ := set $c $k (index $v $k) }}
{{- end }}
{{- $_ := set $c "name" $v.service }}
{{- $_ := set $c "fullname" (include "halo.fullname" .) }}
{{- $_ := set $c "httpPort" $t.httpPort }}
{{- if $t.grpcPort }}{{ $_ := set $c "grpcPort" $t.grpcPort }}{{ end }}
{{- $_ := set $c "calls" $t.calls }}
{{- $_ := set $c "redis" ($t.redis | default false) }}
{{- $_ := set $c "database" $v.database.enabled }}
{{- $_ := set $c "image" (dict "repository" $v.image.repository "tag" $v.image.tag) }}
{{- $_ := set $c "tag" (include "halo.imageTag" (dict "root" . "c" $c)) }}
{{- $_ := set $c "networkPolicyExtraIngress" $v.networkPolicy.extraIngress }}
{{- $_ := set $c "mounts" (list) }}
{{- if not $v.secrets.existingSecret }}
{{- $_ := set $c "secretChecksum" (include "halo.secretData" . | sha256sum) }}
{{- end }}
{{- toJson $c }}
{{- end }}

{{/*
What the chart derives (halo-lib's halo.env adds the `env` map): ports; from the platform, the
JWT secret and Redis (its Secret), peers' gRPC addresses, this service's trusted keys and where
PostgreSQL is (its topology ConfigMap); from this release's Secret, the database credentials and
the signing key. DATABASE_URL from a password is assembled by Kubernetes ($(VAR) of variables
sorted before it). The publish hook ("publish" true) gets its port and signing key only.
(dict "root" $ "c" $c "secret" <name> ["publish" true]) → JSON
*/}}
{{- define "halo.derivedEnv" -}}
{{- $root := .root }}{{ $c := .c }}{{ $secret := .secret }}
{{- $platformSecret := include "halo.platformSecretName" $root }}
{{- $topology := include "halo.topologyName" $root }}
{{- $env := dict }}
{{- $_ := set $env "HTTP_PORT" (dict "value" (toString $c.httpPort)) }}
{{- if .publish }}
{{- /* The publish hook signs its post to the registry and reads nothing else: no database, JWT, Redis or peers. */}}
{{- if include "halo.needsSigningKey" $root }}
{{- $_ := set $env "SERVICE_SIGNING_KEY" (fromYaml (include "halo.secretKeyRef" (dict "secret" $secret "key" "signing-key"))) }}
{{- end }}
{{- else }}
{{- $_ := set $env "HTTP_HOST" (dict "value" "0.0.0.0") }}
{{- if $c.grpcPort }}
{{- $_ := set $env "GRPC_HOST" (dict "value" "0.0.0.0") }}
{{- $_ := set $env "GRPC_PORT" (dict "value" (toString $c.grpcPort)) }}
{{- $_ := set $env "SERVICE_TRUSTED_KEYS" (fromYaml (include "halo.configMapKeyRef" (dict "configMap" $topology "key" (printf "%s.trusted-keys" $c.name) "optional" true))) }}
{{- end }}
{{- $_ := set $env "JWT_SECRET" (fromYaml (include "halo.secretKeyRef" (dict "secret" $platformSecret "key" "jwt-secret"))) }}
{{- if $c.redis }}
{{- /* `required` (payments, chat): no optional key, so a platform without Redis keeps the pod from starting, named. */}}
{{- $_ := set $env "REDIS_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" $platformSecret "key" "redis-url" "optional" (ne (toString $c.redis) "required")))) }}
{{- end }}
{{- range $peer := $c.calls }}
{{- $_ := set $env (printf "%s_GRPC_ADDR" (upper $peer)) (fromYaml (include "halo.configMapKeyRef" (dict "configMap" $topology "key" (printf "%s.grpc-addr" $peer)))) }}
{{- end }}
{{- if include "halo.needsSigningKey" $root }}
{{- $_ := set $env "SERVICE_SIGNING_KEY" (fromYaml (include "halo.secretKeyRef" (dict "secret" $secret "key" "signing-key"))) }}
{{- end }}
{{- if $c.database }}
{{- if or $root.Values.database.url $root.Values.secrets.existingSecret }}
{{- $_ := set $env "DATABASE_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" $secret "key" "database-url"))) }}
{{- else }}
{{- $_ := set $env "DATABASE_ADDRESS" (fromYaml (include "halo.configMapKeyRef" (dict "configMap" $topology "key" "postgres-address"))) }}
{{- $_ := set $env "DATABASE_PASSWORD" (fromYaml (include "halo.secretKeyRef" (dict "secret" $secret "key" "database-password"))) }}
{{- $_ := set $env "DATABASE_QUERY" (fromYaml (include "halo.configMapKeyRef" (dict "configMap" $topology "key" "postgres-query"))) }}
{{- $_ := set $env "DATABASE_URL" (dict "value" (printf "postgres://%s:$(DATABASE_PASSWORD)@$(DATABASE_ADDRESS)$(DATABASE_QUERY)" $c.name)) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $env }}
{{- end }}

{{/*
Who may reach this service: networkPolicy.httpCallers on HTTP (the gateway), the gRPC callers
(topology's, or networkPolicy.grpcCallers) on gRPC, the scraper on HTTP (/metrics). Peers are
selected by component and Halo installation, whichever release runs them.
*/}}
{{- define "halo.ingressRules" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $np := $root.Values.networkPolicy }}
{{- with $np.httpCallers }}
{{ include "halo.peerRule" (dict "root" $root "names" . "ports" (list "http")) }}
{{- end }}
{{- $callers := (fromJson (include "halo.topologyCallers" $root)).names }}
{{- if hasKey $np "grpcCallers" }}{{ $callers = default (list) $np.grpcCallers }}{{ end }}
{{- if and $c.grpcPort $callers }}
{{ include "halo.peerRule" (dict "root" $root "names" $callers "ports" (list "grpc")) }}
{{- end }}
{{ include "halo.scraperRule" (dict "root" $root "c" $c "scraper" $np.metricsScraper) }}
{{- end }}
