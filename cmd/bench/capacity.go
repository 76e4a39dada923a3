package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/intake"
)

// capacityProxy stands in front of DynamoDB Local and measures the
// capacity every request consumed, whoever makes it: it adds
// "ReturnConsumedCapacity":"INDEXES" to each request body that can carry
// it and reads ConsumedCapacity from the answer. The Powertools peer's SDK
// asks for none, so this is how its consumption is measured rather than
// computed; Criticizer's intake goes through the same proxy.
type capacityProxy struct {
	srv *http.Server
	URL string

	mu      sync.Mutex
	read    float64
	write   float64
	failed  int // writes answered with an error (no capacity reported)
	calls   map[string]int
	scanned int64 // items read: ScannedCount of Query and Scan answers, items of GetItem and BatchGetItem answers
	reads   int   // read calls
}

// capacityOps are the operations whose input has ReturnConsumedCapacity.
var capacityOps = map[string]bool{"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "Scan": true,
	"BatchGetItem": true, "BatchWriteItem": true, "TransactWriteItems": true, "TransactGetItems": true}

func startCapacityProxy(target string) (*capacityProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &capacityProxy{URL: "http://" + ln.Addr().String(), calls: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = p.answer
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		if capacityOps[op] {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			var in map[string]json.RawMessage
			if json.Unmarshal(b, &in) == nil {
				in["ReturnConsumedCapacity"] = json.RawMessage(`"INDEXES"`)
				b, _ = json.Marshal(in)
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			r.Header.Del("Content-Length")
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *capacityProxy) answer(resp *http.Response) error {
	op := strings.TrimPrefix(resp.Request.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	if !capacityOps[op] {
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	write := op != "GetItem" && op != "Query" && op != "Scan" && op != "BatchGetItem" && op != "TransactGetItems"
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[op]++
	if resp.StatusCode != http.StatusOK {
		if write {
			p.failed++
		}
		return nil
	}
	var one struct {
		ConsumedCapacity json.RawMessage
		ScannedCount     int64
		Item             json.RawMessage
		Responses        map[string][]json.RawMessage
	}
	if json.Unmarshal(b, &one) != nil {
		return nil
	}
	p.scanned += one.ScannedCount
	if len(one.Item) > 0 {
		p.scanned++
	}
	for _, items := range one.Responses {
		p.scanned += int64(len(items))
	}
	if !write {
		p.reads++
	}
	if len(one.ConsumedCapacity) == 0 {
		return nil
	}
	var caps []struct{ CapacityUnits float64 }
	if one.ConsumedCapacity[0] == '[' {
		_ = json.Unmarshal(one.ConsumedCapacity, &caps)
	} else {
		var c struct{ CapacityUnits float64 }
		_ = json.Unmarshal(one.ConsumedCapacity, &c)
		caps = append(caps, c)
	}
	for _, c := range caps {
		if write {
			p.write += c.CapacityUnits
		} else {
			p.read += c.CapacityUnits
		}
	}
	return nil
}

// take returns the capacity since the last take.
func (p *capacityProxy) take() (read, write float64, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	read, write, failed = p.read, p.write, p.failed
	p.read, p.write, p.failed, p.scanned, p.reads = 0, 0, 0, 0, 0
	return
}

// takeReads returns the read units, items scanned and read calls since
// the last take, and forgets the rest.
func (p *capacityProxy) takeReads() (units float64, scanned int64, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	units, scanned, calls = p.read, p.scanned, p.reads
	p.read, p.write, p.failed, p.scanned, p.reads = 0, 0, 0, 0, 0
	return
}

func (p *capacityProxy) close() { _ = p.srv.Close() }

// intakeCapacity is one system's intake DynamoDB capacity per request.
type intakeCapacity struct {
	UniqueRead, UniqueWrite, DupRead, DupWrite float64
	DupFailed                                  float64 // failed writes per duplicate
	Requests                                   int
}

// runIntakeCapacity sends n unique webhooks, then each again (a
// duplicate), to Criticizer's intake and to the Powertools peer, one at a
// time, each system's DynamoDB traffic through a capacity proxy.
func runIntakeCapacity(ctx context.Context, base config.Config, runID, peerDir string, n int, noPeer bool, tmp string, log *slog.Logger) (crit intakeCapacity, peer *intakeCapacity, err error) {
	proxy, err := startCapacityProxy(base.Endpoints.DynamoDB)
	if err != nil {
		return crit, nil, err
	}
	defer proxy.close()
	plain, err := devstack.NewClients(ctx, base.Endpoints, quiet)
	if err != nil {
		return crit, nil, err
	}
	res, err := devstack.Provision(ctx, plain, "bench-"+runID+"-cap")
	if err != nil {
		return crit, nil, err
	}
	cfg := base
	res.Apply(&cfg)
	cfg.Endpoints.DynamoDB = proxy.URL
	h, err := intake.New(ctx, cfg, log, wire.Options{AWS: []awsclient.Option{quiet}})
	if err != nil {
		return crit, nil, err
	}
	reqs := workload("cap-"+runID, n, 0, 1, []byte(benchSecret), 7)
	measure := func(run func([]request) error) (intakeCapacity, error) {
		c := intakeCapacity{Requests: n}
		proxy.take()
		if err := run(reqs); err != nil {
			return c, err
		}
		r, w, _ := proxy.take()
		c.UniqueRead, c.UniqueWrite = r/float64(n), w/float64(n)
		dups := make([]request, len(reqs))
		for i, q := range reqs {
			q.Dup = true
			dups[i] = q
		}
		if err := run(dups); err != nil {
			return c, err
		}
		r, w, f := proxy.take()
		c.DupRead, c.DupWrite, c.DupFailed = r/float64(n), w/float64(n), float64(f)/float64(n)
		return c, nil
	}
	crit, err = measure(func(rs []request) error {
		var bad int
		drive(ctx, h, rs, 1, func(_ int, _ time.Duration, status int) {
			if status < 200 || status > 299 {
				bad++
			}
		})
		if bad > 0 {
			return fmt.Errorf("criticizer intake: %d non-2xx answers", bad)
		}
		return nil
	})
	if err != nil || noPeer {
		return crit, nil, err
	}
	pr, err := provisionPeer(ctx, plain, "bench-"+runID+"-cap")
	if err != nil {
		return crit, nil, err
	}
	pr.DynamoDBEndpoint = proxy.URL
	pc, err := measure(func(rs []request) error {
		out, err := runPeer(ctx, peerDir, pr, benchSecret, nil, rs, 1, tmp)
		if err == nil && out.Errors > 0 {
			err = fmt.Errorf("powertools peer: %d non-2xx answers", out.Errors)
		}
		return err
	})
	return crit, &pc, err
}
