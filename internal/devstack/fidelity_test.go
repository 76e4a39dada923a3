package devstack_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/testenv"
)

// DynamoDB Local answers errors without the X-Amz-Crc32 header that
// DynamoDB sends (and puts it on successes), which is why the store's
// client skips response checksum validation against an endpoint
// (dynamo.NewClient) and keeps it on AWS.
func TestDynamoDBLocal_ErrorAnswersCarryNoCRC32(t *testing.T) {
	env := testenv.Stack(t)
	call := func(target, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, env.Endpoints.DynamoDB, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+target)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := call("ListTables", `{"Limit":1}`); r.StatusCode != http.StatusOK || r.Header.Get("X-Amz-Crc32") == "" {
		t.Fatalf("a success: HTTP %d, X-Amz-Crc32 %q; want 200 with the header", r.StatusCode, r.Header.Get("X-Amz-Crc32"))
	}
	if r := call("DescribeTable", `{"TableName":"no-such-table"}`); r.StatusCode != http.StatusBadRequest || r.Header.Get("X-Amz-Crc32") != "" {
		t.Fatalf("an error: HTTP %d, X-Amz-Crc32 %q; DynamoDB Local used to send 400 without it", r.StatusCode, r.Header.Get("X-Amz-Crc32"))
	}
}
