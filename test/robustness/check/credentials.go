package check

import (
	"fmt"
	"strings"
)

// Credentials checks that no credential appears in what lockstep wrote
// for people and machines to read: its logs, events, operation records,
// status, metrics. Every credential the brokers hand out begins with one
// of the Snapshot's markers.
func Credentials(s Snapshot) []Violation {
	var out []Violation
	for _, t := range s.Texts {
		for _, marker := range s.Credentials {
			i := strings.Index(t.Content, marker)
			if marker == "" || i < 0 {
				continue
			}
			out = append(out, Violation{Invariant: NoCredentials, Object: t.Source,
				Message: fmt.Sprintf("a credential (%q...) appears %d time(s), first in: %s", marker, strings.Count(t.Content, marker), lineAround(t.Content, i))})
		}
	}
	return out
}

// lineAround returns the line of text that holds position i, cut to a
// readable length.
func lineAround(text string, i int) string {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += i
	}
	line := text[start:end]
	if len(line) > 400 {
		from := max(i-start-200, 0)
		line = "..." + line[from:min(from+400, len(line))] + "..."
	}
	return line
}
