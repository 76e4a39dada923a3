package explore

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// Outcome is what the explorer makes one call into the world answer.
type Outcome int

const (
	// OK: the call does what it does.
	OK Outcome = iota
	// FailBefore: the call fails before it takes effect (a 5xx, a
	// throttle, a dropped request): nothing changed.
	FailBefore
	// AnswerLost (SES send): the provider accepts the message and the
	// answer is lost on the way back (connection reset).
	AnswerLost
	// Slow (SES send): the provider accepts the message; its answer comes
	// back as a later step, and other work runs in between.
	Slow
	// Refused (SES send): the provider refuses the message
	// (MessageRejected): nothing is sent.
	Refused

	// die unwinds a process the explorer has killed or abandoned.
	die Outcome = -1
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case FailBefore:
		return "fail"
	case AnswerLost:
		return "answer-lost"
	case Slow:
		return "slow"
	case Refused:
		return "refused"
	}
	return "die"
}

// Fault reports whether the outcome spends the fault budget.
func (o Outcome) Fault() bool { return o != OK && o != die }

// op is one call a process is about to make into the world: the point
// where the explorer may let another process run first, or answer the
// call with a fault.
type op struct {
	name string // "outbox.Claim"
	key  string // the resource it reads or writes: a row, a job, a queue
	// keys, for a call on several resources of its kind at once
	// (GetMany's rows), are each of them: the call's footprint names
	// every one (opUses), and key joins them for people and the hash.
	keys   []string
	write  bool      // whether it changes the resource
	faults []Outcome // outcomes beyond OK the explorer may choose
}

func (o op) String() string { return o.name + "(" + o.key + ")" }

// proc is one running handler invocation: a goroutine that runs real
// handler code and parks at each call into the world until the explorer
// lets it go on.
type proc struct {
	id     int
	label  string // "notify#2"
	kind   string // "notify", "feedback", "sweeper"
	resume chan Outcome
	at     *op      // the call it is parked on; nil once it finished
	hist   []string // calls made, with their outcome and a digest of the answer
	killed bool
	done   bool
	named  int // names given out by name
	// deadline is the invocation's (Scenario.Deadlines; zero: none), and
	// noStarts the moment an Overrun moves the clock to (zero: none).
	deadline, noStarts time.Time
	// jobs are the jobs the invocation's messages name (props.go).
	jobs map[job.ID]bool
	// started counts the messages of its batch the runner started.
	started int
}

// name gives the process's next name for something it creates (a claim
// token, a message, an SES message id): named after the process, not a
// counter of the run, so two processes' steps in either order create the
// same names and the states they reach hash the same.
func (p *proc) name() string {
	p.named++
	return fmt.Sprintf("%s.%d", p.label, p.named)
}

type procKey struct{}

// procOf is the process a context belongs to, nil outside any.
func procOf(ctx context.Context) *proc {
	p, _ := ctx.Value(procKey{}).(*proc)
	return p
}

// sched runs processes one at a time: exactly one goroutine (the explorer's
// or one process's) runs at any moment, so a run is a pure function of its
// choices.
type sched struct {
	parked chan *proc
	procs  []*proc // live processes, in creation order
	all    []*proc // every process started, for cleanup
	seq    map[string]int
}

func newSched() *sched { return &sched{parked: make(chan *proc), seq: map[string]int{}} }

// start runs fn as a new process and returns once it parks at its first
// call or finishes.
func (s *sched) start(kind string, fn func(ctx context.Context)) *proc {
	return s.startBy(kind, time.Time{}, time.Time{}, fn)
}

// startBy starts a process whose invocation ends at deadline (zero: no
// deadline): its context carries it, as Lambda's does.
func (s *sched) startBy(kind string, deadline, noStarts time.Time, fn func(ctx context.Context)) *proc {
	s.seq[kind]++
	p := &proc{id: len(s.all), label: fmt.Sprintf("%s#%d", kind, s.seq[kind]), kind: kind, resume: make(chan Outcome),
		deadline: deadline, noStarts: noStarts}
	s.all = append(s.all, p)
	s.procs = append(s.procs, p)
	ctx := context.WithValue(context.Background(), procKey{}, p)
	cancel := context.CancelFunc(func() {})
	if !deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	go func() {
		defer cancel()
		finished := false
		defer func() {
			if !finished {
				return // unwound by die: the explorer is not waiting
			}
			p.at, p.done = nil, true
			s.parked <- p
		}()
		fn(ctx)
		finished = true
	}()
	<-s.parked
	s.reap()
	return p
}

// gate parks the calling process on o until the explorer chooses its
// outcome. Outside any process (set-up, checks) it answers OK at once.
func (s *sched) gate(ctx context.Context, o op) Outcome {
	p := procOf(ctx)
	if p == nil {
		return OK
	}
	if p.killed {
		runtime.Goexit()
	}
	p.at = &o
	s.parked <- p
	out := <-p.resume
	if out == die {
		runtime.Goexit()
	}
	p.at = nil
	return out
}

// step lets p make the call it is parked on, answered with out, and waits
// until it parks again or finishes.
func (s *sched) step(p *proc, out Outcome) {
	p.resume <- out
	<-s.parked
	s.reap()
}

// reap drops finished processes from the live list.
func (s *sched) reap() {
	live := s.procs[:0]
	for _, p := range s.procs {
		if !p.done {
			live = append(live, p)
		}
	}
	s.procs = live
}

// kill abandons p where it is parked, as Lambda ends an invocation at its
// timeout: nothing after that runs, no answer is given, its messages are
// not deleted.
func (s *sched) kill(p *proc) {
	p.killed = true
	live := s.procs[:0]
	for _, q := range s.procs {
		if q != p {
			live = append(live, q)
		}
	}
	s.procs = live
}

// stop unwinds every process still parked (killed or unfinished), so a
// run leaves no goroutine behind.
func (s *sched) stop() {
	for _, p := range s.all {
		if !p.done && p.at != nil {
			p.killed = true
			p.resume <- die
		}
	}
}

// find returns the live process labelled l.
func (s *sched) find(l string) *proc {
	for _, p := range s.procs {
		if p.label == l {
			return p
		}
	}
	return nil
}

// note records a call's outcome and a digest of its answer in the
// process's history: the state hash includes it, because what a process
// does next depends on what it was answered.
func (p *proc) note(o op, out Outcome, answer string) {
	var b strings.Builder
	b.WriteString(o.String())
	b.WriteString("→")
	b.WriteString(out.String())
	if answer != "" {
		b.WriteString(" ")
		b.WriteString(answer)
	}
	p.hist = append(p.hist, b.String())
}
