// Command devstack runs Criticizer locally with no AWS account.
//
//	devstack run              emulators + tables/queues + the functions, serving HTTP (make run)
//	devstack exec -- CMD ...  emulators on the test ports, CMD run with their endpoints in its
//	                          environment, then everything stopped (make test)
//
// The emulators come from internal/devstack/_npm (npm ci, done by `make deps`).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/webhook"
	"github.com/criticizer/criticizer/internal/wire"
)

// LocalWebhookSecret is the secret `make run` gives the generic source
// when CRITICIZER_WEBHOOK_SECRET is unset. It is for the local stack only.
const LocalWebhookSecret = devstack.LocalGenericSecret

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = run(ctx, os.Args[2:])
	case "invoke":
		err = invoke(ctx, os.Args[2:])
	case "sam-env":
		err = samEnv(ctx, os.Args[2:])
	case "reply":
		err = replyCmd(ctx, os.Args[2:])
	case "exec":
		var code int
		code, err = execCmd(ctx, os.Args[2:])
		if err == nil {
			stop()
			os.Exit(code)
		}
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  devstack run [-npm DIR] [-logs DIR]          start the local stack and serve on $PORT (default 3000)
  devstack exec [-npm DIR] [-logs DIR] -- CMD  start the emulators on the test ports, run CMD, stop them
  devstack invoke FUNCTION EVENT.json          invoke a function's handler with a sample event against
                                               the running "make run" stack (what sam local invoke does)
  devstack sam-env [-host H]                   print the --env-vars file for sam local invoke against the
                                               running "make run" stack (H: its host seen from SAM's
                                               container, default host.docker.internal)
  devstack reply [-n N] RECIPIENT 'TEXT'       reply as RECIPIENT to the latest email they got from the
                                               running "make run" stack (-n N: the Nth latest), through
                                               its SMTP listener, as a mail client would
