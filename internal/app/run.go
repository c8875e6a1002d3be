package app

// The operation journal and the per-object lock, which run creates here
// for admission and the reconcilers: a BrokerOperation is written before
// every broker call (create; next to its object, or in lockstep's
// namespace for a delete in a namespace being deleted). The lock is one
// coordination.k8s.io Lease per object, in lockstep's own namespace
// (never the object's, which may be being deleted): create to take it,
// update to renew it or take over an expired one, delete to release it,
// get to read the holder (read directly, never cached).
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=brokeroperations,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=LOCKSTEP_NAMESPACE,resources=leases,verbs=get;create;update;delete

// Events on instances and bindings, one per broker outcome, for
// `kubectl describe` (patch: a repeated event is counted, not duplicated).
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// The cluster's id, sent to brokers as the OSB context's clusterid and the
// organization_guid, is the UID of kube-system unless LOCKSTEP_CLUSTER_ID
// is set: read once at start.
//
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/binding"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/instance"
	"github.com/lockstep-dev/lockstep/internal/controller/marketplace"
	"github.com/lockstep-dev/lockstep/internal/controller/operations"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/controller/servicebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/typedkinds"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
	"github.com/lockstep-dev/lockstep/internal/quota"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// Scheme returns a scheme with the Kubernetes built-in kinds and lockstep's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registration; cannot fail at run time
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Logger builds the structured logger the configuration asks for.
func Logger(c Config) zap.Opts {
	return func(o *zap.Options) {
		o.Development = c.LogFormat == "console"
		level := zapcore.InfoLevel
		switch c.LogLevel {
		case "debug":
			level = zapcore.DebugLevel
		case "error":
			level = zapcore.ErrorLevel
		}
		o.Level = level
	}
}

// operationWorkers is how many BrokerOperations the operations reconciler
// settles at once: a burst of admissions (a cluster restored by GitOps)
// leaves as many records to commit, each holding its object's lock until
// then, and committing one is mostly API server round trips.
const operationWorkers = 8

// brokeredWorkers is how many instances, bindings and typed kinds' objects
// their controllers reconcile at once. It is not resync's broker-call
// concurrency: resync.Limiter bounds the fetches at each broker, and a
// reconcile is mostly API server round trips (a burst of new objects
// waits on those, not on brokers).
const brokeredWorkers = 8

// CacheOptions is what the manager's cache holds beyond lockstep's own
// kinds. Secrets are read one at a time, uncached (the client's
// DisableFor), and only the Secrets lockstep wrote for bindings are
// watched, as trimmed metadata (credentials.CacheSecrets): never every
// Secret of the cluster, never a Secret's data. Leases (the per-object
// locks) are read directly too: no informer on every Lease of the
// cluster. Of the cluster's CRDs, only those of typed kinds, which
// lockstep renders and labels, are cached.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: credentials.CacheSecrets(),
		&apiextensionsv1.CustomResourceDefinition{}: {Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})},
	}}
}

