package robustness

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

func TestAdmittedUnchanged(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		deleting bool
		err      error
		want     v1alpha1.Verb
	}{
		{"an update of an object being deleted asks nothing of the broker", true, nil, ""},
		{"an update of a live object asks for the update", false, nil, v1alpha1.VerbUpdate},
		{"a failed update tells nothing", true, errors.New("conflict"), v1alpha1.VerbUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := &v1alpha1.ServiceInstance{}
			if tt.deleting {
				si.DeletionTimestamp = &now
			}
			r := &history.Request{Verb: v1alpha1.VerbUpdate}
			admittedUnchanged(r, si, tt.err)
			assert.Equal(t, tt.want, r.Verb)
		})
	}
}
