package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/criticizer/criticizer/internal/store/memstore"
)

// controlRunes is every character R-TERM-1 refuses: C0 (ESC among them),
// DEL, C1, the bidi embeddings, overrides, isolates and marks, and the
// line and paragraph separators.
func controlRunes() []rune {
	var rs []rune
	for r := rune(0); r <= 0x9f; r++ {
		if r < 0x20 || r >= 0x7f {
			rs = append(rs, r)
		}
	}
	for _, span := range [][2]rune{{0x202a, 0x202e}, {0x2066, 0x2069}, {0x2028, 0x2029}} {
		for r := span[0]; r <= span[1]; r++ {
			rs = append(rs, r)
		}
	}
	return append(rs, 0x200e, 0x200f, 0x061c)
}

// Admin input that an operator's terminal will print is refused when it
// holds a control or bidi character: a directory username (in the path)
// or address, a rerun's changelist id or reason, each a 400 naming the
// field, and nothing is written.
// Rules: R-TERM-1, R-INTAKE-4.
func TestAdminInput_ControlAndBidiRefused(t *testing.T) {
	h := adminHandler(testAdminKey, nil, nil)
	dir := memstore.NewDirectory(nil)
	h.Admin.Directory = dir
	key := bearer(testAdminKey)
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, r := range controlRunes() {
		c := string(r)
		for _, tc := range []struct {
			method, path, body, field string
		}{
			{http.MethodPut, "/admin/directory/github/" + url.PathEscape("octo"+c+"cat"), `{"email":"x@example.com"}`, "username"},
			{http.MethodDelete, "/admin/directory/github/" + url.PathEscape(c+"octo"), ``, "username"},
			{http.MethodPut, "/admin/directory/github/octocat", `{"email":` + js("oc"+c+"to@example.com") + `}`, "email"},
			{http.MethodPut, "/admin/directory/github/octocat", `{"email":` + js("octo@exa"+c+"mple.com") + `}`, "email"},
			{http.MethodPost, "/admin/rerun", `{"source":"generic","changelist_id":` + js("cl"+c+"1") + `,"dry_run":true}`, "changelist_id"},
			{http.MethodPost, "/admin/rerun", `{"source":"generic","changelist_id":"cl-1","reason":` + js("fixed "+c+"template") + `}`, "reason"},
		} {
			if tc.field == "reason" && (r == '\t' || r == '\n') {
				continue // a reason may have lines and tabs
			}
			req := adminReq(tc.method, tc.path, key, tc.body)
			resp := do(t, h, req)
			var p Problem
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(resp.Body), &p) != nil || p.Field != tc.field {
				t.Errorf("U+%04X: %s %s %s: %d %s, want 400 naming %s", r, tc.method, tc.path, tc.body, resp.StatusCode, resp.Body, tc.field)
			}
		}
	}
	if l, _ := dir.List(t.Context(), "github"); len(l) != 0 {
		t.Fatalf("refused requests wrote %d entries", len(l))
	}
	// The same requests without the character are taken.
	if resp := do(t, h, adminReq(http.MethodPut, "/admin/directory/github/octocat", key, `{"email":"octo@example.com"}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("a clean PUT: %d %s", resp.StatusCode, resp.Body)
	}
}
