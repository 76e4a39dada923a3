package chaos

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
)

// Kind is a class of injected fault.
type Kind string

// The fault kinds, in table order. The AWS kinds are injected below the
// SDK, at the HTTP client (package fault), inside the SDK's retry loop;
// the evidence kinds on the SES event path (evidence.go).
const (
	KindAPIError    Kind = "5xx"          // 500 InternalServerError, before the work or after it
	KindThrottle    Kind = "throttle"     // ThrottlingException / SES 429, with Retry-After
	KindLoseRequest Kind = "lose_request" // the connection resets before the request reaches the service
	KindLoseAnswer  Kind = "lose_answer"  // the service did the work; the connection resets before the answer
	KindSlowAnswer  Kind = "slow_answer"  // the service did the work; the answer comes after the client's timeout
	KindLatency     Kind = "latency"      // a slow but successful call
	KindCrash       Kind = "crash"        // the invocation dies at this boundary (runtime.Goexit)

	KindEventDelay     Kind = "event_delay"     // SES events held back (the whole path stalls)
	KindEventDrop      Kind = "event_drop"      // one event of a message lost (its other event still comes)
	KindEventDuplicate Kind = "event_duplicate" // an event delivered twice
	KindEventReorder   Kind = "event_reorder"   // events delivered out of order (within the margin)
	KindFeedbackFail   Kind = "feedback_fail"   // the feedback function fails a record (retried by SQS)

	KindTimeoutKill      Kind = "timeout_kill"      // a call hangs until the poller kills the invocation at its timeout
	KindEventLate        Kind = "event_late"        // a feedback message held in flight 18–36 s while others flow
	KindFeedbackRedrive  Kind = "feedback_redrive"  // a feedback message failed into the DLQ, then redriven (new id)
	KindValidationNotice Kind = "validation_notice" // SES's plain-text validation notice published again
)

// Kinds lists the AWS kinds in table order.
func Kinds() []Kind {
	return []Kind{KindAPIError, KindThrottle, KindLoseRequest, KindLoseAnswer, KindSlowAnswer, KindLatency, KindCrash}
}

// EvidenceKinds lists the evidence-path kinds in table order.
func EvidenceKinds() []Kind {
	return []Kind{KindEventDelay, KindEventDrop, KindEventDuplicate, KindEventReorder, KindFeedbackFail}
}

// PlatformKinds lists, in table order, the kinds that play AWS's own
// semantics where they are harsher than a test's: Lambda killing an
// invocation at its timeout (an AWS kind, drawn with the others), SQS
// returning a message minutes after newer ones, a DLQ redrive giving
// messages new ids, and SES's validation notice (platform.go). Each is
// injected at its first chance in every campaign, then at the rate.
func PlatformKinds() []Kind {
	return []Kind{KindTimeoutKill, KindEventLate, KindFeedbackRedrive, KindValidationNotice}
}

// allKinds lists every kind in table order.
func allKinds() []Kind {
	return append(append(Kinds(), EvidenceKinds()...), PlatformKinds()...)
}

// weights of each AWS kind among injected faults. Crashes and timeout
// kills are rarer: one kills a whole batch of up to ten messages and
// spends a receive of each (a timeout kill also holds a poller for the
// whole function timeout).
var weights = map[Kind]int{KindAPIError: 20, KindThrottle: 20, KindLoseRequest: 12, KindLoseAnswer: 15, KindSlowAnswer: 10,
	KindLatency: 15, KindCrash: 8, KindTimeoutKill: 5}

// killedFunctions are the functions whose invocations the campaign kills at
// their timeout at least once each: every function with an SQS trigger.
func killedFunctions() []string {
	return []string{string(job.StageFetch), string(job.StageLLM), string(job.StageNotify), "feedback"}
}

// stallBound is how long a timeout_kill call hangs at most: a call made
// by an invocation the poller never kills (none should exist) comes back
// as a reset connection after it.
const stallBound = 4 * stageTimeout

