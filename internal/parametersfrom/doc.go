// Package parametersfrom resolves spec.parametersFrom: it reads the Secret
// keys an object names (uncached, one Get per Secret), checks that each
// value is a JSON object whose members no other source sets, and merges
// them into spec.parameters. The merged parameters are what is validated
// against the plan's schema and sent to the broker; they are never written
// anywhere. What may be written is their digest, and refusals name the
// Secret and key, never the value (Redact hides the values that a schema
// check would show).
package parametersfrom
