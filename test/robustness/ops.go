package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// The operations of the mix, each a request (or two) of one client.

// objectName is how requests name an object.
func objectName(obj client.Object) string {
	kind := "ServiceInstance"
	if _, ok := obj.(*v1alpha1.ServiceBinding); ok {
		kind = "ServiceBinding"
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// parametersFor draws parameters for a plan of a broker; create adds the
// create-only one. Now and then they are out of the plan's schema.
func (c *actor) parametersFor(broker string, create bool) map[string]any {
	p := map[string]any{}
	invalid := c.rng.IntN(20) == 0
	if broker == fakeBroker {
		p["storageGB"] = 1 + c.rng.IntN(100)
		p["version"] = []string{"15", "16", "17"}[c.rng.IntN(3)]
		if invalid {
			p["storageGB"] = 5000
		}
		if create {
			p["region"] = []string{"eu", "us", "ap"}[c.rng.IntN(3)]
		}
		return p
	}
	p["size"] = 1 + c.rng.IntN(10)
	if invalid {
		p["size"] = 50
	}
	if create {
		p["region"] = []string{"eu", "us"}[c.rng.IntN(2)]
	}
	return p
}

func raw(v any) *runtime.RawExtension {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return &runtime.RawExtension{Raw: b}
}

func decodeParams(r *runtime.RawExtension) map[string]any {
	m := map[string]any{}
	if r != nil && len(r.Raw) > 0 {
		_ = json.Unmarshal(r.Raw, &m)
	}
	return m
}

func (c *actor) pickBroker() *brokerUnderTest {
	if c.rng.IntN(10) < 6 {
		return c.t.env.broker(fakeBroker)
	}
	return c.t.env.broker(embeddedBroker)
}

func (c *actor) createInstance(ctx context.Context) bool {
	ns := c.t.pickNamespace(c.rng)
	if ns == "" {
		return true
	}
	b := c.pickBroker()
	c.seq++
	name := fmt.Sprintf("c%d-i%d", c.id, c.seq)
	params := c.parametersFor(b.name, true)
	si := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: b.name, ServiceName: b.service, PlanName: b.plans[c.rng.IntN(len(b.plans))],
			ExternalID: uuid.NewString()},
	}
	policy := v1alpha1.PolicyManage
	if c.rng.IntN(10) == 0 {
		policy = v1alpha1.PolicyDetachOnDelete
		si.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: string(policy)}
	}
	kind := history.CreateInstance
	if b.name == fakeBroker && c.rng.IntN(5) == 0 {
		// Some parameters from a Secret, which the client writes first.
		version := params["version"]
		delete(params, "version")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-params"},
			StringData: map[string]string{"params": fmt.Sprintf(`{"version": %q}`, version)}}
		if err := c.t.env.admin.Create(ctx, secret); err != nil {
			return true
		}
		c.t.rememberSecretValue(ns+"/"+name, "version", version)
		si.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: secret.Name, Key: "params"}}}
	}
	si.Spec.Parameters = raw(params)
	c.objs = append(c.objs, objectRef{"instance", ns, name})
	c.request(ctx, &history.Request{Kind: kind, Object: objectName(si), Namespace: ns, Broker: b.name, ExternalID: si.Spec.ExternalID,
		Verb: v1alpha1.VerbProvision, Policy: policy, Detail: fmt.Sprintf("plan %s, parameters %s", si.Spec.PlanName, si.Spec.Parameters.Raw)},
		func(ctx context.Context) error { return c.t.env.users.Create(ctx, si) })
	return true
}

func (t *traffic) rememberSecretValue(instance, key string, v any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fromSecrets[instance] == nil {
		t.fromSecrets[instance] = map[string][]any{}
	}
	t.fromSecrets[instance][key] = append(t.fromSecrets[instance][key], v)
}

// update changes an instance's spec with change, as kind.
func (c *actor) update(ctx context.Context, kind history.Kind, change func(si *v1alpha1.ServiceInstance, b *brokerUnderTest) (string, bool)) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	b := c.t.env.broker(si.Spec.BrokerName)
	detail, ok := change(si, b)
	if !ok {
		return false
	}
	policy, _ := v1alpha1.PolicyOf(si)
	r := &history.Request{Kind: kind, Object: objectName(si), Namespace: si.Namespace, Broker: b.name, ExternalID: si.Spec.ExternalID,
		Verb: v1alpha1.VerbUpdate, Policy: policy, Detail: detail}
	c.request(ctx, r, func(ctx context.Context) error {
		err := c.t.env.users.Update(ctx, si)
		admittedUnchanged(r, si, err)
		return err
	})
	return true
}

