package wire

import (
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/prefs"
)

// PrefsSigner returns the signer of the preference links (R-PREF-2), nil
// when no unsubscribe key is set (no links then). Its keys are derived
// from the unsubscribe key and the previous one, as the vote links' are.
func PrefsSigner(cfg config.Config) (*prefs.Signer, error) {
	if cfg.UnsubscribeKey == "" {
		return nil, nil
	}
	return prefs.NewSigner(cfg.UnsubscribeKey, cfg.UnsubscribeKeyPrevious)
}
