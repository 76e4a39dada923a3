package devstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// TestSAMEnv_CoversTheTemplate: for `sam local invoke` against the stack of
// make run, every variable template.yaml gives a function as a resource
// reference (which SAM CLI cannot resolve locally) is in the env-vars
// file with a local value, and the endpoints the template sets with
// LocalStackHost are make run's ports.
func TestSAMEnv_CoversTheTemplate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConfigurationSet = "criticizer-local"
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	env, err := SAMEnv(tpl, PlaceholderResources("criticizer"), cfg, "host.docker.internal", "http://127.0.0.1:3000")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range deploy.Describe().Names() {
		id := deploy.FunctionID(fn)
		vars := cfn.YAMLPath(root, "Resources", id, "Properties", "Environment", "Variables")
		if vars == nil {
			t.Errorf("template.yaml: %s has no environment", id)
			continue
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			name, v := vars.Content[i].Value, vars.Content[i+1]
			if v.Tag != "!Ref" && v.Tag != "!GetAtt" && v.Tag != "!Join" && v.Tag != "!Sub" {
				continue // a literal, a parameter's !Ref is covered too; !If is parameter-driven
			}
			if v.Tag == "!Ref" && cfn.YAMLPath(cfn.YAMLPath(root, "Parameters"), v.Value) != nil {
				continue // a parameter: SAM resolves its default
			}
			got, ok := env[id][name]
			if !ok {
				t.Errorf("%s: %s (%s %s) is not in the env-vars file", id, name, v.Tag, v.Value)
				continue
			}
			if strings.Contains(got, "127.0.0.1") {
				t.Errorf("%s: %s = %s: the container cannot reach 127.0.0.1", id, name, got)
			}
		}
	}
	globals := cfn.YAMLPath(root, "Globals", "Function", "Environment", "Variables")
	for name, port := range map[string]int{"AWS_ENDPOINT_URL_DYNAMODB": RunPorts.DynamoDB, "AWS_ENDPOINT_URL_SQS": RunPorts.SQS,
		"AWS_ENDPOINT_URL_S3": RunPorts.SQS, "AWS_ENDPOINT_URL_SESV2": RunPorts.SES} {
		v := cfn.YAMLPath(globals, name)
		if v == nil || v.Tag != "!If" || len(v.Content) != 3 || !strings.HasSuffix(v.Content[1].Value, fmt.Sprintf(":%d", port)) {
			t.Errorf("Globals %s: want !If [Local, http://${LocalStackHost}:%d, NoValue]", name, port)
		}
	}
}
