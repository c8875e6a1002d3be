package admission

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: broker
// calls, polls and followers must all end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
