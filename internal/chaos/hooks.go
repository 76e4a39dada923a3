package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"sync"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/outhook"
	"github.com/criticizer/criticizer/internal/posting"
	"github.com/criticizer/criticizer/internal/store"
)

// The signed webhook part (R-CHANNEL-*): every review's posts go to one
// destination whose answers are lost at the campaign's rate after it took
// the message (the sender cannot tell it arrived). Checked at the end:
// every (version, phase) a job owes arrived at least once, or its post
// task was dead-lettered with an envelope; a message that arrived more
// than once did so under one webhook-id with one body; every signature
// verified with the destination's secret.

// hookName is the campaign's destination.
const hookName = "chaos"

// hookSecret is its whsec_ secret (not one of the planted secrets: a
// destination's secret is in no log line by construction, never seen).
const hookSecret = "whsec_Y2hhb3MtY2FtcGFpZ24tcmVjZWl2ZXItc2VjcmV0"

// hookStats are the figures of the part.
type hookStats struct {
	// Messages arrived, distinct webhook-ids, ids that arrived more than
	// once, answers the receiver dropped.
	Messages, IDs, Resent, AnswersLost int
	// Owed (version, phase) posts checked; of them dead-lettered (the post
	// task's envelope in the notify DLQ) and lost (neither: must be 0).
	Owed, DeadLettered, Lost int
	// Same (version, phase) under two ids; one id with two bodies;
	// signatures that did not verify (each must be 0).
	OtherID, BodyChanged, Unverified int
	// checked: the part ran (verify was called).
	checked bool

	mu        sync.Mutex
	dlqRows   map[string]bool // post rows whose task is dead-lettered
	dlqPhases map[string]bool // job/phase announcements dead-lettered
}

// deadLettered notes a notify DLQ message that is a post task's envelope.
func (h *hookStats) deadLettered(m dlqMessage) {
	if !m.isEnvelope {
		return
	}
	var msg job.Message
	if json.Unmarshal([]byte(m.env.Original.Body), &msg) != nil || msg.Task != job.TaskPost {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dlqRows == nil {
		h.dlqRows, h.dlqPhases = map[string]bool{}, map[string]bool{}
	}
	if msg.Delivery != "" {
		h.dlqRows[msg.Delivery] = true
	} else {
		h.dlqPhases[string(msg.JobID)+"/"+msg.Phase] = true
	}
}

// hookDest is the campaign's receiver.
type hookDest struct {
	rcv *devstack.HookReceiver
	srv *httptest.Server
}

func newHookDest(seed uint64, rate float64) (*hookDest, error) {
	rcv, err := devstack.NewHookReceiver(hookSecret)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0x400c))
	// Lost answers at several times the AWS fault rate: the part is
	// about them.
	p := min(0.5, 5*rate)
	rcv.LoseWhen(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() < p
	})
	return &hookDest{rcv: rcv, srv: httptest.NewServer(rcv)}, nil
}

func (d *hookDest) Close() { d.srv.Close() }

// setting is CRITICIZER_OUTBOUND_WEBHOOKS naming the receiver.
func (d *hookDest) setting() string {
	b, _ := json.Marshal([]outhook.Destination{{Name: hookName, URL: d.srv.URL, Secret: hookSecret}})
	return string(b)
}

// verify checks what arrived against the jobs of ids.
func (d *hookDest) verify(ctx context.Context, posts store.Posts, get func(context.Context, job.ID) (job.Job, error), ids map[job.ID]bool, h *hookStats) error {
	type key struct {
		source, cl string
		version    int
		phase      string
	}
	h.checked = true
	byID := map[string][]devstack.ArrivedHook{}
	idsOf := map[key]map[string]bool{}
	for _, a := range d.rcv.Arrived() {
		h.Messages++
		if a.AnswerLost {
			h.AnswersLost++
		}
		if !a.Verified {
			h.Unverified++
		}
		byID[a.ID] = append(byID[a.ID], a)
		var b outhook.Body
		if err := json.Unmarshal(a.Body, &b); err != nil {
			h.Unverified++
			continue
		}
		k := key{b.Changelist.Source, b.Changelist.ID, b.Changelist.Version, b.Phase}
		if idsOf[k] == nil {
			idsOf[k] = map[string]bool{}
		}
		idsOf[k][a.ID] = true
	}
	h.IDs = len(byID)
	for _, as := range byID {
		if len(as) > 1 {
			h.Resent++
		}
		for _, a := range as[1:] {
			if string(a.Body) != string(as[0].Body) {
				h.BodyChanged++
			}
		}
	}
	for _, s := range idsOf {
		if len(s) > 1 {
			h.OtherID++
		}
	}
	ch := "webhook:" + hookName
	for id := range ids {
		j, err := get(ctx, id)
		if err != nil {
			return fmt.Errorf("hooks: job %s: %w", id, err)
		}
		if !j.Status.Terminal() {
			continue // counted as stuck
		}
		vk := channel.VersionKeyOf(j.Source, j.ChangelistID, j.ReviewVersion)
		outcome, _, _ := posting.OutcomeOf(j)
		for _, ph := range []channel.Phase{channel.Started, channel.Finished} {
			pid := posting.ID(vk, ch, ph, outcome)
			row, err := posts.GetPost(ctx, pid)
			if errors.Is(err, store.ErrNotFound) {
				if ph == channel.Started {
					continue // never announced: not placed for review
				}
				h.Owed++
				if h.dlqPhases[string(id)+"/"+string(ph)] {
					h.DeadLettered++
				} else {
					h.Lost++
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("hooks: post %s: %w", pid, err)
			}
			if row.Status == channel.StatusSettled {
				continue // a Started post its Finished one settled
			}
			h.Owed++
			switch {
			case len(byID[pid]) > 0:
			case h.dlqRows[pid]:
				h.DeadLettered++
			default:
				h.Lost++
			}
		}
	}
	return nil
}

// failures are the part's broken invariants.
func (h *hookStats) failures() []string {
	var f []string
	if h.checked && h.Owed == 0 {
		f = append(f, "webhooks: no post was owed: the destination was not configured")
	}
	if h.Lost > 0 || h.OtherID > 0 || h.BodyChanged > 0 || h.Unverified > 0 {
		f = append(f, fmt.Sprintf("webhooks: %d posts lost, %d under two ids, %d ids with two bodies, %d signatures not verified",
			h.Lost, h.OtherID, h.BodyChanged, h.Unverified))
	}
	return f
}

// line is the report's line.
func (h *hookStats) line() string {
	return fmt.Sprintf("webhooks: %d messages arrived under %d webhook-ids (%d resent under their id after %d answers lost); %d posts owed: %d arrived, %d dead-lettered, %d lost; %d under two ids, %d bodies changed, %d signatures not verified",
		h.Messages, h.IDs, h.Resent, h.AnswersLost, h.Owed, h.Owed-h.DeadLettered-h.Lost, h.DeadLettered, h.Lost, h.OtherID, h.BodyChanged, h.Unverified)
}
