package chaos

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
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
)

// Kinds lists the AWS kinds in table order.
func Kinds() []Kind {
	return []Kind{KindAPIError, KindThrottle, KindLoseRequest, KindLoseAnswer, KindSlowAnswer, KindLatency, KindCrash}
}

// EvidenceKinds lists the evidence-path kinds in table order.
func EvidenceKinds() []Kind {
	return []Kind{KindEventDelay, KindEventDrop, KindEventDuplicate, KindEventReorder, KindFeedbackFail}
}

// weights of each AWS kind among injected faults. Crashes are rarer: one
// kills a whole batch of up to ten messages and spends a receive of each.
var weights = map[Kind]int{KindAPIError: 20, KindThrottle: 20, KindLoseRequest: 12, KindLoseAnswer: 15, KindSlowAnswer: 10,
	KindLatency: 15, KindCrash: 8}

// scope tells the injector what a call is doing: whether it runs inside an
// invocation that may die (a stage handler or the intake function; not a
// poller's receive loop, the sweeper or the SES event bridge, whose
// goroutines a Goexit would end for good), and for which jobs.
type scope struct {
	crashable bool
	jobs      []job.ID
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
}

func newInjector(seed uint64, rate float64) *injector {
	return &injector{rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byOp: map[Kind]map[string]int{}, hits: map[job.ID]map[Kind]int{}}
}

// choose is the fault.Chooser.
func (in *injector) choose(ctx context.Context, service, operation string, _ any) (fault.Rule, bool) {
	if !in.on.Load() {
		return fault.Rule{}, false
	}
	sc := scopeFrom(ctx)
	in.mu.Lock()
	defer in.mu.Unlock()
	rate := in.rate
	if service == "SESv2" {
		// The send is where exactly-once is won or lost, and one call of
		// many: it is faulted four times as often as the rest.
		rate = min(1, 4*rate)
	}
	if in.rng.Float64() >= rate {
		return fault.Rule{}, false
	}
	k := in.pick(sc != nil && sc.crashable)
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

func (in *injector) pick(crashable bool) Kind {
	total := 0
	for _, k := range Kinds() {
		if k != KindCrash || crashable {
			total += weights[k]
		}
	}
	n := in.rng.IntN(total)
	for _, k := range Kinds() {
		if k == KindCrash && !crashable {
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

func (in *injector) jobHits(id job.ID) map[Kind]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[Kind]int{}
	for k, n := range in.hits[id] {
		out[k] = n
	}
	return out
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
