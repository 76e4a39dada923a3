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

// The fault kinds, in table order.
const (
	KindAPIError Kind = "api_error" // 5xx InternalServerError
	KindThrottle Kind = "throttle"  // ThrottlingException / TooManyRequestsException
	KindTimeout  Kind = "timeout"   // the caller's deadline passes (the call may have happened)
	KindLatency  Kind = "latency"   // a slow but successful call
	KindCrash    Kind = "crash"     // the invocation dies at this boundary (runtime.Goexit)
)

// Kinds lists the kinds in table order.
func Kinds() []Kind { return []Kind{KindAPIError, KindThrottle, KindTimeout, KindLatency, KindCrash} }

// weights of each kind among injected faults. Crashes are rarer: one kills a
// whole batch of up to ten messages and spends a receive of each.
var weights = map[Kind]int{KindAPIError: 25, KindThrottle: 25, KindTimeout: 20, KindLatency: 20, KindCrash: 10}

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
	if in.rng.Float64() >= in.rate {
		return fault.Rule{}, false
	}
	k := in.pick(sc != nil && sc.crashable)
	r := fault.Rule{Service: service, Operation: operation, When: fault.Before}
	if in.rng.IntN(2) == 1 {
		r.When = fault.After
	}
	switch k {
	case KindAPIError:
		r.Err = fault.InternalError
	case KindThrottle:
		// A throttled request is refused, never half done.
		r.When, r.Err = fault.Before, fault.Throttling
		if service == "SESv2" {
			r.Err = fault.TooManyRequests
		}
	case KindTimeout:
		// The caller waits, then gives up; After: the service did the work.
		r.Latency = time.Duration(50+in.rng.IntN(200)) * time.Millisecond
		r.Err = fault.Timeout
	case KindLatency:
		r.When, r.PassThrough = fault.Before, true
		r.Latency = time.Duration(20+in.rng.IntN(300)) * time.Millisecond
	case KindCrash:
		r.Crash = true
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
