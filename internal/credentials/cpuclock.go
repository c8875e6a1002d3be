package credentials

import "time"

// started is when the process started, for monotonic.
var started = time.Now()

// monotonic is the time since the process started.
func monotonic() time.Duration { return time.Since(started) }
