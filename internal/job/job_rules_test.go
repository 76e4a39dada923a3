package job_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

var jobIDPattern = regexp.MustCompile(`^j_[a-z2-7]{32}$`)

// The job id is derived from (source, changelist_id, review_version), so the
// same review version can never have two jobs (R-INTAKE-1 "MUST NOT create
// a second job", R-INTAKE-3 "a new logical attempt tied to the same changelist_id
// but a new review_version").
func TestNewID_DeterministicAndShaped(t *testing.T) {
	inputs := []struct {
		source, changelist string
		version            int
	}{
		{"generic", "billing-1042", 1},
		{"github", "acme/api#7", 2147483647},
		{"generic", "", 1},
		{"", "", 0},
		{"generic", "Réfactor ✓ 日本", 3},
		{"generic", "a:b|c\x00d", -1},
	}
	for _, in := range inputs {
		a := job.NewID(in.source, in.changelist, in.version)
		b := job.NewID(in.source, in.changelist, in.version)
		if a != b {
			t.Errorf("NewID(%q, %q, %d) not deterministic: %s then %s", in.source, in.changelist, in.version, a, b)
		}
		if !jobIDPattern.MatchString(string(a)) {
			t.Errorf("NewID(%q, %q, %d) = %q; want it to match %s", in.source, in.changelist, in.version, a, jobIDPattern)
		}
	}
}

// A known value pins the derivation: ids are stored in DynamoDB and in
// queue messages, so changing the derivation would orphan existing jobs and
// let a redelivered webhook create a second job for the same version (seed
// 000 R-INTAKE-1 "MUST NOT create a second job"). The expected value was computed
// independently: "j_" + lower(base32(sha256("3:job7:generic12:billing-10421:1")[:20])).
func TestNewID_StableAcrossReleases(t *testing.T) {
	const want = job.ID("j_z2gouxrwnmny4kqfprlb54aovpn5wnps")
	if got := job.NewID("generic", "billing-1042", 1); got != want {
		t.Errorf("NewID(generic, billing-1042, 1) = %s; want %s", got, want)
	}
}

// R-INTAKE-3: "A versioned rerun MUST create a new logical attempt tied to
// the same changelist_id but a new review_version." Different source,
// changelist or version must give different ids, including inputs that
// would collide under naive concatenation.
func TestNewID_DiffersBySourceChangelistVersion(t *testing.T) {
	type in struct {
		source, changelist string
		version            int
	}
	tests := []struct {
		name string
		a, b in
	}{
		{"version", in{"generic", "cl-1", 1}, in{"generic", "cl-1", 2}},
		{"changelist", in{"generic", "cl-1", 1}, in{"generic", "cl-2", 1}},
		{"source", in{"generic", "7", 1}, in{"github", "7", 1}},
		{"changelist case", in{"generic", "CL-1", 1}, in{"generic", "cl-1", 1}},
		{"digits moved from changelist to version", in{"generic", "cl-1", 12}, in{"generic", "cl-11", 2}},
		{"separator moved between source and changelist", in{"a:b", "c", 1}, in{"a", "b:c", 1}},
		{"characters moved between source and changelist", in{"gen", "eric7", 1}, in{"generic", "7", 1}},
		{"length-prefix lookalike", in{"1:a", "", 1}, in{"", "1:a", 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := job.NewID(tt.a.source, tt.a.changelist, tt.a.version)
			y := job.NewID(tt.b.source, tt.b.changelist, tt.b.version)
			if x == y {
				t.Errorf("NewID(%+v) == NewID(%+v) == %s", tt.a, tt.b, x)
			}
		})
	}
}

// ChangelistKey scopes a changelist to its source, so GitHub PR 7 and a
// generic changelist "7" are different outbox keys (R-OUTBOX-1).
func TestChangelistKey_ScopesBySource(t *testing.T) {
	if job.ChangelistKey("github", "7") == job.ChangelistKey("generic", "7") {
		t.Error("github 7 and generic 7 share a changelist key")
	}
	if a, b := job.ChangelistKey("generic", "7"), job.ChangelistKey("generic", "7"); a != b {
		t.Errorf("ChangelistKey not deterministic: %q vs %q", a, b)
	}
}

