{{/*
The platform chart's own named templates; the shared ones (labels, images, env rendering, every
workload object) come from the library chart halo-lib (helm/halo-lib). `root` is the top-level
context ($), `name` a key of .Values.components, `c` its effective settings (halo.component).
*/}}

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

{{/* The Halo installation: this release (app.kubernetes.io/part-of on every pod, in every release). */}}
{{- define "halo.platformName" -}}
{{- .Release.Name }}
{{- end }}

{{/* The Kubernetes name of a component's objects: halo-content. (dict "root" $ "name" "content") */}}
{{- define "halo.componentFullname" -}}
{{- printf "%s-%s" (include "halo.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The platform's own components: never released by helm/halo-service. */}}
{{- define "halo.isPlatformComponent" -}}
{{- if has .name (list "gateway" "registry") }}true{{ end }}
{{- end }}

{{/* A component's effective settings: .Values.defaults under its own. (dict "root" $ "name" "content") → JSON */}}
{{- define "halo.component" -}}
{{- $own := index .root.Values.components .name }}
{{- $c := fromJson (include "halo.merge" (list .root.Values.defaults $own)) }}
{{- $_ := set $c "name" .name }}
{{- $_ := set $c "fullname" (include "halo.componentFullname" .) }}
{{- $_ := set $c "calls" (default (list) $own.calls) }}
{{- $_ := set $c "tag" (include "halo.imageTag" (dict "root" .root "c" $own)) }}
{{- $_ := set $c "ownRelease" (and $own.ownRelease true) }}
{{- if and $c.ownRelease (include "halo.isPlatformComponent" .) }}
{{- fail (printf "components.%s.ownRelease: the %s is part of the platform release" .name .name) }}
{{- end }}
{{- if not .root.Values.secrets.existingSecret }}
{{- $_ := set $c "secretChecksum" (include "halo.secretData" .root | sha256sum) }}
{{- end }}
{{- $mounts := list }}
{{- if eq .name "gateway" }}
{{- /* The composed files: the gateway's boot fallback (and its only source without the registry). */}}
{{- $mounts = append $mounts (dict "name" "composed" "configMap" (printf "%s-composed" (include "halo.fullname" .root)) "mountPath" .root.Values.composed.mountPath) }}
{{- end }}
{{- $_ := set $c "mounts" $mounts }}
{{- toJson $c }}
{{- end }}

{{/* The components of the system (enabled), sorted: in the topology whichever release runs them. (root) → JSON list */}}
{{- define "halo.enabledComponents" -}}
{{- $names := list }}
{{- range $name, $c := .Values.components }}
{{- if $c.enabled }}{{ $names = append $names $name }}{{ end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $names)) }}
{{- end }}

{{/* The enabled components this release runs (not `ownRelease`), sorted. (root) → JSON list */}}
{{- define "halo.deployedComponents" -}}
{{- $names := list }}
{{- range $name, $c := .Values.components }}
{{- if and $c.enabled (not $c.ownRelease) }}{{ $names = append $names $name }}{{ end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $names)) }}
{{- end }}

{{/* Whether the registry runs: services publish their contracts to it, the gateway polls it. */}}
{{- define "halo.registryEnabled" -}}
{{- with index .Values.components "registry" }}{{ if .enabled }}true{{ end }}{{ end }}
{{- end }}

{{/* Whether a component publishes a contract (a service, with the registry on). (dict "root" $ "name" "catalog") */}}
{{- define "halo.publishes" -}}
{{- if and (include "halo.registryEnabled" .root) (not (include "halo.isPlatformComponent" .)) }}true{{ end }}
{{- end }}

{{/*
Who calls `name` over gRPC (the enabled components whose `calls` name it) or, for the registry,
over HTTP with a service token (the gateway and every service). Sorted. (dict "root" $ "name" "content") → JSON
*/}}
{{- define "halo.callersOf" -}}
{{- $callers := list }}
{{- range $caller, $c := .root.Values.components }}
{{- if $c.enabled }}
{{- if has $.name (default (list) $c.calls) }}{{ $callers = append $callers $caller }}
{{- else if and (eq $.name "registry") (ne $caller "registry") }}{{ $callers = append $callers $caller }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "names" (sortAlpha $callers)) }}
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

