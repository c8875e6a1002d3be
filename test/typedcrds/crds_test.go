package typedcrds

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

const namespace = "typed"

// installed renders and installs the CRD of every corpus service once;
// it returns each service by the name of its corpus file.
var installed = sync.OnceValues(func() (map[string]installedKind, error) {
	files, err := filepath.Glob(filepath.Join(env.root, "internal", "typed", "render", "testdata", "corpus", "*.json"))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := env.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, err
	}
	out := map[string]installedKind{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var svc osbapi.Service
		if err := json.Unmarshal(raw, &svc); err != nil {
			return nil, err
		}
		crd, report, err := render.Render("cloud", &svc, render.Options{})
		if err != nil {
			return nil, err
		}
		if err := env.client.Create(ctx, crd); err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = installedKind{svc: &svc, crd: crd, report: report}
	}
	return out, nil
})

type installedKind struct {
	svc    *osbapi.Service
	crd    *apiextensionsv1.CustomResourceDefinition
	report *render.Report
}

// established waits until the API server serves the kind.
func established(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	require.Eventually(t, func() bool {
		var got apiextensionsv1.CustomResourceDefinition
		if err := env.client.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &got); err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "CRD %s is not established", crd.Name)
}

func kinds(t *testing.T) map[string]installedKind {
	t.Helper()
	all, err := installed()
	require.NoError(t, err, "installing the corpus's CRDs")
	return all
}

// TestEveryCorpusCRDIsEstablished: the API server takes every CRD.
func TestEveryCorpusCRDIsEstablished(t *testing.T) {
	for name, k := range kinds(t) {
		t.Run(name, func(t *testing.T) { established(t, k.crd) })
	}
}

// object is a typed object of kind k.
func object(k installedKind, name, plan string, params map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": render.Group + "/" + render.Version,
		"kind":       k.crd.Spec.Names.Kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       map[string]any{"plan": plan},
	}}
	if params != nil {
		u.Object["spec"].(map[string]any)["parameters"] = params
	}
	return u
}

// objectName makes an object's name of a row's name.
func objectName(row string) string {
	return strings.ToLower(strings.NewReplacer(" ", "-", ",", "").Replace(row))
}

// brokerAccepts says whether the plan's create schema accepts params, as
// lockstep's webhook checks them.
func brokerAccepts(t *testing.T, k installedKind, plan string, params map[string]any) bool {
	t.Helper()
	p, err := k.svc.FindPlan(plan)
	require.NoError(t, err)
	sp := osbapi.ServicePlan{Service: k.svc, Plan: p}
	ps, err := schema.Compile(sp.CreateSchema(), sp.UpdateSchema(), nil)
	require.NoError(t, err)
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	return len(ps.ValidateProvision(&runtime.RawExtension{Raw: raw}, nil)) == 0
}

