// Reading a chart directory: Chart.yaml (as .Chart), values.yaml, values.schema.json, the
// templates, and every other file for .Files, minus what .helmignore excludes.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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
	deps      []*chart // charts/<name>/ and charts/*.tgz, loaded like the parent
}

// dependency is one entry of Chart.yaml's `dependencies`.
type dependency struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Repository string `json:"repository"`
}

func (ch *chart) dependencies() ([]dependency, error) {
	raw, err := yaml.Marshal(ch.meta.Dependencies)
	if err != nil {
		return nil, err
	}
	var out []dependency
	if err := yaml.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("Chart.yaml: dependencies: %v", err)
	}
	return out, nil
}

// Files that are the chart's own configuration, not content for .Files.
var chartOwnFiles = map[string]bool{"Chart.yaml": true, "Chart.lock": true, "values.yaml": true, "values.schema.json": true, ".helmignore": true}

// readChart reads a chart directory and, below it, its dependencies in charts/; the template
// names are prefixed with the chart's path ("halo/charts/halo-lib/templates/_x.tpl"), as Helm's.
func readChart(dir string) (*chart, error) {
	files, err := readDirFiles(dir)
	if err != nil {
		return nil, err
	}
	return loadChart(files, "")
}

// readDirFiles is a chart directory as relative path → content, minus what .helmignore excludes.
func readDirFiles(dir string) (map[string][]byte, error) {
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return nil, fmt.Errorf("no Chart.yaml in %s", dir)
	}
	ignore, err := readIgnoreFile(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
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
		if d.IsDir() {
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = content
		return nil
	})
	return out, err
}

// readArchive is a packaged chart (<name>-<version>.tgz, one top directory) as relative path → content.
func readArchive(raw []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		parts := strings.SplitN(path.Clean(h.Name), "/", 2)
		if len(parts) != 2 {
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[parts[1]] = content
	}
	return out, nil
}

// loadChart builds a chart from its files; parent is the parent chart's path ("" for the top).
func loadChart(all map[string][]byte, parent string) (*chart, error) {
	raw, ok := all["Chart.yaml"]
	if !ok {
		return nil, fmt.Errorf("no Chart.yaml in %s", parent)
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
	full := ch.meta.Name
	if parent != "" {
		full = parent + "/charts/" + ch.meta.Name
	}
	ch.notesName = full + "/templates/NOTES.txt"
	var err error
	if raw, ok := all["values.yaml"]; ok {
		if ch.values, err = parseValues(raw); err != nil {
			return nil, fmt.Errorf("%s: values.yaml: %v", full, err)
		}
	} else {
		ch.values = map[string]interface{}{}
	}
	ch.schema = all["values.schema.json"]
	subcharts := map[string]map[string][]byte{}
	names := make([]string, 0, len(all))
	for rel := range all {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		content := all[rel]
		switch {
		case strings.HasPrefix(rel, "charts/"):
			// charts/<dir>/… is an unpacked dependency, charts/<x>.tgz a packaged one.
			rest := strings.TrimPrefix(rel, "charts/")
			if i := strings.Index(rest, "/"); i >= 0 {
				dir := rest[:i]
				if subcharts["dir:"+dir] == nil {
					subcharts["dir:"+dir] = map[string][]byte{}
				}
				subcharts["dir:"+dir][rest[i+1:]] = content
			} else if strings.HasSuffix(rest, ".tgz") {
				files, err := readArchive(content)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %v", full, rel, err)
				}
				subcharts["tgz:"+rest] = files
			}
		case chartOwnFiles[rel]:
		case strings.HasPrefix(rel, "templates/"):
			ch.templates[full+"/"+rel] = string(content)
		default:
			ch.files[rel] = content
		}
	}
	keys := make([]string, 0, len(subcharts))
	for k := range subcharts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := subcharts[k]["Chart.yaml"]; !ok {
			continue // not a chart (Helm skips it too)
		}
		sub, err := loadChart(subcharts[k], full)
		if err != nil {
			return nil, err
		}
		ch.deps = append(ch.deps, sub)
	}
	return ch, nil
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency that charts/ lacks, as
// `helm install`/`helm template` do until `helm dependency build` has run.
func (ch *chart) checkDependencies() error {
	wanted, err := ch.dependencies()
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range wanted {
		found := false
		for _, sub := range ch.deps {
			found = found || sub.meta.Name == d.Name
		}
		if !found {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	for _, sub := range ch.deps {
		if sub.meta.Type != "library" {
			// Values scoped to a subchart, its own NOTES, … are not implemented here.
			return fmt.Errorf("%s: only library subcharts are supported by this renderer (helm/README.md)", sub.meta.Name)
		}
	}
	return nil
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
