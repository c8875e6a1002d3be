package marketplace

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// Catalog is what a broker's marketplace should hold: one ServiceOffering
// per service and one ServicePlan per plan of its catalog, and one per plan
// that left the catalog while instances still use it (marked removed).
type Catalog struct {
	Offerings []v1alpha1.ServiceOffering
	Plans     []v1alpha1.ServicePlan
}

// Desired computes the marketplace of the broker sb from its catalog entry
// and its access rules (which namespaces may use each plan). Every object
// is owned by sb (deleted with it by the garbage collector) and labelled
// with its name.
func Desired(sb *v1alpha1.ServiceBroker, e *catalog.Entry) Catalog {
	out := Catalog{Offerings: Offerings(sb, e)}
	rules := access.Compile(sb.Name, sb.Spec.Access)
	for i := range e.Catalog.Services {
		s := &e.Catalog.Services[i]
		for j := range s.Plans {
			sp := osbapi.ServicePlan{Service: s, Plan: &s.Plans[j]}
			schemas, err := e.PlanSchemas(sp.Plan.ID)
			out.Plans = append(out.Plans, Plan(sb, sp, schemas.CreateOnly(), err, rules, false))
		}
	}
	for _, sp := range e.Removed {
		schemas, err := e.PlanSchemas(sp.Plan.ID)
		out.Plans = append(out.Plans, Plan(sb, sp, schemas.CreateOnly(), err, rules, true))
	}
	return out
}

// Offerings are the ServiceOfferings of Desired alone: one per service of
// the catalog, then one marked removed per service that left it with a
// plan in use.
func Offerings(sb *v1alpha1.ServiceBroker, e *catalog.Entry) []v1alpha1.ServiceOffering {
	var out []v1alpha1.ServiceOffering
	seen := map[string]bool{} // by service id
	add := func(s *osbapi.Service, removed bool) {
		if !seen[s.ID] {
			seen[s.ID] = true
			out = append(out, Offering(sb, s, removed))
		}
	}
	for i := range e.Catalog.Services {
		add(&e.Catalog.Services[i], false)
	}
	for _, sp := range e.Removed {
		add(sp.Service, true)
	}
	return out
}

// Offering is the ServiceOffering of service s of broker sb.
func Offering(sb *v1alpha1.ServiceBroker, s *osbapi.Service, removed bool) v1alpha1.ServiceOffering {
	return v1alpha1.ServiceOffering{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceOffering"},
		ObjectMeta: objectMeta(sb, OfferingName(sb.Name, s.Name, s.ID)),
		Spec: v1alpha1.ServiceOfferingSpec{
			BrokerName: sb.Name, Name: s.Name, ID: s.ID, Description: s.Description,
			Bindable: s.Bindable, PlanUpdateable: s.PlanUpdateable,
			InstancesRetrievable: s.InstancesRetrievable, BindingsRetrievable: s.BindingsRetrievable,
			Tags: s.Tags, Metadata: rawJSON(s.Metadata),
		},
		Status: v1alpha1.ServiceOfferingStatus{MarketplaceStatus: v1alpha1.MarketplaceStatus{RemovedFromCatalog: removed}},
	}
}

// Plan is the ServicePlan of plan sp of broker sb: createOnly are its
// create-only parameters, compileErr why its schemas did not compile, and
// rules the broker's access rules.
func Plan(sb *v1alpha1.ServiceBroker, sp osbapi.ServicePlan, createOnly []string, compileErr error, rules *access.Rules, removed bool) v1alpha1.ServicePlan {
	p := sp.Plan
	plan := v1alpha1.ServicePlan{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServicePlan"},
		ObjectMeta: objectMeta(sb, PlanName(sb.Name, sp.Service.Name, p.Name, sp.Service.ID, p.ID)),
		Spec: v1alpha1.ServicePlanSpec{
			BrokerName: sb.Name, ServiceName: sp.Service.Name, ServiceID: sp.Service.ID,
			Name: p.Name, ID: p.ID, Description: p.Description,
			Free: p.IsFree(), Bindable: sp.Bindable(), PlanUpdateable: sp.Updateable(),
			Metadata:             rawJSON(p.Metadata),
			CreateOnlyParameters: createOnly,
			Parameters:           Parameters(sp.CreateSchema(), createOnly),
			Access:               rules.Of(sp.Service.Name, p.Name, p.IsFree()),
		},
		Status: v1alpha1.MarketplaceStatus{
			RemovedFromCatalog: removed,
			Conditions:         []metav1.Condition{SchemasCondition(sp, Problems(sp, compileErr))},
		},
	}
	if mi := p.MaintenanceInfo; mi != nil {
		plan.Spec.MaintenanceInfo = &v1alpha1.MaintenanceInfo{Version: mi.Version, Description: mi.Description}
	}
	schemas := v1alpha1.PlanSchemas{
		InstanceCreate: keptSchema(sp.CreateSchema()),
		InstanceUpdate: keptSchema(sp.UpdateSchema()),
		BindingCreate:  keptSchema(sp.BindSchema()),
	}
	if schemas.InstanceCreate != nil || schemas.InstanceUpdate != nil || schemas.BindingCreate != nil {
		plan.Spec.Schemas = &schemas
	}
	return plan
}

// objectMeta names an object of broker sb's marketplace and makes sb its
// owner. The owner reference does not block the owner's deletion: that
// would need a right lockstep does not have, and nothing is lost when the
// marketplace of a broker goes before the broker does.
func objectMeta(sb *v1alpha1.ServiceBroker, name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: name,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceBroker",
			Name: sb.Name, UID: sb.UID, Controller: ptrTo(true),
		}},
	}
	if len(validation.IsValidLabelValue(sb.Name)) == 0 {
		m.Labels = map[string]string{v1alpha1.LabelBroker: sb.Name}
	}
	return m
}

// keptSchema is a schema as a ServicePlan keeps it: compact JSON, or nil
// when there is none, it is not JSON, or it is larger than MaxSchemaBytes.
func keptSchema(raw json.RawMessage) *runtime.RawExtension {
	if len(raw) == 0 || len(raw) > MaxSchemaBytes {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return nil
	}
	return rawJSON(v)
}

// rawJSON is v as compact JSON, or nil for nothing.
func rawJSON[T any](v T) *runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" && isEmptyMap(v) {
		return nil
	}
	return &runtime.RawExtension{Raw: b}
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

func ptrTo[T any](v T) *T { return &v }
