package pipeline_test

import (
	"context"
	"slices"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

// postQueue records the post tasks the stages send.
type postQueue struct{ phases []string }

func (q *postQueue) Enqueue(_ context.Context, m job.Message) error {
	if m.Task == job.TaskPost {
		q.phases = append(q.phases, m.Phase)
	}
	return nil
}

// The stages announce a version's phases to the channels other than
// email: Started when the fetch stage places a version it will review,
// Finished before the job's final status; a version the repository's
// settings skip is announced Finished only (it was never in progress).
// Rules: R-CHANNEL-4.
func TestAnnounce_StartedWhenPlaced_FinishedAtTheEnd(t *testing.T) {
	const file = "skip_authors: [\"Renovate[bot]\"]\n"
	for _, tc := range []struct {
		name, author string
		want         []string
	}{
		{"reviewed", "carol", []string{"started", "finished"}},
		{"skipped", "renovate[bot]", []string{"finished"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSettingsRig(t, file)
			q := &postQueue{}
			r.fetch.Base.Queue, r.fetch.Base.Posts = q, true
			r.llm.Base.Queue, r.llm.Base.Posts = q, true
			r.notify.Base.Queue, r.notify.Base.Posts = q, true
			j := r.run(1, tc.author)
			if j.Status != job.StatusSucceeded {
				t.Fatalf("job %s", j.Status)
			}
			if !slices.Equal(q.phases, tc.want) {
				t.Fatalf("announced %v, want %v", q.phases, tc.want)
			}
		})
	}
}
