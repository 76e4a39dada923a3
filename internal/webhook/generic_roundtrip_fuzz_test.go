package webhook_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/criticizer/criticizer/internal/webhook"
)

// genBodyOf is the generic wire format of an accepted Change: what a caller
// would send to get exactly that Change.
func genBodyOf(t *testing.T, c webhook.Change) []byte {
	t.Helper()
	m := map[string]any{
		"changelist_id":  c.ChangelistID,
		"review_version": c.ReviewVersion,
		"title":          c.Title,
		"url":            c.URL,
		"author":         c.Author,
		"recipients":     c.Recipients,
	}
	if c.DiffURL != "" {
		m["diff_url"] = c.DiffURL
	} else {
		m["diff"] = c.Diff
	}
	if c.Quiet {
		m["quiet"] = true
	}
	if c.Repository != "" {
		m["repository"] = c.Repository
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	return b
}

// FuzzGenericRoundTrip builds generic bodies field by field (so most of them
// get past JSON decoding, unlike FuzzGenericParse's raw bytes) and checks
// that validation is a normalization: a body the validator accepts, encoded
// back from the Change it produced, is accepted again and yields the same
// Change. A Change that did not survive its own re-encoding would be
// stored under one changelist, URL or recipient set and replayed under
// another.
func FuzzGenericRoundTrip(f *testing.F) {
	var sample struct {
		ChangelistID  string   `json:"changelist_id"`
		ReviewVersion int64    `json:"review_version"`
		Title         string   `json:"title"`
		URL           string   `json:"url"`
		Author        string   `json:"author"`
		Recipients    []string `json:"recipients"`
		Diff          string   `json:"diff"`
	}
	raw, err := os.ReadFile(genSamplePath)
	if err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sample); err != nil {
		f.Fatal(err)
	}
	rcpt := strings.Join(sample.Recipients, "\n")
	f.Add(sample.ChangelistID, sample.ReviewVersion, sample.Title, sample.URL, sample.Author, rcpt, sample.Diff, false, "")
	f.Add(" billing-1042 ", int64(7), "  Add refunds ", "https://review.example.com/c/x?y=1#z", "ana", "Reviewer1@Example.COM\nreviewer1@example.com", "https://ci.example.com/diffs/1.patch", true, " acme/billing ")
	f.Add("c", int64(1), "t", "HTTP://Review.Example.com/a b/%zz", "a", " x@y.io ", "+x\n", false, "acme/\u2066x")
	f.Add("c", int64(1), "t", "https://example.com/"+strings.Repeat("a ", 1000)+"z", "a", "a@b.co", "x", false, strings.Repeat("r/", 127)+"r")
	f.Add("c", int64(2147483647), "t", "https://[::1]:8080/p", "a", "a@b.co\na@b.co\nb@b.co", "https://e.example/%41", true, "a//b")

	f.Fuzz(func(t *testing.T, id string, version int64, title, url, author, recipients, diffOrURL string, useURL bool, repository string) {
		for _, s := range []string{id, title, url, author, recipients, diffOrURL, repository} {
			if !utf8.ValidString(s) {
				t.Skip("json.Marshal would replace invalid UTF-8; FuzzGenericParse covers raw bytes")
			}
		}
		m := map[string]any{
			"changelist_id":  id,
			"review_version": version,
			"title":          title,
			"url":            url,
			"author":         author,
			"recipients":     strings.Split(recipients, "\n"),
		}
		if useURL {
			m["diff_url"] = diffOrURL
		} else {
			m["diff"] = diffOrURL
		}
		if repository != "" {
			m["repository"] = repository
		}
		body, err := json.Marshal(m)
		if err != nil {
			t.Skip()
		}
		c, err := genParse(genSigned(body))
		if err != nil {
			return
		}
		if c.ChangelistID != strings.TrimSpace(id) || int64(c.ReviewVersion) != version ||
			c.Title != strings.TrimSpace(title) || c.Author != strings.TrimSpace(author) || c.Repository != strings.TrimSpace(repository) {
			t.Fatalf("accepted fields changed beyond trimming: %+v", c)
		}
		again, err := genParse(genSigned(genBodyOf(t, c)))
		if err != nil {
			t.Fatalf("the re-encoded accepted Change is rejected: %v\nchange %+v", err, c)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip changed the Change:\n first %+v\nsecond %+v", c, again)
		}
	})
}
