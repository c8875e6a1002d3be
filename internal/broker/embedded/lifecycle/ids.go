package lifecycle

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// MaxIDLength is the longest instance id, binding id or operation the
// broker accepts.
const MaxIDLength = 255

// checkID refuses an identifier that is empty, longer than MaxIDLength, or
// holds anything but RFC 3986 unreserved characters (letters, digits, '-',
// '.', '_', '~'): identifiers travel in URL paths, store keys, logs and the
// environment of bundle actions, where a NUL byte, a '/' or a control
// character would break something.
func checkID(field, id string) error {
	switch {
	case id == "":
		return badRequest("%s is required", field)
	case len(id) > MaxIDLength:
		return badRequest("%s is %d characters long; at most %d are allowed", field, len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !unreserved(id[i]) {
			return badRequest("%s %s holds the character %s: identifiers may only hold letters, digits, '-', '.', '_' and '~' (a GUID is recommended)",
				field, quoteID(id), quoteChar(id[i]))
		}
	}
	return nil
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// quoteID quotes an identifier for a message, shortened when long.
func quoteID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return fmt.Sprintf("%q", id)
}

func quoteChar(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", string(c))
}

// checkStoredID is checkID for requests about a record that may exist
// already (deprovision, unbind, fetch, last_operation): a record stored
// under an identifier these rules now refuse is still served, so that
// nothing the broker holds can become impossible to delete.
func (s *Service) checkStoredID(ctx context.Context, field, id, key string) error {
	err := checkID(field, id)
	if err == nil || id == "" || len(id) > MaxIDLength {
		return err
	}
	found := false
	_ = s.opts.Store.View(ctx, func(tx store.Tx) error {
		_, getErr := tx.Get(key)
		found = getErr == nil
		return nil
	})
	if found {
		return nil
	}
	return err
}
