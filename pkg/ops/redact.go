package ops

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// SecretTag marks a request field whose value is a secret (a token, a
// kubeconfig that holds one): `swdt:"secret"`. Redacted hides it, so the
// debug log of an op shows the request's shape and never the secret. A
// map or slice so marked has each of its values hidden.
const SecretTag = "secret"

// redactedValue stands in for a secret in a log.
const redactedValue = "<redacted>"

// Redacted is v (an op's request) as JSON for a log, with the value of
// every field tagged `swdt:"secret"` replaced by "<redacted>".
func Redacted(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		return raw
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return raw
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(redact(reflect.TypeOf(v), doc)); err != nil {
		return raw
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// redact hides the secrets of doc, the decoded JSON of a value of type t.
func redact(t reflect.Type, doc any) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch d := doc.(type) {
	case map[string]any:
		if t.Kind() == reflect.Map {
			for k, e := range d {
				d[k] = redact(t.Elem(), e)
			}
			return d
		}
		if t.Kind() != reflect.Struct {
			return d
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			e, ok := d[name]
			if !ok {
				continue
			}
			if f.Tag.Get("swdt") == SecretTag {
				d[name] = hide(e)
			} else {
				d[name] = redact(f.Type, e)
			}
		}
		return d
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range d {
				d[i] = redact(t.Elem(), e)
			}
		}
		return d
	default:
		return doc
	}
}

// hide replaces a secret value, or each value of a secret map or list,
// keeping the keys: a log still says which files a request carried.
func hide(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		for k := range d {
			d[k] = redactedValue
		}
		return d
	case []any:
		for i := range d {
			d[i] = redactedValue
		}
		return d
	case nil:
		return nil
	default:
		return redactedValue
	}
}
