package wire_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// wantServices are the AWS service clients each function calls: it may
// link those and no other (the Bedrock SDK only in llm, SES only in
// notify, S3 only where diffs are written or read, and in feedback,
// which quarantines what can never be evidence).
var wantServices = map[string][]string{
	"intake":   {"dynamodb", "s3", "secretsmanager", "sqs"},
	"fetch":    {"dynamodb", "s3", "secretsmanager", "sqs"},
	"llm":      {"bedrockruntime", "dynamodb", "s3", "secretsmanager", "sqs"},
	"notify":   {"dynamodb", "secretsmanager", "sesv2", "sqs"},
	"feedback": {"dynamodb", "s3", "sqs"},
	"sweeper":  {"dynamodb", "sqs"},
	"reply":    {"dynamodb", "s3", "secretsmanager", "sqs"},
}

var servicePkg = regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/([a-z0-9]+)$`)

// Each function links only the service packages it calls, and no local-
// stack code (R-WIRE-1), read from `go list -deps` of its main package.
// Rules: R-WIRE-1.
func TestEachFunctionLinksOnlyWhatItCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of six binaries")
	}
	for fn, want := range wantServices {
		// As make build builds them: the Lambda runtime without its RPC shim.
		cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "./"+filepath.Join("..", "..", "functions", fn))
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", fn, err, out)
		}
		var got []string
		tzdata := false
		for _, p := range strings.Fields(string(out)) {
			tzdata = tzdata || p == "time/tzdata"
			if m := servicePkg.FindStringSubmatch(p); m != nil {
				got = append(got, m[1])
			}
			// text/template (under html/template) calls methods by name
			// through reflection, which keeps every method of every
			// reachable type in the binary: megabytes of SDK operations.
			if p == "text/template" || strings.Contains(p, "/internal/devstack") || strings.Contains(p, "/internal/fault") || strings.Contains(p, "/internal/chaos") {
				t.Errorf("%s links %s", fn, p)
			}
		}
		// intake validates the preference page's time zones (R-PREF-1)
		// and carries the zone database: a runtime image need not.
		if fn == "intake" && !tzdata {
			t.Errorf("intake does not link time/tzdata")
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s links services %v, want %v", fn, got, want)
		}
	}
}
