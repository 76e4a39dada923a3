package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/retry"
)

// permissionReply answers GitHub's "Get repository permissions for a
// user" (testdata/github/collaborator_permission.json) with the given
// permission and role.
func permissionReply(t *testing.T, permission, role string) http.HandlerFunc {
	var m map[string]any
	if err := json.Unmarshal(fixture(t, "github/collaborator_permission.json"), &m); err != nil {
		t.Fatal(err)
	}
	m["permission"], m["role_name"] = permission, role
	b, _ := json.Marshal(m)
	return reply(200, b, "Content-Type", "application/json; charset=utf-8")
}

// A GitHub label counts only when the pull request's author cannot apply
// labels in the repository: permission none, or read with the role read.
// Triage, write, maintain, admin and custom roles (which may grant
// labelling) could have set it; so could anyone GitHub does not answer
// for. A failure to ask is retried like the diff's.
// Rules: R-REPO-7.
func TestLabelsBeyondAuthor_GitHubOnlyWhenTheAuthorCannotLabel(t *testing.T) {
	const route = "GET /api/v3/repos/Codertocat/Hello-World/collaborators/Codertocat/permission"
	labels := []string{"no-review"}
	for _, tc := range []struct {
		name  string
		reply http.HandlerFunc
		want  []string
		class retry.Class
	}{
		{"admin", permissionReply(t, "admin", "admin"), nil, ""},
		{"write", permissionReply(t, "write", "write"), nil, ""},
		{"maintain", permissionReply(t, "write", "maintain"), nil, ""},
		{"triage", permissionReply(t, "read", "triage"), nil, ""},
		{"custom role on read", permissionReply(t, "read", "labeller"), nil, ""},
		{"read", permissionReply(t, "read", "read"), labels, ""},
		{"not a collaborator", permissionReply(t, "none", ""), labels, ""},
		{"unknown user", reply(404, fixture(t, "github/not_found.json")), nil, ""},
		{"token may not ask", reply(403, []byte(`{"message":"Must have push access to view collaborator permission."}`)), nil, ""},
		{"5xx", reply(502, fixture(t, "github/server_error.html")), nil, retry.Upstream5xx},
		{"rate limited", reply(403, fixture(t, "github/rate_limited.json"), "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1741965026"), nil, retry.RateLimited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on(route, tc.reply)
			gh := &GitHub{BaseURL: f.srv.URL + "/api/v3", Token: ghToken, Now: testClock}
			v, err := Router{"github": gh}.LabelsBeyondAuthor(context.Background(), ghRef, "Codertocat", labels)
			if tc.class != "" {
				if err == nil {
					t.Fatalf("no error, want %s", tc.class)
				}
				if c := retry.ClassifyAt(err, testNow); c.Class != tc.class || !c.Retryable() {
					t.Fatalf("classified %s, want retryable %s", c.Class, tc.class)
				}
				wantClean(t, err, ghToken)
				return
			}
			if err != nil || !reflect.DeepEqual(v.Beyond, tc.want) {
				t.Fatalf("beyond %q %v, want %q", v.Beyond, err, tc.want)
			}
			if len(v.Beyond) == 0 && !strings.Contains(v.Why, "skip_labels") {
				t.Fatalf("no label counts and Why says nothing: %q", v.Why)
			}
			if r := f.requests(); len(r) != 1 || r[0].Header.Get("Authorization") != "Bearer "+ghToken {
				t.Fatalf("%d requests, or without the token", len(r))
			}
		})
	}
}

// glLabelEvents is testdata/gitlab/label_events.json with the label
// "no-review" added by each of adders in turn (user ids, a second
// apart), the last addition the latest.
func glLabelEvents(t *testing.T, adders ...int) []byte {
	var es []map[string]any
	if err := json.Unmarshal(fixture(t, "gitlab/label_events.json"), &es); err != nil {
		t.Fatal(err)
	}
	for i, by := range adders {
		e := map[string]any{}
		b, _ := json.Marshal(es[0])
		json.Unmarshal(b, &e)
		e["id"] = 200 + i
		e["user"].(map[string]any)["id"] = by
		e["created_at"] = fmt.Sprintf("2025-03-14T15:%02d:00.000Z", i)
		e["label"].(map[string]any)["name"] = "No-Review"
		es = append(es, e)
	}
	out, _ := json.Marshal(es)
	return out
}