{{/* Whether any pre-install/pre-upgrade Job needs the Secret: migrations of a database component this release runs, or role provisioning. */}}
{{- define "halo.hooksNeedSecret" -}}
{{- $need := .Values.provisionRoles.enabled }}
{{- if .Values.migrations.enabled }}
{{- range $name, $c := .Values.components }}
{{- if and $c.enabled (not $c.ownRelease) $c.database }}{{ $need = true }}{{ end }}
{{- end }}
{{- end }}
{{- if $need }}true{{ end }}
{{- end }}

{{/*
DATABASE_URL of one service, from postgres.urls or built from its password: to PgBouncer's Service
while pgbouncer.enabled (plain TCP inside the cluster, as gRPC: a mesh encrypts it), unless
"direct" (migrations, in the Jobs and at each pod's start: their session-level advisory lock needs
one server session).
(dict "root" $ "name" "content" ["direct" true])
*/}}
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
{{- if and .root.Values.pgbouncer.enabled (not .direct) }}
{{- printf "postgres://%s:%s@%s:%v/%s" .name $password (include "halo.componentFullname" (dict "root" .root "name" "pgbouncer")) .root.Values.pgbouncer.port $pg.database }}
{{- else }}
{{- printf "postgres://%s:%s@%s%s" .name $password (include "halo.postgresAddress" .root) (include "halo.postgresQuery" .root) }}
{{- end }}
{{- end }}
{{- end }}

{{/* host:port/database, and ?sslmode=…&sslrootcert=… (or ""): every URL the platform builds, and the topology's for service releases. */}}
{{- define "halo.postgresAddress" -}}
{{- with .Values.postgres }}{{ printf "%s:%v/%s" .host .port .database }}{{ end }}
{{- end }}
{{- define "halo.postgresQuery" -}}
{{- $params := list }}
{{- with .Values.postgres.sslmode }}{{ $params = append $params (printf "sslmode=%s" .) }}{{ end }}
{{- /* node-postgres (pg-connection-string) reads this file as the CA to verify the server with. */}}
{{- with .Values.postgres.sslrootcert }}{{ $params = append $params (printf "sslrootcert=%s" .) }}{{ end }}
{{- with $params }}{{ printf "?%s" (join "&" .) }}{{ end }}
{{- end }}

{{/* Whether a component this release runs needs a signing key: it calls gRPC, or publishes its contract. (dict "root" $ "name" "catalog") */}}
{{- define "halo.needsSigningKey" -}}
{{- $c := index .root.Values.components .name }}
{{- if or $c.calls (include "halo.publishes" .) }}true{{ end }}
{{- end }}

