package critic

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/reposettings"
)

// Generated says which files of a change are machine-written, beyond
// what the diff shows of the base (R-CRITIC-7). The change itself never
// decides it: a name or a "Code generated … DO NOT EDIT." marker it wrote
// is a claim, reviewed like hand-written code.
type Generated struct {
	// Paths are the deployment's globs of generated and vendored files
	// (CRITICIZER_GENERATED_PATHS, doublestar patterns from the
	// repository root): a file one matches is left out as generated,
	// whoever wrote it.
	Paths []string
	// AtBase are the files whose base version the fetch stage read through
	// the source's API and found carrying the marker in its first lines
	// (MarkerQuestions asks which).
	AtBase []string
	// BaseUnmerged: the commit the diff is against is not merged code (a
	// Gerrit change made on another open change, the author's own): what
	// the diff shows of it — a file's old name, its removed and context
	// lines — proves nothing. Only the deployment's globs and AtBase (read
	// at merged code) call a file generated; every other name, vendored
	// place or marker is a claim.
	BaseUnmerged bool
}

// MarkerLines is how many of a file's first lines a generated-code marker
// counts in.
const MarkerLines = 10

// ClaimReason is the note a critique makes of a file that says it is
// generated but that the base and the deployment do not call so
// (Critique.Claimed).
const ClaimReason = "claims to be generated"

// provenance is Generated ready for lookups.
type provenance struct {
	paths        []string
	atBase       map[string]bool
	baseUnmerged bool
}

func provenanceOf(g Generated) provenance {
	p := provenance{paths: g.Paths, atBase: make(map[string]bool, len(g.AtBase)), baseUnmerged: g.BaseUnmerged}
	for _, f := range g.AtBase {
		p.atBase[f] = true
	}
	return p
}

// deployment reports whether the deployment's globs call p generated.
func (pv provenance) deployment(p string) bool {
	for _, g := range pv.paths {
		if reposettings.Match(g, p) {
			return true
		}
	}
	return false
}

// machineWritten decides what a file of the diff is (R-CRITIC-7):
//
//   - generated, when the deployment's globs match it; or when the base
//     already had it so and the change keeps it so: the file existed
//     (not added, not copied) under a name the conventions call
//     generated (lock files, *.pb.go, *_pb2.py, …) and keeps such a name,
//     or its base version carries the marker in its first lines (shown by
//     the diff's removed and context lines, or read by the fetch stage:
//     AtBase) and the new version still does;
//   - vendored, when it existed under vendor/, node_modules/,
//     third_party/… and still lies under one;
//   - otherwise, a file whose name or first lines say it is generated
//     claims it (claimed): it is reviewed like any other, after the
//     hand-written files, and the critique says it claims to be.
//
// When the diff's base is not merged code (Generated.BaseUnmerged), the
// old name and the old side's lines are an open change's: only the
// deployment's globs and a marker read at merged code (AtBase) count.
//
// The repository's settings file is never either: its edit is reviewed.
func machineWritten(f *diff.File, pv provenance) (generated, vendored, claimed bool) {
	p := f.Path()
	if p == reposettings.FileName {
		return false, false, false
	}
	if pv.deployment(p) {
		return true, false, false
	}
	claimsName := isGeneratedPath(p, path.Base(p))
	claimsVendor := isVendored(p)
	claimsMarker := markerOnNewSide(f)
	if !claimsName && !claimsVendor && !claimsMarker {
		return false, false, false
	}
	if f.Added || f.Copied {
		return false, false, true
	}
	if pv.baseUnmerged {
		// The diff's old side is an unmerged change's: only the marker
		// read at merged code counts.
		return claimsMarker && pv.atBase[p], false, !(claimsMarker && pv.atBase[p])
	}
	old := f.OldPath
	if old == "" {
		old = p
	}
	switch {
	case claimsVendor && isVendored(old):
		return false, true, false
	case claimsName && isGeneratedPath(old, path.Base(old)):
		return true, false, false
	case claimsMarker && (markerOnOldSide(f) || pv.atBase[p]):
		return true, false, false
	}
	return false, false, true
}

