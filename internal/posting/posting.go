// Package posting carries a version's review to every channel other than
// email (internal/channel: check runs, commit statuses, review messages,
// signed webhooks) under the delivery protocol an email has
// (R-CHANNEL-*): a post row per (changelist, version, channel, phase) in
// the deliveries table, rendered and stored once; claimed, sent, and
// marked sent with the channel's receipt in one conditional write; a
// claim that is not the row's first reconciled with Channel.Find before
// anything is sent again.
//
// Work arrives as job.TaskPost messages on the notify queue, one per
// post row, handled here and not by the notify stage's email run: a
// destination that keeps failing is retried, backed off and dead-lettered
// on its own message (R-STAGE-*), and never holds up email or the job's
// status. It is a stage-layer package: only the wiring and the harnesses
// import it (R-LAYER-1).
package posting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store"
)

// Jobs is what posting reads of a job: the job, and where its changelist
// lives (the head commit a status goes on).
type Jobs interface {
	Get(ctx context.Context, id job.ID) (job.Job, error)
	GetSourceRef(ctx context.Context, id job.ID) (store.SourceRef, error)
}

// Enqueuer sends a stage message (the notify queue's TaskPost).
type Enqueuer interface {
	Enqueue(ctx context.Context, m job.Message) error
}

// Bounds on what an outsider's diff, through the model, can make a post
// carry (R-CHANNEL-7): findings per post, bytes per finding's text. A post
// carries as many findings as a critique may hold (R-BOUND-1), so a check
// run annotates every finding the email shows, 50 a request; each
// channel's renderer bounds its own body (a webhook's omits findings to
// stay under its size, and says how many).
const (
	DefaultMaxFindings = critic.MaxFindingsTotal
	MaxFindingText     = 2000
	// MaxChannels bounds the destinations a deployment may configure.
	MaxChannels = 16
)

// DefaultLease is how long a claim holds a row: one send and its mark.
const DefaultLease = 45 * time.Second

// Posting announces a version's posts and sends them.
type Posting struct {
	Posts    store.Posts
	Jobs     Jobs
	Queue    Enqueuer
	Channels []channel.Channel
	Log      *slog.Logger
	// Lease is a claim's lease (DefaultLease if zero).
	Lease time.Duration
	// JobLink is the job's status page's URL (with its token), the
	// link a post carries; nil: no link.
	JobLink func(job.ID) string
	// MaxFindings bounds the findings in a post (DefaultMaxFindings if
	// zero); a post says how many more there were.
	MaxFindings int
	// StartedAfterFetch makes a Started announcement wait for the fetch
	// stage's write, which carries the repository's settings: a code
	// host's channel must see its code_host_status: off (R-CHANNEL-10).
	// Off, Started is posted as soon as it is announced.
	StartedAfterFetch bool
	// Tokens makes claim tokens; nil draws them from crypto/rand.
	Tokens func(ctx context.Context) string
	// Now is the store's clock, leases are judged by (time.Now if nil).
	Now func() time.Time
}

// SendMargin is kept back from a claim's lease: a send must reach its
// channel that long before the lease lapses, so that the next claim,
// once the lease has lapsed, asks a channel that holds all it ever will
// of the earlier try (R-CHANNEL-3).
const SendMargin = 5 * time.Second

