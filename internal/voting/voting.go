// Package voting records a reader's vote on a finding of an email they
// were sent (package vote holds what a vote and a dismissal mark are;
// this one applies them to the stores): the vote make eval counts
// (R-VOTE-1, R-VOTE-2), the dismissal mark that keeps a finding the
// reader called wrong out of their later emails about the same
// changelist while its line is unchanged (R-VOTE-3), and the team's tally
// (R-LEARN-1).
//
// Every way a reader can vote goes through Recorder.Record: the vote
// link's POST (internal/api) names the finding by its id, a reply ("wrong
// 3") by its number in the email.
package voting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
)

// ErrUnknownFinding: the email names no such finding (a number past the
// findings it lists, or an email whose row is gone).
var ErrUnknownFinding = errors.New("the email lists no such finding")

// Ref names a finding of an email: by its number in the email, from 1 in
// the order it lists them (delivery.Message.Finding), or by its
// vote.FindingID. Rule is the rule the caller knows it by (a vote link
// carries it), recorded when the finding cannot be looked up.
type Ref struct {
	Number int
	ID     string
	Rule   string
}

// Rows reads delivery rows (store.Deliveries).
type Rows interface {
	Get(ctx context.Context, id string) (delivery.Row, error)
}

// Jobs reads jobs (store.Jobs): Get alone, which says that recording
// a vote never writes a job.
type Jobs interface {
	Get(ctx context.Context, id job.ID) (job.Job, error)
}

// Recorder records a reader's choice on a finding of one of their emails.
type Recorder struct {
	Votes store.Votes
	// Marks, Rows and Jobs keep the mark (R-VOTE-3); any nil: votes only.
	Marks store.Dismissals
	Rows  Rows
	Jobs  Jobs
	// Learnings, if set, tallies the choice per rule and repository
	// (R-LEARN-1); it needs Rows and Jobs to know the repository and the
	// change's author, whose own votes are not counted.
	Learnings store.Learnings
	// Directory, if set, maps a code host's author to their address, so
	// that an author mailed their own change (a directory entry the
	// reviewers' choice did not leave out) is known as its author.
	Directory Directory
}

// Directory reads a reviewer directory entry (store.Directory).
type Directory interface {
	Get(ctx context.Context, source, username string) (reviewers.Entry, error)
}

// Result is what Record did.
type Result struct {
	FindingID string
	Rule      string
	Vote      vote.Outcome
	// Mark is what the choice did to the reader's marks; "" when none
	// was kept: no mark store, or the finding could not be looked up
	// (its email's row or job expired).
	Mark vote.MarkOutcome
	// DeliveryID is the email the vote was recorded on: the one named, or
	// for a daily digest's number the version row the digest gathered
	// (R-DIGEST-6). ChangelistKey is its changelist's key ("" when its row
	// is gone).
	DeliveryID, ChangelistKey string
	// Learning is what the tally did with the choice (R-LEARN-1); ""
	// when none is kept or the version could not be looked up.
	Learning vote.TallyOutcome
}

// Record records choice c, made at now, on the finding ref names of the
// email deliveryID: the vote first (what make eval reads), then the mark
// on the reader's changelist, keyed by the finding's identity across
// versions (critic.SameKey), looked up in the critique the email was
// rendered from. Both are idempotent: a request retried records once. A
// finding with no key (no line text or place: critic.SameKey) keeps no
// mark (vote.MarkUnplaced): the vote is all there is.
//
// A finding named by id that can no longer be looked up still records
// the vote; one named by number needs the email's row
// (ErrUnknownFinding).
func (r *Recorder) Record(ctx context.Context, deliveryID string, ref Ref, c vote.Choice, now time.Time) (Result, error) {
	if !c.Valid() {
		return Result{}, fmt.Errorf("choice %q: %w", c, ErrUnknownFinding)
	}
	if _, isDigest := delivery.DigestDue(deliveryID); isDigest && ref.Number > 0 {
		return r.recordInDigest(ctx, deliveryID, ref, c, now)
	}
	res := Result{FindingID: ref.ID, Rule: ref.Rule, DeliveryID: deliveryID}
	var row delivery.Row
	var f *critic.Finding
	var j *job.Job
	if r.Rows != nil && r.Jobs != nil {
		var err error
		row, j, f, err = r.lookup(ctx, deliveryID, &res, ref)
		if err != nil {
			return Result{}, err
		}
	}
	if res.FindingID == "" {
		return Result{}, ErrUnknownFinding
	}
	var err error
	res.Vote, err = r.Votes.Record(ctx, vote.Vote{DeliveryID: deliveryID, FindingID: res.FindingID, Choice: c, Rule: res.Rule, VotedAt: now.UTC()})
	if err != nil {
		return Result{}, err
	}
	if j != nil && r.Learnings != nil && res.Rule != "" {
		if res.Learning, err = r.tally(ctx, *j, row.Recipient, res.Rule, c, now); err != nil {
			return Result{}, err
		}
	}
	if f == nil || r.Marks == nil {
		return res, nil
	}
	key := critic.SameKey(*f)
	if key == "" {
		// No line text and place to follow it by: a mark would hide
		// nothing, or (by its line number) other code (R-VOTE-3).
		res.Mark = vote.MarkUnplaced
		return res, nil
	}
	res.Mark, err = r.Marks.Mark(ctx, row.ChangelistKey, unsubscribe.RecipientID(row.Recipient), key, c, now)
	if err != nil {
		return Result{}, fmt.Errorf("delivery %s: %w", deliveryID, err)
	}
	return res, nil
}

