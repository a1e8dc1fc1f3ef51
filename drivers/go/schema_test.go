package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// A validator for the subset of JSON Schema that
// spec/driver-protocol.schema.json uses: $ref into $defs, oneOf, type
// (one or a list), const, enum, required, properties,
// additionalProperties (false or a schema), items and minimum. Go has no
// validator in its standard library, and this subset is small.

const schemaPath = "../../spec/driver-protocol.schema.json"

var (
	schemaOnce sync.Once
	schemaRoot map[string]any
	schemaErr  error
)

func protocolSchema(t *testing.T) map[string]any {
	t.Helper()
	schemaOnce.Do(func() {
		b, err := os.ReadFile(schemaPath)
		if err != nil {
			schemaErr = err
			return
		}
		schemaErr = json.Unmarshal(b, &schemaRoot)
	})
	if schemaErr != nil {
		t.Fatalf("schema: %v", schemaErr)
	}
	return schemaRoot
}

// decodeJSON decodes with numbers kept as json.Number, so that integers
// can be told from other numbers.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// outputTypes are the lines a driver may write, by their $defs name.
var outputTypes = map[string]bool{"ready": true, "progress": true, "result": true, "error": true}

// validateLine checks one stdout line: one JSON object, of a type a driver
// writes, valid against that type's definition in the schema.
func validateLine(t *testing.T, line []byte) map[string]any {
	t.Helper()
	v, err := decodeJSON(line)
	if err != nil {
		t.Fatalf("stdout line is not JSON (%v): %q", err, line)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("stdout line is not an object: %s", line)
	}
	typ, _ := obj["type"].(string)
	if !outputTypes[typ] {
		t.Fatalf("stdout line of type %q, not one a driver writes: %s", typ, line)
	}
	root := protocolSchema(t)
	def := root["$defs"].(map[string]any)[typ].(map[string]any)
	if err := validate(root, def, v, typ); err != nil {
		t.Fatalf("stdout line does not match the schema: %v\n%s", err, line)
	}
	return obj
}

func validate(root, s map[string]any, v any, path string) error {
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		if !found {
			return fmt.Errorf("%s: unsupported $ref %q", path, ref)
		}
		return validate(root, root["$defs"].(map[string]any)[name].(map[string]any), v, path)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		n := 0
		var errs []string
		for _, a := range alts {
			if err := validate(root, a.(map[string]any), v, path); err == nil {
				n++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf (%s)", path, n, strings.Join(errs, "; "))
		}
	}
	if typ, ok := s["type"]; ok {
		var types []string
		switch tt := typ.(type) {
		case string:
			types = []string{tt}
		case []any:
			for _, x := range tt {
				types = append(types, x.(string))
			}
		}
		match := false
		for _, tn := range types {
			if isType(v, tn) {
				match = true
			}
		}
		if !match {
			return fmt.Errorf("%s: %v is not of type %v", path, v, types)
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%s: %v is not %v", path, v, c)
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if jsonEqual(e, v) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, v, enum)
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if n, isNum := v.(json.Number); isNum {
			if f, _ := n.Float64(); f < m {
				return fmt.Errorf("%s: %v < minimum %v", path, v, m)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, present := obj[r.(string)]; !present {
					return fmt.Errorf("%s: missing %q", path, r)
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				if err := validate(root, ps.(map[string]any), obj[k], path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: property %q not allowed", path, k)
				}
			case map[string]any:
				if err := validate(root, ap, obj[k], path+"."+k); err != nil {
					return err
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range arr {
				if err := validate(root, items, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isType(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == float64(int64(f))
	}
	return false
}

// jsonEqual compares a schema value (numbers as float64) with a decoded
// line value (numbers as json.Number).
func jsonEqual(a, b any) bool {
	na, aNum := toFloat(a)
	nb, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && na == nb
	}
	return reflect.DeepEqual(a, b)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func TestSchemaValidator(t *testing.T) {
	root := protocolSchema(t)
	def := func(name string) map[string]any { return root["$defs"].(map[string]any)[name].(map[string]any) }
	good := `{"type":"progress","t_s":1.5,"sent":3,"received":0}`
	bad := map[string]string{
		"missing field": `{"type":"progress","t_s":1.5,"sent":3}`,
		"extra field":   `{"type":"progress","t_s":1.5,"sent":3,"received":0,"x":1}`,
		"not integer":   `{"type":"progress","t_s":1.5,"sent":3.5,"received":0}`,
		"negative":      `{"type":"progress","t_s":1.5,"sent":-1,"received":0}`,
	}
	v, _ := decodeJSON([]byte(good))
	if err := validate(root, def("progress"), v, "progress"); err != nil {
		t.Fatal(err)
	}
	for name, line := range bad {
		v, _ := decodeJSON([]byte(line))
		if err := validate(root, def("progress"), v, "progress"); err == nil {
			t.Errorf("%s: accepted %s", name, line)
		}
	}
	v, _ = decodeJSON([]byte(`{"type":"error","kind":"nope","message":"m"}`))
	if err := validate(root, def("error"), v, "error"); err == nil {
		t.Error("accepted an unknown error kind")
	}
	// The whole schema (oneOf) takes every line type.
	v, _ = decodeJSON([]byte(`{"type":"stop"}`))
	if err := validate(root, root, v, "line"); err != nil {
		t.Error(err)
	}
}