{{/* The data of the chart's Secret (keys: helm/halo/README.md). (root) */}}
{{- define "halo.secretData" -}}
{{- $root := . }}
{{- $jwt := required "secrets.jwtSecret is required (≥ 32 random bytes), or set secrets.existingSecret" .Values.secrets.jwtSecret }}
{{- if lt (len $jwt) 32 }}{{ fail "secrets.jwtSecret must be at least 32 bytes" }}{{ end }}
jwt-secret: {{ $jwt | b64enc | quote }}
{{- range $name := (fromJson (include "halo.enabledComponents" $root)).names }}
{{- $c := index $root.Values.components $name }}
{{- if and $c.database (not $c.ownRelease) }}
{{ $name }}-database-url: {{ include "halo.databaseUrl" (dict "root" $root "name" $name) | b64enc | quote }}
{{- if $root.Values.pgbouncer.enabled }}
{{ $name }}-database-migration-url: {{ include "halo.databaseUrl" (dict "root" $root "name" $name "direct" true) | b64enc | quote }}
{{- end }}
{{- end }}
{{- /* Every role the provisioning Job creates, services released on their own included: their own release's Secret holds the same password for their pods. */}}
{{- if and $c.database (or (not $c.ownRelease) $root.Values.provisionRoles.enabled) }}
{{- with index (default (dict) $root.Values.postgres.passwords) $name }}
{{ $name }}-database-password: {{ . | b64enc | quote }}
{{- end }}
{{- end }}
{{- if and (not $c.ownRelease) (include "halo.needsSigningKey" (dict "root" $root "name" $name)) }}
{{- $key := index (default (dict) $root.Values.secrets.serviceSigningKeys) $name }}
{{- if not $key }}{{ fail (printf "secrets.serviceSigningKeys.%s is required: %s signs its gRPC calls or its contract publishes (npm run service-key -- %s)" $name $name $name) }}{{ end }}
{{ $name }}-signing-key: {{ $key | b64enc | quote }}
{{- end }}
{{- end }}
{{- with .Values.redis.url }}
redis-url: {{ . | b64enc | quote }}
{{- end }}
{{- if .Values.pgbouncer.enabled }}
pgbouncer-userlist: {{ include "halo.pgbouncerUserlist" . | b64enc | quote }}
{{- end }}
{{- if .Values.provisionRoles.enabled }}
provision-admin-url: {{ required "provisionRoles.adminUrl is required when provisionRoles.enabled (or use secrets.existingSecret)" .Values.provisionRoles.adminUrl | b64enc | quote }}
{{- end }}
{{- end }}

{{/*
PgBouncer's auth_file: "<role>" "<password>" for each database service this release runs with a
password in postgres.passwords (scram-sha-256 towards the clients and PostgreSQL both). (root)
*/}}
{{- define "halo.pgbouncerUserlist" -}}
{{- $lines := list }}
{{- range $name := (fromJson (include "halo.deployedComponents" .)).names }}
{{- $password := index (default (dict) $.Values.postgres.passwords) $name }}
{{- if and (index $.Values.components $name).database $password }}
{{- $lines = append $lines (printf "%q %q\n" $name $password) }}
{{- end }}
{{- end }}
{{- join "" $lines }}
{{- end }}

{{/*
PgBouncer's pod settings: those of `defaults` it shares with the components (security contexts,
scheduling, shutdown timing, extra volumes), under pgbouncer's own values. (root) → JSON
*/}}
{{- define "halo.pgbouncer" -}}
{{- $d := .Values.defaults }}
{{- $base := dict }}
{{- range $k := list "podSecurityContext" "securityContext" "podAnnotations" "nodeSelector" "tolerations" "affinity" "priorityClassName" "spreadAcrossNodes" "topologySpreadConstraints" "terminationGracePeriodSeconds" "preStopSleepSeconds" "extraVolumes" "extraVolumeMounts" }}
{{- if hasKey $d $k }}{{ $_ := set $base $k (index $d $k) }}{{ end }}
{{- end }}
{{- $c := fromJson (include "halo.merge" (list $base .Values.pgbouncer)) }}
{{- $_ := set $c "name" "pgbouncer" }}
{{- $_ := set $c "fullname" (include "halo.componentFullname" (dict "root" . "name" "pgbouncer")) }}
{{- $_ := set $c "tag" (toString $c.image.tag) }}
{{- toJson $c }}
{{- end }}

{{/*
pgbouncer.ini: one database (postgres.database on postgres.host:port), each client's role and
password (auth_file) used towards PostgreSQL too. `options` is ignored: the services send
`-c search_path=<schema>`, which PgBouncer cannot keep per client; a service's role already has
that search_path (docs/database.md: ALTER ROLE … SET search_path, and "$user" by default). (root)
*/}}
{{- define "halo.pgbouncerIni" -}}
{{- $p := .Values.pgbouncer }}
{{- $pg := .Values.postgres }}
[databases]
{{ $pg.database }} = host={{ $pg.host }} port={{ $pg.port }} dbname={{ $pg.database }}

