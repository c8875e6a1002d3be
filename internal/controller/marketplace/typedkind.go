package marketplace

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// The typed kinds of a broker's services: which services its ServiceBroker
// activates (spec.typedKinds), which kind each gets, and the status of
// each kind on its ServiceOffering. A kind is rendered (internal/typed/render)
// when what it is rendered from changes; crd.go applies its CRD.

// Reasons of the TypedKindReady condition.
const (
	// ReasonEstablished (True): the API server serves the kind.
	ReasonEstablished = "Established"
	// ReasonFreeParameters (True): the API server serves the kind, with
	// spec.parameters as free JSON (the message says why).
	ReasonFreeParameters = "FreeParameters"
	// ReasonApplying: the CRD is applied; the API server does not serve
	// the kind yet.
	ReasonApplying = "Applying"
	// ReasonCRDRefused: the API server refuses to create the CRD.
	ReasonCRDRefused = "CRDRefused"
	// ReasonCRDUpdateRefused: the API server refuses the CRD rendered
	// again; the CRD as it was stays and is served.
	ReasonCRDUpdateRefused = "CRDUpdateRefused"
	// ReasonCRDUpdateHeld: the CRD rendered from the catalog drops
	// parameters objects set, and keeping them would make a CRD the API
	// server refuses; the CRD as it was stays.
	ReasonCRDUpdateHeld = "CRDUpdateHeld"
	// ReasonApplyFailed: the CRD, its roles or the objects of the kind
	// could not be written or read; lockstep tries again.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonInUse: the service is deactivated (or given another kind), and
	// objects of its kind remain: the CRD stays until they are deleted.
	ReasonInUse = "InUse"
	// ReasonRetiring: the service is deactivated (or given another kind),
	// and no object of its kind is left: the CRD is marked retiring, so
	// that lockstep refuses new objects of the kind, and is deleted once
	// the mark is the Reconciler's RetireGrace old and still no object is.
	ReasonRetiring = "Retiring"
	// ReasonCRDTaken: a CRD of the kind's name exists that is not this
	// offering's.
	ReasonCRDTaken = "CRDTaken"
	// ReasonNameClash: another activated service has the kind's name.
	ReasonNameClash = "NameClash"
	// ReasonKindNameInvalid: the service name makes no kind name, or the
	// kind given is not one.
	ReasonKindNameInvalid = "KindNameInvalid"
	// ReasonRenderFailed: the kind's CRD could not be rendered.
	ReasonRenderFailed = "RenderFailed"
)

// maxDroppedShown bounds the dropped keywords an offering's status lists;
// the rest are counted.
const maxDroppedShown = 100

// typedKind is what the catalog sync writes about an offering's typed kind:
// its status (nil: none) and its TypedKindReady condition (nil: the service
// is not activated, and the condition goes). A kind that is to be applied
// (status set, condition nil until the CRD is applied) also has its CRD
// and what the condition's message adds.
type typedKind struct {
	status    *v1alpha1.TypedKindStatus
	condition *metav1.Condition
	// crd renders the kind's CRD (once per pass at most).
	crd func() (*apiextensionsv1.CustomResourceDefinition, error)
	// notes end the condition's message: short names not given, the
	// services that wanted the kind too (the dropped keywords follow,
	// counted when the CRD is applied: droppedNote).
	notes string
	// aggregate: the kind's roles are aggregated into the default roles
	// (its ServiceBroker asks for it).
	aggregate bool
}

// claim is an activated service that wants a typed kind: of the broker
// being synced (from its catalog) or of another broker (from its stored
// ServiceOffering).
type claim struct {
	broker   *v1alpha1.ServiceBroker
	offering string // the ServiceOffering's name
	service  string // the service's name
	id       string // the service's OSB id
	// given are the names the claim asks for: the administrator's; its
	// kind else the one its offering's status shows (kept when the
	// service is renamed), else none (made from the service name).
	given render.Given
	// holds is true when the offering's status already shows the kind
	// and its plural.
	holds bool

	names  render.Names
	err    error  // why the claim makes no kind name
	winner *claim // the claim that has the kind this one wants
	losers []*claim
	// served, when set, is the resource the cluster serves that has one
	// of the kind's names, which the claim does not get for that.
	served string
	// notes are what the offering's condition adds about the names: the
	// short names given that the kind does not get, a name a resource
	// the cluster serves has too.
	notes []string
	// taken are the names of the other kinds and of the resources the
	// cluster serves, for Render.
	taken render.Taken
}

