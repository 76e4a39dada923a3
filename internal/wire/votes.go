package wire

import (
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/vote"
)

// VoteSigner returns the signer of the vote links (R-VOTE-1), nil
// without an unsubscribe key: its keys are derived from that key and the
// previous one, so a rotation of the one rotates the other, and the
// deploy holds no second secret.
func VoteSigner(cfg config.Config) (*vote.Signer, error) {
	if cfg.UnsubscribeKey == "" {
		return nil, nil
	}
	return vote.NewSigner(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious)
}
