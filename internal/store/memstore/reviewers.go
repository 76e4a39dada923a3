package memstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
)

// Rosters is the in-memory store.Rosters.
type Rosters struct {
	mu      sync.Mutex
	rosters map[string]reviewers.Roster
}

// NewRosters returns an empty roster store.
func NewRosters() *Rosters { return &Rosters{rosters: map[string]reviewers.Roster{}} }

// Get implements store.Rosters.Get.
func (s *Rosters) Get(_ context.Context, source, changelistID string) (reviewers.Roster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := reviewers.Roster{}
	for k, m := range s.rosters[job.ChangelistKey(source, changelistID)] {
		out[k] = m
	}
	return out, nil
}

// Apply implements store.Rosters.Apply.
func (s *Rosters) Apply(ctx context.Context, source, changelistID string, events []reviewers.Event) (reviewers.Roster, error) {
	s.mu.Lock()
	k := job.ChangelistKey(source, changelistID)
	r := s.rosters[k]
	if r == nil {
		r = reviewers.Roster{}
		s.rosters[k] = r
	}
	for _, ev := range events {
		r.Apply(ev)
	}
	s.mu.Unlock()
	return s.Get(ctx, source, changelistID)
}

// Directory is the in-memory store.Directory.
type Directory struct {
	mu      sync.Mutex
	entries map[string]reviewers.Entry // source#key
	unknown map[string][]string        // source → keys
	now     store.Clock
}

// NewDirectory returns an empty directory with clock now (time.Now if nil).
func NewDirectory(now store.Clock) *Directory {
	if now == nil {
		now = time.Now
	}
	return &Directory{entries: map[string]reviewers.Entry{}, unknown: map[string][]string{}, now: now}
}

var _ reviewers.EntryReader = (*Directory)(nil)

func dirKey(source, username string) string { return source + "#" + reviewers.Key(username) }

// Set implements store.Directory.Set.
func (d *Directory) Set(_ context.Context, source, username, email, by string) (reviewers.Entry, error) {
	if source == "" || reviewers.Key(username) == "" {
		return reviewers.Entry{}, fmt.Errorf("directory: source and username are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := reviewers.Entry{Source: source, Username: username, Email: email, UpdatedAt: d.now().UTC(), UpdatedBy: by}
	d.entries[dirKey(source, username)] = e
	d.unknown[source] = slices.DeleteFunc(d.unknown[source], func(k string) bool { return k == reviewers.Key(username) })
	return e, nil
}

// Remove implements store.Directory.Remove.
func (d *Directory) Remove(_ context.Context, source, username, by string) (bool, error) {
	if source == "" || reviewers.Key(username) == "" {
		return false, fmt.Errorf("directory: source and username are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dirKey(source, username)]
	d.entries[dirKey(source, username)] = reviewers.Entry{Source: source, Username: username, Removed: true, UpdatedAt: d.now().UTC(), UpdatedBy: by}
	return ok && !old.Removed && old.Email != "", nil
}

// Get implements store.Directory.Get.
func (d *Directory) Get(_ context.Context, source, username string) (reviewers.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[dirKey(source, username)]
	if !ok {
		return reviewers.Entry{}, fmt.Errorf("directory entry %s:%s: %w", source, reviewers.Key(username), store.ErrNotFound)
	}
	return e, nil
}

// Entries implements reviewers.EntryReader.
func (d *Directory) Entries(_ context.Context, source string, usernames []string) (map[string]reviewers.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]reviewers.Entry{}
	for _, u := range usernames {
		if e, ok := d.entries[dirKey(source, u)]; ok {
			out[reviewers.Key(u)] = e
		}
	}
	return out, nil
}

// List implements store.Directory.List: by username key.
func (d *Directory) List(_ context.Context, source string) ([]reviewers.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var keys []string
	for k, e := range d.entries {
		if e.Source == source {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []reviewers.Entry{}
	for _, k := range keys {
		out = append(out, d.entries[k])
	}
	return out, nil
}

// NoteUnknown implements store.Directory.NoteUnknown.
func (d *Directory) NoteUnknown(_ context.Context, source string, usernames []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range usernames {
		if k := reviewers.Key(u); k != "" && !slices.Contains(d.unknown[source], k) {
			d.unknown[source] = append(d.unknown[source], k)
		}
	}
	return nil
}

// Unknown implements store.Directory.Unknown.
func (d *Directory) Unknown(_ context.Context, source string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := append([]string{}, d.unknown[source]...)
	slices.Sort(out)
	return out, nil
}
