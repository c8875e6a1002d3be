package robustness

import "github.com/lockstep-dev/lockstep/test/robustness/check"

// finding is a defect the suite found.
type finding struct {
	Title     string
	Invariant check.Invariant
	Seed      int64
	Detail    string
	// Fixed says how it is fixed and names the tests that fail without the
	// fix; empty while it is not fixed, and the short profile then holds
	// back the faults that show it.
	Fixed string
}

// findings are the defects the suite found; every results file lists
// them, fixed or not.
var findings = []finding{
	{
		Title:     "a create-only parameter a broker no longer reports is drift, re-applied for ever",
		Invariant: check.BrokerEqualsCluster, Seed: 1,
		Detail: "a broker that replaces an instance's parameters with an update's no longer reports the create-only ones, " +
			"which lockstep never sends with an update; resync reported ParametersDrift and re-applied the spec at every interval (traffic alone).",
		Fixed: "resync compares create-only parameters by their values and leaves out those the broker does not report " +
			"(TestInstanceResync, TestInstanceResyncWithParametersFromSecretsAndACreateOnlyParameterTheBrokerNoLongerReports, TestFillCreateOnly)",
	},
	{
		Title:     "an instance with bindings could be detached, leaving bindings that can never be unbound",
		Invariant: check.NothingStuck, Seed: 1,
		Detail: "an instance annotated detach-on-delete or observe was deleted while it had bindings; those could never be unbound, " +
			"and their namespace stayed Terminating (seeds 1 and 7, traffic alone and with the broker stopped).",
		Fixed: "the live-bindings check of a delete runs before a detach too (TestReconcilePolicy)",
	},
	{
		Title:     "a provision committed across a change of leader was never reported in the instance's status",
		Invariant: check.BrokerEqualsCluster, Seed: 1,
		Detail: "the status showed only the last answered record (a failed update), so the provision before it never made the instance Ready or InSync.",
		Fixed:  "the last commit the status has not seen is reported first (TestStatusFromTheJournal)",
	},
	{
		Title:     "a replica that started while its broker was stopped kept no catalog for a quarter of an hour",
		Invariant: check.BrokerEqualsCluster, Seed: 1,
		Detail: "the workqueue's back-off grew with every failed catalog fetch; as the leader, that replica's resync left InSync=False (BrokerUnreachable) after the outage.",
		Fixed:  "a failed catalog fetch is retried within 30 seconds, however long the outage (TestReconcileRetriesAFailingBrokerWithinHalfAMinute)",
	},
	{
		Title:     "the record of an operation whose namespace was deleted meanwhile could not be written",
		Invariant: check.OperationsFinal, Seed: 1,
		Detail: "a replica killed during an unbind, then the binding's namespace deleted: the record restored from the lock failed with \"namespaces not found\".",
		Fixed:  "the record goes to lockstep's namespace, as for a namespace being deleted (TestRecordOfANamespaceGoneGoesToLockstepsNamespace)",
	},
	{
		Title:     "an update, deprovision or unbind whose answer was lost was refused as not carried out",
		Invariant: check.TrueAnswers, Seed: 7,
		Detail: "the broker got the request and carried it out, but its answer came after the per-request timeout (broker-slow), " +
			"had a body that is not JSON (broker-garbage) or a 202 that never arrived (drop-after-202); lockstep refused with " +
			"\"the instance keeps its current parameters\" (or \"stays as it was\") and recorded the operation Failed.",
		Fixed: "one protocol for every broker call (internal/brokercall): a request that reached the broker and got no answer is an unknown outcome " +
			"for every verb, followed by the operations reconciler (TestBrokerBehavioursByVerb, TestOperationsFollowKeepsAnUnknownOutcomeInProgress); " +
			"seed 7 with only broker-slow, broker-garbage, drop-after-202 and broker-stopped on every request shows it no more",
	},
	{
		Title:     "an operation cut short by a replica's death was settled Failed, \"the outcome is unknown\", and nobody followed it",
		Invariant: check.TrueAnswers, Seed: 7,
		Detail: "a replica killed during a deprovision (or unbind) admission leaves the lock; the operations reconciler restored the record " +
			"and settled it Failed, a final phase, while the broker finished the deprovision; with seed 3 a binding unbound at the broker " +
			"this way kept InSync=True (kill-leader).",
		Fixed: "a record cut short that the API server does not settle is followed (InProgress, InSync Unknown) until the broker tells " +
			"(TestOperationsCutShortIsFollowedToItsEnd, TestOperationsPendingTooLongIsSettled)",
	},
	{
		Title:     "the API server's retry of an admission cut short was refused as a conflict with its own operation",
		Invariant: check.TrueAnswers, Seed: 7,
		Detail: "when the replica serving a webhook call dies, the API server calls the webhook again for the same request (with a new " +
			"admission UID); the other replica found the object's lock held by that very request's operation and refused: " +
			"\"another change of instance ... is in flight at the broker: deprovision by <the same user> ...; nothing was changed\", " +
			"while the broker carried the change out (kill-leader).",
		Fixed: "the same change by the same user holding the lock, not known to be carried out, is answered \"the outcome is unknown\" " +
			"without a second broker call (TestRunTellsTheRetryOfAChangeCutShort, TestCarrierRetryOfARequestCutShortIsAnsweredUnknown)",
	},
	{
		Title:     "one lock whose record could not be restored stopped the restoring of every other",
		Invariant: check.OperationsFinal, Seed: 1,
		Detail: "the operations reconciler's scan of the locks returned at the first record it could not write; with seed 1 seventeen " +
			"other operations stayed unsettled with their locks held for good.",
		Fixed: "the scan logs such a lock, goes on with the others and tries it again at the next scan (TestLocksScanGoesOnPastALockItCannotRestore)",
	},
	{
		Title:     "an operation record in a namespace that is gone could never be settled, and what it left at a broker stayed",
		Invariant: check.NoLeak, Seed: 26,
		Detail: "after a kube-apiserver restart, kube-controller-manager removed namespaces while records were still in them (it did not " +
			"see lockstep's kinds yet); the API server refused every write of those records (\"namespaces rb-22 not found\"), so an " +
			"accepted provision whose object never persisted was never undone: five instances left at the brokers in a 10-minute run (full profile).",
		Fixed: "a record whose namespace is gone is moved to lockstep's namespace and followed there " +
			"(TestOperationsRecordOfANamespaceGoneIsMovedAndFollowed); seed 26 replayed since: not seen again, though with the front before kube-apiserver the replay no longer removes namespaces early; the test shows the fix",
	},
	{
		Title:     "an orphaned update of an instance whose namespace is gone is never compensated when its parameters come from a Secret",
		Invariant: check.OperationsFinal, Seed: 26,
		Detail: "the instance is left in a namespace that no longer exists (see above) and its Secret went with the namespace; re-applying " +
			"the persisted spec fails for ever (\"no Secret c3-i128-params in namespace rb-6\"), so the record stays Orphaned (four in a " +
			"10-minute run, full profile).",
		Fixed: "when re-applying fails and the instance's namespace no longer exists, nothing is re-applied and the operation ends " +
			"(TestOperationsOrphanedUpdateInANamespaceGone); seed 26 replayed since: not seen again, though with the front before kube-apiserver the replay no longer removes namespaces early; the test shows the fix",
	},
	{
		Title:     "an instance whose orphaned update was compensated kept InSync=False from a failed attempt",
		Invariant: check.BrokerEqualsCluster, Seed: 1,
		Detail: "a first attempt to re-apply the persisted spec met the broker's ConcurrencyError, and the instance said so " +
			"(CompensationFailed, \"lockstep tries again\"); the next attempt succeeded, but the record kept the time it was found orphaned " +
			"as its completion, older than that note, so its \"Compensated\" never replaced it (short profile with two fault lanes).",
		Fixed: "an orphaned record is complete when it is compensated or fails (TestJournalCompensatedCompletesWhenCompensated)",
	},
	{
		Title:     "resync's read of an object past the cache was refused by the deployed RBAC, and the object's status stopped",
		Invariant: check.BrokerEqualsCluster, Seed: 2611,
		Detail: "before it reports drift, resync reads the object from the API server (a change the cache has not caught up with is no drift); " +
			"lockstep's ClusterRole allowed list and watch of instances and bindings, not get, so every pass of an object whose broker " +
			"differed failed with \"forbidden\" and its InSync stayed as it was.",
		Fixed: "the ClusterRole allows get (TestLeastPrivilegeRBAC changes an instance behind lockstep's back and waits for resync to put it back)",
	},
	{
		Title:     "an orphaned update of an instance the broker no longer held was re-applied for ever, and its lock never went",
		Invariant: check.OperationsFinal, Seed: 1,
		Detail: "a deprovision got no answer (the broker had carried it out) and the instance stayed; a later plan change was refused, " +
			"but lockstep was killed before the refusal was recorded, so the record restored from the lock was Orphaned; re-applying the " +
			"persisted spec met \"instance ... does not exist\" (404) every time, so the record stayed Orphaned and held the instance's lock " +
			"(short profile, in a clean-clone CI run on a loaded machine).",
		Fixed: "a 404 or 410 to the re-apply means there is nothing to put the spec back on: the operation ends, its lock goes, and resync " +
			"reports the instance gone (TestOperationsOrphanedUpdateOfAnInstanceTheBrokerNoLongerHolds)",
	},
}

// knownFindings are the findings not fixed yet.
func knownFindings() []finding {
	var out []finding
	for _, f := range findings {
		if f.Fixed == "" {
			out = append(out, f)
		}
	}
	return out
}
