package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
)

// capTeams keeps at most max members of each requested team, in the
// source's order (people requested by name are never capped), and counts
// the rest per team: a team request must not mail a whole organization
// (R-REVIEWERS-6). max 0 keeps everyone.
func capTeams(asked source.Reviewers, max int) (source.Reviewers, map[string]int) {
	if max <= 0 {
		return asked, nil
	}
	var capped map[string]int
	per := map[string]int{}
	kept := make([]source.Reviewer, 0, len(asked.Requested))
	for _, p := range asked.Requested {
		if p.Team != "" {
			if per[p.Team] >= max {
				if capped == nil {
					capped = map[string]int{}
				}
				capped[p.Team]++
				continue
			}
			per[p.Team]++
		}
		kept = append(kept, p)
	}
	asked.Requested = kept
	return asked, capped
}

// onlyInvited drops, from the people chosen for a version, those chosen
// only because they reviewed the change and whom nobody asked
// (R-REVIEWERS-5): on GitHub anyone who can see a pull request can submit
// a review, and a review must not make its author a recipient. Someone who
// reviewed stays when the source asks them now, when a review request
// named them (the roster's requested mark, from a review_requested
// webhook), or when they were a reviewer of this version or of the
// changelist's last earlier version (GitHub forgets a request once it is
// answered with a review, so that is how an invited reviewer who reviewed
// keeps getting the versions after).
func (f *Fetch) onlyInvited(ctx context.Context, j job.Job, asked reviewers.Asked, roster reviewers.Roster, chosen []reviewers.Person) ([]reviewers.Person, error) {
	requested := map[string]bool{}
	for _, p := range asked.Requested {
		requested[personKey(p)] = true
	}
	var earlier map[string]bool
	out := make([]reviewers.Person, 0, len(chosen))
	dropped := 0
	for _, p := range chosen {
		if requested[personKey(p)] || !roster[reviewers.Key(p.Username)].Requested.IsZero() {
			out = append(out, p)
			continue
		}
		if earlier == nil {
			var err error
			if earlier, err = f.earlierReviewers(ctx, j); err != nil {
				return nil, err
			}
		}
		if (p.Email != "" && earlier[delivery.NormalizeRecipient(p.Email)]) ||
			(p.Username != "" && earlier[delivery.NormalizeRecipient(reviewers.Identity(j.Source, p.Username))]) {
			out = append(out, p)
			continue
		}
		dropped++
	}
	if dropped > 0 {
		f.Log.InfoContext(ctx, "reviews by people nobody asked to review are not a reason to mail them", "job_id", j.ID, "uninvited", dropped)
		obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, map[string]float64{"UninvitedReviewers": float64(dropped)})
	}
	return out, nil
}

func personKey(p reviewers.Person) string {
	if k := reviewers.Key(p.Username); k != "" {
		return k
	}
	return "email:" + reviewers.Key(p.Email)
}

// earlierReviewers are the addresses and identities (normalized) of the
// reviewers of j itself (a refresh) and of the changelist's nearest
// earlier version that has a job.
func (f *Fetch) earlierReviewers(ctx context.Context, j job.Job) (map[string]bool, error) {
	out := map[string]bool{}
	add := func(k job.Job) error {
		for _, a := range k.AllRecipients() {
			out[delivery.NormalizeRecipient(a)] = true
		}
		ids, err := f.Jobs.NoEmailReviewers(ctx, k.ID)
		if err != nil {
			return fmt.Errorf("reviewers of %s: %w", k.ID, err)
		}
		for _, id := range ids {
			out[delivery.NormalizeRecipient(id)] = true
		}
		return nil
	}
	if err := add(j); err != nil {
		return nil, err
	}
	for v := j.ReviewVersion - 1; v >= 1 && v >= j.ReviewVersion-DefaultLookBack; v-- {
		k, err := f.Jobs.Get(ctx, job.NewID(j.Source, j.ChangelistID, v))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("earlier version %d of %s: %w", v, j.ID, err)
		}
		return out, add(k)
	}
	return out, nil
}
