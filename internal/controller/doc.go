// Package controller holds lockstep's reconcilers that look at the broker
// after admission, one package per concern:
//
//   - resync: re-reads every instance and binding from its broker
//     periodically, compares it with what lockstep last applied, reports
//     drift in the object's InSync condition and, under the default
//     reconcile policy, corrects it.
package controller