// markerOnNewSide reports whether the new version's first lines, as far
// as the diff shows them, carry the marker.
func markerOnNewSide(f *diff.File) bool {
	for i := range f.Hunks {
		if f.Hunks[i].NewStart > MarkerLines {
			return false
		}
		for _, l := range f.Hunks[i].Lines {
			if l.Kind == diff.Removed {
				continue
			}
			if l.NewLine > MarkerLines {
				return false
			}
			if HasGeneratedMarker(l.Text) {
				return true
			}
		}
	}
	return false
}

// markerOnOldSide reports whether the base version's first lines, as far
// as the diff shows them (removed and context lines), carry the marker.
func markerOnOldSide(f *diff.File) bool {
	for i := range f.Hunks {
		if f.Hunks[i].OldStart > MarkerLines {
			return false
		}
		for _, l := range f.Hunks[i].Lines {
			if l.Kind == diff.Added {
				continue
			}
			if l.OldLine > MarkerLines {
				return false
			}
			if HasGeneratedMarker(l.Text) {
				return true
			}
		}
	}
	return false
}

// oldSideShown reports whether the diff shows every one of the base
// version's first MarkerLines lines, so that what they hold is known
// without reading the base.
func oldSideShown(f *diff.File) bool {
	seen := 0
	for i := range f.Hunks {
		for _, l := range f.Hunks[i].Lines {
			if l.Kind != diff.Added && l.OldLine >= 1 && l.OldLine <= MarkerLines {
				seen++
			}
		}
	}
	return seen == MarkerLines
}

// HasGeneratedMarker reports whether a line carries Go's standard
// "Code generated … DO NOT EDIT." header (https://go.dev/s/generatedcode),
// which other generators copy.
func HasGeneratedMarker(line string) bool {
	return strings.Contains(line, "Code generated") && strings.Contains(line, "DO NOT EDIT")
}

// HasGeneratedMarkerAtTop reports whether one of the first MarkerLines
// lines of a file's content carries the marker.
func HasGeneratedMarkerAtTop(content []byte) bool {
	for i, line := range strings.SplitN(string(content), "\n", MarkerLines+1) {
		if i == MarkerLines {
			break
		}
		if HasGeneratedMarker(line) {
			return true
		}
	}
	return false
}

// MarkerQuestions are the files of d whose new version's first lines
// carry the marker, that existed at the base under the same name, and
// whose base version's first lines the diff does not show (nor a marker
// in them): only reading the base can tell whether the base has the
// marker too. When the diff's base is unmerged (g.BaseUnmerged), what it
// shows of the base tells nothing: every such file is asked about. Files
// the deployment's globs match need no answer. At most limit paths, in
// the diff's order; more reports that there were others (they are
// reviewed as claims).
func MarkerQuestions(d *diff.Diff, g Generated, limit int) (paths []string, more bool) {
	pv := provenanceOf(Generated{Paths: g.Paths, BaseUnmerged: g.BaseUnmerged})
	for i := range d.Files {
		f := &d.Files[i]
		p := f.Path()
		if f.Added || f.Copied || f.Deleted || f.Binary || (f.OldPath != "" && f.OldPath != p) || p == reposettings.FileName {
			continue
		}
		if pv.deployment(p) || !markerOnNewSide(f) || (!pv.baseUnmerged && (markerOnOldSide(f) || oldSideShown(f))) {
			continue
		}
		if gen, ven, _ := machineWritten(f, pv); gen || ven {
			continue // its name at the base says so already
		}
		if len(paths) == limit {
			return paths, true
		}
		paths = append(paths, p)
	}
	return paths, false
}

// claims lists the display paths of the files of d that claim to be
// generated without the base or the deployment calling them so.
func claims(d *diff.Diff, g Generated) []string {
	pv := provenanceOf(g)
	var out []string
	for i := range d.Files {
		if _, _, c := machineWritten(&d.Files[i], pv); c && !d.Files[i].Deleted && !d.Files[i].Binary {
			out = append(out, displayPath(d.Files[i].Path()))
		}
	}
	return slices.Compact(out)
}

// generatedFingerprint is the part of a fingerprint what decides generated
// files makes: the rule's version and the deployment's globs. A ledger
// written under an older rule (which let a change exempt its own files)
// is not built on.
func generatedFingerprint(g Generated) string {
	b, _ := json.Marshal(g.Paths) // strings: cannot fail
	if g.BaseUnmerged {
		// Decided without the diff's old side: not what a ledger
		// written with it decided.
		return "generated/v2 unmerged-base " + string(b)
	}
	return "generated/v2 " + string(b)
}
