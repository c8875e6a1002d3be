package executor

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
)

// validName is what a state key (and an exported parameter) must look like
// to become an environment variable.
var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxStateBytes bounds the state file an action may write.
const maxStateBytes = 64 << 10

// ParseState reads key=value lines. Blank lines and lines starting with #
// are ignored; the value is everything after the first "=", and an empty
// value means "remove the key". A later line wins over an earlier one.
func ParseState(data []byte) (map[string]string, error) {
	if len(data) > maxStateBytes {
		return nil, fmt.Errorf("the state file is %d bytes; at most %d are allowed", len(data), maxStateBytes)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxStateBytes)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		key, value, ok := bytes.Cut([]byte(text), []byte("="))
		if !ok {
			return nil, fmt.Errorf("state file line %d: want key=value", line)
		}
		if !validName.Match(key) {
			return nil, fmt.Errorf("state file line %d: key %q must be letters, digits and '_', not starting with a digit", line, key)
		}
		if bytes.IndexByte(value, 0) >= 0 {
			return nil, fmt.Errorf("state file line %d: the value of %q holds a NUL byte; values are text", line, key)
		}
		out[string(key)] = string(value)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	return out, nil
}

// MergeState applies updates to state (an empty value removes the key) and
// returns the result; state is not modified.
func MergeState(state, updates map[string]string) map[string]string {
	out := make(map[string]string, len(state)+len(updates))
	for k, v := range state {
		out[k] = v
	}
	for k, v := range updates {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