[pgbouncer]
listen_addr = *
listen_port = {{ $p.port }}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = /etc/pgbouncer/userlist.txt
pool_mode = {{ $p.poolMode }}
default_pool_size = {{ $p.defaultPoolSize }}
max_db_connections = {{ $p.maxDbConnections }}
max_client_conn = {{ $p.maxClientConn }}
ignore_startup_parameters = options
{{- /* libpq's modes; node-postgres' no-verify (encrypt, do not verify) is libpq's require. */}}
{{- with $pg.sslmode }}
server_tls_sslmode = {{ eq . "no-verify" | ternary "require" . }}
{{- end }}
{{- with $pg.sslrootcert }}
server_tls_ca_file = {{ . }}
{{- end }}
{{- end }}

{{/*
SERVICE_TRUSTED_KEYS of a server: the public keys of exactly the components that call it
(halo.callersOf; the registry: every caller). (dict "root" $ "name" "content") → the JWKS as JSON,
or "" when nobody calls it.
*/}}
{{- define "halo.trustedKeys" -}}
{{- $keys := list }}
{{- range $caller := (fromJson (include "halo.callersOf" .)).names }}
{{- $public := index (default (dict) $.root.Values.serviceIdentity.publicKeys) $caller }}
{{- if not $public }}
{{- if eq $.name "registry" }}
{{- fail (printf "serviceIdentity.publicKeys.%s is required: the registry trusts every service's and the gateway's key (contract publishes, supergraph polls)" $caller) }}
{{- end }}
{{- fail (printf "serviceIdentity.publicKeys.%s is required: %s calls %s over gRPC, which must trust its key" $caller $caller $.name) }}
{{- end }}
{{- range $public }}{{ $keys = append $keys . }}{{ end }}
{{- end }}
{{- if $keys }}{{ toJson (dict "keys" $keys) }}{{ end }}
{{- end }}

{{/*
The variables the platform derives for a component it runs (halo-lib's halo.env adds the `env`
map): ports, peers by Service name, secrets, trusted keys, the browser origins (gateway, auth); the gateway: each service's URL
(REGISTRY_URL among them) and the composed files. The publish hook ("publish" true) gets its port
and signing key only. (dict "root" $ "c" $c "secret" <name> ["publish" true]) → JSON
*/}}
{{- define "halo.derivedEnv" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $env := dict }}
{{- $_ := set $env "HTTP_PORT" (dict "value" (toString $c.httpPort)) }}
{{- if .publish }}
{{- /* The publish hook signs its post to the registry and reads nothing else: no database, JWT, Redis or peers. */}}
{{- if include "halo.needsSigningKey" (dict "root" $root "name" $c.name) }}
{{- $_ := set $env "SERVICE_SIGNING_KEY" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-signing-key" $c.name)))) }}
{{- end }}
{{- else }}
{{- $_ := set $env "HTTP_HOST" (dict "value" "0.0.0.0") }}
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
{{- if include "halo.needsSigningKey" (dict "root" $root "name" $c.name) }}
{{- $_ := set $env "SERVICE_SIGNING_KEY" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-signing-key" $c.name)))) }}
{{- end }}
{{- with include "halo.trustedKeys" (dict "root" $root "name" $c.name) }}
{{- $_ := set $env "SERVICE_TRUSTED_KEYS" (dict "value" .) }}
{{- end }}
{{- if $c.database }}
{{- /* With PgBouncer, migrations connect directly: their advisory lock is session-level, which a
     transaction pooler does not keep. The migration Job (`hook`) gets the direct URL as its
     DATABASE_URL; a service pod serves through the pooler and migrates at start-up over
     DATABASE_MIGRATION_URL. */}}
{{- $key := "database-url" }}
{{- if and .hook $root.Values.pgbouncer.enabled }}{{ $key = "database-migration-url" }}{{ end }}
{{- $_ := set $env "DATABASE_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-%s" $c.name $key)))) }}
{{- if and (not .hook) $root.Values.pgbouncer.enabled }}
{{- $_ := set $env "DATABASE_MIGRATION_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" (printf "%s-database-migration-url" $c.name)))) }}
{{- end }}
{{- end }}
{{- if $c.redis }}
{{- /* Optional for a component that falls back to per-replica state; `required`: the pod must not start without it. */}}
{{- $_ := set $env "REDIS_URL" (fromYaml (include "halo.secretKeyRef" (dict "secret" .secret "key" "redis-url" "optional" (ne (toString $c.redis) "required")))) }}
{{- end }}
{{- if and $root.Values.corsOrigins (has $c.name (list "gateway" "auth")) }}
{{- /* One list for the gateway's CORS and auth's sign-in origin check. */}}
{{- $_ := set $env "CORS_ORIGINS" (dict "value" (join "," $root.Values.corsOrigins)) }}
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
{{- end }}
{{- toJson $env }}
{{- end }}