`)
}

type common struct{ npm, logs string }

func flags(name string, args []string) (common, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c common
	fs.StringVar(&c.npm, "npm", "internal/devstack/_npm", "folder with the emulators' node_modules")
	fs.StringVar(&c.logs, "logs", ".devstack/logs", "folder for the emulators' logs")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	return c, fs.Args(), nil
}

func run(ctx context.Context, args []string) error {
	c, _, err := flags("run", args)
	if err != nil {
		return err
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	log := obs.NewLogger(os.Stderr, os.Getenv("LOG_LEVEL"))
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		return fmt.Errorf("API port: %w (set PORT to use another)", err)
	}
	defer ln.Close()
	fmt.Println("starting DynamoDB Local, fauxqs (SQS, S3) and aws-ses-v2-local ...")
	svc, err := devstack.StartServices(ctx, c.npm, c.logs, devstack.RunPorts)
	if err != nil {
		return err
	}
	defer svc.Stop()
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Endpoints = svc.Ports.Endpoints()
	localSecrets(&cfg)
	cfg.SESStoreURL = svc.Ports.SESURL()
	cfg.AllowPrivateDiffs, cfg.DiffURLPorts = true, []int{0}
	// Signed webhooks (R-CHANNEL-8): unless the environment names its
	// own destinations, each version's posts go to the local receiver,
	// which verifies them and lists them at GET /local/webhooks (served
	// beside the API, devstack.Functions.Hooks).
	if cfg.OutboundWebhooks == "" {
		cfg.OutboundWebhooks = fmt.Sprintf(`[{"name":"local","url":"http://127.0.0.1:%s%s","secret":%q}]`,
			port, devstack.LocalHookPath, devstack.LocalHookSecret)
		cfg.AllowPrivateWebhooks = true
	}
	if cfg.InboundDomain == "" {
		// Replies by email (R-REPLY-1): the local stack receives them on
		// its SMTP listener for this domain.
		cfg.InboundDomain = LocalInboundDomain
	}
	if os.Getenv(config.EnvCollapseWindow) == "" {
		// A first review's email arrives within seconds locally; set the
		// variable to try the collapse window (R-QUIET-3).
		cfg.LLM.CollapseWindow = 0
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://127.0.0.1:" + port
	}
	clients, err := devstack.NewClients(ctx, cfg.Endpoints)
	if err != nil {
		return err
	}
	res, err := devstack.Provision(ctx, clients, "criticizer")
	if err != nil {
		return err
	}
	res.Apply(&cfg)
	smtpPort := os.Getenv("SMTP_PORT")
	if smtpPort == "" {
		smtpPort = strconv.Itoa(LocalSMTPPort)
	}
	fns, err := devstack.StartFunctions(ctx, cfg, res, log, devstack.FunctionOptions{Pollers: 2, SweepEvery: time.Minute,
		SMTP: "127.0.0.1:" + smtpPort})
	if err != nil {
		return fmt.Errorf("%w (set SMTP_PORT to use another)", err)
	}
	defer fns.Stop()
	srv := &http.Server{Handler: fns.API, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	printWelcome(port, svc.Ports, cfg, res, fns.Inbound.Addr())
	<-ctx.Done()
	fmt.Println("\nstopping ...")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// localSecrets gives each webhook source its documented local secret when
// none is set, so each sample in events/ is accepted by `make run`: one
// per source, as a deployment must have (R-PRIVACY-4).
func localSecrets(cfg *config.Config) {
	for _, v := range []struct {
		field *string
		local string
	}{
		{&cfg.WebhookSecret, LocalWebhookSecret}, {&cfg.GitHub.WebhookSecret, devstack.LocalGitHubSecret},
		{&cfg.GitLab.WebhookToken, devstack.LocalGitLabToken}, {&cfg.Gerrit.WebhookToken, devstack.LocalGerritToken},
	} {
		if *v.field == "" {
			*v.field = v.local
		}
	}
}

func printWelcome(port string, p devstack.Ports, cfg config.Config, res devstack.Resources, smtpAddr string) {
	sample := filepath.Join("events", "generic-webhook.json")
	sig := "<sha256=HMAC of the body>"
	if b, err := os.ReadFile(sample); err == nil {
		sig = webhook.Sign([]byte(cfg.WebhookSecret), b)
	}
	fmt.Print(welcome(port, p, cfg, res, smtpAddr, sample, sig))
}

// welcome is what `make run` prints once it is up; the README shows it
// (TestWelcome_AsTheREADMEShowsIt).
func welcome(port string, p devstack.Ports, cfg config.Config, res devstack.Resources, smtpAddr, sample, sig string) string {
	return fmt.Sprintf(`
Criticizer is running locally.

  API          http://127.0.0.1:%[1]s   (POST /webhooks/generic; the answer links the job status; GET /healthz)
  Mailbox      %[2]s             (sent mail; JSON at %[2]s/store)
  DynamoDB     http://127.0.0.1:%[3]d   tables %[4]s, %[5]s
  SQS + S3     http://127.0.0.1:%[6]d   queues criticizer-{fetch,llm,notify,feedback,reply}[-dlq], bucket %[7]s
  SMTP         %[11]s          replies to the emails, reply+<key>@%[12]s (SES receiving, played locally)
  Webhooks     http://127.0.0.1:%[1]s/local/webhooks   (signed webhook messages that arrived, verified; JSON)

Post the sample webhook (secret %[8]q):

  curl -sS -X POST http://127.0.0.1:%[1]s/webhooks/generic \
    -H 'Content-Type: application/json' \
    -H 'Idempotency-Key: sample-1' \
    -H 'X-Criticizer-Signature: %[9]s' \
    --data-binary @%[10]s

Then open %[2]s to read the email. Reply to it as its reviewer would
(every SES verdict is PASS locally; the confirmation arrives in the mailbox):

  go run ./cmd/devstack reply reviewer1@example.com 'wrong 1'
  swaks --server %[11]s --from reviewer1@example.com --to '<the email's Reply-To>' --body 'wrong 1'

