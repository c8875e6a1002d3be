#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module (every `func FuzzXxx(f
# *testing.F)` in a _test.go file) under Go's fuzzing engine, one after
# the other, for FUZZTIME each (default 1m). `make test` runs the same
# targets on their seeds, their saved corpus and a fixed stream of
# mutated inputs; this explores further. An input a target fails on is
# saved by Go as testdata/fuzz/<target>/<hash> beside the target, where
# `go test` replays it from then on: commit it with the fix.
#
#   bash hack/fuzz.sh                  # every target, a minute each
#   FUZZTIME=10s bash hack/fuzz.sh     # shorter
#   bash hack/fuzz.sh FuzzSplit        # only the targets named
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZTIME=${FUZZTIME:-1m}
GO=${GO:-go}

failed=()
while read -r file target; do
	if (($# > 0)) && [[ " $* " != *" $target "* ]]; then
		continue
	fi
	pkg=./$(dirname "$file")
	echo "fuzz: $target in $pkg for $FUZZTIME" >&2
	if ! "$GO" test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME"; then
		failed+=("$target ($pkg)")
	fi
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	sed -E 's#^\./([^:]+):func (Fuzz[A-Za-z0-9_]*).*#\1 \2#' | sort)

if ((${#failed[@]} > 0)); then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
	echo "fuzz: each failing input is saved under testdata/fuzz/ beside its target; go test replays it" >&2
	exit 1
fi
echo "fuzz: every target passed" >&2
