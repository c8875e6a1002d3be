package render

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/gobuffalo/flect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// Refused are the short names given that the kind does not get, each
	// with why ("short name qd: resource queuedjobs.batch.example.com has
	// it").
	Refused []string `json:"refused,omitempty"`
}

// CRDName is the name of the kind's CustomResourceDefinition.
func (n Names) CRDName() string { return n.Plural + "." + Group }

// kindName matches a kind as the administrator may give it: CamelCase
// letters and digits, starting with a capital letter.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// maxKind leaves room for "List" in a list kind, which must be a DNS label
// (63 characters) when lowercased.
const maxKind = 59

// Given are the names an administrator gives a kind (a ServiceBroker's
// spec.typedKinds); each empty where not given.
type Given struct {
	Kind       string
	Plural     string
	ShortNames []string
}

// Taken are names other resources have, each with what has it (`kind
// PostgresqlDb of service "postgresql-db"`, "resource pods (v1)"): the
// names of the other typed kinds, and those of every resource the
// cluster serves (ServedNames).
type Taken map[string]string

// NamesFor returns the names of the typed kind of a service: the kind
// given (an administrator's, for two services of the same name) or else
// one made from the service name ("postgresql-db" becomes PostgresqlDb);
// the plural given or else the kind's English plural, lowercased; the
// singular; and the short names given or else one made from the words of
// the kind given or of the service name (the initials of two or more
// words, QuickDatabase makes qd; a word's first letter and its next
// consonants, quick makes qck). A name in taken refuses the kind (the
// error says what has it) where it is the kind's, plural or singular; a
// short name in taken is not given: a short name given is listed in
// Names.Refused with why, one made is passed over for the next. The
// error says what to do.
func NamesFor(serviceName string, given Given, taken Taken) (Names, error) {
	words := splitWords(serviceName)
	kind := given.Kind
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
	n := Names{Kind: kind, ListKind: kind + "List", Singular: lower, Plural: given.Plural}
	if n.Plural == "" {
		n.Plural = PluralOf(kind)
	}
	for _, name := range []string{n.Plural, n.Singular} {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return Names{}, fmt.Errorf("kind %s: its resource name %q is not usable: %s; give the kind another name", kind, name, strings.Join(errs, "; "))
		}
		if by, ok := taken[name]; ok {
			return Names{}, &TakenError{Kind: kind, Name: name, By: by}
		}
	}
	usable := func(short string) string {
		switch {
		case short == n.Plural || short == n.Singular:
			return "it is the kind's plural or singular"
		case len(validation.IsDNS1035Label(short)) > 0:
			return "it is not a DNS label"
		case taken[short] != "":
			return taken[short] + " has it"
		}
		return ""
	}
	if len(given.ShortNames) > 0 {
		for _, short := range given.ShortNames {
			if why := usable(short); why != "" {
				n.Refused = append(n.Refused, fmt.Sprintf("short name %s: %s", short, why))
				continue
			}
			n.ShortNames = append(n.ShortNames, short)
		}
		return n, nil
	}
	for _, short := range shortNames(splitCamel(given.Kind), words) {
		if usable(short) == "" {
			n.ShortNames = []string{short}
			break
		}
	}
	return n, nil
}

// PluralOf is the plural a kind gets when none is given: its English
// plural, lowercased.
func PluralOf(kind string) string { return strings.ToLower(flect.Pluralize(kind)) }

// TakenError says that a name of a kind (its plural or singular) is
// another resource's.
type TakenError struct {
	Kind, Name string
	// By is what has the name.
	By string
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("kind %s: its resource name %q is taken by %s; give the kind another name (or plural)", e.Kind, e.Name, e.By)
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

// shortNames are the short names made from words, in order: from each
// list of words, the lowercased initials of two or more words
// (QuickDatabase, postgresql-db: qd, pd), or of one word its first letter
// and the consonants after it that are not in the name yet, at most three
// letters (quick: qck, stateful: stf); a word of fewer than four letters
// is short enough as it is and makes none.
func shortNames(lists ...[]string) []string {
	var out []string
	for _, words := range lists {
		var short string
		switch {
		case len(words) >= 2:
			var b strings.Builder
			for _, w := range words {
				b.WriteByte(byte(unicode.ToLower(rune(w[0]))))
			}
			short = b.String()
		case len(words) == 1 && len(words[0]) >= 4:
			short = consonants(strings.ToLower(words[0]))
		}
		if short != "" && !slices.Contains(out, short) {
			out = append(out, short)
		}
	}
	return out
}

// consonants is a word's first letter and the consonants after it that
// are not in the result yet, at most three letters.
func consonants(word string) string {
	out := []byte{word[0]}
	for i := 1; i < len(word) && len(out) < 3; i++ {
		c := word[i]
		if strings.IndexByte("aeiouy", c) >= 0 || bytes.IndexByte(out, c) >= 0 {
			continue
		}
		out = append(out, c)
	}
	if len(out) < 2 {
		return ""
	}
	return string(out)
}

// splitCamel splits a CamelCase kind into its words: QuickDatabase is
// Quick, Database; HTTPServer is HTTP, Server; digits stay with the word
// before them.
func splitCamel(kind string) []string {
	var words []string
	start := 0
	for i := 1; i < len(kind); i++ {
		prev, cur := rune(kind[i-1]), rune(kind[i])
		next := rune(0)
		if i+1 < len(kind) {
			next = rune(kind[i+1])
		}
		if unicode.IsUpper(cur) && (!unicode.IsUpper(prev) || unicode.IsLower(next)) {
			words = append(words, kind[start:i])
			start = i
		}
	}
	if start < len(kind) {
		words = append(words, kind[start:])
	}
	return words
}

// ServedNames are the names by which kubectl finds the resources that
// lists (the API server's discovery) serve outside the group of typed
// kinds: each resource's plural, singular, short names and lowercased
// kind, with the resource that has it. A typed kind with one of them
// would be hidden behind that resource, or make kubectl ask which one
// is meant.
func ServedNames(lists []*metav1.APIResourceList) Taken {
	taken := Taken{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group == Group {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			by := "resource " + r.Name
			if gv.Group != "" {
				by += "." + gv.Group
			}
			by += " (" + list.GroupVersion + ")"
			for _, name := range append([]string{r.Name, r.SingularName, strings.ToLower(r.Kind)}, r.ShortNames...) {
				if _, ok := taken[name]; name != "" && !ok {
					taken[name] = by
				}
			}
		}
	}
	return taken
}
