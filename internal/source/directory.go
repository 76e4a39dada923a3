package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"

	"github.com/criticizer/criticizer/internal/delivery"
)

// Directory resolves a code review system's username to an e-mail address.
// GitHub and GitLab do not disclose their users' addresses to a webhook or
// an API token; an organisation's directory does.
//
// ok is false when the user is unknown: callers must then leave the
// reviewer without an address (a skipped_no_email delivery), never guess
// one from the username. err is for a directory that could not answer.
type Directory interface {
	Lookup(ctx context.Context, source, username string) (email string, ok bool, err error)
}

// StaticDirectory is a Directory held in memory, loaded from configuration:
//
//	{"github": {"octocat": "octo@example.com"}, "gitlab": {"user1": "user1@example.com"}}
//
// Usernames match case-insensitively (GitHub and GitLab logins are
// case-insensitive); addresses are normalized (trimmed, lower-cased) like
// every recipient. It is safe for concurrent use.
type StaticDirectory struct {
	users map[string]map[string]string // source → lower-case username → address
}

var _ Directory = (*StaticDirectory)(nil)

// NewStaticDirectory validates m (source → username → address) and builds a
// directory from it. Error messages name the source and username of a bad
// entry, never the address.
func NewStaticDirectory(m map[string]map[string]string) (*StaticDirectory, error) {
	d := &StaticDirectory{users: make(map[string]map[string]string, len(m))}
	for source, users := range m {
		source = strings.TrimSpace(source)
		if source == "" {
			return nil, fmt.Errorf("directory: empty source name")
		}
		byName := make(map[string]string, len(users))
		for name, addr := range users {
			key := strings.ToLower(strings.TrimSpace(name))
			if key == "" {
				return nil, fmt.Errorf("directory: %s: empty username", source)
			}
			if _, dup := byName[key]; dup {
				return nil, fmt.Errorf("directory: %s: username %q is listed twice (usernames are case-insensitive)", source, name)
			}
			a, err := mail.ParseAddress(addr)
			if err != nil || a.Name != "" || a.Address != strings.TrimSpace(addr) || !strings.Contains(a.Address[strings.LastIndexByte(a.Address, '@')+1:], ".") {
				return nil, fmt.Errorf("directory: %s: user %q: not a bare e-mail address such as reviewer@example.com", source, name)
			}
			byName[key] = delivery.NormalizeRecipient(a.Address)
		}
		d.users[source] = byName
	}
	return d, nil
}

// ParseStaticDirectory reads the JSON form shown on StaticDirectory.
// Unknown shapes are refused rather than half-read.
func ParseStaticDirectory(data []byte) (*StaticDirectory, error) {
	var m map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("directory: must be a JSON object of sources, each an object of username to address: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("directory: trailing data after the JSON object")
	}
	return NewStaticDirectory(m)
}

// Lookup implements Directory. It never fails.
func (d *StaticDirectory) Lookup(_ context.Context, source, username string) (string, bool, error) {
	if d == nil {
		return "", false, nil
	}
	addr, ok := d.users[source][strings.ToLower(strings.TrimSpace(username))]
	return addr, ok, nil
}

// ResolveReviewers fills in the e-mail address of each reviewer that has
// none from dir, leaving unknown users without one. Addresses the source
// disclosed are kept (normalized). Reviewers that end up with the same
// address are merged. A nil dir resolves nothing.
func ResolveReviewers(ctx context.Context, dir Directory, source string, in []Reviewer) ([]Reviewer, error) {
	out := make([]Reviewer, 0, len(in))
	seen := map[string]bool{}
	for _, r := range in {
		if r.Email == "" && dir != nil && r.Username != "" {
			addr, ok, err := dir.Lookup(ctx, source, r.Username)
			if err != nil {
				return nil, fmt.Errorf("directory: looking up a %s user: %w", source, err)
			}
			if ok {
				r.Email = addr
			}
		}
		r.Email = delivery.NormalizeRecipient(r.Email)
		if r.Email != "" {
			if seen[r.Email] {
				continue
			}
			seen[r.Email] = true
		}
		out = append(out, r)
	}
	return out, nil
}
