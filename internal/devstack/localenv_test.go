package devstack

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
)

// sharedSettings is a local stack's settings: every secret set, a
// setting changed from its default.
func sharedSettings(t *testing.T, res Resources) config.Config {
	t.Helper()
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	res.Apply(&cfg)
	cfg.WebhookSecret, cfg.UnsubscribeKey, cfg.AdminAPIKey = LocalGenericSecret, LocalUnsubscribeKey, strings.Repeat("a", 32)
	cfg.Endpoints.DynamoDB = "http://127.0.0.1:1"
	cfg.Notify.MaxSendRate = 3
	return cfg
}

// dropVariable removes variable name from function id's environment in t.
func dropVariable(t *testing.T, tpl *Template, id, name string) {
	t.Helper()
	vars := tpl.Property(id, "Environment", "Variables")
	for i := 0; vars != nil && i+1 < len(vars.Content); i += 2 {
		if vars.Content[i].Value == name {
			vars.Content = append(vars.Content[:i], vars.Content[i+2:]...)
			return
		}
	}
	t.Fatalf("%s has no variable %s", id, name)
}

// Each function gets what its deployed environment gives it: its own
// tables and queues, the secrets its CRITICIZER_SECRETS_ARN names, the
// local stack's settings; and nothing the template gives only others.
// Rules: R-DEPLOY-4.
func TestFunctionConfigs_EachFunctionItsOwnEnvironment(t *testing.T) {
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	res := PlaceholderResources("envtest")
	fc, err := FunctionConfigs(tpl, res, sharedSettings(t, res))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fn, what, got, want string
	}{
		{deploy.FnNotify, "deliveries table", fc[deploy.FnNotify].DeliveriesTable, res.DeliveriesTable},
		{deploy.FnNotify, "unsubscribe key (its secret)", fc[deploy.FnNotify].UnsubscribeKey, LocalUnsubscribeKey},
		{deploy.FnNotify, "webhook secret (intake's)", fc[deploy.FnNotify].WebhookSecret, ""},
		{deploy.FnIntake, "webhook secret (its secret)", fc[deploy.FnIntake].WebhookSecret, LocalGenericSecret},
		{deploy.FnIntake, "admin key (its secret)", fc[deploy.FnIntake].AdminAPIKey, strings.Repeat("a", 32)},
		{deploy.FnReply, "unsubscribe key (its secret)", fc[deploy.FnReply].UnsubscribeKey, LocalUnsubscribeKey},
		{deploy.FnFetch, "unsubscribe key (not its secret)", fc[deploy.FnFetch].UnsubscribeKey, ""},
		// Not in llm's environment: the name a function falls back to.
		{deploy.FnLLM, "deliveries table (not given)", fc[deploy.FnLLM].DeliveriesTable, "criticizer-deliveries"},
		{deploy.FnLLM, "notify queue", fc[deploy.FnLLM].Queues.Queue[job.StageNotify], res.Queues.Queue[job.StageNotify]},
		{deploy.FnLLM, "fetch queue (not given)", fc[deploy.FnLLM].Queues.Queue[job.StageFetch], ""},
		{deploy.FnSweeper, "DynamoDB endpoint (the local stack's)", fc[deploy.FnSweeper].Endpoints.DynamoDB, "http://127.0.0.1:1"},
		{deploy.FnNotify, "public URL (the API's)", fc[deploy.FnNotify].PublicURL, LocalPublicURL},
		{deploy.FnNotify, "secrets ARN (applied locally)", fc[deploy.FnNotify].SecretsARN, ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.fn, tc.what, tc.got, tc.want)
		}
	}
	if got := fc[deploy.FnNotify].Notify.MaxSendRate; got != 3 {
		t.Errorf("notify: the local stack's send rate is not laid over the template's: %v", got)
	}
}

