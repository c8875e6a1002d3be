package brokercall

import (
	"context"
	"fmt"
)

// staleIDs reads the catalog of req's broker again after the broker
// refused a request naming its service and plan ids (rate-limited: at
// most once per the cache's refresh interval), and says what changed when
// the catalog no longer has them, "" otherwise. A broker restarted with
// new ids refuses every request with the old ones; the next request uses
// the new ones, and the servicebroker controller brings the broker's
// status and marketplace in line.
func (p *Protocol) staleIDs(ctx context.Context, req Request) string {
	if p.Catalogs == nil {
		return ""
	}
	entry, err := p.Catalogs.Refresh(ctx, req.Broker)
	if err != nil {
		p.Log.Info("could not read the broker's catalog again after a refusal", "broker", req.Broker, "error", err.Error())
		return ""
	}
	service, ok := entry.Catalog.FindServiceByID(req.ServiceID)
	if !ok {
		return fmt.Sprintf("the broker's catalog no longer has service id %q; lockstep read the catalog again", req.ServiceID)
	}
	if _, ok := service.FindPlanByID(req.PlanID); !ok {
		return fmt.Sprintf("the broker's catalog no longer has plan id %q of service %q; lockstep read the catalog again", req.PlanID, service.Name)
	}
	return ""
}
