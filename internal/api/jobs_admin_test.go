package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

// Regression: GET /jobs/{id}, which API Gateway serves without IAM, took
// the admin API key instead of the link's token: anyone could open any
// job with it, and test guesses of it on a route no IAM guards. The key
// now opens nothing there: a request with it and no token is answered
// like a job that does not exist, before any read, and nothing is logged
// of it.
// Rules: R-PRIVACY-4.
func TestJobs_RefusesTheAdminKey(t *testing.T) {
	var logs bytes.Buffer
	h := adminHandler(testAdminKey, nil, &logs)
	h.Status = NewStatusLinks("0123456789abcdef0123456789abcdef-status")
	id := job.NewID("generic", "cl-1", 1)
	for _, hdr := range []map[string]string{bearer(testAdminKey), {"X-Api-Key": testAdminKey}} {
		// h.Jobs is nil: a request let through would panic reading it.
		resp := do(t, h, adminReq(http.MethodGet, "/jobs/"+string(id), hdr, ""))
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Body, `"field":"job_id"`) {
			t.Errorf("with the admin key %v: %d %s, want the 404 of a job that does not exist", hdr, resp.StatusCode, resp.Body)
		}
	}
	if bytes.Contains(logs.Bytes(), []byte(testAdminKey)) {
		t.Error("the key was logged")
	}
}
