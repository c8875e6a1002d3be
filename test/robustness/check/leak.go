package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Leaks checks that everything a broker holds is accounted for: an object
// in the API server has its id, or it was let go (detached or observed,
// or its instance was).
func Leaks(s Snapshot) []Violation {
	released := releasedIDs(s)
	claimed := map[string]bool{}
	for _, si := range s.Instances {
		claimed[si.Spec.BrokerName+"/"+si.Spec.ExternalID] = true
	}
	for _, sb := range s.Bindings {
		claimed["binding/"+sb.Spec.ExternalID] = true
	}
	var out []Violation
	for _, name := range sortedKeys(s.Brokers) {
		b := s.Brokers[name]
		for _, id := range sortedKeys(b.Instances) {
			if !claimed[name+"/"+id] && !released[id] {
				out = append(out, Violation{Invariant: NoLeak, Object: fmt.Sprintf("instance %s at broker %q", id, name), ExternalID: id,
					Message: "the broker holds an instance that no object accounts for, and that was never detached or observed"})
			}
		}
		for _, key := range sortedKeys(b.Bindings) {
			instanceID, bindingID, _ := strings.Cut(key, "/")
			if !claimed["binding/"+bindingID] && !released[bindingID] && !released[instanceID] {
				out = append(out, Violation{Invariant: NoLeak, Object: fmt.Sprintf("binding %s of instance %s at broker %q", bindingID, instanceID, name), ExternalID: bindingID,
					Message: "the broker holds a binding that no object accounts for, and that was never detached or observed"})
			}
		}
	}
	return out
}

// releasedIDs are the ids that were under a policy that keeps the broker's
// resource when the object goes (detach-on-delete, observe) at some point:
// what a request set, and what objects at the end say.
func releasedIDs(s Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, r := range s.Requests {
		if r.Policy == v1alpha1.PolicyDetachOnDelete || r.Policy == v1alpha1.PolicyObserve {
			out[r.ExternalID] = true
		}
	}
	for _, si := range s.Instances {
		if v1alpha1.KeepsBrokerOnDelete(&si) {
			out[si.Spec.ExternalID] = true
		}
	}
	for _, sb := range s.Bindings {
		if v1alpha1.KeepsBrokerOnDelete(&sb) {
			out[sb.Spec.ExternalID] = true
		}
	}
	return out
}

// DoubleProvisions checks that no broker created an instance or a binding
// twice under one id, and that no two objects claim one id.
func DoubleProvisions(s Snapshot) []Violation {
	var out []Violation
	for _, name := range sortedKeys(s.Brokers) {
		b := s.Brokers[name]
		for _, id := range sortedKeys(b.Creations) {
			if n := b.Creations[id]; n > 1 {
				out = append(out, Violation{Invariant: NoDoubleProvision, Object: fmt.Sprintf("%s at broker %q", id, name), ExternalID: lastPart(id),
					Message: fmt.Sprintf("the broker created it %d times under the same id", n)})
			}
		}
	}
	owners := map[string][]string{}
	for _, si := range s.Instances {
		k := si.Spec.BrokerName + "/" + si.Spec.ExternalID
		owners[k] = append(owners[k], "ServiceInstance "+si.Namespace+"/"+si.Name)
	}
	for _, sb := range s.Bindings {
		k := "binding/" + sb.Spec.ExternalID
		owners[k] = append(owners[k], "ServiceBinding "+sb.Namespace+"/"+sb.Name)
	}
	for _, k := range sortedKeys(owners) {
		if objs := owners[k]; len(objs) > 1 {
			out = append(out, Violation{Invariant: NoDoubleProvision, Object: objs[0], ExternalID: lastPart(k),
				Message: fmt.Sprintf("%s claim the same broker id %s", strings.Join(objs, " and "), lastPart(k))})
		}
	}
	return out
}

func lastPart(k string) string { return k[strings.LastIndexByte(k, '/')+1:] }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
