package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// parametersFrom resolves spec.parametersFrom, as the first part of a
// kind's Resolver: it reads the named Secrets (uncached) and merges their
// JSON objects into the parameters that the catalog check validates and
// the broker step sends. A missing Secret or key, a value that is not a
// JSON object, or a parameter set in two places is a field error naming
// the Secret and key, never the value. On UPDATE it also resolves the
// persisted object's parameters, with the Secrets' current values, for the
// create-only check.
type parametersFrom[T client.Object] struct {
	secrets client.Reader
	// access, when set, is asked whether the requester may read each
	// Secret: lockstep reads it with its own rights.
	access Authorizer
	// of returns an object's spec.parameters and spec.parametersFrom.
	of func(T) (*runtime.RawExtension, []v1alpha1.ParametersFromSource)
	// maxBytes bounds each value read (LOCKSTEP_MAX_PARAMETERS_BYTES);
	// 0 sets no bound.
	maxBytes int
}

// resolve returns the new object's merged parameters and, on UPDATE, the
// persisted object's; params is nil, with the field errors saying why,
// when a reference cannot be resolved. On DELETE it resolves nothing.
func (c *parametersFrom[T]) resolve(ctx context.Context, a *Attributes[T]) (params, old *parametersfrom.Resolved, _ field.ErrorList, _ error) {
	if a.Operation == admissionv1.Delete {
		return nil, nil, nil, nil
	}
	own, from := c.of(a.New)
	if len(from) > parametersfrom.MaxSources {
		// Before any Secret is read or any access asked about.
		return nil, nil, field.ErrorList{field.TooMany(field.NewPath("spec", "parametersFrom"), len(from), parametersfrom.MaxSources)}, nil
	}
	if errs, err := c.mayRead(ctx, a, from); err != nil || len(errs) > 0 {
		return nil, nil, errs, err
	}
	res, errs, err := parametersfrom.Resolve(ctx, c.secrets, a.New.GetNamespace(), own, from, field.NewPath("spec", "parametersFrom"), c.maxBytes)
	if err != nil {
		return nil, nil, nil, unavailable("%v; nothing was changed and the broker was not called: retry", err)
	}
	if len(errs) > 0 {
		return nil, nil, errs, nil
	}
	if a.Operation != admissionv1.Update {
		return &res, nil, nil, nil
	}
	oldOwn, oldFrom := c.of(a.Old)
	prev, errs, err := parametersfrom.Resolve(ctx, c.secrets, a.Old.GetNamespace(), oldOwn, oldFrom, field.NewPath("spec", "parametersFrom"), c.maxBytes)
	if err != nil {
		return nil, nil, nil, unavailable("%v; nothing was changed and the broker was not called: retry", err)
	}
	if len(errs) > 0 {
		// The persisted references no longer resolve (a Secret was
		// deleted): compare with spec.parameters alone.
		prev = parametersfrom.Resolved{Parameters: oldOwn}
	}
	return &res, &prev, nil, nil
}

// mayRead refuses references to Secrets the requester may not get
// (each Secret asked about once).
func (c *parametersFrom[T]) mayRead(ctx context.Context, a *Attributes[T], from []v1alpha1.ParametersFromSource) (field.ErrorList, error) {
	if c.access == nil {
		return nil, nil
	}
	var errs field.ErrorList
	asked := map[string]bool{}
	ns := a.New.GetNamespace()
	for i, src := range from {
		name := src.SecretKeyRef.Name
		if asked[name] {
			continue
		}
		asked[name] = true
		ok, err := mayGetSecret(ctx, c.access, a.User, ns, name)
		if err != nil {
			return nil, unavailable("%v; nothing was changed and the broker was not called: retry", err)
		}
		if !ok {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "parametersFrom").Index(i).Child("secretKeyRef", "name"), fmt.Sprintf(
				"user %q may not get Secret %q in namespace %q, and lockstep sends a Secret's values only for users who may read it themselves; "+
					"ask for get on it (RBAC), or name another Secret", a.User.Username, name, ns)))
		}
	}
	return errs, nil
}

// mayGetSecret asks whether user may get the Secret name in namespace ns:
// lockstep reads Secrets with its own rights, and uses a Secret's values
// for a request only when its requester may read them too.
func mayGetSecret(ctx context.Context, access Authorizer, user authenticationv1.UserInfo, ns, name string) (bool, error) {
	return access.Allowed(ctx, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name})
}

// mergedParams returns the parameters to validate and send: the resolved
// ones, or the spec's own when nothing was resolved.
func mergedParams(r *parametersfrom.Resolved, own *runtime.RawExtension) *runtime.RawExtension {
	if r == nil {
		return own
	}
	return r.Parameters
}

// redact hides the values from Secrets in the field errors of a check of
// the merged parameters.
func redact(errs field.ErrorList, path *field.Path, rs ...*parametersfrom.Resolved) field.ErrorList {
	var all parametersfrom.Resolved
	for _, r := range rs {
		if r != nil {
			all = all.With(*r)
		}
	}
	return all.Redact(errs, path)
}

// parametersDigest is the digest of the merged parameters when some came
// from Secrets, for the journal and status; "" otherwise.
func parametersDigest(r *parametersfrom.Resolved) string {
	if r == nil || !r.FromSecrets() {
		return ""
	}
	d, err := parametersfrom.Digest(r.Parameters.Raw)
	if err != nil {
		return ""
	}
	return d
}

// createOnlyDigest is the digest of the create-only parameters among the
// merged parameters when some came from Secrets; "" otherwise.
func createOnlyDigest(s *schema.PlanSchemas, r *parametersfrom.Resolved) string {
	if r == nil || !r.FromSecrets() {
		return ""
	}
	values, err := s.CreateOnlyValues(r.Parameters)
	if err != nil {
		return ""
	}
	d, err := parametersfrom.Digest(values)
	if err != nil {
		return ""
	}
	return d
}

// createOnlyFromSecrets refuses an update whose create-only parameters
// differ from those the broker was last given, when some come from
// Secrets: one of the Secrets changed since. Only a digest of the values
// was kept, so the refusal names the create-only parameters that come
// from Secrets, and no value. A digest whose key is gone cannot tell:
// the update goes to the broker, which judges it.
func createOnlyFromSecrets(s *schema.PlanSchemas, old Instance, r *parametersfrom.Resolved, path *field.Path) field.ErrorList {
	last := old.Status.LastApplied
	if r == nil || !r.FromSecrets() || last == nil || last.CreateOnlyDigest == "" {
		return nil
	}
	values, err := s.CreateOnlyValues(r.Parameters)
	if err != nil {
		return nil
	}
	if verdict, err := parametersfrom.Verify(last.CreateOnlyDigest, values); err != nil || verdict != parametersfrom.Different {
		return nil
	}
	var names []string
	for _, p := range s.CreateOnly() {
		if where, ok := r.Sources[rootOf(p)]; ok {
			names = append(names, fmt.Sprintf("%s (from %s)", p, where))
		}
	}
	if len(names) == 0 {
		return nil // none from a Secret: the create-only check of spec.parameters speaks
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"the create-only parameters from Secrets hold other values than the broker was given: %s; a create-only parameter cannot be changed after creation: "+
			"put the values back into the Secret, or delete and recreate the instance to change them", strings.Join(names, ", ")))}
}

// rootOf returns the top-level parameter of a create-only path as
// CreateOnly writes it ("storage.class", "[a.b].c").
func rootOf(p string) string {
	if rest, ok := strings.CutPrefix(p, "["); ok {
		name, _, _ := strings.Cut(rest, "]")
		return name
	}
	if i := strings.IndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return p
}
