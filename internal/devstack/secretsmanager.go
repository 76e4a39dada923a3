package devstack

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// SecretsManager is a local Secrets Manager holding string secrets, for
// the deploy rehearsal: the functions read their secrets at init with
// GetSecretValue (internal/secrets), as on AWS, and the local stack's
// emulators have none. It answers GetSecretValue only, by ARN or name,
// and ResourceNotFoundException for anything it does not hold.
type SecretsManager struct {
	URL    string
	mu     sync.Mutex
	values map[string]string // ARN → SecretString
	srv    *http.Server
}

// StartSecretsManager serves it on a free port of 127.0.0.1.
func StartSecretsManager() (*SecretsManager, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sm := &SecretsManager{URL: "http://" + ln.Addr().String(), values: map[string]string{}}
	sm.srv = &http.Server{Handler: http.HandlerFunc(sm.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sm.srv.Serve(ln) }()
	return sm, nil
}

// Put stores a secret named name and returns its ARN, shaped as Secrets
// Manager's (a random six-character suffix).
func (sm *SecretsManager) Put(name, value string) string {
	arn := fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%06d", LocalRegion, LocalAccount, name, time.Now().UnixNano()%1e6)
	sm.mu.Lock()
	sm.values[arn] = value
	sm.mu.Unlock()
	return arn
}

// Store stores a secret under the ARN arn.
func (sm *SecretsManager) Store(arn, value string) {
	sm.mu.Lock()
	sm.values[arn] = value
	sm.mu.Unlock()
}

// Value returns a stored secret's value.
func (sm *SecretsManager) Value(arn string) (string, bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	v, ok := sm.values[arn]
	return v, ok
}

// Close stops serving.
func (sm *SecretsManager) Close() error { return sm.srv.Close() }

func (sm *SecretsManager) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(typ, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
		fail("UnsupportedOperation", "the local Secrets Manager answers GetSecretValue only")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail("UnrecognizedClientException", "the request is not signed")
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail("InvalidRequestException", err.Error())
		return
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for arn, v := range sm.values {
		if in.SecretId == arn || strings.HasPrefix(strings.TrimPrefix(arn, "arn:aws:secretsmanager:"+LocalRegion+":"+LocalAccount+":secret:"), in.SecretId+"-") {
			_ = json.NewEncoder(w).Encode(map[string]any{"ARN": arn, "SecretString": v, "VersionId": "local",
				"CreatedDate": float64(time.Now().Unix())})
			return
		}
	}
	fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
}
