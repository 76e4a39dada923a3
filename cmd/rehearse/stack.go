package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
)

// newStackName names the CloudFormation stack the rehearsal plays: the
// queues' names in template.yaml are ${AWS::StackName}-<stage>, as
// Provision names them with this prefix. Random, and never "criticizer":
// then no table or bucket has the name a function falls back to when its
// variable is missing (criticizer-jobs…), as on AWS, where CloudFormation
// names them, and a variable the template forgets fails the rehearsal.
func newStackName() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "rehearse-" + hex.EncodeToString(b)
}

// inboundDomain is the rehearsal's InboundDomain parameter.
const inboundDomain = "replies.rehearse.test"

// stack is the local stack as the template's deployment: the emulators,
// the resources Provision created bound to the template's logical ids,
// the secrets CloudFormation would have created, in a local Secrets
// Manager.
type stack struct {
	name    string
	svc     *devstack.Services
	clients *devstack.Clients
	res     devstack.Resources
	sm      *devstack.SecretsManager
	tpl     *devstack.Template
	values  devstack.StackValues
	secrets map[string]string // logical id → value
}

// startStack starts the emulators on free ports, provisions the stack,
// and creates the template's secrets.
func startStack(ctx context.Context, o options, tpl *devstack.Template) (*stack, error) {
	ports, err := devstack.FreePorts()
	if err != nil {
		return nil, err
	}
	o.step("starting the emulators (DynamoDB Local, fauxqs, aws-ses-v2-local)")
	s := &stack{name: newStackName(), tpl: tpl, secrets: map[string]string{}}
	if s.svc, err = devstack.StartServices(ctx, o.npm, filepath.Join(o.dir, "logs"), ports); err != nil {
		return nil, err
	}
	if s.clients, err = devstack.NewClients(ctx, ports.Endpoints()); err != nil {
		s.close()
		return nil, err
	}
	if s.res, err = devstack.Provision(ctx, s.clients, s.name); err != nil {
		s.close()
		return nil, err
	}
	if s.sm, err = devstack.StartSecretsManager(); err != nil {
		s.close()
		return nil, err
	}
	bind := devstack.LocalBinding{Secrets: map[string]string{}, ConfigurationSet: s.name + "-ConfigurationSet", HTTPAPIID: "rehearse",
		// Replies on: notify gives each email its Reply-To, and the
		// review's reviewer replies (replyStep).
		Parameters: map[string]string{"InboundDomain": inboundDomain}}
	// Pseudo parameters are all a secret's value may use: bind nothing yet.
	pre, err := devstack.BindLocal(tpl, s.name, s.res, devstack.LocalBinding{})
	if err != nil {
		s.close()
		return nil, err
	}
	for _, id := range tpl.Resources("AWS::SecretsManager::Secret") {
		v, err := tpl.SecretValue(id, pre)
		if err != nil {
			s.close()
			return nil, err
		}
		s.secrets[id] = v
		bind.Secrets[id] = s.sm.Put(s.name+"-"+id, v)
	}
	if s.values, err = devstack.BindLocal(tpl, s.name, s.res, bind); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *stack) close() {
	if s.sm != nil {
		_ = s.sm.Close()
	}
	if s.svc != nil {
		s.svc.Stop()
	}
}

// secretValue is one key of a secret the template generated (the
// webhook secret the review is signed with).
func (s *stack) secretValue(id, key string) (string, error) {
	var m map[string]string
	if err := json.Unmarshal([]byte(s.secrets[id]), &m); err != nil || m[key] == "" {
		return "", fmt.Errorf("the template's secret %s holds no %s", id, key)
	}
	return m[key], nil
}

// function is one function as the rehearsal runs it.
type function struct {
	name, id string // intake, IntakeFunction
	settings devstack.FunctionSettings
	env      map[string]string // the template's, then Lambda's own
}

// preflight evaluates every function's environment against a stack
// whose names are made up, before anything is built or started, so a
// template that cannot deploy fails the rehearsal in a second.
func preflight(tpl *devstack.Template) []string {
	name := newStackName()
	res := devstack.PlaceholderResources(name)
	bind := devstack.LocalBinding{Secrets: map[string]string{}, ConfigurationSet: name + "-set", HTTPAPIID: "rehearse"}
	for _, id := range tpl.Resources("AWS::SecretsManager::Secret") {
		bind.Secrets[id] = "arn:aws:secretsmanager:" + devstack.LocalRegion + ":" + devstack.LocalAccount + ":secret:" + id
	}
	values, err := devstack.BindLocal(tpl, name, res, bind)
	if err != nil {
		return []string{err.Error()}
	}
	var failures []string
	for _, fn := range deploy.Describe().Names() {
		id := deploy.FunctionID(fn)
		if _, err := tpl.FunctionEnv(id, values); err != nil {
			failures = append(failures, err.Error())
		} else if _, err := tpl.Settings(id, values); err != nil {
			failures = append(failures, err.Error())
		}
	}
	return failures
}

// functions evaluates every function's environment. Each problem is one
// failure naming the function and the variable; none stops the others
// from being reported.
func (s *stack) functions() (map[string]function, []string) {
	out := map[string]function{}
	var failures []string
	for _, name := range deploy.Describe().Names() {
		id := deploy.FunctionID(name)
		env, err := s.tpl.FunctionEnv(id, s.values)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		set, err := s.tpl.Settings(id, s.values)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		for k := range env {
			if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
				failures = append(failures, fmt.Sprintf("%s: environment variable %s: set when deployed (LocalStackHost empty): the function would not talk to AWS", id, k))
			}
		}
		for k, v := range s.lambdaEnv(name, set) {
			env[k] = v
		}
		out[name] = function{name: name, id: id, settings: set, env: env}
	}
	return out, failures
}

// lambdaEnv is what Lambda adds to a function's configured environment
// (its reserved variables: region, credentials, memory, the JSON log
// format of LoggingConfig), plus the one thing only a rehearsal needs:
// each AWS service's endpoint, which on AWS is the region's own.
func (s *stack) lambdaEnv(name string, set devstack.FunctionSettings) map[string]string {
	ep := s.svc.Ports.Endpoints()
	return map[string]string{
		"AWS_REGION": devstack.LocalRegion, "AWS_DEFAULT_REGION": devstack.LocalRegion,
		"AWS_ACCESS_KEY_ID": "rehearse", "AWS_SECRET_ACCESS_KEY": "rehearse", "AWS_SESSION_TOKEN": "rehearse",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(set.MemoryMB), "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/" + s.name + "-" + name, "AWS_LAMBDA_LOG_FORMAT": "JSON",
		"_HANDLER": "bootstrap", "LAMBDA_TASK_ROOT": "/var/task", "LAMBDA_RUNTIME_DIR": "/var/runtime",
		"LANG": "en_US.UTF-8", "TZ": ":UTC", "PATH": "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"AWS_ENDPOINT_URL_DYNAMODB": ep.DynamoDB, "AWS_ENDPOINT_URL_SQS": ep.SQS, "AWS_ENDPOINT_URL_S3": ep.S3,
		"AWS_ENDPOINT_URL_SESV2": ep.SES, "AWS_ENDPOINT_URL_SECRETS_MANAGER": s.sm.URL,
	}
}

// endpoints are the local stack's, for the rehearsal's own clients.
func (s *stack) endpoints() config.Endpoints { return s.svc.Ports.Endpoints() }
