package e2e

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/wire"
)

// A stack with no channel other than email sends the notify queue no post
// task: not for a reviewed version (Started, Finished), nor for one whose
// fetch stage is dead-lettered (the runner's not-reviewed announcement).
// The email goes out as before.
// Rules: R-CHANNEL-15.
func TestNoChannels_NoPostTasks_ReviewedOrDeadLettered(t *testing.T) {
	var posts atomic.Int64
	s := startStack(t, devstack.FunctionOptions{Wire: wire.Options{
		Wrap: func(st job.Stage, fn stage.Func) stage.Func {
			return func(ctx context.Context, m job.Message, attempt int) error {
				if m.Task == job.TaskPost {
					posts.Add(1)
				}
				return fn(ctx, m, attempt)
			}
		}}})
	cl := testenv.Prefix(t)
	dead := newFlakyDiffServer(t, -1, http.StatusNotFound, sampleDiff(t))
	deadID := accept(t, s, "k-dead-"+cl, diffURLBody(t, cl+"-dead", dead.URL+"/diff"))
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "solo@example.com"))
	s.waitJob(deadID, 30*time.Second, job.StatusDeadLettered)
	s.waitJob(id, 60*time.Second, job.StatusSucceeded)
	if n := len(emailsFor(t, s.env.SES, cl)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
	if b := dlqBodies(t, s, job.StageFetch); len(b) != 1 {
		t.Fatalf("fetch DLQ holds %d, want 1", len(b))
	}
	// A post task sent before the job's final write is in the notify queue
	// by now; give a straggler the time of one poll.
	time.Sleep(2 * time.Second)
	if n := posts.Load(); n != 0 {
		t.Errorf("notify was sent %d post tasks, want none without a channel", n)
	}
}
