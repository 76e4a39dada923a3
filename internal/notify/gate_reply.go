package notify

import (
	"context"
	"errors"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// ReplyGate answers the confirmation of a reply (R-REPLY-5): a
// suppressed address gets nothing, settled suppressed without a send; an
// unsubscribe or a mute does not stop it, since it answers the reader's
// own request. A deployment that keeps no recipients' records lists no
// reply gate: every confirmation is sent.
type ReplyGate struct{ standings Standings }

// NewReplyGate is the reply gate reading standings.
func NewReplyGate(standings Standings) (*ReplyGate, error) {
	if standings == nil {
		return nil, errors.New("reply gate: no standings to read")
	}
	return &ReplyGate{standings: standings}, nil
}

func (*ReplyGate) rank() int    { return 5 }
func (*ReplyGate) name() string { return "reply" }

// decide reads the reader's standing and answers their confirmation.
func (g *ReplyGate) decide(ctx context.Context, r delivery.ReplyRow) (Decision, error) {
	rid := unsubscribe.RecipientID(r.Recipient)
	st, err := g.standings.Standings(ctx, []string{rid})
	if err != nil {
		return Decision{}, err
	}
	if !st[rid].Suppressed {
		return Decision{}, nil
	}
	return Decision{Status: delivery.StatusSuppressed, Reason: st[rid].Reason}, nil
}