{{/*
Who reaches the registry's HTTP port for its Studio: the `from` peers of the Studio's Ingress and
HTTPRoute, each while it is enabled (the Ingress routes /studio only; a NetworkPolicy cannot tell
paths apart). (root) → JSON {"peers": [...]}
*/}}
{{- define "halo.studioFrom" -}}
{{- $studio := dig "studio" (dict) (index .Values.components "registry" | default (dict)) }}
{{- $peers := list }}
{{- range $way := list "ingress" "httpRoute" }}
{{- $s := dig $way (dict) $studio }}
{{- if $s.enabled }}{{ $peers = concat $peers (default (list) $s.from) }}{{ end }}
{{- end }}
{{- toJson (dict "peers" $peers) }}
{{- end }}

{{/*
Who may open a connection to a component this release runs. The gateway: networkPolicy.gatewayFrom
(the ingress controller's or Gateway's peers, on HTTP) and the chart's test pod. The registry: the gateway (supergraph polls, usage) and each
service's contract-publish hook; and, while the Studio's Ingress or HTTPRoute is on, its `from`
peers (halo.studioFrom). A service: the gateway on HTTP (REST proxy, subgraph), and on
gRPC only the components that call it. The metrics scraper: the port /metrics is on.
*/}}
{{- define "halo.ingressRules" -}}
{{- $root := .root }}{{ $c := .c }}
{{- $np := $root.Values.networkPolicy }}
{{- if eq $c.name "gateway" }}
- from:
    {{- toYaml $np.gatewayFrom | nindent 4 }}
    - podSelector:
        matchLabels:
          {{- include "halo.peerLabels" (dict "root" $root "name" "test") | nindent 10 }}
  ports:
    - port: http
      protocol: TCP
{{- else if eq $c.name "registry" }}
{{- $clients := list "gateway" }}
{{- range $name := (fromJson (include "halo.enabledComponents" $root)).names }}
{{- if include "halo.publishes" (dict "root" $root "name" $name) }}{{ $clients = append $clients (printf "%s-publish" $name) }}{{ end }}
{{- end }}
{{ include "halo.peerRule" (dict "root" $root "names" $clients "ports" (list "http")) }}
{{- with (fromJson (include "halo.studioFrom" $root)).peers }}
- from:
    {{- toYaml . | nindent 4 }}
  ports:
    - port: http
      protocol: TCP
{{- end }}
{{- else }}
{{ include "halo.peerRule" (dict "root" $root "names" (list "gateway") "ports" (list "http")) }}
{{- $callers := (fromJson (include "halo.callersOf" (dict "root" $root "name" $c.name))).names }}
{{- if and $c.grpcPort $callers }}
{{ include "halo.peerRule" (dict "root" $root "names" $callers "ports" (list "grpc")) }}
{{- end }}
{{- end }}
{{ include "halo.scraperRule" (dict "root" $root "c" $c "scraper" $np.metricsScraper) }}
{{- end }}

