package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/quota"
	"github.com/lockstep-dev/lockstep/internal/validate"
)

// Instance is a ServiceInstance as the admission chain sees it.
type Instance = *v1alpha1.ServiceInstance

var instanceKind = v1alpha1.GroupVersion.WithKind("ServiceInstance").GroupKind()

// Deps are what the handlers need from the rest of lockstep.
type Deps struct {
	// Reader reads lockstep objects from the manager's cache, which has
	// the index of IndexExternalIDs.
	Reader client.Reader
	// Typed looks up the objects of typed kinds by external id in this
	// replica's informers; nil asks the API server, one list per kind.
	Typed TypedIndex
	// APIReader reads lockstep objects from the API server, past the
	// cache: it confirms which object holds an external id.
	APIReader client.Reader
	// Writer writes credential Secrets to the API server.
	Writer client.Client
	// Secrets reads Secrets from the API server (lockstep does not cache
	// the cluster's Secrets).
	Secrets client.Reader
	// Access tells whether the requester may do what a request asks of
	// lockstep beyond the object itself (read a Secret that
	// spec.parametersFrom names, adopt, read the object that holds an
	// external id); nil asks nobody and allows.
	Access Authorizer
	// Catalogs holds every broker's catalog.
	Catalogs *catalog.Cache
	// AccessRules holds every broker's access rules (spec.access); nil
	// (in tests) holds none.
	AccessRules *access.Store
	// TypedInstances lists the objects of typed kinds of a namespace, for
	// the per-plan limits; nil counts none.
	TypedInstances TypedInstances
	// Quotas reads the namespaces' ResourceQuotas (the manager's cache);
	// nil checks none.
	Quotas client.Reader
	// QuotaInFlight counts the creates in flight against the quotas; nil
	// gives each chain its own.
	QuotaInFlight *quota.InFlight
	// Preflight says when a change is tried first as a dry run, and
	// who lockstep is (its own dry runs are allowed at once).
	Preflight PreflightOptions
	// Journal records every broker operation.
	Journal *journal.Journal
	// Leases is the per-object lock, across replicas.
	Leases *journal.Leases
	// RefusalMemory is how long a refusal is repeated to an identical
	// request without a broker call.
	RefusalMemory time.Duration
	// Budget bounds one validating request, broker calls included.
	Budget time.Duration
	// MaxParametersBytes bounds the parameters sent to a broker; 0 sets
	// no bound.
	MaxParametersBytes int
	// After writes the records of broker operations after the reply;
	// nil writes them before it.
	After *journal.After
	// Broker tunes the broker phase.
	Broker BrokerOptions
}

// externalIDs finds which object holds an external id.
func (d Deps) externalIDs() *externalIDs {
	return &externalIDs{cache: d.Reader, direct: d.APIReader, typed: d.Typed, access: d.Access}
}

// quotaInFlight is the count of creates in flight the chains share.
func (d Deps) quotaInFlight() *quota.InFlight {
	if d.QuotaInFlight != nil {
		return d.QuotaInFlight
	}
	return &quota.InFlight{}
}

// NewInstanceDefaulter returns the mutating handler for ServiceInstances:
// spec.externalID defaults to a new UUID (not when the instance adopts one
// that exists at the broker: then it must name it), and spec.brokerName to
// the only ServiceBroker when exactly one exists.
func NewInstanceDefaulter(reader client.Reader) *Defaulter[Instance] {
	return &Defaulter[Instance]{
		New: func() Instance { return &v1alpha1.ServiceInstance{} },
		Defaults: func(ctx context.Context, si Instance) error {
			if si.Spec.ExternalID == "" && !v1alpha1.Adopting(si) {
				si.Spec.ExternalID = uuid.NewString()
			}
			if si.Spec.BrokerName == "" && reader != nil {
				var brokers v1alpha1.ServiceBrokerList
				if err := reader.List(ctx, &brokers); err != nil {
					return fmt.Errorf("listing ServiceBrokers to default spec.brokerName: %w", err)
				}
				if len(brokers.Items) == 1 {
					si.Spec.BrokerName = brokers.Items[0].Name
				}
			}
			return nil
		},
		Keep: func(old, si Instance) {
			if si.Spec.ExternalID == "" {
				si.Spec.ExternalID = old.Spec.ExternalID
			}
			if si.Spec.BrokerName == "" {
				si.Spec.BrokerName = old.Spec.BrokerName
			}
		},
	}
}

