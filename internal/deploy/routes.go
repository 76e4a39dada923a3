package deploy

import "github.com/criticizer/criticizer/internal/job"

// Route is one route of the HTTP API, served by intake: a method and a
// path where {name} matches one path segment and {name+} the rest.
type Route struct {
	Method, Path string
	// IAM: API Gateway's IAM authorizer (SigV4, an operator's
	// credentials), and inside intake the admin API key as well (in
	// X-Api-Key: SigV4 takes the Authorization header).
	IAM bool
	// Public says why a route without IAM needs no AWS credentials: how
	// intake authenticates it, or why it is public by design (it is the
	// reason of cdk-nag's APIG4 finding the CDK app accepts).
	Public string
}

// Key is API Gateway's route key ("POST /webhooks/github").
func (r Route) Key() string { return r.Method + " " + r.Path }

// Why the routes without IAM need none.
const (
	publicWebhook = "Code review systems cannot sign SigV4 or fetch tokens: intake authenticates every webhook with its " +
		"source's scheme (HMAC signature over the body, or the shared token GitLab and Gerrit send) against the " +
		"Secrets Manager secret, and refuses the rest with 401."
	publicJob = "Job status is polled by the code review integration, which holds no AWS credentials; by design the view " +
		"carries states only, never diff or critique content, with recipients masked (internal/api JobView), since " +
		"job ids derive from changelist ids. Full rows are for operators through the CLI."
	publicHealth      = "Health check for load balancers and uptime probes; answers only {\"status\":\"ok\"|\"unavailable\"}."
	publicUnsubscribe = "Opened from a link in an email by a recipient without AWS credentials (and RFC 8058 one-click POST); " +
		"the token in the path is the credential, which intake verifies before changing anything."
	publicVote = "A reader's vote on a finding, opened from a link in an email by a recipient without AWS credentials; " +
		"the signed, expiring token in the path (no address in it) is the credential, which intake verifies before " +
		"recording anything, and a GET records nothing (R-VOTE-1)."
	publicPreferences = "A reader's preference page, opened from a link in an email by a recipient without AWS credentials; " +
		"the signed, expiring token in the path (no address in it) is the credential, which intake verifies before " +
		"reading or saving anything, and a GET saves nothing (R-PREF-2)."
)

// Routes is every route intake serves, and nothing else (R-DEPLOY-1):
// on AWS a route that is not deployed is API Gateway's 404, whatever
// intake would answer, and both templates deploy exactly these
// (internal/api's TestRoutes_TableIsWhatHandleServes holds the router to
// them). One webhook route per source, so each is throttled on its own: a
// flood at one source leaves the others their whole rate.
//
// HEAD /unsubscribe/{token}, /vote/{token} and /preferences/{token} are
// deployed too: mail
// scanners and link checkers probe links with HEAD, and a HEAD answered
// 404 would mark the link broken.
func Routes() []Route {
	var out []Route
	for _, s := range job.Sources() {
		out = append(out, Route{Method: "POST", Path: "/webhooks/" + s, Public: publicWebhook})
	}
	return append(out,
		Route{Method: "GET", Path: "/jobs/{id}", Public: publicJob},
		Route{Method: "GET", Path: "/healthz", Public: publicHealth},
		Route{Method: "GET", Path: "/unsubscribe/{token}", Public: publicUnsubscribe},
		Route{Method: "HEAD", Path: "/unsubscribe/{token}", Public: publicUnsubscribe},
		Route{Method: "POST", Path: "/unsubscribe/{token}", Public: publicUnsubscribe},
		Route{Method: "GET", Path: "/vote/{token}", Public: publicVote},
		Route{Method: "HEAD", Path: "/vote/{token}", Public: publicVote},
		Route{Method: "POST", Path: "/vote/{token}", Public: publicVote},
		// A reader's preference page (R-PREF-2): GET shows it, POST saves.
		Route{Method: "GET", Path: "/preferences/{token}", Public: publicPreferences},
		Route{Method: "HEAD", Path: "/preferences/{token}", Public: publicPreferences},
		Route{Method: "POST", Path: "/preferences/{token}", Public: publicPreferences},
		Route{Method: "POST", Path: "/admin/rerun", IAM: true},
		Route{Method: "GET", Path: "/admin/previews", IAM: true},
		Route{Method: "GET", Path: "/admin/previews/{template+}", IAM: true}, // names hold "/"
		// The reviewer directory (R-REVIEWERS-4).
		Route{Method: "GET", Path: "/admin/directory", IAM: true},
		Route{Method: "PUT", Path: "/admin/directory/{source}/{username}", IAM: true},
		Route{Method: "DELETE", Path: "/admin/directory/{source}/{username}", IAM: true},
		// The team's learnings (R-LEARN-2).
		Route{Method: "GET", Path: "/admin/learnings", IAM: true},
		Route{Method: "POST", Path: "/admin/learnings/{id}/accept", IAM: true},
		Route{Method: "POST", Path: "/admin/learnings/{id}/reject", IAM: true},
	)
}
