package celrules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Types finds the Go type of a kind (a runtime.Scheme's AllKnownTypes).
type Types map[schema.GroupVersionKind]reflect.Type

// header starts every manifest, as controller-gen writes it.
const header = "---\n"

// Apply adds the rules of every version of the CRD in manifest (YAML as
// controller-gen writes it) and returns the new manifest. Rules already
// there with the same text are replaced, so applying twice changes nothing;
// rules of other origin are kept. A kind without a Go type in types is left
// as it is.
func Apply(manifest []byte, types Types) ([]byte, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(manifest, &crd); err != nil {
		return nil, fmt.Errorf("reading the CRD: %w", err)
	}
	// The manifest is edited as a generic document so that everything
	// else in it is written back as it was.
	var doc map[string]any
	if err := yaml.Unmarshal(manifest, &doc); err != nil {
		return nil, fmt.Errorf("reading the CRD: %w", err)
	}
	versions, _ := lookup(doc, "spec", "versions").([]any)
	if len(versions) != len(crd.Spec.Versions) {
		return nil, fmt.Errorf("CRD %s: cannot find its versions", crd.Name)
	}
	for i, v := range crd.Spec.Versions {
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		t, ok := types[gvk]
		if !ok || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		rules, _, err := For(t, gvk.Kind, v.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		version, _ := versions[i].(map[string]any)
		for _, r := range rules {
			keys := []string{"schema", "openAPIV3Schema", "properties", r.Property}
			for _, name := range r.Field {
				keys = append(keys, "properties", name)
			}
			prop, ok := lookup(version, keys...).(map[string]any)
			if !ok {
				return nil, fmt.Errorf("CRD %s version %s: no property %s in the schema", crd.Name, v.Name, strings.Join(append([]string{r.Property}, r.Field...), "."))
			}
			if err := addRule(prop, r.Validation); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("writing the CRD %s: %w", crd.Name, err)
	}
	return append([]byte(header), out...), nil
}

// addRule puts rule into a schema's x-kubernetes-validations, in place of
// a rule with the same text.
func addRule(schema map[string]any, rule apiextensionsv1.ValidationRule) error {
	raw, err := json.Marshal(rule)
	if err != nil {
		return err
	}
	var entry map[string]any
	if err := json.Unmarshal(raw, &entry); err != nil {
		return err
	}
	const key = "x-kubernetes-validations"
	list, _ := schema[key].([]any)
	kept := list[:0:0]
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["rule"] == rule.Rule {
			continue
		}
		kept = append(kept, e)
	}
	schema[key] = append(kept, entry)
	return nil
}

func lookup(doc map[string]any, keys ...string) any {
	var cur any = doc
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// ApplyDir applies the rules to every CRD manifest (*.yaml holding a
// CustomResourceDefinition) in dir, rewriting the files that change.
func ApplyDir(dir string, types Types) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(in, &meta); err != nil || meta.Kind != "CustomResourceDefinition" {
			continue
		}
		out, err := Apply(in, types)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if bytes.Equal(in, out) {
			continue
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
