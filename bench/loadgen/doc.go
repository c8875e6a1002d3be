// Package loadgen drives lockstep's benchmarks: a bounded, concurrent load
// loop (Run), the alternation of a system and its baseline in one run
// (Alternate), latency summaries with ratios (Summarize, Ratio), and a
// client that posts real AdmissionReviews over TLS (ReviewClient).
//
// Every loop is bounded in count and in time: Run stops at Load.Requests
// or Load.MaxDuration, whichever comes first. Targets are on loopback
// only; the package dials whatever URL it is given, and the benchmarks
// give it 127.0.0.1.
//
// Why alternate: the machines the benchmarks run on are shared and noisy.
// Measuring lockstep and its baseline in the same run, in interleaved
// rounds whose order rotates, exposes both to the same noise, so that
// their ratio means something even when absolute figures drift.
package loadgen
