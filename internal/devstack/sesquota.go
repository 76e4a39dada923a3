package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SESQuota is a reverse proxy in front of aws-ses-v2-local that gives the
// local stack the two things of SES's sending quotas the emulator lacks
// and the notifier relies on (R-RATE-2, R-RATE-3):
//
//   - SES v2 GetAccount (GET /v2/email/account), answered with a
//     configurable SendQuota whose SentLast24Hours counts the sends the
//     proxy let through in the last 24 hours of its own clock;
//   - when enforced, SES's refusal of a send (POST /v2/email/outbound-emails)
//     over the daily quota or the per-second rate, in SES's own error shape
//     — a ThrottlingException whose message is "Daily message quota
//     exceeded." or "Maximum sending rate exceeded." — so that the SDK's
//     own deserializing and retrying, and the notifier's classification,
//     are what a test exercises: the fault is below the SDK.
//
// Everything else (the other SES calls, the emulator's /store) passes
// through untouched. The clock can be moved forward (Advance) and the
// window emptied (Reset), so a test can spend a day's quota and have it
// back in seconds.
//
// What it does not model: SES counts a message per recipient and the
// notifier sends one recipient per message, so the proxy counts calls;
// SES's rate is not documented as whole wall-clock seconds, the proxy's
// is (as the notifier's limiter's windows are).
//
// It is hand-written rather than a library because it is one small
// net/http/httputil.ReverseProxy with two routes of SES's REST API.
type SESQuota struct {
	// Clock, if set before use, is the proxy's time (time.Now if nil): a
	// test that needs two sends in one second fixes it.
	Clock func() time.Time

	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	quota   SESQuotaConfig
	ahead   time.Duration // Advance's total
	sent    []sentAt      // accepted sends, oldest first
	nextID  uint64
	refused struct{ daily, rate int }
}

// SESQuotaConfig is the account the proxy plays.
type SESQuotaConfig struct {
	// Max24HourSend is the daily quota; negative: unlimited (SES answers
	// -1 for that).
	Max24HourSend float64
	// MaxSendRate is the maximum send rate, messages per second.
	MaxSendRate float64
	// EnforceDaily and EnforceRate make the proxy refuse sends over the
	// quota or the rate, as SES does; off, it only reports them.
	EnforceDaily, EnforceRate bool
	// Production is GetAccount's ProductionAccessEnabled (false: a sandbox
	// account).
	Production bool
	// ErrorCode and ErrorStatus shape the refusal: ThrottlingException and
	// HTTP 400 by default, as the SES developer guide names it. The SES v2
	// API reference lists TooManyRequestsException (429) and
	// LimitExceededException (400) for SendEmail instead; a test can play
	// either.
	ErrorCode   string
	ErrorStatus int
}

// Sandbox is a new SES account's quota in the sandbox: 200 messages a day,
// 1 a second, both enforced.
func Sandbox() SESQuotaConfig {
	return SESQuotaConfig{Max24HourSend: 200, MaxSendRate: 1, EnforceDaily: true, EnforceRate: true}
}

// DefaultSESQuota is the local stack's account unless configured: no
// daily limit and the 14/s of a new production account, reported and not
// enforced, so the stack sends as the emulator alone does.
func DefaultSESQuota() SESQuotaConfig {
	return SESQuotaConfig{Max24HourSend: -1, MaxSendRate: 14, Production: true}
}

// EnvLocalSESQuota sets the local stack's SES account: "<per day>/<per
// second>", enforced, e.g. "200/1" for the sandbox (`make run` that
// behaves like a sandbox deploy). Empty: DefaultSESQuota.
const EnvLocalSESQuota = "CRITICIZER_LOCAL_SES_QUOTA"

// SESQuotaFromEnv reads EnvLocalSESQuota.
func SESQuotaFromEnv(getenv func(string) string) (SESQuotaConfig, error) {
	v := strings.TrimSpace(getenv(EnvLocalSESQuota))
	if v == "" {
		return DefaultSESQuota(), nil
	}
	day, sec, ok := strings.Cut(v, "/")
	d, derr := strconv.ParseFloat(strings.TrimSpace(day), 64)
	r, rerr := strconv.ParseFloat(strings.TrimSpace(sec), 64)
	if !ok || derr != nil || rerr != nil || d < 0 || r <= 0 {
		return SESQuotaConfig{}, fmt.Errorf("%s=%q: want <messages per day>/<messages per second>, e.g. 200/1", EnvLocalSESQuota, v)
	}
	return SESQuotaConfig{Max24HourSend: d, MaxSendRate: r, EnforceDaily: true, EnforceRate: true}, nil
}

type sentAt struct {
	at time.Time
	id uint64
}

// The two routes of SES v2's REST API the proxy answers itself.
const (
	sesGetAccountPath = "/v2/email/account"
	sesSendEmailPath  = "/v2/email/outbound-emails"
)

