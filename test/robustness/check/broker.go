package check

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// difference is how what a broker holds differs from an object.
type difference string

const (
	same        difference = ""
	gone        difference = "does not hold it"
	planDiffer  difference = "holds another plan"
	paramDiffer difference = "holds other parameters"
)

// BrokerState checks that every object not being deleted is held by its
// broker as the API server holds it, or that its InSync condition says
// why not, with a reason that is true; and that a ready binding's Secret
// holds the credentials its broker gave.
func BrokerState(s Snapshot) []Violation {
	var out []Violation
	for _, si := range s.Instances {
		b := s.Brokers[si.Spec.BrokerName]
		if si.DeletionTimestamp != nil || b == nil || !s.live(si.Namespace) {
			continue
		}
		key := si.Namespace + "/" + si.Name
		diff := same
		held, ok := b.Instances[si.Spec.ExternalID]
		switch {
		case !ok:
			diff = gone
		case held.PlanID != b.PlanIDs[si.Spec.ServiceName+"/"+si.Spec.PlanName]:
			diff = planDiffer
		case !paramsMatch(held.Parameters, decode(si.Spec.Parameters), s.FromSecrets[key], b.CreateOnly[si.Spec.ServiceName+"/"+si.Spec.PlanName]):
			diff = paramDiffer
		}
		if msg := judge(diff, si.Status.Conditions, si.Status.LastOperation); msg != "" {
			out = append(out, Violation{Invariant: BrokerEqualsCluster, Object: "ServiceInstance " + key, ExternalID: si.Spec.ExternalID,
				Message: fmt.Sprintf("broker %q %s: %s", si.Spec.BrokerName, describeHeld(held, ok), msg)})
		}
	}
	instanceIDs := instanceIDs(s)
	for _, sb := range s.Bindings {
		if sb.DeletionTimestamp != nil || !s.live(sb.Namespace) {
			continue
		}
		key := sb.Namespace + "/" + sb.Name
		instanceID, brokerName := instanceIDs.of(sb)
		b := s.Brokers[brokerName]
		if b == nil {
			continue
		}
		diff := same
		held, ok := b.Bindings[instanceID+"/"+sb.Spec.ExternalID]
		switch {
		case !ok:
			diff = gone
		case !paramsMatch(held.Parameters, decode(sb.Spec.Parameters), s.FromSecrets[key], nil):
			diff = paramDiffer
		}
		if msg := judge(diff, sb.Status.Conditions, sb.Status.LastOperation); msg != "" {
			out = append(out, Violation{Invariant: BrokerEqualsCluster, Object: "ServiceBinding " + key, ExternalID: sb.Spec.ExternalID,
				Message: fmt.Sprintf("broker %q %s: %s", brokerName, describeBinding(diff), msg)})
		}
		if ok && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady) {
			if msg := secretHolds(s.Secrets[sb.Namespace+"/"+sb.Spec.SecretName], held.Credentials); msg != "" {
				out = append(out, Violation{Invariant: BrokerEqualsCluster, Object: "ServiceBinding " + key, ExternalID: sb.Spec.ExternalID,
					Message: fmt.Sprintf("the binding is Ready, but Secret %q %s", sb.Spec.SecretName, msg)})
			}
		}
	}
	return out
}

// judge says what is wrong with an object's conditions, given how its
// broker differs from it; "" when nothing is.
func judge(diff difference, conditions []metav1.Condition, last *v1alpha1.LastOperation) string {
	cond := meta.FindStatusCondition(conditions, v1alpha1.ConditionInSync)
	switch {
	case diff == same && cond != nil && cond.Status == metav1.ConditionTrue:
		return ""
	case diff == same && cond == nil:
		return "it holds what the object says, but the object has no InSync condition"
	case diff == same:
		return fmt.Sprintf("it holds what the object says, but InSync is %s (%s: %s)", cond.Status, cond.Reason, cond.Message)
	case cond == nil && diff == gone && last != nil && last.State == v1alpha1.StateFailed:
		return "" // the object says that its last operation failed
	case cond == nil:
		return "and the object has no InSync condition"
	case cond.Status == metav1.ConditionTrue:
		return fmt.Sprintf("but InSync is True (%s: %s)", cond.Reason, cond.Message)
	case cond.Status == metav1.ConditionUnknown:
		return fmt.Sprintf("and InSync is still Unknown (%s: %s): an outcome not followed to its end", cond.Reason, cond.Message)
	}
	// InSync is False: a drift reason must name the drift there is.
	claims := map[string]difference{resync.ReasonGoneAtBroker: gone, resync.ReasonPlanDrift: planDiffer, resync.ReasonParametersDrift: paramDiffer}
	if want, ok := claims[cond.Reason]; ok && want != diff {
		return fmt.Sprintf("but InSync says %s (%s)", cond.Reason, cond.Message)
	}
	return ""
}

