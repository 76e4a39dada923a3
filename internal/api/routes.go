package api

// Auth is the authorization API Gateway puts in front of a route.
type Auth string

const (
	// AuthNone: API Gateway lets every caller through; intake
	// authenticates (webhook signatures, signed unsubscribe and status
	// tokens) or the route is public by design (health).
	AuthNone Auth = "none"
	// AuthIAM: API Gateway's IAM authorizer (SigV4, an operator's
	// credentials), and inside intake the admin API key as well.
	AuthIAM Auth = "iam"
)

// Route is one route intake serves, as API Gateway names it: a method and
// a path where {name} matches one path segment and {name+} the rest.
type Route struct {
	Method string
	Path   string
	Auth   Auth
}

// Routes is every route Handle serves, and nothing else (R-DEPLOY-1). The
// CDK stack (infra/stack.go) and template.yaml deploy exactly these with
// this authorization: on AWS a route that is not deployed is API
// Gateway's 404, whatever intake would answer. Tests hold the three
// together (TestRoutes_TableIsWhatHandleServes here, TestRoutesDeployed
// in infra/, which parses this literal: keep it one composite literal of
// string literals and Auth constants).
//
// HEAD /unsubscribe/{token} is deployed too: mail scanners and link
// checkers probe links with HEAD, and a HEAD that API Gateway answered
// 404 would mark the unsubscribe link broken. The same holds for
// /vote/{token} (R-VOTE-1) and /preferences/{token} (R-PREF-2).
func Routes() []Route {
	return []Route{
		{Method: "POST", Path: "/webhooks/generic", Auth: AuthNone},
		{Method: "POST", Path: "/webhooks/github", Auth: AuthNone},
		{Method: "POST", Path: "/webhooks/gitlab", Auth: AuthNone},
		{Method: "POST", Path: "/webhooks/gerrit", Auth: AuthNone},
		{Method: "GET", Path: "/jobs/{id}", Auth: AuthNone},
		{Method: "GET", Path: "/healthz", Auth: AuthNone},
		{Method: "GET", Path: "/unsubscribe/{token}", Auth: AuthNone},
		{Method: "HEAD", Path: "/unsubscribe/{token}", Auth: AuthNone},
		{Method: "POST", Path: "/unsubscribe/{token}", Auth: AuthNone},
		{Method: "GET", Path: "/vote/{token}", Auth: AuthNone},
		{Method: "HEAD", Path: "/vote/{token}", Auth: AuthNone},
		{Method: "POST", Path: "/vote/{token}", Auth: AuthNone},
		{Method: "GET", Path: "/preferences/{token}", Auth: AuthNone},
		{Method: "HEAD", Path: "/preferences/{token}", Auth: AuthNone},
		{Method: "POST", Path: "/preferences/{token}", Auth: AuthNone},
		{Method: "POST", Path: "/admin/rerun", Auth: AuthIAM},
		{Method: "GET", Path: "/admin/previews", Auth: AuthIAM},
		{Method: "GET", Path: "/admin/previews/{template+}", Auth: AuthIAM}, // names hold "/"
		{Method: "GET", Path: "/admin/directory", Auth: AuthIAM},
		{Method: "PUT", Path: "/admin/directory/{source}/{username}", Auth: AuthIAM},
		{Method: "DELETE", Path: "/admin/directory/{source}/{username}", Auth: AuthIAM},
	}
}
