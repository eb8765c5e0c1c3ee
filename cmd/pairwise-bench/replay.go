package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
)

// engineRequests records the HTTP requests one engine.Analyze makes, in the
// order they were sent, so the raw baseline can issue exactly those (the
// same queries, ranges and phases) without decoding the answers. A
// request's phase is the number of answers the engine had read when it sent
// it: requests of one phase were sent without waiting for each other.
type engineRequests struct {
	mu     sync.Mutex
	bodies []string
	paths  []string
	phases []int
	read   int // answers read so far
}

// closeCounter counts an answer as read when the engine closes it.
type closeCounter struct {
	io.ReadCloser
	once sync.Once
	r    *engineRequests
}

func (c *closeCounter) Close() error {
	c.once.Do(func() {
		c.r.mu.Lock()
		c.r.read++
		c.r.mu.Unlock()
	})
	return c.ReadCloser.Close()
}

func (r *engineRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		body = b
		req.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, string(body))
	r.paths = append(r.paths, req.URL.Path)
	r.phases = append(r.phases, r.read)
	r.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &closeCounter{ReadCloser: resp.Body, r: r}
	return resp, nil
}

// recordEngine runs the engine once through a recording client and returns
// its requests.
func recordEngine(ctx context.Context, base string, req engine.Request) (*engineRequests, error) {
	rec := &engineRequests{}
	client, err := prom.New(base, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	client.HTTP = &http.Client{Transport: rec}
	if _, err := engine.Analyze(ctx, client, req); err != nil {
		return nil, err
	}
	return rec, nil
}

// replay sends the recorded requests in the engine's phases (each phase's
// requests at once, the next phase when they are all answered) and reads
// the bodies without decoding them.
func (r *engineRequests) replay(ctx context.Context, base string) (time.Duration, error) {
	t0 := time.Now()
	for i := 0; i < len(r.bodies); {
		n := 1
		for i+n < len(r.bodies) && r.phases[i+n] == r.phases[i] {
			n++
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for j := i; j < i+n; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j-i] = post(ctx, base+r.paths[j], r.bodies[j])
			}()
		}
		wg.Wait()
		i += n
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
	}
	return time.Since(t0), nil
}

func post(ctx context.Context, u, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("replaying the engine's query: %s", resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
