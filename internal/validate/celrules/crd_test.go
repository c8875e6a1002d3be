package celrules

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const manifest = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              name:
                type: string
            type: object
            x-kubernetes-validations:
            - message: name is short
              rule: size(self.name) < 64
        required:
        - spec
        type: object
    served: true
    storage: true
`

type widgetSpec struct {
	Name string `json:"name" lockstep:"createonly"`
}

type widget struct {
	Spec widgetSpec `json:"spec"`
}

var widgetTypes = Types{{Group: "example.com", Version: "v1", Kind: "Widget"}: reflect.TypeFor[widget]()}

func TestApplyAddsTheRulesOnceAndKeepsOthers(t *testing.T) {
	once, err := Apply([]byte(manifest), widgetTypes)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(once), "---\n"))
	twice, err := Apply(once, widgetTypes)
	require.NoError(t, err)
	assert.Equal(t, string(once), string(twice), "applying again changes nothing")

	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(once, &crd))
	rules := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XValidations
	require.Len(t, rules, 2)
	assert.Equal(t, "size(self.name) < 64", rules[0].Rule, "a rule of other origin is kept")
	assert.Equal(t, ".name", rules[1].FieldPath)
}

func TestApplyLeavesOtherKindsAlone(t *testing.T) {
	out, err := Apply([]byte(manifest), Types{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}: reflect.TypeFor[widget]()})
	require.NoError(t, err)
	assert.Equal(t, manifest, string(out))
}
