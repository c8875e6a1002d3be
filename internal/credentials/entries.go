package credentials

import "github.com/lockstep-dev/lockstep/api/v1alpha1"

// The well-known entries of the Service Binding for Kubernetes
// specification that lockstep adds to a binding's Secret when the broker
// did not send them.
const (
	EntryType     = "type"
	EntryProvider = "provider"
)

// WellKnown are the entries lockstep may add to what the broker sent.
var WellKnown = []string{EntryType, EntryProvider}

// Offering is what a binding's well-known entries are derived from: the
// broker that holds the binding and the service it binds, as the broker's
// catalog describes it.
type Offering struct {
	// Provider is the ServiceBroker's name.
	Provider string
	// Service is the service's name in the catalog, and Tags its tags.
	Service string
	Tags    []string
}

// BindingType is the binding's entry "type": spec.bindingType, else the
// service's first non-empty tag, else the service's name.
func BindingType(b *v1alpha1.ServiceBinding, o Offering) string {
	if b.Spec.BindingType != "" {
		return b.Spec.BindingType
	}
	for _, tag := range o.Tags {
		if tag != "" {
			return tag
		}
	}
	return o.Service
}

// addWellKnown adds the entries "type" and "provider" to data where the
// broker sent no such key and there is a value for it: a key the broker
// sent is kept as it sent it.
func addWellKnown(data map[string][]byte, b *v1alpha1.ServiceBinding, o Offering) {
	for key, value := range map[string]string{EntryType: BindingType(b, o), EntryProvider: o.Provider} {
		if _, sent := data[key]; !sent && value != "" {
			data[key] = []byte(value)
		}
	}
}
