package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/store/memstore"
)

// The reviewer directory through the admin API: set, list (addresses
// masked, removals shown, the unknown usernames), remove; bad input is a
// 400 naming the field and changes nothing; the routes need the key.
// Rules: R-REVIEWERS-4, R-INTAKE-4.
func TestAdminDirectory_SetListRemove_BadInputNamesTheField(t *testing.T) {
	h := adminHandler(testAdminKey, nil, nil)
	dir := memstore.NewDirectory(nil)
	h.Admin.Directory = dir
	_ = dir.NoteUnknown(t.Context(), "github", []string{"hubot", "octocat"})
	key := bearer(testAdminKey)

	resp := do(t, h, adminReq(http.MethodPut, "/admin/directory/github/OctoCat", key, `{"email":"Octo@Example.com"}`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"email":"o***@e***.com"`) || strings.Contains(resp.Body, "octo@example.com") {
		t.Fatalf("PUT: %d %s, want the entry with its address masked", resp.StatusCode, resp.Body)
	}
	if e, err := dir.Get(t.Context(), "github", "octocat"); err != nil || e.Email != "octo@example.com" || e.UpdatedBy != "admin-api" {
		t.Fatalf("stored entry %+v %v", e, err)
	}
	for _, tc := range []struct {
		method, path, body, field string
	}{
		{http.MethodPut, "/admin/directory/github/x", `{"email":"X <x@example.com>"}`, "email"},
		{http.MethodPut, "/admin/directory/github/x", `{"email":"x@localhost"}`, "email"},
		{http.MethodPut, "/admin/directory/github/x", `{}`, "email"},
		{http.MethodPut, "/admin/directory/github/x", `{"email":"x@example.com","name":"x"}`, "name"},
		{http.MethodPut, "/admin/directory/github/a@b.c", `{"email":"x@example.com"}`, "username"},
		{http.MethodPut, "/admin/directory/generic/x", `{"email":"x@example.com"}`, "source"},
		{http.MethodGet, "/admin/directory", ``, "source"},
		{http.MethodGet, "/admin/directory?source=svn", ``, "source"},
	} {
		r := adminReq(tc.method, tc.path, key, tc.body)
		if path, query, ok := strings.Cut(tc.path, "?"); ok {
			r.RawPath, r.QueryStringParameters = path, map[string]string{"source": strings.TrimPrefix(query, "source=")}
		}
		resp := do(t, h, r)
		var p Problem
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(resp.Body), &p) != nil || p.Field != tc.field {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", tc.method, tc.path, tc.body, resp.StatusCode, resp.Body, tc.field)
		}
	}
	if _, err := dir.Get(t.Context(), "github", "x"); err == nil {
		t.Fatal("a refused request wrote an entry")
	}
	resp = do(t, h, adminReq(http.MethodDelete, "/admin/directory/github/octocat", key, ""))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"had_entry":true`) {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, resp.Body)
	}
	r := adminReq(http.MethodGet, "/admin/directory", key, "")
	r.QueryStringParameters = map[string]string{"source": "github"}
	resp = do(t, h, r)
	var list DirectoryList
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &list) != nil || len(list.Entries) != 1 || !list.Entries[0].Removed ||
		len(list.Unknown) != 1 || list.Unknown[0] != "hubot" {
		t.Fatalf("GET: %d %s, want octocat removed and hubot unknown", resp.StatusCode, resp.Body)
	}
	if resp := do(t, h, adminReq(http.MethodPut, "/admin/directory/github/y", nil, `{"email":"y@example.com"}`)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
	if resp := do(t, h, adminReq(http.MethodPost, "/admin/directory/github/y", key, `{}`)); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}