// newClaim is the claim of service (name, id) of broker sb, whose offering
// (stored: nil when there is none yet) is named offering; nil when sb does
// not activate the service.
func newClaim(sb *v1alpha1.ServiceBroker, offering, service, id string, stored *v1alpha1.ServiceOffering) *claim {
	selected, given := marketplace.ActivatedKind(sb, service)
	if !selected {
		return nil
	}
	c := &claim{broker: sb, offering: offering, service: service, id: id, given: given}
	var shown *v1alpha1.TypedKindStatus
	if stored != nil && stored.Status.TypedKind != nil {
		shown = stored.Status.TypedKind
		if c.given.Kind == "" {
			c.given.Kind = shown.Kind
		}
	}
	c.names, c.err = render.NamesFor(service, c.given, nil)
	c.holds = shown != nil && c.err == nil && shown.Kind == c.names.Kind && shown.Plural == c.names.Plural
	return c
}

// clashRule says which of two services that want one kind gets it: the
// order of before.
const clashRule = "an offering that shows the kind already keeps it; otherwise the older ServiceBroker, then the ServiceBroker's name, then the service name"

// before orders claims for a name: one whose offering already shows the
// kind first, then the older broker (creation time, then name), then the
// service name and id. The order depends on what the cluster holds only, so
// every broker's sync decides a clash alike.
func before(a, b *claim) int {
	if a.holds != b.holds {
		if a.holds {
			return -1
		}
		return 1
	}
	if c := a.broker.CreationTimestamp.Compare(b.broker.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.broker.Name, b.broker.Name), strings.Compare(a.service, b.service), strings.Compare(a.id, b.id))
}

// settleNames gives each claim, in order, its names unless an earlier
// claim has its kind, plural or singular (compared in lower case), or,
// for a kind no offering shows yet, a resource the cluster serves has
// one of them (served: see render.ServedNames); then short names, to the
// claims that got names, where no other kind and no served resource has
// them: the short names given in order, then those made from words.
func settleNames(claims []*claim, served render.Taken) {
	slices.SortStableFunc(claims, before)
	owner := map[string]*claim{}
	var winners []*claim
	for _, c := range claims {
		if c.err != nil {
			continue
		}
		keys := resourceNames(c.names)
		for _, k := range keys {
			if w := owner[k]; w != nil {
				c.winner = w
				w.losers = append(w.losers, c)
				break
			}
		}
		if c.winner != nil {
			continue
		}
		for _, k := range keys {
			if by, ok := served[k]; ok {
				if !c.holds {
					c.served = fmt.Sprintf("its name %q is %s's", k, by)
				} else {
					c.notes = append(c.notes, fmt.Sprintf("%s also has the name %s, which the kind keeps: kubectl may find that resource first", by, k))
				}
				break
			}
		}
		if c.served != "" {
			continue
		}
		for _, k := range keys {
			owner[k] = c
		}
		winners = append(winners, c)
	}
	taken := render.Taken{}
	for k, c := range owner {
		taken[k] = fmt.Sprintf("kind %s of service %q", c.names.Kind, c.service)
	}
	for k, by := range served {
		if _, ok := taken[k]; !ok {
			taken[k] = by
		}
	}
	for _, c := range winners {
		c.taken = withoutKeys(taken, resourceNames(c.names))
		if names, err := render.NamesFor(c.service, withKind(c.given, c.names.Kind), c.taken); err == nil {
			c.names = names
		}
		for _, short := range c.names.ShortNames {
			taken[short] = fmt.Sprintf("kind %s of service %q", c.names.Kind, c.service)
		}
	}
}

// withKind is given with the kind settled.
func withKind(given render.Given, kind string) render.Given {
	given.Kind = kind
	return given
}

// resourceNames are the names of a kind that no other kind may have.
func resourceNames(n render.Names) []string {
	return []string{strings.ToLower(n.Kind), n.Plural, n.Singular}
}

// withoutKeys is taken without keys.
func withoutKeys(taken render.Taken, keys []string) render.Taken {
	out := make(render.Taken, len(taken))
	for k, by := range taken {
		if !slices.Contains(keys, k) {
			out[k] = by
		}
	}
	return out
}

// typedKinds decides the typed kind of each offering in want (the
// broker's offerings as its catalog has them), by service id: a service
// the broker activates gets a kind unless another activated service of
// any broker has its name first (see before). stored are every broker's
// ServiceOfferings as the API server holds them; the other brokers'
// activated services are read from them.
func (s *sync) typedKinds(ctx context.Context, want []v1alpha1.ServiceOffering, stored []v1alpha1.ServiceOffering) (map[string]typedKind, error) {
	decide, err := s.kindDecider(ctx, want, stored)
	if err != nil {
		return nil, err
	}
	out := make(map[string]typedKind, len(want))
	for i := range want {
		out[want[i].Spec.ID] = decide(want[i].Spec.ID)
	}
	return out, nil
}

