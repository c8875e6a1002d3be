package render

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/gobuffalo/flect"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Group is the API group of every typed kind, and Version their one
// version.
const (
	Group   = "services.lockstep.dev"
	Version = "v1alpha1"
)

// Categories are the categories of every typed kind: `kubectl get
// lockstep` lists them with lockstep's other kinds, `kubectl get
// lockstep-services` every object of every typed kind.
var Categories = []string{"lockstep", "lockstep-services"}

// Names are a typed kind's names.
type Names struct {
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind"`
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular"`
	ShortNames []string `json:"shortNames,omitempty"`
}

// CRDName is the name of the kind's CustomResourceDefinition.
func (n Names) CRDName() string { return n.Plural + "." + Group }

// kindName matches a kind as the administrator may give it: CamelCase
// letters and digits, starting with a capital letter.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// maxKind leaves room for "List" in a list kind, which must be a DNS label
// (63 characters) when lowercased.
const maxKind = 59

// NamesFor returns the names of the typed kind of a service: the kind
// given (an administrator's override, for two services of the same name)
// or else one made from the service name ("postgresql-db" becomes
// PostgresqlDb), its plural and singular, and a short name made of the
// initials of the service name's words when it is not taken. taken holds
// the names (plurals, singulars, short names and lowercased kinds) that
// other kinds already use, in the group of typed kinds and among the short
// names the cluster's clients know. The error says what to do.
func NamesFor(serviceName, kind string, taken map[string]bool) (Names, error) {
	words := splitWords(serviceName)
	if kind == "" {
		if len(words) == 0 {
			return Names{}, fmt.Errorf("service name %q has no letters or digits to make a kind name of; give the kind a name", serviceName)
		}
		var b strings.Builder
		for _, w := range words {
			r := []rune(w)
			b.WriteString(string(unicode.ToUpper(r[0])) + string(r[1:]))
		}
		kind = b.String()
		if !kindName.MatchString(kind) {
			return Names{}, fmt.Errorf("service name %q makes kind name %q, which is not a kind name (ASCII letters and digits, starting with a letter); give the kind a name", serviceName, kind)
		}
	} else if !kindName.MatchString(kind) {
		return Names{}, fmt.Errorf("kind name %q is not a kind name: use ASCII letters and digits in CamelCase, starting with a capital letter", kind)
	}
	if len(kind) > maxKind {
		return Names{}, fmt.Errorf("kind name %q is longer than %d characters; give the kind a shorter name", kind, maxKind)
	}
	if LockstepKind(kind) {
		return Names{}, fmt.Errorf("kind name %q is the name of one of lockstep.dev's own kinds, which the journal and the locks could not tell from it; give the kind another name", kind)
	}
	lower := strings.ToLower(kind)
	n := Names{Kind: kind, ListKind: kind + "List", Singular: lower, Plural: strings.ToLower(flect.Pluralize(kind))}
	for _, name := range []string{n.Plural, n.Singular} {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return Names{}, fmt.Errorf("kind %s: its resource name %q is not usable: %s; give the kind another name", kind, name, strings.Join(errs, "; "))
		}
		if taken[name] {
			return Names{}, fmt.Errorf("kind %s: its resource name %q is taken by another kind; give the kind another name", kind, name)
		}
	}
	if short := shortName(words); short != "" && short != n.Plural && short != n.Singular && !taken[short] &&
		len(validation.IsDNS1035Label(short)) == 0 {
		n.ShortNames = []string{short}
	}
	return n, nil
}

// LockstepKind reports whether kind is the name of one of lockstep.dev's
// own kinds (ServiceInstance, ServiceBinding, ...), which no typed kind may
// take: a BrokerOperation names its target by kind.
func LockstepKind(kind string) bool {
	_, ok := lockstepKinds()[kind]
	return ok
}

// lockstepKinds are the kinds of lockstep.dev, read once.
var lockstepKinds = sync.OnceValue(func() map[string]reflect.Type {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err) // static registration; cannot fail at run time
	}
	return scheme.KnownTypes(v1alpha1.GroupVersion)
})

// splitWords splits a service name into its words: runs of ASCII letters
// and digits.
func splitWords(name string) []string {
	return strings.FieldsFunc(name, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	})
}

// shortName is the lowercased initials of two or more words; none for a
// one-word name, whose initial alone would clash too easily.
func shortName(words []string) string {
	if len(words) < 2 {
		return ""
	}
	var b strings.Builder
	for _, w := range words {
		b.WriteByte(byte(unicode.ToLower(rune(w[0]))))
	}
	return b.String()
}
