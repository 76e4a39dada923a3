package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
)

// The Lambda Runtime Interface Emulator (RIE) is AWS's own implementation
// of the Lambda runtime contract: it starts a bootstrap, serves it the
// Runtime API, hands it one invocation at a time with its deadline, and
// at the function timeout kills the runtime process (SIGKILL) and answers
// "Task timed out after N.00 seconds"; the next invocation starts a new
// runtime (a cold start). Tests run the real bootstraps under it to check
// that contract (rie_test.go).
//
// `make run` does not use it, and runs each function's handler in the
// devstack process instead, built by the same constructor its main.go
// calls (internal/wire): one process that starts in seconds, where the
// test hooks (fault injection, Hold, OnKill, a replacement Sender) reach
// the handlers, and where the poller's kill switch reproduces what the
// timeout means for the protocol (no AWS request takes effect after the
// deadline, no partial answer, the batch returns). RIE would need a
// bootstrap built per function and one RIE process per concurrent
// invocation (it serves one at a time), and would hide the handlers from
// those hooks. What only RIE shows — a process really stopped, its memory
// gone, init run again — is what the RIE test checks.
//
// RIE has no release tags that Go can use, so it is pinned to an exact
// pseudo-version and built from the Go module proxy (checked against
// sum.golang.org) with `go install`, outside this module: a `tool`
// directive in go.mod would merge RIE's requirements into the module graph
// and upgrade github.com/google/uuid, which the llm function links through
// tiktoken-go, for the sake of a test tool.
const (
	RIEPackage = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// BuildRIE builds aws-lambda-rie at RIEVersion into dir and returns its
// path. RIE runs on Linux only.
func BuildRIE(ctx context.Context, dir string) (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("the Lambda Runtime Interface Emulator runs on Linux only (this is %s)", runtime.GOOS)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "aws-lambda-rie")
	cmd := exec.CommandContext(ctx, "go", "install", RIEPackage+"@"+RIEVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w\n%s", RIEPackage, RIEVersion, err, out)
	}
	return bin, nil
}

// BuildBootstrap builds function fn (functions/<fn>) of the module in
// moduleDir as a bootstrap for this machine, as `make build` does for
// Lambda's linux/arm64, and returns its path (out).
func BuildBootstrap(ctx context.Context, moduleDir, fn, out string) (string, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, "./functions/"+fn)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", fn, err, b)
	}
	return out, nil
}

// BuildDeployedBootstraps builds every function (functions/<fn>) of the
// module in moduleDir as make build does for Lambda (CGO_ENABLED=0,
// GOOS=linux, -tags lambda.norpc, -trimpath, stripped), for goarch, into
// outDir/<fn>/bootstrap, and returns their paths by function. One go
// build for all of them: the compiler shares the work.
func BuildDeployedBootstraps(ctx context.Context, moduleDir, goarch, outDir string) (map[string]string, error) {
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(outDir, ".bin")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", tmp+"/", "./functions/...")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build functions for linux/%s: %w\n%s", goarch, err, b)
	}
	out := map[string]string{}
	for _, fn := range deploy.Describe().Names() {
		dst := filepath.Join(outDir, fn, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(tmp, fn), dst); err != nil {
			return nil, fmt.Errorf("build functions for linux/%s: %w", goarch, err)
		}
		out[fn] = dst
	}
	return out, nil
}

// BootstrapEnvs are the environments the functions' bootstraps get on
// the local stack, by function name: each one's environment in template t
// evaluated against the local resources res (LocalStack, cfg's
// configuration set and public URL), the emulators' endpoints of cfg, and
// a region. With sm, each secret a function's CRITICIZER_SECRETS_ARN
// names is in sm at its local ARN, holding what cfg sets of the settings
// it holds (deploy.Secret.Holds), and the bootstrap reads it there at
// init as it reads Secrets Manager deployed; without, the variable is
// left out.
func BootstrapEnvs(t *Template, res Resources, cfg config.Config, sm *SecretsManager) (map[string]map[string]string, error) {
	values, err := LocalStack(t, res, cfg)
	if err != nil {
		return nil, err
	}
	d := deploy.Describe()
	if sm != nil {
		held := cfg.Secrets()
		for _, s := range d.Secrets {
			v := map[string]string{}
			for _, k := range s.Holds {
				if x, ok := held[k]; ok {
					v[k] = x
				}
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			sm.Store(localSecretARN(s.ID), string(b))
		}
	}
	out := map[string]map[string]string{}
	for _, fn := range d.Functions {
		env, err := t.FunctionEnv(deploy.FunctionID(fn.Name), values)
		if err != nil {
			return nil, err
		}
		if v, ok := env[config.EnvConfigurationSet]; ok {
			env[config.EnvConfigurationSet] = localConfigurationSet(v, res, cfg)
		}
		if sm == nil {
			delete(env, config.EnvSecretsARN)
		} else {
			env["AWS_ENDPOINT_URL_SECRETS_MANAGER"] = sm.URL
		}
		for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": cfg.Endpoints.DynamoDB, "AWS_ENDPOINT_URL_SQS": cfg.Endpoints.SQS,
			"AWS_ENDPOINT_URL_S3": cfg.Endpoints.S3, "AWS_ENDPOINT_URL_SESV2": cfg.Endpoints.SES} {
			if v != "" {
				env[k] = v
			}
		}
		env["AWS_REGION"] = LocalRegion
		out[fn.Name] = env
	}
	return out, nil
}

