package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitServing waits until addr completes a TLS handshake, checking every
// 100ms for at most timeout. stopped, when not nil, reports an error once
// the server has ended: then the wait ends at once with that error.
func WaitServing(ctx context.Context, addr string, timeout time.Duration, stopped func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if stopped != nil {
			if err := stopped(); err != nil {
				return false, err
			}
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err != nil {
			last = err
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("nothing served TLS on %s within %s (last attempt: %v)", addr, timeout, last)
	}
	return err
}