// Run starts the manager with the webhook server and blocks until ctx ends.
func Run(ctx context.Context, c Config, restConfig *rest.Config) error {
	stopTracing, err := startTracing(ctx)
	if err != nil {
		return err
	}
	defer stopTracing()
	scheme := Scheme()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  quietStop(ctx, ctrl.Log),
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &coordinationv1.Lease{}}}},
		Cache:                   CacheOptions(),
		LeaderElection:          c.LeaderElection,
		LeaderElectionID:        "lockstep-reconcilers",
		LeaderElectionNamespace: c.Namespace,
		LeaseDuration:           &c.LeaderElectionLeaseDuration,
		RenewDeadline:           &c.LeaderElectionRenewDeadline,
		RetryPeriod:             &c.LeaderElectionRetryPeriod,
		// A replica that stops gives the lead up at once, so that a
		// rolling update hands over without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsOptions(c),
		HealthProbeBindAddress:        c.HealthAddr,
		PprofBindAddress:              c.PprofAddr,
		WebhookServer:                 webhook.NewServer(webhookOptions(c)),
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	// The journal's readers find an object's records through this index.
	if err := journal.IndexTargetUID(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// Admission finds which object holds an external id through this one.
	if err := admission.IndexExternalIDs(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// An instance's delete finds its bindings through this one.
	if err := admission.IndexBindingInstances(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// /metrics also serves the serving certificate's expiry and what
	// lockstep's objects say, read from the cache at every scrape.
	metrics.ServeCertificateExpiry(c.CertDir)
	metrics.ServeObjects(mgr.GetClient())

	catalogs := catalog.NewCache(c.CatalogRefreshInterval)
	rules := access.NewStore()
	if err := (&servicebroker.Reconciler{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Namespace: c.Namespace, Cache: catalogs, Access: rules, Timeout: c.BrokerTimeout,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the catalog reconciler: %w", err)
	}
	kinds, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("creating the client of typed kinds: %w", err)
	}
	served, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("creating the discovery client of typed kinds' names: %w", err)
	}
	if err := (&marketplace.Reconciler{
		Client: mgr.GetClient(), Catalogs: catalogs, Reader: mgr.GetAPIReader(), Kinds: kinds, Discovery: served,
		RetireGrace: c.AdmissionBudget + c.CommitGrace,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the marketplace controller: %w", err)
	}
	clusterID, err := clusterID(ctx, restConfig, c.ClusterID)
	if err != nil {
		return err
	}
	self, err := whoAmI(ctx, restConfig)
	if err != nil {
		return err
	}
	poll := osbclient.PollOptions{MinInterval: c.PollInterval, MaxInterval: c.PollMaxInterval}
	leases := &journal.Leases{Client: mgr.GetClient(), Namespace: c.Namespace, Duration: c.LockDuration, Wait: c.LockWait, Released: journal.NewRecent(), Deleted: journal.NewRecent()}
	records := &journal.Journal{Client: mgr.GetClient(), Namespace: c.Namespace, Recorder: mgr.GetEventRecorderFor("lockstep")}
	limiter := &resync.Limiter{Concurrent: c.ResyncBrokerConcurrency, PerSecond: c.ResyncBrokerQPS}
	// The broker calls lockstep makes on its own (corrections, finalizers,
	// follow-ups, compensations) never wait for a lock another operation
	// holds: that one is the operations reconciler's to follow.
	noWait := *leases
	noWait.Wait = 0
	own := &brokercall.Protocol{
		Carrier:  &journal.Carrier{Leases: &noWait, Journal: records, Objects: mgr.GetClient(), Log: ctrl.Log.WithName("broker")},
		Catalogs: catalogs, ClusterID: clusterID, Self: self, Poll: poll, Log: ctrl.Log.WithName("broker"),
	}
	if err := mgr.Add(&operations.Locks{Leases: leases, Journal: records, After: c.AdmissionBudget + c.CommitGrace,
		Every: c.AdmissionBudget}); err != nil {
		return fmt.Errorf("setting up the recovery of operations cut short: %w", err)
	}
	brokeredConfig := brokered.Config{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: c.Namespace, Catalogs: catalogs,
		Leases: leases, Protocol: own, Recorder: mgr.GetEventRecorderFor("lockstep"), Timeout: c.AdmissionBudget,
		ResyncInterval: c.ResyncInterval, Limiter: limiter, Workers: brokeredWorkers,
	}
	if err := instance.New(brokeredConfig).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the instance controller: %w", err)
	}
	if err := binding.New(brokeredConfig, mgr.GetCache()).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the binding controller: %w", err)
	}
	// The typed kinds' objects are informed on in every replica (admission
	// looks up their external ids) and reconciled as instances in the
	// elected one, each kind from the moment its CRD is established until
	// before it goes.
	typed := &typedkinds.Watcher{Config: brokeredConfig, Cache: mgr.GetCache(), Elected: mgr.Elected()}
	if err := mgr.Add(typed); err != nil {
		return fmt.Errorf("setting up the controllers of typed kinds: %w", err)
	}
	metrics.ServeTypedObjects(typed)
	if err := (&operations.Reconciler{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Catalogs: catalogs, Leases: leases, Journal: records, Protocol: own,
		Poll: c.PollInterval, Grace: c.CommitGrace, PendingTimeout: c.AdmissionBudget + c.CommitGrace,
		Keep: c.KeepOperations, Retention: c.OperationRetention, Timeout: c.AdmissionBudget, Workers: operationWorkers, Typed: typed,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the operations reconciler: %w", err)
	}

	// Admission reads the namespaces' ResourceQuotas from the cache: its
	// informer starts with the cache, not at the first create.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ResourceQuota{}); err != nil {
		return fmt.Errorf("informing on ResourceQuotas: %w", err)
	}
	deps := admission.Deps{
		Reader: mgr.GetClient(), Typed: typed, APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Catalogs: catalogs, AccessRules: rules,
		Quotas: mgr.GetClient(), QuotaInFlight: &quota.InFlight{}, TypedInstances: typed, Preflight: admission.PreflightOptions{On: c.Preflight, Client: kinds, Self: self.Username},
		Access:  admission.SubjectAccessReviews{Client: mgr.GetClient()},
		Journal: records, Leases: leases, Budget: c.AdmissionBudget, RefusalMemory: c.RefusalMemory, MaxParametersBytes: c.MaxParametersBytes,
		Broker: admission.BrokerOptions{Poll: poll, ClusterID: clusterID, Log: ctrl.Log.WithName("broker")},
		After:  journal.NewAfter(),
	}
	// The records of broker operations are written after the reply: on
	// shutdown, finish writing them (each write is bounded).
	defer deps.After.Wait()
	if c.EmbeddedBroker {
		settings, err := LoadEmbeddedSettings()
		if err != nil {
			return err
		}
		if err := mgr.Add(&embeddedBroker{
			addr: c.EmbeddedBrokerAddr, name: c.EmbeddedBrokerName, settings: settings,
			client: mgr.GetClient(), logger: brokerLogger(mgr.GetLogger()),
		}); err != nil {
			return fmt.Errorf("adding the embedded broker: %w", err)
		}
	}

	if err := ensureNamespace(ctx, restConfig, c.Namespace); err != nil {
		return err
	}
	// Digests of parameters from Secrets are keyed: every replica reads
	// the keys before it serves, and again as they are rotated.
	digestKeys, err := parametersfrom.EnsureKeys(ctx, mgr.GetClient(), c.Namespace, parametersfrom.KeysSecret)
	if err != nil {
		return err
	}
	parametersfrom.UseKeys(digestKeys)
	if err := mgr.Add(&parametersfrom.KeysWatch{Reader: mgr.GetAPIReader(), Namespace: c.Namespace, Name: parametersfrom.KeysSecret}); err != nil {
		return fmt.Errorf("adding the watch of the digests' keys: %w", err)
	}
	writers := statusWriters(self.Username, c.StatusWriters)
	admission.Register(mgr.GetWebhookServer(), scheme, admission.Handlers{
		StatusGuard: &admission.StatusGuard{Writers: writers},
		BrokerGuard: &admission.BrokerGuard{Reader: mgr.GetClient(), Objects: kinds, Discovery: served, Namespace: c.Namespace,
			Access: admission.SubjectAccessReviews{Client: mgr.GetClient()}},
		MarketplaceGuard:  &admission.MarketplaceGuard{Writers: writers, Brokers: mgr.GetAPIReader()},
		InstanceDefaulter: admission.NewInstanceDefaulter(mgr.GetClient()),
		InstanceValidator: admission.NewInstanceValidator(deps, nil),
		BindingDefaulter:  admission.NewBindingDefaulter(),
		BindingValidator:  admission.NewBindingValidator(deps, nil),
		TypedKinds:        &admission.TypedKinds{Reader: mgr.GetClient(), Direct: mgr.GetAPIReader()},
	})

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	// Ready only once the webhook server serves TLS.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	go func() {
		select {
		case <-mgr.Elected():
			ctrl.Log.WithName("lockstep").Info("leading: the operations and finalizer reconcilers run in this replica", "leaderElection", c.LeaderElection)
		case <-ctx.Done():
		}
	}()
	ctrl.Log.WithName("lockstep").Info("starting", "webhookPort", c.WebhookPort, "certDir", c.CertDir)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// ensureNamespace creates lockstep's namespace where it is missing and
