package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
)

// noAWS points every AWS setting at nothing, so a command that tried to
// reach AWS would fail (and, with no credentials, fail loudly).
func noAWS(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "criticizer-test-no-such-profile")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Help and argument errors are answered without touching AWS: an operator
// can read the help on a laptop without credentials.
func TestHelpAndUsage_NeedNoAWS(t *testing.T) {
	noAWS(t)
	for _, args := range [][]string{nil, {"help"}, {"-h"}, {"--help"}, {"dlq", "replay", "-h"}, {"deliveries", "requeue", "--help"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		if !strings.Contains(out.String(), "criticizer dlq list") || !strings.Contains(out.String(), "deliveries held") {
			t.Errorf("%q: not the help:\n%s", args, out.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "frobnicate"}, "unknown command"},
		{[]string{"dlq", "replay", "x"}, "note"},
		{[]string{"dlq", "replay"}, "give an item id"},
		{[]string{"dlq", "list", "--stage", "review"}, "--stage must be"},
		{[]string{"jobs", "show"}, "give a job id or --changelist"},
		{[]string{"jobs", "show", "j1", "--changelist", "a#1"}, "give a job id or --changelist"},
		{[]string{"deliveries", "resolve", "d1"}, "note"},
		{[]string{"--bogus"}, "flag provided but not defined"},
	} {
		err := run(context.Background(), tc.args, &bytes.Buffer{})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want a usage error naming %q", tc.args, err, tc.want)
		}
	}
}

type fakeStacks struct {
	name    string
	outputs map[string]string
	calls   int
}

func (f *fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	f.calls++
	if aws.ToString(in.StackName) != f.name {
		return nil, errors.New("ValidationError: Stack with id " + aws.ToString(in.StackName) + " does not exist")
	}
	var st cftypes.Stack
	for k, v := range f.outputs {
		st.Outputs = append(st.Outputs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{st}}, nil
}

func deployedOutputs() map[string]string {
	o := map[string]string{
		config.OutputJobsTable:        "Criticizer-JobsTable-1X2Y",
		config.OutputDeliveriesTable:  "Criticizer-DeliveriesTable-3Z",
		config.OutputConfigurationSet: "criticizer-events",
	}
	for _, s := range job.Stages() {
		o[config.OutputQueueURL(s)] = "https://sqs/Criticizer-" + string(s)
		o[config.OutputDLQURL(s)] = "https://sqs/Criticizer-" + string(s) + "-dlq"
	}
	return o
}

// A default `cdk deploy` generates the table and queue names; the CLI
// finds them in the stack's outputs, and a variable in the environment
// wins over an output.
func TestStackNames_FromOutputs_EnvironmentWins(t *testing.T) {
	cf := &fakeStacks{name: DefaultStack, outputs: deployedOutputs()}
	env := map[string]string{config.EnvDeliveriesTable: "mine"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := stackNames(context.Background(), cf, DefaultStack, getenv, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.JobsTable != "Criticizer-JobsTable-1X2Y" || cfg.DeliveriesTable != "mine" || cfg.ConfigurationSet != "criticizer-events" {
		t.Errorf("tables %q %q, configuration set %q", cfg.JobsTable, cfg.DeliveriesTable, cfg.ConfigurationSet)
	}
	if got := cfg.Queues.DLQ[job.StageLLM]; got != "https://sqs/Criticizer-llm-dlq" {
		t.Errorf("llm DLQ %q", got)
	}
	if got := cfg.Queues.Queue[job.StageNotify]; got != "https://sqs/Criticizer-notify" {
		t.Errorf("notify queue %q", got)
	}

	// Another stack name that does not exist: the error says how to
	// point the CLI elsewhere.
	err = stackNames(context.Background(), cf, "Other", getenv, &cfg)
	if err == nil || !strings.Contains(err.Error(), "--stack") {
		t.Errorf("missing stack: %v", err)
	}
	// An output missing: the error names the variable to set instead.
	delete(cf.outputs, config.OutputDLQURL(job.StageFetch))
	err = stackNames(context.Background(), cf, DefaultStack, getenv, &cfg)
	if err == nil || !strings.Contains(err.Error(), config.DLQEnv(job.StageFetch)) {
		t.Errorf("missing output: %v", err)
	}
}

// Everything set in the environment: CloudFormation is not asked.
func TestStackNames_AllInEnvironment_NoLookup(t *testing.T) {
	env := map[string]string{config.EnvJobsTable: "j", config.EnvDeliveriesTable: "d"}
	for _, s := range job.Stages() {
		env[config.QueueEnv(s)], env[config.DLQEnv(s)] = "q", "dq"
	}
	getenv := func(k string) string { return env[k] }
	cfg, _ := config.FromEnv(getenv)
	cf := &fakeStacks{}
	if err := stackNames(context.Background(), cf, DefaultStack, getenv, &cfg); err != nil || cf.calls != 0 {
		t.Errorf("err %v, %d DescribeStacks calls", err, cf.calls)
	}
}

// The deployment has every output the CLI reads (both templates are
// rendered from its description, internal/deploy).
func TestDeployment_HasTheOutputsTheCLIReads(t *testing.T) {
	outputs := map[string]bool{}
	for _, o := range deploy.Describe().Outputs {
		outputs[o.Name] = true
	}
	for k := range deployedOutputs() {
		if !outputs[k] {
			t.Errorf("the deployment has no output %s", k)
		}
	}
}
