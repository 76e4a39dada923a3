package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Which versions are explicit, as intake creates their jobs: a generic
// caller's review_version is its explicit request (every recipient is
// mailed) unless the body opts in with "quiet": true; a version a code
// host's event derives (a GitHub pull_request) is quiet whatever it
// carries. A wrongly typed opt-in is a 400 naming the field, and creates
// nothing.
// Rules: R-RERUN-2, R-INTAKE-4.
func TestIntake_ExplicitOrQuietVersions_Offline(t *testing.T) {
	ctx := context.Background()
	jobs := memstore.NewJobs(nil)
	in := &api.Intake{Jobs: jobs, Blobs: &memBlobs{objs: map[string][]byte{}}, Queue: &memQueue{},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, TTL: time.Hour,
		Versions: &shaVersions{by: map[string]int{}}, Status: api.NewStatusLinks("status-key-0123456789abcdef0123456789")}
	body := func(version int, quiet any) []byte {
		var m map[string]any
		_ = json.Unmarshal(genericBody(version, "v"), &m)
		if quiet != nil {
			m["quiet"] = quiet
		}
		b, _ := json.Marshal(m)
		return b
	}
	for _, c := range []struct {
		version      int
		quiet        any
		wantExplicit bool
	}{{1, nil, true}, {2, false, true}, {3, true, false}} {
		code, resp, _ := post(in, "k"+string(rune('0'+c.version)), body(c.version, c.quiet))
		var acc api.Accepted
		if code != http.StatusAccepted || json.Unmarshal([]byte(resp), &acc) != nil {
			t.Fatalf("v%d: %d %s", c.version, code, resp)
		}
		j, err := jobs.Get(ctx, acc.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Explicit != c.wantExplicit || j.Quiet() == c.wantExplicit {
			t.Errorf("v%d with quiet %v: explicit %t (quiet rules %t), want explicit %t", c.version, c.quiet, j.Explicit, j.Quiet(), c.wantExplicit)
		}
	}
	if code, resp, _ := post(in, "k9", body(9, "yes")); code != http.StatusBadRequest || !strings.Contains(resp, `"field":"quiet"`) {
		t.Errorf("quiet \"yes\": %d %s, want 400 naming the field", code, resp)
	}
	if v, _, err := jobs.LatestVersion(ctx, "generic", "acme-7"); err != nil || v != 3 {
		t.Errorf("head %d %v: the refused request created a version", v, err)
	}

	gh := webhook.GitHub{Secret: []byte(offlineSecret)}
	resp := in.Handle(ctx, gh, ghHook(t, "pull_request", "pull_request.opened.json", "d-opened", nil))
	var acc api.Accepted
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &acc) != nil {
		t.Fatalf("github opened: %d %s", resp.StatusCode, resp.Body)
	}
	if j, err := jobs.Get(ctx, acc.JobID); err != nil || j.Explicit || !j.Quiet() {
		t.Errorf("a GitHub push's version: explicit %t, quiet %t (%v); want quiet", j.Explicit, j.Quiet(), err)
	}
}