// admittedUnchanged notes that an update of an object being deleted asks
// nothing of the broker: lockstep admits it unchanged, and must not call
// the broker. The object the API server answers with tells: it carries
// the deletion timestamp of the object it updated.
func admittedUnchanged(r *history.Request, obj client.Object, err error) {
	if err == nil && obj.GetDeletionTimestamp() != nil {
		r.Verb = ""
		r.Detail += "; the object was being deleted: nothing to change at the broker"
	}
}

func (c *actor) updateParameters(ctx context.Context) bool {
	return c.update(ctx, history.UpdateParameters, func(si *v1alpha1.ServiceInstance, b *brokerUnderTest) (string, bool) {
		params := decodeParams(si.Spec.Parameters)
		before, _ := json.Marshal(params)
		for k, v := range c.parametersFor(b.name, false) {
			if len(si.Spec.ParametersFrom) > 0 && k == "version" {
				continue
			}
			params[k] = v
		}
		after, _ := json.Marshal(params)
		if string(before) == string(after) {
			return "", false
		}
		si.Spec.Parameters = raw(params)
		return fmt.Sprintf("parameters %s to %s", before, after), true
	})
}

func (c *actor) changePlan(ctx context.Context) bool {
	return c.update(ctx, history.ChangePlan, func(si *v1alpha1.ServiceInstance, b *brokerUnderTest) (string, bool) {
		from := si.Spec.PlanName
		for _, p := range b.plans {
			if p != from {
				si.Spec.PlanName = p
			}
		}
		return fmt.Sprintf("plan %s to %s", from, si.Spec.PlanName), si.Spec.PlanName != from
	})
}

func (c *actor) updateFromSecret(ctx context.Context) bool {
	return c.update(ctx, history.UpdateFromSecret, func(si *v1alpha1.ServiceInstance, b *brokerUnderTest) (string, bool) {
		if len(si.Spec.ParametersFrom) == 0 {
			return "", false
		}
		ref := si.Spec.ParametersFrom[0].SecretKeyRef
		version := []string{"15", "16", "17"}[c.rng.IntN(3)]
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: si.Namespace, Name: ref.Name},
			StringData: map[string]string{ref.Key: fmt.Sprintf(`{"version": %q}`, version)}}
		if err := c.t.env.admin.Update(ctx, secret); err != nil {
			return "", false
		}
		c.t.rememberSecretValue(si.Namespace+"/"+si.Name, "version", version)
		si.Spec.ParametersFromGeneration++
		return fmt.Sprintf("Secret %s says version %s; parametersFromGeneration %d", ref.Name, version, si.Spec.ParametersFromGeneration), true
	})
}

func (c *actor) bind(ctx context.Context) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	b := c.t.env.broker(si.Spec.BrokerName)
	c.seq++
	name := fmt.Sprintf("c%d-b%d", c.id, c.seq)
	sb := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: si.Namespace, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: si.Name, SecretName: name, ExternalID: uuid.NewString()},
	}
	if b.roleParameter && c.rng.IntN(2) == 0 {
		sb.Spec.Parameters = raw(map[string]any{"role": []string{"reader", "writer"}[c.rng.IntN(2)]})
	}
	c.objs = append(c.objs, objectRef{"binding", sb.Namespace, name})
	detail := "of instance " + si.Name
	if sb.Spec.Parameters != nil {
		detail += ", parameters " + string(sb.Spec.Parameters.Raw)
	}
	c.request(ctx, &history.Request{Kind: history.Bind, Object: objectName(sb), Namespace: sb.Namespace, Broker: b.name, ExternalID: sb.Spec.ExternalID,
		InstanceID: si.Spec.ExternalID, Verb: v1alpha1.VerbBind, Policy: v1alpha1.PolicyManage, Detail: detail},
		func(ctx context.Context) error { return c.t.env.users.Create(ctx, sb) })
	return true
}

