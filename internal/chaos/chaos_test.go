package chaos_test

import (
	"bytes"
	"context"
	"os"
	"slices"
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
// restarted, invocations of every function killed at their timeout,
// feedback messages held late, dead-lettered and redriven with new ids,
// SES's validation notice published again; then every (changelist,
// recipient, version) must be emailed exactly once or its job
// dead-lettered with a complete envelope — a daily reader's in exactly
// one digest, closed and sent under the same faults; nothing lost, stuck
// or leaked, and every feedback message processed. Reviewers reply to
// some emails meanwhile (some replies delivered twice): each reply gets
// exactly one confirmation and records its vote. Pull requests are
// pushed through a GitHub stand-in late, at once and forced: each
// reader gets what the code host's order owes them (R-OWED-1), a late
// head answered stale or skipped (R-SOURCE-6). Each version's status on
// the change is finished on its head, never lost nor posted twice, though
// some of the code hosts' answers are lost (R-CHANNEL-14).
// Rules: R-CHANNEL-14, R-DIGEST-2, R-OWED-1, R-SOURCE-6.
func TestChaos_FixedSeed_ExactlyOnceOrDeadLettered(t *testing.T) {
	env := testenv.Stack(t)
	var logs bytes.Buffer
	rep, err := chaos.Run(context.Background(), chaos.Stack{Endpoints: env.Endpoints, SESURL: env.SESURL}, chaos.Config{
		Jobs: 20, Seed: testseed.Seed(t, 20261122), Rate: 0.05, Concurrency: 4, PoisonRate: 0.15,
		RestartEvery: 3 * time.Second, Linger: 3 * time.Second, Drain: 4 * time.Minute,
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
	// The platform's own semantics (R-EVIDENCE-2, R-STAGE-3): every kind
	// fired, and every function with an SQS trigger was killed at its
	// timeout by the poller at least once.
	for _, r := range rep.Rows() {
		if slices.Contains(chaos.PlatformKinds(), r.Kind) && r.Injected == 0 {
			t.Errorf("platform kind %s was never injected", r.Kind)
		}
	}
	for _, fn := range []string{"fetch", "llm", "notify", "feedback"} {
		if rep.Killed[fn] == 0 {
			t.Errorf("no %s invocation was killed at its timeout", fn)
		}
	}
	if rep.ByOp[chaos.KindTimeoutKill]["SESv2.SendEmail"] == 0 {
		t.Error("no SES send hung after SES accepted it until its invocation was killed")
	}
	if rep.Redriven == 0 {
		t.Error("the feedback DLQ was never redriven")
	}
	// The status on the change (R-CHANNEL-14): statuses posted, some of
	// their answers lost after the host took them.
	if rep.CodeHostStatuses == 0 || rep.CodeHostLostAnswers == 0 {
		t.Errorf("%d statuses on the change, %d answers lost: the code host's channels went untested", rep.CodeHostStatuses, rep.CodeHostLostAnswers)
	}
	if rep.Poisoned == 0 {
		t.Fatal("no review with a malformed diff: the dead-letter path went untested")
	}
	// Daily readers' versions (R-DIGEST-1, R-DIGEST-2) were emailed in
	// digests, counted with every (changelist, recipient, version).
	if rep.DailyReaders == 0 || rep.Digests == 0 || rep.DigestEntries == 0 {
		t.Errorf("%d daily readers, %d digests showing %d versions: the digests went untested", rep.DailyReaders, rep.Digests, rep.DigestEntries)
	}
	// Reviewers replied while faults were on (R-REPLY-5, R-REPLY-8): each
	// reply one confirmation and its vote, also those delivered twice.
	if rep.Replies == 0 || rep.RepliesDoubled == 0 {
		t.Errorf("%d replies, %d delivered twice: the reply path went untested", rep.Replies, rep.RepliesDoubled)
	}
	// The code host's pushes (hostversions.go): a late head stale at
	// intake and a force-push's rewritten head, at least.
	if rep.HostPulls < 3 || rep.HostStale < 2 {
		t.Errorf("%d pull requests, %d heads answered stale: the code host's order went untested", rep.HostPulls, rep.HostStale)
	}
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("invariants broken: %v", f)
	}
}