// TestCreateAgreesWithTheBroker creates objects through the API server:
// what the plan's schema accepts, the API server accepts; what the CRD
// keeps a rule for, the API server refuses as the schema does.
func TestCreateAgreesWithTheBroker(t *testing.T) {
	all := kinds(t)
	for _, tc := range []struct {
		name, kind, plan string
		params           map[string]any
		apiRefuses       string // a fragment of the API server's message; empty: accepted
	}{
		{name: "azure basic", kind: "azure-postgresql", plan: "basic", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "cores": 2, "sslEnforcement": "",
			"firewallRules": []any{map[string]any{"name": "office", "startIPAddress": "10.0.0.1", "endIPAddress": "10.0.0.9"}},
			"tags":          map[string]any{"team": "a"}}},
		{name: "azure general purpose, many cores", kind: "azure-postgresql", plan: "general-purpose", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "cores": 32, "backupRedundancy": "geo"}},
		{name: "azure, storage beyond every plan", kind: "azure-postgresql", plan: "basic", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "storage": 5000}, apiRefuses: "spec.parameters.storage"},
		{name: "azure, cores of another type", kind: "azure-postgresql", plan: "basic", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "cores": "two"}, apiRefuses: "spec.parameters.cores"},
		{name: "azure, a firewall rule the other plan leaves open", kind: "azure-postgresql", plan: "general-purpose", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "firewallRules": "any value"}},
		{name: "azure, bad ssl value", kind: "azure-postgresql", plan: "basic", params: map[string]any{
			"location": "westeurope", "resourceGroup": "rg", "sslEnforcement": "sometimes"}, apiRefuses: "spec.parameters.sslEnforcement"},
		{name: "mysql, integer written with a fraction", kind: "cf-mysql", plan: "db-small", params: map[string]any{
			"max_connections": json.Number("11.0"), "lower_case_table_names": 1, "enable_tls": []any{"a.example", "b.example"}}},
		{name: "mysql, exclusive minimum", kind: "cf-mysql", plan: "db-small", params: map[string]any{
			"max_connections": 10}, apiRefuses: "spec.parameters.max_connections"},
		{name: "config store, recursion and nullable", kind: "refs-and-recursion", plan: "standard", params: map[string]any{
			"size": 4, "owner": nil, "port": "http", "mode": "strict", "ratio": 0.5,
			"tree":     map[string]any{"value": "a", "children": []any{map[string]any{"value": "b", "children": []any{map[string]any{"value": "c", "depth": 3}}}}},
			"replicas": []any{map[string]any{"zone": "a", "size": 2}}}},
		{name: "config store, const", kind: "refs-and-recursion", plan: "standard", params: map[string]any{"mode": "lax"}, apiRefuses: "spec.parameters.mode"},
		{name: "buckets, anyOf of two types", kind: "conditionals", plan: "regional", params: map[string]any{
			"capacity": "10Gi", "storageClass": "COLDLINE", "labels": map[string]any{"team": "a", "x-cost": "b"},
			"cors": map[string]any{"origin": "*", "method": "GET"}, "versioning": true, "retention": map[string]any{"days": 3}}},
		{name: "buckets, capacity as a number", kind: "conditionals", plan: "regional", params: map[string]any{"capacity": 5, "versioning": false}},
		{name: "redis large, version as a number", kind: "plans-disagree", plan: "large", params: map[string]any{
			"shards": 10, "version": 7, "maxmemory-policy": "volatile-lru", "namespace": "n"}},
		{name: "redis small, version as a string", kind: "plans-disagree", plan: "small", params: map[string]any{
			"shards": 1, "version": "7.2", "maxmemory-policy": "allkeys-lru"}},
		{name: "redis, shards beyond every plan", kind: "plans-disagree", plan: "large", params: map[string]any{"shards": 65}, apiRefuses: "spec.parameters.shards"},
		{name: "rds, uuid and password", kind: "sensitive", plan: "dev", params: map[string]any{
			"DBName": "app", "Id": "550e8400-e29b-41d4-a716-446655440000", "users": []any{map[string]any{"name": "a", "password": "secret"}}}},
		{name: "rds, not a uuid", kind: "sensitive", plan: "dev", params: map[string]any{"Id": "nope"}, apiRefuses: "spec.parameters.Id"},
		{name: "minibroker, anything", kind: "minibroker", plan: "10-3-22", params: map[string]any{"rootUser": map[string]any{"password": 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := all[tc.kind]
			require.True(t, ok, "no corpus service %s", tc.kind)
			established(t, k.crd)
			accepts := brokerAccepts(t, k, tc.plan, tc.params)
			obj := object(k, objectName(tc.name), tc.plan, tc.params)
			err := env.client.Create(context.Background(), obj)
			if tc.apiRefuses == "" {
				require.True(t, accepts, "the row's parameters must be ones the plan's schema accepts")
				assert.NoError(t, err, "the API server refuses what the plan's schema accepts")
				return
			}
			assert.False(t, accepts, "the plan's schema must refuse the row's parameters")
			require.Error(t, err, "the API server accepts what the CRD claims to refuse")
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.apiRefuses)
		})
	}
}

