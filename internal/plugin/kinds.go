package plugin

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// kindFor is the kind of lockstep's a user named in KIND/NAME: one of
// lockstep.dev's (kinds), or a typed kind by its kind, plural, singular
// or short name, which the API server's discovery knows (kubectl's own
// lookup, with its discovery cache). Any other kind is refused: lockstep
// does not manage it.
func (s *session) kindFor(word string) (kindRef, error) {
	lower := strings.ToLower(word)
	if k, ok := kinds[lower]; ok {
		return k, nil
	}
	mapper, err := s.flags.ToRESTMapper()
	if err != nil {
		return kindRef{}, err
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Resource: lower})
	if err != nil {
		return kindRef{}, &unknownKindError{word: word}
	}
	switch {
	case gvk.Group == render.Group:
		return kindRef{gvk: schema.GroupVersionKind{Group: render.Group, Version: render.Version, Kind: gvk.Kind}}, nil
	case gvk.Group == v1alpha1.GroupVersion.Group && gvk.Kind == string(v1alpha1.KindServiceInstance):
		return instanceKind, nil
	case gvk.Group == v1alpha1.GroupVersion.Group && gvk.Kind == string(v1alpha1.KindServiceBinding):
		return bindingKind, nil
	}
	return kindRef{}, fmt.Errorf("%q is kind %s (%s), which lockstep does not carry to a broker: %s", word, gvk.Kind, gvk.GroupVersion(), objectsHelp)
}

// typedKinds are the typed kinds the API server serves, from its
// discovery; none when it serves the group of typed kinds not at all.
func (s *session) typedKinds() ([]kindRef, error) {
	dc, err := s.flags.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("reading which typed kinds the API server serves: %w", err)
	}
	if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == render.Group }) {
		return nil, nil // no typed kind is served
	}
	list, err := dc.ServerResourcesForGroupVersion(render.Group + "/" + render.Version)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading which typed kinds the API server serves: %w", err)
	}
	var out []kindRef
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			out = append(out, kindRef{gvk: schema.GroupVersionKind{Group: render.Group, Version: render.Version, Kind: r.Kind}})
		}
	}
	return out, nil
}

// unknownKindError says that the API server serves no kind of that name.
type unknownKindError struct{ word string }

func (e *unknownKindError) Error() string {
	return fmt.Sprintf("%q is no kind the API server serves: %s", e.word, objectsHelp)
}
