package devstack

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// FunctionSettings are the settings of a function the rehearsal plays
// Lambda with: its timeout and memory, from the function's properties or
// SAM's Globals, else Lambda's defaults (3 s, 128 MB).
type FunctionSettings struct {
	Timeout  time.Duration
	MemoryMB int
}

// Settings evaluates function id's Timeout and MemorySize in stack s.
func (t *Template) Settings(id string, s StackValues) (FunctionSettings, error) {
	get := func(key string, def int) (int, error) {
		n := t.Property(id, key)
		if n == nil {
			n = cfn.YAMLPath(t.root, "Globals", "Function", key)
		}
		if n == nil {
			return def, nil
		}
		v, err := t.Eval(n, s)
		if err != nil {
			return 0, fmt.Errorf("%s.%s: %w", id, key, err)
		}
		i, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s.%s: %q is not a number", id, key, v)
		}
		return i, nil
	}
	secs, err := get("Timeout", 3)
	if err != nil {
		return FunctionSettings{}, err
	}
	mem, err := get("MemorySize", 128)
	if err != nil {
		return FunctionSettings{}, err
	}
	return FunctionSettings{Timeout: time.Duration(secs) * time.Second, MemoryMB: mem}, nil
}

// EventSource is an SQS event source mapping of the template: which
// queue (logical id) feeds which function, in batches of what size.
type EventSource struct {
	ID, Function, Queue string
	BatchSize           int
}

// EventSources reads the template's AWS::Lambda::EventSourceMapping
// resources whose FunctionName is a Ref to a function and whose
// EventSourceArn a GetAtt of a queue's Arn.
func (t *Template) EventSources() ([]EventSource, error) {
	var out []EventSource
	for _, id := range t.Resources("AWS::Lambda::EventSourceMapping") {
		es := EventSource{ID: id, BatchSize: 10}
		fn, arg, ok := cfn.Intrinsic(orEmpty(t.Property(id, "FunctionName")))
		if !ok || fn != "Ref" {
			return nil, fmt.Errorf("%s: FunctionName is not a Ref to a function", id)
		}
		es.Function = arg.Value
		src, arg, ok := cfn.Intrinsic(orEmpty(t.Property(id, "EventSourceArn")))
		if !ok || src != "Fn::GetAtt" {
			return nil, fmt.Errorf("%s: EventSourceArn is not a GetAtt of a queue's Arn", id)
		}
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 { // [Queue, Arn]
			es.Queue = arg.Content[0].Value
		} else {
			es.Queue, _, _ = strings.Cut(arg.Value, ".")
		}
		if n := t.Property(id, "BatchSize"); n != nil {
			b, err := strconv.Atoi(n.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: BatchSize %q", id, n.Value)
			}
			es.BatchSize = b
		}
		out = append(out, es)
	}
	return out, nil
}

// orEmpty is n, or an empty scalar for a missing node.
func orEmpty(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode}
	}
	return n
}

// Statements are the IAM statements of function id's role (its
// <id>Role's policies) evaluated in stack s, as IAM will hold them: each
// a mapping of Effect, Action, Resource and Condition, a statement whose
// condition is off left out.
func (t *Template) Statements(id string, s StackValues) ([]map[string]any, error) {
	policies := t.Property(id+"Role", "Policies")
	if policies == nil || policies.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%sRole: no policies", id)
	}
	var out []map[string]any
	for _, p := range policies.Content {
		v, err := cfn.Eval(t.root, cfn.YAMLPath(p, "PolicyDocument", "Statement"), s)
		if err != nil {
			return nil, fmt.Errorf("%sRole: %w", id, err)
		}
		list, _ := v.([]any)
		for _, st := range list {
			m, ok := st.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%sRole: a statement that is not a mapping", id)
			}
			out = append(out, m)
		}
	}
	return out, nil
}