// TestTransitionRules updates objects: a create-only parameter and a plan
// change the broker does not allow are refused by the API server itself.
func TestTransitionRules(t *testing.T) {
	all := kinds(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, kind, plan string
		params           map[string]any
		change           func(spec map[string]any)
		apiRefuses       string
	}{
		{name: "create-only changed", kind: "azure-postgresql", plan: "basic",
			params: map[string]any{"location": "westeurope", "resourceGroup": "rg"},
			change: func(spec map[string]any) { spec["parameters"].(map[string]any)["location"] = "northeurope" },
			apiRefuses: "spec.parameters.location: Forbidden: create-only parameter spec.parameters.location (in the plan's create schema, not in its update schema): " +
				"it cannot be set, changed or removed after the AzurePostgresql96 is created; leave it as it was at creation, or delete and recreate the AzurePostgresql96"},
		{name: "create-only set", kind: "azure-postgresql", plan: "basic",
			params:     map[string]any{"location": "westeurope", "resourceGroup": "rg"},
			change:     func(spec map[string]any) { spec["parameters"].(map[string]any)["sslEnforcement"] = "enabled" },
			apiRefuses: "create-only parameter spec.parameters.sslEnforcement"},
		{name: "create-only removed", kind: "azure-postgresql", plan: "basic",
			params:     map[string]any{"location": "westeurope", "resourceGroup": "rg", "sslEnforcement": "enabled"},
			change:     func(spec map[string]any) { delete(spec["parameters"].(map[string]any), "sslEnforcement") },
			apiRefuses: "create-only parameter spec.parameters.sslEnforcement"},
		{name: "updateable parameter changed", kind: "azure-postgresql", plan: "basic",
			params: map[string]any{"location": "westeurope", "resourceGroup": "rg", "storage": 10},
			change: func(spec map[string]any) { spec["parameters"].(map[string]any)["storage"] = 20 }},
		{name: "create-only in this plan", kind: "plans-disagree", plan: "small",
			params:     map[string]any{"shards": 1, "maxmemory-policy": "noeviction", "persistence": true},
			change:     func(spec map[string]any) { spec["parameters"].(map[string]any)["persistence"] = false },
			apiRefuses: "create-only parameter spec.parameters.persistence"},
		{name: "create-only in another plan only", kind: "plans-disagree", plan: "large",
			params: map[string]any{"shards": 2, "persistence": true},
			change: func(spec map[string]any) { spec["parameters"].(map[string]any)["persistence"] = false }},
		{name: "create-only left alone while parametersFrom is used", kind: "plans-disagree", plan: "small",
			params: map[string]any{"shards": 1, "maxmemory-policy": "noeviction", "persistence": true},
			change: func(spec map[string]any) {
				delete(spec["parameters"].(map[string]any), "persistence")
				spec["parametersFrom"] = []any{map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}
			}},
		{name: "plan change refused", kind: "cf-mysql", plan: "db-small",
			change:     func(spec map[string]any) { spec["plan"] = "db-large" },
			apiRefuses: "create a new PMysql"},
		{name: "plan change allowed from an updateable plan", kind: "cf-mysql", plan: "db-large",
			change: func(spec map[string]any) { spec["plan"] = "db-small" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := all[tc.kind]
			established(t, k.crd)
			name := "t-" + objectName(tc.name)
			require.NoError(t, env.client.Create(ctx, object(k, name, tc.plan, tc.params)))
			got := object(k, name, tc.plan, nil)
			require.NoError(t, env.client.Get(ctx, client.ObjectKeyFromObject(got), got))
			tc.change(got.Object["spec"].(map[string]any))
			err := env.client.Update(ctx, got)
			if tc.apiRefuses == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.apiRefuses)
			assert.Contains(t, err.Error(), "create")
		})
	}
}
