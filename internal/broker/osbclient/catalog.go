package osbclient

import (
	"context"
	"net/http"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Catalog fetches the broker's catalog (GET /v2/catalog) and validates it.
func (c *Client) Catalog(ctx context.Context, meta RequestMeta) (*osbapi.Catalog, error) {
	cl := call{op: OpCatalog, method: http.MethodGet, path: "/v2/catalog"}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, unexpected(cl, a)
	}
	var out osbapi.Catalog
	if err := decode(cl, a, &out); err != nil {
		return nil, err
	}
	// A dashboard client's secret is of no use to lockstep, which is not
	// the dashboard's OAuth client: it is dropped as soon as it is read.
	for i := range out.Services {
		out.Services[i].DashboardClient = nil
	}
	if out.Services == nil {
		return nil, malformed(cl, a, `no "services" list`, nil)
	}
	if err := out.Validate(); err != nil {
		return nil, malformed(cl, a, err.Error(), err)
	}
	return &out, nil
}
