{{/*
The labels Helm's own tooling expects on every object of the release.
deploy/ has none of them; the test that compares the chart with deploy/
leaves exactly these out.
*/}}
{{- define "lockstep.helmLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The labels of every object deploy/ labels: lockstep's name and Helm's. */}}
{{- define "lockstep.labels" -}}
app.kubernetes.io/name: lockstep
{{ include "lockstep.helmLabels" . }}
{{- end }}

{{/* The labels that select lockstep's pods (the Deployment's selector). */}}
{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: lockstep
app.kubernetes.io/component: webhook
{{- end }}

{{/* The labels that select the embedded broker's pods. */}}
{{- define "lockstep.brokerSelectorLabels" -}}
app.kubernetes.io/name: lockstep
app.kubernetes.io/component: embedded-broker
{{- end }}

{{/*
The image of lockstep's and the embedded broker's pods, tagged with the
chart's appVersion unless image.tag says otherwise, and pinned by
image.digest when it is set.
*/}}
{{- define "lockstep.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/*
The self-signed CA and serving certificate of the webhook server, as JSON
{ca, crt, key} (base64 PEM), made once per render and shared by the
Secret and both webhook configurations. An upgrade keeps the ones the
Secret lockstep-webhook-tls already holds.
*/}}
{{- define "lockstep.selfSignedCertificate" -}}
{{- if not (hasKey .Values "__lockstepCertificate") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace "lockstep-webhook-tls" -}}
{{- $cert := dict -}}
{{- if and $existing (hasKey ($existing.data | default dict) "ca.crt") -}}
{{- $cert = dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key") -}}
{{- else -}}
{{- $days := int .Values.selfSignedCertificate.validityDays -}}
{{- $ca := genCA "lockstep-webhook-ca" $days -}}
{{- $svc := printf "lockstep-webhook.%s.svc" .Release.Namespace -}}
{{- $tls := genSignedCert $svc nil (list $svc (printf "%s.cluster.local" $svc)) $days $ca -}}
{{- $cert = dict "ca" ($ca.Cert | b64enc) "crt" ($tls.Cert | b64enc) "key" ($tls.Key | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__lockstepCertificate" $cert -}}
{{- end -}}
{{- get .Values "__lockstepCertificate" | toJson -}}
{{- end }}

{{/*
The embedded broker's CA and serving certificate, as JSON {ca, crt, key}
(base64 PEM), made once per render and shared by the Secret
lockstep-embedded-broker-tls and the ServiceBroker's caBundle. An upgrade
keeps the ones the Secret already holds. cert-manager's CA injector cannot
fill a ServiceBroker's caBundle, so the chart makes this certificate with
or without cert-manager.
*/}}
{{- define "lockstep.brokerCertificate" -}}
{{- if not (hasKey .Values "__lockstepBrokerCertificate") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace "lockstep-embedded-broker-tls" -}}
{{- $cert := dict -}}
{{- if and $existing (hasKey ($existing.data | default dict) "ca.crt") -}}
{{- $cert = dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key") -}}
{{- else -}}
{{- $days := int .Values.selfSignedCertificate.validityDays -}}
{{- $ca := genCA "lockstep-embedded-broker-ca" $days -}}
{{- $svc := printf "lockstep-embedded-broker.%s.svc" .Release.Namespace -}}
{{- $tls := genSignedCert $svc nil (list $svc (printf "%s.cluster.local" $svc)) $days $ca -}}
{{- $cert = dict "ca" ($ca.Cert | b64enc) "crt" ($tls.Cert | b64enc) "key" ($tls.Key | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__lockstepBrokerCertificate" $cert -}}
{{- end -}}
{{- get .Values "__lockstepBrokerCertificate" | toJson -}}
{{- end }}

{{/* The Secret of the embedded broker's credentials: the one given, or the chart's. */}}
{{- define "lockstep.brokerAuthSecret" -}}
{{- .Values.embeddedBroker.auth.existingSecret | default "lockstep-embedded-broker-auth" -}}
{{- end }}

{{/*
The password of the chart's Secret lockstep-embedded-broker-auth: the one
it holds, or a new random one, made once per render.
*/}}
{{- define "lockstep.brokerPassword" -}}
{{- if not (hasKey .Values "__lockstepBrokerPassword") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace "lockstep-embedded-broker-auth" -}}
{{- $password := randAlphaNum 32 -}}
{{- if and $existing (hasKey ($existing.data | default dict) "password") -}}
{{- $password = index $existing.data "password" | b64dec -}}
{{- end -}}
{{- $_ := set .Values "__lockstepBrokerPassword" $password -}}
{{- end -}}
{{- get .Values "__lockstepBrokerPassword" -}}
{{- end }}

{{/*
Settings that cannot work together, refused before anything is applied.
*/}}
{{- define "lockstep.validate" -}}
{{- $broker := .Values.embeddedBroker -}}
{{- if and $broker.enabled (eq $broker.store.type "bbolt") (gt (int $broker.replicas) 1) -}}
{{- fail "embeddedBroker.store.type=bbolt keeps the embedded broker's state in one file for one replica: set embeddedBroker.replicas=1, or use embeddedBroker.store.type=etcd for more" -}}
{{- end -}}
{{- if $broker.enabled -}}
{{- $users := splitList "-" $broker.actions.users -}}
{{- $count := 1 -}}
{{- if eq (len $users) 2 -}}
{{- $count = add1 (sub (atoi (index $users 1)) (atoi (index $users 0))) -}}
{{- end -}}
{{- if lt (int $count) (int $broker.actions.maxConcurrent) -}}
{{- fail (printf "embeddedBroker.actions.users %s are %d users, fewer than embeddedBroker.actions.maxConcurrent (%d): each running action needs a user of its own" $broker.actions.users (int $count) (int $broker.actions.maxConcurrent)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.tracing.enabled (not .Values.tracing.endpoint) -}}
{{- fail "tracing.enabled needs tracing.endpoint: the OTLP collector the spans go to (http://collector:4317 with tracing.protocol=grpc)" -}}
{{- end -}}
{{- if and .Values.embeddedBroker.enabled (eq .Values.embeddedBroker.store.type "etcd") (not .Values.embeddedBroker.store.etcd.endpoints) -}}
{{- fail "embeddedBroker.store.type=etcd needs embeddedBroker.store.etcd.endpoints (etcd client URLs, comma separated)" -}}
{{- end -}}
{{- end }}

{{/*
A file of files/ (lockstep's rules or dashboard, generated by
hack/monitoring) with the scrape job of monitoring.job and the runbooks at
monitoring.prometheusRule.runbookURL in place of the ones hack/monitoring
writes (lockstep-webhook, the repository's docs/runbooks/). The job is
matched as the rules write it (job="...") and as the dashboard's JSON
escapes it (job=\"...\").
*/}}
{{- define "lockstep.monitoringFile" -}}
{{- $root := index . 0 -}}
{{- $job := $root.Values.monitoring.job -}}
{{- $root.Files.Get (index . 1)
  | replace "job=\"lockstep-webhook\"" (printf "job=\"%s\"" $job)
  | replace "job=\\\"lockstep-webhook\\\"" (printf "job=\\\"%s\\\"" $job)
  | replace "https://github.com/lockstep-dev/lockstep/blob/main/docs/runbooks/" $root.Values.monitoring.prometheusRule.runbookURL -}}
{{- end }}
