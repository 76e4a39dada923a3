package webhook

import (
	"reflect"
	"testing"
	"time"
)

// A reviewer-added event recorded from a Gerrit server (gerritbot-rs's
// fixture, testdata/README.md), delivered as the webhooks plugin does,
// with the token in the URL's query (the plugin can send no header of its
// own): jdoe is requested on change 1 of admin's, nothing is reviewed.
// Rules: R-SOURCE-3.
func TestGerritRealReviewerAdded_QueryTokenRecordsTheReviewer(t *testing.T) {
	req := grRequest(grFixture(t, "reviewer-added-gerritbot.json"), map[string]string{GerritTokenHeader: "", GerritQueryTokenHeader: grTestToken})
	ev, err := grAdapter.ParseEvent(req)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Skip != "" || !ev.ReviewersOnly || ev.Roster == nil || !reflect.DeepEqual(ev.Roster.Requested, []string{"jdoe"}) ||
		!ev.Roster.At.Equal(time.Unix(1553632329, 0)) {
		t.Fatalf("event %+v, roster %+v; want jdoe requested, reviewers only", ev, ev.Roster)
	}
	if ev.Change.ChangelistID != "gerritbot-rs~1" || ev.Patchset != 1 || ev.Change.Author != "admin" {
		t.Fatalf("changelist %q, patch set %d, author %q", ev.Change.ChangelistID, ev.Patchset, ev.Change.Author)
	}
	if _, err := grAdapter.Parse(req); Status(err) != 202 {
		t.Fatalf("Parse: %v, want a skip (202)", err)
	}
}
