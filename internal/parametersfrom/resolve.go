package parametersfrom

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Resolved is an object's parameters with the values of its Secrets
// merged in.
type Resolved struct {
	// Parameters are the merged parameters: spec.parameters itself when
	// the object names no Secret.
	Parameters *runtime.RawExtension
	// Sources maps each top-level parameter that came from a Secret to
	// where it came from ("Secret \"db-admin\" key \"params\"").
	Sources map[string]string
	// values are the Secrets' top-level values, for Redact.
	values []any
}

// FromSecrets reports whether some parameters came from Secrets.
func (r Resolved) FromSecrets() bool { return len(r.Sources) > 0 }

// MaxSources is how many Secret keys spec.parametersFrom may name: each is
// a Secret lockstep reads (and asks whether the requester may read) during
// admission.
const MaxSources = 16

// Resolve reads the Secrets that from names, in namespace, and merges
// their JSON objects into params. A value larger than maxBytes (0: no
// bound) is refused before it is decoded: the merged parameters may not
// be larger either. Each problem of a reference (no such
// Secret, no such key, a value that is not a JSON object, a parameter
// another source sets too) is a field error under path
// (spec.parametersFrom) naming the Secret and key, never the value. An
// error means a Secret could not be read at all (not a missing one).
// spec.parameters that are not a JSON object are left as they are: the
// schema check reports them.
func Resolve(ctx context.Context, reader client.Reader, namespace string, params *runtime.RawExtension,
	from []v1alpha1.ParametersFromSource, path *field.Path, maxBytes int) (Resolved, field.ErrorList, error) {
	if len(from) == 0 {
		return Resolved{Parameters: params}, nil, nil
	}
	if len(from) > MaxSources {
		return Resolved{}, field.ErrorList{field.TooMany(path, len(from), MaxSources)}, nil
	}
	merged, ok := decodeObject(rawOf(params))
	if !ok {
		return Resolved{Parameters: params}, nil, nil
	}
	if merged == nil {
		merged = map[string]any{}
	}
	res := Resolved{Sources: map[string]string{}}
	var errs field.ErrorList
	secrets := map[string]*corev1.Secret{}
	for i, src := range from {
		ref := src.SecretKeyRef
		at := path.Index(i).Child("secretKeyRef")
		where := Where(ref)
		secret, found := secrets[ref.Name]
		if !found {
			secret = &corev1.Secret{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
				if !apierrors.IsNotFound(err) {
					return Resolved{}, nil, fmt.Errorf("reading Secret %q of spec.parametersFrom[%d]: %w", ref.Name, i, err)
				}
				secret = nil
			}
			secrets[ref.Name] = secret
		}
		if secret == nil {
			errs = append(errs, field.Invalid(at.Child("name"), ref.Name, fmt.Sprintf(
				"no Secret %q in namespace %q: create it with key %q holding the parameters as a JSON object "+
					"(kubectl create secret generic %s -n %s --from-literal=%s='{\"name\":\"value\"}'), or correct the reference",
				ref.Name, namespace, ref.Key, ref.Name, namespace, ref.Key)))
			continue
		}
		value, found := secret.Data[ref.Key]
		if !found {
			if s, ok := secret.StringData[ref.Key]; ok {
				value, found = []byte(s), true
			}
		}
		if !found {
			errs = append(errs, field.Invalid(at.Child("key"), ref.Key, fmt.Sprintf(
				"Secret %q has no key %q (its keys: %s): add the key with the parameters as a JSON object, or correct the reference",
				ref.Name, ref.Key, keysOf(secret))))
			continue
		}
		if maxBytes > 0 && len(value) > maxBytes {
			errs = append(errs, field.Invalid(at.Child("key"), ref.Key, fmt.Sprintf(
				"the value of %s holds %d bytes; lockstep sends at most %d bytes of parameters to a broker (LOCKSTEP_MAX_PARAMETERS_BYTES, "+
					"the parameters from Secrets included) and reads no larger value: make it smaller", where, len(value), maxBytes)))
			continue
		}
		obj, ok := decodeObject(value)
		if !ok || obj == nil {
			errs = append(errs, field.Invalid(at.Child("key"), ref.Key, fmt.Sprintf(
				"the value of %s is %s, not a JSON object: write the parameters as a JSON object that maps names to values, such as {\"adminPassword\":\"...\"} (the value is not shown)",
				where, describeJSON(value))))
			continue
		}
		for _, name := range sortedKeys(obj) {
			if other, taken := res.Sources[name]; taken {
				errs = append(errs, field.Forbidden(at, fmt.Sprintf(
					"parameter %q is set by %s and by %s: a parameter may come from one place only; remove it from one of them", name, other, where)))
				continue
			}
			if _, inSpec := merged[name]; inSpec {
				errs = append(errs, field.Forbidden(at, fmt.Sprintf(
					"parameter %q is set by spec.parameters and by %s: a parameter may come from one place only; remove it from one of them", name, where)))
				continue
			}
			merged[name] = obj[name]
			res.Sources[name] = where
			res.values = append(res.values, obj[name])
		}
	}
	if len(errs) > 0 {
		return Resolved{}, errs, nil
	}
	raw, err := encode(merged)
	if err != nil {
		return Resolved{}, nil, err
	}
	res.Parameters = &runtime.RawExtension{Raw: raw}
	return res, nil, nil
}

// Where names a Secret key for messages.
func Where(ref v1alpha1.SecretKeyReference) string {
	return fmt.Sprintf("Secret %q key %q", ref.Name, ref.Key)
}

func rawOf(p *runtime.RawExtension) []byte {
	switch {
	case p == nil:
		return nil
	case p.Raw != nil:
		return p.Raw
	case p.Object != nil:
		raw, _ := json.Marshal(p.Object)
		return raw
	}
	return nil
}

// decodeObject decodes a JSON object with its numbers as written; nil and
// true for no value or null, false for anything but an object.
func decodeObject(raw []byte) (map[string]any, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	obj, ok := v.(map[string]any)
	return obj, ok
}

// describeJSON names what a value is without showing it.
func describeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "not valid JSON"
	}
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a JSON array"
	case string:
		return "a JSON string"
	case float64:
		return "a JSON number"
	case bool:
		return "a JSON boolean"
	}
	return "not a JSON object"
}

func keysOf(s *corev1.Secret) string {
	var keys []string
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// encode writes a JSON value compactly with object keys sorted, numbers
// as written, without HTML escaping.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("could not encode the merged parameters as JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// With returns r and o together, for Redact: the sources and values of
// both (o's source wins for a parameter both have).
func (r Resolved) With(o Resolved) Resolved {
	out := Resolved{Parameters: r.Parameters, Sources: map[string]string{}}
	for k, v := range r.Sources {
		out.Sources[k] = v
	}
	for k, v := range o.Sources {
		out.Sources[k] = v
	}
	out.values = append(append(out.values, r.values...), o.values...)
	return out
}