func (p *Posting) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// sendContext bounds a send (or a Find before one) by the claim's lease:
// a deadline SendMargin before it lapses, and channel.SendBy. ok=false:
// too little of the lease is left to start.
func (p *Posting) sendContext(ctx context.Context, r channel.Row) (context.Context, context.CancelFunc, bool) {
	by := r.LeaseUntil.Add(-SendMargin)
	left := by.Sub(p.now())
	if left <= 0 {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithTimeout(channel.WithSendBy(ctx, by), left)
	return ctx, cancel, true
}

func (p *Posting) channel(name string) channel.Channel {
	for _, c := range p.Channels {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

func (p *Posting) lease() time.Duration {
	if p.Lease > 0 {
		return p.Lease
	}
	return DefaultLease
}

func (p *Posting) token(ctx context.Context) string {
	if p.Tokens != nil {
		return p.Tokens(ctx)
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// metric counts one event of a channel's posts. The channel's name is a
// dimension (a destination's configured name, never its URL or secret).
func (p *Posting) metric(ctx context.Context, ch, name string) {
	if p.Log != nil {
		obs.Metric(ctx, p.Log, map[string]string{"Channel": ch}, map[string]float64{name: 1})
	}
}

// Enabled reports whether any channel other than email is configured.
func (p *Posting) Enabled() bool { return p != nil && len(p.Channels) > 0 }

// Announce creates the version's post rows for phase on every channel,
// rendered from j as it is now, and enqueues a TaskPost for each
// (R-CHANNEL-4). A row that exists is left as it is (its rendering
// stands). Called before the stage's own write that makes the phase true
// (the fetch's placement, the job's final status): a failure is the
// stage's and is retried, and a row whose message was lost is handed
// back by the sweeper (R-CHANNEL-5). outcome and reason are the Finished
// post's.
func (p *Posting) Announce(ctx context.Context, j job.Job, phase channel.Phase, outcome channel.Outcome, reason string) error {
	if !p.Enabled() {
		return nil
	}
	base, err := p.build(ctx, j, phase, outcome, reason)
	if err != nil {
		return err
	}
	for _, ch := range p.Channels {
		post := base
		post.ID = ID(post.VersionKey, ch.Name(), phase, outcome)
		r := channel.Row{ID: post.ID, JobID: j.ID, Channel: ch.Name(), Phase: phase, Post: post}
		if rd, ok := ch.(channel.Renderer); ok {
			if r.Body, err = rd.Render(post); err != nil {
				return retry.Permanent(retry.RuntimeBug, fmt.Errorf("render post %s for %s: %w", post.ID, ch.Name(), err))
			}
			if len(r.Body) > store.PostBodyMax {
				return retry.Permanent(retry.RuntimeBug, fmt.Errorf("post %s for %s: body of %d bytes", post.ID, ch.Name(), len(r.Body)))
			}
		}
		row, made, err := p.Posts.EnsurePost(ctx, r)
		if err != nil {
			return err
		}
		if !made && row.Status.Done() {
			continue
		}
		if err := p.Queue.Enqueue(ctx, Message(row)); err != nil {
			return err
		}
	}
	return nil
}

// FinishedWait is how long a Finished announcement whose job has not
// reached its final status yet first waits before it looks again: the
// announcement is sent just before that write, so it is usually there
// at once. Each deferral doubles the wait, up to MaxFinishedWait, so a
// job its notify run holds for minutes is waited for without spending
// the budget.
const (
	FinishedWait    = 2 * time.Second
	MaxFinishedWait = 5 * time.Minute
)

// finishedWait is the wait after the message's earlier deferrals.
func finishedWait(m job.Message) time.Duration {
	n := 0
	if m.Deferral != nil {
		n = min(m.Deferral.Count, 8)
	}
	return min(FinishedWait<<n, MaxFinishedWait)
}

// announced handles a stage's announcement (a TaskPost without a row):
// the job's post rows for the phase, one TaskPost each. A Finished one
// that arrives before the job's final status is written (it is sent just
// before) waits for it: AWAITING_EVIDENCE, a wait the stage runner defers
// without spending the budget (R-STAGE-6).
func (p *Posting) announced(ctx context.Context, m job.Message) error {
	phase := channel.Phase(m.Phase)
	if phase != channel.Started && phase != channel.Finished {
		return retry.Permanent(retry.SchemaInvalid, fmt.Errorf("post task for job %s: phase %q", m.JobID, m.Phase))
	}
	if !p.Enabled() {
		return nil
	}
	j, err := p.Jobs.Get(ctx, m.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return retry.Permanent(retry.NotFound, err)
	}
	if err != nil {
		return err
	}
	if p.StartedAfterFetch && phase == channel.Started && j.Stage == job.StageFetch && !j.Status.Terminal() {
		// The fetch stage announces Started just before the write that
		// places the version, which carries its repository's settings
		// (code_host_status: off among them, R-CHANNEL-10): the rows are
		// made once that write is in.
		return retry.WithRetryAfter(retry.Transient(retry.AwaitingEvidence,
			fmt.Errorf("job %s: started post before the fetch stage's write", j.ID)), StartedWait)
	}
	var outcome channel.Outcome
	var reason string
	if phase == channel.Finished {
		var final bool
		if outcome, reason, final = OutcomeOf(j); !final {
			return retry.WithRetryAfter(retry.Transient(retry.AwaitingEvidence,
				fmt.Errorf("job %s: finished post before the job's final status", j.ID)), finishedWait(m))
		}
	}
	return p.Announce(ctx, j, phase, outcome, reason)
}

// ID is the post row's id (channel.PostID) of a version's post to a
// channel in a phase. A Finished post saying the version was not reviewed
// (a stage dead-lettered) has an id of its own: an operator's replay that
// then reviews it posts its Finished post again, with the outcome, rather
// than finding the not-reviewed one sent.
func ID(versionKey, ch string, phase channel.Phase, outcome channel.Outcome) string {
	if phase == channel.Finished && outcome == channel.NotReviewed {
		return channel.PostID(versionKey, ch, channel.Phase("finished/not_reviewed"))
	}
	return channel.PostID(versionKey, ch, phase)
}

// StartedWait is how long a Started announcement that came before the
// fetch stage's write waits before it looks again.
const StartedWait = time.Second

// Message is the notify queue's message for a post row.
func Message(r channel.Row) job.Message {
	return job.Message{JobID: r.JobID, Stage: job.StageNotify, Task: job.TaskPost, Delivery: r.ID}
}

// build renders the post of j for phase (its ID is the channel's to set).
func (p *Posting) build(ctx context.Context, j job.Job, phase channel.Phase, outcome channel.Outcome, reason string) (channel.Post, error) {
	post := channel.Post{VersionKey: channel.VersionKeyOf(j.Source, j.ChangelistID, j.ReviewVersion), Source: j.Source,
		Repository: j.RepositoryName(), Changelist: j.ChangelistID, Version: j.ReviewVersion, Title: j.Title, Phase: phase}
	if job.IsReviewSystem(j.Source) {
		ref, err := p.Jobs.GetSourceRef(ctx, j.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return channel.Post{}, err
		}
		post.Head = ref.HeadSHA
	}
	if p.JobLink != nil {
		post.JobURL = p.JobLink(j.ID)
	}
	post.StatusOff = j.Settings != nil && j.Settings.CodeHostStatusOff
	if phase != channel.Finished {
		return post, nil
	}
	post.Outcome, post.Reason = outcome, reason
	if outcome != channel.Reviewed || len(j.Critique) == 0 {
		return post, nil
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		return channel.Post{}, retry.Permanent(retry.SchemaInvalid, fmt.Errorf("job %s critique: %w", j.ID, err))
	}
	post.Summary = clip(c.Summary, MaxFindingText)
	for _, f := range c.Findings {
		switch f.Severity {
		case critic.SeverityError:
			post.Counts.Error++
		case critic.SeverityWarning:
			post.Counts.Warning++
		default:
			post.Counts.Info++
		}
	}
	most := p.MaxFindings
	if most <= 0 {
		most = DefaultMaxFindings
	}
	for _, f := range c.Findings[:min(len(c.Findings), most)] {
		post.Findings = append(post.Findings, critic.Finding{File: clip(f.File, 512), Line: f.Line, Severity: f.Severity,
			Rule: clip(f.Rule, 128), Message: clip(f.Message, MaxFindingText)})
	}
	return post, nil
}

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// OutcomeOf is what a job in a final state says of its version, and
// whether it is final: reviewed (the critique), skipped (the
// repository's settings, a head behind a reviewed one, a budget, no
// reviewer with an address), or not reviewed (dead-lettered).
func OutcomeOf(j job.Job) (channel.Outcome, string, bool) {
	switch {
	case j.Status == job.StatusDeadLettered:
		return channel.NotReviewed, "", true
	case j.Status == job.StatusBudgetExceeded || j.Status == job.StatusNoRecipients:
		return channel.Skipped, j.SkipReason, true
	case !j.Status.Terminal():
		return "", "", false
	case j.Skipped != "":
		return channel.Skipped, j.Skipped, true
	}
	return channel.Reviewed, "", true
}

// errLeaseShort: the claim's lease has too little left to send under.
var errLeaseShort = errors.New("too little of the claim's lease is left to send")

// ErrNotConfigured: a post row names a channel this deployment no longer
// has; it is settled without a send.
var errNotConfigured = errors.New("channel not configured")

// Handle runs one TaskPost message: with a row (m.Delivery), the post
// row's send; without, the announcement of m.Phase for the job.
func (p *Posting) Handle(ctx context.Context, m job.Message, attempt int) error {
	if m.Delivery == "" {
		return p.announced(ctx, m)
	}
	r, err := p.Posts.GetPost(ctx, m.Delivery)
	if errors.Is(err, store.ErrNotFound) {
		return retry.Permanent(retry.NotFound, err)
	}
	if err != nil {
		return err
	}
	if r.Status.Done() {
		return nil
	}
	ch := p.channel(r.Channel)
	if ch == nil {
		p.Log.WarnContext(ctx, "post for a channel this deployment does not have; settled", "delivery_id", r.ID, "channel", r.Channel)
		_, err := p.Posts.SettlePost(ctx, r, "", errNotConfigured.Error())
		if errors.Is(err, store.ErrConflict) {
			return nil
		}
		return err
	}
	var prior channel.Receipt
	if r.Phase == channel.Finished {
		if prior, err = p.settleStarted(ctx, ch, r); err != nil {
			return p.lastTry(ctx, ch, attempt, err)
		}
	}
	return p.lastTry(ctx, ch, attempt, p.deliver(ctx, ch, r, prior))
}

// lastTry counts a failure the stage runner will dead-letter (not
// retryable, or the stage's budget spent; a wait it defers is not) as the
// channel's PostsDeadLettered: the runner's own DeadLetters metric names
// the stage, not the destination.
func (p *Posting) lastTry(ctx context.Context, ch channel.Channel, attempt int, err error) error {
	if err == nil {
		return nil
	}
	c := retry.Classify(err)
	switch c.Class {
	case retry.RateLimited, retry.AwaitingEvidence, retry.QuotaExhausted:
		return err
	}
	if !c.Retryable() || retry.DefaultPolicy().Exhausted(attempt) {
		p.metric(ctx, ch.Name(), "PostsDeadLettered")
	}
	return err
}

// settleStarted makes sure the version's Started post on ch is either
// sent (its receipt is the Finished post's prior) or never will be
// (R-CHANNEL-6): settled while unsent, so a status is never moved back to
// in progress and a code host never gets two creates for one version. A
// Started post being sent under a live lease is waited for (the message
// is retried); one whose lease lapsed is reconciled here.
func (p *Posting) settleStarted(ctx context.Context, ch channel.Channel, fin channel.Row) (channel.Receipt, error) {
	started := channel.Row{ID: channel.PostID(fin.Post.VersionKey, ch.Name(), channel.Started), JobID: fin.JobID,
		Channel: ch.Name(), Phase: channel.Started}
	cur, err := p.Posts.SettlePost(ctx, started, "", "finished first")
	if err == nil {
		return channel.Receipt{}, nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return channel.Receipt{}, err
	}
	switch cur.Status {
	case channel.StatusSent:
		return cur.Receipt, nil
	case channel.StatusSettled:
		return channel.Receipt{}, nil
	}
	// Sending: under a live lease, wait for it; lapsed, reconcile it.
	token := p.token(ctx)
	claimed, err := p.Posts.ClaimPost(ctx, started.ID, token, p.lease())
	if errors.Is(err, store.ErrConflict) {
		if claimed.Status.Done() {
			return claimed.Receipt, nil
		}
		return channel.Receipt{}, retry.Transient(retry.InFlight, fmt.Errorf("post %s: its started post is being sent", fin.ID))
	}
	if err != nil {
		return channel.Receipt{}, err
	}
	fctx, cancel, ok := p.sendContext(ctx, claimed)
	defer cancel()
	if !ok {
		p.release(ctx, claimed, token, errLeaseShort)
		return channel.Receipt{}, retry.Transient(retry.InFlight, fmt.Errorf("post %s: %w", started.ID, errLeaseShort))
	}
	rec, found, err := ch.Find(fctx, claimed.Post)
	if err != nil {
		p.release(ctx, claimed, token, err)
		return channel.Receipt{}, err
	}
	if found {
		_, err := p.Posts.MarkPostSent(ctx, started.ID, token, rec)
		return rec, err
	}
	_, err = p.Posts.SettlePost(ctx, started, token, "finished first")
	return channel.Receipt{}, err
}

// deliver runs the protocol on one row: claim; a claim after an earlier
// one asks the channel first (Find); send the stored post and body; mark
// sent with the receipt, or release for the next try.
func (p *Posting) deliver(ctx context.Context, ch channel.Channel, r channel.Row, prior channel.Receipt) error {
	token := p.token(ctx)
	claimed, err := p.Posts.ClaimPost(ctx, r.ID, token, p.lease())
	if errors.Is(err, store.ErrConflict) {
		if claimed.Status.Done() {
			return nil // another invocation sent or settled it
		}
		return retry.Transient(retry.InFlight, fmt.Errorf("post %s is being sent under another claim", r.ID))
	}
	if err != nil {
		return err
	}
	post := claimed.Post
	post.Body = claimed.Body
	sctx, cancel, ok := p.sendContext(ctx, claimed)
	defer cancel()
	if !ok {
		p.release(ctx, claimed, token, errLeaseShort)
		return retry.Transient(retry.InFlight, fmt.Errorf("post %s: %w", claimed.ID, errLeaseShort))
	}
	log := p.Log.With("delivery_id", claimed.ID, "channel", claimed.Channel, "phase", string(claimed.Phase), "attempt", claimed.Attempts)
	if claimed.Attempts > 1 {
		// An earlier claim's send may have reached the channel (its answer
		// lost, or the invocation died): ask before sending again
		// (R-CHANNEL-3). A channel that cannot be asked finds nothing, and
		// the post is sent again, same id and body (at least once).
		rec, found, err := ch.Find(sctx, post)
		if err != nil {
			p.release(ctx, claimed, token, err)
			p.metric(ctx, ch.Name(), "PostsFailed")
			return err
		}
		if found {
			if _, err := p.Posts.MarkPostSent(ctx, claimed.ID, token, rec); err != nil {
				return err
			}
			p.metric(ctx, ch.Name(), "PostsReconciled")
			log.InfoContext(ctx, "post found on its channel; marked sent without a send")
			return nil
		}
		p.metric(ctx, ch.Name(), "PostsResent")
	}
	rec, err := ch.Send(sctx, post, prior)
	if errors.Is(err, channel.ErrNotApplicable) {
		_, err := p.Posts.SettlePost(ctx, claimed, token, "not applicable")
		return err
	}
	if err != nil {
		p.release(ctx, claimed, token, err)
		p.metric(ctx, ch.Name(), "PostsFailed")
		log.WarnContext(ctx, "post not sent", "error_class", string(retry.Classify(err).Class))
		return err
	}
	if _, err := p.Posts.MarkPostSent(ctx, claimed.ID, token, rec); err != nil {
		// The channel took it; the lease lapses and the next claim finds
		// it (or, for a webhook, sends it again under the same id).
		return err
	}
	p.metric(ctx, ch.Name(), "PostsSent")
	return nil
}

// release returns a claimed row after a failed try; the failure, not the
// release, is what the caller returns (a release that fails leaves the
// lease to lapse).
func (p *Posting) release(ctx context.Context, r channel.Row, token string, cause error) {
	if _, err := p.Posts.ReleasePost(ctx, r.ID, token, string(retry.Classify(cause).Class)); err != nil {
		p.Log.WarnContext(ctx, "could not release the post row; its lease will lapse", "delivery_id", r.ID, "error", err)
	}
}

// Sweep hands every post row left unsent back to the notify queue
// (R-CHANNEL-5): pending rows whose message was lost, or claimed ones
// whose lease lapsed. It returns how many it enqueued. Rows younger than
// settle are left to their own message, and a row tried as often as the
// stage's budget allows is left to its dead-letter envelope (an
// operator's replay), never retried for ever.
func (p *Posting) Sweep(ctx context.Context, now time.Time, settle time.Duration) (int, error) {
	n := 0
	budget := retry.DefaultPolicy().MaxAttempts
	err := p.Posts.UnsettledPosts(ctx, func(r channel.Row) error {
		if r.Status == channel.StatusPending && r.UpdatedAt.After(now.Add(-settle)) {
			return nil
		}
		if r.Attempts >= budget {
			return nil
		}
		if err := p.Queue.Enqueue(ctx, Message(r)); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
