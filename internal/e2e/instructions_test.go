package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// A deployment's review instructions live in its payload bucket's object,
// not in the llm function's environment (R-LIMIT-1): the deployment's and
// the changelist's repository's reach the model as the team's
// instructions, quotes, newlines and text outside ASCII included (what no
// environment had room for), and the environment's are not used while
// the object exists.
func TestReviewInstructions_FromThePayloadBucket(t *testing.T) {
	t.Parallel()
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
		c.LLM.ReviewInstructions = "FROM THE ENVIRONMENT"
	})
	cl := testenv.Prefix(t)
	deployment := strings.Repeat(`Amounts are "int64" cents — never a float; `, 40)
	doc := "instructions: |\n  " + deployment + "\nby_repository:\n  " + cl + ": Every handler checks the tenant (ünïcode).\n"
	if _, err := s.env.Clients.S3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.res.PayloadBucket),
		Key: aws.String(config.ReviewInstructionsKey), Body: bytes.NewReader([]byte(doc))}); err != nil {
		t.Fatal(err)
	}
	id := accept(t, s, cl+"-v1", sample(t, cl, 1, "reviewer@example.com"))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	sys := reqs[0].System
	for _, want := range []string{strings.TrimSpace(deployment), "Every handler checks the tenant (ünïcode)."} {
		if !strings.Contains(sys, want) {
			t.Errorf("the model's system prompt lacks %.60q", want)
		}
	}
	if strings.Contains(sys, "FROM THE ENVIRONMENT") {
		t.Error("the environment's instructions were sent although the object exists")
	}
}