// A GitLab label counts only when the merge request's author is no
// member above Guest of the target project and the label's latest
// addition was by someone else: a Developer author may label their own
// merge request, and anyone may set labels as they open one.
// Rules: R-REPO-7.
func TestLabelsBeyondAuthor_GitLabOnlyWhenSomeoneElseAddedItAndTheAuthorCannot(t *testing.T) {
	const (
		member = "GET /api/v4/projects/gitlabhq%2Fgitlab-test/members/all/1" // merge_request.json's author.id
		events = "GET /api/v4/projects/gitlabhq%%2Fgitlab-test/merge_requests/1/resource_label_events?per_page=100&page=%d"
	)
	memberAt := func(level int) http.HandlerFunc {
		b := bytes.Replace(fixture(t, "gitlab/member.json"), []byte(`"access_level": 30`), fmt.Appendf(nil, `"access_level": %d`, level), 1)
		return reply(200, b, "Content-Type", "application/json")
	}
	labels := []string{"no-review"}
	for _, tc := range []struct {
		name           string
		member, events http.HandlerFunc
		want           []string
		class          retry.Class
	}{
		{"developer", memberAt(30), nil, nil, ""},
		{"reporter", memberAt(20), nil, nil, ""},
		{"not a member, added by another", reply(404, fixture(t, "gitlab/not_found.json")), reply(200, glLabelEvents(t, 7)), labels, ""},
		{"guest, added by another", memberAt(10), reply(200, glLabelEvents(t, 7)), labels, ""},
		{"not a member, added by the author", reply(404, fixture(t, "gitlab/not_found.json")), reply(200, glLabelEvents(t, 1)), nil, ""},
		{"added by another, then again by the author", reply(404, nil), reply(200, glLabelEvents(t, 7, 1)), nil, ""},
		{"no record of the label", reply(404, nil), reply(200, fixture(t, "gitlab/label_events.json")), nil, ""},
		{"events unreadable", reply(404, nil), reply(403, fixture(t, "gitlab/unauthorized.json")), nil, ""},
		{"more history than read", reply(404, nil), reply(200, glLabelEvents(t, 7), "X-Next-Page", "2"), nil, ""},
		{"membership unreadable", reply(401, fixture(t, "gitlab/unauthorized.json")), nil, nil, ""},
		{"5xx", reply(500, fixture(t, "gitlab/server_error.json")), nil, nil, retry.Upstream5xx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on(glMR, reply(200, fixture(t, "gitlab/merge_request.json"), "Content-Type", "application/json"))
			f.on(member, tc.member)
			for p := 1; tc.events != nil && p <= maxLabelEventPages; p++ {
				f.on(fmt.Sprintf(events, p), tc.events)
			}
			gl := &GitLab{BaseURL: f.srv.URL + "/api/v4", Token: glToken, Now: testClock}
			v, err := Router{"gitlab": gl}.LabelsBeyondAuthor(context.Background(), glRef, "root", labels)
			if tc.class != "" {
				if c := retry.ClassifyAt(err, testNow); err == nil || c.Class != tc.class || !c.Retryable() {
					t.Fatalf("err %v, want retryable %s", err, tc.class)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(v.Beyond, tc.want) {
				t.Fatalf("beyond %q %v, want %q", v.Beyond, err, tc.want)
			}
			if len(v.Beyond) == 0 && !strings.Contains(v.Why, "skip_labels") {
				t.Fatalf("no label counts and Why says nothing: %q", v.Why)
			}
			for _, r := range f.requests() {
				if r.Header.Get("PRIVATE-TOKEN") != glToken {
					t.Fatalf("%s without the token", r.RequestURI)
				}
			}
		})
	}
}

// Gerrit hashtags never count: a change's owner may set them on their own
// change. Gerrit is asked nothing; a source that cannot judge its labels
// (the generic one) counts none either.
// Rules: R-REPO-7.
func TestLabelsBeyondAuthor_GerritHashtagsNever(t *testing.T) {
	f := newFakeAPI(t)
	gr := &Gerrit{BaseURL: f.srv.URL, Username: grUser, Password: grPassword}
	v, err := Router{"gerrit": gr}.LabelsBeyondAuthor(context.Background(), grRef, "admin", []string{"no-review"})
	if err != nil || len(v.Beyond) != 0 || !strings.Contains(v.Why, "hashtags") {
		t.Fatalf("%+v %v", v, err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests to Gerrit", n)
	}
	v, err = Router{}.LabelsBeyondAuthor(context.Background(), Ref{Source: "generic"}, "a", []string{"x"})
	if err != nil || len(v.Beyond) != 0 || v.Why != WhyNoLabelJudge {
		t.Fatalf("generic: %+v %v", v, err)
	}
}
