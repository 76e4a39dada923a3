// Command criticizer is the operator's tool: dead-letter triage, replay and
// resolution (R-STAGE-5), deliveries held for reconciliation (R-RECON-2),
// job inspection, and the reviewer directory (R-REVIEWERS-4). Run
// `criticizer help`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack/ports"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/ops"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/termtext"
	"github.com/criticizer/criticizer/internal/vote"
)

const help = `criticizer — operate Criticizer's dead-letter queues and jobs.

Every stage (fetch, llm, notify) has a dead-letter queue (DLQ). A message lands
there when its failure is non-retryable or its 5 attempts are spent; the job
then shows status dead_lettered. Work through an item like this:

  1. Triage    criticizer dlq list [--stage S] [--class C]
               Groups the DLQs by stage and error class with counts, oldest and
               newest failure and sample ids. Then look at one item:
               criticizer dlq show <id>
               (the envelope: error_class, redacted last_stack, attempts, first
               and last failure; the job; each recipient's delivery row).
  2. Remediate by class:
               NETWORK_TIMEOUT, NETWORK_ERROR, UPSTREAM_5XX, RATE_LIMITED, UNKNOWN:
                 check the upstream recovered (status pages, quotas);
               SCHEMA_INVALID, NOT_FOUND: fix the source data or mapping;
               AUTH_DENIED, POLICY_REJECTED: rotate credentials, fix IAM, verify
                 the SES identity;
               RUNTIME_BUG: deploy the fix first.
  3. Replay    criticizer dlq replay <id> --note "<remediation evidence>"
               criticizer dlq replay --stage S [--class C] --note "..." [--rate N]
               Resumes at the failed stage; --from-start restarts at fetch (and
               fetches a diff_url again). A note is required and is recorded with
               the item. Delivery is idempotent: reviewers already mailed are not
               mailed again. --rate paces bulk replays (items per second, default 1).
               A replay that fails again with the same non-retryable class comes
               back marked escalated: hand it to engineering.
  4. Or close  criticizer dlq resolve <id> --note "why no replay is needed"
  5. Verify    criticizer jobs show <job_id> | --changelist X [--source generic]

Finding the deployment: by default the names are read from the outputs of
the CloudFormation stack "Criticizer" (the CDK app's default; --stack NAME or
CRITICIZER_STACK for another), with the usual AWS credentials and region
(AWS_PROFILE, AWS_REGION...). Variables set in the environment win over the
stack's outputs: CRITICIZER_JOBS_TABLE, CRITICIZER_DELIVERIES_TABLE,
CRITICIZER_SES_CONFIGURATION_SET, CRITICIZER_<STAGE>_QUEUE_URL and
CRITICIZER_<STAGE>_DLQ_URL. --local talks to the stack of "make run".

Global flags (before the command): --stack NAME  --local  --json
Help for a command: criticizer help, or any command with -h or --help;
neither needs AWS access.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		// Errors quote what was given and found (ids, usernames): escaped
		// like everything the CLI prints (R-TERM-1).
		fmt.Fprintln(termtext.Writer(os.Stderr), "criticizer:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (see criticizer help)" }

// DefaultStack is the CDK app's default stack name (infra/main.go).
const DefaultStack = "Criticizer"

type cli struct {
	out  io.Writer
	json bool
	// connect reaches the deployment; called by a command once its
	// arguments are valid, so help and argument errors need no AWS.
	connect func(context.Context) (*ops.Ops, error)
}

// command is one verb of the CLI.
type command struct {
	group, verb string
	run         func(c *cli, ctx context.Context, args []string) error
}

var commands = []command{
	{"dlq", "list", (*cli).dlqList},
	{"dlq", "show", (*cli).dlqShow},
	{"dlq", "replay", (*cli).dlqReplay},
	{"dlq", "resolve", (*cli).dlqResolve},
	{"jobs", "show", (*cli).jobsShow},
	{"deliveries", "held", (*cli).deliveriesHeld},
	{"deliveries", "show", (*cli).deliveriesShow},
	{"deliveries", "resolve", func(c *cli, ctx context.Context, args []string) error {
		return c.deliveriesSettle(ctx, "resolve", ops.VerdictSent, args)
	}},
	{"deliveries", "requeue", func(c *cli, ctx context.Context, args []string) error {
		return c.deliveriesSettle(ctx, "requeue", ops.VerdictRequeue, args)
	}},
	{"evidence", "show", (*cli).evidenceShow},
	{"directory", "list", (*cli).directoryList},
	{"directory", "set", (*cli).directorySet},
	{"directory", "remove", (*cli).directoryRemove},
	{"directory", "import", (*cli).directoryImport},
	{"learnings", "list", (*cli).learningsList},
	{"learnings", "accept", func(c *cli, ctx context.Context, args []string) error {
		return c.learningsDecide(ctx, "accept", vote.Accepted, args)
	}},
	{"learnings", "reject", func(c *cli, ctx context.Context, args []string) error {
		return c.learningsDecide(ctx, "reject", vote.Rejected, args)
	}},
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, out io.Writer) error {
	return dispatch(ctx, args, out, connect)
}

// dispatch is run with the way to reach the deployment given, so a test
// can run a command up to the point where it would reach AWS (the docs'
// commands, TestDocs_EveryCommandParses).
func dispatch(ctx context.Context, args []string, out io.Writer,
	reach func(ctx context.Context, local bool, stack string) (*ops.Ops, error)) error {
	// Everything the CLI prints goes through here: what others wrote
	// (usernames, titles, notes, error text) cannot steer the operator's
	// terminal (R-TERM-1).
	out = termtext.Writer(out)
	fs := flag.NewFlagSet("criticizer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	local := fs.Bool("local", false, "")
	asJSON := fs.Bool("json", false, "")
	stack := fs.String("stack", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(out, help+helpDeliveries+helpDirectory+helpLearnings)
			return nil
		}
		return usageError{err.Error()}
	}
	args = fs.Args()
	if len(args) == 0 || args[0] == "help" || wantsHelp(args) {
		fmt.Fprint(out, help+helpDeliveries+helpDirectory+helpLearnings)
		return nil
	}
	name := *stack
	if name == "" {
		name = os.Getenv("CRITICIZER_STACK")
	}
	if name == "" {
		name = DefaultStack
	}
	c := &cli{out: out, json: *asJSON, connect: func(ctx context.Context) (*ops.Ops, error) {
		return reach(ctx, *local, name)
	}}
	for _, cmd := range commands {
		if len(args) >= 2 && args[0] == cmd.group && args[1] == cmd.verb {
			return cmd.run(c, ctx, args[2:])
		}
	}
	return usageError{"unknown command " + strings.Join(args, " ")}
}

// connect builds Ops: for the local stack of "make run", or for the
// deployment the environment and the CloudFormation stack name.
func connect(ctx context.Context, local bool, stack string) (*ops.Ops, error) {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if local {
		cfg.Endpoints = ports.Run.Endpoints()
	}
	awsCfg, err := profile.Load(ctx, cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	sq, db := queue.NewSQS(awsCfg, cfg.Endpoints.SQS), dynamo.NewClient(awsCfg, cfg.Endpoints.DynamoDB)
	if local {
		if err := localNames(ctx, sq, &cfg); err != nil {
			return nil, err
		}
	} else if err := stackNames(ctx, cloudformation.NewFromConfig(awsCfg), stack, os.Getenv, &cfg); err != nil {
		return nil, err
	}
	return &ops.Ops{SQS: sq, Queues: cfg.Queues, Now: time.Now,
		Jobs:       dynamo.NewJobs(db, cfg.JobsTable, nil),
		Deliveries: dynamo.NewDeliveries(db, cfg.DeliveriesTable, nil),
		Evidence:   dynamo.NewEvidence(db, cfg.JobsTable, nil), ConfigurationSet: cfg.ConfigurationSet,
		Directory: dynamo.NewDirectory(db, cfg.JobsTable, nil),
		Learnings: dynamo.NewLearnings(db, cfg.JobsTable, nil), LearnAfter: cfg.LearnAfter,
		Margin: cfg.EvidenceMargin, Policy: cfg.UncertainSend}, nil
}

// localNames fills in the names of the local stack (make run provisions
// with the prefix "criticizer").
func localNames(ctx context.Context, sq *sqs.Client, cfg *config.Config) error {
	for _, s := range job.Stages() {
		for _, q := range []struct {
			m    map[job.Stage]string
			name string
		}{{cfg.Queues.Queue, "criticizer-" + string(s)}, {cfg.Queues.DLQ, "criticizer-" + string(s) + "-dlq"}} {
			if q.m[s] != "" {
				continue
			}
			out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
			if err != nil {
				return fmt.Errorf("find queue %s: is make run up? %w", q.name, err)
			}
			q.m[s] = aws.ToString(out.QueueUrl)
		}
	}
	return nil
}

// StackDescriber is the part of the CloudFormation client stackNames uses.
type StackDescriber interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// stackNames fills in, from the stack's outputs, every name the
// environment does not set. The output keys are the CDK app's
// and the SAM template's, named in config (OutputJobsTable, OutputQueueURL…).
func stackNames(ctx context.Context, cf StackDescriber, stack string, getenv func(string) string, cfg *config.Config) error {
	need := getenv(config.EnvJobsTable) == "" || getenv(config.EnvDeliveriesTable) == ""
	for _, s := range job.Stages() {
		need = need || getenv(config.QueueEnv(s)) == "" || getenv(config.DLQEnv(s)) == ""
	}
	if !need {
		return nil
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return fmt.Errorf("read the outputs of stack %s (--stack NAME, or set %s, %s and the queue URLs): %w",
			stack, config.EnvJobsTable, config.EnvDeliveriesTable, err)
	}
	if len(out.Stacks) == 0 {
		return fmt.Errorf("stack %s not found", stack)
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	set := func(dst *string, env, key string) error {
		if getenv(env) != "" {
			return nil
		}
		v, ok := outputs[key]
		if !ok {
			return fmt.Errorf("stack %s has no output %s: set %s", stack, key, env)
		}
		*dst = v
		return nil
	}
	if err := set(&cfg.JobsTable, config.EnvJobsTable, config.OutputJobsTable); err != nil {
		return err
	}
	if err := set(&cfg.DeliveriesTable, config.EnvDeliveriesTable, config.OutputDeliveriesTable); err != nil {
		return err
	}
	if v, ok := outputs[config.OutputConfigurationSet]; ok && getenv(config.EnvConfigurationSet) == "" {
		cfg.ConfigurationSet = v
	}
	for _, s := range job.Stages() {
		q, d := cfg.Queues.Queue[s], cfg.Queues.DLQ[s]
		if err := set(&q, config.QueueEnv(s), config.OutputQueueURL(s)); err != nil {
			return err
		}
		if err := set(&d, config.DLQEnv(s), config.OutputDLQURL(s)); err != nil {
			return err
		}
		cfg.Queues.Queue[s], cfg.Queues.DLQ[s] = q, d
	}
	return nil
}

func parse(name string, args []string, positional int, def func(*flag.FlagSet)) (*flag.FlagSet, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def(fs)
	// Allow the id before or after the flags.
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, nil, usageError{name + ": " + err.Error()}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	if len(pos) > positional {
		return nil, nil, usageError{name + ": unexpected " + strings.Join(pos[positional:], " ")}
	}
	return fs, pos, nil
}

func stageFlag(v string) (job.Stage, error) {
	if v == "" {
		return "", nil
	}
	s := job.Stage(v)
	if !s.Valid() {
		return "", usageError{"--stage must be fetch, llm or notify"}
	}
	return s, nil
}

func (c *cli) dlqList(ctx context.Context, args []string) error {
	var stage, class string
	if _, _, err := parse("dlq list", args, 0, func(fs *flag.FlagSet) {
		fs.StringVar(&stage, "stage", "", "")
		fs.StringVar(&class, "class", "", "")
	}); err != nil {
		return err
	}
	s, err := stageFlag(stage)
	if err != nil {
		return err
	}
	var stages []job.Stage
	if s != "" {
		stages = []job.Stage{s}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	items, err := o.Scan(ctx, stages...)
	if err != nil {
		return err
	}
	groups := ops.Triage(items, s, class)
	if c.json {
		return c.emit(groups)
	}
	if len(groups) == 0 {
		fmt.Fprintln(c.out, "The dead-letter queues are empty.")
		return nil
	}
	tw := tabwriter.NewWriter(c.out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tERROR CLASS\tCOUNT\tESCALATED\tOLDEST\tNEWEST\tSAMPLE IDS")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", g.Stage, g.ErrorClass, g.Count, g.Escalated,
			g.Oldest.Format(time.RFC3339), g.Newest.Format(time.RFC3339), strings.Join(g.Samples, " "))
	}
	return tw.Flush()
}

func (c *cli) dlqShow(ctx context.Context, args []string) error {
	_, pos, err := parse("dlq show", args, 1, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"dlq show: give the item id"}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	items, err := o.Scan(ctx)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Envelope.ID != pos[0] && it.MessageID != pos[0] {
			continue
		}
		view := map[string]any{"envelope": it.Envelope, "redriven_without_envelope": it.Raw}
		if it.Envelope.JobID != "" {
			if rep, err := o.Job(ctx, job.ID(it.Envelope.JobID)); err == nil {
				view["job"], view["recipients"], view["deliveries"] = rep.Job, rep.Recipients, rep.Deliveries
			} else {
				view["job_error"] = err.Error()
			}
		}
		return c.emitIndented(view)
	}
	return fmt.Errorf("%s: %w", pos[0], ops.ErrNotInDLQ)
}

func (c *cli) dlqReplay(ctx context.Context, args []string) error {
	var r ops.ReplayRequest
	var stage string
	_, pos, err := parse("dlq replay", args, 1, func(fs *flag.FlagSet) {
		fs.StringVar(&stage, "stage", "", "")
		fs.StringVar(&r.Class, "class", "", "")
		fs.StringVar(&r.Note, "note", "", "")
		fs.BoolVar(&r.FromStart, "from-start", false, "")
		fs.Float64Var(&r.Rate, "rate", 1, "")
	})
	if err != nil {
		return err
	}
	if r.Stage, err = stageFlag(stage); err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && r.Stage == "":
		r.ID = pos[0]
	case len(pos) == 0 && r.Stage != "":
	default:
		return usageError{"dlq replay: give an item id, or --stage (and optionally --class)"}
	}
	if strings.TrimSpace(r.Note) == "" {
		return usageError{"dlq replay: " + ops.ErrNoNote.Error()}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	results, err := o.Replay(ctx, r)
	if err != nil {
		return err
	}
	failed := 0
	for _, res := range results {
		if res.Err != nil {
			failed++
			fmt.Fprintf(c.out, "FAILED   %s (job %s): %v\n", res.EnvelopeID, res.JobID, res.Err)
			continue
		}
		fmt.Fprintf(c.out, "replayed %s (job %s) at stage %s\n", res.EnvelopeID, res.JobID, res.Stage)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d replays failed; they stay in the DLQ", failed, len(results))
	}
	return nil
}

func (c *cli) dlqResolve(ctx context.Context, args []string) error {
	var note string
	_, pos, err := parse("dlq resolve", args, 1, func(fs *flag.FlagSet) { fs.StringVar(&note, "note", "", "") })
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"dlq resolve: give the item id"}
	}
	if strings.TrimSpace(note) == "" {
		return usageError{"dlq resolve: " + ops.ErrNoNote.Error()}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	it, err := o.Resolve(ctx, pos[0], note)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "resolved %s (job %s, stage %s); the note is recorded\n", it.Envelope.ID, it.Envelope.JobID, it.Stage)
	return nil
}

func (c *cli) jobsShow(ctx context.Context, args []string) error {
	var changelist, source string
	_, pos, err := parse("jobs show", args, 1, func(fs *flag.FlagSet) {
		fs.StringVar(&changelist, "changelist", "", "")
		fs.StringVar(&source, "source", "generic", "")
	})
	if err != nil {
		return err
	}
	if (len(pos) == 1) == (changelist != "") {
		return usageError{"jobs show: give a job id or --changelist"}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	var rep ops.JobReport
	if len(pos) == 1 {
		rep, err = o.Job(ctx, job.ID(pos[0]))
	} else {
		rep, err = o.ChangelistJob(ctx, source, changelist)
	}
	if err != nil {
		return err
	}
	return c.emitIndented(rep)
}

func (c *cli) emit(v any) error { return json.NewEncoder(c.out).Encode(v) }

func (c *cli) emitIndented(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
