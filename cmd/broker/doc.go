// Command broker serves lockstep's embedded OSB broker (internal/broker/embedded) as a
// standalone server. It is configured entirely through environment
// variables with the prefix LOCKSTEP_BROKER_ (run `broker --help` for the
// table), logs JSON to stderr, and on SIGINT/SIGTERM stops accepting
// requests, lets running actions finish for the shutdown grace, and exits.
package main
