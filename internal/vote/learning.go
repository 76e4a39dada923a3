package vote

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// A team's votes teach the deployment (R-LEARN-1): when enough distinct
// readers marked one rule's findings wrong in one repository, and fewer
// marked them useful, the rule becomes a proposed learning for that
// repository; an operator accepts or rejects it, and an accepted one
// leaves that rule's findings out of the repository's later reviews
// (R-LEARN-2). What is tallied is one choice per reader, per rule and
// repository (the latest one), by the reader's opaque id, never an
// address.

// Bounds on what readers control (R-LEARN-1): the readers tallied per rule
// and repository (a choice past it is not counted: TallyFull), and the
// rules tallied per repository (a new rule past it: TallyFull too). Both
// are far above what a threshold needs: they only keep an item bounded.
const (
	MaxLearnReaders = 100
	MaxLearnRules   = 50
)

// LearningState is where a learning stands.
type LearningState string

const (
	// Counting: fewer readers than the threshold marked it wrong, or as
	// many marked it useful.
	Counting LearningState = "counting"
	// Proposed: enough readers marked it wrong and fewer useful; an
	// operator has not decided.
	Proposed LearningState = "proposed"
	// Accepted: the repository's reviews leave the rule's findings out.
	Accepted LearningState = "accepted"
	// Rejected: an operator said no; the votes keep being counted but it
	// is never proposed again.
	Rejected LearningState = "rejected"
)

// Learning is one rule in one repository, as the votes and an operator
// left it.
type Learning struct {
	// ID names it for the operator: the repository's key and the rule,
	// digested (LearningID).
	ID string `json:"id"`
	// Repository is the repository's key (RepoKey): its source and name.
	Repository string `json:"repository"`
	Rule       string `json:"rule"`
	// Wrong and Useful count distinct readers by their latest choice on
	// the rule's findings in the repository, the changes' authors' own
	// votes left out.
	Wrong  int           `json:"wrong"`
	Useful int           `json:"useful"`
	State  LearningState `json:"state"`
	// DecidedAt is when an operator accepted or rejected it.
	DecidedAt time.Time `json:"decided_at,omitzero"`
}

// Classify sets State from the counts for an undecided learning: Proposed
// when at least k readers (CRITICIZER_LEARN_AFTER; below 1 counts as 1)
// marked it wrong and fewer marked it useful. A decided one keeps its
// state.
func (l Learning) Classify(k int) Learning {
	if l.State == Accepted || l.State == Rejected {
		return l
	}
	k = max(k, 1)
	l.State = Counting
	if l.Wrong >= k && l.Useful < l.Wrong {
		l.State = Proposed
	}
	return l
}

// RepoKey is a repository's key in the tally: its source and its name as
// the job names it (job.Job.RepositoryName); "" when the version names no
// repository, and nothing is tallied.
func RepoKey(j job.Job) string {
	name := j.RepositoryName()
	if name == "" {
		return ""
	}
	return j.Source + ":" + name
}

// RepoDigest is the digest a repository's learnings are stored under.
func RepoDigest(repoKey string) string { return job.Hash("learn-repo", repoKey)[:16] }

// LearningID is the operator's name for the learning of rule in the
// repository of repoKey: "<repository digest>-<rule digest>", short
// enough to type, with no character a shell or a URL path minds.
func LearningID(repoKey, rule string) string {
	return RepoDigest(repoKey) + "-" + job.Hash("learn-rule", rule)[:8]
}

// SplitLearningID returns the repository digest of a learning id, and
// whether id has the shape LearningID gives.
func SplitLearningID(id string) (repoDigest string, ok bool) {
	if !learningID.MatchString(id) {
		return "", false
	}
	return id[:16], true
}

var learningID = regexp.MustCompile(`^[a-z2-7]{16}-[a-z2-7]{8}$`)

// Tally is one reader's choice on a rule's findings in a repository.
type Tally struct {
	Repository string // RepoKey
	Rule       string
	Reader     string // the reader's opaque id (unsubscribe.RecipientID)
	Choice     Choice
	At         time.Time
}

// TallyOutcome is what recording a Tally did.
type TallyOutcome string

const (
	// TallyCounted: the reader's choice is counted (new, changed or the
	// same again).
	TallyCounted TallyOutcome = "counted"
	// TallyFull: a bound of R-LEARN-1 was reached; not counted.
	TallyFull TallyOutcome = "full"
	// TallyAuthor: the reader is the change's author; not counted.
	TallyAuthor TallyOutcome = "author"
	// TallyNoRepository: the version names no repository.
	TallyNoRepository TallyOutcome = "no_repository"
)

// IsAuthor reports whether a reader's address is the change's author's:
// a generic caller's author given as an address, or the address a code
// host's author has in the reviewer directory (voting.Recorder looks it
// up). Addresses compare case-insensitively, white space aside.
func IsAuthor(author, address string) bool {
	a := strings.ToLower(strings.TrimSpace(author))
	return a != "" && a == strings.ToLower(strings.TrimSpace(address))
}

// ErrNotProposed: an operator may decide only a proposed learning.
var ErrNotProposed = errors.New("the learning is not proposed: too few readers marked its rule wrong, or as many marked it useful")

// LearningDecider is the part of the learnings store a decision needs
// (store.Learnings).
type LearningDecider interface {
	Get(ctx context.Context, id string) (Learning, error)
	Decide(ctx context.Context, id string, s LearningState, at time.Time) (Learning, error)
}

// Decide records an operator's Accepted or Rejected on the learning id,
// which must be Proposed under threshold k (ErrNotProposed; the store's
// ErrNotFound when there is none, ErrConflict when it was decided
// already). `criticizer learnings accept|reject` and POST
// /admin/learnings/{id}/accept|reject both decide through it.
func Decide(ctx context.Context, s LearningDecider, k int, id string, st LearningState, at time.Time) (Learning, error) {
	l, err := s.Get(ctx, id)
	if err != nil {
		return Learning{}, err
	}
	if l.State == "" && l.Classify(k).State != Proposed {
		return Learning{}, fmt.Errorf("learning %s (%d wrong, %d useful): %w", id, l.Wrong, l.Useful, ErrNotProposed)
	}
	return s.Decide(ctx, id, st, at)
}
