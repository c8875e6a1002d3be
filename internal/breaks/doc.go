// Package breaks holds deliberate breaks of lockstep's promises, with
// which the robustness suite (test/robustness) shows that it notices a
// broken promise. Each break is a switch at one place in the code; it can
// be on only in a binary built with the build tag lockstep_breaks (the
// suite builds its own), and there only when the environment variable
// LOCKSTEP_BREAK names it (several separated by commas). In every other
// build Active is a constant false, and the compiler drops the code
// behind it.
package breaks

// Break names a deliberate break.
type Break string

// The breaks.
const (
	// AllowRefused allows a change that the broker phase of admission
	// refused: the API server persists what the broker never carried out.
	AllowRefused Break = "allow-refused"
	// PollErrorFails reports an error while polling last_operation as a
	// failed operation, although the broker may still carry it out.
	PollErrorFails Break = "poll-error-fails"
	// LogCredentials logs the credentials written into a binding's Secret.
	LogCredentials Break = "log-credentials"
)

// All lists every break.
var All = []Break{AllowRefused, PollErrorFails, LogCredentials}

// EnvVar names the breaks that are on, in a binary built with the tag.
const EnvVar = "LOCKSTEP_BREAK"
