package instructions_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/instructions"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/testenv"
)

// The llm function's instructions come from the payload bucket's object
// (on the S3 emulator), read at most once per TTL: without the object,
// the environment's; a change seen once the TTL has passed; a read that
// fails on S3's side (5xx past the SDK's retries, injected below the SDK)
// keeps the last instructions and is tried again at the next review; a
// malformed object fails the review permanently, naming it. Rules: R-LIMIT-1.
func TestSource_ReadsTheObjectAtMostOncePerTTL(t *testing.T) {
	ctx := context.Background()
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	inj := fault.New()
	cli := blob.NewS3(awsclient.ForFunction(env.Endpoints, inj.Option()), env.Endpoints.S3)
	put := func(doc string) {
		t.Helper()
		if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(res.PayloadBucket), Key: aws.String(config.ReviewInstructionsKey),
			Body: bytes.NewReader([]byte(doc))}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1_700_000_000, 0)
	fallback := instructions.Set{Deployment: "from the environment"}
	src := &instructions.Source{Get: blob.New(cli, res.PayloadBucket), Fallback: fallback, TTL: time.Minute, Now: func() time.Time { return now }}
	current := func(want string) {
		t.Helper()
		got, err := src.Current(ctx)
		if err != nil || got.Deployment != want {
			t.Fatalf("Current: %q, %v; want %q", got.Deployment, err, want)
		}
	}

	current("from the environment")
	put("instructions: first\n")
	current("from the environment") // within the TTL: not read again
	now = now.Add(time.Minute)
	current("first")

	put("instructions: second\n")
	now = now.Add(time.Minute)
	inj.Add(fault.Rule{Service: "S3", Operation: "GetObject", Kind: fault.ServerError, Times: 10})
	current("first") // S3 failed: the last instructions stand
	if inj.Fired("S3", "GetObject") == 0 {
		t.Fatal("the fault did not fire")
	}
	inj = nil
	src.Get = blob.New(blob.NewS3(awsclient.ForFunction(env.Endpoints), env.Endpoints.S3), res.PayloadBucket)
	current("second") // tried again at once, not a TTL later

	put("instructions: [\n")
	now = now.Add(time.Minute)
	_, err := src.Current(ctx)
	var re *retry.Error
	if !errors.Is(err, instructions.ErrInvalid) || !errors.As(err, &re) || re.Retryable() {
		t.Fatalf("a malformed object: %v; want a permanent ErrInvalid", err)
	}
}
