package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// transformsPath is where a binding's secret transforms are.
var transformsPath = field.NewPath("spec", "secretTransforms")

// CheckTransforms reports what can be known of secret transforms before
// the broker is asked for credentials: each sets exactly one change, the
// keys it writes are valid Secret keys, templates and JSON paths parse.
// The errors name the field path and never a credential.
func CheckTransforms(ts []v1alpha1.SecretTransform, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		p := path.Index(i)
		set := 0
		if t.RenameKey != nil {
			set++
			errs = append(errs, checkKey(t.RenameKey.To, p.Child("renameKey", "to"))...)
		}
		if t.AddKey != nil {
			set++
			errs = append(errs, checkAddKey(t.AddKey, p.Child("addKey"))...)
		}
		if t.AddKeysFrom != nil {
			set++
		}
		if t.RemoveKey != nil {
			set++
		}
		if set != 1 {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("%d changes", set),
				"set exactly one of renameKey, addKey, addKeysFrom and removeKey; use one transform per change"))
		}
	}
	return errs
}

func checkKey(key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, key, "not a valid Secret key: "+msg))
	}
	return errs
}

func checkAddKey(a *v1alpha1.AddKeyTransform, p *field.Path) field.ErrorList {
	errs := checkKey(a.Key, p.Child("key"))
	set := 0
	for _, v := range []*string{a.Value, a.Template, a.JSONPath} {
		if v != nil {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, a.Key, "set exactly one of value, template and jsonPath"))
	}
	if a.Template != nil {
		if _, err := parseTemplate(*a.Template); err != nil {
			errs = append(errs, field.Invalid(p.Child("template"), *a.Template, fmt.Sprintf("not a Go template: %v", err)))
		}
	}
	if a.JSONPath != nil {
		if _, err := parseJSONPath(*a.JSONPath); err != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPath"), *a.JSONPath, fmt.Sprintf("not a JSONPath: %v", err)))
		}
	}
	return errs
}

func parseTemplate(text string) (*template.Template, error) {
	return template.New("value").Option("missingkey=error").Parse(text)
}

func parseJSONPath(expr string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New("value")
	return jp, jp.Parse(expr)
}

// TransformError says that a secret transform cannot apply to the
// credentials the broker sent: writing again will not help, the binding's
// spec must change.
type TransformError struct{ Err error }

func (e *TransformError) Error() string { return e.Err.Error() }
func (e *TransformError) Unwrap() error { return e.Err }

// transform applies the binding's secret transforms to data, in order.
// creds are the broker's credentials as it sent them (JSON paths read
// them); reader reads the Secrets that addKeysFrom names. An error names
// the transform's field path and keys, never a value; it is a
// *TransformError unless reading a Secret failed.
func transform(ctx context.Context, reader client.Reader, b *v1alpha1.ServiceBinding, creds map[string]any, data map[string][]byte) error {
	err := applyTransforms(ctx, reader, b, creds, data)
	var fe *field.Error
	if errors.As(err, &fe) {
		return &TransformError{Err: err}
	}
	return err
}

func applyTransforms(ctx context.Context, reader client.Reader, b *v1alpha1.ServiceBinding, creds map[string]any, data map[string][]byte) error {
	if errs := CheckTransforms(b.Spec.SecretTransforms, transformsPath); len(errs) > 0 {
		return errs[0]
	}
	for i, t := range b.Spec.SecretTransforms {
		p := transformsPath.Index(i)
		switch {
		case t.RenameKey != nil:
			value, ok := data[t.RenameKey.From]
			if !ok {
				return field.Invalid(p.Child("renameKey", "from"), t.RenameKey.From, missingKey(data))
			}
			delete(data, t.RenameKey.From)
			data[t.RenameKey.To] = value
		case t.AddKey != nil:
			value, err := addedValue(t.AddKey, p.Child("addKey"), creds, data)
			if err != nil {
				return err
			}
			data[t.AddKey.Key] = value
		case t.AddKeysFrom != nil:
			var s corev1.Secret
			name := t.AddKeysFrom.SecretRef.Name
			err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, &s)
			if apierrors.IsNotFound(err) {
				return field.NotFound(p.Child("addKeysFrom", "secretRef", "name"), name)
			}
			if err != nil {
				return fmt.Errorf("%s: reading Secret %q: %w", p.Child("addKeysFrom"), name, err)
			}
			maps.Copy(data, s.Data)
		case t.RemoveKey != nil:
			delete(data, t.RemoveKey.Key)
		}
	}
	return nil
}

// addedValue is the value an addKey transform adds.
func addedValue(a *v1alpha1.AddKeyTransform, p *field.Path, creds map[string]any, data map[string][]byte) ([]byte, error) {
	switch {
	case a.Value != nil:
		return []byte(*a.Value), nil
	case a.Template != nil:
		return applyTemplate(*a.Template, p.Child("template"), data)
	default:
		return extract(*a.JSONPath, p.Child("jsonPath"), creds)
	}
}

// applyTemplate executes a template over the Secret's keys. A key it
// names that the Secret does not hold is reported by name; any other
// failure without the template engine's words, which could quote a value.
func applyTemplate(text string, p *field.Path, data map[string][]byte) ([]byte, error) {
	tmpl, err := parseTemplate(text)
	if err != nil {
		return nil, field.Invalid(p, text, fmt.Sprintf("not a Go template: %v", err))
	}
	for _, key := range templateKeys(tmpl.Tree.Root) {
		if _, ok := data[key]; !ok {
			return nil, field.Invalid(p, text, fmt.Sprintf("it names key %q: %s", key, missingKey(data)))
		}
	}
	values := make(map[string]string, len(data))
	for k, v := range data {
		values[k] = string(v)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, values); err != nil {
		return nil, field.Invalid(p, text, fmt.Sprintf("it cannot be applied to the Secret's keys (%s); check what it does with them", strings.Join(sortedKeys(data), ", ")))
	}
	return out.Bytes(), nil
}

// templateKeys are the keys a template names as fields of its data
// ({{.key}}).
func templateKeys(n parse.Node) []string {
	var keys []string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			keys = append(keys, n.Ident[0])
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		}
	}
	walk(n)
	return keys
}

// extract finds one value with a JSON path in the broker's credentials: a
// string as it is, anything else as JSON.
func extract(expr string, p *field.Path, creds map[string]any) ([]byte, error) {
	jp, err := parseJSONPath(expr)
	if err != nil {
		return nil, field.Invalid(p, expr, fmt.Sprintf("not a JSONPath: %v", err))
	}
	results, err := jp.FindResults(creds)
	var found []any
	if err == nil {
		for _, r := range results {
			for _, v := range r {
				found = append(found, v.Interface())
			}
		}
	}
	if len(found) != 1 {
		return nil, field.Invalid(p, expr, fmt.Sprintf("it finds %d values in the broker's credentials (top-level keys: %s); it must find exactly one",
			len(found), strings.Join(Keys(creds), ", ")))
	}
	if s, ok := found[0].(string); ok {
		return []byte(s), nil
	}
	raw, err := json.Marshal(found[0])
	if err != nil {
		return nil, field.Invalid(p, expr, "the value it finds is not JSON")
	}
	return raw, nil
}

func missingKey(data map[string][]byte) string {
	return fmt.Sprintf("the Secret holds no such key at this point (it holds: %s); check the key, or the transforms before this one", strings.Join(sortedKeys(data), ", "))
}

func sortedKeys(data map[string][]byte) []string {
	return slices.Sorted(maps.Keys(data))
}
