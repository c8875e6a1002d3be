package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
)

// ServiceName is the service.name of lockstep's spans unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "lockstep"

// Shutdown flushes the spans not exported yet and stops the exporters.
type Shutdown func(context.Context) error

// The names of lockstep's spans (see doc.go); a broker request's is
// "osb." and its request (OSB).
const (
	SpanAdmission = "lockstep.admission"
	SpanChecks    = "lockstep.checks"
	SpanLock      = "lockstep.lock"
	SpanBroker    = "lockstep.broker"
	SpanPoll      = "osb.poll"
	SpanRecord    = "lockstep.record"
	SpanFollow    = "lockstep.follow"
	SpanResync    = "lockstep.resync"
)

// OSB is the name of the span of one request to a broker.
func OSB(request string) string { return "osb." + request }

// The attributes of lockstep's spans. None holds a parameter value, a
// credential, a broker's description or an error message.
const (
	// AttrWebhook is the path of the webhook asked (lockstep.admission).
	AttrWebhook = attribute.Key("lockstep.webhook")
	// AttrOperation is the admission request's operation (CREATE, UPDATE,
	// DELETE).
	AttrOperation = attribute.Key("lockstep.admission.operation")
	// AttrDryRun says the admission request is a dry run.
	AttrDryRun = attribute.Key("lockstep.admission.dry_run")
	// AttrResult and AttrReason are the admission's decision, as
	// lockstep_admission_decisions_total counts it.
	AttrResult = attribute.Key("lockstep.admission.result")
	AttrReason = attribute.Key("lockstep.admission.reason")
	// AttrKind, AttrNamespace and AttrName name the object.
	AttrKind      = attribute.Key("lockstep.object.kind")
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrName      = attribute.Key("lockstep.object.name")
	// AttrFieldErrors counts the field errors the static checks found.
	AttrFieldErrors = attribute.Key("lockstep.checks.field_errors")
	// AttrVerb is the broker operation's verb (provision, update, ...).
	AttrVerb = attribute.Key("lockstep.verb")
	// AttrRecord names the operation's record (BrokerOperation).
	AttrRecord = attribute.Key("lockstep.operation")
	// AttrPhase is the phase of the operation's record.
	AttrPhase = attribute.Key("lockstep.phase")
	// AttrLock says how taking the lock went: taken, held (by another
	// operation: AttrHolder names its record), failed.
	AttrLock   = attribute.Key("lockstep.lock")
	AttrHolder = attribute.Key("lockstep.lock.holder")
	// AttrBroker is the ServiceBroker's name.
	AttrBroker = attribute.Key("lockstep.broker")
	// AttrVerdict is what a broker call came to: done, refused, unknown,
	// running.
	AttrVerdict = attribute.Key("lockstep.verdict")
	// AttrRequest is the OSB request (provision, instance_last_operation,
	// ...).
	AttrRequest = attribute.Key("osb.request")
	// AttrInstanceID and AttrBindingID are the OSB ids.
	AttrInstanceID = attribute.Key("osb.instance_id")
	AttrBindingID  = attribute.Key("osb.binding_id")
	// AttrPolls counts last_operation requests; AttrState is the last
	// state the broker gave.
	AttrPolls = attribute.Key("osb.polls")
	AttrState = attribute.Key("osb.state")
	// AttrResyncResult is what resync found (InSync, PlanDrift, ...).
	AttrResyncResult = attribute.Key("lockstep.resync.result")
	// The HTTP attributes of a broker request, as OpenTelemetry's
	// semantic conventions name them.
	AttrMethod     = attribute.Key("http.request.method")
	AttrStatusCode = attribute.Key("http.response.status_code")
	AttrServer     = attribute.Key("server.address")
	AttrPort       = attribute.Key("server.port")
	AttrPath       = attribute.Key("url.path")
	AttrErrorType  = attribute.Key("error.type")
)

// AnnotationTraceparent on a BrokerOperation is the W3C traceparent of the
// span that started the operation: the operations reconciler's follow-ups
// join that trace.
const AnnotationTraceparent = "lockstep.dev/traceparent"

// instrumentation names lockstep's tracer.
const instrumentation = "github.com/lockstep-dev/lockstep"
