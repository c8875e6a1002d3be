package validate

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The test types below are shaped like lockstep's API types, with a field
// of every shape the engine handles.

type typeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type objectMeta struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type instance struct {
	typeMeta `json:",inline"`
	Metadata objectMeta     `json:"metadata,omitempty"`
	Spec     instanceSpec   `json:"spec"`
	Status   instanceStatus `json:"status,omitempty"`
}

type instanceSpec struct {
	ServiceName string                `json:"serviceName" lockstep:"createonly"`
	PlanName    string                `json:"planName"`
	Replicas    *int32                `json:"replicas,omitempty" lockstep:"createonly"`
	Enabled     bool                  `json:"enabled,omitempty" lockstep:"createonly"`
	Parameters  *runtime.RawExtension `json:"parameters,omitempty"`
	Secret      *runtime.RawExtension `json:"secret,omitempty" lockstep:"createonly"`
	Network     *network              `json:"network,omitempty"`
	Items       []item                `json:"items,omitempty"`
	Zones       []string              `json:"zones,omitempty" lockstep:"createonly"`
	Labels      map[string]string     `json:"labels,omitempty" lockstep:"createonly"`
	Volumes     map[string]volume     `json:"volumes,omitempty"`
	Placement   placement             `json:"placement,omitempty" lockstep:"createonly"`
	Size        resource.Quantity     `json:"size,omitempty" lockstep:"createonly"`
	Schema      *apiextensionsv1.JSON `json:"schema,omitempty" lockstep:"createonly"`
	Ports       [2]port               `json:"ports,omitempty"`
	Notes       string                `json:"-"`
}

type network struct {
	VPC  string `json:"vpc" lockstep:"createonly"`
	CIDR string `json:"cidr,omitempty"`
}

type item struct {
	ID    string `json:"id" lockstep:"createonly"`
	Name  string `json:"name,omitempty"`
	Token string `json:"token,omitempty" lockstep:"readonly"`
}

type volume struct {
	Size   int64    `json:"size" lockstep:"createonly"`
	Class  *string  `json:"class,omitempty" lockstep:"createonly"`
	Mounts []string `json:"mounts,omitempty"`
}

type placement struct {
	Region string            `json:"region,omitempty"`
	Racks  []string          `json:"racks,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
	// Set by lockstep even when a user creates the placement.
	Assigned string `json:"assigned,omitempty" lockstep:"readonly"`
}

type port struct {
	Number int32  `json:"number,omitempty" lockstep:"createonly"`
	Name   string `json:"name,omitempty"`
}

type instanceStatus struct {
	Conditions         []condition `json:"conditions,omitempty" lockstep:"readonly"`
	DashboardURL       string      `json:"dashboardURL,omitempty" lockstep:"readonly"`
	ObservedGeneration int64       `json:"observedGeneration,omitempty" lockstep:"readonly"`
	LastOperation      *operation  `json:"lastOperation,omitempty" lockstep:"readonly"`
	Message            string      `json:"message,omitempty"`
}

type condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

type operation struct {
	Verb  string       `json:"verb"`
	Start *metav1.Time `json:"start,omitempty"`
}

// newInstance returns a fully populated instance; every call returns a
// new, deeply equal object that shares no memory with the others.
func newInstance() *instance {
	replicas := int32(3)
	class := "fast"
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &instance{
		typeMeta: typeMeta{Kind: "Instance", APIVersion: "lockstep.dev/v1alpha1"},
		Metadata: objectMeta{Name: "db", Labels: map[string]string{"team": "a"}},
		Spec: instanceSpec{
			ServiceName: "postgres",
			PlanName:    "small",
			Replicas:    &replicas,
			Enabled:     true,
			Parameters:  &runtime.RawExtension{Raw: []byte(`{"a":1,"b":[1,2,3]}`)},
			Secret:      &runtime.RawExtension{Raw: []byte(`{"key":"value"}`)},
			Network:     &network{VPC: "vpc-1", CIDR: "10.0.0.0/16"},
			Items: []item{
				{ID: "i0", Name: "zero", Token: "t0"},
				{ID: "i1", Name: "one"},
				{ID: "i2", Name: "two", Token: "t2"},
			},
			Zones:  []string{"z1", "z2"},
			Labels: map[string]string{"app": "db", "tier": "data", "team": "a"},
			Volumes: map[string]volume{
				"data": {Size: 10, Class: &class, Mounts: []string{"/data"}},
				"logs": {Size: 1},
			},
			Placement: placement{Region: "eu", Racks: []string{"r1"}, Extra: map[string]string{"k": "v"}, Assigned: "node-1"},
			Size:      resource.MustParse("10Gi"),
			Schema:    &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)},
			Ports:     [2]port{{Number: 80, Name: "http"}, {Number: 443, Name: "https"}},
		},
		Status: instanceStatus{
			Conditions: []condition{
				{Type: "Ready", Status: "True", LastTransitionTime: start},
				{Type: "InSync", Status: "True", LastTransitionTime: start},
			},
			DashboardURL:       "https://dash.example/db",
			ObservedGeneration: 4,
			LastOperation:      &operation{Verb: "provision", Start: &start},
		},
	}
}