func (c *actor) unbind(ctx context.Context) bool {
	obj := c.pick(ctx, "binding")
	if obj == nil {
		return false
	}
	sb := obj.(*v1alpha1.ServiceBinding)
	r := &history.Request{Kind: history.Unbind, Object: objectName(sb), Namespace: sb.Namespace, ExternalID: sb.Spec.ExternalID,
		Verb: v1alpha1.VerbUnbind, Policy: v1alpha1.PolicyManage, Unsure: !meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)}
	if policy, _ := v1alpha1.PolicyOf(sb); policy != v1alpha1.PolicyManage {
		r.Verb, r.Policy = "", policy
	}
	var si v1alpha1.ServiceInstance
	if c.t.env.admin.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Spec.InstanceName}, &si) == nil {
		r.Broker, r.InstanceID = si.Spec.BrokerName, si.Spec.ExternalID
	} else {
		r.Unsure = true
	}
	c.request(ctx, r, func(ctx context.Context) error { return c.t.env.users.Delete(ctx, sb) })
	return true
}

func (c *actor) deleteInstance(ctx context.Context) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	policy, _ := v1alpha1.PolicyOf(si)
	r := &history.Request{Kind: history.DeleteInstance, Object: objectName(si), Namespace: si.Namespace, Broker: si.Spec.BrokerName,
		ExternalID: si.Spec.ExternalID, Verb: v1alpha1.VerbDeprovision, Policy: policy,
		Unsure: !meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)}
	if v1alpha1.KeepsBrokerOnDelete(si) {
		r.Verb = ""
	}
	c.request(ctx, r, func(ctx context.Context) error { return c.t.env.users.Delete(ctx, si) })
	if r.Answer == history.Allowed && r.Verb == "" && !r.Unsure {
		c.t.mu.Lock()
		c.t.released = append(c.t.released, released{broker: si.Spec.BrokerName, plan: si.Spec.PlanName, id: si.Spec.ExternalID,
			parameters: decodeParams(si.Spec.Parameters)})
		c.t.mu.Unlock()
	}
	return true
}

func (c *actor) deleteNamespace(ctx context.Context) bool {
	c.t.mu.Lock()
	if len(c.t.namespaces) < 2 {
		c.t.mu.Unlock()
		return false
	}
	i := c.rng.IntN(len(c.t.namespaces))
	ns := c.t.namespaces[i]
	c.t.namespaces = slices.Delete(c.t.namespaces, i, i+1)
	c.t.deleted = append(c.t.deleted, ns)
	c.t.mu.Unlock()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	c.request(ctx, &history.Request{Kind: history.DeleteNamespace, Object: "Namespace " + ns, Namespace: ns},
		func(ctx context.Context) error { return c.t.env.users.Delete(ctx, obj) })
	_, _ = c.t.newNamespace(ctx)
	return true
}

func (c *actor) setPolicy(ctx context.Context) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	policies := []v1alpha1.ReconcilePolicy{v1alpha1.PolicyManage, v1alpha1.PolicyManage, v1alpha1.PolicyDetachOnDelete, v1alpha1.PolicyObserve}
	policy := policies[c.rng.IntN(len(policies))]
	if si.Annotations == nil {
		si.Annotations = map[string]string{}
	}
	si.Annotations[v1alpha1.AnnotationReconcilePolicy] = string(policy)
	c.request(ctx, &history.Request{Kind: history.SetPolicy, Object: objectName(si), Namespace: si.Namespace, Broker: si.Spec.BrokerName,
		ExternalID: si.Spec.ExternalID, Policy: policy, Detail: "to " + string(policy)},
		func(ctx context.Context) error { return c.t.env.users.Update(ctx, si) })
	return true
}

// adopt creates an instance for what a delete left at its broker.
func (c *actor) adopt(ctx context.Context) bool {
	c.t.mu.Lock()
	if len(c.t.released) == 0 {
		c.t.mu.Unlock()
		return false
	}
	i := c.rng.IntN(len(c.t.released))
	rel := c.t.released[i]
	c.t.released = slices.Delete(c.t.released, i, i+1)
	c.t.mu.Unlock()
	ns := c.t.pickNamespace(c.rng)
	if ns == "" {
		return false
	}
	b := c.t.env.broker(rel.broker)
	c.seq++
	policy := []v1alpha1.ReconcilePolicy{v1alpha1.PolicyManage, v1alpha1.PolicyObserve}[c.rng.IntN(2)]
	si := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d-a%d", c.id, c.seq),
			Annotations: map[string]string{v1alpha1.AnnotationAdopt: "true", v1alpha1.AnnotationReconcilePolicy: string(policy)}},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: b.name, ServiceName: b.service, PlanName: rel.plan, Parameters: raw(rel.parameters), ExternalID: rel.id},
	}
	c.objs = append(c.objs, objectRef{"instance", ns, si.Name})
	c.request(ctx, &history.Request{Kind: history.Adopt, Object: objectName(si), Namespace: ns, Broker: b.name, ExternalID: rel.id,
		Policy: policy, Detail: fmt.Sprintf("plan %s, parameters %s, as %s", rel.plan, si.Spec.Parameters.Raw, policy)},
		func(ctx context.Context) error { return c.t.env.users.Create(ctx, si) })
	return true
}

