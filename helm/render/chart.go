// Reading a chart directory: Chart.yaml (as .Chart), values.yaml, values.schema.json, the
// templates, and every other file for .Files, minus what .helmignore excludes.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// chartMeta is Chart.yaml with the field names templates use (.Chart.Name, .Chart.AppVersion, …).
type chartMeta struct {
	APIVersion   string              `json:"apiVersion"`
	Name         string              `json:"name"`
	Version      string              `json:"version"`
	AppVersion   string              `json:"appVersion,omitempty"`
	KubeVersion  string              `json:"kubeVersion,omitempty"`
	Description  string              `json:"description,omitempty"`
	Type         string              `json:"type,omitempty"`
	Home         string              `json:"home,omitempty"`
	Icon         string              `json:"icon,omitempty"`
	Keywords     []string            `json:"keywords,omitempty"`
	Sources      []string            `json:"sources,omitempty"`
	Maintainers  []map[string]string `json:"maintainers,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	Dependencies []interface{}       `json:"dependencies,omitempty"`
	Deprecated   bool                `json:"deprecated,omitempty"`
}

type chart struct {
	meta      chartMeta
	values    map[string]interface{}
	schema    []byte
	templates map[string]string // "<chart>/templates/x.yaml" → source
	notesName string
	files     chartFiles
}

// Files that are the chart's own configuration, not content for .Files.
var chartOwnFiles = map[string]bool{"Chart.yaml": true, "Chart.lock": true, "values.yaml": true, "values.schema.json": true, ".helmignore": true}

func readChart(dir string) (*chart, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("no Chart.yaml in %s", dir)
	}
	ch := &chart{files: chartFiles{}, templates: map[string]string{}}
	if err := yaml.Unmarshal(raw, &ch.meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if ch.meta.Name == "" || ch.meta.Version == "" {
		return nil, fmt.Errorf("Chart.yaml: name and version are required")
	}
	if _, err := semver.NewVersion(ch.meta.Version); err != nil {
		return nil, fmt.Errorf("Chart.yaml: version %q is not SemVer 2", ch.meta.Version)
	}
	ch.notesName = ch.meta.Name + "/templates/NOTES.txt"
	if raw, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if ch.values, err = parseValues(raw); err != nil {
			return nil, fmt.Errorf("values.yaml: %v", err)
		}
	} else {
		ch.values = map[string]interface{}{}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		ch.schema = raw
	}
	ignore, err := readIgnoreFile(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if ignore.matches(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || chartOwnFiles[rel] {
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			ch.templates[ch.meta.Name+"/"+rel] = string(content)
		} else {
			ch.files[rel] = content
		}
		return nil
	})
	return ch, err
}

// ignoreRules are .helmignore lines: shell globs matched against the path or its base name, a
// trailing "/" for directories only, "!" to re-include.
type ignoreRules []struct {
	pattern string
	negate  bool
	dirOnly bool
}

func readIgnoreFile(p string) (ignoreRules, error) {
	raw, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var rules ignoreRules
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := struct {
			pattern string
			negate  bool
			dirOnly bool
		}{}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		if _, err := path.Match(line, ""); err != nil {
			return nil, fmt.Errorf(".helmignore: bad pattern %q", line)
		}
		r.pattern = strings.TrimPrefix(line, "/")
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

func (rules ignoreRules) matches(rel string, isDir bool) bool {
	ignored := false
	for _, r := range rules {
		if r.dirOnly && !isDir {
			continue
		}
		hit, _ := path.Match(r.pattern, rel)
		if !hit && !strings.Contains(r.pattern, "/") {
			hit, _ = path.Match(r.pattern, path.Base(rel))
		}
		if hit {
			ignored = !r.negate
		}
	}
	return ignored
}

// capabilities is .Capabilities: the cluster this render pretends to talk to.
type capabilities struct {
	KubeVersion kubeVersion
	APIVersions apiVersions
	HelmVersion map[string]string
}

type kubeVersion struct{ Version, Major, Minor string }

func (k kubeVersion) String() string     { return k.Version }
func (k kubeVersion) GitVersion() string { return k.Version }

type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

// The built-in group versions a current cluster serves (what charts test with .APIVersions.Has).
var builtinAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "autoscaling/v1", "autoscaling/v2",
	"networking.k8s.io/v1", "rbac.authorization.k8s.io/v1", "storage.k8s.io/v1",
	"apiextensions.k8s.io/v1", "admissionregistration.k8s.io/v1", "coordination.k8s.io/v1",
	"discovery.k8s.io/v1", "events.k8s.io/v1", "scheduling.k8s.io/v1", "node.k8s.io/v1",
	"certificates.k8s.io/v1", "apiregistration.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1",
}

func newCapabilities(version string, extra []string) (capabilities, error) {
	v, err := semver.NewVersion(version)
	if err != nil {
		return capabilities{}, fmt.Errorf("invalid kube version %q: %v", version, err)
	}
	all := append(append(apiVersions{}, builtinAPIVersions...), extra...)
	sort.Strings(all)
	return capabilities{
		KubeVersion: kubeVersion{Version: "v" + v.String(), Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor())},
		APIVersions: all,
		HelmVersion: map[string]string{"Version": "v3.19.0", "GitCommit": "", "GitTreeState": "", "GoVersion": ""},
	}, nil
}

// checkKubeVersion refuses a cluster outside Chart.yaml's kubeVersion range, as Helm does.
func (ch *chart) checkKubeVersion(k kubeVersion) error {
	if ch.meta.KubeVersion == "" {
		return nil
	}
	c, err := semver.NewConstraint(ch.meta.KubeVersion)
	if err != nil {
		return fmt.Errorf("Chart.yaml: kubeVersion %q: %v", ch.meta.KubeVersion, err)
	}
	v, _ := semver.NewVersion(k.Version)
	if !c.Check(v) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.meta.KubeVersion, k.Version)
	}
	return nil
}