// lockstep may create it (a local control plane, where lockstep runs as an
// administrator). In a deployment the namespace comes with lockstep and
// lockstep has no right to create namespaces: a refusal is not an error.
func ensureNamespace(ctx context.Context, restConfig *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating a clientset: %w", err)
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating lockstep's namespace %q (LOCKSTEP_NAMESPACE): %w", name, err)
	}
	return nil
}

// clusterID returns the cluster's id for the OSB context and the
// organization_guid: the configured one, or else the UID of the namespace
// kube-system, which lives as long as the cluster does.
func clusterID(ctx context.Context, restConfig *rest.Config, configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return "", fmt.Errorf("creating a clientset: %w", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("finding the cluster's id (the UID of namespace %s) for the OSB context: %w; "+
			"grant lockstep get on that namespace, or set LOCKSTEP_CLUSTER_ID", metav1.NamespaceSystem, err)
	}
	return string(ns.UID), nil
}

// whoAmI asks the API server who lockstep is (SelfSubjectReview): the
// identity its own status writes and the broker calls it makes on its own
// carry.
func whoAmI(ctx context.Context, restConfig *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("creating a clientset: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("asking the API server who lockstep is (SelfSubjectReview): %w", err)
	}
	u := review.Status.UserInfo
	u.Extra = nil // credential details (token ids) have no place in a broker request
	return u, nil
}

// statusWriters returns who may write the status of lockstep objects:
// lockstep itself and the configured extra users.
func statusWriters(self string, extra []string) map[string]bool {
	writers := map[string]bool{self: true}
	for _, u := range extra {
		if u = strings.TrimSpace(u); u != "" {
			writers[u] = true
		}
	}
	return writers
}
