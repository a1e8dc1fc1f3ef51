package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// evalCheck applies one check of a scenario vector, "PATH OP VALUE"
// (spec/vectors/scenarios/README.md), to a result object decoded with
// decodeJSON. PATH is dot-separated, "length" of an array is its length;
// OP is ==, !=, >=, <=, > or <; VALUE is a JSON literal. A path that does
// not exist fails.
func evalCheck(res map[string]any, check string) error {
	parts := strings.SplitN(strings.TrimSpace(check), " ", 3)
	if len(parts) != 3 {
		return fmt.Errorf("malformed check %q", check)
	}
	path, op, lit := parts[0], parts[1], strings.TrimSpace(parts[2])
	want, err := decodeJSON([]byte(lit))
	if err != nil {
		return fmt.Errorf("check %q: value: %v", check, err)
	}
	got, err := lookup(res, path)
	if err != nil {
		return fmt.Errorf("check %q: %v", check, err)
	}
	ok, err := compare(got, op, want)
	if err != nil {
		return fmt.Errorf("check %q: %v", check, err)
	}
	if !ok {
		return fmt.Errorf("check %q failed: %s is %s", check, path, show(got))
	}
	return nil
}

func lookup(v any, path string) (any, error) {
	cur := v
	for _, key := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("no %q in %s", key, path)
			}
			cur = next
		case []any:
			if key == "length" {
				cur = json.Number(strconv.Itoa(len(c)))
				continue
			}
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no element %q in %s", key, path)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q of a non-container in %s", key, path)
		}
	}
	return cur, nil
}

func compare(got any, op string, want any) (bool, error) {
	gf, gNum := toFloat(got)
	wf, wNum := toFloat(want)
	if gNum && wNum {
		switch op {
		case "==":
			return gf == wf, nil
		case "!=":
			return gf != wf, nil
		case ">=":
			return gf >= wf, nil
		case "<=":
			return gf <= wf, nil
		case ">":
			return gf > wf, nil
		case "<":
			return gf < wf, nil
		}
		return false, fmt.Errorf("unknown operator %q", op)
	}
	switch op {
	case "==":
		return !gNum && !wNum && reflect.DeepEqual(got, want), nil
	case "!=":
		return gNum || wNum || !reflect.DeepEqual(got, want), nil
	case ">=", "<=", ">", "<":
		return false, fmt.Errorf("%s needs numbers, got %s and %s", op, show(got), show(want))
	}
	return false, fmt.Errorf("unknown operator %q", op)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func TestEvalCheck(t *testing.T) {
	v, err := decodeJSON([]byte(`{"delivery":{"lost":0,"accounting":"exact","duplicated":null},"clients":[{"id":0},{"id":1}],"js":{"acked":1000}}`))
	if err != nil {
		t.Fatal(err)
	}
	res := v.(map[string]any)
	pass := []string{
		"delivery.lost == 0", "delivery.lost <= 0", "delivery.lost >= 0", "delivery.lost != 1",
		`delivery.accounting == "exact"`, `delivery.accounting != "count"`,
		"delivery.duplicated == null", "clients.length == 2", "clients.1.id > 0", "js.acked < 1001",
	}
	fail := []string{
		"delivery.lost == 1", "delivery.lost > 0", `delivery.accounting == "count"`,
		"delivery.duplicated == 0", "delivery.reordered == 0", "latency.count == 1",
		"clients.length == 3", `delivery.accounting > 1`, "delivery.lost ~ 0", "delivery.lost",
	}
	for _, c := range pass {
		if err := evalCheck(res, c); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	for _, c := range fail {
		if err := evalCheck(res, c); err == nil {
			t.Errorf("%s passed", c)
		}
	}
}
