package devstack

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// APIHandler is the API function's Lambda handler.
type APIHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// MaxRequestBody is API Gateway's payload limit (10 MB).
const MaxRequestBody = 10 << 20

// HTTPAPI plays API Gateway (HTTP API, payload format 2.0) in front of a
// handler: it builds the same event, with lower-cased header names, and
// writes the handler's response back.
func HTTPAPI(h APIHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
		if err != nil || len(body) > MaxRequestBody {
			http.Error(w, `{"message":"Request Entity Too Large"}`, http.StatusRequestEntityTooLarge)
			return
		}
		ev := ToAPIGatewayV2(r, body)
		resp, err := h(r.Context(), ev)
		if err != nil {
			// What API Gateway answers when the function errors.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"message":"Internal Server Error"}`))
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for _, c := range resp.Cookies {
			w.Header().Add("Set-Cookie", c)
		}
		out := []byte(resp.Body)
		if resp.IsBase64Encoded {
			if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		status := resp.StatusCode
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write(out)
	})
}

// ToAPIGatewayV2 builds the event API Gateway would send for r.
func ToAPIGatewayV2(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header))
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				cookies = append(cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	query := make(map[string]string, len(r.URL.Query()))
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "000000000000", APIID: "local", Stage: "$default", DomainName: r.Host,
			RequestID: "local-" + strconv.FormatInt(now.UnixNano(), 36), Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}