// RIEFunction is one function's bootstrap running under RIE.
type RIEFunction struct {
	// URL is RIE's invocation endpoint.
	URL     string
	timeout time.Duration
	proc    *process
	http    *http.Client
}

// ErrFunctionTimedOut is RIE's answer for an invocation it killed at the
// function timeout.
var ErrFunctionTimedOut = errors.New("task timed out: the runtime was killed at the function timeout")

// FunctionError is a function's error answer (errorType, errorMessage), as
// the Runtime API reports a handler's error or panic.
type FunctionError struct {
	Type, Message string
}

func (e *FunctionError) Error() string { return "function error " + e.Type + ": " + e.Message }

// StartRIE starts RIE (the binary rie) hosting bootstrap, with the
// function timeout (whole seconds, at least one: RIE's unit), the given
// environment added to this process's, and its log in logDir/<name>.log.
func StartRIE(ctx context.Context, rie, bootstrap, name string, env map[string]string, timeout time.Duration, logDir string) (*RIEFunction, error) {
	return startRIE(ctx, rie, bootstrap, name, env, timeout, logDir, true)
}

// StartRIEExact is StartRIE with exactly env as the function's
// environment: RIE hands the runtime every variable of its own process,
// so inheriting this one's would let the function read variables its
// deployed configuration does not give it (the deploy rehearsal).
func StartRIEExact(ctx context.Context, rie, bootstrap, name string, env map[string]string, timeout time.Duration, logDir string) (*RIEFunction, error) {
	return startRIE(ctx, rie, bootstrap, name, env, timeout, logDir, false)
}

func startRIE(ctx context.Context, rie, bootstrap, name string, env map[string]string, timeout time.Duration, logDir string, inherit bool) (*RIEFunction, error) {
	secs := max(1, int((timeout+time.Second-1)/time.Second))
	invokePort, err := freePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	vars := []string{"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(secs), "AWS_LAMBDA_FUNCTION_NAME=" + name}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	if inherit {
		vars = append(os.Environ(), vars...)
	}
	p, err := startProcessEnv(name, filepath.Dir(bootstrap), logDir, vars, rie,
		"--runtime-interface-emulator-address", addr(invokePort), "--runtime-api-address", addr(apiPort), bootstrap)
	if err != nil {
		return nil, err
	}
	if err := p.waitPort(ctx, addr(invokePort), 30*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return &RIEFunction{URL: "http://" + addr(invokePort) + "/2015-03-31/functions/function/invocations",
		timeout: time.Duration(secs) * time.Second, proc: p,
		// RIE answers by the function timeout; the margin is for a cold start.
		http: &http.Client{Timeout: time.Duration(secs)*time.Second + 30*time.Second}}, nil
}

// Timeout is the function timeout RIE enforces. A Poller driving the
// function should wait a little longer, so that RIE, not the poller, is
// what ends an invocation that runs over.
func (f *RIEFunction) Timeout() time.Duration { return f.timeout }

// LogPath is the file RIE's output and the function's logs go to.
func (f *RIEFunction) LogPath() string { return f.proc.log.Name() }

// PID is the RIE process's id.
func (f *RIEFunction) PID() int { return f.proc.cmd.Process.Pid }

// Stop stops RIE and its runtime.
func (f *RIEFunction) Stop() { f.proc.stop() }

// Invoke sends one event and returns the function's answer; a function
// error is a *FunctionError, a timeout ErrFunctionTimedOut.
func (f *RIEFunction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: HTTP %d: %s", resp.StatusCode, body)
	}
	if bytes.HasPrefix(body, []byte("Task timed out after")) {
		return nil, fmt.Errorf("%w (%s)", ErrFunctionTimedOut, strings.TrimSpace(string(body)))
	}
	var fe struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.ErrorType != "" {
		return nil, &FunctionError{Type: fe.ErrorType, Message: fe.ErrorMessage}
	}
	return body, nil
}

// HandleSQS invokes the function with an SQS event: the Poller's handler
// for an RIE-hosted function.
func (f *RIEFunction) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	body, err := f.Invoke(ctx, payload)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return events.SQSEventResponse{}, fmt.Errorf("the function's answer is not an SQS batch response: %w", err)
	}
	return resp, nil
}
