package check

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func params(s string) *runtime.RawExtension {
	if s == "" {
		return nil
	}
	return &runtime.RawExtension{Raw: []byte(s)}
}

func object(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func inSync(status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: status, Reason: reason, Message: "says " + reason}}
}

func instance(name, id, plan, parameters string, conditions []metav1.Condition) v1alpha1.ServiceInstance {
	return v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "fake", ServiceName: "db", PlanName: plan, Parameters: params(parameters), ExternalID: id},
		Status:     v1alpha1.ServiceInstanceStatus{Conditions: conditions},
	}
}

func binding(name, id, instanceName string, conditions []metav1.Condition) v1alpha1.ServiceBinding {
	return v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: instanceName, SecretName: name, ExternalID: id},
		Status:     v1alpha1.ServiceBindingStatus{Conditions: conditions},
	}
}

func broker() *Broker {
	return &Broker{
		PlanIDs:    map[string]string{"db/small": "small-id", "db/large": "large-id"},
		CreateOnly: map[string][]string{"db/small": {"region"}, "db/large": {"region"}},
		Instances:  map[string]Instance{}, Bindings: map[string]Binding{},
		Creations: map[string]int{}, Async: map[string]Async{},
	}
}

func deleting(o *metav1.ObjectMeta) {
	t := metav1.NewTime(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	o.DeletionTimestamp = &t
}
