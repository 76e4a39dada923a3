package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/vote"
)

// The team's learnings through the admin API: GET lists the proposed
// ones (all=true those still counting too) under the threshold; POST
// accepts or rejects a proposed one, once; a malformed id, an unknown
// one, one not proposed or decided already is a 4xx naming the field,
// and decides nothing.
// Rules: R-LEARN-2, R-INTAKE-4.
func TestAdminLearnings_ListAcceptReject_BadInputNamesTheField(t *testing.T) {
	h := adminHandler(testAdminKey, nil, nil)
	store := memstore.NewLearnings()
	h.Admin.Learnings, h.Admin.LearnAfter = store, 2
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	h.Admin.Now = func() time.Time { return at }
	const repo = "generic:acme/billing"
	for i, rule := range []string{"debug-print", "debug-print", "todo-added", "long-line", "long-line"} {
		if _, err := store.Tally(t.Context(), vote.Tally{Repository: repo, Rule: rule, Reader: fmt.Sprint("r_", i%2), Choice: vote.Wrong, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	key := bearer(testAdminKey)
	list := func(q string) LearningList {
		t.Helper()
		r := adminReq(http.MethodGet, "/admin/learnings", key, "")
		if q != "" {
			r.QueryStringParameters = map[string]string{"all": q}
		}
		resp := do(t, h, r)
		var out LearningList
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &out) != nil {
			t.Fatalf("GET: %d %s", resp.StatusCode, resp.Body)
		}
		return out
	}
	got := list("")
	if got.LearnAfter != 2 || len(got.Learnings) != 2 || got.Learnings[0].Rule != "debug-print" || got.Learnings[0].State != vote.Proposed {
		t.Fatalf("list %+v, want debug-print and long-line proposed", got)
	}
	if all := list("true"); len(all.Learnings) != 3 || all.Learnings[2].Rule != "todo-added" || all.Learnings[2].State != vote.Counting {
		t.Fatalf("all %+v, want todo-added counting too", all)
	}
	id := vote.LearningID(repo, "debug-print")
	resp := do(t, h, adminReq(http.MethodPost, "/admin/learnings/"+id+"/accept", key, ""))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"state":"accepted"`) {
		t.Fatalf("accept: %d %s", resp.StatusCode, resp.Body)
	}
	if rules, _ := store.Accepted(t.Context(), repo); len(rules) != 1 || rules[0] != "debug-print" {
		t.Fatalf("accepted %q", rules)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		field        string
	}{
		{http.MethodPost, "/admin/learnings/" + id + "/reject", http.StatusConflict, "id"},                                  // decided already
		{http.MethodPost, "/admin/learnings/" + vote.LearningID(repo, "todo-added") + "/accept", http.StatusConflict, "id"}, // not proposed
		{http.MethodPost, "/admin/learnings/" + vote.LearningID(repo, "no-such") + "/accept", http.StatusNotFound, "id"},
		{http.MethodPost, "/admin/learnings/not-an-id/accept", http.StatusBadRequest, "id"},
		{http.MethodPost, "/admin/learnings/" + id + "/forget", http.StatusNotFound, "path"},
		{http.MethodGet, "/admin/learnings?all=yes", http.StatusBadRequest, "all"},
	} {
		r := adminReq(tc.method, tc.path, key, "")
		if p, q, ok := strings.Cut(tc.path, "?"); ok {
			r = adminReq(tc.method, p, key, "")
			k, v, _ := strings.Cut(q, "=")
			r.QueryStringParameters = map[string]string{k: v}
		}
		resp := do(t, h, r)
		var pr Problem
		if resp.StatusCode != tc.status || json.Unmarshal([]byte(resp.Body), &pr) != nil || pr.Field != tc.field {
			t.Errorf("%s %s: %d %s, want %d naming %q", tc.method, tc.path, resp.StatusCode, resp.Body, tc.status, tc.field)
		}
	}
	if l := list(""); l.Learnings[0].State != vote.Accepted || l.Learnings[1].State != vote.Proposed {
		t.Fatalf("after the refusals: %+v", l)
	}
	resp = do(t, h, adminReq(http.MethodPost, "/admin/learnings/"+vote.LearningID(repo, "long-line")+"/reject", key, ""))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"state":"rejected"`) {
		t.Fatalf("reject: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := do(t, h, adminReq(http.MethodGet, "/admin/learnings", nil, "")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
}
