// Template execution: Go text/template with sprig's functions (minus env and expandenv) and the
// functions Helm documents on top (include, tpl, required, fail, toYaml, fromYaml, toJson, …).
// Files whose name starts with "_" only define templates; NOTES.txt is rendered on its own.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"github.com/gobwas/glob"
	"sigs.k8s.io/yaml"
)

// How deep include/tpl may nest before the render stops (a template including itself).
const maxNesting = 1000

// allTemplates is every template of the chart and of its dependencies, by full name.
func allTemplates(ch *chart, into map[string]string) map[string]string {
	for name, src := range ch.templates {
		into[name] = src
	}
	for _, sub := range ch.deps {
		allTemplates(sub, into)
	}
	return into
}

// byPathLen is Helm's parse order: deeper paths first, so a parent chart's `define` wins over a
// subchart's of the same name; equal depths by name.
func byPathLen(names []string) {
	sort.Slice(names, func(i, j int) bool {
		ci, cj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if ci != cj {
			return ci > cj
		}
		return names[i] > names[j]
	})
}

// renderTemplates executes every renderable template of the chart with its own .Template. The
// subcharts (libraries only: checkDependencies) contribute their named templates.
func renderTemplates(ch *chart, top map[string]interface{}) (map[string]string, error) {
	root := template.New(ch.meta.Name).Option("missingkey=zero")
	depth := 0
	root.Funcs(templateFuncs(root, &depth))
	sources := allTemplates(ch, map[string]string{})
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	byPathLen(names)
	for _, name := range names {
		if _, err := root.New(name).Parse(sources[name]); err != nil {
			return nil, explain(err)
		}
	}
	sort.Strings(names)
	out := map[string]string{}
	own := ch.meta.Name + "/templates/"
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") || !strings.HasPrefix(name, own) {
			continue
		}
		data := make(map[string]interface{}, len(top)+1)
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": name, "BasePath": ch.meta.Name + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return nil, explain(err)
		}
		out[name] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

func templateFuncs(root *template.Template, depth *int) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	nested := func(what string, run func() (string, error)) (string, error) {
		*depth++
		defer func() { *depth-- }()
		if *depth > maxNesting {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", what)
		}
		return run()
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		return nested(name, func() (string, error) {
			var buf bytes.Buffer
			err := root.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		})
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		return nested("tpl", func() (string, error) {
			t, err := root.Clone()
			if err != nil {
				return "", err
			}
			if t, err = t.New("tpl").Parse(text); err != nil {
				return "", fmt.Errorf("cannot parse template %q: %v", text, err)
			}
			var buf bytes.Buffer
			if err := t.Execute(&buf, data); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		})
	}
	f["required"] = func(message string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return v, errors.New(message)
		}
		return v, nil
	}
	f["fail"] = func(message string) (string, error) { return "", errors.New(message) }
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil // no cluster: what `helm template` returns
	}
	f["toYaml"] = func(v interface{}) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	f["mustToYaml"] = func(v interface{}) (string, error) {
		b, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	f["fromYamlArray"] = func(s string) []interface{} {
		var a []interface{}
		if err := yaml.Unmarshal([]byte(s), &a); err != nil {
			return []interface{}{err.Error()}
		}
		return a
	}
	f["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["mustToJson"] = func(v interface{}) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	f["fromJsonArray"] = func(s string) []interface{} {
		var a []interface{}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return []interface{}{err.Error()}
		}
		return a
	}
	f["toToml"] = func(v interface{}) string {
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(v); err != nil {
			return err.Error()
		}
		return buf.String()
	}
	return f
}

// Go's "template: x.yaml:3:7: executing … error calling required: msg" becomes Helm's shorter
// "execution error at (x.yaml:3:7): msg" for required and fail; other errors keep Go's text.
var execErr = regexp.MustCompile(`^template: (\S+?:\d+:\d+): executing .*? error calling (?:required|fail): (.*)$`)

func explain(err error) error {
	if m := execErr.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return err
}

// chartFiles is .Files: the chart's non-template files by path.
type chartFiles map[string][]byte

func (f chartFiles) GetBytes(name string) []byte { return f[name] }
func (f chartFiles) Get(name string) string      { return string(f[name]) }

// Glob returns the files whose path matches a glob ("**" crosses directories).
func (f chartFiles) Glob(pattern string) chartFiles {
	g, err := glob.Compile(pattern, '/')
	out := chartFiles{}
	if err != nil {
		return out
	}
	for name, content := range f {
		if g.Match(name) {
			out[name] = content
		}
	}
	return out
}

// AsConfig is the files as ConfigMap data (base name → content), in YAML.
func (f chartFiles) AsConfig() string {
	m := map[string]string{}
	for name, content := range f {
		m[path.Base(name)] = string(content)
	}
	b, _ := yaml.Marshal(m)
	return strings.TrimSuffix(string(b), "\n")
}

// AsSecrets is the files as Secret data (base name → base64 content), in YAML.
func (f chartFiles) AsSecrets() string {
	m := map[string]string{}
	for name, content := range f {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(content)
	}
	b, _ := yaml.Marshal(m)
	return strings.TrimSuffix(string(b), "\n")
}

// Lines is one file split into lines.
func (f chartFiles) Lines(name string) []string {
	s := string(f[name])
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
