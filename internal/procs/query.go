package procs

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Series is one series of a Prometheus query's answer: Value or Histogram
// for an instant vector, Values or Histograms for a range query or a range
// vector (each point [unix seconds, value]).
type Series struct {
	Metric     map[string]string    `json:"metric"`
	Value      [2]any               `json:"value"`
	Values     [][2]any             `json:"values"`
	Histogram  [2]json.RawMessage   `json:"histogram"`
	Histograms [][2]json.RawMessage `json:"histograms"`
}

// Float is an instant vector's float value.
func (s Series) Float() (float64, error) {
	text, ok := s.Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("%v holds no float sample", s.Metric)
	}
	return strconv.ParseFloat(text, 64)
}

// Query runs an instant query at at (zero: Prometheus's now) against the
// Prometheus at base and returns the series of its answer.
func Query(base, query string, at time.Time) ([]Series, error) {
	form := url.Values{"query": {query}}
	if !at.IsZero() {
		form.Set("time", strconv.FormatInt(at.Unix(), 10))
	}
	return post(base+"/api/v1/query", query, form)
}

// QueryRange runs a range query from start to end at step.
func QueryRange(base, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	return post(base+"/api/v1/query_range", query, url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

var queryClient = &http.Client{Timeout: 2 * time.Minute}

func post(endpoint, query string, form url.Values) ([]Series, error) {
	resp, err := queryClient.PostForm(endpoint, form)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []Series `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("query %s: %s: %v", query, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s: %s", query, resp.Status, body.Error)
	}
	return body.Data.Result, nil
}
