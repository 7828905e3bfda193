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
	b.WriteString("values don't meet the specifications of the schema(s) in the following chart(s):\n")
	for _, e := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return fmt.Errorf("%s", strings.TrimSuffix(b.String(), "\n"))
}
