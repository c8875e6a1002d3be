package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

var update = flag.Bool("update", false, "rewrite the golden files of the corpus")

// corpusService reads a service of the corpus: a catalog entry as a broker
// publishes it.
func corpusService(t testing.TB, file string) *osbapi.Service {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var svc osbapi.Service
	require.NoError(t, json.Unmarshal(raw, &svc), file)
	return &svc
}

// corpusFiles are the corpus's services.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// golden is what a golden file holds of a rendering: the CRD's names, the
// schema of spec.plan and spec.parameters, the rules on spec that the
// renderer made (ServiceInstance's own are left out), and the report.
type golden struct {
	Names      apiextensionsv1.CustomResourceDefinitionNames `json:"names"`
	Labels     map[string]string                             `json:"labels"`
	Plan       apiextensionsv1.JSONSchemaProps               `json:"plan"`
	Parameters apiextensionsv1.JSONSchemaProps               `json:"parameters"`
	SpecRules  apiextensionsv1.ValidationRules               `json:"specRules,omitempty"`
	Report     *Report                                       `json:"report"`
}

// TestCorpus renders every service of the corpus and compares the result
// with its golden file (go test -run TestCorpus -update rewrites them);
// each CRD passes the API server's CRD validation.
func TestCorpus(t *testing.T) {
	for _, file := range corpusFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			svc := corpusService(t, file)
			crd, report, err := Render("cloud", svc, Options{Taken: Taken{"pvc": "resource persistentvolumeclaims (v1)"}})
			require.NoError(t, err)
			assert.Empty(t, Validate(crd), "the API server would refuse the CRD")

			root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
			spec := root.Properties["spec"]
			g := golden{
				Names: crd.Spec.Names, Labels: crd.Labels, Plan: spec.Properties["plan"],
				Parameters: spec.Properties["parameters"], Report: report,
			}
			for _, r := range spec.XValidations {
				if !strings.Contains(r.Message, "create-only field") {
					g.SpecRules = append(g.SpecRules, r)
				}
			}
			got, err := yaml.Marshal(g)
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "no golden file: run go test -run TestCorpus -update")
			assert.Equal(t, string(want), string(got), "run go test -run TestCorpus -update and review the difference")
		})
	}
}

// TestRenderTakesSpecAndStatusFromServiceInstance checks the parts of the
// CRD that come from the generated ServiceInstance CRD.
func TestRenderTakesSpecAndStatusFromServiceInstance(t *testing.T) {
	si, err := serviceInstance()
	require.NoError(t, err)
	crd, _, err := Render("cloud", &osbapi.Service{ID: "id-1", Name: "postgresql-db", Plans: []osbapi.Plan{{ID: "p", Name: "small"}}}, Options{})
	require.NoError(t, err)

	v := crd.Spec.Versions[0]
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	assert.NotNil(t, v.Subresources.Status)
	siRoot := si.Spec.Versions[0].Schema.OpenAPIV3Schema
	root := v.Schema.OpenAPIV3Schema
	status := root.Properties["status"]
	assert.Equal(t, "What the broker confirmed of the PostgresqlDb: as a ServiceInstance's status.", status.Description, "the description names the kind, not a Go type")
	status.Description = siRoot.Properties["status"].Description
	assert.Equal(t, siRoot.Properties["status"], status)
	for _, name := range mirrored {
		want := siRoot.Properties["spec"].Properties[name]
		got := root.Properties["spec"].Properties[name]
		assert.Equal(t, want.Type, got.Type, name)
		assert.Equal(t, want.Description, got.Description, name)
		assert.Len(t, got.XValidations, len(want.XValidations), name)
	}
	var columns []string
	for _, c := range v.AdditionalPrinterColumns {
		columns = append(columns, c.Name)
		if c.Name == "Reason" {
			assert.Equal(t, int32(1), c.Priority, "Reason shows with -o wide")
		}
	}
	assert.Equal(t, []string{"Plan", "Ready", "In Sync", "Reason", "Age"}, columns)
	assert.Equal(t, "postgresqldbs.services.lockstep.dev", crd.Name)
	assert.Equal(t, "id-1", crd.Annotations[AnnotationOfferingID])
	assert.Equal(t, "id-1", crd.Labels[LabelOfferingID])
	assert.Equal(t, []string{"lockstep", "lockstep-services"}, crd.Spec.Names.Categories)
	for _, r := range root.Properties["spec"].XValidations {
		assert.NotContains(t, r.Message, "ServiceInstance", "messages name the typed kind")
	}
}