// Hash is shared with delivery ids; it has the same alphabet and length as
// the job id's hash and separates its parts unambiguously.
func TestHash_LowerBase32AndUnambiguous(t *testing.T) {
	d := job.Hash("delivery", "generic:1", "a@example.com", "1")
	if !regexp.MustCompile(`^[a-z2-7]{32}$`).MatchString(d) {
		t.Errorf("Hash = %q; want 32 lower-case base32 characters", d)
	}
	if job.Hash("ab", "c") == job.Hash("a", "bc") {
		t.Error(`Hash("ab","c") == Hash("a","bc")`)
	}
	if job.Hash("a") == job.Hash("a", "") {
		t.Error(`Hash("a") == Hash("a","")`)
	}
}

// R-INTAKE-3 / R-RERUN-1: after a version succeeded, reprocessing is
// "Blocked when the request uses the same review_version (no-op; return
// existing result)" and "Allowed only when the caller explicitly requests a
// versioned rerun with a strictly higher review_version". A lower version
// after a higher one is stale.
func TestDecide_VersionedRerunRules(t *testing.T) {
	tests := []struct {
		name          string
		latest, req   int
		versionExists bool
		want          job.Decision
	}{
		{"first version of a new changelist", 0, 1, false, job.Start},
		{"first version seen is not 1", 0, 5, false, job.Start},
		{"same version after success is a no-op", 3, 3, true, job.Existing},
		{"same first version again", 1, 1, true, job.Existing},
		{"strictly higher version (v3 -> v4) starts a rerun", 3, 4, false, job.Start},
		{"version skipped ahead (v3 -> v9)", 3, 9, false, job.Start},
		{"lower version is stale", 4, 3, false, job.Stale},
		{"much lower version is stale", 100, 1, false, job.Stale},
		{"an older version that already has a job returns that job", 4, 3, true, job.Existing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job.Decide(tt.latest, tt.req, tt.versionExists); got != tt.want {
				t.Errorf("Decide(latest=%d, requested=%d, exists=%v) = %v; want %v", tt.latest, tt.req, tt.versionExists, got, tt.want)
			}
		})
	}
}

// R-RERUN-1: "Reprocessing a succeeded job with identical review_version
// is not allowed as a new send operation; it should return prior success."
// Whatever the latest version, an existing job for the requested version is
// never started again.
func TestDecide_SameVersionAfterSuccessIsNoOp(t *testing.T) {
	for latest := 0; latest <= 6; latest++ {
		for req := 1; req <= 6; req++ {
			if got := job.Decide(latest, req, true); got != job.Existing {
				t.Errorf("Decide(latest=%d, requested=%d, exists=true) = %v; want Existing", latest, req, got)
			}
			if got := job.Decide(latest, req, false); got == job.Existing {
				t.Errorf("Decide(latest=%d, requested=%d, exists=false) = Existing; no job exists to return", latest, req)
			}
			if req < latest {
				if got := job.Decide(latest, req, false); got != job.Stale {
					t.Errorf("Decide(latest=%d, requested=%d, exists=false) = %v; want Stale", latest, req, got)
				}
			}
		}
	}
}

// The stale error names both versions so the caller knows what to send.
func TestStaleError_NamesBothVersions(t *testing.T) {
	msg := (&job.StaleError{Requested: 3, Current: 4}).Error()
	for _, want := range []string{"review_version", "3", "4"} {
		if !strings.Contains(msg, want) {
			t.Errorf("StaleError = %q; want it to mention %q", msg, want)
		}
	}
}