func describeBinding(diff difference) string {
	switch diff {
	case gone:
		return "does not hold the binding"
	case paramDiffer:
		return "holds the binding with other parameters"
	}
	return "holds the binding as specified"
}

func describeHeld(held Instance, ok bool) string {
	if !ok {
		return string(gone)
	}
	raw, _ := json.Marshal(held.Parameters)
	return fmt.Sprintf("holds plan %q with parameters %s", held.PlanID, raw)
}

// paramsMatch reports whether the parameters a broker holds are the
// object's spec.parameters and, for the members from Secrets, one of the
// values those ever had. A create-only parameter the broker does not
// report matches.
func paramsMatch(held, spec map[string]any, fromSecrets map[string][]any, createOnly []string) bool {
	for k, v := range spec {
		if _, reported := held[k]; !reported && slices.Contains(createOnly, k) {
			continue
		}
		if !jsonEqual(held[k], v) {
			return false
		}
	}
	for k, v := range held {
		if _, ok := spec[k]; ok {
			continue
		}
		if !slices.ContainsFunc(fromSecrets[k], func(allowed any) bool { return jsonEqual(allowed, v) }) {
			return false
		}
	}
	for k := range fromSecrets {
		if _, ok := held[k]; !ok {
			return false
		}
	}
	return true
}

// jsonEqual compares two JSON values as JSON (1 and 1.0 are equal).
func jsonEqual(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// decode reads spec.parameters; nil when there are none.
func decode(raw *runtime.RawExtension) map[string]any {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(raw.Raw, &m)
	return m
}

// secretHolds says how a Secret differs from the credentials a broker
// gave; "" when it holds them.
func secretHolds(secret corev1.Secret, creds map[string]any) string {
	if secret.Data == nil {
		return "does not exist"
	}
	want, err := credentials.Data(creds)
	if err != nil {
		return "cannot be compared: " + err.Error()
	}
	held := maps.Clone(secret.Data)
	for _, k := range credentials.WellKnown {
		if _, sent := want[k]; !sent {
			delete(held, k) // lockstep adds it where the broker sent none
		}
	}
	if !reflect.DeepEqual(want, held) {
		return fmt.Sprintf("holds keys %v, not the broker's credentials (keys %v)", keysOf(secret.Data), credentials.Keys(creds))
	}
	return ""
}

func keysOf(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// bindingInstances finds a binding's instance id and broker.
type bindingInstances map[string][2]string // binding uid -> instance id, broker

// instanceIDs learns each binding's instance from the live instances and,
// for a binding whose instance is gone, from its records.
func instanceIDs(s Snapshot) bindingInstances {
	out := bindingInstances{}
	for _, rec := range s.Seen {
		if rec.Spec.Target.Kind == v1alpha1.KindServiceBinding && rec.Spec.Target.InstanceID != "" {
			out[string(rec.Spec.Target.UID)] = [2]string{rec.Spec.Target.InstanceID, rec.Spec.BrokerName}
		}
	}
	live := map[string]v1alpha1.ServiceInstance{}
	for _, si := range s.Instances {
		live[si.Namespace+"/"+si.Name] = si
	}
	for _, sb := range s.Bindings {
		if si, ok := live[sb.Namespace+"/"+sb.Spec.InstanceName]; ok {
			out[string(sb.UID)] = [2]string{si.Spec.ExternalID, si.Spec.BrokerName}
		}
	}
	return out
}

func (b bindingInstances) of(sb v1alpha1.ServiceBinding) (instanceID, broker string) {
	v := b[string(sb.UID)]
	return v[0], v[1]
}