// scope tells the injector what a call is doing: whether it runs inside an
// invocation that may die (a stage handler or the intake function; not a
// poller's receive loop, the sweeper or the SES event bridge, whose
// goroutines a Goexit would end for good), and for which jobs.
type scope struct {
	crashable bool
	jobs      []job.ID
	fn        string // the function: fetch, llm, notify, feedback; "" for intake
}

type scopeKey struct{}

func withScope(ctx context.Context, s *scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

func scopeFrom(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

// injector is the campaign's seeded fault chooser, installed on every SDK
// client as fault middleware (fault.Injector.Choose).
type injector struct {
	rate float64
	on   atomic.Bool

	mu   sync.Mutex
	rng  *rand.Rand
	byOp map[Kind]map[string]int // kind -> "Service.Operation" -> count
	hits map[job.ID]map[Kind]int // which kinds hit calls made for a job
	// stalls counts timeout_kill faults per function; a function with
	// none yet gets one at its invocation's first call.
	stalls map[string]int
	// lost holds the delivery ids of SES sends whose answer the caller
	// never saw although SES may have accepted the message (event_late
	// holds their Send events).
	lost map[string]bool
	// sendKilled: an SES send has hung after SES accepted it, until its
	// invocation was killed.
	sendKilled bool
}

func newInjector(seed uint64, rate float64) *injector {
	return &injector{rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byOp: map[Kind]map[string]int{}, hits: map[job.ID]map[Kind]int{}, stalls: map[string]int{}, lost: map[string]bool{}}
}

// choose is the fault.Chooser.
func (in *injector) choose(ctx context.Context, service, operation string, input any) (fault.Rule, bool) {
	if !in.on.Load() {
		return fault.Rule{}, false
	}
	sc := scopeFrom(ctx)
	crashable := sc != nil && sc.crashable
	// A timeout kill needs an invocation the poller can kill (not the
	// intake function, which API Gateway runs).
	killable := crashable && sc.fn != "" && devstack.InvocationFrom(ctx) != nil
	in.mu.Lock()
	defer in.mu.Unlock()
	var k Kind
	// The first SES send of the campaign hangs after SES accepted it, until
	// its invocation is killed: a lost answer no handler code sees.
	killSend := killable && service == "SESv2" && operation == "SendEmail" && !in.sendKilled
	if killable && (in.stalls[sc.fn] == 0 || killSend) {
		// Every function is killed at its timeout at least once.
		k = KindTimeoutKill
	} else {
		rate := in.rate
		if service == "SESv2" {
			// The send is where exactly-once is won or lost, and one call of
			// many: it is faulted four times as often as the rest.
			rate = min(1, 4*rate)
		}
		if in.rng.Float64() >= rate {
			return fault.Rule{}, false
		}
		k = in.pick(crashable, killable)
	}
	r := fault.Rule{Service: service, Operation: operation}
	switch k {
	case KindAPIError:
		r.Kind = fault.ServerError
		if in.rng.IntN(2) == 1 {
			r.When = fault.After
		}
	case KindThrottle:
		r.Kind, r.RetryAfter = fault.Throttle, time.Duration(in.rng.IntN(3))*time.Second
	case KindLoseRequest:
		r.Kind = fault.LoseRequest
	case KindLoseAnswer:
		r.Kind = fault.LoseAnswer
	case KindSlowAnswer:
		// The caller waits, then its client's timeout fires; the service
		// did the work.
		r.Kind, r.Latency = fault.SlowAnswer, time.Duration(50+in.rng.IntN(200))*time.Millisecond
	case KindLatency:
		r.Kind, r.Latency = fault.Latency, time.Duration(20+in.rng.IntN(300))*time.Millisecond
	case KindCrash:
		r.Kind = fault.Crash
		if in.rng.IntN(2) == 1 {
			r.When = fault.After
		}
	case KindTimeoutKill:
		// The call hangs (before the service sees it, or after it did
		// the work: an SES send accepted) until the poller kills the
		// invocation at its function timeout.
		r.Kind, r.Latency, r.Until = fault.Stall, stallBound, devstack.Killed
		if in.rng.IntN(2) == 1 || killSend {
			r.When = fault.After
		}
		in.stalls[sc.fn]++
		in.sendKilled = in.sendKilled || (killSend && r.When == fault.After)
	}
	if service == "SESv2" && operation == "SendEmail" && answerLost(r) {
		if id := sendDeliveryID(input); id != "" {
			in.lost[id] = true
		}
	}
	op := service + "." + operation
	if in.byOp[k] == nil {
		in.byOp[k] = map[string]int{}
	}
	in.byOp[k][op]++
	if sc != nil {
		for _, id := range sc.jobs {
			if in.hits[id] == nil {
				in.hits[id] = map[Kind]int{}
			}
			in.hits[id][k]++
		}
	}
	return r, true
}

// answerLost reports whether a fault lets the service do the work and
// keeps its answer from the caller.
func answerLost(r fault.Rule) bool {
	switch r.Kind {
	case fault.LoseAnswer, fault.SlowAnswer:
		return true
	case fault.ServerError, fault.Crash, fault.Stall:
		return r.When == fault.After
	}
	return false
}

// sendDeliveryID reads the delivery id tag of an SES v2 SendEmail input.
func sendDeliveryID(input any) string {
	in, ok := input.(*sesv2.SendEmailInput)
	if !ok || in == nil {
		return ""
	}
	for _, t := range in.EmailTags {
		if aws.ToString(t.Name) == mail.DeliveryIDTag {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// eligible reports whether kind k may hit a call: crashes only inside an
// invocation, timeout kills only inside one the poller runs.
func eligible(k Kind, crashable, killable bool) bool {
	switch k {
	case KindCrash:
		return crashable
	case KindTimeoutKill:
		return killable
	}
	return true
}

// pickable lists the AWS kinds the injector draws from.
func pickable() []Kind { return append(Kinds(), KindTimeoutKill) }

func (in *injector) pick(crashable, killable bool) Kind {
	total := 0
	for _, k := range pickable() {
		if eligible(k, crashable, killable) {
			total += weights[k]
		}
	}
	n := in.rng.IntN(total)
	for _, k := range pickable() {
		if !eligible(k, crashable, killable) {
			continue
		}
		if n < weights[k] {
			return k
		}
		n -= weights[k]
	}
	return KindAPIError
}

// injected returns the counts per kind and per kind and operation.
func (in *injector) injected() (map[Kind]int, map[Kind]map[string]int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	total := map[Kind]int{}
	byOp := map[Kind]map[string]int{}
	for k, ops := range in.byOp {
		byOp[k] = map[string]int{}
		for op, n := range ops {
			total[k] += n
			byOp[k][op] = n
		}
	}
	return total, byOp
}

// answerWasLost reports whether an SES send of the delivery lost its
// answer to a fault.
func (in *injector) answerWasLost(deliveryID string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.lost[deliveryID]
}

// stalled reports whether every function got its timeout kill, and an
// SES send its kill after SES accepted it.
func (in *injector) stalled() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.sendKilled {
		return false
	}
	for _, fn := range killedFunctions() {
		if in.stalls[fn] == 0 {
			return false
		}
	}
	return true
}

func (in *injector) jobHits(id job.ID) map[Kind]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.hits[id])
}

// batchJobs reads the job ids of a batch's records (stage messages, or
// envelopes being replayed), for attribution.
func batchJobs(bodies []string) []job.ID {
	var ids []job.ID
	for _, b := range bodies {
		if env, ok, err := deadletter.Decode([]byte(b)); err == nil && ok {
			b = env.Original.Body
		}
		var m job.Message
		if json.Unmarshal([]byte(b), &m) == nil && m.JobID != "" {
			ids = append(ids, m.JobID)
		}
	}
	return ids
}
