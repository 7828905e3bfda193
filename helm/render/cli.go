// halo-helm-render renders one chart (and the named templates of its library subcharts) the way `helm template` does, for machines
// without a helm binary. It follows Helm's documented behaviour: the chart guide's built-in
// objects, its template function list, values files merged in order, values.schema.json, and the
// install order of kinds. helm/halo/README.md says what this covers and what only Helm checks.
//
//	halo-helm-render --chart DIR [--release-name halo] [--namespace halo] [-f values.yaml]...
//	                 [--kube-version v1.33.0] [--api-versions group/version]... [--output text|json]
//	halo-helm-render --chart DIR --dependency-build
//
// text: the manifests as `helm template` prints them (install order, then hooks).
// json: {"manifest": <text>, "notes": <rendered NOTES.txt>, "values": <the merged values>}.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

type options struct {
	chartDir    string
	release     string
	namespace   string
	kubeVersion string
	output      string
	valueFiles  repeated
	apiVersions repeated
	// `helm dependency build` for file:// repositories: package each into charts/<name>-<version>.tgz.
	dependencyBuild bool
}

func main() {
	var o options
	flag.StringVar(&o.chartDir, "chart", "", "chart directory")
	flag.StringVar(&o.release, "release-name", "halo", "release name")
	flag.StringVar(&o.namespace, "namespace", "default", "release namespace")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.33.0", "Kubernetes version for .Capabilities")
	flag.StringVar(&o.output, "output", "text", "text or json")
	flag.Var(&o.valueFiles, "f", "values file (repeatable)")
	flag.Var(&o.apiVersions, "api-versions", "extra API version for .Capabilities (repeatable)")
	flag.BoolVar(&o.dependencyBuild, "dependency-build", false, "package the chart's file:// dependencies into its charts/ (helm dependency build)")
	flag.Parse()
	if o.chartDir == "" || (o.output != "text" && o.output != "json") {
		flag.Usage()
		os.Exit(2)
	}
	out, err := run(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

func run(o options) (string, error) {
	if o.dependencyBuild {
		return "", dependencyBuild(o.chartDir)
	}
	ch, err := readChart(o.chartDir)
	if err != nil {
		return "", err
	}
	if err := ch.checkDependencies(); err != nil {
		return "", err
	}
	caps, err := newCapabilities(o.kubeVersion, o.apiVersions)
	if err != nil {
		return "", err
	}
	if err := ch.checkKubeVersion(caps.KubeVersion); err != nil {
		return "", err
	}
	values, err := mergeValueFiles(ch.values, o.valueFiles)
	if err != nil {
		return "", err
	}
	if err := coalesceDeps(ch, values); err != nil {
		return "", err
	}
	if err := validateTree(ch, values); err != nil {
		return "", err
	}
	top := map[string]interface{}{
		"Values": values,
		"Chart":  ch.meta,
		"Files":  ch.files,
		"Release": map[string]interface{}{
			"Name": o.release, "Namespace": o.namespace, "IsInstall": true, "IsUpgrade": false,
			"Revision": 1, "Service": "Helm",
		},
		"Capabilities": caps,
	}
	rendered, err := renderTemplates(ch, top)
	if err != nil {
		return "", err
	}
	notes := rendered[ch.notesName]
	delete(rendered, ch.notesName)
	manifest, err := printManifests(rendered)
	if err != nil {
		return "", err
	}
	if o.output == "text" {
		return manifest, nil
	}
	b, err := json.Marshal(map[string]interface{}{"manifest": manifest, "notes": notes, "values": values})
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
