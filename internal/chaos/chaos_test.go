package chaos_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/chaos"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/testseed"
)

// R-OUTBOX-10: "Retries MUST be safe under process crash, network
// timeout, and worker restart"; R-STAGE-3, R-STAGE-4: a job that cannot finish
// is dead-lettered with a complete envelope that holds no secret or raw
// PII. A short fixed-seed campaign: 20 jobs (a few with a malformed diff,
// which must end dead-lettered), faults at every AWS call, workers
// restarted, then every (changelist, recipient, version) must be emailed
// exactly once or its job dead-lettered with a complete envelope; nothing
// lost, stuck or leaked.
func TestChaos_FixedSeed_ExactlyOnceOrDeadLettered(t *testing.T) {
	env := testenv.Stack(t)
	var logs bytes.Buffer
	rep, err := chaos.Run(context.Background(), chaos.Stack{Endpoints: env.Endpoints, SESURL: env.SESURL}, chaos.Config{
		Jobs: 20, Seed: testseed.Seed(t, 20261122), Rate: 0.05, Concurrency: 4, PoisonRate: 0.15,
		RestartEvery: 3 * time.Second, Linger: 3 * time.Second, Drain: 90 * time.Second,
		Log: &logs,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep.Print(os.Stdout)
	injected := 0
	for _, r := range rep.Rows() {
		injected += r.Injected
	}
	if injected == 0 || rep.Restarts == 0 {
		t.Fatalf("the campaign injected %d faults and restarted the workers %d times: it tested nothing", injected, rep.Restarts)
	}
	if rep.Poisoned == 0 {
		t.Fatal("no review with a malformed diff: the dead-letter path went untested")
	}
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("invariants broken: %v", f)
	}
}
