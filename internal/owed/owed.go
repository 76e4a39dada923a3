// Package owed says what each reader is owed by a world: from its inputs
// alone — the heads in the code host's order and the order their webhooks
// came in, the settings at the trusted commit, each reader's own choices,
// SES's verdicts on each mail, the replies received — which version of
// each changelist must reach each reader, and which must never (R-OWED-1).
//
// It is the proofs' oracle (internal/explore, internal/chaos): what was
// delivered is compared with what is owed once a world is quiet, and
// owed-and-not-delivered is lost, delivered-and-not-owed is wrong. It is
// written apart from how Criticizer decides and sends, on purpose: it
// imports none of the delivery rows, the stores or the pipeline, so a
// bug there cannot hide by being the oracle's own. It knows the rules
// (R-SOURCE-6, R-QUIET-1..4, R-REPO-4, R-REPLY-2, R-REPLY-7, R-REPLY-8,
// R-EVIDENCE-6), not the code that keeps them.
package owed

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Verdict is what SES makes of a mail of a head to a reader, were it
// sent: the world's fixed outcome (an explorer's choice is an input too).
type Verdict string

const (
	// Delivered: the mail reaches the reader (the default).
	Delivered Verdict = ""
	// Complained: it reached them, and they complained.
	Complained Verdict = "complained"
	// Refused: SES refuses the send for good (MessageRejected): nothing
	// is sent; an older head may still reach them.
	Refused Verdict = "refused"
	// Rejected: SES accepts the send, publishes its Send event, and then
	// a Reject (its content): it never reached them (R-QUIET-4); an
	// older head, another message, may.
	Rejected Verdict = "rejected"
	// Bounced: a permanent bounce after the Send: the address is
	// suppressed (R-EVIDENCE-6), and nothing more can reach it.
	Bounced Verdict = "bounced"
)

// reaches reports whether a mail with this verdict reaches its reader.
func (v Verdict) reaches() bool { return v == Delivered || v == Complained }

// World is everything a world does that decides what is owed.
type World struct {
	Changes []Change
	// Readers are each reader's own choices, by address.
	Readers map[string]Reader
	// Verdicts are SES's, by Mail (Change, Head, Reader); a mail not
	// named is Delivered.
	Verdicts map[Mail]Verdict
	// Replies are the replies received, in the order received (the same
	// reply received twice is two entries).
	Replies []Reply
}

// Change is one changelist: its heads in the code host's order, oldest
// first (Heads[i] is behind Heads[i+1]; a force-push that left the old
// head off the branch is a head after it), with when each arrived.
type Change struct {
	ID     string
	Author string
	Heads  []Head
	// Burst: every head was accepted before any of them was mailed (the
	// collapse window, R-QUIET-3): only the newest that can reach a
	// reader may be mailed to them.
	Burst bool
	// Explicit: every version is an operator's explicit rerun
	// (R-RERUN-2): each head that can reach a reader is owed, not only
	// the newest.
	Explicit bool
	// Trusted are the settings at the trusted commit (the destination
	// branch's tip, the upstream repository's base, R-REPO-7); Proposed
	// are those the change itself, or an unmerged change below it in a
	// stack, carries: they decide nothing, and are here so that a world
	// can say so.
	Trusted, Proposed Settings
	// Labels on the change, with who could have set them.
	Labels []Label
}

// Head is one head commit of a change.
type Head struct {
	// Name names it in Mail ("v2", a SHA).
	Name string
	// Arrived is the step its webhook was first sent at: heads with the
	// same step arrived at once (two pushes handled concurrently); 0 is
	// the first step.
	Arrived int
	// Took is how many steps after Arrived its webhook was answered
	// (accepted, or refused as stale): a head whose webhook is sent
	// while another's is unanswered races it.
	Took int
	// LostRace: racing a head after it (two pushes handled at once), it
	// was answered stale — the other drew its version first. Read only
	// for a head that raced: one that did not is stale or not by the
	// order of arrival alone, whatever it was answered.
	LostRace bool
	// Diff names its diff's content: heads with the same Diff are the
	// same content (R-QUIET-1).
	Diff string
	// Findings are the critique's findings, for a reader's minimum
	// severity and nothing new (R-QUIET-2); nil when not modelled.
	Findings []Finding
	// Readers are who reviews this head.
	Readers []string
	// Failed: its job can mail no one (refused by a budget, dead-lettered
	// before its mail was sent, nobody to read it): a person sees it.
	Failed bool
}

