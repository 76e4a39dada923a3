package explore

import (
	"slices"
	"time"
)

// Scenario is a small world to explore exhaustively: the jobs waiting at
// notify, what becomes of each recipient's mail, and the bounds of the
// explorer's choices.
type Scenario struct {
	Name string
	// Jobs are reviews whose critique is ready: each starts at the notify
	// stage with one notify message on the queue.
	Jobs []JobSpec
	// Fates: what SES makes of a recipient's accepted mail, and the event
	// it publishes after the Send event. A recipient not named is
	// delivered, and only its Send event is published.
	Fates map[string]Fate

	// MaxFaults bounds the faults on one path: a send answered other than
	// OK, a store call failed, an event published twice, an invocation
	// killed.
	MaxFaults int
	// SendFaults are the send answers the explorer may choose besides OK
	// (all of AnswerLost, Slow, FailBefore, Refused by default).
	SendFaults []Outcome
	// StoreFaults names the store calls that may fail before taking
	// effect ("outbox.MarkSent"...).
	StoreFaults []string
	// Kills allows an invocation to be killed at any call (a Lambda
	// timeout), each spending a fault.
	Kills bool
	// KillOnly, when set, names the functions whose invocations may be
	// killed ("intake"); by default any but the sweeper's.
	KillOnly []string
	// Duplicates allows SNS to deliver an event twice, each spending a
	// fault.
	Duplicates bool
	// MaxTicks bounds how often the clock jumps to its next deadline.
	MaxTicks int
	// MaxSweeps bounds the sweeper's runs.
	MaxSweeps int
	// MaxRedrives bounds DLQ redrives (an operator's move task).
	MaxRedrives int
	// Notifiers is how many notify invocations may run at once (1 by
	// default); the feedback function and the sweeper run one at a time.
	Notifiers int
	// MaxLive bounds the invocations running at once, of any function (2
	// by default): the races the protocol must survive are between two
	// writers of a row.
	MaxLive int
	// Sweepers is how many sweeper invocations may run at once (1 by
	// default): EventBridge may invoke a scheduled function twice, and a
	// slow sweep overlaps the next.
	Sweepers int
	// Batch is the most messages one receive hands an invocation (1 by
	// default): the explorer picks every set of up to Batch visible
	// messages (aws.go).
	Batch int
	// Deadlines gives each notify and feedback invocation its deployed
	// timeout, and those handlers their deployed per-message budgets
	// (aws.go): the runner's deadline handling and partial batch
	// responses are explored.
	Deadlines bool
	// Overruns lets the explorer make a call of an invocation with a
	// deadline, in a batch, take so long that no further message of the
	// batch may start, each spending a fault.
	Overruns bool
	// Start, if set, prepares the world before the exploration begins,
	// with the real handlers (starts.go): a state a longer history
	// reaches, explored from there.
	Start func(w *world)
	// MaxDepth bounds a path's length in `make test`.
	MaxDepth int
	// DeepDepth bounds it in `make explore` (MaxDepth+6 when zero). Set
	// where make test's bound was cut to keep it under a minute, so the
	// deep run keeps the bound its published figures were measured at.
	DeepDepth int

	// Quiet turns the notifier's quiet rules on (R-QUIET-1..3): each
	// job is created as intake does, so the changelist's head is its
	// latest version, and every version has the same diff.
	Quiet bool
	// OneVersion: every version is accepted before anything runs, so
	// each recipient must be mailed one version of the changelist, the
	// newest that can reach them (R-QUIET-3; supersede.go).
	OneVersion bool
	// Owed names, per "changelist recipient", the one version that
	// recipient must have been mailed — a mail that reached them — once
	// the world is quiet (the quiet property; supersede.go): in a world
	// whose every outcome is fixed, what the reader is owed.
	Owed map[string]int
	// Daily are the recipients on daily delivery (R-DIGEST-*; digest.go):
	// their critiques go into digests due at 10:00 UTC, an hour after the
	// world's epoch first, which the clock reaches by its ticks.
	Daily []string
	// DigestMessage puts on the notify queue, visible when it is due,
	// the message that closes and sends each daily reader's first digest:
	// the one the sweeper sends then (a sweep may send another).
	DigestMessage bool

	// The evidence path's own options (policy.go).
	Evidence EvidenceOptions

	// Timing of the protocol and of the world.
	Config Config
	// ConfigurationSet is the SES configuration set's name.
	ConfigurationSet string
}

