#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one after the other, each for
# FUZZTIME (default 60s). Go fuzzes one target per package per invocation,
# so this loops over (package, target) pairs found by their declarations.
#
#   scripts/fuzz.sh                  every target, 60s each (make fuzz)
#   FUZZTIME=2s scripts/fuzz.sh      a smoke run (make fuzz-short)
#   scripts/fuzz.sh webhook Redact   only targets whose name or package contains a word
#   scripts/fuzz.sh -l               list the targets
#
# FUZZMINIMIZETIME (default 5s) bounds the minimization of each new input:
# with Go's 60s default, a short run spends its time minimizing large seeds.
# A failing input is written to <package>/testdata/fuzz/<Target>/<hash>;
# the script goes on with the other targets and exits non-zero at the end.
# docs/fuzzing.md says how to turn a failing input into a regression test.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}

mapfile -t targets < <(grep -rHoE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' internal cmd functions 2>/dev/null |
	sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort -u)

if [[ ${1:-} == -l ]]; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi

failed=()
ran=0
for t in "${targets[@]}"; do
	pkg=${t% *}
	name=${t#* }
	if (($# > 0)); then
		match=0
		for w in "$@"; do
			if [[ $name == *"$w"* || $pkg == *"$w"* ]]; then match=1; fi
		done
		((match)) || continue
	fi
	echo "== $name (./$pkg, $FUZZTIME)"
	ran=$((ran + 1))
	$GO test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZETIME" "./$pkg" 2>&1 |
		grep -vE '^fuzz: elapsed: .*(execs|gathering|testing seed)'
	if [[ ${PIPESTATUS[0]} -ne 0 ]]; then
		failed+=("$name (./$pkg)")
	fi
done

echo "fuzzed $ran targets for $FUZZTIME each"
if ((${#failed[@]} > 0)); then
	printf 'FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
