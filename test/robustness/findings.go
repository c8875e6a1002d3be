package robustness

import "github.com/lockstep-dev/lockstep/test/robustness/check"

// finding is a defect the suite found that is not fixed yet.
type finding struct {
	Title     string
	Invariant check.Invariant
	Seed      int64
	Detail    string
}

// knownFindings are listed in every results file.
var knownFindings = []finding{}