// Finding is one finding of a head's critique.
type Finding struct {
	Key      string // where it is: file, rule, the line and its place
	Severity int    // higher is worse
}

// Settings are a repository's settings that decide who is mailed.
type Settings struct {
	SkipAuthors []string
	SkipLabels  []string
}

// Label is a label (or Gerrit hashtag) on a change.
type Label struct {
	Name string
	// ByAuthor: the change's author set it, or could have (a Gerrit
	// hashtag, which a change's owner may always set): it never skips.
	ByAuthor bool
}

// Reader is one reader's own choices.
type Reader struct {
	// MinSeverity hides findings below it (R-PREF-3).
	MinSeverity int
	// Dismissed are finding keys the reader marked wrong (R-VOTE-3).
	Dismissed []string
	// Suppressed: the address is on the suppression list, or the reader
	// unsubscribed: nothing may be mailed to it.
	Suppressed bool
	// Muted are changelists muted before anything arrived (a mute by
	// reply is a Reply).
	Muted []string
}

// Reply is one reply received.
type Reply struct {
	// Step: it was acted on before the heads that arrive at a later step.
	Step int
	// To is the reader the delivery replied to was sent to.
	To string
	// From are the message's From fields (one, unless forged), Sender
	// its Sender field ("" when absent), Judged the address SES's
	// verdicts were about (the notification's commonHeaders.from).
	From   []string
	Sender string
	Judged string
	// MessageID is the reply's own Message-ID ("" when it has none);
	// SESID is the id SES gave this receipt.
	MessageID, SESID string
	// Mute names the changelist the reply mutes ("" for none).
	Mute string
}

// Mail is one mail of a head to a reader.
type Mail struct {
	Change, Head, Reader string
}

func (m Mail) String() string { return m.Change + " " + m.Head + " to " + m.Reader }

// Due is what one reader is owed of one change.
type Due struct {
	Change, Reader string
	// Heads are the heads whose content must have reached the reader:
	// the newest that can (one), or each that can in an explicit change;
	// none when nothing can (muted, suppressed, skipped, every head
	// refused, the address bounced).
	Heads []string
	// Never are the heads that must never reach them: stale heads, heads
	// after a mute, of a skipped change, to a suppressed reader, and in
	// a burst every head but the one owed.
	Never []string
	// Why says why nothing is owed, or why the owed head is not the
	// newest, for a report.
	Why string
}

// ReplyDue is what one received reply must come to.
type ReplyDue struct {
	Reply Reply
	// Act: it is acted on and confirmed; false for a forgery (dropped,
	// counted) or a second receipt of a reply acted on already.
	Act bool
	// Key is the reply's key: (sender, Message-ID), or SES's id when it
	// has no Message-ID (R-REPLY-8).
	Key string
	Why string
}

// Answer is what a world owes.
type Answer struct {
	Dues    []Due
	Replies []ReplyDue
}

// Due returns the due of a reader for a change.
func (a Answer) Due(change, reader string) (Due, bool) {
	for _, d := range a.Dues {
		if d.Change == change && d.Reader == reader {
			return d, true
		}
	}
	return Due{}, false
}

// Compute returns what w owes each reader of each change, and what each
// reply received must come to.
func Compute(w World) Answer {
	var a Answer
	mutedAt := map[string]int{} // reader and change → the step a valid mute was acted on
	seen := map[string]bool{}
	for _, r := range w.Replies {
		d := judgeReply(r, seen)
		a.Replies = append(a.Replies, d)
		if d.Act && r.Mute != "" {
			k := r.To + " " + r.Mute
			if at, ok := mutedAt[k]; !ok || r.Step < at {
				mutedAt[k] = r.Step
			}
		}
	}
	for _, c := range w.Changes {
		for _, rd := range readersOf(c) {
			a.Dues = append(a.Dues, due(w, c, rd, mutedAt))
		}
	}
	return a
}

