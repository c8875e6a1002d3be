package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// lifeCatalog is a catalog of one well-behaved service, life-pg, whose
// plan's create schema has properties (props: name to description; a
// name "parent.child" is a property of object parent, which takes no other
// members), and
// of four hostile ones (too deep, recursive, too wide, not a schema).
func lifeCatalog(description string, props map[string]string) osbapi.Catalog {
	properties := map[string]any{}
	for name, d := range props {
		parent, child, nested := strings.Cut(name, ".")
		if !nested {
			properties[name] = map[string]any{"type": "string", "description": d}
			continue
		}
		if properties[parent] == nil {
			properties[parent] = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
		}
		properties[parent].(map[string]any)["properties"].(map[string]any)[child] = map[string]any{"type": "string", "description": d}
	}
	pg, err := json.Marshal(map[string]any{"type": "object", "properties": properties})
	if err != nil {
		panic(err)
	}
	deep := `{"type":"string"}`
	for range 100 {
		deep = `{"type":"object","properties":{"next":` + deep + `}}`
	}
	wide := make([]string, 0, 3000)
	for i := range 3000 {
		wide = append(wide, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
	}
	service := func(name, description, schema string) osbapi.Service {
		return osbapi.Service{ID: name + "-id", Name: name, Description: description, Bindable: true,
			Plans: []osbapi.Plan{{ID: name + "-small-id", Name: "small", Description: "small",
				Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
					Create: &osbapi.InputParameters{Parameters: json.RawMessage(schema)}}}}}}
	}
	return osbapi.Catalog{Services: []osbapi.Service{
		service("life-pg", description, string(pg)),
		service("life-deep", "deep", deep),
		service("life-recursive", "recursive", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`),
		service("life-wide", "wide", `{"type":"object","properties":{`+strings.Join(wide, ",")+`}}`),
		service("life-invalid", "invalid", `{"type":"object","properties":{"a":{"type":12}}}`),
	}}
}

// refusingPolicy is a policy of the cluster that refuses every CRD whose
// description says "not-in-this-cluster": the API server's own refusal of
// a CRD lockstep renders.
const refusingPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-refuse-crds
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apiextensions.k8s.io"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["customresourcedefinitions"]
  validations:
  - expression: "!object.spec.versions.exists(v, has(v.schema) && has(v.schema.openAPIV3Schema) && has(v.schema.openAPIV3Schema.description) && v.schema.openAPIV3Schema.description.contains('not-in-this-cluster'))"
    message: "this cluster takes no CRD that says not-in-this-cluster"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-refuse-crds
spec:
  policyName: e2e-refuse-crds
  validationActions: ["Deny"]
`

// probeCRD is a CRD the refusing policy refuses.
const probeCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: probes.e2e.lockstep.dev
spec:
  group: e2e.lockstep.dev
  scope: Namespaced
  names: {kind: Probe, plural: probes}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, description: not-in-this-cluster}
`

// The life of a typed kind's CRD: activated, it is applied and
// established, and kubectl explain shows the catalog's descriptions; the
// hostile schemas of other services each get a condition, and hold
// nothing up; a catalog change updates the CRD, keeping parameters an
// object still sets, a nested one too; an update the API server refuses keeps the CRD as it
// was, with a condition; deactivation is refused while an object of the
// kind exists, naming it, and otherwise refuses new objects of the kind
// for a while, then deletes the CRD and its roles.
func TestTypedKindLife(t *testing.T) {
	const name = "life"
	b := marketBroker(t, name)
	ctx := context.Background()

	r := kubectl(t, refusingPolicy, "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	t.Cleanup(func() { kubectl(t, refusingPolicy, "delete", "-f", "-", "--ignore-not-found") })
	require.Eventually(t, func() bool {
		r := kubectl(t, probeCRD, "create", "--dry-run=server", "-f", "-")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, "not-in-this-cluster")
	}, 30*time.Second, 250*time.Millisecond, "the policy is in force")

	require.NoError(t, b.SetCatalog(lifeCatalog("PostgreSQL", map[string]string{"size": "Size of the disk in GB.", "tier": "Service tier.", "backup.window": "Backup window.", "backup.keep": "Backups kept."})))
	refreshBroker(t, name)
	r = kubectl(t, "", "patch", "servicebroker", name, "--type=merge", "-p", `{"spec":{"typedKinds":[{"services":["*"]}]}}`)
	require.Equal(t, 0, r.ExitCode, r.Output())

	ready := func(service string) string {
		r := kubectl(t, "", "get", "serviceoffering", name+"."+service, "-o",
			`jsonpath={.status.typedKind.established} {.status.conditions[?(@.type=="TypedKindReady")].status} {.status.conditions[?(@.type=="TypedKindReady")].reason}`)
		return r.Output()
	}
	eventually := func(what string, want func() bool) {
		t.Helper()
		_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return want(), nil })
		require.True(t, want(), what)
	}
	eventually("life-pg is established", func() bool { return ready("life-pg") == "true True Established" })
	for _, hostile := range []string{"life-deep", "life-recursive", "life-wide", "life-invalid"} {
		eventually(hostile+" is served, and says what its CRD does not hold", func() bool { return strings.HasPrefix(ready(hostile), "true True ") })
	}
	r = kubectl(t, "", "get", "serviceoffering", name+".life-wide", "-o", `jsonpath={.status.conditions[?(@.type=="TypedKindReady")].message}`)
	assert.Contains(t, r.Stdout, "spec.parameters is free JSON")

	explain := func() string { return kubectl(t, "", "explain", "lifepgs.spec.parameters").Stdout }
	eventually("kubectl explain shows the catalog's descriptions", func() bool { return strings.Contains(explain(), "Size of the disk in GB.") })
	r = kubectl(t, "", "get", "clusterroles", "-l", "app.kubernetes.io/managed-by=lockstep", "-o", "name")
	assert.Contains(t, r.Stdout, "clusterrole.rbac.authorization.k8s.io/lockstep:services:lifepgs:edit\n")
	assert.Contains(t, r.Stdout, "clusterrole.rbac.authorization.k8s.io/lockstep:services:lifepgs:view\n")

	// An object sets tier and backup.window; the catalog drops both and
	// adds storage: the CRD has storage, and keeps tier and backup.window,
	// deprecated, for the object (backup takes no other members: the API
	// server would prune window).
	ns := namespace(t)
	object := fmt.Sprintf("apiVersion: services.lockstep.dev/v1alpha1\nkind: LifePg\nmetadata:\n  name: one\n  namespace: %s\nspec:\n  plan: small\n  parameters:\n    size: \"5\"\n    tier: gold\n    backup:\n      window: \"02:00\"\n", ns)
	r = kubectl(t, object, "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	require.NoError(t, b.SetCatalog(lifeCatalog("PostgreSQL", map[string]string{"size": "Size of the disk in GB.", "storage": "Storage class.", "backup.keep": "Backups kept."})))
	refreshBroker(t, name)
	eventually("the CRD is updated", func() bool { return strings.Contains(explain(), "Storage class.") })
	assert.Contains(t, explain(), "Deprecated: no plan of the service has it any more", "kubectl explain shows tier, deprecated")
	r = kubectl(t, "", "get", "crd", "lifepgs.services.lockstep.dev", "-o",
		"jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.parameters.properties.tier.description}")
	assert.Equal(t, "Deprecated: no plan of the service has it any more; kept while objects set it. Service tier.", r.Stdout)
	r = kubectl(t, "", "get", "serviceoffering", name+".life-pg", "-o", `jsonpath={.status.typedKind.deprecatedParameters}`)
	assert.Equal(t, `["backup.window","tier"]`, r.Stdout)
	r = kubectl(t, "", "get", "crd", "lifepgs.services.lockstep.dev", "-o",
		"jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.parameters.properties.backup.properties.window.description}")
	assert.Equal(t, "Deprecated: no plan of the service has it any more; kept while objects set it. Backup window.", r.Stdout)
	r = kubectl(t, "", "get", "lifepg", "one", "-n", ns, "-o", "jsonpath={.spec.parameters.tier} {.spec.parameters.backup.window}")
	assert.Equal(t, "gold 02:00", r.Stdout, "the object keeps what it set")

	// The cluster's policy refuses the next rendering: the CRD stays as it
	// was, and the offering says why.
	require.NoError(t, b.SetCatalog(lifeCatalog("PostgreSQL, not-in-this-cluster", map[string]string{"size": "Size of the disk in GB.", "storage": "Storage class.", "backup.keep": "Backups kept.", "replicas": "Replicas."})))
	refreshBroker(t, name)
	eventually("the update is refused", func() bool { return ready("life-pg") == "true False CRDUpdateRefused" })
	r = kubectl(t, "", "get", "serviceoffering", name+".life-pg", "-o", `jsonpath={.status.conditions[?(@.type=="TypedKindReady")].message}`)
	assert.Contains(t, r.Stdout, "this cluster takes no CRD that says not-in-this-cluster")
	assert.Contains(t, r.Stdout, "the CRD as it was stays")
	assert.NotContains(t, explain(), "Replicas.", "the CRD is as it was")
	assert.Contains(t, explain(), "Storage class.")

	// Deactivation while the object exists is refused, naming it.
	deactivate := `{"spec":{"typedKinds":[{"services":["life-deep"]}]}}`
	r = kubectl(t, "", "patch", "servicebroker", name, "--type=merge", "-p", deactivate)
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `kind LifePg of service "life-pg" has 1 object(s): `+ns+"/one")
	assert.Contains(t, r.Stderr, "delete the objects first")

	// Without it, the CRD is marked retiring, new objects of the kind are
	// refused, and then the CRD and its roles go.
	r = kubectl(t, "", "delete", "lifepg", "one", "-n", ns, "--timeout=30s")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "patch", "servicebroker", name, "--type=merge", "-p", deactivate)
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventually("a new object of the kind is refused while its CRD is retiring", func() bool {
		r := kubectl(t, strings.Replace(object, "name: one", "name: two", 1), "create", "-f", "-")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, `kind LifePg (service "life-pg") is being deactivated on ServiceBroker "life"`)
	})
	eventually("the CRD goes", func() bool {
		r := kubectl(t, "", "get", "crd", "lifepgs.services.lockstep.dev", "--ignore-not-found", "-o", "name")
		return r.ExitCode == 0 && r.Stdout == ""
	})
	eventually("its roles go", func() bool {
		r := kubectl(t, "", "get", "clusterroles", "-l", "app.kubernetes.io/managed-by=lockstep", "-o", "name")
		return r.ExitCode == 0 && !strings.Contains(r.Stdout, "lifepgs")
	})
	r = kubectl(t, "", "get", "serviceoffering", name+".life-pg", "-o", `jsonpath={.status.typedKind}`)
	assert.Empty(t, r.Stdout, "the offering shows no kind")
	assert.Equal(t, "true True Established", ready("life-deep"), "the kind still activated stays")
}
