package validate

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestMessages(t *testing.T) {
	tests := []struct {
		name     string
		old, new *instance
		create   bool
		want     []string
	}{
		{
			name: "create-only string changed",
			old:  &instance{Spec: instanceSpec{ServiceName: "small"}},
			new:  &instance{Spec: instanceSpec{ServiceName: "large"}},
			want: []string{`spec.serviceName: Invalid value: "large": create-only field: it cannot be changed after creation (was "small"); delete and recreate the object to change it`},
		},
		{
			name: "create-only string removed",
			old:  &instance{Spec: instanceSpec{ServiceName: "small"}},
			new:  &instance{},
			want: []string{`spec.serviceName: Forbidden: create-only field: it cannot be removed after creation (was "small"); put the old value back, or delete and recreate the object`},
		},
		{
			name: "create-only pointer set",
			old:  &instance{},
			new:  &instance{Spec: instanceSpec{Replicas: ptr[int32](0)}},
			want: []string{`spec.replicas: Invalid value: 0: create-only field: it cannot be set after creation (it was not set when the object was created); delete and recreate the object to set it`},
		},
		{
			name: "create-only bool and list element",
			old:  &instance{Spec: instanceSpec{Items: []item{{ID: "a"}}}},
			new:  &instance{Spec: instanceSpec{Enabled: true, Items: []item{{ID: "b"}}}},
			want: []string{
				`spec.enabled: Invalid value: true: create-only field: it cannot be set after creation (it was not set when the object was created); delete and recreate the object to set it`,
				`spec.items[0].id: Invalid value: "b": create-only field: it cannot be changed after creation (was "a"); delete and recreate the object to change it`,
			},
		},
		{
			name: "create-only map and raw JSON shown as compact JSON",
			old:  &instance{Spec: instanceSpec{Labels: map[string]string{"b": "2", "a": "1"}, Secret: &runtime.RawExtension{Raw: []byte(`{ "k" : [1, 2] }`)}}},
			new:  &instance{Spec: instanceSpec{Labels: map[string]string{"a": "<&>"}, Secret: &runtime.RawExtension{Raw: []byte(`{"k": [1, 3]}`)}}},
			want: []string{
				`spec.secret: Invalid value: {"k":[1,3]}: create-only field: it cannot be changed after creation (was {"k":[1,2]}); delete and recreate the object to change it`,
				`spec.labels: Invalid value: {"a":"<&>"}: create-only field: it cannot be changed after creation (was {"a":"1","b":"2"}); delete and recreate the object to change it`,
			},
		},
		{
			name: "map key in the path",
			old:  &instance{Spec: instanceSpec{Volumes: map[string]volume{"data disk": {Size: 1}}}},
			new:  &instance{Spec: instanceSpec{Volumes: map[string]volume{"data disk": {Size: 2}}}},
			want: []string{`spec.volumes[data disk].size: Invalid value: 2: create-only field: it cannot be changed after creation (was 1); delete and recreate the object to change it`},
		},
		{
			name: "read-only changed",
			old:  &instance{Status: instanceStatus{DashboardURL: "https://a"}},
			new:  &instance{Status: instanceStatus{DashboardURL: "https://b"}},
			want: []string{`status.dashboardURL: Forbidden: read-only field: set by lockstep, not by users (was "https://a", now "https://b"); leave it as it was`},
		},
		{
			name: "read-only set and removed",
			old:  &instance{Status: instanceStatus{ObservedGeneration: 2}},
			new:  &instance{Status: instanceStatus{LastOperation: &operation{Verb: "update"}}},
			want: []string{
				`status.observedGeneration: Forbidden: read-only field: set by lockstep, not by users (was 2, now not set); leave it as it was`,
				`status.lastOperation: Forbidden: read-only field: set by lockstep, not by users (was not set, now {"verb":"update"}); leave it as it was`,
			},
		},
		{
			name:   "read-only on create",
			new:    &instance{Status: instanceStatus{Conditions: []condition{{Type: "Ready", Status: "True"}}}},
			create: true,
			want:   []string{`status.conditions: Forbidden: read-only field: set by lockstep, not by users (now [{"type":"Ready","status":"True","lastTransitionTime":null}]); leave it out`},
		},
	}
	p, err := For[*instance]()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs field.ErrorList
			if tt.create {
				errs = p.ValidateCreate(tt.new)
			} else {
				errs = p.ValidateUpdate(tt.old, tt.new)
			}
			got := []string{}
			for _, e := range errs {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMessagesThroughAPIStatus(t *testing.T) {
	errs := ValidateUpdate(&instance{Spec: instanceSpec{ServiceName: "small"}}, &instance{Spec: instanceSpec{ServiceName: "large"}})
	status := apierrors.NewInvalid(schema.GroupKind{Group: "lockstep.dev", Kind: "ServiceInstance"}, "db", errs)
	assert.Equal(t, `ServiceInstance.lockstep.dev "db" is invalid: spec.serviceName: Invalid value: "large": create-only field: it cannot be changed after creation (was "small"); delete and recreate the object to change it`, status.Error())
	require.Len(t, status.ErrStatus.Details.Causes, 1)
	assert.Equal(t, "spec.serviceName", status.ErrStatus.Details.Causes[0].Field)
}

func TestLongValuesAreCut(t *testing.T) {
	long := strings.Repeat("x", 500)
	errs := ValidateUpdate(&instance{Spec: instanceSpec{ServiceName: "a" + long}}, &instance{Spec: instanceSpec{ServiceName: "b" + long}})
	require.Len(t, errs, 1)
	assert.Equal(t, "b"+strings.Repeat("x", maxShown-4)+"...", errs[0].BadValue)
	assert.Contains(t, errs[0].Detail, `(was "a`+strings.Repeat("x", maxShown-5)+`...);`)
	assert.Less(t, len(errs[0].Error()), 2*maxShown+200)

	items := make([]string, 100)
	for i := range items {
		items[i] = "zone-with-a-long-name"
	}
	errs = ValidateUpdate(&instance{}, &instance{Spec: instanceSpec{Zones: items}})
	require.Len(t, errs, 1)
	body := errs[0].ErrorBody()
	assert.True(t, strings.HasPrefix(body, `Invalid value: ["zone-with-a-long-name","zone-with-a-long-name",`), body)
	assert.Contains(t, body, `"zone-with-a-long-na...: create-only field`)
	assert.Less(t, len(body), maxShown+200)
	assert.Equal(t, shownValue(`["zone-with-a-long-name","zone-with-a-long-name","zone-with-a-long-name","zone-with-a-long-name","zone-with-a-long-na...`), errs[0].BadValue)
}

func TestTruncateKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("é", 100) // 2 bytes each
	cut := truncate(s)
	assert.True(t, strings.HasSuffix(cut, "..."))
	assert.LessOrEqual(t, len(cut), maxShown)
	assert.Equal(t, strings.Repeat("é", (maxShown-3)/2)+"...", cut)
	assert.Equal(t, "short", truncate("short"))
}

type addrKeyed struct {
	ByAddr map[netip.Addr]leaf `json:"byAddr"`
}

func TestKeyText(t *testing.T) {
	// netip.Addr is a struct: its key text comes from MarshalText, as in
	// JSON. Struct keys have no order, so such a map cannot hold rules.
	assert.Equal(t, "10.0.0.1", keyText(reflect.ValueOf(netip.MustParseAddr("10.0.0.1"))))
	assert.Equal(t, "{a b}", keyText(reflect.ValueOf(structKey{"a", "b"})))
	_, err := For[addrKeyed]()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "map type map[netip.Addr]validate.leaf holds tagged fields but its key type has no order")

	type numKeyed struct {
		ByNum  map[uint8]leaf   `json:"byNum"`
		ByBool map[bool]leaf    `json:"byBool"`
		ByFlt  map[float64]leaf `json:"byFlt"`
	}
	old := &numKeyed{
		ByNum:  map[uint8]leaf{7: {ID: "a"}, 200: {ID: "a"}},
		ByBool: map[bool]leaf{true: {ID: "a"}, false: {ID: "a"}},
		ByFlt:  map[float64]leaf{1.5: {ID: "a"}, -2: {ID: "a"}},
	}
	new := &numKeyed{
		ByNum:  map[uint8]leaf{7: {ID: "b"}, 200: {ID: "b"}},
		ByBool: map[bool]leaf{true: {ID: "b"}, false: {ID: "b"}},
		ByFlt:  map[float64]leaf{1.5: {ID: "b"}, -2: {ID: "b"}},
	}
	assert.Equal(t, []string{
		"byNum[7].id changed", "byNum[200].id changed",
		"byBool[false].id changed", "byBool[true].id changed",
		"byFlt[-2].id changed", "byFlt[1.5].id changed",
	}, describe(ValidateUpdate(old, new)))
}