// kindDecider settles which activated service of any broker has which
// kind name (see typedKinds) and returns decide, which gives the typed
// kind of the broker's service id, rendered only when asked.
func (s *sync) kindDecider(ctx context.Context, want []v1alpha1.ServiceOffering, stored []v1alpha1.ServiceOffering) (decide func(id string) typedKind, err error) {
	var brokers v1alpha1.ServiceBrokerList
	if err := s.client.List(ctx, &brokers); err != nil {
		return nil, fmt.Errorf("listing ServiceBrokers to find the typed kinds they activate: %w", err)
	}
	byName := map[string]*v1alpha1.ServiceBroker{s.broker.Name: s.broker}
	for i := range brokers.Items {
		if sb := &brokers.Items[i]; sb.Name != s.broker.Name && sb.DeletionTimestamp == nil && len(sb.Spec.TypedKinds) > 0 {
			byName[sb.Name] = sb
		}
	}
	ours := map[string]*v1alpha1.ServiceOffering{} // by service id
	var claims []*claim
	for i := range stored {
		o := &stored[i]
		if o.Spec.BrokerName == s.broker.Name {
			ours[o.Spec.ID] = o
			continue
		}
		if sb := byName[o.Spec.BrokerName]; sb != nil {
			if c := newClaim(sb, o.Name, o.Spec.Name, o.Spec.ID, o); c != nil {
				claims = append(claims, c)
			}
		}
	}
	mine := map[string]*claim{} // by service id
	for i := range want {
		d := &want[i]
		if c := newClaim(s.broker, d.Name, d.Spec.Name, d.Spec.ID, ours[d.Spec.ID]); c != nil {
			mine[d.Spec.ID] = c
			claims = append(claims, c)
		}
	}
	served, err := s.servedNames(ctx, claims)
	if err != nil {
		return nil, err
	}
	settleNames(claims, served)

	services := servicesOf(s.entry)
	return func(id string) typedKind {
		c := mine[id]
		if c == nil {
			return typedKind{}
		}
		var prev *v1alpha1.TypedKindStatus
		if o := ours[id]; o != nil {
			prev = o.Status.TypedKind
		}
		return c.decide(services[id], prev)
	}, nil
}

// servicesOf are the services of a catalog entry by id: the catalog's, and
// those that left it with plans still in use.
func servicesOf(e *catalog.Entry) map[string]*osbapi.Service {
	out := map[string]*osbapi.Service{}
	for _, sp := range e.Removed {
		out[sp.Service.ID] = sp.Service
	}
	for i := range e.Catalog.Services {
		out[e.Catalog.Services[i].ID] = &e.Catalog.Services[i]
	}
	return out
}

// decide is the typed kind of claim c of service svc: a name problem, a
// clash, or the kind rendered (again only when the service or the names
// changed since prev).
func (c *claim) decide(svc *osbapi.Service, prev *v1alpha1.TypedKindStatus) typedKind {
	switch {
	case c.err != nil:
		return notReady(ReasonKindNameInvalid, fmt.Sprintf("service %q gets no typed kind: %v (in ServiceBroker %q spec.typedKinds, kind)", c.service, c.err, c.broker.Name))
	case c.winner != nil:
		return notReady(ReasonNameClash, fmt.Sprintf("service %q gets no typed kind: kind %s (%s) is also wanted by service %q of ServiceBroker %q (ServiceOffering %s), which comes first (%s); give this service another kind in ServiceBroker %q spec.typedKinds (kind), or deactivate one of them",
			c.service, c.names.Kind, c.names.Plural, c.winner.service, c.winner.broker.Name, c.winner.offering, clashRule, c.broker.Name))
	case c.served != "":
		return notReady(ReasonNameClash, fmt.Sprintf("service %q gets no typed kind: kind %s (%s): %s, which kubectl would find instead; give this service another kind or plural in ServiceBroker %q spec.typedKinds (kind, plural)",
			c.service, c.names.Kind, c.names.Plural, c.served, c.broker.Name))
	case svc == nil:
		return notReady(ReasonRenderFailed, fmt.Sprintf("service %q gets no typed kind: its broker's catalog no longer has it", c.service))
	}
	status := prev
	hash := renderedFrom(svc, c.names)
	var rendered *apiextensionsv1.CustomResourceDefinition
	opts := render.Options{Kind: c.names.Kind, Plural: c.given.Plural, ShortNames: c.given.ShortNames, Taken: c.taken}
	if status == nil || status.RenderedFrom != hash {
		var err error
		if rendered, status, err = renderStatus(c.broker.Name, svc, opts, hash); err != nil {
			return notReady(ReasonRenderFailed, fmt.Sprintf("service %q gets no typed kind: %v", c.service, err))
		}
	}
	notes := ""
	for _, r := range c.names.Refused {
		notes += fmt.Sprintf("; %s, so the kind goes without it (ServiceBroker %q spec.typedKinds, shortNames)", r, c.broker.Name)
	}
	for _, n := range c.notes {
		notes += "; " + n
	}
	for _, l := range c.losers {
		notes += fmt.Sprintf("; service %q of ServiceBroker %q (ServiceOffering %s) also wants the kind and gets none", l.service, l.broker.Name, l.offering)
	}
	brokerName := c.broker.Name
	opts.Kind = status.Kind
	crd := func() (*apiextensionsv1.CustomResourceDefinition, error) {
		if rendered == nil {
			var err error
			if rendered, _, err = render.Render(brokerName, svc, opts); err != nil {
				return nil, err
			}
		}
		return rendered, nil
	}
	return typedKind{status: status, crd: crd, notes: notes, aggregate: marketplace.AggregatesRoles(c.broker, c.service)}
}