// judgeReply decides one reply: acted on only from the one From SES
// judged, the Sender (if any) that From, and once per key (R-REPLY-2,
// R-REPLY-8).
func judgeReply(r Reply, seen map[string]bool) ReplyDue {
	d := ReplyDue{Reply: r}
	switch {
	case len(r.From) != 1:
		d.Why = fmt.Sprintf("%d From fields", len(r.From))
		return d
	case r.Sender != "" && !sameAddr(r.Sender, r.From[0]):
		d.Why = "a Sender that is not the From"
		return d
	case !sameAddr(r.From[0], r.Judged):
		d.Why = "a From SES did not judge"
		return d
	case !sameAddr(r.From[0], r.To):
		d.Why = "a From that is not the reader mailed"
		return d
	}
	d.Key = "ses:" + r.SESID
	if r.MessageID != "" {
		d.Key = strings.ToLower(strings.TrimSpace(r.From[0])) + " " + r.MessageID
	}
	if seen[d.Key] {
		d.Why = "received again"
		return d
	}
	seen[d.Key] = true
	d.Act = true
	return d
}

func sameAddr(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// readersOf are every reader of any head of c, sorted.
func readersOf(c Change) []string {
	var out []string
	for _, h := range c.Heads {
		out = append(out, h.Readers...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// skipped reports why the trusted settings skip c for everyone, or "".
func skipped(c Change) string {
	if slices.Contains(c.Trusted.SkipAuthors, c.Author) {
		return "its author is skipped by the trusted settings"
	}
	for _, l := range c.Labels {
		if !l.ByAuthor && slices.Contains(c.Trusted.SkipLabels, l.Name) {
			return "label " + l.Name + " skips it"
		}
	}
	return ""
}

// stale reports whether head i arrived after a head the host places
// after it had been answered (R-SOURCE-6): it never gets a version.
func stale(c Change, i int) bool {
	for _, later := range c.Heads[i+1:] {
		if later.Arrived+later.Took < c.Heads[i].Arrived {
			return true
		}
	}
	return false
}

// racing reports whether head i's webhook was in flight while a head
// after it was (two pushes handled at once): whichever the store drew
// first, head i may be versioned or refused, so in an explicit change it
// is neither owed nor never (the newest is, R-SOURCE-6).
func racing(c Change, i int) bool {
	h := c.Heads[i]
	for _, later := range c.Heads[i+1:] {
		if later.Arrived <= h.Arrived+h.Took && h.Arrived <= later.Arrived+later.Took {
			return true
		}
	}
	return false
}

// due is what reader rd is owed of change c.
func due(w World, c Change, rd string, mutedAt map[string]int) Due {
	d := Due{Change: c.ID, Reader: rd}
	r := w.Readers[rd]
	never := func(h Head) { d.Never = append(d.Never, h.Name) }
	blocked := ""
	switch {
	case skipped(c) != "":
		blocked = skipped(c)
	case r.Suppressed:
		blocked = "the address is suppressed"
	case slices.Contains(r.Muted, c.ID):
		blocked = "muted"
	}
	if blocked != "" {
		for _, h := range c.Heads {
			never(h)
		}
		d.Why = blocked
		return d
	}
	// Candidates newest first: a reader of the head, not stale, not
	// after their mute, its job able to mail.
	muteAt, muted := mutedAt[rd+" "+c.ID]
	var candidates []Head
	for i := len(c.Heads) - 1; i >= 0; i-- {
		h := c.Heads[i]
		switch {
		case !slices.Contains(h.Readers, rd):
			continue
		case stale(c, i), racing(c, i) && h.LostRace:
			never(h)
			continue
		case muted && h.Arrived > muteAt:
			never(h)
			continue
		case h.Failed:
			continue
		case c.Explicit && racing(c, i):
			continue
		}
		candidates = append(candidates, h)
	}
	for _, h := range candidates {
		switch v := w.Verdicts[Mail{c.ID, h.Name, rd}]; {
		case v.reaches():
			if !c.Explicit {
				d.Heads = []string{h.Name}
				if c.Burst {
					for _, o := range candidates {
						if o.Name != h.Name {
							never(o)
						}
					}
				}
				return d
			}
			d.Heads = append(d.Heads, h.Name)
		case v == Bounced:
			// The address is gone from here on: an older head is
			// not mailed in its stead (R-QUIET-4), and nothing more
			// is owed.
			d.Why = h.Name + " bounced for good"
			if c.Burst {
				for _, o := range candidates {
					if o.Name != h.Name {
						never(o)
					}
				}
			}
			return d
		default:
			d.Why = h.Name + " was " + string(v)
		}
	}
	if len(d.Heads) == 0 && d.Why == "" {
		d.Why = "no head can reach them"
	}
	return d
}

// Findings are the lost and the wrong of a world once quiet.
type Findings struct {
	// Lost: owed and not delivered.
	Lost []string
	// Wrong: delivered and not owed (a head never to be delivered, or
	// a second copy of one), or a reply acted on that must not be, or
	// not acted on once that must be.
	Wrong []string
}

// OK reports whether nothing is lost or wrong.
func (f Findings) OK() bool { return len(f.Lost) == 0 && len(f.Wrong) == 0 }

func (f Findings) String() string {
	var parts []string
	for _, l := range f.Lost {
		parts = append(parts, "lost: "+l)
	}
	for _, x := range f.Wrong {
		parts = append(parts, "wrong: "+x)
	}
	return strings.Join(parts, "; ")
}

// Check compares what reached each reader (delivered: one entry per mail
// that reached them, duplicates included) and, per reply key, how many
// times a reply was acted on (confirmed), with what w owes. A reader has
// an owed head when a head with its content reached them: the same diff
// (R-QUIET-1) or, with findings modelled, the same findings as far as
// the reader can see them (R-QUIET-2); it must not be later than the owed
// one. confirmed may be nil when a world has no replies to check.
func Check(w World, a Answer, delivered []Mail, confirmed map[string]int) Findings {
	var f Findings
	count := map[Mail]int{}
	for _, m := range delivered {
		count[m]++
	}
	changes := map[string]Change{}
	for _, c := range w.Changes {
		changes[c.ID] = c
	}
	for _, d := range a.Dues {
		c := changes[d.Change]
		for _, name := range d.Heads {
			if !hasContent(w, c, d.Reader, name, count) {
				f.Lost = append(f.Lost, fmt.Sprintf("%s %s to %s (nothing with its content reached them)", d.Change, name, d.Reader))
			}
		}
		for _, name := range d.Never {
			if n := count[Mail{d.Change, name, d.Reader}]; n > 0 {
				f.Wrong = append(f.Wrong, fmt.Sprintf("%s %s to %s, never owed: %s", d.Change, name, d.Reader, neverWhy(c, d, name)))
			}
		}
	}
	for _, m := range sortedMails(count) {
		if count[m] > 1 {
			f.Wrong = append(f.Wrong, fmt.Sprintf("%s: %d copies", m, count[m]))
		}
	}
	if confirmed != nil {
		want := map[string]int{}
		for _, r := range a.Replies {
			if r.Act {
				want[r.Key]++
			}
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range union(want, confirmed) {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			switch got := confirmed[k]; {
			case got < want[k]:
				f.Lost = append(f.Lost, fmt.Sprintf("reply %s: acted on %d times, owed %d", k, got, want[k]))
			case got > want[k]:
				f.Wrong = append(f.Wrong, fmt.Sprintf("reply %s: acted on %d times, owed %d", k, got, want[k]))
			}
		}
	}
	return f
}

// hasContent reports whether reader rd has head name's content: a mail
// of it, or of an earlier head with the same diff or the same findings
// as the reader sees them.
func hasContent(w World, c Change, rd, name string, count map[Mail]int) bool {
	var owed Head
	at := -1
	for i, h := range c.Heads {
		if h.Name == name {
			owed, at = h, i
		}
	}
	if at < 0 {
		return false
	}
	for _, h := range c.Heads[:at+1] {
		if count[Mail{c.ID, h.Name, rd}] == 0 {
			continue
		}
		if h.Name == name || (h.Diff != "" && h.Diff == owed.Diff) ||
			(owed.Findings != nil && slices.Equal(visible(w.Readers[rd], h.Findings), visible(w.Readers[rd], owed.Findings))) {
			return true
		}
	}
	return false
}

// visible are the keys of the findings a reader sees: at or above their
// minimum, not dismissed by them.
func visible(r Reader, fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity >= r.MinSeverity && !slices.Contains(r.Dismissed, f.Key) {
			out = append(out, f.Key)
		}
	}
	sort.Strings(out)
	return out
}

func neverWhy(c Change, d Due, name string) string {
	if d.Why != "" && len(d.Heads) == 0 {
		return d.Why
	}
	for i, h := range c.Heads {
		if h.Name == name && stale(c, i) {
			return "stale: a head after it arrived first"
		}
	}
	if c.Burst {
		return "a burst owes the newest head that reaches them only (" + strings.Join(d.Heads, ",") + ")"
	}
	return "after their mute"
}

func sortedMails(m map[Mail]int) []Mail {
	out := make([]Mail, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func union(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
