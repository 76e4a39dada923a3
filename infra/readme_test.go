package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADME_NamesWhatADefaultDeployHas: the README's deploy and
// operations sections, followed literally for a default deploy, name
// outputs, queues, context keys and SAM parameters that exist: every
// output it cites is an output of the synthesized stack (or, for SAM
// parameters, of template.yaml), every queue name it cites is one the
// stack creates under its default name, every `-c key=` is a context key
// the app reads.
func TestREADME_NamesWhatADefaultDeployHas(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	s := synth(t)
	outputs := s.tmpl["Outputs"].(map[string]any)
	params := loadSAM(t)["Parameters"].(map[string]any)
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]*(?:Arn|Url|Name))`").FindAllStringSubmatch(readme, -1) {
		if _, ok := outputs[m[1]]; ok {
			continue
		}
		if _, ok := params[m[1]]; ok {
			continue
		}
		t.Errorf("README cites %s: not an output of the stack nor a SAM parameter", m[1])
	}
	// Queue names: "<stack>-<queue>[-dlq]" joined from the stack name.
	queues := map[string]bool{}
	for _, r := range s.resources("AWS::SQS::Queue") {
		name := strings.ReplaceAll(render(props(r)["QueueName"]), "${AWS::StackName}", StackName)
		queues[name] = true
	}
	// Any case: SQS names are case-sensitive, and a lower-case
	// "criticizer-notify-dlq" is not the default deploy's queue.
	for _, m := range regexp.MustCompile(`(?i)\b`+StackName+`-(?:fetch|llm|notify|feedback)(?:-dlq)?\b`).FindAllString(readme, -1) {
		if !queues[m] {
			t.Errorf("README names queue %s; a default deploy has %v", m, sortedKeys(queues))
		}
	}
	ctx := map[string]bool{CtxAssetDir: true, CtxMailFrom: true, CtxSESIdentity: true, CtxLogLevel: true, CtxAlarmEmail: true,
		CtxCritic: true, CtxCriticModel: true, CtxOpenAIBaseURL: true, CtxMaxSendRate: true, CtxNotifyReserved: true, "key": true,
		CtxReviewInstructions: true, CtxReviewInstructionsByRepo: true, CtxLLMMaxFindings: true}
	for _, m := range regexp.MustCompile("-c ([a-zA-Z]+)=").FindAllStringSubmatch(readme, -1) {
		if !ctx[m[1]] {
			t.Errorf("README passes -c %s=: not a context key the app reads", m[1])
		}
	}
	// The deploy-time table: CDK context keys and SAM parameters.
	for _, m := range regexp.MustCompile("\\| `([a-zA-Z]+)` \\| `([A-Z][A-Za-z]+)` \\|").FindAllStringSubmatch(readme, -1) {
		if !ctx[m[1]] {
			t.Errorf("README table: context %s is not read by the app", m[1])
		}
		if _, ok := params[m[2]]; !ok {
			t.Errorf("README table: %s is not a parameter of template.yaml", m[2])
		}
	}
}
