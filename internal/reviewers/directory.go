package reviewers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/termtext"
)

// Person is someone asked to review, or who reviewed: a username of the
// code review system and, when the system discloses it (Gerrit; GitLab's
// public e-mail), an address. Reviewed is when they last submitted a
// review (zero: never, or not known).
type Person struct {
	Username string
	Email    string
	Reviewed time.Time
	// Team is the team whose request made them a reviewer (GitHub), when
	// they were not requested by name.
	Team string
}

// Key is a username as the directory and the roster key it: trimmed and
// lower-cased. GitHub's, GitLab's and Gerrit's usernames are
// case-insensitive.
func Key(username string) string { return strings.ToLower(strings.TrimSpace(username)) }

// CheckUsername validates a username a directory entry is for: 1–256
// bytes, printable (no control or bidi character), no spaces, no "@" (an
// address is never a username), no "/" (it is a path segment of the admin
// API). It returns why not, or "".
func CheckUsername(u string) string {
	switch {
	case strings.TrimSpace(u) == "":
		return "is required"
	case len(u) > 256:
		return "must be at most 256 bytes"
	case !utf8.ValidString(u) || strings.ContainsAny(u, " \t\r\n@,<>\"/"):
		return "is not a valid username (no spaces, no @)"
	case termtext.Check(u) != "":
		// An operator's terminal prints usernames (R-TERM-1).
		return termtext.Check(u)
	}
	return ""
}

// Identity is the "<source>:<username>" form that names a reviewer without
// an address: the key of their skipped_no_email delivery row, and how a
// job lists its unknown reviewers.
func Identity(source, username string) string { return source + ":" + strings.TrimSpace(username) }

// Directory resolves usernames of a code review system to addresses.
// GitHub and GitLab do not disclose their users' addresses to a webhook or
// an API token; an organisation's directory does.
//
// Lookup returns the known addresses by Key(username); a username absent
// from the map is unknown, and callers must leave that reviewer without an
// address (a skipped_no_email delivery), never guess one. An error is for
// a directory that could not answer.
type Directory interface {
	Lookup(ctx context.Context, source string, usernames []string) (map[string]string, error)
}

// Static is a Directory held in memory, loaded from configuration
// (CRITICIZER_REVIEWER_DIRECTORY):
//
//	{"github": {"octocat": "octo@example.com"}, "gitlab": {"user1": "user1@example.com"}}
//
// Usernames match case-insensitively; addresses are normalized (trimmed,
// lower-cased) like every recipient. It is safe for concurrent use. With
// a table directory it is the seed under the table (Overlay).
type Static struct {
	users map[string]map[string]string // source → Key(username) → address
}

var _ Directory = (*Static)(nil)

// NewStatic validates m (source → username → address) and builds a
// directory from it. Error messages name the source and username of a bad
// entry, never the address.
func NewStatic(m map[string]map[string]string) (*Static, error) {
	d := &Static{users: make(map[string]map[string]string, len(m))}
	for source, users := range m {
		source = strings.TrimSpace(source)
		if source == "" {
			return nil, fmt.Errorf("directory: empty source name")
		}
		byName := make(map[string]string, len(users))
		for name, addr := range users {
			key := Key(name)
			if key == "" {
				return nil, fmt.Errorf("directory: %s: empty username", source)
			}
			if _, dup := byName[key]; dup {
				return nil, fmt.Errorf("directory: %s: username %q is listed twice (usernames are case-insensitive)", source, name)
			}
			a, err := CheckAddress(addr)
			if err != nil {
				return nil, fmt.Errorf("directory: %s: user %q: %w", source, name, err)
			}
			byName[key] = a
		}
		d.users[source] = byName
	}
	return d, nil
}