// NewSESQuota returns a proxy in front of the SES emulator at upstream.
func NewSESQuota(upstream string, q SESQuotaConfig) (*SESQuota, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("ses quota proxy: upstream %q is not a URL", upstream)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// A client that gave up (a send's timeout, a fault test's lost
		// answer) is not the emulator failing: no log line for it.
		if !errors.Is(err, context.Canceled) {
			slog.Warn("ses quota proxy: the SES emulator did not answer", "method", r.Method, "path", r.URL.Path, "error", err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return &SESQuota{proxy: proxy, quota: q}, nil
}

// SetQuota changes the account the proxy plays; what was sent stays
// counted.
func (p *SESQuota) SetQuota(q SESQuotaConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quota = q
}

// Advance moves the proxy's clock forward by d: sends older than 24 hours
// then leave the daily window, as time passing would make them.
func (p *SESQuota) Advance(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ahead += d
}

// Reset empties the daily window: a day has passed since every send.
func (p *SESQuota) Reset() { p.Advance(24*time.Hour + time.Second) }

// Sent is SentLast24Hours now.
func (p *SESQuota) Sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.window(p.clock()))
}

// Refused reports how many sends the proxy refused over the daily quota
// and over the rate.
func (p *SESQuota) Refused() (daily, rate int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused.daily, p.refused.rate
}

func (p *SESQuota) clock() time.Time {
	now := time.Now()
	if p.Clock != nil {
		now = p.Clock()
	}
	return now.Add(p.ahead)
}

// window drops the sends older than 24 hours and returns the rest. Called
// with p.mu held.
func (p *SESQuota) window(now time.Time) []sentAt {
	cut := now.Add(-24 * time.Hour)
	i := 0
	for i < len(p.sent) && !p.sent[i].at.After(cut) {
		i++
	}
	p.sent = p.sent[i:]
	return p.sent
}

// ServeHTTP answers GetAccount, polices SendEmail and passes the rest on.
func (p *SESQuota) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == sesGetAccountPath:
		p.getAccount(w)
	case r.Method == http.MethodPost && r.URL.Path == sesSendEmailPath:
		p.sendEmail(w, r)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// getAccount answers GetAccount as SES v2 does (its JSON field names).
func (p *SESQuota) getAccount(w http.ResponseWriter) {
	p.mu.Lock()
	q, sent := p.quota, len(p.window(p.clock()))
	p.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"DedicatedIpAutoWarmupEnabled": false,
		"EnforcementStatus":            "HEALTHY",
		"ProductionAccessEnabled":      q.Production,
		"SendingEnabled":               true,
		"SendQuota": map[string]float64{
			"Max24HourSend": q.Max24HourSend, "MaxSendRate": q.MaxSendRate, "SentLast24Hours": float64(sent),
		},
		"SuppressionAttributes": map[string]any{"SuppressedReasons": []string{}},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// sendEmail refuses a send over the quota or the rate, or counts it and
// passes it on. A send the emulator does not accept is not counted.
func (p *SESQuota) sendEmail(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	now := p.clock()
	q, sent := p.quota, p.window(now)
	if q.EnforceDaily && q.Max24HourSend >= 0 && float64(len(sent)) >= q.Max24HourSend {
		p.refused.daily++
		p.mu.Unlock()
		throttled(w, q, "Daily message quota exceeded.")
		return
	}
	if q.EnforceRate && q.MaxSendRate > 0 {
		n := 0
		for _, s := range sent {
			if s.at.Unix() == now.Unix() {
				n++
			}
		}
		if float64(n) >= max(1, float64(int(q.MaxSendRate))) {
			p.refused.rate++
			p.mu.Unlock()
			throttled(w, q, "Maximum sending rate exceeded.")
			return
		}
	}
	p.nextID++
	id := p.nextID
	p.sent = append(p.sent, sentAt{at: now, id: id})
	p.mu.Unlock()

	sw := &statusWriter{ResponseWriter: w}
	p.proxy.ServeHTTP(sw, r)
	if sw.status >= 200 && sw.status < 300 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.sent {
		if s.id == id {
			p.sent = append(p.sent[:i], p.sent[i+1:]...)
			break
		}
	}
}

// throttled writes SES v2's throttling answer (restJson1: the code in
// X-Amzn-ErrorType, the message in the body).
func throttled(w http.ResponseWriter, q SESQuotaConfig, msg string) {
	code, status := q.ErrorCode, q.ErrorStatus
	if code == "" {
		code = "ThrottlingException"
	}
	if status == 0 {
		status = http.StatusBadRequest
	}
	body, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.Header().Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// statusWriter remembers the status the emulator answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// SESQuotaServer is a listening SESQuota.
type SESQuotaServer struct {
	*SESQuota
	// URL is the proxy's base URL: the SES endpoint to give clients.
	URL string
	srv *http.Server
}

// StartSESQuota listens on addr ("127.0.0.1:0" for any free port) and
// serves a proxy in front of the SES emulator at upstream.
func StartSESQuota(addr, upstream string, q SESQuotaConfig) (*SESQuotaServer, error) {
	p, err := NewSESQuota(upstream, q)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ses quota proxy: %w", err)
	}
	s := &SESQuotaServer{SESQuota: p, URL: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// Close stops the proxy.
func (s *SESQuotaServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// startStackSESQuota puts the quota proxy on the stack's SES port, in
// front of the emulator on its own port, playing the account
// EnvLocalSESQuota sets. It is StartServices's hook.
func startStackSESQuota(port, emulatorPort int) (*SESQuotaServer, error) {
	q, err := SESQuotaFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return StartSESQuota(addr(port), "http://"+addr(emulatorPort), q)
}
