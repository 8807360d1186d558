{{/* Names ------------------------------------------------------------------------------- */}}

{{/* The chart name, or nameOverride: app.kubernetes.io/name. */}}
{{- define "henge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, or "<release>-<name>", or the release
name alone when it already contains the chart name. 63 characters at most (DNS label).
*/}}
{{- define "henge.fullname" -}}
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

{{/* "<name>-<version>" for the helm.sh/chart label. */}}
{{- define "henge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels ------------------------------------------------------------------------------ */}}

{{/* The labels every object carries. */}}
{{- define "henge.labels" -}}
helm.sh/chart: {{ include "henge.chart" . }}
{{ include "henge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: henge
{{- end }}

{{/* The labels that select the release's pods (immutable once installed). */}}
{{- define "henge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "henge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The labels that select the API server's pods: the selector labels plus the component, so that
the migrations Job's pods are not taken for servers by the Service, the PodDisruptionBudget or
the NetworkPolicy.
*/}}
{{- define "henge.serverSelectorLabels" -}}
{{ include "henge.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{/* Objects ----------------------------------------------------------------------------- */}}

{{- define "henge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "henge.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret the Deployment reads the database URL and admin token from. */}}
{{- define "henge.secretName" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecret }}
{{- else }}
{{- include "henge.fullname" . }}
{{- end }}
{{- end }}

{{/* Key of the database URL in that Secret. */}}
{{- define "henge.databaseUrlKey" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecretKeys.databaseUrl }}
{{- else -}}
HENGE_DATABASE_URL
{{- end }}
{{- end }}

{{/* Key of the admin token in that Secret. */}}
{{- define "henge.adminTokenKey" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecretKeys.adminToken }}
{{- else -}}
HENGE_ADMIN_TOKEN
{{- end }}
{{- end }}

{{/* The database URL from the values; rendering fails with a clear message without one. */}}
{{- define "henge.databaseUrl" -}}
{{- required "set database.url (postgresql+psycopg://USER:PASSWORD@HOST:5432/DB) or existingSecret (a Secret with HENGE_DATABASE_URL and HENGE_ADMIN_TOKEN)" .Values.database.url }}
{{- end }}

{{/*
The admin token: adminToken, else the one stored in the release's Secret by an earlier install
(so upgrades keep it), else a new random one.
*/}}
{{- define "henge.adminToken" -}}
{{- if .Values.adminToken }}
{{- .Values.adminToken }}
{{- else }}
{{- $stored := lookup "v1" "Secret" .Release.Namespace (include "henge.fullname" .) }}
{{- if and $stored $stored.data (hasKey $stored.data "HENGE_ADMIN_TOKEN") }}
{{- index $stored.data "HENGE_ADMIN_TOKEN" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The image reference. */}}
{{- define "henge.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The /tmp emptyDir (the root file system is read-only). */}}
{{- define "henge.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}
