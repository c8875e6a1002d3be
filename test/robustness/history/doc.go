// Package history records what happened during a robustness run: every
// request a client made and the answer it got (the message kubectl would
// show, classified by what it claims), and every fault injected, with
// their times. The checks read it after the run; the results file and
// every violation quote it.
package history