// JobSpec is one review at notify.
type JobSpec struct {
	Changelist string
	Version    int
	Recipients []string
	// Messages is how many notify messages start on the queue for the
	// job (1 by default): more model a duplicate (a redrive of a message
	// already handled, the sweeper's requeue racing the original).
	Messages int
	// OverBudget starts the job at the llm stage with its changelist's
	// budget of model runs spent: the real llm stage refuses it
	// (R-BUDGET-1) when its message is delivered (supersede.go).
	OverBudget bool
	// Fate, when set, is what SES makes of this job's mail, whoever it
	// is to (it outranks the scenario's Fates): one version rejected for
	// its content after its Send, the others delivered (newer-rejected).
	Fate Fate
	// Digested: the job's notify ran before the world starts, and each
	// recipient's row went into their first digest, which holds it
	// (digest.go); the job succeeded.
	Digested bool
	// Posts, when set, makes the job intake's to create: nothing exists
	// at the start but one webhook delivery per entry, each the job's
	// signed body under that Idempotency-Key (a key named twice is the
	// same request delivered twice). The caller sends each, and sends it
	// again until it is answered with something other than a 5xx; the
	// job then travels fetch and llm (the real stages) to notify.
	Posts []string
}

// Config is the timing the explored code runs with, and the world's own.
type Config struct {
	Lease          time.Duration // a claim's lease (CRITICIZER_DELIVERY_LEASE)
	Margin         time.Duration // the evidence margin (CRITICIZER_EVIDENCE_MARGIN)
	StuckAfter     time.Duration // the sweeper's stuck threshold
	EvidenceWindow time.Duration // the sweeper's sent-without-evidence window
	Visibility     time.Duration // the queues' visibility timeout
	MaxReceives    int           // the queues' maxReceiveCount
	// PublishBound is how late after SES accepts a message its Send event
	// may reach the feedback queue in this world: at most Margin, the
	// bound the protocol assumes.
	PublishBound time.Duration
}

// DefaultConfig is the timing of a deployment, scaled where that keeps
// the same order of deadlines.
func DefaultConfig() Config {
	return Config{Lease: 2 * time.Minute, Margin: 2 * time.Minute, StuckAfter: 10 * time.Minute, EvidenceWindow: 10 * time.Minute,
		Visibility: 3 * time.Minute, MaxReceives: 3, PublishBound: time.Minute}
}

func (s Scenario) withDefaults() Scenario {
	if s.Config == (Config{}) {
		s.Config = DefaultConfig()
	}
	if s.ConfigurationSet == "" {
		s.ConfigurationSet = "criticizer"
	}
	if s.SendFaults == nil {
		s.SendFaults = []Outcome{AnswerLost, Slow, FailBefore, Refused}
	}
	if s.Notifiers == 0 {
		s.Notifiers = 1
	}
	if s.MaxLive == 0 {
		s.MaxLive = 2
	}
	if s.Sweepers == 0 {
		s.Sweepers = 1
	}
	if s.MaxDepth == 0 {
		s.MaxDepth = 60
	}
	return s
}

// Scenarios are the worlds `make test` explores completely (together,
// about 320,000 states; docs/chaos.md has the figures) and `make explore`
// explores again with deeper bounds (Deep). A path's depth counts the
// explorer's choices; each leaf is then healed (no more faults, a fair
// schedule) to check that nothing is stuck. duplicate-webhooks is the
// shallowest: each of its leaves heals through the whole pipeline
// (intake, fetch, llm, notify, SES, feedback), so a leaf costs several
// times another scenario's; depth 9 reaches the intake races, a kill at
// any intake call, and the sweeper's pick-up of a job whose intake died
// (the bug it found took 8).
func Scenarios() []Scenario {
	return append(protocolScenarios(), awsScenarios()...)
}

