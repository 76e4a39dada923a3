package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// rootConst evaluates a constant of the root module's source: an integer,
// a time unit, or an integer times a time unit (20 * time.Second). The
// infra module does not import the root one; it reads its numbers.
func rootConst(t *testing.T, file, name string) float64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", file), nil, 0)
	if err != nil {
		t.Skipf("root source not available (%v): infra checked out alone?", err)
	}
	units := map[string]float64{"Millisecond": 1e-3, "Second": 1, "Minute": 60, "Hour": 3600}
	var eval func(e ast.Expr) (float64, bool)
	eval = func(e ast.Expr) (float64, bool) {
		switch x := e.(type) {
		case *ast.BasicLit:
			v, err := strconv.ParseFloat(x.Value, 64)
			return v, err == nil
		case *ast.SelectorExpr:
			u, ok := units[x.Sel.Name]
			return u, ok
		case *ast.BinaryExpr:
			a, ok1 := eval(x.X)
			b, ok2 := eval(x.Y)
			return a * b, ok1 && ok2 && x.Op == token.MUL
		}
		return 0, false
	}
	var out float64
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || found {
			return !found
		}
		for i, id := range vs.Names {
			if id.Name == name && i < len(vs.Values) {
				out, found = eval(vs.Values[i])
				if !found {
					t.Fatalf("%s: %s is not a number this test can read", file, name)
				}
			}
		}
		return true
	})
	if !found {
		t.Fatalf("%s defines no constant %s", file, name)
	}
	return out
}

// stageAttempts is the stage budget, read from retry.DefaultPolicy.
func stageAttempts(t *testing.T) float64 {
	b, err := os.ReadFile(filepath.Join("..", "internal", "retry", "policy.go"))
	if err != nil {
		t.Skipf("root source not available (%v)", err)
	}
	m := regexp.MustCompile(`MaxAttempts:\s+(\d+),`).FindSubmatch(b)
	if m == nil {
		t.Fatal("retry.DefaultPolicy no longer sets MaxAttempts as a literal: update this test")
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n
}

// envLiteral is a function's environment variable as a literal, in the
// CDK template or the SAM one (Globals applied).
func envLiteral(tmpl map[string]any, fn, name string) string {
	r := resourcesOf(tmpl)[FunctionID(fn)]
	p := props(r)
	if globals, ok := get(tmpl, "Globals", "Function").(map[string]any); ok {
		p = withGlobals(globals, p)
	}
	v, _ := get(p, "Environment", "Variables", name).(string)
	return v
}

// A slow model never loses its batch, and receives that run out still
// leave an envelope: in both templates, the llm function's timeout holds
// its batch of worst-case model calls with the stage's work around them
// and the runner's reserve; every queue's visibility is at least 6 x its
// consumer's timeout (AWS's guidance); the budget runs out before the
// receives do, and a message's receives run out before the queue's
// retention ends; each stage function is told its queue's
// maxReceiveCount; the sweeper never re-enqueues a job whose llm attempt
// is still running.
// Rules: R-STAGE-9, R-STAGE-10.
func TestDeadlineArithmetic(t *testing.T) {
	overhead := rootConst(t, filepath.Join("internal", "wire", "llm", "llm.go"), "Overhead")
	reserve := rootConst(t, filepath.Join("internal", "stage", "deadline.go"), "DefaultReserve")
	maxBackoff := 60.0 // retry.DefaultPolicy's Max: the longest wait between attempts
	attempts := stageAttempts(t)
	stuck, err := time.ParseDuration(SweepStuckAfter)
	if err != nil {
		t.Fatal(err)
	}
	s := synth(t)
	for name, tmpl := range map[string]map[string]any{"CDK": s.tmpl, "SAM": loadSAM(t)} {
		var m deployModel
		if name == "CDK" {
			m = cdkModel(t, tmpl)
		} else {
			m = samModel(t, tmpl)
		}
		llm := m.Functions[FunctionID(FnLLM)]
		model, err := time.ParseDuration(envLiteral(tmpl, FnLLM, EnvModelTimeout))
		if err != nil {
			t.Fatalf("%s: llm %s: %v", name, EnvModelTimeout, err)
		}
		if need := llm.Batch*(model.Seconds()+overhead) + reserve; need > llm.Timeout {
			t.Errorf("%s: llm batch %v x (model %v + %vs) + reserve %vs = %vs > timeout %vs", name, llm.Batch, model, overhead, reserve, need, llm.Timeout)
		}
		if llm.Timeout > 900 {
			t.Errorf("%s: llm timeout %vs beyond Lambda's 900 s", name, llm.Timeout)
		}
		if stuck.Seconds() <= llm.Timeout+maxBackoff {
			t.Errorf("%s: the sweeper's stuck-after %v does not exceed an llm attempt (%vs) and a backoff (%vs)", name, stuck, llm.Timeout, maxBackoff)
		}
		for _, fn := range []string{FnFetch, FnLLM, FnNotify, FnFeedback} {
			f := m.Functions[FunctionID(fn)]
			q := m.Queues[f.Queue]
			if q.Visibility < 6*f.Timeout+f.Window {
				t.Errorf("%s %s: visibility %vs < 6 x timeout %vs + window %vs", name, fn, q.Visibility, f.Timeout, f.Window)
			}
			if q.MaxReceive < attempts {
				t.Errorf("%s %s: maxReceiveCount %v below the stage budget of %v attempts", name, fn, q.MaxReceive, attempts)
			}
			if q.Retain < q.MaxReceive*q.Visibility {
				t.Errorf("%s %s: retention %vs < %v receives x visibility %vs: a message could expire before its DLQ", name, fn, q.Retain, q.MaxReceive, q.Visibility)
			}
			if fn == FnFeedback {
				continue // not a stage runner
			}
			if got := envLiteral(tmpl, fn, EnvMaxReceiveCount); got != strconv.FormatFloat(q.MaxReceive, 'f', -1, 64) {
				t.Errorf("%s %s: %s = %q, its queue's maxReceiveCount is %v", name, fn, EnvMaxReceiveCount, got, q.MaxReceive)
			}
		}
	}
}
