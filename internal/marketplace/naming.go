package marketplace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// hashLength is how many hex digits of the hash a sanitized name ends with.
const hashLength = 8

// OfferingName is the name of the ServiceOffering of service serviceName
// (OSB id serviceID) of broker: "<broker>.<service>".
func OfferingName(broker, serviceName, serviceID string) string {
	return readableName(broker, []string{serviceName}, broker+"/"+serviceID)
}

// PlanName is the name of the ServicePlan of plan planName (OSB id planID)
// of service serviceName of broker: "<broker>.<service>.<plan>".
func PlanName(broker, serviceName, planName, serviceID, planID string) string {
	return readableName(broker, []string{serviceName, planName}, broker+"/"+serviceID+"/"+planID)
}

// readableName joins broker and parts with dots. The result is used as it
// is when it is a valid object name (a DNS-1123 subdomain: lowercase
// letters, digits, '-' and '.', at most 253 characters) and no part holds a
// dot (so that "a.b" + "c" and "a" + "b.c" never meet). Otherwise every part
// is sanitized (lowercased, other characters replaced by '-'), the whole
// cut to fit, and "-" plus a short hash of the OSB ids appended, so that
// two entries never share a name.
func readableName(broker string, parts []string, ids string) string {
	name := strings.Join(append([]string{broker}, parts...), ".")
	clean := true
	for _, p := range parts {
		if p == "" || strings.Contains(p, ".") {
			clean = false
		}
	}
	if clean && len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	labels := []string{broker}
	for _, p := range parts {
		labels = append(labels, sanitize(p))
	}
	sum := sha256.Sum256([]byte(ids))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLength]
	base := strings.Join(labels, ".")
	if max := validation.DNS1123SubdomainMaxLength - len(suffix); len(base) > max {
		base = strings.TrimRight(base[:max], "-.")
	}
	return base + suffix
}

// sanitize makes s a DNS-1123 label's characters: lowercase letters, digits
// and '-', never starting or ending with '-'; "x" when nothing is left.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > validation.DNS1123LabelMaxLength {
		out = strings.Trim(out[:validation.DNS1123LabelMaxLength], "-")
	}
	if out == "" {
		return "x"
	}
	return out
}