// protocolScenarios are the worlds of one sweeper, invocations with no
// deadline and batches of one.
func protocolScenarios() []Scenario {
	one := []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}}}
	return append([]Scenario{
		{Name: "send-faults", Jobs: one, MaxFaults: 1, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 26},
		{Name: "lost-answer-two-reviews", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl2", Version: 1, Recipients: []string{"b@example.com"}}},
			MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 23, DeepDepth: 30},
		{Name: "two-versions", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}}},
			MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 21, DeepDepth: 28},
		{Name: "superseded", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}}},
			Quiet: true, MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 21, DeepDepth: 27},
		{Name: "store-faults", Jobs: one, MaxFaults: 1, SendFaults: []Outcome{},
			StoreFaults: []string{"outbox.MarkSent", "outbox.RecordEvent", "outbox.Claim", "jobs.FinishNotify"}, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 28},
		{Name: "kills-and-redrive", Jobs: one, MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, Kills: true, MaxRedrives: 1,
			StoreFaults: []string{"outbox.RecordEvent"}, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 24},
		{Name: "events-twice", Jobs: one, MaxFaults: 2, SendFaults: []Outcome{AnswerLost}, Duplicates: true, MaxTicks: 3, MaxSweeps: 1, MaxDepth: 21, DeepDepth: 28},
		{Name: "transient-bounce", Jobs: []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"bounce@example.com"}}},
			Fates: map[string]Fate{"bounce@example.com": TransientBounce}, MaxFaults: 0, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 26},
		{Name: "reject-and-complaint", Jobs: []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"reject@example.com"}},
			{Changelist: "cl2", Version: 1, Recipients: []string{"complain@example.com"}}},
			Fates:     map[string]Fate{"reject@example.com": RejectedForContent, "complain@example.com": Complained},
			MaxFaults: 0, MaxTicks: 2, MaxSweeps: 1, MaxDepth: 19, DeepDepth: 26},
		{Name: "two-notifiers", Jobs: []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}, Messages: 2}},
			Notifiers: 2, MaxFaults: 1, SendFaults: []Outcome{AnswerLost, Slow}, MaxTicks: 2, MaxSweeps: 0, MaxDepth: 28},
		{Name: "duplicate-webhooks", Jobs: []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"},
			Posts: []string{"k1", "k1", "k2"}}},
			MaxFaults: 1, SendFaults: []Outcome{}, Kills: true, KillOnly: []string{"intake"}, MaxTicks: 1, MaxSweeps: 1, MaxDepth: 9},
		// Two pushes of one change, each its own webhook, sent in either
		// order, one after the other or both at once: the later version
		// posted first makes the earlier one stale (R-SOURCE-6); the owed
		// check says what each order owes the reader (owed.go).
		{Name: "pushes-out-of-order", Jobs: []JobSpec{
			{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}, Posts: []string{"k1"}},
			{Changelist: "cl1", Version: 2, Recipients: []string{"a@example.com"}, Posts: []string{"k2"}}},
			MaxFaults: 0, SendFaults: []Outcome{}, MaxTicks: 1, MaxSweeps: 1, MaxDepth: 8, DeepDepth: 12},
	}, slices.Concat(supersedeScenarios(), policyScenarios(), digestScenarios())...)
}

// Deep returns the scenario with the bounds of `make explore`: DeepDepth,
// by default paths six actions longer. Each action deeper multiplies the states by about 1.2
// to 1.4 (most of them interleavings of two invocations' calls).
func (s Scenario) Deep() Scenario {
	if s.DeepDepth == 0 {
		s.DeepDepth = s.MaxDepth + 6
	}
	s.MaxDepth = s.DeepDepth
	return s
}

// ScenarioByName finds a scenario of Scenarios.
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
