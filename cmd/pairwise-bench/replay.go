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
// same queries, ranges and phases) without decoding the answers.
type engineRequests struct {
	mu     sync.Mutex
	bodies []string
	paths  []string
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
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
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

// replay sends the recorded requests in the engine's phases (the fleets'
// histograms at once, then their health at once: pairs in recorded order)
// and reads the bodies without decoding them.
func (r *engineRequests) replay(ctx context.Context, base string) (time.Duration, error) {
	t0 := time.Now()
	for i := 0; i < len(r.bodies); i += 2 {
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j := i; j < min(i+2, len(r.bodies)); j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j-i] = post(ctx, base+r.paths[j], r.bodies[j])
			}()
		}
		wg.Wait()
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