// A variable the template forgets for one function is missing for it
// locally too: reply without the unsubscribe key's secret fails to start
// under the local stack with the error it fails with deployed, and
// notify without its deliveries table is given the fallback name, not
// the local table.
// Rules: R-DEPLOY-4.
func TestStartFunctions_AVariableTheTemplateForgetsFailsLocally(t *testing.T) {
	res := PlaceholderResources("envtest")
	cfg := sharedSettings(t, res)
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	dropVariable(t, tpl, deploy.FunctionID(deploy.FnNotify), config.EnvDeliveriesTable)
	fc, err := FunctionConfigs(tpl, res, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := fc[deploy.FnNotify].DeliveriesTable; got == res.DeliveriesTable {
		t.Errorf("notify has the local deliveries table %q though the template gives it none", got)
	}

	tpl, err = DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	dropVariable(t, tpl, deploy.FunctionID(deploy.FnReply), config.EnvSecretsARN)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fns, err := StartFunctions(context.Background(), cfg, res, log, FunctionOptions{Template: tpl})
	if err == nil {
		fns.Stop()
		t.Fatal("the functions started though reply has no unsubscribe key")
	}
	if want := "reply: the reply function needs " + config.EnvUnsubscribeKey; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}

// A bootstrap (make lambdabench, RIE) gets its environment as variables:
// reply names the unsubscribe key's secret, which the local Secrets
// Manager holds with the key (what `make bench` lacked: "the reply
// function needs CRITICIZER_UNSUBSCRIBE_KEY"); fetch names only its own
// secret, and no function is given another's variables.
// Rules: R-DEPLOY-4.
func TestBootstrapEnvs_ReplyReadsItsKeyFromItsSecret(t *testing.T) {
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	sm, err := StartSecretsManager()
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	res := PlaceholderResources("bootenv")
	envs, err := BootstrapEnvs(tpl, res, sharedSettings(t, res), sm)
	if err != nil {
		t.Fatal(err)
	}
	reply := envs[deploy.FnReply]
	arn := reply[config.EnvSecretsARN]
	if arn != localSecretARN(deploy.IDUnsubscribeSecret) {
		t.Fatalf("reply's %s = %q, want the unsubscribe key's secret", config.EnvSecretsARN, arn)
	}
	if v, _ := sm.Value(arn); !strings.Contains(v, `"`+config.EnvUnsubscribeKey+`":"`+LocalUnsubscribeKey+`"`) {
		t.Errorf("the secret reply reads holds %s, want the unsubscribe key", v)
	}
	if reply["AWS_ENDPOINT_URL_SECRETS_MANAGER"] != sm.URL || reply[config.QueueEnv(job.StageNotify)] == "" {
		t.Errorf("reply's environment %v lacks the Secrets Manager's endpoint or its notify queue", reply)
	}
	if got := envs[deploy.FnFetch][config.EnvSecretsARN]; got != localSecretARN(deploy.IDFetchSecret) {
		t.Errorf("fetch's %s = %q, want its own secret only", config.EnvSecretsARN, got)
	}
	if _, ok := envs[deploy.FnLLM][config.EnvDeliveriesTable]; ok {
		t.Errorf("llm is given %s, which its deployment does not give it", config.EnvDeliveriesTable)
	}
}

// A deployment without a channel other than email gives no function
// CRITICIZER_CHANNELS, so no stage announces (the calls of an email-only
// deployment); with webhook destinations or the code host's status, the
// template's parameters give it to fetch, llm and notify, and to no
// other function.
// Rules: R-CHANNEL-15, R-DEPLOY-4.
func TestFunctionConfigs_ChannelsOnlyWithAChannel(t *testing.T) {
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	res := PlaceholderResources("envtest")
	announcing := map[string]bool{deploy.FnFetch: true, deploy.FnLLM: true, deploy.FnNotify: true}
	for _, tc := range []struct {
		name string
		set  func(*config.Config)
		on   bool
	}{
		{"email only", func(*config.Config) {}, false},
		{"webhooks", func(c *config.Config) { c.OutboundWebhooks = `[]` }, true},
		{"code host status", func(c *config.Config) { c.Notify.CodeHost.Status = true }, true},
	} {
		cfg := sharedSettings(t, res)
		tc.set(&cfg)
		fc, err := FunctionConfigs(tpl, res, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range deploy.Describe().Names() {
			if want := tc.on && announcing[fn]; fc[fn].Channels != want {
				t.Errorf("%s: %s has %s %v, want %v", tc.name, fn, config.EnvChannels, fc[fn].Channels, want)
			}
		}
	}
}

// Each secret a function reads holds only settings it uses: the webhook
// destinations and the code host's credentials reach notify (its own
// NotifySecret) and, for the credentials, fetch (the FetchSecret); intake
// and reply, which read the unsubscribe key beside notify, get the key
// and nothing of the channels'.
// Rules: R-DEPLOY-5, R-DEPLOY-4.
func TestFunctionConfigs_ChannelSecretsOnlyToTheirReaders(t *testing.T) {
	tpl, err := DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	res := PlaceholderResources("envtest")
	cfg, err := sharedSettings(t, res).ApplySecrets(map[string]string{
		config.EnvOutboundWebhooks: `[]`, config.EnvGitHubToken: "ghp_" + strings.Repeat("x", 36),
		config.EnvGitLabToken: "glpat-" + strings.Repeat("x", 20), config.EnvGerritPassword: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	fc, err := FunctionConfigs(tpl, res, cfg)
	if err != nil {
		t.Fatal(err)
	}
	channelKeys := []string{config.EnvOutboundWebhooks, config.EnvGitHubToken, config.EnvGitLabToken, config.EnvGerritPassword}
	want := map[string][]string{
		deploy.FnNotify: channelKeys,
		deploy.FnFetch:  {config.EnvGitHubToken, config.EnvGitLabToken, config.EnvGerritPassword},
	}
	for _, fn := range deploy.Describe().Names() {
		held := fc[fn].Secrets()
		for _, k := range channelKeys {
			if _, got := held[k]; got != slices.Contains(want[fn], k) {
				t.Errorf("%s reads %s: %v, want %v", fn, k, got, !got)
			}
		}
	}
	for _, fn := range []string{deploy.FnIntake, deploy.FnNotify, deploy.FnReply} {
		if fc[fn].UnsubscribeKey != LocalUnsubscribeKey {
			t.Errorf("%s has no unsubscribe key", fn)
		}
	}
}
