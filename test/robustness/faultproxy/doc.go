// Package faultproxy is an HTTP proxy between lockstep and an Open
// Service Broker that breaks their exchanges on demand, for the robustness
// suite: it closes connections, hangs, delays, answers 503, spoils the
// body of an answer (not JSON), and drops the connection after the
// broker's 202, for the requests a test's function picks (SetFaults); and
// it stops listening
// altogether, as a broker that is down (Stop, Resume).
//
// Some faults keep the request from the broker (Drop, Hang, Unavailable),
// others let the broker carry it out and lose or spoil its answer (Slow,
// Garbage, DropAfter202): the second kind is what leaves a client unable
// to know what the broker did.
//
// Every exchange is recorded (Exchanges): the request (its OSB operation,
// ids, the originating user and the request identity), the fault, whether
// the broker got it, the broker's own status and what the client got.
package faultproxy
