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

{{/* The image, tagged with the chart's appVersion unless image.tag says otherwise. */}}
{{- define "lockstep.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
Settings that cannot work together, refused before anything is applied.
*/}}
{{- define "lockstep.validate" -}}
{{- if and .Values.embeddedBroker.enabled (eq .Values.embeddedBroker.store.type "bbolt") (gt (int .Values.replicas) 1) -}}
{{- fail "embeddedBroker.store.type=bbolt keeps the embedded broker's state in one file for one replica: set replicas=1, or use embeddedBroker.store.type=etcd for more" -}}
{{- end -}}
{{- if and .Values.embeddedBroker.enabled (eq .Values.embeddedBroker.store.type "etcd") (not .Values.embeddedBroker.store.etcd.endpoints) -}}
{{- fail "embeddedBroker.store.type=etcd needs embeddedBroker.store.etcd.endpoints (etcd client URLs, comma separated)" -}}
{{- end -}}
{{- end }}
