package prom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
)

// Limits of the HTTP exchange with Prometheus.
const (
	// MaxResponseBytes bounds a successful answer: a range query of a week
	// of minutes with wide native histograms stays far below it.
	MaxResponseBytes = 256 << 20
	// MaxErrorBodyBytes bounds what is read of an error answer: Prometheus's
	// own error documents are a few hundred bytes; a proxy's page may be
	// megabytes and is cut.
	MaxErrorBodyBytes = 64 << 10
	// maxExcerpt bounds the part of an error body quoted in an error.
	maxExcerpt = 240
	// MaxRetries is how many times a request Prometheus asked to retry
	// (429, or 503 with Retry-After) is sent again, each within the deadline.
	MaxRetries = 3
	// MaxRetryWait bounds one Retry-After wait when the query has no deadline.
	MaxRetryWait = time.Minute
)

// TenantHeader carries Client.Tenant: Mimir's and Cortex's tenant.
const TenantHeader = "X-Scope-OrgID"

// Credentials authenticate requests as Prometheus tooling does: a bearer
// token, or a basic-auth user and password. The zero value sends none.
type Credentials struct {
	BearerToken string
	Username    string
	Password    string
}

// IsZero says whether no credential is set.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// Secrets lists the secret values (token, password) that are set, for
// callers that scrub what they print.
func (c Credentials) Secrets() []string {
	var out []string
	for _, s := range []string{c.BearerToken, c.Password} {
		if s != "" {
			out = append(out, s)
		}
	}
	if c.Password != "" {
		out = append(out, BasicAuthSecret(c.Username, c.Password))
	}
	return out
}

// String never shows a secret.
func (c Credentials) String() string {
	switch {
	case c.BearerToken != "":
		return "bearer token"
	case c.Username != "" || c.Password != "":
		return "basic auth as " + strconv.Quote(c.Username)
	}
	return "no credentials"
}

func (c Credentials) apply(req *http.Request) {
	if req.Header.Get("Authorization") != "" {
		return
	}
	switch {
	case c.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+c.BearerToken)
	case c.Username != "" || c.Password != "":
		req.SetBasicAuth(c.Username, c.Password)
	}
}

// RedactURL returns s with the password of its userinfo replaced by xxxxx
// (https://user:xxxxx@host), or the whole userinfo when it has no password
// (a token used as user name). It works on text that does not parse as a URL.
// A password may hold '/', '?' or '#' unencoded, which end a URL's host, so
// everything before the last '@' counts as userinfo: an '@' in a path is
// redacted with what precedes it, never a password left in the clear.
func RedactURL(s string) string {
	prefix, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		prefix, rest = s[:i+3], s[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if hasPassword {
		return prefix + user + ":xxxxx" + rest[at:]
	}
	return prefix + "xxxxx" + rest[at:]
}

// setTimeout asks Prometheus to give up on a query after the client's
// timeout (the query's own `timeout` parameter), when it has one, in whole
// milliseconds: Prometheus reads plain seconds or a duration in whole
// units, and refuses "2.5s".
func (c *Client) setTimeout(form url.Values) {
	if c.Timeout > 0 {
		form.Set("timeout", strconv.FormatInt(max(c.Timeout.Milliseconds(), 1), 10)+"ms")
	}
}

func (c *Client) get(ctx context.Context, path string, q url.Values, into any) error {
	u := c.BaseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return c.do(ctx, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	}, into)
}

func (c *Client) post(ctx context.Context, path string, form url.Values, into any) error {
	body := form.Encode()
	return c.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req, nil
	}, into)
}

// retryLater is an answer that asked to be retried after Wait.
type retryLater struct {
	Wait   time.Duration
	Header string // the Retry-After value as sent
	Status string
	Host   string
}

func (r *retryLater) Error() string {
	return fmt.Sprintf("%s answered %s with Retry-After %s", r.Host, r.Status, r.Header)
}

// do sends the request build makes, retrying when Prometheus asks to be
// retried (429, or 503 with Retry-After) and the wait fits within the
// deadline, and once when the connection broke mid-answer: Timeout bounds
// the whole, retries and waits included.
func (c *Client) do(ctx context.Context, build func(context.Context) (*http.Request, error), into any) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	askedAgain := false
	for attempt := 0; ; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return err
		}
		c.Credentials.apply(req)
		if c.Tenant != "" {
			req.Header.Set(TenantHeader, c.Tenant)
		}
		err = c.once(httpClient, req, into)
		var drop droppedError
		if errors.As(err, &drop) && !askedAgain && ctx.Err() == nil {
			// A query only reads: a connection that broke mid-answer (a
			// proxy or load balancer closing a kept-alive connection) is
			// asked again once, on a new one.
			askedAgain = true
			attempt--
			continue
		}
		var later *retryLater
		if !errors.As(err, &later) {
			return err
		}
		if attempt >= MaxRetries {
			return fmt.Errorf("%w: %v, still after %d retries", ErrOverloaded, later, MaxRetries)
		}
		if deadline, ok := ctx.Deadline(); ok {
			if left := time.Until(deadline); later.Wait >= left {
				return fmt.Errorf("%w: %v, beyond the %s left of the query's deadline", ErrRetryPastDeadline, later, left.Round(time.Millisecond))
			}
		} else if later.Wait > MaxRetryWait {
			return fmt.Errorf("%w: %v, longer than the %s this client waits", ErrOverloaded, later, MaxRetryWait)
		}
		timer := time.NewTimer(later.Wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return classifyTransport(req, ctx.Err())
		case <-timer.C:
		}
	}
}

