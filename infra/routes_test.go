package main

import (
	"go/ast"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// apiRoutesPath is the root module's route table (api.Routes()).
var apiRoutesPath = filepath.Join("..", "internal", "api", "routes.go")

// routeKey is how a route is compared here: "METHOD /path AUTH", AUTH
// being API Gateway's AuthorizationType (AWS_IAM or NONE).
func routeKey(method, path string, iam bool) string {
	auth := "NONE"
	if iam {
		auth = "AWS_IAM"
	}
	return method + " " + path + " " + auth
}

// apiRoutes parses api.Routes() from internal/api/routes.go: infra is
// its own module and does not import the root's packages (see names.go),
// so the table is read as the literal it is written as.
func apiRoutes(t *testing.T) []string {
	t.Helper()
	consts := stringConsts(t, apiRoutesPath)
	var out []string
	for _, list := range returnedLiterals(t, apiRoutesPath, "Routes") {
		for _, e := range list.Elts {
			fields := map[string]string{}
			cl, ok := e.(*ast.CompositeLit)
			if !ok {
				t.Fatalf("%s: Routes lists a %T, not a Route literal", apiRoutesPath, e)
			}
			for _, el := range cl.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					t.Fatalf("%s: a Route literal without field names", apiRoutesPath)
				}
				k := kv.Key.(*ast.Ident).Name
				switch v := kv.Value.(type) {
				case *ast.BasicLit:
					fields[k], _ = strconv.Unquote(v.Value)
				case *ast.Ident:
					c, ok := consts[v.Name]
					if !ok {
						t.Fatalf("%s: %s: %s is not a string constant of that file", apiRoutesPath, k, v.Name)
					}
					fields[k] = c
				default:
					t.Fatalf("%s: %s is a %T, not a literal or constant", apiRoutesPath, k, v)
				}
			}
			if fields["Method"] == "" || fields["Path"] == "" || (fields["Auth"] != consts["AuthIAM"] && fields["Auth"] != consts["AuthNone"]) {
				t.Fatalf("%s: route %v: want a Method, a Path and an Auth", apiRoutesPath, fields)
			}
			out = append(out, routeKey(fields["Method"], fields["Path"], fields["Auth"] == consts["AuthIAM"]))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no routes found in Routes()", apiRoutesPath)
	}
	sort.Strings(out)
	return out
}

// cdkRoutes are the synthesized stack's AWS::ApiGatewayV2::Route resources.
func cdkRoutes(t *testing.T) []string {
	var out []string
	for _, r := range synth(t).resources("AWS::ApiGatewayV2::Route") {
		method, path, _ := strings.Cut(render(props(r)["RouteKey"]), " ")
		out = append(out, routeKey(method, path, render(props(r)["AuthorizationType"]) == "AWS_IAM"))
	}
	sort.Strings(out)
	return out
}

// samRoutes are template.yaml's HttpApi events, with the functions they
// invoke.
func samRoutes(t *testing.T) (routes []string, fns map[string]bool) {
	fns = map[string]bool{}
	for id, r := range resourcesOf(loadSAM(t)) {
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		events, _ := get(props(r), "Events").(map[string]any)
		for _, ev := range events {
			if get(ev, "Type") != "HttpApi" {
				continue
			}
			p := get(ev, "Properties")
			routes = append(routes, routeKey(render(get(p, "Method")), render(get(p, "Path")), get(p, "Auth", "Authorizer") == "AWS_IAM"))
			fns[id] = true
		}
	}
	sort.Strings(routes)
	return routes, fns
}

// TestRoutesDeployed: the CDK stack and template.yaml deploy exactly the
// routes intake serves (api.Routes(), which the root module's
// TestRoutes_TableIsWhatHandleServes holds to the router), with IAM
// authorization on exactly the /admin/* routes; infra's own list is that
// table too. A route served but not deployed answers API Gateway's 404 on
// AWS; a route deployed but not served is intake's (R-DEPLOY-1).
func TestRoutesDeployed(t *testing.T) {
	want := apiRoutes(t)
	var infra []string
	for _, r := range Routes {
		infra = append(infra, routeKey(r.Method, r.Path, r.IAM))
	}
	sort.Strings(infra)
	sam, fns := samRoutes(t)
	for name, got := range map[string][]string{"infra's Routes (stack.go)": infra, "the CDK stack": cdkRoutes(t), "template.yaml": sam} {
		for _, r := range want {
			if !slices.Contains(got, r) {
				t.Errorf("%s lacks %s, which intake serves (api.Routes())", name, r)
			}
		}
		for i, r := range got {
			if !slices.Contains(want, r) {
				t.Errorf("%s has %s, which api.Routes() does not list", name, r)
			}
			if i > 0 && got[i-1] == r {
				t.Errorf("%s has %s twice", name, r)
			}
			_, path, _ := strings.Cut(r, " ")
			if admin, iam := strings.HasPrefix(path, "/admin/"), strings.HasSuffix(r, " AWS_IAM"); admin != iam {
				t.Errorf("%s: %s: IAM authorization is for the /admin/* routes, and only them", name, r)
			}
		}
	}
	if len(fns) != 1 || !fns[FunctionID(FnIntake)] {
		t.Errorf("template.yaml routes to %v, want %s only", sortedKeys(fns), FunctionID(FnIntake))
	}
}
