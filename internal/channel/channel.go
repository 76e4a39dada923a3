// Package channel holds what a delivery channel other than email is: a
// place a version's review is posted to (a check run or commit status on
// the code host, a review message, a signed webhook), and the one post a
// channel receives per version and phase.
//
// Every channel is carried under the delivery protocol an email is
// (R-CHANNEL-*): one row per (changelist, version, channel, phase) in the
// deliveries table, claimed, sent, and marked sent in one conditional
// write; a send whose answer was lost is reconciled by asking the channel
// what it holds (Find) before anything is sent again. The package is the
// pure domain: it links no AWS package and no code host's client.
package channel

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/critic"
)

// Phase is which of a version's posts this is. A code host shows one
// status per head commit that moves from Started to Finished; a webhook
// destination gets one message per phase.
type Phase string

const (
	// Started: the version is being reviewed (check run in_progress,
	// commit status pending).
	Started Phase = "started"
	// Finished: the version's outcome is known (Outcome says which).
	Finished Phase = "finished"
)

// Outcome is what became of a version, as a Finished post says it.
type Outcome string

const (
	// Reviewed: the critique is in Findings and Counts.
	Reviewed Outcome = "reviewed"
	// Superseded: a newer version of the changelist was reviewed first.
	Superseded Outcome = "superseded"
	// Skipped: the version was not reviewed (a repository's settings, a
	// head behind one already reviewed, nothing to review); Reason says why.
	Skipped Outcome = "skipped"
	// NotReviewed: Criticizer could not review it (its job was
	// dead-lettered). Never shown as a failure of the change.
	NotReviewed Outcome = "not_reviewed"
)

// Counts are a critique's findings by severity.
type Counts struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// Post is one version's post to one channel in one phase. Its ID is stable
// for that (changelist, version, channel, phase): a check run's
// external_id, a webhook's webhook-id, the tag a review message is found
// by. Model-written text (Summary, each finding's Message) is data about an
// untrusted diff: a channel renders it as text, never as a link or markup.
type Post struct {
	ID string
	// Version key is stable for the (changelist, version) across phases
	// and channels: what a code host's one status per head commit is
	// found by (a check run's external_id) whichever phase posts first.
	VersionKey string
	Source     string // github, gitlab, gerrit, generic
	Repository string
	Changelist string
	Version    int
	Head       string // the version's head commit (sha), where a status goes
	Title      string
	Phase      Phase
	Outcome    Outcome // Finished only
	Reason     string  // why Skipped or Superseded; empty otherwise
	Summary    string
	Counts     Counts
	Findings   []critic.Finding
	// JobURL is the job's status page, a status's link target.
	JobURL string
	// StatusOff: the repository turned off the status on its changes
	// (.criticizer.yaml code_host_status: off, read at the base). A code
	// host's channel posts nothing new for it, and only completes a
	// status an earlier post left in progress (R-CHANNEL-10).
	StatusOff bool
	// Body is the channel's own rendering of the post (Renderer), as its
	// row stored it when it was created: Send gets the same bytes on every
	// try. Nil for a channel that renders nothing ahead.
	Body []byte
}

// Receipt is what a channel holds for a post once it took it: the id it
// names it by (a check run's id, a Gerrit message id, the webhook-id), to
// be recorded on the row as an email's provider message id is.
type Receipt struct {
	Ref string
}

// Channel is one place posts go. Name is its row's channel key: stable
// per deployment ("github-check", "github-status", "gitlab-status",
// "gerrit-message", "webhook:<name>").
type Channel interface {
	Name() string
	// Find reports what the channel already holds for p: the
	// reconciliation of a send whose answer was lost. ok=false when the
	// channel holds nothing for p, or cannot be asked (Lookless).
	Find(ctx context.Context, p Post) (r Receipt, ok bool, err error)
	// Send posts p (creates it, or moves the channel's status for p.Head
	// from Started to Finished). prior is what an earlier phase's post
	// left (its Receipt), zero when none. Send must not retry by itself:
	// the caller's protocol retries, after Find.
	Send(ctx context.Context, p Post, prior Receipt) (Receipt, error)
}

// ErrNotApplicable is returned by a channel that has nothing to post p to
// (a source it does not serve, a version without a head commit): the row
// is settled without a send.
var ErrNotApplicable = errors.New("channel: not applicable to this post")

// Renderer is a channel whose body is rendered once, when the post's row
// is created, and stored with it (a webhook's exact bytes): a resend
// carries the same body, and Send reads it from Post.Body (R-CHANNEL-2).
type Renderer interface {
	Render(p Post) ([]byte, error)
}
