package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const grTestToken = "gerrit-test-token"

var grAdapter = Gerrit{Token: []byte(grTestToken)}

func grFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gerrit", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// grRequest builds a delivery as the webhooks plugin sends it, with the
// token in X-Criticizer-Token. Entries in over replace (or, when empty,
// remove) headers.
func grRequest(body []byte, over map[string]string) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set(GerritTokenHeader, grTestToken)
	for k, v := range over {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	return Request{Header: h.Get, Body: body}
}

func grEdit(t testing.TB, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(grFixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func grChange(m map[string]any) map[string]any   { return m["change"].(map[string]any) }
func grPatchSet(m map[string]any) map[string]any { return m["patchSet"].(map[string]any) }

func TestGerritPatchsetCreatedRealPayload(t *testing.T) {
	ev, err := grAdapter.ParseEvent(grRequest(grFixture(t, "patchset-created.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		Change: Change{
			Source:         "gerrit",
			IdempotencyKey: "Ie10fd901201c53e9fe3b9766343060763ac81dc6~2~2~patchset-created",
			ChangelistID:   "TestRepo1~2",
			ReviewVersion:  2,
			Title:          "update commit as per review",
			Description:    "update commit as per review\n\nChange-Id: Ie10fd901201c53e9fe3b9766343060763ac81dc6",
			URL:            "http://959be7129610/c/TestRepo1/+/2",
			Author:         "admin",
		},
		Repo:      "TestRepo1",
		Number:    2,
		Patchset:  2,
		HeadSHA:   "66e097f59116e761f5473b66b351f7eba63aed50",
		Reviewers: []string{},
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("ParseEvent:\n got %+v\nwant %+v", ev, want)
	}
	if strings.Contains(ev.Change.Author, "@") {
		t.Fatal("author is an address")
	}
	if c, err := grAdapter.Parse(grRequest(grFixture(t, "patchset-created.json"), nil)); err != nil || !reflect.DeepEqual(c, want.Change) {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
}

func TestGerritOtherRealPayloads(t *testing.T) {
	ev, err := grAdapter.ParseEvent(grRequest(grFixture(t, "patchset-created-snix.json"), nil))
	if err != nil || ev.Change.ChangelistID != "snix~30623" || ev.Change.ReviewVersion != 1 || ev.Change.Author != "flokli" {
		t.Fatalf("snix: %+v, %v", ev, err)
	}
	// Gerrit 2.x: numbers as strings, owner without a username.
	ev, err = grAdapter.ParseEvent(grRequest(grFixture(t, "patchset-created-legacy.json"), nil))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Change.ChangelistID != "qt/qtbase~10235" || ev.Change.ReviewVersion != 7 || ev.Change.Author != "Jędrzej Nowacki" ||
		ev.Change.IdempotencyKey != "Ibffc95833918f65be737f52d694ee81a2036c412~10235~7~patchset-created" {
		t.Fatalf("legacy: %+v", ev)
	}
}

func TestGerritSkips(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"change-merged", grFixture(t, "change-merged.json"), "event not reviewed: change-merged"},
		{"comment-added", grFixture(t, "comment-added.json"), "event not reviewed: comment-added"},
		{"commit message only", grEdit(t, "patchset-created.json", func(m map[string]any) { grPatchSet(m)["kind"] = "NO_CODE_CHANGE" }), "patch set without code change"},
		{"work in progress", grEdit(t, "patchset-created.json", func(m map[string]any) { grChange(m)["wip"] = true }), "work in progress"},
		{"abandoned", grEdit(t, "patchset-created.json", func(m map[string]any) { grChange(m)["status"] = "ABANDONED" }), "change not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := grAdapter.ParseEvent(grRequest(tt.body, nil))
			if err != nil || ev.Skip != tt.want {
				t.Fatalf("Skip = %q, %v; want %q", ev.Skip, err, tt.want)
			}
		})
	}
	// Trivial rebases and reworks are reviewed.
	body := grEdit(t, "patchset-created.json", func(m map[string]any) { grPatchSet(m)["kind"] = "TRIVIAL_REBASE" })
	if ev, err := grAdapter.ParseEvent(grRequest(body, nil)); err != nil || ev.Skip != "" {
		t.Fatalf("trivial rebase: %+v, %v", ev, err)
	}
}

func TestGerritTokenSources(t *testing.T) {
	body := grFixture(t, "patchset-created.json")
	ok := []map[string]string{
		nil, // header
		{GerritTokenHeader: "", GerritQueryTokenHeader: grTestToken}, // ?token= via the pseudo-header
		{GerritQueryTokenHeader: grTestToken},                        // both, both right
	}
	for _, over := range ok {
		if _, err := grAdapter.ParseEvent(grRequest(body, over)); err != nil {
			t.Fatalf("%v: %v", over, err)
		}
	}
	bad := []struct {
		name    string
		adapter Gerrit
		over    map[string]string
	}{
		{"missing", grAdapter, map[string]string{GerritTokenHeader: ""}},
		{"wrong header", grAdapter, map[string]string{GerritTokenHeader: "gerrit-test-tokem"}},
		{"wrong query", grAdapter, map[string]string{GerritTokenHeader: "", GerritQueryTokenHeader: "x"}},
		{"one of two wrong", grAdapter, map[string]string{GerritQueryTokenHeader: "x"}},
		{"nothing configured", Gerrit{}, nil},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.adapter.ParseEvent(grRequest(body, tt.over))
			var ae *AuthError
			if !errors.As(err, &ae) || Status(err) != 401 {
				t.Fatalf("err = %v, want *AuthError", err)
			}
			if strings.Contains(err.Error(), grTestToken) {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

func TestGerritFieldErrors(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		field string
	}{
		{"no type", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(m, "type") }), "type"},
		{"no change", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(m, "change") }), "change"},
		{"no patchSet", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(m, "patchSet") }), "patchSet"},
		{"patch set number zero", grEdit(t, "patchset-created.json", func(m map[string]any) { grPatchSet(m)["number"] = 0 }), "patchSet.number"},
		{"change number garbage", grEdit(t, "patchset-created.json", func(m map[string]any) { grChange(m)["number"] = "two" }), "change.number"},
		{"project an object", grEdit(t, "patchset-created.json", func(m map[string]any) { grChange(m)["project"] = map[string]any{"name": "x"} }), "change.project"},
		{"no Change-Id", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(grChange(m), "id") }), "change.id"},
		{"revision short", grEdit(t, "patchset-created.json", func(m map[string]any) { grPatchSet(m)["revision"] = "66e097f" }), "patchSet.revision"},
		{"no owner", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(grChange(m), "owner") }), "change.owner"},
		{"owner only an address", grEdit(t, "patchset-created.json", func(m map[string]any) {
			grChange(m)["owner"] = map[string]any{"email": "admin@example.com"}
		}), "change.owner.username"},
		{"owner name is an address", grEdit(t, "patchset-created.json", func(m map[string]any) {
			grChange(m)["owner"] = map[string]any{"name": "admin@example.com"}
		}), "change.owner.name"},
		{"url missing", grEdit(t, "patchset-created.json", func(m map[string]any) { delete(grChange(m), "url") }), "change.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := grAdapter.ParseEvent(grRequest(tt.body, nil))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want *FieldError on %q", err, tt.field)
			}
			if strings.Contains(err.Error(), "admin@example.com") {
				t.Fatalf("error leaks an address: %v", err)
			}
		})
	}
}

func FuzzGerritParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "gerrit", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"patchset-created","change":{"number":"\"1\""},"patchSet":{"number":" 1"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := grAdapter.ParseEvent(grRequest(body, nil))
		checkFuzzedEvent(t, "gerrit", ev, err)
		if err == nil && ev.Skip == "" && ev.Change.ReviewVersion != ev.Patchset {
			t.Fatalf("ReviewVersion %d != Patchset %d", ev.Change.ReviewVersion, ev.Patchset)
		}
	})
}
