{{/*
Shared named templates. Every component is rendered from these by templates/component.yaml;
`root` is the top-level context ($), `name` a key of .Values.components, `c` its effective settings
(halo.component).
*/}}

{{- define "halo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "halo.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "halo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Kubernetes name of a component's objects: halo-content. (dict "root" $ "name" "content") */}}
{{- define "halo.componentFullname" -}}
{{- printf "%s-%s" (include "halo.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* (dict "root" $ "name" "content") */}}
{{- define "halo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "halo.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* (dict "root" $ "name" "content"); the version label is the component's image tag. */}}
{{- define "halo.labels" -}}
helm.sh/chart: {{ include "halo.chart" .root }}
{{ include "halo.selectorLabels" . }}
{{- with .version }}
app.kubernetes.io/version: {{ . | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: halo
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{/*
A deep merge that, unlike sprig's mergeOverwrite, lets `false`, 0 and "" override: maps are merged
key by key, anything else is replaced. (list base over) → JSON.
*/}}
{{- define "halo.merge" -}}
{{- $base := deepCopy (index . 0) }}
{{- range $k, $v := index . 1 }}
{{- if and (kindIs "map" $v) (kindIs "map" (index $base $k)) }}
{{- $_ := set $base $k (fromJson (include "halo.merge" (list (index $base $k) $v))) }}
{{- else }}
{{- $_ := set $base $k $v }}
{{- end }}
{{- end }}
{{- toJson $base }}
{{- end }}

{{/* A component's effective settings: .Values.defaults under its own. (dict "root" $ "name" "content") → JSON */}}
{{- define "halo.component" -}}
{{- $own := index .root.Values.components .name }}
{{- $c := fromJson (include "halo.merge" (list .root.Values.defaults $own)) }}
{{- $_ := set $c "name" .name }}
{{- $_ := set $c "fullname" (include "halo.componentFullname" .) }}
{{- $_ := set $c "calls" (default (list) $own.calls) }}
{{- $_ := set $c "tag" (include "halo.imageTag" (dict "root" .root "c" $own)) }}
{{- toJson $c }}
{{- end }}

{{/* The enabled components' names, sorted. (root) → JSON list */}}
{{- define "halo.enabledComponents" -}}
{{- $names := list }}
{{- range $name, $c := .Values.components }}
{{- if $c.enabled }}{{ $names = append $names $name }}{{ end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $names)) }}
{{- end }}

{{/* The enabled components that call `name` over gRPC, sorted. (dict "root" $ "name" "content") → JSON */}}
{{- define "halo.callersOf" -}}
{{- $callers := list }}
{{- range $caller, $c := .root.Values.components }}
{{- if and $c.enabled (has $.name (default (list) $c.calls)) }}{{ $callers = append $callers $caller }}{{ end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $callers)) }}
{{- end }}

{{- define "halo.imageTag" -}}
{{- $image := default (dict) .c.image }}
{{- $image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion | toString }}
{{- end }}

{{/* <registry>/<prefix>/<component>:<tag>, or the component's own image.repository. (dict "root" $ "c" $c) */}}
{{- define "halo.image" -}}
{{- $image := default (dict) .c.image }}
{{- $repository := $image.repository }}
{{- if not $repository }}
{{- $repository = list .root.Values.image.registry .root.Values.image.repositoryPrefix .c.name | compact | join "/" }}
{{- end }}
{{- printf "%s:%s" $repository .c.tag }}
{{- end }}

{{- define "halo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "halo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret every pod reads: yours (secrets.existingSecret) or the chart's. */}}
{{- define "halo.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "halo.fullname" .) }}
{{- end }}

{{/*
The Secret the hook Jobs read. Pre-install/pre-upgrade hooks run before the release's own Secret
is created or updated, so the chart gives them a copy made as a hook of its own (deleted once the
hooks succeed); with an existing Secret they read that.
*/}}
{{- define "halo.hookSecretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- printf "%s-hooks" (include "halo.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Whether any hook Job needs the Secret: migrations of an enabled database service, or role provisioning. */}}
{{- define "halo.hooksNeedSecret" -}}
{{- $need := .Values.provisionRoles.enabled }}
{{- if .Values.migrations.enabled }}
{{- range $name, $c := .Values.components }}
{{- if and $c.enabled $c.database }}{{ $need = true }}{{ end }}
{{- end }}
{{- end }}
{{- if $need }}true{{ end }}
{{- end }}

{{/* DATABASE_URL of one service, from postgres.urls or built from its password. (dict "root" $ "name" "content") */}}
{{- define "halo.databaseUrl" -}}
{{- $pg := .root.Values.postgres }}
{{- $url := index (default (dict) $pg.urls) .name }}
{{- if $url }}
{{- $url }}
{{- else }}
{{- $password := index (default (dict) $pg.passwords) .name }}
{{- if not (and $pg.host $password) }}
{{- fail (printf "components.%s has a database: set postgres.host and postgres.passwords.%s (or postgres.urls.%s), or use secrets.existingSecret" .name .name .name) }}
{{- end }}
{{- $query := "" }}
{{- if $pg.sslmode }}{{ $query = printf "?sslmode=%s" $pg.sslmode }}{{ end }}
{{- printf "postgres://%s:%s@%s:%v/%s%s" .name $password $pg.host $pg.port $pg.database $query }}
{{- end }}
{{- end }}

{{/* The data of the chart's Secret (keys: helm/halo/README.md). (root) */}}
{{- define "halo.secretData" -}}
{{- $root := . }}
{{- $jwt := required "secrets.jwtSecret is required (≥ 32 random bytes), or set secrets.existingSecret" .Values.secrets.jwtSecret }}
{{- if lt (len $jwt) 32 }}{{ fail "secrets.jwtSecret must be at least 32 bytes" }}{{ end }}
jwt-secret: {{ $jwt | b64enc | quote }}
{{- range $name := (fromJson (include "halo.enabledComponents" $root)).names }}
{{- $c := index $root.Values.components $name }}
{{- if $c.database }}
{{ $name }}-database-url: {{ include "halo.databaseUrl" (dict "root" $root "name" $name) | b64enc | quote }}
{{- with index (default (dict) $root.Values.postgres.passwords) $name }}
{{ $name }}-database-password: {{ . | b64enc | quote }}
{{- end }}
{{- end }}
{{- if $c.calls }}
{{- $key := index (default (dict) $root.Values.secrets.serviceSigningKeys) $name }}
{{- if not $key }}{{ fail (printf "secrets.serviceSigningKeys.%s is required: %s calls %s over gRPC (npm run service-key -- %s)" $name $name (join ", " $c.calls) $name) }}{{ end }}
{{ $name }}-signing-key: {{ $key | b64enc | quote }}
{{- end }}
{{- end }}
{{- with .Values.redis.url }}
redis-url: {{ . | b64enc | quote }}
{{- end }}
{{- if .Values.provisionRoles.enabled }}
provision-admin-url: {{ required "provisionRoles.adminUrl is required when provisionRoles.enabled (or use secrets.existingSecret)" .Values.provisionRoles.adminUrl | b64enc | quote }}
{{- end }}
{{- end }}

{{- define "halo.secretKeyRef" -}}
valueFrom:
  secretKeyRef:
    name: {{ .secret }}
    key: {{ .key }}
    {{- if .optional }}
    optional: true
    {{- end }}
{{- end }}

{{/*
SERVICE_TRUSTED_KEYS of a gRPC server: the public keys of exactly the components that call it.
(dict "root" $ "name" "content") → the JWKS as JSON, or "" when nobody calls it.
*/}}
{{- define "halo.trustedKeys" -}}
{{- $keys := list }}
{{- range $caller := (fromJson (include "halo.callersOf" .)).names }}
{{- $public := index (default (dict) $.root.Values.serviceIdentity.publicKeys) $caller }}
{{- if not $public }}
{{- fail (printf "serviceIdentity.publicKeys.%s is required: %s calls %s over gRPC, which must trust its key" $caller $caller $.name) }}
{{- end }}
{{- range $public }}{{ $keys = append $keys . }}{{ end }}
{{- end }}
{{- if $keys }}{{ toJson (dict "keys" $keys) }}{{ end }}
{{- end }}

{{/*
A component's environment as the container's `env`: what the chart derives (ports, peers, secrets,
trusted keys), then the merged `env` map on top, sorted by name. (dict "root" $ "c" $c "secret" <name> "extra" <map>)
*/}}
{{- define "halo.env" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $env := dict }}
{{- $_ := set $env "HTTP_HOST" (dict "value" "0.0.0.0") }}
{{- $_ := set $env "HTTP_PORT" (dict "value" (toString $c.httpPort)) }}
{{- if $c.grpcPort }}
{{- /* Explicit: a service's gRPC host defaults to its HTTP_HOST, and pods are called by their peers. */}}
{{- $_ := set $env "GRPC_HOST" (dict "value" "0.0.0.0") }}
{{- $_ := set $env "GRPC_PORT" (dict "value" (toString $c.grpcPort)) }}
{{- end }}
{{- if $c.metricsPort }}
{{- $_ := set $env "METRICS_PORT" (dict "value" (toString $c.metricsPort)) }}
{{- end }}
{{- $_ := set $env "JWT_SECRET" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" "jwt-secret"))) }}
{{- range $peer := $c.calls }}
{{- $p := index $root.Values.components $peer }}
{{- if not (and $p $p.enabled) }}
{{- fail (printf "components.%s calls %s, which is not an enabled component" $c.name $peer) }}
{{- end }}
{{- if not $p.grpcPort }}
{{- fail (printf "components.%s calls %s, which has no grpcPort" $c.name $peer) }}
{{- end }}
{{- $_ := set $env (printf "%s_GRPC_ADDR" (upper $peer)) (dict "value" (printf "%s:%v" (include "halo.componentFullname" (dict "root" $root "name" $peer)) $p.grpcPort)) }}
{{- end }}
{{- if $c.calls }}
{{- $_ := set $env "SERVICE_SIGNING_KEY" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-signing-key" $c.name)))) }}
{{- end }}
{{- with include "halo.trustedKeys" (dict "root" $root "name" $c.name) }}
{{- $_ := set $env "SERVICE_TRUSTED_KEYS" (dict "value" .) }}
{{- end }}
{{- if $c.database }}
{{- $_ := set $env "DATABASE_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-database-url" $c.name)))) }}
{{- end }}
{{- if $c.redis }}
{{- $_ := set $env "REDIS_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" "redis-url" "optional" true))) }}
{{- end }}
{{- if eq $c.name "gateway" }}
{{- range $name := (fromJson (include "halo.enabledComponents" $root)).names }}
{{- if ne $name "gateway" }}
{{- $p := index $root.Values.components $name }}
{{- $_ := set $env (printf "%s_URL" (upper $name)) (dict "value" (printf "http://%s:%v" (include "halo.componentFullname" (dict "root" $root "name" $name)) $p.httpPort)) }}
{{- end }}
{{- end }}
{{- range $key, $f := $root.Values.composed.files }}
{{- $_ := set $env $f.env (dict "value" (printf "%s/%s" $root.Values.composed.mountPath $f.fileName)) }}
{{- end }}
{{- end }}
{{- range $vars := list (default (dict) $c.env) (default (dict) .extra) }}
{{- range $k, $v := $vars }}
{{- if kindIs "invalid" $v }}
{{- $_ := unset $env $k }}
{{- else if kindIs "map" $v }}
{{- $_ := set $env $k $v }}
{{- else }}
{{- $_ := set $env $k (dict "value" (toString $v)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $k := keys $env | sortAlpha }}
- name: {{ $k }}
{{- $v := index $env $k }}
{{- if hasKey $v "value" }}
  value: {{ $v.value | quote }}
{{- else }}
  {{- toYaml $v | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Pod-level settings shared by Deployments, hook Jobs and the test pod. (dict "root" $ "c" $c ["hook" true])
A pre-install hook runs before the release's ServiceAccount exists, so a hook pod uses the
namespace's default account unless the account is yours (serviceAccount.create=false).
*/}}
{{- define "halo.podSpecCommon" -}}
{{- if or (not .hook) (not .root.Values.serviceAccount.create) }}
serviceAccountName: {{ include "halo.serviceAccountName" .root }}
{{- end }}
automountServiceAccountToken: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .c.podSecurityContext | nindent 2 }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Labels and annotations a mesh needs on every pod (grpc.tls). (root) */}}
{{- define "halo.meshLabels" -}}
{{- if .Values.grpc.tls.enabled }}{{ with .Values.grpc.tls.podLabels }}{{ toYaml . }}{{ end }}{{ end }}
{{- end }}
{{- define "halo.meshAnnotations" -}}
{{- if .Values.grpc.tls.enabled }}{{ with .Values.grpc.tls.podAnnotations }}{{ toYaml . }}{{ end }}{{ end }}
{{- end }}
