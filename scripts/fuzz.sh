#!/usr/bin/env bash
# Exploratory fuzzing (make fuzz; docs/fuzzing.md): every Go fuzz target in
# the repository, one after the other, each for FUZZTIME. `make test` never
# runs this: it runs each target over its committed seeds only (plain go
# test), so it cannot fail by chance.
#
#   scripts/fuzz.sh                   every target, FUZZTIME (default 30s) each
#   FUZZTOTAL=10m scripts/fuzz.sh     every target, 10 minutes shared equally
#   FUZZTIME=1000x scripts/fuzz.sh    1000 new inputs per target (make fuzz-short)
#   scripts/fuzz.sh webhook Text      only targets whose name or package contains a word
#   scripts/fuzz.sh -l                list the targets (module directory, package, target)
#   scripts/fuzz.sh -check-docs       fail unless docs/fuzzing.md's table names exactly these targets
#
# Targets are found by their declarations in every Go module of the
# repository (infra/ is a module of its own), not listed by hand, so a new
# target is fuzzed without editing this file. Go fuzzes one target per
# package per invocation, hence the loop.
#
# FUZZMINIMIZETIME (default 5s) bounds the minimization of each new input:
# with Go's 60s default, a short run spends its time minimizing large seeds.
# A failing input is written by Go to <package>/testdata/fuzz/<Target>/<hash>
# (the package directory: go test runs there); this script lists every such
# new file with the command that replays it, goes on with the other targets
# and exits non-zero at the end. Commit the file: plain go test replays it
# from then on, so the finding is a regression seed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}

# discover prints "<module dir> <package dir relative to it> <Target>" for
# every fuzz target: a func FuzzXxx(name *testing.F) in a _test.go file
# (Go's rule: the name after Fuzz does not start with a lower-case letter).
discover() {
	local f name pkg mod rel
	find . \( -name node_modules -o -name .git -o -name testdata -o -name .devstack -o -name cdk.out \) -prune \
		-o -name '*_test.go' -type f -print0 |
		xargs -0 grep -HoE '^func Fuzz([^a-z(][A-Za-z0-9_]*)?\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\)' |
		sed -E 's#^\./##; s#^([^:]+):func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' |
		while read -r f name; do
			pkg=$(dirname "$f")
			mod=$pkg
			while [[ $mod != . && ! -f $mod/go.mod ]]; do mod=$(dirname "$mod"); done
			if [[ $mod == "$pkg" ]]; then
				rel=.
			elif [[ $mod == . ]]; then
				rel=./$pkg
			else
				rel=./${pkg#"$mod"/}
			fi
			echo "$mod $rel $name"
		done | sort -u
}

mapfile -t targets < <(discover)

case ${1:-} in
-l)
	printf '%s\n' "${targets[@]}"
	exit 0
	;;
-check-docs)
	# docs/fuzzing.md's table names each target as `FuzzX`; a target
	# added, renamed or deleted without the page fails make test.
	mapfile -t have < <(printf '%s\n' "${targets[@]}" | awk '{print $3}' | sort -u)
	mapfile -t doc < <(grep -E '^\|' docs/fuzzing.md | grep -oE '`Fuzz[A-Za-z0-9_]*`' | tr -d '`' | sort -u)
	missing=$(comm -23 <(printf '%s\n' "${have[@]}") <(printf '%s\n' "${doc[@]}"))
	stale=$(comm -13 <(printf '%s\n' "${have[@]}") <(printf '%s\n' "${doc[@]}"))
	if [[ -n $missing || -n $stale ]]; then
		[[ -n $missing ]] && echo "docs/fuzzing.md's table does not name: "$missing >&2
		[[ -n $stale ]] && echo "docs/fuzzing.md's table names targets that do not exist: "$stale >&2
		exit 1
	fi
	echo "docs/fuzzing.md names all ${#have[@]} fuzz targets"
	exit 0
	;;
esac

selected=()
for t in "${targets[@]}"; do
	read -r _ pkg name <<<"$t"
	if (($# > 0)); then
		match=0
		for w in "$@"; do
			if [[ $name == *"$w"* || $pkg == *"$w"* ]]; then match=1; fi
		done
		((match)) || continue
	fi
	selected+=("$t")
done
if ((${#selected[@]} == 0)); then
	echo "no fuzz target matches: $*" >&2
	exit 1
fi

# FUZZTOTAL shares a total time equally; FUZZTIME is per target.
if [[ -n ${FUZZTOTAL:-} ]]; then
	total=$(awk -v t="$FUZZTOTAL" 'BEGIN { n = t + 0; u = substr(t, length(n "") + 1); if (u == "m") n *= 60; else if (u == "h") n *= 3600; print int(n) }')
	FUZZTIME="$((total / ${#selected[@]}))s"
fi
FUZZTIME=${FUZZTIME:-30s}
echo "fuzzing ${#selected[@]} targets, $FUZZTIME each"

failed=()
found=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${selected[@]}"; do
	read -r mod pkg name <<<"$t"
	corpus="$root/$mod/$pkg/testdata/fuzz/$name"
	where=$pkg
	[[ $mod == . ]] || where="$mod/${pkg#./}"
	before=$(ls "$corpus" 2>/dev/null | sort)
	echo "== $name ($where, $FUZZTIME)"
	(cd "$root/$mod" && $GO test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZETIME" "$pkg") 2>&1 |
		tee "$log" | grep -vE '^fuzz: elapsed: .*(execs|gathering|testing seed)'
	rc=${PIPESTATUS[0]}
	# The progress lines are left out above; the last one says how much
	# was tried.
	grep -E '^fuzz: elapsed: .*execs' "$log" | tail -n 1
	new=$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort) | grep -v '^$')
	for h in $new; do
		rel=$(realpath --relative-to="$root" "$corpus/$h")
		replay="go test -run='^$name/$h\$' $pkg"
		[[ $mod == . ]] || replay="cd $mod && $replay"
		found+=("$rel  (replay: $replay)")
	done
	if ((rc != 0)); then
		if [[ -z $new ]]; then
			failed+=("$name ($where): failed without a new input (a seed fails, or the run broke: see above)")
		else
			failed+=("$name ($where)")
		fi
	fi
done

echo "fuzzed ${#selected[@]} targets for $FUZZTIME each"
if ((${#found[@]} > 0)); then
	echo "new failing inputs (commit them: go test replays them as seeds):"
	printf '  %s\n' "${found[@]}"
fi
if ((${#failed[@]} > 0)); then
	printf 'FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "no failures"