// notReady is a service that gets no typed kind, and why.
func notReady(reason, msg string) typedKind {
	return typedKind{condition: condition(metav1.ConditionFalse, reason, msg)}
}

// rendererRevision is render.Revision; a test stands for an upgrade of
// lockstep by changing it.
var rendererRevision = render.Revision

// renderedFrom identifies what a kind is rendered from: the service as the
// catalog has it, the kind's names, and the renderer's revision (a kind is
// rendered, and its CRD applied, again after an upgrade that changes what
// the renderer makes of the same service).
func renderedFrom(svc *osbapi.Service, names render.Names) string {
	h := sha256.New()
	// None marshals with an error: they are plain data read from JSON.
	_ = json.NewEncoder(h).Encode(svc)
	_ = json.NewEncoder(h).Encode(names)
	_ = json.NewEncoder(h).Encode(rendererRevision)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// renderStatus renders the typed kind of service svc of broker
// brokerName with opts (its names, beside the names others have) and
// returns the status that shows it.
func renderStatus(brokerName string, svc *osbapi.Service, opts render.Options, hash string) (*apiextensionsv1.CustomResourceDefinition, *v1alpha1.TypedKindStatus, error) {
	crd, report, err := render.Render(brokerName, svc, opts)
	if err != nil {
		return nil, nil, err
	}
	st := &v1alpha1.TypedKindStatus{
		Kind: report.Names.Kind, Plural: report.Names.Plural, ShortNames: report.Names.ShortNames,
		APIVersion: render.Group + "/" + render.Version, CRDName: report.Names.CRDName(),
		FreeParameters: report.Fallback, RenderedFrom: hash,
	}
	for i, d := range report.Dropped {
		if i == maxDroppedShown {
			st.DroppedNotShown = int32(len(report.Dropped) - maxDroppedShown)
			break
		}
		st.Dropped = append(st.Dropped, v1alpha1.DroppedKeyword{Path: d.Where, Keyword: d.Keyword, Why: d.Why})
	}
	return crd, st, nil
}

// typedKindShown is what an offering's status says of its typed kind, for
// the watch that tells the other brokers: its kind and the reason of its
// TypedKindReady condition; empty when it says nothing.
func typedKindShown(obj client.Object) string {
	o, ok := obj.(*v1alpha1.ServiceOffering)
	if !ok {
		return ""
	}
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	if c == nil {
		return ""
	}
	kind := ""
	if o.Status.TypedKind != nil {
		kind = o.Status.TypedKind.Kind
	}
	return kind + "/" + c.Reason
}

// otherTypedKindBrokers are the requests for the ServiceBrokers, other
// than the offering's own, that activate typed kinds.
func (r *Reconciler) otherTypedKindBrokers(ctx context.Context, obj client.Object) []reconcile.Request {
	o, ok := obj.(*v1alpha1.ServiceOffering)
	if !ok {
		return nil
	}
	var brokers v1alpha1.ServiceBrokerList
	if err := r.Client.List(ctx, &brokers); err != nil {
		log.FromContext(ctx).Error(err, "listing ServiceBrokers to tell them of a typed kind; they learn of it at their next catalog load", "offering", o.Name)
		return nil
	}
	var out []reconcile.Request
	for _, sb := range brokers.Items {
		if sb.Name != o.Spec.BrokerName && len(sb.Spec.TypedKinds) > 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: sb.Name}})
		}
	}
	return out
}
