package store

import (
	"context"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
)

// Preferences keeps each recipient's preference record (prefs) and
// reads it with their suppression for the notifier. Recipients are named
// by unsubscribe.RecipientID, never by address.
type Preferences interface {
	// Preferences reads one recipient's record, normalized; a recipient
	// who never chose anything has prefs.Default with Rev 0.
	Preferences(ctx context.Context, recipientID string) (prefs.Preferences, error)
	// SavePreferences writes p whole, as the recipient's record, if the
	// stored record is still at p.Rev (0: none was written), and returns
	// it as stored (Rev one on, UpdatedAt set). A write that came between
	// is ErrConflict and nothing is saved; an invalid p is its
	// *prefs.FieldError and nothing is saved.
	SavePreferences(ctx context.Context, recipientID string, p prefs.Preferences) (prefs.Preferences, error)
	// Mute adds a repository to the muted set (the one-click unsubscribe
	// from an email's repository). Repeating it changes nothing. With
	// prefs.MaxMuted muted already it leaves every email instead: the
	// reader asked to hear less, and the set is full.
	Mute(ctx context.Context, recipientID, repository string) error
	// UnsubscribeAll records that the recipient left every email.
	UnsubscribeAll(ctx context.Context, recipientID string) error
	// Standings reads every recipient's suppression and preference record
	// in one read per 50 recipients (one for any realistic reviewer list);
	// a recipient with neither has the zero suppression and
	// prefs.Default.
	Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error)
}
