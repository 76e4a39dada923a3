package voting_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/unsubscribe"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/voting"
)

// A vote on an email whose row is gone (expired with the retention) is
// still recorded for make eval, with the rule its link named, and keeps
// no mark; a finding named by number needs the email, and an unknown
// choice is refused.
// Rules: R-VOTE-2, R-VOTE-3.
func TestRecord_EmailGone_VoteKeptNoMark(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	votes, marks := memstore.NewVotes(), memstore.NewDismissals()
	r := &voting.Recorder{Votes: votes, Marks: marks, Rows: memstore.NewDeliveries(nil), Jobs: memstore.NewJobs(nil)}
	res, err := r.Record(ctx, "d_gone", voting.Ref{ID: "f1", Rule: "debug-print"}, vote.Wrong, now)
	if err != nil || res.Vote != vote.Recorded || res.Mark != "" {
		t.Fatalf("vote on a gone email: %+v, %v; want recorded, no mark", res, err)
	}
	if all, _ := votes.List(ctx); len(all) != 1 || all[0].Rule != "debug-print" || all[0].Choice != vote.Wrong {
		t.Fatalf("votes %+v", all)
	}
	if _, err := r.Record(ctx, "d_gone", voting.Ref{Number: 1}, vote.Wrong, now); !errors.Is(err, voting.ErrUnknownFinding) {
		t.Fatalf("by number on a gone email: %v, want ErrUnknownFinding", err)
	}
	if _, err := r.Record(ctx, "d_gone", voting.Ref{ID: "f1"}, vote.Choice("mute"), now); err == nil {
		t.Fatal("an unknown choice was recorded")
	}
	// Without a mark store: votes only, as before R-VOTE-3.
	plain := &voting.Recorder{Votes: votes}
	if res, err := plain.Record(ctx, "d_x", voting.Ref{ID: "f2", Rule: "r"}, vote.Useful, now); err != nil || res.Vote != vote.Recorded || res.Mark != "" {
		t.Fatalf("votes only: %+v, %v", res, err)
	}
}

// A daily digest numbers findings across its changelists: "wrong 2" of a
// digest is recorded on the version row the digest gathered for the
// finding it numbers 2, as that finding's Wrong link would be, and marks
// it on that changelist; a number past the digest's findings records
// nothing.
// Rules: R-DIGEST-6, R-VOTE-3.
func TestRecord_DigestNumberNamesTheVersionsFinding(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	rows, jobs := memstore.NewDeliveries(nil), memstore.NewJobs(nil)
	votes, marks := memstore.NewVotes(), memstore.NewDismissals()
	r := &voting.Recorder{Votes: votes, Marks: marks, Rows: rows, Jobs: jobs}
	reader := "ann@example.com"
	var entries []string
	for i, cl := range []string{"billing-1", "billing-2"} {
		f := critic.Finding{File: "a.go", Line: 3 + i, Severity: critic.SeverityWarning, Rule: "rule-" + cl, Message: "m", Anchor: "abc", Place: "place-" + cl}
		crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Findings: []critic.Finding{f}})
		id := job.NewID("generic", cl, 1)
		jobs.Put(job.Job{ID: id, Source: "generic", ChangelistID: cl, ReviewVersion: 1, Critique: crit})
		key := job.ChangelistKey("generic", cl)
		row := delivery.Row{ID: delivery.ID(key, reader, 1), JobID: id, ChangelistKey: key, Recipient: reader, ReviewVersion: 1,
			Status: delivery.StatusDigested, CreatedAt: now, UpdatedAt: now}
		if _, _, err := rows.Ensure(ctx, row); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, delivery.DigestFinding(row.ID, vote.FindingID(f)))
	}
	digestID := delivery.DigestID(reader, now)
	if _, _, err := rows.Ensure(ctx, delivery.Row{ID: digestID, Recipient: reader, Status: delivery.StatusSent, CreatedAt: now, UpdatedAt: now,
		Message: delivery.Message{Subject: "digest", Findings: strings.Join(entries, " ")}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Record(ctx, digestID, voting.Ref{Number: 2}, vote.Wrong, now)
	if err != nil {
		t.Fatal(err)
	}
	second := delivery.ID(job.ChangelistKey("generic", "billing-2"), reader, 1)
	if res.DeliveryID != second || res.ChangelistKey != job.ChangelistKey("generic", "billing-2") || res.Rule != "rule-billing-2" || res.Mark == "" {
		t.Fatalf("wrong 2 of the digest: %+v; want it on %s, rule-billing-2, marked", res, second)
	}
	all, _ := votes.List(ctx)
	if len(all) != 1 || all[0].DeliveryID != second || all[0].Choice != vote.Wrong {
		t.Fatalf("votes %+v", all)
	}
	m, _ := marks.Marks(ctx, job.ChangelistKey("generic", "billing-2"), []string{unsubscribe.RecipientID(reader)})
	if len(m[unsubscribe.RecipientID(reader)]) != 1 {
		t.Errorf("marks on billing-2 %+v, want the reader's one", m)
	}
	if _, err := r.Record(ctx, digestID, voting.Ref{Number: 3}, vote.Wrong, now); !errors.Is(err, voting.ErrUnknownFinding) {
		t.Errorf("wrong 3 of a digest of two: %v, want ErrUnknownFinding", err)
	}
}

// Each reader's choice on a finding counts toward a learning for the
// finding's rule in the version's repository, once per reader (the
// latest choice), by an opaque id; the change's author's own votes and a
// version that names no repository count nothing.
// Rules: R-LEARN-1.
func TestRecord_TalliesPerRepositoryNotTheAuthor(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	rows, jobs, learn := memstore.NewDeliveries(nil), memstore.NewJobs(nil), memstore.NewLearnings()
	r := &voting.Recorder{Votes: memstore.NewVotes(), Marks: memstore.NewDismissals(), Rows: rows, Jobs: jobs, Learnings: learn}
	f := critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "m", Anchor: "abc", Place: "p"}
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Findings: []critic.Finding{f}})
	email := func(cl, repo, reader string) string {
		id := job.NewID("generic", cl, 1)
		jobs.Put(job.Job{ID: id, Source: "generic", ChangelistID: cl, ReviewVersion: 1, Author: "Dan@Example.com", Repository: repo, Critique: crit})
		key := job.ChangelistKey("generic", cl)
		row := delivery.Row{ID: delivery.ID(key, reader, 1), JobID: id, ChangelistKey: key, Recipient: reader, ReviewVersion: 1,
			Status: delivery.StatusSent, CreatedAt: now, UpdatedAt: now, Message: delivery.Message{Findings: vote.FindingID(f)}}
		if _, _, err := rows.Ensure(ctx, row); err != nil {
			t.Fatal(err)
		}
		return row.ID
	}
	for _, c := range []struct {
		cl, repo, reader string
		choice           vote.Choice
		want             vote.TallyOutcome
	}{
		{"cl-1", "acme/billing", "ann@example.com", vote.Wrong, vote.TallyCounted},
		{"cl-2", "acme/billing", "ann@example.com", vote.Wrong, vote.TallyCounted}, // the same reader again
		{"cl-2", "acme/billing", "bo@example.com", vote.Wrong, vote.TallyCounted},
		{"cl-2", "acme/billing", "dan@example.com", vote.Wrong, vote.TallyAuthor},
		{"cl-3", "", "cy@example.com", vote.Wrong, vote.TallyNoRepository},
	} {
		res, err := r.Record(ctx, email(c.cl, c.repo, c.reader), voting.Ref{Number: 1}, c.choice, now)
		if err != nil || res.Learning != c.want {
			t.Fatalf("%s by %s: %+v, %v; want %q", c.cl, c.reader, res, err, c.want)
		}
	}
	all, _ := learn.List(ctx)
	if len(all) != 1 || all[0].Repository != "generic:acme/billing" || all[0].Rule != "debug-print" || all[0].Wrong != 2 || all[0].Useful != 0 {
		t.Fatalf("learnings %+v, want two readers' wrong on debug-print in acme/billing", all)
	}
}

