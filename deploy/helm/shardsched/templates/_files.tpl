{{/* The objects of one of deploy/'s files (linked into files/), as a list of dicts: the chart
     renders deploy/'s own RBAC rules and policies rather than a copy of them. */}}
{{- define "shardsched.objectsOf" -}}
{{- $out := list -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if $obj.kind -}}
{{- $out = append $out $obj -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* An object of deploy/ with the release's namespace (namespaced kinds) and labels. */}}
{{- define "shardsched.placed" -}}
{{- $obj := deepCopy .obj -}}
{{- $meta := $obj.metadata -}}
{{- if .namespaced -}}
{{- $_ := set $meta "namespace" .root.Release.Namespace -}}
{{- end -}}
{{- $_ := set $meta "labels" (merge (default (dict) $meta.labels) (fromYaml (include "shardsched.labels" .root))) -}}
{{- range $s := default (list) $obj.subjects -}}
{{- $_ := set $s "namespace" $.root.Release.Namespace -}}
{{- end -}}
{{- toYaml $obj -}}
{{- end -}}
