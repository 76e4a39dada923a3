package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// An error answer in the wire protocol of the service, so the SDK's own
// deserializer and retryer read it as they would a real one: JSON with
// __type and X-Amzn-ErrorType (DynamoDB, SQS, Secrets Manager: awsJson;
// SES v2 and Bedrock: restJson), the query protocol's XML (SNS,
// CloudFormation) and S3's XML.
func errorResponse(req *http.Request, service string, r Rule) *http.Response {
	status, code, msg := http.StatusBadRequest, "ThrottlingException", "Rate exceeded (injected)"
	switch {
	case r.Kind == ServerError:
		status, code, msg = http.StatusInternalServerError, "InternalServerError", "We encountered an internal error (injected)"
		if service == "S3" {
			code = "InternalError"
		}
	case r.Kind == Reject && service == "SESv2":
		code, msg = "MessageRejected", "Email address is not verified (injected)"
	case r.Kind == Reject:
		code, msg = "ValidationException", "Invalid request (injected)"
	case service == "SESv2":
		status, code, msg = http.StatusTooManyRequests, "TooManyRequestsException", "Too many requests (injected)"
	case service == "S3":
		status, code, msg = http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate (injected)"
	case service == "SNS" || service == "CloudFormation":
		code = "Throttling"
	}
	h := http.Header{}
	h.Set("X-Amzn-Requestid", "injected-fault")
	var body []byte
	switch service {
	case "S3":
		h.Set("Content-Type", "application/xml")
		body = fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>injected-fault</RequestId></Error>`, code, msg)
	case "SNS", "CloudFormation":
		h.Set("Content-Type", "text/xml")
		kind := "Sender"
		if status >= 500 {
			kind = "Receiver"
		}
		body = fmt.Appendf(nil, `<ErrorResponse><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>injected-fault</RequestId></ErrorResponse>`, kind, code, msg)
	default:
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amzn-Errortype", code)
		if service == "SQS" {
			// SQS's JSON protocol is query-compatible: the query error code
			// travels in this header too.
			h.Set("X-Amzn-Query-Error", code+";Sender")
		}
		body, _ = json.Marshal(map[string]string{"__type": code, "message": msg})
	}
	if r.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(r.RetryAfter.Seconds()+0.999)))
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}