// once sends one request and reads its answer into into; an answer that
// asks to be retried is returned as a *retryLater.
func (c *Client) once(httpClient *http.Client, req *http.Request, into any) error {
	// Ask for gzip here rather than leave it to net/http, whose
	// decompression took longer than the decoding of what it decompressed.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := httpClient.Do(req)
	if err != nil {
		return classifyTransport(req, err)
	}
	defer resp.Body.Close()
	host, code := req.URL.Host, resp.StatusCode
	if resp.Request != nil && resp.Request.Method != req.Method {
		// A 301, 302 or 303 (http to https, a moved path) turns the POST
		// into a GET without its form: Prometheus would then name a
		// missing parameter, which misleads.
		to := resp.Request.URL
		// The same API path further on: the URL to give is what comes
		// before it. Anywhere else, a sign-in page is the likely place.
		if base, ok := strings.CutSuffix(to.Path, apiPath(req.URL.Path)); ok && apiPath(req.URL.Path) != "" {
			return fmt.Errorf("%w: %s redirected the query to %s://%s%s, which turns it into a %s without its parameters: use %s://%s%s as the Prometheus URL", ErrNotProm, host, to.Scheme, to.Host, to.Path, resp.Request.Method, to.Scheme, to.Host, base)
		}
		return fmt.Errorf("%w: %s redirected the query to %s://%s%s, which turns it into a %s without its parameters: a sign-in page? check the Prometheus URL and its authentication", ErrNotProm, host, to.Scheme, to.Host, to.Path, resp.Request.Method)
	}
	if !resp.Uncompressed && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(zr)
		if err := zr.Reset(resp.Body); err != nil {
			return fmt.Errorf("%w: %s answered %s with a gzip body that cannot be read: %v", ErrNotProm, host, statusText(code), err)
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{zr, resp.Body}
	}
	success := code >= 200 && code < 300
	limit := int64(MaxErrorBodyBytes)
	if success {
		limit = MaxResponseBytes
	}
	var (
		body      []byte
		truncated bool
	)
	if d, ok := into.(streamDecoder); ok && success {
		// One pass over the body as it arrives; on anything unexpected the
		// generic path below reads it all and classifies the failure.
		buf := bodyBuffers.Get().(*[]byte)
		s := &scanner{b: (*buf)[:0], r: io.LimitReader(resp.Body, limit+1)}
		status, warnings, err := d.decodeEnvelope(s)
		if err == nil && status == "success" && s.rerr == io.EOF && int64(len(s.b)) <= limit {
			if cap(s.b) <= maxPooledBody {
				*buf = s.b[:0] // nothing decoded refers to it
				bodyBuffers.Put(buf)
			}
			reportWarnings(req.Context(), warnings)
			return nil
		}
		body, err = s.rest()
		if err != nil {
			return classifyTransport(req, err)
		}
		if int64(len(body)) > limit {
			body, truncated = body[:limit], true
		}
	} else {
		body, truncated, err = readCapped(resp.Body, limit)
		if err != nil {
			return classifyTransport(req, err)
		}
	}
	status := statusText(code)

	switch code {
	case http.StatusMethodNotAllowed:
		return fmt.Errorf("%w: %s answered %s to a %s of %s: Pairwise sends its queries as POST; allow POST to the query API (a proxy before Prometheus may let only GET through)", ErrMethodRefused, host, status, req.Method, req.URL.Path)
	case http.StatusUnauthorized, http.StatusForbidden:
		// The body is not quoted (a login page may echo what was sent),
		// except Mimir's and Cortex's word for a missing tenant.
		if bytes.Contains(bytes.ToLower(body), []byte("no org id")) {
			return fmt.Errorf("%w: %s answered %d: no org id (a multi-tenant Mimir or Cortex needs a tenant in %s)", ErrAuth, host, code, TenantHeader)
		}
		return fmt.Errorf("%w: %s answered %d", ErrAuth, host, code)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if h := resp.Header.Get("Retry-After"); h != "" {
			if wait, ok := parseRetryAfter(h, time.Now()); ok {
				return &retryLater{Wait: wait, Header: sanitize(h, 40), Status: status, Host: host}
			}
		}
		if code == http.StatusTooManyRequests {
			return fmt.Errorf("%w: %s answered %s without Retry-After%s", ErrOverloaded, host, status, bodyNote(body, truncated))
		}
	}

	if success {
		if truncated {
			return fmt.Errorf("%w: the answer from %s exceeds %d MiB; shorten the range or narrow the selectors", ErrBadQuery, host, MaxResponseBytes>>20)
		}
		var env apiResponse
		if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
			return fmt.Errorf("%w: %s answered %s with no Prometheus API response%s", ErrNotProm, host, status, bodyNote(body, false))
		}
		if env.Status != "success" {
			return apiFailure(host, code, env)
		}
		if err := json.Unmarshal(env.Data, into); err != nil {
			return fmt.Errorf("%w: cannot read the response: %v", ErrNotProm, err)
		}
		reportWarnings(req.Context(), env.Warnings)
		return nil
	}

	var env apiResponse
	if !truncated && json.Unmarshal(body, &env) == nil && env.Status == "error" {
		return apiFailure(host, code, env)
	}
	switch {
	case code == http.StatusGatewayTimeout,
		code == http.StatusServiceUnavailable && bytes.Contains(bytes.ToLower(body), []byte("timeout")):
		return fmt.Errorf("%w: %s answered %s%s", ErrTimeout, host, status, bodyNote(body, truncated))
	case code == http.StatusBadGateway:
		return fmt.Errorf("%w: %s answered %s: a proxy there cannot reach the server behind it%s", ErrUnavailable, host, status, bodyNote(body, truncated))
	case code >= 500:
		return fmt.Errorf("%w: %s answered %s%s", ErrServer, host, status, bodyNote(body, truncated))
	}
	return fmt.Errorf("%w: %s answered %s with no Prometheus API response%s", ErrNotProm, host, status, bodyNote(body, truncated))
}