// NewInstanceValidator returns the validating chain for ServiceInstances
// (and the models of objects of typed kinds): field policies, spec checks
// and registered hooks; then the Resolver (parameters from Secrets, the
// broker's catalog and the plan) and the catalog check against what it
// found; then the namespace's quotas and the broker's per-plan limits;
// then, where it is on, the preflight; then the broker call.
func NewInstanceValidator(d Deps, hooks *validate.Hooks[Instance]) *Validator[Instance] {
	bindings := &liveBindings{reader: d.Reader}
	size := &parametersSize[Instance]{max: d.MaxParametersBytes, own: func(si Instance) *runtime.RawExtension { return si.Spec.Parameters }, sends: parametersChanged}
	return &Validator[Instance]{
		Kind:     instanceKind,
		Gate:     &reconcilePolicy[Instance]{kind: instanceKind, journal: d.Journal, reader: d.Reader, detachChecks: []Check[Instance]{bindings}},
		SameSpec: func(old, new Instance) bool { return sameInstanceSpec(&old.Spec, &new.Spec) },
		Paths:    typedPaths,
		Checks: []Check[Instance]{
			fieldPolicy[Instance](),
			CheckFunc[Instance]{CheckName: "spec", Fn: func(_ context.Context, a *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
				return validate.ServiceInstanceSpec(&a.New.Spec, field.NewPath("spec")), nil, nil
			}},
			hookCheck(hooks),
			&adoptAccess[Instance]{access: d.Access, kind: v1alpha1.KindServiceInstance},
			&externalIDFree[Instance]{ids: d.externalIDs(), kind: v1alpha1.KindServiceInstance},
		},
		DeleteChecks: []Check[Instance]{
			bindings,
		},
		Resolve: &targetResolver[Instance]{
			params: &parametersFrom[Instance]{secrets: d.Secrets, access: d.Access, maxBytes: d.MaxParametersBytes, of: func(si Instance) (*runtime.RawExtension, []v1alpha1.ParametersFromSource) {
				return si.Spec.Parameters, si.Spec.ParametersFrom
			}},
			lookup: &instanceLookup{reader: d.Reader, cache: d.Catalogs},
		},
		TargetChecks: []TargetCheck[Instance]{
			size,
			&instanceCatalog{size: size},
			&sensitiveParameters{},
			&planAccess[Instance]{rules: d.AccessRules, reader: d.Reader, use: instancePlan},
		},
		Limits: []Limit[Instance]{
			&resourceQuotas[Instance]{quotas: d.Quotas, inFlight: d.quotaInFlight(), resource: v1alpha1.GroupVersion.WithResource("serviceinstances").GroupResource(), kind: instanceKind},
			&planLimits{rules: d.AccessRules, reader: d.Reader, typed: d.TypedInstances, leases: d.Leases},
		},
		Steps: []Step[Instance]{
			&preflight[Instance]{opts: d.Preflight, brokers: d.Reader, log: d.Broker.Log},
			&instanceBroker{carry: newCarrier(d)},
		},
		Self:   d.Preflight.Self,
		Budget: d.Budget,
	}
}

// liveBindings refuses to delete an instance that still has bindings: the
// broker would be asked to deprovision an instance with credentials out.
// It reads the bindings of the instance's name only, through the index of
// IndexBindingInstances: a namespace of thousands of bindings costs each
// delete a lookup, not a copy of them all.
type liveBindings struct {
	reader client.Reader
}

// BindingInstanceField is the index of ServiceBindings by the name of the
// instance they bind (spec.instanceName), of any kind.
const BindingInstanceField = "spec.instanceName"

// IndexBindingInstances registers BindingInstanceField with a cache's
// indexer, before the cache starts.
func IndexBindingInstances(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.ServiceBinding{}, BindingInstanceField, BindingInstance); err != nil {
		return fmt.Errorf("indexing ServiceBindings by spec.instanceName: %w", err)
	}
	return nil
}

// BindingInstance is the index value of a binding: the name of the
// instance it binds (for a fake client's WithIndex in tests too).
func BindingInstance(o client.Object) []string {
	if b, ok := o.(*v1alpha1.ServiceBinding); ok && b.Spec.InstanceName != "" {
		return []string{b.Spec.InstanceName}
	}
	return nil
}

func (c *liveBindings) Name() string { return "live-bindings" }

func (c *liveBindings) Check(ctx context.Context, a *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
	si := a.Old
	if si.DeletionTimestamp != nil {
		return nil, nil, nil
	}
	var bindings v1alpha1.ServiceBindingList
	if err := c.reader.List(ctx, &bindings, client.InNamespace(si.Namespace), client.MatchingFields{BindingInstanceField: si.Name}); err != nil {
		return nil, nil, unavailable("could not list the bindings of instance %q: %v; nothing was changed: retry", si.Name, err)
	}
	var names []string
	for _, b := range bindings.Items {
		if b.Spec.Binds(si) && b.DeletionTimestamp == nil {
			names = append(names, b.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	sort.Strings(names)
	what := "instance" // an object of a typed kind is named by its kind
	if v1alpha1.Typed(si) {
		what = si.Kind
	}
	return nil, nil, conflict("%s %q still has %d binding(s): %s; delete them first (kubectl delete servicebinding %s -n %s); the %s stays as it was; "+
		"if their broker cannot unbind them, let them go without it: kubectl annotate servicebinding %s -n %s %s=%s",
		what, si.Name, len(names), strings.Join(names, ", "), strings.Join(names, " "), si.Namespace, what,
		strings.Join(names, " "), si.Namespace, v1alpha1.AnnotationReconcilePolicy, v1alpha1.PolicyDetachOnDelete)
}