Ctrl-C stops everything.
`, port, p.SESURL(), p.DynamoDB, res.JobsTable, res.DeliveriesTable, p.SQS, res.PayloadBucket, cfg.WebhookSecret, sig, sample, smtpAddr, cfg.InboundDomain)
}

// invoke runs one function's handler with an event file against the stack
// of `make run`, through the Lambda runtime's own handler wrapper, and
// prints the response.
func invoke(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("invoke: want FUNCTION EVENT.json (functions: %v)", deploy.Describe().Names())
	}
	payload, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	cfg, res, err := runningStack(ctx)
	if err != nil {
		return err
	}
	localSecrets(&cfg)
	if cfg.UnsubscribeKey == "" {
		cfg.UnsubscribeKey = devstack.LocalUnsubscribeKey
	}
	if cfg.InboundDomain == "" {
		cfg.InboundDomain = LocalInboundDomain
	}
	h, err := devstack.Handler(ctx, args[0], cfg, res, obs.NewLogger(os.Stderr, "info"), wire.Options{})
	if err != nil {
		return err
	}
	out, err := lambda.NewHandler(h).Invoke(ctx, payload)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// runningStack is the configuration of the running `make run` stack: its
// endpoints and the names it provisioned.
func runningStack(ctx context.Context) (config.Config, devstack.Resources, error) {
	var res devstack.Resources
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return cfg, res, err
	}
	cfg.Endpoints = devstack.RunPorts.Endpoints()
	clients, err := devstack.NewClients(ctx, cfg.Endpoints)
	if err != nil {
		return cfg, res, err
	}
	res, err = devstack.Provision(ctx, clients, "criticizer")
	if err != nil {
		return cfg, res, fmt.Errorf("is `make run` up? %w", err)
	}
	res.Apply(&cfg)
	return cfg, res, nil
}

// samEnv prints the env-vars file of `sam local invoke` for the running
// `make run` stack (make invoke-<fn> SAM=1).
func samEnv(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sam-env", flag.ContinueOnError)
	host := fs.String("host", "host.docker.internal", "the local stack's host as SAM's container sees it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, res, err := runningStack(ctx)
	if err != nil {
		return err
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	tpl, err := devstack.DeployedTemplate()
	if err != nil {
		return err
	}
	env, err := devstack.SAMEnv(tpl, res, cfg, *host, "http://127.0.0.1:"+port)
	if err != nil {
		return err
	}
	return enc.Encode(env)
}

// execCmd starts the emulators on the test ports, runs the command with
// their endpoints in its environment, and stops them, whatever the command
// did.
func execCmd(ctx context.Context, args []string) (int, error) {
	c, rest, err := flags("exec", args)
	if err != nil {
		return 0, err
	}
	if len(rest) == 0 {
		return 0, errors.New("exec: no command given")
	}
	ports := devstack.TestPorts
	lock, owned, err := devstack.LockPorts(ports)
	if err != nil {
		return 0, err
	}
	defer lock.Unlock()
	if !owned || !ports.Free() {
		// Another test run holds the usual ports: take free ones.
		if ports, err = devstack.FreePorts(); err != nil {
			return 0, err
		}
	}
	svc, err := devstack.StartServices(ctx, c.npm, c.logs, ports)
	if err != nil {
		return 0, err
	}
	defer svc.Stop()
	ep := svc.Ports.Endpoints()
	run := make([]byte, 4)
	_, _ = rand.Read(run)
	cmd := exec.CommandContext(ctx, rest[0], rest[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL_DYNAMODB="+ep.DynamoDB, "AWS_ENDPOINT_URL_SQS="+ep.SQS,
		"AWS_ENDPOINT_URL_S3="+ep.S3, "AWS_ENDPOINT_URL_SESV2="+ep.SES,
		"CRITICIZER_TEST_SES_URL="+svc.Ports.SESURL(), "CRITICIZER_TEST_STACK=1",
		"CRITICIZER_TEST_FAUXQS_URL="+svc.FauxqsURL,
		"CRITICIZER_TEST_RUN="+hex.EncodeToString(run),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
	)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	slog.Debug("exec done")
	return 0, nil
}