{{/*
Refuses, in one message listing every problem, an install that renders but cannot run: images
without a registry (Docker Hub's `halo/` namespace), a component that needs Redis without
redis.url, no JWT secret, a NetworkPolicy for the gateway that admits nobody, the Studio's Ingress
or HTTPRoute on while the registry's NetworkPolicy admits none of its peers. (root)
*/}}
{{- define "halo.validate" -}}
{{- $v := .Values }}
{{- $problems := list }}
{{- $deployed := (fromJson (include "halo.deployedComponents" .)).names }}
{{- if not (or $v.image.registry $v.local) }}
{{- $pulled := list }}
{{- range $name := $deployed }}
{{- if not (index $v.components $name).image }}{{ $pulled = append $pulled $name }}
{{- else if not (index $v.components $name).image.repository }}{{ $pulled = append $pulled $name }}{{ end }}
{{- end }}
{{- with $pulled }}
{{- $problems = append $problems (printf "image.registry is empty: %s would be pulled as %s/%s:<tag>, from Docker Hub. Set image.registry to where you pushed the images (deploy/README.md), or `local: true` on a local cluster whose nodes have them (deploy/local)" (join ", " .) $v.image.repositoryPrefix (first .)) }}
{{- end }}
{{- end }}
{{- if not (or $v.redis.url $v.secrets.existingSecret) }}
{{- $needs := list }}
{{- range $name := (fromJson (include "halo.enabledComponents" .)).names }}
{{- if eq (toString (index $v.components $name).redis) "required" }}{{ $needs = append $needs $name }}{{ end }}
{{- end }}
{{- with $needs }}
{{- $problems = append $problems (printf "redis.url is required: %s cannot run without Redis in production (replicas share its state). Set redis.url, or disable %s" (join " and " .) (join " and " .)) }}
{{- end }}
{{- end }}
{{- if not (or $v.secrets.jwtSecret $v.secrets.existingSecret) }}
{{- $problems = append $problems "secrets.jwtSecret is required (≥ 32 random bytes), or set secrets.existingSecret" }}
{{- end }}
{{- if $v.networkPolicy.ingressController }}
{{- $problems = append $problems "networkPolicy.ingressController was replaced by networkPolicy.gatewayFrom, a list of NetworkPolicy peers (helm/halo/README.md: NetworkPolicies)" }}
{{- else if and $v.networkPolicy.enabled (has "gateway" $deployed) (not $v.networkPolicy.gatewayFrom) }}
{{- $problems = append $problems "networkPolicy.gatewayFrom is empty: with networkPolicy.enabled nothing could reach the gateway. List your ingress controller's or Gateway's pods (or its CIDR) as NetworkPolicy peers (helm/halo/README.md gives them for ingress-nginx, Traefik, an AWS ALB and Gateway API), or set networkPolicy.enabled: false" }}
{{- end }}
{{- if and $v.networkPolicy.enabled (has "registry" $deployed) }}
{{- $studio := dig "studio" (dict) (index $v.components "registry") }}
{{- $ingress := dig "ingress" (dict) $studio }}
{{- if and $ingress.enabled (not $ingress.from) }}
{{- $problems = append $problems "components.registry.studio.ingress.from is empty: with networkPolicy.enabled the Studio's Ingress could not reach the registry. List your internal ingress controller's pods as NetworkPolicy peers (as in networkPolicy.gatewayFrom; helm/halo/README.md: The registry's Studio), or set networkPolicy.enabled: false" }}
{{- end }}
{{- $route := dig "httpRoute" (dict) $studio }}
{{- if and $route.enabled (not $route.from) }}
{{- $problems = append $problems "components.registry.studio.httpRoute.from is empty: with networkPolicy.enabled the Studio's HTTPRoute could not reach the registry. List your internal Gateway's data-plane pods as NetworkPolicy peers (as in networkPolicy.gatewayFrom; helm/halo/README.md: The registry's Studio), or set networkPolicy.enabled: false" }}
{{- end }}
{{- end }}
{{- if $v.pgbouncer.enabled }}
{{- if not $v.postgres.host }}
{{- $problems = append $problems "pgbouncer.enabled needs postgres.host: PgBouncer connects to PostgreSQL there (postgres.port, postgres.database)" }}
{{- end }}
{{- end }}
{{- with $problems }}
{{- fail (printf "this install cannot run:\n- %s" (join "\n- " .)) }}
{{- end }}
{{- end }}
