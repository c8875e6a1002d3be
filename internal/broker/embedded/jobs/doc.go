// Package jobs runs bundle actions asynchronously and records their outcome.
//
// A job is created (by the lifecycle package) in the same store transaction
// that takes its instance's lock, already claimed by this process's runner
// (state "in progress", RunnerID set). Runner.Run executes it in the
// background through an executor.Executor under a timeout, then, in one
// transaction, records the outcome on the job, applies it to the instance or
// binding (state, credentials, dashboard URL, bundle state) and releases the
// lock. Callers that want to answer synchronously wait on the returned
// channel for as long as they like; the job does not depend on them.
//
// Deferred jobs (provisions accepted while the broker was bootstrapping) are
// stored "pending" and unclaimed; Kick claims those whose spec is now known
// and fails those whose spec is gone once bootstrapping is over.
//
// Truth after a crash: every runner writes a heartbeat; Recover fails the
// jobs of runners that stopped (at once on an exclusive store, whose only
// user is this process; after RunnerTimeout on a shared one) with a
// description saying the outcome is unknown, after ending (Options.Reap)
// the action processes such a runner of this host left running. Nothing
// stays "in progress" forever, and the failed job releases its instance. Close lets running jobs finish for a grace period, then stops
// their actions (they fail with a description saying so).
package jobs
