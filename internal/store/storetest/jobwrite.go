package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// jobWrite: every field of a stage's typed write (store.JobWrite) reads
// back from Get as JobWrite.Apply says, the reviewers without an
// address from NoEmailReviewers; a zero write leaves the job as it was,
// and the skip reason and truncation are cleared when asked. A driver
// that spelled an attribute other than job.Job reads it fails here.
// Rules: R-STORE-1.
func jobWrite(t *testing.T, s store.Jobs) {
	ctx := context.Background()
	j := NewJob("cl-write", 1)
	Create(t, s, j, "k-write", "b-write")
	before, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	w := store.JobWrite{
		Diff:                 &store.StoredDiff{Ref: "diffs/ab", SHA256: "ab12", Truncated: true},
		Reviewers:            &store.FetchedReviewers{Recipients: []string{"ann@example.com", "bo@example.com"}, NoEmail: []string{"github:zed"}},
		UnexpandedTeams:      []string{"o/core"},
		DiffBaseUnmerged:     true,
		GeneratedAtBase:      []string{"gen/a.go"},
		ContextRef:           "diffs/context/cd",
		Author:               "octo",
		Settings:             &job.RepoSettings{Ignore: []string{"vendor/**"}, MinSeverity: "major", Language: "fr"},
		SettingsWarnings:     []string{"skip_labels: not applied"},
		Skipped:              "behind",
		TeamMembersNotMailed: map[string]int{"o/core": 3},
		Critique:             []byte(`{"summary":"s"}`),
		SkipReason:           "a reason",
	}
	if err := s.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, w); err != nil {
		t.Fatal(err)
	}
	want := before
	w.Apply(&want)
	want.Stage, want.Status = job.StageLLM, job.StatusInProgress
	want.Attempts = job.Attempts{job.StageFetch: 1}
	check := func(what string) {
		t.Helper()
		got, err := s.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		got.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
		got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the job reads\n%+v\nwant\n%+v", what, got, want)
		}
	}
	check("after the typed write")
	if ids, err := s.NoEmailReviewers(ctx, j.ID); err != nil || !reflect.DeepEqual(ids, []string{"github:zed"}) {
		t.Fatalf("reviewers without an address: %v %v", ids, err)
	}

	if err := s.SetStatus(ctx, j.ID, job.StageLLM, job.StatusInProgress, store.JobWrite{}); err != nil {
		t.Fatal(err)
	}
	check("after a zero write")

	clear := store.JobWrite{ClearSkipReason: true, Diff: &store.StoredDiff{Ref: "diffs/ef", SHA256: "ef34"}}
	if err := s.SetStatus(ctx, j.ID, job.StageLLM, job.StatusInProgress, clear); err != nil {
		t.Fatal(err)
	}
	clear.Apply(&want)
	check("after the skip reason and the truncation were cleared")
	if want.SkipReason != "" || want.DiffTruncated {
		t.Fatalf("JobWrite.Apply kept skip reason %q, truncated %v", want.SkipReason, want.DiffTruncated)
	}
}
