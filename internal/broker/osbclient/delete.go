package osbclient

import (
	"context"
	"net/http"
)

// DeleteResponse is the broker's acceptance of a deprovision or unbind.
type DeleteResponse struct {
	// HTTPStatus is 200 (deleted), 202 (accepted; poll Operation) or 410
	// (Gone: the broker did not know it, which counts as deleted).
	HTTPStatus int
	Async      bool
	Operation  string
	// Gone is set for 410: the instance or binding was already gone.
	Gone bool
}

// deleteCall runs a deprovision or unbind; both have the same answers.
func deleteCall(ctx context.Context, c *Client, meta RequestMeta, cl call) (*DeleteResponse, error) {
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	switch a.status {
	case http.StatusOK:
		// The body is "{}" and carries nothing a caller needs: a 200 is a
		// success whatever it holds.
		return &DeleteResponse{HTTPStatus: a.status}, nil
	case http.StatusGone:
		return &DeleteResponse{HTTPStatus: a.status, Gone: true}, nil
	case http.StatusAccepted:
		var body struct {
			Operation string `json:"operation"`
		}
		if err := decode(cl, a, &body); err != nil {
			return nil, err
		}
		return &DeleteResponse{HTTPStatus: a.status, Async: true, Operation: body.Operation}, nil
	default:
		return nil, unexpected(cl, a)
	}
}