// CheckAddress validates an address a directory entry maps a user to: a
// bare address such as reviewer@example.com (no display name, a dotted
// domain). It returns the normalized form. The error never quotes the
// address.
func CheckAddress(addr string) (string, error) {
	if termtext.Check(addr) != "" {
		// mail.ParseAddress takes C1 and bidi characters in a local part
		// or a domain; an operator's terminal prints addresses (R-TERM-1).
		return "", fmt.Errorf("not a bare e-mail address: it holds control or bidi characters")
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || a.Address != strings.TrimSpace(addr) || !strings.Contains(a.Address[strings.LastIndexByte(a.Address, '@')+1:], ".") {
		return "", fmt.Errorf("not a bare e-mail address such as reviewer@example.com")
	}
	return delivery.NormalizeRecipient(a.Address), nil
}

// ParseStatic reads the JSON form shown on Static. Unknown shapes are
// refused rather than half-read.
func ParseStatic(data []byte) (*Static, error) {
	var m map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("directory: must be a JSON object of sources, each an object of username to address: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("directory: trailing data after the JSON object")
	}
	return NewStatic(m)
}

// Lookup implements Directory. It never fails.
func (d *Static) Lookup(_ context.Context, source string, usernames []string) (map[string]string, error) {
	out := map[string]string{}
	if d == nil {
		return out, nil
	}
	for _, u := range usernames {
		if addr, ok := d.users[source][Key(u)]; ok {
			out[Key(u)] = addr
		}
	}
	return out, nil
}

// Entries lists the seed's entries of one source (every source when
// source is empty), for an operator's import into the table.
func (d *Static) Entries(source string) []Entry {
	var out []Entry
	if d == nil {
		return out
	}
	for src, users := range d.users {
		if source != "" && src != source {
			continue
		}
		for key, addr := range users {
			out = append(out, Entry{Source: src, Username: key, Email: addr})
		}
	}
	return out
}

// Entry is one entry of the table directory: a username of a source and
// the address it maps to, or, with Removed, a removal that also hides the
// seed's entry for the username.
type Entry struct {
	Source    string    `json:"source"`
	Username  string    `json:"username"`
	Email     string    `json:"email,omitempty"`
	Removed   bool      `json:"removed,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// EntryReader reads table entries by Key(username), removals included
// (store.Directory).
type EntryReader interface {
	Entries(ctx context.Context, source string, usernames []string) (map[string]Entry, error)
}

// Overlay is the directory the fetch stage uses: the table people keep
// (the admin API, the criticizer CLI) over the deployment's static seed.
// A table entry wins; a removal in the table hides the seed's entry; a
// username the table does not name falls through to the seed. Every
// lookup reads the table, so an entry set a moment ago counts for the next
// delivery, with no redeploy.
type Overlay struct {
	Table EntryReader // nil: the seed alone
	Seed  Directory   // nil: the table alone
}

var _ Directory = Overlay{}

// Lookup implements Directory.
func (o Overlay) Lookup(ctx context.Context, source string, usernames []string) (map[string]string, error) {
	out := map[string]string{}
	rest := usernames
	if o.Table != nil && len(usernames) > 0 {
		entries, err := o.Table.Entries(ctx, source, usernames)
		if err != nil {
			return nil, err
		}
		rest = nil
		for _, u := range usernames {
			e, ok := entries[Key(u)]
			switch {
			case !ok:
				rest = append(rest, u)
			case !e.Removed && e.Email != "":
				out[Key(u)] = e.Email
			}
		}
	}
	if o.Seed != nil && len(rest) > 0 {
		seed, err := o.Seed.Lookup(ctx, source, rest)
		if err != nil {
			return nil, err
		}
		for k, v := range seed {
			out[k] = v
		}
	}
	return out, nil
}

// Resolve fills in the address of each person who has none from dir (one
// lookup for all of them), leaving unknown users without one. Addresses
// the source disclosed are kept (normalized). People who end up with the
// same address are merged. A nil dir resolves nothing.
func Resolve(ctx context.Context, dir Directory, source string, in []Person) ([]Person, error) {
	var names []string
	for _, p := range in {
		if p.Email == "" && p.Username != "" {
			names = append(names, p.Username)
		}
	}
	found := map[string]string{}
	if dir != nil && len(names) > 0 {
		var err error
		if found, err = dir.Lookup(ctx, source, names); err != nil {
			return nil, fmt.Errorf("directory: looking up %s users: %w", source, err)
		}
	}
	out := make([]Person, 0, len(in))
	seen := map[string]bool{}
	for _, p := range in {
		if p.Email == "" && p.Username != "" {
			p.Email = found[Key(p.Username)]
		}
		p.Email = delivery.NormalizeRecipient(p.Email)
		if p.Email != "" {
			if seen[p.Email] {
				continue
			}
			seen[p.Email] = true
		}
		out = append(out, p)
	}
	return out, nil
}

// Split separates the people with a usable address (the recipients,
// normalized and de-duplicated) from those without one, who are named by
// Identity: the key of their skipped_no_email delivery row. An address the
// source disclosed that is not a bare address is treated as none: never
// guessed at or repaired.
func Split(source string, ps []Person) (recipients, unknown []string) {
	recipients, unknown = []string{}, []string{}
	seen := map[string]bool{}
	for _, p := range ps {
		if addr := delivery.NormalizeRecipient(p.Email); addr != "" && bareAddress(addr) {
			if !seen[addr] {
				seen[addr] = true
				recipients = append(recipients, addr)
			}
			continue
		}
		if strings.TrimSpace(p.Username) == "" {
			continue // no address and no name: nobody to record
		}
		id := Identity(source, p.Username)
		if k := delivery.NormalizeRecipient(id); !seen[k] {
			seen[k] = true
			unknown = append(unknown, id)
		}
	}
	return recipients, unknown
}

// bareAddress reports whether a is a plain address such as
// reviewer@example.com (no display name, a dotted domain).
func bareAddress(a string) bool {
	p, err := mail.ParseAddress(a)
	if err != nil || p.Name != "" || p.Address != a {
		return false
	}
	at := strings.LastIndexByte(a, '@')
	return at > 0 && strings.Contains(a[at+1:], ".")
}
