package credentials

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template/parse"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// transformsPath is where a binding's secret transforms are.
var transformsPath = field.NewPath("spec", "secretTransforms")

// CheckTransforms reports what can be known of secret transforms before
// the broker is asked for credentials: each sets exactly one change, the
// keys it writes are valid Secret keys, templates and JSON paths parse,
// and they are within their bounds as far as their text tells (see
// bounds.go). The errors name the field path and never a credential.
func CheckTransforms(ts []v1alpha1.SecretTransform, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ts) > MaxTransforms {
		errs = append(errs, field.TooMany(path, len(ts), MaxTransforms))
	}
	steps := 0 // what the templates and JSON paths so far may take
	for i, t := range ts {
		p := path.Index(i)
		set := 0
		if t.RenameKey != nil {
			set++
			errs = append(errs, checkKey(t.RenameKey.To, p.Child("renameKey", "to"))...)
		}
		if t.AddKey != nil {
			set++
			e, cost := checkAddKey(t.AddKey, p.Child("addKey"))
			errs = append(errs, e...)
			if cost > 0 && steps <= MaxSteps {
				if steps = add(steps, cost); steps > MaxSteps {
					errs = append(errs, overSteps(t.AddKey, p.Child("addKey"), steps, cost))
				}
			}
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

// overSteps is the refusal of the template or JSON path that takes the
// transforms' steps over the bound.
func overSteps(a *v1alpha1.AddKeyTransform, p *field.Path, steps, cost int) *field.Error {
	what := "it"
	if steps > cost {
		what = "with the templates and JSON paths before it, it"
	}
	if a.Template != nil {
		return field.Invalid(p.Child("template"), *a.Template, stepsExceeded(steps, what).Error())
	}
	return field.Invalid(p.Child("jsonPath"), *a.JSONPath, stepsExceeded(steps, what).Error())
}

func checkKey(key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, key, "not a valid Secret key: "+msg))
	}
	return errs
}

// checkAddKey checks an addKey transform, and returns the steps its
// template or JSON path may take (0 for a value, or one that does not
// parse).
func checkAddKey(a *v1alpha1.AddKeyTransform, p *field.Path) (field.ErrorList, int) {
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
	cost := 0
	if a.Template != nil {
		prog, err := parseTemplate(*a.Template, p.Child("template"))
		if err != nil {
			errs = append(errs, err)
		} else {
			cost = prog.cost
		}
	}
	if a.JSONPath != nil {
		prog, err := parseJSONPath(*a.JSONPath, p.Child("jsonPath"))
		if err != nil {
			errs = append(errs, err)
		} else {
			cost = add(cost, prog.length)
		}
	}
	return errs, cost
}

// parseTemplate compiles a template within its size, or says why it
// cannot be used.
func parseTemplate(text string, p *field.Path) (*program, *field.Error) {
	if len(text) > MaxTemplateBytes {
		return nil, field.TooLong(p, "", MaxTemplateBytes)
	}
	prog, err := compileTemplate(text)
	switch {
	case errors.Is(err, errDefinesTemplates):
		return nil, field.Invalid(p, text, err.Error())
	case err != nil:
		return nil, field.Invalid(p, text, fmt.Sprintf("not a Go template: %v", err))
	}
	return prog, nil
}

// parseJSONPath compiles a JSON path within its size, or says why it
// cannot be used.
func parseJSONPath(expr string, p *field.Path) (*pathProgram, *field.Error) {
	if len(expr) > MaxJSONPathBytes {
		return nil, field.TooLong(p, "", MaxJSONPathBytes)
	}
	prog, err := compileJSONPath(expr)
	if err != nil {
		return nil, field.Invalid(p, expr, err.Error())
	}
	return prog, nil
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
	spent := newBudget(clock)
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
			value, err := addedValue(spent, t.AddKey, p.Child("addKey"), creds, data)
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
	if n := dataBytes(data); n > MaxSecretBytes {
		return boundInvalid(transformsPath, fmt.Sprintf("%d bytes", n), secretExceeded(n))
	}
	return nil
}

// clock reads the CPU time for the transforms' bound on time.
var clock = threadCPU

// addedValue is the value an addKey transform adds, within spent.
func addedValue(spent *budget, a *v1alpha1.AddKeyTransform, p *field.Path, creds map[string]any, data map[string][]byte) ([]byte, error) {
	switch {
	case a.Value != nil:
		return []byte(*a.Value), nil
	case a.Template != nil:
		return applyTemplate(spent, *a.Template, p.Child("template"), data)
	default:
		return extract(spent, *a.JSONPath, p.Child("jsonPath"), creds)
	}
}

// applyTemplate executes a template over the Secret's keys, within spent.
// A key it names that the Secret does not hold is reported by name, a
// bound it goes over by the bound; any other failure without the template
// engine's words, which could quote a value.
func applyTemplate(spent *budget, text string, p *field.Path, data map[string][]byte) ([]byte, error) {
	prog, ferr := parseTemplate(text, p)
	if ferr != nil {
		return nil, ferr
	}
	for _, key := range templateKeys(prog.tmpl.Tree.Root) {
		if _, ok := data[key]; !ok {
			return nil, field.Invalid(p, text, fmt.Sprintf("it names key %q: %s", key, missingKey(data)))
		}
	}
	size := dataBytes(data)
	if size > MaxSecretBytes {
		return nil, boundInvalid(p, text, secretExceeded(size))
	}
	prog.bind(spent)
	spent.begin()
	values := make(map[string]string, len(data))
	for k, v := range data {
		values[k] = string(v)
	}
	out, err := prog.run(spent, values)
	if ended := spent.end(); err == nil {
		err = ended
	}
	var bound *BoundError
	switch {
	case errors.As(err, &bound):
		return nil, boundInvalid(p, text, bound)
	case err != nil:
		return nil, field.Invalid(p, text, fmt.Sprintf("it cannot be applied to the Secret's keys (%s); check what it does with them", strings.Join(sortedKeys(data), ", ")))
	}
	return out, nil
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

// extract finds one value with a JSON path in the broker's credentials,
// within spent: a string as it is, anything else as JSON.
func extract(spent *budget, expr string, p *field.Path, creds map[string]any) ([]byte, error) {
	prog, ferr := parseJSONPath(expr, p)
	if ferr != nil {
		return nil, ferr
	}
	var bound *BoundError
	spent.begin()
	found, err := prog.find(spent, creds)
	if ended := spent.end(); err == nil {
		err = ended
	}
	if errors.As(err, &bound) {
		return nil, boundInvalid(p, expr, bound)
	}
	if len(found) != 1 {
		return nil, field.Invalid(p, expr, fmt.Sprintf("it finds %d values in the broker's credentials (top-level keys: %s); it must find exactly one",
			len(found), strings.Join(Keys(creds), ", ")))
	}
	value, err := valueOf(spent, found[0])
	if errors.As(err, &bound) {
		return nil, boundInvalid(p, expr, bound)
	}
	if err != nil {
		return nil, field.Invalid(p, expr, err.Error())
	}
	return value, nil
}

func missingKey(data map[string][]byte) string {
	return fmt.Sprintf("the Secret holds no such key at this point (it holds: %s); check the key, or the transforms before this one", strings.Join(sortedKeys(data), ", "))
}

func sortedKeys(data map[string][]byte) []string {
	return slices.Sorted(maps.Keys(data))
}