// A code host's author who is mailed their own change (a directory
// entry at an address the reviewers' choice did not leave out) is known
// by that entry: their vote does not count; another reader's does.
// Rules: R-LEARN-1.
func TestRecord_CodeHostAuthorKnownByTheDirectory(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	rows, jobs, learn, dir := memstore.NewDeliveries(nil), memstore.NewJobs(nil), memstore.NewLearnings(), memstore.NewDirectory(nil)
	if _, err := dir.Set(ctx, "github", "dan-gh", "dan@example.com", "test"); err != nil {
		t.Fatal(err)
	}
	r := &voting.Recorder{Votes: memstore.NewVotes(), Rows: rows, Jobs: jobs, Learnings: learn, Directory: dir}
	f := critic.Finding{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "m"}
	crit, _ := json.Marshal(critic.Critique{Critic: "offline/v1", Findings: []critic.Finding{f}})
	cl := "acme/billing#7"
	id := job.NewID("github", cl, 1)
	jobs.Put(job.Job{ID: id, Source: "github", ChangelistID: cl, ReviewVersion: 1, Author: "Dan-GH", Critique: crit})
	key := job.ChangelistKey("github", cl)
	for reader, want := range map[string]vote.TallyOutcome{"dan@example.com": vote.TallyAuthor, "ann@example.com": vote.TallyCounted} {
		row := delivery.Row{ID: delivery.ID(key, reader, 1), JobID: id, ChangelistKey: key, Recipient: reader, ReviewVersion: 1,
			Status: delivery.StatusSent, CreatedAt: now, UpdatedAt: now, Message: delivery.Message{Findings: vote.FindingID(f)}}
		if _, _, err := rows.Ensure(ctx, row); err != nil {
			t.Fatal(err)
		}
		res, err := r.Record(ctx, row.ID, voting.Ref{Number: 1}, vote.Wrong, now)
		if err != nil || res.Learning != want {
			t.Fatalf("%s: %+v, %v; want %q", reader, res, err, want)
		}
	}
	if all, _ := learn.List(ctx); len(all) != 1 || all[0].Repository != "github:acme/billing" || all[0].Wrong != 1 {
		t.Fatalf("learnings %+v, want ann's one wrong in github:acme/billing", all)
	}
}
