package main

import (
	"strings"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// replace writes v1alpha1.DefaultNamespace in place of every
// v1alpha1.NamespacePlaceholder in text and says how many it replaced.
func replace(text string) (string, int) {
	n := strings.Count(text, v1alpha1.NamespacePlaceholder)
	return strings.ReplaceAll(text, v1alpha1.NamespacePlaceholder, v1alpha1.DefaultNamespace), n
}
