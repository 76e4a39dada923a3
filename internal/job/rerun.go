package job

import "fmt"

// Decision is what intake does with a webhook for a changelist it may have
// seen before (R-INTAKE-3, R-RERUN-1).
type Decision int

const (
	// Start a new logical attempt: the version is new and not lower than the
	// latest one seen.
	Start Decision = iota
	// Existing: this version already has a job; return it, send nothing.
	Existing
	// Stale: a strictly higher version is already known.
	Stale
)

// Decide applies the versioned-rerun rules given the latest version already
// accepted for the changelist (0 when none) and whether a job for the requested
// version exists.
//
// R-INTAKE-3: reprocessing is "Blocked when the request uses the same
// review_version" and "Allowed only ... with a strictly higher review_version".
// A lower version after a higher one is stale: it must not mail reviewers an
// outdated critique.
func Decide(latest, requested int, versionExists bool) Decision {
	switch {
	case versionExists:
		return Existing
	case requested < latest:
		return Stale
	default:
		return Start
	}
}

// StaleError says a review version is older than the latest accepted one.
type StaleError struct {
	Requested, Current int
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("review_version %d is stale: version %d is already accepted", e.Requested, e.Current)
}
