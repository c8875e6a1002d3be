package admission

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// fakeResolver returns its Target, field errors and error, and notes that
// it ran.
type fakeResolver struct {
	trace  *[]string
	target *Target
	errs   field.ErrorList
	err    error
}

func (r *fakeResolver) Name() string { return "fake" }

func (r *fakeResolver) Resolve(context.Context, *Attributes[Instance]) (*Target, field.ErrorList, admission.Warnings, error) {
	*r.trace = append(*r.trace, "resolve")
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	return r.target, r.errs, nil, nil
}

// fakeTargetCheck returns its field errors and notes the Target it got.
type fakeTargetCheck struct {
	trace *[]string
	seen  **Target
	errs  field.ErrorList
}

func (c *fakeTargetCheck) Name() string { return "fake" }

func (c *fakeTargetCheck) Check(_ context.Context, _ *Attributes[Instance], t *Target) (field.ErrorList, admission.Warnings, error) {
	*c.trace = append(*c.trace, "target-check")
	*c.seen = t
	return c.errs, nil, nil
}

// fakeStep notes the Target it got.
type fakeStep struct {
	trace *[]string
	seen  **Target
}

func (s *fakeStep) Name() string { return "fake" }

func (s *fakeStep) Admit(_ context.Context, _ *Attributes[Instance], t *Target) (admission.Warnings, error) {
	*s.trace = append(*s.trace, "step")
	*s.seen = t
	return nil, nil
}

func TestValidatorOrder(t *testing.T) {
	spec := field.NewPath("spec")
	resolved := &Target{Entry: &catalog.Entry{Broker: "b"}}
	tests := []struct {
		name         string
		op           admissionv1.Operation
		dryRun       bool
		checkErrs    field.ErrorList
		resolver     fakeResolver
		targetErrs   field.ErrorList
		wantTrace    []string
		wantMessage  string // "" for allowed
		wantResolved bool   // the target check and the step got the Resolver's Target
	}{
		{
			name:      "every field error at once, in the order of the chain",
			op:        admissionv1.Create,
			checkErrs: field.ErrorList{field.Invalid(spec.Child("a"), "1", "from a check")},
			resolver: fakeResolver{target: &Target{}, errs: field.ErrorList{
				field.Invalid(spec.Child("b"), "2", "from the resolver")}},
			targetErrs: field.ErrorList{field.Invalid(spec.Child("c"), "3", "from a target check")},
			wantTrace:  []string{"check", "resolve", "target-check"},
			wantMessage: `ServiceInstance.lockstep.dev "db" is invalid: [spec.a: Invalid value: "1": from a check, ` +
				`spec.b: Invalid value: "2": from the resolver, spec.c: Invalid value: "3": from a target check]`,
		},
		{
			name:        "an error of the resolver stops the chain after the checks",
			op:          admissionv1.Create,
			checkErrs:   field.ErrorList{field.Invalid(spec.Child("a"), "1", "from a check")},
			resolver:    fakeResolver{err: errors.New("catalog not loaded")},
			wantTrace:   []string{"check", "resolve"},
			wantMessage: "catalog not loaded",
		},
		{
			name:         "the steps get what the resolver returned",
			op:           admissionv1.Create,
			resolver:     fakeResolver{target: resolved},
			wantTrace:    []string{"check", "resolve", "target-check", "step"},
			wantResolved: true,
		},
		{
			name:         "dry run: every check, no step",
			op:           admissionv1.Create,
			dryRun:       true,
			resolver:     fakeResolver{target: resolved},
			wantTrace:    []string{"check", "resolve", "target-check"},
			wantResolved: true,
		},
		{
			name:      "delete: the delete checks and the resolver, no target checks",
			op:        admissionv1.Delete,
			resolver:  fakeResolver{target: resolved},
			wantTrace: []string{"delete-check", "resolve", "step"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			var checked, admitted *Target
			check := func(name string, errs field.ErrorList) CheckFunc[Instance] {
				return CheckFunc[Instance]{CheckName: name, Fn: func(context.Context, *Attributes[Instance]) (field.ErrorList, admission.Warnings, error) {
					trace = append(trace, name)
					return errs, nil, nil
				}}
			}
			resolver := tt.resolver
			resolver.trace = &trace
			v := &Validator[Instance]{
				Kind:         instanceKind,
				Checks:       []Check[Instance]{check("check", tt.checkErrs)},
				DeleteChecks: []Check[Instance]{check("delete-check", nil)},
				Resolve:      &resolver,
				TargetChecks: []TargetCheck[Instance]{&fakeTargetCheck{trace: &trace, seen: &checked, errs: tt.targetErrs}},
				Steps:        []Step[Instance]{&fakeStep{trace: &trace, seen: &admitted}},
			}
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tt.op, DryRun: &tt.dryRun,
			}})
			var err error
			if tt.op == admissionv1.Delete {
				_, err = v.ValidateDelete(ctx, si)
			} else {
				_, err = v.ValidateCreate(ctx, si)
			}
			assert.Equal(t, tt.wantTrace, trace)
			if tt.wantMessage != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantMessage, err.Error())
				return
			}
			require.NoError(t, err)
			if tt.wantResolved {
				assert.Same(t, resolved, checked, "the target check reads the Resolver's Target")
				if !tt.dryRun {
					assert.Same(t, resolved, admitted, "the step reads the Resolver's Target")
				}
			}
		})
	}
}
