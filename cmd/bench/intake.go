package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/devstack"
)

// intakeResult is one system's measured run at one concurrency. The Node
// peer prints the same JSON.
type intakeResult struct {
	Requests  int     `json:"requests"`
	Unique    int     `json:"unique"`
	Dup       int     `json:"dup"`
	Errors    int     `json:"errors"`
	ElapsedMS float64 `json:"elapsed_ms"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	// Calls by request kind ("unique", "dup") and "Service.Operation".
	Calls map[string]map[string]callCount `json:"calls"`
}

func (r intakeResult) RPS() float64 {
	if r.ElapsedMS == 0 {
		return 0
	}
	return float64(r.Requests) / (r.ElapsedMS / 1000)
}

// runCriticizerIntake drives the intake function's handler (the value
// functions/intake passes to lambda.Start) in process with conc workers:
// first the warm-up requests, then the measured ones.
func runCriticizerIntake(ctx context.Context, h *api.Handler, counter *Counter, warm, reqs []request, conc int) intakeResult {
	drive(ctx, h, warm, conc, nil)
	counter.Reset()
	lat := make([]time.Duration, len(reqs))
	var errs atomic.Int64
	start := time.Now()
	drive(ctx, h, reqs, conc, func(i int, d time.Duration, status int) {
		lat[i] = d
		if status < 200 || status > 299 {
			errs.Add(1)
		}
	})
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res := intakeResult{Requests: len(reqs), Errors: int(errs.Load()), ElapsedMS: ms(elapsed),
		P50MS: ms(percentile(lat, 0.50)), P99MS: ms(percentile(lat, 0.99)), Calls: map[string]map[string]callCount{}}
	for _, r := range reqs {
		if r.Dup {
			res.Dup++
		} else {
			res.Unique++
		}
	}
	for k, v := range counter.Snapshot() {
		if res.Calls[k.Tag] == nil {
			res.Calls[k.Tag] = map[string]callCount{}
		}
		res.Calls[k.Tag][k.Service+"."+k.Op] = v
	}
	return res
}

// drive hands reqs to conc workers in order; done, if set, gets each
// request's latency and HTTP status.
func drive(ctx context.Context, h *api.Handler, reqs []request, conc int, done func(i int, d time.Duration, status int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				tag := "unique"
				if reqs[i].Dup {
					tag = "dup"
				}
				ev := apiEvent(reqs[i])
				t0 := time.Now()
				resp, err := h.Handle(WithTag(ctx, tag), ev)
				d := time.Since(t0)
				if err != nil {
					resp.StatusCode = 500
				}
				if done != nil {
					done(i, d, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
}

// peerResources are the peer's own tables and queue on the same emulators.
type peerResources struct {
	IdempotencyTable, JobsTable, QueueURL string
	// DynamoDBEndpoint, if set, is where the peer sends its DynamoDB
	// requests (the capacity proxy) instead of DynamoDB Local itself.
	DynamoDBEndpoint string
}

func provisionPeer(ctx context.Context, c *devstack.Clients, prefix string) (peerResources, error) {
	p := peerResources{IdempotencyTable: prefix + "-peer-idempotency", JobsTable: prefix + "-peer-jobs"}
	for table, key := range map[string]string{p.IdempotencyTable: "id", p.JobsTable: "pk"} {
		_, err := c.DynamoDB.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(key), KeyType: ddbtypes.KeyTypeHash}},
		})
		if err != nil {
			return p, fmt.Errorf("create peer table %s: %w", table, err)
		}
	}
	q, err := c.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "-peer-fetch")})
	if err != nil {
		return p, fmt.Errorf("create peer queue: %w", err)
	}
	p.QueueURL = aws.ToString(q.QueueUrl)
	return p, nil
}

// runPeer runs the Powertools peer (bench/powertools/peer.mjs) on the same
// requests, read from files, and reads its result from stdout.
func runPeer(ctx context.Context, peerDir string, res peerResources, secret string, warm, reqs []request, conc int, tmp string) (intakeResult, error) {
	if warm == nil {
		warm = []request{}
	}
	write := func(name string, v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		p := filepath.Join(tmp, name)
		return p, os.WriteFile(p, b, 0o600)
	}
	wf, err := write(fmt.Sprintf("warm-%d.json", conc), warm)
	if err != nil {
		return intakeResult{}, err
	}
	rf, err := write(fmt.Sprintf("reqs-%d.json", conc), reqs)
	if err != nil {
		return intakeResult{}, err
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join(peerDir, "peer.mjs"),
		"--warm", wf, "--requests", rf, "--concurrency", fmt.Sprint(conc))
	cmd.Env = append(os.Environ(), "PEER_IDEMPOTENCY_TABLE="+res.IdempotencyTable, "PEER_JOBS_TABLE="+res.JobsTable,
		"PEER_QUEUE_URL="+res.QueueURL, "PEER_WEBHOOK_SECRET="+secret)
	if res.DynamoDBEndpoint != "" {
		cmd.Env = append(cmd.Env, "AWS_ENDPOINT_URL_DYNAMODB="+res.DynamoDBEndpoint)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return intakeResult{}, fmt.Errorf("powertools peer: %w: %s", err, stderr.String())
	}
	var out intakeResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return intakeResult{}, fmt.Errorf("powertools peer output: %w: %s", err, stdout.String())
	}
	return out, nil
}
