// Values: the -f files merged in order (maps key by key, anything else replaced), then laid over
// values.yaml, where a user null deletes the default it meets. The result must satisfy
// values.schema.json.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

// parseValues reads YAML as JSON types (so numbers are float64, as templates see them in Helm).
func parseValues(raw []byte) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]interface{}{}
	}
	return out, nil
}

func mergeValueFiles(defaults map[string]interface{}, files []string) (map[string]interface{}, error) {
	user := map[string]interface{}{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %v", f, err)
		}
		over, err := parseValues(raw)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %v", f, err)
		}
		layer(user, over)
	}
	return overDefaults(user, copyValue(defaults).(map[string]interface{})), nil
}

// layer writes one user file over the earlier ones: maps merge, anything else (null included) replaces.
func layer(dst, src map[string]interface{}) {
	for k, v := range src {
		srcMap, srcIsMap := v.(map[string]interface{})
		dstMap, dstIsMap := dst[k].(map[string]interface{})
		if srcIsMap && dstIsMap {
			layer(dstMap, srcMap)
			continue
		}
		dst[k] = copyValue(v)
	}
}

// overDefaults lays the user's values over the chart's defaults. A user null deletes the default
// it meets; a null with no default under it stays (templates can test for it), as in Helm.
func overDefaults(user, defaults map[string]interface{}) map[string]interface{} {
	for k, d := range defaults {
		u, given := user[k]
		switch {
		case !given:
			user[k] = d
		case u == nil:
			delete(user, k)
		default:
			uMap, uIsMap := u.(map[string]interface{})
			dMap, dIsMap := d.(map[string]interface{})
			if uIsMap && dIsMap {
				user[k] = overDefaults(uMap, dMap)
			}
		}
	}
	return user
}

// coalesceDeps gives each dependency its table of values, as Helm's chartutil does: the parent's
// `<name>:` table (created empty when absent) over the dependency's values.yaml, with the parent's
// `global` table copied in as its `global`.
func coalesceDeps(ch *chart, values map[string]interface{}) error {
	for _, sub := range ch.deps {
		v, ok := values[sub.meta.Name]
		if !ok || v == nil {
			v = map[string]interface{}{}
		}
		table, ok := v.(map[string]interface{})
		if !ok {
			return fmt.Errorf("type mismatch on %s: %T", sub.meta.Name, v)
		}
		global := map[string]interface{}{}
		if g, ok := table["global"].(map[string]interface{}); ok {
			global = g
		}
		if g, ok := values["global"].(map[string]interface{}); ok {
			for k, x := range g {
				global[k] = copyValue(x)
			}
		}
		table["global"] = global
		table = overDefaults(table, copyValue(sub.values).(map[string]interface{}))
		values[sub.meta.Name] = table
		if err := coalesceDeps(sub, table); err != nil {
			return err
		}
	}
	return nil
}

// validateTree checks the values against the chart's schema and each dependency's table against
// the dependency's schema, naming the charts that refuse them.
func validateTree(ch *chart, values map[string]interface{}) error {
	var msgs []string
	if err := validateValues(values, ch.schema); err != nil {
		msgs = append(msgs, strings.TrimPrefix(err.Error(), schemaErrorHead))
	}
	for _, sub := range ch.deps {
		table, _ := values[sub.meta.Name].(map[string]interface{})
		if err := validateTree(sub, table); err != nil {
			msgs = append(msgs, strings.TrimPrefix(err.Error(), schemaErrorHead))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s%s", schemaErrorHead, strings.Join(msgs, "\n"))
	}
	return nil
}

const schemaErrorHead = "values don't meet the specifications of the schema(s) in the following chart(s):\n"

func copyValue(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = copyValue(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = copyValue(x)
		}
		return out
	default:
		return v
	}
}

func validateValues(values map[string]interface{}, schema []byte) error {
	if len(schema) == 0 {
		return nil
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewGoLoader(values))
	if err != nil {
		return fmt.Errorf("values.schema.json: %v", err)
	}
	if result.Valid() {
		return nil
	}
	var b strings.Builder
	b.WriteString(schemaErrorHead)
	for _, e := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return fmt.Errorf("%s", strings.TrimSuffix(b.String(), "\n"))
}
