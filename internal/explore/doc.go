// Package explore checks the delivery protocol exhaustively: it runs the
// real notify stage (through the real SQS batch runner), the real feedback
// function and the real sweeper on the in-memory store, in a world whose
// every nondeterminism is the explorer's choice, and visits every state
// reachable within a scenario's bounds.
//
// Most scenarios start each job at notify, its critique ready. An intake
// scenario (JobSpec.Posts) starts with nothing but webhooks: the real API
// handler and intake (internal/api) take them, on the same in-memory jobs
// table, with S3 (the inline diff) in memory behind the same gates; the
// real fetch and llm stages, through the real batch runner, with the
// offline critic (a real critic that needs no network), take the job to
// notify. The caller sends each webhook, and again (the same key, the
// same bytes) until it is answered with something other than a 5xx.
//
// # The world
//
// Each handler invocation is a process: a goroutine running the handler's
// own code, which parks at every call into the world (a store read or
// write, an SQS call, an SES send) until the explorer lets it go on. Only
// one goroutine runs at a time, so a run is a function of its choices:
//
//   - which parked process makes its call next, and with what answer: an
//     SES send accepted, accepted with its answer lost, slow (accepted, the
//     answer a later step), throttled, or refused; a store write failed
//     before taking effect (where the scenario allows);
//   - which visible messages a queue delivers next, starting a new
//     invocation: one, or (Scenario.Batch) any set of up to Batch of
//     them, the handler's partial batch response deciding which are
//     deleted — standard queues keep no order;
//   - when SES publishes each event to the feedback queue, and whether SNS
//     delivers one twice;
//   - when the clock jumps to its next deadline (a lease, a visibility
//     timeout, the evidence bound, a stuck threshold), only while no
//     invocation runs: an invocation stalled that long is a Kill;
//   - killing an invocation where it is parked (Lambda's timeout: nothing
//     after it runs, its message is not deleted and returns after the
//     visibility timeout, and counts a receive; past maxReceiveCount it goes
//     to the DLQ);
//   - running the sweeper, two at once where Scenario.Sweepers allows
//     (EventBridge may invoke a schedule twice; a slow sweep overlaps the
//     next), and redriving a DLQ (new message ids);
//   - with Scenario.Deadlines, each notify and feedback invocation ends
//     at its deployed timeout, and (Overruns) a call may take so long
//     that its batch may start no further message: the clock moves on
//     while the invocation runs, and the real runner hands the rest back
//     (aws.go);
//   - when the caller sends each webhook, and sends it again after an
//     answer it did not get (the invocation killed: to the caller, API
//     Gateway's 5xx) or a 5xx.
//
// The world keeps the protocol's one assumption: a Send event reaches the
// feedback queue within PublishBound (at most the bound the protocol
// assumes) of SES accepting the message — except in hold-late-send, which
// breaks it on purpose to check the hold policy (R-EVIDENCE-9: no second
// email even then; the "evidence" property, which rests on the bound, is
// not checked there). Scenario.Evidence also puts records on the feedback
// queue that can never be evidence (policy.go, R-EVIDENCE-10).
//
// # The properties
//
// After every action: no recipient has two emails for one (changelist,
// recipient, version); the evidence path never counts as caught up past a
// message whose Send event is unprocessed (the notifier's own Settle is
// asked); a job is succeeded only when every row is settled. At every leaf
// (no action left, or the depth bound) the world is healed — the same fair
// schedule with no faults, until quiet — and then every row must be sent,
// delivered, skipped without a send, or held for a person with its reason
// in sight (never still sending: every event reaches the feedback queue
// here, so the evidence settles every send), and every job must have a
// verdict. A job that never ends (an older version waiting for ever for
// a newer one that cannot come) keeps the healing run busy until its
// limit; liveness then finds it still at work, and says so.
//
// Also after every action: a stage message is deleted only when its work
// is done or handed on (a fresh copy, an envelope in the DLQ, another
// invocation at work on the job), and a Send event's message only once
// the event is on its row; a batch starts a message only while its need
// is left before the deadline; no row is moved to reconciling, since the
// world keeps the publish bound and an ordering violation would be a
// false alarm (props.go). The healing run cannot see these: its sweeper
// makes up for a lost message ten minutes later.
//
// In intake scenarios, also after every action: each job is created once
// however the webhooks race (one job per idempotency key and per review
// version, R-INTAKE-1, R-INTAKE-3); once a key is answered 202, every
// answer to it is that answer byte for byte (R-INTAKE-1); a stage message
// on a queue names a job that is persisted and has reached that stage
// (R-INTAKE-5, R-STAGE-7). At the leaf, a job intake accepted must not
// end dead-lettered before notify: nothing in these worlds fails fetch or
// llm for good, so that would be accepted work lost.
//
// # The search
//
// Depth first, with replay: a state is reached by running its path from
// the start, since goroutines cannot be copied. Each state is hashed (the
// stores, the queues, SES, the clock, and each live process's history of
// calls and answers, which with deterministic code fixes what it does
// next) and explored once from its shallowest depth. Partial-order
// reduction by sleep sets (Godefroid, 1996) skips orderings of actions
// that commute: each action has a footprint (the row, job, message or
// queue it reads, writes or adds to; each row of a read of several), and
// two actions with disjoint footprints reach the same state in either
// order. A violation's trace is
// made the shortest within the search by a binary search on the depth
// bound (a bounded search that re-explores states reached by a shorter
// path misses nothing within its bound), then printed step by step with
// the rows after each (Explain) and, on request, written as a trace file
// that TestExplore_Regressions replays (WriteTrace).
//
// # Why not a library
//
// The Go ecosystem has no maintained explorer of real code with
// controlled scheduling, state hashing and partial-order reduction:
// vanadium's systematic tester is archived and internal to its module;
// newer deterministic-simulation tools sample schedules from seeds
// (random, like `make chaos`) rather than enumerating them; testing/synctest
// gives virtual time but no control of the order. The scheduler here is a
// channel handoff at the calls the handlers already make through
// interfaces, which is all the protocol needs.
package explore