func TestNamesFor(t *testing.T) {
	for _, tc := range []struct {
		name, service string
		given         Given
		taken         Taken
		want          Names
		err           string
	}{
		{name: "words", service: "postgresql-db",
			want: Names{Kind: "PostgresqlDb", ListKind: "PostgresqlDbList", Plural: "postgresqldbs", Singular: "postgresqldb", ShortNames: []string{"pd"}}},
		{name: "one word: its first letter and consonants", service: "redis",
			want: Names{Kind: "Redis", ListKind: "RedisList", Plural: "redis", Singular: "redis", ShortNames: []string{"rds"}}},
		{name: "one word, a consonant twice", service: "stateful",
			want: Names{Kind: "Stateful", ListKind: "StatefulList", Plural: "statefuls", Singular: "stateful", ShortNames: []string{"stf"}}},
		{name: "a short word makes none", service: "db",
			want: Names{Kind: "Db", ListKind: "DbList", Plural: "dbs", Singular: "db"}},
		{name: "dots and underscores", service: "p.mysql_db",
			want: Names{Kind: "PMysqlDb", ListKind: "PMysqlDbList", Plural: "pmysqldbs", Singular: "pmysqldb", ShortNames: []string{"pmd"}}},
		{name: "short name taken: none", service: "postgresql-db", taken: Taken{"pd": "resource poddisruptions (v1)"},
			want: Names{Kind: "PostgresqlDb", ListKind: "PostgresqlDbList", Plural: "postgresqldbs", Singular: "postgresqldb"}},
		{name: "kind given: its words first", service: "postgresql-db", given: Given{Kind: "TeamDatabase"},
			want: Names{Kind: "TeamDatabase", ListKind: "TeamDatabaseList", Plural: "teamdatabases", Singular: "teamdatabase", ShortNames: []string{"td"}}},
		{name: "kind given, its short name taken: the service's", service: "postgresql-db", given: Given{Kind: "TeamDatabase"}, taken: Taken{"td": "x"},
			want: Names{Kind: "TeamDatabase", ListKind: "TeamDatabaseList", Plural: "teamdatabases", Singular: "teamdatabase", ShortNames: []string{"pd"}}},
		{name: "an acronym in the kind", service: "x", given: Given{Kind: "HTTPServer"},
			want: Names{Kind: "HTTPServer", ListKind: "HTTPServerList", Plural: "httpservers", Singular: "httpserver", ShortNames: []string{"hs"}}},
		{name: "plural given", service: "pgdemo", given: Given{Plural: "pgdemos"},
			want: Names{Kind: "Pgdemo", ListKind: "PgdemoList", Plural: "pgdemos", Singular: "pgdemo", ShortNames: []string{"pgd"}}},
		{name: "the plural made", service: "pgdemo",
			want: Names{Kind: "Pgdemo", ListKind: "PgdemoList", Plural: "pgdemoes", Singular: "pgdemo", ShortNames: []string{"pgd"}}},
		{name: "short names given", service: "quick", given: Given{Kind: "QuickDatabase", ShortNames: []string{"qdb", "quickdb"}},
			want: Names{Kind: "QuickDatabase", ListKind: "QuickDatabaseList", Plural: "quickdatabases", Singular: "quickdatabase", ShortNames: []string{"qdb", "quickdb"}}},
		{name: "a short name given is taken: refused, with why", service: "quick", given: Given{ShortNames: []string{"po", "qk"}}, taken: Taken{"po": "resource pods (v1)"},
			want: Names{Kind: "Quick", ListKind: "QuickList", Plural: "quicks", Singular: "quick", ShortNames: []string{"qk"},
				Refused: []string{"short name po: resource pods (v1) has it"}}},
		{name: "a short name given is the singular", service: "quick", given: Given{ShortNames: []string{"quick"}},
			want: Names{Kind: "Quick", ListKind: "QuickList", Plural: "quicks", Singular: "quick", Refused: []string{"short name quick: it is the kind's plural or singular"}}},
		{name: "plural taken", service: "postgresql-db", taken: Taken{"postgresqldbs": "kind PostgresqlDb of service \"other\""}, err: `resource name "postgresqldbs" is taken by kind PostgresqlDb of service "other"`},
		{name: "plural given is served", service: "x", given: Given{Plural: "pods"}, taken: Taken{"pods": "resource pods (v1)"}, err: `"pods" is taken by resource pods (v1)`},
		{name: "singular served", service: "secret", taken: Taken{"secret": "resource secrets (v1)"}, err: `"secret" is taken by resource secrets (v1)`},
		{name: "leading digit", service: "3scale", err: "not a kind name"},
		{name: "no letters", service: "--", err: "no letters or digits"},
		{name: "bad override", service: "x", given: Given{Kind: "team-db"}, err: `kind name "team-db" is not a kind name`},
		{name: "too long", service: strings.Repeat("a", 60), err: "longer than 59"},
		{name: "lockstep's own kind", service: "service-binding", err: `kind name "ServiceBinding" is the name of one of lockstep.dev's own kinds`},
		{name: "lockstep's own kind given", service: "x", given: Given{Kind: "BrokerOperation"}, err: "lockstep.dev's own kinds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NamesFor(tc.service, tc.given, tc.taken)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestServedNames(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", ShortNames: []string{"po"}},
			{Name: "pods/status", Kind: "Pod"},
		}},
		{GroupVersion: "batch.example.com/v1", APIResources: []metav1.APIResource{
			{Name: "queuedjobs", SingularName: "queuedjob", Kind: "QueuedJob", ShortNames: []string{"qd"}},
		}},
		{GroupVersion: Group + "/" + Version, APIResources: []metav1.APIResource{
			{Name: "quicks", SingularName: "quick", Kind: "Quick", ShortNames: []string{"qck"}},
		}},
	}
	assert.Equal(t, Taken{
		"pods": "resource pods (v1)", "pod": "resource pods (v1)", "po": "resource pods (v1)",
		"queuedjobs": "resource queuedjobs.batch.example.com (batch.example.com/v1)", "queuedjob": "resource queuedjobs.batch.example.com (batch.example.com/v1)",
		"qd": "resource queuedjobs.batch.example.com (batch.example.com/v1)",
	}, ServedNames(lists), "subresources and the typed kinds' own group are left out")
}

func TestPlanRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		service    bool
		updateable map[string]bool
		want       string
	}{
		{name: "every plan updateable", service: true, updateable: map[string]bool{"a": true}, want: ""},
		{name: "none", service: false, updateable: map[string]bool{"a": false}, want: "self == oldSelf"},
		{name: "one plan may change", service: false, updateable: map[string]bool{"a": false, "b": true}, want: `self == oldSelf || oldSelf in ["b"]`},
		{name: "one plan may not", service: true, updateable: map[string]bool{"a": false, "b": true}, want: `self == oldSelf || !(oldSelf in ["a"])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRule("Db", tc.service, tc.updateable)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Rule)
			assert.Contains(t, got.Message, "create a new Db")
		})
	}
}
