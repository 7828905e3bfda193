// What `helm template` prints: every non-empty YAML document, headed by the template it came
// from, ordered by the kind install order Helm documents (unknown kinds last, by kind name); then
// the hooks (documents annotated helm.sh/hook), ordered the same way. A document whose hook
// annotation names an event Helm does not know is left out, as Helm leaves it out.
package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

var hookEvents = map[string]bool{
	"pre-install": true, "post-install": true, "pre-delete": true, "post-delete": true,
	"pre-upgrade": true, "post-upgrade": true, "pre-rollback": true, "post-rollback": true,
	"test": true, "test-success": true,
}

type document struct {
	source  string
	content string
	kind    string
}

// A line that is only "---" (and spaces) separates documents.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func printManifests(rendered map[string]string) (string, error) {
	sources := make([]string, 0, len(rendered))
	for s := range rendered {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var plain, hooks []document
	for _, source := range sources {
		for _, part := range separator.Split(rendered[source], -1) {
			content := strings.TrimSpace(part)
			if content == "" || isOnlyComments(content) {
				continue
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(content), &head); err != nil {
				return "", fmt.Errorf("YAML parse error on %s: %v", source, err)
			}
			doc := document{source: source, content: content, kind: head.Kind}
			events, isHook := head.Metadata.Annotations["helm.sh/hook"]
			if !isHook {
				plain = append(plain, doc)
				continue
			}
			known := true
			for _, e := range strings.Split(events, ",") {
				known = known && hookEvents[strings.ToLower(strings.TrimSpace(e))]
			}
			if known {
				hooks = append(hooks, doc)
			}
		}
	}
	sortByKind(plain)
	sortByKind(hooks)
	var b strings.Builder
	for _, d := range append(plain, hooks...) {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", d.source, d.content)
	}
	return b.String(), nil
}

func isOnlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

func sortByKind(docs []document) {
	rank := make(map[string]int, len(installOrder))
	for i, k := range installOrder {
		rank[k] = i
	}
	sort.SliceStable(docs, func(i, j int) bool {
		ri, iKnown := rank[docs[i].kind]
		rj, jKnown := rank[docs[j].kind]
		switch {
		case iKnown && jKnown:
			return ri < rj
		case iKnown != jKnown:
			return iKnown
		default:
			return docs[i].kind < docs[j].kind
		}
	})
}
