package plugin

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestTimelineSeparatesObjects(t *testing.T) {
	at := func(min int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC)}
	}
	op := func(name string, uid types.UID, verb v1alpha1.Verb, phase v1alpha1.OperationPhase, start, end int) v1alpha1.BrokerOperation {
		o := v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Name: name}}
		o.Spec.Target.UID, o.Spec.Verb, o.Spec.Requester.Username = uid, verb, "dev"
		o.Status.Phase, o.Status.StartTime = phase, at(start)
		if end > 0 {
			o.Status.CompletionTime = at(end)
		}
		return o
	}
	first := []v1alpha1.BrokerOperation{
		op("db-provision-1", "uid-1", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, 1, 1),
		op("db-deprovision-1", "uid-1", v1alpha1.VerbDeprovision, v1alpha1.PhaseCommitted, 2, 3),
	}
	second := []v1alpha1.BrokerOperation{op("db-provision-2", "uid-2", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, 4, 4)}
	n := named{kind: instanceKind, name: "db"}
	tests := []struct {
		name string
		uid  types.UID // of the object that exists
		ops  []v1alpha1.BrokerOperation
		want string
	}{
		{name: "one object, as ever", uid: "uid-2", ops: second,
			want: "TIME                   VERB        USER   PHASE       HTTP   OPERATION\n2026-12-01T10:04:00Z   provision   dev    Committed   -      db-provision-2\n"},
		{name: "an earlier object, then the one there is", uid: "uid-2", ops: append(append([]v1alpha1.BrokerOperation{}, first...), second...),
			want: "An earlier serviceinstance/db (uid uid-1), deleted at 2026-12-01T10:03:00Z:\n" +
				"TIME                   VERB          USER   PHASE       HTTP   OPERATION\n" +
				"2026-12-01T10:01:00Z   provision     dev    Committed   -      db-provision-1\n" +
				"2026-12-01T10:02:00Z   deprovision   dev    Committed   -      db-deprovision-1\n\n" +
				"serviceinstance/db (uid uid-2), as it is now:\n" +
				"TIME                   VERB        USER   PHASE       HTTP   OPERATION\n" +
				"2026-12-01T10:04:00Z   provision   dev    Committed   -      db-provision-2\n"},
		{name: "one object, gone: as ever", ops: first,
			want: "TIME                   VERB          USER   PHASE       HTTP   OPERATION\n" +
				"2026-12-01T10:01:00Z   provision     dev    Committed   -      db-provision-1\n" +
				"2026-12-01T10:02:00Z   deprovision   dev    Committed   -      db-deprovision-1\n"},
		{name: "a refused create, then the object", uid: "uid-2",
			ops: []v1alpha1.BrokerOperation{op("db-provision-1", "uid-1", v1alpha1.VerbProvision, v1alpha1.PhaseFailed, 1, 1), second[0]},
			want: "serviceinstance/db (uid uid-1), whose create was refused: nothing was created:\n" +
				"TIME                   VERB        USER   PHASE    HTTP   OPERATION\n" +
				"2026-12-01T10:01:00Z   provision   dev    Failed   -      db-provision-1\n\n" +
				"serviceinstance/db (uid uid-2), as it is now:\n" +
				"TIME                   VERB        USER   PHASE       HTTP   OPERATION\n" +
				"2026-12-01T10:04:00Z   provision   dev    Committed   -      db-provision-2\n"},
		{name: "only an earlier object has records", uid: "uid-2", ops: first,
			want: "An earlier serviceinstance/db (uid uid-1), deleted at 2026-12-01T10:03:00Z:\n" +
				"TIME                   VERB          USER   PHASE       HTTP   OPERATION\n" +
				"2026-12-01T10:01:00Z   provision     dev    Committed   -      db-provision-1\n" +
				"2026-12-01T10:02:00Z   deprovision   dev    Committed   -      db-deprovision-1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n.uid = tt.uid
			require.NoError(t, timeline(&out, n, tt.ops))
			assert.Equal(t, tt.want, out.String())
		})
	}
}