// R-STAGE-3: each stage has its own queue; the pipeline order is
// fetch → llm → notify → done.
func TestStage_NextFollowsPipelineOrder(t *testing.T) {
	tests := []struct {
		from, want job.Stage
	}{
		{job.StageFetch, job.StageLLM},
		{job.StageLLM, job.StageNotify},
		{job.StageNotify, job.StageDone},
		{job.StageDone, job.StageDone},
	}
	for _, tt := range tests {
		if got := tt.from.Next(); got != tt.want {
			t.Errorf("%s.Next() = %s; want %s", tt.from, got, tt.want)
		}
	}
	// Walking Next from the first stage visits Stages() in order, then done.
	var walked []job.Stage
	for s := job.Stages()[0]; s != job.StageDone; s = s.Next() {
		walked = append(walked, s)
		if len(walked) > 10 {
			t.Fatal("Next never reaches StageDone")
		}
	}
	if !slices.Equal(walked, job.Stages()) {
		t.Errorf("walk via Next = %v; Stages() = %v", walked, job.Stages())
	}
}

func TestStage_StagesListsQueueBackedStagesInOrder(t *testing.T) {
	want := []job.Stage{job.StageFetch, job.StageLLM, job.StageNotify}
	if got := job.Stages(); !slices.Equal(got, want) {
		t.Errorf("Stages() = %v; want %v", got, want)
	}
}

// Stages() hands out the package's own array: a caller that edits the
// returned slice changes the pipeline for everyone else in the process.
func TestStage_StagesReturnsACopy(t *testing.T) {
	s := job.Stages()
	s[0] = "tampered"
	if got := job.Stages()[0]; got != job.StageFetch {
		t.Errorf("after editing a returned slice, Stages()[0] = %q; want %q", got, job.StageFetch)
	}
}

// Before is a strict order: each stage is before every later one, never
// before itself or an earlier one.
func TestStage_BeforeIsStrictPipelineOrder(t *testing.T) {
	order := []job.Stage{job.StageFetch, job.StageLLM, job.StageNotify, job.StageDone}
	for i, s := range order {
		for j, u := range order {
			if got, want := s.Before(u), i < j; got != want {
				t.Errorf("%s.Before(%s) = %v; want %v", s, u, got, want)
			}
		}
	}
}

// Valid is true only for stages with a queue: a message naming "done", an
// empty or a misspelt stage must not be routed anywhere.
func TestStage_ValidOnlyForQueueBackedStages(t *testing.T) {
	tests := []struct {
		s    job.Stage
		want bool
	}{
		{job.StageFetch, true},
		{job.StageLLM, true},
		{job.StageNotify, true},
		{job.StageDone, false},
		{"", false},
		{"FETCH", false},
		{"Notify", false},
		{"send", false},
		{" fetch", false},
	}
	for _, tt := range tests {
		if got := tt.s.Valid(); got != tt.want {
			t.Errorf("Stage(%q).Valid() = %v; want %v", tt.s, got, tt.want)
		}
	}
}

// R-OUTBOX-8: a job is "succeeded" only when finished; otherwise it stays
// "retryable_failed" or "in_progress". Terminal statuses are those no stage
// touches again without an operator or a new review version.
func TestStatus_Terminal(t *testing.T) {
	tests := []struct {
		s    job.Status
		want bool
	}{
		{job.StatusAccepted, false},
		{job.StatusInProgress, false},
		{job.StatusRetryableFailed, false},
		{job.StatusSucceeded, true},
		{job.StatusNeedsIntervention, true},
		{job.StatusDeadLettered, true},
		{"", false},
		{"unknown", false},
	}
	for _, tt := range tests {
		if got := tt.s.Terminal(); got != tt.want {
			t.Errorf("Status(%q).Terminal() = %v; want %v", tt.s, got, tt.want)
		}
	}
}

// Status values are stored in DynamoDB and returned by GET /jobs/{id}: they
// must never be renamed. R-OUTBOX-8 names succeeded, retryable_failed and
// in_progress explicitly.
func TestStatus_StoredValuesNeverChange(t *testing.T) {
	want := map[job.Status]string{
		job.StatusAccepted:          "accepted",
		job.StatusInProgress:        "in_progress",
		job.StatusRetryableFailed:   "retryable_failed",
		job.StatusSucceeded:         "succeeded",
		job.StatusNeedsIntervention: "needs_intervention",
		job.StatusDeadLettered:      "dead_lettered",
	}
	for s, w := range want {
		if string(s) != w {
			t.Errorf("status %q; want %q", s, w)
		}
	}
}
