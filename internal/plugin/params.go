package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// parameters are the parameter flags of provision, bind and adopt.
type parameters struct {
	pairs      []string // -p key=value
	files      []string // --param-file
	fromSecret []string // --from-secret NAME[:KEY]
}

// defaultSecretKey is the key of a Secret that --from-secret reads when it
// names none.
const defaultSecretKey = "parameters"

func (p *parameters) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&p.pairs, "param", "p", nil,
		"a parameter, key=value (the value as JSON when it is JSON: size=3 is a number, region=eu a string); repeat for more")
	cmd.Flags().StringArrayVar(&p.files, "param-file", nil, "a JSON or YAML file with an object of parameters; repeat for more")
	cmd.Flags().StringArrayVar(&p.fromSecret, "from-secret", nil,
		"Secret[:key] whose key (default \""+defaultSecretKey+"\") holds a JSON object of parameters, merged in by lockstep and never "+
			"written into the object (spec.parametersFrom); repeat for more")
}

// build returns the parameters as spec.parameters (nil when none) and
// spec.parametersFrom. A parameter set twice is refused, naming both
// places: lockstep refuses it too, but only after the request.
func (p *parameters) build() (*runtime.RawExtension, []v1alpha1.ParametersFromSource, error) {
	params := map[string]any{}
	from := map[string]string{}
	set := func(key string, value any, where string) error {
		if prev, ok := from[key]; ok {
			return fmt.Errorf("parameter %q is set twice: by %s and by %s", key, prev, where)
		}
		params[key], from[key] = value, where
		return nil
	}
	for _, f := range p.files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --param-file: %w", err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, nil, fmt.Errorf("--param-file %s: not a JSON or YAML object: %w", f, err)
		}
		for k, v := range obj {
			if err := set(k, v, "--param-file "+f); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, pair := range p.pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, nil, fmt.Errorf("-p %s: a parameter is key=value", pair)
		}
		if err := set(key, jsonOrString(value), "-p "+pair); err != nil {
			return nil, nil, err
		}
	}
	var sources []v1alpha1.ParametersFromSource
	for _, ref := range p.fromSecret {
		name, key, _ := strings.Cut(ref, ":")
		if name == "" {
			return nil, nil, fmt.Errorf("--from-secret %q: name a Secret, and optionally its key (NAME:KEY)", ref)
		}
		if key == "" {
			key = defaultSecretKey
		}
		sources = append(sources, v1alpha1.ParametersFromSource{SecretKeyRef: v1alpha1.SecretKeyReference{Name: name, Key: key}})
	}
	if len(params) == 0 {
		return nil, sources, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, nil, err
	}
	return &runtime.RawExtension{Raw: raw}, sources, nil
}

// jsonOrString reads a -p value: JSON when it is (a number, true, an
// object, a quoted string), otherwise the text itself.
func jsonOrString(value string) any {
	var v any
	if err := json.Unmarshal([]byte(value), &v); err == nil {
		return v
	}
	return value
}