// apiFailure names the cause of a Prometheus API error document.
func apiFailure(host string, code int, env apiResponse) error {
	msg := sanitize(env.Error, 4*maxExcerpt)
	kind := sanitize(env.ErrorType, 40)
	switch env.ErrorType {
	case "timeout", "canceled":
		return fmt.Errorf("%w: %s", ErrTimeout, msg)
	case "bad_data", "execution":
		return fmt.Errorf("%w: %s", ErrBadQuery, msg)
	}
	if code >= 500 || env.ErrorType == "internal" || env.ErrorType == "unavailable" || env.ErrorType == "server_error" {
		return fmt.Errorf("%w: %s answered %s: %s: %s", ErrServer, host, statusText(code), kind, msg)
	}
	return fmt.Errorf("%w: %s answered %s: %s: %s", ErrBadQuery, host, statusText(code), kind, msg)
}

// gzipReaders decompress answers (klauspost/compress: about 40% faster
// than compress/gzip on Prometheus's answers).
var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// bodyBuffers hold answers' bodies for the stream decoder between
// requests: growing a fresh buffer to each answer's size cost more than
// decompressing it. Bodies above maxPooledBody are left to the collector.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 16 << 20

// readCapped reads at most limit bytes; truncated says there was more.
func readCapped(r io.Reader, limit int64) (body []byte, truncated bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, err
	}
	return body, false, err
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return "HTTP " + strconv.Itoa(code) + " " + t
	}
	return "HTTP " + strconv.Itoa(code)
}

// bodyNote quotes the start of an error body, on one line.
func bodyNote(body []byte, truncated bool) string {
	text := sanitize(string(body), maxExcerpt)
	if text == "" {
		return ""
	}
	if truncated && !strings.HasSuffix(text, "...") {
		text += " ..."
	}
	return " (body: " + text + ")"
}

// sanitize makes s one printable line of at most max bytes: control
// characters and line breaks become spaces, runs of spaces one, invalid
// UTF-8 is dropped; a cut is marked with "...".
func sanitize(s string, max int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		switch {
		case secs < 0:
			return 0, false
		case secs > 1<<31:
			return time.Duration(1<<31) * time.Second, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

func classifyTransport(req *http.Request, err error) error {
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("query to %s canceled: %w", req.URL.Host, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %s", ErrTimeout, req.URL.Host)
	}
	out := fmt.Errorf("%w at %s: %v", ErrUnavailable, req.URL.Host, err)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return droppedError{out}
	}
	return out
}

// droppedError is a connection that broke before the answer was read whole
// (reset, or closed mid-answer); Client.do asks again once.
type droppedError struct{ error }

func (d droppedError) Unwrap() error { return d.error }

// apiPath is the part of a request path from its Prometheus API path on
// (/api/v1/query_range), "" when it has none.
func apiPath(path string) string {
	if i := strings.LastIndex(path, "/api/v1/"); i >= 0 {
		return path[i:]
	}
	return ""
}