// tally counts the reader's choice on rule toward a learning for the
// version's repository (R-LEARN-1), unless the reader is the change's
// author: their own votes never teach the team's deployment about their
// change.
func (r *Recorder) tally(ctx context.Context, j job.Job, reader, rule string, c vote.Choice, now time.Time) (vote.TallyOutcome, error) {
	repo := vote.RepoKey(j)
	if repo == "" {
		return vote.TallyNoRepository, nil
	}
	author, err := r.isAuthor(ctx, j, reader)
	if err != nil {
		return "", err
	}
	if author {
		return vote.TallyAuthor, nil
	}
	out, err := r.Learnings.Tally(ctx, vote.Tally{Repository: repo, Rule: rule, Reader: unsubscribe.RecipientID(reader), Choice: c, At: now.UTC()})
	if err != nil {
		return "", fmt.Errorf("delivery %s: %w", j.ID, err)
	}
	return out, nil
}

// isAuthor reports whether the reader is the change's author: the author
// a generic caller gave as this address, or a code host's author whose
// directory entry is this address.
func (r *Recorder) isAuthor(ctx context.Context, j job.Job, reader string) (bool, error) {
	if vote.IsAuthor(j.Author, reader) {
		return true, nil
	}
	if r.Directory == nil || !job.IsReviewSystem(j.Source) || j.Author == "" {
		return false, nil
	}
	e, err := r.Directory.Get(ctx, j.Source, j.Author)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("the author of %s: %w", j.ID, err)
	}
	return !e.Removed && vote.IsAuthor(e.Email, reader), nil
}

// recordInDigest records choice c on the finding a daily digest numbers
// ref.Number: its message lists each finding with the version row the
// digest gathered (delivery.DigestFinding), so the vote and the mark are
// those the finding's own Wrong link in the digest records, on that row
// (R-DIGEST-6). A digest's numbers span changelists; each names one.
func (r *Recorder) recordInDigest(ctx context.Context, digestID string, ref Ref, c vote.Choice, now time.Time) (Result, error) {
	if r.Rows == nil {
		return Result{}, fmt.Errorf("digest %s finding %d: %w", digestID, ref.Number, ErrUnknownFinding)
	}
	row, err := r.Rows.Get(ctx, digestID)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("digest %s: %w", digestID, ErrUnknownFinding)
	}
	if err != nil {
		return Result{}, err
	}
	entry, ok := row.Message.Finding(ref.Number)
	if !ok {
		return Result{}, fmt.Errorf("digest %s finding %d: %w", digestID, ref.Number, ErrUnknownFinding)
	}
	version, id, ok := delivery.SplitDigestFinding(entry)
	if !ok {
		return Result{}, fmt.Errorf("digest %s finding %d: %w", digestID, ref.Number, ErrUnknownFinding)
	}
	return r.Record(ctx, version, Ref{ID: id, Rule: ref.Rule}, c, now)
}

// lookup finds the email's row, its job and, in the job's critique, the
// finding ref names; res gets the finding's id and rule. The job is nil
// when the row or the job is gone (retention); the finding is nil then
// too, or when the critique holds no finding of that id.
func (r *Recorder) lookup(ctx context.Context, deliveryID string, res *Result, ref Ref) (delivery.Row, *job.Job, *critic.Finding, error) {
	row, err := r.Rows.Get(ctx, deliveryID)
	switch {
	case errors.Is(err, store.ErrNotFound) && ref.Number == 0:
		return row, nil, nil, nil
	case errors.Is(err, store.ErrNotFound):
		return row, nil, nil, fmt.Errorf("delivery %s: %w", deliveryID, ErrUnknownFinding)
	case err != nil:
		return row, nil, nil, err
	}
	res.ChangelistKey = row.ChangelistKey
	if ref.Number > 0 {
		id, ok := row.Message.Finding(ref.Number)
		if !ok {
			return row, nil, nil, fmt.Errorf("delivery %s finding %d: %w", deliveryID, ref.Number, ErrUnknownFinding)
		}
		res.FindingID = id
	}
	j, err := r.Jobs.Get(ctx, row.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return row, nil, nil, nil
	}
	if err != nil {
		return row, nil, nil, err
	}
	var c critic.Critique
	if len(j.Critique) == 0 || json.Unmarshal(j.Critique, &c) != nil {
		return row, &j, nil, nil
	}
	for i := range c.Findings {
		if vote.FindingID(c.Findings[i]) == res.FindingID {
			if res.Rule == "" {
				res.Rule = c.Findings[i].Rule
			}
			return row, &j, &c.Findings[i], nil
		}
	}
	return row, &j, nil, nil
}