// dryRun asks for a create, an update or a delete with dryRun=All: the
// broker must never hear of it.
func (c *actor) dryRun(ctx context.Context) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	b := c.t.env.broker(si.Spec.BrokerName)
	r := &history.Request{Kind: history.DryRun, Object: objectName(si), Namespace: si.Namespace, Broker: b.name, ExternalID: si.Spec.ExternalID}
	switch c.rng.IntN(3) {
	case 0:
		si.Spec.Parameters = raw(c.parametersFor(b.name, false))
		r.Detail = "update to parameters " + string(si.Spec.Parameters.Raw)
		c.request(ctx, r, func(ctx context.Context) error { return c.t.env.users.Update(ctx, si, client.DryRunAll) })
	case 1:
		r.Detail = "delete"
		c.request(ctx, r, func(ctx context.Context) error { return c.t.env.users.Delete(ctx, si, client.DryRunAll) })
	default:
		c.seq++
		fresh := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: si.Namespace, Name: fmt.Sprintf("c%d-d%d", c.id, c.seq)},
			Spec: v1alpha1.ServiceInstanceSpec{BrokerName: b.name, ServiceName: b.service, PlanName: b.plans[0],
				Parameters: raw(c.parametersFor(b.name, true)), ExternalID: uuid.NewString()}}
		r.Object, r.ExternalID, r.Detail = objectName(fresh), fresh.Spec.ExternalID, "create"
		c.request(ctx, r, func(ctx context.Context) error { return c.t.env.users.Create(ctx, fresh, client.DryRunAll) })
	}
	return true
}

// conflictingEdit sends two updates of one instance at once, each as a
// user of its own, with different parameters.
func (c *actor) conflictingEdit(ctx context.Context) bool {
	obj := c.pick(ctx, "instance")
	if obj == nil {
		return false
	}
	si := obj.(*v1alpha1.ServiceInstance)
	b := c.t.env.broker(si.Spec.BrokerName)
	policy, _ := v1alpha1.PolicyOf(si)
	// Two values of one parameter, each other than the other and than the
	// one persisted, so that each edit changes the spec whichever comes
	// first.
	key, lo, span := "storageGB", 1, 100
	if b.name != fakeBroker {
		key, lo, span = "size", 1, 10
	}
	current := decodeParams(si.Spec.Parameters)[key]
	var values []int
	for len(values) < 2 {
		v := lo + c.rng.IntN(span)
		if !slices.Contains(values, v) && fmt.Sprint(v) != fmt.Sprint(current) {
			values = append(values, v)
		}
	}
	var wg sync.WaitGroup
	for i := range 2 {
		edit := si.DeepCopy()
		params := decodeParams(edit.Spec.Parameters)
		params[key] = values[i]
		edit.Spec.Parameters = raw(params)
		c.seq++
		user := fmt.Sprintf("rb-client%d-r%d", c.id, c.seq)
		r := &history.Request{Client: c.id, User: user, Kind: history.ConflictingEdit, Object: objectName(si), Namespace: si.Namespace,
			Broker: b.name, ExternalID: si.Spec.ExternalID, Verb: v1alpha1.VerbUpdate, Policy: policy,
			Detail: "parameters to " + string(edit.Spec.Parameters.Raw)}
		// A merge patch without a resourceVersion: both reach admission.
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"parameters":%s}}`, edit.Spec.Parameters.Raw))
		wg.Go(func() {
			defer c.t.gate.enter(ctx, r.Verb)()
			c.t.hist.Begin(r)
			w := &warnings{}
			rctx, cancel := context.WithTimeout(as(ctx, user, w), time.Minute)
			defer cancel()
			err := c.t.env.users.Patch(rctx, edit, patch)
			admittedUnchanged(r, edit, err)
			c.t.hist.End(r, err, w.all())
		})
	}
	wg.Wait()
	return true
}
