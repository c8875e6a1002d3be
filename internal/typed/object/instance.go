package object

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The spec fields of a typed kind whose names differ from the model's:
// spec.plan is the model's spec.planName; the model's spec.serviceName is
// the kind's service and is no field of a typed object.
const (
	fieldPlan        = "plan"
	modelPlan        = "planName"
	modelServiceName = "serviceName"
)

// ToInstance is the model of typed object u of kind k: its metadata as it
// is; TypeMeta the typed kind's; spec.brokerName the object's or else the
// kind's broker, spec.serviceName the kind's service, spec.planName
// spec.plan, the parameters, parametersFrom, parametersFromGeneration and
// externalID as they are; its status as it is. The error says which part
// of u could not be read (a field of the wrong type).
func ToInstance(u *unstructured.Unstructured, k Kind) (*v1alpha1.ServiceInstance, error) {
	si, err := model(u, k)
	if err != nil {
		return nil, err
	}
	if si.Spec.BrokerName == "" {
		si.Spec.BrokerName = k.Broker
	}
	return si, nil
}

// model is the model of u without the kind's defaults.
func model(u *unstructured.Unstructured, k Kind) (*v1alpha1.ServiceInstance, error) {
	spec, _, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: spec is not an object: %w", k.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	if plan, ok := spec[fieldPlan]; ok {
		spec[modelPlan] = plan
		delete(spec, fieldPlan)
	}
	spec[modelServiceName] = k.ServiceName
	raw, err := json.Marshal(map[string]any{"metadata": u.Object["metadata"], "spec": spec, "status": u.Object["status"]})
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", k.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	si := &v1alpha1.ServiceInstance{}
	if err := json.Unmarshal(raw, si); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", k.GVK.Kind, u.GetNamespace(), u.GetName(), typedPaths(err))
	}
	si.APIVersion, si.Kind = k.GVK.GroupVersion().String(), k.GVK.Kind
	return si, nil
}

// typedPaths names a decoding error's field as the typed object has it.
func typedPaths(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "spec."+modelPlan {
		c := *te
		c.Field = "spec." + fieldPlan
		return &c
	}
	return err
}

// FromInstance writes into typed object u what the pipeline changed in
// its model si: labels, annotations, finalizers and owner references; the
// spec fields (spec.plan from spec.planName; never spec.serviceName, which
// a typed object does not have), such as the defaults of spec.externalID
// and spec.brokerName; and the status. A field whose value is the same in
// u is left as u has it, so that an unchanged model changes nothing.
func FromInstance(si *v1alpha1.ServiceInstance, u *unstructured.Unstructured) error {
	if !maps.Equal(si.Labels, u.GetLabels()) {
		u.SetLabels(si.Labels)
	}
	if !maps.Equal(si.Annotations, u.GetAnnotations()) {
		u.SetAnnotations(si.Annotations)
	}
	if !slices.Equal(si.Finalizers, u.GetFinalizers()) {
		u.SetFinalizers(si.Finalizers)
	}
	if !equalJSON(si.OwnerReferences, u.GetOwnerReferences()) {
		u.SetOwnerReferences(si.OwnerReferences)
	}
	was, err := model(u, Kind{})
	if err != nil {
		return err
	}
	want, err := toMap(si.Spec)
	if err != nil {
		return err
	}
	have, err := toMap(was.Spec)
	if err != nil {
		return err
	}
	delete(want, modelServiceName)
	delete(have, modelServiceName)
	for _, key := range keys(want, have) {
		if reflect.DeepEqual(want[key], have[key]) {
			continue
		}
		field := key
		if key == modelPlan {
			field = fieldPlan
		}
		if v, ok := want[key]; ok {
			if err := unstructured.SetNestedField(u.Object, v, "spec", field); err != nil {
				return fmt.Errorf("writing spec.%s: %w", field, err)
			}
		} else {
			unstructured.RemoveNestedField(u.Object, "spec", field)
		}
	}
	if equalJSON(si.Status, was.Status) {
		return nil
	}
	status, err := toMap(si.Status)
	if err != nil {
		return err
	}
	if len(status) == 0 {
		unstructured.RemoveNestedField(u.Object, "status")
		return nil
	}
	u.Object["status"] = status
	return nil
}

// toMap is v as an unstructured object (numbers as int64 where they are
// integers, float64 otherwise).
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// equalJSON reports whether a and b have the same JSON.
func equalJSON(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ra) == string(rb)
}

// keys are the keys of a and b, sorted.
func keys(a, b map[string]any) []string {
	out := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(out)
	return slices.Compact(out)
}
